-- The cluster's offerings: parsing fluence-resources (both formats),
-- inheritance and clearing, numeric conversion, reading the ConfigMap,
-- intersection with the Go client's reasons, the configmap provider, and
-- reading it from a real kube-apiserver.
local offerings = require "fluence.offerings"
local kubeclient = require "fluence.kubeclient"
local errors = require "fluence.errors"
local cli = require "support.cli"
local envtest = require "support.envtest"

local FLUENCE = cli.slurp("spec/fixtures/kube/resources.yaml")

local function by_name(parsed)
  local t = {}
  for _, b in ipairs(parsed.backends) do t[b.name] = b end
  return t
end

describe("offerings.parse", function()
  it("reads Fluence's schema: registry, inline maps, inheritance, clearing, numbers", function()
    local p = assert(offerings.parse(FLUENCE, "resources.yaml"))
    assert.are.equal("fluence", p.format)
    local names = {}
    for i, b in ipairs(p.backends) do names[i] = b.name end
    assert.are.same({ "ionq-forte", "forte-fast", "sim-sv1", "gpu-l4" }, names)
    local b = by_name(p)
    assert.are.same({ vendor = "ionq", region = "us-east-1", price_per_task = 0.3, price_per_shot = 0.0009,
                      qubits = 36, status = "ONLINE" }, b["ionq-forte"].attrs)
    -- a named child inherits, overrides a key and clears another with ""
    assert.are.same({ vendor = "ionq", region = "us-west-2", price_per_task = 0.3, price_per_shot = 0.0009,
                      qubits = 36 }, b["forte-fast"].attrs)
    assert.are.same({ vendor = "aws", price_per_minute = 0.075, gate_set = "1e-3x" }, b["sim-sv1"].attrs)
    assert.are.same({ memory_gb = 24, cost_usd = 0.8, ["1e3"] = "1e3x", zero = 0 }, b["gpu-l4"].attrs)
    assert.are.equal("qdevice", b["ionq-forte"].type)
    -- the normalised forest keeps counts, parents and resolved attributes
    local top = p.resources[1]
    assert.are.equal("cluster", top.parent)
    assert.are.equal(1, top.count)
    assert.are.equal(8, top.with[1].count)
    assert.are.equal("qubit", top.with[1].with[1].type)
    assert.are.equal("us-east-1", top.with[1].with[1].attributes.region)
    assert.are.equal("rack0", p.resources[3].parent)
  end)

  it("reads the flat list of the Go client", function()
    local p = assert(offerings.parse("- name: a\n- name: b\n  cost_usd: '1.5'\n  tier: gold\n- name: a\n"))
    assert.are.equal("list", p.format)
    assert.are.equal(2, #p.backends)
    assert.are.same({}, p.backends[1].attrs)
    assert.are.same({ cost_usd = 1.5, tier = "gold" }, p.backends[2].attrs)
  end)

  it("accepts an empty document", function()
    assert.are.same({}, assert(offerings.parse("")).backends)
    assert.are.same({}, assert(offerings.parse("resources: []\n")).backends)
  end)

  it("converts only whole numeric strings", function()
    assert.are.equal(0.5, offerings.numeric("0.5"))
    assert.are.equal(-3, offerings.numeric("-3"))
    assert.are.equal(1000, offerings.numeric("1e3"))
    assert.are.equal(0.25, offerings.numeric(".25"))
    for _, s in ipairs{ "0x10", "1.2.3", "12abc", "inf", "nan", "", "  " } do
      assert.are.equal(s, offerings.numeric(s))
    end
  end)

  it("locates errors", function()
    local cases = {
      { "resources:\n  - name: x\n", "name:2:5: resources%[0%]%.type: required" },
      { "resources:\n  - type: a\n    attributes: nope\n", "name:3:5: resources%[0%]%.attributes: no attribute set named \"nope\"" },
      { "resources:\n  - type: a\n    count: 0\n", "name:3:5: resources%[0%]%.count: must be a positive integer" },
      { "resources:\n  - type: a\n    with:\n      - type: b\n        parent: x\n",
        "name:5:9: resources%[0%]%.with%[0%]%.parent: only allowed at the top level" },
      { "- name: a\n- tier: x\n", "name:2:3: %[1%]%.name: required" },
      { "resources: {a: 1}\n", "name:1:1: resources: must be a list" },
      { "resources: [\n", "name:%d+:%d+:" },
      { "42\n", "expected a mapping" },
    }
    for _, c in ipairs(cases) do
      local p, err = offerings.parse(c[1], "name")
      assert.is_nil(p, c[1])
      assert.matches(c[2], err)
    end
  end)
end)

describe("offerings.intersect", function()
  local provided = {
    { name = "a", attrs = { cost_usd = 1 } },
    { name = "b", attrs = { cost_usd = 2 } },
    { name = "c", attrs = {} },
  }

  it("drops what the cluster does not offer, with the Go client's reasons", function()
    local offered = assert(offerings.parse("- name: a\n- name: c\n- name: d\n"))
    local kept, dropped, notes = offerings.intersect(provided, offered)
    assert.are.equal(1, #kept)
    assert.are.equal("a", kept[1].name)
    assert.are.same({ b = "not offered by the cluster scheduler",
                      c = "offered by scheduler but no attributes available",
                      d = "offered by scheduler but no attributes available" }, dropped)
    assert.are.same({}, notes)
  end)

  it("keeps everything, with a note, when the offerings are unknown", function()
    local kept, dropped, notes = offerings.intersect(provided, nil)
    assert.are.equal(3, #kept)
    assert.are.same({}, dropped)
    assert.matches("proceeding over all provided backends", notes[1])
  end)

  it("accepts a plain list of offered names", function()
    local kept = offerings.intersect(provided, { "b" })
    assert.are.equal("b", kept[1].name)
  end)
end)

describe("the configmap provider", function()
  local provider = dofile("providers/configmap.lua")

  local function ctx(offered, shots)
    return { request = { shots = shots }, options = {}, api = { cost = require("fluence.cost"),
             cluster = { offerings = function() return offered, offered and nil or "unreachable" end } } }
  end

  it("returns the offered backends with their prices in the cost model's units", function()
    local p = assert(offerings.parse(FLUENCE))
    local out = provider.candidates(ctx(p, 100))
    local b = {}
    for _, x in ipairs(out) do b[x.name] = x.attrs end
    assert.are.equal(0.3 + 100 * 0.0009, b["ionq-forte"].cost_usd)
    assert.are.same({ 0.3, 0.0009 }, { b["ionq-forte"].cost_per_task, b["ionq-forte"].cost_per_shot })
    -- a per-minute price: cost_usd is the cost model's, once every provider ran
    assert.are.equal(0.075, b["sim-sv1"].cost_per_minute)
    assert.is_nil(b["sim-sv1"].cost_usd)
    assert.are.equal(0.8, b["gpu-l4"].cost_usd)                        -- given as is
    out = provider.candidates(ctx(p, nil))                             -- default 1000 shots
    for _, x in ipairs(out) do b[x.name] = x.attrs end
    assert.are.equal(0.3 + 1000 * 0.0009, b["ionq-forte"].cost_usd)
    local a = provider.prices({ cost_per_hour = 2 }, 1000, ctx().api)
    assert.are.same({ cost_per_hour = 2, price_per_hour = 2 }, a)      -- an alias, and no 0.05 x 2 / 60
  end)

  it("returns nothing when the offerings are unavailable", function()
    assert.are.same({}, provider.candidates(ctx(nil)))
  end)
end)

-- Reading the ConfigMap from a real kube-apiserver: Fluence's schema in
-- kube-system, the Go client's flat list (first data key) elsewhere, a
-- malformed body, 404, and 403 for a user without rights.
-- A Job in dir asking for a selection by policy, its pods on Fluence.
local function job_file(dir, policy)
  return cli.write(dir .. "/job.yaml", ([[
apiVersion: batch/v1
kind: Job
metadata:
  name: pick
  annotations:
    fluence.flux-framework.org/select-policy: "%s"
spec:
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers:
        - name: c
          image: busybox
]]):format(policy))
end

envtest.describe("offerings.fetch", function(api)
  local path, team, broken, huge
  local CM = "/api/v1/namespaces/%s/configmaps"
  local function configmap(ns, data)
    api:request("POST", CM:format(ns), { apiVersion = "v1", kind = "ConfigMap",
                                         metadata = { name = "fluence-resources" }, data = data })
  end
  setup(function()
    -- kube-system is the scheduler's default: this spec owns it while it runs
    pcall(api.request, api, "DELETE", CM:format("kube-system") .. "/fluence-resources")
    configmap("kube-system", { ["resources.yaml"] = FLUENCE })
    team, broken = api:namespace("offerings"), api:namespace("offerings-broken")
    configmap(team, { ["z-other"] = "- name: zz\n", ["a-first"] = "- name: first\n" })
    configmap(broken, { ["resources.yaml"] = "resources:\n  - name: broken\n" })
    huge = api:namespace("offerings-huge")
    configmap(huge, { ["resources.yaml"] = "resources:\n  - type: qdevice\n    name: ionq\n    with:\n" ..
                                           "      - type: qpu\n        count: 300000\n        with:\n" ..
                                           "          - type: qubit\n            count: 9\n" })
    path = api.kubeconfig
  end)
  teardown(function()
    pcall(api.request, api, "DELETE", CM:format("kube-system") .. "/fluence-resources")
    cli.cleanup()
  end)

  it("reads resources.yaml from kube-system", function()
    local p = offerings.fetch(kubeclient.new{ kubeconfig = path })
    assert.are.equal(4, #p.backends)
    assert.are.equal("resources.yaml", p.key)
  end)

  it("reads the Go client's flat list, falling back to the first data key in sorted order", function()
    local p = offerings.fetch(kubeclient.new{ kubeconfig = path }, team)
    assert.are.equal("first", p.backends[1].name)
    assert.are.equal(1, #p.backends)
  end)

  it("raises structured CLUSTER errors when unreadable or malformed, located in the ConfigMap", function()
    local ok, e = pcall(offerings.fetch, kubeclient.new{ kubeconfig = path }, "kube-public")
    assert.is_false(ok)
    assert.is_true(errors.is(e))
    assert.matches('configmaps "fluence%-resources" not found %(HTTP 404', e.message)
    ok, e = pcall(offerings.fetch, kubeclient.new{ kubeconfig = path }, broken)
    assert.is_false(ok)
    assert.are.equal("CLUSTER", e.kind)
    assert.are.equal(1, e.message:find(("%s/fluence-resources resources.yaml:2:5: resources[0].type: required")
                                         :format(broken), 1, true), e.message)
    local nobody = api:kubeconfig_for{ context = "nobody" }
    ok, e = pcall(offerings.fetch, kubeclient.new{ kubeconfig = nobody })
    assert.is_false(ok)
    assert.matches('is forbidden: User "nobody" cannot get resource "configmaps" in API group "" in the namespace ' ..
                   '"kube%-system" %(HTTP 403 Forbidden%)', e.message)
  end)

  -- counts multiply down a tree: three short lines asking for 3 M vertices
  -- are refused before any is built, naming the ConfigMap and the count
  it("refuses offerings whose trees expand past the bound when fits builds the graph", function()
    local dir = cli.tmpdir()
    local attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: ionq\n    attributes: {qubits: 9}\n")
    local job = job_file(dir, "fits")
    local r = cli.run{ "select", "-f", job, "--attributes", attrs, "--kubeconfig", path, "--fluence-ns", huge }
    assert.are.equal(4, r.code, r.err)
    assert.are.equal("", r.out)
    -- located at the count, as the ConfigMap's parse errors are
    assert.are.equal(("fluence: cluster admin: %s/fluence-resources resources.yaml:6:9: resources[0].with[0].count: " ..
                      "300000 copies of a 10-vertex tree take the graph past 250000 vertices, the most fluence " ..
                      "builds\n            count: 300000\n            ^\n"):format(huge), r.err)
  end)

  it("drives selection: cluster prices feed min-cost, unoffered backends drop", function()
    local dir = cli.tmpdir()
    local attrs = cli.write(dir .. "/attrs.yaml",
      "version: 1\nbackends:\n  - name: gpu-l4\n    attributes: {memory_gb: 24}\n" ..
      "  - name: not-in-cluster\n    attributes: {cost_usd: 0.01, memory_gb: 80}\n")
    local job = job_file(dir, "min-cost")
    local r = cli.run{ "select", "-f", job, "--attributes", attrs, "--kubeconfig", path }
    assert.are.equal(0, r.code, r.err)
    assert.matches("require%-backend: \"?sim%-sv1", r.out)     -- 0.05 * 0.075 is the cheapest
    assert.matches("dropped not%-in%-cluster: not offered by the cluster scheduler", r.err)
    r = cli.run{ "select", "-f", job, "--attributes", attrs, "--kubeconfig", path, "--fluence-ns", "kube-public" }
    assert.are.equal(0, r.code, r.err)
    assert.matches("require%-backend: \"?not%-in%-cluster", r.out)
    assert.matches('cannot read the ConfigMap kube%-public/fluence%-resources: configmaps "fluence%-resources" not found', r.err)
    r = cli.run{ "select", "-f", job, "--attributes", attrs, "--kubeconfig", path, "--fluence-ns", "kube-public",
                 "--require-offerings" }
    -- a cluster error, even raised while the configmap provider runs
    assert.are.equal(4, r.code, r.err)
    assert.matches('cannot read the ConfigMap kube%-public/fluence%-resources: configmaps "fluence%-resources" not found', r.err)
    assert.are.equal("", r.out)
  end)
end)
