#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# index-deferred.sh: the workspace .git/index is built after the mount
# serves (fs/core/gitindex.c). A lookup of it waits until it is in place, so git
# never sees an empty index; it is built once per state, survives remounts,
# is not rebuilt after the agent deletes it, and is rebuilt after a daemon
# killed before finishing it.
set -u
. "$(dirname "$0")/lib.sh"

CLOISTER=${CLOISTER:?CLOISTER must point at the cloister binary}
need_mount

tmp=$(mktemp -d)
cleanup() {
        local c
        for c in "$tmp"/*.ini; do
                [ -f "$c" ] && force_unmount "$c" "${c%.ini}.mnt"
        done
        rm -rf "$tmp"
}
trap cleanup EXIT
git_isolate "$tmp/home"
mkdir -p "$tmp/home"

# 20,000 files in 200 directories.
R=$tmp/source
git init -q -b main "$R"
for d in $(seq -w 0 199); do
        mkdir "$R/d$d"
        (cd "$R/d$d" && touch $(seq -f 'f%03g' 0 99))
done
echo "first" >"$R/d000/f000"
git -C "$R" add -A
git -C "$R" commit -qm big
src_before=$(tree_sum "$R")

ws() { # ws NAME: a config for a fresh state
        cat >"$tmp/$1.ini" <<EOF
[workspace]
name = $1
state = $tmp/$1.state
mountpoint = $tmp/$1.mnt

[repo]
source = $R
EOF
}

# --- lookups wait while the index is being built -------------------------------
ws a
check mount_returns_while_the_index_is_built \
        env CLOISTER_TEST_INDEX_DELAY_MS=1500 "$CLOISTER" mount "$tmp/a.ini"
W=$tmp/a.mnt/workspace
check marker_is_absent_while_building test ! -e "$tmp/a.state/fs/gitdir-index-done"
check head_is_there_at_once test -f "$W/.git/HEAD"
check index_lookup_waits_until_it_exists test -f "$W/.git/index"
check marker_is_written_once_built test -f "$tmp/a.state/fs/gitdir-index-done"
expect_eq index_has_every_file 20000 "$(git -C "$W" ls-files | wc -l)"
expect_eq status_is_clean "" "$(git -C "$W" status --porcelain 2>&1)"
check no_temporary_file_is_left \
        sh -c "! ls -a '$tmp/a.state/fs/repo/.git' | grep -v '^\.cloister~meta$' | grep -q '^\.cloister~'"
echo "second" >"$W/d000/f000"
expect_eq status_sees_an_edit " M d000/f000" "$(git -C "$W" status --porcelain 2>&1)"

# --- built once: the agent's own index is kept, a deleted one stays deleted ---
check add_writes_the_agents_index git -C "$W" add d000/f000
check unmount_succeeds "$CLOISTER" unmount "$tmp/a.ini"
check remount_succeeds "$CLOISTER" mount "$tmp/a.ini"
expect_eq agents_index_survives_remount "M  d000/f000" "$(git -C "$W" status --porcelain 2>&1)"
rm -f "$W/.git/index"
check unmount_after_delete_succeeds "$CLOISTER" unmount "$tmp/a.ini"
check remount_after_delete_succeeds "$CLOISTER" mount "$tmp/a.ini"
check deleted_index_is_not_rebuilt test ! -e "$W/.git/index"
check final_unmount_succeeds "$CLOISTER" unmount "$tmp/a.ini"

# --- a daemon killed before the index is done: the next mount builds it ---------
ws b
check mount_b_succeeds env CLOISTER_TEST_INDEX_DELAY_MS=5000 "$CLOISTER" mount "$tmp/b.ini"
pid=$(cat "$tmp/b.state/mount.pid" 2>/dev/null)
check daemon_pid_is_recorded test -n "$pid"
kill -KILL "$pid" 2>/dev/null
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
fusermount3 -u -z "$tmp/b.mnt" >/dev/null 2>&1
check killed_daemon_left_no_index test ! -e "$tmp/b.state/fs/repo/.git/index"
check remount_after_kill_succeeds "$CLOISTER" mount "$tmp/b.ini"
expect_eq index_is_rebuilt_after_kill 20000 "$(git -C "$tmp/b.mnt/workspace" ls-files | wc -l)"
expect_eq status_is_clean_after_kill "" \
        "$(git -C "$tmp/b.mnt/workspace" status --porcelain 2>&1)"
check unmount_b_succeeds "$CLOISTER" unmount "$tmp/b.ini"

expect_eq source_is_unchanged "$src_before" "$(tree_sum "$R")"
finish
