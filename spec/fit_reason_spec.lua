-- Why it does not fit (issue 27, point 7), against two real kube-apiservers:
-- a failed fits / fits:now names the short resource and the best node, in
-- the numbers `fluence graph` shows, under one conservative rounding rule
-- (cluster.whole: what a node has rounded down, what its pods use rounded
-- up; allocatable 15.5 cpu with 7.5 requested is 15 cores, 8 used, 7 free --
-- it was 16 whole, and 8 free now).
local json = require "fluence.json"
local cli = require "support.cli"
local envtest = require "support.envtest"

envtest.describe("why a group does not fit", function(east)
  local west = assert(envtest.get("west"))
  local dir, kubeconfig, ns, attrs
  local made = {}

  setup(function()
    dir = cli.tmpdir()
    ns = east:namespace("why")
    pcall(west.request, west, "POST", "/api/v1/namespaces", { apiVersion = "v1", kind = "Namespace", metadata = { name = ns } })
    local function node(api, name, cpu)
      made[#made + 1] = { api, api:node(name, { capacity = { cpu = "16", memory = "64Gi", pods = "110" },
                                                 allocatable = { cpu = cpu, memory = "64Gi", pods = "110" } }) }
    end
    local function pod(api, name, on, cpu)
      api:request("POST", ("/api/v1/namespaces/%s/pods"):format(ns), { apiVersion = "v1", kind = "Pod",
        metadata = { name = name }, spec = { nodeName = on, containers = json.array{
          { name = "c", image = "busybox", resources = { requests = { cpu = cpu } } } } } })
    end
    node(east, "why-a", "15500m")
    node(east, "why-b", "4")
    node(west, "why-w", "16")
    pod(east, "busy", "why-a", "7500m")
    pod(east, "small-1", "why-b", "1")
    pod(east, "small-2", "why-b", "2")
    pod(west, "half", "why-w", "6")
    pod(west, "quarter", "why-w", "2")
    kubeconfig = envtest.kubeconfig_many(dir .. "/config", { { name = "east", api = east, namespace = ns },
                                                             { name = "west", api = west, namespace = ns } })
    attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-l4\n    attributes: {cost_usd: 1}\n")
  end)
  teardown(function()
    for _, m in ipairs(made) do pcall(m[1].request, m[1], "DELETE", "/api/v1/nodes/" .. m[2]) end
    cli.cleanup()
  end)

  local function run(args)
    args.env = { KUBECONFIG = kubeconfig, HOME = dir }
    return cli.run(args)
  end

  local function select(policy, cpu, ...)
    local job = cli.write(dir .. "/job.yaml", ([[
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    fluence.flux-framework.org/select-policy: "%s"
spec:
  schedulerName: fluence
  containers: [{name: c, image: x, resources: {requests: {cpu: "%s"}}}]
]]):format(policy, cpu))
    local args = { "select", "-f", job, "--attributes", attrs, ... }
    if #args == 5 then args[#args + 1] = "--context"; args[#args + 1] = "east" end
    return run(args)
  end

  -- the node vertices of `fluence graph` (why-* only) -> { name = cores }
  local function cores(now, context)
    local r = run{ "graph", "-o", "tree", "--context", context or "east", now and "--now" or nil }
    assert.are.equal(0, r.code, r.err)
    local out, node = {}, nil
    for line in r.out:gmatch("[^\n]+") do
      node = line:match("^  (why%-[%w-]+) %(node%)") or (line:match("^  %S+ %(node%)") and false) or node
      local n = line:match("^    core%d+ %(core%) (%d+)")
      if node and n then out[node] = tonumber(n) end
    end
    return out
  end

  it("rounds one way: a node's cores down, its pods' up; graph and graph --now show it", function()
    assert.are.same({ ["why-a"] = 15, ["why-b"] = 4 }, cores(false))
    -- 15 - ceil(7.5) = 7; 4 - 3 = 1
    assert.are.same({ ["why-a"] = 7, ["why-b"] = 1 }, cores(true))
  end)

  it("fits:now names the short resource and the best node, in graph --now's numbers", function()
    local r = select("fits:now", "8")
    assert.are.equal(1, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches(("dropped gpu%%-l4: the group does not fit now: needs 8 cpu per pod; best node why%%-a has " ..
                    "7 of 15 cpu free %%(8 used by %s/busy%%)\n"):format(ns:gsub("%p", "%%%0")), r.err)
  end)

  it("a pod asking for 7.5 cpu asks for 8 whole (rounded up)", function()
    local r = select("fits:now", "7500m")
    assert.are.equal(1, r.code, r.err)
    assert.matches("needs 8 cpu per pod; best node why%-a has 7 of 15 cpu free", r.err)
  end)

  it("fits names what the node has at all", function()
    local r = select("fits", "16")
    assert.are.equal(1, r.code, r.err)
    assert.matches("dropped gpu%-l4: the group can never fit: needs 16 cpu per pod; best node why%-a has 15 cpu\n",
                   r.err)
  end)

  it("several clusters: each candidate's reason names its own cluster's node", function()
    local r = select("fits:now, min-cost", "12", "--context", "east", "--context", "west")
    assert.are.equal(1, r.code, r.err)
    assert.matches("dropped gpu%-l4@east: the group does not fit now: needs 12 cpu per pod; best node why%-a has " ..
                   "7 of 15 cpu free", r.err)
    -- several pods on a node: how many, and the one asking the most
    assert.matches(("dropped gpu%%-l4@west: the group does not fit now: needs 12 cpu per pod; best node why%%-w has " ..
                    "8 of 16 cpu free %%(8 used by 2 pods, the most by %s/half%%)"):format(ns:gsub("%p", "%%%0")), r.err)
    assert.are.same({ ["why-w"] = 8 }, cores(true, "west"))
    r = select("fits:now, min-cost", "8", "--context", "east", "--context", "west")
    assert.are.equal(0, r.code, r.err)
    assert.matches('selected backend "gpu%-l4" on context "west"', r.err)
  end)
end)
