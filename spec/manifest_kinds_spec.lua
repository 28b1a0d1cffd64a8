-- Where pods are (issue 31): the known kinds' table (core/manifest_kinds.c,
-- manifest.kinds()), the one docs/kubernetes.md prints; pod templates found
-- by shape in any other kind; and a warning, never silence, where a
-- schedulerName: fluence has no pod fluence can pin.
local cli = require "support.cli"
local manifest = require "fluence.manifest"

local PIN = "fluence.flux-framework.org/require-backend"
local POLICY = "fluence.flux-framework.org/select-policy"

local function objects(text)
  return assert(manifest.parse(text, "t.yaml")):objects()
end

local function paths(o)
  local out = {}
  for _, t in ipairs(o.templates) do
    out[#out + 1] = t.path .. (t.targets_fluence and " (fluence)" or "")
  end
  return out
end

describe("the known kinds", function()
  it("are the table docs/kubernetes.md shows (tools/gen-kinds-doc.lua)", function()
    local p = io.popen("lua5.4 " .. cli.quote(cli.root .. "/tools/gen-kinds-doc.lua") .. " --print")
    local want = p:read("a")
    p:close()
    local doc = assert(cli.slurp(cli.root .. "/docs/kubernetes.md"))
    assert.truthy(doc:find(want, 1, true),
                  "docs/kubernetes.md's kinds table is out of date: make && lua5.4 tools/gen-kinds-doc.lua")
  end)

  it("are sorted by group and kind, each once, each with a pod", function()
    local last = ""
    for _, k in ipairs(manifest.kinds()) do
      local key = k.group .. "\0" .. k.kind
      assert.is_true(key > last, key)
      last = key
      assert.is_true(#k.pods > 0)
      assert.is_string(k.source)
    end
  end)

  it("find a Volcano Job's task templates, Fluence's through the job's own scheduler", function()
    local o = objects([[
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: j
  annotations: {fluence.flux-framework.org/select-policy: min-cost}
spec:
  schedulerName: fluence
  tasks:
  - name: a
    replicas: 2
    template: {spec: {containers: [{name: c, image: x}]}}
  - name: b
    template: {spec: {schedulerName: default-scheduler, containers: [{name: c, image: x}]}}
]])[1]
    assert.are.same({ "spec.tasks[0].template (fluence)", "spec.tasks[1].template" }, paths(o))
    assert.are.equal(2, o.templates[1].replicas)
    assert.is_true(o.wants_selection)
    assert.are.same({}, o.unpinned)
  end)

  it("find an Argo Workflow's podMetadata (created for the pin) and a template naming its own scheduler", function()
    local text = [[
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  name: w
  annotations:
    fluence.flux-framework.org/select-policy: min-cost
spec:
  entrypoint: main
  templates:
  - name: main
    schedulerName: fluence
    container: {image: busybox}
  - name: other
    container: {image: busybox}
]]
    local o = objects(text)[1]
    assert.are.same({ "spec", "spec.templates[0] (fluence)", "spec.templates[1]" }, paths(o))
    assert.is_true(o.wants_selection)
    local s = assert(manifest.parse(text, "w.yaml"))
    assert(s:set_annotations(1, { [PIN] = "gpu-l4" }))
    local out = s:render()
    assert.truthy(out:find("    schedulerName: fluence\n    container: {image: busybox}\n    metadata:\n      annotations:\n" ..
                           "        " .. PIN .. ": gpu-l4\n  - name: other\n", 1, true), out)
    -- the workflow-level scheduler: spec.podMetadata, made when absent
    s = assert(manifest.parse((text:gsub("  entrypoint: main\n", "  entrypoint: main\n  schedulerName: fluence\n")), "w.yaml"))
    assert(s:set_annotations(1, { [PIN] = "gpu-l4" }, "templates"))
    out = s:render()
    assert.truthy(out:find("spec:\n  podMetadata:\n    annotations:\n      " .. PIN .. ": gpu-l4\n", 1, true), out)
  end)

  it("find LeaderWorkerSet's leader and worker templates, and a RayJob's submitter", function()
    local lws = objects([[
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: l}
spec:
  replicas: 3
  leaderWorkerTemplate:
    leaderTemplate: {spec: {schedulerName: fluence, containers: [{name: c, image: x}]}}
    workerTemplate: {spec: {schedulerName: fluence, containers: [{name: c, image: x}]}}
]])[1]
    assert.are.same({ "spec.leaderWorkerTemplate.leaderTemplate (fluence)",
                      "spec.leaderWorkerTemplate.workerTemplate (fluence)" }, paths(lws))
    assert.are.equal(3, lws.templates[2].replicas)
    local ray = objects([[
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: r}
spec:
  rayClusterSpec:
    headGroupSpec: {template: {spec: {containers: [{name: h, image: x}]}}}
  submitterPodTemplate: {spec: {schedulerName: fluence, containers: [{name: s, image: x}]}}
]])[1]
    assert.are.same({ "spec.rayClusterSpec.headGroupSpec.template", "spec.submitterPodTemplate (fluence)" }, paths(ray))
  end)

  it("read a known kind at its paths only; any other kind by shape, under any key", function()
    -- a Deployment's spec.template is its only pod template
    local d = objects([[
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template: {spec: {containers: [{name: c, image: x}]}}
  extra: {spec: {containers: [{name: c, image: x}]}}
]])[1]
    assert.are.same({ "spec.template" }, paths(d))
    local x = objects([[
apiVersion: example.com/v1
kind: Trainer
metadata: {name: t}
spec:
  chief: {metadata: {labels: {a: b}}, spec: {schedulerName: fluence, containers: [{name: c, image: x}]}}
  pools:
  - {replicas: 4, worker: {spec: {schedulerName: fluence, containers: [{name: c, image: x}]}}}
]])[1]
    assert.are.same({ "spec.chief (fluence)", "spec.pools[0].worker (fluence)" }, paths(x))
    assert.are.equal(4, x.templates[2].replicas)
  end)

  it("say where a schedulerName: fluence has no pod to pin, for an object asking for a selection", function()
    local text = [[
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata:
  name: pi
  annotations:
    fluence.flux-framework.org/select-policy: min-cost
spec:
  driver: {schedulerName: fluence, cores: 1}
  executor: {schedulerName: fluence, instances: 2}
]]
    local o = objects(text)[1]
    assert.is_false(o.wants_selection)
    assert.are.same({ "spec.driver.schedulerName", "spec.executor.schedulerName" },
                    { o.unpinned[1].path, o.unpinned[2].path })
    -- without a select-policy, nothing was asked: nothing to say
    assert.are.same({}, objects((text:gsub("  annotations:\n    [^\n]*\n", "")))[1].unpinned)
    -- select says so on stderr, without -v, and passes the object through
    local dir = cli.tmpdir()
    local path = cli.write(dir .. "/spark.yaml", text)
    local r = cli.run{ "select", "-f", path, "--offline", env = { HOME = dir } }
    -- explain says it too (its table has no room for it)
    local e = cli.run{ "explain", "-f", path, "--offline", env = { HOME = dir } }
    cli.cleanup()
    assert.are.equal(0, e.code, e.err)
    assert.are.equal(r.err, e.err)
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(text, r.out)
    assert.are.equal(("warning: %s:1:1: SparkApplication/pi: spec.driver.schedulerName is fluence, but fluence " ..
                      "finds no pod there to pin (a pod template is a mapping whose spec has a containers list; " ..
                      "docs/kubernetes.md lists where known kinds keep theirs): its pods get no require-backend\n"):format(path) ..
                     ("warning: %s:1:1: SparkApplication/pi: spec.executor.schedulerName is fluence, but fluence " ..
                      "finds no pod there to pin (a pod template is a mapping whose spec has a containers list; " ..
                      "docs/kubernetes.md lists where known kinds keep theirs): its pods get no require-backend\n"):format(path),
                     r.err)
  end)

  it("leave no warning where every schedulerName: fluence is a pod's", function()
    for _, f in ipairs{ "volcano/fluence-mpi.yaml", "argo/fluence-workflow.yaml", "kuberay/fluence-rayjob.yaml" } do
      for _, o in ipairs(objects(assert(cli.slurp(cli.root .. "/spec/fixtures/realworld/" .. f)))) do
        assert.are.same({}, o.unpinned, f)
        assert.is_true(o.wants_selection, f)
        assert.is_string(o.annotations[POLICY])
      end
    end
  end)
end)
