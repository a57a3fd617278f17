#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Many runs of one workspace at once: the broker and the egress proxy live
# as long as the last run, whichever run started them; runs that start
# together are all served; a run killed with SIGKILL leaves no daemon
# behind for long; after the last run, nothing of them is left. TAP.
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d /tmp/cloister-conc.XXXXXX)
at_exit "rm -rf '$T'"

printf '[scope "git"]\naudience = https://git.example.com\nworkspaces = *\n' >"$T/policy.ini"
ws_new "$T/w" "[broker]
policy = $T/policy.ini

[network]
mode = proxy"
preflight
W=$MNT/workspace
[ "$fs_mode" = fuse ] || W=$MNT/workspace
daemons() { pgrep -f "cloister (broker|proxy)( --quiet)? --for-runs $CFG" | wc -l; }
# wait_for COND: up to a minute (a slow machine only makes the test slower).
wait_for() { for _ in $(seq 600); do eval "$1" && return 0; sleep 0.1; done; return 1; }

# The agent's side: a token from the broker, and an answer from the proxy
# (a refusal is an answer: the proxy is there). The token is asked for in
# the broker's protocol by python, not by `cloister token issue`: in an
# ASan build that client can't start under the sandbox's RLIMIT_AS.
issue='python3 -c "
import json, os, socket
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ[\"CLOISTER_BROKER\"])
s.sendall(b\"{\\\"op\\\":\\\"issue\\\",\\\"scope\\\":\\\"git\\\"}\\n\")
print(json.loads(s.makefile().readline())[\"token\"])
"'
agent='
for _ in $(seq 600); do [ -e /workspace/go ] && break; sleep 0.1; done
t=$('"$issue"') && echo "token ${t%%.*}"
python3 -c "
import socket
s = socket.create_connection((\"127.0.0.1\", 3128), timeout=30)
s.sendall(b\"GET http://nowhere.invalid/ HTTP/1.1\r\nHost: nowhere.invalid\r\n\r\n\")
print(\"proxy\", s.recv(100).split()[1].decode())
"'

# A starts (and starts the daemons), B starts and ends, then A asks.
rm -f "$W/go"
crun "$CFG" -- sh -c "$agent" >"$T/a.out" 2>"$T/a.err" &
a=$!
wait_for "[ \$(daemons) -eq 2 ]"
crun "$CFG" -- sh -c 'touch /workspace/b-ran' 2>"$T/b.err"
is a_second_run_starts_and_ends_while_the_first_runs "$?" 0
touch "$W/go"
wait "$a"
is the_first_run_ends_well "$?" 0
is the_broker_serves_the_first_run_after_the_second_ended "$(grep '^token' "$T/a.out")" "token v4"
is the_proxy_serves_the_first_run_after_the_second_ended "$(grep '^proxy' "$T/a.out")" "proxy 403"
wait_for "[ \$(daemons) -eq 0 ]" && ok the_last_run_takes_the_daemons_with_it ||
        not_ok the_last_run_takes_the_daemons_with_it "$(daemons) left"

# Four runs that start together: one starts the daemons, all are served.
touch "$W/go"
pids=()
for i in 1 2 3 4; do
        crun "$CFG" -- sh -c "$agent" >"$T/c$i.out" 2>"$T/c$i.err" &
        pids+=($!)
done
served=0
for i in 1 2 3 4; do
        wait "${pids[$((i - 1))]}" && grep -q '^token v4' "$T/c$i.out" &&
                grep -q '^proxy 403' "$T/c$i.out" && served=$((served + 1))
done
is four_runs_started_together_are_all_served "$served" 4
[ "$served" = 4 ] || sed 's/^/# /' "$T"/c*.err | head -20
wait_for "[ \$(daemons) -eq 0 ]" && ok no_daemon_outlives_the_last_of_them ||
        not_ok no_daemon_outlives_the_last_of_them "$(daemons) left"

# A run killed outright: its daemons notice that no run is left and go.
rm -f "$W/go"
crun "$CFG" -- sh -c "$agent" >/dev/null 2>&1 &
k=$!
wait_for "[ \$(daemons) -eq 2 ]"
kill -KILL "$k"
wait "$k" 2>/dev/null
wait_for "[ \$(daemons) -eq 0 ]" && ok daemons_of_a_killed_run_stop_by_themselves ||
        not_ok daemons_of_a_killed_run_stop_by_themselves "$(daemons) left"
crun "$CFG" -- sh -c "touch /workspace/go; $issue >/dev/null" 2>"$T/after.err"
is a_run_after_that_starts_them_afresh "$?" 0
wait_for "[ \$(daemons) -eq 0 ]" && ok and_takes_them_with_it || not_ok and_takes_them_with_it "$(daemons) left"
done_testing
