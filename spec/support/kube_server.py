#!/usr/bin/env python3
"""A small Kubernetes API server for the fluence specs (loopback, HTTPS).

Strict enough that the real kubectl works against it (spec/kube_kubectl_spec):
discovery (/api, /api/v1, /apis, /apis/GROUP/VERSION, /version), GET / LIST /
POST / PUT / PATCH (server-side apply, merge patch) / DELETE on an in-memory
store, dryRun=All, generateName, field managers with apply conflicts (409)
and force, Status bodies for every error, name validation (422).

Authentication: bearer tokens (--token TOKEN=USER), basic (--basic
USER:PASSWORD=USER), client certificates signed by the CA (user = CN).
Anonymous requests get 401; users named with --forbid get 403 everywhere.

Test paths (a kubeconfig's server URL may carry them as a prefix):
  /_slow/...      never answers (sleeps 60 s)
  /_500/...       500 InternalError
  /_delayMS/...   answers normally after MS milliseconds (a distant cluster)
  /_429N/...      the first N requests under this prefix get 429 with
                  Retry-After: 1, then the request is served

Options: --port-file PATH (required), --certs DIR (ca.crt, server.crt,
server.key; created with the openssl CLI when missing, plus other-ca.crt,
client.crt/key (CN cert-user) and name-only.crt/key valid only for
api.fluence.test), --server-cert NAME (serve NAME.crt/NAME.key), --seed
FILE.json (objects to preload), --huge-configmap BYTES (kube-system/huge),
--request-log PATH (one JSON line per request; never credentials).
"""
import argparse, base64, copy, datetime, json, os, re, ssl, subprocess, sys, threading, time, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

CORE = [  # name, kind, namespaced, verbs
    ("pods", "Pod", True), ("configmaps", "ConfigMap", True), ("secrets", "Secret", True),
    ("services", "Service", True), ("serviceaccounts", "ServiceAccount", True),
    ("podtemplates", "PodTemplate", True), ("namespaces", "Namespace", False),
    ("nodes", "Node", False), ("persistentvolumeclaims", "PersistentVolumeClaim", True),
]
GROUPS = {
    "batch": {"v1": [("jobs", "Job", True), ("cronjobs", "CronJob", True)]},
    "apps": {"v1": [("deployments", "Deployment", True), ("statefulsets", "StatefulSet", True),
                    ("replicasets", "ReplicaSet", True), ("daemonsets", "DaemonSet", True)]},
    "jobset.x-k8s.io": {"v1alpha2": [("jobsets", "JobSet", True)]},
    "scheduling.x-k8s.io": {"v1alpha1": [("podgroups", "PodGroup", True)]},
    "example.fluence.test": {"v1": [("widgets", "Widget", False)]},
}
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

LOCK = threading.Lock()
STORE = {}          # (group, resource, ns, name) -> object
OWNERS = {}         # same key -> {manager: {path: value}}
COUNTERS = {}
RV = [1000]
ARGS = None


def resources_of(group, version):
    if group == "":
        return CORE if version == "v1" else None
    return GROUPS.get(group, {}).get(version)


def find_resource(group, version, resource):
    for r in resources_of(group, version) or []:
        if r[0] == resource:
            return r
    return None


def resource_list(group, version):
    gv = version if group == "" else group + "/" + version
    res = []
    for name, kind, namespaced in resources_of(group, version):
        res.append({"name": name, "singularName": kind.lower(), "namespaced": namespaced,
                    "kind": kind, "verbs": VERBS})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": res}


def status(code, reason, message, details=None):
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason, "code": code}
    if details:
        s["details"] = details
    return code, s


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def leaves(obj, prefix=()):
    """Flattened field paths (tuples of keys; lists are leaves) -> values,
    for field ownership."""
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            if prefix == () and k in ("apiVersion", "kind"):
                continue
            p = prefix + (k,)
            if isinstance(v, dict) and v:
                out.update(leaves(v, p))
            else:
                out[p] = v
    return out


