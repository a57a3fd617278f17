# SPDX-License-Identifier: MIT
# lib.sh: shared helpers for the gitdir TAP tests (sourced, not run).
#
# Every test runs git with no system or global config and a private HOME, so
# only the repository config under test is in effect, and makes its repos
# under one mktemp directory that an EXIT trap removes.

TAP_N=0
TAP_FAILED=0

ok() {
        TAP_N=$((TAP_N + 1))
        echo "ok $TAP_N - $1"
}

not_ok() {
        TAP_N=$((TAP_N + 1))
        echo "not ok $TAP_N - $1"
        TAP_FAILED=1
}

# check NAME CMD...: one TAP line saying whether CMD succeeded.
check() {
        local name=$1
        shift
        if "$@"; then ok "$name"; else not_ok "$name"; fi
}

# expect_eq NAME EXPECTED ACTUAL
expect_eq() {
        if [ "$2" = "$3" ]; then
                ok "$1"
        else
                not_ok "$1"
                printf '#   expected: %s\n#   actual:   %s\n' "$2" "$3" | head -40
        fi
}

skip_all() {
        echo "1..0 # SKIP $1"
        exit 77
}

# force_unmount CONFIG MOUNTPOINT: for EXIT traps; the daemon may be gone.
force_unmount() {
        "$CLOISTER" unmount "$1" >/dev/null 2>&1 || fusermount3 -u -z "$2" >/dev/null 2>&1
}

# need_mount: skip unless git and a usable FUSE (for this uid) are here.
need_mount() {
        command -v git >/dev/null || skip_all "git is not installed"
        [ -c /dev/fuse ] || skip_all "/dev/fuse is missing"
        command -v fusermount3 >/dev/null || skip_all "fusermount3 is not installed (package fuse3)"
        if [ "$(id -u)" != 0 ] && ! { [ -r /dev/fuse ] && [ -w /dev/fuse ]; }; then
                skip_all "/dev/fuse is not usable by uid $(id -u)"
        fi
}

finish() {
        echo "1..$TAP_N"
        exit $TAP_FAILED
}

git_isolate() {
        export HOME=$1
        export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
        export GIT_AUTHOR_NAME=Tester GIT_AUTHOR_EMAIL=tester@example.invalid
        export GIT_COMMITTER_NAME=Tester GIT_COMMITTER_EMAIL=tester@example.invalid
        unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
                GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_CEILING_DIRECTORIES
}

# Fingerprint of a directory tree: every path with its type, mode and size,
# symlink targets, and the sha256 of every regular file. Any write changes it.
tree_sum() {
        (
                cd "$1" || exit 1
                find . -printf '%y %m %s %p -> %l\n' | LC_ALL=C sort
                find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
        ) | sha256sum | cut -d' ' -f1
}

# make_checkout REPO REV DIR: the tree of REV as plain files in DIR, dated
# as the fs dates lower files (the commit's committer time, nsec 0).
make_checkout() {
        local repo=$1 rev=$2 dir=$3 t
        t=$(git -C "$repo" log -1 --format=%ct "$rev") || return 1
        mkdir -p "$dir" || return 1
        git -C "$repo" archive "$rev" | tar -x --warning=no-timestamp -C "$dir" || return 1
        find "$dir" -print0 | xargs -0 touch -h -d "@$t"
}

# worktree_files_opened_by DIR CMD...: run CMD under strace and print every
# file below DIR it opened successfully that is neither in .git/, nor a
# directory, nor a .gitignore: i.e. every file whose data git read.
# Exits 77 without strace (or ptrace).
worktree_files_opened_by() {
        local dir=$1 log
        shift
        command -v strace >/dev/null || return 77
        strace -qq -o /dev/null true 2>/dev/null || return 77 # no ptrace here
        log=$(mktemp)
        if ! strace -f -qq -e trace=open,openat,openat2 -o "$log" "$@" >/dev/null 2>&1; then
                rm -f "$log"
                echo "(the command failed: $*)"
                return 1
        fi
        awk -v dir="$dir" '
                / = -1 / || /O_DIRECTORY/ { next }
                {
                        if (!match($0, /"[^"]*"/)) next
                        p = substr($0, RSTART + 1, RLENGTH - 2)
                        if (p !~ /^\//) p = dir "/" p
                        if (index(p, dir "/") != 1) next
                        rel = substr(p, length(dir) + 2)
                        if (rel ~ /^\.git(\/|$)/ || rel ~ /(^|\/)\.gitignore$/) next
                        print rel
                }' "$log"
        rm -f "$log"
}

# agent_prefix DIR: set AGENT to the command prefix that runs a command as
# the agent in the sandbox sees the mount DIR: the owner of its files (the
# host uid the mount shows them as) is uid and gid 1000, in a user
# namespace of the command's own, as in the sandbox. git compares owners
# (core.checkStat = default), and the workspace's index records the
# agent's, so only git run this way finds untouched files unchanged
# without reading them; git run as the host user reads them once.
agent_prefix() {
        local u g
        u=$(stat -c %u "$1")
        g=$(stat -c %g "$1")
        if [ "$(id -u)" = 0 ] && [ "$u" != 0 ]; then
                AGENT=(env HOME=/nonexistent python3 "$(dirname "${BASH_SOURCE[0]}")/as-agent.py" "$u" "$g")
        elif [ "$(id -u)" != 0 ]; then
                AGENT=(env HOME=/nonexistent unshare --map-user=1000 --map-group=1000 --)
        else
                AGENT=(env)
        fi
}

# check_no_data_read NAME DIR CMD...: CMD opens no work tree file in DIR.
check_no_data_read() {
        local name=$1 dir=$2 out rc
        shift 2
        out=$(worktree_files_opened_by "$dir" "$@")
        rc=$?
        if [ $rc -eq 77 ]; then
                TAP_N=$((TAP_N + 1))
                echo "ok $TAP_N - $name # SKIP strace is not available"
        else
                expect_eq "$name" "" "$out"
        fi
}
