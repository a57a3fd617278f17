#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The soak: many agents on one host, for a while, with things dying.

16 workspaces, each with a broker and an egress proxy, and 2 or 3 runs of
each at any time doing mixed work: a build and its tests, file storms,
tokens from the broker, git pushes through the proxy to a local
`git http-backend`, extended attributes and journal pressure, and files
written and fsync'd. Meanwhile random mount daemons, brokers, proxies and
runs are killed with SIGKILL. At the end it checks that

  - every file a run fsync'd and reported is there with its bytes, and
    `git fsck` is clean on every repository the runs pushed to;
  - no write landed in another workspace (each workspace's files carry
    its name);
  - nothing leaked: mounts, processes, cgroups, sockets, temporary files
    (counted before and after);
  - every state directory is within its documented bound
    (docs/config.md, "How large the state directory gets");
  - every audit log (the broker's and the proxy's) verifies.

TAP. `--seconds N` (default 120, what CI runs) makes it last as long as
asked: `tests/soak/soak.py --seconds 3600` as root, with CLOISTER set to a
build's cloister and CLOISTER_SRC to the tree. Skips (77) without root,
/dev/fuse, bubblewrap, git or openssl.
"""
import argparse
import base64
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=float(os.environ.get("CLOISTER_SOAK_SECONDS", 120)))
ap.add_argument("--workspaces", type=int, default=16)
ap.add_argument("--seed", type=int, default=None)
args = ap.parse_args()

CLOISTER = os.environ.get("CLOISTER")
SRC = os.environ.get("CLOISTER_SRC")
if not CLOISTER or not SRC:
    sys.exit("run through meson test (CLOISTER, CLOISTER_SRC)")


def skip_all(why):
    print("1..0 # SKIP " + why)
    sys.exit(77)


if os.geteuid() != 0:
    skip_all("needs root: it mounts 16 workspaces and runs their sandboxes as root")
if not os.path.exists("/dev/fuse"):
    skip_all("no /dev/fuse")
for tool in ("bwrap", "git", "openssl"):
    if not shutil.which(tool):
        skip_all(tool + " is not installed")

seed = args.seed if args.seed is not None else int(time.time())
rng = random.Random(seed)
print("# seed %d, %d workspaces, %.0f s" % (seed, args.workspaces, args.seconds), flush=True)

n_test = 0
n_fail = 0


def ok(good, name, why=""):
    global n_test, n_fail
    n_test += 1
    print(("ok %d - %s" if good else "not ok %d - %s") % (n_test, name), flush=True)
    if not good:
        n_fail += 1
        for line in str(why).splitlines()[:20]:
            print("# " + line)


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, text=True, **kw)


# --- what the host holds before ---------------------------------------------------
def census():
    mounts = sum(1 for l in open("/proc/self/mounts") if " fuse.cloister " in l)
    procs = len(sh(["pgrep", "-f", "cloister (mount|broker|proxy|run) .*cloister-soak|cloister-fs|"
                                   "bwrap .*--hostname soak[0-9][0-9] "]).stdout.split())
    cgroups = len(glob.glob("/sys/fs/cgroup/**/cloister-*", recursive=True))
    tmps = len(glob.glob("/tmp/cloister-review-*") + glob.glob("/run/cloister/stage/*"))
    return {"mounts": mounts, "processes": procs, "cgroups": cgroups, "temporary files": tmps}


T0 = time.monotonic()


def phase(what):
    print("# %6.1f s: %s" % (time.monotonic() - T0, what), flush=True)


before = census()
T = tempfile.mkdtemp(prefix="cloister-soak.")
os.chmod(T, 0o755)
SECRET = "SOAKSECRET-%d-do-not-leak" % rng.randrange(10**12)
children = []


def cleanup():
    for c in children:
        try:
            c.kill()
        except OSError:
            pass
    for cfg in glob.glob(T + "/soak*/ws.ini"):
        sh([CLOISTER, "unmount", cfg])
    if os.environ.get("KEEP"):
        return
    if not any((" " + T + "/") in l for l in open("/proc/self/mounts")):
        shutil.rmtree(T, ignore_errors=True)


# --- a TLS git server on loopback, and a CA the sandboxes trust ------------------
ca = T + "/ca"
os.makedirs(ca)
r = sh(
    f"openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
    f"-subj /CN=soak-ca -keyout {ca}/ca.key -out {ca}/ca.pem && "
    f"openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=git.test "
    f"-keyout {ca}/srv.key -out {ca}/srv.csr && "
    f"printf 'subjectAltName=DNS:git.test\\n' >{ca}/ext && "
    f"openssl x509 -req -in {ca}/srv.csr -CA {ca}/ca.pem -CAkey {ca}/ca.key "
    f"-CAcreateserial -days 2 -extfile {ca}/ext -out {ca}/srv.pem")
if r.returncode:
    skip_all("openssl could not make a test CA: " + r.stderr.strip().splitlines()[-1])
os.makedirs(T + "/cadir")
shutil.copy(ca + "/ca.pem", T + "/cadir/ca.pem")
gitroot = T + "/gitroot/org"
os.makedirs(gitroot)
auth = "Basic " + base64.b64encode(("x-access-token:" + SECRET).encode()).decode()
server = subprocess.Popen(
    [sys.executable, SRC + "/tests/proxy/server.py", "--port-file", T + "/git.port", "--log", T + "/git.requests",
     "--name", "git", "--cert", ca + "/srv.pem", "--key", ca + "/srv.key", "--git-root", T + "/gitroot",
     "--auth", auth], stderr=open(T + "/git.log", "w"))
children.append(server)
for _ in range(300):
    if os.path.exists(T + "/git.port") and os.path.getsize(T + "/git.port"):
        break
    time.sleep(0.05)
PORT = open(T + "/git.port").read().strip()

HAVE_CC = bool(shutil.which("cc")) and bool(shutil.which("make"))
MAKEFILE = """\
CFLAGS = -O0
all: app
app: main.o util.o
\t$(CC) -o $@ main.o util.o
test: app
\t./app | grep -q 42
clean:
\trm -f app *.o
"""

# --- the workspaces ------------------------------------------------------------------
WS = []
for i in range(args.workspaces):
    name = "soak%02d" % i
    d = T + "/" + name
    os.makedirs(d + "/src")
    src = d + "/src"
    open(src + "/Makefile", "w").write(MAKEFILE)
    open(src + "/main.c", "w").write('#include <stdio.h>\nint util(void);\nint main(void) { printf("%d\\n", util()); return 0; }\n')
    open(src + "/util.c", "w").write("int util(void) { return 42; }\n")
    open(src + "/OWNER", "w").write(name + ":\n")
    sh(["git", "init", "-q", "-b", "main", src])
    sh(["git", "-C", src, "add", "-A"])
    sh(["git", "-C", src, "-c", "user.name=s", "-c", "user.email=s@s", "commit", "-qm", "base"])
    sh(["git", "clone", "-q", "--bare", src, gitroot + "/" + name + ".git"])
    sh(["git", "-C", gitroot + "/" + name + ".git", "config", "http.receivepack", "true"])
    open(d + "/policy.ini", "w").write(f"""[limits]
