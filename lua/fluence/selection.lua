-- The selection engine: for every Fluence object with a select-policy in the
-- input, gather candidate backends from providers, merge them (C), keep what
-- the cluster offers, run the policy pipeline and stamp the choice into the
-- manifest.  All or nothing: any failure raises a structured error and
-- nothing is printed.
--
--   selection.run(args [, how]) -> { output =, streams =, objects =, results = }
--     (output, the edited text, is made on first use; res:write_output(fd)
--      writes it without making it)
--     how.policy_file: `fluence run POLICY.lua` (decides every Fluence object)
--     how.explain:     also keep every backend and stage for explain
--     how.objects_json: give every object its edited JSON (o.json), for apply
--     how.check_object(obj, where, stream): called for every object as soon
--       as its file is parsed (apply: its request paths are checked)
--     how.inputs, how.clusters, how.api, how.policies: what fluence.testing
--       stands in with: the files ({name =, text =} as inputs.read gives),
--       the clusters' source, provider API overrides, a policy registry
--   res.objects[i].chosen: the backend this run pinned the object to (nil
--     when it made no selection for it); .context: the cluster (context) it
--     was chosen on, with several --context
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local inputs = require "fluence.inputs"
local manifest = require "fluence.manifest"
local merge = require "fluence.merge"
local json = require "fluence.json"
local request_mod = require "fluence.request"
local audit = require "fluence.audit"
local provider_api = require "fluence.provider_api"

local selection = {}

local P = request_mod.PREFIX
local PIN, RESULT, POLICY = P .. "require-backend", P .. "select-result", P .. "select-policy"

-- Kind/name of an object, for a message: on one line whatever the manifest
-- says (a name holding a newline or an escape sequence is escaped).
local function describe(obj)
  return sys.escape(("%s/%s"):format(obj.kind or "?", obj.name or obj.generateName or "?"))
end

local logger = require "fluence.log"

