-- A select-policy on a workload's pod template (spec.template.metadata.
-- annotations, where many users put scheduler annotations) is honoured like
-- one on the object; the object's wins when both are present; the pin goes
-- to both places (issue 15).
local cli = require "support.cli"
local yaml = require "fluence.yaml"

local P = "fluence.flux-framework.org/"
local EX = cli.root .. "/examples"

local function job(object_ann, template_ann)
  return ([[
apiVersion: batch/v1
kind: Job
metadata:
  name: train%s
spec:
  parallelism: 2
  template:
    metadata:
      labels:
        app: train%s
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers:
        - name: worker
          image: trainer:latest
]]):format(object_ann and ("\n  annotations:\n" .. object_ann) or "",
           template_ann and ("\n      annotations:\n" .. template_ann) or "")
end

describe("a select-policy on the pod template", function()
  local dir
  setup(function() dir = cli.tmpdir() end)
  teardown(cli.cleanup)

  local n = 0
  local function run(verb, text, ...)
    n = n + 1
    local path = cli.write(("%s/job%d.yaml"):format(dir, n), text)
    local args = { verb, "-f", path, "--attributes", EX .. "/quickstart/attributes.yaml", "--offline",
                   env = { HOME = dir } }
    for _, a in ipairs{ ... } do args[#args + 1] = a end
    return cli.run(args)
  end

  it("is honoured: the Job is selected and pinned on the object and the template", function()
    local r = run("select", job(nil, "        " .. P .. "select-policy: max-cost\n"))
    assert.are.equal(0, r.code, r.err)
    assert.matches('selected backend "gpu-a100" for Job/train (policy "max-cost")', r.err, 1, true)
    local doc = yaml.decode(r.out)
    assert.are.equal("gpu-a100", doc.metadata.annotations[P .. "require-backend"])
    assert.are.equal("gpu-a100", doc.spec.template.metadata.annotations[P .. "require-backend"])
    assert.are.equal("max-cost", doc.spec.template.metadata.annotations[P .. "select-policy"])
    -- the audit lives on the object only (issue 13: templates get only the pin)
    assert.truthy(doc.metadata.annotations[P .. "select-result"])
    assert.is_nil(doc.spec.template.metadata.annotations[P .. "select-result"])
  end)

  it("reads the template's other select-* annotations with it", function()
    local r = run("select", job(nil, "        " .. P .. "select-policy: max-cost\n" ..
                                     "        " .. P .. "select-candidates: gpu-l4, gpu-t4\n"))
    assert.are.equal(0, r.code, r.err)
    assert.matches('selected backend "gpu-l4"', r.err, 1, true)
  end)

  it("loses to the object's when both are present", function()
    local r = run("select", job("    " .. P .. "select-policy: min-cost\n",
                                "        " .. P .. "select-policy: max-cost\n"))
    assert.are.equal(0, r.code, r.err)
    assert.matches('selected backend "gpu-t4" for Job/train (policy "min-cost")', r.err, 1, true)
  end)

  it("leaves a pin on the template alone unless --force-select", function()
    local text = job(nil, "        " .. P .. "select-policy: max-cost\n" ..
                          "        " .. P .. "require-backend: gpu-l4\n")
    local r = run("select", text)
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(text, r.out)
    assert.matches('note: Job/train already pinned to "gpu-l4"; skipping selection', r.err, 1, true)
    r = run("select", text, "--force-select")
    assert.are.equal("gpu-a100", yaml.decode(r.out).spec.template.metadata.annotations[P .. "require-backend"])
  end)

  it("is explained like one on the object", function()
    local r = run("explain", job(nil, "        " .. P .. "select-policy: max-cost\n"), "-o", "json")
    assert.are.equal(0, r.code, r.err)
    assert.matches('"chosen": *"gpu%-a100"', r.out)
  end)

  it("is ignored on the template of an object that does not target Fluence", function()
    local text = job(nil, "        " .. P .. "select-policy: max-cost\n"):gsub("      schedulerName: fluence\n", "")
    local r = run("select", text)
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(text, r.out)
  end)

  it("is said in --help", function()
    local r = cli.run{ "select", "--help" }
    assert.matches("else from its Fluence pod template (spec.template.metadata.annotations):\n" ..
                   "when both have one, the object's wins.", r.out, 1, true)
  end)
end)
