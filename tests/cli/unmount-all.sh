#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cloister unmount --all` stops every mounted workspace this user knows at
# once, and each daemon's journal keeps what it wrote (issue 48).
set -u
: "${CLOISTER:?CLOISTER must name the cloister binary}"
. "${CLOISTER_SRC:-$(dirname "$0")/../..}/tests/cli/lib.sh"
need_root_fuse "FUSE mounts"

T=$(mktemp -d /tmp/cloister-unmount-all.XXXXXX)
cleanup() {
        for c in "$T"/ws-*.ini; do
                [ -e "$c" ] && timeout 60 "$CLOISTER" unmount "$c" >/dev/null 2>&1
        done
        unmount_under "$T"
        rm -rf "$T"
}
trap cleanup EXIT
export XDG_CONFIG_HOME=$T/config XDG_STATE_HOME=$T/state HOME=$T/home
mkdir -p "$HOME"
repo_new "$T/src"
for i in 1 2 3 4 5; do
        printf '[workspace]\nname = w%s\nstate = %s\nmountpoint = %s\n[repo]\nsource = %s\n' \
                "$i" "$T/state-$i" "$T/mnt-$i" "$T/src" >"$T/ws-$i.ini"
        "$CLOISTER" mount "$T/ws-$i.ini" >/dev/null 2>&1 || ok 1 "mount $i"
done
echo "w3's work" >"$T/mnt-3/workspace/new.txt"
# Each workspace's own mount (its parts are mounts of their own below it).
live=$(awk -v t="$T" 'index($5, t "/") == 1 && substr($5, length(t) + 2) ~ /^mnt-[0-9]+$/' \
        /proc/self/mountinfo | wc -l)
ok $([ "$live" = 5 ] && echo 0 || echo 1) "five_workspaces_serve" "$live mounted"

out=$("$CLOISTER" unmount --all 2>&1)
ok $? "unmount_all_succeeds" "$out"
left=$(awk -v t="$T" 'index($5, t "/") == 1' /proc/self/mountinfo | wc -l)
ok $([ "$left" = 0 ] && echo 0 || echo 1) "and_leaves_none_mounted" "$left still mounted"
alive=0
for i in 1 2 3 4 5; do
        [ -f "$T/state-$i/mount.pid" ] && kill -0 "$(cat "$T/state-$i/mount.pid")" 2>/dev/null &&
                alive=$((alive + 1))
done
ok $([ "$alive" = 0 ] && echo 0 || echo 1) "and_no_daemon_is_left" "$alive alive"
# Nothing lost: the work is there when it mounts again.
"$CLOISTER" mount "$T/ws-3.ini" >/dev/null 2>&1
out=$(cat "$T/mnt-3/workspace/new.txt" 2>&1)
ok $([ "$out" = "w3's work" ] && echo 0 || echo 1) "and_each_workspace_keeps_its_work" "$out"
grep -q '"new.txt"\|new.txt' "$T/state-3/journal.jsonl"
ok $? "and_its_journal_the_write" "$(tail -3 "$T/state-3/journal.jsonl")"
"$CLOISTER" unmount "$T/ws-3.ini" >/dev/null 2>&1
out=$("$CLOISTER" unmount --all 2>&1)
ok $? "with_nothing_mounted_it_succeeds_too" "$out"

echo "1..$n"
[ "$fails" = 0 ]
