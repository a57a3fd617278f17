#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The copy-on-write parts on FUSE connections of their own, which send no
# OPEN, RELEASE or FLUSH (fs/daemon/parts.c, docs/fs-design.md "Zero-message
# opens"). Each part is a mount over its directory of the root's; status
# says so. What an open file's handle carried is made per request, and
# every guarantee holds: files held open cost the daemon no descriptor; a
# file open for writing across a checkpoint writes into the new layer while
# the checkpoint keeps what it had; an O_TRUNC open truncates (a SETATTR
# now) and is journalled; a removed file still open keeps its bytes counted
# until the kernel lets it go, then gives them back; reads of lower files,
# large and small, shared mmap writes, fsync and O_EXCL creates work; a
# rename between parts is EXDEV. [fs] zero_message_opens = off keeps the
# parts on the root's connection, and status says why.
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"
P=$FSPROBE

make_repo "$T/repo"
head -c 300000 /dev/urandom >"$T/repo/large.bin"
git_quiet -C "$T/repo" add -A
git_quiet -C "$T/repo" commit -m large
C=$(make_config zo "$T/repo" "
[home]
path = /home/agent

[limits]
bytes = 8M
files = 5000
")
M=$(mnt_of "$C")
W=$M/workspace
S=$(state_of "$C")
free() { "$P" statfs "$W" | cut -d' ' -f1; }
# mount_at PATH: the fsname of the mount whose mountpoint is PATH, or nothing
mount_at() { awk -v p="$1" '$5 == p { for (i = 7; i <= NF; i++) if ($i == "-") { print $(i + 2); exit } }' /proc/self/mountinfo; }

check mount_succeeds do_mount "$C"
pid=$(cat "$S/mount.pid")
id=$(mount_at "$M")
check the_root_is_a_cloister_mount test -n "$id"
same the_workspace_is_a_mount_of_its_own "$(mount_at "$W")" "$id"
same the_home_is_a_mount_of_its_own "$(mount_at "$M/home/agent")" "$id"
same status_json_says_zero_message_opens "$("$CLOISTER" status --json "$C" | python3 -c 'import json, sys
d = json.load(sys.stdin)["datapath"]
print(d["zero_message_opens"], repr(d["zero_message_opens_why"]))')" "True ''"
"$CLOISTER" status "$C" | grep -q "^opens       no message per open file in the copy-on-write parts$"
ok $? status_prints_zero_message_opens

# Lower files, small (from memory) and large (the blob's cache file).
same a_small_lower_file_reads "$(cat "$W/README")" hello
check a_large_lower_file_reads cmp "$T/repo/large.bin" "$W/large.bin"
check a_large_lower_file_reads_at_an_offset bash -c "[ \"\$(tail -c 1000 '$W/large.bin' | od -An -tx1)\" = \"\$(tail -c 1000 '$T/repo/large.bin' | od -An -tx1)\" ]"

# Files held open cost the daemon nothing: no OPEN reaches it.
before=$(fds_of "$pid")
held=()
for f in README src/main.c src/lib/a.c src/lib/b.c docs/guide.md large.bin run.sh; do
        for i in 1 2 3 4 5 6 7 8 9 10; do
                exec {fd}<"$W/$f"
                held+=("$fd")
        done
done
held_fds=$(fds_of "$pid")
for fd in "${held[@]}"; do exec {fd}<&-; done
check seventy_files_held_open_take_no_descriptor_of_the_daemon test "$held_fds" -le $((before + 2))

# O_TRUNC: a SETATTR of size 0 on this connection (no ATOMIC_O_TRUNC), journalled.
printf 'long old contents\n' >"$W/t.txt"
printf 'new\n' >"$W/t.txt"
same an_otrunc_open_truncates "$(cat "$W/t.txt")" new
same an_otrunc_open_of_a_lower_file_truncates "$(: >"$W/docs/guide.md"; stat -c %s "$W/docs/guide.md")" 0
check the_journal_records_the_truncate journal_has '"op":"truncate","path":"/workspace/docs/guide.md"' "$S/journal.jsonl"
printf 'more\n' >>"$W/t.txt"
same an_append_appends "$(cat "$W/t.txt")" "$(printf 'new\nmore')"
expect_errno an_exclusive_create_of_an_existing_file_is_eexist EEXIST "$P" open "$W/t.txt" w,creat,excl
: >"$W/mapped"
"$P" truncate "$W/mapped" 65536 >/dev/null
check shared_mmap_writes_work "$P" mmapwrite "$W/mapped" 65536
same shared_mmap_writes_reach_the_store "$(tr -d m <"$S/fs/repo/mapped" | wc -c)" 0
check fsync_of_a_written_file_works python3 -c "
import os
fd = os.open('$W/t.txt', os.O_WRONLY | os.O_APPEND)
os.write(fd, b'synced\n')
os.fsync(fd)
os.fdatasync(fd)
os.close(fd)
fd = os.open('$W/README', os.O_RDONLY)
os.fsync(fd)
os.close(fd)"
same the_synced_write_is_there "$(tail -n 1 "$W/t.txt")" synced

# A file open for writing across a checkpoint: its next write goes to the
# new writable layer (the handle made for it sees the checkpoint's count),
# the checkpoint keeps what the file held.
exec 7>>"$W/src/lib/a.c"
echo "before" >&7
check checkpoint_with_a_file_open_for_writing "$CLOISTER" checkpoint "$C" c1
echo "after" >&7
exec 7>&-
same the_file_has_both_writes "$(cat "$W/src/lib/a.c")" "$(printf 'lib\nbefore\nafter')"
same the_checkpoint_keeps_the_first "$(cat "$(layer_dir "$C" c1)/src/lib/a.c")" "$(printf 'lib\nbefore')"
top=$(python3 -c 'import json, os, sys
print(os.path.join(sys.argv[1], json.load(open(sys.argv[1] + "/fs/layers.json"))["top"]))' "$S")
same the_new_layer_has_the_second "$(cat "$top/src/lib/a.c")" "$(printf 'lib\nbefore\nafter')"
check the_journal_records_the_write_after journal_has '"op":"write","path":"/workspace/src/lib/a.c"' "$S/journal.jsonl"

# Writes through one descriptor racing checkpoints: a write that made its
# handle before a checkpoint and reached the write gate after it is made
# again on the new layer (-ERESTART), so none is lost or lands in a frozen
# layer: the file ends with every line in order, and each checkpoint holds
# a whole prefix of them.
python3 - "$W/race.log" >"$T/race.out" 2>&1 <<'PY' &
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for i in range(3000):
    os.write(fd, b"line %05d\n" % i)
os.close(fd)
PY
writer=$!
cps=0
for i in 1 2 3 4 5; do
        "$CLOISTER" checkpoint "$C" "r$i" >/dev/null 2>&1 && cps=$((cps + 1))
done
wait "$writer"
same checkpoints_while_writing_succeed "$cps" 5
same every_line_is_there_in_order "$(cat "$W/race.log" | md5sum)" "$(for i in $(seq 0 2999); do printf 'line %05d\n' "$i"; done | md5sum)"
prefixes=0
for i in 1 2 3 4 5; do
        f=$(layer_dir "$C" "r$i")/race.log
        if [ ! -e "$f" ] || cmp -s "$f" <(head -c "$(stat -c %s "$f")" "$W/race.log"); then
                prefixes=$((prefixes + 1))
        fi
done
same each_checkpoint_holds_a_prefix "$prefixes" 5

# A removed file still open keeps its bytes until the kernel lets it go.
f0=$(free)
: >"$W/gone"
"$P" write "$W/gone" 0 1048576 >/dev/null
exec 8<"$W/gone"
rm "$W/gone"
f1=$(free)
check a_removed_open_file_still_costs_its_bytes test $((f0 - f1)) -ge 1048576
same a_removed_open_file_still_reads "$(head -c 4 <&8 | wc -c)" 4
exec 8<&-
# The kernel's FORGET of the file comes with its last close; served before
# the next request on the connection, but wait for it if it is late.
for i in $(seq 100); do [ "$(free)" = "$f0" ] && break; sleep 0.1; done
same its_bytes_come_back_once_closed "$(free)" "$f0"
same a_removed_unopened_file_gives_its_bytes_back_at_once "$(: >"$W/g2"; "$P" write "$W/g2" 0 65536 >/dev/null; rm "$W/g2"; free)" "$f0"

# Between parts: two file systems.
expect_errno a_rename_from_the_workspace_to_the_home_is_exdev EXDEV "$P" rename "$W/t.txt" "$M/home/agent/t.txt"
check the_home_is_written_and_read bash -c "echo home >'$M/home/agent/h' && [ \"\$(cat '$M/home/agent/h')\" = home ]"
check unmount do_unmount "$C"
same no_part_stays_mounted "$(awk -v m="$M" 'index($5, m) == 1' /proc/self/mountinfo | wc -l)" 0

# A part's connection that ends under a live daemon (aborted through
# fusectl here) ends the daemon, as the root's would: left alone,
# /workspace would answer ENOTCONN under a mount that looks alive, and
# never be mounted afresh.
C3=$(make_config abort "$T/repo")
M3=$(mnt_of "$C3")
check mount_the_one_to_abort do_mount "$C3"
pid3=$(cat "$(state_of "$C3")/mount.pid")
conns=/sys/fs/fuse/connections
if [ -w "$conns/$(stat -c %Ld "$M3/workspace")/abort" ]; then
        echo 1 >"$conns/$(stat -c %Ld "$M3/workspace")/abort"
        for i in $(seq 300); do kill -0 "$pid3" 2>/dev/null || break; sleep 0.1; done
        check an_aborted_part_ends_the_daemon bash -c "! kill -0 $pid3 2>/dev/null"
        check its_log_says_why grep -q "is no longer served" "$(state_of "$C3")/fs/daemon.log"
        check it_mounts_afresh do_mount "$C3"
        same and_serves_again "$(cat "$M3/workspace/README")" hello
        check unmount_the_remounted do_unmount "$C3"
else
        skip an_aborted_part_ends_the_daemon "no fusectl ($conns) to abort a connection with"
        check unmount_the_unaborted do_unmount "$C3"
fi

# The switch: one mount, every open an OPEN, and status says why.
C2=$(make_config off "$T/repo" "
[fs]
zero_message_opens = off
")
M2=$(mnt_of "$C2")
check mount_with_the_switch_off do_mount "$C2"
same the_workspace_is_no_mount_of_its_own "$(mount_at "$M2/workspace")" ""
same status_json_says_why_not "$("$CLOISTER" status --json "$C2" | python3 -c 'import json, sys
d = json.load(sys.stdin)["datapath"]
print(d["zero_message_opens"], d["zero_message_opens_why"])')" "False [fs] zero_message_opens = off"
"$CLOISTER" status "$C2" | grep -q "^opens       an OPEN and a RELEASE per open file (\[fs\] zero_message_opens = off)$"
ok $? status_prints_why_not
same it_reads_and_writes "$(echo x >"$M2/workspace/n" && cat "$M2/workspace/n" "$M2/workspace/README")" "$(printf 'x\nhello')"
check unmount_the_switched_off do_unmount "$C2"
finish
