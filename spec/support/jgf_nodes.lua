-- The node vertices of a JGF document (what `fluence graph` prints) whose
-- names start with a prefix, each with its metadata and its children by
-- type: specs against a shared cluster look at their own nodes only.
--
--   local nodes = require("support.jgf_nodes")(doc, "graph-")
--   nodes["graph-a"].meta.rank, nodes["graph-a"].memory.size
return function(doc, prefix)
  local by_id, out = {}, {}
  for _, n in ipairs(doc.graph.nodes) do by_id[n.id] = n.metadata end
  for _, e in ipairs(doc.graph.edges) do
    local parent, child = by_id[e.source], by_id[e.target]
    if parent.type == "node" and parent.name:sub(1, #prefix) == prefix then
      out[parent.name] = out[parent.name] or { meta = parent }
      out[parent.name][child.type] = child
    end
  end
  return out
end
