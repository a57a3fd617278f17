#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# runlog.sh: the run record (<state>/runs.jsonl, mounts/ops/ops-runlog.c).
# Every command run in a workspace, by `cloister run` and by the MCP tool
# run_command (foreground and background), gets a start and an end line
# with its argv, cwd, environment names, exit, pids and output sizes; the
# record is outside the sandbox, chained like the audit log (an edited line
# fails `audit verify` and `log --runs`, and a run refuses to start over
# a record cut or edited at its end, the part it reads), and bounded by
# [limits] runlog.

. "$CLOISTER_SRC/tests/sandbox/lib.sh"

T=$(mktemp -d /tmp/cloister-runlog.XXXXXX)
chmod 755 "$T"
at_exit "rm -rf '$T'"
echo "# workspace served by: $fs_mode"
ws_new "$T/a" "[run]
env = RUNLOG_PLAIN"
preflight
runs_json() { "$CLOISTER" log --runs --json "$CFG"; }
field() { # field N KEY: KEY of the Nth run (1-based), as JSON
        runs_json | sed -n "${1}p" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get(sys.argv[1])))' "$2"
}
# preflight ran one (true).
RUNLOG_PLAIN=secret-value crun "$CFG" -- sh -c 'echo out; echo $$ >/dev/null; exit 3' >/dev/null
is run_exit_status_is_kept "$?" 3
n=$(runs_json | wc -l)
is every_run_is_recorded "$n" 2
is record_has_argv_as_given "$(field 2 argv)" '["sh", "-c", "echo out; echo $$ >/dev/null; exit 3"]'
is record_has_the_exit_code "$(field 2 exit_code)" 3
is record_has_the_cwd "$(field 2 cwd)" '"/workspace"'
is record_has_env_names_only "$(field 2 env)" '["RUNLOG_PLAIN"]'
is record_source_is_run "$(field 2 source)" '"run"'
is record_run_has_ended "$(field 2 ended)" true
is record_timed_out_is_false "$(field 2 timed_out)" false
pid=$(field 2 pid)
[[ $pid =~ ^[0-9]+$ ]] && [ "$pid" -gt 1 ] && ok record_has_the_sandbox_pid ||
        not_ok record_has_the_sandbox_pid "pid $pid"
[[ $(field 2 runner_pid) =~ ^[0-9]+$ ]] && ok record_has_the_runner_pid ||
        not_ok record_has_the_runner_pid "$(field 2 runner_pid)"
s=$(field 2 start_ms) e=$(field 2 end_ms)
[ "$e" -ge "$s" ] && [ "$s" -gt 1700000000000 ] && ok record_has_start_and_end ||
        not_ok record_has_start_and_end "$s $e"
grep -q secret-value "$STATE/runs.jsonl" && not_ok record_holds_no_env_value "value in runs.jsonl" ||
        ok record_holds_no_env_value
crun "$CFG" -- sh -c "test -e '$STATE/runs.jsonl'; echo \$?" |
        grep -qx 1 && ok the_record_is_not_in_the_sandbox || not_ok the_record_is_not_in_the_sandbox "seen"
out=$("$CLOISTER" log --runs "$CFG")
contains human_form_has_exit "$out" "exit 3"
contains human_form_quotes_the_command "$out" '"echo out; echo $$ >/dev/null; exit 3"'

# A run while another runs is recorded and ends without waiting for it
# (the record's lock is its own, not the runs' lifetime lock).
crun "$CFG" -- sh -c 'while [ ! -e /workspace/stop-bg ]; do sleep 0.1; done' >/dev/null 2>&1 &
bg=$!
for _ in $(seq 600); do runs_json | grep -q stop-bg && break; sleep 0.1; done
timeout 120 "$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- touch /workspace/stop-bg
is a_run_during_another_does_not_wait_for_it "$?" 0
wait "$bg"
is the_other_run_ends_well "$?" 0
n=$(runs_json | wc -l)

# --- MCP run_command, foreground and background --------------------------
if [ "$fs_mode" = fuse ] && [ "$(id -u)" = 0 ]; then
        python3 - "$CLOISTER" "$CFG" >"$T/mcp.out" 2>&1 <<'EOF'
