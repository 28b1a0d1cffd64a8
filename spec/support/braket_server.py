#!/usr/bin/env python3
"""A fake AWS Braket endpoint for the braket-live provider specs (loopback only).

GET /device/{url-encoded ARN}   GetDevice: verifies the SigV4 signature (recomputed
                                with the known test secret), then answers from the
                                canned responses in spec/fixtures/braket/*.json
                                (keyed by their deviceArn), or with the behaviour
                                configured for that ARN.
POST /_control/config  JSON     {"devices": {ARN: {...}}, "delay_ms": N} where a
                                device may set
                                  delay_ms  wait before answering
                                  throttle  answer the first N calls 429 ThrottlingException
                                  fail5xx   then the next N calls 500 InternalServiceException
                                  status    always answer this error (403, 404, 503)
                                  template  serve fixture NAME (its deviceArn replaced)
                                  patch     top-level keys replaced in the answer
                                and resets the counters.
GET /_control/stats             {"requests", "by_arn", "max_concurrent",
                                 "bad_signatures", "ok"}

Keys: --key AKID=SECRET[=TOKEN] (repeatable; default the suite's example key).
When a TOKEN is given, requests must carry and sign X-Amz-Security-Token.
The credential scope must name service "braket" and the ARN's region
(simulators: --sim-region, default any).  Error answers follow Braket's
restJson protocol: x-amzn-ErrorType header and {"message": ...}.  Like AWS,
InvalidSignatureException echoes the canonical request it expected (which
holds the session token) so specs can check that the client never repeats it.
Writes its port to --port-file once listening.  Python stdlib only.
"""
import argparse, hashlib, hmac, json, os, re, threading, time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote, urlsplit, parse_qsl

STATE = {"lock": threading.Lock(), "config": {}, "requests": 0, "by_arn": {}, "inflight": 0,
         "max_concurrent": 0, "bad_signatures": 0, "ok": 0}
KEYS = {}
FIXTURES = {}
BY_NAME = {}
SIM_REGION = None

AUTH_RE = re.compile(r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                     r"SignedHeaders=([a-z0-9;\-]+), Signature=([0-9a-f]{64})$")


def canonical_uri(path):
    segs = []
    for s in path.split("/"):
        if s in ("", "."):
            continue
        if s == "..":
            if segs:
                segs.pop()
            continue
        segs.append(s)
    out = "/" + "/".join(quote(s, safe="-_.~") for s in segs)
    if path.endswith("/") and segs:
        out += "/"
    return out


def canonical_query(q):
    pairs = [(quote(k, safe="-_.~"), quote(v, safe="-_.~")) for k, v in parse_qsl(q, keep_blank_values=True)]
    return "&".join(k + "=" + v for k, v in sorted(pairs))


