-- The selection engine: for every Fluence object with a select-policy in the
-- input, the decision for its request (fluence.decision: providers, merge,
-- offerings, pipeline) and the choice stamped into the manifest.  All or
-- nothing: any failure raises a structured error and nothing is printed.
--
--   selection.run(args [, how]) -> { output =, streams =, objects =, results =, clusters = }
--     (output, the edited text, is made on first use; res:write_output(fd)
--      writes it without making it; clusters: the run's clusters
--      (fluence.cluster_source), for a verb that goes on to them: apply)
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
local request_mod = require "fluence.request"
local audit = require "fluence.audit"
local logger = require "fluence.log"

local selection = {}

local P = request_mod.PREFIX
local LOOP_GC_PAUSE = 400      -- percent: see the selection loop in selection.run
local PIN, RESULT, POLICY = P .. "require-backend", P .. "select-result", P .. "select-policy"

-- Kind/name of an object, for a message: on one line whatever the manifest
-- says (a name holding a newline or an escape sequence is escaped).
local function describe(obj)
  return sys.escape(("%s/%s"):format(obj.kind or "?", obj.name or obj.generateName or "?"))
end

-- What a run decides with, made when its first object needs a selection:
-- the policies, the provider host (with the provider API) and the decider.
local function engine(args, clusters, how)
  local plugins = require "fluence.plugins"
  local opts = args.opts
  local api = require("fluence.provider_api").new{ verbose = opts.verbose, cluster = { offerings = clusters.offerings },
                                                   request_timeout = opts["request-timeout"], overrides = how.api }
  local policies = how.policies or plugins.load_policies{ dirs = opts["policy-dir"] }
  local host = require("fluence.provider_host").new{
    opts = opts, api = api, providers = plugins.load_providers{ dirs = opts["provider-dir"], api = api } }
  return { policies = policies,
           decider = require("fluence.decision").new{ opts = opts, host = host, policies = policies,
                                                      clusters = clusters } }
end

-- Where obj's select-policy text is written (nil when unknown); only on
-- error paths.
local function manifest_source(stream, obj, req)
  if not (stream and req.policy) then return nil end
  return require("fluence.policy_source").manifest(stream, obj.index, POLICY, req.policy)
end

-- A message about byte pos of obj's policy, located (fluence.location):
-- what: "selection failed: " ...
local function policy_message(source, pl_name, text, at, obj, pos, what, msg)
  local location = require "fluence.location"
  return location.render(location.policy{ source = source, name = pl_name, text = text, pos = pos,
                                          message = msg, at = at, head = describe(obj) .. ": " .. what })
end

-- A located, one-stage-pointing failure message.
local function failure(obj, where, at, result, pl, source)
  local msg = result.error or "no backend selected"
  local stage = #(result.stages or {}) > 0 and pl.stages and pl.stages[#result.stages]
  local text
  if stage and stage.pos then
    text = policy_message(source, pl.name or "select-policy", pl.text, at, obj, stage.pos, "selection failed: ", msg)
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

-- Selects for one object; returns the record for output/explain.  at: the
-- object's place (location.at), where: the same as text.
local function select_one(run, obj, where, at, how, stream)
  local req = request_mod.build(obj, where, stream)
  local d = run.engine.decider:decide(req, how.policy)
  if d.compile_error then
    local e = d.compile_error
    if e.policy_pos then
      errors.raise(e.kind or "INPUT", "%s", policy_message(manifest_source(stream, obj, req), "select-policy",
                   req.policy, at, obj, e.policy_pos, "", e.policy_msg))
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
    rec.error = failure(obj, where, at, d.result, pl, pl.source or (not how.policy and manifest_source(stream, obj, req)))
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

-- The stderr lines of one selection, appended to out (the tail, shared by
-- the objects of one decision, as its own piece: with 10,000 dropped
-- backends it is half a megabyte, and joining it to the line above it was
-- one more copy of it).  A note about the whole run comes
-- first, unindented, the first time it is met for this cluster (said[key]);
-- the object's own notes follow its "selected backend" line.
local function report(out, rec, said, cluster)
  local d = rec.decision
  local lines, run = out, d.run_notes
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
    local t, said_as = {}, {}     -- reasons repeat (a few distinct in 10,000): escaped once each
    for _, n in ipairs(dropped_names(rec)) do
      local why = tostring(rec.dropped[n])
      local e = said_as[why]
      if not e then e = esc(why); said_as[why] = e end
      t[#t + 1] = "  dropped " .. esc(n) .. ": " .. e .. "\n"
    end
    for _, n in ipairs(rec.notes) do
      if not run[n] then t[#t + 1] = ("  note: %s\n"):format(esc(n)) end
    end
    tail = table.concat(t)
    d.report_tail = tail
  end
  lines[#lines + 1] = tail
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

  -- the clusters of this run: opened once, whoever asks (apply too)
  local clusters = how.clusters or require("fluence.cluster_source").new(opts)
  -- said: run-wide notes already on stderr, per cluster (kubeconfig and
  -- contexts: a note about one of several clusters names its context)
  local run = { said = {}, clusters = clusters, cluster = clusters.key or "" }
  -- reading the nodes and pods costs a round trip or more: only when some
  -- policy matches against the live cluster, and then with the offerings
  if not opts.offline and not (opts.graph and opts.graph[1]) then
    for _, st in ipairs(streams) do
      for _, obj in ipairs(st.objects) do
        local pols = { obj.annotations[POLICY] }
        for _, t in ipairs(obj.templates or {}) do pols[#pols + 1] = t.annotations[POLICY] end
        for _, pol in pairs(pols) do
          if pol:find("fits", 1, true) then clusters.want_graph = true end
        end
      end
    end
  end
  local selected = 0
  local records, chosen_of = {}, {}
  -- Every description stays live to the end of this loop, which makes ~3 KB
  -- of garbage per object.  At the collector's default pause (a cycle each
  -- time the heap doubles) a 10,000-Job stream re-marked and swept its 18 MB
  -- of descriptions two or three times for that garbage (4% of the run);
  -- for the loop a cycle waits until the heap is four times what is live.
  local pause = collectgarbage("setpause", LOOP_GC_PAUSE)
  local _ <close> = setmetatable({}, { __close = function() collectgarbage("setpause", pause) end })
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
        local at = { file = st.name, line = obj.line or 1, column = obj.col or 1 }   -- a location.at
        local where = ("%s:%d:%d"):format(at.file, at.line, at.column)
        selected = selected + 1
        if logger.progress_due() then
          logger.progress(("selecting: %s so far (%s)"):format(require("fluence.plural")(selected, "object"),
                                                                describe(obj)))
        end
        run.engine = run.engine or engine(args, clusters, how)
        if how.policy_file and not how.policy then how.policy = how.load_policy(run.engine) end
        local rec = select_one(run, obj, where, at, how, st.stream)
        if how.explain then records[#records + 1] = rec end   -- explain's; a select lets them go
        if rec.error and not how.explain then errors.raise(rec.error_kind or "SELECT", "%s", rec.error) end
        if rec.chosen then
          stamp(st.stream, obj, rec)
          report(stderr, rec, run.said, run.cluster)
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
                clusters = clusters,
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
