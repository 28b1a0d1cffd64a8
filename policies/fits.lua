-- fits / fits:now keeps the backends on which the whole pod group fits, the
-- way Fluence will place it: the compute jobspec (a slot per pod) and one
-- device jobspec per virtual resource type, pinned to the backend, must all
-- match (all or nothing).
--
--   fits        satisfiability: the group could ever be placed there
--   fits:now    allocation against the current allocations
--
-- What the caller provides in the request (policies have no I/O):
--   request.graphs   = { [backend name] = <fluence.match graph>, ["*"] = graph }
--                      the backend's resource graph (e.g. match.graph_from_resources
--                      of the fluence-resources ConfigMap grafted onto the cluster
--                      JGF, or a backend's `graph:` entry); "*" serves any backend
--   request.now_graphs = { ... }  (optional) the same for fits:now: what is
--                      free now (the live cluster less its running pods)
--   request.matchers = { [backend name] = <fluence.match matcher> }   (optional)
--                      matchers holding the current allocations, used by fits:now
--                      (the check is rewound: its jobs cancelled, their ids unused)
--   request.match_policy = "first" | "lonode" | ...                    (optional)
--   request.keep_unmatched = { [backend name] = true }   (optional) backends
--                      kept without a graph (their cluster's could not be read)
-- Without request.graphs the stage keeps every backend (nothing to check).
-- The jobspecs are the host's (ctx.jobspecs: fluence.jobspecs, the same
-- `fluence jobspec` prints), with the request's require-<attr> pins.

-- full: the whole graph, when graph is only what is free now (whether a
-- group that does not fit now ever could is asked of it).
local function check(graph, matcher, specs, now, policy, full)
  local m = matcher
  if not m then
    local err
    m, err = graph:matcher { policy = policy }
    if not m then return false, "cannot match: " .. tostring(err) end
  end
  -- a trial: every job id and allocation it takes is rewound afterwards,
  -- failed matches included (resource-query counts an id for those too)
  local mark = matcher and matcher:next_jobid()
  local ok, why = true, nil
  for _, js in ipairs(specs) do
    local r = m:run(now and "allocate" or "satisfiability", js.text, js.what)
    if now and not r.ok and not r.error then
      -- not now: could it ever? (a separate satisfiability check: Fluxion's
      -- allocate_with_satisfiability calls busy constrained nodes "never")
      local sm = m
      if full and full ~= graph then sm = full:matcher { policy = policy } or m end
      r.satisfiable = sm:run("satisfiability", js.text, js.what).satisfiable
    end
    if r.error and not r.ok then
      ok, why = false, ("%s jobspec: %s"):format(js.what, r.error)
      break
    end
    if now then
      if not r.ok then
        ok = false
        why = r.satisfiable and ("%s does not fit now"):format(js.what == "compute" and "the group" or js.what)
                            or ("%s can never fit"):format(js.what == "compute" and "the group" or js.what)
        break
      end
    elseif not r.satisfiable then
      ok, why = false, ("%s can never fit"):format(js.what == "compute" and "the group" or js.what)
      break
    end
  end
  if matcher then matcher:rewind(mark) end
  return ok, why
end

return {
  name = "fits",
  description = "fits[:now]: keep backends on which the group's Fluxion jobspecs all match (now: against current allocations)",
  compile = function(stage, ctx)
    local now = false
    if stage.args then
      local raw = stage.args.raw or ""
      if raw ~= "now" then
        ctx.error(("fits takes no argument or \"now\", found %q"):format(raw), stage.args.pos)
      end
      now = true
    end
    return function(backends, request)
      local graphs = request and request.graphs
      if not graphs then return backends, {} end
      local keep, reasons = {}, {}
      -- fits:now matches what is free now when the caller knows it
      local pool = now and request.now_graphs or nil
      for _, b in ipairs(backends) do
        local whole = graphs[b.name] or graphs["*"]
        local g = pool and (pool[b.name] or pool["*"]) or whole
        if not g and request.keep_unmatched and request.keep_unmatched[b.name] then
          keep[#keep + 1] = b                -- its cluster's graph could not be read (noted)
        elseif not g then
          reasons[b.name] = "no resource graph for this backend"
        else
          local ok, why = check(g, now and request.matchers and request.matchers[b.name] or nil,
                                ctx.jobspecs(request, b.name), now, request.match_policy or "first", whole)
          if ok then keep[#keep + 1] = b else reasons[b.name] = why end
        end
      end
      return keep, reasons
    end, {}
  end,
}
