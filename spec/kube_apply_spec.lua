-- Server-side apply and create against a real kube-apiserver (spec/support/
-- envtest.lua): apply_all, the apply and create verbs, and the real kubectl
-- against the same server running `kubectl fluence apply`.  What the server
-- saw is read from its audit log.  Only a server that never answers is a
-- stand-in (the last block): a real one cannot be made to hang.
local apply = require "fluence.apply"
local kubeclient = require "fluence.kubeclient"
local json = require "fluence.json"
local yaml = require "fluence.yaml"
local cli = require "support.cli"
local envtest = require "support.envtest"

local PIN = "fluence.flux-framework.org/require-backend"
local RESULT = "fluence.flux-framework.org/select-result"

local function job(name, extra)
  local doc = {
    apiVersion = "batch/v1", kind = "Job",
    metadata = { name = name, annotations = { [PIN] = "gpu-l4" } },
    spec = { parallelism = 1, template = {
      metadata = { annotations = { [PIN] = "gpu-l4" } },
      spec = { schedulerName = "fluence", restartPolicy = "Never",
               containers = json.array{ { name = "c", image = "busybox" } } } } },
  }
  for k, v in pairs(extra or {}) do doc[k] = v end
  return doc
end

local function object(doc)
  local m = doc.metadata or {}
  return { kind = doc.kind, apiVersion = doc.apiVersion, name = m.name, generateName = m.generateName,
           namespace = m.namespace, json = json.encode(doc) }
end

