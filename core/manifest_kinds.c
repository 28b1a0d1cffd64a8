/* fluence.manifest, part 6: where each known kind keeps its pods.
 *
 * One table, read by the manifest reader (the fast path: a known kind's
 * pod templates are found at these paths, nowhere else, as its schema has
 * them), by manifest.kinds() (docs/kubernetes.md's table is checked
 * against it by spec/manifest_kinds_spec.lua) and by nothing else.  Any
 * other kind is searched by shape: every mapping whose spec has a
 * containers list is a pod template (manifest.c).
 *
 * A path runs from the object: "a.b" keys, "a[]" every item of a list,
 * "*" every value of a mapping.  Each pod says where its metadata is (the
 * pin goes into its annotations), where its schedulerName is, where its
 * containers are, and for a kind whose pods take the object's scheduler
 * when they name none (Volcano's Job), where that is. */
#include <string.h>
#include <lauxlib.h>
#include "manifest_kinds.h"

#define TEMPLATE(path) { path, "metadata", "spec.schedulerName", "spec.containers", NULL, 0 }
#define END { NULL, NULL, NULL, NULL, NULL, 0 }

const struct mk_pod mk_pod_template = TEMPLATE("");

static const struct mk_pod self[] = { TEMPLATE(""), END };
static const struct mk_pod template[] = { TEMPLATE("template"), END };
static const struct mk_pod spec_template[] = { TEMPLATE("spec.template"), END };
static const struct mk_pod cronjob[] = { TEMPLATE("spec.jobTemplate.spec.template"), END };
static const struct mk_pod jobset[] = { TEMPLATE("spec.replicatedJobs[].template.spec.template"), END };
static const struct mk_pod pytorch[] = { TEMPLATE("spec.pytorchReplicaSpecs.*.template"), END };
static const struct mk_pod tf[] = { TEMPLATE("spec.tfReplicaSpecs.*.template"), END };
static const struct mk_pod mpi[] = { TEMPLATE("spec.mpiReplicaSpecs.*.template"), END };
static const struct mk_pod xgb[] = { TEMPLATE("spec.xgbReplicaSpecs.*.template"), END };
static const struct mk_pod paddle[] = { TEMPLATE("spec.paddleReplicaSpecs.*.template"), END };
static const struct mk_pod jax[] = { TEMPLATE("spec.jaxReplicaSpecs.*.template"), END };
static const struct mk_pod volcano[] = {
    { "spec.tasks[].template", "metadata", "spec.schedulerName", "spec.containers", "spec.schedulerName", 0 }, END
};
static const struct mk_pod workflow[] = {
    { "spec", "podMetadata", "schedulerName", NULL, NULL, 0 },
    { "spec.templates[]", "metadata", "schedulerName", NULL, NULL, 0 }, END
};
static const struct mk_pod cronworkflow[] = {
    { "spec.workflowSpec", "podMetadata", "schedulerName", NULL, NULL, 0 },
    { "spec.workflowSpec.templates[]", "metadata", "schedulerName", NULL, NULL, 0 }, END
};
static const struct mk_pod lws[] = {
    TEMPLATE("spec.leaderWorkerTemplate.leaderTemplate"), TEMPLATE("spec.leaderWorkerTemplate.workerTemplate"), END
};
static const struct mk_pod raycluster[] = {
    TEMPLATE("spec.headGroupSpec.template"), TEMPLATE("spec.workerGroupSpecs[].template"), END
};
static const struct mk_pod rayjob[] = {
    TEMPLATE("spec.rayClusterSpec.headGroupSpec.template"), TEMPLATE("spec.rayClusterSpec.workerGroupSpecs[].template"),
    TEMPLATE("spec.submitterPodTemplate"), END
};
static const struct mk_pod rayservice[] = {
    TEMPLATE("spec.rayClusterConfig.headGroupSpec.template"),
    TEMPLATE("spec.rayClusterConfig.workerGroupSpecs[].template"), END
};
static const struct mk_pod sandbox[] = { TEMPLATE("spec.podTemplate"), END };
/* the Flux Operator copies spec.pod's annotations and labels to the pods;
 * the MiniCluster's group label counts for them (as fluence always had it) */
static const struct mk_pod minicluster[] = { { "spec", "pod", "pod.schedulerName", "containers", NULL, 1 }, END };
static const struct mk_pod workload[] = { TEMPLATE("spec.podSets[].template"), END };

