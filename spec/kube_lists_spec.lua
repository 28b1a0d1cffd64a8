-- fluence.kubelists (core/kubelists.c): what the live graph takes from
-- NodeList and PodList pages, read straight from the JSON text.
local kl = require "fluence.kubelists"
local json = require "fluence.json"

local function nodelist(items, cont)
  return json.encode{ kind = "NodeList", apiVersion = "v1",
                      metadata = { resourceVersion = "1", continue = cont }, items = json.array(items) }
end
local function podlist(items, cont)
  return json.encode{ kind = "PodList", apiVersion = "v1",
                      metadata = { resourceVersion = "1", continue = cont }, items = json.array(items) }
end
local function node(name, status, spec)
  return { metadata = { name = name }, spec = spec or json.object{}, status = status }
end
local function pod(node_name, containers, extra)
  local p = { metadata = { name = "p" }, spec = { nodeName = node_name, containers = json.array(containers) },
              status = { phase = "Running" } }
  for k, v in pairs(extra or {}) do
    if k == "phase" then p.status.phase = v else p.spec[k] = v end
  end
  return p
end
local function c(requests, more)
  local x = { name = "c", resources = { requests = requests } }
  for k, v in pairs(more or {}) do x[k] = v end
  return x
end

describe("kubelists.nodes", function()
  it("reads allocatable, else capacity: cores rounded up, memory in bytes, GPUs", function()
    local nodes, cont = kl.nodes(nodelist({
      node("a", { capacity = { cpu = "4", memory = "16Gi", ["nvidia.com/gpu"] = "2" },
                  allocatable = { cpu = "3800m", memory = "15Gi", ["nvidia.com/gpu"] = "2" } }),
      node("b", { capacity = { cpu = "1e1", memory = "129e6", pods = "110" } }),
      node("c", json.object{}),
    }, "next-page"))
    assert.are.equal("next-page", cont)
    assert.are.same({ name = "a", cpu = 4, cpu_milli = 3800, memory = 15 * 2^30, gpu = 2,
                      unschedulable = false, control_plane = false }, nodes[1])
    assert.are.equal(10, nodes[2].cpu)
    assert.are.equal(129000000, nodes[2].memory)
    assert.are.same({ 0, 0, 0 }, { nodes[3].cpu, nodes[3].memory, nodes[3].gpu })
  end)

  it("marks cordoned and control-plane nodes", function()
    local nodes = kl.nodes(nodelist({
      node("cordoned", json.object{}, { unschedulable = true }),
      node("cp", json.object{}, { taints = json.array{ { key = "node-role.kubernetes.io/control-plane" } } }),
      node("master", json.object{}, { taints = json.array{ { key = "node-role.kubernetes.io/master" },
                                                           { key = "other" } } }),
      node("tainted", json.object{}, { taints = json.array{ { key = "gpu", value = "true" } } }),
    }))
    assert.is_true(nodes[1].unschedulable)
    assert.is_true(nodes[2].control_plane)
    assert.is_true(nodes[3].control_plane)
    assert.is_false(nodes[4].control_plane or nodes[4].unschedulable)
  end)

  it("reads every Kubernetes quantity form", function()
    local cases = { { "2", 2000 }, { "250m", 250 }, { "0.5", 500 }, { "1500000u", 1500 }, { "1k", 1000000 },
                    { "1e3", 1000000 }, { "+2", 2000 }, { ".5", 500 }, { "2E0", 2000 } }
    for _, cs in ipairs(cases) do
      local nodes = assert(kl.nodes(nodelist({ node("n", { capacity = { cpu = cs[1] } }) })))
      assert.are.equal(cs[2], nodes[1].cpu_milli, cs[1])
    end
    local mem = { { "1Ki", 1024 }, { "1Mi", 2^20 }, { "2Gi", 2 * 2^30 }, { "1Ti", 2^40 }, { "1M", 1e6 },
                  { "1.5Gi", 1.5 * 2^30 }, { "100", 100 }, { "12e6", 12e6 } }
    for _, cs in ipairs(mem) do
      local nodes = assert(kl.nodes(nodelist({ node("n", { capacity = { memory = cs[1] } }) })))
      assert.are.equal(math.tointeger(cs[2]), nodes[1].memory, cs[1])
    end
    for _, bad in ipairs{ "abc", "1Q", "1e", "--1", "", "1.2.3" } do
      local nodes, err = kl.nodes(nodelist({ node("n", { capacity = { cpu = bad } }) }))
      assert.is_nil(nodes, bad)
      assert.matches("^the NodeList is not valid: bad quantity", err)
    end
  end)

  it("decodes escaped names", function()
    local nodes = assert(kl.nodes('{"items":[{"metadata":{"name":"n\\u00e9\\ud83d\\ude00\\n"}}]}'))
    assert.are.equal("né😀\n", nodes[1].name)
  end)

  it("refuses what is not strict JSON, naming the byte", function()
    for _, bad in ipairs{
      '{"items":[{"metadata":{"name":"n"}},]}', '{"items":[]', '{"items":[]} x', "[]", '{"items":[{"metadata":{"name":"a\tb"}}]}',
      '{"items":[{"metadata":{"name":"\\ud800"}}]}', '{"items":[{"status":{"capacity":{"cpu":01}}}]}',
      '{"metadata":{}}', '{"items":[{}]}', '{"items":[{"metadata":{"name":"n"},"x":tru}]}', "",
      '{"items":[{"metadata":{"name":"n\255"}}]}', '{"items":[{"metadata":{"name":"\192\128"}}]}',
      '{"items":[{"metadata":{"name":"n","x":"\237\160\128"}}]}',
      '{"items":[{"metadata":{"name":"a","name":"b"}}]}', '{"items":[],"items":[]}',
      '{"items":[{"metadata":{"name":"n"},"status":{"capacity":{"cpu":"1","cpu":"2"}}}]}',
    } do
      local nodes, err = kl.nodes(bad)
      assert.is_nil(nodes, bad)
      assert.matches("^the NodeList is not valid: .+ at byte %d+$", err)
      -- whatever the scanner refuses for syntax, jansson refuses too (or it has no items/name)
    end
  end)

  it("accepts only what jansson accepts (random mutations of a page)", function()
    local page = nodelist({ node("a", { capacity = { cpu = "4", memory = "1Gi" } }, { taints = json.array{ { key = "k" } } }) })
    math.randomseed(17)
    local accepted = 0
    for _ = 1, 3000 do
      local t = page
      for _ = 1, math.random(1, 3) do
        local i = math.random(1, #t)
        local r = math.random(1, 3)
        local ch = string.char(math.random(32, 126))
        if r == 1 then t = t:sub(1, i - 1) .. t:sub(i + 1)
        elseif r == 2 then t = t:sub(1, i - 1) .. ch .. t:sub(i)
        else t = t:sub(1, i - 1) .. ch .. t:sub(i + 1) end
      end
      if kl.nodes(t) then
        accepted = accepted + 1
        assert.is_not_nil(json.decode(t), "accepted text jansson refuses: " .. t)
      end
    end
    assert.is_true(accepted > 0)
  end)
end)

describe("kubelists.usage", function()
  it("adds the requests of bound, unfinished pods per node, across pages", function()
    local acc = kl.usage()
    local n, cont = acc:add(podlist({
      pod("a", { c{ cpu = "250m", memory = "512Mi" }, c{ cpu = "1", ["nvidia.com/gpu"] = "1" } }),
      pod("a", { c{ cpu = "2" } }, { phase = "Succeeded" }),
      pod("a", { c{ cpu = "2" } }, { phase = "Failed" }),
      pod("b", { c{ memory = "1Gi" } }, { phase = "Pending" }),
      pod(nil, { c{ cpu = "8" } }),
    }, "more"))
    assert.are.equal(2, n)
    assert.are.equal("more", cont)
    n = acc:add(podlist({ pod("a", { c{ cpu = "100m" } }) }))
    assert.are.equal(1, n)
    assert.are.same({ a = { cpu_milli = 1350, memory = 512 * 2^20, gpu = 1, pods = 2, top = "p" },
                      b = { cpu_milli = 0, memory = 2^30, gpu = 0, pods = 1, top = "p" } }, acc:totals())
  end)

  it("names the pod asking for the most cpu on each node (why a group does not fit)", function()
    local acc = kl.usage()
    local function named(ns, name, cpu)
      local p = pod("a", { c{ cpu = cpu } })
      p.metadata = { name = name, namespace = ns }
      return p
    end
    acc:add(podlist({ named("default", "small", "1"), named("ml", "busy", "12"), named("ml", "also", "12"),
                      named("x", ("n"):rep(300), "500m") }))
    local t = acc:totals()
    assert.are.equal("ml/busy", t.a.top)        -- the first of equals
    assert.are.equal(4, t.a.pods)
    -- a pod without metadata counts, unnamed
    acc = kl.usage()
    local p = pod("b", { c{ cpu = "1" } })
    p.metadata = nil
    acc:add(podlist({ p }))
    assert.are.equal("", acc:totals().b.top)
  end)

  -- a hostile server's names: cut to the API server's lengths on a
  -- character's boundary (a cut inside one made the name not UTF-8), a
  -- namespace without a name no "ns/", a \u0000 kept (escaped where shown)
  it("names the pod whole characters at a time, as decoded", function()
    local function top(ns, name)
      local acc = kl.usage()
      local p = pod("a", { c{ cpu = "1" } })
      p.metadata = { name = name, namespace = ns }
      assert(acc:add(podlist({ p })))
      return acc:totals().a.top
    end
    local t = top(("\u{e9}"):rep(40), "a" .. ("\u{e9}"):rep(200))
    assert.is_not_nil(utf8.len(t), t)
    assert.are.equal(("\u{e9}"):rep(31) .. "/a" .. ("\u{e9}"):rep(126), t)
    assert.are.equal("", top("only-namespace", nil))
    assert.are.equal("x\0y", top(nil, "x\0y"))
  end)

  it("counts init containers, sidecars and overhead as the scheduler does", function()
    local acc = kl.usage()
    assert(acc:add(podlist({
      -- an init container larger than the containers: its request counts
      pod("init", { c{ cpu = "1" } }, { initContainers = json.array{ c{ cpu = "3" } } }),
      -- a sidecar (restartPolicy Always) adds to the containers
      pod("side", { c{ cpu = "1" } }, { initContainers = json.array{ c{ cpu = "500m" }, c({ cpu = "250m" }, { restartPolicy = "Always" }) } }),
      -- the pod overhead is added
      pod("over", { c{ cpu = "1", memory = "1Gi" } }, { overhead = { cpu = "100m", memory = "64Mi" } }),
    })))
    local t = acc:totals()
    assert.are.equal(3000, t.init.cpu_milli)
    assert.are.equal(1250, t.side.cpu_milli)
    assert.are.equal(1100, t.over.cpu_milli)
    assert.are.equal(2^30 + 64 * 2^20, t.over.memory)
  end)

  it("refuses a page that is not a PodList", function()
    local acc = kl.usage()
    local n, err = acc:add('{"items": [{"spec": {"nodeName": "a", "containers": [{"resources": {"requests": {"cpu": "x"}}}]}}]}')
    assert.is_nil(n)
    assert.matches("^the PodList is not valid: bad quantity", err)
    assert.are.same({}, acc:totals())
  end)
end)
