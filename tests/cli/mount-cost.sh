#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What one more mount costs does not grow with the workspaces already live
# (issue 48): the system calls of one `cloister mount` with 50 workspaces
# mounted and with 200 are the same. The host uid's process check asks the
# kernel about that uid, not every /proc/PID/status; the mountpoint's
# checks ask about the mounts above the path, not every line of
# /proc/self/mountinfo. Counts calls with strace (no timing). Reads of
# /dev/fuse (the daemon serving this test's own checks) are left out: how
# many there are depends on when the test looks. The list of remembered
# configs ($XDG_STATE_HOME/cloister/configs) is asked through its index
# (mounts/known.c), not read whole: its reads count.
set -u
: "${CLOISTER:?CLOISTER must name the cloister binary}"
. "${CLOISTER_SRC:-$(dirname "$0")/../..}/tests/cli/lib.sh"
need_root_fuse "FUSE mounts, host uid reservations"
command -v strace >/dev/null || skip_all "strace is not installed"

T=$(mktemp -d /tmp/cloister-mount-cost.XXXXXX)
base=0
cleanup() {
        "$CLOISTER" unmount --all >/dev/null 2>&1
        [ -e "$T/one.ini" ] && timeout 60 "$CLOISTER" unmount "$T/one.ini" >/dev/null 2>&1
        unmount_under "$T"
        rm -f "/run/cloister/host-uids/.next-$base-$((base + 999))"
        rm -rf "$T"
}
trap cleanup EXIT
export XDG_CONFIG_HOME=$T/config XDG_STATE_HOME=$T/state HOME=$T/home
mkdir -p "$HOME"
repo_new "$T/src"
ws() { # ws NAME: a workspace of its own, its config's path on stdout
        printf '[workspace]\nname = %s\nstate = %s\nmountpoint = %s\n[repo]\nsource = %s\n' \
                "$1" "$T/state-$1" "$T/mnt-$1" "$T/src" >"$T/$1.ini"
        echo "$T/$1.ini"
}
live=0
mount_up_to() { # mount_up_to N: N workspaces live
        for ((; live < $1; live++)); do
                "$CLOISTER" mount "$(ws "w$live")" >"$T/err" 2>&1 || {
                        echo "Bail out! mount $live: $(head -1 "$T/err")"
                        exit 1
                }
        done
}
# calls: "OPENAT READ" of one more mount (served, then unmounted).
calls() {
        strace -f -y -qq -o "$T/trace" -e trace=openat,read "$CLOISTER" mount --foreground \
                "$T/one.ini" >/dev/null 2>"$T/err" &
        local s=$!
        for ((i = 0; i < 600; i++)); do
                mountpoint -q "$T/mnt-one" && break
                sleep 0.1
        done
        "$CLOISTER" unmount "$T/one.ini" >/dev/null 2>&1
        wait $s
        awk '/ openat\(/ { o++ } / read\(/ && !/<\/dev\/fuse>/ { r++ }
             END { print o + 0, r + 0 }' "$T/trace"
}
ws one >/dev/null
# The measured mount takes its uid from a range of its own, far from the default one (that
# of the 200) and from other tests': each time the same uid, after the same candidates.
base=$((2147000000 + ($$ % 400) * 1000))
printf '[run]\nhost_uids = %d-%d\n' "$base" $((base + 999)) >>"$T/one.ini"
mount_up_to 50
calls >/dev/null # the first: remembered, recorded, its uid's hint moved
read -r open50 read50 < <(calls)
mount_up_to 200
read -r open200 read200 < <(calls)
echo "# openat calls: $open50 with 50 live, $open200 with 200; reads: $read50 and $read200"
[ "$open50" -gt 0 ] && [ "$open200" -le "$open50" ]
ok $? "one_more_mount_opens_no_more_files_with_200_live_than_with_50" \
        "openat calls: $open50 with 50 live, $open200 with 200"
[ "$read50" -gt 0 ] && [ "$read200" -le "$read50" ]
ok $? "one_more_mount_reads_no_more_with_200_live_than_with_50" \
        "read calls (but /dev/fuse): $read50 with 50 live, $read200 with 200"
echo "1..$n"
[ "$fails" = 0 ]
