#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The journal as the FUSE daemon writes it: every kind of mutating operation
# on the workspace and the hidden home is recorded with its path(s), result,
# pid, uid and command name; a 16 MiB `cat > file` is a handful of entries,
# not thousands; offsets and lengths are recorded, never the data.
. "$CLOISTER_SRC/tests/review/lib.sh"
need_mount

make_src 'printf "a\n" >a.txt && mkdir d && printf "x\n" >d/x'
write_config jm
mount_ws
echo "1..8"

head -c 16777216 /dev/zero | tr '\0' 'z' >"$t/big.src"
t0=$(date +%s%N)
cat "$t/big.src" >"$W/big"
# An entry is written at most 200 ms after its first write: a slow machine
# may make a few more, never more than one per 200 ms the cat took.
most=$(( ($(date +%s%N) - t0) / 200000000 + 2 ))
[ "$most" -lt 64 ] && most=64
mkdir "$W/newdir"
mv "$W/a.txt" "$W/newdir/b.txt"
chmod +x "$W/newdir/b.txt"
ln -s b.txt "$W/newdir/link"
truncate -s 10 "$W/d/x"
rm "$W/d/x"
rmdir "$W/d"
mkdir -p "$t/mnt/home/agent"
printf 'h\n' >"$t/mnt/home/agent/note"
rm "$W/does-not-exist" 2>/dev/null
"$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1 # flushes pending entries

"$CLOISTER" log "$t/ws.ini" --json >"$t/log.json" 2>"$t/log.err"
check "journal_reads_back_without_damage" '[ $st -eq 0 ] && [ -s "$t/log.json" ] && [ ! -s "$t/log.err" ]'
check "every_operation_kind_is_recorded_with_its_paths" \
        'grep -q "\"op\":\"create\",\"path\":\"/workspace/big\"" "$J" && grep -q "\"op\":\"mkdir\",\"path\":\"/workspace/newdir\"" "$J" && grep -q "\"op\":\"rename\",\"path\":\"/workspace/a.txt\",\"path2\":\"/workspace/newdir/b.txt\"" "$J" && grep -q "\"op\":\"chmod\"" "$J" && grep -q "\"op\":\"symlink\",\"path\":\"/workspace/newdir/link\"" "$J" && grep -q "\"op\":\"truncate\",\"path\":\"/workspace/d/x\"" "$J" && grep -q "\"op\":\"unlink\",\"path\":\"/workspace/d/x\"" "$J" && grep -q "\"op\":\"rmdir\",\"path\":\"/workspace/d\"" "$J"'
check "hidden_home_operations_are_journaled_too" 'grep -q "\"path\":\"/home/agent/note\"" "$J"'
writes=$(grep -c '"op":"write","path":"/workspace/big"' "$J")
check "a_16_MiB_cat_is_a_handful_of_write_entries_not_thousands ($writes, at most $most)" '[ "$writes" -ge 1 ] && [ "$writes" -le "$most" ]'
check "coalesced_writes_cover_the_whole_file" \
        '[ "$(grep "\"op\":\"write\",\"path\":\"/workspace/big\"" "$J" | sed "s/.*\"length\":\([0-9]*\).*/\1/" | awk "{ s += \$1 } END { print s }")" -eq 16777216 ]'
check "entries_name_the_calling_command_pid_and_uid" \
        'grep "\"op\":\"rename\"" "$J" | grep -q "\"pid\":[1-9][0-9]*,\"uid\":0,\"gid\":0,\"comm\":\"mv\"" && grep "\"op\":\"write\",\"path\":\"/workspace/big\"" "$J" | head -1 | grep -q "\"comm\":\"cat\""'
check "no_file_data_is_ever_in_the_journal" '! grep -q zzzz "$J"'
"$CLOISTER" log "$t/ws.ini" --path '/workspace/newdir/*' >"$t/log.txt"
check "log_filters_by_path_glob" \
        '[ $st -eq 0 ] && grep -q "symlink .*/workspace/newdir/link" "$t/log.txt" && ! grep -q "/workspace/big" "$t/log.txt"'
