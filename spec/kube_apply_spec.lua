-- Server-side apply and create against the HTTPS test API server, the apply
-- and create verbs, and the real kubectl against the same server (proof the
-- server is faithful enough) and running `kubectl fluence apply`.
local apply = require "fluence.apply"
local kubeclient = require "fluence.kubeclient"
local json = require "fluence.json"
local yaml = require "fluence.yaml"
local cli = require "support.cli"
local H = require "fixtures.kube.harness"

local PIN = "fluence.flux-framework.org/require-backend"

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

local function have_kubectl()
  return os.execute("command -v kubectl >/dev/null 2>&1")
end

describe("apply", function()
  local s, path, client
  setup(function()
    local dir = cli.tmpdir()
    cli.write(dir .. "/seed.json", json.encode(json.array{
      { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "fluence-resources", namespace = "kube-system" },
        data = { ["resources.yaml"] = cli.slurp("spec/fixtures/kube/resources.yaml") } } }))
    s = H.start{ "--seed", dir .. "/seed.json" }
    path = H.kubeconfig(s)
    client = kubeclient.new{ kubeconfig = path }
  end)
  teardown(function() s.stop(); cli.cleanup() end)

  local function stored(p)
    local ok, st, obj = pcall(client.request, client, "GET", p)
    if ok then return obj end
    return nil, st
  end

  describe("apply_all", function()
    it("creates a Job whose pod template carries the pin, by server-side apply", function()
      H.requests(s)
      local res = apply.apply_all(client, { object(job("pinned")) }, {})
      assert.are.equal(1, #res)
      assert.is_true(res[1].ok, res[1].message)
      assert.are.equal("job.batch/pinned", res[1].name)
      assert.are.equal("serverside-applied", res[1].action)
      local reqs = H.requests(s)
      local patch = reqs[#reqs]
      assert.are.equal("PATCH", patch.method)
      assert.are.equal("/apis/batch/v1/namespaces/default/jobs/pinned", patch.path)
      assert.are.equal("application/apply-patch+yaml", patch.content_type)
      assert.are.same({ fieldManager = "kubectl-fluence" }, patch.query)
      local got = stored("/apis/batch/v1/namespaces/default/jobs/pinned")
      assert.are.equal("gpu-l4", got.spec.template.metadata.annotations[PIN])
      assert.are.equal("gpu-l4", got.metadata.annotations[PIN])
      -- again: an update, same answer
      res = apply.apply_all(client, { object(job("pinned")) }, {})
      assert.is_true(res[1].ok)
    end)

    it("strips managedFields, fills the namespace, leaves cluster objects unnamespaced", function()
      local d = job("with-mf")
      d.metadata.managedFields = json.array{ { manager = "someone", operation = "Apply" } }
      local ns = { apiVersion = "v1", kind = "Namespace", metadata = { name = "fresh" } }
      local res = apply.apply_all(client, { object(d), object(ns) }, { namespace = "team-a" })
      assert.is_true(res[1].ok, res[1].message)
      assert.is_true(res[2].ok, res[2].message)
      assert.are.equal("namespace/fresh", res[2].name)
      assert.is_table(stored("/apis/batch/v1/namespaces/team-a/jobs/with-mf"))
      assert.is_table(stored("/api/v1/namespaces/fresh"))
    end)

    it("passes --dry-run=server as dryRun=All and stores nothing", function()
      H.requests(s)
      local res = apply.apply_all(client, { object(job("dry")) }, { dry_run = "server", field_manager = "me" })
      assert.is_true(res[1].ok, res[1].message)
      assert.are.equal("serverside-applied (server dry run)", res[1].action)
      local reqs = H.requests(s)
      assert.are.same({ fieldManager = "me", dryRun = "All" }, reqs[#reqs].query)
      assert.is_nil(stored("/apis/batch/v1/namespaces/default/jobs/dry"))
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
      assert.is_true(res[2].ok)
    end)

    it("refuses conflicting fields unless forced", function()
      local d = job("shared")
      assert.is_true(apply.apply_all(client, { object(d) }, { field_manager = "other" })[1].ok)
      d.spec.parallelism = 3
      local res = apply.apply_all(client, { object(d) }, {})
      assert.is_false(res[1].ok)
      assert.matches('Apply failed with 1 conflict: conflict with "other" using batch/v1: %.spec%.parallelism', res[1].message)
      H.requests(s)
      res = apply.apply_all(client, { object(d) }, { force = true })
      assert.is_true(res[1].ok, res[1].message)
      local reqs = H.requests(s)
      assert.are.equal("true", reqs[#reqs].query.force)
      assert.are.equal(3, stored("/apis/batch/v1/namespaces/default/jobs/shared").spec.parallelism)
    end)

    it("finds custom resources by discovery", function()
      local js = { apiVersion = "jobset.x-k8s.io/v1alpha2", kind = "JobSet", metadata = { name = "js" },
                   spec = { replicatedJobs = json.array{} } }
      local res = apply.apply_all(client, { object(js) }, {})
      assert.is_true(res[1].ok, res[1].message)
      assert.are.equal("jobset.jobset.x-k8s.io/js", res[1].name)
      assert.is_table(stored("/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets/js"))
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
    end)

    it("writes YAML that reads back to the same object", function()
      local obj = stored("/apis/batch/v1/namespaces/default/jobs/pinned")
      obj.metadata.labels = { ["x/y"] = "true", empty = "", num = "010", multi = "a\nb", colon = "a: b" }
      obj.spec.list = json.array{ json.array{ 1, 2 }, {}, "- x", json.null }
      local back = assert(yaml.decode(apply.to_yaml(obj)))
      assert.are.same(json.decode(json.encode(obj)), json.decode(json.encode(back)))
    end)
  end)

  describe("the apply and create verbs", function()
    local dir, attrs, manifest
    setup(function()
      dir = cli.tmpdir()
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
      args.env = args.env or {}
      local full = { args[1], "-f", args.file or manifest, "--attributes", attrs, "--kubeconfig", path }
      for i = 2, #args do full[#full + 1] = args[i] end
      full.env, full.stdin = args.env, args.stdin
      return cli.run(full)
    end

    it("selects, then applies every object and reports each", function()
      local r = run{ "apply" }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/verb-job serverside-applied\nconfigmap/verb-config serverside-applied\n", r.out)
      assert.matches('selected backend "gpu%-l4" for Job/verb%-job', r.err)
      local got = stored("/apis/batch/v1/namespaces/default/jobs/verb-job")
      assert.are.equal("gpu-l4", got.spec.template.metadata.annotations[PIN])
      assert.is_string(got.metadata.annotations["fluence.flux-framework.org/select-result"])
      assert.is_table(stored("/api/v1/namespaces/default/configmaps/verb-config"))
    end)

    it("prints names, or the server's objects as YAML or JSON", function()
      local r = run{ "apply", "-o", "name", "-n", "team-a" }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/verb-job\nconfigmap/verb-config\n", r.out)
      r = run{ "apply", "-o", "json" }
      assert.are.equal(0, r.code, r.err)
      local list = json.decode(r.out)
      assert.are.equal("List", list.kind)
      assert.are.equal("verb-job", list.items[1].metadata.name)
      r = run{ "apply", "-o", "yaml" }
      assert.are.equal(0, r.code, r.err)
      local docs = yaml.decode_all(r.out)
      assert.are.equal(2, #docs)
      assert.are.equal("gpu-l4", docs[1].spec.template.metadata.annotations[PIN])
    end)

    it("--dry-run prints the manifest and contacts nobody to apply", function()
      H.requests(s)
      local r = run{ "apply", "--dry-run" }
      assert.are.equal(0, r.code, r.err)
      assert.matches("^# a comment that stays\n", r.out)
      assert.matches(PIN:gsub("%p", "%%%0") .. ": gpu%-l4", r.out)
      for _, q in ipairs(H.requests(s)) do assert.are.equal("GET", q.method) end
      r = run{ "apply", "--dry-run=client", "-o", "name" }
      assert.are.equal("job.batch/verb-job\nconfigmap/verb-config\n", r.out)
    end)

    it("--dry-run=server applies with dryRun=All", function()
      H.requests(s)
      local r = run{ "apply", "--dry-run=server", "--field-manager", "ci", "--force-conflicts" }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/verb-job serverside-applied (server dry run)\n" ..
                       "configmap/verb-config serverside-applied (server dry run)\n", r.out)
      local posts = {}
      for _, q in ipairs(H.requests(s)) do if q.method == "PATCH" then posts[#posts + 1] = q end end
      assert.are.equal(2, #posts)
      assert.are.same({ dryRun = "All", fieldManager = "ci", force = "true" }, posts[1].query)
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
      H.requests(s)
      local r = run{ "apply", file = bad }
      assert.are.equal(1, r.code)
      assert.are.equal("", r.out)
      for _, q in ipairs(H.requests(s)) do assert.are.equal("GET", q.method) end
      assert.is_nil(stored("/api/v1/namespaces/default/configmaps/never-config"))
    end)

    it("--confirm needs a terminal (setsid: none to ask on) and applies nothing", function()
      if not os.execute("command -v setsid >/dev/null 2>&1") then return pending("no setsid") end
      H.requests(s)
      local r = cli.run{ cli.bin, "apply", "--confirm", "-f", manifest, "--attributes", attrs, "--kubeconfig", path,
                         bin = "setsid", valgrind = false }
      assert.are.equal(2, r.code, r.err)
      assert.matches("%-%-confirm needs a terminal", r.err)
      assert.are.equal("", r.out)
      for _, q in ipairs(H.requests(s)) do assert.are.equal("GET", q.method) end
    end)

    it("gives up on a slow server after --request-timeout", function()
      local slow = H.kubeconfig(s, { cluster = { server = s.url .. "/_slow" } })
      local r = cli.run{ "apply", "-f", manifest, "--attributes", attrs, "--kubeconfig", slow,
                         "--request-timeout", "1" }
      assert.are.equal(4, r.code)
      assert.matches("timed out", r.err)
      assert.are.equal(2, run{ "apply", "--request-timeout", "soon" }.code)
    end)

    it("rejects unknown -o and --dry-run values", function()
      assert.are.equal(2, run{ "apply", "-o", "wide" }.code)
      assert.are.equal(2, run{ "apply", "--dry-run=maybe" }.code)
    end)
  end)

  describe("the real kubectl", function()
    local dir, env
    setup(function()
      dir = cli.tmpdir()
      env = { PATH = cli.root .. "/bin:" .. os.getenv("PATH"), HOME = dir }
    end)

    local function kubectl(args)
      if not have_kubectl() then return nil end
      args.bin = "kubectl"
      args.env = env
      args.valgrind = false
      return cli.run(args)
    end

    it("reads the fluence-resources ConfigMap", function()
      local r = kubectl{ "--kubeconfig", path, "get", "configmap", "fluence-resources", "-n", "kube-system", "-o", "json" }
      if not r then return pending("kubectl is not installed") end
      assert.are.equal(0, r.code, r.err)
      local cm = json.decode(r.out)
      assert.matches("ionq%-forte", cm.data["resources.yaml"])
    end)

    it("server-side applies a Job, and conflicts with ours like a real server", function()
      local f = cli.write(dir .. "/job.yaml", apply.to_yaml(job("by-kubectl")))
      local r = kubectl{ "--kubeconfig", path, "apply", "--server-side", "-f", f }
      if not r then return pending("kubectl is not installed") end
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/by-kubectl serverside-applied\n", r.out)
      r = kubectl{ "--kubeconfig", path, "apply", "--server-side", "-f", f, "-o", "json" }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("gpu-l4", json.decode(r.out).spec.template.metadata.annotations[PIN])
      local d = job("by-kubectl")
      d.spec.parallelism = 4
      local res = apply.apply_all(client, { object(d) }, {})
      assert.is_false(res[1].ok)
      assert.matches('conflict with "kubectl"', res[1].message)
      r = kubectl{ "--kubeconfig", path, "get", "jobs", "-o", "name" }
      assert.matches("job%.batch/by%-kubectl\n", r.out)
    end)

    it("runs kubectl fluence apply", function()
      if not pcall(require, "fluence.selection") then
        return pending("fluence.selection (the selection engine) is not in this tree yet")
      end
      local attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-l4\n    attributes: {cost_usd: 0.2}\n")
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
      local r = kubectl{ "fluence", "apply", "-f", f, "--attributes", attrs, "--kubeconfig", path }
      if not r then return pending("kubectl is not installed") end
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/via-plugin serverside-applied\n", r.out)
      r = kubectl{ "--kubeconfig", path, "get", "job", "via-plugin", "-o", "json" }
      assert.are.equal(0, r.code, r.err)
      local got = json.decode(r.out)
      assert.are.equal("gpu-l4", got.spec.template.metadata.annotations[PIN])
      -- KUBECONFIG passes through kubectl to the plugin unchanged
      env.KUBECONFIG = path
      finally(function() env.KUBECONFIG = nil end)
      r = kubectl{ "fluence", "apply", "-f", f, "--attributes", attrs, "-o", "name" }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/via-plugin\n", r.out)
    end)
  end)
end)