import os, sys, time
sys.path.insert(0, os.path.join(os.environ["CLOISTER_SRC"], "tests"))
from mcp_client import McpClient
srv = McpClient(sys.argv[1], sys.argv[2])
srv.initialize("t")
tool = srv.tool
r = tool("run_command", command="printf 12345; printf ab >&2; exit 4", cwd=".", env={"MCP_NAME": "v"})
print("fg", r["structuredContent"]["exit_code"])
r = tool("run_command", command="printf xyz", background=True)
rid = r["structuredContent"]["run_id"]
for _ in range(600):
    o = tool("run_output", run_id=rid)["structuredContent"]
    if not o.get("running"):
        break
    time.sleep(0.1)
print("bg", o.get("exit_code"))
srv.close()
EOF
        mcp=$(cat "$T/mcp.out")
        contains mcp_runs_ran "$mcp" "fg 4"
        contains mcp_background_run_ran "$mcp" "bg 0"
        is mcp_runs_are_recorded "$(runs_json | wc -l)" $((n + 2))
        m=$((n + 1)) b=$((n + 2))
        is mcp_record_argv_is_the_shell_command "$(field $m argv)" '["/bin/sh", "-c", "printf 12345; printf ab >&2; exit 4"]'
        is mcp_record_exit_code "$(field $m exit_code)" 4
        is mcp_record_stdout_bytes "$(field $m stdout_bytes)" 5
        is mcp_record_stderr_bytes "$(field $m stderr_bytes)" 2
        is mcp_record_env_names "$(field $m env)" '["MCP_NAME"]'
        is mcp_record_cwd "$(field $m cwd)" '"/workspace/."'
        [[ $(field $m pid) =~ ^[0-9]+$ ]] && ok mcp_record_has_the_sandbox_pid ||
                not_ok mcp_record_has_the_sandbox_pid "$(field $m pid)"
        is mcp_background_record_source "$(field $b source)" '"mcp_background"'
        is mcp_background_record_stdout_bytes "$(field $b stdout_bytes)" 3
else
        skip_test mcp_runs_are_recorded "cloister mcp needs root and the FUSE mount"
fi

# --- tamper-evident -------------------------------------------------------
out=$("$CLOISTER" audit verify "$CFG" 2>&1)
contains audit_verify_checks_the_record "$out" "runs.jsonl: "
contains audit_verify_finds_the_record_intact "$out" "chain intact"
cp "$STATE/runs.jsonl" "$T/runs.good"
sed -i '0,/"exit_code":3/s//"exit_code":0/' "$STATE/runs.jsonl"
out=$("$CLOISTER" audit verify "$CFG" 2>&1)
is audit_verify_fails_on_an_edited_run "$?" 1
contains audit_verify_names_the_edited_line "$out" "line 4: edited"
out=$("$CLOISTER" log --runs "$CFG" 2>&1)
is log_runs_fails_on_an_edited_run "$?" 1
contains log_runs_says_why "$out" "edited"
# A run reads the record's end only (its cost does not grow with the
# record): it chains past an edit further back, which stays found.
crun "$CFG" -- true 2>/dev/null
is a_run_goes_on_past_an_edit_further_back "$?" 0
out=$("$CLOISTER" audit verify "$CFG" 2>&1)
contains the_edit_is_still_found_after_the_run "$out" "line 4: edited"
cp "$T/runs.good" "$STATE/runs.jsonl"
# An edit at the end is what a run would build on: refused.
sed -i '$s/"exit_code":[0-9]*/"exit_code":7/' "$STATE/runs.jsonl"
crun "$CFG" -- touch ran-over-tampered 2>"$T/err"
is no_run_over_a_tampered_record "$?" 125
contains no_run_over_a_tampered_record_says_why "$(cat "$T/err")" "tampered"
cp "$T/runs.good" "$STATE/runs.jsonl"
truncate -s -5 "$STATE/runs.jsonl"
crun "$CFG" -- true 2>"$T/err"
is no_run_over_a_record_cut_in_its_last_line "$?" 125
contains no_run_over_a_cut_record_says_why "$(cat "$T/err")" "truncated"
cp "$T/runs.good" "$STATE/runs.jsonl"
head -n -1 "$STATE/runs.jsonl" >"$T/cut" && cat "$T/cut" >"$STATE/runs.jsonl"
"$CLOISTER" log --runs "$CFG" >/dev/null 2>&1
is log_runs_fails_on_a_cut_record "$?" 1
crun "$CFG" -- true 2>"$T/err"
is no_run_over_a_record_whose_last_line_was_deleted "$?" 125
contains no_run_over_deleted_lines_says_why "$(cat "$T/err")" "deleted at the end"
cp "$T/runs.good" "$STATE/runs.jsonl"

