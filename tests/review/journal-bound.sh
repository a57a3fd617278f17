#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The journal cannot grow the host's disk without bound ([limits] journal):
# a loop of one chmod is a few entries with a count, not one line per call;
# at the bound the journal is cut with one mark and every later change fails
# with EDQUOT before it happens; nothing acknowledged is missing from it;
# `cloister log` says it was cut; `cloister diff` still shows every change,
# because it reads the upper layers (the changes list), not the journal.
set -uo pipefail
: "${CLOISTER:?run through meson test}"

skip() { echo "1..0 # SKIP $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root for FUSE mounts"
[ -c /dev/fuse ] || skip "no /dev/fuse"
command -v git >/dev/null || skip "no git binary"
command -v python3 >/dev/null || skip "no python3 (the loops and the checks)"

t=$(mktemp -d /tmp/cloister-journal-bound.XXXXXX)
cleanup() {
        "$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1
        mountpoint -q "$t/mnt" && umount -l "$t/mnt"
        rm -rf "$t"
}
trap cleanup EXIT
export HOME=$t GIT_CONFIG_NOSYSTEM=1
git init -q -b main "$t/src"
(cd "$t/src" && printf 'x\n' >x && printf 'y\n' >y && git add -A &&
        git -c user.name=b -c user.email=b@b commit -qm base) || { echo "Bail out! no repo"; exit 1; }
mkdir -p "$t/state" "$t/mnt"
ini() { # JOURNAL_BOUND
        cat >"$t/ws.ini" <<INI
[workspace]
name = jb
state = $t/state
mountpoint = $t/mnt
[repo]
source = $t/src
[limits]
journal = $1
INI
}
mount_ws() {
        local out
        out=$("$CLOISTER" mount "$t/ws.ini" 2>&1) && return 0
        case $out in *"not available"*) skip "cloister mount is not available in this build" ;; esac
        echo "Bail out! cloister mount failed: $out"
        exit 1
}
ini 1M
mount_ws
W=$t/mnt/workspace J=$t/state/journal.jsonl
n=0
check() { st=$?; n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }
echo "1..10"

# --- one operation, 20,000 times ---------------------------------------------
python3 -c 'import os, sys
for _ in range(20000): os.chmod(sys.argv[1], 0o644)' "$W/x"
# The last window's count is written up to JOURNAL_COALESCE_MS (200 ms)
# after its first chmod, by design: read until it is in, for up to 5 s
# (a loaded machine's flusher may be late), not just once at once.
for _ in $(seq 50); do
        read -r entries total < <(python3 - "$J" <<'PY'
import json, sys
n = total = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("op") == "chmod" and e.get("path") == "/workspace/x":
        n += 1
        total += e.get("count", 1)
print(n, total)
PY
)
        [ "$total" -ge 20000 ] && break
        sleep 0.1
done
echo "# 20000 chmods: $entries entries, counting $total"
check "a_loop_of_one_chmod_is_a_few_entries_with_a_count" \
        '[ "$total" -eq 20000 ] && [ "$entries" -lt 2000 ]'
"$CLOISTER" log "$t/ws.ini" --path /workspace/x >"$t/log.x"
check "log_prints_how_many_times_an_entry_was_repeated" 'grep -q "chmod .*/workspace/x mode 0644 .*\[[0-9]* times\]" "$t/log.x"'

# --- up to the bound ----------------------------------------------------------
mkdir -p "$t/mnt/home/agent" && printf 'h\n' >"$t/mnt/home/agent/note"
printf 'changed\n' >"$W/y"
# Alternating modes: nothing to coalesce, one line each, until the bound.
python3 - "$W/y" >"$t/loop.out" <<'PY'
import errno, os, sys
ok = 0
while True:
    try:
        os.chmod(sys.argv[1], 0o600 if ok % 2 else 0o640)
    except OSError as e:
        print(ok, errno.errorcode.get(e.errno, e.errno))
        break
    ok += 1
    if ok > 200000:
        print(ok, "no-error")
        break
PY
read -r ok err <"$t/loop.out"
echo "# $ok chmods acknowledged, then $err"
check "changes_past_the_bound_fail_with_EDQUOT" '[ "$err" = EDQUOT ] && [ "$ok" -gt 100 ]'
mkdir "$W/after" 2>/dev/null
check "a_refused_change_does_not_happen" '[ $st -ne 0 ] && [ ! -e "$W/after" ] && ! printf z >"$W/z" 2>/dev/null && [ ! -e "$W/z" ]'
journaled=$(python3 - "$J" <<'PY'
import json, sys
print(sum(1 for l in open(sys.argv[1])
          if json.loads(l).get("op") == "chmod" and json.loads(l).get("path") == "/workspace/y"))
PY
)
check "every_acknowledged_change_is_in_the_journal ($journaled of $ok)" '[ "$journaled" -eq "$ok" ]'
check "the_journal_never_grows_past_its_bound" '[ "$(stat -c %s "$J")" -le 1048576 ] && [ "$(grep -c "\"op\":\"journal_truncated\"" "$J")" -eq 1 ]'
"$CLOISTER" log "$t/ws.ini" >"$t/log.out" 2>"$t/log.err"
check "log_says_the_journal_was_cut" \
        '[ $st -eq 0 ] && grep -q "was cut at its bound" "$t/log.err" && grep -q "journal_truncated the journal reached its bound" "$t/log.out"'

# The diff comes from the upper layers: with the journal out of the way it is
# still complete, the hidden home included.
mv "$J" "$J.aside"
"$CLOISTER" diff "$t/ws.ini" --name-status >"$t/ns" 2>"$t/ns.err"
"$CLOISTER" diff "$t/ws.ini" --home >"$t/home" 2>/dev/null
mv "$J.aside" "$J"
check "diff_stays_complete_without_the_journal" \
        '[ "$(cat "$t/ns")" = "$(printf "M\ty")" ] && grep -q "/home/agent/note" "$t/home"'

# --- the next mount -------------------------------------------------------------
"$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1
mount_ws
mkdir "$W/after" 2>/dev/null
check "the_bound_holds_across_mounts" '[ $st -ne 0 ] && [ ! -e "$W/after" ]'
"$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1
ini 4M
mount_ws
mkdir "$W/after"
check "a_larger_bound_lets_changes_go_on" '[ $st -eq 0 ] && grep -q "\"op\":\"mkdir\",\"path\":\"/workspace/after\"" "$J"'
