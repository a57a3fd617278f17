#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run.sh: whole-program behaviour of `cloister run` and `cloister shell`:
# exit status, identity and environment, the filesystem view, fail-closed
# refusals, teardown after signals, and the unprivileged case.

. "$CLOISTER_SRC/tests/sandbox/lib.sh"

T=$(mktemp -d /tmp/cloister-run.XXXXXX)
chmod 755 "$T"
at_exit "rm -rf '$T'"
# Nothing a failed test leaves behind may hold meson's pipes open.
at_exit "pkill -KILL -f '^sleep 4[1-6][1-6][1-6]$'"
echo "# workspace served by: $fs_mode"
ws_new "$T/a" "[home]
persist = true

[run]
env = RUN_TEST_PLAIN

[limits]
tmp = 1M"
A_CFG=$CFG A_MNT=$MNT A_STATE=$STATE
preflight

# --- exit status --------------------------------------------------------
crun "$A_CFG" -- sh -c 'exit 7'
is exit_status_is_propagated "$?" 7
crun "$A_CFG" -- sh -c 'kill -USR1 $$'
is death_by_signal_is_128_plus_signal "$?" $((128 + 10))
crun "$A_CFG" -- true
is success_is_zero "$?" 0
out=$(crun "$A_CFG" -- sh -c '(yes; echo $? >&2) | head -n 1 >/dev/null' 2>&1)
is sigpipe_has_its_default_action "$out" 141

# --- usage and config errors (nothing runs) -----------------------------
err=$("$CLOISTER" run "$A_CFG" true 2>&1)
is missing_double_dash_is_a_usage_error "$?" 2
contains missing_double_dash_says_why "$err" "expected '--'"
"$CLOISTER" run 2>/dev/null
is missing_config_is_a_usage_error "$?" 2
printf '[workspace]\nname = x\nbogus = 1\n' >"$T/bad.ini"
err=$("$CLOISTER" run "$T/bad.ini" -- touch "$T/ran" 2>&1)
is bad_config_is_a_usage_error "$?" 2
contains bad_config_error_names_file_and_line "$err" "$T/bad.ini:"
[ ! -e "$T/ran" ] && ok bad_config_runs_nothing || not_ok bad_config_runs_nothing "ran"

# --- identity, environment, view ----------------------------------------
out=$(crun "$A_CFG" -- sh -c 'echo "$(id -un) $(id -u) $HOME $USER $(pwd)"')
is agent_identity_and_home "$out" "agent 1000 /home/agent agent /workspace"
out=$(crun "$A_CFG" -- cat /etc/passwd)
is passwd_lists_only_the_agent "$out" "agent:x:1000:1000:cloister agent:/home/agent:/bin/bash"
out=$(crun "$A_CFG" -- cat /etc/group)
is group_lists_only_the_agent "$out" "agent:x:1000:"
out=$(crun "$A_CFG" -- hostname)
is hostname_is_the_workspace_name "$out" "$(sed -n 's/^name = //p' "$A_CFG")"
out=$(RUN_TEST_PLAIN=yes RUN_TEST_HIDDEN=no crun "$A_CFG" -- env | cut -d= -f1 | sort | tr '\n' ' ')
is environment_is_clean "$out" "CLOISTER_WORKSPACE HOME LANG LOGNAME PATH PWD RUN_TEST_PLAIN SHELL TMPDIR USER "
out=$(crun "$A_CFG" -- sh -c 'ls /; ls /etc' | tr '\n' ' ')
contains root_holds_only_the_sandbox_layout "$out" "bin dev etc home lib"
# /etc: one read-only tmpfs; the synthesized files are the agent's, host
# files are there as on the host, and only directories are mounts of their own.
out=$(crun "$A_CFG" -- sh -c 'stat -c "%U %a" /etc /etc/passwd /etc/hosts; \
        awk "\$5 == \"/etc\" { print \$9, \$6 }" /proc/self/mountinfo; \
        awk "\$5 ~ /^\/etc\// { print \$5 }" /proc/self/mountinfo | sort | tr "\n" " "' 2>&1)
