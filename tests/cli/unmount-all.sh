#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cloister unmount --all` stops every mounted workspace this user knows at
# once, and each daemon's journal keeps what it wrote (issue 48).
set -u
: "${CLOISTER:?CLOISTER must name the cloister binary}"
n=0
fails=0
ok() { # ok STATUS NAME [WHY]
        n=$((n + 1))
        if [ "$1" = 0 ]; then echo "ok $n - $2"; else
                echo "not ok $n - $2"
                [ -n "${3:-}" ] && printf '%s\n' "$3" | head -20 | sed 's/^/# /'
                fails=$((fails + 1))
        fi
}
skip_all() {
        echo "1..0 # SKIP $1"
        exit 77
}
[ "$(id -u)" = 0 ] || skip_all "needs root (FUSE mounts)"
[ -e /dev/fuse ] || skip_all "FUSE is not available (/dev/fuse missing)"

T=$(mktemp -d /tmp/cloister-unmount-all.XXXXXX)
cleanup() {
        for c in "$T"/ws-*.ini; do
                [ -e "$c" ] && timeout 60 "$CLOISTER" unmount "$c" >/dev/null 2>&1
        done
        awk -v t="$T" 'index($5, t "/") == 1 {print $5}' /proc/self/mountinfo | sort -r |
                while read -r m; do umount -l "$m"; done
        rm -rf "$T"
}
trap cleanup EXIT
export XDG_CONFIG_HOME=$T/config XDG_STATE_HOME=$T/state HOME=$T/home
mkdir -p "$T/src" "$HOME"
git init -q -b main "$T/src"
echo a >"$T/src/a.txt"
git -C "$T/src" add -A
git -C "$T/src" -c user.name=t -c user.email=t@example.com commit -qm base
for i in 1 2 3 4 5; do
        printf '[workspace]\nname = w%s\nstate = %s\nmountpoint = %s\n[repo]\nsource = %s\n' \
                "$i" "$T/state-$i" "$T/mnt-$i" "$T/src" >"$T/ws-$i.ini"
        "$CLOISTER" mount "$T/ws-$i.ini" >/dev/null 2>&1 || ok 1 "mount $i"
done
echo "w3's work" >"$T/mnt-3/workspace/new.txt"
live=$(awk -v t="$T" 'index($5, t "/") == 1' /proc/self/mountinfo | wc -l)
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
