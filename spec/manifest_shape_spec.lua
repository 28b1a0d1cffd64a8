-- Wrong-typed fields in a Fluence object (core/manifest_shape.c): metadata
-- as a list, annotations as a list, spec.template as a string ... are bad
-- input (exit 3) located at the field, where before the object passed
-- through unselected; any other object still passes through untouched
-- (issue 15).
local cli = require "support.cli"

local EX = cli.root .. "/examples"

describe("wrong-typed fields", function()
  local dir
  setup(function() dir = cli.tmpdir() end)
  teardown(cli.cleanup)

  local n = 0
  local function select(text)
    n = n + 1
    local path = cli.write(("%s/m%d.yaml"):format(dir, n), text)
    local r = cli.run{ "select", "-f", path, "--attributes", EX .. "/quickstart/attributes.yaml", "--offline",
                       env = { HOME = dir } }
    r.path, r.text = path, text
    return r
  end

  -- exit 3, nothing on stdout, "FILE:LINE:COL: message", the line and a caret
  local function bad(text, line, col, msg, excerpt)
    local r = select(text)
    assert.are.equal(3, r.code, r.err)
    assert.are.equal("", r.out)
    local caret = excerpt .. "\n    " .. (" "):rep(col - 1) .. "^\n"
    assert.are.equal(("fluence: %s:%d:%d: %s\n    %s"):format(r.path, line, col, msg, caret), r.err)
  end

  describe("in a Fluence object, bad input located at the field", function()
    it("a label, annotation or name kubectl does not read as a string: 1, yes (issue 31)", function()
      bad([[
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  labels:
    tier: 1
  annotations:
    fluence.flux-framework.org/select-policy: min-cost
spec:
  template:
    spec:
      schedulerName: fluence
      containers: [{name: c, image: x}]
]], 6, 11, 'metadata.labels tier: kubectl reads 1 as a number (YAML 1.1), not a string: quote it ("1")', "    tier: 1")
      bad((cli.POD:format("min-cost"):gsub("  name: p\n", "  name: p\n  namespace: on\n")), 5, 14,
          'metadata.namespace: kubectl reads on as a boolean (YAML 1.1), not a string: quote it ("on")', "  namespace: on")
      bad((cli.POD:format("min-cost"):gsub("spec:\n", "    enabled: yes\nspec:\n")), 7, 14,
          'metadata.annotations enabled: kubectl reads yes as a boolean (YAML 1.1), not a string: quote it ("yes")',
          "    enabled: yes")
    end)

    it("metadata as a list (the object targets Fluence by its scheduler)", function()
      bad([[
apiVersion: v1
kind: Pod
metadata:
  - name: p
spec:
  schedulerName: fluence
  containers: [{name: c, image: x}]
]], 4, 3, "metadata must be a mapping, not a sequence", "  - name: p")
    end)

    it("metadata.annotations as a list", function()
      bad([[
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: ["fluence.flux-framework.org/select-policy=min-cost"]
spec:
  schedulerName: fluence
  containers: [{name: c, image: x}]
]], 5, 16, "metadata.annotations must be a mapping, not a sequence",
        '  annotations: ["fluence.flux-framework.org/select-policy=min-cost"]')
    end)

    it("spec.template as a string (a group label makes it a Fluence object)", function()
      bad([[
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  labels: {fluence.flux-framework.org/group: g}
  annotations: {fluence.flux-framework.org/select-policy: min-cost}
spec:
  template: "spec: {schedulerName: fluence}"
]], 8, 13, "spec.template must be a mapping, not a string", '  template: "spec: {schedulerName: fluence}"')
    end)

    it("spec.template as a string in an object asking for selection", function()
      bad([[
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  annotations:
    fluence.flux-framework.org/select-policy: min-cost
spec:
  template: oops
]], 8, 13, "spec.template must be a mapping, not a string", "  template: oops")
    end)

    it("a select-policy that is not a string", function()
      bad([[
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    fluence.flux-framework.org/select-policy: [min-cost, prefer:a]
spec:
  schedulerName: fluence
  containers: [{name: c, image: x}]
]], 6, 47, "metadata.annotations fluence.flux-framework.org/select-policy must be a string, not a sequence",
        "    fluence.flux-framework.org/select-policy: [min-cost, prefer:a]")
    end)

    it("a pod template's labels, metadata and containers", function()
      bad([[
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  annotations: {fluence.flux-framework.org/select-policy: min-cost}
spec:
  template:
    metadata:
      labels: fluence
    spec:
      schedulerName: fluence
      containers: [{name: c, image: x}]
]], 9, 15, "spec.template.metadata.labels must be a mapping, not a string", "      labels: fluence")
      bad([[
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  schedulerName: fluence
  containers: {name: c, image: x}
]], 6, 15, "spec.containers must be a sequence (a list), not a mapping", "  containers: {name: c, image: x}")
      bad([[
apiVersion: batch/v1
kind: CronJob
metadata:
  name: c
  annotations: {fluence.flux-framework.org/select-policy: min-cost}
spec:
  jobTemplate:
    spec:
      template: 42
]], 9, 17, "spec.jobTemplate.spec.template must be a mapping, not a number or boolean", "      template: 42")
    end)
  end)

  describe("in any other object, untouched", function()
    for name, text in pairs{
      ["a ConfigMap with metadata as a list"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: [a, b]\ndata: {}\n",
      ["a Deployment for another scheduler with annotations as a list"] = [[
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  annotations: [a, b]
spec:
  template:
    spec:
      containers: [{name: c, image: x}]
]],
      ["a Job with spec.template a string and no select-policy"] = "kind: Job\nmetadata: {name: j}\nspec:\n  template: oops\n",
      ["a Pod for another scheduler whose select-policy is a list"] = [[
kind: Pod
metadata:
  name: p
  annotations: {fluence.flux-framework.org/select-policy: [a]}
spec:
  containers: [{name: c, image: x}]
]],
    } do
      it(name, function()
        local r = select(text)
        assert.are.equal(0, r.code, r.err)
        assert.are.equal(text, r.out)
      end)
    end
  end)
end)
