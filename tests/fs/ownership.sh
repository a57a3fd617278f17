#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A mountpoint belongs to one workspace: a second config (another name,
# another state) that names a live mount of the first as its mountpoint is
# refused by mount, run and diff, naming the owner, and its writes never
# land in the first's work; a dead mount of another workspace is never
# detached; two daemons never serve one state; a mountpoint inside a
# cloister mount, inside another workspace's state, inside the source
# repository (also through a symlink) or in a non-empty directory is
# refused.
. "$(dirname "$0")/lib.sh"

git init -q "$T/src"
echo base >"$T/src/file"
git -C "$T/src" add file
git -C "$T/src" -c user.name=t -c user.email=t@t commit -qm base

A=$(make_config wsa "$T/src")
B=$(make_config wsb "$T/src")
sed -i "s|^mountpoint = .*|mountpoint = $(mnt_of "$A")|" "$B"
check mount_the_first_workspace do_mount "$A"
echo "a's work" >"$(mnt_of "$A")/workspace/file"
before=$("$CLOISTER" diff "$A")

out=$("$CLOISTER" mount "$B" 2>&1)
same a_second_workspace_may_not_mount_on_a_live_mount_of_the_first "$?" 1
case $out in *"is the mount of another workspace ('wsa')"*) ok 0 the_refusal_names_the_owner ;;
*) echo "# $out"; ok 1 the_refusal_names_the_owner ;; esac
out=$("$CLOISTER" run "$B" -- sh -c 'echo b >/workspace/file' 2>&1)
same a_run_on_another_workspaces_mount_is_refused "$?" 125
same and_writes_nothing_there "$(cat "$(mnt_of "$A")/workspace/file")" "a's work"
"$CLOISTER" diff "$B" >/dev/null 2>&1
same diff_of_the_second_does_not_show_the_firsts_work "$?" 1
same the_firsts_diff_is_unchanged "$("$CLOISTER" diff "$A")" "$before"

# Two daemons never serve one state, whatever mountpoint a config names.
C=$(make_config wsc "$T/src")
sed -i "s|^state = .*|state = $(state_of "$A")|" "$C"
out=$("$CLOISTER" mount "$C" 2>&1)
same a_second_daemon_for_a_served_state_is_refused "$?" 3
grep -q "(state '$(state_of "$A")') is already served by pid" <<<"$out"
ok $? the_refusal_names_the_state
# Without the pid file (removed by hand, or a race), the lock still holds.
mv "$(state_of "$A")/mount.pid" "$T/a.pid"
"$CLOISTER" mount --foreground "$C" >"$T/fg.out" 2>&1
same the_state_lock_refuses_a_daemon_the_pid_file_does_not_stop "$?" 1
mv "$T/a.pid" "$(state_of "$A")/mount.pid"
grep -q "is served by another daemon already" "$T/fg.out"
ok $? the_lock_refusal_says_why

# A's daemon dies: its dead mount is still A's, and B may not detach it.
kill -KILL "$(cat "$(state_of "$A")/mount.pid")"
for _ in $(seq 600); do kill -0 "$(cat "$(state_of "$A")/mount.pid")" 2>/dev/null || break; sleep 0.05; done
"$CLOISTER" mount "$B" >/dev/null 2>&1
same a_dead_mount_of_another_workspace_is_not_taken "$?" 1
grep -q " $(mnt_of "$A") fuse.cloister " /proc/self/mounts
ok $? and_is_not_detached
check its_own_workspace_cleans_it_up_and_mounts_again do_mount "$A"
check unmount_the_first do_unmount "$A"

# Places a mountpoint may not be.
check mount_again_for_the_places do_mount "$A"
D=$(make_config wsd "$T/src")
sed -i "s|^mountpoint = .*|mountpoint = $(mnt_of "$A")/workspace/inner|" "$D"
out=$("$CLOISTER" mount "$D" 2>&1)
same inside_a_cloister_mount_is_refused "$?:$(grep -c 'inside the mount of a workspace' <<<"$out")" "1:1"
E=$(make_config wse "$T/src")
sed -i "s|^mountpoint = .*|mountpoint = $(state_of "$A")/elsewhere|" "$E"
out=$("$CLOISTER" mount "$E" 2>&1)
same inside_another_workspaces_state_is_refused "$?:$(grep -c 'inside the state directory' <<<"$out")" "1:1"
ln -s "$T/src" "$T/srclink"
F=$(make_config wsf "$T/src")
sed -i "s|^mountpoint = .*|mountpoint = $T/srclink/mnt|" "$F"
out=$("$CLOISTER" mount "$F" 2>&1)
same inside_the_source_through_a_symlink_is_refused "$?:$(grep -c 'inside the source repository' <<<"$out")" "1:1"
[ ! -e "$T/src/mnt" ]
ok $? and_nothing_is_made_in_the_source
mkdir -p "$T/full"
echo keep >"$T/full/mine"
G=$(make_config wsg "$T/src")
sed -i "s|^mountpoint = .*|mountpoint = $T/full|" "$G"
out=$("$CLOISTER" mount "$G" 2>&1)
same a_non_empty_directory_is_refused "$?:$(grep -c 'is not empty' <<<"$out")" "1:1"
same and_its_files_stay_visible "$(cat "$T/full/mine")" keep
check unmount_at_the_end do_unmount "$A"
finish