is etc_is_the_agents_and_one_read_only_tmpfs "$out" "agent 755
agent 644
agent 644
tmpfs ro,nosuid,nodev,relatime
$(for d in /etc/alternatives /etc/ca-certificates /etc/ld.so.conf.d /etc/ssl/certs; do
        [ -d "$d" ] && printf '%s ' "$d"; done)"
for f in /etc/services /etc/ld.so.cache /etc/ssl/certs/ca-certificates.crt /etc/localtime; do
        [ -r "$f" ] || continue
        want=$(md5sum <"$f")
        got=$(crun "$A_CFG" -- sh -c "md5sum <$f" 2>&1)
        is "etc_has_the_hosts_${f//[^a-z]/_}" "$got" "$want"
done
out=$(crun "$A_CFG" -- sh -c 'echo x >>/etc/hosts; mkdir /etc/ssl/x; echo y >/etc/ld.so.cache' 2>&1)
is etc_is_read_only "$(grep -c 'Read-only file system' <<<"$out")" 3
case "$out" in *root*|*sys\ *|*mnt*|*srv*|*boot*) not_ok root_has_no_host_dirs "$out" ;; *) ok root_has_no_host_dirs ;; esac
out=$(crun "$A_CFG" -- cat /workspace/hello.txt)
is workspace_shows_the_repo "$out" hello
out=$(crun "$A_CFG" -- cat /opt/mirror/sub/readme)
is mirror_is_readable "$out" "mirror file"
crun "$A_CFG" -- sh -c 'echo made > /workspace/made.txt && echo home > /home/agent/h.txt'
is workspace_and_home_are_writable "$?" 0
out=$(crun "$A_CFG" -- cat /workspace/made.txt /home/agent/h.txt | tr '\n' ' ')
is workspace_write_persists_to_the_next_run "$out" "made home "
crun "$A_CFG" -- sh -c 'head -c 2097152 /dev/zero > /tmp/big' 2>/dev/null
is tmp_is_size_limited "$?" 1
out=$(crun "$A_CFG" -- stat -f -c %c /tmp /dev/shm | tr '\n' ' ')
is tmp_inodes_follow_the_tmp_size "$out" "64 64 " # tmp = 1M: one inode per 16 KiB
out=$(crun "$A_CFG" -- sh -c 'cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "')
is network_has_only_loopback "$out" lo

# --- network mode host ----------------------------------------------------
ws_new "$T/h" "[network]
mode = host"
err=$(crun "$CFG" -- touch /workspace/ran 2>&1)
is host_network_is_refused_without_flag "$?" 125
contains host_network_refusal_says_why "$err" "--allow-host-network"
[ ! -e "$MNT/workspace/ran" ] && ok host_network_refusal_runs_nothing ||
        not_ok host_network_refusal_runs_nothing ran
err=$(crun --allow-host-network "$CFG" -- true 2>&1)
is host_network_with_flag_runs "$?" 0
contains host_network_with_flag_warns "$err" "warning: the sandbox shares the host's network"

# --- broker that cannot start: refuse, run nothing -------------------------
echo "this is not a policy" >"$T/policy.ini"
ws_new "$T/b" "[broker]
policy = $T/policy.ini"
err=$(crun "$CFG" -- touch /workspace/ran 2>&1)
is broken_broker_refuses_to_run "$?" 125
contains broken_broker_refusal_says_why "$err" "broker"
is broken_broker_refusal_says_nothing_was_run_once "$(grep -o "nothing was run" <<<"$err" | wc -l)" 1
[ ! -e "$MNT/workspace/ran" ] && ok broken_broker_runs_nothing || not_ok broken_broker_runs_nothing ran

