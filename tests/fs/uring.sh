#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# FUSE over io_uring and its fallback (fs/daemon/uring.c). With the
# kernel's enable_uring on for the test's duration (restored on every way
# out, lib.sh uring_on), a mount serves over libfuse's rings: status says
# io_uring yes, the rings' completions grow with the file work, and the
# same work passes as on /dev/fuse: create, write, read, rename, unlink,
# truncate; set-uid/set-gid dropped as on ext4 (KILLPRIV_V2 is declined on
# the rings, where its flags can't be read: the kernel drops them on a
# write or truncate, the daemon on an O_TRUNC open by a caller without
# CAP_FSETID); [limits] bytes exact under parallel writers; a journal line
# per write. Then [fs] io_uring = off, even with libfuse's own
# FUSE_URING_ENABLE=1 in the daemon's environment, serves on /dev/fuse
# with KILLPRIV_V2 and passes the same work; and with enable_uring off
# status says why.
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"
P=$FSPROBE

runuser -u nobody -- true 2>/dev/null || skip_all "runuser cannot switch to nobody here"
uring_on
chmod 755 "$T"

as_nobody() { runuser -u nobody -- "$@"; }

# datapath CONFIG: "transport io_uring killpriv_v2 why" from status --json.
datapath() {
        "$CLOISTER" status --json "$1" | python3 -c 'import json, sys
d = json.load(sys.stdin)["datapath"]
print(d["transport"], d["io_uring"], d["killpriv_v2"], d["io_uring_why"])'
}

# work TAG CONFIG: the file work, on a mounted workspace, each check named
# with TAG (uring or devfuse).
work() {
        local tag=$1 C=$2 W S m f total errs i
        W=$(mnt_of "$C")/workspace
        S=$(state_of "$C")
        chmod 755 "$(dirname "$C")"
        chmod 777 "$W"

        printf 'one\n' >"$W/new.txt"
        printf 'two\n' >>"$W/new.txt"
        same "${tag}_create_write_read" "$(cat "$W/new.txt")" "$(printf 'one\ntwo')"
        mv "$W/new.txt" "$W/moved.txt"
        same "${tag}_rename_moves_it" "$([ ! -e "$W/new.txt" ] && cat "$W/moved.txt")" "$(printf 'one\ntwo')"
        check "${tag}_truncate_down" bash -c "truncate -s 2 '$W/moved.txt' && [ \"\$(cat '$W/moved.txt')\" = on ]"
        check "${tag}_truncate_up_reads_zeros" bash -c "truncate -s 4096 '$W/moved.txt' && [ \$(stat -c %s '$W/moved.txt') = 4096 ] && [ \"\$(tail -c 1 '$W/moved.txt' | od -An -tx1 | tr -d ' ')\" = 00 ]"
        rm "$W/moved.txt"
        same "${tag}_unlink_removes_it" "$(ls -A "$W" | grep -c moved)" 0
        check "${tag}_lower_file_reads" bash -c "[ \"\$(cat '$W/README')\" = readme ]"
        check "${tag}_large_write_reads_back" bash -c "head -c 3000000 /dev/urandom >'$T/big' && cp '$T/big' '$W/big' && cmp '$T/big' '$W/big' && rm '$W/big'"

        # A journal line per write, with its offset and length.
        : >"$W/j"
        "$P" write "$W/j" 0 7 >/dev/null
        "$P" write "$W/j" 100 9 >/dev/null
        "$P" write "$W/j" 300 11 >/dev/null
        check "${tag}_journal_has_the_first_write" journal_has '"op":"write","path":"/workspace/j","offset":0,"length":7' "$S/journal.jsonl"
        check "${tag}_journal_has_the_second_write" journal_has '"op":"write","path":"/workspace/j","offset":100,"length":9' "$S/journal.jsonl"
        check "${tag}_journal_has_the_third_write" journal_has '"op":"write","path":"/workspace/j","offset":300,"length":11' "$S/journal.jsonl"

        # Set-uid/set-gid, as on ext4 (killpriv.sh has each against ext4).
        for m in "suid_write_by_nobody 4666 666 as_nobody sh -c 'echo x >>{}'" \
                "sgid_gx_write_by_nobody 2676 676 as_nobody sh -c 'echo x >>{}'" \
                "suid_write_by_root 4666 4666 sh -c 'echo x >>{}'" \
                "suid_truncate_by_nobody 4666 666 as_nobody truncate -s 1 {}" \
                "suid_truncate_by_root 4666 4666 truncate -s 1 {}" \
                "suid_otrunc_open_by_nobody 4666 666 as_nobody sh -c ': >{}'" \
                "suid_otrunc_open_by_root 4666 4666 sh -c ': >{}'" \
                "suid_chown_by_root 4666 666 chown nobody {}" \
                "suid_large_write_by_nobody 4666 666 as_nobody dd if=/dev/zero of={} bs=1M count=2 conv=notrunc status=none"; do
                set -- $m
                f=$W/$1
                rm -f "$f"
                printf 'old contents\n' >"$f"
                chmod "$2" "$f"
                local want=$3
                shift 3
                eval "${*//\{\}/$f}" >"$T/.act" 2>&1
                same "${tag}_${f##*/}_leaves_mode_$want" "$?:$(stat -c %a "$f")" "0:$want"
        done
        check "${tag}_the_journal_records_a_drop_as_a_chmod" \
                journal_has '"op":"chmod","path":"/workspace/suid_otrunc_open_by_nobody"' "$S/journal.jsonl"

        # [limits] bytes (8M here, less what is used) exact under 4 parallel writers.
        local free0
        # The files first: a late writer would find no room for its name.
        for i in 1 2 3 4; do : >"$W/fill$i"; done
        free0=$("$P" statfs "$W" | cut -d' ' -f1)
        for i in 1 2 3 4; do
                "$P" fill "$W/fill$i" 1000 >"$T/fill$i" &
        done
        wait
        total=0
        errs=""
        for i in 1 2 3 4; do
                read -r bytes err <"$T/fill$i"
                total=$((total + bytes))
                errs="$errs$err "
        done
        same "${tag}_parallel_writers_fill_the_quota_exactly" "$total" "$free0"
        same "${tag}_every_writer_stops_with_enospc" "$errs" "ENOSPC ENOSPC ENOSPC ENOSPC "
        same "${tag}_statfs_reports_nothing_left" "$("$P" statfs "$W" | cut -d' ' -f1)" 0
        rm -f "$W"/fill?
}

