#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Taking a host uid for a mount does not try every held one in turn (issue
# 48): with 100 uids of the range held, a mount takes as many flocks as with
# none, once one mount found where the free ones start. Counts system calls with strace (no timing).
set -u
: "${CLOISTER:?CLOISTER must name the cloister binary}"
. "${CLOISTER_SRC:-$(dirname "$0")/../..}/tests/cli/lib.sh"
need_root_fuse "host uid reservations, FUSE"
command -v strace >/dev/null || skip_all "strace is not installed"
command -v flock >/dev/null || skip_all "flock(1) is not installed"

T=$(mktemp -d /tmp/cloister-hostid-scan.XXXXXX)
D=/run/cloister/host-uids
# A range of this test's own, far from the default one and the unit test's.
base=$((2146000000 + ($$ % 1000) * 1000))
holders=()
cleanup() {
        [ -e "$T/w.ini" ] && timeout 60 "$CLOISTER" unmount "$T/w.ini" >/dev/null 2>&1
        for p in "${holders[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        rm -f "$D"/.next-$base-$((base + 999))
        for ((i = 0; i < 100; i++)); do rm -f "$D/$((base + i))"; done
        rm -rf "$T"
}
trap cleanup EXIT
export XDG_CONFIG_HOME=$T/config XDG_STATE_HOME=$T/state
mkdir -p "$D"
repo_new "$T/src"
printf '[workspace]\nname = w\nstate = %s\nmountpoint = %s\n[repo]\nsource = %s\n[run]\nhost_uids = %d-%d\n' \
        "$T/state-w" "$T/mnt" "$T/src" "$base" $((base + 999)) >"$T/w.ini"

# flocks MOUNTS: the flock calls of one mount (served, then unmounted).
flocks() {
        strace -f -qq -c -o "$T/strace" -e trace=flock "$CLOISTER" mount --foreground "$T/w.ini" \
                >/dev/null 2>&1 &
        local s=$!
        for ((i = 0; i < 600; i++)); do
                mountpoint -q "$T/mnt" && break
                sleep 0.1
        done
        "$CLOISTER" unmount "$T/w.ini" >/dev/null 2>&1
        wait $s
        awk '$NF == "flock" { print $4 ~ /^[0-9]+$/ ? $4 : $3 }' "$T/strace"
}
flocks >/dev/null # the first: remembered, recorded
none=$(flocks)
for ((i = 0; i < 100; i++)); do
        # The holder is the sleep itself (its fd 9 holds the lock), apart from our output.
        (exec 9>"$D/$((base + i))" && flock -x 9 && exec sleep 3600) </dev/null >/dev/null 2>&1 &
        holders+=($!)
done
for ((i = 0; i < 100; i++)); do
        until ! flock -n -s "$D/$((base + i))" true; do sleep 0.05; done
done
flocks >/dev/null # walks past them once
held=$(flocks)
[ -n "$none" ] && [ "$none" = "$held" ]
ok $? "a_mount_takes_no_more_flocks_with_100_uids_held_than_with_none" \
        "flock calls: $none with none held, $held with 100 held"
echo "1..$n"
[ "$fails" = 0 ]
