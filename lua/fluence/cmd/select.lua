-- `fluence select` and `fluence run POLICY.lua`: choose a backend for every
-- Fluence object and print the annotated manifest (stdout), with one line per
-- selection on stderr.  Nothing reaches stdout unless every object succeeded.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local selection = require "fluence.selection"

local cmd = {}

local FORMATS = { yaml = true, json = true, name = true }

function cmd.output(args, res)
  local fmt = args.opts.output or "yaml"
  if fmt == "json" then return selection.render_json(res) end
  if fmt == "yaml" then return res.output end
  -- -o name: every object of the output, as kubectl -o name names it
  local display_name = require("fluence.apply").display_name
  local lines = {}
  for _, o in ipairs(res.objects) do
    lines[#lines + 1] = display_name(o.apiVersion, o.kind, o.name or o.generateName) .. "\n"
  end
  return table.concat(lines)
end

function cmd.run(args)
  local fmt = args.opts.output
  if fmt and not FORMATS[fmt] then
    errors.raise("USAGE", "%s: unknown output format %q (yaml, json or name)", args.verb, fmt)
  end
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
