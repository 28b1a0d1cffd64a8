-- `fluence run POLICY.lua`: a policy written as a Lua file.  The file runs in
-- the policy sandbox (no I/O) and returns one of:
--   "min-cost,prefer:a"                     a pipeline in the select-policy language
--   function(backends, request) ... end     returns the backends, best first
--   { pipeline = "..." | function, providers = { "braket-live", ... } }
-- It decides for every Fluence object in the input, select-policy or not.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local sandbox = require "fluence.sandbox"
local policy_source = require "fluence.policy_source"

local runpolicy = {}

-- A pipeline-shaped object around a policy function.
local function function_pipeline(fn, path)
  local p = { text = path, stages = { { text = path } },
              call = { kind = "policy file", name = path, file = path, phase = "run" } }
  function p.attributes() return {} end
  function p.run(_, backends, request)
    local view = sandbox.readonly(backends)
    local ok, out = sandbox.call(fn, p.call, view, sandbox.readonly(request))
    if not ok then errors.raise("INPUT", "%s", tostring(out)) end
    if type(out) ~= "table" then
      errors.raise("INPUT", "%s: the policy function must return a list of backends, not a %s", path, type(out))
    end
    local byname, seen, kept, names = {}, {}, {}, {}
    for _, b in ipairs(backends) do byname[b.name] = b end
    -- raw: the policy's metamethods must not run outside its time limit
    for i = 1, rawlen(out) do
      local b = sandbox.unwrap(rawget(out, i))
      local name = type(b) == "string" and b or (type(b) == "table" and rawget(b, "name"))
      if type(name) ~= "string" or not byname[name] then
        errors.raise("INPUT", "%s: the policy function returned an unknown backend at position %d (%s)",
                     path, i, type(name) == "string" and name or type(name))
      end
      if not seen[name] then
        seen[name] = true
        kept[#kept + 1] = byname[name]
        names[#names + 1] = name
      end
    end
    local dropped = {}
    for _, b in ipairs(backends) do
      if not seen[b.name] then dropped[b.name] = "not returned by " .. path end
    end
    local r = { ok = #kept > 0, chosen = kept[1] and kept[1].name, survivors = kept, dropped = dropped,
                stages = { { text = path, kept = names, dropped = dropped } } }
    if not r.ok then r.error = ("policy %s eliminated all candidates"):format(path); r.failed_stage = 1 end
    return r
  end
  return p
end

-- how(path, args) -> the `how` table selection.run understands.
function runpolicy.how(path, args)
  local src, err = sys.read_file(path)
  if not src then errors.raise("INPUT", "%s", err) end
  local chunk, lerr = load(src, "@" .. path, "t", sandbox.env())
  if not chunk then errors.raise("INPUT", "%s", require("fluence.lua_syntax").locate(path, src, lerr)) end
  local ok, value = sandbox.call(chunk, { kind = "policy file", name = path, file = path, phase = "load" })
  if not ok then errors.raise("INPUT", "%s", tostring(value)) end
  -- a raw copy: the file's metamethods must not run outside its time limit
  local spec = { pipeline = value }
  if type(value) == "table" then
    spec = { pipeline = rawget(value, "pipeline"), providers = {} }
    local list = rawget(value, "providers")
    for i = 1, type(list) == "table" and rawlen(list) or 0 do
      local p = rawget(list, i)
      if type(p) ~= "string" then
        errors.raise("INPUT", "%s: providers must be a list of provider names (entry %d is a %s)", path, i, type(p))
      end
      spec.providers[i] = p
    end
  end
  if type(spec.pipeline) ~= "string" and type(spec.pipeline) ~= "function" then
    errors.raise("INPUT", "%s: must return a pipeline string, a function(backends, request), " ..
                 "or a table with a pipeline field (got %s)", path, type(value))
  end
  for _, p in ipairs(spec.providers or {}) do
    args.opts.provider = args.opts.provider or {}
    table.insert(args.opts.provider, p)
  end
  return {
    policy_file = path,
    load_policy = function(reg)
      if type(spec.pipeline) == "function" then return function_pipeline(spec.pipeline, path) end
      local pipeline = require "fluence.pipeline"
      -- errors point at the string literal in the file when it is one
      -- (a computed string: at the position inside it, named "PATH: pipeline")
      local source = policy_source.lua(path, src, spec.pipeline)
      local name = path .. ": pipeline"
      local pl, perr = pipeline.compile(spec.pipeline, { policies = reg.policies, name = name,
                                                          cost_tol = args.opts["cost-tol"] })
      if not pl then
        local exact = errors.is(perr) and perr.policy_pos and source and source:location(perr.policy_pos, perr.policy_msg)
        if exact then error(require("fluence.location").error(perr.kind, exact), 0) end
        if errors.is(perr) then error(perr, 0) end
        errors.raise("INPUT", "%s", tostring(perr))
      end
      pl.source = source
      return pl
    end,
  }
end

return runpolicy
