#!/usr/bin/env python3
"""A stand-in Kubernetes API server (loopback, HTTPS) for what a real
kube-apiserver cannot be made to do.  Everything else runs against the real
one (spec/support/envtest.lua).

Faults, as prefixes of the server URL in a kubeconfig:
  /_slow/...      never answers (sleeps 60 s)
  /_500/...       500 InternalError
  /_429N/...      the first N requests under this prefix get 429 with
                  Retry-After: 1, then the request is served
  /_429always/... 429 forever, Retry-After: 1
  /_429bare/...   429 forever, no Retry-After
  /_429raS/...    429 forever, Retry-After: S (seconds)
  /_429slowMS/... 429 forever, Retry-After: 1, each answer after MS milliseconds
  /_delayMS/...   answers after MS milliseconds (a distant cluster)
  /_redirect/...  302 to /_moved/... on this server, the Location with a
                  password and a token in it (https://u:p@.../?token=secret:
                  never to be shown); followed, it shows in the request log
                  with mode "moved"
  /_loop/...      301 to the same URL, forever
  /_html/...      200 text/html: a login page, terminal escapes and all
  /_huge/...      200 JSON that never ends (written until the client hangs up)
  /_drip/...      200, Content-Length 1 MB, one byte every 0.2 s
  /_stall/...     200, Content-Length 1000, ten bytes, then nothing for 60 s
and --huge-configmap BYTES: kube-system/fluence-resources with a body of that
size (a real server caps a ConfigMap at 1 MiB).

Credentials a real kube-apiserver 1.26 no longer takes, or that specs want to
see arrive: bearer tokens (--token TOKEN=USER), basic (--basic
USER:PASSWORD=USER), client certificates signed by its CA (user = CN).
Anonymous requests get 401; users named with --forbid get 403 everywhere.

It serves reads only: GET of /api/v1/namespaces, /api/v1/nodes,
/api/v1/pods (empty lists) and of ConfigMaps it holds; a write is refused
with 404 (namespace not found), a Status like the real server's.

Options: --port-file PATH (required), --certs DIR (ca.crt, server.crt/key,
client.crt/key for CN cert-user; made with the openssl CLI when missing),
--request-log PATH (one JSON line per request: method, path, query, user,
auth, arrival time; never credentials).
"""
import argparse, base64, json, os, re, ssl, subprocess, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

LOCK = threading.Lock()
COUNTERS = {}
CONFIGMAPS = {}     # (namespace, name) -> object
ARGS = None


def status(code, reason, message):
    return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message, "reason": reason, "code": code}


