#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cloister log` right after a run shows everything that happened, in the
# order it happened (issue 46, item 4): the journal holds some entries for
# a moment (compaction) and writes them later, so the log asks the live
# daemon to write them first, and prints lines by their "seq" (the order
# of first operations). The same for --json and for the [logs] stdout
# copies, which the daemon sends in that order.
. "$CLOISTER_SRC/tests/review/lib.sh"
need_mount
need python3 "no python3 (the checks)"
export LC_ALL=C

make_src 'for f in a rm mv ch; do printf "%s\n" "$f" >"$f.txt"; done'
write_config jorder "[logs]
stdout = json"
# The daemon keeps this standard output for its copies ([logs] stdout = json).
mount_ws "$t/copies"
echo "1..6"

# The issue's repro: six commands, then the log at once.
printf 'more\n' >>"$W/a.txt"
rm "$W/rm.txt"
mv "$W/mv.txt" "$W/moved.txt"
printf 'new\n' >"$W/new.txt"
chmod 600 "$W/ch.txt"
ln -s a.txt "$W/link"
"$CLOISTER" log "$t/ws.ini" >"$t/log.txt" 2>"$t/log.err"
"$CLOISTER" log "$t/ws.ini" --json >"$t/log.json" 2>>"$t/log.err"

# What must be there, in this order (op and path of each line).
cat >"$t/want" <<'W'
write /workspace/a.txt
unlink /workspace/rm.txt
rename /workspace/mv.txt
create /workspace/new.txt
write /workspace/new.txt
chmod /workspace/ch.txt
symlink /workspace/link
W
cat >"$t/check.py" <<'PY'
import json, sys
kind, path = sys.argv[1], sys.argv[2]
want = [l.split() for l in open(sys.argv[3]) if l.strip()]
got = []
for line in open(path):
    if kind == "text":
        f = line.split()
        if len(f) >= 3 and f[2].startswith("/workspace/"):
            got.append((f[0], f[1], f[2]))
        continue
    o = json.loads(line)
    if kind == "copies":
        if o.get("cloister") != "journal":
            continue
        o = json.loads(o["line"]) if isinstance(o["line"], str) else o["line"]
    if o["op"].startswith("journal_"):
        continue
    got.append((o["time"], o["op"], o["path"]))
ops = [[g[1], g[2]] for g in got]
times = [g[0] for g in got]
if ops != want:
    sys.exit("%s: got %s, want %s" % (kind, ops, want))
if times != sorted(times):
    sys.exit("%s: not in time order: %s" % (kind, times))
PY
check "log_at_once_shows_all_7_entries_in_time_order" \
        '[ $st -eq 0 ] && python3 "$t/check.py" text "$t/log.txt" "$t/want" 2>>"$t/fail"'
check "log_json_at_once_shows_all_7_entries_in_time_order" \
        'python3 "$t/check.py" json "$t/log.json" "$t/want" 2>>"$t/fail"'
check "log_says_nothing_on_stderr" '[ ! -s "$t/log.err" ]'
# The journal file itself holds each line with its place in the order.
check "every_line_of_the_file_has_its_seq" \
        '[ "$(grep -c . "$t/state/journal.jsonl")" -eq "$(grep -c "\"seq\":[0-9]*}$" "$t/state/journal.jsonl")" ]'
"$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1
check "stdout_copies_hold_all_7_entries_in_time_order" \
        'python3 "$t/check.py" copies "$t/copies" "$t/want" 2>>"$t/fail"'
# A log read with no daemon (all written at its close) is the same.
"$CLOISTER" log "$t/ws.ini" --json >"$t/log2.json"
check "log_after_unmount_is_the_same" 'python3 "$t/check.py" json "$t/log2.json" "$t/want" 2>>"$t/fail"'
[ -s "$t/fail" ] && sed 's/^/# /' "$t/fail"
exit 0
