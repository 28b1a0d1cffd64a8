-- Fluence-shaped jobspecs from manifests (`fluence jobspec`): Jobs, Pods and
-- groups, the pod requests summed over containers, virtual resource types and
-- the require-<attr> pins.
local cli = require "support.cli"
local json = require "fluence.json"
local match = require "fluence.match"

local function run(manifest)
  local dir = cli.tmpdir()
  cli.write(dir .. "/m.yaml", manifest)
  local r = cli.run { "jobspec", "-f", dir .. "/m.yaml", "-o", "json" }
  cli.cleanup()
  assert.are.equal(0, r.code, r.err)
  return json.decode(r.out)
end

local function resources(text)
  local t = assert(match.parse_jobspec(text, "generated"))
  return t.resources[1], t.attributes.system.constraints.properties
end

describe("fluence jobspec", function()
  it("sizes a Job's group from parallelism and sums its containers", function()
    local g = run [[
apiVersion: batch/v1
kind: Job
metadata:
  name: j
spec:
  parallelism: 3
  template:
    metadata:
      labels: {fluence.flux-framework.org/group: g1}
    spec:
      schedulerName: fluence
      containers:
        - name: a
          image: x
          resources: {requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"}}
        - name: b
          image: x
          resources: {requests: {cpu: 500m, memory: 512Mi}}
]]
    assert.are.equal(1, #g)
    assert.are.equal("g1", g[1].group)
    assert.are.equal(3, g[1].pods)
    local slot, props = resources(g[1].compute)
    assert.are.same({ type = "slot", count = 3, label = "default", with = {
      { type = "core", count = 2 }, { type = "memory", count = 1536 }, { type = "gpu", count = 1 } } }, slot)
    assert.are.same({ "virtual=false" }, props)
    assert.are.same({}, g[1].devices)
  end)

  it("takes a Pod's group size from the annotation and pins devices", function()
    local g = run [[
apiVersion: v1
kind: Pod
metadata:
  name: p
  labels: {fluence.flux-framework.org/group: qg}
  annotations:
    fluence.flux-framework.org/group-size: "2"
    fluence.flux-framework.org/require-backend: ionq
    fluence.flux-framework.org/require-region: us-east-1
spec:
  schedulerName: fluence
  containers:
    - name: q
      image: x
      resources: {requests: {fluxion.flux-framework.org/qpu: "2", fluxion.flux-framework.org/anneal: "1"}}
]]
    assert.are.equal(2, g[1].pods)
    local slot = resources(g[1].compute)
    assert.are.same({ { type = "core", count = 1 } }, slot.with) -- at least one core
    assert.are.equal(2, #g[1].devices)
    assert.are.equal("anneal", g[1].devices[1].type)
    local dslot, dprops = resources(g[1].devices[2].jobspec)
    assert.are.same({ type = "slot", count = 1, label = "default", with = { { type = "node", count = 2 } } }, dslot)
    assert.are.same({ "virtual=true", "class=qpu", "fluxion.flux-framework.org/backend=ionq",
                      "fluxion.flux-framework.org/region=us-east-1" }, dprops)
  end)

  it("handles the legacy pod-group label, several documents and non-Fluence objects", function()
    local g = run [[
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {a: b}
---
apiVersion: v1
kind: Pod
metadata:
  name: legacy
  labels:
    fluence.flux-framework.org/pod-group: old
    fluence.flux-framework.org/group-size: "4"
spec:
  schedulerName: fluence
  containers:
    - {name: a, image: x, resources: {requests: {cpu: "2"}}}
]]
    assert.are.equal(1, #g)
    assert.are.equal("old", g[1].group)
    assert.are.equal(4, g[1].pods)
    assert.are.equal(4, (resources(g[1].compute)).count)
  end)

  it("prints YAML documents by default and refuses a missing -f", function()
    local dir = cli.tmpdir()
    cli.write(dir .. "/p.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  schedulerName: fluence\n" ..
                                 "  containers: [{name: a, image: x}]\n")
    local r = cli.run { "jobspec", "-f", dir .. "/p.yaml" }
    assert.are.equal(0, r.code, r.err)
    assert.matches("^%-%-%-\n# .-p%.yaml:1:1 Pod default/p %(group %-, 1 pod%): compute\nversion: 9999\n", r.out)
    assert.are.equal(2, cli.run { "jobspec" }.code)
    cli.cleanup()
  end)
end)
