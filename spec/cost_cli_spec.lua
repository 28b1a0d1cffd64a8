-- One cost model, through bin/fluence: every price with its unit, cost_usd
-- the cost of this workload (hourly price x pods x duration), the duration
-- from the annotation or the object's activeDeadlineSeconds, explain showing
-- it all, and the ConfigMap case of issue 28 against a real kube-apiserver.
local cli = require "support.cli"
local envtest = require "support.envtest"
local json = require "fluence.json"
local yaml = require "fluence.yaml"

local JOB = [[
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations:
    fluence.flux-framework.org/select-policy: "min-cost"
%s
spec:
  parallelism: %d
%s
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers: [{name: c, image: x}]
]]

local function job(dir, o)
  o = o or {}
  local ann = o.duration and ('    fluence.flux-framework.org/duration: "%s"'):format(o.duration) or ""
  local deadline = o.deadline and ("  activeDeadlineSeconds: %d"):format(o.deadline) or ""
  return cli.write(dir .. "/job.yaml", JOB:format(ann, o.pods or 1, deadline))
end

local function chosen(out)
  local doc = yaml.decode(out)
  return doc.metadata.annotations["fluence.flux-framework.org/require-backend"],
         json.decode(doc.metadata.annotations["fluence.flux-framework.org/select-result"])
end

describe("the cost model on the command line", function()
  local dir, attrs
  setup(function()
    dir = cli.tmpdir()
    attrs = cli.write(dir .. "/attrs.yaml", [[
version: 1
backends:
  - name: gpu-big          # cheap per hour, but four times the GPU-hours
    attributes: {price_per_gpu_hour: 1.0, memory_gb: 80}
  - name: gpu-l4
    attributes: {price_per_hour: 2.5, memory_gb: 24}
]])
  end)
  teardown(cli.cleanup)

  it("estimates cost_usd for the workload: pods x the duration annotation", function()
    local r = cli.run{ "select", "-f", job(dir, { pods = 3, duration = "90m" }), "--attributes", attrs, "--offline" }
    assert.are.equal(0, r.code, r.err)
    local name, audit = chosen(r.out)
    assert.are.equal("gpu-big", name)                       -- 1.0 x 1 GPU x 3 x 1.5 = 4.5 < 2.5 x 3 x 1.5
    assert.are.equal(4.5, audit.candidates[1].attributes.cost_usd)
    assert.are.equal("1 USD/GPU-hour x 1 GPU x 3 pods x 1.5 h (the duration annotation)",
                     audit.candidates[1].strings.cost_basis)
  end)

  it("multiplies a GPU-hour price by the GPUs each pod asks for", function()
    local d = cli.tmpdir()
    local text = JOB:format("", 1, ""):gsub("containers: %[{name: c, image: x}%]",
      "containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: 4}, limits: {nvidia.com/gpu: 4}}}]")
    local r = cli.run{ "select", "-f", cli.write(d .. "/job.yaml", text), "--attributes", attrs, "--offline" }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("gpu-l4", (chosen(r.out)))               -- 2.5 < 1.0 x 4 GPUs
  end)

  it("takes the Job's activeDeadlineSeconds when there is no duration annotation", function()
    local r = cli.run{ "explain", "-f", job(dir, { pods = 2, deadline = 7200 }), "--attributes", attrs, "--offline" }
    assert.are.equal(0, r.code, r.err)
    assert.matches("prices (workload: 2 pods, 2 h (the object's activeDeadlineSeconds)):", r.out, 1, true)
    assert.matches("  gpu-l4: price_per_hour 2.5 USD/hour (file); cost_usd 10 = 2.5 USD/hour x 2 pods x 2 h " ..
                   "(the object's activeDeadlineSeconds)", r.out, 1, true)
  end)

  it("says when it assumed one hour", function()
    local r = cli.run{ "explain", "-f", job(dir), "--attributes", attrs, "--offline", "-o", "json" }
    assert.are.equal(0, r.code, r.err)
    local doc = json.decode(r.out)
    assert.are.same({ pods = 1, shots = 1000, seconds = 3600, duration_from = "default" }, doc.objects[1].workload)
    r = cli.run{ "explain", "-f", job(dir), "--attributes", attrs, "--offline" }
    assert.matches("(no duration given: one hour)", r.out, 1, true)
  end)

  it("refuses a duration that is not one, located at the annotation", function()
    local r = cli.run{ "select", "-f", job(dir, { duration = "a while" }), "--attributes", attrs, "--offline" }
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    assert.matches("job.yaml:7:%d+: fluence.flux%-framework.org/duration: \"a while\" is not a duration", r.err)
    assert.matches("\n +%^", r.err)
  end)

  it("keeps the Go rule for per-minute prices when no duration is stated, and uses it when one is", function()
    local q = cli.write(dir .. "/q.yaml", [[
version: 1
backends:
  - name: sv1
    cost_per_minute: 0.075
  - name: qpu
    cost_per_task: 0.3
    cost_per_shot: 0.0001
]])
    local r = cli.run{ "select", "-f", job(dir), "--attributes", q, "--offline" }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("sv1", (chosen(r.out)))                 -- 0.05 x 0.075 < 0.3 + 1000 x 0.0001
    r = cli.run{ "select", "-f", job(dir, { duration = "10m" }), "--attributes", q, "--offline" }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("qpu", (chosen(r.out)))                 -- 10 x 0.075 > 0.4
  end)
end)

