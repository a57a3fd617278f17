#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A `cloister run` SIGKILLed at any step of its start leaves nothing running
# once the next run of its workspace has started: not bubblewrap, not its
# child blocked in its setup, not the command. Each step is a crashpoint
# (lib/crashpoint.h) in sandbox_run(); run:N kills the run at the Nth, and
# N goes up until a run gets through untouched, so a step added later is
# covered without this file knowing. TAP.
#
# Why it matters: bubblewrap ties the sandbox to the run only late in its
# start (--die-with-parent). Before this test, a run killed right after the
# spawn, before it had recorded the sandbox, left bubblewrap's child blocked
# for ever on a wake-up from a bubblewrap that had died, in no record any
# sweep could find (the soak saw it once: a run "stuck" for 270 s).
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d /tmp/cloister-killed.XXXXXX)
at_exit "rm -rf '$T'"

# The one run that is not killed ends by its timeout, with its command running.
ws_new "$T/w" $'[limits]\ntimeout = 8s'
ws_mount
preflight

# What a killed run could leave: bubblewrap (its argv names the workspace's
# folders) and the command (its argv carries this mark).
mark="killed-run-mark-$$"
left_behind() { pgrep -f "(^|/)bwrap .*$T/" >/dev/null || pgrep -f "$mark" >/dev/null; }
at_exit "pkill -KILL -f '$mark' 2>/dev/null; pkill -KILL -f 'bwrap .*$T/' 2>/dev/null"
# wait_gone: up to a minute (a slow machine only makes the test slower);
# SIGKILL is sent at once, the exit and reaping may lag.
wait_gone() { for _ in $(seq 600); do left_behind || return 0; sleep 0.1; done; return 1; }

steps=0
for n in $(seq 1 40); do
        CLOISTER_TEST_CRASH_AT=run:$n crun "$CFG" -- sh -c ": $mark; sleep 600" \
                </dev/null >"$T/out" 2>&1
        rc=$?
        if [ "$rc" -ne 137 ]; then
                # Not killed: every step is behind us, and the command ran
                # until the run's own timeout stopped it.
                contains "an_unkilled_run_runs_its_command (run:$n)" "$(cat "$T/out")" \
                        "timeout of 8s reached"
                break
        fi
        steps=$n
        # The next run sweeps what the killed one left; then nothing is left.
        crun "$CFG" -- true >"$T/out2" 2>&1 ||
                not_ok "the_run_after_run:$n" "$(cat "$T/out2")"
        if wait_gone; then
                ok "nothing_left_after_a_run_killed_at_step_$n"
        else
                not_ok "nothing_left_after_a_run_killed_at_step_$n" \
                        "$(ps -eo pid,ppid,pgid,stat,wchan:20,args | grep -E "bwrap|$mark" | grep -v grep)"
                pkill -KILL -f "$mark" 2>/dev/null
                pkill -KILL -f "bwrap .*$T/" 2>/dev/null
        fi
        # The killed run's record went with its sandbox; the sweeper's with it.
        recs=$(ls "$STATE/sandboxes" 2>/dev/null | wc -l)
        is "no_record_left_after_run:$n" "$recs" 0
done
# The start has steps to kill at: a build without them tests nothing here.
[ "$steps" -ge 5 ] && ok "the_start_was_killed_at_$steps steps" ||
        not_ok the_start_has_its_crashpoints "only $steps"
done_testing
