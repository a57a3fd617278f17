#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fs as a hostile agent would try it: symlink escapes, "..", marker
# look-alike names, device nodes and setuid bits (metadata only, never on
# the host), foreign xattr namespaces, long names, hard links out of the
# mount. The daemon has host privileges,
# so every probe also checks the host side is untouched.
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"
P=$FSPROBE

make_repo "$T/repo"
mkdir -p "$T/outside"
echo "host secret" >"$T/outside/secret"
C=$(make_config sec "$T/repo")
M=$(mnt_of "$C")
W=$M/workspace
U=$(state_of "$C")/fs/repo
check mount_for_security do_mount "$C"

check mount_has_nosuid_and_nodev bash -c "grep ' $M ' /proc/self/mounts | grep -q nosuid && grep ' $M ' /proc/self/mounts | grep -q nodev"
ln -s "$T/outside" "$W/esc"
ln -s ../../../../outside "$W/dotdot"
same symlink_to_host_is_stored_verbatim "$(readlink "$U/esc")" "$T/outside"
expect_errno open_nofollow_on_agent_symlink_is_eloop ELOOP "$P" open "$W/esc" r,nofollow
check upper_store_holds_a_link_not_a_copy test -L "$U/esc" -a ! -e "$U/esc/secret.copied"
rm "$W/esc"
check unlinking_a_symlink_leaves_its_target bash -c "[ \"\$(cat '$T/outside/secret')\" = 'host secret' ]"
expect_errno dotdot_from_workspace_reaches_the_read_only_root EROFS "$P" mkdir "$W/../x"
check dotdot_never_leaves_the_mount bash -c "[ \"\$(cd '$W/..' && pwd -P)\" = '$M' ]"
# Marker look-alikes are ordinary names.
echo keep >"$W/src/.wh..wh..opq"
check opaque_marker_name_does_not_hide_lower_entries test -e "$W/src/main.c"
touch "$W/.wh.src"
check whiteout_name_does_not_hide_lower_dir test -e "$W/src/lib/a.c"
echo meta >"$W/src/.cloister~meta"
check reserved_name_is_stored_escaped test -f "$U/src/.cloister~=.cloister~meta"
check sidecar_is_not_visible bash -c "! ls -A '$W/src' | grep -qx '.cloister~=.cloister~meta'"
check agent_meta_file_does_not_change_the_view bash -c "[ -e '$W/src/main.c' ] && [ \"\$(cat '$W/src/.cloister~meta')\" = meta ]"
expect_errno name_over_name_max_is_enametoolong ENAMETOOLONG "$P" mkdir "$W/$(printf 'a%.0s' $(seq 256))"
check name_of_255_bytes_works "$P" mkdir "$W/$(printf 'b%.0s' $(seq 255))"
expect_errno reserved_prefix_name_too_long_after_escape ENAMETOOLONG "$P" mkdir "$W/.cloister~$(printf 'c%.0s' $(seq 240))"
# Devices and setuid: metadata only. The mount is nodev,nosuid; the upper
# store holds an empty mode-0 placeholder for a device and never a set-id bit.
check char_device_is_made_as_metadata "$P" mknod "$W/null" chr
check block_device_is_made_as_metadata "$P" mknod "$W/sda" blk
same char_device_is_reported_truthfully "$(stat -c '%F %t:%T' "$W/null")" "character special file 1:3"
check device_node_never_reaches_the_upper_store bash -c "[ -f '$U/null' ] && [ ! -s '$U/null' ] && [ -z \"\$(find '$(state_of "$C")' -type c -o -type b)\" ]"
expect_errno device_node_cannot_be_opened_as_a_device EACCES "$P" open "$W/null" r
expect_errno device_node_cannot_be_opened_for_writing EACCES "$P" open "$W/sda" w
check device_node_is_journaled_with_its_type journal_has '"op":"mknod","path":"/workspace/null",.*"mode":8612' "$(state_of "$C")/journal.jsonl"
check fifo_can_be_made "$P" mknod "$W/fifo" fifo
check fifo_is_a_fifo test -p "$W/fifo"
cp /bin/true "$W/suid"
chmod 4755 "$W/suid"
same setuid_is_kept_as_metadata "$(stat -c %a "$W/suid")" 4755
check setuid_never_reaches_the_upper_store bash -c "[ -z \"\$(find '$U' -perm /6000)\" ]"
check setuid_file_runs_without_privilege_on_the_mount "$W/suid"
chmod 2755 "$W/src"
same setgid_is_kept_as_metadata_on_dirs "$(stat -c %a "$W/src")" 2755
same setgid_never_reaches_an_upper_dir "$(stat -c %a "$U/src")" 755
check setuid_lower_copy_up_has_no_setuid bash -c "chmod 4755 '$W/run.sh' && [ \"\$(stat -c %a '$W/run.sh')\" = 4755 ] && [ -z \"\$(find '$U/run.sh' -perm /6000)\" ]"
expect_errno security_xattr_cannot_be_set EOPNOTSUPP "$P" setxattr "$W/README" security.evil x
expect_errno trusted_xattr_cannot_be_set EOPNOTSUPP "$P" setxattr "$W/README" trusted.overlay.opaque y
check user_xattr_round_trips bash -c "'$P' setxattr '$W/README' user.k v >/dev/null && [ \"\$('$P' getxattr '$W/README' user.k)\" = v ]"
expect_errno hard_link_from_outside_is_exdev EXDEV "$P" link "$T/outside/secret" "$W/stolen"
expect_errno hard_link_out_of_the_mount_is_exdev EXDEV "$P" link "$W/README" "$T/outside/readme"
# The state directory and source are never reachable or changed.
check mount_never_shows_the_state_dir bash -c "! grep -rqs '$T' '$M/.cloister/workspace'"
check unmount_security do_unmount "$C"
check host_secret_untouched bash -c "[ \"\$(cat '$T/outside/secret')\" = 'host secret' ] && [ \"\$(ls -A '$T/outside')\" = secret ]"
finish
