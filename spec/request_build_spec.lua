-- lua/fluence/request.lua's build runs once per Fluence object (10,000 times
-- for a large stream), so it was rewritten to allocate less (issue 30): what
-- it reads, and in which order of precedence, must stay as it was.
local manifest = require "fluence.manifest"
local request = require "fluence.request"

local P = "fluence.flux-framework.org/"

-- The request of the only object of a one-document manifest.
local function build(yaml)
  local s = assert(manifest.parse(yaml, "r.yaml"))
  local obj = s:objects()[1]
  return request.build(obj, "r.yaml:1:1", s)
end

local JOB = [[
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  annotations:
    fluence.flux-framework.org/select-policy: min-cost
%s
  labels:
%s
spec:
  parallelism: 3
  template:
    metadata:
      annotations:
%s
      labels:
%s
    spec:
      schedulerName: fluence
      containers:
      - name: c
        image: x
        resources:
          requests: {cpu: "1500m", memory: 1Gi%s}
]]

local function job(ann, labels, tann, tlabels, extra)
  local function block(lines, indent)
    if #lines == 0 then return indent .. "x.example/unused: \"1\"" end
    local out = {}
    for i, l in ipairs(lines) do out[i] = indent .. l end
    return table.concat(out, "\n")
  end
  return JOB:format(block(ann, "    "), block(labels, "    "), block(tann, "        "), block(tlabels, "        "),
                    extra or "")
end

describe("request.build", function()
  it("takes the group size from the object's annotations, then the template's, then the labels", function()
    local r = build(job({ P .. 'group-size: "4"' }, { P .. 'group-size: "5"' }, { P .. 'group-size: "6"' },
                        { P .. 'group-size: "7"' }))
    assert.are.equal(4, r.group.size)
    r = build(job({}, { P .. 'group-size: "5"' }, { P .. 'group-size: "6"' }, { P .. 'group-size: "7"' }))
    assert.are.equal(6, r.group.size)
    r = build(job({}, { P .. 'group-size: "5"' }, {}, { P .. 'group-size: "7"' }))
    assert.are.equal(5, r.group.size)
    r = build(job({}, {}, {}, { 'fluxnetes.group-size: "7"' }))
    assert.are.equal(7, r.group.size)
    -- in one table the first key of the list wins over a later one
    r = build(job({ 'fluxnetes.group-size: "9"', P .. 'group-size: "8"' }, {}, {}, {}))
    assert.are.equal(8, r.group.size)
    -- none: the object's parallelism
    r = build(job({}, {}, {}, {}))
    assert.are.equal(3, r.group.size)
    assert.are.equal(3, r.pods)
  end)

  it("takes the group name from the object's labels, then the template's, in the list's order", function()
    local r = build(job({}, { 'fluxnetes.group-name: a', P .. 'pod-group: b' }, {}, { P .. "group: c" }))
    assert.are.equal("b", r.group.name)
    r = build(job({}, {}, {}, { 'scheduling.x-k8s.io/pod-group: d', "fluxnetes.group-name: e" }))
    assert.are.equal("d", r.group.name)
    r = build(job({}, {}, {}, {}))
    assert.is_nil(r.group.name)
  end)

  it("sums the pod's requests and marks only what a jobspec cannot count", function()
    local r = build(job({}, {}, {}, {}))
    assert.are.same({ cpu = 2, memory = 1073741824, gpu = 0, virtual = {} }, r.pod)
    r = build(job({}, {}, {}, {}, ', fluxion.flux-framework.org/zz: "5000000000", fluxion.flux-framework.org/aa: "1"'))
    assert.are.same({ "zz" }, r.pod.saturated)
    assert.are.same({ zz = 5000000000, aa = 1 }, r.pod.virtual)
    r = build(job({}, {}, {}, {}, ', nvidia.com/gpu: "5000000000", fluxion.flux-framework.org/b: "4294967296"'))
    assert.are.same({ "gpu", "b" }, r.pod.saturated)
  end)
end)
