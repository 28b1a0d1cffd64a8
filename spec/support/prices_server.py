#!/usr/bin/env python3
"""Stand-ins for the three price APIs the price providers read (loopback only),
answering in the real shapes (../shared/reference/pricing.md):

GET  /api/retail/prices?api-version=..&$filter=..   Azure Retail Prices: rows whose
                                armSkuName, armRegionName and type match the OData
                                filter, `page_size` a page, NextPageLink absolute
                                ($skip), null on the last page.
POST /  X-Amz-Target: AWSPriceListService.GetProducts   AWS Price List (JSON 1.1,
                                SigV4 service "pricing"): the products of
                                ServiceCode whose attributes match every TERM_MATCH
                                filter, each PriceList member a JSON document in a
                                string, NextToken paging by MaxResults or `page_size`.
POST /  Action=DescribeSpotPriceHistory   EC2 (Query protocol, SigV4 service "ec2",
                                scoped to the region asked about): the XML answer,
                                items of the InstanceType.1 in that region's zones,
                                nextToken paging.
GET  /v1/services/6F81-5844-456A/skus?key=..   GCP Cloud Billing Catalog (API key):
                                `page_size` SKUs a page, nextPageToken "" at the end.

POST /_control/config  JSON  {"azure": {...}, "pricing": {...}, "ec2": {...},
                              "gcp": {...}, "delay_ms": N}; per API:
    items / products {ServiceCode: [doc]} / spot {type: [{zone, price, timestamp}]} /
    skus: the data;  page_size;  throttle N: the first N calls answer 429 (the
    API's own throttling shape; Azure and GCP with a retry-after header of
    `retry_after` seconds, default 0);  fail5xx N: then N calls 5xx;  status:
    always this error;  html: answer 200 with an HTML page;  next_host: Azure's
    NextPageLink on another host;  loop: the next page link/token repeats;
    key: the API key GCP accepts (default "gcp-test-key").  Resets the counters.
GET  /_control/stats  {"azure", "pricing", "ec2", "gcp": calls; "bad_signatures",
                       "max_concurrent", "regions": {api: [signing regions]}}

Keys: --key AKID=SECRET[=TOKEN] as braket_server.py (whose SigV4 helpers this
reuses).  Writes its port to --port-file once listening.  Python stdlib only.
"""
import argparse, hashlib, hmac, json, os, re, sys, threading, time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qsl, quote, urlsplit
from datetime import datetime, timezone
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import braket_server as sig  # noqa: E402  (canonical_uri, canonical_query, hm, AUTH_RE, Server)

STATE = {"lock": threading.Lock(), "config": {}, "inflight": 0}
COUNTERS = ("azure", "pricing", "ec2", "gcp", "bad_signatures", "max_concurrent")
KEYS = {}