# --- a command that can't start: sh's and env's statuses ---------------------
err=$(crun "$A_CFG" -- no-such-command-here 2>&1)
is missing_command_exits_127_as_sh_does "$?" 127
is missing_command_is_one_line_naming_it "$err" "cloister: no-such-command-here: command not found"
err=$(crun "$A_CFG" -- /no/such/path 2>&1)
is missing_path_exits_127 "$?" 127
contains missing_path_says_no_such_file "$err" "/no/such/path: No such file or directory"
err=$(crun "$A_CFG" -- /etc/hostname 2>&1)
is unexecutable_file_exits_126_as_sh_does "$?" 126
contains unexecutable_file_says_permission_denied "$err" "/etc/hostname: Permission denied"
err=$(crun "$A_CFG" -- /workspace 2>&1)
is a_directory_as_command_exits_126 "$?" 126
err=$(crun "$A_CFG" -- sh -c 'exit 127' 2>&1)
is a_command_exit_127_passes_through_silently "$?:$err" "127:"
out=$(crun "$A_CFG" -- sh -c 'echo "$$ $(cat /proc/$$/comm)"' 2>&1)
is the_command_keeps_the_pid_of_the_sandbox_first_program "$out" "2 sh"

# --- a mount that fails: refuse, run nothing (real FUSE only) -------------------
if [ "$fs_mode" = fuse ]; then
        ws_new "$T/f"
        sed -i 's/^\[repo\]$/[repo]\nrev = no-such-branch/' "$CFG"
        err=$(crun "$CFG" -- touch /workspace/ran 2>&1)
        is failed_mount_refuses_to_run "$?" 125
        contains failed_mount_refusal_says_why "$err" "mounting the workspace failed"
        [ ! -e "$T/f/repo/ran" ] && ok failed_mount_runs_nothing || not_ok failed_mount_runs_nothing ran
else
        skip_test failed_mount_refuses_to_run "no FUSE fs in this build"
fi

# --- a run that mounts: the daemon is nobody's child, in its own session ----
# (`cloister mount --ready-fd`, sandbox-session.c): a daemon left as the
# run's child would be a zombie in a long-lived caller once unmounted, and
# one in the run's session would get the terminal's Ctrl-C.
if [ "$fs_mode" = fuse ]; then
        ws_new "$T/m"
        M_CFG=$CFG M_MNT=$MNT M_STATE=$STATE
        crun "$M_CFG" -- sh -c 'touch /workspace/started
                for _ in $(seq 600); do [ -e /workspace/go ] && exit 0; sleep 0.1; done; exit 1' &
        runner=$!
        for _ in $(seq 600); do [ -e "$M_MNT/workspace/started" ] && break; sleep 0.1; done
        dpid=$(cat "$M_STATE/mount.pid" 2>/dev/null)
        if [ -n "$dpid" ] && [ -e "/proc/$dpid" ]; then
                ppid=$(awk '{ print $4 }' "/proc/$dpid/stat")
                parent=$(cat "/proc/$ppid/comm" 2>/dev/null)
                [ "$parent" != cloister ] && ok run_mount_daemon_is_not_a_child_of_the_run ||
                        not_ok run_mount_daemon_is_not_a_child_of_the_run "parent $ppid ($parent)"
                is run_mount_daemon_leads_its_own_session "$(ps -o sid= -p "$dpid" | tr -d ' ')" \
                        "$dpid"
        else
                not_ok run_mount_daemon_is_not_a_child_of_the_run "no daemon in $M_STATE/mount.pid"
        fi
        touch "$M_MNT/workspace/go"
        wait "$runner"
        is run_that_mounted_ends_well "$?" 0
        for _ in $(seq 300); do [ -n "$dpid" ] && [ -e "/proc/$dpid" ] || break; sleep 0.1; done
        [ -n "$dpid" ] && [ ! -e "/proc/$dpid" ] && ! mountpoint -q "$M_MNT" &&
                ok run_that_mounted_unmounts_and_its_daemon_ends ||
                not_ok run_that_mounted_unmounts_and_its_daemon_ends "pid $dpid, $M_MNT"
        err=$("$CLOISTER" mount --ready-fd=1 "$M_CFG" 2>&1)
        is mount_ready_fd_refuses_stdio "$?" 2
        contains mount_ready_fd_says_what_it_takes "$err" "--ready-fd takes an open descriptor"
        err=$("$CLOISTER" mount --ready-fd=3 --foreground "$M_CFG" 2>&1 3>/dev/null)
        is mount_ready_fd_is_not_for_foreground "$?" 2
