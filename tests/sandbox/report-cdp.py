#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""report-cdp.py CHROMIUM REPORT.html SCREENSHOT.png EXPECT.json: open a
`cloister report` page in headless Chromium, driven over the DevTools
protocol on a pipe (--remote-debugging-pipe: fds 3 and 4, NUL-separated
JSON; no library needed), and print TAP lines (no plan: the caller counts):

- no console message, log error or exception, and no request but the page's own;
- the sections and counts of EXPECT ({"h2": [...], "text": [...]}) are in the DOM;
- no element of the agent's (script, img, iframe, a, object, embed, link, base,
  form, input) and no event handler attribute exists, and the hostile names
  of EXPECT["text"] are in the page's text;
- a screenshot of the whole page is written to SCREENSHOT.png.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

chromium, report, shot, expect_path = sys.argv[1:5]
expect = json.load(open(expect_path))
n = 0


def ok(good, name, why=""):
    global n
    n += 1
    print(("ok" if good else "not ok") + f" {n} - {name}")
    if not good and why:
        for line in str(why).splitlines()[:20]:
            print("# " + line)
    sys.stdout.flush()


to_r, to_w = os.pipe()  # we write, chromium reads on fd 3
from_r, from_w = os.pipe()  # chromium writes on fd 4, we read
profile = tempfile.mkdtemp(prefix="cloister-cdp.")


def child_fds():
    # Above 4 first: one of them may be 3 or 4 already.
    a, b = os.dup(to_r), os.dup(from_w)
    os.dup2(a, 3)
    os.dup2(b, 4)


proc = subprocess.Popen(
    [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
     "--no-first-run", "--no-default-browser-check", "--disable-extensions",
     "--disable-background-networking", "--disable-component-update", "--disable-sync",
     "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={profile}", "about:blank"],
    preexec_fn=child_fds, close_fds=False,
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.close(to_r)
os.close(from_w)
rfile = os.fdopen(from_r, "rb", buffering=0)
next_id = 0
events = []
buf = b""


def read_msg(deadline):
    global buf
    while b"\0" not in buf:
        if time.monotonic() > deadline:
            raise TimeoutError("no answer from chromium")
        chunk = rfile.read(65536)
        if not chunk:
            raise EOFError("chromium closed its pipe")
        buf += chunk
    msg, buf = buf.split(b"\0", 1)
    return json.loads(msg)


def call(method, params=None, session=None, timeout=60):
    global next_id
    next_id += 1
    m = {"id": next_id, "method": method, "params": params or {}}
    if session:
        m["sessionId"] = session
    os.write(to_w, json.dumps(m).encode() + b"\0")
    deadline = time.monotonic() + timeout
    while True:
        r = read_msg(deadline)
        if r.get("id") == next_id:
            if "error" in r:
                raise RuntimeError(f"{method}: {r['error']}")
            return r["result"]
        events.append(r)


def wait_event(name, timeout=60):
    deadline = time.monotonic() + timeout
    for e in events:
        if e.get("method") == name:
            return e
    while True:
        e = read_msg(deadline)
        events.append(e)
        if e.get("method") == name:
            return e


try:
    target = call("Target.createTarget", {"url": "about:blank"})["targetId"]
    s = call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for m in ("Runtime.enable", "Log.enable", "Network.enable", "Page.enable"):
        call(m, session=s)
    call("Emulation.setDeviceMetricsOverride",
         {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=s)
    url = "file://" + os.path.abspath(report)
    t0 = time.monotonic()
    call("Page.navigate", {"url": url}, session=s)
    wait_event("Page.loadEventFired")
    print(f"# loaded in {time.monotonic() - t0:.2f}s (not asserted)")

    def js(expr):
        r = call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=s)
        return r["result"].get("value")

    # Quiet a moment for late events (none is expected: the page has no script).
    call("Runtime.evaluate", {"expression": "1"}, session=s)
    noise = [e for e in events if e.get("method") in
             ("Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded")]
    ok(not noise, "no_console_message_log_entry_or_exception", json.dumps(noise)[:2000])
    reqs = [e["params"]["request"]["url"] for e in events
            if e.get("method") == "Network.requestWillBeSent"]
    ok(all(u == url for u in reqs), "no_request_but_the_page_itself", reqs)

    h2 = js("[...document.querySelectorAll('h2')].map(e => e.textContent)") or []
    for want in expect["h2"]:
        ok(any(h.startswith(want) for h in h2), f"section_in_dom: {want}", h2)
    bad = js("document.querySelectorAll('script,img,iframe,a,object,embed,link,base,form,"
             "input,audio,video,frame').length")
    ok(bad == 0, "no_element_of_the_agents", bad)
    handlers = js("[...document.querySelectorAll('*')].flatMap(e => [...e.attributes]"
                  ".filter(a => /^on|href|src/i.test(a.name)).map(a => e.tagName + ' ' + a.name))")
    ok(handlers == [], "no_event_handler_or_url_attribute", handlers)
    # textContent: folded sections (<details>) hold text too.
    text = js("document.body.textContent") or ""
    for want in expect["text"]:
        ok(want in text, f"renders_as_text: {want!r}", text[:300])
    ok(js("typeof window.alert_fired") == "undefined", "no_script_ran")
    metrics = call("Page.getLayoutMetrics", session=s)["cssContentSize"]
    call("Emulation.setDeviceMetricsOverride",
         {"width": 1280, "height": min(int(metrics["height"]) + 1, 4000), "deviceScaleFactor": 1,
          "mobile": False}, session=s)
    png = call("Page.captureScreenshot", {"format": "png"}, session=s)["data"]
    open(shot, "wb").write(base64.b64decode(png))
    ok(os.path.getsize(shot) > 1000, "screenshot_is_taken")
    try:
        call("Browser.close", timeout=10)
    except Exception:
        pass
except Exception as e:  # one line, then the caller's plan shows what is missing
    ok(False, "chromium_drives_the_page", repr(e))
finally:
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    subprocess.run(["rm", "-rf", profile])
