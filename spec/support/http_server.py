#!/usr/bin/env python3
"""A small HTTP test server for fluence.http specs (loopback only).

GET /echo            -> JSON {method, path, headers, body}
GET /delay?ms=N      -> waits N ms, then 200 "ok"
GET /status/N        -> status N with a short body
GET /big?bytes=N     -> N bytes of "x"
Writes its port to --port-file once listening.
"""
import argparse, json, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, ctype="text/plain"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        u = urlparse(self.path)
        q = parse_qs(u.query)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode() if n else ""
        if u.path == "/echo":
            self.reply(200, json.dumps({"method": self.command, "path": self.path,
                                        "headers": {k.lower(): v for k, v in self.headers.items()},
                                        "body": body}), "application/json")
        elif u.path == "/delay":
            time.sleep(int(q.get("ms", ["0"])[0]) / 1000.0)
            self.reply(200, "ok")
        elif u.path.startswith("/status/"):
            self.reply(int(u.path.split("/")[2]), "status body")
        elif u.path == "/big":
            self.reply(200, "x" * int(q.get("bytes", ["0"])[0]))
        else:
            self.reply(404, "not found")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
