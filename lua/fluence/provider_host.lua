-- The provider host: which providers run for a request, each called in its
-- sandbox, and what they return merged by backend name (fluence.merge, in
-- C), every attribute remembering its provider.  Everything a decision
-- needs from providers, and nothing about policies or clusters.
--
--   local host = provider_host.new{ opts = <command-line opts>, providers = <registry>, api = <provider API> }
--   host:static(req, notes) -> list, seen   the providers that run before
--       the policy is compiled, in override order: the cluster's offerings,
--       --attributes files, --provider, the select-backend family
--   host:live(needs, seen, state, present) -> list   the live providers the
--       pipeline reads (needs: its attribute set) that would find something
--       to enrich (present: the attribute names state.merged carries)
--   host:gather(req, list, state)           runs them, adding to state =
--       { results = {}, merged = {}, notes = {}, run_notes = {[text] = true} }
--   host:estimate_costs(req, state [, names])  cost_usd from unit prices
--   host:known_attributes(present) -> sorted names a policy may mention
--   provider_host.find(registry, name) -> entry | nil   by name or family
--   provider_host.call(entry, ctx) -> backends, notes, run_notes
--       one provider's candidates(ctx), in its sandbox (fluence check and
--       fluence.testing call providers this way too)
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local merge = require "fluence.merge"
local logger = require "fluence.log"

local M = {}

local Host = {}
Host.__index = Host

function M.new(o)
  return setmetatable({ opts = o.opts, providers = o.providers, api = o.api }, Host)
end

-- A provider by name, or by the family it declares (select-backend: braket
-- finds braket-live).  nil when there is none.
function M.find(reg, name)
  local p = reg.get(name)
  if p then return p end
  for _, e in ipairs(reg.list) do
    if e.decl.family == name then return e end
  end
end

