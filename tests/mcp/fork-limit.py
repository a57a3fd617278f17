#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""MCP `fork`'s limit (64 per server, docs/mcp.md) counts the forks that
were made, not the calls: a model whose forks are refused (a bad file
name, a config that exists, a checkpoint that does not) keeps its budget.
Driven through the real `cloister mcp` server over JSON-RPC; 64 refused
forks, then a good one is made; then 63 more, and the 65th made one is
refused. Prints TAP (docs/security.md, "The MCP server").

Self-contained on purpose: its few lines of JSON-RPC do not wait for the
shared tests/mcp client."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/
from tap import ok, skip_all, done, need_cloister, need_fuse  # noqa: E402

CLOISTER = need_cloister()

if os.geteuid() != 0:
    skip_all("needs root (FUSE mounts)")
need_fuse()
if not shutil.which("bwrap"):
    skip_all("bubblewrap is not installed")

T = tempfile.mkdtemp(prefix="cloister-mcp-forklimit.")
os.environ["XDG_CONFIG_HOME"] = f"{T}/xdg-config"
os.environ["XDG_STATE_HOME"] = f"{T}/xdg-state"
conf = f"{T}/conf"
os.makedirs(conf)
subprocess.run(["git", "init", "-q", "-b", "main", f"{T}/src"], check=True)
with open(f"{T}/src/a.txt", "w") as f:
    f.write("a\n")
subprocess.run(["git", "-C", f"{T}/src", "add", "-A"], check=True)
subprocess.run(["git", "-C", f"{T}/src", "-c", "user.name=t", "-c", "user.email=t@example.com",
                "commit", "-qm", "base"], check=True)
cfg = f"{conf}/ws.ini"
with open(cfg, "w") as f:
    f.write(f"[workspace]\nname = ws\nstate = {T}/states/ws\n[repo]\nsource = {T}/src\n")

server = subprocess.Popen([CLOISTER, "mcp", cfg], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL)
next_id = 0


def request(method, params=None):
    global next_id
    next_id += 1
    msg = {"jsonrpc": "2.0", "id": next_id, "method": method, "params": params or {}}
    server.stdin.write((json.dumps(msg) + "\n").encode())
    server.stdin.flush()
    while True:
        line = server.stdout.readline()
        if not line:
            return None
        m = json.loads(line)
        if m.get("id") == next_id:
            return m


def tool(tool_name, **args):
    m = request("tools/call", {"name": tool_name, "arguments": args})
    return (m or {}).get("result") or {"isError": True, "content": [{"text": json.dumps(m)}]}


def err(res):
    return res.get("isError") is True


def text(res):
    return "".join(c.get("text", "") for c in res.get("content", []))


try:
    m = request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "fork-limit", "version": "1"}})
    ok(m and m["result"]["serverInfo"]["name"] == "cloister", "mcp_server_initializes", m)
    server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    server.stdin.flush()
    r = tool("file_write", path="b.txt", content="work\n")
    ok(not err(r), "the_model_writes_a_file", r)
    r = tool("checkpoint", name="cp1")
    ok(not err(r), "the_model_checkpoints", r)

    # 64 refusals of three kinds, none of which writes anything.
    refused = []
    for i in range(64):
        if i % 3 == 0:
            r = tool("fork", new_config=f"bad name {i}.ini", **{"from": "cp1"})
        elif i % 3 == 1:
            r = tool("fork", new_config="ws.ini", **{"from": "cp1"})  # exists
        else:
            r = tool("fork", new_config=f"f{i}.ini", **{"from": "no-such-checkpoint"})
        refused.append(err(r))
    ok(all(refused), "sixty_four_bad_forks_are_refused", refused)
    ok(sorted(os.listdir(conf)) == ["ws.ini"], "and_write_no_config", os.listdir(conf))
    r = tool("fork", new_config="good.ini", **{"from": "cp1"})
    ok(not err(r) and os.path.exists(f"{conf}/good.ini"),
       "refused_forks_do_not_use_up_the_fork_limit", text(r))

    # The limit still holds for forks that were made.
    made = [not err(tool("fork", new_config=f"g{i}.ini", **{"from": "cp1"})) for i in range(63)]
    ok(all(made), "sixty_four_forks_are_made", made)
    r = tool("fork", new_config="one-more.ini", **{"from": "cp1"})
    ok(err(r) and "made 64 forks" in text(r) and not os.path.exists(f"{conf}/one-more.ini"),
       "the_sixty_fifth_made_fork_is_refused", text(r))
finally:
    server.stdin.close()
    server.wait(timeout=120)
    subprocess.run([CLOISTER, "unmount", cfg], capture_output=True)
    shutil.rmtree(T, ignore_errors=True)

done()
