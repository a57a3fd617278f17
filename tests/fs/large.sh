#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Big and awkward data: copy-up of a 100 MB lower file, sparse files,
# concurrent writers to one file, and writes in flight when the daemon is
# killed.
. "$(dirname "$0")/lib.sh"
: "${FSPROBE:?set by meson}"

mkdir -p "$T/repo"
git_quiet -C "$T/repo" init
head -c $((100 * 1024 * 1024)) /dev/urandom >"$T/repo/big.bin"
# The byte the test overwrites with 'X' must not be one already (1 in 256).
printf 'a' | dd of="$T/repo/big.bin" bs=1 seek=$((50 * 1024 * 1024)) conv=notrunc status=none
echo small >"$T/repo/small"
mkdir "$T/repo/many"
(cd "$T/repo/many" && for f in $(seq -f 'f%04g' 1 3000); do echo "$f" >"$f"; done)
git_quiet -C "$T/repo" add -A
git_quiet -C "$T/repo" commit -m big
sum=$(sha256sum <"$T/repo/big.bin")
C=$(make_config large "$T/repo")
M=$(mnt_of "$C")
W=$M/workspace
S=$(state_of "$C")
check mount_large do_mount "$C"
same big_lower_file_reads_correctly "$(sha256sum <"$W/big.bin")" "$sum"
printf 'X' | dd of="$W/big.bin" bs=1 seek=$((50 * 1024 * 1024)) conv=notrunc status=none
same big_file_keeps_its_size_after_copy_up "$(stat -c %s "$W/big.bin")" $((100 * 1024 * 1024))
same big_file_copy_up_changed_one_byte "$(cmp "$W/big.bin" "$T/repo/big.bin" 2>&1 | grep -c differ)" 1
same big_file_byte_is_written "$(dd if="$W/big.bin" bs=1 skip=$((50 * 1024 * 1024)) count=1 status=none)" X
same source_big_file_untouched "$(sha256sum <"$T/repo/big.bin")" "$sum"

truncate -s 64M "$W/sparse"
printf 'end' | dd of="$W/sparse" bs=1 seek=$((40 * 1024 * 1024)) conv=notrunc status=none
same sparse_file_has_its_size "$(stat -c %s "$W/sparse")" $((64 * 1024 * 1024))
check sparse_file_stays_sparse_in_the_upper bash -c "[ \$(stat -c %b '$S/fs/repo/sparse') -lt 1024 ]"
same sparse_hole_reads_as_zeros "$(dd if="$W/sparse" bs=4096 skip=100 count=1 status=none | tr -d '\0' | wc -c)" 0
same sparse_data_reads_back "$(dd if="$W/sparse" bs=1 skip=$((40 * 1024 * 1024)) count=3 status=none)" end

# The largest file the store takes is the largest the mount takes: found by
# bisection here, on the state's own file system, and probed by the daemon.
# A workspace of its own (its quota refuses the size with ENOSPC, after the
# size check: what must not come is EFBIG).
CX=$(make_config maxsize "$T/repo")
WX=$(mnt_of "$CX")/workspace
check mount_maxsize do_mount "$CX"
host_max=$(python3 - "$(state_of "$CX")" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR, 0o600)
lo, hi = 0, 2**63 - 1
try:
    os.ftruncate(fd, hi)
    lo = hi
except OSError:
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        try:
            os.ftruncate(fd, mid)
            lo = mid
        except OSError:
            hi = mid
print(lo)
PY
)
if [ "$host_max" != 9223372036854775807 ]; then
        out=$(truncate -s "$host_max" "$WX/huge" 2>&1)
        same file_of_the_stores_largest_size_is_not_efbig "$(grep -c 'File too large' <<<"$out")" 0
        same one_byte_more_is_efbig "$(truncate -s $((host_max + 1)) "$WX/huge" 2>&1 |
                grep -c 'File too large')" 1
else
        ok 0 "file_of_the_stores_largest_size_is_not_efbig # SKIP the state's file system takes any off_t"
        ok 0 "one_byte_more_is_efbig # SKIP the state's file system takes any off_t"
fi
check unmount_maxsize do_unmount "$CX"

# 8 writers, each writing its own 1 MiB region of one file, at once.
: >"$W/shared"
for i in 0 1 2 3 4 5 6 7; do
        head -c 1048576 /dev/zero | tr '\0' "$(printf "\\$(printf '%03o' $((65 + i)))")" |
                dd of="$W/shared" bs=65536 seek=$((i * 16)) conv=notrunc status=none &
done
wait
same concurrent_writers_leave_the_full_size "$(stat -c %s "$W/shared")" $((8 * 1048576))
check concurrent_writers_each_own_their_region bash -c "for i in 0 1 2 3 4 5 6 7; do c=\$(printf \"\\\\\$(printf '%03o' \$((65 + i)))\"); n=\$(dd if='$W/shared' bs=1048576 skip=\$i count=1 status=none | tr -d \"\$c\" | wc -c); [ \"\$n\" = 0 ] || exit 1; done"
# A removed file's blocks are freed when the daemon closes its last fd, in a
# thread of its own (fs/core/reap.c): that close must still come, and soon.
head -c $((64 * 1024 * 1024)) /dev/zero >"$W/gone.bin"
check removed_file_is_held_while_it_has_a_name bash -c "ls -l /proc/$(cat "$S/mount.pid")/fd | grep -q '/gone.bin\$'"
rm "$W/gone.bin"
check removed_file_is_closed_by_the_daemon bash -c "for i in \$(seq 100); do ls -l /proc/$(cat "$S/mount.pid")/fd | grep -q 'gone.bin (deleted)' || exit 0; sleep 0.1; done; exit 1"

# 3,000 metadata changes in one dir: one sidecar of records far larger than
# one read, read back whole by the next mount (a record lost there would
# leave an empty upper file where the lower data should show).
chmod 600 "$W"/many/f*
touch -d 2001-02-03T04:05:06 "$W/many/f2999"
check unmount_after_many_changes do_unmount "$C"
check many_changes_make_a_big_sidecar bash -c "[ \$(cat '$S'/fs/repo/many/.cloister~* | wc -c) -gt 200000 ]"
check mount_with_a_big_sidecar do_mount "$C"
same every_change_in_a_big_sidecar_is_kept "$(stat -c %a "$W"/many/f* | sort | uniq -c | tr -s ' ')" " 3000 600"
same data_of_every_metacopy_in_a_big_sidecar_reads "$(cat "$W"/many/f* | md5sum)" "$(cat "$T"/repo/many/f* | md5sum)"
same last_record_of_a_big_sidecar_is_kept "$(stat -c %Y "$W/many/f2999")" "$(date -d 2001-02-03T04:05:06 +%s)"

# Kill the daemon while a writer streams; the next mount accepts the state.
( while :; do echo line >>"$W/stream" 2>/dev/null || exit 0; done ) &
writer=$!
sleep 0.3
kill -9 "$(cat "$S/mount.pid")"
wait "$writer" 2>/dev/null
check mount_after_sigkill_mid_write do_mount "$C"
check stream_file_has_whole_lines bash -c "[ -z \"\$(grep -v '^line\$' '$W/stream')\" ]"
same big_file_still_intact_after_sigkill "$(dd if="$W/big.bin" bs=1 skip=$((50 * 1024 * 1024)) count=1 status=none)" X
check unmount_large do_unmount "$C"
finish
