#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""hostenv.py: nothing the model or the agent's config chooses reaches the
environment of bubblewrap, which runs on the host (as root, or as the
agent's host uid before its sandbox exists). glibc reads GLIBC_TUNABLES,
MALLOC_CHECK_ and the dynamic loader's variables at a program's start, and
GCONV_PATH, NLSPATH, LOCALDOMAIN, HOSTALIASES, RES_OPTIONS, TMPDIR and
the like whenever a function needs them: a host process must not get them.

For each way a variable comes in (an MCP client's run_command env, and
[run] env passing a host variable to `cloister run`), and for both ways
the environment travels (to cloister-exec, and, without it, bubblewrap's
--args), the sandboxed command holds itself open until the test has read
/proc/PID/environ and /proc/PID/cmdline of every bubblewrap process of the
run: the environment must be exactly the fixed one, the command line must
hold no value, and the command must still see every variable.

Nothing depends on timing: the command waits for a file the test makes,
and the test waits (bounded) for the run's processes to appear. TAP."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/
from tap import ok, skip, skip_all, done, need_cloister, need_fuse, need_userns_bwrap  # noqa: E402
from mcp_client import McpClient, source_repo  # noqa: E402

FIXED_ENV = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]
CLOISTER = need_cloister()
need_fuse()
need_userns_bwrap()
BWRAP = os.path.realpath(shutil.which("bwrap"))

MARK = f"hostenv{os.getpid()}"
# glibc's unsecure variables (sysdeps/generic/unsecvars.h) a caller may name,
# and others glibc reads at run time. The values are unique, to be found.
VARS = {
    "GLIBC_TUNABLES": f"glibc.malloc.check=3:{MARK}v",
    "GCONV_PATH": f"/tmp/{MARK}v-gconv",
    "MALLOC_CHECK_": "3",
    "MALLOC_TRACE": f"/tmp/{MARK}v-mtrace",
    "LOCALDOMAIN": f"{MARK}v.test",
    "HOSTALIASES": f"/tmp/{MARK}v-aliases",
    "RES_OPTIONS": "ndots:15 attempts:5",
    "RESOLV_HOST_CONF": f"/tmp/{MARK}v-host.conf",
    "NLSPATH": f"/tmp/{MARK}v-nls/%N",
    "LOCPATH": f"/tmp/{MARK}v-locale",
    "TZDIR": f"/tmp/{MARK}v-zoneinfo",
    "NIS_PATH": f"{MARK}v-nis",
}

T = tempfile.mkdtemp(prefix="cloister-hostenv.")
os.chmod(T, 0o755)
repo = f"{T}/repo"
source_repo(repo, {"a.txt": "hello\n"})
cfg = f"{T}/ws.ini"
mnt = f"{T}/state/mnt"
with open(cfg, "w") as f:
    f.write(f"""[workspace]
name = hostenv
state = {T}/state
mountpoint = {mnt}

[repo]
source = {repo}

[run]
env = {", ".join(VARS)}
""")
    if os.environ.get("CLOISTER_TEST_CGROUP") == "container":
        f.write("[limits]\ncgroup = container\n")


