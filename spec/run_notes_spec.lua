-- Notes about the whole run (the cluster's offerings unknown, a provider
-- without credentials) are said once on stderr per run and cluster, before
-- the first selection they concern; every object's audit still records them.
-- Notes about one object stay with that object.
local cli = require "support.cli"
local json = require "fluence.json"
local yaml = require "fluence.yaml"

local EX = cli.root .. "/examples"
local P = "fluence.flux-framework.org/"

-- n Fluence Pods in one stream; extra: more annotation lines
local function pods(n, extra)
  local docs = {}
  for i = 1, n do
    docs[i] = ([[
apiVersion: v1
kind: Pod
metadata:
  name: p%d
  annotations:
    fluence.flux-framework.org/select-policy: "min-cost"
%s
spec:
  schedulerName: fluence
  containers: [{name: c, image: x}]
]]):format(i, extra or "")
  end
  return table.concat(docs, "---\n")
end

local function count(text, plain)
  local n, at = 0, 1
  while true do
    local s, e = text:find(plain, at, true)
    if not s then return n end
    n, at = n + 1, e + 1
  end
end

describe("run-wide notes", function()
  local dir
  before_each(function() dir = cli.tmpdir() end)
  after_each(cli.cleanup)

  local function run(args)
    args.env = { HOME = "/nonexistent", KUBECONFIG = false, AWS_ACCESS_KEY_ID = false,
                 AWS_SECRET_ACCESS_KEY = false, AWS_PROFILE = false, AWS_SHARED_CREDENTIALS_FILE = false,
                 AWS_CONFIG_FILE = false }
    return cli.run(args)
  end

  it("say once that the cluster's offerings are unknown, over 300 objects; every audit keeps it", function()
    local job = cli.write(dir .. "/many.yaml", pods(300))
    local r = run{ "select", "-f", job, "--attributes", EX .. "/quickstart/attributes.yaml" }
    assert.are.equal(0, r.code, r.err)
    local NOTE = "scheduler offerings unknown: cannot read the ConfigMap kube-system/fluence-resources: "
    assert.are.equal(1, count(r.err, NOTE), r.err:sub(1, 2000))
    assert.matches("^note: scheduler offerings unknown: [^\n]-; selecting over all provided backends\n" ..
                   'selected backend "gpu%-t4" for Pod/p1 ', r.err)
    assert.are.equal(300, count(r.err, 'selected backend "gpu-t4"'))
    assert.are.equal(0, count(r.err, "  note: "))
    local docs = assert(yaml.decode_all(r.out))
    assert.are.equal(300, #docs)
    for _, d in ipairs(docs) do
      local audit = json.decode(d.metadata.annotations[P .. "select-result"])
      assert.matches("^scheduler offerings unknown", audit.notes[1])
    end
  end)

  it("explain's table shows a run-wide note once, with the first object; its JSON keeps it per object", function()
    local job = cli.write(dir .. "/three.yaml", pods(3))
    local NOTE = "note: scheduler offerings unknown: "
    local r = run{ "explain", "-f", job, "--attributes", EX .. "/quickstart/attributes.yaml" }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(1, count(r.out, NOTE), r.out)
    local first, second = r.out:find("Pod/p2", 1, true), r.out:find(NOTE, 1, true)
    assert.truthy(second < first, "the note belongs to the first object")
    r = run{ "explain", "-o", "json", "-f", job, "--attributes", EX .. "/quickstart/attributes.yaml" }
    assert.are.equal(0, r.code, r.err)
    local objects = json.decode(r.out).objects
    assert.are.equal(3, #objects)
    for _, o in ipairs(objects) do assert.matches("^scheduler offerings unknown", o.notes[1]) end
  end)

  it("say once that braket-live has no credentials; per-object notes stay per object", function()
    local text = assert(cli.slurp(EX .. "/quantum-cost-then-queue/job.yaml"))
    local jobs = {}
    for i = 1, 3 do
      jobs[i] = text:gsub("name: qaoa%-sweep", "name: qaoa-" .. i)
                    :gsub("group: qaoa", "group: qaoa-" .. i)
    end
    -- and three objects asking for a provider family nobody has
    local job = cli.write(dir .. "/jobs.yaml", table.concat(jobs, "\n---\n") .. "\n---\n" ..
                          pods(3, "    fluence.flux-framework.org/select-backend: nope"))
    local r = run{ "select", "-f", job, "--attributes", EX .. "/quantum-cost-then-queue/attributes.yaml",
                   "--attributes", EX .. "/quickstart/attributes.yaml", "--offline" }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(1, count(r.err, "braket-live: no AWS credentials"), r.err)
    assert.matches("^note: braket%-live: no AWS credentials: [^\n]*; devices marked UNKNOWN\nselected backend ", r.err)
    assert.are.equal(3, count(r.err, '  note: select-backend "nope": no provider of that family; ignored\n'))
    local docs = assert(yaml.decode_all(r.out))
    for i = 1, 3 do
      local audit = json.decode(docs[i].metadata.annotations[P .. "select-result"])
      assert.matches("^braket%-live: no AWS credentials", audit.notes[1])
    end
  end)
end)
