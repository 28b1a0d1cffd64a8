-- `fluence diff` (issue 27, point 6), against two real API servers: per
-- context, what apply would create, change, move or leave, from a server
-- dry run, as a unified diff on stdout and a plan on stderr; exit 0 for no
-- differences, 1 for differences, more for an error (as kubectl diff).
local json = require "fluence.json"
local cli = require "support.cli"
local envtest = require "support.envtest"

envtest.describe("fluence diff", function(east)
  local west = assert(envtest.get("west"))
  local dir, ns, kubeconfig, attrs

  setup(function()
    dir = cli.tmpdir()
    ns = "diffing"
    kubeconfig = envtest.contexts(dir .. "/config", ns, { { "east", east }, { "west", west } })
    attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-a\n    attributes: {tier: 1}\n" ..
                                           "  - name: gpu-b\n    attributes: {tier: 2}\n")
  end)
  teardown(cli.cleanup)

  local function manifest(policy, value)
    return cli.write(dir .. "/m.yaml", ([[
apiVersion: batch/v1
kind: Job
metadata:
  name: train
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
          envFrom: [{configMapRef: {name: cfg}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {x: "%s"}
]]):format(policy, value or "1"))
  end

  local function run(verb, file, extra)
    local args = { verb, "-f", file, "--attributes", attrs, "--kubeconfig", kubeconfig,
                   "--context", "east", "--context", "west" }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    return cli.run(args)
  end

  local function writes(api)
    local n = 0
    for _, e in ipairs(api:audit()) do
      if e.verb ~= "get" and e.verb ~= "list" and not (e.query and e.query.dryRun == "All") then n = n + 1 end
    end
    return n
  end

  it("shows what would be created, changing nothing, and exits 1", function()
    east:audit(); west:audit()
    local r = run("diff", manifest("require:context=west,require:tier=1"))
    assert.are.equal(1, r.code, r.err)
    assert.truthy(r.err:find("context west:\n  create job.batch/train\n  create configmap/cfg\n", 1, true), r.err)
    assert.truthy(r.out:find("--- west/configmap/cfg (live)\n+++ west/configmap/cfg (applied)\n@@ -0,0 +1,", 1, true),
                  r.out)
    assert.truthy(r.out:find("\n+  x: \"1\"\n", 1, true), r.out)
    assert.truthy(r.out:find("+++ west/job.batch/train (applied)", 1, true), r.out)
    assert.are.equal(0, writes(east))
    assert.are.equal(0, writes(west))
    assert.is_nil(west:get(("/api/v1/namespaces/%s/configmaps/cfg"):format(ns)))
  end)

  it("exits 0 with nothing on stdout when apply would change nothing", function()
    local file = manifest("require:context=west,require:tier=1")
    local r = run("apply", file)
    assert.are.equal(0, r.code, r.err)
    os.execute("sleep 1.1")     -- a later second: a new audit time, which apply would not send
    r = run("diff", file)
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("", r.out)
    assert.truthy(r.err:find("context west:\n  leave  job.batch/train\n  leave  configmap/cfg\n", 1, true), r.err)
  end)

  it("shows a change as a unified diff", function()
    local r = run("diff", manifest("require:context=west,require:tier=1", "2"))
    assert.are.equal(1, r.code, r.err)
    assert.truthy(r.err:find("  leave  job.batch/train\n  change configmap/cfg\n", 1, true), r.err)
    assert.truthy(r.out:find('\n-  x: "1"\n+  x: "2"\n', 1, true), r.out)
    assert.is_nil(r.out:find("job.batch/train", 1, true), r.out)
    assert.are.equal("1", west:get(("/api/v1/namespaces/%s/configmaps/cfg"):format(ns)).data.x)
  end)

  it("shows a move in both contexts", function()
    local r = run("diff", manifest("require:context=east,require:tier=1"), { "--move" })
    assert.are.equal(1, r.code, r.err)
    assert.truthy(r.err:find("context east:\n  create job.batch/train (moves here from context west)\n" ..
                             "  create configmap/cfg\n", 1, true), r.err)
    assert.truthy(r.err:find("context west:\n  move   job.batch/train (to context east; deleted by apply --move)\n",
                             1, true), r.err)
    assert.truthy(r.out:find("+++ east/job.batch/train (applied)", 1, true), r.out)
  end)

  it("exits 4 naming a change the server would refuse, with its hint", function()
    local r = run("diff", manifest("require:context=west,require:tier=2"))
    assert.are.equal(4, r.code, r.err)
    assert.truthy(r.err:find('the selected backend changed from "gpu-a" to "gpu-b"', 1, true), r.err)
    assert.truthy(r.err:find("(kubectl delete job.batch/train -n diffing --context west --kubeconfig ", 1, true), r.err)
  end)

  it("refuses --offline: it compares with the cluster", function()
    local r = run("diff", manifest("require:context=west,require:tier=1"), { "--offline" })
    assert.are.equal(2, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches("diff: %-%-offline does not go with diff", r.err)
  end)

  it("exits 3, not 1, when a selection fails", function()
    local r = run("diff", manifest("require:tier=7"))
    assert.are.equal(3, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches("eliminated all candidates", r.err)
  end)
end)