def bwrap_processes():
    """(pid, environ, cmdline) of every bubblewrap whose command line names MARK."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if argv[0].decode(errors="replace") not in (BWRAP, "bwrap", "/usr/bin/bwrap") or \
                    MARK.encode() not in b" ".join(argv):
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = [e.decode(errors="replace") for e in f.read().split(b"\0") if e]
            found.append((int(pid), env, b"\0".join(argv).decode(errors="replace")))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found


def wait_for_run(tag, proc=None):
    """The run's bubblewrap processes, once its command has written what it sees (a bounded
    wait: a run that never starts is a failure, not a hang)."""
    for _ in range(1200):
        if os.path.exists(f"{mnt}/workspace/seen-{tag}"):
            return bwrap_processes()
        if proc is not None and proc.poll() is not None:
            return []
        time.sleep(0.1)
    return []


def command(tag):
    # The command sees its environment, writes it, and waits for the test.
    return (f"env > /workspace/.seen-{tag} && mv /workspace/.seen-{tag} /workspace/seen-{tag}; "
            f"while [ ! -e /workspace/go-{tag} ]; do sleep 0.05; done; : {MARK}-{tag}")


def check_run(tag, found, seen_path):
    ok(found, f"{tag}: the run's bubblewrap is found", "no bubblewrap with the run's mark")
    for pid, env, cmdline in found:
        ok(env == FIXED_ENV, f"{tag}: bubblewrap (pid {pid}) runs with the fixed environment only",
           "\n".join(env))
        # Names, and values made to be found (some, like MALLOC_CHECK_'s, can't be).
        held = [k for k, v in VARS.items() if k in cmdline or (f"{MARK}v" in v and v in cmdline)]
        ok(not held, f"{tag}: bubblewrap's command line (pid {pid}) holds no value of the environment",
           held)
    try:
        seen = dict(line.split("=", 1) for line in open(seen_path).read().splitlines() if "=" in line)
    except OSError as e:
        seen = {"error": str(e)}
    missing = {k: seen.get(k) for k, v in VARS.items() if seen.get(k) != v}
    ok(not missing, f"{tag}: the sandboxed command sees every variable", missing)
    ok(seen.get("TMPDIR") == "/tmp" and seen.get("PWD") == "/workspace",
       f"{tag}: the sandbox's own TMPDIR and bubblewrap's PWD are there", seen)


def release(tag):
    open(f"{mnt}/workspace/go-{tag}", "w").close()


env = dict(os.environ, **VARS)
try:
    r = subprocess.run([CLOISTER, "mount", cfg], capture_output=True, text=True)
    if r.returncode != 0:
        skip_all(f"cloister mount failed: {r.stderr.strip()[:300]}")

    # 1. cloister run, [run] env passing host variables, through cloister-exec.
    p = subprocess.Popen([CLOISTER, "run", cfg, "--", "sh", "-c", command("run")], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found = wait_for_run("run", p)
    check_run("cloister_run", found, f"{mnt}/workspace/seen-run")
    release("run")
    out, err = p.communicate(timeout=300)
    ok(p.returncode == 0, "cloister_run: the command ends well", err)

    # 2. The same without cloister-exec: a copy of the binary with only its
    # commands module beside it (the run record's code, mounts/cli/run-record.h).
    helper = ""
    try:
        for line in open(f"{os.environ.get('CLOISTER_BUILD', '')}/cloister-config.h"):
            if line.startswith("#define CLOISTER_EXEC_HELPER "):
                helper = line.split('"')[1]
    except OSError:
        helper = "(unknown: no CLOISTER_BUILD/cloister-config.h)"
    if not helper or os.path.exists(helper) or helper.startswith("("):
        skip("cloister_run_without_cloister_exec", f"an installed cloister-exec would be found: {helper}")
    else:
        os.mkdir(f"{T}/bin")
        shutil.copy(CLOISTER, f"{T}/bin/cloister")
        shutil.copy(os.path.join(os.path.dirname(CLOISTER), "cloister-commands.so"),
                    f"{T}/bin/cloister-commands.so")
        p = subprocess.Popen([f"{T}/bin/cloister", "run", cfg, "--", "sh", "-c", command("args")],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        found = wait_for_run("args", p)
        ok(found and all("--args" in c.split("\0") for _, _, c in found),
           "cloister_run_without_cloister_exec: bubblewrap reads the environment with --args",
           [c for _, _, c in found])
        check_run("cloister_run_without_cloister_exec", found, f"{mnt}/workspace/seen-args")
        release("args")
        out, err = p.communicate(timeout=300)
        ok(p.returncode == 0, "cloister_run_without_cloister_exec: the command ends well", err)

    # 3. An MCP client's run_command env: none of the host's, all the model's.
    server = McpClient(CLOISTER, cfg, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    ok(server.initialize("hostenv") is not None, "mcp: the server initializes")
    # Sent without waiting: the command holds itself open until the test has looked.
    call = server.call("tools/call", {"name": "run_command",
                                      "arguments": {"command": command("mcp"), "env": VARS}})
    found = wait_for_run("mcp")
    check_run("mcp_run_command", found, f"{mnt}/workspace/seen-mcp")
    release("mcp")
    m = server.answer(call)
    res = (m or {}).get("result") or {}
    ok(not res.get("isError") and (res.get("structuredContent") or {}).get("exit_code") == 0,
       "mcp_run_command: the command ends well", m)
    server.close()
finally:
    subprocess.run([CLOISTER, "unmount", cfg], capture_output=True)
    shutil.rmtree(T, ignore_errors=True)

done()
