#!/usr/bin/env python3
"""A generated cluster for `make bench` (issue 17): NODES nodes and PODS pods,
served as a Kubernetes API server would list them (plain HTTP on loopback,
paged with limit/continue, the pods' field selector honoured), so fluence's
graph and fits:now can be timed at scale without creating 150,000 pods in a
real etcd.  Every page is made once, at the first request for it.

    cluster_server.py --port-file PATH [--nodes 5000] [--pods 150000]
                      [--offerings FILE] [--tls-cert PEM --tls-key PEM]

--offerings serves FILE as the fluence-resources ConfigMap's resources.yaml
(kube-system); --tls-cert/--tls-key serve HTTPS instead of plain HTTP.

Objects look like what a cluster returns for Job-made pods on GPU nodes:
metadata with labels, an owner and managed fields; a container with
requests, limits, env and mounts; a status with conditions and IPs; nodes
with capacity, allocatable, conditions, addresses and a list of images.
"""
import argparse, json, os, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

ARGS = None
CACHE = {}
LOCK = threading.Lock()
TS = "2026-11-01T00:00:00Z"


def node(i):
    name = "node-%05d" % i
    res = {"cpu": "64", "memory": "263921968Ki", "nvidia.com/gpu": "8", "pods": "110", "ephemeral-storage": "1Ti"}
    alloc = {"cpu": "63500m", "memory": "262800000Ki", "nvidia.com/gpu": "8", "pods": "110",
             "ephemeral-storage": "900Gi"}
    return {
        "metadata": {"name": name, "uid": "n-%032x" % i, "resourceVersion": str(1000 + i),
                     "creationTimestamp": TS,
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "gpu-8x",
                                "topology.kubernetes.io/zone": "zone-%d" % (i % 3)},
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"podCIDR": "10.%d.%d.0/24" % (i // 256, i % 256), "providerID": "gce://bench/%s" % name},
        "status": {
            "capacity": res, "allocatable": alloc,
            "conditions": [{"type": t, "status": "False" if t != "Ready" else "True", "lastHeartbeatTime": TS,
                            "lastTransitionTime": TS, "reason": "Kubelet" + t, "message": "kubelet is posting " + t}
                           for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")],
            "addresses": [{"type": "InternalIP", "address": "10.128.%d.%d" % (i // 256, i % 256)},
                          {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": "v1.26.4", "osImage": "Debian GNU/Linux 12", "kernelVersion": "6.1.0",
                         "containerRuntimeVersion": "containerd://1.6.20", "architecture": "amd64",
                         "operatingSystem": "linux", "machineID": "%032x" % i, "systemUUID": "%032x" % i,
                         "bootID": "%032x" % i, "kubeProxyVersion": "v1.26.4"},
            "images": [{"names": ["registry.example.com/team/app-%d@sha256:%064x" % (k, k),
                                  "registry.example.com/team/app-%d:v1.%d" % (k, k)], "sizeBytes": 100000000 + k}
                       for k in range(8)],
        },
    }


def pod(i):
    node_i = i % ARGS.nodes
    phase = "Succeeded" if i % 50 == 0 else "Running"
    job = "job-%d" % (i // 20)
    return {
        "metadata": {"name": "%s-%05d" % (job, i % 20), "generateName": job + "-", "namespace": "team-%d" % (i % 40),
                     "uid": "p-%032x" % i, "resourceVersion": str(200000 + i), "creationTimestamp": TS,
                     "labels": {"job-name": job, "batch.kubernetes.io/job-name": job,
                                "controller-uid": "c-%032x" % (i // 20)},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                          "uid": "c-%032x" % (i // 20), "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": {
            "nodeName": "node-%05d" % node_i, "schedulerName": "fluence", "restartPolicy": "Never",
            "serviceAccountName": "default", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "containers": [{"name": "worker", "image": "registry.example.com/team/app-%d:v1.%d" % (i % 8, i % 8),
                            "env": [{"name": "RANK", "value": str(i % 20)}, {"name": "WORLD", "value": "20"}],
                            "resources": {"requests": {"cpu": "1500m", "memory": "6Gi", "nvidia.com/gpu": "0"},
                                          "limits": {"cpu": "2", "memory": "8Gi"}},
                            "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                                              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                            "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent"}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {"phase": phase, "hostIP": "10.128.%d.%d" % (node_i // 256, node_i % 256),
                   "podIP": "10.%d.%d.%d" % (node_i // 256, node_i % 256, i % 250), "startTime": TS,
                   "qosClass": "Burstable"},
    }


def page(kind, start, limit, selector):
    key = (kind, start, limit, selector)
    with LOCK:
        if key in CACHE:
            return CACHE[key]
    total = ARGS.nodes if kind == "nodes" else ARGS.pods
    items = []
    i = start
    while i < total and len(items) < limit:
        if kind == "nodes":
            items.append(node(i))
        else:
            p = pod(i)
            if not (selector and p["status"]["phase"] in ("Succeeded", "Failed")):
                items.append(p)
        i += 1
    meta = {"resourceVersion": "999999"}
    if i < total:
        meta["continue"] = "%s-%d" % (kind, i)
    body = json.dumps({"kind": "NodeList" if kind == "nodes" else "PodList", "apiVersion": "v1",
                       "metadata": meta, "items": items}, separators=(",", ":")).encode()
    with LOCK:
        CACHE[key] = body
    return body


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        u = urlparse(self.path)
        q = parse_qs(u.query)
        limit = int(q.get("limit", ["500"])[0] or 500)
        cont = q.get("continue", [""])[0]
        start = int(cont.rsplit("-", 1)[1]) if cont else 0
        if ARGS.offerings and u.path == "/api/v1/namespaces/kube-system/configmaps/fluence-resources":
            with open(ARGS.offerings) as f:
                cm = {"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "fluence-resources", "namespace": "kube-system"},
                      "data": {"resources.yaml": f.read()}}
            self.send(200, json.dumps(cm).encode())
        elif u.path in ("/api/v1/nodes", "/api/v1/pods"):
            kind = u.path.rsplit("/", 1)[1]
            self.send(200, page(kind, start, limit, q.get("fieldSelector", [""])[0]))
        else:
            self.send(404, json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                       "message": "not found", "reason": "NotFound", "code": 404}).encode())


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150000)
    ap.add_argument("--offerings")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ARGS = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if ARGS.tls_cert:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ARGS.tls_cert, ARGS.tls_key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
