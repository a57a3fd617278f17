#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The journal cannot grow the host's disk without bound ([limits] journal):
# a loop of one chmod is a few entries with a count, not one line per call;
# past three quarters of the way to the cut (the soft bound) a legitimate
# loop goes on, its operations counted in coarse entries (one mark says
# where); a hostile agent that makes each coarse entry large still meets the
# cut, after which every change fails with EDQUOT before it happens; nothing
# acknowledged is missing from the journal; `cloister log` says both;
# `cloister diff` still shows every change, because it reads the upper
# layers (the changes list), not the journal.
. "$CLOISTER_SRC/tests/review/lib.sh"
need_mount
need python3 "no python3 (the loops and the checks)"

make_src 'printf "x\n" >x && printf "y\n" >y'
ini() { # JOURNAL_BOUND: the config, with this bound on the journal
        write_config jb "[limits]
journal = $1"
}
ini 1M
mount_ws
echo "1..11"

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

# --- past the soft bound -----------------------------------------------------
mkdir -p "$t/mnt/home/agent" && printf 'h\n' >"$t/mnt/home/agent/note"
printf 'changed\n' >"$W/y"
# Alternating modes: nothing to coalesce, one line each until the soft bound
# (about 2,500 of them here), then counted in coarse entries: all go through.
python3 - "$W/y" >"$t/loop.out" <<'PY'
import errno, os, sys
ok = 0
while ok < 30000:
    try:
        os.chmod(sys.argv[1], 0o600 if ok % 2 else 0o640)
    except OSError as e:
        print(ok, errno.errorcode.get(e.errno, e.errno))
        break
    ok += 1
else:
    print(ok, "no-error")
PY
read -r chmods err <"$t/loop.out"
echo "# $chmods chmods acknowledged, then $err"
check "past_the_soft_bound_changes_go_on_in_coarse_entries" \
        '[ "$err" = no-error ] && [ "$(grep -c "\"op\":\"journal_coarse\"" "$J")" -eq 1 ] && [ "$(grep -c "\"op\":\"journal_truncated\"" "$J")" -eq 0 ]'

# --- up to the bound ----------------------------------------------------------
# Coarse entries grow at a bounded rate, so a hostile agent makes each one
# large: every mkdir in a new directory with a long name.
mkdir "$W/h"
python3 - "$W/h" >"$t/loop.out" <<'PY'
import errno, os, sys
base = d = sys.argv[1]
ok = 0
while True:
    nd = os.path.join(d, "n" * 240 + "%05d" % ok)
    try:
        os.mkdir(nd)
    except OSError as e:
        print(ok, errno.errorcode.get(e.errno, e.errno))
        break
    ok += 1
    d = nd if len(nd) < 3500 else base
    if ok > 100000:
        print(ok, "no-error")
        break
PY
read -r ok err <"$t/loop.out"
echo "# $ok mkdirs acknowledged, then $err"
check "changes_past_the_bound_fail_with_EDQUOT" '[ "$err" = EDQUOT ] && [ "$ok" -gt 10 ]'
mkdir "$W/after" 2>/dev/null
check "a_refused_change_does_not_happen" '[ $st -ne 0 ] && [ ! -e "$W/after" ] && ! printf z >"$W/z" 2>/dev/null && [ ! -e "$W/z" ]'
# The diff comes from the upper layers: with the journal out of the way it is
# still complete, the hidden home included.
mv "$J" "$J.aside"
"$CLOISTER" diff "$t/ws.ini" --name-status >"$t/ns" 2>"$t/ns.err"
"$CLOISTER" diff "$t/ws.ini" --home >"$t/home" 2>/dev/null
mv "$J.aside" "$J"
check "diff_stays_complete_without_the_journal" \
        '[ "$(cat "$t/ns")" = "$(printf "M\ty")" ] && grep -q "/home/agent/note" "$t/home"'

# Coarse entries are written a summary window after their first operation,
# or at unmount: count them after it.
"$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1
read -r jchmods jmkdirs dropped < <(python3 - "$J" <<'PY'
import json, sys
chmods = mkdirs = dropped = 0
for l in open(sys.argv[1]):
    e = json.loads(l)
    # Before the soft bound one line per chmod of y; after it, coarse entries
    # of their directory (y is the only file chmodded there by then).
    coarse = "coarse" in e
    if e["op"] == "chmod" and e["path"] == ("/workspace" if coarse else "/workspace/y"):
        chmods += e.get("count", 1)
    # Coarse entries name the directory an mkdir made its directory in.
    if e["op"] == "mkdir" and (e["path"] + ("/" if coarse else "")).startswith("/workspace/h/"):
        mkdirs += e.get("count", 1)
    if e["op"] == "journal_close":
        dropped += e["dropped"]
print(chmods, mkdirs, dropped)
PY
)
check "every_acknowledged_change_is_in_the_journal (chmods $jchmods of $chmods, mkdirs $jmkdirs of $ok)" \
        '[ "$jchmods" -eq "$chmods" ] && [ "$jmkdirs" -eq "$ok" ] && [ "$dropped" -eq 0 ]'
check "the_journal_never_grows_past_its_bound" '[ "$(stat -c %s "$J")" -le 1048576 ] && [ "$(grep -c "\"op\":\"journal_truncated\"" "$J")" -eq 1 ]'
"$CLOISTER" log "$t/ws.ini" >"$t/log.out" 2>"$t/log.err"
check "log_says_where_entries_became_coarse_and_that_the_journal_was_cut" \
        '[ $st -eq 0 ] && grep -q "was cut at its bound" "$t/log.err" && grep -q "journal_truncated the journal reached its bound" "$t/log.out" && grep -q "passed its soft bound" "$t/log.err" && grep -q "journal_coarse the journal passed" "$t/log.out" && grep -q "chmod .*/workspace \[coarse: [0-9]* in this directory\]" "$t/log.out"'

# --- the next mount -------------------------------------------------------------
mount_ws
mkdir "$W/after" 2>/dev/null
check "the_bound_holds_across_mounts" '[ $st -ne 0 ] && [ ! -e "$W/after" ]'
"$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1
ini 4M
mount_ws
mkdir "$W/after"
st=$?
"$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1 # the mkdir may be held for a window
(exit $st)
check "a_larger_bound_lets_changes_go_on" '[ $st -eq 0 ] && grep -q "\"op\":\"mkdir\",\"path\":\"/workspace/after\"" "$J"'
