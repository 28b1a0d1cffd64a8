-- `fluence graph`'s JGF, written by the matcher's C writer (core/match_jgf.c)
-- and streamed in pieces: byte for byte what the Lua encoding it replaced
-- wrote (kept below as the reference), on hostile names and properties,
-- graphs grafted with offerings and every JGF graph of the fixtures.
local match = require "fluence.match"
local json = require "fluence.json"
local cluster = require "fluence.cluster"
local cli = require "support.cli"

-- The encoding cluster.jgf had before the C writer: g:vertices() as tables,
-- json.encode with sorted keys, indented by two.
local function reference(g)
  local vs = g:vertices()
  local by_path, nodes, edges = {}, {}, {}
  for i, v in ipairs(vs) do by_path[v.path] = i - 1 end
  for i, v in ipairs(vs) do
    local meta = { basename = v.basename or v.type, exclusive = false, id = v.id, name = v.name,
                   paths = { containment = v.path }, rank = v.rank, size = v.size, type = v.type,
                   uniq_id = i - 1, unit = v.unit or "" }
    if next(v.properties) then meta.properties = v.properties end
    if v.type == "node" and v.properties["virtual=false"] then meta.hostname = v.name end
    nodes[i] = { id = tostring(i - 1), metadata = meta }
    local parent = v.path:match("^(.+)/[^/]+$")
    if parent and by_path[parent] then
      edges[#edges + 1] = { source = tostring(by_path[parent]), target = tostring(i - 1),
                            metadata = { subsystem = "containment" } }
    end
  end
  local doc = { graph = setmetatable({ nodes = json.array(nodes), edges = json.array(edges) },
                                     { __order = { "nodes", "edges" } }) }
  for _, n in ipairs(nodes) do
    setmetatable(n, { __order = { "id", "metadata" } })
    local keys = {}
    for k in pairs(n.metadata) do keys[#keys + 1] = k end
    table.sort(keys)
    setmetatable(n.metadata, { __order = keys })
  end
  for _, e in ipairs(edges) do setmetatable(e, { __order = { "source", "target", "metadata" } }) end
  return json.encode(doc, { indent = 2 }) .. "\n"
end

local function node(name, cpu, gib, gpu)
  return { name = name, cpu = cpu, cpu_milli = cpu * 1000, memory = gib * 2^30, gpu = gpu }
end

local OFFERINGS = {
  resources = {
    { type = "qdevice", name = "ionq", attributes = "shared",
      with = { { type = "qpu", count = 2, attributes = { vendor = "Ion\"Q\n" } } } },
    { type = "qdevice", name = "sim", attributes = { vendor = "local", cost = 0, ["z\1"] = "\255x" } },
    { type = "qdevice", name = "a/b" },
  },
  attributes = { shared = { vendor = "example", region = "us-east-1", price_per_shot = "0.0009" } },
}

describe("the JGF writer", function()
  it("writes a cluster's graph as the Lua encoding did, hostile names included", function()
    local c = { nodes = {
      node("n1", 4, 8, 1), node('quote"back\\slash', 2, 1, 0), node("line\nbreak\ttab\127del", 1, 0, 2),
      node("bad\255utf8\194\133c1", 3, 2, 0), node("u2028\226\128\168", 1, 1, 1),
    } }
    for _, now in ipairs{ false, true } do
      local g = assert(cluster.graph(c, now))
      assert.are.equal(reference(g), cluster.jgf(g))
    end
  end)

  it("writes offerings grafted onto a cluster (sorted properties, a name with a slash)", function()
    local g = assert(match.graph_from_tree(cluster.tree({ nodes = { node("n1", 2, 4, 0), node("n2", 8, 64, 8) } })))
    g = assert(match.graph_from_resources(OFFERINGS, g))
    assert.are.equal(reference(g), cluster.jgf(g))
    local alone = assert(match.graph_from_resources(OFFERINGS))
    assert.are.equal(reference(alone), cluster.jgf(alone))
  end)

  it("writes every JGF graph of the fixtures as the Lua encoding did", function()
    local p = io.popen("find " .. cli.quote(cli.root .. "/spec/fixtures") .. " " ..
                       cli.quote(cli.root .. "/fuzz/corpus/jgf") .. " -name '*.json' | sort")
    local n = 0
    for path in p:lines() do
      local g = match.load_jgf_file(path)
      if g then
        n = n + 1
        assert.are.equal(reference(g), cluster.jgf(g), path)
      end
    end
    p:close()
    assert.is_true(n >= 10, "only " .. n .. " graphs loaded")
  end)

  it("hands a large graph over in pieces of at most 64 KiB", function()
    local nodes = {}
    for i = 1, 3000 do nodes[i] = node(("node-%05d"):format(i), 16, 64, i % 3) end
    local g = assert(cluster.graph({ nodes = nodes }, false))
    local sizes, parts = {}, {}
    cluster.jgf(g, function(s) sizes[#sizes + 1] = #s; parts[#parts + 1] = s end)
    assert.is_true(#sizes > 10)
    for i, n in ipairs(sizes) do
      assert.is_true(n <= 65536 and n > 0)
      if i < #sizes then assert.are.equal(65536, n) end
    end
    assert.are.equal(reference(g), table.concat(parts))
  end)

  it("passes on an error the writer raises (stdout closed), leaving nothing behind", function()
    local g = assert(cluster.graph({ nodes = { node("n1", 4, 8, 1) } }, false))
    local ok, err = pcall(cluster.jgf, g, function() error("write failed", 0) end)
    assert.is_false(ok)
    assert.are.equal("write failed", err)
  end)
end)
