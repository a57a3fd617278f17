# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# lib.sh: shared by the review TAP tests that drive the real binary (diff,
# export, log and the journal). Makes a scratch dir $t, which is the test's
# HOME and holds its XDG_STATE_HOME and XDG_CONFIG_HOME, so that nothing a
# test mounts is recorded in the user's own state (claims, known configs);
# makes the source repository $t/src and the workspace config $t/ws.ini;
# mounts it; unmounts and removes everything in every outcome (trap EXIT).
# A check is a shell expression (eval) that may read $st, the exit status
# of the command just before it.
#
# diff-upper.sh and left-out.sh mount several workspaces and check with the
# fs tests' command-style checks and sanitizer scan, so they use
# tests/fs/lib.sh and set their own XDG_STATE_HOME.
set -uo pipefail
: "${CLOISTER:?run through meson test}"

# A TAP plan of 0 with SKIP is how meson's TAP protocol records a skip: with
# protocol 'tap', meson 1.0 turns any non-zero exit, 77 included, into ERROR
# (tests/tap-driver turns the 77 back into a skip).
skip_all() {
        echo "1..0 # SKIP $*"
        exit 77
}

# need COMMAND [MESSAGE]: skip the whole test unless COMMAND is on the PATH.
need() { command -v "$1" >/dev/null || skip_all "${2:-no $1}"; }

# need_mount: skip the whole test unless this machine can make a FUSE mount.
need_mount() {
        [ "$(id -u)" -eq 0 ] || skip_all "needs root for FUSE mounts"
        [ -c /dev/fuse ] || skip_all "no /dev/fuse"
}

need git "no git binary"

t=$(mktemp -d "/tmp/cloister-$(basename "$0" .sh).XXXXXX")
export HOME=$t XDG_STATE_HOME=$t/xdg-state XDG_CONFIG_HOME=$t/xdg-config GIT_CONFIG_NOSYSTEM=1
W=$t/mnt/workspace        # the workspace as the mount shows it
J=$t/state/journal.jsonl # the workspace's journal
mounted=0

cleanup() {
        if [ "$mounted" = 1 ]; then
                "$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1
                mountpoint -q "$t/mnt" && umount -l "$t/mnt"
        fi
        rm -rf "$t"
}
trap cleanup EXIT

# make_src SCRIPT: the source repository $t/src (branch main) with one
# commit, "base", of what SCRIPT (a command or a function, run in $t/src)
# makes; an empty commit if it makes nothing.
make_src() {
        git init -q -b main "$t/src" &&
                (cd "$t/src" && eval "$1" && git add -A &&
                        git -c user.name=b -c user.email=b@b commit -q --allow-empty -m base) ||
                {
                        echo "Bail out! cannot make the source repository"
                        exit 1
                }
}

# write_config NAME [LINES]: the workspace config $t/ws.ini of workspace
# NAME (state $t/state, mountpoint $t/mnt, source $t/src); LINES (more
# sections, such as [limits]) go at its end. Writing it again replaces it.
write_config() {
        mkdir -p "$t/state" "$t/mnt"
        {
                cat <<INI
[workspace]
name = $1
state = $t/state
mountpoint = $t/mnt
[repo]
source = $t/src
INI
                if [ -n "${2:-}" ]; then printf '%s\n' "$2"; fi
        } >"$t/ws.ini"
}

# mount_ws [OUT]: mounts $t/ws.ini, the daemon's standard output going to
# OUT (its [logs] stdout copies; /dev/null unless given). Skips the test
# where this build has no mount; bails out if the mount fails.
mount_ws() {
        mounted=1
        "$CLOISTER" mount "$t/ws.ini" >"${1:-/dev/null}" 2>"$t/mount.err" && return 0
        grep -q "not available" "$t/mount.err" && skip_all "cloister mount is not available in this build"
        echo "Bail out! cloister mount failed: $(cat "$t/mount.err")"
        exit 1
}

n=0
# check NAME EXPRESSION: one TAP line, ok when EXPRESSION (eval) holds. st
# is the exit status of the command just before the check.
check() {
        st=$?
        n=$((n + 1))
        if eval "$2"; then echo "ok $n - $1"; else
                echo "not ok $n - $1"
                check_failed
        fi
}
# check_failed: called after a failed check; a test redefines it to say why.
check_failed() { :; }

# skip_one NAME REASON: a check this run cannot make, and why.
skip_one() {
        n=$((n + 1))
        echo "ok $n - $1 # SKIP $2"
}
