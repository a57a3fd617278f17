#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""MCP `fork` may not take over another workspace (issue 43, 2), driven
through the real `cloister mcp` server over JSON-RPC, as the model would.

cloister init's layout: the served workspace's config and others' in
$XDG_CONFIG_HOME/cloister, their states siblings in one folder. The model
names a fork after a known workspace that never ran; after one whose state
lies below the name; after a directory that exists; after a fork made
before under another config name. Each is refused, and nothing is written:
no config, no state, no checkpoint; the other workspace still shows its own
files. A fork with a name of its own is still made. Prints TAP
(docs/security.md, docs/cloister-mcp.md)."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/
from tap import ok, skip_all, done, need_cloister, need_fuse  # noqa: E402
from mcp_client import McpClient, err, source_repo  # noqa: E402

CLOISTER = need_cloister()

if os.geteuid() != 0:
    skip_all("needs root (FUSE mounts and the sandbox's agent identity)")
need_fuse()
if not shutil.which("bwrap"):
    skip_all("bubblewrap is not installed")

T = tempfile.mkdtemp(prefix="cloister-mcp-fork.")
os.environ["XDG_CONFIG_HOME"] = f"{T}/xdg-config"
os.environ["XDG_STATE_HOME"] = f"{T}/xdg-state"
known = f"{T}/xdg-config/cloister"
states = f"{T}/states"
os.makedirs(known)
os.makedirs(states)


def config(name, state, source):
    path = f"{known}/{name}.ini"
    with open(path, "w") as f:
        f.write(f"[workspace]\nname = {name}\nstate = {state}\n[repo]\nsource = {source}\n"
                "[limits]\ntimeout = 10m\nprocesses = 64\n")
    return path


def run(cfg, *argv):
    p = subprocess.run([CLOISTER, "run", cfg, "--", *argv], capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else f"rc={p.returncode}: {p.stderr}"


source_repo(f"{T}/src", {"a.txt": "served\n"})
source_repo(f"{T}/src-future", {"a.txt": "future's own\n"})
cfg = config("ws", f"{states}/ws", f"{T}/src")
future = config("future", f"{states}/future", f"{T}/src-future")  # never ran
config("outer", f"{states}/outer/inner", f"{T}/src-future")  # its state below 'outer'
os.makedirs(f"{states}/handmade")

server = McpClient(CLOISTER, cfg)
tool = server.tool


def text(res):
    return "".join(c.get("text", "") for c in res.get("content", []))


def checkpoints():
    r = tool("checkpoint", list=True)
    return sorted(c["name"] for c in (r.get("structuredContent") or {}).get("checkpoints", []))


try:
    m = server.initialize("fork-claims")
    ok(m and m["result"]["serverInfo"]["name"] == "cloister", "mcp_server_initializes", m)
    r = tool("file_write", path="mine.txt", content="the served workspace's work\n")
    ok(not err(r), "the_model_writes_a_file", r)
    r = tool("checkpoint", name="cp1")
    ok(not err(r), "the_model_checkpoints", r)
    cps = checkpoints()

    # The reproduction: the name of a known workspace that never ran.
    r = tool("fork", new_config="squat.ini", **{"from": "cp1"}, name="future")
    ok(err(r) and "another workspace, 'future'" in text(r), "fork_refuses_the_state_of_a_known_workspace", r)
    ok(not os.path.exists(f"{known}/squat.ini") and not os.path.exists(f"{states}/future"),
       "and_writes_neither_a_config_nor_a_state", sorted(os.listdir(states)))
    out = run(future, "sh", "-c", "cat /workspace/a.txt; ls /workspace")
    ok(out == "future's own\na.txt\n", "the_known_workspace_shows_its_own_files_not_the_served_ones",
       out)
    subprocess.run([CLOISTER, "unmount", future], capture_output=True)

    # Without from: refused before the checkpoint it would make.
    r = tool("fork", new_config="squat2.ini", name="future")
    ok(err(r) and checkpoints() == cps, "a_refused_fork_makes_no_checkpoint", (r, checkpoints()))

    # A name whose state would hold a known workspace's.
    r = tool("fork", new_config="o2.ini", **{"from": "cp1"}, name="outer")
    ok(err(r) and "another workspace, 'outer'" in text(r) and "contains" in text(r),
       "fork_refuses_a_state_that_holds_a_known_workspaces", r)
    # A directory that exists, named by no config: a fork makes its own.
    r = tool("fork", new_config="handmade.ini", **{"from": "cp1"})
    ok(err(r) and "exists already" in text(r) and os.listdir(f"{states}/handmade") == [],
       "fork_refuses_a_directory_it_did_not_make", r)

    # A fork with a name of its own; then the same name under another config.
    r = tool("fork", new_config="attempt.ini", **{"from": "cp1"})
    ok(not err(r) and r["structuredContent"]["state"] == f"{states}/attempt",
       "a_fork_with_a_name_of_its_own_is_made", r)
    marker = f"{states}/attempt/fs/layers.json"
    before = open(marker).read() if os.path.exists(marker) else None
    r = tool("fork", new_config="again.ini", **{"from": "cp1"}, name="attempt")
    ok(err(r) and "another workspace, 'attempt'" in text(r), "a_second_fork_may_not_take_the_firsts_state", r)
    ok(before is not None and open(marker).read() == before and
       not os.path.exists(f"{known}/again.ini"), "and_the_first_forks_state_is_untouched")
    out = run(f"{known}/attempt.ini", "cat", "/workspace/mine.txt")
    ok(out == "the served workspace's work\n", "the_fork_runs_with_the_checkpoint", out)
    subprocess.run([CLOISTER, "unmount", f"{known}/attempt.ini"], capture_output=True)
finally:
    server.close()
    subprocess.run([CLOISTER, "unmount", cfg], capture_output=True)
    shutil.rmtree(T, ignore_errors=True)

done()
