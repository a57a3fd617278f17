#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The escape suite's MCP cases: `cloister mcp` driven over raw JSON-RPC by
a hostile caller (the model), with a hostile agent in the sandbox making
the traps: symlinks to host files, a folder swapped for a symlink while
the server writes into it, a FIFO, a huge file, a folder too deep and one
too wide. Every path argument of every file tool is tried. The host is
checked after: nothing was read from it (no line of its /etc/passwd in any
answer) and nothing was written to it. Prints TAP (docs/security.md, "The
MCP server").

Nothing depends on timing: the race runs a fixed number of writes against
an agent that swaps the folder as fast as it can, and asserts on every
outcome whatever the interleaving."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/
from tap import ok, done, need_cloister, need_fuse, need_userns_bwrap  # noqa: E402
from mcp_client import McpClient, err, source_repo  # noqa: E402

CLOISTER = need_cloister()

need_fuse()
need_userns_bwrap()

T = tempfile.mkdtemp(prefix="cloister-mcp-escape.")
repo = f"{T}/repo"
source_repo(repo, {"a.txt": "hello\n"})
cfg = f"{T}/ws.ini"
with open(cfg, "w") as f:
    f.write(f"""[workspace]
name = esc
state = {T}/state
mountpoint = {T}/state/mnt

[repo]
source = {repo}
rev = HEAD
path = /workspace

[home]
path = /home/agent

[mirror "licenses"]
source = /usr/share/common-licenses
path = /opt/licenses
""")

MARK = f"cloister-mcp-escape-{os.getpid()}"
HOST_LINE = open("/etc/passwd").readline().strip()  # e.g. root:x:0:0:root:/root:/bin/bash
server = McpClient(CLOISTER, "--request-max", "4M", cfg)
tool = server.tool


def leaked(res):
    return HOST_LINE in json.dumps(res) or "/root:/bin/" in json.dumps(res)


try:
    m = server.initialize("escape")
    ok(m and m["result"]["serverInfo"]["name"] == "cloister", "mcp_server_initializes", m)

    # The agent lays its traps.
    r = tool("run_command", command=(
        "ln -s /etc/passwd abs; ln -s ../../../../../../../etc/passwd rel; "
        "ln -s /proc/self/root/etc/passwd magic; ln -s /proc/1/root pid1; ln -s / root; "
        "ln -s /.cloister meta; ln -s /home/agent homelink; ln -s /opt/licenses mirrorlink; "
        "mkfifo fifo; head -c 9000000 /dev/zero > big; "
        "mkdir wide && (cd wide && seq 1 10500 | xargs touch); "
        "d=deep; for i in $(seq 1 80); do d=$d/d; done; mkdir -p $d; echo traps set"))
    ok(not err(r) and r["structuredContent"]["exit_code"] == 0, "sandbox_agent_sets_the_traps", r)

    reads = ["/etc/passwd", "../../../../../../etc/passwd", "/proc/self/root/etc/passwd",
             "/proc/1/root/etc/passwd", "abs", "rel", "magic", "pid1/etc/passwd", "root/etc/passwd",
             "meta/workspace", "/.cloister/workspace", "/.cloister/changes", "/workspace/../etc/passwd",
             "/opt/licenses/../../etc/passwd", f"{repo}/a.txt", "//etc/passwd", "./../etc/passwd"]
    for p in reads:
        r = tool("file_read", path=p)
        ok(err(r) and not leaked(r), f"mcp_file_read_stays_in_the_view: {p}", r)
    for p in ["/", "..", "/proc", "/proc/self/root", "pid1", "root", "meta", "/.cloister", "/etc"]:
        r = tool("file_list", path=p)
        names = {e["path"] for e in (r.get("structuredContent") or {}).get("entries", [])}
        ok(not ({"passwd", "shadow", "changes", "workspace"} & names and "a.txt" not in names)
           and not leaked(r), f"mcp_file_list_stays_in_the_view: {p}", r)
    r = tool("file_read", path="homelink")
    ok(err(r), "mcp_file_read_of_a_symlink_to_a_folder_is_an_error", r)
    r = tool("file_read", path="fifo")
    ok(err(r) and "not a regular file" in json.dumps(r), "mcp_file_read_of_a_fifo_does_not_block", r)
    r = tool("file_read", path="big")
    ok(err(r) and "larger than" in json.dumps(r), "mcp_file_read_of_a_huge_file_is_refused", r)
    r = tool("file_list", path="wide")
    sc = r.get("structuredContent") or {}
    ok(not err(r) and sc.get("truncated") is True and len(sc.get("entries", [])) == 10000,
       "mcp_file_list_is_bounded", {k: v for k, v in sc.items() if k != "entries"})
    r = tool("file_list", path="deep", recursive=True)
    depth = max((e["path"].count("/") for e in (r.get("structuredContent") or {}).get("entries", [])),
                default=0)
    ok(not err(r) and depth < 70, "mcp_file_list_depth_is_bounded", depth)

    writes = ["/etc/" + MARK, "../" + MARK, "abs", "rel", "root/tmp/" + MARK, "pid1/tmp/" + MARK,
              "meta/" + MARK, "homelink/.bashrc", "/home/agent/.bashrc", "mirrorlink/x",
              "/opt/licenses/GPL", f"{repo}/{MARK}", "/workspace/../" + MARK, "/tmp/" + MARK,
              "fifo", "wide/../../" + MARK, "/.cloister/" + MARK]
    for p in writes:
        r = tool("file_write", path=p, content="pwned\n")
        ok(err(r), f"mcp_file_write_refuses: {p}", r)
        r = tool("file_edit", path=p, old_string="root", new_string="toor")
        ok(err(r), f"mcp_file_edit_refuses: {p}", r)
        r = tool("file_delete", path=p)
        ok(err(r) or p in ("abs", "rel", "fifo"), f"mcp_file_delete_refuses_or_removes_only_a_link: {p}", r)

    # The race: a folder the server writes into is swapped for a symlink to
    # /etc (and back) by the agent as fast as it can.
    r = tool("run_command", background=True, command=(
        "while [ ! -e stop ]; do mkdir -p race; rm -rf race; ln -s /etc race; rm -f race; "
        "ln -s ../../../../../../../etc race; rm -f race; done"))
    race_id = (r.get("structuredContent") or {}).get("run_id")
    ok(not err(r) and race_id, "mcp_race_agent_starts", r)
    outcomes = {"written": 0, "refused": 0}
    for i in range(300):
        r = tool("file_write", path=f"race/{MARK}-{i}", content="x")
        outcomes["refused" if err(r) else "written"] += 1
    tool("file_write", path="stop", content="")
    r = tool("run_kill", run_id=race_id)
    ok(outcomes["written"] + outcomes["refused"] == 300, "mcp_race_every_write_was_answered", outcomes)
    escaped = [p for p in os.listdir("/etc") if p.startswith(MARK)]
    ok(not escaped, "mcp_race_no_write_reached_the_host", escaped)

    # Widening the sandbox.
    for name in ["LD_PRELOAD", "LD_LIBRARY_PATH", "PATH", "HOME", "CLOISTER_BROKER", "http_proxy",
                 "HTTPS_PROXY", "NO_PROXY", "A=B", "", "1BAD"]:
        r = tool("run_command", command="true", env={name: "/tmp/x"})
        ok(err(r), f"mcp_run_command_refuses_env: {name or '(empty)'}", r)
    r = tool("run_command", command="true", timeout_s=0)
    ok(err(r), "mcp_run_command_refuses_timeout_0", r)
    r = tool("run_command", command="true", stdin="x" * (1024 * 1024 + 1))
    ok(err(r), "mcp_run_command_refuses_stdin_over_1_mib", r)
    r = tool("run_command", command="ip -o link 2>/dev/null | wc -l; cat /proc/net/dev | wc -l")
    ok(not err(r) and r["structuredContent"]["exit_code"] == 0, "mcp_run_command_runs_in_the_sandbox", r)
    r = tool("run_command", command=f"touch /tmp/{MARK}-inside; echo $(id -u)")
    ok(not err(r) and r["structuredContent"]["stdout"] == "1000\n" and
       not os.path.exists(f"/tmp/{MARK}-inside"), "mcp_run_command_is_the_agent_in_its_own_tmp", r)

    # Other workspaces, other runs, other refs.
    for ws in ["other", "../esc", "esc ", "ESC", ""]:
        r = tool("file_read", workspace=ws, path="a.txt")
        ok(err(r), f"mcp_a_workspace_not_served_does_not_exist: '{ws}'", r)
    for rid in ["run-0", "run-99999", "run--1", "run-1x", "1", "", "../run-1"]:
        r = tool("run_kill", run_id=rid)
        ok(err(r), f"mcp_run_kill_of_an_unknown_run_is_refused: '{rid}'", r)
    for ref in ["refs/heads/main", "HEAD", "refs/cloister/other", "refs/cloister/esc/x",
                "refs/cloister/esc+../../heads/main", "refs/cloister/esc+x.lock", "esc+",
                "refs/cloister/escx", "refs/tags/v1"]:
        r = tool("export", ref=ref)
        ok(err(r), f"mcp_export_refuses_ref: {ref}", r)
    # fork writes a config: only a file name, beside the served config; never
    # a host path the model picks, never over a file that exists.
    cfg_dir = os.path.dirname(cfg)
    before = sorted(os.listdir(cfg_dir))
    for nc in ["../esc-fork.ini", "/tmp/" + MARK + ".ini", "/etc/cron.d/x.ini", "x/../../y.ini",
               "a.ini/", "fork", ".ini", "..ini", "x.ini\n", "x .ini", os.path.basename(cfg),
               "a" * 200 + ".ini"]:
        r = tool("fork", new_config=nc)
        ok(err(r), f"mcp_fork_refuses_new_config: {nc!r:.60}", r)
    ok(sorted(os.listdir(cfg_dir)) == before and not os.path.exists("/tmp/" + MARK + ".ini"),
       "mcp_no_refused_fork_wrote_a_file", sorted(os.listdir(cfg_dir)))
    for name in ["../x", ".x", "a/b", "-rf", "x" * 65]:
        r = tool("checkpoint", name=name)
        ok(err(r), f"mcp_checkpoint_refuses_name: {name:.40}", r)
        r = tool("restore", checkpoint=name)
        ok(err(r), f"mcp_restore_refuses_checkpoint: {name:.40}", r)
    heads = subprocess.run(["git", "-C", repo, "for-each-ref", "--format=%(refname)"],
                           capture_output=True, text=True).stdout.split()
    ok(heads == ["refs/heads/main"], "mcp_no_ref_was_made_in_the_source", heads)

    # A flood of pipelined calls: every one is answered, none lost.
    ids = [server.call("tools/call", {"name": "file_read", "arguments": {"path": "a.txt"}})
           if i % 2 else server.call("ping") for i in range(200)]
    answered = set()
    while len(answered) < len(ids):
        m = server.recv()
        if m is None:
            break
        answered.add(m.get("id"))
    ok(answered == set(ids), "mcp_a_flood_of_calls_is_answered_in_full", len(answered))

    ok(open("/etc/passwd").readline().strip() == HOST_LINE and
       not any(p.startswith(MARK) for p in os.listdir("/tmp")), "mcp_the_host_is_unchanged")
finally:
    code = server.close()
    ok(code == 0, "mcp_server_exits_cleanly", code)
    with open("/proc/self/mounts") as f:
        ok(f" {T}/state/mnt " not in f.read(), "mcp_server_unmounted_what_it_mounted")
    subprocess.run([CLOISTER, "unmount", cfg], capture_output=True)
    shutil.rmtree(T, ignore_errors=True)
    for p in os.listdir("/tmp"):
        if p.startswith(MARK):
            os.unlink(f"/tmp/{p}")

done()
