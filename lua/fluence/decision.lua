-- The decision for one request: the providers it runs (fluence.provider_host),
-- the policy compiled knowing their attributes, the pool narrowed by
-- select-candidates and the cluster's offerings, the graphs `fits` matches
-- against (fluence.fit_graphs), and the pipeline's result.  Objects whose
-- requests have the same shape share one decision, so 10,000 identical Jobs
-- cost one selection and 10,000 stamps; providers therefore run once per
-- distinct request shape (docs/plugins.md).  Object-independent: messages
-- are located by the caller (fluence.selection).
--
--   local decider = decision.new{ opts =, host =, policies =, clusters =, cost_tol = }
--   decider:decide(req [, policy]) -> d       policy: a compiled pipeline that
--       decides every request (`fluence run`), else req.policy compiled
--   d.pipeline, d.all (every backend), d.result (the pipeline's), d.dropped
--   ({name = reason}), d.chosen, d.context (among several clusters),
--   d.notes, d.run_notes ({[note] = true}: about the whole run), d.many,
--   d.compile_error (the policy did not compile), d.no_candidates (why none
--   was left before the pipeline)
local errors = require "fluence.errors"
local merge = require "fluence.merge"
local request_mod = require "fluence.request"

local M = {}

local Decider = {}
Decider.__index = Decider

function M.new(o)
  return setmetatable({ opts = o.opts, host = o.host, policies = o.policies, clusters = o.clusters,
                        cache = {}, memo = {} }, Decider)
end

-- A map as "k=v,..." sorted; "" for none or an empty one.
local function map_key(t)
  if t == nil or next(t) == nil then return "" end
  local kv = {}
  for k, v in pairs(t) do kv[#kv + 1] = k .. "=" .. tostring(v) end
  table.sort(kv)
  return table.concat(kv, ",")
end

-- What a decision depends on, beyond the run's options.
local function request_key(req)
  local parts = { req.policy or "", tostring(req.shots), table.concat(req.candidates or {}, ","),
                  table.concat(req.constraints or {}, ","), req.backend_family or "",
                  tostring(req.pods), tostring(req.pod.cpu), tostring(req.pod.memory), tostring(req.pod.gpu),
                  req.duration and (req.duration.from .. "=" .. req.duration.seconds) or "" }
  -- the two maps, each as sorted k=v (most often both empty: then no list)
  parts[#parts + 1] = map_key(req.pod.virtual)
  parts[#parts + 1] = map_key(req.require)
  return table.concat(parts, "\0")
end

function Decider:compile(text, known)
  local key = text .. "\0" .. table.concat(known, ",")
  if self.cache[key] then return self.cache[key] end
  local pipeline = require "fluence.pipeline"
  local pl, err = pipeline.compile(text, { policies = self.policies, name = "select-policy", known_attributes = known,
                                           cost_tol = self.opts["cost-tol"] })
  if not pl then
    if errors.is(err) then error(err, 0) end
    errors.raise("INPUT", "%s", tostring(err))
  end
  self.cache[key] = pl
  return pl
end

-- select-candidates and the cluster's offerings narrow the pool before the
-- pipeline; each drop keeps its reason (the Go client's wording).
local function narrow(backends, req, offered, dropped)
  local out = backends
  if req.candidates then
    local allow = {}
    for _, n in ipairs(req.candidates) do allow[n] = true end
    local kept = {}
    for _, b in ipairs(out) do
      if allow[b.name] then kept[#kept + 1] = b else dropped[b.name] = "not in select-candidates" end
    end
    out = kept
  end
  if offered then
    local names = {}
    for _, b in ipairs(offered.backends) do names[b.name] = b end
    local kept = {}
    for _, b in ipairs(out) do
      if not names[b.name] then
        dropped[b.name] = "not offered by the cluster scheduler"
      elseif next(b.attrs) == nil then
        dropped[b.name] = "offered by scheduler but no attributes available (not in file/providers)"
      else
        kept[#kept + 1] = b
      end
    end
    out = kept
  end
  return out
end

-- No candidate left before the pipeline: a failed result that says why.
local function no_candidates(d, n_backends, dropped)
  d.dropped, d.result = dropped, { ok = false, stages = {}, dropped = {} }
  d.no_candidates = n_backends == 0 and
    " (no provider returned any: give --attributes FILE or --provider NAME)" or ""
  return d
end

-- The pipeline over pool; what it drops joins what narrowing dropped.
local function run_pipeline(d, pl, pool, req, dropped)
  local result = pl:run(pool, req)
  for name, reason in pairs(result.dropped or {}) do
    if not dropped[name] then dropped[name] = reason end
  end
  d.result, d.dropped = result, dropped
  return result
end

-- Does a stage match (fits)?  Only then are graphs read (fluence.fit_graphs,
-- loaded then too).
local function uses_fits(pl)
  for _, st in ipairs(pl.stages or {}) do
    if st.head == "fits" then return true end
  end
  return false
end

function Decider:graphs()
  self.fit = self.fit or require("fluence.fit_graphs").new(self.opts, self.clusters)
  return self.fit
end

-- The request as `fits` sees it: with the graphs to match against.
-- (now_usage: who runs on the nodes of each now graph, for its reasons)
local function with_graphs(req, graphs, now_graphs, keep_unmatched)
  return setmetatable({ graphs = graphs, now_graphs = now_graphs, keep_unmatched = keep_unmatched,
                        now_usage = require("fluence.fits_data").usage(now_graphs) },
                      { __index = req })
end

-- Does pl match (fits), and against what is free now (fits:now)?  A fits
-- stage must not guess: without what it needs the run stops (fits_data).
local function fits_now(pl)
  return select(2, require("fluence.fits_data").wants(pl))
end

-- One cluster (or none): providers, merge, offerings, pipeline.
function Decider:one(req, policy)
  local host = self.host
  -- notes: every note, for the audit; run_notes: those about the whole run
  -- (the cluster's offerings unknown, no credentials), said once on stderr
  local d = { notes = {}, run_notes = {} }
  local function note(n, run)
    d.notes[#d.notes + 1] = n
    if run then d.run_notes[n] = true end
  end
  local state = { results = {}, merged = {}, notes = d.notes, run_notes = d.run_notes }
  local providers, seen = host:static(req, d.notes)
  host:gather(req, providers, state)
  local present = merge.attribute_names(state.merged)
  local pl = policy
  if not pl then
    local ok, e = errors.try(self.compile, self, req.policy, host:known_attributes(present))
    if not ok then d.compile_error = e return d end
    pl = e
  end
  d.pipeline = pl
  local needs = pl.attributes and pl:attributes() or {}
  local live = host:live(needs, seen, state, present)
  host:gather(req, live, state)
  host:estimate_costs(req, state, #live == 0 and present or nil)
  local backends = state.merged
  d.all = backends
  local offered, why, unread = self.clusters.offerings()
  if why and not self.opts.offline then note(why, true) end
  -- nothing else gave a backend: the cluster was needed, and its cause is the answer
  if #backends == 0 and unread then require("fluence.cluster_cause").needed{ unread } end
  local dropped = {}
  local pool = narrow(backends, req, offered, dropped)
  if #pool == 0 then return no_candidates(d, #backends, dropped) end
  if uses_fits(pl) then
    local sat = request_mod.saturation_note(req)
    if sat then note(sat) end
    req = with_graphs(req, self:graphs():for_pool(pool, offered, note, fits_now(pl)))
  end
  local result = run_pipeline(d, pl, pool, req, dropped)
  if result.ok then d.chosen = result.chosen end
  return d
end

-- A backend of cluster `name` as a candidate among several clusters: named
-- BACKEND@CONTEXT (names stay unique for the pipeline and its reasons), with
-- the attributes `backend` and `context` policies can test.
local function candidate(b, name)
  local attrs, source = {}, {}
  for k, v in pairs(b.attrs) do attrs[k] = v end
  for k, v in pairs(b.source or {}) do source[k] = v end
  attrs.backend, attrs.context = b.name, name
  source.backend, source.context = "cluster", "cluster"
  return { name = b.name .. "@" .. name, attrs = attrs, source = source }
end

-- Several clusters (--context given more than once): per cluster, the
-- providers (the configmap provider reads that cluster's offerings) and the
-- offerings' narrowing; then one pipeline over every (cluster, backend)
-- candidate, fits matching each against its own cluster's graph.
function Decider:many(req, policy)
  local host, src = self.host, self.clusters
  local cluster = require "fluence.cluster"
  local d = { notes = {}, many = true, all = {}, run_notes = {} }
  local said = {}
  -- run: a fact about a whole cluster (said once on stderr)
  local function note(n, run)
    if not said[n] then said[n] = true; d.notes[#d.notes + 1] = n end
    if run then d.run_notes[n] = true end
  end
  local per = {}
  for _, c in ipairs(src.open().list) do
    src.current = c
    local notes = {}
    local state = { results = {}, merged = {}, notes = notes, run_notes = d.run_notes }
    local providers, seen = host:static(req, notes)
    host:gather(req, providers, state)
    for _, n in ipairs(notes) do note(n) end
    per[#per + 1] = { c = c, name = cluster.name(c), state = state, seen = seen }
  end
  local pl = policy
  if not pl then
    local union = {}
    for _, p in ipairs(per) do for _, b in ipairs(p.state.merged) do union[#union + 1] = b end end
    union[#union + 1] = { name = "", attrs = { backend = "", context = "" } }
    local ok, e = errors.try(self.compile, self, req.policy, host:known_attributes(merge.attribute_names(union)))
    if not ok then src.current = nil; d.compile_error = e return d end
    pl = e
  end
  d.pipeline = pl
  local needs = pl.attributes and pl:attributes() or {}
  local pool, dropped, offered_by, unreadable = {}, {}, {}, {}
  for _, p in ipairs(per) do
    src.current = p.c
    local notes = {}
    p.state.notes = notes
    host:gather(req, host:live(needs, p.seen, p.state, merge.attribute_names(p.state.merged)), p.state)
    host:estimate_costs(req, p.state)
    local offered, why, unread = src.offerings()
    for _, n in ipairs(notes) do note(n) end
    if why and not self.opts.offline then note(why, true) end
    if unread then unreadable[#unreadable + 1] = unread end
    local dr = {}
    local kept = narrow(p.state.merged, req, offered, dr)
    for n, r in pairs(dr) do dropped[n .. "@" .. p.name] = r end
    for _, b in ipairs(p.state.merged) do d.all[#d.all + 1] = candidate(b, p.name) end
    for _, b in ipairs(kept) do
      local cand = candidate(b, p.name)
      pool[#pool + 1] = cand
      offered_by[cand.name] = p.c
    end
  end
  src.current = nil
  if #d.all == 0 and #unreadable > 0 then require("fluence.cluster_cause").needed(unreadable) end
  if #pool == 0 then return no_candidates(d, #d.all, dropped) end
  if uses_fits(pl) then
    local sat = request_mod.saturation_note(req)
    if sat then note(sat) end
    req = with_graphs(req, self:graphs():for_clusters(pool, offered_by, note, fits_now(pl)))
  end
  local result = run_pipeline(d, pl, pool, req, dropped)
  if result.ok then
    local top = result.survivors[1]
    d.chosen, d.context = top.attrs.backend, top.attrs.context
  end
  return d
end

function Decider:decide(req, policy)
  local key = request_key(req)
  local d = self.memo[key]
  if not d then
    local many = not self.opts.offline and self.clusters.open().many
    d = (many and self.many or self.one)(self, req, policy)
    self.memo[key] = d
  end
  return d
end

return M
