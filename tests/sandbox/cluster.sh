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
#     also on standard output, each tagged with its stream and workspace,
#     and the audit lines cut back out verify as a chain
#     (deploy/collector/verify-chain, as a collector would).

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
# the sandbox's RLIMIT_AS.
"$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- sh -c '
echo hello >/workspace/new.txt && python3 -c "
import json, os, socket
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ[\"CLOISTER_BROKER\"])
s.sendall(b\"{\\\"op\\\":\\\"issue\\\",\\\"scope\\\":\\\"git\\\"}\\n\")
assert json.loads(s.makefile().readline())[\"token\"]
" && echo agent-out' \
        >"$T/stdout" 2>"$T/stderr"
is logs_run_works "$?" 0
contains logs_agent_output_stays_on_stdout "$(cat "$T/stdout")" "agent-out"
if [ "$fs_mode" = fuse ]; then
        "$CLOISTER" unmount "$CFG" >/dev/null 2>&1
        grep '"cloister":"journal"' "$T/stdout" >"$T/journal" || true
        contains journal_lines_are_on_stdout_tagged "$(cat "$T/journal")" \
                '{"cloister":"journal","workspace":"wlogs","line":{'
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
grep -c '"cloister":"audit","workspace":"wlogs","line":{' "$T/stdout" >"$T/n" || true
if [ "$(cat "$T/n")" -ge 1 ]; then ok audit_lines_are_on_stdout_tagged; else
        not_ok audit_lines_are_on_stdout_tagged "$(head -c 600 "$T/stdout")"; fi
out=$(python3 "$CLOISTER_SRC/deploy/collector/verify-chain" --workspace wlogs --from-start "$T/stdout" 2>&1)
contains audit_copies_verify_as_a_chain "$out" "line(s) verify, seq 1 to"
# An edited copy is caught.
sed 's/"scope":"git"/"scope":"gid"/' "$T/stdout" >"$T/edited"
out=$(python3 "$CLOISTER_SRC/deploy/collector/verify-chain" --workspace wlogs "$T/edited" 2>&1)
contains edited_audit_copy_fails_the_chain "$out" "edited"
# Without the setting, nothing of the logs is on stdout.
ws_new "$T/quiet" ""
"$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- sh -c 'echo hi >/workspace/x' >"$T/quiet.out" 2>/dev/null
is logs_stay_off_stdout_by_default "$(grep -c '"cloister":' "$T/quiet.out")" 0

done_testing
