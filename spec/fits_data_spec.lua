-- fits must not guess (issue 27, point 8), against real kube-apiservers: a
-- policy with a fits stage asks for a guarantee, so when the nodes (fits)
-- or the pods running on them (fits:now) cannot be read -- the right to
-- list them missing, the server unreachable -- the selection fails with
-- exit 4 naming the missing right or the server, instead of keeping every
-- backend and pinning a gang that can never fit.  --fits-best-effort is
-- the explicit opt-in to keeping them, with a note.
local json = require "fluence.json"
local cli = require "support.cli"
local envtest = require "support.envtest"

local ATTRS = cli.root .. "/examples/quickstart/attributes.yaml"

local function esc(s) return (s:gsub("%p", "%%%0")) end

envtest.describe("fits without the data it needs", function(api)
  local west = assert(envtest.get("west"))
  local dir, kubeconfig
  -- four nodes of 64 cores: a gang of 4 pods of 16 fits (a pod a node, as
  -- Fluence's jobspec places them); one of 4 x 128 never does
  local nodes = { { api, "fd-a" }, { api, "fd-b" }, { api, "fd-c" }, { api, "fd-d" }, { west, "fd-w" } }
  local role = "fluence-spec-fits-nodes-only"

  setup(function()
    dir = cli.tmpdir()
    for _, n in ipairs(nodes) do
      n[1]:node(n[2], { capacity = { cpu = "64", memory = "256Gi", pods = "110" } })
    end
    -- a user who may list the nodes, and nothing else (a client certificate:
    -- the shared users keep their rights)
    api:request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", { apiVersion = "rbac.authorization.k8s.io/v1",
      kind = "ClusterRole", metadata = { name = role },
      rules = json.array{ { apiGroups = json.array{ "" }, resources = json.array{ "nodes" }, verbs = json.array{ "list" } } } })
    api:request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", { apiVersion = "rbac.authorization.k8s.io/v1",
      kind = "ClusterRoleBinding", metadata = { name = role },
      roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = role },
      subjects = json.array{ { apiGroup = "rbac.authorization.k8s.io", kind = "User", name = "fits-nodes-only" } } })
    local cert, key = api:client_cert("fits-nodes-only")
    kubeconfig = envtest.kubeconfig_many(dir .. "/config", {
      { name = "admin", api = api }, { name = "west", api = west },
      { name = "nobody", api = api, user = { token = api.tokens.nobody } },
      { name = "nodes-only", api = api, user = { ["client-certificate"] = cert, ["client-key"] = key } },
      { name = "dead", api = api, server = "https://127.0.0.1:1" } })
  end)
  teardown(function()
    for _, n in ipairs(nodes) do pcall(n[1].request, n[1], "DELETE", "/api/v1/nodes/" .. n[2]) end
    pcall(api.request, api, "DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" .. role)
    pcall(api.request, api, "DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/" .. role)
    cli.cleanup()
  end)

  -- a gang of 4 pods of 128 cpu: on 64-core nodes it can never fit
  local function gang(policy, cpu)
    return cli.write(dir .. "/gang.yaml", ([[
apiVersion: batch/v1
kind: Job
metadata:
  name: gang
  annotations:
    fluence.flux-framework.org/select-policy: "%s"
spec:
  parallelism: 4
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers:
        - name: c
          image: busybox
          resources:
            requests: {cpu: "%s"}
]]):format(policy, cpu or "128"))
  end

  local function run(context, policy, ...)
    local cpu = policy:match(" (%d+)$")
    policy = policy:gsub(" %d+$", "")
    local args = { "select", "-f", gang(policy, cpu), "--attributes", ATTRS, ... }
    for _, c in ipairs(type(context) == "table" and context or { context }) do
      args[#args + 1] = "--context"
      args[#args + 1] = c
    end
    args.env = { KUBECONFIG = kubeconfig, HOME = dir }
    return cli.run(args)
  end

  local function refused(r, pattern)
    assert.are.equal(4, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches("^fluence: cluster: [^\n]+\n$", r.err)
    assert.matches(pattern, r.err)
  end

  it("with the data, the gang is refused (exit 1): the baseline", function()
    local r = run("admin", "fits")
    assert.are.equal(1, r.code, r.err)
    assert.matches("can never fit", r.err)
  end)

  it("no right to list the nodes: exit 4 naming the right, not the gang pinned", function()
    for _, policy in ipairs{ "fits", "fits:now", "fits, min-cost" } do
      refused(run("nobody", policy), ('context "nobody" %%(%s%%): cannot list the nodes: nodes is forbidden: ' ..
                                     'User "nobody" cannot list resource "nodes" in API group "" at the cluster ' ..
                                     'scope %%(HTTP 403 Forbidden%%); fits needs them %%(%%-%%-fits%%-best%%-effort ' ..
                                     "keeps every backend instead%%); 'fluence rbac' prints the rights fluence " ..
                                     "needs\n$"):format(esc(api.url)))
    end
  end)

  it("the server unreachable: exit 4 naming it", function()
    refused(run("dead", "fits"), 'context "dead" %(https://127%.0%.0%.1:1%): cannot list the nodes: Failed to connect')
  end)

  it("fits:now with the nodes but not the pods: exit 4; plain fits needs no pods", function()
    refused(run("nodes-only", "fits:now"), ('context "nodes%%-only" %%(%s%%): cannot list the pods: pods is ' ..
                                           'forbidden: User "fits%%-nodes%%-only" cannot list resource "pods" .-' ..
                                           "; fits:now needs them"):format(esc(api.url)))
    local r = run("nodes-only", "fits")
    assert.are.equal(1, r.code, r.err)                 -- checked, and it can never fit
    assert.matches("can never fit", r.err)
  end)

  it("--fits-best-effort: every backend kept, with a note saying why", function()
    local r = run("nobody", "fits", "--fits-best-effort")
    assert.are.equal(0, r.code, r.err)
    assert.matches("require%-backend", r.out)
    assert.matches("\nnote: context \"nobody\" %([^)]+%): cannot list the nodes: nodes is forbidden[^\n]*; fits " ..
                   "keeps every backend %(%-%-fits%-best%-effort%)\n", "\n" .. r.err)
    r = run("nodes-only", "fits:now", "--fits-best-effort")
    assert.are.equal(1, r.code, r.err)                 -- capacity: 4 x 128 never fits 4 x 64
    assert.matches("can never fit", r.err)
    r = run("nodes-only", "fits:now 16", "--fits-best-effort")
    assert.are.equal(0, r.code, r.err)                 -- 4 x 16 fits the capacity
    assert.matches("\nnote: context \"nodes%-only\" %([^)]+%): cannot list the pods[^\n]*; fits:now matches " ..
                   "capacity, not what runs now %(%-%-fits%-best%-effort%)\n", "\n" .. r.err)
  end)

  it("several clusters: one whose nodes cannot be read fails the selection, naming it", function()
    refused(run({ "west", "nobody" }, "fits"), 'context "nobody" %([^)]+%): cannot list the nodes: nodes is forbidden')
  end)

  it("graph --now fails as fits:now does, or shows capacity with --fits-best-effort", function()
    local function graph(...)
      local args = { "graph", "--now", "--context", "nodes-only", "-o", "tree", ... }
      args.env = { KUBECONFIG = kubeconfig, HOME = dir }
      return cli.run(args)
    end
    refused(graph(), "cannot list the pods: pods is forbidden[^\n]*; fits:now needs them")
    local r = graph("--fits-best-effort")
    assert.are.equal(0, r.code, r.err)
    assert.matches("fd%-a %(node%)", r.out)
    assert.matches("note: [^\n]*cannot list the pods[^\n]*fits:now matches capacity", r.err)
  end)
end)
