# SPDX-License-Identifier: MIT
# lib.sh: shared by the fs TAP tests. Makes a scratch dir, a real git repo
# and a workspace config; mounts with the real binary; unmounts and kills
# every daemon it started in every outcome (trap EXIT).
set -u
umask 022

: "${CLOISTER:?set by meson}" "${CLOISTER_SRC:?set by meson}"

skip_all() {
        echo "1..0 # SKIP $*"
        exit 77
}

[ "$(id -u)" = 0 ] || skip_all "needs root for FUSE mounts"
[ -c /dev/fuse ] || skip_all "no /dev/fuse"
command -v git >/dev/null || skip_all "no git"

T=$(mktemp -d /tmp/cloister-fs.XXXXXX)
n=0
fails=0
CONFIGS=()

cleanup() {
        local c
        for c in "${CONFIGS[@]}"; do
                "$CLOISTER" unmount "$c" >/dev/null 2>&1 || true
        done
        # Anything still mounted under T (a test that failed half-way).
        grep -o " $T[^ ]*" /proc/self/mounts 2>/dev/null | sort -r | while read -r m; do
                umount -l "$m" 2>/dev/null || true
        done
        for p in "$T"/*/state/mount.pid; do
                [ -f "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
        done
        # After every mount of ours is gone: the kernel's setting as it was.
        [ -z "$URING_OLD" ] || echo "$URING_OLD" >"$URING_PARAM" 2>/dev/null
        rm -rf "$T"
}
trap cleanup EXIT

# uring_on: FUSE over io_uring on in the kernel for the rest of this test
# (enable_uring, which no product code changes), turned back to what it
# was on every way out: exit, an error, or a signal (meson's timeout sends
# SIGTERM), each of which ends in the EXIT trap. Affects every FUSE mount
# made meanwhile: such tests are is_parallel: false. Skips (77) where the
# kernel has no such parameter or it cannot be set here.
URING_PARAM=/sys/module/fuse/parameters/enable_uring
URING_OLD=
uring_on() {
        [ -e "$URING_PARAM" ] || skip_all "the kernel has no FUSE over io_uring (no $URING_PARAM)"
        local old
        old=$(cat "$URING_PARAM") || skip_all "cannot read $URING_PARAM"
        trap 'exit 129' HUP
        trap 'exit 130' INT
        trap 'exit 143' TERM
        URING_OLD=$old
        echo Y >"$URING_PARAM" 2>/dev/null || skip_all "cannot turn on $URING_PARAM"
        [ "$(cat "$URING_PARAM")" = Y ] || skip_all "$URING_PARAM stays $(cat "$URING_PARAM")"
}

# uring_cqes PID: completions all of the daemon's io_uring rings have had
# (their fdinfo's CqTail): grows while requests are served over the rings.
uring_cqes() {
        local f fd sum=0 v
        for f in /proc/"$1"/fd/*; do
                [ "$(readlink "$f")" = "anon_inode:[io_uring]" ] || continue
                fd=${f##*/}
                v=$(awk '$1 == "CqTail:" { print $2 }' "/proc/$1/fdinfo/$fd")
                sum=$((sum + ${v:-0}))
        done
        echo "$sum"
}

