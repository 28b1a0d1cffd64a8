-- Moving a workload between clusters (issue 27, point 5), against two real
-- API servers.  A re-apply that places a workload in another context than
-- last time used to leave the old copy running and say nothing: two copies
-- of a training job.  fluence finds the old copy (by kind, namespace, name
-- and its own audit annotation) and warns naming both contexts, with a
-- delete hint that is run here; --move deletes it only after the new copy
-- was accepted; --dry-run shows the plan; a copy fluence did not place is
-- never touched.
local json = require "fluence.json"
local cli = require "support.cli"
local envtest = require "support.envtest"

envtest.describe("moving a workload between contexts", function(east)
  local west = assert(envtest.get("west"))
  local dir, ns, kubeconfig, attrs

  setup(function()
    dir = cli.tmpdir()
    ns = "moving"
    -- a namespace only the east has: an apply to the west fails there
    pcall(east.request, east, "POST", "/api/v1/namespaces", { apiVersion = "v1", kind = "Namespace",
                                                               metadata = { name = "east-only" } })
    kubeconfig = envtest.contexts(dir .. "/config", ns, { { "east", east }, { "west", west } })
    attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-a\n")
  end)
  teardown(cli.cleanup)

  local function job(name, context)
    return cli.write(("%s/%s-%s.yaml"):format(dir, name, context), ([[
apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  annotations:
    fluence.flux-framework.org/select-policy: "require:context=%s"
spec:
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
]]):format(name, context))
  end

  local function apply(file, extra)
    local args = { "apply", "-f", file, "--attributes", attrs, "--kubeconfig", kubeconfig,
                   "--context", "east", "--context", "west" }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    return cli.run(args)
  end

  local function path(name, namespace)
    return ("/apis/batch/v1/namespaces/%s/jobs/%s"):format(namespace or ns, name)
  end

  it("warns naming both contexts when a re-apply moves a workload, and its delete hint works", function()
    local r = apply(job("train", "east"))
    assert.are.equal(0, r.code, r.err)
    assert.is_nil(r.err:find("moves", 1, true), r.err)
    r = apply(job("train", "west"))
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("job.batch/train (context west) serverside-applied\n", r.out)
    local warning = r.err:match("fluence: warning: job%.batch/train moves from context \"east\" to context \"west\": " ..
                                "the copy in \"east\" keeps running unless deleted %(%-%-move deletes it once the new " ..
                                "one is accepted: (kubectl delete [^\n]+)%)\n")
    assert.is_string(warning, r.err)
    -- both copies exist: nothing was deleted without --move
    assert.is_table(east:get(path("train")))
    assert.is_table(west:get(path("train")))
    local h = cli.run{ bin = "bash", valgrind = false, "-c", warning, env = { HOME = dir, KUBECONFIG = false } }
    assert.are.equal(0, h.code, h.err)
    assert.is_nil(east:get(path("train")))
    assert.is_table(west:get(path("train")))
  end)

  it("shows the plan under --dry-run and changes nothing", function()
    local r = apply(job("plan", "east"))
    assert.are.equal(0, r.code, r.err)
    east:audit(); west:audit()
    r = apply(job("plan", "west"), { "--move", "--dry-run" })
    assert.are.equal(0, r.code, r.err)
    assert.matches("^apiVersion: batch/v1\n", r.out)
    assert.truthy(r.err:find('job.batch/plan moves from context "east" to context "west"', 1, true), r.err)
    assert.truthy(r.err:find('fluence: --move: would delete job.batch/plan from context "east" once it is ' ..
                             'accepted in context "west"\n', 1, true), r.err)
    for _, api in ipairs{ east, west } do
      for _, e in ipairs(api:audit()) do
        assert.is_true(e.verb == "get" or e.verb == "list", "changed: " .. e.verb .. " " .. e.uri)
      end
    end
    assert.is_table(east:get(path("plan")))
    assert.is_nil(west:get(path("plan")))
  end)

  it("deletes the old copy with --move, after the new one was accepted", function()
    local r = apply(job("moved", "east"))
    assert.are.equal(0, r.code, r.err)
    r = apply(job("moved", "west"), { "--move", "--dry-run=server" })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("job.batch/moved (context west) serverside-applied (server dry run)\n" ..
                     "job.batch/moved (context east) deleted (moved to west) (server dry run)\n", r.out)
    assert.is_table(east:get(path("moved")))
    r = apply(job("moved", "west"), { "--move" })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("job.batch/moved (context west) serverside-applied\n" ..
                     "job.batch/moved (context east) deleted (moved to west)\n", r.out)
    assert.is_table(west:get(path("moved")))
    local gone = east:get(path("moved"))
    -- deleted, or going (background propagation: no controllers here)
    assert.is_true(gone == nil or gone.metadata.deletionTimestamp ~= nil)
  end)

  it("keeps the old copy when the new one is refused", function()
    local r = apply(job("kept", "east"), { "-n", "east-only" })
    assert.are.equal(0, r.code, r.err)
    r = apply(job("kept", "west"), { "-n", "east-only", "--move" })
    assert.are.equal(4, r.code, r.err)
    assert.truthy(r.err:find('fluence: job.batch/kept: not deleted from context "east": the new copy in "west" was ' ..
                             "not accepted\n", 1, true), r.err)
    assert.is_table(east:get(path("kept", "east-only")))
  end)

  it("says once per cluster when the other context cannot be searched, and applies", function()
    -- the west as a user without any right: every GET there is 403
    local doc = json.decode(cli.slurp(kubeconfig))
    doc.users[2].user.token = west.tokens.nobody
    local config = cli.write(dir .. "/config-nobody", json.encode(doc))
    local file = cli.write(dir .. "/two.yaml", cli.slurp(job("one", "east")) .. "---\n" .. cli.slurp(job("two", "east")))
    local r = cli.run{ "apply", "-f", file, "--attributes", attrs, "--kubeconfig", config,
                       "--context", "east", "--context", "west" }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("job.batch/one (context east) serverside-applied\njob.batch/two (context east) serverside-applied\n",
                     r.out)
    local _, n = r.err:gsub('fluence: note: could not look for earlier copies in context "west" %(job%.batch/one ' ..
                            'first%): cluster: jobs%.batch "one" is forbidden: User "nobody" cannot get', "")
    assert.are.equal(1, n, r.err)
    assert.is_nil(r.err:find("job.batch/two first", 1, true), r.err)
  end)

  it("asks an unreachable context once, not once per object of a kind it must discover", function()
    east:install_crd(cli.root .. "/spec/fixtures/crds/jobset.yaml")
    -- the west where nothing listens: its discovery of JobSet fails
    local doc = json.decode(cli.slurp(kubeconfig))
    doc.clusters[2].cluster.server = "https://127.0.0.1:1"
    local config = cli.write(dir .. "/config-dead", json.encode(doc))
    local function jobset(name)
      return ([[
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: %s
  annotations:
    fluence.flux-framework.org/select-policy: "require:context=east"
spec:
  replicatedJobs:
    - name: w
      replicas: 1
      template:
        spec:
          template:
            spec:
              schedulerName: fluence
              restartPolicy: Never
              containers: [{name: c, image: busybox}]
]]):format(name)
    end
    local file = cli.write(dir .. "/jobsets.yaml", jobset("js-1") .. "---\n" .. jobset("js-2"))
    local r = cli.run{ "apply", "-f", file, "--attributes", attrs, "--kubeconfig", config,
                       "--context", "east", "--context", "west" }
    assert.are.equal(0, r.code, r.err)
    local _, n = r.err:gsub('fluence: note: could not look for earlier copies in context "west" %(jobset%.jobset%.x%-k8s%.io/js%-1 first%)', "")
    assert.are.equal(1, n, r.err)
    assert.matches("jobset%.jobset%.x%-k8s%.io/js%-2 %(context east%) serverside%-applied", r.out)
  end)

  it("leaves alone a copy of the same name that fluence did not place", function()
    east:request("POST", ("/apis/batch/v1/namespaces/%s/jobs"):format(ns), json.decode(json.encode{
      apiVersion = "batch/v1", kind = "Job", metadata = { name = "theirs" },
      spec = { template = { spec = { restartPolicy = "Never", containers = json.array{ { name = "c", image = "x" } } } } } }))
    local r = apply(job("theirs", "west"), { "--move" })
    assert.are.equal(0, r.code, r.err)
    assert.truthy(r.err:find('fluence: note: job.batch/theirs also exists in context "east", not placed by fluence: ' ..
                             "left alone\n", 1, true), r.err)
    assert.are.equal("job.batch/theirs (context west) serverside-applied\n", r.out)
    assert.is_table(east:get(path("theirs")))
  end)
end)
