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
--   src.offerings() -> value | nil, reason   the current cluster's (else the
--       only one's) offerings; with --require-offerings an unreadable
--       ConfigMap is a CLUSTER error
-- fluence.testing stands in with its own (testing/stubs.lua: s.clusters).
-- (fluence.cluster, and the Kubernetes client under it, load on first use:
-- an --offline run never needs them.)
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local logger = require "fluence.log"

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
    local cluster = require "fluence.cluster"
    local t0 = sys.monotonic()
    cluster.load(src.open().list, { offerings = opts["fluence-ns"] or "kube-system",
                                    nodes = graph or src.want_graph, pods = graph or src.want_graph })
    logger.v(1, "cluster reads done in %.0f ms", (sys.monotonic() - t0) * 1000)
  end
  function src.offerings()
    if opts.offline then return nil, "offline: the cluster's offerings were not consulted" end
    src.load()
    local c = src.current or src.open().list[1]
    if c.offerings then return c.offerings end
    local err = c.offerings_error
    local on = src.current and errors.format(" on context %q", require("fluence.cluster").name(c)) or ""
    local msg = tostring(err and err.message or err or "unknown error")
    local function why(m)
      return "scheduler offerings unknown" .. on .. " (could not read the fluence-resources ConfigMap: " ..
             m .. "); selecting over all provided backends"
    end
    -- an error shows the located message whole (its source line and
    -- caret); a note, on stderr and in the audit, is one line
    if opts["require-offerings"] then errors.raise("CLUSTER", "%s", why(msg)) end
    return nil, why(msg:match("^[^\n]*"))
  end
  return src
end

return M