# uring_rings PID: how many io_uring rings the daemon holds; "none" if PID is
# no live process (so that a count of 0 says something).
uring_rings() {
        local f k=0
        [ -n "$1" ] && [ -d "/proc/$1/fd" ] || { echo none; return; }
        for f in /proc/"$1"/fd/*; do
                [ "$(readlink "$f")" = "anon_inode:[io_uring]" ] && k=$((k + 1))
        done
        echo "$k"
}

ok() { # ok STATUS NAME
        n=$((n + 1))
        if [ "$1" = 0 ]; then echo "ok $n - $2"; else
                echo "not ok $n - $2"
                fails=$((fails + 1))
        fi
}

skip() { # skip NAME REASON: a test this machine can't run, and why
        n=$((n + 1))
        echo "ok $n - $1 # SKIP $2"
}
check() { # check NAME COMMAND...: passes when the command succeeds
        local name=$1
        shift
        if "$@" >"$T/.out" 2>&1; then ok 0 "$name"; else
                sed 's/^/# /' "$T/.out" | head -20
                ok 1 "$name"
        fi
}

# journal_has PATTERN FILE: the journal has a line matching PATTERN (grep).
# Creates and writes are held for up to 200 ms before they are written (the
# journal's compaction); a loaded machine may be later: wait up to 20 s.
journal_has() {
        local i
        for i in $(seq 200); do
                grep -q -- "$1" "$2" && return 0
                sleep 0.1
        done
        echo "no line matches $1 in $2"
        return 1
}

finish() {
        local c logs=""
        for c in "${CONFIGS[@]}"; do
                "$CLOISTER" unmount "$c" >/dev/null 2>&1
                [ -f "$(state_of "$c")/fs/daemon.log" ] && logs="$logs $(state_of "$c")/fs/daemon.log"
        done
        # The daemons' own stderr: sanitizer reports land there, not in the test's output.
        if [ -n "$logs" ] && grep -hE -A12 'ERROR: AddressSanitizer|runtime error:|LeakSanitizer|WARNING: ThreadSanitizer' $logs >"$T/.san"; then
                sed "s/^/# /" "$T/.san" | head -60
                ok 1 "daemons_report_no_sanitizer_errors"
        else
                ok 0 "daemons_report_no_sanitizer_errors"
        fi
        echo "1..$n"
        [ "$fails" = 0 ]
}

git_quiet() { git -c user.name=t -c user.email=t@e -c init.defaultBranch=main "$@" >/dev/null 2>&1; }

# make_repo DIR: a small git repo with files, dirs, an executable, a symlink.
make_repo() {
        local d=$1
        mkdir -p "$d"
        git_quiet -C "$d" init
        mkdir -p "$d/src/lib" "$d/docs" "$d/empty-later"
        echo "hello" >"$d/README"
        printf 'int main(void) { return 0; }\n' >"$d/src/main.c"
        printf 'lib\n' >"$d/src/lib/a.c"
        printf 'lib b\n' >"$d/src/lib/b.c"
        echo "doc" >"$d/docs/guide.md"
        echo "x" >"$d/empty-later/only"
        printf '#!/bin/sh\necho run\n' >"$d/run.sh"
        chmod 755 "$d/run.sh"
        ln -s src/main.c "$d/link"
        git_quiet -C "$d" add -A
        GIT_COMMITTER_DATE="2024-01-02T03:04:05Z" GIT_AUTHOR_DATE="2024-01-02T03:04:05Z" \
                git_quiet -C "$d" commit -m init
}

# make_config NAME SOURCE [EXTRA-INI]: prints the config path; state in $T/NAME/state
make_config() {
        local name=$1 src=$2 extra=${3:-}
        local dir="$T/$name"
        mkdir -p "$dir"
        cat >"$dir/config.ini" <<INI
[workspace]
name = $name
state = $dir/state
mountpoint = $dir/mnt

[repo]
source = $src
$extra
INI
        CONFIGS+=("$dir/config.ini")
        echo "$dir/config.ini"
}

mnt_of() { echo "$(dirname "$1")/mnt"; }
state_of() { echo "$(dirname "$1")/state"; }

# layer_dir CONFIG CHECKPOINT: the host dir of the checkpoint's top frozen layer
layer_dir() {
        python3 -c '
import json, os, sys
st = sys.argv[1]
l = json.load(open(st + "/fs/layers.json"))
cp = [c for c in l["checkpoints"] if c["name"] == sys.argv[2]][0]
ref = l["layers"][cp["stack"][-1]]
print(os.path.join(ref.get("state", st), ref["dir"]))' "$(state_of "$1")" "$2"
}

# fds_of PID: the descriptors process PID holds
fds_of() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# mount_nofile CONFIG LIMIT: mount with RLIMIT_NOFILE at LIMIT (soft and
# hard), check that the daemon runs under it, and set NOFILE_PID to it.
mount_nofile() {
        check mount_under_a_low_nofile prlimit --nofile="$2:$2" "$CLOISTER" mount "$1"
        NOFILE_PID=$(cat "$(state_of "$1")/mount.pid" 2>/dev/null)
        same daemon_runs_under_the_limit \
                "$(awk '/^Max open files/ { print $4, $5 }' "/proc/$NOFILE_PID/limits")" "$2 $2"
}

do_mount() { "$CLOISTER" mount "$1"; }
do_unmount() { "$CLOISTER" unmount "$1"; }

# expect_errno NAME ERRNO COMMAND...: the probe must fail with exactly ERRNO (or OK).
expect_errno() {
        local name=$1 want=$2 got
        shift 2
        got=$("$@" 2>&1 | tail -1)
        if [ "$got" = "$want" ]; then ok 0 "$name"; else
                echo "# want $want, got $got: $*"
                ok 1 "$name"
        fi
}

# same NAME A B: two strings must be equal
same() {
        if [ "$2" = "$3" ]; then ok 0 "$1"; else
                echo "# got:  $2"
                echo "# want: $3"
                ok 1 "$1"
        fi
}
