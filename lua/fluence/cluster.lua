-- The clusters a run talks to, and what Fluence sees in each: the offerings
-- ConfigMap, the resource graph it builds from the nodes, and the pods
-- running on them.  Everything a run needs from every cluster is read at
-- once (one curl multi per round, across clusters), on first use.
--
--   local cl = cluster.open(names, opts)  -- one per context (else the current);
--                                       -- a run opens its clusters once,
--                                       -- through fluence.cluster_source
--   cl.list                             -- { c1, c2, ... }; c.name (context), c.client
--   cluster.load(cl.list, { offerings = ns | nil, nodes = bool, pods = bool })
--     c.offerings | c.offerings_error   parsed fluence-resources (offerings.lua)
--     c.nodes | c.nodes_error           { {name, cpu, memory, gpu, ...}, ... }
--     c.usage | c.usage_error           { [node] = {cpu_milli, memory, gpu, pods} }
--   cluster.tree(c [, now])             -- the graph Fluence builds (pkg/cluster
--                                       -- BuildGraph) as a tree for
--                                       -- match.graph_from_tree; now: minus
--                                       -- what the pods there request
--   cluster.graph(c [, now])            -- that tree with the offerings'
--                                       -- virtual resources grafted on, as a
--                                       -- fluence.match graph (cached)
--   cluster.jgf(graph) / cluster.tree_text(graph) -> text (for `fluence graph`)
--
-- The graph, as Fluence builds it: a root `cluster`; one `node` vertex per
-- schedulable node (cordoned nodes and control-plane taints left out), named
-- after it, with a rank (0, 1, ... in list order), the property
-- virtual=false; under it one `core` vertex of size = allocatable cores
-- (else capacity; rounded down: M.whole), one `memory` vertex of size = MiB (unit MB)
-- and one `gpu` vertex of size = nvidia.com/gpu, each only when non-zero.
-- For fits:now the sizes are what is left once the requests of every pod
-- bound to the node and not finished are taken away (what `kubectl describe
-- node` calls allocated); a resource with nothing left has no vertex.
local kubeclient = require "fluence.kubeclient"
local kubelists = require "fluence.kubelists"
local offerings = require "fluence.offerings"
local errors = require "fluence.errors"
local json = require "fluence.json"
local log = require "fluence.log"
local sys = require "fluence.sys"

local M = {}

