#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The parts of the synthetic root, from outside: the hidden home (seeds,
# persist off and on, hostile probes), read-only mirrors (every mutating
# syscall fails with EROFS, excludes read as ENOENT, links are not followed)
# and the /.cloister control files.
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"
P=$FSPROBE

make_repo "$T/repo"
# Host data: seeds, a mirror with a symlink out of it, and a "real home".
mkdir -p "$T/seeds/dotconfig/app" "$T/mirror/sub" "$T/realhome/.ssh"
echo "gitconfig" >"$T/seeds/gitconfig"
echo "setting" >"$T/seeds/dotconfig/app/conf"
echo "PRIVATE KEY" >"$T/realhome/.ssh/id_ed25519"
echo "history" >"$T/realhome/.bash_history"
echo "mirrored" >"$T/mirror/file"
echo "nested" >"$T/mirror/sub/n"
echo "hidden" >"$T/mirror/secret.key"
echo "zz" >"$T/mirror/data.gz"
ln -s "$T/realhome/.ssh/id_ed25519" "$T/mirror/escape"
setfattr -n user.m -v mv "$T/mirror/file" 2>/dev/null || true

C=$(make_config parts "$T/repo" "
[home]
seed = $T/seeds/gitconfig -> .gitconfig
seed = $T/seeds/dotconfig -> .config

[mirror \"m\"]
source = $T/mirror
path = /opt/m
exclude = *.key, *.gz
")
M=$(mnt_of "$C")
H=$M/home/agent
check mount_with_home_and_mirror do_mount "$C"

# --- hidden home ---
same home_holds_only_the_seeds "$(ls -A "$H" | tr '\n' ' ')" ".config .gitconfig "
same seed_file_is_copied "$(cat "$H/.gitconfig")" "gitconfig"
same seed_dir_is_copied "$(cat "$H/.config/app/conf")" "setting"
check home_accepts_writes bash -c "echo mine >'$H/notes' && mkdir '$H/.cache' && [ \"\$(cat '$H/notes')\" = mine ]"
check home_seed_edit_is_copy_on_write bash -c "echo changed >'$H/.gitconfig' && [ \"\$(cat '$T/seeds/gitconfig')\" = gitconfig ]"
echo "late" >"$T/seeds/late"
echo "host-edit" >"$T/seeds/dotconfig/app/conf"
same seeds_are_snapshots_taken_at_mount "$(cat "$H/.config/app/conf")" "setting"
for probe in .ssh/id_ed25519 .ssh .bash_history "../$(basename "$T")" ../root "../${SUDO_USER:-nobody}"; do
        check "home_probe_finds_nothing_${probe//[^a-zA-Z0-9_]/_}" test ! -e "$H/$probe"
done
same mount_home_dir_lists_only_the_agent "$(ls -A "$M/home")" "agent"
check no_host_home_content_anywhere_in_the_mount bash -c "! grep -rqs 'PRIVATE KEY' '$M/home' '$M/workspace' '$M/.cloister/workspace' '$M/.cloister/changes'"
ln -s "$T/realhome/.ssh" "$H/ssh-link"
same agent_symlink_is_stored_as_a_link "$(readlink "$H/ssh-link")" "$T/realhome/.ssh"
expect_errno agent_symlink_is_not_followed_by_the_daemon ELOOP "$P" open "$H/ssh-link" r,nofollow
check unmount_home_not_persisted do_unmount "$C"
check remount_home_not_persisted do_mount "$C"
check home_writes_are_discarded_without_persist bash -c "[ ! -e '$H/notes' ] && [ ! -e '$H/.cache' ] && [ \"\$(cat '$H/.gitconfig')\" = gitconfig ]"
same home_picks_up_new_seed_content_at_mount "$(cat "$H/.config/app/conf")" "host-edit"
check unmount_before_persist_test do_unmount "$C"

C2=$(make_config persist "$T/repo" "
[home]
persist = true
seed = $T/seeds/gitconfig -> .gitconfig
")
H2=$(mnt_of "$C2")/home/agent
check mount_persistent_home do_mount "$C2"
check persistent_home_write bash -c "echo kept >'$H2/kept' && echo edited >'$H2/.gitconfig'"
check unmount_persistent_home do_unmount "$C2"
check remount_persistent_home do_mount "$C2"
check persistent_home_keeps_writes bash -c "[ \"\$(cat '$H2/kept')\" = kept ] && [ \"\$(cat '$H2/.gitconfig')\" = edited ]"
check unmount_persistent_home_again do_unmount "$C2"

# --- read-only mirror ---
check mount_again_for_mirrors do_mount "$C"
R=$M/opt/m
same mirror_reads_host_content "$(cat "$R/file")" "mirrored"
same mirror_nested_read "$(cat "$R/sub/n")" "nested"
same mirror_lists_without_excluded_names "$(ls -A "$R" | tr '\n' ' ')" "escape file sub "
expect_errno mirror_excluded_name_is_enoent ENOENT "$P" open "$R/secret.key" r
expect_errno mirror_excluded_glob_is_enoent ENOENT "$P" open "$R/data.gz" r
same mirror_symlink_is_shown_as_a_link "$(readlink "$R/escape")" "$T/realhome/.ssh/id_ed25519"
expect_errno mirror_symlink_is_not_followed_by_the_daemon ELOOP "$P" open "$R/escape" r,nofollow
expect_errno mirror_open_wronly_is_erofs EROFS "$P" open "$R/file" w
expect_errno mirror_open_rdwr_is_erofs EROFS "$P" open "$R/file" rw
expect_errno mirror_open_trunc_is_erofs EROFS "$P" open "$R/file" w,trunc
expect_errno mirror_creat_is_erofs EROFS "$P" open "$R/new" w,creat
expect_errno mirror_unlink_is_erofs EROFS "$P" unlink "$R/file"
expect_errno mirror_rename_within_is_erofs EROFS "$P" rename "$R/file" "$R/file2"
# The workspace is a mount of its own (its own FUSE connection, with no
# OPEN per file: fs/daemon/parts.c), so a rename across is refused by the
# kernel as between any two file systems; nothing moves either way.
expect_errno mirror_rename_out_is_exdev EXDEV "$P" rename "$R/file" "$M/workspace/file"
expect_errno mirror_rename_in_is_exdev EXDEV "$P" rename "$M/workspace/README" "$R/README"
check the_mirror_file_stays test -f "$R/file" -a ! -e "$M/workspace/file"
check the_workspace_file_stays test -f "$M/workspace/README" -a ! -e "$R/README"
expect_errno mirror_chmod_is_erofs EROFS "$P" chmod "$R/file" 600
expect_errno mirror_chown_is_erofs EROFS "$P" chown "$R/file" 1 1
expect_errno mirror_utimens_is_erofs EROFS "$P" utimens "$R/file" 1000
expect_errno mirror_truncate_is_erofs EROFS "$P" truncate "$R/file" 0
expect_errno mirror_setxattr_is_erofs EROFS "$P" setxattr "$R/file" user.x y
expect_errno mirror_removexattr_is_erofs EROFS "$P" removexattr "$R/file" user.m
expect_errno mirror_link_is_erofs EROFS "$P" link "$R/file" "$R/file3"
expect_errno mirror_symlink_is_erofs EROFS "$P" symlink x "$R/l"
expect_errno mirror_mkdir_is_erofs EROFS "$P" mkdir "$R/d"
expect_errno mirror_rmdir_is_erofs EROFS "$P" rmdir "$R/sub"
expect_errno mirror_mknod_is_erofs EROFS "$P" mknod "$R/fifo" fifo
same mirror_host_files_untouched "$(cat "$T/mirror/file"; ls -A "$T/mirror" | tr '\n' ' ')" "mirrored
data.gz escape file secret.key sub "

# --- control dir and root ---
expect_errno root_mkdir_is_erofs EROFS "$P" mkdir "$M/x"
expect_errno control_write_is_erofs EROFS "$P" open "$M/.cloister/workspace" w
check workspace_json_has_the_base_revision grep -q "\"revision\":\"$(git -C "$T/repo" rev-parse HEAD)\"" "$M/.cloister/workspace"
check workspace_json_has_a_mount_time grep -q '"mounted_at":"20' "$M/.cloister/workspace"
echo x >"$M/workspace/live"
check changes_are_live grep -q '"path":"/workspace/live","type":"file","opaque":false' "$M/.cloister/changes"
mkdir "$M/workspace/newdir"
check new_dir_is_opaque_in_changes grep -q '"path":"/workspace/newdir","type":"dir","opaque":true' "$M/.cloister/changes"
mv "$M/workspace/src" "$M/workspace/src2"
check renamed_lower_dir_is_listed_opaque grep -q '"path":"/workspace/src2","type":"dir","opaque":true' "$M/.cloister/changes"
check renamed_lower_dir_source_is_deleted grep -q '"path":"/workspace/src","type":"deleted"' "$M/.cloister/changes"
check objects_view_shows_the_source_objects test -d "$M/.cloister/objects/info" -a -d "$M/.cloister/objects/pack"
expect_errno objects_view_is_read_only EROFS "$P" mkdir "$M/.cloister/objects/x"
check unmount_parts do_unmount "$C"
finish
