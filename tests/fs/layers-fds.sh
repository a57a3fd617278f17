#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A checkpoint of a mounted workspace costs no descriptor per node the
# kernel holds (docs/fs-design.md, "Checkpoint while mounted"): each node
# hands its own descriptor over to the frozen entry it becomes. Under an
# RLIMIT_NOFILE of 1,024, with 340 written files held open (their nodes
# hold a descriptor each and their handles another, and the daemon drops
# no entry in use: fs/ops/shed.c), the checkpoint succeeds; a second
# descriptor per node, as the switch once took, would not fit. The daemon
# holds no more descriptors afterwards than before. A file open for
# writing whose copy into the new layer cannot fit the quota is named, the
# checkpoint stands, and writes through that handle fail.
#
# All of this is about open files' handles, which only the root's
# connection makes (zero_message_opens = off); with the parts on their own
# connections nothing is held per open file (tests/fs/zero-open.sh).
. "$(dirname "$0")/lib.sh"
command -v prlimit >/dev/null || skip_all "no prlimit (util-linux)"

LIMIT=1024
FILES=700
OPEN=340
make_repo "$T/repo"
C=$(make_config fds "$T/repo" "
[limits]
bytes = 4M
files = 5000

[fs]
zero_message_opens = off
")
W=$(mnt_of "$C")/workspace

mount_nofile "$C" $LIMIT
pid=$NOFILE_PID

mkdir "$W/many"
for ((i = 0; i < FILES; i++)); do
        echo "$i" >"$W/many/f$i"
done
held=()
for ((i = 0; i < OPEN; i++)); do
        exec {fd}<"$W/many/f$i"
        held+=("$fd")
done
before=$(fds_of "$pid")
# The test means something only if a descriptor more per held node would not fit.
check a_descriptor_per_held_node_more_would_not_fit test $((before + OPEN)) -gt $LIMIT
check checkpoint_with_the_files_held "$CLOISTER" checkpoint "$C" c1
after=$(fds_of "$pid")
same held_files_read_after_the_switch "$(for fd in "${held[@]}"; do cat <&"$fd"; done | wc -l)" "$OPEN"
for fd in "${held[@]}"; do exec {fd}<&-; done
check no_descriptor_per_node_after_the_switch test "$after" -le $((before + 16))
same every_file_reads_after_the_switch "$(cat "$W"/many/f* | wc -l)" "$FILES"
echo changed >"$W/many/f1"
same a_frozen_file_is_written_again "$(cat "$W/many/f1")" changed
same the_checkpoint_keeps_it "$(cat "$(layer_dir "$C" c1)/many/f1")" 1
check a_second_checkpoint_works "$CLOISTER" checkpoint "$C" c2

# A file open for writing that the quota has no room to copy: 3 MiB of 4.
head -c $((3 << 20)) /dev/zero >"$W/big"
exec 7>>"$W/big"
check checkpoint_with_an_uncarried_file bash -c "'$CLOISTER' checkpoint --json '$C' c3 >'$T/out' 2>'$T/err'"
check stderr_names_the_uncarried_file grep -q "could not be carried.*big" "$T/err"
check json_counts_it python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
assert j["not_carried"] == 1 and "big" in j["not_carried_first"], j' "$T/out"
check the_checkpoint_stands bash -c "'$CLOISTER' checkpoint --list '$C' | grep -q '^c3 '"
check write_through_the_uncarried_handle_fails bash -c "! echo x >&7"
exec 7>&-
check unmount "$CLOISTER" unmount "$C"
finish
