#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The journal as the FUSE daemon writes it: every kind of mutating operation
# on the workspace and the hidden home is recorded with its path(s), result,
# pid, uid and command name; a 16 MiB `cat > file` is a handful of entries,
# not thousands; offsets and lengths are recorded, never the data.
set -uo pipefail
: "${CLOISTER:?run through meson test}"

# With protocol 'tap', meson records a skip from a plan of 0 (exit 0).
skip() { echo "1..0 # SKIP $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root for FUSE mounts"
[ -c /dev/fuse ] || skip "no /dev/fuse"
command -v git >/dev/null || skip "no git binary"

t=$(mktemp -d /tmp/cloister-journal-mount.XXXXXX)
cleanup() {
        "$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1
        mountpoint -q "$t/mnt" && umount -l "$t/mnt"
        rm -rf "$t"
}
trap cleanup EXIT
export HOME=$t GIT_CONFIG_NOSYSTEM=1
git init -q -b main "$t/src"
(cd "$t/src" && printf 'a\n' >a.txt && mkdir d && printf 'x\n' >d/x && git add -A &&
        git -c user.name=b -c user.email=b@b commit -qm base) || { echo "Bail out! no repo"; exit 1; }
mkdir -p "$t/state" "$t/mnt"
cat >"$t/ws.ini" <<INI
[workspace]
name = jm
state = $t/state
mountpoint = $t/mnt
[repo]
source = $t/src
INI
out=$("$CLOISTER" mount "$t/ws.ini" 2>&1) || {
        case $out in *"not available"*) skip "cloister mount is not available in this build" ;; esac
        echo "Bail out! cloister mount failed: $out"
        exit 1
}
W=$t/mnt/workspace
n=0
# st: the exit status of the command just before the check.
check() { st=$?; n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }
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

J=$t/state/journal.jsonl
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
