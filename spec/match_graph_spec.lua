-- Resource graphs: the JGF loader (defaults, both-direction edges, errors),
-- graphs built from the fluence-resources ConfigMap schema (alone and grafted
-- onto a cluster JGF), and the jobspecs Fluence builds for a pod group.
local match = require "fluence.match"
local jobspecs = require "fluence.jobspecs"
local cli = require "support.cli"

local function by_path(g)
  local t = {}
  for _, v in ipairs(g:vertices()) do t[v.path] = v end
  return t
end

local function props(v)
  local ks = {}
  for k in pairs(v.properties) do ks[#ks + 1] = k end
  table.sort(ks)
  return table.concat(ks, " ")
end

describe("JGF loader", function()
  it("applies Fluxion's defaults and keeps only parent -> child containment", function()
    local text = [[{"graph": {"nodes": [
      {"id": "10", "metadata": {"type": "cluster", "paths": {"containment": "/c"}, "name": "c"}},
      {"id": "11", "metadata": {"type": "node", "name": "host7", "paths": {"containment": "/c/host7"}}},
      {"id": "12", "metadata": {"type": "core", "paths": {"containment": "/c/host7/core12"}}},
      {"id": "13", "metadata": {"type": "memory", "basename": "mem", "id": 3, "size": 16, "unit": "GB",
                                "paths": {"containment": "/c/host7/mem3"}, "properties": {"fast": "yes"}}}
    ], "edges": [
      {"source": "11", "target": "10", "metadata": {"subsystem": "containment"}},
      {"source": "10", "target": "11"},
      {"source": "12", "target": "11"}, {"source": "11", "target": "12"},
      {"source": "11", "target": "13"}, {"source": "13", "target": "11"},
      {"source": "10", "target": "13", "metadata": {"subsystem": "power"}}
    ]}}]]
    local g = assert(match.load_jgf(text, "t.json"))
    local v = by_path(g)
    assert.are.equal(4, g:stats().vertices)
    assert.are.equal("c", g:stats().root)
    assert.are.equal(7, v["/c/host7"].id)        -- node id from the hostname suffix
    assert.are.equal("core12", v["/c/host7/core12"].name) -- basename + id (id = uniq_id)
    assert.are.equal(16, v["/c/host7/mem3"].size)
    assert.are.equal("mem3", v["/c/host7/mem3"].name)
    assert.are.equal("yes", v["/c/host7/mem3"].properties.fast)
    local m = assert(match.new(g, { policy = "low" }))
    local r = m:run("allocate", "version: 1\nresources:\n  - {type: slot, count: 1, label: s, with: [{type: core, count: 1}]}\n" ..
                    "tasks:\n  - {command: [a], slot: s, count: {per_slot: 1}}\nattributes: {}\n", "j")
    assert.are.equal("      ---------core12[1:x]\n      ------host7[1:s]\n      ---c[1:s]\n",
                     r.text:match("^(.-)INFO"))
  end)

  it("takes numbers beyond int64 without undefined behaviour (a make fuzz finding)", function()
    -- the input make fuzz found (uniq_id 1e58); under UBSan the old code aborted
    local g, err = match.load_jgf_file(cli.root .. "/fuzz/corpus/jgf/huge-number.json")
    assert.is_nil(g)
    assert.matches("^.*/huge%-number%.json:46:91: bad number$", err)
  end)

  -- Fluxion reads id, uniq_id, rank, size and status with jansson's "I":
  -- resource-query v0.54 says "malformed metadata" for 2.0 and "too big
  -- integer" for 99999999999999999999.  size 3e32 is make fuzz's second
  -- finding: it was cast to int64_t, undefined behaviour under UBSan.
  for _, v in ipairs { "3e32", "-3e32", "2.0", "1e58", "99999999999999999999", "-99999999999999999999" } do
    it("rejects metadata.size " .. v .. " as Fluxion does", function()
      local text = '{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", "size": ' .. v ..
                   ', "paths": {"containment": "/x0"}}}], "edges": []}}'
      local g, err = match.load_jgf(text, "t.json")
      assert.is_nil(g)
      assert.are.equal("t.json:1:68: metadata.size must be an integer", err)
    end)
  end

  it("takes the largest int64 as Fluxion does", function()
    local text = '{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", "size": 9223372036854775807, ' ..
                 '"paths": {"containment": "/x0"}}}], "edges": []}}'
    assert.is_truthy(match.load_jgf(text, "t.json"))
  end)

  it("loads the conformance graph from a file", function()
    local g = assert(match.load_jgf_file(cli.root .. "/spec/fixtures/conformance/fluxion/graphs/tiny.json"))
    assert.are.equal(100, g:stats().vertices)
  end)

  local bad = {
    { "[]", "t.json:1:1: expected '{'" },
    { '{"graph": {"nodes": []}}', "t.json: JGF does not contain a required key (edges)" },
    { '{"nodes": []}', "t.json: JGF does not contain a required key (graph)" },
    { '{"graph": {"nodes": [{"id": "0"}], "edges": []}}', "t.json:1:22: node 0: metadata.type is required" },
    -- Fluxion refuses a node without a containment path ("malformed metadata")
    { '{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x"}}], "edges": []}}',
      "t.json:1:22: node 0: metadata.paths.containment is required" },
    { '{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", "size": -2, "paths": {"containment": "/x0"}}}], "edges": []}}',
      "t.json:1:22: node 0: metadata.size must not be negative" },
    { '{"graph": {"nodes": [{"id": "a", "metadata": {"type": "x", "paths": {"containment": "/x"}}}], "edges": []}}',
      "t.json:1:22: node a: uniq_id could not be inferred from the id" },
    { '{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", "paths": {"containment": "/x"}}}, ' ..
      '{"id": "0", "metadata": {"type": "x", "paths": {"containment": "/x"}}}], "edges": []}}',
      "t.json:1:94: found duplicate JGF node id 0" },
    { '{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", "paths": {"containment": "/x"}}}], ' ..
      '"edges": [{"source": "0", "target": "9"}]}}',
      "t.json:1:105: source and/or target vertex not found: 0 -> 9" },
    { '{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", "size": "big"}}], "edges": []}}',
      "t.json:1:68: metadata.size must be an integer" },
  }
  for _, c in ipairs(bad) do
    it("rejects " .. c[1]:sub(1, 40), function()
      local g, err = match.load_jgf(c[1], "t.json")
      assert.is_nil(g)
      assert.are.equal(c[2], err)
    end)
  end

  -- JGF is read by the one JSON scanner (core/jscan.c), strict JSON as
  -- jansson is when Fluxion reads it: resource-query v0.54 answers these
  -- three with "json_loads returned an error" (invalid token, unable to
  -- decode byte 0xff, invalid Unicode '\uD800'); the old scanner loaded them.
  local function with(field)
    return '{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", ' .. field ..
           '"paths": {"containment": "/x0"}}}], "edges": []}}'
  end
  for _, c in ipairs {
    { with('"size": 01, '), "t.json:1:69: expected ',' or '}'" },
    { with('"name": "a\255b", '), "t.json:1:70: invalid UTF-8 in a string" },
    { with('"name": "\\ud800", '), "t.json:1:75: lone surrogate" },
  } do
    it("refuses what Fluxion's JSON reader refuses: " .. c[2]:match(": (.*)$"), function()
      local g, err = match.load_jgf(c[1], "t.json")
      assert.is_nil(g)
      assert.are.equal(c[2], err)
    end)
  end

  it("names an id from the file escaped, so a newline in it cannot forge a line", function()
    local g, err = match.load_jgf('{"graph": {"nodes": [{"id": "0\\nfluence: forged", "metadata": {"type": "x", ' ..
                                  '"paths": {"containment": "/x0"}}}], "edges": []}}', "t.json")
    assert.is_nil(g)
    assert.are.equal("t.json:1:22: node 0\\nfluence: forged: uniq_id could not be inferred from the id", err)
    g, err = match.load_jgf('{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", "paths": {"containment": ' ..
                            '"/x0"}}}], "edges": [{"source": "0", "target": "9\\n\\u001b[2J"}]}}', "t.json")
    assert.is_nil(g)
    assert.are.equal("t.json:1:106: source and/or target vertex not found: 0 -> 9\\n\\x1b[2J", err)
  end)
end)

local CONFIGMAP = {
  resources = {
    { type = "qdevice", name = "ionq", attributes = "shared",
      with = { { type = "qpu", count = 2, attributes = { region = "", vendor = "IonQ" },
                 with = { { type = "qubit", count = 2 } } } } },
    { type = "qdevice", name = "sim", attributes = { vendor = "local", cost = 0 } },
  },
  attributes = { shared = { vendor = "example", region = "us-east-1", price_per_shot = "0.0009" } },
}

describe("graph_from_resources", function()
  it("builds node-typed virtual vertices with classes, inherited attributes and the backend", function()
    local g = assert(match.graph_from_resources(CONFIGMAP))
    local v = by_path(g)
    assert.are.equal(1 + 1 + 2 + 4 + 1, g:stats().vertices)
    assert.are.equal("node", v["/cluster/ionq"].type)
    assert.are.equal("class=qdevice class=qpu class=qubit fluxion.flux-framework.org/backend=ionq " ..
      "fluxion.flux-framework.org/price_per_shot=0.0009 fluxion.flux-framework.org/region=us-east-1 " ..
      "fluxion.flux-framework.org/vendor=example virtual=true", props(v["/cluster/ionq"]))
    -- children inherit, override (vendor) and clear ("" region)
    assert.are.equal("class=qpu class=qubit fluxion.flux-framework.org/backend=ionq " ..
      "fluxion.flux-framework.org/price_per_shot=0.0009 fluxion.flux-framework.org/vendor=IonQ virtual=true",
      props(v["/cluster/ionq/qpu1"]))
    assert.are.equal("class=qubit fluxion.flux-framework.org/backend=ionq " ..
      "fluxion.flux-framework.org/price_per_shot=0.0009 fluxion.flux-framework.org/vendor=IonQ virtual=true",
      props(v["/cluster/ionq/qpu0/qubit1"]))
    assert.are.equal("class=qdevice fluxion.flux-framework.org/backend=sim fluxion.flux-framework.org/cost=0 " ..
      "fluxion.flux-framework.org/vendor=local virtual=true", props(v["/cluster/sim"]))
  end)

  it("rejects an unknown attribute set", function()
    local g, err = match.graph_from_resources { resources = { { type = "q", name = "a", attributes = "nope" } } }
    assert.is_nil(g)
    assert.are.equal('resources[0]: unknown attribute set "nope"', err)
  end)

  -- counts multiply down a tree: a few bytes of ConfigMap must not ask for
  -- millions of vertices (before the bound this built 3 M of them, 1 GiB)
  it("refuses trees that expand past jobspecs.MAX_VERTICES, naming the count, before building", function()
    local max = jobspecs.MAX_VERTICES
    local g, err = match.graph_from_resources { resources = { { type = "q", name = "a",
      with = { { type = "qpu", count = 300000, with = { { type = "qubit", count = 9 } } } } } } }
    assert.is_nil(g)
    assert.are.equal(("resources[0].with[0].count: 300000 copies of a 10-vertex tree take the graph past %d " ..
                      "vertices, the most fluence builds"):format(max), err)
    -- products past 2^63 are caught, not wrapped
    g, err = match.graph_from_resources { resources = { { type = "q", name = "a", count = math.maxinteger,
      with = { { type = "qpu", count = math.maxinteger } } } } }
    assert.is_nil(g)
    assert.matches("^resources%[0%]%.with%[0%]%.count: " .. math.maxinteger .. " copies take the graph past", err)
    -- the bound is on all the trees together: each fits alone, both do not
    local half = { type = "q", count = max // 2 + 1 }
    g, err = match.graph_from_resources { resources = { { type = "q", name = "a", count = 1 }, half, half } }
    assert.is_nil(g)
    assert.matches("^resources%[2%]%.count: ", err)
    -- just under the bound is built
    g = assert(match.graph_from_resources { resources = { { type = "q", name = "a", count = 1,
      with = { { type = "qpu", count = 9999, with = { { type = "qubit", count = 24 } } } } } } })
    assert.are.equal(1 + 1 + 9999 * 25, g:stats().vertices)
  end)

  it("grafts the backends onto a cluster graph and matches device jobspecs there", function()
    local tiny = match.load_jgf_file(cli.root .. "/spec/fixtures/match/small.json")
    local g = assert(match.graph_from_resources(CONFIGMAP, tiny))
    local v = by_path(g)
    assert.is_table(v["/small0/node1/core3"])
    assert.is_table(v["/small0/ionq/qpu0/qubit0"])
    local set = jobspecs.for_request { pods = 2, pod = { cpu = 2, memory = 3 * 2^30, virtual = { qpu = 1 } },
                                       require = { backend = "ionq" } }
    local m = assert(match.new(g, { policy = "first" }))
    local r = m:run("allocate", set.devices[1].text, "qpu")
    assert.is_true(r.ok)
    assert.matches("ionq%[1:x%]", r.text)
    assert.is_false(m:run("allocate", set.devices[1].text, "qpu").ok) -- the only ionq device is taken
    local c = m:run("allocate", set.compute, "compute")
    assert.is_false(c.ok) -- 3 GiB per pod does not fit 8 memory units
    local small = jobspecs.for_request { pods = 2, pod = { cpu = 2 } }
    assert.is_true(m:run("allocate", small.compute, "compute").ok)
  end)
end)

describe("fluence.jobspecs", function()
  it("builds the compute and device jobspecs of a group", function()
    local set = jobspecs.for_request { pods = 3, pod = { cpu = 1.5, memory = 1, gpu = 1, virtual = { qpu = 2, anneal = 1 } },
                                       require = { backend = "ionq", region = "us" } }
    local c = assert(match.parse_jobspec(set.compute, "compute"))
    assert.are.same({ type = "slot", count = 3, label = "default", with = {
      { type = "core", count = 2 }, { type = "memory", count = 1 }, { type = "gpu", count = 1 } } }, c.resources[1])
    assert.are.same({ "virtual=false" }, c.attributes.system.constraints.properties)
    assert.are.equal(2, #set.devices)
    assert.are.equal("anneal", set.devices[1].type)
    local d = assert(match.parse_jobspec(set.devices[2].text, "qpu"))
    assert.are.same({ type = "slot", count = 1, label = "default", with = { { type = "node", count = 2 } } }, d.resources[1])
    assert.are.same({ "virtual=true", "class=qpu", "fluxion.flux-framework.org/backend=ionq",
                      "fluxion.flux-framework.org/region=us" }, d.attributes.system.constraints.properties)
  end)

  it("is printed for the groups of a manifest by `fluence jobspec`", function()
    local dir = cli.tmpdir()
    cli.write(dir .. "/job.yaml", [[
apiVersion: batch/v1
kind: Job
metadata:
  name: qjob
spec:
  parallelism: 4
  template:
    metadata:
      labels:
        fluence.flux-framework.org/group: qgroup
      annotations:
        fluence.flux-framework.org/require-backend: ionq
    spec:
      schedulerName: fluence
      containers:
        - name: c
          image: x
          resources:
            requests:
              cpu: 1500m
              memory: 2Gi
              fluxion.flux-framework.org/qpu: "1"
]])
    local r = cli.run { "jobspec", "-f", dir .. "/job.yaml" }
    assert.are.equal(0, r.code, r.err)
    assert.matches("(group qgroup, 4 pods): compute\n", r.out, 1, true)
    assert.matches("    count: 4\n", r.out, 1, true)
    assert.matches("        count: 2048\n", r.out, 1, true)
    assert.matches('properties: ["virtual=true", "class=qpu", "fluxion.flux-framework.org/backend=ionq"]', r.out, 1, true)
    cli.cleanup()
  end)
end)
