#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""MCP `run_command` makes room for a background run (`--background`,
docs/mcp.md) by forgetting the oldest one that ended, and only once the
new run has started: a refused call (a bad env name) forgets nothing,
whose ended run's output the model can still read. Driven through the
real `cloister mcp --runs 1 --background 1` over JSON-RPC. Prints TAP
(docs/security.md, "The MCP server")."""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/
from tap import ok, skip_all, done, need_cloister, need_fuse  # noqa: E402
from mcp_client import McpClient, err, scratch_workspace  # noqa: E402

CLOISTER = need_cloister()

if os.geteuid() != 0:
    skip_all("needs root (FUSE mounts)")
need_fuse()
if not shutil.which("bwrap"):
    skip_all("bubblewrap is not installed")

T, cfg = scratch_workspace("cloister-mcp-bgroom.", {"a.txt": "a\n"})

server = McpClient(CLOISTER, "--runs", "1", "--background", "1", cfg)
tool = server.tool


def text(res):
    return "".join(c.get("text", "") for c in res.get("content", []))


try:
    m = server.initialize("background-room")
    ok(m and m["result"]["serverInfo"]["name"] == "cloister", "mcp_server_initializes", m)

    def ended_unread(command):
        """A background run that has ended, its end not read (reading it
        would forget it): with --runs 1, a foreground run is let in only
        once the background one has ended. No time is asserted: the loop
        only waits."""
        r = tool("run_command", command=command, background=True)
        run_id = (r.get("structuredContent") or {}).get("run_id")
        for _ in range(600):
            f = tool("run_command", command="true")
            if not err(f):
                return run_id, r
            time.sleep(0.1)
        return None, f

    first, r = ended_unread("echo one")
    ok(first, "a_background_run_starts_and_ends", r)
    # With --background 1 full, a refused background call must not forget it.
    r = tool("run_command", command="echo two", background=True, env={"": "x"})
    ok(err(r) and "not a variable name" in text(r), "a_background_call_with_a_bad_env_is_refused", r)
    r = tool("run_output", run_id=first)
    ok(not err(r) and r["structuredContent"]["stdout"] == "one\n",
       "refused_background_calls_forget_no_ended_run", text(r))

    # A run that starts still makes its room.
    second, r = ended_unread("echo again")
    ok(second, "another_background_run_starts_and_ends", r)
    r = tool("run_command", command="echo three", background=True)
    ok(not err(r), "a_good_background_run_starts_when_one_ended_unread", r)
    r = tool("run_output", run_id=second)
    ok(err(r) and "no background run" in text(r), "and_the_ended_one_is_forgotten_for_it", text(r))
finally:
    server.close()
    subprocess.run([CLOISTER, "unmount", cfg], capture_output=True)
    shutil.rmtree(T, ignore_errors=True)

done()