else
        skip_test run_mount_daemon_is_not_a_child_of_the_run "no FUSE fs in this build"
fi

# --- teardown after signals ---------------------------------------------
# Waits below are bounded but generous (up to a minute): a loaded machine is
# slow to start a sandbox, and a wait that ends early would fail a test.
gone() { # gone PATTERN: wait (bounded) until no process matches
        for _ in $(seq 600); do pgrep -f "$1" >/dev/null || return 0; sleep 0.1; done
        return 1
}
# signal_run SIGNAL N: run `sleep N`, send SIGNAL to the run once the command
# runs, and check the status (128 + SIGNAL, as a shell reports a command
# that signal ended, though the sandbox gets SIGTERM whatever the run got;
# docs/cloister-run.md) and that the command is gone. A background
# job of a script starts with SIGINT ignored, so the run gets the default
# disposition back first, as it has when started from a terminal.
signal_run() {
        local sig=$1 n=$2 name pid
        name=sig$(echo "$1" | tr 'A-Z' 'a-z')_to_run
        env --default-signal="$sig" "$CLOISTER" run "${RUN_OPTS[@]}" "$A_CFG" -- sleep "$n" &
        pid=$!
        for _ in $(seq 600); do pgrep -f "^sleep $n\$" >/dev/null && break; sleep 0.1; done
        kill -"$sig" "$pid"
        wait "$pid"
        is "${name}_exits_128_plus_$sig" "$?" "$((128 + $(kill -l "$sig")))"
        gone "^sleep $n\$" && ok "${name}_stops_the_sandbox" ||
                not_ok "${name}_stops_the_sandbox" "still running"
}
signal_run TERM 4242
signal_run INT 4161

# SIGHUP (the terminal went away) tears down the sandbox and the broker.
if ! "$CLOISTER" help broker 2>&1 | grep -q 'not available'; then
        printf '[scope "git"]\naudience = https://git.example.com\nworkspaces = *\n' >"$T/ok-policy.ini"
        ws_new "$T/k" "[broker]
