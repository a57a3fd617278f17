#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# [limits] bytes bounds the host blocks the upper store uses (fs/core/quota.c):
# a file costs its size or its blocks, whichever is more. The outside
# review's case: with bytes = 4M, `fallocate -n -l 200M` (KEEP_SIZE: size
# 0) allocated 200 MiB on the host and df inside showed 4.0K used. Now it
# fails with ENOSPC and allocates nothing; every fallocate mode is either
# charged as the host allocates or refused (insert, collapse), and so are
# the other ways bytes reach the upper store: copy_file_range, FICLONE,
# shared mmap writes, truncate, sparse writes, symlink targets; as root
# and as nobody, and exactly under parallel writers.
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"
P=$FSPROBE
Q=$((4 * 1024 * 1024))

mkdir -p "$T/plain"
echo base >"$T/plain/base"
C=$(make_config qblocks "$T/plain" "
[limits]
bytes = 4M
files = 5000
")
W=$(mnt_of "$C")/workspace
U=$(state_of "$C")/fs/repo
check mount_with_a_4m_quota do_mount "$C"
free() { "$P" statfs "$W" | cut -d' ' -f1; }
# host_blocks: bytes of host blocks under the upper store's files (st_blocks)
host_blocks() { find "$U" -type f -printf '%b\n' | awk '{ s += $1 * 512 } END { print s + 0 }'; }

: >"$W/big.bin"
expect_errno fallocate_keep_size_past_the_quota_is_enospc ENOSPC "$P" fallocate "$W/big.bin" keep 0 209715200
same refused_fallocate_allocates_no_host_block "$(stat -c %b "$U/big.bin")" 0
f0=$(free)
check fallocate_keep_size_within_the_quota_works "$P" fallocate "$W/big.bin" keep 0 1048576
same fallocate_keep_size_is_charged_its_blocks "$((f0 - $(free)))" 1048576
same its_size_stays_zero "$(stat -c %s "$W/big.bin")" 0
check df_inside_counts_the_blocks bash -c "df -B1 --output=used '$W' | tail -1 | awk '{ exit !(\$1 >= 1048576) }'"
expect_errno zero_range_past_the_quota_is_enospc ENOSPC "$P" fallocate "$W/big.bin" zero,keep 0 104857600
expect_errno allocating_past_the_quota_is_enospc ENOSPC "$P" fallocate "$W/big.bin" 0 0 104857600
expect_errno insert_range_is_refused EOPNOTSUPP "$P" fallocate "$W/big.bin" insert 0 4096
expect_errno collapse_range_is_refused EOPNOTSUPP "$P" fallocate "$W/big.bin" collapse 0 4096
check host_blocks_stay_within_the_quota test "$(host_blocks)" -le $Q

# Punching a hole frees host blocks but the file still costs its size;
# zeroing a range is charged as the host allocates it.
: >"$W/data"
"$P" write "$W/data" 0 1048576 >/dev/null
f1=$(free)
check punch_hole_works "$P" fallocate "$W/data" keep,punch 0 1048576
same punch_hole_frees_the_host_blocks "$(stat -c %b "$U/data")" 0
same a_punched_file_still_costs_its_size "$(free)" "$f1"
check zero_range_works "$P" fallocate "$W/data" zero 0 524288
check zero_range_is_never_charged_less_than_it_holds \
        test "$((f1 + 1048576 - $(free)))" -ge "$(($(stat -c %b "$U/data") * 512))"
rm -f "$W/data" "$W/big.bin"

# Sparse writes and truncate count the logical size; shared mmap writes go
# through the daemon's write and cost nothing more within the size.
: >"$W/sparse"
expect_errno sparse_write_past_the_quota_is_enospc ENOSPC "$P" write "$W/sparse" 104857600 1
expect_errno truncate_up_past_the_quota_is_enospc ENOSPC "$P" truncate "$W/sparse" 104857600
f2=$(free)
: >"$W/mapped"
"$P" truncate "$W/mapped" 1048576 >/dev/null
check shared_mmap_writes_work "$P" mmapwrite "$W/mapped" 1048576
same shared_mmap_writes_cost_the_size_once "$((f2 - $(free)))" 1048576
same mmap_data_reached_the_host "$(tr -d m <"$U/mapped" | wc -c)" 0

# copy_file_range within the mount goes through the daemon's write (the
# daemon has no copy_file_range of its own): cut at the quota.
: >"$W/src2m"
"$P" write "$W/src2m" 0 2097152 >/dev/null
left=$(free)
"$P" copyrange "$W/src2m" "$W/copied" 2097152 >"$T/cr"
read -r copied err <"$T/cr"
same copy_file_range_past_the_quota_stops_with_enospc "$err" ENOSPC
check copy_file_range_stops_at_the_quota test "$copied" -le "$left" -a "$copied" -gt 0
same statfs_has_nothing_left_after_the_copy "$(free)" 0
check host_blocks_stay_within_the_quota_after_the_copy test "$(host_blocks)" -le $Q
f3=$(free)
check a_clone_is_refused bash -c "! '$P' clone '$W/copied' '$W/cloned'"
same a_refused_clone_costs_nothing "$(free)" "$f3"
rm -f "$W/copied" "$W/mapped" "$W/sparse" "$W/cloned" "$W/src2m"

# A symlink costs its target or its block.
f4=$(free)
target=$(printf 'x%.0s' $(seq 1 3000))
check long_symlink_works "$P" symlink "$target" "$W/longlink"
check a_symlink_costs_its_target test "$((f4 - $(free)))" -ge 3000
rm "$W/longlink"
same removing_a_symlink_gives_it_back "$(free)" "$f4"

# Eight processes allocating 256 KiB at a time (KEEP_SIZE) at once: the
# quota fills exactly, and statfs says what the host holds.
f5=$(free)
for i in 1 2 3 4 5 6 7 8; do
        (
                : >"$W/p$i"
                k=0
                # (at most 40: 80 MiB in all, should the quota not hold)
                while [ $k -lt 40 ] && "$P" fallocate "$W/p$i" keep $((k * 262144)) 262144 >/dev/null; do
                        k=$((k + 1))
                done
        ) &
done
wait
held=$(for i in 1 2 3 4 5 6 7 8; do stat -c %b "$U/p$i"; done | awk '{ s += $1 * 512 } END { print s }')
same parallel_fallocates_charge_what_the_host_holds "$((f5 - $(free)))" "$held"
check parallel_fallocates_stay_within_the_quota test "$(host_blocks)" -le $Q
check parallel_fallocates_leave_less_than_a_chunk test "$(free)" -lt $((262144 + 4096))
used=$(free)
check unmount_blocks do_unmount "$C"
check remount_blocks do_mount "$C"
same block_usage_is_recounted_at_mount "$(free)" "$used"
rm -f "$W"/p?

# As nobody, in a directory it may write (and reach).
chmod o+x "$T" "$T/qblocks"
mkdir "$W/pub"
chmod 1777 "$W/pub"
if runuser -u nobody -- true 2>/dev/null; then
        runuser -u nobody -- sh -c ": >'$W/pub/nb'"
        got=$(runuser -u nobody -- "$P" fallocate "$W/pub/nb" keep 0 209715200)
        same fallocate_as_nobody_past_the_quota_is_enospc "$got" ENOSPC
        same nobodys_refused_fallocate_allocates_nothing "$(stat -c %b "$U/pub/nb")" 0
        same fallocate_as_nobody_within_the_quota_works \
                "$(runuser -u nobody -- "$P" fallocate "$W/pub/nb" keep 0 262144)" OK
        check host_blocks_stay_within_the_quota_as_nobody test "$(host_blocks)" -le $Q
else
        skip fallocate_as_nobody_past_the_quota_is_enospc "runuser cannot switch to nobody here"
fi
check unmount_blocks_again do_unmount "$C"
finish
