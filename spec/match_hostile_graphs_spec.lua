-- Resource graphs that are not containment trees (issue 24, class 4): a JGF
-- containment cycle is refused with the file named, wherever it is in the
-- graph — reachable from the root or not (Fluxion loads a cycle the root
-- does not reach, and never visits it; fluence took it too) — and whichever
-- way the graph comes in: `match --graph`, `select --graph`, an attribute
-- file's `graph:`.  Edges back to an ancestor (Fluence writes every edge in
-- both directions) are not cycles.  What sizes past 2^32 do is pinned against
-- resource-query in spec/fixtures/match-regressions (sizes-past-2-32-*).
local cli = require "support.cli"
local match = require "fluence.match"
local json = require "fluence.json"

-- A JGF graph: cluster c0 > node n0 > core0, plus the extra vertices and
-- edges given ({id, type, name, path}; {source, target}).
local function jgf(extra_nodes, extra_edges)
  local nodes = {
    { id = "0", metadata = { type = "cluster", name = "c0", id = 0, paths = { containment = "/c0" } } },
    { id = "1", metadata = { type = "node", name = "n0", id = 0, paths = { containment = "/c0/n0" } } },
    { id = "2", metadata = { type = "core", name = "core0", id = 0, paths = { containment = "/c0/n0/core0" } } },
  }
  local edges = { { source = "0", target = "1" }, { source = "1", target = "2" }, { source = "1", target = "0" } }
  for _, n in ipairs(extra_nodes or {}) do
    nodes[#nodes + 1] = { id = n[1], metadata = { type = n[2], name = n[3], id = tonumber(n[1]),
                                                   paths = { containment = n[4] } } }
  end
  for _, e in ipairs(extra_edges or {}) do edges[#edges + 1] = { source = e[1], target = e[2] } end
  -- (nodes before edges, as JGF wants them)
  return json.encode{ graph = setmetatable({ nodes = json.array(nodes), edges = json.array(edges) },
                                           { __order = { "nodes", "edges" } }) }
end

-- x and y are siblings by their paths: neither edge between them goes back
-- to an ancestor, so x -> y -> x is a cycle
local XY = { { "3", "node", "x", "/c0/x" }, { "4", "node", "y", "/c0/y" } }

describe("JGF containment cycles", function()
  it("one the root reaches is refused, naming the file and the edge", function()
    local g, err = match.load_jgf(jgf(XY, { { "0", "3" }, { "3", "4" }, { "4", "3" } }), "g.json")
    assert.is_nil(g)
    assert.are.equal("g.json: containment cycle: y -> x, but x contains y", err)
  end)

  it("one the root does not reach is refused too", function()
    local g, err = match.load_jgf(jgf(XY, { { "3", "4" }, { "4", "3" } }), "g.json")
    assert.is_nil(g)
    assert.are.equal("g.json: containment cycle: y -> x, but x contains y", err)
    -- three long, off the tree
    local three = { XY[1], XY[2], { "5", "node", "z", "/c0/z" } }
    g, err = match.load_jgf(jgf(three, { { "3", "4" }, { "4", "5" }, { "5", "3" } }), "g.json")
    assert.is_nil(g)
    assert.matches("^g%.json: containment cycle: ", err)
  end)

  it("names the vertices escaped: one message, one line", function()
    local xy = { { "3", "node", "x\nfluence: forged", "/c0/x" }, { "4", "node", "y\27[2J", "/c0/y" } }
    local g, err = match.load_jgf(jgf(xy, { { "3", "4" }, { "4", "3" } }), "g.json")
    assert.is_nil(g)
    assert.are.equal("g.json: containment cycle: y\\x1b[2J -> x\\nfluence: forged, but x\\nfluence: forged " ..
                     "contains y\\x1b[2J", err)
  end)

  it("edges back to an ancestor are not cycles (Fluence writes both directions)", function()
    local g = assert(match.load_jgf(jgf(XY, { { "0", "3" }, { "3", "0" }, { "0", "4" }, { "4", "0" } }), "g.json"))
    assert.are.equal(5, g:stats().vertices)
  end)

  describe("from the command line", function()
    local dir, cyclic
    setup(function()
      dir = cli.tmpdir()
      cyclic = cli.write(dir .. "/cyclic.json", jgf(XY, { { "3", "4" }, { "4", "3" } }))
    end)
    teardown(cli.cleanup)

    local function refused(r)
      assert.are.equal(3, r.code, r.err)
      assert.are.equal("", r.out)
      assert.matches("^fluence: [^\n]*cyclic%.json: containment cycle: y %-> x, but x contains y\n$", r.err)
    end

    it("match --graph", function()
      refused(cli.run{ "match", "--graph", cyclic, stdin = "" })
    end)

    it("select --graph, and an attribute file's graph:", function()
      local m = cli.write(dir .. "/m.yaml", cli.POD:format("fits"))
      local attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: a\n    attributes: {cost_usd: 1}\n")
      refused(cli.run{ "select", "-f", m, "--attributes", attrs, "--graph", cyclic, "--offline" })
      local own = cli.write(dir .. "/own.yaml", "version: 1\nbackends:\n  - name: a\n    graph: cyclic.json\n" ..
                                                "    attributes: {cost_usd: 1}\n")
      refused(cli.run{ "select", "-f", m, "--attributes", own, "--offline" })
    end)
  end)
end)

-- A graph file is read whole when it is not a regular file (or for
-- Fluxion's own reader): within the manifest limit (core/readfile.h), as
-- any outside file; it was read without one (/dev/zero: "not enough memory").
describe("a graph file that does not end, or comes from a pipe", function()
  it("/dev/zero is refused at the limit, named", function()
    local r = cli.run{ "match", "--graph", "/dev/zero", stdin = "", env = { FLUENCE_MAX_INPUT = "1000000" } }
    assert.are.equal(3, r.code, r.err)
    assert.are.equal("", r.out)
    assert.are.equal("fluence: /dev/zero: larger than 1000000 bytes (FLUENCE_MAX_INPUT sets the limit in bytes)\n", r.err)
  end)

  it("<(...) is read as the file itself", function()
    local d = cli.root .. "/spec/fixtures/match-regressions/sizes-past-2-32-first"
    local script = cli.slurp(d .. "/commands.in")
    local want = cli.slurp(d .. "/expected.out")
    local r = cli.run{ bin = "bash", valgrind = false, stdin = script, cwd = d,
                       "-c", 'exec "$0" match --graph <(cat graph.json)', cli.bin }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(want, r.out)
  end)
end)