rate = 1000
issue_rate = 100000
issue_total = 1000000
[scope "git"]
audience = https://git.test
workspaces = {name}
hosts = git.test
username = x-access-token
""")
    open(d + "/ws.ini", "w").write(f"""[workspace]
name = {name}
state = {d}/state
[repo]
source = {src}
[mirror "ca"]
source = {T}/cadir
path = /opt/ca
[broker]
policy = {d}/policy.ini
[limits]
bytes = 64M
files = 20000
journal = 16M
audit = 4M
netlog = 4M
timeout = 5m
memory = 2G
processes = 256
[network]
mode = proxy
resolve = git.test:127.0.0.1
test_ca = {ca}/ca.pem
[inject "git"]
host = git.test
port = {PORT}
methods = GET, POST
paths = /git/org/{name}.git/**
scope = git
secret = git-token
scheme = basic
username = x-access-token
push_refs = refs/heads/cloister/{name}/*
""")
    r = subprocess.run([CLOISTER, "secret", "add", "git-token", "--config", d + "/ws.ini"], input=SECRET,
                       capture_output=True, text=True)
    WS.append({"name": name, "dir": d, "cfg": d + "/ws.ini", "durable": {}, "lock": threading.Lock(),
               "runs": 0, "ok_runs": 0})

phase("set up")
first = sh([CLOISTER, "run", WS[0]["cfg"], "--", "true"])
if first.returncode == 125 and "pids cgroup" in first.stderr:
    cleanup()
    skip_all("running as root without a usable pids cgroup: " + first.stderr.strip())
if first.returncode != 0:
    print("Bail out! cloister run fails: " + first.stderr.strip())
    cleanup()
    sys.exit(1)

# --- the jobs, as the agent runs them ------------------------------------------------
# A broker client and a git credential helper in python: the sandbox's own
# clients are this build's binaries, which an ASan build can't run under the
# sandbox's address-space limit; the broker, the proxy and the mount under
# test are this build's either way.
PRELUDE = r"""
set -u
W=/workspace
tok() { python3 -c 'import json,socket
s=socket.socket(socket.AF_UNIX); s.connect("/run/cloister/broker.sock")
s.sendall(b"{\"op\":\"issue\",\"scope\":\"git\"}\n")
r=json.loads(s.makefile().readline()); print(r["token"])'; }
cat >/tmp/cred <<'EOF'
#!/bin/sh
[ "$1" = get ] || exit 0
echo username=x-access-token
echo "password=$(python3 -c 'import json,socket
s=socket.socket(socket.AF_UNIX); s.connect("/run/cloister/broker.sock")
s.sendall(b"{\"op\":\"issue\",\"scope\":\"git\"}\n")
print(json.loads(s.makefile().readline())["token"])')"
EOF
chmod +x /tmp/cred
"""


def job(ws, kind, seq):
    tag = ws["name"] + ":"
    n = "%s-%d" % (ws["name"], seq)
    if kind == "build" and HAVE_CC:
        return f"cd $W && make -s clean >/dev/null && make -s -j2 test && echo '{tag} built' >built-{n}"
    if kind == "storm":
        return f"""mkdir -p $W/storm-{n} && cd $W/storm-{n} &&
for i in $(seq 1 150); do echo '{tag} $i' >f$i; done &&
for i in $(seq 1 150 | awk 'NR%2'); do rm f$i; done &&
for i in $(seq 2 20 150); do mv f$i g$i; done && cd .. && rm -rf storm-{n}-old; mv storm-{n} storm-{n}-old 2>/dev/null; true"""
    if kind == "tokens":
        return "for i in 1 2 3 4 5; do tok | grep -q '^v4.public.' || exit 1; done"
    if kind == "push":
        return f"""cd $W && echo '{tag} {seq}' >pushed-{n} && git add pushed-{n} &&
git -c credential.helper= -c credential.helper=/tmp/cred commit -qm 'soak {n}' &&
git -c credential.helper= -c credential.helper=/tmp/cred \
  push -q https://git.test/git/org/{ws['name']}.git HEAD:refs/heads/cloister/{ws['name']}/r{seq}"""
    if kind == "xattr":
        return f"""mkdir -p $W/x-{n} && cd $W/x-{n} && python3 -c '
import os
for i in range(200):
    p = "f%d" % i
    open(p, "w").write("{tag}\\n")
    try:
        os.setxattr(p, "user.soak", b"v" * 500)
    except OSError:
        pass
for i in range(300):
    os.chmod("f0", 0o600 if i % 2 else 0o644)
'"""
    # durable: written, fsync'd, then reported (the driver records what it read)
    return f"""python3 -c '
import os
for i in range(5):
    p = "/workspace/durable-{n}-%d" % i
    data = "{tag} {n} %d\\n" % i
    with open(p, "w") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    print("DURABLE", p, data.strip(), flush=True)
'"""


KINDS = ["build", "storm", "tokens", "push", "xattr", "durable"]
live_runs = []
live_lock = threading.Lock()
stats = {"runs": 0, "ok": 0, "killed": 0, "daemons_killed": 0, "stuck": 0}
slow_runs = []  # (seconds, workspace, kind, exit, the end of its stderr): said, not judged


def runner(ws, k):
    seq = k * 100000
    while time.monotonic() < deadline:
        seq += 1
        kind = rng.choice(KINDS)
        p = subprocess.Popen([CLOISTER, "run", ws["cfg"], "--", "sh", "-c", PRELUDE + job(ws, kind, seq)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        with live_lock:
            live_runs.append(p)
        t_run = time.monotonic()
        try:
            out, err = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            try:
                out, err = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                # Something of the sandbox still holds its output: the leak
                # checks below count it; this runner goes on.
                p.stdout.close()
                p.stderr.close()
                p.wait()
                out, err = "", ""
                with live_lock:
                    stats["stuck"] += 1
        with live_lock:
            live_runs.remove(p)
            stats["runs"] += 1
            stats["ok"] += p.returncode == 0
            # A run that takes a minute is worth a look (a kill by the chaos
            # thread ends one at once): which, and what it said last.
            if time.monotonic() - t_run > 60:
                slow_runs.append((time.monotonic() - t_run, ws["name"], kind,
                                  p.returncode, " | ".join((err or "").strip().splitlines()[-3:])[-300:]))
        # What was fsync'd and said so is kept, even if the run died after.
        for line in out.splitlines():
            if line.startswith("DURABLE "):
                _, path, data = line.split(" ", 2)
                with ws["lock"]:
                    ws["durable"][path] = data


def chaos():
    while time.monotonic() < deadline:
        time.sleep(rng.uniform(1.0, 4.0))
        ws = rng.choice(WS)
        what = rng.choice(["mount", "broker", "proxy", "run", "run"])
        pid = None
        try:
            if what == "mount":
                pid = int(open(ws["dir"] + "/state/mount.pid").read().split()[0])
            elif what in ("broker", "proxy"):
                pid = int(open(ws["dir"] + "/state/%s.for-runs" % what).read().split()[0])
            else:
                with live_lock:
                    mine = [p for p in live_runs if ws["cfg"] in p.args]
                if mine:
                    os.killpg(rng.choice(mine).pid, signal.SIGKILL)
                    stats["killed"] += 1
                continue
        except (OSError, ValueError, IndexError):
            continue
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
                stats["daemons_killed"] += 1
            except OSError:
                pass


phase("soaking")
deadline = time.monotonic() + args.seconds
threads = [threading.Thread(target=chaos)]
for ws in WS:
    for k in range(rng.choice([2, 3])):
        threads.append(threading.Thread(target=runner, args=(ws, k)))
for t in threads:
    t.start()
for t in threads:
    t.join()
phase("soaked")
print("# %(runs)d runs, %(ok)d ok, %(killed)d runs and %(daemons_killed)d daemons killed" % stats, flush=True)
for s_, w_, k_, rc_, e_ in sorted(slow_runs, reverse=True)[:10]:
    print("# slow run: %.0f s, %s, %s, exit %s: %s" % (s_, w_, k_, rc_, e_), flush=True)
ok(stats["stuck"] == 0, "no_run_outlived_its_kill (%d stuck)" % stats["stuck"])
ok(stats["ok"] > len(WS), "runs_kept_working_through_the_kills (%d of %d)" % (stats["ok"], stats["runs"]))

# --- after: every fsync'd file, in its own workspace only ----------------------------
lost, crosstalk, finals = [], [], 0
FINAL = r"""python3 -c '
import os, re, sys
name = sys.argv[1]
tag = re.compile(rb"^soak[0-9][0-9]:", re.M)
for d, dirs, files in os.walk("/workspace"):
    if ".git" in dirs:
        dirs.remove(".git")
    for f in files:
        p = os.path.join(d, f)
        try:
            data = open(p, "rb").read()
        except OSError:
            continue
        if f.startswith("durable-"):
            print(f, data.decode(errors="replace").strip())
        tags = {m.group(0) for m in tag.finditer(data)}
        if tags and tags != {name.encode() + b":"}:
            print("FOREIGN", p, sorted(tags))
' NAME"""


def final_run(ws):
    t0 = time.monotonic()
    ws["final"] = sh([CLOISTER, "run", ws["cfg"], "--", "sh", "-c", FINAL.replace("NAME", ws["name"])])
    ws["final_s"] = time.monotonic() - t0


pool = [threading.Thread(target=lambda part=WS[i::4]: [final_run(w) for w in part]) for i in range(4)]
for t in pool:
    t.start()
for t in pool:
    t.join()
phase("final runs done")
for ws in WS:
    r = ws["final"]
    finals += r.returncode == 0
    seen = {}
    for line in r.stdout.splitlines():
        if line.startswith("FOREIGN "):
            crosstalk.append(ws["name"] + " " + line)
        elif line.startswith("durable-"):
            f, data = line.split(" ", 1)
            seen["/workspace/" + f] = data
    for path, data in ws["durable"].items():
        if seen.get(path) != data:
            lost.append("%s %s: %r" % (ws["name"], path, seen.get(path)))
ok(finals == len(WS), "every_workspace_runs_after_the_soak (%d of %d)" % (finals, len(WS)),
   "\n".join("%s: exit %d after %.0f s: %s" % (ws["name"], ws["final"].returncode, ws["final_s"],
                                              ws["final"].stderr.strip()[-300:])
             for ws in WS if ws["final"].returncode != 0))
n_durable = sum(len(ws["durable"]) for ws in WS)
ok(not lost and n_durable > 0, "nothing_fsynced_is_lost (%d files)" % n_durable, "\n".join(lost))
ok(not crosstalk, "no_write_landed_in_another_workspace", "\n".join(crosstalk))

phase("durable and crosstalk checked")
bad_fsck = []
for ws in WS:
    for repo in (ws["dir"] + "/src", gitroot + "/" + ws["name"] + ".git"):
        r = sh(["git", "-C", repo, "fsck", "--no-dangling", "--no-progress"])
        if r.returncode:
            bad_fsck.append(repo + ": " + r.stderr.strip())
pushes = sum(1 for l in open(T + "/git.requests") if "git-receive-pack" in l and '"POST"' in l) \
    if os.path.exists(T + "/git.requests") else 0
ok(not bad_fsck, "git_fsck_is_clean_on_every_repository (%d pushes)" % pushes, "\n".join(bad_fsck))

phase("fsck done")
bad_audit = []
for ws in WS:
    r = sh([CLOISTER, "audit", "verify", ws["cfg"]])
    if r.returncode:
        bad_audit.append(ws["name"] + ": " + (r.stdout + r.stderr).strip())
ok(not bad_audit, "every_audit_log_verifies", "\n".join(bad_audit))

phase("checked")
# --- bounds and leaks, once every workspace is down ----------------------------------
for ws in WS:
    sh([CLOISTER, "unmount", ws["cfg"]])
MiB = 1 << 20
bound = 64 * MiB + 20000 * 4096 + 16 * MiB + 4 * MiB + 4 * MiB + MiB
over = []
for ws in WS:
    size = int(sh(["du", "-sb", "--exclude=fs/cache", ws["dir"] + "/state"]).stdout.split()[0])
    if size > bound:
        over.append("%s: %d bytes > %d" % (ws["name"], size, bound))
ok(not over, "every_state_directory_is_within_its_bound", "\n".join(over))

# Daemons started for runs stop within a second of the last run: wait for that.
# (Fewer than before is no leak: something else on the machine ended.)
for waited in range(600):
    after = census()
    if all(after[k] <= before[k] for k in before):
        break
    time.sleep(0.1)
phase("census %s after %d looks (before: %s)" % (after, waited + 1, before))
for key in before:
    ok(after[key] <= before[key], "no_%s_leaked" % key.replace(" ", "_"),
       "%d before, %d after" % (before[key], after[key]))
sockets = [p for p in glob.glob(T + "/**", recursive=True) if os.path.exists(p) and
           __import__("stat").S_ISSOCK(os.lstat(p).st_mode)]
ok(not sockets, "no_socket_is_left", "\n".join(sockets[:10]))
leaked = [l for l in sh(["sh", "-c", "grep -l -r -F '" + SECRET + "' " + T + "/soak* 2>/dev/null"]).stdout.split()]
ok(not leaked, "the_real_secret_is_nowhere_in_the_state", "\n".join(leaked))
asan = sh(["sh", "-c", "grep -l -r 'Sanitizer' " + T + "/soak*/state/fs/daemon.log 2>/dev/null"]).stdout.split()
ok(not asan, "no_daemon_reported_a_sanitizer_error", "\n".join(asan))

phase("done")
server.kill()
cleanup()
print("1..%d" % n_test)
sys.exit(1 if n_fail else 0)
