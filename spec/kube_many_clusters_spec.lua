-- Choosing among clusters (issue 17) with two real kube-apiservers: --context
-- given twice makes every (cluster, backend) pair a candidate, named
-- BACKEND@CONTEXT with the attributes backend and context; fits and
-- fits:now match each against its own cluster's graph; apply sends each
-- object to the cluster chosen for it.  With one context nothing changes.
local json = require "fluence.json"
local cli = require "support.cli"
local envtest = require "support.envtest"

local PIN = "fluence.flux-framework.org/require-backend"
local RESULT = "fluence.flux-framework.org/select-result"

envtest.describe("several clusters", function(east)
  local west = assert(envtest.get("west"))
  local dir, ns, kubeconfig, attrs
  local made = {}

  local function node(api, name, cpu)
    made[#made + 1] = { api, api:node(name, { capacity = { cpu = cpu, memory = "16Gi", pods = "110" } }) }
  end

  setup(function()
    dir = cli.tmpdir()
    ns = "many"
    for _, api in ipairs{ east, west } do
      pcall(api.request, api, "POST", "/api/v1/namespaces", { apiVersion = "v1", kind = "Namespace",
                                                               metadata = { name = ns } })
    end
    -- the same backend offered by both, cheaper in the east
    local function offer(api, cost)
      api:request("POST", ("/api/v1/namespaces/%s/configmaps"):format(ns), {
        apiVersion = "v1", kind = "ConfigMap", metadata = { name = "fluence-resources" },
        data = { ["resources.yaml"] = ("resources:\n  - type: gpu\n    name: gpu-l4\n    attributes: {cost_usd: %q}\n")
                                      :format(tostring(cost)) } })
    end
    offer(east, 1)
    offer(west, 2)
    node(east, "east-1", "4"); node(east, "east-2", "4")
    node(west, "west-1", "4"); node(west, "west-2", "4")
    -- the east is busy now: 3 of 4 cores taken on each node
    for _, n in ipairs{ "east-1", "east-2" } do
      east:request("POST", ("/api/v1/namespaces/%s/pods"):format(ns), { apiVersion = "v1", kind = "Pod",
        metadata = { name = "busy-" .. n }, spec = { nodeName = n, containers = json.array{
          { name = "c", image = "busybox", resources = { requests = { cpu = "3" } } } } } })
    end
    -- one kubeconfig, two contexts
    kubeconfig = cli.write(dir .. "/config", json.encode{
      apiVersion = "v1", kind = "Config", ["current-context"] = "east",
      clusters = json.array{ { name = "east", cluster = { server = east.url, ["certificate-authority"] = east.pki .. "/ca.crt" } },
                             { name = "west", cluster = { server = west.url, ["certificate-authority"] = west.pki .. "/ca.crt" } } },
      users = json.array{ { name = "east", user = { token = east.tokens.admin } },
                          { name = "west", user = { token = west.tokens.admin } } },
      contexts = json.array{ { name = "east", context = { cluster = "east", user = "east", namespace = ns } },
                             { name = "west", context = { cluster = "west", user = "west", namespace = ns } } } })
    attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-l4\n    attributes: {memory_gb: 24}\n")
  end)
  teardown(function()
    for _, m in ipairs(made) do pcall(m[1].request, m[1], "DELETE", "/api/v1/nodes/" .. m[2]) end
    cli.cleanup()
  end)

  local function job(policy, name)
    return cli.write(dir .. "/" .. (name or "gang") .. ".yaml", ([[
apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  annotations:
    fluence.flux-framework.org/select-policy: "%s"
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
            requests: {cpu: "2"}
]]):format(name or "gang", policy))
  end

  local function run(verb, file, extra)
    local args = { verb, "-f", file, "--attributes", attrs, "--kubeconfig", kubeconfig, "--fluence-ns", ns,
                   "--context", "east", "--context", "west" }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    return cli.run(args)
  end

  local function audit_of(out)
    local doc = require("fluence.yaml").decode(out)
    return doc.metadata.annotations[PIN], json.decode(doc.metadata.annotations[RESULT])
  end

  it("goes to the cluster where the gang fits now, cheaper or not", function()
    local r = run("select", job("fits:now,min-cost"))
    assert.are.equal(0, r.code, r.err)
    assert.matches('selected backend "gpu%-l4" on context "west" for Job/gang', r.err)
    assert.matches("dropped gpu%-l4@east: the group does not fit now", r.err)
    local pin, a = audit_of(r.out)
    assert.are.equal("gpu-l4", pin)
    assert.are.equal("west", a.context)
    assert.are.equal("gpu-l4", a.chosen)
  end)

  it("takes the cheaper cluster when only capacity matters", function()
    local r = run("select", job("fits,min-cost"))
    assert.are.equal(0, r.code, r.err)
    assert.matches('selected backend "gpu%-l4" on context "east"', r.err)
    assert.matches("dropped gpu%-l4@west: cost_usd 2 is not within 0 of the best %(1%)", r.err)
  end)

  it("lets policies test the context and the backend", function()
    local r = run("select", job("require:context=west,min-cost"))
    assert.are.equal(0, r.code, r.err)
    assert.matches('on context "west"', r.err)
    r = run("select", job("require:backend=gpu-l4,max-cost"))
    assert.are.equal(0, r.code, r.err)
    assert.matches('on context "west"', r.err)
  end)

  it("shows a context column in explain", function()
    local r = run("explain", job("fits:now,min-cost"), { "-o", "json" })
    assert.are.equal(0, r.code, r.err)
    local doc = json.decode(r.out)
    local rows = doc.objects[1].backends
    assert.is_table(rows, r.out)
    assert.are.equal("west", doc.objects[1].context)
    local seen = {}
    for _, row in ipairs(rows) do seen[row.name] = true end
    assert.is_true(seen["gpu-l4@east"] and seen["gpu-l4@west"])
    r = run("explain", job("fits:now,min-cost"))
    assert.matches("\nBACKEND +CONTEXT +COST_USD", r.out)
    assert.matches("\ngpu%-l4@east +east %(cluster%)", r.out)
    assert.matches("\nchosen: gpu%-l4 on context west\n", r.out)
  end)

  it("applies each object to the cluster chosen for it", function()
    local r = run("apply", job("fits:now,min-cost", "placed"))
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("job.batch/placed (context west) serverside-applied\n", r.out)
    local path = ("/apis/batch/v1/namespaces/%s/jobs/placed"):format(ns)
    assert.is_table(west:get(path))
    assert.is_nil(east:get(path))
    assert.are.equal("gpu-l4", west:get(path).spec.template.metadata.annotations[PIN])
  end)

  it("prints each cluster's graph", function()
    local r = cli.run{ "graph", "--kubeconfig", kubeconfig, "--fluence-ns", ns, "--context", "east",
                       "--context", "west", "-o", "tree", "--now" }
    assert.are.equal(0, r.code, r.err)
    assert.matches("^context east:\n", r.out)
    assert.matches("\ncontext west:\n", r.out)
    assert.matches("east%-1 %(node%)", r.out)
    assert.matches("west%-2 %(node%)", r.out)
    r = cli.run{ "graph", "--kubeconfig", kubeconfig, "--fluence-ns", ns, "--context", "east", "--context", "west" }
    assert.are.equal(0, r.code, r.err)
    local doc = json.decode(r.out)
    assert.is_table(doc.east.graph)
    assert.is_table(doc.west.graph)
  end)

  it("changes nothing with one context", function()
    local r = cli.run{ "select", "-f", job("fits:now,min-cost", "single"), "--attributes", attrs,
                       "--kubeconfig", kubeconfig, "--fluence-ns", ns, "--context", "west" }
    assert.are.equal(0, r.code, r.err)
    assert.matches('selected backend "gpu%-l4" for Job/single', r.err)
    local _, a = audit_of(r.out)
    assert.is_nil(a.context)
    for _, c in ipairs(a.candidates) do assert.are.equal("gpu-l4", c.name) end
  end)
end)

-- Distant clusters (the stand-in answers after a delay: a real server
-- cannot be made slow on demand): every cluster's reads are sent at once,
-- so a run waits for the slowest cluster, not for the sum.
describe("several distant clusters (stand-in with latency)", function()
  local H = require "fixtures.kube.harness"
  local s
  setup(function() s = H.start() end)
  teardown(function() s.stop(); cli.cleanup() end)

  it("are read at once: every request is sent before the first answer comes back", function()
    local delayed = s.url .. "/_delay1500"
    local path = H.kubeconfig(s, { doc = {
      apiVersion = "v1", kind = "Config", ["current-context"] = "a",
      clusters = json.array{ { name = "a", cluster = { server = delayed, ["certificate-authority"] = s.certs .. "/ca.crt" } },
                             { name = "b", cluster = { server = delayed, ["certificate-authority"] = s.certs .. "/ca.crt" } } },
      users = json.array{ { name = "u", user = { token = H.TOKENS.admin } } },
      contexts = json.array{ { name = "a", context = { cluster = "a", user = "u" } },
                             { name = "b", context = { cluster = "b", user = "u" } } } } })
    H.requests(s)
    local r = cli.run{ "graph", "--kubeconfig", path, "--context", "a", "--context", "b", "--now", "-o", "tree" }
    assert.are.equal(0, r.code, r.err)
    local reqs = H.requests(s)
    -- per cluster: the offerings, the nodes and the pods
    assert.are.equal(6, #reqs)
    local first, last = math.huge, 0
    for _, q in ipairs(reqs) do first, last = math.min(first, q.t), math.max(last, q.t) end
    assert.is_true(last - first < 1.5, ("the last request left %.2f s after the first"):format(last - first))
  end)
end)
