-- Turns a flux-sched GRUG recipe (graphml) into the JGF graph resource-query
-- builds from it, so that flux-sched's own test data can run through
-- `fluence match` (which reads JGF only).  resource-query does the work:
-- it loads the GRUG, applies optional `set-property PATH K=V` lines, and
-- `find status=up` writes every vertex and the edges it walked as JGF.
-- What find does not write is added back: the second parents of a DAG (a
-- GRUG ASSOCIATE_IN edge: every vertex of the source's type gets an edge to
-- every vertex of the target's type, in uniq_id order - what flux-sched's
-- mt-storage recipes need); the "exclusive" flag find sets on every vertex
-- is dropped; vertices written once per parent are kept once.
--
--   lua5.4 tools/grug2jgf.lua GRAPH.graphml [PROPERTIES.in] > GRAPH.json
--
-- RESOURCE_QUERY names resource-query (default ../shared/fluxion/bin/...).
-- spec/match_fluxsched_spec.lua checks, with resource-query at hand, that
-- resource-query answers the same on the GRUG and on the JGF written here.
local root = (arg[0]:match("^(.*)/tools/[^/]*$") or ".")
package.cpath = root .. "/build/lib/?.so;" .. package.cpath
local json = require "fluence.json"

local grug, props = arg[1], arg[2]
if not grug then
  io.stderr:write("usage: lua5.4 tools/grug2jgf.lua GRAPH.graphml [PROPERTIES.in] > GRAPH.json\n")
  os.exit(2)
end
local rq = os.getenv("RESOURCE_QUERY") or (root .. "/../shared/fluxion/bin/resource-query")

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function slurp(p)
  local f = assert(io.open(p, "rb"))
  local d = f:read("a")
  f:close()
  return d
end

-- resource-query: properties, then find
local script = os.tmpname()
local f = assert(io.open(script, "wb"))
if props then f:write(slurp(props)) end
f:write("find status=up\nquit\n")
f:close()
local out = os.tmpname()
assert(os.execute(("%s -L %s -S CA -F jgf -d -t %s < %s > /dev/null 2>&1"):format(q(rq), q(grug), q(out), q(script))),
       "resource-query failed")
local text = slurp(out)
os.remove(script)
os.remove(out)
local doc = assert(json.decode(text:match("^[^\n]*"), "find output"))

-- vertices once, without find's exclusive flag
local nodes, seen, bytype = {}, {}, {}
for _, n in ipairs(doc.graph.nodes) do
  if not seen[n.id] then
    seen[n.id] = true
    n.metadata.exclusive = nil
    nodes[#nodes + 1] = n
    local t = n.metadata.type
    bytype[t] = bytype[t] or {}
    table.insert(bytype[t], n)
  end
end
local edges, eseen = {}, {}
local function edge(s, t)
  local k = s .. ">" .. t
  if not eseen[k] then
    eseen[k] = true
    edges[#edges + 1] = { s, t }
  end
end
for _, e in ipairs(doc.graph.edges) do edge(e.source, e.target) end

-- ASSOCIATE_IN edges from the recipe: source recipe node's type -> target's
local recipe = slurp(grug)
local rtype = {}
for id, body in recipe:gmatch('<node id="([^"]+)">(.-)</node>') do
  rtype[id] = body:match('<data key="type">([^<]+)</data>')
end
for src, tgt, body in recipe:gmatch('<edge id="[^"]*" source="([^"]+)" target="([^"]+)">(.-)</edge>') do
  if body:find("ASSOCIATE_IN", 1, true) then
    local from, to = bytype[rtype[src]] or {}, bytype[rtype[tgt]] or {}
    table.sort(to, function(a, b) return tonumber(a.id) < tonumber(b.id) end)
    for _, s in ipairs(from) do
      for _, t in ipairs(to) do edge(s.id, t.id) end
    end
  end
end

-- one vertex, one edge per line
local out_lines = { '{"graph": {"nodes": [' }
for i, n in ipairs(nodes) do
  out_lines[#out_lines + 1] = json.encode(n) .. (i < #nodes and "," or "")
end
out_lines[#out_lines + 1] = '], "edges": ['
for i, e in ipairs(edges) do
  out_lines[#out_lines + 1] = ('{"source": "%s", "target": "%s", "metadata": {"subsystem": "containment"}}%s'):format(
    e[1], e[2], i < #edges and "," or "")
end
out_lines[#out_lines + 1] = "]}}"
io.write(table.concat(out_lines, "\n"), "\n")
