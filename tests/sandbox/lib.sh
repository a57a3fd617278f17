# SPDX-License-Identifier: MIT
#
# lib.sh: what the sandbox and escape TAP suites share: TAP helpers, skips
# with a reason, and a throwaway workspace (a git repo, a config, a mount).
#
# The workspace is served by the real `cloister mount` when this build has
# it; a build without the fs module gets a plain directory with the same
# layout (<mnt>/workspace, <mnt>/home/agent, a mirror) and `--no-mount`, and
# says so in a TAP comment. Everything started here is stopped on EXIT.

set -u

n_test=0
n_fail=0
ok() { # ok NAME: pass
        n_test=$((n_test + 1))
        echo "ok $n_test - $1"
}
not_ok() { # not_ok NAME WHY
        n_test=$((n_test + 1))
        n_fail=$((n_fail + 1))
        echo "not ok $n_test - $1"
        # Every line of the reason is a TAP comment, or the harness rejects it.
        printf '%s\n' "$2" | sed 's/^/# /'
}
skip_test() { # skip_test NAME REASON
        n_test=$((n_test + 1))
        echo "ok $n_test - $1 # SKIP $2"
}
is() { # is NAME GOT WANT
        if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "got '$2', want '$3'"; fi
}
contains() { # contains NAME HAYSTACK NEEDLE
        case "$2" in
        *"$3"*) ok "$1" ;;
        *) not_ok "$1" "'$3' not in: $(printf %s "$2" | head -c 400)" ;;
        esac
}
skip_all() {
        echo "1..0 # SKIP $1"
        exit 77
}
done_testing() {
        echo "1..$n_test"
        [ "$n_fail" -eq 0 ]
}

: "${CLOISTER:?CLOISTER must name the cloister binary}"
[ -x /usr/bin/bwrap ] || [ -x "$(command -v bwrap 2>/dev/null)" ] ||
        skip_all "bubblewrap is not installed"
# (Not in a container of tests/deploy: its root lacks CAP_SETFCAP, which
# bwrap's mapping of uid 0 needs and cloister's own mappings do not.)
[ "${CLOISTER_TEST_CGROUP:-}" = container ] || bwrap --unshare-user --ro-bind / / true 2>/dev/null ||
        skip_all "this kernel or container does not allow user namespaces"

cleanup_cmds=()
at_exit() { cleanup_cmds+=("$1"); }
run_cleanup() {
        local i
        for ((i = ${#cleanup_cmds[@]} - 1; i >= 0; i--)); do eval "${cleanup_cmds[$i]}" || true; done
}
trap run_cleanup EXIT

# fs_mode: "fuse" when this build's `cloister mount` works, else "stub".
fs_mode=stub
if ! "$CLOISTER" help mount 2>&1 | grep -q 'not available'; then
        fs_mode=fuse
        [ -e /dev/fuse ] || skip_all "FUSE is not available (/dev/fuse missing)"
        if [ "$(id -u)" != 0 ] && ! { [ -r /dev/fuse ] && [ -w /dev/fuse ]; }; then
                echo "# /dev/fuse is closed to this user: a prepared layout stands in for the mount"
                fs_mode=stub
        fi
fi
RUN_OPTS=()
[ "$fs_mode" = stub ] && RUN_OPTS=(--no-mount)

# In a container (tests/deploy/podman.sh runs the escape suite in one),
# CLOISTER_TEST_CGROUP=container makes every workspace rely on the
# container's cgroup ([limits] cgroup = container), and
# CLOISTER_TEST_HOST_UIDS names host ids its user namespace maps.
container_ini=""
if [ "${CLOISTER_TEST_CGROUP:-}" = container ]; then
        container_ini=$'[limits]\ncgroup = container'
fi
if [ -n "${CLOISTER_TEST_HOST_UIDS:-}" ]; then
        container_ini+=$'\n[run]\nhost_uids = '"$CLOISTER_TEST_HOST_UIDS"
fi

# proc_running ERE: whether a process's command line (its words joined by
# spaces) matches ERE; /proc itself, so no procps is needed.
proc_running() {
        local f cmd
        for f in /proc/[0-9]*/cmdline; do
                cmd=$(tr '\0' ' ' 2>/dev/null <"$f") || continue
                [[ ${cmd% } =~ $1 ]] && return 0
        done
        return 1
}

# ws_new DIR [EXTRA_INI]: a workspace under DIR; sets CFG, MNT, STATE, REPO.
# Extra config lines (e.g. a [limits] section) come from $2.
ws_new() {
        local dir=$1 extra=${2:-}
        REPO=$dir/repo
        STATE=$dir/state
        MNT=$dir/mnt
        CFG=$dir/ws.ini
        mkdir -p "$REPO" "$dir/mirror-src/sub"
        echo "mirror file" >"$dir/mirror-src/sub/readme"
        git -C "$REPO" init -q -b main
        echo "hello" >"$REPO/hello.txt"
        git -C "$REPO" add hello.txt
        # Again on the same DIR (the same workspace, set up anew): the base
        # is there already, and git's "nothing to commit" would break the TAP.
        git -C "$REPO" rev-parse -q --verify HEAD >/dev/null ||
                git -C "$REPO" -c user.name=t -c user.email=t@t commit -q -m init
        cat >"$CFG" <<INI
[workspace]
name = w$(basename "$dir" | tr -cd 'A-Za-z0-9')
state = $STATE
mountpoint = $MNT

[repo]
source = $REPO

[mirror "m"]
source = $dir/mirror-src
path = /opt/mirror

$extra
$container_ini
INI
        if [ "$fs_mode" = stub ]; then
                mkdir -p "$MNT/workspace" "$MNT/home/agent" "$MNT/opt/mirror" "$STATE"
                cp -a "$REPO/." "$MNT/workspace/"
                cp -a "$dir/mirror-src/." "$MNT/opt/mirror/"
        else
                at_exit "'$CLOISTER' unmount '$CFG' >/dev/null 2>&1"
        fi
}

# ws_mount: mount now (fuse mode), so that several runs share one mount.
ws_mount() {
        [ "$fs_mode" = fuse ] || return 0
        "$CLOISTER" mount "$CFG"
}

# In a container, every run says on stderr that the container's cgroup
# enforces [limits]; the tests compare the agent's words alone.
if [ "${CLOISTER_TEST_CGROUP:-}" = container ]; then
        crun() {
                { "$CLOISTER" run "${RUN_OPTS[@]}" "$@" 2>&1 1>&3 3>&- |
                        grep -v "^cloister run: \[limits\] cgroup = container: the container's cgroup enforces" >&2
                  return "${PIPESTATUS[0]}"; } 3>&1
        }
else
        crun() { "$CLOISTER" run "${RUN_OPTS[@]}" "$@"; }
fi

# preflight: as root, cloister run refuses without a pids cgroup (the kernel
# doesn't apply RLIMIT_NPROC to root); a machine like that can't run these.
preflight() {
        local err
        err=$(crun "$CFG" -- true 2>&1) && return 0
        case "$err" in
        *"needs a pids cgroup"*) skip_all "running as root without a usable pids cgroup: $err" ;;
        esac
        return 0
}
