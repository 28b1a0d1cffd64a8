-- Related objects follow their workload across contexts (issue 27, point
-- 4), against two real API servers.  A ConfigMap, Secret, PVC or
-- ServiceAccount a placed workload uses (envFrom, env valueFrom, volumes,
-- serviceAccountName, and the Secrets of that ServiceAccount), a Service
-- selecting its pods and an object with the same group label go to the
-- workload's cluster -- they used to go to the first context named, and the
-- workload started without its config.  One used by workloads in both
-- clusters goes to both; unrelated objects go to the kubeconfig's current
-- context; each is said on stderr.
local json = require "fluence.json"
local cli = require "support.cli"
local envtest = require "support.envtest"

envtest.describe("related objects follow their workload", function(east)
  local west = assert(envtest.get("west"))
  local dir, ns, kubeconfig, attrs

  setup(function()
    dir = cli.tmpdir()
    ns = "related"
    kubeconfig = envtest.contexts(dir .. "/config", ns, { { "east", east }, { "west", west } })
    attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-a\n    attributes: {cost_usd: 1}\n")
  end)
  teardown(cli.cleanup)

  local MANIFEST = [[
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations:
    fluence.flux-framework.org/select-policy: "require:context=west"
spec:
  template:
    metadata:
      labels: {app: train, fluence.flux-framework.org/group: train-gang}
    spec:
      schedulerName: fluence
      restartPolicy: Never
      serviceAccountName: trainer
      containers:
        - name: c
          image: busybox
          envFrom: [{configMapRef: {name: train-config}}]
          env:
            - name: TOKEN
              valueFrom: {secretKeyRef: {name: train-token, key: token}}
          volumeMounts: [{name: data, mountPath: /data}, {name: shared, mountPath: /shared}]
      volumes:
        - name: data
          persistentVolumeClaim: {claimName: train-data}
        - name: shared
          configMap: {name: shared-config}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: eval
  annotations:
    fluence.flux-framework.org/select-policy: "require:context=east"
spec:
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers:
        - name: c
          image: busybox
          volumeMounts: [{name: shared, mountPath: /shared}]
      volumes:
        - name: shared
          projected: {sources: [{configMap: {name: shared-config}}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: train-config}
data: {EPOCHS: "3"}
---
apiVersion: v1
kind: Secret
metadata: {name: train-token}
stringData: {token: not-a-real-one}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: train-data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: trainer}
imagePullSecrets: [{name: registry}]
---
apiVersion: v1
kind: Secret
metadata: {name: registry}
type: kubernetes.io/dockerconfigjson
stringData: {.dockerconfigjson: "{}"}
---
apiVersion: v1
kind: Service
metadata: {name: train-svc}
spec:
  selector: {app: train}
  ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: gang-notes
  labels: {fluence.flux-framework.org/group: train-gang}
data: {note: "same group"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: shared-config}
data: {x: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated}
data: {x: "1"}
]]

  local function where(kind_path, name)
    local path = ("/api/v1/namespaces/%s/%s/%s"):format(ns, kind_path, name)
    local out = {}
    if east:get(path) then out[#out + 1] = "east" end
    if west:get(path) then out[#out + 1] = "west" end
    return table.concat(out, ",")
  end

  it("sends what a workload uses to its cluster, shared objects to both, the rest to the current context", function()
    local file = cli.write(dir .. "/all.yaml", MANIFEST)
    -- west named first: the unrelated object still goes to the current context
    local r = cli.run{ "apply", "-f", file, "--attributes", attrs, "--kubeconfig", kubeconfig,
                       "--context", "west", "--context", "east" }
    assert.are.equal(0, r.code, r.err)
    assert.is_table(west:get(("/apis/batch/v1/namespaces/%s/jobs/train"):format(ns)))
    assert.is_table(east:get(("/apis/batch/v1/namespaces/%s/jobs/eval"):format(ns)))
    assert.are.equal("west", where("configmaps", "train-config"))
    assert.are.equal("west", where("secrets", "train-token"))
    assert.are.equal("west", where("persistentvolumeclaims", "train-data"))
    assert.are.equal("west", where("serviceaccounts", "trainer"))
    assert.are.equal("west", where("secrets", "registry"))
    assert.are.equal("west", where("services", "train-svc"))
    assert.are.equal("west", where("configmaps", "gang-notes"))
    assert.are.equal("east,west", where("configmaps", "shared-config"))
    assert.are.equal("east", where("configmaps", "unrelated"))
    -- where each went, and why, on stderr; each result names its context
    assert.truthy(r.err:find('fluence: configmap/train-config follows job.batch/train (envFrom) to context "west"\n',
                             1, true), r.err)
    assert.truthy(r.err:find('fluence: secret/train-token follows job.batch/train (env valueFrom) to context "west"\n',
                             1, true), r.err)
    assert.truthy(r.err:find('fluence: secret/registry follows job.batch/train (imagePullSecrets) to context "west"\n',
                             1, true), r.err)
    assert.truthy(r.err:find('fluence: service/train-svc follows job.batch/train (a Service selecting its pods) ' ..
                             'to context "west"\n', 1, true), r.err)
    assert.truthy(r.err:find('fluence: configmap/shared-config follows job.batch/train (volume) to contexts ' ..
                             '"west" and "east"\n', 1, true), r.err)
    assert.truthy(r.err:find('fluence: configmap/unrelated goes to context "east" (related to no placed workload)\n',
                             1, true), r.err)
    assert.matches("configmap/shared%-config %(context west%) serverside%-applied\n", r.out)
    assert.matches("configmap/shared%-config %(context east%) serverside%-applied\n", r.out)
    -- secrets never reach stdout or stderr
    assert.is_nil(r.out:find("not-a-real-one", 1, true))
    assert.is_nil(r.err:find("not-a-real-one", 1, true))
  end)

  it("says nothing and changes nothing with one context", function()
    local file = cli.write(dir .. "/one.yaml", MANIFEST:gsub("require:context=%a+", "min-cost"))
    local r = cli.run{ "apply", "-f", file, "--attributes", attrs, "--kubeconfig", kubeconfig, "--context", "west",
                       "-n", "default" }
    assert.are.equal(0, r.code, r.err)
    assert.is_nil(r.err:find("follows", 1, true), r.err)
    assert.is_nil(r.out:find("(context", 1, true), r.out)
    assert.is_table(west:get("/api/v1/namespaces/default/configmaps/unrelated"))
  end)
end)