# --- recorded by the binary itself ----------------------------------------------
# The record's code is linked into `cloister`: a run of a mounted workspace
# loads no cloister-commands.so (and its 31 libraries) to write it.
if [ "$fs_mode" = fuse ] && command -v strace >/dev/null; then
        ws_new "$T/c"
        ws_mount >/dev/null
        # LeakSanitizer (the ASan build) refuses to run under ptrace.
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
                strace -f -qq -e trace=openat -o "$T/strace" "$CLOISTER" run "$CFG" -- true >/dev/null 2>"$T/err"
        rc=$?
        [ "$rc" = 0 ] || sed 's/^/# /' "$T/err" | tail -3
        is traced_run_ran "$rc" 0
        grep -q '"run_start"' "$STATE/runs.jsonl" && ok traced_run_is_recorded ||
                not_ok traced_run_is_recorded "no run_start line"
        grep -q 'cloister-commands\.so' "$T/strace" &&
                not_ok run_records_without_loading_the_commands_module "$(grep -m1 'cloister-commands\.so' "$T/strace")" ||
                ok run_records_without_loading_the_commands_module
        "$CLOISTER" unmount "$CFG" >/dev/null 2>&1
else
        skip_test run_records_without_loading_the_commands_module "needs the FUSE mount and strace"
fi

# --- bounded ----------------------------------------------------------------
# A valid chain of filler lines to just below [limits] runlog = 1M, less
# half the reserve: the next run finds no room, writes one audit_full line
# in the reserve, and refuses; the file never passes the bound.
ws_new "$T/b" "[limits]
runlog = 1M"
python3 - "$STATE" <<'EOF'
import hashlib, json, sys
state = sys.argv[1]
import os
os.makedirs(state, exist_ok=True)
prev, seq, size, out = "0" * 64, 0, 0, []
while size < 1024 * 1024 - 3 * 1024:
    seq += 1
    body = json.dumps({"argv": ["x" * 400], "event": "run_start", "prev": prev, "run": "%016x" % seq,
                       "seq": seq, "source": "run", "start_ms": 0, "time": 0},
                      sort_keys=True, separators=(",", ":"))
    h = hashlib.blake2b(body.encode(), digest_size=32).hexdigest()
    line = body[:-1] + ',"hash":"' + h + '"}\n'
    out.append(line)
    size += len(line)
    prev = h
open(state + "/runs.jsonl", "w").write("".join(out))
open(state + "/runs.head", "w").write("%d %s" % (seq, prev))
EOF
"$CLOISTER" audit verify "$CFG" 2>&1 | grep -q "runs.jsonl: .* chain intact" && ok prefilled_record_verifies ||
        not_ok prefilled_record_verifies "$("$CLOISTER" audit verify "$CFG" 2>&1)"
crun "$CFG" -- touch "ran-past-the-bound" 2>"$T/err"
is no_run_past_the_bound "$?" 125
contains no_run_past_the_bound_says_why "$(cat "$T/err")" "run record is full"
crun "$CFG" -- true 2>/dev/null
is still_no_run_past_the_bound "$?" 125
size=$(stat -c %s "$STATE/runs.jsonl")
[ "$size" -le $((1024 * 1024)) ] && ok record_stays_within_the_bound ||
        not_ok record_stays_within_the_bound "$size bytes"
grep -c '"audit_full"' "$STATE/runs.jsonl" | grep -qx 1 && ok one_audit_full_line ||
        not_ok one_audit_full_line "$(grep -c audit_full "$STATE/runs.jsonl")"
"$CLOISTER" log --runs "$CFG" >/dev/null 2>&1
is full_record_still_verifies "$?" 0

done_testing
