#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checkpoints, forks and restores (docs/fs-design.md, "Layers, checkpoints
# and forks"), on real mounts: a checkpoint changes nothing the agent sees
# (not even an inode number or a ctime), mounted or not, with a writer and
# a reader busy; a fork shows its checkpoint and then goes its own way;
# whiteouts, opaque dirs, renamed dirs, xattrs, modes, times, sockets,
# FIFOs, open-but-removed files and the workspace .git behave across
# layers as in one; restore, delete and the depth bound do what the
# manual says; quotas count each layer once.
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"
command -v python3 >/dev/null || skip_all "no python3"

make_repo "$T/repo"
C=$(make_config ws "$T/repo" "
[limits]
bytes = 64M
files = 400
")
M=$(mnt_of "$C")
S=$(state_of "$C")
W=$M/workspace
G() { git -c safe.directory='*' -c user.name=t -c user.email=t@e "$@"; }

# snap DIR: what stat and read show of every entry but .git, owners as the
# mount's own (each workspace shows its agent as a uid of its own).
snap() {
        local a
        a=$(stat -c %u "$1")
        (cd "$1" && find . -path ./.git -prune -o -printf "%p %y %m %s %i %n %T@ ${NO_CTIME:-%C@} %U:%G %l\n" |
                sed "s/ $a:$a / AGENT:AGENT /" | sort &&
                find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 -r sha256sum &&
                python3 -c '
import os, sys
for root, dirs, files in os.walk("."):
    if root == ".":
        dirs[:] = [d for d in dirs if d != ".git"]
    for n in sorted(dirs + files):
        p = os.path.join(root, n)
        if os.path.islink(p):
            continue
        for x in sorted(os.listxattr(p)):
            print(p, x, os.getxattr(p, x))')
}
# rootless SNAP: without the root's ctime, which a fork or restore cannot keep
# (its writable layer's root is a new directory; docs/fs-design.md).
rootless() { sed -E 's/^(\. d .*) [0-9.]+ (AGENT:AGENT.*)$/\1 CTIME \2/' "$1"; }

check mount_ws do_mount "$C"
# Layer 1: every kind of entry, and changes to the base.
echo one >"$W/one.txt"
mkdir -p "$W/gone/sub" "$W/keep"
echo g >"$W/gone/sub/f"
echo kept >"$W/keep/k"
echo l1 >"$W/src/l1.c"
rm "$W/docs/guide.md"
ln -s one.txt "$W/sym"
"$FSPROBE" mknod "$W/fifo" fifo >/dev/null
"$FSPROBE" mknod "$W/sock" sock >/dev/null
"$FSPROBE" setxattr "$W/one.txt" user.colour blue >/dev/null
"$FSPROBE" setxattr "$W/keep" user.dir yes >/dev/null
echo setid >"$W/setid"
chmod 6755 "$W/setid"
mkdir "$W/sticky" && chmod 1777 "$W/sticky"
touch -d '2001-02-03 04:05:06' "$W/keep/k"
chmod 600 "$W/README"
G -C "$W" add -A >/dev/null && G -C "$W" commit -qm layer1
# A checkpoint while mounted, with a writer and a reader busy.
exec 7>>"$W/log.txt"
echo before >&7
exec 8<"$W/one.txt"
snap "$W" >"$T/a.snap"
check checkpoint_while_mounted_exits_0 "$CLOISTER" checkpoint "$C" c1
echo after >&7
exec 7>&-
same read_through_a_handle_opened_before_works "$(cat <&8)" one
exec 8<&-
same write_after_the_checkpoint_lands_on_the_open_file "$(cat "$W/log.txt")" "$(printf 'before\nafter')"
same frozen_layer_keeps_the_file_as_it_was "$(cat "$(layer_dir "$C" c1)/log.txt")" before
snap "$W" | grep -v 'log.txt' >"$T/a2.snap"
# (the root's ctime aside: the copy of the open log.txt is made in the new
# layer's root, a new directory, whose ctime the kernel shows once its
# attribute cache of the root expires; docs/fs-design.md)
check checkpoint_changes_nothing_the_agent_sees diff <(grep -v log.txt "$T/a.snap" | rootless /dev/stdin) <(rootless "$T/a2.snap")
same git_sees_nothing_but_the_new_file "$(G -C "$W" status --porcelain)" "?? log.txt"

# Layer 2: delete and move across layers.
rm -rf "$W/gone"
rm "$W/README"
echo l2 >"$W/src/lib/l2.c"
check unmount_ws do_unmount "$C"
check checkpoint_unmounted_exits_0 "$CLOISTER" checkpoint "$C" c2
check checkpoint_name_taken_is_refused bash -c "! '$CLOISTER' checkpoint '$C' c2 2>'$T/err' && grep -q 'exists already' '$T/err'"
check checkpoint_bad_name_is_refused bash -c "! '$CLOISTER' checkpoint '$C' ../x 2>/dev/null"
check list_names_both bash -c "'$CLOISTER' checkpoint --list '$C' | grep -q '^c1 ' && '$CLOISTER' checkpoint --list '$C' | grep -q '^c2 '"
check list_json_parses bash -c "'$CLOISTER' checkpoint --list --json '$C' | python3 -c 'import json,sys; j=json.load(sys.stdin); assert [c[\"name\"] for c in j[\"checkpoints\"]]==[\"c1\",\"c2\"] and j[\"depth\"]==2, j'"
check mount_after_checkpoints do_mount "$C"
same deleted_dir_stays_deleted "$(ls "$W" | grep -c '^gone$')" 0
same deleted_base_file_stays_deleted "$(ls "$W" | grep -c '^README$')" 0
same file_of_two_layers_reads_its_own "$(cat "$W/src/l1.c" "$W/src/lib/l2.c")" "$(printf 'l1\nl2')"

# A fork at c1: the same tree, shown the same, and its own from then on.
F=$T/forks/f1.ini
check fork_from_c1 "$CLOISTER" fork "$C" "$F" --from c1
CONFIGS+=("$F")
FM=$(mnt_of "$F")
FW=$(sed -n 's/^state = //p' "$F")/mnt/workspace
check fork_mounts "$CLOISTER" mount "$F"
snap "$FW" >"$T/f1.snap"
check fork_shows_exactly_the_checkpoint diff <(rootless "$T/a.snap") <(rootless "$T/f1.snap")
same fork_git_log_has_the_checkpoints_commit "$(G -C "$FW" log --format=%s -1)" layer1
check fork_git_fsck_is_clean bash -c "git -c safe.directory='*' -C '$FW' fsck --no-dangling >'$T/fsck' 2>&1"
same fork_git_status_sees_the_checkpoint "$(G -C "$FW" status --porcelain)" "?? log.txt"
echo fork >"$FW/forked.txt"
echo parent >"$W/parent.txt"
same parent_does_not_see_the_forks_file "$(ls "$W" | grep -c forked.txt)" 0
same fork_does_not_see_the_parents_file "$(ls "$FW" | grep -c parent.txt)" 0
same fork_journal_begins_with_its_parent "$(head -1 "$(sed -n 's/^state = //p' "$F")/journal.jsonl" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["op"], j["parent"]["name"], j["checkpoint"])')" "journal_fork ws c1"

# Recreate in a fork what a frozen layer deleted: an opaque dir, a new file.
F2=$T/forks/f2.ini
check fork_from_c2 "$CLOISTER" fork "$C" "$F2" --from c2
CONFIGS+=("$F2")
F2W=$(sed -n 's/^state = //p' "$F2")/mnt/workspace
check fork2_mounts "$CLOISTER" mount "$F2"
mkdir "$F2W/gone"
same recreated_dir_is_empty "$(ls -A "$F2W/gone")" ""
echo new >"$F2W/README"
same recreated_file_holds_what_was_written "$(cat "$F2W/README")" new
same recreated_file_has_one_link "$(stat -c %h "$F2W/README")" 1

# Rename of a dir whose contents lie in the base and two frozen layers.
check rename_dir_spanning_layers mv "$F2W/src" "$F2W/moved"
same renamed_dir_has_every_layers_files "$(cd "$F2W/moved" && find . -type f | sort | tr '\n' ' ')" "./l1.c ./lib/a.c ./lib/b.c ./lib/l2.c ./main.c "
same renamed_dir_reads_every_layer "$(cat "$F2W/moved/l1.c" "$F2W/moved/lib/l2.c" "$F2W/moved/lib/a.c")" "$(printf 'l1\nl2\nlib')"
same old_name_is_gone "$(ls "$F2W" | grep -c '^src$')" 0
check fork2_unmount "$CLOISTER" unmount "$F2"
check fork2_remount "$CLOISTER" mount "$F2"
same renamed_dir_survives_remount "$(cat "$F2W/moved/lib/l2.c" "$F2W/moved/main.c")" "$(printf 'l2\nint main(void) { return 0; }')"
check rename_back mv "$F2W/moved" "$F2W/src"
same renamed_back_reads "$(cat "$F2W/src/l1.c")" l1

# Metadata of frozen entries, then changed in the fork (a copy-up keeps the rest).
same frozen_xattr_reads "$("$FSPROBE" getxattr "$FW/one.txt" user.colour)" blue
same frozen_dir_xattr_reads "$("$FSPROBE" getxattr "$FW/keep" user.dir)" yes
same frozen_setid_mode "$(stat -c %a "$FW/setid")" 6755
same frozen_sticky_dir_mode "$(stat -c %a "$FW/sticky")" 1777
same frozen_times "$(stat -c %Y "$FW/keep/k")" "$(date -d '2001-02-03 04:05:06' +%s)"
same frozen_types "$(stat -c %F "$FW/fifo" "$FW/sock" "$FW/sym" | tr '\n' ,)" "fifo,socket,symbolic link,"
ino=$(stat -c %i "$FW/keep/k")
chmod 640 "$FW/keep/k"
same chmod_of_frozen_file_keeps_its_times "$(stat -c '%a %Y %i' "$FW/keep/k")" "640 $(date -d '2001-02-03 04:05:06' +%s) $ino"
"$FSPROBE" setxattr "$FW/one.txt" user.size big >/dev/null
same copy_up_keeps_the_other_xattr "$("$FSPROBE" getxattr "$FW/one.txt" user.colour) $("$FSPROBE" getxattr "$FW/one.txt" user.size)" "blue big"
chmod 755 "$FW/setid"
same chmod_of_frozen_setid_file "$(stat -c %a "$FW/setid")" 755
touch "$FW/fifo" "$FW/sock"
same copied_up_fifo_and_socket_keep_their_types "$(stat -c %F "$FW/fifo" "$FW/sock" | tr '\n' ,)" "fifo,socket,"
check frozen_dir_rmdir_of_non_empty_fails bash -c "! rmdir '$FW/keep' 2>/dev/null"

# A frozen file removed while open: still readable through its descriptor.
check open_frozen_file_survives_its_unlink python3 -c "
import os, sys
fd = os.open(sys.argv[1] + '/keep/k', os.O_RDONLY)
os.unlink(sys.argv[1] + '/keep/k')
assert os.pread(fd, 100, 0) == b'kept\n', 'read'
assert os.fstat(fd).st_nlink == 0, 'nlink %d' % os.fstat(fd).st_nlink
assert not os.path.exists(sys.argv[1] + '/keep/k')
" "$FW"
echo again >"$FW/keep/k"
same removed_frozen_name_can_be_made_again "$(cat "$FW/keep/k")" again

# The workspace .git across layers: commit in the fork, fsck.
G -C "$FW" add -A >/dev/null
check fork_commits G -C "$FW" commit -qm fork
check fork_git_fsck_after_commit bash -c "git -c safe.directory='*' -C '$FW' fsck --no-dangling >'$T/fsck' 2>&1"

# Review: a fork's diff is its whole attempt; export gives one ref per fork.
# The workspace holds a FIFO and a socket, which git cannot hold: the review
# leaves them out, names each on stderr and exits 3 (cloister-diff.md).
check fork_diff_has_the_parents_work_and_its_own bash -c "{ '$CLOISTER' diff '$F' --name-status >'$T/fd' 2>'$T/fd.err' || [ \$? = 3 ]; } && grep -q 'one.txt' '$T/fd' && grep -q 'forked.txt' '$T/fd' && grep -q 'D.*docs/guide.md' '$T/fd'"
check fork_diff_names_the_fifo_and_socket_it_left_out bash -c "grep -q 'left out of the patch: fifo' '$T/fd.err' && grep -q 'left out of the patch: sock' '$T/fd.err'"
check export_of_two_forks_gives_two_refs bash -c "{ '$CLOISTER' export '$F' --commit >/dev/null 2>&1 || [ \$? = 3 ]; } && { '$CLOISTER' export '$F2' --commit >/dev/null 2>&1 || [ \$? = 3 ]; } && git -C '$T/repo' rev-parse refs/cloister/f1 refs/cloister/f2 >/dev/null"
check two_forks_compare_with_git bash -c "git -C '$T/repo' diff --name-only refs/cloister/f1 refs/cloister/f2 | grep -q forked.txt"
# cloister diff A B: the patch from A's tree to B's, as git's over their exports.
check cloister_diff_of_two_forks_names_what_git_names bash -c "{ '$CLOISTER' diff '$F' '$F2' --name-status >'$T/ab' 2>/dev/null || [ \$? = 3 ]; } &&
        git -C '$T/repo' diff --name-status refs/cloister/f1 refs/cloister/f2 >'$T/ab.git' && diff '$T/ab.git' '$T/ab'"
check cloister_diff_of_two_forks_lists_changes test -s "$T/ab"
rm -rf "$T/apply" && mkdir "$T/apply"
git -C "$T/repo" archive refs/cloister/f1 | tar -x -C "$T/apply"
check patch_from_a_to_b_turns_a_into_b bash -c "cd '$T/apply' && git init -q && git add -A &&
        { '$CLOISTER' diff '$F' '$F2' >'$T/ab.patch' 2>/dev/null || [ \$? = 3 ]; } && git apply --index '$T/ab.patch' &&
        test \"\$(git write-tree)\" = \"\$(git -C '$T/repo' rev-parse 'refs/cloister/f2^{tree}')\""
same diff_of_a_fork_with_itself_is_empty "$("$CLOISTER" diff "$F" "$F" 2>/dev/null)" ""
same diff_b_a_is_the_reverse "$("$CLOISTER" diff "$F2" "$F" --name-status 2>/dev/null | sed 's/^A/X/; s/^D/A/; s/^X/D/' | sort)" "$(sort "$T/ab")"
other=$(git -C "$T/repo" commit-tree -m other "$(git -C "$T/repo" rev-parse 'HEAD^{tree}')")
git -C "$T/repo" update-ref refs/heads/other-base "$other"
O=$(make_config other "$T/repo" "rev = other-base")
check diff_with_another_base_is_refused bash -c "! '$CLOISTER' diff '$O' '$F' 2>'$T/err' && grep -q 'base commit is' '$T/err' && [ \$(wc -l <'$T/err') = 1 ]"
make_repo "$T/repo2"
O2=$(make_config other2 "$T/repo2")
check diff_with_another_source_is_refused bash -c "! '$CLOISTER' diff '$O2' '$F' 2>'$T/err' && grep -q 'only workspaces of one repository' '$T/err'"
check diff_a_b_with_since_is_a_usage_error bash -c "'$CLOISTER' diff '$F' '$F2' --since c1 2>/dev/null; [ \$? = 2 ]"

# Fork of a mounted workspace without --from: a checkpoint first, then the fork.
F3=$T/forks/f3.ini
check fork_of_a_mounted_fork "$CLOISTER" fork "$F" "$F3"
CONFIGS+=("$F3")
check fork_of_fork_mounts "$CLOISTER" mount "$F3"
F3W=$(sed -n 's/^state = //p' "$F3")/mnt/workspace
same fork_of_fork_sees_both "$(cat "$F3W/forked.txt" "$F3W/one.txt")" "$(printf 'fork\none')"
check fork_named_its_checkpoint bash -c "'$CLOISTER' checkpoint --list '$F' | grep -q '^fork-f3 '"

# Quotas: a fork counts its own writable layer only.
check fork3_unmount "$CLOISTER" unmount "$F3"
check parent_fills_16M bash -c "head -c 16M /dev/zero >'$W/big'"
check unmount_ws_for_quota do_unmount "$C"
check checkpoint_with_big_file "$CLOISTER" checkpoint "$C" big
F4=$T/forks/f4.ini
check fork_with_big_file "$CLOISTER" fork "$C" "$F4" --from big
CONFIGS+=("$F4")
check parent_remounts do_mount "$C"
check fork4_mounts "$CLOISTER" mount "$F4"
F4W=$(sed -n 's/^state = //p' "$F4")/mnt/workspace
pavail=$("$FSPROBE" statfs "$W" | awk '{print $1}')
favail=$("$FSPROBE" statfs "$F4W" | awk '{print $1}')
check parent_counts_its_frozen_layers bash -c "[ $pavail -le $((48 * 1048576)) ]"
check fork_does_not_count_shared_layers bash -c "[ $favail -gt $((62 * 1048576)) ]"
check fork_writes_up_to_its_own_quota bash -c "head -c 40M /dev/zero >'$F4W/f4big'"
check parent_cannot_write_50M bash -c "! head -c 50M /dev/zero 2>/dev/null >'$W/more'"
rm -f "$W/more"
check fork4_unmount "$CLOISTER" unmount "$F4"

# Restore: refused while mounted; then the checkpoint's tree exactly.
check restore_refused_while_mounted bash -c "! '$CLOISTER' restore '$C' c1 2>'$T/err' && grep -q mounted '$T/err'"
check unmount_for_restore do_unmount "$C"
check restore_c1 "$CLOISTER" restore "$C" c1
check mount_after_restore do_mount "$C"
snap "$W" >"$T/r.snap"
check restore_shows_exactly_the_checkpoint diff <(rootless "$T/a.snap") <(rootless "$T/r.snap")
same restored_git_status "$(G -C "$W" status --porcelain)" "?? log.txt"
check restored_git_fsck bash -c "git -c safe.directory='*' -C '$W' fsck --no-dangling >'$T/fsck' 2>&1"
check restore_again_while_mounted_is_refused bash -c "! '$CLOISTER' restore '$C' c2 2>/dev/null"
check unmount_after_restore do_unmount "$C"
check restore_to_a_later_checkpoint "$CLOISTER" restore "$C" c2
check mount_after_restore_c2 do_mount "$C"
same restore_to_c2_has_its_files "$(cat "$W/src/lib/l2.c"; ls "$W" | grep -c '^gone$')" "$(printf 'l2\n0')"
check unmount_after_restore_c2 do_unmount "$C"

# Delete: deferred while a fork uses the layer; gone with its last user.
d1=$(layer_dir "$C" big)
check delete_of_a_checkpoint_a_fork_uses bash -c "'$CLOISTER' checkpoint --delete '$C' big 2>'$T/err' && grep -q 'in use by the fork' '$T/err'"
check layer_stays_while_the_fork_uses_it test -d "$d1"
check list_no_longer_names_it bash -c "! '$CLOISTER' checkpoint --list '$C' | grep -q '^big '"
rm -rf "$(sed -n 's/^state = //p' "$F4")" "$F4"
check delete_of_another_checkpoint "$CLOISTER" checkpoint --delete "$C" c2
check layer_goes_with_its_last_user test ! -e "$d1"
check restore_to_deleted_checkpoint_fails bash -c "! '$CLOISTER' restore '$C' big 2>/dev/null"

# The depth bound: 64 frozen layers, a squash is due from 48 on.
for i in $(seq 1 62); do "$CLOISTER" checkpoint "$C" "d$i" >/dev/null 2>"$T/due" || break; done
check squash_is_said_to_be_due bash -c "grep -q 'squash is due' '$T/due'"
check stack_stops_at_64 bash -c "! '$CLOISTER' checkpoint '$C' over 2>'$T/err' && grep -q 'squash it first' '$T/err'"
check deep_stack_mounts do_mount "$C"
same deep_stack_reads "$(cat "$W/one.txt")" one
mkdir -p "$W/hl" && echo linked >"$W/hl/a" && ln "$W/hl/a" "$W/b-link"
NO_CTIME=- snap "$W" >"$T/deep.snap"
check unmount_deep do_unmount "$C"

# Squash: one frozen layer, the same tree (only the copies' ctimes are new).
check squash_refused_while_mounted bash -c "'$CLOISTER' mount '$C' && ! '$CLOISTER' squash '$C' 2>/dev/null; '$CLOISTER' unmount '$C'"
check squash_of_64_layers "$CLOISTER" squash "$C"
same squash_leaves_one_frozen_layer "$("$CLOISTER" checkpoint --list --json "$C" | python3 -c 'import json,sys; print(json.load(sys.stdin)["depth"])')" 1
check mount_after_squash do_mount "$C"
NO_CTIME=- snap "$W" >"$T/squashed.snap"
check squash_shows_the_same_tree diff "$T/deep.snap" "$T/squashed.snap"
same hard_link_kept_by_squash "$(stat -c '%h %i' "$W/hl/a")" "$(stat -c '%h %i' "$W/b-link")"
check squashed_git_fsck bash -c "git -c safe.directory='*' -C '$W' fsck --no-dangling >'$T/fsck' 2>&1"
check checkpoint_after_squash "$CLOISTER" checkpoint "$C" after-squash
check unmount_squashed do_unmount "$C"
check restore_to_a_checkpoint_from_before_the_squash "$CLOISTER" restore "$C" d30
check mount_restored_d30 do_mount "$C"
same restored_d30_reads "$(cat "$W/one.txt")" one
check unmount_d30 do_unmount "$C"

# Squash of a fork: its parent's layers and its own merged into one, in its
# own state; the parent's layers stay, and so does the fork of the fork.
"$CLOISTER" unmount "$F3" >/dev/null 2>&1
"$CLOISTER" unmount "$F" >/dev/null 2>&1
check checkpoint_f1_before_squash "$CLOISTER" checkpoint "$F" pre-squash
check mount_f1_before_squash "$CLOISTER" mount "$F"
NO_CTIME=- snap "$FW" >"$T/f1.snap"
check unmount_f1_before_squash "$CLOISTER" unmount "$F"
check squash_of_a_fork "$CLOISTER" squash "$F"
same squashed_fork_has_one_frozen_layer "$("$CLOISTER" checkpoint --list --json "$F" | python3 -c 'import json,sys; print(json.load(sys.stdin)["depth"])')" 1
check mount_squashed_fork "$CLOISTER" mount "$F"
NO_CTIME=- snap "$FW" >"$T/f1-squashed.snap"
check squashed_fork_shows_the_same_tree diff "$T/f1.snap" "$T/f1-squashed.snap"
check unmount_squashed_fork "$CLOISTER" unmount "$F"
check fork_of_fork_mounts_after_its_parent_squashed "$CLOISTER" mount "$F3"
same fork_of_fork_reads_after_squash "$(cat "$F3W/forked.txt" "$F3W/one.txt")" "$(printf 'fork\none')"
check unmount_fork_of_fork "$CLOISTER" unmount "$F3"
finish
