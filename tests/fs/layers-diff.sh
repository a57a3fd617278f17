#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The seeded randomized differential test across layers: random operations
# on the workspace and on a plain host copy, with a checkpoint (mounted)
# between rounds, so that every later round renames, links, removes and
# rewrites what lies in frozen layers; then a fork of one checkpoint and a
# restore to another go on the same way. Every operation must answer as
# the host's and the trees must match (names, types, modes, sizes,
# contents, link counts, xattrs), also across remounts.
# FS_DIFF_OPS overrides the operations per round, FS_DIFF_SEED (added to
# every round's seed) the random choices.
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"

make_repo "$T/repo"
ops=${FS_DIFF_OPS:-400}
s0=${FS_DIFF_SEED:-0}
C=$(make_config ws "$T/repo")
M=$(mnt_of "$C")
W=$M/workspace
ref=$T/ref
mkdir -p "$ref"
(cd "$T/repo" && git -c tar.umask=022 archive HEAD | tar -x -C "$ref")
check mount do_mount "$C"
for round in 1 2 3 4; do
        check "round_${round}_random_ops_match" "$FSPROBE" fsdiff "$W" "$ref" "$round" "$ops"
        cp -a "$ref" "$T/ref.c$round"
        check "round_${round}_checkpoint_while_mounted" "$CLOISTER" checkpoint "$C" "c$round"
        check "round_${round}_trees_match_after_the_checkpoint" "$FSPROBE" fsdiff "$W" "$ref" "$round" 0
done
check more_random_ops_over_four_frozen_layers "$FSPROBE" fsdiff "$W" "$ref" $((s0 + 5)) "$ops"
check unmount do_unmount "$C"
check remount do_mount "$C"
check trees_match_after_remount "$FSPROBE" fsdiff "$W" "$ref" $((s0 + 5)) 0

# A fork of c2: the tree of then, and random operations from there.
F=$T/fork.ini
check fork_of_c2 "$CLOISTER" fork "$C" "$F" --from c2
CONFIGS+=("$F")
FW=$(sed -n 's/^state = //p' "$F")/mnt/workspace
check mount_fork "$CLOISTER" mount "$F"
check fork_tree_is_the_checkpoints "$FSPROBE" fsdiff "$FW" "$T/ref.c2" $((s0 + 6)) 0
check random_ops_in_the_fork_match "$FSPROBE" fsdiff "$FW" "$T/ref.c2" $((s0 + 6)) "$ops"
check checkpoint_the_fork "$CLOISTER" checkpoint "$F" f1
check more_random_ops_in_the_fork "$FSPROBE" fsdiff "$FW" "$T/ref.c2" $((s0 + 7)) "$ops"
check unmount_fork "$CLOISTER" unmount "$F"
check remount_fork "$CLOISTER" mount "$F"
check fork_tree_matches_after_remount "$FSPROBE" fsdiff "$FW" "$T/ref.c2" $((s0 + 7)) 0
check parent_is_untouched_by_the_fork "$FSPROBE" fsdiff "$W" "$ref" $((s0 + 5)) 0
check unmount_fork_again "$CLOISTER" unmount "$F"

# A restore to c3: the tree of then, and random operations from there.
check unmount_for_restore do_unmount "$C"
check restore_c3 "$CLOISTER" restore "$C" c3
check mount_restored do_mount "$C"
check restored_tree_is_the_checkpoints "$FSPROBE" fsdiff "$W" "$T/ref.c3" $((s0 + 8)) 0
check random_ops_after_restore_match "$FSPROBE" fsdiff "$W" "$T/ref.c3" $((s0 + 8)) "$ops"
check unmount_restored do_unmount "$C"
check remount_restored do_mount "$C"
check restored_tree_matches_after_remount "$FSPROBE" fsdiff "$W" "$T/ref.c3" $((s0 + 8)) 0
check unmount_at_end do_unmount "$C"
finish
