-- The policy pipeline: select-policy text -> grammar tree -> one closure per
-- stage, each made by a policy plugin (policies/*.lua, user directories);
-- then run over a backend list, recording what every stage kept, reordered
-- and dropped, and why.  Nothing here knows any policy: every stage head is
-- looked up in the registry built by fluence.plugins.
--
--   local pl, err = pipeline.compile(text, { policies = reg, cost_tol = 0.5 | "5%",
--                                            name = "select-policy",
--                                            known_attributes = {...}, budget = n })
--   pl.text, pl.stages         -- stages: { {text, word, head, suffix, pos, tolerance, args}, ... }
--   pl:attributes()            -- set of attribute names read, plus `complete`
--   pl:run(backends, request)  -- result table (see run below); never raises
--                                 for a selection failure
--
-- See docs/policy-language.md for the language and the plugin contract.
local grammar = require "fluence.grammar"
local sandbox = require "fluence.sandbox"
local errors = require "fluence.errors"
local policy_lib = require "fluence.policy_lib"

local pipeline = {}

-- Attribute names that stand for others (the Go client's spellings).
pipeline.ALIASES = { cost = "cost_usd", queue = "queue_size" }
-- Names a typo is checked against (plus the caller's known_attributes).
pipeline.WELL_KNOWN = { "cost_usd", "queue_size", "qubits", "memory_gb", "throughput",
                        "status", "region", "provider", "cost_per_task", "cost_per_shot",
                        "cost_per_minute" }

-- "did you mean" (fluence.suggest, loaded when first asked): plugins get
-- it as ctx.suggest
local function suggest(word, candidates)
  return require("fluence.suggest").closest(word, candidates)
end

-- A compile error at a position: raised inside compile, caught there.
local CErr = {}
local function cerror(msg, pos) error(setmetatable({ msg = msg, pos = pos }, CErr), 0) end
-- one of our markers, not a plugin's imitation of one
local function is_marker(e, mt)
  return getmetatable(e) == mt and type(rawget(e, "msg")) == "string"
end
-- A selection failure raised by a stage closure.
local Fail = {}
sandbox.trust_error_mt(CErr)
sandbox.trust_error_mt(Fail)

-- A compile error at byte pos of the policy text, pointing into it; pos
-- and msg (e.policy_pos, e.policy_msg) let a caller point into the file the
-- text came from instead (fluence.location.policy).
local function located(name, text, pos, msg)
  pos = math.max(1, math.min(pos, #text + 1))
  local line, col = grammar.linecol(text, pos)
  local location = require "fluence.location"
  local e = location.error("INPUT", location.in_text(name, text, line, col, msg))
  e.policy_pos, e.policy_msg = pos, msg
  return e
end

-- Stable sort of an array (table.sort is not stable): ties keep input order.
local function stable_sort(list, less)
  local idx = {}
  for i, v in ipairs(list) do idx[v] = i end
  table.sort(list, function(a, b)
    if less(a, b) then return true end
    if less(b, a) then return false end
    return idx[a] < idx[b]
  end)
  return list
end
pipeline.stable_sort = stable_sort

-- sort_by(list, key [, descending]) sorts by key(element), computed once per
-- element (a comparator would read every backend's attribute through its
-- read-only view O(n log n) times); stable.
local by_keys = require("fluence.order").by_keys
local function sort_by(list, key, descending)
  local keys, order = {}, {}
  for i, v in ipairs(list) do keys[i] = key(v); order[i] = i end
  -- numbers: sorted in C (core/order.c), the same order as below
  if by_keys(list, keys, #order, descending) then return list end
  table.sort(order, function(a, b)
    local ka, kb = keys[a], keys[b]
    if ka ~= kb then
      if descending then return ka > kb end
      return ka < kb
    end
    return a < b
  end)
  local out = {}
  for i, j in ipairs(order) do out[i] = list[j] end
  for i = 1, #out do list[i] = out[i] end
  return list
end
pipeline.sort_by = sort_by

-- Which plugin a stage word names: the whole word, or NAME-SUFFIX for a plugin
-- that takes a suffix (min-cost -> min + "cost"), longest NAME first.
local function resolve(reg, word)
  local e = reg.get(word)
  if e then return e, nil end
  local cut = #word
  while true do
    cut = word:sub(1, cut - 1):match(".*()%-")
    if not cut then return nil end
    local head, suffix = word:sub(1, cut - 1), word:sub(cut + 1)
    local pe = reg.get(head)
    if pe and pe.plugin.suffix and suffix ~= "" then return pe, suffix end
  end
end

-- Words a misspelt stage may have meant: plugin names, and NAME-ATTR for
-- suffix-taking plugins over the well-known attributes and aliases.
local function vocabulary(reg, known)
  local words = {}
  for _, e in ipairs(reg.list) do
    words[#words + 1] = e.name
    if e.plugin.suffix then
      for a in pairs(pipeline.ALIASES) do words[#words + 1] = e.name .. "-" .. a end
      for _, a in ipairs(known) do words[#words + 1] = e.name .. "-" .. a end
    end
  end
  return words
end

local function known_list(opts)
  local list, seen = {}, {}
  local function add(a) if not seen[a] then seen[a] = true; list[#list + 1] = a end end
  for _, a in ipairs(pipeline.WELL_KNOWN) do add(a) end
  local k = opts.known_attributes
  if k then
    if #k > 0 then for _, a in ipairs(k) do add(a) end
    else for a in pairs(k) do add(a) end end
  end
  return list, seen
end

-- Deep copy of plain data (the stage handed to a plugin is its own).
local function copy(v)
  if type(v) ~= "table" then return v end
  local c = {}
  for k, x in pairs(v) do c[k] = copy(x) end
  return c
end

-- A number as a person writes it: 1 not 1.0, 0.3 not 0.30000000000000004.
function pipeline.num(v)
  if math.type(v) == "float" and v == math.floor(v) and math.abs(v) < 1e15 then
    return ("%d"):format(v)
  end
  return tostring(v)
end

-- ctx.jobspecs: the host's jobspec builder (fluence.jobspecs, loaded when
-- a stage first matches), the one `fluence jobspec` prints.
local function jobspecs(request, backend)
  return require("fluence.jobspecs").for_backend(request, backend)
end
-- ctx.needs: what its compute jobspec asks (fits says why not in it)
local function needs(request)
  return require("fluence.jobspecs").needs(request)
end

local Pipeline = {}
Pipeline.__index = Pipeline

-- A stage that reads a cost must not compare figures of different units
-- (fluence.cost.unreconciled: a stated cost_usd beside one the cost model
-- scaled by the workload's pods and hours).  Only the model's estimates
-- can clash, so the model is loaded only when a backend carries one.
local COSTS = { "cost_usd", "spot_cost_usd" }
local MODEL = "cost model"        -- fluence.cost.PROVIDER (spec/cost_spec.lua holds them equal)
local function units_clash(reads, pool)
  for _, attr in ipairs(COSTS) do
    if reads[attr] then
      for i = 1, #pool do
        local src = pool[i].source
        if src and src[attr] == MODEL then return require("fluence.cost").unreconciled(pool, attr) end
      end
    end
  end
end
pipeline.COST_MODEL = MODEL

function pipeline.compile(text, opts)
  opts = opts or {}
  local name = opts.name or "select-policy"
  local reg = opts.policies
  assert(reg and reg.get, "pipeline.compile: opts.policies (a registry) is required")
  local tree, perr = grammar.parse(text)
  if not tree then return nil, located(name, text or "", perr.pos, perr.msg) end
  local known, known_set = known_list(opts)
  -- --cost-tol: absolute ("0.5", as the Go client) or relative ("5%")
  local band, berr = policy_lib.band(opts.cost_tol, pipeline.num)
  if not band then return nil, errors.new("USAGE", "--cost-tol: " .. berr) end

  local self = setmetatable({ text = text, name = name, stages = {},
                              cost_tol = band.value, cost_band = band,
                              budget = opts.budget or sandbox.DEFAULT_BUDGET }, Pipeline)
  for _, st in ipairs(tree.stages) do
    local entry, suffix = resolve(reg, st.word)
    if not entry then
      local msg = errors.format("unknown policy %q", st.word)
      local s = suggest(st.word, vocabulary(reg, known))
      if s then msg = msg .. errors.format(" (did you mean %q?)", s) end
      return nil, located(name, text, st.pos, msg)
    end
    local plugin = entry.plugin
    if st.tolerance and not plugin.tolerance then
      return nil, located(name, text, st.tolerance.pos,
        errors.format("policy %q takes no tolerance", entry.name))
    end
    if st.args and plugin.args == false then
      return nil, located(name, text, st.args.pos,
        errors.format("policy %q takes no arguments", entry.name))
    end
    for _, it in ipairs(st.args and st.args.items or {}) do
      if it.sep == "|" and not plugin.alternatives then
        return nil, located(name, text, it.seppos,
          errors.format("policy %q takes no alternatives (\"|\" between conditions)", entry.name))
      end
    end
    if not st.args and plugin.args == "required" then
      return nil, located(name, text, st.endpos,
        errors.format("policy %q needs arguments (%s:...)", entry.name, st.word))
    end
    local stage = copy(st)
    stage.head, stage.suffix = entry.name, suffix

    local ctx = {
      cost_tol = self.cost_tol,
      cost_tol_relative = band.relative,
      aliases = copy(pipeline.ALIASES),
      -- raise a located compile error (pos: byte offset in the policy text)
      error = function(msg, pos) cerror(tostring(msg), pos or st.pos) end,
      -- raise a selection failure from a stage closure at run time
      fail = function(msg) error(setmetatable({ msg = tostring(msg) }, Fail), 0) end,
      canon = function(a) return pipeline.ALIASES[a] or a end,
      -- an attribute name the user wrote: canonical name, or nil plus the
      -- well-known name it is probably a typo of
      attribute = function(a)
        local c = pipeline.ALIASES[a] or a
        if known_set[c] or pipeline.ALIASES[a] then return c end
        local cand = {}
        for _, k in ipairs(known) do cand[#cand + 1] = k end
        for k in pairs(pipeline.ALIASES) do cand[#cand + 1] = k end
        local s = suggest(a, cand)
        if s then return nil, s end
        return c
      end,
      suggest = suggest,
      sort = stable_sort,
      sort_by = sort_by,
      num = pipeline.num,
      jobspecs = jobspecs,
      needs = needs,
      attr = sandbox.attr,
    }
    -- ranking with a tolerance band, reason wording (policy_lib.lua)
    policy_lib.extend(ctx, { cost_tol = band, fail = ctx.fail, sort_by = sort_by, num = pipeline.num })
    local trusted = entry.source == "built-in"
    local ok, fn, reads = sandbox.call(plugin.compile, { kind = "policy", name = entry.name, file = entry.origin,
                                                         phase = "compile", budget = self.budget, trusted = trusted },
                                       stage, ctx)
    if not ok then
      local e = fn
      if is_marker(e, CErr) then
        local pos = math.tointeger(rawget(e, "pos")) or st.pos
        return nil, located(name, text, pos, e.msg)
      end
      return nil, located(name, text, st.pos,
        errors.format("policy %q (%s): %s", errors.brief(st.text), entry.origin, tostring(e)))
    end
    if type(fn) ~= "function" then
      return nil, located(name, text, st.pos,
        errors.format("policy %q (%s): compile returned %s, not a function", errors.brief(st.text), entry.origin, type(fn)))
    end
    local set
    if type(reads) == "table" then
      set = {}
      for k, v in next, reads do           -- raw: no plugin metamethods outside the budget
        if type(k) == "number" then set[v] = true else set[k] = true end
      end
    end
    self.stages[#self.stages + 1] = {
      text = st.text, word = st.word, head = entry.name, suffix = suffix, pos = st.pos,
      dropped_by = ("dropped by %s"):format(errors.brief(st.text)),   -- the reason a plugin did not give
      tolerance = st.tolerance, args = st.args, origin = entry.origin,
      fn = fn, reads = set,
      call = { kind = "policy", name = entry.name, file = entry.origin, phase = "stage", budget = self.budget,
               trusted = trusted },
    }
  end
  return self
end

-- attributes() -> set of attribute names the stages read, complete
-- (complete is false when a stage did not say what it reads).
function Pipeline:attributes()
  local set, complete = {}, true
  for _, s in ipairs(self.stages) do
    if s.reads then
      for a in pairs(s.reads) do set[a] = true end
    else
      complete = false
    end
  end
  return set, complete
end

-- run(backends, request) -> result
--   { ok, chosen, survivors, stages = { {text, kept, dropped, order_changed, error} },
--     dropped = {name = reason}, error, failed_stage = index, plugin_error }
-- Backends reach plugins as read-only views; the lists handed back must hold
-- only backends of the list the stage received.  plugin_error is true when the
-- failure is a plugin's fault (a crash, a bad result, a spent budget) rather
-- than "no backend satisfies the policy".
function Pipeline:run(backends, request)
  local result = { ok = false, stages = {}, dropped = {}, survivors = {} }
  local pool, given = {}, backends or {}
  for i = 1, #given do                      -- as ipairs: up to the first nil
    local b = given[i]
    if b == nil then break end
    pool[i] = b
  end
  -- merged backends come sorted by name: then sorting would keep them
  if not require("fluence.order").names_sorted(pool) then
    stable_sort(pool, function(a, b) return a.name < b.name end)
  end
  local req = sandbox.readonly(request or {})

  if #pool == 0 then
    result.error = "no candidate backends"
    return result
  end

  -- plugins get read-only views; what they hand back must be views of
  -- backends they received.  Both lists are made and read in C
  -- (core/readonly.c: ro.inputs, ro.collect, which also makes the next
  -- stage's list): per backend and per stage, this bookkeeping in Lua cost
  -- more than most stages.
  local input, index = sandbox.stage_inputs(pool)
  for _, st in ipairs(self.stages) do
    local rec = { text = st.text, kept = {}, dropped = {}, order_changed = false }
    result.stages[#result.stages + 1] = rec
    local function failed(msg, plugin)
      rec.error = msg
      result.error = msg
      result.plugin_error = plugin or nil
      result.failed_stage = #result.stages
      return result
    end
    local clash = st.reads and units_clash(st.reads, pool)
    if clash then return failed(errors.format("policy %q: %s", st.text, clash)) end
    local ok, out, reasons = sandbox.call(st.fn, st.call, input, req)
    if not ok then
      if is_marker(out, Fail) then
        return failed(errors.format("policy %q: %s", errors.brief(st.text), out.msg))
      end
      return failed(errors.format("policy %q (%s): %s", errors.brief(st.text), st.origin, tostring(out)), true)
    end
    if type(out) ~= "table" then
      return failed(errors.format("policy %q (%s): returned %s, not a list of backends",
                                  errors.brief(st.text), st.origin, type(out)), true)
    end
    -- out is read raw: a plugin's metamethods must not run outside its
    -- budget; order_changed: the kept backends are not in their input order
    local next_pool, changed, next_input, next_index =
      sandbox.stage_collect(out, pool, input, index, rec.kept, reasons, st.dropped_by,
                            rec.dropped, result.dropped)
    if not next_pool then
      return failed(errors.format("policy %q (%s): returned %s", errors.brief(st.text), st.origin,
                                  changed == "twice" and "a backend twice" or "a backend that was not in its input"),
        true)
    end
    rec.order_changed = changed
    input, index = next_input, next_index
    pool = next_pool
    if #pool == 0 then
      return failed(errors.format("policy %q eliminated all candidates", errors.brief(st.text)))
    end
  end
  result.ok = true
  result.survivors = pool
  result.chosen = pool[1].name
  return result
end

return pipeline
