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
--   request.now_usage = { [backend name] = usage, ["*"] = usage }   (optional)
--                      beside now_graphs: per node {pods =, top = "NS/NAME"},
--                      who uses what is not free (named in the reasons)
-- A group that does not fit is dropped with why, in the graph's numbers:
-- the short resource and the best node for it ("the group does not fit
-- now: needs 8 cpu per pod; best node node-a has 4 of 16 cpu free (12 used
-- by default/busy)"); fluence graph shows the same numbers.
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

-- ------------------------------------------------ why it does not fit
-- the graph's resource types, as a reason names them
local RES = { { "core", "cpu" }, { "memory", "MiB of memory" }, { "gpu", "gpu" } }

-- A graph's real nodes (not the offerings' virtual ones), each with the
-- sizes of its core, memory and gpu vertices; in the graph's order.
local function nodes_of(g)
  local by_path, list = {}, {}
  local vs = g:vertices()
  for _, v in ipairs(vs) do
    if v.type == "node" and v.properties and v.properties["virtual=false"] ~= nil then
      local n = { name = v.name, core = 0, memory = 0, gpu = 0 }
      by_path[v.path] = n
      list[#list + 1] = n
    end
  end
  for _, v in ipairs(vs) do
    local n = by_path[v.path:match("^(.*)/[^/]+$") or ""]
    if n and n[v.type] ~= nil then n[v.type] = n[v.type] + v.size end
  end
  return list
end

-- "12 used by default/busy", "12 used by 3 pods, the most by default/busy"
local function used_by(used, what, u)
  local s = ("%d used"):format(used)
  if type(u) ~= "table" or not u.pods or u.pods == 0 then return s end
  local top = u.top and u.top ~= "" and u.top or nil
  if u.pods == 1 then return s .. (top and (" by " .. top) or " by 1 pod") end
  return s .. (" by %d pods%s"):format(u.pods, top and what == "core" and (", the most by " .. top) or "")
end

-- Why the group's compute jobspec does not fit g (need: what it asks,
-- ctx.needs; full: the whole graph when g is what is free now; usage: who
-- runs there), or nil when the numbers do not say (enough nodes have what
-- a pod needs, a pod a node: the shortage is elsewhere).
local function why_not(need, g, full, now, usage)
  local pods = need.pods
  local free = nodes_of(g)
  if #free == 0 then return "the graph has no node with virtual=false (where the compute jobspec asks)" end
  local has = {}
  if now and full and full ~= g then
    for _, n in ipairs(nodes_of(full)) do has[n.name] = n end
  end
  local fitting = 0
  for _, n in ipairs(free) do
    if n.core >= need.core and n.memory >= need.memory and n.gpu >= need.gpu then fitting = fitting + 1 end
  end
  if fitting >= pods then return nil end
  local short, short_count
  for _, r in ipairs(RES) do
    local t = r[1]
    if need[t] > 0 then
      local count = 0
      for _, n in ipairs(free) do if n[t] >= need[t] then count = count + 1 end end
      if count < pods and (not short or count < short_count) then short, short_count = r, count end
    end
  end
  if not short then return nil end
  local t, unit = short[1], short[2]
  local best
  for _, n in ipairs(free) do
    if n[t] < need[t] and (not best or n[t] > best[t] or (n[t] == best[t] and n.name < best.name)) then best = n end
  end
  if not best then                    -- every node would do: too few of them
    return ("needs %d nodes (a pod a node) with %d %s each; the graph has %d"):format(pods, need[t], unit, #free)
  end
  local head = ("needs %d %s per pod"):format(need[t], unit)
  if pods > 1 then head = head .. (" on %d nodes (a pod a node)"):format(pods) end
  if short_count > 0 then
    head = head .. ("; %d of %d nodes %s that%s; of the others"):format(short_count, #free,
                                                                    short_count == 1 and "has" or "have",
                                                                    now and " free now" or "")
  end
  local where
  local h = has[best.name]
  if now and h then
    where = ("%s has %d of %d %s free (%s)"):format(best.name, best[t], h[t], t == "core" and "cpu" or
                                                   t == "memory" and "MiB" or "gpu",
                                                   used_by(h[t] - best[t], t, usage and usage[best.name]))
  else
    where = ("%s has %d %s"):format(best.name, best[t], unit)
  end
  return head .. (short_count > 0 and ", " or "; best node ") .. where
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
      local keep, reasons, explained = {}, {}, {}
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
          if not ok and why:find("^the group ") then
            -- in numbers: the short resource, the best node (once per
            -- graph): "never" against the whole graph, "not now" against
            -- what is free, with what the whole graph has and who uses it
            local never = why:find("can never fit", 1, true) ~= nil
            local on = never and whole or g
            if explained[on] == nil then
              explained[on] = why_not(ctx.needs(request), on, whole, not never and on ~= whole,
                                      request.now_usage and (request.now_usage[b.name] or request.now_usage["*"]))
                              or false
            end
            if explained[on] then why = why .. ": " .. explained[on] end
          end
          if ok then keep[#keep + 1] = b else reasons[b.name] = why end
        end
      end
      return keep, reasons
    end, {}
  end,
}