function Host:static(req, notes)
  local opts, reg, list, seen = self.opts, self.providers, {}, {}
  local function add(e)
    if e and not seen[e.name] then seen[e.name] = true; list[#list + 1] = e end
  end
  if not opts.offline then add(reg.get("configmap")) end
  if opts.attributes and #opts.attributes > 0 then add(reg.get("file")) end
  for _, n in ipairs(opts.provider or {}) do
    add(M.find(reg, n) or errors.raise("USAGE", "unknown provider %q (see 'fluence providers')", n))
  end
  -- the Go client ignored select-backend; a family we lack is only a note
  if req.backend_family then
    local e = M.find(reg, req.backend_family)
    if e then add(e)
    else notes[#notes + 1] = errors.format("select-backend %q: no provider of that family; ignored", req.backend_family) end
  end
  return list, seen
end

-- A live provider that enriches only backends with some attribute
-- (braket-live: device_arn) would return nothing without one, so it is not
-- run.  An enriches entry ATTR=VALUE (azure-prices: cloud=azure) asks for a
-- backend whose ATTR is VALUE (any case), looked for among backends only
-- then.  present: the attribute names the backends gathered so far carry.
function Host:live(needs, seen, state, present)
  local backends = state.merged
  local list = {}
  local function has(a)
    local attr, value = a:match("^([^=]+)=(.*)$")
    if not attr then return present[a] end
    if not present[attr] then return false end
    value = value:lower()
    for _, b in ipairs(backends) do
      local v = b.attrs[attr]
      if type(v) == "string" and v:lower() == value then return true end
    end
    return false
  end
  local function wanted(e)
    local enriches = e.decl.enriches
    if not enriches then return true end
    for _, a in ipairs(enriches) do
      if has(a) then return true end
    end
    return false
  end
  for _, e in ipairs(self.providers.list) do
    local provides = e.decl.live and e.decl.provides
    if provides and not seen[e.name] then
      for _, attr in ipairs(provides) do
        if needs[attr] then
          if wanted(e) then list[#list + 1] = e end
          break
        end
      end
    end
  end
  return list
end

-- A provider that crashes, loops or returns garbage is an INPUT error
-- naming its file.  What it returns is read raw (rawlen, rawget): the host
-- never runs a provider's metamethods, which would run outside its budget
-- and time limit.  Notes are strings, or { text = "...", run = true } for a
-- fact about the whole run (no credentials ...), said once on stderr.
function M.call(e, ctx)
  local sandbox = require "fluence.sandbox"
  e.call = e.call or { kind = "provider", name = e.name, file = e.origin, phase = "candidates",
                       trusted = e.source == "built-in" }
  local ok, backends, notes = sandbox.call(e.plugin.candidates, e.call, ctx)
  -- a structured error from the host's API (the cluster could not be read
  -- with --require-offerings ...) keeps its meaning and exit code
  if not ok and errors.is(backends) then error(backends, 0) end
  if not ok then
    local msg = tostring(backends)
    -- name the plugin file unless the message already points somewhere
    if not msg:match("^[^\n]-:%d+:") then msg = e.origin .. ": " .. msg end
    errors.raise("INPUT", "provider %q: %s", e.name, msg)
  end
  local function bad_notes()
    errors.raise("INPUT", "provider %q (%s): notes must be a list of strings (or {text =, run = true})",
                 e.name, e.origin)
  end
  if notes ~= nil and type(notes) ~= "table" then bad_notes() end
  local list, run = {}, {}
  for i = 1, notes and rawlen(notes) or 0 do
    local n = rawget(notes, i)
    if type(n) == "table" then
      local text = rawget(n, "text")
      if type(text) ~= "string" then bad_notes() end
      if rawget(n, "run") == true then run[text] = true end
      n = text
    elseif type(n) ~= "string" and type(n) ~= "number" then
      bad_notes()
    end
    list[#list + 1] = tostring(n)
  end
  if type(backends) == "table" then
    local plain = {}
    for i = 1, rawlen(backends) do plain[i] = sandbox.unwrap(rawget(backends, i)) end
    backends = plain
  end
  return backends, list, run
end

function Host:gather(req, providers, state)
  local sandbox = require "fluence.sandbox"
  for _, e in ipairs(providers) do
    local t0 = sys.monotonic()
    local ctx = sandbox.readonly{ request = req, options = self.opts, api = self.api, backends = state.merged }
    local backends, pnotes, prun = M.call(e, ctx)
    state.results[#state.results + 1] = { provider = e.name, backends = backends or {}, trusted = e.source == "built-in" }
    for _, n in ipairs(pnotes) do state.notes[#state.notes + 1] = n end
    for n in pairs(prun) do state.run_notes[n] = true end
    -- a provider that returned no backends leaves the merge as it was
    local none = backends == nil or (type(backends) == "table" and next(backends) == nil)
    if not none or #state.results == 1 then
      local m, err = merge.merge(state.results)
      if not m then errors.raise("INPUT", "%s", err) end
      state.merged = m
    end
    if logger.level() >= 1 then
      logger.v(1, "provider %s: %s in %.0f ms", e.name, require("fluence.plural")(#(backends or {}), "backend"),
               (sys.monotonic() - t0) * 1000)
    end
  end
end

-- Once every provider ran: cost_usd estimated from the unit prices the
-- backends carry (fluence.cost, one more merged result; loaded only when
-- some backend has a price).  names: the attribute names they carry, when
-- known already.
function Host:estimate_costs(req, state, names)
  if require("fluence.units").priced(names or merge.attribute_names(state.merged)) then
    require("fluence.cost").apply(state, req, merge)
  end
end

-- Attribute names a policy may mention without being taken for a typo: what
-- the providers returned (present), and what the live ones would.
function Host:known_attributes(present)
  local set = {}
  for k in pairs(present) do set[k] = true end
  for _, e in ipairs(self.providers.list) do
    for _, a in ipairs(e.decl.provides or {}) do set[a] = true end
  end
  local list = {}
  for k in pairs(set) do list[#list + 1] = k end
  table.sort(list)
  return list
end

return M
