-- The matcher on a small graph: policies, pools, constraints, time
-- (allocate_orelse_reserve), satisfiability, cancel and info, through the
-- fluence.match Lua API and the `fluence match` verb.
local match = require "fluence.match"
local cli = require "support.cli"

local FIXTURE = cli.root .. "/spec/fixtures/match/small.json"

local function js(res, system)
  return ("version: 1\nresources:\n%s\ntasks:\n  - command: [app]\n    slot: s\n    count: {per_slot: 1}\n" ..
          "attributes:\n  system:\n    duration: 100\n%s"):format(res, system or "")
end

local CORE1 = js("  - type: slot\n    count: 1\n    label: s\n    with:\n      - {type: core, count: 1}")
local SLOT2x4 = js("  - type: slot\n    count: 2\n    label: s\n    with:\n      - {type: core, count: 4}")
local MEM5 = js("  - type: slot\n    count: 1\n    label: s\n    with:\n      - {type: memory, count: 5}")
local NODE_CORES = "  - type: node\n    count: 1\n    with:\n      - type: slot\n        count: 1\n        label: s\n" ..
                   "        with:\n          - {type: core, count: 2}"

-- vertex lines of a simple output, without the INFO block
local function picked(r)
  local t = {}
  for line in r.text:gmatch("[^\n]+") do
    if not line:match("^INFO:") then t[#t + 1] = (line:gsub("^%s+", "")) end
  end
  return table.concat(t, " ")
end

describe("match policies", function()
  local g
  setup(function() g = assert(match.load_jgf_file(FIXTURE)) end)

  local cases = {
    { "first", "---------core3[1:x] ------node1[1:s] ---small0[1:s]" },
    { "high", "---------core3[1:x] ------node0[1:s] ---small0[1:s]" },
    { "low", "---------core0[1:x] ------node0[1:s] ---small0[1:s]" },
    { "hinode", "---------core3[1:x] ------node1[1:s] ---small0[1:s]" },
    { "lonode", "---------core0[1:x] ------node0[1:s] ---small0[1:s]" },
    { "lonodex", "---------core0[1:x] ---------core1[1:x] ---------core2[1:x] ---------core3[1:x] " ..
                 "---------memory0[4:x] ---------memory1[4:x] ------node0[1:x] ---small0[1:s]" },
    -- small.json lists every edge both ways and its nodes hang from the
    -- root: walking up from node1, Fluxion's enforce takes the root's first
    -- in-edge, node0's reverse edge, and marks the edge to node0, which a
    -- node-exclusive update then takes whole too
    { "hinodex", "---------core0[1:x] ---------core1[1:x] ---------core2[1:x] ---------core3[1:x] " ..
                 "---------memory0[4:x] ---------memory1[4:x] ------node0[1:x] " ..
                 "---------core0[1:x] ---------core1[1:x] ---------core2[1:x] ---------core3[1:x] " ..
                 "---------memory0[4:x] ---------memory1[4:x] ---------gpu0[1:x] ------node1[1:x] ---small0[1:s]" },
    { "firstnodex", "---------core0[1:x] ---------core1[1:x] ---------core2[1:x] ---------core3[1:x] " ..
                    "---------memory0[4:x] ---------memory1[4:x] ------node0[1:x] " ..
                    "---------core0[1:x] ---------core1[1:x] ---------core2[1:x] ---------core3[1:x] " ..
                    "---------memory0[4:x] ---------memory1[4:x] ---------gpu0[1:x] ------node1[1:x] ---small0[1:s]" },
    { "policy=low node_centric=true", "---------core0[1:x] ------node0[1:s] ---small0[1:s]" },
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " picks as Fluxion does", function()
      local m = assert(match.new(g, { policy = c[1] }))
      local r = m:run("allocate", CORE1, "core1.yaml")
      assert.is_true(r.ok)
      assert.are.equal(c[2], picked(r))
    end)
  end

  it("nodex policies give whole nodes until none is left", function()
    local m = assert(match.new(g, { policy = "lonodex" }))
    assert.is_true(m:run("allocate", CORE1, "x").ok)
    assert.is_true(m:run("allocate", CORE1, "x").ok)
    local r = m:run("allocate", CORE1, "x")
    assert.is_false(r.ok)
    assert.are.equal(3, r.jobid)
  end)

  it("rejects unknown policies with Fluxion's messages", function()
    assert.are.equal("invalid policy option: bogus", select(2, match.new(g, { policy = "bogus" })))
    assert.are.equal("policy key within custom policy accepts only low or high",
                     select(2, match.new(g, { policy = "policy=mid" })))
    assert.are.equal("Policy option node_centric requires true or false, got yes",
                     select(2, match.new(g, { policy = "policy=high node_centric=yes" })))
  end)

  it("takes pool vertices whole inside a slot", function()
    local m = assert(match.new(g, { policy = "low" }))
    local r = m:run("allocate", MEM5, "mem.yaml")
    assert.are.equal("---------memory0[4:x] ---------memory1[4:x] ------node0[1:s] ---small0[1:s]", picked(r))
  end)

  it("prunes nodes by RFC 31 properties", function()
    local m = assert(match.new(g, { policy = "low" }))
    local want = js(NODE_CORES, "    constraints:\n      properties: [\"gpu-node\"]\n")
    assert.are.equal("---------core0[1:x] ---------core1[1:x] ------node1[1:s] ---small0[1:s]",
                     picked(m:run("allocate", want, "x")))
    local avoid = js(NODE_CORES, "    constraints:\n      properties: [\"^gpu-node\"]\n")
    assert.are.equal("---------core0[1:x] ---------core1[1:x] ------node0[1:s] ---small0[1:s]",
                     picked(m:run("allocate", avoid, "x")))
    local host = js(NODE_CORES, "    constraints:\n      hostlist: [\"node[1]\"]\n")
    assert.matches("node1", picked(m:run("allocate", host, "x")))
    local none = js(NODE_CORES, "    constraints:\n      properties: [\"no-such-property\"]\n")
    local r = m:run("allocate_with_satisfiability", none, "x")
    assert.is_false(r.ok)
    assert.is_false(r.satisfiable)
  end)

  it("takes only quoted property names, as Fluxion's jobspec reader does", function()
    local m = assert(match.new(g, { policy = "low" }))
    local r = m:run("allocate", js(NODE_CORES, "    constraints:\n      properties: [gpu-node]\n"))
    assert.is_false(r.ok)
    assert.is_false(r.counted)
    assert.are.equal("Jobspec error for 1: non-string property specified", r.error)
    assert.are.equal("match_allocate: ERROR: Jobspec error for 1: non-string property specified\n", r.stderr)
  end)
end)

describe("match operations", function()
  local g
  setup(function() g = assert(match.load_jgf_file(FIXTURE)) end)

  it("reserves at the earliest end time and counts every id", function()
    local m = assert(match.new(g, { policy = "low" }))
    local r1 = m:run("allocate", SLOT2x4, "x")
    assert.is_true(r1.ok)
    assert.are.equal(0, r1.at)
    local r2 = m:run("allocate_orelse_reserve", SLOT2x4, "x")
    assert.is_true(r2.ok and r2.reserved)
    assert.are.equal(100, r2.at)
    assert.matches("INFO: RESOURCES=RESERVED\nINFO: SCHEDULED AT=100\n", r2.text, 1, true)
    local r3 = m:run("allocate_orelse_reserve", SLOT2x4, "x")
    assert.are.equal(200, r3.at)
    local r4 = m:run("allocate", SLOT2x4, "x")
    assert.is_false(r4.ok)
    assert.is_true(r4.satisfiable)
    assert.are.equal(4, r4.jobid)
    assert.are.equal("INFO: =============================\nINFO: No matching resources found\n" ..
                     "INFO: JOBID=4\nINFO: =============================\n", r4.text)
    assert.are.same({ jobid = 2, state = "RESERVED", at = 100, reserved = true }, m:info(2))
    assert.is_true(m:cancel(1))
    assert.are.equal("CANCELED", m:info(1).state)
    assert.is_nil(m:cancel(1))
    local r5 = m:run("allocate", SLOT2x4, "x")
    assert.is_true(r5.ok)
    assert.are.equal(5, r5.jobid)
    assert.is_nil(m:info(42))
  end)

  it("tells satisfiable from unsatisfiable", function()
    local m = assert(match.new(g, { policy = "first" }))
    local huge = js("  - type: slot\n    count: 3\n    label: s\n    with:\n      - {type: core, count: 4}")
    local r = m:run("satisfiability", huge, "x")
    assert.is_false(r.satisfiable)
    assert.is_false(r.counted)
    assert.are.equal("INFO: =============================\nINFO: Unsatisfiable request\n" ..
                     "INFO: =============================\n", r.text)
    assert.is_true(m:run("satisfiability", SLOT2x4, "x").satisfiable)
    local a = m:run("allocate_with_satisfiability", huge, "x")
    assert.are.equal("INFO: =============================\nINFO: No matching resources found\n" ..
                     "INFO: Unsatisfiable request\nINFO: JOBID=1\nINFO: =============================\n", a.text)
    assert.is_true(m:run("allocate", SLOT2x4, "x").ok)
    local b = m:run("allocate_with_satisfiability", SLOT2x4, "x")
    assert.is_false(b.ok)
    assert.is_true(b.satisfiable)
    assert.are.equal(3, b.jobid)
  end)

  it("does not use an id for a jobspec that fails to parse, and says why as Fluxion does", function()
    local m = assert(match.new(g, { policy = "first" }))
    local r = m:run("allocate", "version: 1\n")
    assert.is_false(r.ok)
    assert.is_false(r.counted)
    assert.are.equal('Jobspec error for 1: Missing key "resource" in top level mapping', r.error)
    assert.are.equal(1, m:next_jobid())
  end)

  -- resource-query v0.54 -F rv1 / -F jgf on the same graph, jobspec and policy
  local JGF = '{"graph": {"nodes": [{"id": "2", "metadata": {"type": "core", "id": 0, "rank": -1, "exclusive": true, ' ..
    '"paths": {"containment": "/small0/node0/core0"}}}, {"id": "3", "metadata": {"type": "core", "id": 1, "rank": -1, ' ..
    '"exclusive": true, "paths": {"containment": "/small0/node0/core1"}}}, {"id": "1", "metadata": {"type": "node", ' ..
    '"id": 0, "rank": 0, "properties": {"virtual=false": ""}, "paths": {"containment": "/small0/node0"}}}, {"id": "0", ' ..
    '"metadata": {"type": "cluster", "name": "small0", "id": 0, "rank": -1, "paths": {"containment": "/small0"}}}], ' ..
    '"edges": [{"source": "1", "target": "2"}, {"source": "1", "target": "3"}, {"source": "0", "target": "1"}]}}'
  local EXEC = '"execution": {"R_lite": [{"rank": "0", "children": {"core": "0-1"}}], "nodelist": ["node0"], ' ..
    '"properties": {"virtual=false": "0"}, "starttime": 0, "expiration": 100}'

  it("writes rv1, rv1_nosched and jgf as resource-query does", function()
    local want = {
      jgf = JGF .. "\n",
      rv1 = '{"version": 1, ' .. EXEC .. ', "scheduling": ' .. JGF .. "}\n",
      rv1_nosched = '{"version": 1, ' .. EXEC .. "}\n",
    }
    for format, text in pairs(want) do
      local m = assert(match.new(g, { policy = "low", format = format }))
      local r = m:run("allocate", js(NODE_CORES), "x")
      assert.are.equal(text, r.R)
      assert.are.equal(text .. r.info, r.text)
    end
    assert.are.equal("unknown match format xml (simple, rv1, rv1_nosched or jgf)",
                     select(2, match.new(g, { format = "xml" })))
  end)

  it("writes no rv1 when no node holds cores or gpus, as Fluxion", function()
    local m = assert(match.new(g, { policy = "low", format = "rv1" }))
    local r = m:run("allocate", js("  - type: node\n    count: 1\n    with:\n      - type: slot\n        count: 1\n" ..
                                   "        label: s\n        with:\n          - {type: memory, count: 4}"), "x")
    assert.is_true(r.ok)
    assert.are.equal("", r.R)
  end)

  it("rewinds a trial: ids and allocations as before", function()
    local m = assert(match.new(g, { policy = "low" }))
    assert.is_true(m:run("allocate", CORE1, "x").ok)
    local mark = m:next_jobid()
    assert.are.equal(2, mark)
    local first = m:run("allocate", CORE1, "x")
    assert.is_true(first.ok)
    assert.is_true(m:run("allocate", CORE1, "x").ok)
    assert.is_false(m:run("allocate", SLOT2x4, "x").ok)
    assert.are.equal(5, m:next_jobid())
    m:rewind(mark)
    assert.are.equal(2, m:next_jobid())
    assert.is_nil(m:info(2))
    assert.is_nil(m:info(3))
    local again = m:run("allocate", CORE1, "x")
    assert.are.equal(2, again.jobid)
    assert.are.equal(first.text, again.text)
  end)
end)

describe("fluence match", function()
  it("runs a command script, info and errors on stderr", function()
    local dir = cli.tmpdir()
    cli.write(dir .. "/core1.yaml", CORE1)
    local script = "# comment\nmatch allocate core1.yaml\ninfo 1\ncancel 7\nmatch allocate missing.yaml\n" ..
                   "match satisfiability core1.yaml\nquit\nmatch allocate core1.yaml\n"
    local r = cli.run { "match", "--graph", FIXTURE, "--policy", "low", stdin = script, cwd = dir }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("      ---------core0[1:x]\n      ------node0[1:s]\n      ---small0[1:s]\n" ..
      "INFO: =============================\nINFO: JOBID=1\nINFO: RESOURCES=ALLOCATED\n" ..
      "INFO: SCHEDULED AT=Now\nINFO: =============================\n" ..
      "INFO: =============================\nINFO: Satisfiable request\nINFO: =============================\n", r.out)
    assert.matches("INFO: 1, ALLOCATED, 0, core1.yaml, 0\n", r.err, 1, true)
    assert.matches("ERROR: nonexistent job 7\n", r.err, 1, true)
    assert.matches("ERROR: can't open missing.yaml\n", r.err, 1, true)
    cli.cleanup()
  end)

  it("matches jobspec arguments with allocate, in rv1 if asked", function()
    local dir = cli.tmpdir()
    cli.write(dir .. "/n.yaml", js(NODE_CORES))
    local r = cli.run { "match", "--graph", FIXTURE, "-P", "low", "-F", "rv1", "n.yaml", "n.yaml", cwd = dir }
    assert.are.equal(0, r.code, r.err)
    assert.matches('"R_lite": [{"rank": "0"', r.out, 1, true)
    assert.matches("INFO: JOBID=2\n", r.out, 1, true)
    cli.cleanup()
  end)

  it("fails on a bad graph, policy or format", function()
    local dir = cli.tmpdir()
    cli.write(dir .. "/bad.json", '{"graph": {"nodes": [{"id": "0"}], "edges": []}}')
    local r = cli.run { "match", "--graph", dir .. "/bad.json", stdin = "" }
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    r = cli.run { "match", "--graph", FIXTURE, "--policy", "bogus", stdin = "" }
    assert.are.equal(2, r.code)
    r = cli.run { "match", "--graph", FIXTURE, "--format", "xml", stdin = "" }
    assert.are.equal(2, r.code)
    r = cli.run { "match", stdin = "" }
    assert.are.equal(2, r.code)
    cli.cleanup()
  end)
end)
