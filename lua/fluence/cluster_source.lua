-- The clusters of one run, as a verb shares them: opened on first use and
-- once only (each kubeconfig read, each exec credential plugin run, once
-- per context, whoever asks: the selection, the configmap provider, apply),
-- and read at most once each -- the offerings always (unless --offline),
-- and, when a pipeline matches (fits) with no --graph, the nodes and the
-- pods running on them, all in one round.
--
--   cluster_source.contexts(opts) -> { name, ... }   --context, in order, each
--                           once ({}: the kubeconfig's current context); the
--                           one reading of the option (a string given once,
--                           a list repeated)
--   local src = cluster_source.new(opts)
--   src.open() -> cl        fluence.cluster's open, made once (cl.list, cl.many)
--   src.key                 names these clusters (kubeconfig, contexts)
--   src.want_graph          set before the first load: read nodes and pods too
--   src.load([graph])       reads what is wanted from every cluster
--   src.current             the cluster being decided for, among several
--   src.offerings() -> value | nil, note, cause   the current cluster's (else
--       the only one's) offerings; unread: the note to go on with and the
--       cause on one line (fluence.cluster_cause); with --require-offerings
--       an unreadable ConfigMap is a CLUSTER error
-- fluence.testing stands in with its own (testing/stubs.lua: s.clusters).
-- (fluence.cluster, and the Kubernetes client under it, load on first use:
-- an --offline run never needs them.)

local M = {}

function M.contexts(opts)
  local names = opts.context
  if type(names) ~= "table" then names = { names } end
  local seen, out = {}, {}
  for i = 1, #names do
    local name = names[i]
    if name ~= nil and not seen[name] then
      seen[name] = true
      out[#out + 1] = name
    end
  end
  return out
end

function M.new(opts)
  local names = M.contexts(opts)
  local src = { want_graph = false, key = (opts.kubeconfig or "") .. "\0" .. table.concat(names, ",") }
  local cl
  function src.open()
    if not cl then cl = require("fluence.cluster").open(names, opts) end
    return cl
  end
  function src.load(graph)
    -- (cluster.load logs each read, once)
    require("fluence.cluster").load(src.open().list, { offerings = opts["fluence-ns"] or "kube-system",
                                                       nodes = graph or src.want_graph, pods = graph or src.want_graph })
  end
  function src.offerings()
    if opts.offline then return nil, "offline: the cluster's offerings were not consulted" end
    src.load()
    local c = src.current or src.open().list[1]
    if c.offerings then return c.offerings end
    -- the note (one line), and the cause for when nothing else gave a
    -- backend; with --require-offerings the run stops here
    return require("fluence.cluster_cause").offerings(c, opts)
  end
  return src
end

return M