/* Sorted by group, then kind.  source: where the paths come from. */
static const struct mk_kind kinds[] = {
    { "", "Pod", self, "Kubernetes core/v1" },
    { "", "PodTemplate", template, "Kubernetes core/v1" },
    { "", "ReplicationController", spec_template, "Kubernetes core/v1" },
    { "agents.x-k8s.io", "Sandbox", sandbox, "kubernetes-sigs/agent-sandbox" },
    { "apps", "DaemonSet", spec_template, "Kubernetes apps/v1" },
    { "apps", "Deployment", spec_template, "Kubernetes apps/v1" },
    { "apps", "ReplicaSet", spec_template, "Kubernetes apps/v1" },
    { "apps", "StatefulSet", spec_template, "Kubernetes apps/v1" },
    { "argoproj.io", "ClusterWorkflowTemplate", workflow, "argoproj/argo-workflows" },
    { "argoproj.io", "CronWorkflow", cronworkflow, "argoproj/argo-workflows" },
    { "argoproj.io", "Rollout", spec_template, "argoproj/argo-rollouts" },
    { "argoproj.io", "Workflow", workflow, "argoproj/argo-workflows" },
    { "argoproj.io", "WorkflowTemplate", workflow, "argoproj/argo-workflows" },
    { "batch", "CronJob", cronjob, "Kubernetes batch/v1" },
    { "batch", "Job", spec_template, "Kubernetes batch/v1" },
    { "batch.volcano.sh", "Job", volcano, "volcano-sh/volcano" },
    { "extensions.agents.x-k8s.io", "SandboxTemplate", sandbox, "kubernetes-sigs/agent-sandbox" },
    { "flux-framework.org", "MiniCluster", minicluster, "flux-framework/flux-operator" },
    { "jobset.x-k8s.io", "JobSet", jobset, "kubernetes-sigs/jobset" },
    { "kubeflow.org", "JAXJob", jax, "kubeflow/training-operator" },
    { "kubeflow.org", "MPIJob", mpi, "kubeflow/mpi-operator, kubeflow/training-operator" },
    { "kubeflow.org", "Notebook", spec_template, "kubeflow/kubeflow" },
    { "kubeflow.org", "PaddleJob", paddle, "kubeflow/training-operator" },
    { "kubeflow.org", "PyTorchJob", pytorch, "kubeflow/training-operator" },
    { "kubeflow.org", "TFJob", tf, "kubeflow/training-operator" },
    { "kubeflow.org", "XGBoostJob", xgb, "kubeflow/training-operator" },
    { "kueue.x-k8s.io", "Workload", workload, "kubernetes-sigs/kueue" },
    { "leaderworkerset.x-k8s.io", "LeaderWorkerSet", lws, "kubernetes-sigs/lws" },
    { "ray.io", "RayCluster", raycluster, "ray-project/kuberay" },
    { "ray.io", "RayJob", rayjob, "ray-project/kuberay" },
    { "ray.io", "RayService", rayservice, "ray-project/kuberay" },
};

const struct mk_kind *mk_find(const char *api_version, const char *kind)
{
    if (!api_version || !kind) return NULL;
    const char *slash = strchr(api_version, '/');
    size_t glen = slash ? (size_t)(slash - api_version) : 0;     /* "v1": the core group */
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (strcmp(kinds[i].kind, kind) == 0 && strlen(kinds[i].group) == glen &&
            memcmp(kinds[i].group, api_version, glen) == 0)
            return &kinds[i];
    }
    return NULL;
}

/* manifest.kinds() -> { {group =, kind =, source =, pods = { {at =, metadata =,
 * scheduler =, containers =, inherit =}, ...}}, ...} (paths as in the table;
 * group =; metadata: the key of the pod's metadata at `at`) */
int mk_push_table(lua_State *L)
{
    lua_createtable(L, (int)(sizeof kinds / sizeof kinds[0]), 0);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const struct mk_kind *k = &kinds[i];
        lua_createtable(L, 0, 4);
        lua_pushstring(L, k->group);
        lua_setfield(L, -2, "group");
        lua_pushstring(L, k->kind);
        lua_setfield(L, -2, "kind");
        lua_pushstring(L, k->source);
        lua_setfield(L, -2, "source");
        lua_newtable(L);
        for (int j = 0; k->pods[j].at; j++) {
            const struct mk_pod *p = &k->pods[j];
            lua_createtable(L, 0, 5);
            lua_pushstring(L, p->at);
            lua_setfield(L, -2, "at");
            lua_pushstring(L, p->meta);
            lua_setfield(L, -2, "metadata");
            lua_pushstring(L, p->scheduler);
            lua_setfield(L, -2, "scheduler");
            if (p->containers) { lua_pushstring(L, p->containers); lua_setfield(L, -2, "containers"); }
            if (p->inherit) { lua_pushstring(L, p->inherit); lua_setfield(L, -2, "inherit"); }
            if (p->group) { lua_pushboolean(L, 1); lua_setfield(L, -2, "group"); }
            lua_rawseti(L, -2, j + 1);
        }
        lua_setfield(L, -2, "pods");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}
