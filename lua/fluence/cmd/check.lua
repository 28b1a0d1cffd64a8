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
-- warnings on stderr.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local plugins = require "fluence.plugins"
local project = require "fluence.testing.project"

local cmd = {}

local POLICY = require("fluence.request").PREFIX .. "select-policy"
local EXPORTS = {
  policy = { "name", "description", "compile", "suffix", "tolerance", "alternatives", "args" },
  provider = { "name", "description", "candidates", "live", "provides", "family" },
}

local function message(e)
  if errors.is(e) then return e.message end
  return tostring(e)
end

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
  local paths = #args.positional > 0 and args.positional or { "." }
  local files, seen = {}, {}
  for _, p in ipairs(paths) do walk(p, files, seen) end
  project.options = { policy_dirs = opts["policy-dir"] or {}, provider_dirs = opts["provider-dir"] or {} }

  -- what was found, in the order met; a message said once (a broken plugin
  -- is met both as a file and while loading the registry)
  local said, out, errors_n, warnings_n = {}, {}, 0, 0
  local function bad(msg)
    if said[msg] then return end
    said[msg] = true
    errors_n = errors_n + 1
    out[#out + 1] = "fluence: " .. msg .. "\n"
  end
  local function warn(msg)
    if said[msg] then return end
    said[msg] = true
    warnings_n = warnings_n + 1
    out[#out + 1] = "fluence: warning: " .. msg .. "\n"
  end
  local stats = { manifest = 0, policies = 0, plugin = 0, spec = 0, cases = 0 }

  -- the provider API a plugin sees while it loads: no network, no environment
  local api = require("fluence.provider_api").new{ overrides = require("fluence.testing.stubs").new{}.api }

  local registries = {}
  local function policies_for(path)
    local p = project.of(path)
    local key = table.concat(p.policy_dirs, "\0")
    if registries[key] == nil then
      local ok, reg = errors.try(plugins.load_policies, { dirs = p.policy_dirs })
      if not ok then
        bad(message(reg))
        bad("select-policy annotations were not checked: a policy plugin on the search path does not load (above)")
        reg = false
      end
      registries[key] = reg
    end
    return registries[key] or nil
  end

  -- --attributes: the backends' attribute names, and those providers provide
  local known, provided
  if opts.attributes and #opts.attributes > 0 then
    known, provided = {}, {}
    local ok, err = errors.try(function()
      local reg = plugins.load_providers{ dirs = opts["provider-dir"], api = api }
      for _, e in ipairs(reg.list) do
        for _, a in ipairs(e.plugin.provides or {}) do provided[a] = true end
      end
      local real = require("fluence.provider_api").new{}
      local ctx = require("fluence.sandbox").readonly{ request = { shots = 1000, pods = 1 },
                                                        options = { attributes = opts.attributes }, api = real,
                                                        backends = {} }
      local file = reg.get("file")
      local list = require("fluence.selection").call_provider(file, ctx)
      for _, b in ipairs(list or {}) do
        for k in pairs(b.attrs or {}) do known[k] = true end
      end
    end)
    if not ok then bad(message(err)) end
  end
  -- --provider: as select would, it must name a provider (or a family).  It
  -- is loaded, not run: check reaches no network.  (What any provider
  -- declares it provides already counts as known, above.)
  if opts.provider and #opts.provider > 0 then
    local ok, reg = errors.try(plugins.load_providers, { dirs = opts["provider-dir"], api = api })
    if not ok then bad(message(reg)) else
      local names = {}
      for _, e in ipairs(reg.list) do names[#names + 1] = e.name end
      for _, n in ipairs(opts.provider) do
        local e = reg.get(n)
        if not e then
          for _, c in ipairs(reg.list) do if c.decl.family == n then e = c end end
        end
        if not e then
          local guess = require("fluence.pipeline").suggest(n, names)
          bad(errors.format("--provider %q: unknown provider%s (see 'fluence providers')", n,
                            guess and errors.format(" (did you mean %q?)", guess) or ""))
        end
      end
    end
  end

  local function known_list()
    if not known then return nil end
    local l = {}
    for k in pairs(known) do l[#l + 1] = k end
    table.sort(l)
    return l
  end

  local function compile(path, text, name)
    local reg = policies_for(path)
    if not reg then return nil end
    local pl, err = require("fluence.pipeline").compile(text, { policies = reg, name = name,
                                                                known_attributes = known_list() })
    stats.policies = stats.policies + 1
    return pl, err
  end

  local function unread(pl)
    if not known or not pl then return nil end
    local reads, list = pl:attributes(), {}
    for a in pairs(reads) do
      if not known[a] and not provided[a] then list[#list + 1] = a end
    end
    table.sort(list)
    return #list > 0 and list or nil
  end

  local function check_manifest(path, text)
    local manifest = require "fluence.manifest"
    local policy_source = require "fluence.policy_source"
    local s, err = manifest.parse(text, path)
    if not s then return bad(err) end
    stats.manifest = stats.manifest + 1
    for _, w in ipairs(s:warnings()) do warn(w) end     -- a key written twice, as select says
    for _, obj in ipairs(s:objects()) do
      local where = ("%s:%d:%d"):format(path, obj.line or 1, obj.col or 1)
      local who = ("%s/%s"):format(obj.kind or "?", obj.name or obj.generateName or "?")
      local policy = obj.annotations[POLICY]
      for _, t in ipairs(obj.templates or {}) do
        if not policy and t.targets_fluence then policy = t.annotations[POLICY] end
      end
      if obj.wants_selection and policy then
        local src = policy_source.manifest(s, obj.index, POLICY, policy)
        local function locate(pos, msg)
          local m = src and src.map and src:locate(pos, who .. ": " .. msg)
          if m then return m end
          local line, col = require("fluence.grammar").linecol(policy, math.max(1, math.min(pos, #policy + 1)))
          return ("%s: %s: %s"):format(src and src.at or where, who, sys.locate("select-policy", policy, line, col, msg))
        end
        local pl, perr = compile(path, policy, "select-policy")
        if not pl and perr then
          if errors.is(perr) and perr.policy_pos then bad(locate(perr.policy_pos, perr.policy_msg))
          else bad(("%s: %s: %s"):format(where, who, message(perr))) end
        end
        local missing = unread(pl)
        if missing then
          warn(("%s: %s: the policy reads %s, which no backend in the attribute files has"):format(
            src and src.at or where, who, table.concat(missing, ", ")))
        end
      elseif obj.annotations[POLICY] and not obj.wants_selection and #(obj.unpinned or {}) == 0 then
        warn(("%s: %s has a select-policy but does not target Fluence (no pod of it has schedulerName: fluence " ..
              "or the group label %sgroup): select ignores it"):format(where, who, require("fluence.request").PREFIX))
      end
      -- a schedulerName: fluence where fluence finds no pod to pin (what
      -- select warns of too)
      for _, u in ipairs(obj.unpinned or {}) do warn(("%s: %s: %s"):format(where, who, u.message)) end
    end
  end

  local function check_exports(path, kind, plugin)
    local allowed = EXPORTS[kind]
    local set = {}
    for _, k in ipairs(allowed) do set[k] = true end
    local pipeline = require "fluence.pipeline"
    for k in pairs(plugin) do
      if type(k) == "string" and not set[k] then
        local s = pipeline.suggest(k, allowed)
        if s then warn(("%s: %s plugin export %q is not one fluence reads (did you mean %q?)"):format(path, kind, k, s)) end
      end
    end
    if kind == "policy" then
      if plugin.args ~= nil and plugin.args ~= false and plugin.args ~= "required" then
        bad(("%s: policy plugin export \"args\" must be false, \"required\" or absent, got %s"):format(
          path, type(plugin.args) == "string" and ("%q"):format(plugin.args) or type(plugin.args)))
      end
      for _, flag in ipairs{ "suffix", "tolerance", "alternatives" } do
        if plugin[flag] ~= nil and type(plugin[flag]) ~= "boolean" then
          bad(("%s: policy plugin export %q must be true or false, got %s"):format(path, flag, type(plugin[flag])))
        end
      end
    else
      if plugin.provides ~= nil and type(plugin.provides) ~= "table" then
        bad(("%s: provider plugin export \"provides\" must be a list of attribute names"):format(path))
      end
      if plugin.family ~= nil and type(plugin.family) ~= "string" then
        bad(("%s: provider plugin export \"family\" must be a string"):format(path))
      end
    end
  end

  local function check_plugin(path, text, kind)
    stats.plugin = stats.plugin + 1
    local ok, plugin = errors.try(plugins.load_file, kind, path, { api = api })
    if not ok then return bad(message(plugin)) end
    local base = path:match("([^/]*)%.lua$")
    if plugin.name ~= base then
      return bad(("%s: %s plugin is named %q but its file is %s.lua (they must match)"):format(path, kind, plugin.name, base))
    end
    check_exports(path, kind, plugin)
  end

  -- A .lua file named on the command line: what does it return?
  local function check_lua(path, text)
    local chunk, err = load(text, "@" .. path, "t", {})
    if not chunk then return bad(require("fluence.lua_syntax").locate(path, text, err)) end
    local sandbox = require "fluence.sandbox"
    local env = sandbox.env{ api = api }
    chunk = load(text, "@" .. path, "t", env)
    local ok, value = sandbox.call(chunk, { kind = "plugin", name = path, file = path, phase = "load" })
    if not ok then return bad(tostring(value)) end
    if type(value) == "table" and rawget(value, "compile") ~= nil then return check_plugin(path, text, "policy") end
    if type(value) == "table" and rawget(value, "candidates") ~= nil then return check_plugin(path, text, "provider") end
    if type(value) == "string" or type(value) == "function" or (type(value) == "table" and rawget(value, "pipeline")) then
      stats.plugin = stats.plugin + 1
      local ok2, e = errors.try(function()
        local how = require("fluence.runpolicy").how(path, { opts = {} })
        local reg = policies_for(path)
        if reg then how.load_policy{ policies = reg } end
      end)
      if not ok2 then bad(message(e)) end
      return
    end
    bad(("%s: not a plugin: it returns %s (a policy returns {name =, description =, compile =}, a provider " ..
         "{name =, description =, candidates =}, a `fluence run` file a pipeline or a function)"):format(path, type(value)))
  end

  local function check_cases(path, text)
    local cases = require "fluence.testing.cases"
    local f, err = cases.load(path, text)
    if not f then return bad(err) end
    stats.cases = stats.cases + 1
    for _, c in ipairs(f.cases) do
      -- a case expecting an input error (exit 3) may well test a bad policy
      if c.spec.policy and c.spec.expect.exit ~= 3 then
        local pl, perr = compile(path, c.spec.policy, "policy")
        if not pl and perr then
          local node = c.node.policy ~= nil and c.node or nil
          bad(cases.at(f, node, node and "policy" or nil, ("policy: %s"):format(
            errors.is(perr) and perr.policy_msg or message(perr))))
        end
      end
    end
  end

  for _, f in ipairs(files) do
    local what = what_file(f)
    if what == "unknown" then
      bad(("%s: not something fluence checks (manifests .yaml/.yml/.json, plugins and specs .lua, " ..
           "cases .test.yaml)"):format(f.path))
    elseif what then
      -- a manifest may be as large as select takes (FLUENCE_MAX_INPUT); any
      -- other file, the limit of every file that is not a manifest
      local text, err = sys.read_file(f.path, what == "manifest" and { limit = sys.max_input() } or nil)
      if not text then bad(err)
      elseif what == "manifest" then check_manifest(f.path, text)
      elseif what == "policy" or what == "provider" then check_plugin(f.path, text, what)
      elseif what == "lua" then check_lua(f.path, text)
      elseif what == "cases" then check_cases(f.path, text)
      else
        stats.spec = stats.spec + 1
        local chunk, lerr = load(text, "@" .. f.path, "t", {})
        if not chunk then bad(lerr) end
      end
    end
  end

  sys.write(2, table.concat(out))
  if errors_n > 0 then return sys.EXIT.INPUT end
  local plural = require "fluence.plural"
  sys.write(1, ("checked %s (%s), %s, %s, %s: %s\n"):format(
    plural(stats.manifest, "manifest file"), plural(stats.policies, "policy", "policies"),
    plural(stats.plugin, "plugin"), plural(stats.spec, "spec"), plural(stats.cases, "test file"),
    warnings_n > 0 and plural(warnings_n, "warning") or "no problems"))
  return sys.EXIT.OK
end

return cmd
