-- Hostile numbers give no wrong answer (issue 24, class 4): quantities the
-- API server takes (8Ei, 10E of CPU, 1e400) saturate at 2^63-1, as its own
-- arithmetic does, and the user is told; sums of pod requests saturate
-- instead of wrapping round (a full node shown free); a pod asking for more
-- than a jobspec can count fits nowhere.  The cluster is the real
-- kube-apiserver (spec/support/envtest.lua): it stores such quantities.
local kl = require "fluence.kubelists"
local json = require "fluence.json"
local cli = require "support.cli"
local envtest = require "support.envtest"
local jgf_nodes = require "support.jgf_nodes"

local MAX = math.maxinteger

local function nodelist(items)
  return json.encode{ kind = "NodeList", apiVersion = "v1", metadata = { resourceVersion = "1" },
                      items = json.array(items) }
end
local function podlist(items)
  return json.encode{ kind = "PodList", apiVersion = "v1", metadata = { resourceVersion = "1" },
                      items = json.array(items) }
end
local function node(name, capacity)
  return { metadata = { name = name }, spec = json.object{}, status = { capacity = capacity } }
end
local function pod(node_name, requests, init)
  local spec = { nodeName = node_name, containers = json.array{ { name = "c", resources = { requests = requests } } } }
  if init then spec.initContainers = json.array{ { name = "i", resources = { requests = init } } } end
  return { metadata = { name = "p" }, spec = spec, status = { phase = "Running" } }
end

