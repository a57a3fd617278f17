#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The CLI and MCP are two front ends of one implementation (issue 44, 2):
`cloister export --json --commit`, `fork --json` and `diff --json` return
the same fields as MCP's export, fork and diff tools, on the same workspace
state, with the same values where the two calls must agree (the patch, the
tree exported, the checkpoint forked from). Both take a label for the
export's ref, and both make a relative path absolute against the working
directory. Driven through the real `cloister mcp` server over JSON-RPC and
the real CLI; prints TAP (docs/cloister-export.md, docs/cloister-mcp.md)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/
from tap import ok, skip_all, done, need_cloister, need_fuse  # noqa: E402
from mcp_client import McpClient, source_repo  # noqa: E402

CLOISTER = need_cloister()

if os.geteuid() != 0:
    skip_all("needs root (FUSE mounts and the sandbox's agent identity)")
need_fuse()
if not shutil.which("bwrap"):
    skip_all("bubblewrap is not installed")

T = tempfile.mkdtemp(prefix="cloister-cli-mcp-same.")
os.environ["XDG_CONFIG_HOME"] = f"{T}/xdg-config"
os.environ["XDG_STATE_HOME"] = f"{T}/xdg-state"
repo = f"{T}/repo"
source_repo(repo, {"a.txt": "base\n", ".gitignore": "*.log\n"})
os.makedirs(f"{T}/cfg")
cfg = f"{T}/cfg/same.ini"
with open(cfg, "w") as f:
    f.write(f"[workspace]\nname = same\nstate = {T}/states/same\n[repo]\nsource = {repo}\n"
            "[limits]\ntimeout = 10m\nprocesses = 64\n")


