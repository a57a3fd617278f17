#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# [limits] bytes counts directories too (fs/core/quota.c): their own host blocks
# and their sidecars' (.cloister~meta). Before, neither was counted, and an
# ext4 directory keeps its largest size after its entries go: an agent
# could fill a directory with long names, empty it, and do it again in the
# next one, leaving host blocks that nothing counted, with empty files
# under any `bytes`. Now each name added reserves its room first, the
# operation fails with ENOSPC at the bound, and the host blocks of the
# whole upper store (directories and sidecars included) stay within it,
# across a remount too.
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"
P=$FSPROBE
Q=$((1024 * 1024))

mkdir -p "$T/plain"
echo base >"$T/plain/base"
C=$(make_config qdirs "$T/plain" "
[limits]
bytes = 1M
files = 100000
")
W=$(mnt_of "$C")/workspace
U=$(state_of "$C")/fs/repo
check mount_with_a_1m_quota do_mount "$C"
free() { "$P" statfs "$W" | cut -d' ' -f1; }
# host_blocks: bytes of host blocks under the upper store, directories,
# sidecars and the store's root included (but its first block, which
# comes with the layer)
host_blocks() { find "$U" -printf '%b\n' | awk '{ s += $1 * 512 } END { print s - 4096 }'; }

# fill DIR KIND: make DIR, then names of 250 bytes in it (empty files,
# directories or symlinks) until one fails; print how many were made and the errno.
fill() {
        python3 - "$1" "$2" <<'EOF'
import errno, os, sys
d, kind = sys.argv[1], sys.argv[2]
i = 0
try:
    os.makedirs(d, exist_ok=True)
    while i < 100000:
        p = os.path.join(d, kind[0] + "%06d" % i + "x" * 243)
        if kind == "dir":
            os.mkdir(p)
        elif kind == "symlink":
            os.symlink("t", p)
        else:
            os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        i += 1
    print(i, "none")
except OSError as e:
    print(i, errno.errorcode.get(e.errno, e.errno))
EOF
}
empty() { find "$1" -mindepth 1 -delete; }
LONG=$(printf 'z%.0s' {1..250})

# Empty files with long names: only the directory grows.
read -r n1 e1 <<<"$(fill "$W/a" file)"
same long_names_fill_the_quota_with_enospc "$e1" ENOSPC
check the_filling_made_names_first test "$n1" -gt 100
check host_blocks_stay_within_the_quota_after_filling test "$(host_blocks)" -le $Q
echo "# $n1 names, host blocks $(host_blocks), free $(free)"
empty "$W/a"
check emptied_directory_keeps_its_host_blocks test "$(stat -c %b "$U/a")" -gt 8
# Its blocks stay counted: the next directory cannot take them again.
check emptying_gives_no_blocks_back test "$(free)" -lt $((Q / 4))
read -r n2 e2 <<<"$(fill "$W/b" file)"
same a_second_directory_is_refused_too "$e2" ENOSPC
check the_emptied_directory_left_little_room test "$n2" -lt $((n1 / 4))
check host_blocks_stay_within_the_quota_after_refilling test "$(host_blocks)" -le $Q

# Removing the directories gives their blocks back.
check removing_the_directories_works rm -rf "$W/a" "$W/b"
check rmdir_gives_the_blocks_back test "$(free)" -gt $((Q / 2))

# Directories cost their own block and their parent's sidecar record.
f0=$(free)
check mkdir_works mkdir "$W/one"
: >"$W/one/f"
check mkdir_is_charged_its_block test $((f0 - $(free))) -ge 8192
read -r n3 e3 <<<"$(fill "$W/c" dir)"
same many_directories_fill_the_quota_with_enospc "$e3" ENOSPC
check the_directories_were_made_first test "$n3" -gt 50
check host_blocks_stay_within_the_quota_with_directories test "$(host_blocks)" -le $Q
check their_sidecar_records_exist test -s "$U/c/.cloister~meta"
echo "# $n3 dirs, host blocks $(host_blocks), free $(free)"
# What a directory has left is too little for another; symlinks then.
read -r n5 e5 <<<"$(fill "$W/c" symlink)"
same symlinks_fill_the_rest_with_enospc "$e5" ENOSPC
check host_blocks_stay_within_the_quota_with_symlinks test "$(host_blocks)" -le $Q
expect_errno rename_into_a_full_quota_is_enospc ENOSPC "$P" rename "$W/one" "$W/c/$LONG"
expect_errno link_into_a_full_quota_is_enospc ENOSPC "$P" link "$W/one/f" "$W/c/$LONG"
check host_blocks_stay_within_the_quota_after_refusals test "$(host_blocks)" -le $Q
check removing_them_works rm -rf "$W/c" "$W/one"
read -r n4 e4 <<<"$(fill "$W/d" file)"
check room_comes_back_after_rmdir test "$n4" -gt $((n1 / 2))
check host_blocks_stay_within_the_quota_at_the_end test "$(host_blocks)" -le $Q

# The count at mount (walking the upper store) is the count kept while mounted.
f1=$(free)
check unmount do_unmount "$C"
check remount do_mount "$C"
same remount_counts_directories_and_sidecars_the_same "$(free)" "$f1"
expect_errno a_name_past_the_bound_after_remount_is_enospc ENOSPC "$P" mknod "$W/d/$LONG" fifo
check unmount_at_the_end do_unmount "$C"
finish