def empty_list(kind):
    return 200, {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []}


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
        self.wfile.write(data)

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
        arrived = time.time()
        u = urlparse(self.path)
        q = {k: v[-1] for k, v in parse_qs(u.query).items()}
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        path = u.path
        mode = None
        m = re.match(r"^/_(slow|500|429always|429bare|429ra\d+|429slow\d+|429\d+|delay\d+|redirect|moved|loop|html|huge|drip|stall)"
                     r"(/.*)$", path)
        if m:
            mode, path = m.group(1), m.group(2)
        user, how = self.authenticate()
        if ARGS.request_log:
            with LOCK, open(ARGS.request_log, "a") as f:
                f.write(json.dumps({"method": self.command, "path": path, "query": q, "user": user,
                                    "auth": how, "t": arrived, "mode": mode}) + "\n")
        if mode == "slow":
            time.sleep(60)
            return
        if mode and self.hostile(mode, path):
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
        self.send_json(*self.route(self.command, path, user))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

    def hostile(self, mode, path):
        """The answers of a broken or hostile server; True when one was given."""
        if mode in ("429always", "429bare") or mode.startswith("429ra") or mode.startswith("429slow"):
            if mode.startswith("429slow"):
                time.sleep(int(mode[7:]) / 1000.0)
            headers = {"Retry-After": mode[5:]} if mode.startswith("429ra") else \
                      {} if mode == "429bare" else {"Retry-After": "1"}
            self.send_json(*status(429, "TooManyRequests", "Too many requests, please try again later."), headers)
            return True
        if mode in ("redirect", "loop"):
            target = ("/_moved" if mode == "redirect" else "/_loop") + self.path[len("/_" + mode):]
            userinfo = ""
            if mode == "redirect":
                userinfo = "u:p@"
                target += ("&" if "?" in target else "?") + "token=secret"
            self.send_response(302 if mode == "redirect" else 301)
            self.send_header("Location", "https://%s127.0.0.1:%d%s" % (userinfo, self.server.server_address[1], target))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        if mode == "html":
            body = b"<html><head><title>Sign in</title></head><body>\x1b[31mSession expired\x1b[0m</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return True
        try:
            if mode == "huge":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = b'"' + b"x" * 65536 + b'",'
                frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
                self.wfile.write(b"1\r\n[\r\n")
                for _ in range(16384):            # 1 GiB at most
                    self.wfile.write(frame)
                return True
            if mode in ("drip", "stall"):
                # a promised length, then a byte every 0.2 s, or ten and nothing
                length, first, pause, more = (1000000, b" ", 0.2, True) if mode == "drip" else \
                                             (1000, b'{"kind": "', 60, False)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(length))
                self.end_headers()
                for _ in range(length if more else 1):
                    self.wfile.write(first)
                    self.wfile.flush()
                    time.sleep(pause)
                return True
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            return True
        return False          # "moved": served as usual

    def route(self, method, path, user):
        parts = [p for p in path.split("/") if p]
        if user in ARGS.forbid:
            what = parts[-2] if len(parts) >= 2 and len(parts) % 2 == 1 else (parts[-1] if parts else "")
            return status(403, "Forbidden", 'User "%s" cannot %s resource "%s"' % (user, method.lower(), what))
        if method != "GET":
            ns = parts[3] if len(parts) > 3 and parts[2] == "namespaces" else "default"
            return status(404, "NotFound", 'namespaces "%s" not found' % ns)
        if parts == ["api", "v1", "namespaces"]:
            return empty_list("NamespaceList")
        if parts == ["api", "v1", "nodes"]:
            return empty_list("NodeList")
        if parts == ["api", "v1", "pods"]:
            return empty_list("PodList")
        if len(parts) == 5 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "configmaps":
            return empty_list("ConfigMapList")
        if len(parts) == 6 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "configmaps":
            obj = CONFIGMAPS.get((parts[3], parts[5]))
            if obj:
                return 200, obj
            return status(404, "NotFound", 'configmaps "%s" not found' % parts[5])
        return status(404, "NotFound", "the server could not find the requested resource")


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certs(d):
    """CA, server (127.0.0.1, localhost), client (CN cert-user)."""
    os.makedirs(d, exist_ok=True)
    if os.path.exists(os.path.join(d, "done")):
        return
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=fluence-test-ca", cwd=d)

    def leaf(name, subj, ext):
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext)
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", name + ".key", "-out", name + ".csr", "-subj", subj, cwd=d)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext", cwd=d)

    leaf("server", "/CN=fluence-test-apiserver",
         "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    leaf("client", "/CN=cert-user/O=fluence-testers", "extendedKeyUsage=clientAuth\n")
    open(os.path.join(d, "done"), "w").close()


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--certs", required=True)
    ap.add_argument("--token", action="append", default=[])
    ap.add_argument("--basic", action="append", default=[])
    ap.add_argument("--forbid", action="append", default=[])
    ap.add_argument("--huge-configmap", type=int, default=0)
    ap.add_argument("--request-log")
    ARGS = ap.parse_args()
    ARGS.tokens = dict(t.split("=", 1) for t in ARGS.token)
    ARGS.basics = dict(b.rsplit("=", 1) for b in ARGS.basic)
    make_certs(ARGS.certs)
    if ARGS.huge_configmap:
        CONFIGMAPS[("kube-system", "fluence-resources")] = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "fluence-resources", "namespace": "kube-system", "resourceVersion": "1"},
            "data": {"resources.yaml": "resources:\n  - type: gpu\n    name: big\n" + "#" * ARGS.huge_configmap + "\n"}}
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(ARGS.certs, "server.crt"), os.path.join(ARGS.certs, "server.key"))
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
