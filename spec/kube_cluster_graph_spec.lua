-- The live cluster graph (issue 17) against a real kube-apiserver: Node
-- objects (their status written through the status subresource, as a
-- kubelet would) and Pods bound with spec.nodeName (no kubelet needed).
-- `fluence graph` shows what Fluence builds from them; `fits` matches
-- against it, `fits:now` against what is left once the running pods'
-- requests are taken away; without the right to list nodes or pods a note
-- says so and the check falls back.
local json = require "fluence.json"
local cli = require "support.cli"
local envtest = require "support.envtest"
local jgf_nodes = require "support.jgf_nodes"

local PIN = "fluence.flux-framework.org/require-backend"

envtest.describe("the live cluster graph", function(api)
  local dir, ns, attrs, gang
  local made_nodes = {}

  local function node(name, status, spec)
    made_nodes[#made_nodes + 1] = api:node(name, status, spec)
  end

  local function pod(name, node_name, cpu, memory, phase)
    api:request("POST", ("/api/v1/namespaces/%s/pods"):format(ns), {
      apiVersion = "v1", kind = "Pod", metadata = { name = name },
      spec = { nodeName = node_name, containers = json.array{ { name = "c", image = "busybox",
        resources = { requests = { cpu = cpu, memory = memory } } } } } })
    if phase then
      api:request("PATCH", ("/api/v1/namespaces/%s/pods/%s/status"):format(ns, name), { status = { phase = phase } },
                  "application/merge-patch+json")
    end
  end

  setup(function()
    dir = cli.tmpdir()
    ns = api:namespace("graph")
    local big = { capacity = { cpu = "4", memory = "16Gi", ["nvidia.com/gpu"] = "2", pods = "110" },
                  allocatable = { cpu = "3800m", memory = "15Gi", ["nvidia.com/gpu"] = "2", pods = "110" } }
    node("graph-a", big)
    node("graph-b", { capacity = { cpu = "4", memory = "16Gi", pods = "110" } })      -- capacity only
    node("graph-cordoned", big, { unschedulable = true })
    node("graph-control", big, { taints = json.array{ { key = "node-role.kubernetes.io/control-plane",
                                                         effect = "NoSchedule" } } })
    -- what runs now: 3 of 4 cores taken on each node; a finished pod does not count
    pod("busy-a", "graph-a", "2500m", "4Gi")
    pod("busy-a2", "graph-a", "500m", "1Gi")
    pod("busy-b", "graph-b", "3", "8Gi")
    pod("done-b", "graph-b", "1", "1Gi", "Succeeded")
    pod("unbound", nil, "4", "1Gi")
    attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-l4\n    attributes: {cost_usd: 1}\n")
    gang = cli.write(dir .. "/gang.yaml", [[
apiVersion: batch/v1
kind: Job
metadata:
  name: gang
  annotations:
    fluence.flux-framework.org/select-policy: POLICY
spec:
  parallelism: 2
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers:
        - name: c
          image: busybox
          resources:
            requests: {cpu: "2", memory: 1Gi}
]])
  end)
  teardown(function()
    for _, n in ipairs(made_nodes) do pcall(api.request, api, "DELETE", "/api/v1/nodes/" .. n) end
    cli.cleanup()
  end)

  local function fluence(args, kubeconfig)
    local full = {}
    for _, a in ipairs(args) do full[#full + 1] = a end
    full[#full + 1] = "--kubeconfig"
    full[#full + 1] = kubeconfig or api:kubeconfig_for{ namespace = ns }
    full[#full + 1] = "--fluence-ns"
    full[#full + 1] = ns
    return cli.run(full)
  end

  -- The graph's node vertices (ours only: other specs may add nodes) and
  -- their children by type.
  local function ours(doc) return jgf_nodes(doc, "graph-") end

  it("fluence graph: each schedulable node with its cores, memory and GPUs, as Fluence builds it", function()
    local r = fluence{ "graph" }
    assert.are.equal(0, r.code, r.err)
    local g = ours(assert(json.decode(r.out)))
    assert.is_nil(g["graph-cordoned"], "a cordoned node is left out")
    assert.is_nil(g["graph-control"], "a control-plane node is left out")
    local a, b = g["graph-a"], g["graph-b"]
    assert.are.equal(3, a.core.size)               -- allocatable 3800m, rounded down (cluster.whole)
    assert.are.equal(15360, a.memory.size)         -- MiB of allocatable
    assert.are.equal("MB", a.memory.unit)
    assert.are.equal(2, a.gpu.size)
    assert.are.equal(4, b.core.size)               -- capacity when no allocatable
    assert.are.equal(16384, b.memory.size)
    assert.is_nil(b.gpu)
    assert.are.same({ ["virtual=false"] = "" }, a.meta.properties)
    assert.are.equal("graph-a", a.meta.hostname)
    assert.is_true(a.meta.rank >= 0 and b.meta.rank >= 0 and a.meta.rank ~= b.meta.rank)
    assert.matches("no offerings in the graph", r.err)
  end)

  it("fluence graph --now: what the running pods leave", function()
    local r = fluence{ "graph", "--now" }
    assert.are.equal(0, r.code, r.err)
    local g = ours(assert(json.decode(r.out)))
    assert.are.equal(0, g["graph-a"].core and g["graph-a"].core.size or 0)   -- 3800m - 3000m: no whole core
    assert.are.equal(15360 - 5120, g["graph-a"].memory.size)
    assert.are.equal(1, g["graph-b"].core.size)    -- the finished pod's core is free again
    r = fluence{ "graph", "--now", "-o", "tree" }
    assert.are.equal(0, r.code, r.err)
    assert.matches("\n  graph%-b %(node%) rank %d+ %[virtual=false%]\n    core%d+ %(core%) 1\n    memory%d+ %(memory%) 8192 MB\n", r.out)
  end)

  it("keeps with fits and drops with fits:now a gang that fits the nodes but not what runs now", function()
    local job = cli.write(dir .. "/fits.yaml", (cli.slurp(gang):gsub("POLICY", "fits,min-cost")))
    local r = fluence{ "select", "-f", job, "--attributes", attrs }
    assert.are.equal(0, r.code, r.err)
    assert.matches(PIN:gsub("%p", "%%%0") .. ": gpu%-l4", r.out)
    job = cli.write(dir .. "/now.yaml", (cli.slurp(gang):gsub("POLICY", "fits:now,min-cost")))
    r = fluence{ "select", "-f", job, "--attributes", attrs }
    assert.are.equal(1, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches("dropped gpu%-l4: the group does not fit now", r.err)
  end)

  it("fails (exit 4) without the right to list pods, or nodes; falls back with --fits-best-effort", function()
    -- a user who may read nodes and the offerings, not pods
    local crt, key = api:client_cert("graph-reader")
    api:request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", { apiVersion = "rbac.authorization.k8s.io/v1",
      kind = "ClusterRole", metadata = { name = "graph-reader" },
      rules = json.array{ { apiGroups = json.array{ "" }, resources = json.array{ "nodes", "configmaps" },
                            verbs = json.array{ "get", "list" } } } })
    api:request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", { apiVersion = "rbac.authorization.k8s.io/v1",
      kind = "ClusterRoleBinding", metadata = { name = "graph-reader" },
      roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "graph-reader" },
      subjects = json.array{ { kind = "User", name = "graph-reader", apiGroup = "rbac.authorization.k8s.io" } } })
    local reader = api:kubeconfig_for{ namespace = ns, user = { ["client-certificate"] = crt, ["client-key"] = key } }
    local job = cli.write(dir .. "/now2.yaml", (cli.slurp(gang):gsub("POLICY", "fits:now,min-cost")))
    -- fits:now asked for what runs now: without the pods, no guess (issue 27)
    local r = fluence({ "select", "-f", job, "--attributes", attrs }, reader)
    assert.are.equal(4, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches('cannot list the pods: pods is forbidden: User "graph%-reader"[^\n]*; fits:now needs them', r.err)
    r = fluence({ "select", "-f", job, "--attributes", attrs, "--fits-best-effort" }, reader)
    assert.are.equal(0, r.code, r.err)                    -- capacity: the gang fits
    assert.matches('cannot list the pods: pods is forbidden: User "graph%-reader"', r.err)
    assert.matches("fits:now matches capacity, not what runs now %(%-%-fits%-best%-effort%)", r.err)
    -- no rights at all: no graph; fits keeps every backend only when asked to
    local nobody = api:kubeconfig_for{ context = "nobody", namespace = ns }
    r = fluence({ "select", "-f", job, "--attributes", attrs }, nobody)
    assert.are.equal(4, r.code, r.err)
    assert.matches('cannot list the nodes: nodes is forbidden: User "nobody"[^\n]*; fits needs them', r.err)
    r = fluence({ "select", "-f", job, "--attributes", attrs, "--fits-best-effort" }, nobody)
    assert.are.equal(0, r.code, r.err)
    assert.matches('cannot list the nodes: nodes is forbidden: User "nobody"', r.err)
    assert.matches("fits keeps every backend %(%-%-fits%-best%-effort%)", r.err)
  end)
end)
