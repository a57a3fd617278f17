#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Whole-program tests of `cloister mount`: the synthetic root, the git
# lower, copy-on-write writes, persistence across remount and SIGKILL.
. "$(dirname "$0")/lib.sh"

make_repo "$T/repo"
src_sum() { (cd "$T/repo" && git status --porcelain && git rev-parse HEAD && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum); }
before=$(src_sum)
C=$(make_config ws "$T/repo")
M=$(mnt_of "$C")
S=$(state_of "$C")

check mount_returns_zero_once_serving do_mount "$C"
check mount_root_has_workspace_home_and_control test -d "$M/workspace" -a -d "$M/home/agent" -a -d "$M/.cloister"
check mount_root_is_read_only bash -c "! touch '$M/x' 2>/dev/null && ! mkdir '$M/y' 2>/dev/null"
check second_mount_exits_3 bash -c "'$CLOISTER' mount '$C' 2>/dev/null; [ \$? = 3 ]"
check lower_file_reads_its_content bash -c "[ \"\$(cat '$M/workspace/README')\" = hello ]"
check lower_listing_matches_the_tree bash -c "[ \"\$(ls -A '$M/workspace' | tr '\n' ' ')\" = '.git README docs empty-later link run.sh src ' ]"
check git_status_is_clean_right_after_mount bash -c "[ -z \"\$(git -C '$M/workspace' status --porcelain)\" ]"
check lower_symlink_reads_its_target bash -c "[ \"\$(readlink '$M/workspace/link')\" = src/main.c ]"
check lower_exec_bit_is_kept test -x "$M/workspace/run.sh"
check lower_mtime_is_commit_time bash -c "[ \"\$(stat -c %Y '$M/workspace/README')\" = 1704164645 ]"
check lower_size_matches_blob bash -c "[ \"\$(stat -c %s '$M/workspace/src/main.c')\" = \"\$(stat -c %s '$T/repo/src/main.c')\" ]"
check write_to_lower_file_copies_up bash -c "echo more >>'$M/workspace/README' && [ \"\$(cat '$M/workspace/README')\" = \"\$(printf 'hello\nmore')\" ]"
check new_file_is_created bash -c "echo new >'$M/workspace/new.txt' && [ \"\$(cat '$M/workspace/new.txt')\" = new ]"
check unlink_lower_file_hides_it bash -c "rm '$M/workspace/docs/guide.md' && [ ! -e '$M/workspace/docs/guide.md' ] && [ -z \"\$(ls -A '$M/workspace/docs')\" ]"
check mkdir_and_rmdir_work bash -c "mkdir '$M/workspace/d' && rmdir '$M/workspace/d' && [ ! -e '$M/workspace/d' ]"
check rmdir_with_hidden_lower_entries_is_enotempty bash -c "! rmdir '$M/workspace/src' 2>/dev/null && [ -e '$M/workspace/src/main.c' ]"
check rename_lower_dir_moves_its_content bash -c "mv '$M/workspace/src' '$M/workspace/source' && [ \"\$(cat '$M/workspace/source/lib/a.c')\" = lib ] && [ ! -e '$M/workspace/src' ]"
# Sidecars are replaced by exchange + unlink (fs/core/upper.c): no temporary stays.
check sidecar_saves_leave_no_temporary bash -c "grep -q guide.md '$S/fs/repo/docs/.cloister~meta' && [ -z \"\$(find '$S/fs' -name '.cloister~meta.tmp')\" ]"
check fsync_and_fsyncdir_sync_the_sidecar python3 -c "import os; os.fsync(os.open('$M/workspace/docs', os.O_RDONLY)); os.fsync(os.open('$M/workspace/README', os.O_WRONLY | os.O_APPEND))"
check ino_is_stable_across_copy_up bash -c "i=\$(stat -c %i '$M/workspace/run.sh'); chmod 700 '$M/workspace/run.sh'; [ \"\$(stat -c %i '$M/workspace/run.sh')\" = \"\$i\" ]"
check wh_named_file_is_an_ordinary_file bash -c "echo a >'$M/workspace/.wh.README' && [ -e '$M/workspace/README' ] && [ \"\$(cat '$M/workspace/.wh.README')\" = a ]"
check reserved_prefix_name_is_escaped bash -c "echo b >'$M/workspace/.cloister~meta' && [ \"\$(cat '$M/workspace/.cloister~meta')\" = b ] && ls -A '$M/workspace' | grep -qx '.cloister~meta'"
check workspace_json_names_the_workspace bash -c "grep -q '\"name\":\"ws\"' '$M/.cloister/workspace'"
check changes_lists_the_new_file bash -c "grep -q '\"path\":\"/workspace/new.txt\",\"type\":\"file\"' '$M/.cloister/changes'"
check changes_lists_the_deleted_file bash -c "grep -q '\"path\":\"/workspace/docs/guide.md\",\"type\":\"deleted\"' '$M/.cloister/changes'"
ln "$M/workspace/new.txt" "$M/workspace/new.link"
# (d above was made and removed at once: the journal may sum it up as transient.)
mkdir "$M/workspace/kept"
J=$S/journal.jsonl
check journal_records_the_create journal_has '"op":"create","path":"/workspace/new.txt"' "$J"
check journal_records_writes_with_their_size journal_has '"op":"write","path":"/workspace/README","offset":6,"length":5' "$J"
check journal_records_the_unlink journal_has '"op":"unlink","path":"/workspace/docs/guide.md"' "$J"
check journal_records_the_rename journal_has '"op":"rename","path":"/workspace/src","path2":"/workspace/source"' "$J"
check journal_records_the_link journal_has '"op":"link","path":"/workspace/new.txt","path2":"/workspace/new.link"' "$J"
check journal_records_the_caller journal_has '"op":"mkdir","path":"/workspace/kept",.*"comm":"mkdir"' "$J"
ino_readme=$(stat -c %i "$M/workspace/README")
check unmount_returns_zero do_unmount "$C"
check unmount_when_not_mounted_returns_zero do_unmount "$C"
check remount_succeeds do_mount "$C"
check changes_persist_across_remount bash -c "[ \"\$(cat '$M/workspace/new.txt')\" = new ] && [ ! -e '$M/workspace/docs/guide.md' ] && [ -d '$M/workspace/source/lib' ] && [ ! -e '$M/workspace/src' ]"
check ino_is_stable_across_remount bash -c "[ \"\$(stat -c %i '$M/workspace/README')\" = '$ino_readme' ]"
echo after-kill >"$M/workspace/killed.txt"
kill -9 "$(cat "$S/mount.pid")"
sleep 0.2
# A later process that reuses the dead daemon's pid (and is even named
# cloister) must not be taken for it, nor be signalled by unmount.
cp /bin/sleep "$T/cloister"
"$T/cloister" 300 &
imposter=$!
echo "$imposter" >"$S/mount.pid"
check mount_after_sigkill_succeeds do_mount "$C"
check reused_pid_is_not_signalled_by_unmount kill -0 "$imposter"
check writes_before_sigkill_survive bash -c "[ \"\$(cat '$M/workspace/killed.txt')\" = after-kill ]"
sleep 600 <"$M/workspace/README" &
holder=$!
check unmount_with_an_open_file_succeeds do_unmount "$C"
check imposter_survives_unmount kill -0 "$imposter"
kill "$imposter"
wait "$imposter" 2>/dev/null
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
check daemon_is_gone_after_unmount bash -c "[ ! -e '$S/mount.pid' ] && ! grep -q ' $M ' /proc/self/mounts"
echo moved >"$T/repo/README"
git_quiet -C "$T/repo" commit -am "move HEAD"
check mount_after_source_head_moved do_mount "$C"
check base_revision_stays_pinned_to_the_first_mount bash -c "[ ! -e '$M/workspace/src' ] && [ \"\$(head -1 '$M/workspace/README')\" = hello ]"
check unmount_after_head_moved do_unmount "$C"
git_quiet -C "$T/repo" reset --hard HEAD~1
after=$(src_sum)
check source_repo_is_untouched test "$after" = "$before"
# cloister run and a self-mounting cloister diff start the daemon as
# /proc/self/exe, whose name is "exe": a later mount must still see it as
# alive, not detach its mount and stack a second daemon on the same state.
mkdir "$T/exe-dir" && ln -s "$CLOISTER" "$T/exe-dir/exe"
"$T/exe-dir/exe" mount "$C" >/dev/null 2>&1
first=$(cat "$S/mount.pid" 2>/dev/null)
check daemon_started_as_exe_names_itself bash -c "[ \"\$(cat /proc/$first/comm)\" = cloister-fs ]"
check mount_over_a_daemon_started_as_exe_exits_3 bash -c "'$CLOISTER' mount '$C' 2>/dev/null; [ \$? = 3 ] && [ \"\$(cat '$S/mount.pid')\" = '$first' ] && kill -0 '$first' && [ \"\$(grep -c ' $M ' /proc/self/mounts)\" = 1 ]"
check unmount_of_a_daemon_started_as_exe do_unmount "$C"
# Bad input: a clear one-line error, exit 1, nothing mounted.
one_line_fail() { # NAME REGEX CONFIG
        local out rc
        out=$("$CLOISTER" mount "$3" 2>&1)
        rc=$?
        if [ "$rc" = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && grep -Eq -- "$2" <<<"$out" &&
                ! grep -q " $(mnt_of "$3") " /proc/self/mounts; then ok 0 "$1"; else
                echo "# rc=$rc: $out"
                ok 1 "$1"
        fi
}
one_line_fail missing_source_is_a_one_line_error "cannot open.*$T/nope" "$(make_config bad1 "$T/nope")"
one_line_fail unknown_revision_is_a_one_line_error "revision 'no-such-rev'" "$(make_config bad2 "$T/repo" "rev = no-such-rev")"
one_line_fail missing_mirror_source_names_file_and_line "config.ini:[0-9]+: \\[mirror \"m\"\\] source '$T/nomirror'" \
        "$(make_config bad3 "$T/repo" "
[mirror \"m\"]
source = $T/nomirror
path = /opt/m")"
finish
