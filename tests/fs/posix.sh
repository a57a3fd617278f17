#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One test per POSIX operation, each run on the mount and on a plain copy
# of the same tree on the host filesystem (ext4 in CI): the results must
# be the same. Then what ext4 cannot show: what the copy-on-write layer
# did (no data copy for metadata changes or O_TRUNC, inode numbers kept).
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"
P=$FSPROBE

make_repo "$T/repo"
C=$(make_config posix "$T/repo")
M=$(mnt_of "$C")
W=$M/workspace
R=$T/ref
U=$(state_of "$C")/fs/repo
mkdir -p "$R"
(cd "$T/repo" && git -c tar.umask=022 archive HEAD | tar -x -C "$R")
check mount_posix do_mount "$C"

# like NAME ARGS...: run the probe with @ replaced by the mount, then by the
# reference tree; both answers must match.
like() {
        local name=$1 a b
        shift
        a=$("$P" "${@//@/$W}" 2>&1)
        b=$("$P" "${@//@/$R}" 2>&1)
        same "$name" "$a" "$b"
}
tree_like() {
        same "$1" "$(cd "$W" && find . -path ./.git -prune -o -printf '%p %y %m %s %n\n' | grep -v '^\. ' | sort)" \
                "$(cd "$R" && find . -printf '%p %y %m %s %n\n' | grep -v '^\. ' | sort)"
}

like open_excl_on_lower_file_is_eexist open @/README w,creat,excl
like fstat_of_lower_file_opened_rdwr_shows_its_size osize @/src/main.c rw
like fstat_of_lower_file_opened_wronly_shows_its_size osize @/docs/guide.md w
like open_excl_new_file_works open @/fresh w,creat,excl
like open_missing_is_enoent open @/missing r
like open_dir_for_write_is_eisdir open @/src w
like open_file_as_dir_is_enotdir open @/README/x r
like write_at_offset_extends write @/fresh 100 10
like append_open_works open @/README w,append
like trunc_open_of_lower_file open @/src/lib/a.c w,trunc
like truncate_lower_file_up truncate @/src/lib/b.c 5000
like truncate_lower_file_down truncate @/run.sh 3
like unlink_lower_file unlink @/docs/guide.md
like unlink_again_is_enoent unlink @/docs/guide.md
like unlink_dir_is_eisdir unlink @/src
like mkdir_over_lower_file_is_eexist mkdir @/README
like mkdir_new mkdir @/newdir
like rmdir_nonempty_lower_dir_is_enotempty rmdir @/src
like rmdir_file_is_enotdir rmdir @/README
like rmdir_emptied_lower_dir rmdir @/docs
like rmdir_lower_dir_after_unlinking_its_file unlink @/empty-later/only
like rmdir_now_empty_lower_dir rmdir @/empty-later
like recreate_removed_lower_dir mkdir @/empty-later
like recreated_dir_is_empty open @/empty-later/only r
like rename_lower_file_over_lower_file rename @/src/lib/a.c @/src/lib/b.c
like rename_noreplace_onto_existing_is_eexist rename @/README @/run.sh noreplace
like rename_noreplace_to_new rename @/run.sh @/run2.sh noreplace
like rename_exchange_file_and_dir rename @/README @/src exchange
like rename_exchange_back rename @/README @/src exchange
like rename_exchange_with_missing_is_enoent rename @/README @/nothere exchange
like rename_dir_over_nonempty_dir_is_enotempty rename @/newdir @/src
like rename_dir_over_file_is_enotdir rename @/newdir @/README
like rename_file_over_dir_is_eisdir rename @/README @/newdir
like rename_dir_into_itself_is_einval rename @/src @/src/lib/inner
like rename_lower_dir_with_content rename @/src @/newdir
like symlink_new symlink target @/sym
like symlink_over_existing_is_eexist symlink target @/README
like link_lower_file link @/README @/README.hard
like link_dir_is_eperm link @/newdir @/dirlink
like link_onto_existing_is_eexist link @/README @/run2.sh
like chown_lower_file chown @/run2.sh 1234 5678
like chown_minus_one_keeps_owner chown @/run2.sh -1 -1
like chown_symlink_itself chown @/sym 42 42
like chmod_lower_file chmod @/README 600
like chmod_dir chmod @/newdir 700
like utimens_lower_file utimens @/run2.sh 1234567
like setxattr_user_on_lower_file setxattr @/run2.sh user.a b
like getxattr_reads_it getxattr @/run2.sh user.a
like removexattr_missing_is_enodata removexattr @/README user.none
like listxattr_on_lower_file listxattr @/newdir/main.c
like mknod_fifo mknod @/fifo fifo
like mknod_fifo_again_is_eexist mknod @/fifo fifo
tree_like trees_match_after_the_posix_ops
same hard_link_counts_two "$(stat -c %h "$W/README")" 2
same dir_nlink_counts_subdirs "$(stat -c %h "$W/newdir")" "$(stat -c %h "$R/newdir")"
same chown_sets_the_owner "$(stat -c %u:%g "$W/run2.sh")" 1234:5678
same chown_of_a_symlink_does_not_follow "$(stat -c %u "$W/sym")" 42
same mtime_kept_by_utimens "$(stat -c %Y "$W/run2.sh")" 1234567

