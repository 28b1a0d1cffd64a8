-- The resource graphs the `fits` policy matches against (request.graphs,
-- request.now_graphs): every backend's `graph` attribute (a JGF file, e.g.
-- from an attribute file), else the cluster's offerings grafted onto
-- --graph's cluster graph, else --graph alone; in cluster mode (no --graph)
-- the graph Fluence builds from the live cluster's nodes and, for fits:now,
-- what is free on them now.  Loaded once per run, only for pipelines that
-- fit.  Without the nodes (or, for fits:now, the pods) the run stops with
-- exit 4 naming the cause (fits_data.lua); --fits-best-effort falls back
-- with a note: no graph keeps every backend, no pods matches capacity.
--
--   local g = fit_graphs.new(opts, clusters)     (clusters: fluence.cluster_source)
--   g:for_pool(pool, offered, note, wants_now) -> graphs, now_graphs      one cluster
--   g:for_clusters(pool, offered_by, note, wants_now) -> graphs, now_graphs, keep_unmatched
--       several clusters, each backend against its own cluster's graph
--   note(text [, run]): a note for the decision (run: about the whole run)
local errors = require "fluence.errors"

local M = {}

local Graphs = {}
Graphs.__index = Graphs

function M.new(opts, clusters)
  return setmetatable({ opts = opts, clusters = clusters, files = {} }, Graphs)
end

-- A JGF file, read once per run.
function Graphs:file(path)
  if self.files[path] == nil then
    local g, err = require("fluence.match").load_jgf_file(path)
    if not g then errors.raise("INPUT", "%s", err) end
    self.files[path] = g
  end
  return self.files[path]
end

function Graphs:given()
  return self.opts.graph and self.opts.graph[1] and true or false
end

-- The live cluster's graphs (cluster mode, no --graph).  A fits stage
-- asked for a guarantee: without the nodes (or, wants_now, the pods) the
-- run stops with exit 4, unless --fits-best-effort (fits_data.missing).
function Graphs:live(graphs, note, wants_now)
  local cluster = require "fluence.cluster"
  local fits_data = require "fluence.fits_data"
  local src = self.clusters
  src.load(true)
  local c = src.open().list[1]
  local full = cluster.graph(c, false)
  if not full then
    note(fits_data.missing(c, "nodes", self.opts), true)
    return nil
  end
  graphs["*"] = full
  local sat = cluster.saturation_note(c, c.usage ~= nil)
  if sat then note(sat, true) end
  local now = full
  if c.usage then now = cluster.graph(c, true)
  elseif wants_now then note(fits_data.missing(c, "usage", self.opts), true) end
  return { ["*"] = now }
end

function Graphs:for_pool(backends, offered, note, wants_now)
  local graphs, now_graphs = {}, nil
  local given = self:given() and self:file(self.opts.graph[1])
  if not given and not self.opts.offline then
    now_graphs = self:live(graphs, note, wants_now)
  elseif offered and offered.doc then
    if not self.offered then
      self.offered = require("fluence.offerings").graph(offered, given)
    end
    graphs["*"] = self.offered
  elseif given then
    graphs["*"] = given
  end
  for _, b in ipairs(backends) do
    if type(b.attrs.graph) == "string" then graphs[b.name] = self:file(b.attrs.graph) end
  end
  if next(graphs) == nil then graphs = nil end
  return graphs, now_graphs
end

-- offered_by: candidate name -> its cluster.  A cluster whose nodes (or,
-- wants_now, pods) cannot be read stops the run, the first in pool's order
-- named, unless --fits-best-effort: then it keeps its candidates.
function Graphs:for_clusters(pool, offered_by, note, wants_now)
  if self:given() or self.opts.offline then
    return self:for_pool(pool, nil, function(n) note(n) end)
  end
  local cluster = require "fluence.cluster"
  local fits_data = require "fluence.fits_data"
  self.clusters.load(true)
  local graphs, now_graphs = {}, {}
  for _, b in ipairs(pool) do
    local name, c = b.name, offered_by[b.name]
    local full = cluster.graph(c, false)
    if full then
      graphs[name] = full
      now_graphs[name] = c.usage and cluster.graph(c, true) or full
      local sat = cluster.saturation_note(c, c.usage ~= nil)
      if sat then note(sat, true) end
      if not c.usage and wants_now then note(fits_data.missing(c, "usage", self.opts), true) end
    else
      note(fits_data.missing(c, "nodes", self.opts), true)
    end
  end
  local keep
  for _, b in ipairs(pool) do
    if not graphs[b.name] then
      keep = keep or {}
      keep[b.name] = true
    end
  end
  return graphs, now_graphs, keep
end

return M
