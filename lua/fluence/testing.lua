-- fluence.testing: run policies and providers from specs, through the same
-- loader, sandbox, limits and selection as `fluence select`, with HTTP, the
-- environment and files stood in for (fluence.testing.stubs): a test never
-- reaches the network.  Used by `fluence test` (its built-in runner and
-- *.test.yaml cases) and, after `make install`, by plain busted.
--
--   local t = require "fluence.testing"
--   t.rank(policy, backends [, request]) -> { chosen =, order = {names}, dropped = {name = reason},
--                                            error = why nothing was chosen | nil }
--   t.provider(name_or_path [, {env =, http =, files =, request =, offerings =, options =, backends =}])
--       -> backends, notes, { warnings =, requests =, run_notes = }
--   t.select{ manifest = text | path, object = {...}, attributes = {...}, providers = {...},
--             policy =, env =, http =, files =, offerings =, graph =, cost_tol =, force_select = }
--       -> { exit =, output =, error =, stderr =, warnings =,
--            objects = { {object = "Kind/name", chosen =, dropped = {}, notes = {}, error =}, ...} }
--
-- Plugins are found as `select` finds them, with the test's project first
-- (fluence.testing.project): a spec at DIR/tests/x_spec.lua sees
-- DIR/policies and DIR/providers.  Relative paths (manifest, attributes,
-- graph, a provider file, files a provider reads) are relative to the
-- spec's own directory.  Mistakes in a test (an unknown policy, a policy
-- that does not compile, a plugin that crashes or runs past its time limit,
-- an HTTP request without a stub) raise an error, which fails the test.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local json = require "fluence.json"
local plugins = require "fluence.plugins"
local sandbox = require "fluence.sandbox"
local project = require "fluence.testing.project"
local stubs = require "fluence.testing.stubs"

local t = {}

-- fluence's own Lua: the directory this file is in (lua/fluence/ in the
-- binary and the tree, LUADIR/fluence/ when installed).
local OWN = debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "\0"

