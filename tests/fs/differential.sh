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
# Concurrency: three random-operation streams on three lower subtrees at
# once, while readers walk the whole mount; each subtree must still match.
C=$(make_config conc "$T/repo")
M=$(mnt_of "$C")
ref="$T/refconc"
mkdir -p "$ref"
(cd "$T/repo" && git -c tar.umask=022 archive HEAD | tar -x -C "$ref")
check mount_for_concurrency do_mount "$C"
pids=()
i=0
for sub in src docs empty-later; do
        i=$((i + 1))
        "$FSPROBE" fsdiff "$M/workspace/$sub" "$ref/$sub" $((20 + i)) "$ops" >"$T/conc$i" 2>&1 &
        pids+=($!)
done
( for _ in $(seq 1 40); do find "$M/workspace" -xdev >/dev/null 2>&1; ls -lR "$M" >/dev/null 2>&1; done ) &
reader=$!
i=0
for p in "${pids[@]}"; do
        i=$((i + 1))
        wait "$p"
        rc=$?
        if [ "$rc" != 0 ]; then sed 's/^/# /' "$T/conc$i" | tail -15; fi
        ok "$rc" "concurrent_random_ops_match_stream_$i"
done
wait "$reader"
check whole_tree_matches_after_concurrent_streams "$FSPROBE" fsdiff "$M/workspace" "$ref" 1 0
check unmount_after_concurrency do_unmount "$C"

# The same against a plain-directory lower (a non-git workspace; the home's kind).
mkdir -p "$T/plainsrc"
(cd "$T/repo" && git -c tar.umask=022 archive HEAD | tar -x -C "$T/plainsrc")
C=$(make_config plain "$T/plainsrc")
M=$(mnt_of "$C")
mkdir -p "$T/refplain"
(cd "$T/repo" && git -c tar.umask=022 archive HEAD | tar -x -C "$T/refplain")
check mount_plain_directory_source do_mount "$C"
check random_ops_match_the_host_fs_on_a_plain_lower "$FSPROBE" fsdiff "$M/workspace" "$T/refplain" 11 "$ops"
check unmount_plain do_unmount "$C"
check remount_plain do_mount "$C"
check plain_trees_still_match_after_remount "$FSPROBE" fsdiff "$M/workspace" "$T/refplain" 11 0
check plain_source_is_untouched bash -c "cd '$T/repo' && git -c tar.umask=022 archive HEAD | tar -d -C '$T/plainsrc' >/dev/null"
check unmount_plain_again do_unmount "$C"
finish
