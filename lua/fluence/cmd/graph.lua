-- `fluence graph`: the resource graph Fluence builds from a cluster's nodes
-- (pkg/cluster BuildGraph) with the fluence-resources offerings grafted on —
-- what `fits` matches against.  --now: what is free now, less the requests
-- of the pods bound to each node.
--
--   -o jgf (default)  the graph as JGF; with several --context, one JSON
--                     object {context: JGF, ...}; -o json is the same
--   -o yaml           the same data as YAML
--   -o tree           an indented tree, one vertex a line, per context
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local json = require "fluence.json"
local cluster = require "fluence.cluster"
local cause = require "fluence.cluster_cause"

local cmd = {}

function cmd.run(args)
  local opts = args.opts
  if #args.positional > 0 then errors.raise("USAGE", "graph: unexpected argument %q", args.positional[1]) end
  local fmt = opts.output or "jgf"
  if fmt == "json" then fmt = "jgf" end     -- JGF is JSON
  if fmt ~= "jgf" and fmt ~= "tree" and fmt ~= "yaml" then
    errors.raise("USAGE", "graph: unknown output format %q (jgf, json, yaml or tree)", tostring(fmt))
  end
  local cl = require("fluence.cluster_source").new(opts).open()
  cluster.load(cl.list, { offerings = opts["fluence-ns"] or "kube-system", nodes = true, pods = opts.now })
  local parts, notes = {}, {}
  for _, c in ipairs(cl.list) do
    local name = cluster.name(c)
    -- the nodes are the graph: without them there is no answer (exit 4,
    -- the context, the server and the cause on one line)
    if not c.nodes then errors.raise("CLUSTER", "cluster: %s", cause.line(c, "nodes")) end
    if c.offerings_error then
      notes[#notes + 1] = ("note: no offerings in the graph: %s\n"):format(
        cause.first_line(cause.line(c, "offerings", nil, opts["fluence-ns"])))
    end
    local sat = cluster.saturation_note(c, opts.now)
    if sat then notes[#notes + 1] = "note: " .. sat .. "\n" end
    -- --now shows what fits:now matches, so it fails as fits:now does
    -- without the pods (exit 4), or, with --fits-best-effort, shows capacity
    if opts.now and not c.usage then
      notes[#notes + 1] = "note: " .. require("fluence.fits_data").missing(c, "usage", opts) .. "\n"
    end
    local g = cluster.graph(c, opts.now)
    parts[#parts + 1] = { name = name, graph = g }
  end
  local out
  if fmt == "tree" then
    local t = {}
    for _, p in ipairs(parts) do
      if cl.many then t[#t + 1] = ("context %s:\n"):format(p.name) end
      t[#t + 1] = cluster.tree_text(p.graph)
    end
    out = table.concat(t)
  elseif fmt == "yaml" then
    local data
    if not cl.many then data = json.decode(cluster.jgf(parts[1].graph))
    else
      local order = {}
      data = {}
      for _, p in ipairs(parts) do
        data[p.name] = json.decode(cluster.jgf(p.graph))
        order[#order + 1] = p.name
      end
      setmetatable(data, { __order = order })
    end
    out = require("fluence.yaml_out").encode(data)
  elseif not cl.many then
    -- streamed: an 11 MB graph is never held as text (notes come first)
    if #notes > 0 then sys.write(2, table.concat(notes)) end
    cluster.jgf(parts[1].graph, function(chunk) sys.write(1, chunk) end)
    return sys.EXIT.OK
  else
    local t, order = {}, {}
    for _, p in ipairs(parts) do
      t[p.name] = json.decode(cluster.jgf(p.graph))
      order[#order + 1] = p.name
    end
    out = json.encode(setmetatable(t, { __order = order }), { indent = 2 }) .. "\n"
  end
  if #notes > 0 then sys.write(2, table.concat(notes)) end
  sys.write(1, out)
  return sys.EXIT.OK
end

return cmd