policy = $T/ok-policy.ini"
        "$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- sleep 4141 &
        pid=$!
        for _ in $(seq 600); do pgrep -f '^sleep 4141$' >/dev/null && break; sleep 0.1; done
        pgrep -f "cloister broker( --quiet)?( --for-runs)? $CFG" >/dev/null && ok run_starts_the_broker ||
                not_ok run_starts_the_broker "no broker process"
        kill -HUP "$pid"
        wait "$pid"
        is sighup_to_run_exits_129 "$?" 129
        gone '^sleep 4141$' && ok sighup_to_run_stops_the_sandbox || not_ok sighup_to_run_stops_the_sandbox running
        gone "cloister broker( --quiet)?( --for-runs)? $CFG" && ok sighup_to_run_stops_the_broker || not_ok sighup_to_run_stops_the_broker running

        # The broker's start and stop notes are for -v only.
        err=$("$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- true 2>&1)
        is a_run_prints_nothing_of_its_broker "$err" ""
        err=$("$CLOISTER" run -v "${RUN_OPTS[@]}" "$CFG" -- true 2>&1)
        contains verbose_run_shows_the_broker_starting "$err" "cloister broker: serving workspace"
        contains verbose_run_shows_the_broker_stopping "$err" "cloister broker: stopped"

        # The agent's one client is on its PATH, and talks to the broker.
        out=$("$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- sh -c \
                'command -v cloister; command -v git-credential-cloister; cloister token issue git' 2>/dev/null)
        contains broker_client_is_on_the_sandbox_path "$out" "/run/cloister/bin/cloister"
        contains git_credential_helper_is_on_the_sandbox_path "$out" \
                "/run/cloister/bin/git-credential-cloister"
        # An ASan client reserves ~20 TiB of shadow address space, more than
        # the largest RLIMIT_AS a config may set (16T), so under ASan the
        # client dies before main(); the plain build checks the round trip.
        if ldd "$CLOISTER" 2>/dev/null | grep -q libasan; then
                skip_test token_issued_inside_the_sandbox_is_v4_public \
                        "ASan clients cannot reserve shadow memory under RLIMIT_AS"
        else
                contains token_issued_inside_the_sandbox_is_v4_public "$out" "v4.public."
        fi
        out=$("$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- sh -c 'touch /run/cloister/bin/cloister' 2>&1)
        is broker_client_is_read_only_inside "$?" 1
fi

"$CLOISTER" run "${RUN_OPTS[@]}" "$A_CFG" -- sleep 4343 &
pid=$!
for _ in $(seq 600); do pgrep -f '^sleep 4343$' >/dev/null && break; sleep 0.1; done
kill -KILL "$pid"
wait "$pid" 2>/dev/null
gone "sleep 4343" && ok sigkill_to_run_kills_the_sandbox || not_ok sigkill_to_run_kills_the_sandbox "still running: $(pgrep -af "sleep 4343" | cut -c1-200 | tr "\n" " ")"
# /tmp, /dev/shm and /etc lived in the killed run's own mount namespace: gone
# with it. Their staging directory: root's, or one in the state directory.
stage=$A_STATE/sandbox-tmpfs
[ "$(id -u)" = 0 ] && stage=/run/cloister/stage
is sigkill_leaves_no_tmpfs_mounted "$(grep -c " $stage" /proc/self/mountinfo)" 0
if [ -d "$stage" ]; then
        is sigkill_leaves_the_tmpfs_stage_empty "$(ls -A "$stage")" ""
else
        not_ok sigkill_leaves_the_tmpfs_stage_empty "$stage is missing"
fi

# A sandbox left running by a run that died (the instant before bwrap ties
# them together) is killed by the next run. Stand-in: a process recorded as
# the sandbox of a run whose pid is dead.
sleep 4646 &
orphan=$!
start=$(sed 's/.*) //' "/proc/$orphan/stat" | cut -d' ' -f20)
( exit 0 ) & dead=$!
wait "$dead"
mkdir -p "$A_STATE/sandboxes"
echo "1 $orphan $start" >"$A_STATE/sandboxes/$dead"
at_exit "kill -KILL $orphan 2>/dev/null"
crun "$A_CFG" -- true
for _ in $(seq 600); do kill -0 "$orphan" 2>/dev/null || break; sleep 0.1; done
kill -0 "$orphan" 2>/dev/null && not_ok next_run_kills_an_orphaned_sandbox "still running" ||
        ok next_run_kills_an_orphaned_sandbox
[ ! -e "$A_STATE/sandboxes/$dead" ] && ok orphan_record_is_removed || not_ok orphan_record_is_removed left

# As root the process limit is a pids cgroup; the SIGKILLed run above left
# its cgroup, and the runs since have removed it.
if [ "$(id -u)" = 0 ]; then
        left=$(for d in /sys/fs/cgroup/pids/cloister-*-* /sys/fs/cgroup/cloister/cloister-*-*; do
                [ -d "$d" ] || continue
                r=${d##*/cloister-}
                # cloister-PID-...: a run's; another test's cgroup (cluster.sh
                # makes cloister-cluster-PID, in parallel) is not.
                [[ ${r%%-*} =~ ^[0-9]+$ ]] || continue
                kill -0 "${r%%-*}" 2>/dev/null || echo "$d"
        done)
        is killed_runs_leave_no_cgroup_behind "$left" ""
        # The run's start-up moves itself into the cgroups it is in already
        # (sandbox_cgroup_prime: the kernel's first-move wait, paid early);
        # it must stay there while its sandbox has one of its own.
        "$CLOISTER" run "${RUN_OPTS[@]}" "$A_CFG" -- sleep 3 >"$T/bg-run.out" 2>&1 &
        runpid=$! # cloister's own pid (crun, a function, would be a subshell's)
        cg=""
        for _ in $(seq 200); do
                cg=$(ls -d /sys/fs/cgroup/pids/cloister-"$runpid"-* \
                        /sys/fs/cgroup/cloister/cloister-"$runpid"-* 2>/dev/null | head -1)
                # (cgroupfs files have no size: read them)
                [ -n "$cg" ] && [ -n "$(cat "$cg/cgroup.procs" 2>/dev/null)" ] && break
                sleep 0.05
        done
        run_cg=$(cat "/proc/$runpid/cgroup" 2>/dev/null)
        is run_process_stays_in_its_own_cgroups "$run_cg" "$(cat /proc/self/cgroup)"
        procs=$(cat "$cg/cgroup.procs" 2>/dev/null)
        if [ -n "$cg" ] && [ -n "$procs" ] && ! grep -qx "$runpid" <<<"$procs"; then
                ok sandbox_has_a_cgroup_without_the_run_process
        else
                not_ok sandbox_has_a_cgroup_without_the_run_process "cgroup '$cg': $(head -c 300 "$T/bg-run.out")"
        fi
        wait "$runpid"
else
        skip_test killed_runs_leave_no_cgroup_behind "cgroups are used only as root"
        skip_test run_process_stays_in_its_own_cgroups "cgroups are used only as root"
        skip_test sandbox_has_a_cgroup_without_the_run_process "cgroups are used only as root"
fi

# --- shell ------------------------------------------------------------------
out=$(printf 'id -un\nexit 3\n' | "$CLOISTER" shell "${RUN_OPTS[@]}" "$A_CFG" 2>/dev/null)
is shell_exit_status_is_propagated "$?" 3
contains shell_runs_as_the_agent "$out" agent

# The shell on a real terminal (script(1) gives it a pty): TERM passes, the
# terminal stays the shell's, and TIOCSTI into it is still denied.
if command -v script >/dev/null; then
        (sleep 1; printf 'echo "T=$TERM"; tty >/dev/null && echo on-a-tty; exit 4\n') |
                TERM=xterm-cloister script -qec "'$CLOISTER' shell ${RUN_OPTS[*]} '$A_CFG'" /dev/null \
                >"$T/tty.out" 2>&1
        is shell_on_a_terminal_exits_with_its_status "$?" 4
        out=$(tr -d '\r' <"$T/tty.out")
        contains shell_on_a_terminal_gets_term "$out" "T=xterm-cloister"
        contains shell_keeps_the_terminal "$out" "on-a-tty"
else
        skip_test shell_on_a_terminal_gets_term "script(1) is not installed"
fi

# --- mount lifecycle (real FUSE only) ------------------------------------
is_fuse() { [ "$(stat -f -c %T "$1" 2>/dev/null)" = fuseblk ] || [ "$(stat -f -c %t "$1" 2>/dev/null)" = 65735546 ]; }
if [ "$fs_mode" = fuse ]; then
        ws_new "$T/m2" # its own: a second ws_new of "$T/m" has nothing to commit
        crun "$CFG" -- true
        is_fuse "$MNT" && not_ok run_unmounts_what_it_mounted "still mounted" ||
                ok run_unmounts_what_it_mounted
        "$CLOISTER" mount "$CFG"
        crun "$CFG" -- true
        is_fuse "$MNT" && ok run_keeps_a_mount_it_did_not_make ||
                not_ok run_keeps_a_mount_it_did_not_make "unmounted"
        "$CLOISTER" unmount "$CFG"
        "$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- sleep 4444 &
        pid=$!
        for _ in $(seq 600); do pgrep -f '^sleep 4444$' >/dev/null && break; sleep 0.1; done
        kill -KILL "$pid"
        wait "$pid" 2>/dev/null
        gone 'sleep 4444'
        crun "$CFG" -- true
        is_fuse "$MNT" && not_ok next_run_cleans_up_after_a_killed_run "still mounted" ||
                ok next_run_cleans_up_after_a_killed_run
        # A daemon that died leaves a dead mount (ENOTCONN): the next run replaces it.
        "$CLOISTER" mount "$CFG"
        kill -KILL "$(cat "$STATE/mount.pid")"
        for _ in $(seq 600); do kill -0 "$(cat "$STATE/mount.pid")" 2>/dev/null || break; sleep 0.1; done
        out=$(crun "$CFG" -- cat /workspace/hello.txt 2>&1)
        is run_replaces_a_dead_mount "$out" hello
        is_fuse "$MNT" && not_ok run_unmounts_the_replacement "still mounted" ||
                ok run_unmounts_the_replacement
else
        skip_test run_unmounts_what_it_mounted "no FUSE fs in this build"
fi

# --- unprivileged ---------------------------------------------------------
# The sandbox as an ordinary user. If FUSE is closed to that user here (e.g.
# /dev/fuse mode 0600 without fusermount3 working), the sandbox is still
# tested on a prepared layout with --no-mount, and a comment says so.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
        asnobody() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$@"; }
        U=$T/u
        mkdir -p "$U"
        chown nobody "$U"
        prep() { # prep MODE: a workspace for nobody, served by MODE
                rm -rf "$U/w"
                asnobody bash -c "$(declare -f ws_new at_exit); fs_mode=$1; ws_new '$U/w' '[limits]
processes = 8'" >/dev/null 2>&1
                CFG=$U/w/ws.ini
                U_OPTS=()
                [ "$1" = stub ] && U_OPTS=(--no-mount)
        }
        prep "$fs_mode"
        out=$(asnobody "$CLOISTER" run "${U_OPTS[@]}" "$CFG" -- sh -c 'id -un' 2>&1)
        rc=$?
        if [ "$rc" = 125 ] && [ "$fs_mode" = fuse ]; then
                echo "# FUSE is closed to unprivileged users here ($out); using a prepared layout"
                at_exit "setpriv --reuid=nobody --regid=$(id -g nobody) --clear-groups '$CLOISTER' unmount '$CFG' >/dev/null 2>&1"
                prep stub
                out=$(asnobody "$CLOISTER" run "${U_OPTS[@]}" "$CFG" -- sh -c 'id -un' 2>&1)
                rc=$?
        fi
        is unprivileged_run_works "$rc $out" "0 agent"
        out=$(asnobody "$CLOISTER" run "${U_OPTS[@]}" "$CFG" -- sh -c 'echo x > /workspace/u.txt && cat /workspace/u.txt' 2>&1)
        is unprivileged_workspace_is_writable "$out" x
        # The user's other processes do not count against the sandbox's limit.
        for _ in $(seq 12); do asnobody sleep 4545 & done
        out=$(asnobody "$CLOISTER" run "${U_OPTS[@]}" "$CFG" -- sh -c 'sleep 0 & sleep 0 & wait; echo forked' 2>&1)
        is unprivileged_process_limit_counts_only_the_sandbox "$out" forked
        out=$(asnobody "$CLOISTER" run "${U_OPTS[@]}" "$CFG" -- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do sleep 5 & done; wait' 2>&1)
        contains unprivileged_process_limit_holds "$out" "fork"
        pkill -f '^sleep 4545$'
else
        skip_test unprivileged_run_works "needs root (to become nobody) and setpriv"
fi

done_testing