# What ext4 cannot show: how the layers did it.
blob=$(git -C "$T/repo" rev-parse HEAD:src/main.c)
rm -f "$(state_of "$C")/fs/cache/$blob"
i=$(stat -c %i "$W/newdir/main.c")
chmod 700 "$W/newdir/main.c"
touch -d @1000000 "$W/newdir/main.c"
"$P" setxattr "$W/newdir/main.c" user.x y >/dev/null
check metadata_changes_inflate_no_blob test ! -e "$(state_of "$C")/fs/cache/$blob"
same metadata_changes_copy_no_data "$(stat -c %s "$U/newdir/main.c")" 0
same metacopy_reads_the_lower_data "$(cat "$W/newdir/main.c")" "$(cat "$T/repo/src/main.c")"
same metacopy_keeps_the_inode_number "$(stat -c %i "$W/newdir/main.c")" "$i"
same metacopy_has_the_new_mode "$(stat -c %a "$W/newdir/main.c")" 700
blob2=$(git -C "$T/repo" rev-parse HEAD:src/lib/a.c)
check o_trunc_of_lower_file_inflates_nothing test ! -e "$(state_of "$C")/fs/cache/$blob2"
m1=$(stat -c %Y "$W/newdir/main.c")
echo more >>"$W/newdir/main.c"
check write_updates_mtime bash -c "[ \$(stat -c %Y '$W/newdir/main.c') -gt $m1 ]"
same write_after_metacopy_keeps_the_inode_number "$(stat -c %i "$W/newdir/main.c")" "$i"
same write_after_metacopy_appends_to_the_lower_data "$(cat "$W/newdir/main.c")" "$(cat "$T/repo/src/main.c"; echo more)"
c1=$(stat -c %Z "$W/newdir/lib/b.c")
sleep 1.1
chmod 640 "$W/newdir/lib/b.c"
check chmod_updates_ctime bash -c "[ \$(stat -c %Z '$W/newdir/lib/b.c') -gt $c1 ]"
d1=$(stat -c %Y "$W/newdir")
sleep 1.1
touch "$W/newdir/created"
check create_updates_parent_mtime bash -c "[ \$(stat -c %Y '$W/newdir') -gt $d1 ]"
exec 7<"$W/newdir/lib/b.c"
echo rewritten >"$W/newdir/lib/b.c"
same reader_opened_before_a_write_sees_the_new_data "$(cat <&7)" "rewritten"
exec 7<&-
inos=$(cd "$W" && find . -path ./.git -prune -o -printf '%i %p\n' | sort)
check unmount_posix do_unmount "$C"
check remount_posix do_mount "$C"
same every_inode_number_is_stable_across_remount "$(cd "$W" && find . -path ./.git -prune -o -printf '%i %p\n' | sort)" "$inos"
same readdir_inode_numbers_match_stat "$(cd "$W" && ls -i1 | sort)" "$(cd "$W" && for f in $(ls -A); do [ "$f" = .git ] || echo "$(stat -c %i "$f") $f"; done | sort)"
check unmount_posix_again do_unmount "$C"
finish
