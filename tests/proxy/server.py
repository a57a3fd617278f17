#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A loopback test server for the proxy suite: HTTPS (or plain HTTP) on an
ephemeral port of 127.0.0.1, serving

  /git/...      `git http-backend` (smart HTTP: clone, fetch, push), only
                with the expected credential (--auth, the exact
                Authorization value; or --header NAME:VALUE)
  /echo         the request's headers, as the body (a server that reflects
                credentials, for the masking test), gzipped if the request
                accepts gzip; a Range of bytes=A-B or bytes=-N is honoured
                (206), as many servers do
  /echo-gzip    the same, gzipped whatever the request accepts
  /echo-te-gzip the same, in Transfer-Encoding: gzip, chunked
  /echo-partial?last=N
                206 with the last N bytes of the same, whatever was asked
  /echo-chunked?size=N
                the same, chunked in chunks of N bytes (where a chunk
                boundary falls inside a reflected secret)
  /double       a response, then a second one nobody asked for (a server
                out of step with its connection)
  /ignore-body  200 without reading the request's body, whatever its
                framing (a server that reads no body on a DELETE or GET):
                the body's bytes are the next request, unless the request
                said Connection: close
  /long-chunk-line?n=N
                a chunked "hello" whose chunk-size line carries an
                extension of N bytes
  /api/, /v1/   {"ok": true} with the expected credential, else 401
  /api/login    the same, setting a session cookie (as Jira does for Basic auth)
  /cookie       200 with a Set-Cookie, no credential asked
  /redirect     302 to http://169.254.169.254/latest/meta-data/
  anything else 200 "hello from NAME"

