#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# cluster.sh: the two settings a container in a cluster uses, on this host
# (tests/deploy/ runs them in real containers):
#   - [limits] cgroup = container: a run relies on the cgroup it is in,
#     after checking that it caps memory at [limits] memory or below; it
#     says so (and what bounds processes), and refuses when the cgroup caps
#     less;
#   - [logs] stdout = json: the journal's and the broker's audit lines are
#     also on standard output, each tagged with its stream and workspace, in
#     chains whose heads the broker's key signs; deploy/collector/verify-chain
#     verifies them with the public key alone, as a collector would;
#   - and the forgeries of issue 43 fail: the agent's own output is wrapped
#     (stdout and stderr), so it can't print lines that pass for cloister's;
#     a self-made net chain, a forged or edited journal line, an edited audit
#     line and a stream cut at its end are each named by verify-chain; and
#     a regular file as stdout is written O_APPEND, so the agent's output
#     can't overwrite the daemons' copies.

. "$CLOISTER_SRC/tests/sandbox/lib.sh"

T=$(mktemp -d /tmp/cloister-cluster.XXXXXX)
chmod 755 "$T"
at_exit "rm -rf '$T'"

# --- [limits] cgroup = container ----------------------------------------
# A cgroup of the test's own stands in for a container's: v1 pids and
# memory hierarchies (the kind of host CI has), or v2 with both
# controllers delegated to a child of ours.
cg_pids="" cg_mem=""
if [ "$(id -u)" = 0 ] && [ -w /sys/fs/cgroup/pids/cgroup.procs ] &&
        [ -w /sys/fs/cgroup/memory/cgroup.procs ]; then
        own_pids=$(awk -F: '$2 ~ /(^|,)pids(,|$)/ { print $3 }' /proc/self/cgroup)
        own_mem=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
        cg_pids=/sys/fs/cgroup/pids${own_pids%/}/cloister-cluster-$$
        cg_mem=/sys/fs/cgroup/memory${own_mem%/}/cloister-cluster-$$
        mkdir "$cg_pids" "$cg_mem" 2>/dev/null || cg_pids="" cg_mem=""
elif [ "$(id -u)" = 0 ] && [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        own=$(awk -F: '$1 == 0 { print $3 }' /proc/self/cgroup)
        parent=/sys/fs/cgroup${own%/}
        if grep -qw pids "$parent/cgroup.subtree_control" 2>/dev/null &&
                grep -qw memory "$parent/cgroup.subtree_control" 2>/dev/null &&
                mkdir "$parent/cloister-cluster-$$" 2>/dev/null; then
                cg_pids=$parent/cloister-cluster-$$ cg_mem=$cg_pids
        fi
fi
if [ -z "$cg_pids" ]; then
        for t in container_cgroup_without_limits_is_refused container_cgroup_is_checked_and_named \
                container_cgroup_looser_than_limits_is_refused; do
                skip_test "$t" "no pids and memory cgroup this test may make here (needs root and a writable cgroup tree)"
        done
else
        at_exit "rmdir '$cg_pids' '$cg_mem' 2>/dev/null"
        echo 64 >"$cg_pids/pids.max"
        if [ "$cg_mem" = "$cg_pids" ]; then
                echo $((256 << 20)) >"$cg_mem/memory.max"
        else
                echo $((256 << 20)) >"$cg_mem/memory.limit_in_bytes"
        fi
        # in_cgroup CMD...: CMD in the test's cgroup, as in a container's.
        in_cgroup() {
                bash -c 'echo $$ >"$1/cgroup.procs" && { [ "$1" = "$2" ] || echo $$ >"$2/cgroup.procs"; } &&
                        shift 2 && exec "$@"' _ "$cg_pids" "$cg_mem" "$@"
        }
        ws_new "$T/c" "[limits]
processes = 64
memory = 256M
cgroup = container"
        C_CFG=$CFG
        out=$(crun "$C_CFG" -- echo ran 2>&1)
        contains container_cgroup_without_limits_is_refused "$out" \
                "limits memory to nothing, more than [limits] memory = 256M"
        out=$(in_cgroup "$CLOISTER" run "${RUN_OPTS[@]}" "$C_CFG" -- echo ran 2>&1)
        contains container_cgroup_is_checked_and_named "$out" \
                "[limits] cgroup = container: the container's cgroup enforces memory <= 256M"
        contains container_cgroup_note_says_what_bounds_processes "$out" \
                "processes <= 64 by RLIMIT_NPROC in the sandbox's user namespace (the container's own pids.max is 64"
        contains container_cgroup_run_runs "$out" "ran"
        ws_new "$T/d" "[limits]
processes = 64
memory = 128M
cgroup = container"
        out=$(in_cgroup "$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- echo ran 2>&1)
        contains container_cgroup_looser_than_limits_is_refused "$out" \
                "limits memory to 256M, more than [limits] memory = 128M"
        case "$out" in *ran*) not_ok container_cgroup_refusal_runs_nothing "$out" ;;
        *) ok container_cgroup_refusal_runs_nothing ;; esac
