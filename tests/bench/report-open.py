#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""report-open.py [--runs N] [--chromium PATH] REPORT.html: how long a
`cloister report` page takes to open in headless Chromium, by hand (a
measurement, not a test: see docs/bench-log/2026-12-07-report-scale.md).

Chromium is driven over the DevTools protocol on a pipe
(--remote-debugging-pipe, as tests/sandbox/report-cdp.py does). Each run
opens the page in a new tab of one browser and prints, from the page's own
Navigation Timing and Paint Timing (read over the protocol, which the
page's CSP does not govern): DOMContentLoaded and the load event; the wall
time from Page.navigate to the load event, and to a screenshot of the
first screenful (laid out and painted), with the CPU time all of
Chromium's processes spent meanwhile (what a loaded machine does not
inflate as it does the wall time); and the DOM's element count. The median of the runs
comes last.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
ap.add_argument("report")
a = ap.parse_args()

to_r, to_w = os.pipe()
from_r, from_w = os.pipe()
profile = tempfile.mkdtemp(prefix="cloister-report-open.")


def child_fds():
    x, y = os.dup(to_r), os.dup(from_w)
    os.dup2(x, 3)
    os.dup2(y, 4)


proc = subprocess.Popen(
    [a.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
     "--no-first-run", "--no-default-browser-check", "--disable-extensions",
     "--disable-background-networking", "--disable-component-update", "--disable-sync",
     "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={profile}", "about:blank"],
    preexec_fn=child_fds, close_fds=False, stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL)
TICK = os.sysconf("SC_CLK_TCK")


def cpu_ms():
    """CPU time (user + system) of Chromium and every process under it so far."""
    stat = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stat[int(pid)] = (int(f[1]), int(f[11]) + int(f[12]))  # ppid, utime + stime
    mine, total = {proc.pid}, 0
    for _ in range(8):  # a few generations: browser, zygotes, renderers
        mine |= {p for p, (pp, _) in stat.items() if pp in mine}
    for p in mine:
        total += stat.get(p, (0, 0))[1]
    return total * 1000 / TICK

os.close(to_r)
os.close(from_w)
rfile = os.fdopen(from_r, "rb", buffering=0)
next_id = 0
events = []
buf = b""


def read_msg():
    global buf
    while b"\0" not in buf:
        chunk = rfile.read(1 << 20)
        if not chunk:
            raise EOFError("chromium closed its pipe")
        buf += chunk
    msg, buf = buf.split(b"\0", 1)
    return json.loads(msg)


def call(method, params=None, session=None):
    global next_id
    next_id += 1
    m = {"id": next_id, "method": method, "params": params or {}}
    if session:
        m["sessionId"] = session
    os.write(to_w, json.dumps(m).encode() + b"\0")
    while True:
        r = read_msg()
        if r.get("id") == next_id:
            if "error" in r:
                raise RuntimeError(f"{method}: {r['error']}")
            return r["result"]
        events.append(r)


def wait_event(name, session):
    while True:
        for i, e in enumerate(events):
            if e.get("method") == name and e.get("sessionId") == session:
                del events[i]
                return e
        events.append(read_msg())


url = "file://" + os.path.abspath(a.report)
print(f"# {a.report}: {os.path.getsize(a.report)} bytes")
rows = []
try:
    for i in range(a.runs):
        target = call("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        call("Page.enable", session=s)
        call("Emulation.setDeviceMetricsOverride",
             {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=s)
        c0 = cpu_ms()
        t0 = time.monotonic()
        call("Page.navigate", {"url": url}, session=s)
        wait_event("Page.loadEventFired", s)
        wall = (time.monotonic() - t0) * 1000
        # Pixels on the screen: a screenshot of the first screenful makes Chromium lay out
        # and paint it (headless paints nothing unasked, so has no paint timing of its own).
        call("Page.captureScreenshot", {"format": "png"}, s)
        shot = (time.monotonic() - t0) * 1000
        cpu = cpu_ms() - c0
        # One frame after load, so that the first paint is in.
        r = call("Runtime.evaluate", {"expression": """new Promise(done => requestAnimationFrame(() =>
            setTimeout(() => { const n = performance.getEntriesByType('navigation')[0];
            done({dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd,
                  elements: document.getElementsByTagName('*').length}); }, 0)))""",
                                       "awaitPromise": True, "returnByValue": True}, s)
        m = r["result"]["value"]
        m["wall"] = wall
        m["shot"] = shot
        m["cpu"] = cpu
        rows.append(m)
        print(f"run {i + 1}: DOMContentLoaded {m['dcl']:.0f} ms, load {m['load']:.0f} ms, "
              f"navigate-to-load {wall:.0f} ms, to the first screenful painted {shot:.0f} ms "
              f"(CPU {cpu:.0f} ms), "
              f"{m['elements']} elements")
        call("Target.closeTarget", {"targetId": target})
    med = {k: statistics.median(r[k] for r in rows) for k in ("dcl", "load", "wall", "shot", "cpu")}
    print(f"median of {len(rows)}: DOMContentLoaded {med['dcl']:.0f} ms, load {med['load']:.0f} ms, "
          f"navigate-to-load {med['wall']:.0f} ms, to the first screenful painted {med['shot']:.0f} ms (CPU {med['cpu']:.0f} ms)")
finally:
    proc.kill()
    proc.wait()
    shutil.rmtree(profile, ignore_errors=True)