def hm(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, obj, error_type=None, extra=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", "00000000-0000-0000-0000-%012d" % STATE["requests"])
        if error_type:
            self.send_header("x-amzn-ErrorType", error_type + ":http://internal.amazon.com/coral/com.amazonaws.braket/")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def error(self, status, error_type, message, extra=None):
        self.reply(status, {"message": message}, error_type, extra)

    # ------------------------------------------------------------ signature
    def verify(self, body, arn_region):
        auth = self.headers.get("Authorization")
        if not auth:
            return 403, "MissingAuthenticationTokenException", "Missing Authentication Token"
        m = AUTH_RE.match(auth)
        if not m:
            return 403, "IncompleteSignatureException", "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders'."
        akid, date8, region, service, signed, sig = m.groups()
        if akid not in KEYS:
            return 403, "UnrecognizedClientException", "The security token included in the request is invalid."
        secret, token = KEYS[akid]
        if service != "braket":
            return 403, "InvalidSignatureException", "Credential should be scoped to correct service: 'braket'."
        want_region = arn_region or SIM_REGION
        if want_region and region != want_region:
            return 403, "InvalidSignatureException", "Credential should be scoped to a valid region, not '%s'." % region
        names = signed.split(";")
        if "host" not in names or "x-amz-date" not in names:
            return 403, "InvalidSignatureException", "'Host' and 'X-Amz-Date' must be signed."
        amz = self.headers.get("X-Amz-Date", "")
        try:
            t = datetime.strptime(amz, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
        except ValueError:
            return 403, "InvalidSignatureException", "X-Amz-Date is missing or malformed."
        if abs((datetime.now(timezone.utc) - t).total_seconds()) > 900 or amz[:8] != date8:
            return 403, "InvalidSignatureException", "Signature expired: %s is now earlier than the allowed time." % amz
        if token is not None:
            if self.headers.get("X-Amz-Security-Token") != token or "x-amz-security-token" not in names:
                return 403, "UnrecognizedClientException", "The security token included in the request is invalid."
        u = urlsplit(self.path)
        lines = []
        for n in names:
            vals = self.headers.get_all(n) or []
            lines.append(n + ":" + ",".join(" ".join(v.split()) for v in vals))
        creq = "\n".join([self.command, canonical_uri(u.path), canonical_query(u.query)] + lines +
                         ["", signed, hashlib.sha256(body).hexdigest()])
        sts = "\n".join(["AWS4-HMAC-SHA256", amz, "%s/%s/%s/aws4_request" % (date8, region, service),
                         hashlib.sha256(creq.encode()).hexdigest()])
        k = hm(hm(hm(hm(("AWS4" + secret).encode(), date8), region), service), "aws4_request")
        want = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, sig):
            return 403, "InvalidSignatureException", (
                "The request signature we calculated does not match the signature you provided. "
                "Check your AWS Secret Access Key and signing method. Consult the service documentation for details.\n\n"
                "The Canonical String for this request should have been\n'%s'\n\n"
                "The String-to-Sign should have been\n'%s'\n" % (creq, sts))
        return None

    # ---------------------------------------------------------------- routes
    def do_GET(self):
        u = urlsplit(self.path)
        if u.path == "/_control/stats":
            with STATE["lock"]:
                self.reply(200, {k: STATE[k] for k in ("requests", "by_arn", "max_concurrent", "bad_signatures", "ok")})
            return
        if not u.path.startswith("/device/"):
            self.error(404, "UnknownOperationException", "unknown operation")
            return
        arn = unquote(u.path[len("/device/"):])
        with STATE["lock"]:
            STATE["requests"] += 1
            n = STATE["by_arn"].get(arn, 0) + 1
            STATE["by_arn"][arn] = n
            STATE["inflight"] += 1
            STATE["max_concurrent"] = max(STATE["max_concurrent"], STATE["inflight"])
            cfg = dict(STATE["config"].get("devices", {}).get(arn, {}))
            delay = cfg.get("delay_ms", STATE["config"].get("delay_ms", 0))
        try:
            if delay:
                time.sleep(delay / 1000.0)
            self.get_device(arn, n, cfg)
        finally:
            with STATE["lock"]:
                STATE["inflight"] -= 1

    def get_device(self, arn, n, cfg):
        parts = arn.split(":")
        arn_region = parts[3] if len(parts) > 3 and parts[3] else None
        bad = self.verify(b"", arn_region)
        if bad:
            with STATE["lock"]:
                STATE["bad_signatures"] += 1
            self.error(*bad)
            return
        throttle, fail5xx = cfg.get("throttle", 0), cfg.get("fail5xx", 0)
        if n <= throttle:
            self.error(429, "ThrottlingException", "Rate exceeded")
            return
        if n <= throttle + fail5xx:
            self.error(500, "InternalServiceException", "We encountered an internal error. Please try again.")
            return
        status = cfg.get("status")
        if status == 403:
            self.error(403, "AccessDeniedException", "User: arn:aws:iam::123456789012:user/fluence-test is not "
                       "authorized to perform: braket:GetDevice on resource: " + arn)
            return
        if status == 404:
            self.error(404, "ResourceNotFoundException", "Braket device '%s' not found" % arn)
            return
        if status:
            self.error(status, "ServiceUnavailableException", "Service unavailable")
            return
        doc = None
        if "template" in cfg:
            doc = dict(BY_NAME[cfg["template"]])
            doc["deviceArn"] = arn
        elif arn in FIXTURES:
            doc = dict(FIXTURES[arn])
        if doc is None:
            self.error(404, "ResourceNotFoundException", "Braket device '%s' not found" % arn)
            return
        doc.update(cfg.get("patch", {}))
        with STATE["lock"]:
            STATE["ok"] += 1
        self.reply(200, doc)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.path == "/_control/config":
            cfg = json.loads(body or b"{}")
            with STATE["lock"]:
                STATE["config"] = cfg
                STATE["requests"] = STATE["max_concurrent"] = STATE["bad_signatures"] = STATE["ok"] = 0
                STATE["by_arn"] = {}
            self.reply(200, {"ok": True})
        else:
            self.error(404, "UnknownOperationException", "unknown operation")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256       # 20+ simultaneous connects must not overflow the backlog


def main():
    global SIM_REGION
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--fixtures", default=os.path.join(here, "..", "fixtures", "braket"))
    ap.add_argument("--key", action="append", default=[])
    ap.add_argument("--sim-region")
    args = ap.parse_args()
    SIM_REGION = args.sim_region
    for k in args.key or ["AKIDEXAMPLE=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"]:
        parts = k.split("=", 2)
        KEYS[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else None)
    for name in sorted(os.listdir(args.fixtures)):
        if name.endswith(".json"):
            with open(os.path.join(args.fixtures, name)) as f:
                doc = json.load(f)
            FIXTURES[doc["deviceArn"]] = doc
            BY_NAME[name[:-5]] = doc
    srv = Server(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
