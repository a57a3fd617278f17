#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Set-uid and set-gid are dropped exactly as on ext4: a write, a truncate
# or an O_TRUNC open by an unprivileged user drops S_ISUID, and S_ISGID
# where group-execute is set; root's keeps them. Each case runs on the
# mount and on a native directory in /tmp (ext4 in CI), and the modes must
# match. Where the kernel negotiates FUSE_HANDLE_KILLPRIV_V2 the daemon
# does the dropping (attr_kill_suidgid) and a write(2) no longer costs a
# GETXATTR security.capability (once per inode at most), which is counted
# from the daemon's side with strace. chown drops them for root too. security.* xattrs can't be set on the mount at all, so a write has
# no capability to remove there.
. "$(dirname "$0")/lib.sh"

runuser -u nobody -- true 2>/dev/null || skip_all "runuser cannot switch to nobody here"

make_repo "$T/repo"
C=$(make_config ws "$T/repo")
check mount_the_workspace do_mount "$C"
W=$(mnt_of "$C")/workspace
N=$T/native
mkdir -p "$N"
# nobody must reach both trees (mktemp -d made T 0700).
chmod 755 "$T" "$T/ws"
chmod 777 "$W" "$N"

as_nobody() { runuser -u nobody -- "$@"; }

# case_both NAME MODE ACTION...: a fresh file of MODE in both trees, ACTION
# run with {} for its path; it must succeed, and the modes after must be
# the same.
case_both() {
        local name=$1 mode=$2 d got=() f
        shift 2
        for d in "$W" "$N"; do
                f=$d/$name
                rm -f "$f"
                printf 'old contents\n' >"$f"
                chmod "$mode" "$f"
                "${@//\{\}/$f}" >"$T/.act" 2>&1
                got+=("$?:$(stat -c %a "$f")")
                sed 's/^/# /' "$T/.act"
        done
        same "${name}_as_on_ext4" "${got[0]}" "${got[1]}"
        LAST=${got[0]}
}

case_both setuid_written_by_nobody 4666 as_nobody sh -c 'echo x >>"$1"' sh {}
same and_the_setuid_bit_is_gone "$LAST" 0:666
case_both setgid_gx_written_by_nobody 2676 as_nobody sh -c 'echo x >>"$1"' sh {}
same and_the_setgid_bit_is_gone "$LAST" 0:676
case_both setuid_setgid_gx_written_by_nobody 6676 as_nobody sh -c 'echo x >>"$1"' sh {}
same and_both_bits_are_gone "$LAST" 0:676
case_both setuid_written_by_root 4666 sh -c 'echo x >>"$1"' sh {}
same root_keeps_the_setuid_bit "$LAST" 0:4666
case_both setgid_gx_written_by_root 2676 sh -c 'echo x >>"$1"' sh {}
same root_keeps_the_setgid_bit "$LAST" 0:2676
case_both setuid_truncated_by_nobody 4666 as_nobody truncate -s 1 {}
same a_truncate_by_nobody_drops_it "$LAST" 0:666
case_both setuid_truncated_by_root 4666 truncate -s 1 {}
same a_truncate_by_root_keeps_it "$LAST" 0:4666
case_both setuid_opened_otrunc_by_nobody 4666 as_nobody sh -c ': >"$1"' sh {}
same an_o_trunc_open_by_nobody_drops_it "$LAST" 0:666
# chown drops them for anyone, root too (FATTR_KILL_SUIDGID with the owner).
case_both setuid_chowned_by_root 4666 chown nobody {}
same a_chown_by_root_drops_setuid "$LAST" 0:666
case_both setgid_gx_chowned_by_root 2676 chown nobody {}
same a_chown_by_root_drops_setgid_gx "$LAST" 0:676
# A write of 2 MiB: large WRITEs are spliced, and their flags read from the pipe.
case_both setuid_large_write_by_nobody 4666 as_nobody dd if=/dev/zero of={} bs=1M count=2 conv=notrunc status=none
same a_large_write_by_nobody_drops_it "$LAST" 0:666
case_both setuid_large_write_by_root 4666 dd if=/dev/zero of={} bs=1M count=2 conv=notrunc status=none
same a_large_write_by_root_keeps_it "$LAST" 0:4666

# The journal records the dropped bits as a chmod by the writer.
check the_journal_records_the_drop_as_a_chmod \
        journal_has '"op":"chmod","path":"/workspace/setuid_written_by_nobody"' "$(state_of "$C")/journal.jsonl"

