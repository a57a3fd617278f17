#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# refusals.sh: `cloister run` fails closed when a protection it needs is
# missing on the machine: no bubblewrap, user namespaces disabled, or a
# kernel that refuses seccomp filters. Each case must exit 125, say what
# failed, and run nothing. The machine is changed only inside a private
# mount namespace (unshare -m) or under an inherited seccomp filter, never
# for the rest of the system, so these cases need root.

. "$CLOISTER_SRC/tests/sandbox/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root to hide bubblewrap in a private mount namespace"
command -v unshare >/dev/null || skip_all "unshare (util-linux) is not installed"
NO_SECCOMP=${NO_SECCOMP:?NO_SECCOMP must point at the no-seccomp helper}

T=$(mktemp -d /tmp/cloister-refusals.XXXXXX)
chmod 755 "$T"
at_exit "rm -rf '$T'"
ws_new "$T/a"
preflight

# ran NAME: ok if the command of the refused run left no trace anywhere.
ran_nothing() {
        if [ -e "$MNT/workspace/ran" ] || [ -e "$STATE/fs/repo/ran" ]; then
                not_ok "$1" "the command ran"
        else
                ok "$1"
        fi
}

# --- no bubblewrap ----------------------------------------------------------
: >"$T/not-bwrap"
chmod 644 "$T/not-bwrap"
err=$(unshare -m --propagation private sh -c \
        'mount --bind "$1" /usr/bin/bwrap && shift && exec "$@"' sh "$T/not-bwrap" \
        "$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- sh -c 'echo x >/workspace/ran' 2>&1)
is missing_bwrap_is_refused "$?" 125
contains missing_bwrap_refusal_says_why "$err" "bubblewrap is not installed"
ran_nothing missing_bwrap_runs_nothing

# --- user namespaces disabled -------------------------------------------------
echo 0 >"$T/zero"
err=$(unshare -m --propagation private sh -c \
        'mount --bind "$1" /proc/sys/user/max_user_namespaces && shift && exec "$@"' sh \
        "$T/zero" "$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- sh -c 'echo x >/workspace/ran' 2>&1)
is disabled_userns_is_refused "$?" 125
contains disabled_userns_refusal_says_why "$err" "user namespaces are disabled"
ran_nothing disabled_userns_runs_nothing

# --- seccomp refused by the kernel ----------------------------------------------
# no_seccomp NAME [--load-only] MESSAGE: a run under the helper's filter.
# Output to a file, not a pipe: a process the refused run left behind must
# not hang the test by holding the pipe open, but be found and named. The
# command line carries a token to find any bubblewrap of this run by.
no_seccomp() {
        local name=$1 mode=$2 want=$3 err rc token left
        token="refused-$name-$$"
        "$NO_SECCOMP" $mode "$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" -- \
                sh -c "echo x >/workspace/ran # $token" >"$T/err" 2>&1
        rc=$?
        err=$(cat "$T/err")
        if [ "$rc" = 77 ] && [ -z "${err##no-seccomp:*}" ]; then
                skip_test "${name}_is_refused" "$err"
                skip_test "${name}_refusal_says_why" "$err"
                skip_test "${name}_runs_nothing" "$err"
                skip_test "${name}_leaves_no_process" "$err"
                return
        fi
        is "${name}_is_refused" "$rc" 125
        contains "${name}_refusal_says_why" "$err" "$want"
        ran_nothing "${name}_runs_nothing"
        left=$(pgrep -f -- "$token")
        if [ -z "$left" ]; then
                ok "${name}_leaves_no_process"
        else
                not_ok "${name}_leaves_no_process" "$(ps -o pid=,ppid=,args= -p "${left//$'\n'/,}" | cut -c1-200 | tr '\n' ' ')"
                kill -KILL $left 2>/dev/null
        fi
}
# No seccomp at all: libseccomp cannot even build the filter.
no_seccomp no_seccomp "" "cannot build the seccomp filter"
# The filter builds but bubblewrap cannot install it.
no_seccomp seccomp_load_failure --load-only "bubblewrap could not start the command"
# /tmp's inode limit can't be set (mounting is refused): nothing runs. The
# workspace is mounted first, outside the filter, so that only cloister's
# own tmpfs setup meets it.
if [ "$fs_mode" = fuse ]; then
        ws_mount
        at_exit "'$CLOISTER' unmount '$CFG' >/dev/null 2>&1"
fi
no_seccomp tmpfs_limit_failure --no-mount-ns "inode limit ([limits] tmp_files), so nothing runs"
[ "$fs_mode" = fuse ] && "$CLOISTER" unmount "$CFG" >/dev/null 2>&1
# A refused run leaves no sandbox and no mount behind.
if [ "$fs_mode" = fuse ]; then
        mountpoint -q "$MNT" && not_ok refused_runs_leave_no_mount "still mounted" ||
                ok refused_runs_leave_no_mount
fi
pgrep -f "^cloister broker( --quiet)?( --for-runs)? $CFG" >/dev/null && not_ok refused_runs_leave_no_broker running ||
        ok refused_runs_leave_no_broker

# --- a limit that depends on a privilege: [limits] timeout needs CAP_KILL -----
# A root-run sandbox is another uid: without CAP_KILL no SIGTERM or SIGKILL
# reaches it, so the timeout can't be enforced, and the run must be refused
# at its start, never run to its end and then claimed stopped.
if command -v setpriv >/dev/null; then
        # The command outlives the timeout (whatever the machine's speed: the
        # timeout counts from the command's start), so a run that went ahead
        # would reach it, fail to stop the command, and say so.
        ws_new "$T/k" $'[limits]\ntimeout = 1s'
        err=$(setpriv --inh-caps -kill --bounding-set -kill "$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" \
                -- sh -c 'echo x >/workspace/ran; sleep 3' 2>&1)
        is without_cap_kill_the_timeout_refuses_the_run "$?" 125
        contains without_cap_kill_the_refusal_names_it "$err" "[limits] timeout of 1s cannot be enforced: this process lacks CAP_KILL"
        case "$err" in
        *"was stopped"*) not_ok without_cap_kill_no_stop_is_claimed "$err" ;;
        *) ok without_cap_kill_no_stop_is_claimed ;;
        esac
        ran_nothing without_cap_kill_runs_nothing
else
        skip_test without_cap_kill_the_timeout_refuses_the_run "setpriv (util-linux) is not installed"
fi

# --- a container whose root is the host's root --------------------------------
# A PID namespace of its own and the initial user namespace (uid_map
# "0 0 4294967295"): a container without a user namespace, as podman
# without --uidmap makes one. Refused, unless the config opts out; check
# says so either way. Root in the machine's own PID namespace (this
# machine: a VM whose uid_map is the identity too) runs, as above.
pidns_init=$(stat -L -c %i /proc/self/ns/pid)
if [ "$pidns_init" != 4026531836 ]; then
        skip_test container_without_userns_is_refused "this test already runs in a PID namespace of its own"
elif ! grep -qE '^ +0 +0 +4294967295$' /proc/self/uid_map; then
        skip_test container_without_userns_is_refused "this test runs in a user namespace of its own"
else
        ok root_in_the_machines_own_pid_namespace_ran_above
        ws_new "$T/c"
        err=$(unshare --pid --fork --mount-proc "$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" \
                -- sh -c 'echo x >/workspace/ran' 2>&1)
        is container_without_userns_is_refused "$?" 125
        contains container_without_userns_refusal_says_why "$err" "whose root is the host's root"
        contains container_without_userns_refusal_names_the_opt_out "$err" "[run] allow_host_root = true"
        ran_nothing container_without_userns_runs_nothing
        err=$(unshare --pid --fork --mount-proc "$CLOISTER" check "$CFG" 2>&1)
        is check_in_a_container_without_userns_fails "$?" 1
        contains check_in_a_container_without_userns_says_run_refuses "$err" "\`cloister run\` as root refuses to start here"
        printf '[run]\nallow_host_root = true\n' >>"$CFG"
        unshare --pid --fork --mount-proc "$CLOISTER" run "${RUN_OPTS[@]}" "$CFG" \
                -- sh -c 'echo x >/workspace/ran' >/dev/null 2>&1
        is container_without_userns_runs_with_the_opt_out "$?" 0
        [ -e "$STATE/fs/repo/ran" ] || [ -e "$MNT/workspace/ran" ] && ok opt_out_run_wrote_its_file ||
                not_ok opt_out_run_wrote_its_file "no file"
        err=$("$CLOISTER" check "$CFG" 2>&1)
        contains check_warns_about_the_opt_out "$err" "warning: $CFG: key 'allow_host_root' in [run]: true"
fi

# --- without CAP_SYS_ADMIN the FUSE mount's hint names it, not /dev/fuse -------
if [ "$fs_mode" = fuse ] && command -v setpriv >/dev/null; then
        ws_new "$T/m"
        err=$(setpriv --inh-caps -sys_admin --bounding-set -sys_admin "$CLOISTER" mount "$CFG" 2>&1)
        is without_cap_sys_admin_mount_fails "$?" 1
        contains without_cap_sys_admin_the_hint_names_it "$err" "lacks CAP_SYS_ADMIN"
        case "$err" in
        *"/dev/fuse"*) not_ok without_cap_sys_admin_the_hint_does_not_blame_dev_fuse "$err" ;;
        *) ok without_cap_sys_admin_the_hint_does_not_blame_dev_fuse ;;
        esac
fi

# --- and the same workspace runs when nothing is missing ----------------------
ws_new "$T/a"
crun "$CFG" -- sh -c 'echo x >/workspace/ran'
is same_workspace_runs_otherwise "$?" 0
[ -e "$STATE/fs/repo/ran" ] || [ -e "$MNT/workspace/ran" ] && ok control_run_wrote_its_file ||
        not_ok control_run_wrote_its_file "no file"
done_testing
