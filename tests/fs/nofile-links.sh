#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hard links under a low RLIMIT_NOFILE (fs/ops/shed.c): a file with two names
# has two entries in the kernel's cache, and dropping the one the daemon
# knew left the other holding the node and its descriptor. The outside
# review's 400 linked pairs at a limit of 512 made the daemon hold 511
# descriptors and return EMFILE to everyone, host-side review included.
# Now the entries of a file with more than one link are not cached past
# their use, so the daemon stays below its limit whatever the agent links,
# and diff, export, log and status keep working.
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"
command -v prlimit >/dev/null || skip_all "no prlimit (util-linux)"

LIMIT=512
make_repo "$T/repo"
C=$(make_config nofilelinks "$T/repo" "
[limits]
files = 20000
")
W=$(mnt_of "$C")/workspace
mount_nofile "$C" $LIMIT
pid=$NOFILE_PID

# 800 pairs: each file made, then a second name linked to it (ln), as the
# review did; then each pair read again through both names.
check link_800_pairs_under_a_limit_of_512 python3 -c '
import os, sys
w = sys.argv[1]
os.makedirs(w + "/l")
for i in range(800):
    p = "%s/l/a%04d" % (w, i)
    with open(p, "w") as f:
        f.write("%d\n" % i)
    os.link(p, "%s/l/b%04d" % (w, i))
for i in range(800):
    for n in ("a", "b"):
        assert open("%s/l/%s%04d" % (w, n, i)).read() == "%d\n" % i, (n, i)
' "$W"
check daemon_stays_below_its_limit_with_links test "$(fds_of "$pid")" -lt $((LIMIT * 6 / 10))
same links_share_their_inode "$(stat -c %i "$W/l/a0007")" "$(stat -c %i "$W/l/b0007")"
same link_count_is_two "$(stat -c %h "$W/l/a0007")" 2
# Three names, one removed, one renamed: all still shed.
check link_chains_and_renames python3 -c '
import os, sys
w = sys.argv[1]
os.makedirs(w + "/m")
for i in range(400):
    p = "%s/m/x%04d" % (w, i)
    with open(p, "w") as f:
        f.write("m%d\n" % i)
    os.link(p, "%s/m/y%04d" % (w, i))
    os.link(p, "%s/m/z%04d" % (w, i))
    os.unlink("%s/m/y%04d" % (w, i))
    os.rename(p, "%s/m/r%04d" % (w, i))
for i in range(400):
    assert open("%s/m/z%04d" % (w, i)).read() == "m%d\n" % i
' "$W"
check daemon_stays_below_its_limit_after_chains test "$(fds_of "$pid")" -lt $((LIMIT * 6 / 10))
check host_side_status_works "$CLOISTER" status "$C"
check host_side_log_works "$CLOISTER" log "$C"
"$CLOISTER" diff "$C" --name-status >"$T/ns" 2>"$T/ns.err"
same host_side_diff_works "$(grep -c . "$T/ns") $(cat "$T/ns.err")" "2400 "
check host_side_export_works "$CLOISTER" export "$C" --mbox --message links -o "$T/links.mbox"
check an_open_file_stays_open_while_shed bash -c "exec 7<'$W/l/a0001' && cat '$W'/l/* >/dev/null && [ \"\$(cat <&7)\" = 1 ]"
check daemon_still_below_its_limit test "$(fds_of "$pid")" -lt $((LIMIT * 6 / 10))
check unmount "$CLOISTER" unmount "$C"
finish