-- The clusters of this run (cluster.lua), read at most once each: the
-- offerings always (unless --offline), and, when a pipeline matches (fits)
-- with no --graph, the nodes and the pods running on them -- all in one
-- round.  offerings() -> value | nil, reason (the first cluster's).
local function clusters_source(args)
  local opts = args.opts
  local src = { want_graph = false }
  local cl
  function src.open()
    if not cl then cl = require("fluence.cluster").open(opts) end
    return cl
  end
  function src.load(graph)
    -- (cluster.load logs each read, once)
    require("fluence.cluster").load(src.open().list, { offerings = opts["fluence-ns"] or "kube-system",
                                                       nodes = graph or src.want_graph, pods = graph or src.want_graph })
  end
  -- The offerings of the cluster being decided for (src.current, with
  -- several contexts), else of the only one.
  function src.offerings()
    if opts.offline then return nil, "offline: the cluster's offerings were not consulted" end
    src.load()
    local c = src.current or src.open().list[1]
    if c.offerings then return c.offerings end
    return require("fluence.cluster_cause").offerings(c, opts)
  end
  return src
end

-- Registries of policies and providers, loaded once per run.
local function registries(args, clusters, how)
  local plugins = require "fluence.plugins"
  local opts = args.opts
  local api = provider_api.new{ verbose = opts.verbose, cluster = { offerings = clusters.offerings },
                                request_timeout = opts["request-timeout"], overrides = how.api }
  return {
    policies = how.policies or plugins.load_policies{ dirs = opts["policy-dir"] },
    providers = plugins.load_providers{ dirs = opts["provider-dir"], api = api },
    api = api,
    offerings = clusters.offerings,
    clusters = clusters,
  }
end

-- A provider by name, or by the family it declares (select-backend: braket
-- finds braket-live).  nil when there is none.
local function find_provider(reg, name)
  local p = reg.providers.get(name)
  if p then return p end
  for _, e in ipairs(reg.providers.list) do
    if e.decl.family == name then return e end
  end
end

-- Which providers run for one request, in override order (later wins):
-- the cluster's offerings, the user's files, providers asked for by name
-- (--provider, the select-backend annotation) -- then, once the policy is
-- compiled, live providers whose attributes the pipeline reads.
local function static_providers(reg, args, req, notes)
  local opts, list, seen = args.opts, {}, {}
  local function add(e)
    if e and not seen[e.name] then seen[e.name] = true; list[#list + 1] = e end
  end
  if not opts.offline then add(reg.providers.get("configmap")) end
  if opts.attributes and #opts.attributes > 0 then add(reg.providers.get("file")) end
  for _, n in ipairs(opts.provider or {}) do
    add(find_provider(reg, n) or errors.raise("USAGE", "unknown provider %q (see 'fluence providers')", n))
  end
  -- the Go client ignored select-backend; a family we lack is only a note
  if req.backend_family then
    local e = find_provider(reg, req.backend_family)
    if e then add(e)
    else notes[#notes + 1] = errors.format("select-backend %q: no provider of that family; ignored", req.backend_family) end
  end
  return list, seen
end

-- present: the attribute names the backends gathered so far carry; a live
-- provider that enriches only backends with some attribute (braket-live:
-- device_arn) would return nothing without one, so it is not run.  An
-- enriches entry ATTR=VALUE (azure-prices: cloud=azure) asks for a backend
-- whose ATTR is VALUE (any case), looked for among backends only then.
local function live_providers(reg, needs, seen, present, backends)
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
  for _, e in ipairs(reg.providers.list) do
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

-- Calls one provider's candidates(ctx) in its sandbox.  A provider that
-- crashes, loops or returns garbage is an INPUT error naming its file.
-- What it returns is read raw (rawlen, rawget): the host never runs a
-- provider's metamethods, which would run outside its budget and time limit.
-- Notes are strings, or { text = "...", run = true } for a fact about the
-- whole run (no credentials ...), said once on stderr.
local function call_provider(e, ctx)
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
selection.call_provider = call_provider

-- Runs providers for one request, adding to what earlier ones returned
-- (state = {results = {...}, merged = {...}, notes = {...}, run_notes = {[text] = true}}).
local function gather(reg, args, req, providers, state)
  local sandbox = require "fluence.sandbox"
  for _, e in ipairs(providers) do
    local t0 = sys.monotonic()
    local ctx = sandbox.readonly{ request = req, options = args.opts, api = reg.api, backends = state.merged }
    local backends, pnotes, prun = call_provider(e, ctx)
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
    logger.v(1, "provider %s: %s in %.0f ms", e.name, require("fluence.plural")(#(backends or {}), "backend"),
             (sys.monotonic() - t0) * 1000)
  end
end

-- Once every provider ran: cost_usd estimated from the unit prices the
-- backends carry (fluence.cost, loaded only when some backend has a price;
-- names: the attribute names they carry, when known).
local function estimate_costs(req, state, names)
  if require("fluence.units").priced(names or merge.attribute_names(state.merged)) then
    require("fluence.cost").apply(state, req, merge)
  end
end

-- Attribute names a policy may mention without being taken for a typo: what
-- the providers returned, and what the live ones would.
local function known_attributes(reg, present)
  local set = {}
  for k in pairs(present) do set[k] = true end
  for _, e in ipairs(reg.providers.list) do
    for _, a in ipairs(e.decl.provides or {}) do set[a] = true end
  end
  local list = {}
  for k in pairs(set) do list[#list + 1] = k end
  table.sort(list)
  return list
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

-- A message about byte pos of obj's policy text: at the file's own line and
-- column when the policy's source (fluence.policy_source) maps it, with the
-- file's line and a caret; else at the annotation's (or the object's)
-- position, pointing into the policy text.  what: "selection failed: " ...
local function policy_message(source, pl_name, text, where, obj, pos, what, msg)
  local head = describe(obj) .. ": " .. what
  if source and source.map then
    if source.same_file then
      local m = source:locate(pos, head .. msg)
      if m then return m end
    else                                  -- a policy file: the object, then the file
      local m = source:locate(pos, msg)
      if m then return ("%s: %s%s"):format(where, head, m) end
    end
  end
  local line, col = require("fluence.grammar").linecol(text, pos)
  return ("%s: %s%s"):format(source and source.at or where, head, sys.locate(pl_name, text, line, col, msg))
end

-- Where obj's select-policy text is written (nil when unknown); only on
-- error paths.
local function manifest_source(stream, obj, req)
  if not (stream and req.policy) then return nil end
  return require("fluence.policy_source").manifest(stream, obj.index, POLICY, req.policy)
end

-- A located, one-stage-pointing failure message.
local function failure(obj, where, result, pl, source)
  local msg = result.error or "no backend selected"
  local stage = #(result.stages or {}) > 0 and pl.stages and pl.stages[#result.stages]
  local text
  if stage and stage.pos then
    text = policy_message(source, pl.name or "select-policy", pl.text, where, obj, stage.pos,
                          "selection failed: ", msg)
  else
    text = ("%s: %s: selection failed: %s"):format(where, describe(obj), msg)
  end
  -- why the failing stage dropped each backend (the first few)
  local last = result.stages and result.stages[#result.stages]
  local names = {}
  for n in pairs(last and last.dropped or {}) do names[#names + 1] = n end
  table.sort(names)
  local lines = {}
  for i, n in ipairs(names) do
    if i > 10 then lines[#lines + 1] = ("\n  ... and %d more (fluence explain shows them all)"):format(#names - 10) break end
    lines[#lines + 1] = ("\n  dropped %s: %s"):format(n, last.dropped[n])
  end
  return text .. table.concat(lines)
end

local function compile(cache, reg, args, text, name, known)
  local key = name .. "\0" .. text .. "\0" .. table.concat(known, ",")
  if cache[key] then return cache[key] end
  local pipeline = require "fluence.pipeline"
  local pl, err = pipeline.compile(text, { policies = reg.policies, name = name, known_attributes = known,
                                           cost_tol = args.opts["cost-tol"] })
  if not pl then
    if errors.is(err) then error(err, 0) end
    errors.raise("INPUT", "%s", tostring(err))
  end
  cache[key] = pl
  return pl
end

-- What a selection depends on, beyond the run's options: objects with the
-- same shape of request share one decision (providers, merge, pipeline,
-- audit), so 10,000 identical Jobs cost one selection and 10,000 stamps.
-- Providers therefore run once per distinct request shape (docs/plugins.md).
local function request_key(req)
  local parts = { req.policy or "", tostring(req.shots), table.concat(req.candidates or {}, ","),
                  table.concat(req.constraints or {}, ","), req.backend_family or "",
                  tostring(req.pods), tostring(req.pod.cpu), tostring(req.pod.memory), tostring(req.pod.gpu),
                  req.duration and (req.duration.from .. "=" .. req.duration.seconds) or "" }
  local vt = {}
  for k, v in pairs(req.pod.virtual or {}) do vt[#vt + 1] = k .. "=" .. tostring(v) end
  table.sort(vt)
  parts[#parts + 1] = table.concat(vt, ",")
  return table.concat(parts, "\0")
end

-- The resource graphs the `fits` policy matches against (request.graphs):
-- every backend's `graph` attribute (a JGF file, e.g. from an attribute
-- file), else the cluster's offerings grafted onto --graph's cluster graph,
-- else --graph alone.  Loaded once per run, only for pipelines that fit.
local function uses_fits(pl)
  for _, st in ipairs(pl.stages or {}) do
    if st.head == "fits" then return true end
  end
  return false
end

-- The live cluster's graphs (cluster mode, no --graph): what Fluence builds
-- from the nodes, and, for fits:now, what is free on them now.  Without the
-- right to list the nodes (or pods) a note says so and fits (fits:now)
-- falls back: no graph keeps every backend; no pods matches capacity.
local function live_graphs(ctx, graphs, notes, run_notes)
  local cluster = require "fluence.cluster"
  local src = ctx.reg.clusters
  src.load(true)
  local c = src.open().list[1]
  local full = cluster.graph(c, false)
  if not full then
    -- fits asked for a guarantee: exit 4 without the nodes, unless --fits-best-effort
    local n = require("fluence.fits_data").missing(c, "nodes", ctx.args.opts)
    notes[#notes + 1] = n
    if run_notes then run_notes[n] = true end
    return nil
  end
  graphs["*"] = full
  local sat = cluster.saturation_note(c, c.usage ~= nil)
  if sat then
    notes[#notes + 1] = sat
    if run_notes then run_notes[sat] = true end
  end
  local now = full
  if c.usage then now = cluster.graph(c, true)
  elseif ctx.fits_now then
    local n = require("fluence.fits_data").missing(c, "usage", ctx.args.opts)
    notes[#notes + 1] = n
    if run_notes then run_notes[n] = true end
  end
  return { ["*"] = now }
end

local function graphs_for(ctx, backends, offered, notes, run_notes)
  local match = require "fluence.match"
  ctx.graph_files = ctx.graph_files or {}
  local function load(path)
    if ctx.graph_files[path] == nil then
      local g, err = match.load_jgf_file(path)
      if not g then errors.raise("INPUT", "%s", err) end
      ctx.graph_files[path] = g
    end
    return ctx.graph_files[path]
  end
  local graphs, now_graphs = {}, nil
  local cluster = ctx.args.opts.graph and ctx.args.opts.graph[1] and load(ctx.args.opts.graph[1])
  if not cluster and not ctx.args.opts.offline then
    now_graphs = live_graphs(ctx, graphs, notes, run_notes)
  elseif offered and offered.doc then
    if not ctx.offered_graph then
      local g, err = match.graph_from_resources(offered.doc, cluster)
      if not g then errors.raise("INPUT", "fluence-resources: %s", tostring(err)) end
      ctx.offered_graph = g
    end
    graphs["*"] = ctx.offered_graph
  elseif cluster then
    graphs["*"] = cluster
  end
  for _, b in ipairs(backends) do
    if type(b.attrs.graph) == "string" then graphs[b.name] = load(b.attrs.graph) end
  end
  if next(graphs) == nil then graphs = nil end
  return graphs, now_graphs
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

-- The decision for one request: providers, merge, offerings, pipeline.
-- Object-independent (messages are located by the caller).
local function decide(ctx, req, how)
  local args, reg = ctx.args, ctx.reg
  -- notes: every note, for the audit; run_notes: those about the whole run
  -- (the cluster's offerings unknown, no credentials), said once on stderr
  local d = { notes = {}, run_notes = {} }
  local state = { results = {}, merged = {}, notes = d.notes, run_notes = d.run_notes }
  local providers, seen = static_providers(reg, args, req, d.notes)
  gather(reg, args, req, providers, state)
  local present = merge.attribute_names(state.merged)
  local pl = how.policy
  if not pl then
    local ok, e = errors.try(compile, ctx.cache, reg, args, req.policy, "select-policy",
                             known_attributes(reg, present))
    if not ok then d.compile_error = e return d end
    pl = e
  end
  d.pipeline = pl
  local needs = pl.attributes and pl:attributes() or {}
  local live = live_providers(reg, needs, seen, present, state.merged)
  gather(reg, args, req, live, state)
  estimate_costs(req, state, #live == 0 and present or nil)
  local backends = state.merged
  d.all = backends
  local offered, why, unread = reg.offerings()
  if why and not args.opts.offline then
    d.notes[#d.notes + 1] = why
    d.run_notes[why] = true
  end
  if #backends == 0 and unread then require("fluence.cluster_cause").needed{ unread } end
  local dropped = {}
  local pool = narrow(backends, req, offered, dropped)
  if #pool == 0 then return no_candidates(d, #backends, dropped) end
  if uses_fits(pl) then
    local sat = request_mod.saturation_note(req)
    if sat then d.notes[#d.notes + 1] = sat end
    ctx.fits_now = select(2, require("fluence.fits_data").wants(pl))
    local graphs, now_graphs = graphs_for(ctx, pool, offered, d.notes, d.run_notes)
    req = setmetatable({ graphs = graphs, now_graphs = now_graphs,
                         now_usage = require("fluence.fits_data").usage(now_graphs) }, { __index = req })
  end
  local result = run_pipeline(d, pl, pool, req, dropped)
  if result.ok then d.chosen = result.chosen end
  return d
end

-- ------------------------------------------------------- several clusters

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

-- The decision for one request among several clusters (--context given
-- more than once): per cluster, the providers (the configmap provider reads
-- that cluster's offerings) and the offerings' narrowing; then one pipeline
-- over every (cluster, backend) candidate, fits matching each against its
-- own cluster's graph.
local function decide_many(ctx, req, how)
  local args, reg = ctx.args, ctx.reg
  local src = reg.clusters
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
    local providers, seen = static_providers(reg, args, req, notes)
    gather(reg, args, req, providers, state)
    for _, n in ipairs(notes) do note(n) end
    per[#per + 1] = { c = c, name = cluster.name(c), state = state, seen = seen }
  end
  local pl = how.policy
  if not pl then
    local union = {}
    for _, p in ipairs(per) do for _, b in ipairs(p.state.merged) do union[#union + 1] = b end end
    union[#union + 1] = { name = "", attrs = { backend = "", context = "" } }
    local ok, e = errors.try(compile, ctx.cache, reg, args, req.policy, "select-policy",
                             known_attributes(reg, merge.attribute_names(union)))
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
    gather(reg, args, req, live_providers(reg, needs, p.seen, merge.attribute_names(p.state.merged), p.state.merged),
           p.state)
    estimate_costs(req, p.state)
    local offered, why, unread = reg.offerings()
    for _, n in ipairs(notes) do note(n) end
    if why and not args.opts.offline then note(why, true) end
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
    local graphs, now_graphs = {}, {}
    if args.opts.graph and args.opts.graph[1] or args.opts.offline then
      local g, ng = graphs_for(ctx, pool, nil, d.notes)
      graphs, now_graphs = g, ng
    else
      src.load(true)
      -- fits asked for a guarantee: a cluster without its nodes (fits:now:
      -- its pods) is exit 4, unless --fits-best-effort (fits_data.lua)
      local fits_data = require "fluence.fits_data"
      local _, wants_now = fits_data.wants(pl)
      for _, b in ipairs(pool) do          -- in order: the first cluster short is named
        local name, c = b.name, offered_by[b.name]
        local full = cluster.graph(c, false)
        if full then
          graphs[name] = full
          now_graphs[name] = c.usage and cluster.graph(c, true) or full
          local sat = cluster.saturation_note(c, c.usage ~= nil)
          if sat then note(sat, true) end
          if not c.usage and wants_now then note(fits_data.missing(c, "usage", args.opts), true) end
        else
          note(fits_data.missing(c, "nodes", args.opts), true)
        end
      end
      -- a cluster without a graph keeps its candidates (fits has nothing to match)
      local keep_all = {}
      for _, b in ipairs(pool) do if not graphs[b.name] then keep_all[b.name] = true end end
      if next(keep_all) then
        local none = {}
        for n in pairs(keep_all) do none[n] = true end
        req = setmetatable({ keep_unmatched = none }, { __index = req })
      end
    end
    req = setmetatable({ graphs = graphs, now_graphs = now_graphs,
                         now_usage = require("fluence.fits_data").usage(now_graphs) }, { __index = req })
  end
  local result = run_pipeline(d, pl, pool, req, dropped)
  if result.ok then
    local top = result.survivors[1]
    d.chosen, d.context = top.attrs.backend, top.attrs.context
  end
  return d
end

-- Selects for one object; returns the record for output/explain.
local function select_one(ctx, obj, where, how, stream)
  local req = request_mod.build(obj, where, stream)
  local key = request_key(req)
  local d = ctx.memo[key]
  if not d then
    local many = not ctx.args.opts.offline and ctx.reg.clusters.open().many
    d = (many and decide_many or decide)(ctx, req, how)
    ctx.memo[key] = d
  end
  if d.compile_error then
    local e = d.compile_error
    if e.policy_pos then
      errors.raise(e.kind or "INPUT", "%s", policy_message(manifest_source(stream, obj, req), "select-policy",
                   req.policy, where, obj, e.policy_pos, "", e.policy_msg))
    end
    errors.raise(e.kind or "INPUT", "%s: %s: %s", where, describe(obj), e.message)
  end
  local rec = { object = obj, request = req, where = where, decision = d, notes = d.notes,
                pipeline = d.pipeline, all = d.all, result = d.result, dropped = d.dropped, chosen = d.chosen,
                context = d.context }
  if d.no_candidates then
    rec.error = ("%s: %s: selection failed: no candidate backends after intersecting providers " ..
                 "with scheduler offerings%s"):format(where, describe(obj), d.no_candidates)
  elseif not d.result.ok then
    local pl = d.pipeline
    rec.error = failure(obj, where, d.result, pl, pl.source or (not how.policy and manifest_source(stream, obj, req)))
    -- a crashing or looping plugin is bad input, not "nothing fits"
    rec.error_kind = d.result.plugin_error and "INPUT" or "SELECT"
  end
  return rec
end

-- Writes the pin and the audit into the object, and the pin alone into its
-- pod templates.  What reaches a pod template must be deterministic: a
-- changed template restarts a Deployment's pods and is refused for a Job, so
-- re-applying an unchanged manifest must not change one.  The time-stamped
-- audit therefore lives on the object only (docs/kubernetes.md).
local OURS = { [PIN] = true, [RESULT] = true }
local function stamp(stream, obj, rec)
  local d = rec.decision
  local used = audit.used(obj.annotations, OURS)
  local budget = audit.LIMIT - used - #PIN - #rec.chosen - #RESULT - 64
  -- the audit of a shared decision is encoded once, and again only for an
  -- object whose other annotations leave it less room
  local text = d.audit_text
  if not text or #text > budget then
    local a = audit.build{ policy = rec.pipeline.text, chosen = rec.chosen, context = rec.context,
                           survivors = rec.result.survivors, dropped = rec.dropped, notes = rec.notes }
    text = audit.encode(a, budget)
    if not d.audit_text then d.audit_text = text end
  end
  local ok, err = stream:set_annotations(obj.index, { [PIN] = rec.chosen, [RESULT] = text }, "object")
  if ok then ok, err = stream:set_annotations(obj.index, { [PIN] = rec.chosen }, "templates") end
  if not ok then errors.raise("INPUT", "%s", err) end
end

-- The names of rec.dropped, sorted.  Every one is a backend of rec.all,
-- which is sorted by name already when one cluster's providers made it:
-- then they are picked out in its order, instead of sorted again (10,000
-- dropped backends are common).
local function dropped_names(rec)
  local names, n = {}, 0
  for _ in pairs(rec.dropped) do n = n + 1 end
  local all = rec.all
  if all and require("fluence.order").names_sorted(all) then
    local dropped = rec.dropped
    for i = 1, #all do
      local name = all[i].name
      if dropped[name] ~= nil then names[#names + 1] = name end
    end
    if #names == n then return names end
    names = {}
  end
  for k in pairs(rec.dropped) do names[#names + 1] = k end
  table.sort(names)
  return names
end

-- The stderr lines of one selection.  A note about the whole run comes
-- first, unindented, the first time it is met for this cluster (said[key]);
-- the object's own notes follow its "selected backend" line.
local function report(rec, said, cluster)
  local d = rec.decision
  local lines, run = {}, d.run_notes
  -- every line one line: what it quotes (backend names and notes from
  -- providers, the cluster and files, the policy text) is escaped, and
  -- quoted as the Go client's %q did
  local esc, quote = sys.escape, sys.quote
  for _, n in ipairs(rec.notes) do
    local key = cluster .. "\0" .. n
    if run[n] and not said[key] then
      said[key] = true
      lines[#lines + 1] = ("note: %s\n"):format(esc(n))
    end
  end
  local on = rec.context and (" on context %s"):format(quote(rec.context)) or ""
  -- the policy quoted briefly (errors.brief): a 1 MB policy is not a 1 MB line
  lines[#lines + 1] = ("selected backend %s%s for %s (policy %s)\n"):format(quote(rec.chosen), on, describe(rec.object),
                                                                          quote(errors.brief(rec.pipeline.text)))
  -- what follows depends on the decision alone: made once for all the
  -- objects that share it
  local tail = d.report_tail
  if not tail then
    local t = {}
    for _, n in ipairs(dropped_names(rec)) do
      t[#t + 1] = "  dropped " .. esc(n) .. ": " .. esc(tostring(rec.dropped[n])) .. "\n"
    end
    for _, n in ipairs(rec.notes) do
      if not run[n] then t[#t + 1] = ("  note: %s\n"):format(esc(n)) end
    end
    tail = table.concat(t)
    d.report_tail = tail
  end
  lines[#lines + 1] = tail
  return table.concat(lines)
end

function selection.run(args, how)
  how = how or {}
  local opts = args.opts
  if not how.inputs and (not opts.filename or #opts.filename == 0) then
    errors.raise("USAGE", "%s: no manifests given (use -f FILE, a directory, or - for stdin)", args.verb)
  end
  local files = how.inputs or inputs.read(opts.filename, opts.recursive)
  local streams = {}
  -- descriptions of the objects a selection can concern, unless every
  -- object's is wanted at once (res.objects makes them when asked)
  local every = how.objects_json or args.opts.output == "json"
  -- stderr: what select prints there; warnings: the part every verb prints
  -- (explain too: a key written twice, a pod fluence cannot pin)
  local stderr, warnings = {}, {}
  local function warn(line)
    stderr[#stderr + 1] = line
    warnings[#warnings + 1] = line
  end
  for i, f in ipairs(files) do
    local s, err = manifest.parse(f.text, f.name, { active_only = not every })
    if not s then errors.raise("INPUT", "%s", err) end
    streams[i] = { stream = s, name = f.name, objects = every and s:objects() or s:active(), every = every }
    for _, w in ipairs(s:warnings()) do warn("warning: " .. w .. "\n") end
    -- how.check_object(obj, where, stream): apply's check of what will
    -- become request paths, before any request of this run
    if how.check_object then
      for _, obj in ipairs(streams[i].objects) do
        how.check_object(obj, ("%s:%d:%d"):format(f.name, obj.line or 1, obj.col or 1), s)
      end
    end
  end

  -- said: run-wide notes already on stderr, per cluster (kubeconfig and
  -- contexts: a note about one of several clusters names its context)
  local contexts = type(opts.context) == "table" and table.concat(opts.context, ",") or (opts.context or "")
  local ctx = { args = args, cache = {}, memo = {}, said = {}, clusters = how.clusters or clusters_source(args),
                cluster = (opts.kubeconfig or "") .. "\0" .. contexts }
  -- reading the nodes and pods costs a round trip or more: only when some
  -- policy matches against the live cluster, and then with the offerings
  if not opts.offline and not (opts.graph and opts.graph[1]) then
    for _, st in ipairs(streams) do
      for _, obj in ipairs(st.objects) do
        local pols = { obj.annotations[POLICY] }
        for _, t in ipairs(obj.templates or {}) do pols[#pols + 1] = t.annotations[POLICY] end
        for _, pol in pairs(pols) do
          if pol:find("fits", 1, true) then ctx.clusters.want_graph = true end
        end
      end
    end
  end
  local selected = 0
  local records, chosen_of = {}, {}
  for _, st in ipairs(streams) do
    for _, obj in ipairs(st.objects) do
      local wanted = obj.wants_selection or (how.policy_file and obj.targets_fluence)
      local chosen, context
      -- schedulerName: fluence where no pod fluence pins is: never silent
      for _, u in ipairs(obj.unpinned or {}) do
        warn(("warning: %s:%d:%d: %s: %s\n"):format(st.name, obj.line or 1, obj.col or 1, describe(obj), u.message))
      end
      local pin = wanted and request_mod.pin(obj)
      if pin and not opts["force-select"] and not how.policy_file then
        stderr[#stderr + 1] = ("note: %s already pinned to %s; skipping selection " ..
                               "(use --force-select to override)\n"):format(describe(obj), sys.quote(pin))
        wanted = false
      end
      if wanted then
        local where = ("%s:%d:%d"):format(st.name, obj.line or 1, obj.col or 1)
        selected = selected + 1
        if logger.progress_due() then
          logger.progress(("selecting: %s so far (%s)"):format(require("fluence.plural")(selected, "object"),
                                                                describe(obj)))
        end
        ctx.reg = ctx.reg or registries(args, ctx.clusters, how)
        if how.policy_file and not how.policy then how.policy = how.load_policy(ctx.reg) end
        local rec = select_one(ctx, obj, where, how, st.stream)
        if how.explain then records[#records + 1] = rec end   -- explain's; a select lets them go
        if rec.error and not how.explain then errors.raise(rec.error_kind or "SELECT", "%s", rec.error) end
        if rec.chosen then
          stamp(st.stream, obj, rec)
          stderr[#stderr + 1] = report(rec, ctx.said, ctx.cluster)
          chosen, context = rec.chosen, rec.context
        end
      end
      if chosen then
        chosen_of[st.stream] = chosen_of[st.stream] or {}
        chosen_of[st.stream][obj.index] = { chosen, context }
      end
    end
  end

  logger.progress(nil)
  -- the streams are rendered only when written (res:write_output(fd)) or
  -- asked for as one string (res.output): never a second copy needlessly
  local rendered = {}
  for i, st in ipairs(streams) do rendered[i] = st.stream end
  -- res.objects, one entry per object of every stream, made when first
  -- asked for (apply, -o json): a select of a 20,000-object stream never does
  local function all_objects()
    local objects = {}
    for _, st in ipairs(streams) do
      for _, obj in ipairs(st.every and st.objects or st.stream:objects()) do
        local c = (chosen_of[st.stream] or {})[obj.index] or {}
        objects[#objects + 1] = { stream = st.stream, index = obj.index, kind = obj.kind,
                                  apiVersion = obj.apiVersion, name = obj.name,
                                  generateName = obj.generateName, namespace = obj.namespace,
                                  chosen = c[1], context = c[2] }
      end
    end
    return objects
  end
  local res = { streams = streams, records = records, stderr = table.concat(stderr), warnings = table.concat(warnings),
                write_output = function(_, fd) return inputs.write(fd, rendered) end }
  -- each object as JSON only for those who need it (apply, -o json)
  if how.objects_json or args.opts.output == "json" then
    res.objects = all_objects()
    -- what kubectl would refuse to send (.inf, `labels: {tier: 1}`) is bad
    -- input, located, before anything is printed or applied
    for _, o in ipairs(res.objects) do
      local text, err = o.stream:object_json(o.index)
      if not text then errors.raise("INPUT", "%s", err) end
      o.json = text
    end
  end
  return setmetatable(res, { __index = function(t, k)
    if k == "objects" then
      t.objects = all_objects()
      return t.objects
    end
    if k ~= "output" then return nil end
    t.output = inputs.join(rendered)
    return t.output
  end })
end

-- The whole edited input as JSON: one object as itself, several as a List.
-- Each object's text is what apply sends (stream:object_json: kubectl's
-- reading of the YAML), indented, never decoded and encoded again: a
-- number such as 100000000000000000000 stays as kubectl writes it.
function selection.render_json(res)
  if #res.objects == 1 then return manifest.indent_json(res.objects[1].json, 4, 0) .. "\n" end
  local items = {}
  for i, o in ipairs(res.objects) do items[i] = "        " .. manifest.indent_json(o.json, 4, 2) end
  return '{\n    "apiVersion": "v1",\n    "items": ' ..
         (#items > 0 and "[\n" .. table.concat(items, ",\n") .. "\n    ]" or "[]") ..
         ',\n    "kind": "List",\n    "metadata": {}\n}\n'
end

return selection