-- Issue 28: a ConfigMap's price_per_hour: "240" became cost_usd 0.2 (the Go
-- client's 0.05 x price / 60, meant for quantum tasks) and beat an L4 whose
-- cost_usd was 0.55; fluence chose the 240-an-hour backend.
envtest.describe("cluster prices in the cost model's units", function(api)
  local ns, dir, path
  local function configmap(body)
    pcall(api.request, api, "DELETE", ("/api/v1/namespaces/%s/configmaps/fluence-resources"):format(ns))
    api:request("POST", ("/api/v1/namespaces/%s/configmaps"):format(ns), { apiVersion = "v1", kind = "ConfigMap",
      metadata = { name = "fluence-resources" }, data = { ["resources.yaml"] = body } })
  end
  setup(function()
    ns = api:namespace("prices")
    dir = cli.tmpdir()
    path = api.kubeconfig
  end)
  teardown(cli.cleanup)

  it("does not let a per-hour price pass for a per-task one", function()
    configmap([[
resources:
  - {type: gpu, name: gpu-big, attributes: {price_per_hour: "240"}}
  - {type: gpu, name: gpu-l4, attributes: {cost_usd: "0.55"}}
]])
    local r = cli.run{ "select", "-f", job(dir), "--kubeconfig", path, "--fluence-ns", ns }
    assert.are.equal(1, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches('policy "min-cost": cannot compare cost_usd: one is stated without a unit (gpu-l4), ' ..
                   "one is estimated for this workload from hourly prices (gpu-big)", r.err, 1, true)
  end)

  it("chooses the cheaper hour when both are priced by the hour", function()
    configmap([[
resources:
  - {type: gpu, name: gpu-big, attributes: {price_per_hour: "240"}}
  - {type: gpu, name: gpu-l4, attributes: {cost_per_hour: "0.55"}}
]])
    local r = cli.run{ "select", "-f", job(dir, { pods = 2 }), "--kubeconfig", path, "--fluence-ns", ns }
    assert.are.equal(0, r.code, r.err)
    local name, audit = chosen(r.out)
    assert.are.equal("gpu-l4", name)
    assert.are.equal(1.1, audit.candidates[1].attributes.cost_usd)
    assert.matches("dropped gpu-big: cost_usd 480 is not within 0 of the best (1.1)", r.err, 1, true)
  end)
end)