-- Items per list page: a page costs a round trip, and a 150,000-pod
-- cluster in pages of 500 (kubectl's chunk) is 300 of them; 5,000 pods are
-- ~7 MB of JSON.  Nodes carry more (images, conditions): fewer a page.
M.PAGE = { nodes = 2000, usage = 5000 }
local MIB = 1024 * 1024
M.MAX_CONFIGMAP = 8 * MIB
-- bound, unfinished pods only: the server filters, the rest is never sent
M.POD_SELECTOR = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
-- The lists are read from the API server's watch cache (resourceVersion=0,
-- as an informer's first list): a few seconds' staleness is fine for what
-- fits matches, and the server answers without reading etcd.  Measured on
-- a real kube-apiserver with 5,000 nodes and 50,000 pods
-- (bench/apiserver_scale.lua, docs/kubernetes.md): the pods from the cache
-- cost the server 1.3 s of CPU where pages from etcd cost 3.1 s, and us
-- 1.7 s where pages took 2.4 s.  The price: a server before 1.27 ignores
-- the limit then and sends the list whole (225 MB there; our peak memory
-- 223 MiB instead of 68).  An answer past the list limit (M.MAX_LIST) is
-- refused as it arrives and the list read again in pages from etcd.
M.FROM_CACHE = { nodes = true, usage = true }
M.MAX_LIST = 256 * MIB

-- names: the contexts, each once ({} for the kubeconfig's current one:
-- fluence.cluster_source reads --context); opts: the command line's
-- (kubeconfig, namespace, request-timeout).  Clients are made on first use:
-- a kubeconfig that leads to no cluster is a CLUSTER error then, not at
-- start; one that is wrong (core/kube.c: located, the file named
-- first) an INPUT error.
function M.open(names, opts)
  local list = {}
  for i = 1, math.max(1, #names) do
    local name = names[i]
    local c = { context = name }
    setmetatable(c, { __index = function(t, k)
      if k ~= "client" then return nil end
      -- a client that cannot be made fails once: its kubeconfig is not
      -- read (nor its exec plugin run, with its time limit) again
      local failed = rawget(t, "client_error")
      if failed then error(failed, 0) end
      local ok, client = pcall(kubeclient.new, { kubeconfig = opts.kubeconfig, context = name,
                                                 namespace = opts.namespace, timeout = opts["request-timeout"] })
      if not ok then
        rawset(t, "client_error", client)
        error(client, 0)
      end
      rawset(t, "client", client)
      rawset(t, "name", client.context)
      return client
    end })
    list[#list + 1] = c
  end
  return { list = list, many = #list > 1 }
end

-- The display name of a cluster: its context (made when the client is).
function M.name(c)
  local _ = c.client
  return c.name or c.context or "?"
end

local function note_error(c, what, err)
  c[what .. "_error"] = err
end

-- -v: one line per cluster read, when it is done: what was asked, what
-- came back (pages, bytes, or the cause) and how long the server took (the
-- sum of its requests' times: reads run at once, so this is its own cost).
local WHAT = { offerings = "the offerings", nodes = "the nodes", usage = "the pods" }
local function log_read(s, failure)
  if log.level() < 1 then return end
  local c = s.c
  local outcome
  if failure then
    outcome = "failed: " .. require("fluence.cluster_cause").first_line(failure.cause or failure.message)
  else
    outcome = ("%s, %.1f KiB"):format(require("fluence.plural")(s.pages or 1, "page"), (s.bytes or 0) / 1024)
    if s.items then outcome = outcome .. ", " .. require("fluence.plural")(s.items, "item") end
  end
  log.v(1, "cluster %s: %s (GET %s): %s in %.0f ms", sys.quote(M.name(c)), WHAT[s.what], s.path, outcome,
        (s.time or 0) * 1000)
end

-- Streams: one request, or a paged list, per cluster and kind of data.
local function streams_for(list, want)
  local out = {}
  for _, c in ipairs(list) do
    local ok, client = pcall(function() return c.client end)
    -- a kubeconfig that is wrong (does not parse, bad base64 ...) is bad
    -- input, and a --context it does not define a usage error, whatever
    -- the run needs from the cluster; one that leads nowhere is a cluster
    -- that cannot be read
    if not ok and errors.is(client) and client.kind ~= "CLUSTER" then error(client, 0) end
    if not ok then
      local err = errors.is(client) and client or errors.new("CLUSTER", tostring(client))
      if not rawget(c, "client_logged") then
        rawset(c, "client_logged", true)
        log.v(1, "cluster %s: no client: %s", sys.quote(c.context or "(current context)"), tostring(err.message))
      end
      for _, what in ipairs{ "offerings", "nodes", "usage" } do
        if (what == "offerings" and want.offerings) or (what == "nodes" and want.nodes)
           or (what == "usage" and want.pods) then
          note_error(c, what, err)
        end
      end
    else
      if want.offerings and c.offerings == nil and c.offerings_error == nil then
        -- a ConfigMap holds at most 1 MiB: a larger answer is not one
        out[#out + 1] = { c = c, what = "offerings", path = ("/api/v1/namespaces/%s/configmaps/%s")
                            :format(want.offerings, offerings.NAME), ns = want.offerings, max_body = M.MAX_CONFIGMAP }
      end
      if want.nodes and c.nodes == nil and c.nodes_error == nil then
        out[#out + 1] = { c = c, what = "nodes", path = "/api/v1/nodes", paged = true, acc = {},
                          from_cache = M.FROM_CACHE.nodes, max_body = M.MAX_LIST }
      end
      if want.pods and c.usage == nil and c.usage_error == nil then
        out[#out + 1] = { c = c, what = "usage", path = "/api/v1/pods", paged = true, acc = kubelists.usage(),
                          selector = M.POD_SELECTOR, from_cache = M.FROM_CACHE.usage, max_body = M.MAX_LIST }
      end
    end
  end
  return out
end

-- One page (or the one answer) of a stream: true when the stream is done.
local function take(s, r)
  local c = s.c
  s.time = (s.time or 0) + (r.time or 0)
  if r.error and s.from_cache and tostring(r.error.message):find(": answer larger than %d+ bytes") then
    -- the watch cache answered the list whole, past the limit: read it
    -- again in pages, from etcd (kubeclient's error: http_transfer's words)
    log.v(1, "cluster %s: %s: the watch cache's whole list is larger than %d MiB: reading it in pages",
          sys.quote(M.name(c)), WHAT[s.what], s.max_body // MIB)
    s.from_cache, s.continue, s.pages, s.items, s.bytes = false, nil, nil, nil, nil
    s.acc = s.what == "nodes" and {} or kubelists.usage()
    return false
  end
  if r.error then
    note_error(c, s.what, r.error)
    log_read(s, r.error)
    return true
  end
  s.bytes = (s.bytes or 0) + #(r.body or "")
  if s.what == "offerings" then
    local ok, parsed = errors.try(offerings.from_configmap, json.decode(r.body), s.ns)
    if ok then c.offerings = parsed else note_error(c, "offerings", parsed) end
    log_read(s, not ok and parsed or nil)
    return true
  end
  local items, cont
  if s.what == "nodes" then
    local page, c2 = kubelists.nodes(r.body)
    items, cont = page, c2
    if page then for _, n in ipairs(page) do s.acc[#s.acc + 1] = n end end
  else
    local n, c2 = s.acc:add(r.body)
    items, cont = n, c2
  end
  if not items then
    local e = errors.new("CLUSTER", ("cluster: GET %s%s: %s"):format(c.client.server or "", s.path, cont))
    e.context, e.server, e.cause = c.client.context, c.client.server, cont
    note_error(c, s.what, e)
    log_read(s, e)
    return true
  end
  s.pages = (s.pages or 0) + 1
  if type(items) == "table" then s.items = (s.items or 0) + #items
  elseif type(items) == "number" then s.items = (s.items or 0) + items end
  if cont then s.continue = cont return false end
  if s.what == "nodes" then c.nodes = s.acc else c.usage = s.acc:totals() end
  log_read(s)
  return true
end

-- Reads what `want` names from every cluster in `list` that does not have
-- it yet: each round sends the next request of every unfinished stream at
-- once.  Failures are recorded per cluster (c.<what>_error), never raised.
function M.load(list, want)
  local t0 = sys.monotonic()
  local active = streams_for(list, want)
  local any = #active > 0
  while #active > 0 do
    local batch = {}
    for i, s in ipairs(active) do
      local query
      if s.paged then
        query = { limit = tostring(M.PAGE[s.what]), continue = s.continue, fieldSelector = s.selector,
                  -- the watch cache (resourceVersion=0) for the first page;
                  -- a continue token carries its own version
                  resourceVersion = s.from_cache and not s.continue and "0" or nil }
      end
      batch[i] = { s.c.client, "GET", s.path, nil, nil, query, text = true, max_body = s.max_body }
    end
    local results = kubeclient.request_many(batch)
    local still = {}
    for i, s in ipairs(active) do
      if not take(s, results[i]) then still[#still + 1] = s end
    end
    active = still
  end
  -- said once, when something was read (later loads find it read)
  if any then log.v(1, "clusters read in %.0f ms (at once)", (sys.monotonic() - t0) * 1000) end
end

-- A note when what cluster c's nodes (and, with now, its pods) say went past
-- the int64 range (8Ei of memory, a sum of requests that large): those
-- figures were taken as 2^63-1, as the API server's own arithmetic
-- saturates, rather than wrapping round (a full node shown free) or refusing
-- the whole list.  nil when nothing did.
function M.saturation_note(c, now)
  local names, seen = {}, {}
  local function add(n)
    if not seen[n] then seen[n] = true; names[#names + 1] = n end
  end
  for _, n in ipairs(c.nodes or {}) do if n.saturated then add(n.name) end end
  if now then
    for name, u in pairs(c.usage or {}) do if u.saturated then add(name) end end
  end
  if #names == 0 then return nil end
  table.sort(names)
  local shown = #names > 5 and { table.unpack(names, 1, 5) } or names
  return errors.format("context %q: quantities past 2^63-1 on node%s %s%s were taken as 9223372036854775807 " ..
                       "(saturated, as the API server's arithmetic does)", M.name(c), #names == 1 and "" or "s",
                       table.concat(shown, ", "), #names > 5 and (" and %d more"):format(#names - 5) or "")
end

-- ---------------------------------------------------------------- graphs

-- The one rounding rule of the graphs (fits, fits:now, graph, graph --now
-- and the reasons fits gives all show these numbers): a node's whole cores
-- (MiB) are what it has rounded down, less what the pods bound to it use
-- rounded up -- so free + used = has, and nothing a kubelet would refuse is
-- ever counted free.  (Fluence's own builder rounds allocatable up, 15.5 ->
-- 16, promising half a core no kubelet gives; the pods' requests it does
-- not subtract at all.)  A pod's request is rounded up too (fits.lua).
function M.whole(has, used, unit)
  return has // unit - (-(-used // unit))
end

-- The tree of pkg/cluster BuildGraph (see the top of this file).
function M.tree(c, now)
  local root = { type = "cluster", basename = "cluster", name = "cluster", id = 0, size = 1, rank = -1, with = {} }
  now = now and c.usage ~= nil
  local usage = now and c.usage or {}
  local index = { core = 0, memory = 0, gpu = 0 }
  local rank = 0
  local function child(node, typ, size, unit)
    if size <= 0 then return end
    node.with[#node.with + 1] = { type = typ, basename = typ, name = typ .. index[typ], id = index[typ],
                                  size = size, rank = -1, unit = unit }
    index[typ] = index[typ] + 1
  end
  for _, n in ipairs(c.nodes or {}) do
    if not n.unschedulable and not n.control_plane then
      local u = usage[n.name] or {}
      local v = { type = "node", basename = "node", name = n.name, id = rank, size = 1, rank = rank,
                  properties = { ["virtual=false"] = "" }, hostname = n.name, with = {} }
      rank = rank + 1
      -- M.whole: what a node has rounded down, what its pods use rounded up
      local u_cpu, u_mem = now and (u.cpu_milli or 0) or 0, now and (u.memory or 0) or 0
      child(v, "core", M.whole(n.cpu_milli, u_cpu, 1000))
      child(v, "memory", M.whole(n.memory, u_mem, MIB), "MB")
      child(v, "gpu", n.gpu - (now and u.gpu or 0))
      root.with[#root.with + 1] = v
    end
  end
  return root
end

local usage_of = setmetatable({}, { __mode = "k" })

-- The matchable graph of cluster c: its nodes (now: what is free on them),
-- with the offerings' virtual resources grafted on.  nil, why without nodes.
function M.graph(c, now)
  local key = now and "graph_now" or "graph_full"
  if c[key] ~= nil then return c[key] or nil, c[key .. "_why"] end
  local match = require "fluence.match"
  if not c.nodes then
    c[key] = false
    c[key .. "_why"] = c.nodes_error and c.nodes_error.message or "the nodes were not read"
    return nil, c[key .. "_why"]
  end
  local g, err = match.graph_from_tree(M.tree(c, now))
  if not g then errors.raise("INPUT", "cluster %s: the resource graph: %s", M.name(c), tostring(err)) end
  if c.offerings and c.offerings.doc then
    g = require("fluence.offerings").graph(c.offerings, g, ("cluster %s: "):format(M.name(c)))
  end
  c[key] = g
  if now and c.usage then usage_of[g] = c.usage end
  return g
end

-- Who runs on the nodes of a graph M.graph(c, true) made (c.usage), for
-- why a group does not fit there; nil for any other graph.
function M.usage_of(g)
  return usage_of[g]
end

-- JGF text of a graph: vertices in order with Fluxion's metadata (keys
-- sorted, as Fluence's builder writes them) and the containment edges,
-- written by the matcher's C writer (core/match_jgf.c).  With write, the
-- text goes to write(chunk) piece by piece (`fluence graph` streams it);
-- without, it is returned whole.
function M.jgf(g, write)
  if write then return g:jgf(write) end
  local parts = {}
  g:jgf(function(s) parts[#parts + 1] = s end)
  return table.concat(parts)
end

-- An indented tree: one line per vertex, "name (type) size unit [properties]",
-- for a terminal: names and properties (the offerings' come from the
-- ConfigMap) escaped, one vertex one line.
function M.tree_text(g)
  local out = {}
  for _, v in ipairs(g:vertices()) do
    local depth = select(2, v.path:gsub("/", "")) - 1
    local props = {}
    for k in pairs(v.properties) do props[#props + 1] = k end
    table.sort(props)
    local size = v.size ~= 1 and (" " .. v.size .. (v.unit and v.unit ~= "" and (" " .. v.unit) or "")) or ""
    if v.type == "memory" or v.type == "core" or v.type == "gpu" then
      size = " " .. v.size .. (v.unit and v.unit ~= "" and (" " .. v.unit) or "")
    end
    out[#out + 1] = sys.escape(("%s%s (%s)%s%s%s"):format(("  "):rep(depth), v.name, v.type, size,
      v.rank >= 0 and (" rank " .. v.rank) or "", #props > 0 and (" [" .. table.concat(props, ", ") .. "]") or "")) .. "\n"
  end
  return table.concat(out)
end

return M
