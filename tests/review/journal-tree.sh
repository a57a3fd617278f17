#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A test script's trash directory, kept longer than any compaction window
# and then removed, is one "removed_tree" entry in the journal (issue 46,
# item 5): `cloister log` names the directory, how many entries were made
# and removed under it and by which commands, and no line of its past is
# left; what outlives it is journaled as before, and `cloister diff` (the
# upper layers) is unchanged.
. "$CLOISTER_SRC/tests/review/lib.sh"
need_mount
need python3 "no python3 (the checks)"
export LC_ALL=C

make_src 'mkdir t && printf "base\n" >t/README'
write_config jtree
mount_ws
TR="$W/t/trash directory.t0001"
echo "1..7"

# A test script: its trash directory, files in it, a result that survives.
mkdir -p "$TR"
for d in 1 2 3 4 5; do
        mkdir "$TR/sub$d"
        for i in $(seq 1 60); do printf 'file %s %s\n' "$d" "$i" >"$TR/sub$d/f$i"; done
done
(cd "$TR" && git init -q . && git -c user.name=a -c user.email=a@a commit -q --allow-empty -m x)
printf 'ok 1\n' >"$W/t/results"
# Longer than the compaction window (a log asks the daemon to write all it
# holds, whatever the machine's speed): the trash's lines are written.
"$CLOISTER" log "$t/ws.ini" >/dev/null 2>&1
lines_before=$(grep -c 'trash directory.t0001' "$J")
rm -rf "$TR"
size_before=$(stat -c %s "$J")
"$CLOISTER" log "$t/ws.ini" >"$t/log.txt" 2>"$t/log.err"
"$CLOISTER" log "$t/ws.ini" --json >"$t/log.json"
size_after=$(stat -c %s "$J")

check "the_trash_was_journaled_line_by_line_first ($lines_before lines)" '[ "$lines_before" -gt 300 ]'
check "log_shows_one_removed_tree_entry_for_it" \
        '[ "$(grep -c "removed_tree .*/workspace/t/trash directory.t0001.*created and removed [0-9]* entries under it" "$t/log.txt")" -eq 1 ] && [ ! -s "$t/log.err" ]'
check "no_line_of_its_past_is_left" \
        '[ "$(grep "trash directory.t0001" "$t/log.json" | grep -v "\"op\":\"removed_tree\"" | grep -cv "\"op\":\"transient\"")" -eq 0 ]'
python3 - "$t/log.json" >"$t/tree.txt" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o["op"] == "removed_tree":
        print(o["count"], o["lines"], len(o["sha256"]), ",".join(o["comms"]), o["path"])
PY
read -r count nlines shalen comms _ <"$t/tree.txt"
check "it_counts_what_was_made_and_says_by_whom ($count entries, $nlines lines, $comms)" \
        '[ "$count" -ge 300 ] && [ "$nlines" -ge 600 ] && [ "$shalen" -eq 64 ] && case ",$comms," in *,git,*) true ;; *) false ;; esac'
check "the_journal_file_shrank ($size_before -> $size_after bytes)" '[ "$size_after" -lt $((size_before / 2)) ]'
check "what_outlives_it_is_journaled_as_before" 'grep -q "create .*/workspace/t/results" "$t/log.txt"'
"$CLOISTER" diff "$t/ws.ini" >"$t/diff.txt" 2>&1
check "diff_shows_the_result_and_not_the_trash" \
        'grep -q "t/results" "$t/diff.txt" && ! grep -q "trash directory" "$t/diff.txt"'
exit 0