def show_path(p):
    return "." + ".".join(p)


def deep_merge(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            deep_merge(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)
    return dst


def merge_patch(dst, patch):
    for k, v in patch.items():
        if v is None:
            dst.pop(k, None)
        elif isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge_patch(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)
    return dst


def qualified(kind, group):
    return kind if group == "" else kind + "." + group


def plural_group(resource, group):
    return resource if group == "" else resource + "." + group


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, code, obj, headers=None):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    # --- authentication ---
    def authenticate(self):
        auth = self.headers.get("Authorization") or ""
        if auth.startswith("Bearer "):
            return ARGS.tokens.get(auth[7:]), "token"
        if auth.startswith("Basic "):
            try:
                up = base64.b64decode(auth[6:]).decode()
            except Exception:
                return None, "basic"
            return ARGS.basics.get(up), "basic"
        cert = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
        if cert:
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        return v, "certificate"
        return None, "anonymous"

    def handle_any(self):
        u = urlparse(self.path)
        q = {k: v[-1] for k, v in parse_qs(u.query).items()}
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        path = u.path
        m = re.match(r"^/_(slow|500|429(\d+)|delay(\d+))(/.*)$", path)
        mode = None
        arrived = time.time()
        if m:
            mode, path = m.group(1), m.group(4)
        user, how = self.authenticate()
        if ARGS.request_log:
            with LOCK, open(ARGS.request_log, "a") as f:
                f.write(json.dumps({"method": self.command, "path": path, "query": q, "user": user, "t": arrived,
                                    "auth": how, "content_type": self.headers.get("Content-Type"),
                                    "body": body.decode(errors="replace")[:2000]}) + "\n")
        if mode == "slow":
            time.sleep(60)
            return
        if mode and mode.startswith("delay"):
            time.sleep(int(mode[5:]) / 1000.0)
        if mode == "500":
            return self.send_json(*status(500, "InternalError", "Internal error occurred: the test server was asked to fail"))
        if mode and mode.startswith("429"):
            with LOCK:
                c = COUNTERS.get(mode, 0)
                COUNTERS[mode] = c + 1
            if c < int(mode[3:]):
                return self.send_json(*status(429, "TooManyRequests", "Too many requests, please try again later."),
                                      {"Retry-After": "1"})
        if user is None:
            return self.send_json(*status(401, "Unauthorized", "Unauthorized"))
        try:
            code, obj = self.route(self.command, path, q, body, user)
        except Exception as e:  # a bug in this server: say so clearly
            code, obj = status(500, "InternalError", "test server error: %r" % (e,))
        self.send_json(code, obj)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_any

    # --- routing ---
    def route(self, method, path, q, body, user):
        if path == "/version":
            return 200, {"major": "1", "minor": "30", "gitVersion": "v1.30.0-fluence-test",
                         "platform": "linux/amd64"}
        if path == "/openapi/v3":
            paths = {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=FLUENCETEST"}}
            for g, vs in GROUPS.items():
                for v in vs:
                    paths["apis/%s/%s" % (g, v)] = {"serverRelativeURL": "/openapi/v3/apis/%s/%s?hash=FLUENCETEST" % (g, v)}
            return 200, {"paths": paths}
        if path.startswith("/openapi/v3/"):
            return self.openapi_gv(path[len("/openapi/v3/"):])
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"],
                         "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
        if path == "/apis":
            groups = []
            for g, vs in GROUPS.items():
                vl = [{"groupVersion": g + "/" + v, "version": v} for v in vs]
                groups.append({"name": g, "versions": vl, "preferredVersion": vl[0]})
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        elif len(parts) == 2 and parts[0] == "apis":
            vs = GROUPS.get(parts[1])
            if not vs:
                return status(404, "NotFound", "the server could not find the requested resource")
            vl = [{"groupVersion": parts[1] + "/" + v, "version": v} for v in vs]
            return 200, {"kind": "APIGroup", "apiVersion": "v1", "name": parts[1], "versions": vl,
                         "preferredVersion": vl[0]}
        else:
            return status(404, "NotFound", "the server could not find the requested resource")
        if resources_of(group, version) is None:
            return status(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            return 200, resource_list(group, version)
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        res = find_resource(group, version, rest[0])
        if not res or len(rest) > 2:
            return status(404, "NotFound", "the server could not find the requested resource")
        resource, kind, namespaced = res
        name = rest[1] if len(rest) == 2 else None
        if namespaced != (ns is not None) and not (namespaced and ns is None and name is None and method == "GET"):
            return status(404, "NotFound", "the server could not find the requested resource")
        gr = plural_group(resource, group)
        verb = {"GET": "get" if name else "list", "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete", "HEAD": "get"}[method]
        if user in ARGS.forbid:
            where = ' in the namespace "%s"' % ns if ns else " at the cluster scope"
            target = '%s "%s"' % (gr, name) if name else gr
            return status(403, "Forbidden",
                          '%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s"%s'
                          % (target, user, verb, resource, group, where),
                          {"name": name or "", "group": group, "kind": resource})
        ctx = dict(group=group, version=version, resource=resource, kind=kind, ns=ns, gr=gr)
        if ns is not None and method in ("POST", "PUT", "PATCH"):
            with LOCK:
                known = ("", "namespaces", None, ns) in STORE
            if not known:
                return status(404, "NotFound", 'namespaces "%s" not found' % ns,
                              {"name": ns, "kind": "namespaces"})
        if name is None:
            if method == "GET":
                return self.list(ctx)
            if method == "POST":
                return self.create(ctx, q, body)
            return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        key = (group, resource, ns, name)
        if method in ("GET", "HEAD"):
            with LOCK:
                obj = STORE.get(key)
            if obj is None:
                return status(404, "NotFound", '%s "%s" not found' % (gr, name),
                              {"name": name, "group": group, "kind": resource})
            return 200, obj
        if method == "DELETE":
            with LOCK:
                obj = STORE.pop(key, None)
                OWNERS.pop(key, None)
            if obj is None:
                return status(404, "NotFound", '%s "%s" not found' % (gr, name))
            return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success", "details": {"name": name}}
        if method == "PATCH":
            return self.patch(ctx, key, q, body)
        if method == "PUT":
            return self.put(ctx, key, q, body)
        return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def openapi_gv(self, gvpath):
        """Just enough OpenAPI v3 for kubectl to see that PATCH takes
        fieldValidation (so it validates on the server, not client-side)."""
        parts = gvpath.split("/")
        group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        rs = resources_of(group, version)
        if rs is None:
            return status(404, "NotFound", "the server could not find the requested resource")
        params = [{"name": n, "in": "query", "schema": {"type": "string"}}
                  for n in ("dryRun", "fieldManager", "fieldValidation", "force")]
        paths = {}
        for name, kind, namespaced in rs:
            base = "/" + gvpath + ("/namespaces/{namespace}/" if namespaced else "/") + name + "/{name}"
            paths[base] = {"patch": {"x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": kind},
                                     "parameters": params, "responses": {"200": {"description": "OK"}}}}
        return 200, {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.30.0"},
                     "paths": paths, "components": {"schemas": {}}}

    def list(self, ctx):
        with LOCK:
            items = [o for (g, r, ns, _), o in sorted(STORE.items(), key=lambda kv: str(kv[0]))
                     if g == ctx["group"] and r == ctx["resource"] and (ctx["ns"] is None or ns == ctx["ns"])]
        av = "v1" if ctx["group"] == "" else ctx["group"] + "/" + ctx["version"]
        return 200, {"kind": ctx["kind"] + "List", "apiVersion": av,
                     "metadata": {"resourceVersion": str(RV[0])}, "items": items}

    def decode(self, body):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        try:
            return ctype, json.loads(body.decode() or "null")
        except Exception as e:
            return ctype, e

    def check(self, ctx, obj, name=None):
        """Validates an incoming object for this endpoint: None or a Status."""
        if not isinstance(obj, dict):
            return status(400, "BadRequest", "the body of the request was in an unknown format")
        av = "v1" if ctx["group"] == "" else ctx["group"] + "/" + ctx["version"]
        if obj.get("apiVersion") != av or obj.get("kind") != ctx["kind"]:
            return status(400, "BadRequest", "the API version in the data (%s) does not match the expected API version (%s)"
                          % (obj.get("apiVersion"), av) if obj.get("apiVersion") != av else
                          "the kind in the data (%s) does not match the expected kind (%s)" % (obj.get("kind"), ctx["kind"]))
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            return status(400, "BadRequest", "Object 'metadata' is missing or not an object")
        if name and meta.get("name") not in (None, name):
            return status(400, "BadRequest", "the name of the object (%s) does not match the name on the URL (%s)"
                          % (meta.get("name"), name))
        if ctx["ns"] and meta.get("namespace") not in (None, ctx["ns"]):
            return status(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request")
        n = meta.get("name") or name
        qual = qualified(ctx["kind"], ctx["group"])
        if n and (len(n) > 253 or not NAME_RE.match(n)):
            return status(422, "Invalid", '%s "%s" is invalid: metadata.name: Invalid value: "%s": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character' % (qual, n, n),
                          {"name": n, "group": ctx["group"], "kind": ctx["kind"],
                           "causes": [{"reason": "FieldValueInvalid", "field": "metadata.name",
                                       "message": "Invalid value: \"%s\"" % n}]})
        spec = obj.get("spec") or {}
        missing = None
        if ctx["kind"] == "Pod" and not (spec.get("containers")):
            missing = "spec.containers"
        if ctx["kind"] in ("Job", "Deployment", "StatefulSet", "ReplicaSet", "DaemonSet") and not spec.get("template"):
            missing = "spec.template"
        if missing:
            return status(422, "Invalid", '%s "%s" is invalid: %s: Required value' % (qual, n, missing),
                          {"name": n, "kind": ctx["kind"], "causes": [{"reason": "FieldValueRequired", "field": missing}]})
        return None

    def stamp(self, ctx, obj, name, old=None):
        meta = obj.setdefault("metadata", {})
        meta["name"] = name
        if ctx["ns"]:
            meta["namespace"] = ctx["ns"]
        RV[0] += 1
        meta["resourceVersion"] = str(RV[0])
        if old:
            meta["uid"] = old["metadata"]["uid"]
            meta["creationTimestamp"] = old["metadata"]["creationTimestamp"]
            meta["generation"] = old["metadata"].get("generation", 1) + (old.get("spec") != obj.get("spec"))
        else:
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now()
            meta["generation"] = 1

    def managed(self, key, obj):
        av = obj.get("apiVersion")
        mf = []
        for mgr, fields in sorted(OWNERS.get(key, {}).items()):
            fv = {}
            for p in sorted(fields):
                d = fv
                for k in p:
                    d = d.setdefault("f:" + k, {})
            mf.append({"manager": mgr, "operation": "Apply",
                       "apiVersion": av, "time": now(), "fieldsType": "FieldsV1", "fieldsV1": fv})
        obj["metadata"]["managedFields"] = mf

    def create(self, ctx, q, body):
        ctype, obj = self.decode(body)
        if isinstance(obj, Exception):
            return status(400, "BadRequest", "the body of the request was in an unknown format")
        bad = self.check(ctx, obj)
        if bad:
            return bad
        meta = obj["metadata"]
        name = meta.get("name")
        if not name and meta.get("generateName"):
            name = meta["generateName"] + uuid.uuid4().hex[:5]
        if not name:
            return status(422, "Invalid", '%s "" is invalid: metadata.name: Required value: name or generateName is required'
                          % qualified(ctx["kind"], ctx["group"]))
        if meta.get("managedFields"):
            return status(400, "BadRequest", "metadata.managedFields must be nil")
        key = (ctx["group"], ctx["resource"], ctx["ns"], name)
        with LOCK:
            if key in STORE:
                return status(409, "AlreadyExists", '%s "%s" already exists' % (ctx["gr"], name),
                              {"name": name, "group": ctx["group"], "kind": ctx["resource"]})
            obj = copy.deepcopy(obj)
            self.stamp(ctx, obj, name)
            if q.get("dryRun") != "All":
                mgr = q.get("fieldManager", "unknown")
                OWNERS[key] = {mgr: leaves(obj)}
                self.managed(key, obj)
                STORE[key] = obj
        return 201, obj

    def put(self, ctx, key, q, body):
        ctype, obj = self.decode(body)
        if isinstance(obj, Exception):
            return status(400, "BadRequest", "the body of the request was in an unknown format")
        bad = self.check(ctx, obj, key[3])
        if bad:
            return bad
        with LOCK:
            old = STORE.get(key)
            if old is None:
                return status(404, "NotFound", '%s "%s" not found' % (ctx["gr"], key[3]))
            obj = copy.deepcopy(obj)
            self.stamp(ctx, obj, key[3], old)
            if q.get("dryRun") != "All":
                STORE[key] = obj
        return 200, obj

    def patch(self, ctx, key, q, body):
        ctype, patch = self.decode(body)
        name = key[3]
        if ctype not in ("application/apply-patch+yaml", "application/merge-patch+json",
                         "application/strategic-merge-patch+json"):
            return status(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
        if isinstance(patch, Exception):
            return status(400, "BadRequest", "error decoding patch: %s (this test server accepts JSON bodies only)" % patch)
        dry = q.get("dryRun") == "All"
        if ctype != "application/apply-patch+yaml":
            with LOCK:
                old = STORE.get(key)
                if old is None:
                    return status(404, "NotFound", '%s "%s" not found' % (ctx["gr"], name))
                obj = merge_patch(copy.deepcopy(old), patch)
                self.stamp(ctx, obj, name, old)
                if not dry:
                    STORE[key] = obj
            return 200, obj
        mgr = q.get("fieldManager")
        if not mgr:
            return status(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch')
        bad = self.check(ctx, patch, name)
        if bad:
            return bad
        if "managedFields" in patch["metadata"]:
            return status(400, "BadRequest", "metadata.managedFields must be nil")
        force = q.get("force") == "true"
        with LOCK:
            old = STORE.get(key)
            mine = leaves(patch)
            owners = copy.deepcopy(OWNERS.get(key, {}))
            if old is not None:
                oldleaves = leaves(old)
                conflicts = []
                for other, fields in owners.items():
                    if other == mgr:
                        continue
                    for p in fields:
                        if p in mine and mine[p] != oldleaves.get(p):
                            conflicts.append((other, p))
                if conflicts and not force:
                    av = patch.get("apiVersion")
                    lines = ["conflict with \"%s\" using %s: %s" % (o, av, show_path(p)) for o, p in sorted(conflicts)]
                    msg = "Apply failed with %d conflict%s: %s" % (len(lines), "" if len(lines) == 1 else "s",
                                                                  "\n".join(lines))
                    return status(409, "Conflict", msg, {"causes": [{"reason": "FieldManagerConflict", "message": l} for l in lines]})
                for other, p in conflicts:
                    owners[other].pop(p, None)
                obj = copy.deepcopy(old)
                obj["metadata"].pop("managedFields", None)
                # fields this manager owned before and no longer applies go away
                for p in owners.get(mgr, {}):
                    if p not in mine and not any(p in f for o, f in owners.items() if o != mgr):
                        d = obj
                        for k in p[:-1]:
                            d = d.get(k) if isinstance(d, dict) else None
                        if isinstance(d, dict):
                            d.pop(p[-1], None)
                deep_merge(obj, patch)
                self.stamp(ctx, obj, name, old)
                code = 200
            else:
                obj = copy.deepcopy(patch)
                self.stamp(ctx, obj, name)
                code = 201
            owners[mgr] = mine
            if not dry:
                OWNERS[key] = owners
                self.managed(key, obj)
                STORE[key] = obj
            else:
                obj["metadata"]["managedFields"] = []
        return code, obj


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certs(d):
    """CA, server (127.0.0.1, localhost), client (CN cert-user), an unrelated
    CA and a server certificate valid only for api.fluence.test."""
    os.makedirs(d, exist_ok=True)
    if os.path.exists(os.path.join(d, "done")):
        return
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", ca + ".key", "-out", ca + ".crt", "-days", "2", "-subj", "/CN=fluence-test-" + ca, cwd=d)

    def leaf(name, subj, ext, ca="ca"):
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext)
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", name + ".key", "-out", name + ".csr", "-subj", subj, cwd=d)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
                "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext", cwd=d)

    leaf("server", "/CN=fluence-test-apiserver",
         "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    leaf("name-only", "/CN=api.fluence.test",
         "subjectAltName=DNS:api.fluence.test\nextendedKeyUsage=serverAuth\n")
    leaf("client", "/CN=cert-user/O=fluence-testers", "extendedKeyUsage=clientAuth\n")
    leaf("rogue-client", "/CN=rogue-user", "extendedKeyUsage=clientAuth\n", ca="other-ca")
    open(os.path.join(d, "done"), "w").close()


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--certs", required=True)
    ap.add_argument("--server-cert", default="server")
    ap.add_argument("--token", action="append", default=[])
    ap.add_argument("--basic", action="append", default=[])
    ap.add_argument("--forbid", action="append", default=[])
    ap.add_argument("--seed")
    ap.add_argument("--huge-configmap", type=int, default=0)
    ap.add_argument("--request-log")
    ARGS = ap.parse_args()
    ARGS.tokens = dict(t.split("=", 1) for t in ARGS.token)
    ARGS.basics = dict(b.rsplit("=", 1) for b in ARGS.basic)
    make_certs(ARGS.certs)
    if ARGS.seed:
        with open(ARGS.seed) as f:
            for obj in json.load(f):
                gv = obj["apiVersion"]
                group, version = (gv.split("/") + [""])[:2] if "/" in gv else ("", gv)
                for r in resources_of(group, version) or []:
                    if r[1] == obj["kind"]:
                        ns = obj["metadata"].get("namespace", "default") if r[2] else None
                        if ns:
                            obj["metadata"]["namespace"] = ns
                        key = (group, r[0], ns, obj["metadata"]["name"])
                        obj["metadata"].setdefault("uid", str(uuid.uuid4()))
                        obj["metadata"].setdefault("resourceVersion", "1")
                        obj["metadata"].setdefault("creationTimestamp", now())
                        STORE[key] = obj
    for ns in ("default", "kube-system", "kube-public", "team-a"):
        STORE[("", "namespaces", None, ns)] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": ns, "uid": str(uuid.uuid4()), "resourceVersion": "1", "creationTimestamp": now()},
            "status": {"phase": "Active"}}
    if ARGS.huge_configmap:
        STORE[("", "configmaps", "kube-system", "huge")] = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "huge", "namespace": "kube-system", "uid": str(uuid.uuid4()), "resourceVersion": "1"},
            "data": {"resources.yaml": "- name: big\n" + "#" * ARGS.huge_configmap + "\n"}}
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(ARGS.certs, ARGS.server_cert + ".crt"),
                        os.path.join(ARGS.certs, ARGS.server_cert + ".key"))
    ctx.load_verify_locations(os.path.join(ARGS.certs, "ca.crt"))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)

    # the TLS handshake happens in the handler thread, not the accept loop
    orig_finish = srv.finish_request

    def finish_request(request, client_address):
        try:
            request.do_handshake()
        except (ssl.SSLError, OSError):
            return
        orig_finish(request, client_address)
    srv.finish_request = finish_request
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