-- The mutating requests among those the server saw.
local function writes(events)
  local out = {}
  for _, e in ipairs(events) do
    if e.verb == "patch" or e.verb == "create" or e.verb == "update" or e.verb == "delete" then out[#out + 1] = e end
  end
  return out
end

envtest.describe("apply", function(api)
  local ns, path, client
  setup(function()
    ns = api:namespace("apply")
    path = api:kubeconfig_for{ namespace = ns }
    client = kubeclient.new{ kubeconfig = path }
    api:install_crd(cli.root .. "/spec/fixtures/crds/jobset.yaml")
  end)
  teardown(cli.cleanup)

  local function stored(p) return api:get(p) end
  local function jobs(name) return ("/apis/batch/v1/namespaces/%s/jobs/%s"):format(ns, name) end

  describe("apply_all", function()
    it("creates a Job whose pod template carries the pin, by server-side apply", function()
      api:audit()
      local res = apply.apply_all(client, { object(job("pinned")) }, {})
      assert.are.equal(1, #res)
      assert.is_true(res[1].ok, res[1].message)
      assert.are.equal("job.batch/pinned", res[1].name)
      assert.are.equal("serverside-applied", res[1].action)
      local w = writes(api:audit())
      assert.are.equal(1, #w)
      assert.are.equal("patch", w[1].verb)
      assert.are.equal(jobs("pinned"), w[1].path)
      assert.are.same({ fieldManager = "kubectl-fluence" }, w[1].query)
      local got = stored(jobs("pinned"))
      assert.are.equal("gpu-l4", got.spec.template.metadata.annotations[PIN])
      assert.are.equal("gpu-l4", got.metadata.annotations[PIN])
      -- the server recorded an Apply by our field manager
      local managers = {}
      for _, m in ipairs(got.metadata.managedFields) do managers[m.manager] = m.operation end
      assert.are.equal("Apply", managers["kubectl-fluence"])
      -- again: an update, same answer
      res = apply.apply_all(client, { object(job("pinned")) }, {})
      assert.is_true(res[1].ok, res[1].message)
    end)

    it("strips managedFields, fills the namespace, leaves cluster objects unnamespaced", function()
      local d = job("with-mf")
      d.metadata.managedFields = json.array{ { manager = "someone", operation = "Apply", apiVersion = "batch/v1" } }
      local other = api:namespace("apply-other")
      local nsobj = { apiVersion = "v1", kind = "Namespace", metadata = { name = ns .. "-fresh" } }
      local res = apply.apply_all(client, { object(d), object(nsobj) }, { namespace = other })
      assert.is_true(res[1].ok, res[1].message)
      assert.is_true(res[2].ok, res[2].message)
      assert.are.equal("namespace/" .. ns .. "-fresh", res[2].name)
      local got = stored(("/apis/batch/v1/namespaces/%s/jobs/with-mf"):format(other))
      assert.is_table(got)
      for _, m in ipairs(got.metadata.managedFields) do assert.are_not.equal("someone", m.manager) end
      assert.is_table(stored("/api/v1/namespaces/" .. ns .. "-fresh"))
    end)

    it("passes --dry-run=server as dryRun=All and stores nothing", function()
      api:audit()
      local res = apply.apply_all(client, { object(job("dry")) }, { dry_run = "server", field_manager = "me" })
      assert.is_true(res[1].ok, res[1].message)
      assert.are.equal("serverside-applied (server dry run)", res[1].action)
      local w = writes(api:audit())
      assert.are.same({ fieldManager = "me", dryRun = "All" }, w[#w].query)
      assert.is_nil(stored(jobs("dry")))
    end)

    it("creates with POST: generateName works, an existing object fails", function()
      local d = job(nil)
      d.metadata.name, d.metadata.generateName = nil, "gen-"
      local res = apply.apply_all(client, { object(d), object(job("made")), object(job("made")) }, { create = true })
      assert.is_true(res[1].ok, res[1].message)
      assert.matches("^job%.batch/gen%-%w+$", res[1].name)
      assert.are.equal("created", res[2].action)
      assert.is_false(res[3].ok)
      assert.are.equal('cluster: jobs.batch "made" already exists (HTTP 409 Conflict)', res[3].message)
    end)

    it("reports each object: a failure does not stop the others", function()
      local res = apply.apply_all(client, { object(job("Bad_Name")), object(job("fine")) }, {})
      assert.is_false(res[1].ok)
      assert.matches('Job%.batch "Bad_Name" is invalid', res[1].message)
      assert.is_true(res[2].ok, res[2].message)
    end)

    it("refuses conflicting fields unless forced", function()
      local d = job("shared")
      assert.is_true(apply.apply_all(client, { object(d) }, { field_manager = "other" })[1].ok)
      d.spec.parallelism = 3
      local res = apply.apply_all(client, { object(d) }, {})
      assert.is_false(res[1].ok)
      -- the other manager and its fields, in one line (issue 27)
      assert.are.equal('conflict: .spec.parallelism set by field manager "other" (HTTP 409 Conflict)', res[1].message)
      assert.matches("HTTP 409 Conflict", res[1].message)
      api:audit()
      res = apply.apply_all(client, { object(d) }, { force = true })
      assert.is_true(res[1].ok, res[1].message)
      local w = writes(api:audit())
      assert.are.equal("true", w[#w].query.force)
      assert.are.equal(3, stored(jobs("shared")).spec.parallelism)
    end)

    it("finds custom resources by discovery", function()
      local js = { apiVersion = "jobset.x-k8s.io/v1alpha2", kind = "JobSet", metadata = { name = "js" },
                   spec = { replicatedJobs = json.array{} } }
      api:audit()
      local res = apply.apply_all(client, { object(js) }, {})
      assert.is_true(res[1].ok, res[1].message)
      assert.are.equal("jobset.jobset.x-k8s.io/js", res[1].name)
      assert.is_table(stored(("/apis/jobset.x-k8s.io/v1alpha2/namespaces/%s/jobsets/js"):format(ns)))
      local saw_discovery = false
      for _, e in ipairs(api:audit()) do
        if e.path == "/apis/jobset.x-k8s.io/v1alpha2" and e.verb == "get" then saw_discovery = true end
      end
      assert.is_true(saw_discovery, "no discovery request for jobset.x-k8s.io/v1alpha2")
    end)

    it("names a kind the server does not serve", function()
      local res = apply.apply_all(client, { object{ apiVersion = "example.com/v1", kind = "Gizmo",
                                                     metadata = { name = "g" } } }, {})
      assert.is_false(res[1].ok)
      assert.are.equal("cluster: the server does not serve example.com/v1 (no resource for kind Gizmo)", res[1].message)
    end)

    it("reports an object without JSON as failed instead of skipping it", function()
      local res = apply.apply_all(client, { { kind = "Job", apiVersion = "batch/v1", name = "nojson" } }, {})
      assert.are.equal(1, #res)
      assert.is_false(res[1].ok)
      assert.matches("no JSON", res[1].message)
    end)

    it("expands a v1 List", function()
      local list = { apiVersion = "v1", kind = "List", metadata = {},
                     items = json.array{ job("from-list-1"), job("from-list-2") } }
      local res = apply.apply_all(client, { object(list) }, {})
      assert.are.equal(2, #res)
      assert.is_true(res[1].ok and res[2].ok)
      assert.is_table(stored(jobs("from-list-2")))
    end)

    it("answers 403 for a user without rights, with the server's message", function()
      local nobody = kubeclient.new{ kubeconfig = api:kubeconfig_for{ context = "nobody", namespace = ns } }
      local res = apply.apply_all(nobody, { object(job("not-mine")) }, {})
      assert.is_false(res[1].ok)
      assert.are.equal(('cluster: jobs.batch "not-mine" is forbidden: User "nobody" cannot patch resource "jobs" ' ..
                        'in API group "batch" in the namespace "%s" (HTTP 403 Forbidden)'):format(ns), res[1].message)
      assert.is_nil(stored(jobs("not-mine")))
    end)
  end)

  describe("the apply and create verbs", function()
    local dir, attrs, manifest
    setup(function()
      dir = cli.tmpdir()
      -- the offerings live in this spec's own namespace (--fluence-ns)
      api:request("POST", ("/api/v1/namespaces/%s/configmaps"):format(ns), {
        apiVersion = "v1", kind = "ConfigMap", metadata = { name = "fluence-resources" },
        data = { ["resources.yaml"] = cli.slurp("spec/fixtures/kube/resources.yaml") } })
      attrs = cli.write(dir .. "/attrs.yaml",
        "version: 1\nbackends:\n  - name: gpu-l4\n    attributes: {memory_gb: 24, cost_usd: 0.5}\n" ..
        "  - name: forte-fast\n    attributes: {memory_gb: 8}\n")
      manifest = cli.write(dir .. "/job.yaml", [[
# a comment that stays
apiVersion: batch/v1
kind: Job
metadata:
  name: verb-job
  annotations:
    fluence.flux-framework.org/select-policy: "require:min_memory_gb=16,min-cost"
spec:
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers:
        - name: c
          image: busybox
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: verb-config
data:
  a: "1"
]])
    end)

    local function run(args)
      local full = { args[1], "-f", args.file or manifest, "--attributes", attrs, "--kubeconfig", args.kubeconfig or path,
                     "--fluence-ns", ns }
      for i = 2, #args do full[#full + 1] = args[i] end
      full.env, full.stdin = args.env or {}, args.stdin
      return cli.run(full)
    end

    it("selects, then applies every object and reports each", function()
      local r = run{ "apply" }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/verb-job serverside-applied\nconfigmap/verb-config serverside-applied\n", r.out)
      assert.matches('selected backend "gpu%-l4" for Job/verb%-job', r.err)
      assert.matches("dropped forte%-fast", r.err)
      local got = stored(jobs("verb-job"))
      assert.are.equal("gpu-l4", got.spec.template.metadata.annotations[PIN])
      assert.are.equal("gpu-l4", got.metadata.annotations[PIN])
      assert.is_string(got.metadata.annotations[RESULT])
      -- the time-stamped audit stays on the object: the pod template only
      -- carries what the scheduler reads (docs/kubernetes.md)
      assert.is_nil(got.spec.template.metadata.annotations[RESULT])
      assert.is_table(stored(("/api/v1/namespaces/%s/configmaps/verb-config"):format(ns)))
    end)

    it("prints names, or the server's objects as YAML or JSON", function()
      local team = api:namespace("apply-team")
      local r = run{ "apply", "-o", "name", "-n", team }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/verb-job\nconfigmap/verb-config\n", r.out)
      assert.is_table(stored(("/apis/batch/v1/namespaces/%s/jobs/verb-job"):format(team)))
      r = run{ "apply", "-o", "json" }
      assert.are.equal(0, r.code, r.err)
      local list = json.decode(r.out)
      assert.are.equal("List", list.kind)
      assert.are.equal("verb-job", list.items[1].metadata.name)
      assert.is_string(list.items[1].metadata.uid)        -- the server's object, not ours
      r = run{ "apply", "-o", "yaml" }
      assert.are.equal(0, r.code, r.err)
      local docs = yaml.decode_all(r.out)
      assert.are.equal(2, #docs)
      assert.are.equal("gpu-l4", docs[1].spec.template.metadata.annotations[PIN])
    end)

    it("refuses an object naming another namespace than -n, as kubectl does", function()
      local other = cli.write(dir .. "/ns.yaml", (cli.slurp(manifest):gsub("  name: verb%-config\n",
        "  name: verb-config\n  namespace: elsewhere\n")))
      local r = run{ "apply", "-n", ns, file = other }
      assert.are.equal(4, r.code)
      assert.truthy(r.err:find('the namespace from the provided object "elsewhere" does not match the namespace "' .. ns,
                               1, true), r.err)
    end)

    it("--dry-run prints the manifest and changes nothing on the server", function()
      api:audit()
      local r = run{ "apply", "--dry-run" }
      assert.are.equal(0, r.code, r.err)
      assert.matches("^# a comment that stays\n", r.out)
      assert.matches(PIN:gsub("%p", "%%%0") .. ": gpu%-l4", r.out)
      assert.are.same({}, writes(api:audit()))
      r = run{ "apply", "--dry-run=client", "-o", "name" }
      assert.are.equal("job.batch/verb-job\nconfigmap/verb-config\n", r.out)
    end)

    it("--dry-run=server applies with dryRun=All", function()
      api:audit()
      local r = run{ "apply", "--dry-run=server", "--field-manager", "ci", "--force-conflicts" }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/verb-job serverside-applied (server dry run)\n" ..
                       "configmap/verb-config serverside-applied (server dry run)\n", r.out)
      local patches = {}
      for _, e in ipairs(writes(api:audit())) do
        if e.verb == "patch" and e.query.dryRun == "All" and e.query.fieldManager == "ci" then patches[#patches + 1] = e end
      end
      assert.are.equal(2, #patches)
      assert.are.same({ dryRun = "All", fieldManager = "ci", force = "true" }, patches[#patches].query)
    end)

    it("create fails on existing objects with exit 4, reporting each", function()
      local r = run{ "create" }
      assert.are.equal(4, r.code)
      assert.matches('fluence: job%.batch/verb%-job: cluster: jobs%.batch "verb%-job" already exists %(HTTP 409 Conflict%)', r.err)
      assert.matches("2 of 2 objects failed", r.err)
    end)

    it("applies nothing when a selection fails", function()
      local bad = cli.write(dir .. "/bad.yaml", (cli.slurp(manifest):gsub("min_memory_gb=16", "min_memory_gb=1000")
                                                                    :gsub("verb%-", "never-")))
      api:audit()
      local r = run{ "apply", file = bad }
      assert.are.equal(1, r.code)
      assert.are.equal("", r.out)
      assert.are.same({}, writes(api:audit()))
      assert.is_nil(stored(("/api/v1/namespaces/%s/configmaps/never-config"):format(ns)))
    end)

    it("fails with the server's 403 for a user without rights, and says the offerings could not be read", function()
      local r = run{ "apply", kubeconfig = api:kubeconfig_for{ context = "nobody", namespace = ns } }
      assert.are.equal(4, r.code)
      assert.matches('configmaps "fluence%-resources" is forbidden: User "nobody" cannot get resource', r.err)
      assert.matches('fluence: job%.batch/verb%-job: cluster: jobs%.batch "verb%-job" is forbidden: User "nobody"', r.err)
      assert.are.equal("", r.out)
      for _, t in pairs(api.tokens) do assert.is_nil((r.out .. r.err):find(t, 1, true)) end
    end)

    it("--confirm needs a terminal (setsid: none to ask on) and applies nothing", function()
      if not os.execute("command -v setsid >/dev/null 2>&1") then return pending("no setsid") end
      api:audit()
      local r = cli.run{ cli.bin, "apply", "--confirm", "-f", manifest, "--attributes", attrs, "--kubeconfig", path,
                         "--fluence-ns", ns, bin = "setsid", valgrind = false }
      assert.are.equal(2, r.code, r.err)
      assert.matches("%-%-confirm needs a terminal", r.err)
      assert.are.equal("", r.out)
      assert.are.same({}, writes(api:audit()))
    end)

    it("rejects unknown -o and --dry-run values", function()
      assert.are.equal(2, run{ "apply", "-o", "wide" }.code)
      assert.are.equal(2, run{ "apply", "--dry-run=maybe" }.code)
      assert.are.equal(2, run{ "apply", "--request-timeout", "soon" }.code)
    end)
  end)

  describe("the real kubectl", function()
    local dir, env
    setup(function()
      dir = cli.tmpdir()
      env = { PATH = cli.root .. "/bin:" .. os.getenv("PATH"), HOME = dir }
    end)

    it("server-side applies a Job, and conflicts with ours like any manager", function()
      local f = cli.write(dir .. "/job.yaml", apply.to_yaml(job("by-kubectl")))
      local r = api:kubectl{ "-n", ns, "apply", "--server-side", "-f", f, env = env }
      if not r then return pending("kubectl is not installed") end
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/by-kubectl serverside-applied\n", r.out)
      r = api:kubectl{ "-n", ns, "get", "job", "by-kubectl", "-o", "json", env = env }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("gpu-l4", json.decode(r.out).spec.template.metadata.annotations[PIN])
      local d = job("by-kubectl")
      d.spec.parallelism = 4
      local res = apply.apply_all(client, { object(d) }, {})
      assert.is_false(res[1].ok)
      assert.matches('%.spec%.parallelism set by field manager "kubectl"', res[1].message)
    end)

    it("runs kubectl fluence apply", function()
      local attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-l4\n    attributes: {cost_usd: 0.2, memory_gb: 24}\n")
      local f = cli.write(dir .. "/pick.yaml", [[
apiVersion: batch/v1
kind: Job
metadata:
  name: via-plugin
  annotations:
    fluence.flux-framework.org/select-policy: "require:min_memory_gb=16,min-cost"
spec:
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
]])
      local r = api:kubectl{ "fluence", "apply", "-f", f, "--attributes", attrs, "--kubeconfig", path,
                             "--fluence-ns", ns, env = env, plugin = true }
      if not r then return pending("kubectl is not installed") end
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/via-plugin serverside-applied\n", r.out)
      r = api:kubectl{ "-n", ns, "get", "job", "via-plugin", "-o", "json", env = env }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("gpu-l4", json.decode(r.out).spec.template.metadata.annotations[PIN])
      -- KUBECONFIG passes through kubectl to the plugin unchanged
      local env2 = { PATH = env.PATH, HOME = dir, KUBECONFIG = path }
      r = cli.run{ "fluence", "apply", "-f", f, "--attributes", attrs, "-o", "name", "--fluence-ns", ns,
                   bin = "kubectl", env = env2, valgrind = false }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/via-plugin\n", r.out)
    end)
  end)
end)

describe("apply.to_yaml", function()
  it("writes YAML that reads back to the same object", function()
    local obj = job("round-trip")
    obj.metadata.labels = { ["x/y"] = "true", empty = "", num = "010", multi = "a\nb", colon = "a: b" }
    obj.spec.list = json.array{ json.array{ 1, 2 }, {}, "- x", json.null }
    local back = assert(yaml.decode(apply.to_yaml(obj)))
    assert.are.same(json.decode(json.encode(obj)), json.decode(json.encode(back)))
  end)
end)

-- A real API server cannot be made to hang: the stand-in
-- (spec/support/kube_server.py) answers /_slow/... after a long sleep.
describe("apply against a server that never answers (stand-in)", function()
  local H = require "fixtures.kube.harness"
  local s
  setup(function() s = H.start() end)
  teardown(function() s.stop(); cli.cleanup() end)

  it("gives up after --request-timeout", function()
    local dir = cli.tmpdir()
    local attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-l4\n    attributes: {cost_usd: 1}\n")
    local mf = cli.write(dir .. "/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {a: b}\n")
    local slow = H.kubeconfig(s, { cluster = { server = s.url .. "/_slow" } })
    local r = cli.run{ "apply", "-f", mf, "--attributes", attrs, "--kubeconfig", slow, "--request-timeout", "1" }
    assert.are.equal(4, r.code)
    assert.matches("timed out", r.err)
    assert.are.equal("", r.out)
  end)
end)
