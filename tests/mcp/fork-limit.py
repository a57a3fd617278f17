#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""MCP `fork`'s limit (64 per server, docs/mcp.md) counts the forks that
were made, not the calls: a model whose forks are refused (a bad file
name, a config that exists, a checkpoint that does not) keeps its budget.
Driven through the real `cloister mcp` server over JSON-RPC; 64 refused
forks, then a good one is made; then 63 more, and the 65th made one is
refused. Prints TAP (docs/security.md, "The MCP server")."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/
from tap import ok, skip_all, done, need_cloister, need_fuse  # noqa: E402
from mcp_client import McpClient, err, scratch_workspace  # noqa: E402

CLOISTER = need_cloister()

if os.geteuid() != 0:
    skip_all("needs root (FUSE mounts)")
need_fuse()
if not shutil.which("bwrap"):
    skip_all("bubblewrap is not installed")

T, cfg = scratch_workspace("cloister-mcp-forklimit.", {"a.txt": "a\n"})
conf = os.path.dirname(cfg)

server = McpClient(CLOISTER, cfg)
tool = server.tool


def text(res):
    return "".join(c.get("text", "") for c in res.get("content", []))


try:
    m = server.initialize("fork-limit")
    ok(m and m["result"]["serverInfo"]["name"] == "cloister", "mcp_server_initializes", m)
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
    server.close()
    subprocess.run([CLOISTER, "unmount", cfg], capture_output=True)
    shutil.rmtree(T, ignore_errors=True)

done()