describe("kubelists: quantities past the int64 range", function()
  it("saturate at 2^63-1 (E, Ei, exponents), the node marked, the list kept", function()
    local nodes, err = kl.nodes(nodelist{
      node("exa", { cpu = "10E", memory = "8Ei", ["nvidia.com/gpu"] = "1e400" }),
      node("edge", { cpu = "9223372036854775807m", memory = "7Ei" }),
      node("plain", { cpu = "2", memory = "1Gi" }),
    })
    assert.is_table(nodes, err)
    local exa, edge, plain = nodes[1], nodes[2], nodes[3]
    assert.are.same({ MAX, MAX, MAX }, { exa.cpu_milli, exa.memory, exa.gpu })
    assert.is_true(exa.saturated)
    -- cores rounded up from millicores: at 2^63-1 without overflowing
    assert.are.equal(MAX // 1000 + 1, exa.cpu)
    assert.are.equal(MAX // 1000 + 1, edge.cpu)
    assert.are.equal(MAX, edge.cpu_milli)
    assert.are.equal(7 * 2^60, edge.memory)
    assert.is_nil(edge.saturated)
    assert.is_nil(plain.saturated)
    assert.are.equal(2, plain.cpu)
  end)

  it("a sum of requests stops at 2^63-1 instead of wrapping to a negative (a full node shown free)", function()
    local acc = kl.usage()
    assert(acc:add(podlist{
      pod("full", { memory = "5Ei", cpu = "6E" }), pod("full", { memory = "5Ei", cpu = "6E" }),
      pod("fine", { memory = "1Gi", cpu = "1" }),
      -- containers, init containers and overhead of one pod sum the same way
      pod("one", { memory = "5Ei" }, { memory = "1Ki" }),
    }))
    local t = acc:totals()
    assert.are.same({ MAX, MAX, 2, true }, { t.full.memory, t.full.cpu_milli, t.full.pods, t.full.saturated })
    assert.are.equal(5 * 2^60, t.one.memory)
    assert.is_nil(t.one.saturated)
    assert.are.same({ 2^30, 1000 }, { t.fine.memory, t.fine.cpu_milli })
    assert.is_nil(t.fine.saturated)
    -- and across pages
    assert(acc:add(podlist{ pod("one", { memory = "5Ei" }) }))
    t = acc:totals()
    assert.are.equal(MAX, t.one.memory)
    assert.is_true(t.one.saturated)
  end)

  it("a negative request (the API server refuses one) counts as none", function()
    local acc = kl.usage()
    assert(acc:add(podlist{ pod("n", { memory = "-5Ei", cpu = "-1" }), pod("n", { memory = "1Mi" }) }))
    local t = acc:totals()
    assert.are.same({ 2^20, 0 }, { t.n.memory, t.n.cpu_milli })
  end)
end)

envtest.describe("quantities past the int64 range in a real cluster", function(api)
  local ns
  local made = {}

  setup(function()
    ns = api:namespace("numbers")
    made[#made + 1] = api:node("sat-exa", { capacity = { cpu = "10E", memory = "8Ei", pods = "110" } })
    made[#made + 1] = api:node("sat-full", { capacity = { cpu = "16", memory = "64Gi", pods = "110" } })
    for i = 1, 2 do
      api:request("POST", ("/api/v1/namespaces/%s/pods"):format(ns), {
        apiVersion = "v1", kind = "Pod", metadata = { name = "hog" .. i },
        spec = { nodeName = "sat-full", containers = json.array{ { name = "c", image = "busybox",
          resources = { requests = { memory = "5Ei" } } } } } })
    end
  end)
  teardown(function()
    for _, n in ipairs(made) do pcall(api.request, api, "DELETE", "/api/v1/nodes/" .. n) end
    cli.cleanup()
  end)

  local function fluence(args)
    args[#args + 1] = "--kubeconfig"
    args[#args + 1] = api:kubeconfig_for{ namespace = ns }
    args[#args + 1] = "--fluence-ns"
    args[#args + 1] = ns
    return cli.run(args)
  end

  local function vertices(out) return jgf_nodes(assert(json.decode(out)), "sat-") end

  it("fluence graph shows a node of exabytes (the whole NodeList was refused before), and says so", function()
    local r = fluence{ "graph" }
    assert.are.equal(0, r.code, r.err)
    local g = vertices(r.out)
    assert.are.equal(MAX // (1 << 20), g["sat-exa"].memory.size)
    assert.are.equal(MAX // 1000, g["sat-exa"].core.size)      -- rounded down (cluster.whole)
    assert.matches('note: context "[^"]*": quantities past 2%^63%-1 on node sat%-exa were taken as ' ..
                   '9223372036854775807 %(saturated', r.err)
  end)

  it("fluence graph --now: two pods of 5Ei fill a node (their sum wrapped round and showed it free)", function()
    local r = fluence{ "graph", "--now" }
    assert.are.equal(0, r.code, r.err)
    local g = vertices(r.out)
    assert.is_nil(g["sat-full"].memory, "no memory left on sat-full")
    assert.matches("quantities past 2%^63%-1 on nodes sat%-exa, sat%-full", r.err)
  end)
end)

describe("a pod asking for more than a jobspec can count", function()
  local dir
  setup(function() dir = cli.tmpdir() end)
  teardown(cli.cleanup)

  -- one node, 8 cores, 64 GiB in MiB
  local GRAPH = [[
{"graph": {"nodes": [
  {"id": "0", "metadata": {"type": "cluster", "name": "c0", "id": 0, "uniq_id": 0, "paths": {"containment": "/c0"}}},
  {"id": "1", "metadata": {"type": "node", "name": "n0", "id": 0, "uniq_id": 1, "rank": 0,
   "properties": {"virtual=false": ""}, "paths": {"containment": "/c0/n0"}}},
  {"id": "2", "metadata": {"type": "core", "name": "core0", "id": 0, "uniq_id": 2, "size": 8,
   "paths": {"containment": "/c0/n0/core0"}}},
  {"id": "3", "metadata": {"type": "memory", "name": "memory0", "id": 0, "uniq_id": 3, "size": 65536, "unit": "MB",
   "paths": {"containment": "/c0/n0/memory0"}}}],
 "edges": [{"source": "0", "target": "1"}, {"source": "1", "target": "2"}, {"source": "1", "target": "3"}]}}
]]

  local function select(memory)
    local g = cli.write(dir .. "/graph.json", GRAPH)
    local attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: only\n    attributes: {cost_usd: 1}\n")
    local m = cli.write(dir .. "/m.yaml", (cli.POD:format("fits"):gsub("image: x",
      ("image: x, resources: {requests: {cpu: 1, memory: %s}}"):format(memory))))
    return cli.run{ "select", "-f", m, "--attributes", attrs, "--graph", g, "--offline" }
  end

  it("fits nowhere: 8Ei, 1e400 and 5 PiB of memory (past 2^63 it asked for none, and fitted)", function()
    assert.are.equal(0, select("1Gi").code)
    for _, q in ipairs{ "100Gi", "8Ei", "1e400", "100E", "5Pi" } do
      local r = select(q)
      assert.are.equal(1, r.code, q .. ": " .. r.err)
      assert.matches("dropped only: the group can never fit", r.err, nil, true)
    end
  end)

  it("the jobspec asks for the most it can count", function()
    local jobspecs = require "fluence.jobspecs"
    local text = jobspecs.compute{ pods = 1, pod = { cpu = 2^70, memory = 1e400, gpu = 0 } }
    assert.matches("type: core\n +count: 4294967295\n", text)
    assert.matches("type: memory\n +count: 4294967295\n", text)
  end)
end)
