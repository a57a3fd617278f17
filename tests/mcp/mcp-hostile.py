#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`cloister mcp` against a hostile client and a hostile agent, over raw
JSON-RPC: framing the SDK never sends (deep nesting, invalid UTF-8, a raw
NUL, numbers out of range, ids of odd types, a tools/call sent as a
notification), numbers at the edge of a tool's schema, a glob that would
make a naive backtracking matcher run for ever (glibc's fnmatch prunes it),
and a FIFO the agent swaps in where the server is about to write. Every request gets its answer (a notification
none), the server never hangs or crashes, and under the sanitizers it
reports nothing. Prints TAP (docs/security.md, "The MCP server").

Nothing depends on timing: the FIFO race runs a fixed number of writes
against an agent that swaps as fast as it can, and a call that never comes
back is what fails (a generous deadline only stops the test from hanging
with it)."""
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
RACE_WRITES = int(os.environ.get("RACE_WRITES", "4000"))

need_fuse()
need_userns_bwrap()

T = tempfile.mkdtemp(prefix="cloister-mcp-hostile.")
repo = f"{T}/repo"
source_repo(repo, {"a.txt": "hello\nworld\n"})
cfg = f"{T}/ws.ini"
with open(cfg, "w") as f:
    f.write(f"[workspace]\nname = hostile\nstate = {T}/state\nmountpoint = {T}/state/mnt\n"
            f"[repo]\nsource = {repo}\nrev = HEAD\npath = /workspace\n"
            "[limits]\ntimeout = 10m\n")

errlog = open(f"{T}/server.err", "wb")
server = McpClient(CLOISTER, cfg, stderr=errlog)
tool = server.tool


def raw(line):
    """A hand-made line, then a ping: the line's answers, up to the ping's."""
    server.send_raw(line)
    ping = server.call("ping")
    got = []
    while True:
        m = server.recv()
        if m is None:
            return got + [None]
        if m.get("id") == ping and "result" in m:
            return got
        got.append(m)


try:
    m = server.initialize("hostile")
    ok(m and m["result"]["serverInfo"]["name"] == "cloister", "mcp_server_initializes", m)

    # Framing: each line gets one error (or none, for a notification), and
    # the ping after it its answer.
    cases = [
        ("deep_nesting_is_a_parse_error", b"[" * 100000 + b"]" * 100000, -32700),
        ("invalid_utf8_is_a_parse_error",
         b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xff\xfe"}}', -32700),
        ("a_raw_nul_is_a_parse_error", b'{"jsonrpc":"2.0","id":1,"method":"p\x00ing"}', -32700),
        ("an_integer_past_int64_is_a_parse_error",
         b'{"jsonrpc":"2.0","id":99999999999999999999999,"method":"ping"}', -32700),
        ("a_real_past_double_is_a_parse_error",
         b'{"jsonrpc":"2.0","id":1e99999,"method":"ping"}', -32700),
        ("a_boolean_id_is_invalid", b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600),
        ("a_null_id_is_invalid", b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600),
        ("an_array_id_is_invalid", b'{"jsonrpc":"2.0","id":[1],"method":"ping"}', -32600),
        ("a_method_with_a_nul_is_invalid",
         b'{"jsonrpc":"2.0","id":1,"method":"ping\\u0000x"}', -32600),
        ("params_that_are_a_string_are_invalid",
         b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"x"}', -32600),
    ]
    for name, line, code in cases:
        got = raw(line)
        ok(len(got) == 1 and got[0] and got[0].get("error", {}).get("code") == code, name, got)

    # A tools/call without an id is a notification: no answer, and no effect.
    got = raw(json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": {
        "name": "file_write", "arguments": {"path": "notified.txt", "content": "x"}}}).encode())
    ok(got == [], "a_tools_call_notification_gets_no_answer", got)
    r = tool("file_read", path="notified.txt")
    ok(err(r), "a_tools_call_notification_does_nothing", r)

    # Numbers at the edge of a schema: never a wrapped counter, never UB.
    r = tool("file_read", path="a.txt", offset=2**63 - 1)
    ok(err(r) and "offset" in json.dumps(r), "file_read_offset_past_2_53_is_refused", r)
    r = tool("file_read", path="a.txt", limit=2**63 - 1)
    ok(err(r) and "limit" in json.dumps(r), "file_read_limit_past_2_53_is_refused", r)
    r = tool("file_read", path="a.txt", offset=2**53 - 1, limit=2**53 - 1)
    sc = r.get("structuredContent") or {}
    ok(not err(r) and sc.get("first_line") == 2**53 and sc.get("lines") == 0,
       "file_read_offset_at_2_53_reads_nothing", r)
    r = tool("run_command", command="true", timeout_s=2**63 - 1)
    ok(err(r), "run_command_timeout_past_its_maximum_is_refused", r)
    r = tool("file_read", path="a.txt", offset=1.5)
    ok(err(r), "a_fractional_offset_is_refused", r)

    # A glob whose naive backtracking takes C(200, 40) steps on this name
    # (glibc's fnmatch gives up early, so it is answered at once), then
    # fnmatch's meaning, which file_list promises, for the usual patterns.
    r = tool("run_command", command="mkdir globs && touch globs/" + "a" * 200 + " globs/ab")
    ok(not err(r) and r["structuredContent"]["exit_code"] == 0, "sandbox_agent_makes_the_names", r)
    r = tool("file_list", path="globs", pattern="*a" * 40 + "*b")
    names = [e["path"] for e in (r.get("structuredContent") or {}).get("entries", [])]
    ok(not err(r) and names == [], "file_list_with_a_backtracking_glob_is_answered", r)
    for pat, want in [("a*b", ["ab"]), ("*b", ["ab"]), ("[a]?", ["ab"]), ("[!x]b", ["ab"]),
                      ("a[[:alpha:]]", ["ab"]), ("*[b]", ["ab"]), ("\\a\\b", ["ab"]),
                      ("a" * 200, ["a" * 200]), ("*a*a*a", ["a" * 200]), ("[b-a]*", []),
                      ("[", []), ("*", ["a" * 200, "ab"]), ("?b", ["ab"]), ("a?", ["ab"])]:
        r = tool("file_list", path="globs", pattern=pat)
        names = [e["path"] for e in (r.get("structuredContent") or {}).get("entries", [])]
        ok(not err(r) and names == want, f"file_list_pattern_matches_as_fnmatch: {pat[:20]}",
           names)

    # A FIFO swapped in where file_write is about to open: never a blocked
    # call (a blocking open waits for a reader for ever). Two agents swap,
    # and the writes go 16 at a time, so that the FIFO is often there.
    swap = ("while [ ! -e stop ]; do rm -f f$1.new; mkfifo f$1.new; mv -f f$1.new target; "
            "echo x > r$1.new; mv -f r$1.new target; done")
    race_ids = []
    for k in (1, 2):
        r = tool("run_command", background=True, command=f"set -- {k}; {swap}")
        race_ids.append((r.get("structuredContent") or {}).get("run_id"))
        ok(not err(r) and race_ids[-1], f"sandbox_agent_{k}_starts_swapping", r)
    outcomes = {"written": 0, "refused": 0, "lost": 0}
    for batch in range(RACE_WRITES // 16):
        waiting = {server.call("tools/call", {"name": "file_write", "arguments": {
                       "path": "target", "content": f"{batch}.{i}\n"}}) for i in range(16)}
        while waiting:  # the answers come in any order
            m = server.recv()
            if m is None:
                outcomes["lost"] += len(waiting)
                break
            if m.get("id") in waiting:
                waiting.discard(m["id"])
                outcomes["refused" if m["result"].get("isError") else "written"] += 1
        if outcomes["lost"]:
            break
    print("# race outcomes:", outcomes)
    ok(outcomes["lost"] == 0 and outcomes["written"] + outcomes["refused"] == RACE_WRITES // 16 * 16,
       "file_write_over_a_swapped_in_fifo_is_always_answered", outcomes)
    if outcomes["lost"] == 0:
        tool("file_write", path="stop", content="")
        for rid in race_ids:
            tool("run_kill", run_id=rid)

    m = server.request("ping")
    ok(m is not None and m.get("result") == {}, "the_server_still_answers", m)
finally:
    code = server.close()
    ok(code == 0, "the_server_exits_cleanly", code)
    errlog.close()
    with open(f"{T}/server.err", "rb") as f:
        text = f.read().decode(errors="replace")
    ok("runtime error" not in text and "Sanitizer" not in text,
       "the_server_ran_clean_under_the_sanitizers",
       "\n".join(l for l in text.splitlines() if "error" in l or "Sanitizer" in l)[:2000])
    with open("/proc/self/mounts") as f:
        mounted = f" {T}/state/mnt " in f.read()
    if mounted:
        subprocess.run(["umount", "-l", f"{T}/state/mnt"], capture_output=True)
    ok(not mounted, "the_server_unmounted_what_it_mounted")
    shutil.rmtree(T, ignore_errors=True)

done()