# security.capability: ext4 removes it on a write; the mount never holds one.
printf 'x\n' >"$N/cap" && printf 'x\n' >"$W/cap"
if setcap cap_net_raw+ep "$N/cap" 2>/dev/null; then
        echo x >>"$N/cap"
        same a_write_on_ext4_removes_security_capability "$(getcap "$N/cap")" ""
else
        skip a_write_on_ext4_removes_security_capability "setcap fails on $N"
fi
setcap cap_net_raw+ep "$W/cap" 2>/dev/null
same security_capability_cannot_be_set_on_the_mount "$?" 1
echo x >>"$W/cap"
same so_none_is_left_after_a_write "$(getcap "$W/cap")" ""

# cloister status names the data path and what the kernel negotiated.
DP=$("$CLOISTER" status --json "$C" | python3 -c 'import json, sys
d = json.load(sys.stdin)["datapath"]
print(d["transport"], d["killpriv_v2"], d["passthrough"], d["io_uring"])')
same status_json_names_the_transport_and_features "${DP% * * *}" /dev/fuse
V2=$(cut -d" " -f2 <<<"$DP")
same status_json_says_killpriv_v2_and_no_passthrough_or_io_uring "$(cut -d" " -f3- <<<"$DP")" "False False"
"$CLOISTER" status "$C" | grep -Eq "^data path   /dev/fuse; killpriv_v2 $([ "$V2" = True ] && echo yes || echo no), passthrough no, io_uring no( [(].*[)])?$"
ok $? status_prints_the_data_path_line

# Count the GETXATTRs of security.capability that writes cost: strace the
# daemon's reads of /dev/fuse (small requests are read, not spliced).
PID=$(cat "$(state_of "$C")/mount.pid")
if ! command -v strace >/dev/null; then
        skip writes_ask_no_getxattr "no strace"
else
        printf 'x\n' >"$W/count"
        chmod 666 "$W/count"
        strace -f -qq -p "$PID" -e trace=read -e read=all -o "$T/strace.out" &
        SP=$!
        # strace has attached once the daemon names it as its tracer.
        for _ in $(seq 400); do
                grep -q 'TracerPid:[[:space:]]*[1-9]' "/proc/$PID/status" && break
                sleep 0.05
        done
        as_nobody sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do echo x >>"$1"; done' sh "$W/count"
        for i in 1 2 3 4 5 6 7 8 9 10; do echo x >>"$W/count"; done
        # One GETXATTR that strace must see.
        python3 -c 'import os, sys
try: os.getxattr(sys.argv[1], "user.probe")
except OSError: pass' "$W/count"
        kill "$SP" 2>/dev/null
        wait "$SP" 2>/dev/null
        python3 - "$T/strace.out" >"$T/count.out" <<'PY'
import re, sys
# strace -e read=all dumps each read's bytes as hex lines: " | 00000  28 00 ... |"
data, reqs = bytearray(), []
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^(?:\d+\s+)?\s*\| [0-9a-f]{5}  ", line)
    if m:
        data += bytes.fromhex("".join(re.findall(r"[0-9a-f]{2}", line[m.end():m.end() + 49])))
    elif data:
        reqs.append(bytes(data)); data = bytearray()
if data:
    reqs.append(bytes(data))
GETXATTR, WRITE = 22, 16
op = lambda r: int.from_bytes(r[4:8], "little") if len(r) >= 40 else -1
print(sum(op(r) == WRITE for r in reqs),
      sum(op(r) == GETXATTR and b"security.capability" in r for r in reqs),
      sum(op(r) == GETXATTR and b"user.probe" in r for r in reqs))
PY
        read -r writes caps probes <"$T/count.out"
        echo "# strace saw $writes WRITEs, $caps GETXATTRs of security.capability, $probes of user.probe"
        same strace_sees_the_twenty_writes_and_the_probe "$writes $probes" "20 1"
        # With KILLPRIV_V2 the kernel asks once per inode at most (on the
        # first write after its mode changed), then marks it S_NOSEC; without
        # it (a kernel before 5.11), before each of the 20.
        if [ "$V2" = True ]; then
                [ "$caps" -le 1 ]
                ok $? twenty_writes_ask_security_capability_at_most_once
        else
                same without_killpriv_v2_each_write_asks "$caps" 20
        fi
fi

finish
