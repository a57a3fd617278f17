#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# [limits] bytes and files: exact at the cap under 8 parallel writers,
# ENOSPC/EDQUOT past it, nothing written before is damaged, statfs reports
# what is left, and deleting gives the space back.
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"
P=$FSPROBE

# A plain-directory source: no synthesized .git, so usage starts at zero.
mkdir -p "$T/plain"
echo base >"$T/plain/base"
C=$(make_config quota "$T/plain" "
[limits]
bytes = 1M
files = 40
")
M=$(mnt_of "$C")
W=$M/workspace
check mount_with_quota do_mount "$C"
same statfs_reports_the_whole_quota_free "$("$P" statfs "$W")" "1048576 40"

# 8 writers appending 1000-byte chunks (not block aligned) at the same time.
for i in 1 2 3 4 5 6 7 8; do
        "$P" fill "$W/w$i" 1000 >"$T/fill$i" &
done
wait
total=0
errs=""
for i in 1 2 3 4 5 6 7 8; do
        read -r bytes err <"$T/fill$i"
        total=$((total + bytes))
        errs="$errs$err "
done
same eight_parallel_writers_fill_the_quota_exactly "$total" 1048576
same every_writer_stops_with_enospc "$errs" "ENOSPC ENOSPC ENOSPC ENOSPC ENOSPC ENOSPC ENOSPC ENOSPC "
sizes=0
for i in 1 2 3 4 5 6 7 8; do sizes=$((sizes + $(stat -c %s "$W/w$i"))); done
same file_sizes_add_up_to_the_quota "$sizes" 1048576
check data_written_before_the_cap_is_intact bash -c "for i in 1 2 3 4 5 6 7 8; do [ -z \"\$(tr -d q <'$W/w'\$i)\" ] || exit 1; done"
same statfs_reports_nothing_left "$("$P" statfs "$W" | cut -d' ' -f1)" 0
expect_errno write_past_the_cap_is_enospc ENOSPC "$P" write "$W/w1" 2000000 10
expect_errno truncate_up_past_the_cap_is_enospc ENOSPC "$P" truncate "$W/w1" 2000000
expect_errno copy_up_past_the_cap_is_enospc ENOSPC "$P" write "$W/base" 0 1
same lower_file_is_unchanged_after_failed_copy_up "$(cat "$W/base")" "base"
s1=$(stat -c %s "$W/w1")
rm "$W/w1"
same deleting_frees_its_bytes "$("$P" statfs "$W" | cut -d' ' -f1)" "$(( s1 / 4096 * 4096 ))"
check writing_again_after_freeing_works "$P" write "$W/w2" 0 10

# Files: 40 entries in the upper layer at most; statfs says how many are left.
free_files=$("$P" statfs "$W" | cut -d' ' -f2)
created=0
for i in $(seq 1 50); do
        if "$P" open "$W/f$i" w,creat >/dev/null; then created=$((created + 1)); else break; fi
done
same file_quota_holds_exactly "$created" "$free_files"
expect_errno file_quota_error_is_edquot EDQUOT "$P" mkdir "$W/onemore"
same statfs_reports_no_inodes_left "$("$P" statfs "$W" | cut -d' ' -f2)" 0
rm "$W/f1"
check creating_after_deleting_works "$P" mkdir "$W/again"
check unmount_quota do_unmount "$C"
check remount_quota do_mount "$C"
same usage_is_recounted_at_mount "$("$P" statfs "$W" | cut -d' ' -f2)" 0
check unmount_quota_again do_unmount "$C"
finish