Every request is appended to --log as one JSON line (method, path, headers,
body length), so tests can assert what reached the server and what did not.
With --raw-dir, the bytes each connection received are also written, as
they came, to DIR/conn-N (the framing the proxy sent, byte for byte).
It writes its port to --port-file and runs until killed.
"""
import argparse
import gzip
import json
import os
import socketserver
import ssl
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port-file", required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--cert")
ap.add_argument("--key")
ap.add_argument("--git-root")
ap.add_argument("--auth", action="append", default=[],
                help="an Authorization value that is accepted")
ap.add_argument("--header", help="NAME:VALUE accepted instead of Authorization")
ap.add_argument("--name", default="server")
ap.add_argument("--raw-dir")
args = ap.parse_args()
lock = threading.Lock()
conns = [0]


class Tee:
    """A reader that copies what it reads to a file."""

    def __init__(self, f, out):
        self.f, self.out = f, out

    def _log(self, data):
        self.out.write(data)
        self.out.flush()
        return data

    def read(self, *a):
        return self._log(self.f.read(*a))

    def readline(self, *a):
        return self._log(self.f.readline(*a))

    def __getattr__(self, name):
        return getattr(self.f, name)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # head and body are separate writes

    def log_message(self, *a):
        pass

    def setup(self):
        super().setup()
        if args.raw_dir:
            with lock:
                conns[0] += 1
                n = conns[0]
            self.raw = open(os.path.join(args.raw_dir, f"conn-{n}"), "wb")
            self.rfile = Tee(self.rfile, self.raw)

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0") or 0)
        return self.rfile.read(n) if n else b""

    def authorized(self):
        if args.header:
            name, value = args.header.split(":", 1)
            return self.headers.get(name) == value
        return self.headers.get("Authorization") in args.auth

    def reply(self, code, data, ctype="text/plain", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def handle_any(self):
        data = b"" if self.path.startswith("/ignore-body") else self.body()
        with lock, open(args.log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "headers": [[k, v] for k, v in self.headers.items()],
                                "body_len": len(data)}) + "\n")
        path = self.path.split("?", 1)[0]
        if path == "/echo":
            data = "".join(f"{k}: {v}\n" for k, v in self.headers.items()).encode()
            if "gzip" in self.headers.get("Accept-Encoding", ""):
                return self.reply(200, gzip.compress(data), extra=[("Content-Encoding", "gzip")])
            rng = self.headers.get("Range", "")
            if rng.startswith("bytes="):
                a, _, b = rng[6:].partition("-")
                first = len(data) - int(b) if a == "" else int(a)
                last = len(data) - 1 if a == "" or b == "" else min(int(b), len(data) - 1)
                return self.reply(206, data[first:last + 1], extra=[
                    ("Content-Range", f"bytes {first}-{last}/{len(data)}")])
            return self.reply(200, data)
        if path == "/echo-te-gzip":
            data = gzip.compress("".join(f"{k}: {v}\n" for k, v in self.headers.items()).encode())
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "gzip, chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
            return
        if path == "/echo-partial":
            data = "".join(f"{k}: {v}\n" for k, v in self.headers.items()).encode()
            n = int(self.path.split("last=", 1)[1])
            return self.reply(206, data[-n:], extra=[
                ("Content-Range", f"bytes {len(data) - n}-{len(data) - 1}/{len(data)}")])
        if path == "/echo-gzip":
            data = "".join(f"{k}: {v}\n" for k, v in self.headers.items()).encode()
            return self.reply(200, gzip.compress(data), extra=[("Content-Encoding", "gzip")])
        if path == "/echo-chunked":
            size = int(self.path.split("size=", 1)[1])
            data = "".join(f"{k}: {v}\n" for k, v in self.headers.items()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, len(data), size):
                part = data[i:i + size]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        if path == "/long-chunk-line":
            n = int(self.path.split("n=", 1)[1])
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"5;x=" + b"e" * n + b"\r\nhello\r\n0\r\n\r\n")
            return
        if path == "/double":
            # one write, so the proxy reads both at once
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nfirst\n"
                             b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nstale!!!\n")
            return
        if path == "/redirect":
            return self.reply(302, b"", extra=[("Location", "http://169.254.169.254/latest/meta-data/")])
        if path == "/cookie":
            return self.reply(200, b"a cookie\n", extra=[("Set-Cookie", "plain=1; Path=/")])
        if path.startswith("/api/") or path.startswith("/v1/"):
            if not self.authorized():
                return self.reply(401, b"no\n")
            extra = [("Set-Cookie", "JSESSIONID=opened-by-the-real-secret; Path=/; HttpOnly"),
                     ("set-cookie2", "old=1")] if path == "/api/login" else []
            return self.reply(200, b'{"ok": true}\n', "application/json", extra)
        if path.startswith("/git/") and args.git_root:
            if not self.authorized():
                return self.reply(401, b"credential refused\n",
                                  extra=[("WWW-Authenticate", 'Basic realm="test"')])
            return self.git(path[len("/git"):], data)
        return self.reply(200, f"hello from {args.name}\n".encode())

    def git(self, path, data):
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": args.git_root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": self.path.split("?", 1)[1] if "?" in self.path else "",
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(data)),
            "REMOTE_USER": "agent",
            "REMOTE_ADDR": "127.0.0.1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": args.git_root,
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        p = subprocess.run(["git", "http-backend"], input=data, env=env, capture_output=True)
        head, _, body = p.stdout.partition(b"\r\n\r\n")
        status, extra, ctype = 200, [], "text/plain"
        for line in head.split(b"\r\n"):
            k, _, v = line.decode().partition(":")
            v = v.strip()
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k.lower() == "content-type":
                ctype = v
            elif k:
                extra.append((k, v))
        self.reply(status, body, ctype, extra)

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = do_PATCH = handle_any
    do_OPTIONS = do_TRACE = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", 0), Handler)
if args.cert:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(args.port_file + ".tmp", "w") as f:
    f.write(f"{srv.server_address[1]}\n")
os.rename(args.port_file + ".tmp", args.port_file)
try:
    srv.serve_forever()
except KeyboardInterrupt:
    pass