# A plain-directory source: usage starts at zero, so the free bytes are exact.
mkdir -p "$T/plain"
echo readme >"$T/plain/README"
LIMITS="
[limits]
bytes = 8M
"
# The copy-on-write parts on the root's connection: all the file work is on its rings.
C=$(make_config ring "$T/plain" "$LIMITS
[fs]
zero_message_opens = off
")
check mount_with_io_uring_on do_mount "$C"
PID=$(cat "$(state_of "$C")/mount.pid")
same status_json_says_io_uring "$(datapath "$C")" "io_uring True False "
"$CLOISTER" status "$C" | grep -q "^data path   io_uring; killpriv_v2 no, passthrough no, io_uring yes$"
ok $? status_prints_io_uring_yes
before=$(uring_cqes "$PID")
work uring "$C"
after=$(uring_cqes "$PID")
# Hundreds of requests went by above; a few stray ones may still use /dev/fuse.
[ "$after" -gt $((before + 100)) ]
ok $? the_rings_carried_the_file_work
check unmount_the_ring do_unmount "$C"

# The parts on connections of their own (the default): they serve on
# /dev/fuse with no OPEN per file while the root's rings stay, and the same
# work passes, set-id bits dropped as the root's negotiation decided.
C4=$(make_config ringsplit "$T/plain" "$LIMITS")
check mount_split_with_io_uring_on do_mount "$C4"
same split_status_json_says_io_uring "$(datapath "$C4")" "io_uring True False "
"$CLOISTER" status "$C4" | grep -q "^opens       no message per open file in the copy-on-write parts$"
ok $? split_status_prints_zero_message_opens
work ringsplit "$C4"
check unmount_the_split_ring do_unmount "$C4"

# The switch: /dev/fuse, even where libfuse's environment asks for its rings.
C2=$(make_config off "$T/plain" "$LIMITS
[fs]
io_uring = off
")
check mount_with_the_switch_off env FUSE_URING_ENABLE=1 "$CLOISTER" mount "$C2"
PID2=$(cat "$(state_of "$C2")/mount.pid")
DP=$(datapath "$C2")
same status_json_says_dev_fuse_switched_off "$DP" "/dev/fuse False True switched off ([fs] io_uring = off)"
"$CLOISTER" status "$C2" | grep -q "^data path   /dev/fuse; killpriv_v2 yes, passthrough no, io_uring no (switched off (\[fs\] io_uring = off))$"
ok $? status_prints_io_uring_no_and_why
same the_daemon_holds_no_ring "$(uring_rings "$PID2")" 0
work devfuse "$C2"
check unmount_the_fallback do_unmount "$C2"

# The kernel's parameter off: the fallback, and status says so.
echo N >"$URING_PARAM"
C3=$(make_config kernoff "$T/plain")
check mount_with_enable_uring_off do_mount "$C3"
same status_says_enable_uring_is_off "$(datapath "$C3")" \
        "/dev/fuse False True off in the kernel ($URING_PARAM is N)"
# A record written by a daemon from before io_uring_why still reads.
printf '{"transport":"/dev/fuse","io_uring":false,"killpriv_v2":true,"passthrough":false}\n' \
        >"$(state_of "$C3")/fs/datapath.json"
same status_reads_a_record_without_io_uring_why "$(datapath "$C3")" "/dev/fuse False True "
check unmount_the_third do_unmount "$C3"

finish
