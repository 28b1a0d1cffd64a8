-- What a real kube-apiserver keeps of fluence's edits, for every workload
-- kind Fluence schedules, and what re-applying does (spec/support/envtest.lua):
--
-- * pins reach pods: after `fluence apply`, the pin is where each kind's
--   controller takes its pods' metadata from (the pod template; a
--   MiniCluster's spec.pod, which the Flux Operator copies), surviving the
--   server's validation and, for CRDs, its pruning;
-- * re-applying an unchanged manifest changes nothing (no new generation,
--   no new resourceVersion: no rollout, no refused Job);
-- * a changed selection the server cannot take in place (a Job) stops the
--   run before anything is applied, naming the object and what to do.
local json = require "fluence.json"
local cli = require "support.cli"
local envtest = require "support.envtest"

local PIN = "fluence.flux-framework.org/require-backend"
local RESULT = "fluence.flux-framework.org/select-result"

local function attributes(dir, costs)
  local lines = { "version: 1", "backends:" }
  for _, b in ipairs(costs) do
    lines[#lines + 1] = ("  - name: %s\n    attributes: {cost_usd: %s}"):format(b[1], b[2])
  end
  return cli.write(dir .. "/attrs-" .. costs[1][2] .. ".yaml", table.concat(lines, "\n") .. "\n")
end

-- kind -> resource path and where its pods' annotations come from
local KINDS = {
  { "Pod", "/api/v1/namespaces/%s/pods/w-pod", function(o) return { o.metadata } end },
  { "Job", "/apis/batch/v1/namespaces/%s/jobs/w-job", function(o) return { o.spec.template.metadata } end },
  { "CronJob", "/apis/batch/v1/namespaces/%s/cronjobs/w-cronjob",
    function(o) return { o.spec.jobTemplate.spec.template.metadata } end },
  { "Deployment", "/apis/apps/v1/namespaces/%s/deployments/w-deployment", function(o) return { o.spec.template.metadata } end },
  { "StatefulSet", "/apis/apps/v1/namespaces/%s/statefulsets/w-statefulset", function(o) return { o.spec.template.metadata } end },
  { "ReplicaSet", "/apis/apps/v1/namespaces/%s/replicasets/w-replicaset", function(o) return { o.spec.template.metadata } end },
  { "DaemonSet", "/apis/apps/v1/namespaces/%s/daemonsets/w-daemonset", function(o) return { o.spec.template.metadata } end },
  { "ReplicationController", "/api/v1/namespaces/%s/replicationcontrollers/w-rc",
    function(o) return { o.spec.template.metadata } end },
  { "PodTemplate", "/api/v1/namespaces/%s/podtemplates/w-podtemplate", function(o) return { o.template.metadata } end },
  { "JobSet", "/apis/jobset.x-k8s.io/v1alpha2/namespaces/%s/jobsets/w-jobset", function(o)
      local out = {}
      for _, rj in ipairs(o.spec.replicatedJobs) do out[#out + 1] = rj.template.spec.template.metadata end
      return out
    end },
  { "MiniCluster", "/apis/flux-framework.org/v1alpha2/namespaces/%s/miniclusters/w-minicluster",
    function(o) return { o.spec.pod } end },
}

envtest.describe("workloads", function(api)
  local dir
  setup(function()
    dir = cli.tmpdir()
    api:install_crd(cli.root .. "/spec/fixtures/crds/jobset.yaml")
    api:install_crd(cli.root .. "/spec/fixtures/crds/minicluster.yaml")
  end)
  teardown(cli.cleanup)

  local function fluence_apply(ns, file, attrs, extra)
    local args = { "apply", "-f", file, "--attributes", attrs, "--kubeconfig", api:kubeconfig_for{ namespace = ns },
                   "--fluence-ns", ns }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    return cli.run(args)
  end

  describe("pins reach pods", function()
    local ns
    setup(function()
      ns = api:namespace("kinds")
      local r = fluence_apply(ns, cli.root .. "/spec/fixtures/workloads/kinds.yaml",
                              attributes(dir, { { "gpu-l4", 1 }, { "gpu-a100", 3 } }))
      assert.are.equal(0, r.code, r.err)
    end)

    for _, k in ipairs(KINDS) do
      it(k[1] .. ": in the metadata its pods are made from", function()
        local obj = assert(api:get(k[2]:format(ns)), "not stored: " .. k[2]:format(ns))
        assert.are.equal("gpu-l4", obj.metadata.annotations[PIN])
        assert.is_string(obj.metadata.annotations[RESULT])
        local metas = k[3](obj)
        assert.truthy(#metas > 0)
        for _, m in ipairs(metas) do
          assert.is_table(m, "no pod metadata kept")
          assert.are.equal("gpu-l4", m.annotations[PIN])
        end
      end)
    end
  end)

  describe("re-applying", function()
    local ns, file, cheap
    setup(function()
      ns = api:namespace("reapply")
      file = cli.write(dir .. "/reapply.yaml", [[
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations:
    fluence.flux-framework.org/select-policy: min-cost
spec:
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: serve
  annotations:
    fluence.flux-framework.org/select-policy: min-cost
spec:
  replicas: 1
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      schedulerName: fluence
      containers: [{name: c, image: nginx}]
]])
      cheap = attributes(dir, { { "gpu-a", 1 }, { "gpu-b", 2 } })
    end)

    local function state()
      local j = assert(api:get(("/apis/batch/v1/namespaces/%s/jobs/train"):format(ns)))
      local d = assert(api:get(("/apis/apps/v1/namespaces/%s/deployments/serve"):format(ns)))
      return { job_rv = j.metadata.resourceVersion, job_pin = j.spec.template.metadata.annotations[PIN],
               job_audit = j.metadata.annotations[RESULT],
               gen = d.metadata.generation, rv = d.metadata.resourceVersion,
               pin = d.spec.template.metadata.annotations[PIN] }
    end

    it("changes nothing when nothing changed: same generation, same resourceVersion, the Job accepted", function()
      local r = fluence_apply(ns, file, cheap)
      assert.are.equal(0, r.code, r.err)
      local first = state()
      assert.are.equal(1, first.gen)
      assert.are.equal("gpu-a", first.job_pin)
      os.execute("sleep 1.1")                          -- a later second: a new audit time
      r = fluence_apply(ns, file, cheap)
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("job.batch/train serverside-applied\ndeployment.apps/serve serverside-applied\n", r.out)
      local second = state()
      -- the server rewrites a Job once on its first re-apply, with nothing
      -- changed (the same happens with `kubectl apply --server-side`): its
      -- resourceVersion moves once; everything else stays
      local rv = second.job_rv
      first.job_rv, second.job_rv = nil, nil
      assert.are.same(first, second)
      os.execute("sleep 1.1")
      r = fluence_apply(ns, file, cheap)
      assert.are.equal(0, r.code, r.err)
      second.job_rv = rv
      assert.are.same(second, state())
    end)

    it("stops before applying anything when a Job's selection changed, naming it and what to do", function()
      local before = state()
      local dearer = attributes(dir, { { "gpu-a", 5 }, { "gpu-b", 2 } })
      api:audit()
      local r = fluence_apply(ns, file, dearer)
      assert.are.equal(4, r.code)
      assert.are.equal("", r.out)
      assert.truthy(r.err:find('fluence: job.batch/train: the selected backend changed from "gpu-a" to "gpu-b" ' ..
        "since it was last applied, and the server refuses to change it in place (spec.template: field is immutable). " ..
        "To move it, delete it (kubectl delete job.batch/train -n " .. ns .. " --context admin --kubeconfig ", 1, true),
        r.err)
      assert.truthy(r.err:find("/config) and apply again; to keep it where " ..
        "it is, pin it in the manifest (annotation fluence.flux-framework.org/require-backend: gpu-a)", 1, true), r.err)
      assert.matches("nothing was applied %(1 object cannot take the new selection%)", r.err)
      -- the Deployment could have moved, but nothing was applied
      for _, e in ipairs(api:audit()) do
        assert.is_true(e.verb ~= "patch" or e.query.dryRun == "All", "applied: " .. e.uri)
      end
      assert.are.same(before, state())
    end)

    it("moves a Deployment (one new rollout) when its selection changes, and the Job once re-created", function()
      local dearer = attributes(dir, { { "gpu-a", 5 }, { "gpu-b", 2 } })
      api:request("DELETE", ("/apis/batch/v1/namespaces/%s/jobs/train"):format(ns), nil, nil,
                  { propagationPolicy = "Background" })
      local before = api:get(("/apis/apps/v1/namespaces/%s/deployments/serve"):format(ns))
      local r = fluence_apply(ns, file, dearer)
      assert.are.equal(0, r.code, r.err)
      local now = state()
      assert.are.equal("gpu-b", now.job_pin)
      assert.are.equal("gpu-b", now.pin)
      assert.are.equal(before.metadata.generation + 1, now.gen)
    end)

    it("keeps the audit's time when the same decision is applied again", function()
      local a1 = state().job_audit
      os.execute("sleep 1.1")
      local r = fluence_apply(ns, file, attributes(dir, { { "gpu-a", 5 }, { "gpu-b", 2 } }))
      assert.are.equal(0, r.code, r.err)
      assert.are.equal(a1, state().job_audit)
      assert.are.equal("gpu-b", json.decode(a1).chosen)
    end)
  end)
end)