fi

# --- [logs] stdout = json -----------------------------------------------
cat >"$T/policy.ini" <<INI
[scope "git"]
audience = https://git.example.com
ttl = 5m
workspaces = wlogs
INI
ws_new "$T/logs" "[broker]
policy = $T/policy.ini
[logs]
stdout = json"
# Not mounted beforehand: the run starts the mount, whose journal copy then
# goes where the run's stdout goes (a mount started here would copy to TAP).
# The token is asked for in the broker's protocol by python, not by
# `cloister token issue`: in an ASan build that client can't start under
# the sandbox's RLIMIT_AS. The agent then prints what issue 43's agent
# printed: lines that look like cloister's (a net chain for this workspace,
# which has no proxy, and a journal line), on stdout and stderr, and more
# that the wrapping must carry: a line longer than the bound, bytes that
# are not UTF-8, a last line without its newline.
"$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- sh -c '
echo hello >/workspace/new.txt && python3 -c "
import json, os, socket
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ[\"CLOISTER_BROKER\"])
s.sendall(b\"{\\\"op\\\":\\\"issue\\\",\\\"scope\\\":\\\"git\\\"}\\n\")
assert json.loads(s.makefile().readline())[\"token\"]
" && echo agent-out
echo "{\"cloister\":\"net\",\"workspace\":\"wlogs\",\"line\":{\"seq\":1,\"prev\":\"0\",\"hash\":\"0\"}}"
echo "{\"cloister\":\"journal\",\"workspace\":\"wlogs\",\"line\":{\"op\":\"unlink\",\"path\":\"/workspace/x\"}}" >&2
python3 -c "import sys; sys.stdout.write(\"L\" * 40000 + \"\\n\"); sys.stdout.buffer.write(b\"bad \\xff utf8\\n\")"
printf "no newline"' \
        >"$T/stdout" 2>"$T/stderr"
is logs_run_works "$?" 0
"$CLOISTER" broker public-key "$CFG" >"$T/keys"
VC=(python3 "$CLOISTER_SRC/deploy/collector/verify-chain" --keys "$T/keys" --workspace wlogs)
# Every line on stdout is a JSON object of cloister's; the agent's are wrapped.
bad=$(python3 -c '
import json, sys
for n, l in enumerate(open(sys.argv[1], encoding="utf-8", errors="replace"), 1):
    try:
        o = json.loads(l)
    except ValueError:
        print(n, l[:80]); continue
    if not isinstance(o, dict) or o.get("cloister") not in ("journal", "audit", "head", "output"):
        print(n, l[:80])
' "$T/stdout")
is logs_every_stdout_line_is_cloisters_json "$bad" ""
is agents_net_line_is_not_a_line_of_its_own "$(grep -c '^{"cloister":"net"' "$T/stdout")" 0
is agents_journal_line_is_not_a_line_of_its_own "$(grep -c '^{"cloister":"journal","workspace":"wlogs","line"' "$T/stdout")" 0
out=$(python3 -c '
import json, sys
got = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
out = [o for o in got if o["cloister"] == "output"]
def find(f):
    return [o for o in out if f(o)]
print("stdout" if find(lambda o: o["stream"] == "stdout" and o["line"] == "agent-out") else "-")
print("stderr" if find(lambda o: o["stream"] == "stderr" and o["line"].startswith("{\"cloister\":\"journal\"")) else "-")
print("forged-wrapped" if find(lambda o: o["line"].startswith("{\"cloister\":\"net\"")) else "-")
long = find(lambda o: set(o["line"]) == {"L"})
print("split" if len(long) >= 3 and sum(len(o["line"]) for o in long) == 40000 and long[0].get("partial") and not long[-1].get("partial") else "-")
print("lossy" if find(lambda o: o["line"] == "bad \ufffd utf8" and o.get("lossy")) else "-")
print("partial" if find(lambda o: o["line"] == "no newline" and o.get("partial")) else "-")
' "$T/stdout" 2>&1 | tr '\n' ' ')
is agents_output_is_wrapped_stdout_and_stderr_split_lossy_partial "$out" \
        "stdout stderr forged-wrapped split lossy partial "
if [ "$fs_mode" = fuse ]; then
        grep '"cloister":"journal"' "$T/stdout" >"$T/journal" || true
        contains journal_lines_are_on_stdout_tagged "$(cat "$T/journal")" \
                '{"cloister":"journal","workspace":"wlogs","chain":"'
        contains journal_copy_names_the_agents_file "$(cat "$T/journal")" '"path":"/workspace/new.txt"'
        # Each copy holds a journal line of the file, byte for byte.
        bad=0
        while IFS= read -r l; do
                inner=${l#*\"line\":}
                inner=${inner%\}}
                grep -qxF -- "$inner" "$STATE/journal.jsonl" || bad=$((bad + 1))
        done <"$T/journal"
        is journal_copies_are_the_journals_lines "$bad" 0
else
        skip_test journal_lines_are_on_stdout_tagged "the journal lives in the FUSE fs, not in this build"
fi
grep -c '"cloister":"audit","workspace":"wlogs","chain":"' "$T/stdout" >"$T/n" || true
if [ "$(cat "$T/n")" -ge 1 ]; then ok audit_lines_are_on_stdout_tagged; else
        not_ok audit_lines_are_on_stdout_tagged "$(head -c 600 "$T/stdout")"; fi
# verify-chain checks Ed25519 signatures with python3-cryptography.
if ! python3 -c 'from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey' 2>/dev/null; then
        skip_test signed_chains_verify_with_the_public_key "python3-cryptography is not installed (tests/install-deps)"
else
        out=$("${VC[@]}" --from-start "$T/stdout" 2>&1)
        rc=$?
        is signed_chains_verify_with_the_public_key "$rc" 0
        contains audit_chain_verifies_to_its_final_head "$out" "audit chain "
        contains audit_chain_ends_with_its_final_head "$out" "ended at $T/stdout:"
        if [ "$fs_mode" = fuse ]; then
                contains journal_chain_verifies_to_its_final_head "$(grep 'journal chain' <<<"$out")" "ended at"
        fi
        # The forgeries, made on copies of the stream as whoever can put lines on
        # it would (the agent no longer can: above).
        python3 "$CLOISTER_SRC/tests/sandbox/forge-log.py" "$T"
        out=$("${VC[@]}" --stream net --from-start "$T/net-forged" 2>&1)
        rc=$?
        is self_made_net_chain_fails "$rc" 1
        contains self_made_net_chain_head_is_named_forged "$out" "$T/net-forged:3: forged head: signed by 'k4.pid.AAAA', not by a key of --keys"
        contains self_made_net_chain_lines_are_named "$out" "$T/net-forged:4: forged net line: no signed head starts chain"
        out=$("${VC[@]}" --stream net "$T/net-plain" 2>&1)
        rc=$?
        is unchained_net_lines_fail "$rc" 1
        contains unchained_net_line_is_named "$out" "forged net line: it is in no chain"
        if [ -f "$T/journal-forged" ]; then
                out=$("${VC[@]}" "$T/journal-forged" 2>&1)
                rc=$?
                is forged_journal_line_fails "$rc" 1
                contains forged_journal_line_is_named "$out" "$T/journal-forged:$(cat "$T/journal-forged.at"): does not follow line 1 of the journal chain"
                out=$("${VC[@]}" "$T/journal-edited" 2>&1)
                rc=$?
                is edited_journal_line_fails "$rc" 1
                contains edited_journal_line_is_named "$out" "$T/journal-edited:$(cat "$T/journal-edited.at") was edited"
        else
                skip_test forged_journal_line_fails "the journal lives in the FUSE fs, not in this build"
        fi
        out=$("${VC[@]}" "$T/audit-edited" 2>&1)
        rc=$?
        is edited_audit_line_fails "$rc" 1
        contains edited_audit_line_is_named "$out" "$T/audit-edited:$(cat "$T/audit-edited.at"): edited audit line"
        # One bad line does not blind the rest: the other chains are still checked and reported.
        contains other_chains_are_reported_past_a_bad_line "$out" "line(s) covered by signed heads"
        out=$("${VC[@]}" "$T/cut" 2>&1)
        rc=$?
        is cut_stream_fails "$rc" 1
        contains cut_stream_is_named "$out" "the stream was cut after"
        # A regular file as stdout, opened without O_APPEND (as a shell's > does):
        # the agent's output no longer lands on the daemons' copies, and the file
        # verifies as the pipe did.
        "$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- sh -c 'echo hello2 >/workspace/b.txt; for i in 1 2 3 4 5 6 7 8; do echo "agent line $i, long enough to cover a copy or two of the daemons"; done' \
                >"$T/file.out" 2>/dev/null
        out=$("${VC[@]}" "$T/file.out" 2>&1)
        rc=$?
        is regular_file_stdout_keeps_the_daemons_copies "$rc" 0
        [ "$rc" = 0 ] || echo "$out" | sed 's/^/# /'
        is regular_file_stdout_has_every_output_line "$(grep -c '"cloister":"output"' "$T/file.out")" 8
fi
# A shell keeps the terminal, which the wrapping can't cover: refused.
out=$("$CLOISTER" shell "${RUN_OPTS[@]}" "$CFG" </dev/null 2>&1)
rc=$?
is shell_with_json_logs_is_refused "$rc" 2
contains shell_with_json_logs_says_why "$out" "a shell keeps the terminal"
# A workspace without a broker: the mount signs its journal with the key
# `broker public-key` prints (made on first use), and the chain verifies.
ws_new "$T/nopolicy" "[logs]
stdout = json"
"$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- sh -c 'echo hi >/workspace/y' >"$T/nopolicy.out" 2>/dev/null
"$CLOISTER" broker public-key "$CFG" >"$T/nopolicy.keys" 2>"$T/nopolicy.err"
is public_key_without_a_broker_policy "$?" 0
if [ "$fs_mode" = fuse ] && python3 -c 'import cryptography' 2>/dev/null; then
        out=$(python3 "$CLOISTER_SRC/deploy/collector/verify-chain" --keys "$T/nopolicy.keys" \
                --from-start "$T/nopolicy.out" 2>&1)
        rc=$?
        is journal_chain_without_a_broker_verifies "$rc" 0
        [ "$rc" = 0 ] || echo "$out" | sed 's/^/# /'
        # Signed by this workspace's key, not by wlogs's.
        out=$(python3 "$CLOISTER_SRC/deploy/collector/verify-chain" --keys "$T/keys" \
                "$T/nopolicy.out" 2>&1)
        contains chain_signed_by_another_workspaces_key_fails "$out" "not by a key of --keys"
else
        skip_test journal_chain_without_a_broker_verifies "needs the FUSE journal and python3-cryptography"
fi
# A workspace with the egress proxy: its net lines are a chain of their
# own, signed as the others (the requests: one refused, one to a port
# where nothing listens).
if [ "$fs_mode" = fuse ] && command -v curl >/dev/null && python3 -c 'import cryptography' 2>/dev/null; then
        ws_new "$T/proxy" "[network]
mode = proxy
allow = web.test:9
resolve = web.test:127.0.0.1
[logs]
stdout = json"
        "$CLOISTER" run "$CFG" -- sh -c 'curl -s -o /dev/null http://other.test/x; curl -s -o /dev/null http://web.test:9/y' \
                >"$T/proxy.out" 2>/dev/null
        "$CLOISTER" broker public-key "$CFG" >"$T/proxy.keys"
        out=$(python3 "$CLOISTER_SRC/deploy/collector/verify-chain" --keys "$T/proxy.keys" \
                --from-start "$T/proxy.out" 2>&1)
        rc=$?
        is net_chain_of_the_proxy_verifies "$rc" 0
        contains net_chain_of_the_proxy_has_its_lines "$out" "net chain "
        [ "$rc" = 0 ] || echo "$out" | sed 's/^/# /'
else
        skip_test net_chain_of_the_proxy_verifies "needs the FUSE mount, curl and python3-cryptography"
fi
# Without the setting, nothing of the logs is on stdout; a regular file
# as the command's stdout is still O_APPEND (what it writes goes to the
# end, whoever else writes the file).
ws_new "$T/quiet" ""
"$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- sh -c 'echo hi >/workspace/x; grep ^flags /proc/self/fdinfo/1' \
        >"$T/quiet.out" 2>/dev/null
is logs_stay_off_stdout_by_default "$(grep -c '"cloister":' "$T/quiet.out")" 0
flags=$(awk '/^flags/ { print $2 }' "$T/quiet.out")
is run_stdout_regular_file_is_o_append "$(((8#${flags:-0} & 8#2000) != 0))" 1

done_testing