def cli(*argv, cwd=None):
    p = subprocess.run([CLOISTER, *argv], capture_output=True, text=True, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def cli_json(*argv, cwd=None):
    rc, out, err = cli(*argv, cwd=cwd)
    try:
        return json.loads(out), f"rc={rc} {err}"
    except ValueError:
        return {}, f"rc={rc} stdout={out!r} stderr={err!r}"


def git(*argv):
    return subprocess.run(["git", "-C", repo, *argv], capture_output=True,
                          text=True).stdout.strip()


# The work both front ends see: a change, a new file, an ignored one.
rc, out, err = cli("run", cfg, "--", "sh", "-c",
                   "echo more >>a.txt; echo new >b.txt; echo x >debug.log")
ok(rc == 0, "the_agent_changes_the_workspace", err)

# The server serves the config by a relative path, from its folder's parent.
server = McpClient(CLOISTER, "cfg/same.ini", cwd=T)


def tool(tool_name, /, **args):
    """The call's structured content, and the whole result."""
    r = server.tool(tool_name, **args)
    return r.get("structuredContent") or {}, r


def declared(schema):
    return set((schema or {}).get("properties", {}))


try:
    m = server.initialize("cli-mcp-same")
    ok(m and m["result"]["serverInfo"]["name"] == "cloister", "mcp_server_initializes", m)
    schemas = {t["name"]: t.get("outputSchema")
               for t in server.request("tools/list")["result"]["tools"]}

    # --- diff ------------------------------------------------------------------------
    for stat in (False, True):
        what = "stat" if stat else "patch"
        c, why = cli_json("diff", "--json", *(["--stat"] if stat else []), cfg)
        s, res = tool("diff", stat=stat)
        ok(c and s and set(c) == set(s), f"diff_{what}_cli_and_mcp_return_the_same_fields",
           (sorted(c), sorted(s), why, res))
        ok(set(c) <= declared(schemas["diff"]), f"diff_{what}_fields_are_all_declared",
           (sorted(c), sorted(declared(schemas["diff"]))))
        keep = ("patch", "bytes", "files", "changed", "ignored", "home", "left_out")
        ok({k: c.get(k) for k in keep} == {k: s.get(k) for k in keep},
           f"diff_{what}_cli_and_mcp_agree", (c, s))

    # --- export: the CLI's label and MCP's, the same object ------------------------------
    c, why = cli_json("export", "--json", "--commit", "--label", "cli", cfg)
    s, res = tool("export", ref="refs/cloister/same+mcp")
    ok(c.get("ref") == "refs/cloister/same+cli" and git("rev-parse", "refs/cloister/same+cli")
       == c.get("commit"), "cli_export_takes_a_label", (c, why))
    ok(s.get("ref") == "refs/cloister/same+mcp", "mcp_export_takes_a_label", res)
    ok(c and s and set(c) == set(s), "export_cli_and_mcp_return_the_same_fields",
       (sorted(c), sorted(s), why, res))
    ok(set(s) <= declared(schemas["export"]) and
       set(schemas["export"].get("required", [])) <= set(s),
       "export_fields_are_declared_and_the_required_ones_there",
       (sorted(s), schemas["export"]))
    ok(c.get("commits") == s.get("commits") == 1 and c.get("ignored") == s.get("ignored") == 1,
       "export_both_count_one_commit_and_the_ignored_path", (c, s))
    ok(git("rev-parse", f"{c.get('commit')}^{{tree}}") ==
       git("rev-parse", f"{s.get('commit')}^{{tree}}") != "",
       "export_both_commit_the_same_tree", (c, s))
    rc, out, err = cli("export", "--commit", "--label", "../x", cfg)
    ok(rc == 2 and "label" in err, "cli_export_refuses_a_bad_label_as_mcp_does", (rc, err))
    rc, out, err = cli("export", "--mbox", "--label", "x", cfg)
    ok(rc == 2 and "--label" in err, "cli_export_label_goes_with_commit_only", (rc, err))

    # --- fork: the same checkpoint, relative paths made absolute the same way ------------
    s, res = tool("checkpoint", name="cp1")
    ok(s.get("name") == "cp1", "the_workspace_checkpoints", res)
    c, why = cli_json("fork", "--json", "cfg/same.ini", "cfg/f-cli.ini", "--from", "cp1", cwd=T)
    s, res = tool("fork", new_config="f-mcp.ini", **{"from": "cp1"})
    ok(c and s and set(c) == set(s), "fork_cli_and_mcp_return_the_same_fields",
       (sorted(c), sorted(s), why, res))
    ok(set(s) <= declared(schemas["fork"]), "fork_fields_are_all_declared", (s, schemas["fork"]))
    ok(c.get("config") == f"{T}/cfg/f-cli.ini" and s.get("config") == f"{T}/cfg/f-mcp.ini",
       "fork_both_make_the_relative_config_absolute", (c, s))
    same = ("parent", "checkpoint", "depth", "base")
    ok({k: c.get(k) for k in same} == {k: s.get(k) for k in same} and c.get("checkpoint") == "cp1",
       "fork_both_fork_the_same_checkpoint", (c, s))
    # The checks are ops_fork()'s alone: the same refusals, the CLI's as usage errors.
    rc, out, err = cli("fork", cfg, "cfg/f-cli.ini", "--from", "cp1", cwd=T)
    s, res = tool("fork", new_config="f-mcp.ini", **{"from": "cp1"})
    ok(rc == 2 and "exists already" in err and res.get("isError") is True and
       "exists already" in "".join(x.get("text", "") for x in res.get("content", [])),
       "fork_both_refuse_a_config_that_exists", (rc, err, res))
    rc, out, err = cli("fork", cfg, f"{T}/cfg/f3.ini", "--name", "same")
    ok(rc == 2 and "name of its own" in err, "cli_fork_refuses_the_parents_name", (rc, err))
finally:
    server.close()
    for f in ("same", "f-cli", "f-mcp"):
        subprocess.run([CLOISTER, "unmount", f"{T}/cfg/{f}.ini"], capture_output=True)
    shutil.rmtree(T, ignore_errors=True)

done()
