#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Load client for tests/bench/proxy: N requests per client, C clients in
parallel processes, against one of

  direct     HTTPS straight to the server (127.0.0.1:PORT, SNI web.test)
  connect    HTTPS through the proxy's CONNECT tunnel (SNI web.test)
  injected   plain HTTP to the proxy, which checks the cloister token,
             injects the real credential and talks TLS upstream

with one kept-alive connection per client (--reuse) or a new connection
per request (--fresh). Prints "per_s=R p50_us=A p99_us=B errors=E".
"""
import argparse
import http.client
import multiprocessing
import ssl
import time

ap = argparse.ArgumentParser()
ap.add_argument("mode", choices=["direct", "connect", "injected"])
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--proxy", help="HOST:PORT")
ap.add_argument("--cafile", required=True)
ap.add_argument("--token")
ap.add_argument("--requests", type=int, default=500)
ap.add_argument("--clients", type=int, default=1)
ap.add_argument("--fresh", action="store_true")
args = ap.parse_args()


def connect(ctx):
    if args.mode == "direct":
        return http.client.HTTPSConnection("127.0.0.1", args.port, context=ctx, timeout=30)
    host, port = args.proxy.rsplit(":", 1)
    if args.mode == "connect":
        c = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30)
        c.set_tunnel("web.test", args.port)
        return c
    return http.client.HTTPConnection(host, int(port), timeout=30)


def one_client(_):
    ctx = ssl.create_default_context(cafile=args.cafile)
    if args.mode == "direct":
        ctx.check_hostname = False  # 127.0.0.1; the chain is still verified
    lat, errors, conn = [], 0, None
    for _i in range(args.requests):
        t = time.perf_counter()
        try:
            if conn is None or args.fresh:
                if conn:
                    conn.close()
                conn = connect(ctx)
            if args.mode == "injected":
                conn.request("GET", "http://api.test/api/x",
                             headers={"Authorization": "Bearer " + args.token})
            else:
                conn.request("GET", "/hello", headers={"Host": "web.test"})
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                errors += 1
        except Exception:
            errors += 1
            conn = None
        lat.append(time.perf_counter() - t)
    return lat, errors


start = time.perf_counter()
with multiprocessing.Pool(args.clients) as pool:
    results = pool.map(one_client, range(args.clients))
elapsed = time.perf_counter() - start
lat = sorted(x for r in results for x in r[0])
errors = sum(r[1] for r in results)
n = len(lat)
print(f"per_s={int(n / elapsed)} p50_us={int(lat[n // 2] * 1e6)} "
      f"p99_us={int(lat[min(n - 1, n * 99 // 100)] * 1e6)} errors={errors}")