def reset():
    for k in COUNTERS:
        STATE[k] = 0
    STATE["regions"] = {"pricing": [], "ec2": []}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, data, ctype, extra=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def json(self, status, obj, extra=None):
        self.send(status, json.dumps(obj).encode(), "application/json", extra)

    def html(self):
        self.send(200, b"<html><body><h1>Sign in</h1>\x1b[31mportal</body></html>", "text/html")

    # ------------------------------------------------------------ signature
    def verify(self, body, service, region=None):
        auth = self.headers.get("Authorization") or ""
        m = sig.AUTH_RE.match(auth)
        if not m:
            return "IncompleteSignatureException"
        akid, date8, sregion, sservice, signed, signature = m.groups()
        if akid not in KEYS or sservice != service or (region and sregion != region):
            return "InvalidSignatureException"
        secret, token = KEYS[akid]
        names = signed.split(";")
        if "host" not in names or "x-amz-date" not in names:
            return "InvalidSignatureException"
        if token is not None and (self.headers.get("X-Amz-Security-Token") != token
                                  or "x-amz-security-token" not in names):
            return "UnrecognizedClientException"
        amz = self.headers.get("X-Amz-Date", "")
        u = urlsplit(self.path)
        lines = [n + ":" + ",".join(" ".join(v.split()) for v in (self.headers.get_all(n) or [])) for n in names]
        creq = "\n".join([self.command, sig.canonical_uri(u.path), sig.canonical_query(u.query)] + lines +
                         ["", signed, hashlib.sha256(body).hexdigest()])
        sts = "\n".join(["AWS4-HMAC-SHA256", amz, "%s/%s/%s/aws4_request" % (date8, sregion, sservice),
                         hashlib.sha256(creq.encode()).hexdigest()])
        k = sig.hm(sig.hm(sig.hm(sig.hm(("AWS4" + secret).encode(), date8), sregion), sservice), "aws4_request")
        if not hmac.compare_digest(hmac.new(k, sts.encode(), hashlib.sha256).hexdigest(), signature):
            return "InvalidSignatureException"
        with STATE["lock"]:
            STATE["regions"].setdefault(service if service == "ec2" else "pricing", []).append(sregion)
        return None

    # --------------------------------------------------------- bookkeeping
    def begin(self, api):
        with STATE["lock"]:
            STATE[api] += 1
            n = STATE[api]
            STATE["inflight"] += 1
            STATE["max_concurrent"] = max(STATE["max_concurrent"], STATE["inflight"])
            cfg = dict(STATE["config"].get(api, {}))
            delay = STATE["config"].get("delay_ms", 0)
        if delay:
            time.sleep(delay / 1000.0)
        return n, cfg

    def end(self):
        with STATE["lock"]:
            STATE["inflight"] -= 1

    def fault(self, n, cfg):
        """The configured failure for call n: 'throttle', 'fail', 'status', 'html' or None."""
        if n <= cfg.get("throttle", 0):
            return "throttle"
        if n <= cfg.get("throttle", 0) + cfg.get("fail5xx", 0):
            return "fail"
        if cfg.get("status"):
            return "status"
        if cfg.get("html"):
            return "html"
        return None

    # -------------------------------------------------------------- routes
    def do_GET(self):
        u = urlsplit(self.path)
        if u.path == "/_control/stats":
            with STATE["lock"]:
                self.json(200, {k: STATE[k] for k in COUNTERS + ("regions",)})
            return
        if u.path == "/api/retail/prices":
            n, cfg = self.begin("azure")
            try:
                self.azure(u, n, cfg)
            finally:
                self.end()
            return
        if u.path == "/v1/services/6F81-5844-456A/skus":
            n, cfg = self.begin("gcp")
            try:
                self.gcp(u, n, cfg)
            finally:
                self.end()
            return
        self.json(404, {"error": "no such path"})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/_control/config":
            with STATE["lock"]:
                STATE["config"] = json.loads(body or b"{}")
                reset()
            self.json(200, {"ok": True})
            return
        if self.headers.get("X-Amz-Target") == "AWSPriceListService.GetProducts":
            n, cfg = self.begin("pricing")
            try:
                self.get_products(body, n, cfg)
            finally:
                self.end()
            return
        form = dict(parse_qsl(body.decode(errors="replace"), keep_blank_values=True))
        if form.get("Action") == "DescribeSpotPriceHistory":
            n, cfg = self.begin("ec2")
            try:
                self.spot(body, form, n, cfg)
            finally:
                self.end()
            return
        self.json(404, {"__type": "UnknownOperationException"})

    # ---------------------------------------------------------------- Azure
    def azure(self, u, n, cfg):
        q = dict(parse_qsl(u.query, keep_blank_values=True))
        f = self.fault(n, cfg)
        if f == "throttle":
            self.json(429, {"Error": {"Code": "TooManyRequests", "Message": "Too many requests. Please retry."}},
                      {"x-ms-ratelimit-retailPrices-retry-after": str(cfg.get("retry_after", 0))})
            return
        if f in ("fail", "status"):
            self.json(cfg.get("status") or 503, {"Error": {"Code": "ServiceUnavailable", "Message": "try later"}})
            return
        if f == "html":
            self.html()
            return
        filt = q.get("$filter", "")
        want = dict(re.findall(r"(\w+) eq '((?:[^']|'')*)'", filt))
        rows = [r for r in cfg.get("items", [])
                if r.get("armSkuName") == want.get("armSkuName") and r.get("armRegionName") == want.get("armRegionName")
                and r.get("type", "Consumption") == want.get("priceType", r.get("type"))]
        size = cfg.get("page_size", 100)
        skip = int(q.get("$skip", "0"))
        page = rows[skip:skip + size]
        nxt = None
        if skip + size < len(rows) or cfg.get("loop"):
            host = cfg.get("next_host") or ("http://127.0.0.1:%d" % self.server.server_address[1])
            to = skip if cfg.get("loop") else skip + size
            nxt = "%s/api/retail/prices?api-version=%s&$filter=%s&$skip=%d" % (
                host, q.get("api-version", ""), quote(filt, safe=""), to)
        self.json(200, {"BillingCurrency": "USD", "CustomerEntityId": "Default", "CustomerEntityType": "Retail",
                        "Items": page, "NextPageLink": nxt, "Count": len(page)})

    # ------------------------------------------------------------ AWS pricing
    def aws_error(self, status, etype, message):
        self.json(status, {"__type": "com.amazonaws.awspricing#" + etype, "message": message})

    def get_products(self, body, n, cfg):
        bad = self.verify(body, "pricing", "us-east-1")
        if bad:
            with STATE["lock"]:
                STATE["bad_signatures"] += 1
            self.aws_error(403, bad, "The request signature we calculated does not match the signature you provided.")
            return
        f = self.fault(n, cfg)
        if f == "throttle":
            self.aws_error(400, "ThrottlingException", "Rate exceeded")
            return
        if f in ("fail", "status"):
            self.aws_error(cfg.get("status") or 500, "InternalErrorException", "internal error")
            return
        if f == "html":
            self.html()
            return
        req = json.loads(body)
        docs = cfg.get("products", {}).get(req.get("ServiceCode"), [])
        for flt in req.get("Filters", []):
            docs = [d for d in docs if d.get("product", {}).get("attributes", {}).get(flt["Field"]) == flt["Value"]]
        size = min(req.get("MaxResults", 100), cfg.get("page_size", 100))
        start = int(req.get("NextToken") or 0)
        page = docs[start:start + size]
        nxt = None
        if start + size < len(docs) or cfg.get("loop"):
            nxt = str(start if cfg.get("loop") else start + size)
        self.json(200, {"FormatVersion": "aws_v1", "PriceList": [json.dumps(d) for d in page], "NextToken": nxt})

    # -------------------------------------------------------------- EC2 spot
    def ec2_error(self, status, code, message):
        x = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>%s</Code><Message>%s</Message>"
             "</Error></Errors><RequestID>0000</RequestID></Response>" % (code, escape(message)))
        self.send(status, x.encode(), "text/xml;charset=UTF-8")

    def spot(self, body, form, n, cfg):
        region = cfg.get("region")
        bad = self.verify(body, "ec2", region)
        if bad:
            with STATE["lock"]:
                STATE["bad_signatures"] += 1
            self.ec2_error(401, "AuthFailure", "AWS was not able to validate the provided access credentials")
            return
        f = self.fault(n, cfg)
        if f == "throttle":
            self.ec2_error(503, "RequestLimitExceeded", "Request limit exceeded.")
            return
        if f in ("fail", "status"):
            self.ec2_error(cfg.get("status") or 500, "InternalError", "An internal error has occurred")
            return
        if f == "html":
            self.html()
            return
        # EC2's endpoints are regional: only the zones of the region the
        # request is signed for
        m = sig.AUTH_RE.match(self.headers.get("Authorization") or "")
        scope = m.group(3) if m else ""
        items = [it for it in cfg.get("spot", {}).get(form.get("InstanceType.1"), [])
                 if it["zone"].startswith(scope)]
        size = cfg.get("page_size", 1000)
        start = int(form.get("NextToken") or 0)
        page = items[start:start + size]
        nxt = ""
        if start + size < len(items) or cfg.get("loop"):
            nxt = str(start if cfg.get("loop") else start + size)
        out = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
               "<DescribeSpotPriceHistoryResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">",
               "    <requestId>59dbff89-35bd-4eac-99ed-be587EXAMPLE</requestId>", "    <spotPriceHistorySet>"]
        for it in page:
            out.append("        <item>\n            <instanceType>%s</instanceType>\n"
                       "            <productDescription>Linux/UNIX</productDescription>\n"
                       "            <spotPrice>%s</spotPrice>\n            <timestamp>%s</timestamp>\n"
                       "            <availabilityZone>%s</availabilityZone>\n        </item>" % (
                           escape(form.get("InstanceType.1", "")), escape(str(it["price"])),
                           escape(it.get("timestamp", datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"))),
                           escape(it["zone"])))
        out.append("    </spotPriceHistorySet>")
        out.append("    <nextToken>%s</nextToken>" % escape(nxt) if nxt else "    <nextToken/>")
        out.append("</DescribeSpotPriceHistoryResponse>")
        self.send(200, "\n".join(out).encode(), "text/xml;charset=UTF-8")

    # ------------------------------------------------------------------ GCP
    def gcp(self, u, n, cfg):
        q = dict(parse_qsl(u.query, keep_blank_values=True))
        if q.get("key") != cfg.get("key", "gcp-test-key"):
            self.json(400, {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                      "status": "INVALID_ARGUMENT"}})
            return
        f = self.fault(n, cfg)
        if f == "throttle":
            self.json(429, {"error": {"code": 429, "message": "Quota exceeded for quota metric 'Read requests'",
                                      "status": "RESOURCE_EXHAUSTED"}}, {"Retry-After": str(cfg.get("retry_after", 0))})
            return
        if f in ("fail", "status"):
            self.json(cfg.get("status") or 503, {"error": {"code": 503, "message": "The service is currently unavailable.",
                                                           "status": "UNAVAILABLE"}})
            return
        if f == "html":
            self.html()
            return
        skus = cfg.get("skus", [])
        size = min(int(q.get("pageSize", "5000")), cfg.get("page_size", 5000))
        start = int(q.get("pageToken") or 0)
        nxt = ""
        if start + size < len(skus) or cfg.get("loop"):
            nxt = str(start if cfg.get("loop") else start + size)
        self.json(200, {"skus": skus[start:start + size], "nextPageToken": nxt})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--key", action="append", default=[])
    args = ap.parse_args()
    for k in args.key or ["AKIDEXAMPLE=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"]:
        parts = k.split("=", 2)
        KEYS[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else None)
    reset()
    srv = sig.Server(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
