-- `fluence select` and `fluence run POLICY.lua`: choose a backend for every
-- Fluence object and print the annotated manifest (stdout), with one line per
-- selection on stderr.  Nothing reaches stdout unless every object succeeded.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local selection = require "fluence.selection"

local cmd = {}

function cmd.output(args, res)
  local fmt = args.opts.output or "yaml"
  if fmt == "json" then return selection.render_json(res) end
  if fmt == "yaml" then return res.output end
  errors.raise("USAGE", "%s: unknown output format %q (yaml or json)", args.verb, fmt)
end

function cmd.run(args)
  local how = {}
  if args.verb == "run" then
    local path = args.positional[1]
    if not path then errors.raise("USAGE", "run: which policy file? (fluence run POLICY.lua -f FILE)") end
    if #args.positional > 1 then errors.raise("USAGE", "run: one policy file only") end
    how = require("fluence.runpolicy").how(path, args)
  elseif #args.positional > 0 then
    errors.raise("USAGE", "%s: unexpected argument %q", args.verb, args.positional[1])
  end
  local res = selection.run(args, how)
  if (args.opts.output or "yaml") == "yaml" then   -- straight to stdout: no copy of the text
    sys.write(2, res.stderr)
    res:write_output(1)
    return sys.EXIT.OK
  end
  local out = cmd.output(args, res)
  sys.write(2, res.stderr)
  sys.write(1, out)
  return sys.EXIT.OK
end

return cmd
