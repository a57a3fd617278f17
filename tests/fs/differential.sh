#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The seeded randomized differential test: thousands of random operations
# on the mounted workspace and on a plain copy of the same tree on the host
# filesystem must give the same results and leave the same trees, before
# and after a remount. FS_DIFF_SEEDS / FS_DIFF_OPS override the defaults.
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"

make_repo "$T/repo"
seeds=${FS_DIFF_SEEDS:-"1 2 3"}
ops=${FS_DIFF_OPS:-2000}
for seed in $seeds; do
        C=$(make_config "d$seed" "$T/repo")
        M=$(mnt_of "$C")
        ref="$T/ref$seed"
        mkdir -p "$ref"
        (cd "$T/repo" && git -c tar.umask=022 archive HEAD | tar -x -C "$ref")
        check "mount_for_seed_$seed" do_mount "$C"
        check "random_ops_match_the_host_fs_seed_$seed" "$FSPROBE" fsdiff "$M/workspace" "$ref" "$seed" "$ops"
        check "unmount_for_seed_$seed" do_unmount "$C"
        check "remount_for_seed_$seed" do_mount "$C"
        # Zero operations: only the comparison of the two trees.
        check "trees_still_match_after_remount_seed_$seed" "$FSPROBE" fsdiff "$M/workspace" "$ref" "$seed" 0
        check "unmount_again_seed_$seed" do_unmount "$C"
done
finish