-- The file of the code that called into this module: the first frame
-- outside fluence's own Lua (and busted's).
local function caller_file()
  for level = 3, 40 do
    local info = debug.getinfo(level, "S")
    if not info then break end
    local src = info.source
    if src:sub(1, 1) == "@" and src:sub(2, #OWN + 1) ~= OWN and not src:find("/busted/", 1, true)
       and not src:find("/luassert/", 1, true) then
      return src:sub(2)
    end
  end
end

local function here(where)
  if where then return where end
  local file = caller_file()
  local p = project.of(file)
  p.file = file or "test"
  return p
end

local function fail(msg) error(msg, 0) end

local function message(e)
  if errors.is(e) then return e.message end
  return tostring(e)
end

-- Policy registries are loaded once per set of directories and kept until
-- t.reset() (`fluence test` resets between files); providers are loaded
-- afresh for every call, since they keep state (caches) between calls.
local policy_cache = {}
function t.reset() policy_cache = {} end

local function policies_for(p)
  local key = table.concat(p.policy_dirs, "\0")
  local reg = policy_cache[key]
  if not reg then
    reg = plugins.load_policies{ dirs = p.policy_dirs }
    policy_cache[key] = reg
  end
  return reg
end

-- A request as `select` would build for a one-pod Job, with the test's
-- fields over it.
local function request_with(given, policy)
  local r = { object = { kind = "Job", apiVersion = "batch/v1", name = "test" }, annotations = {}, labels = {},
              policy = policy, shots = 1000, pods = 1, group = { size = 1 },
              pod = { cpu = 1, memory = 0, gpu = 0, virtual = {} }, require = {}, where = "test" }
  for k, v in pairs(given or {}) do r[k] = v end
  if given and given.pods and not given.group then r.group = { size = given.pods } end
  return r
end

-- Backends as the tests give them, checked and copied: { name =, attrs = {} }.
local function backends_of(list, what)
  if type(list) ~= "table" then fail(("%s: backends must be a list of {name =, attrs = {}}"):format(what)) end
  local out = {}
  for i, b in ipairs(list) do
    if type(b) ~= "table" or type(b.name) ~= "string" or b.name == "" then
      fail(("%s: backend #%d needs a name (a non-empty string)"):format(what, i))
    end
    if b.attrs ~= nil and type(b.attrs) ~= "table" then
      fail(("%s: backend %q: attrs must be a table"):format(what, b.name))
    end
    local attrs = {}
    for k, v in pairs(b.attrs or {}) do attrs[k] = v end
    out[i] = { name = b.name, attrs = attrs }
  end
  return out
end

function t.rank(policy, backends, request, where)
  local p = here(where)
  if type(policy) ~= "string" then fail("t.rank: the policy must be a string (policy text)") end
  local list = backends_of(backends, "t.rank")
  local known, seen = {}, {}
  for _, b in ipairs(list) do
    for k in pairs(b.attrs) do
      if not seen[k] then seen[k] = true; known[#known + 1] = k end
    end
  end
  table.sort(known)
  local pipeline = require "fluence.pipeline"
  local pl, err = pipeline.compile(policy, { policies = policies_for(p), name = "policy", known_attributes = known })
  if not pl then fail(message(err)) end
  local res = pl:run(list, request_with(request, policy))
  if res.plugin_error then fail(res.error) end
  local order = {}
  for i, b in ipairs(res.ok and res.survivors or {}) do order[i] = b.name end
  return { chosen = res.chosen, order = order, dropped = res.dropped or {}, error = not res.ok and res.error or nil,
           stages = res.stages }
end

local function is_path(s) return s:find("/", 1, true) or s:match("%.lua$") end

function t.provider(name, o, where)
  local p = here(where)
  o = o or {}
  if type(name) ~= "string" then fail("t.provider: give a provider name or a path to its file") end
  local s = stubs.new{ http = o.http, env = o.env, files = o.files, base = p.base, offerings = o.offerings,
                       where = p.file }
  local api = require("fluence.provider_api").new{ overrides = s.api }
  local entry
  if is_path(name) then
    local path = project.join(p.base, name)
    local plugin = plugins.load_file("provider", path, { api = api })
    entry = { name = plugin.name, plugin = plugin, origin = path, source = "file" }
  else
    local reg = plugins.load_providers{ dirs = p.provider_dirs, api = api }
    entry = reg.get(name)
    if not entry then
      local where_looked = {}
      for _, d in ipairs(reg.dirs) do where_looked[#where_looked + 1] = d.dir end
      where_looked[#where_looked + 1] = "built-in"
      fail(("unknown provider %q (searched %s)"):format(name, table.concat(where_looked, ", ")))
    end
  end
  local ctx = sandbox.readonly{ request = request_with(o.request), options = o.options or {}, api = api,
                                backends = o.backends or {} }
  local ok, backends, notes, run = errors.try(require("fluence.provider_host").call, entry, ctx)
  s.check()
  if not ok then fail(message(backends)) end
  local merged, merr = require("fluence.merge").merge{ { provider = entry.name, backends = backends or {} } }
  if not merged then fail(merr) end
  local run_notes = {}
  for n in pairs(run or {}) do run_notes[#run_notes + 1] = n end
  table.sort(run_notes)
  return backends or {}, notes, { warnings = s.warnings, requests = s.requests, run_notes = run_notes }
end

-- The manifest of a t.select: { {name =, text =} }.
local function manifest_inputs(o, p)
  if o.object ~= nil then
    if type(o.object) ~= "table" then fail("t.select: object must be a table (a Kubernetes object)") end
    return { { name = p.file .. " (object)", text = json.encode(o.object) .. "\n" } }
  end
  local m = o.manifest
  if type(m) ~= "string" or m == "" then fail("t.select: give manifest = TEXT or PATH (or object = {...})") end
  if m:find("\n", 1, true) then return { { name = p.file .. " (manifest)", text = m } } end
  local path = project.join(p.base, m)
  local text, err = sys.read_file(path)
  if not text then fail(err) end
  return { { name = path, text = text } }
end

-- Attribute files: paths (relative to the test), and inline backends in the
-- attribute file's format ({name =, attributes = {...}, strings = {...}}) or
-- whole documents ({backends = {...}}), served to the file provider as one
-- file of their own.
local function attribute_files(list, p, files, own)
  if list == nil then return nil end
  if type(list) ~= "table" then fail("t.select: attributes must be a list (paths or backends)") end
  local paths, inline = {}, {}
  for i, a in ipairs(list) do
    if type(a) == "string" then
      paths[#paths + 1] = project.join(p.base, a)
      own[paths[#paths]] = true
    elseif type(a) == "table" and a.backends ~= nil then
      local name = ("%s (attributes #%d)"):format(p.file, i)
      files[name] = json.encode(a)
      paths[#paths + 1] = name
    elseif type(a) == "table" then
      inline[#inline + 1] = a
    else
      fail(("t.select: attributes[%d] must be a path or a backend table"):format(i))
    end
  end
  if #inline > 0 then
    local name = p.file .. " (attributes)"
    files[name] = json.encode{ backends = json.array(inline) }
    paths[#paths + 1] = name
  end
  return paths
end

local function names_of(list, what)
  if list == nil then return nil end
  if type(list) == "string" then list = { list } end
  if type(list) ~= "table" then fail(("t.select: %s must be a list of names"):format(what)) end
  local out = {}
  for i, v in ipairs(list) do out[i] = tostring(v) end
  return out
end

local function describe(obj)
  return ("%s/%s"):format(obj.kind or "?", obj.name or obj.generateName or "?")
end

function t.select(o, where)
  local p = here(where)
  if type(o) ~= "table" then fail("t.select: expected a table {manifest =, attributes =, ...}") end
  local files = {}
  for k, v in pairs(o.files or {}) do files[k] = v end
  local inputs = manifest_inputs(o, p)
  local own = {}
  local attributes = attribute_files(o.attributes, p, files, own)
  local providers = names_of(o.providers, "providers")
  local provider_dirs = {}
  for i, d in ipairs(p.provider_dirs) do provider_dirs[i] = d end
  for i, n in ipairs(providers or {}) do          -- a provider file: its directory, its name
    if is_path(n) then
      local path = project.join(p.base, n)
      table.insert(provider_dirs, 1, project.dirname(path))
      providers[i] = path:match("([^/]*)%.lua$") or path
    end
  end
  local s = stubs.new{ http = o.http, env = o.env, files = files, base = p.base, own = own,
                       offerings = o.offerings, where = p.file }
  local opts = { attributes = attributes, provider = providers, ["policy-dir"] = p.policy_dirs,
                 ["provider-dir"] = provider_dirs, offline = o.offerings == nil or nil,
                 graph = o.graph and { project.join(p.base, o.graph) } or nil,
                 ["cost-tol"] = o.cost_tol ~= nil and tostring(o.cost_tol) or nil,
                 ["force-select"] = o.force_select or nil }
  local args = { verb = "select", prog = "fluence", positional = {}, opts = opts }
  local reg = policies_for(p)
  local how = { explain = true, inputs = inputs, api = s.api, policies = reg,
                clusters = o.offerings ~= nil and s.clusters or nil }
  if o.policy ~= nil then
    if type(o.policy) ~= "string" then fail("t.select: policy must be a string (policy text)") end
    local text = o.policy
    how.policy_file = "policy"
    how.load_policy = function(r)
      local pl, err = require("fluence.pipeline").compile(text, { policies = r.policies, name = "policy",
                                                                  cost_tol = opts["cost-tol"] })
      if not pl then
        if errors.is(err) then error(err, 0) end
        errors.raise("INPUT", "%s", tostring(err))
      end
      return pl
    end
  end
  local ok, res = errors.try(require("fluence.selection").run, args, how)
  s.check()
  local out = { exit = sys.EXIT.OK, objects = {}, warnings = s.warnings, requests = s.requests }
  if not ok then
    if res.kind == "INTERNAL" then fail(res.message) end
    out.exit, out.error = res.code, res.message
    return out
  end
  out.stderr = res.stderr
  for _, rec in ipairs(res.records) do
    local notes = {}
    for i, n in ipairs(rec.notes or {}) do notes[i] = n end
    out.objects[#out.objects + 1] = { object = describe(rec.object), chosen = rec.chosen, dropped = rec.dropped or {},
                                      notes = notes, error = rec.error }
    if rec.error and not out.error then
      out.error = rec.error
      out.exit = sys.EXIT[rec.error_kind or "SELECT"]
    end
  end
  if not out.error then out.output = res.output end
  return out
end

return t
