-- `fluence check [PATH...]`: find mistakes before a selection meets them,
-- without selecting anything or reaching the network.  Recursively under
-- each PATH (default .):
--
--   manifests (*.yaml, *.yml, *.json)  every Fluence object's select-policy is
--       compiled with the plugins `select` would use (unknown stages with
--       "did you mean", bad arguments), errors at the policy's own line and
--       column in the file with a caret; a select-policy on an object that
--       does not target Fluence is a warning (select ignores it), so is a
--       schedulerName: fluence where fluence finds no pod to pin;
--   plugins (*.lua in a policies/ or providers/ directory, or any .lua file
--       named on the command line)  Lua syntax, loading in the sandbox, the
--       plugin's shape (exports, name = file name, flags), a likely typo in
--       an export's name (a warning); a `fluence run` policy file's pipeline;
--   specs (*_spec.lua)  Lua syntax;
--   test cases (*.test.yaml)  the case format and each case's policy.
--
-- With --attributes FILE, attribute names come from those backends: a
-- policy that reads an attribute no backend has (and no provider provides)
-- is a warning.  --provider NAME must name a provider (or a family), as
-- select requires; it is loaded, not run.  Plugins are found as by `fluence test` (the file's project
-- first, fluence.testing.project).  Exit 3 when there are errors (each on
-- stderr, located; nothing on stdout), else 0 with a summary on stdout and
-- warnings on stderr.  -o json: every problem as fields (severity, file,
-- line, column, message) and the counts, on stdout, whatever was found.
--
-- One checker per kind of file (lua/fluence/check/KIND.lua), sharing a
-- session (check/session.lua): the problems, the registries, --attributes.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local project = require "fluence.testing.project"

local cmd = {}

-- The checker of each kind of file.
local CHECKERS = {
  manifest = "fluence.check.manifest", policy = "fluence.check.plugin", provider = "fluence.check.plugin",
  lua = "fluence.check.lua_file", spec = "fluence.check.spec", cases = "fluence.check.cases",
}

local function checkable(name)
  return name:match("%.lua$") or name:match("%.ya?ml$") or name:match("%.json$")
end

local function walk(path, out, seen)
  local kind = sys.kind(path)
  if not kind then errors.raise("INPUT", "%s: no such file or directory", path) end
  if kind == "file" then out[#out + 1] = { path = path, explicit = true }
  elseif kind == "dir" then project.files_under(path, checkable, out, seen) end
end

local function what_file(f)
  local p = f.path
  if p:match("_spec%.lua$") then return "spec" end
  if p:match("%.lua$") then
    local dir = project.dirname(p):match("([^/]*)$")
    if dir == "policies" then return "policy" end
    if dir == "providers" then return "provider" end
    return f.explicit and "lua" or "spec"
  end
  if p:match("%.test%.ya?ml$") then return "cases" end
  if p:match("%.ya?ml$") or p:match("%.json$") then return "manifest" end
  return f.explicit and "unknown" or nil
end

function cmd.run(args)
  local opts = args.opts
  local format = opts.output or "text"
  if format ~= "text" and format ~= "json" then
    errors.raise("USAGE", "check: unknown output format %q (text or json)", tostring(format))
  end
  local paths = #args.positional > 0 and args.positional or { "." }
  local files, seen = {}, {}
  for _, p in ipairs(paths) do walk(p, files, seen) end
  project.options = { policy_dirs = opts["policy-dir"] or {}, provider_dirs = opts["provider-dir"] or {} }

  local s = require("fluence.check.session").new(opts)
  s:attributes()
  s:providers()
  for _, f in ipairs(files) do
    local what = what_file(f)
    if what == "unknown" then
      s:error({ file = f.path, message = "not something fluence checks (manifests .yaml/.yml/.json, plugins " ..
                                        "and specs .lua, cases .test.yaml)" })
    elseif what then
      -- a manifest may be as large as select takes (FLUENCE_MAX_INPUT); any
      -- other file, the limit of every file that is not a manifest
      local text, err = sys.read_file(f.path, what == "manifest" and { limit = sys.max_input() } or nil)
      if not text then s:error(err, f.path)
      else require(CHECKERS[what]).check(s, f.path, text, what) end
    end
  end
  return s:report(format)
end

return cmd
