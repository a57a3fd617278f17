#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A realistic agent day through a real mount keeps the journal small
# (issue 34, item 11): a test-suite-like loop that creates, writes and
# deletes 2,000 temporary files, scratch directories made and removed, `sed
# -i` on files, and a small C project built with make. The journal stays far
# below one line per operation, yet `cloister log` still names the command
# that changed each file that survives, and `cloister diff` (which reads the
# upper layers, not the journal) lists exactly the files the workload left.
. "$CLOISTER_SRC/tests/review/lib.sh"
need_mount
need python3 "no python3 (the checks)"
export LC_ALL=C

# Text to edit in place and a small C project that make builds.
base_files() {
        mkdir -p docs c
        for i in $(seq 1 30); do printf 'line foo %s\nmore foo\n' "$i" >"docs/d$i.txt"; done
        for i in $(seq 1 12); do
                printf '#include "p.h"\nint f%s(int x) { return x * %s + g(x); }\n' "$i" "$i" >"c/f$i.c"
        done
        printf 'int g(int x);\n' >c/p.h
        printf '#include "p.h"\nint g(int x) { return x + 1; }\nint main(void) { return g(-1); }\n' \
                >c/main.c
        printf 'OBJS = main.o %s\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n%%.o: %%.c\n\t$(CC) -MMD -O1 -c -o $@ $<\n-include $(OBJS:.o=.d)\n' \
                "$(seq -f 'f%g.o' 1 12 | tr '\n' ' ')" >c/Makefile
}
make_src base_files
write_config jcompact
mount_ws
echo "1..7"

# --- the workload ---------------------------------------------------------------
# ops: a lower bound of the mutating operations it makes, to compare lines with.
ops=0
t0=$(date +%s%N)
mkdir "$W/tmp"
# A test suite's (or configure's) temporary files: made, written, read, removed.
for i in $(seq 1 2000); do
        printf 'scratch %s\n' "$i" >"$W/tmp/t.$i"
        read -r _ <"$W/tmp/t.$i"
        rm -f "$W/tmp/t.$i"
done
ops=$((ops + 2000 * 3))
# Scratch directories of a test harness: a tree made and removed.
for i in $(seq 1 100); do
        mkdir -p "$W/tmp/trash.$i/sub"
        printf 'x\n' >"$W/tmp/trash.$i/sub/f"
        rm -rf "$W/tmp/trash.$i"
done
ops=$((ops + 100 * 7))
rmdir "$W/tmp"
ops=$((ops + 2))
# Edits in place: each is a temporary file renamed over the original.
sed -i 's/foo/bar/' "$W"/docs/d{1..20}.txt
for i in $(seq 21 30); do sed -i "s/more/less $i/" "$W/docs/d$i.txt"; done
ops=$((ops + 30 * 3))
built=0
if command -v cc >/dev/null && command -v make >/dev/null; then
        make -s -C "$W/c" -j2 CC=cc >"$t/make.out" 2>&1 && built=1
        ops=$((ops + 13 * 4 + 2))
        echo "# built the C project with make: $built ($(wc -l <"$t/make.out") lines of output)"
else
        echo "# no cc or make: the build part is skipped"
fi
# Held entries are written at most 200 ms after their first operation, so
# a slow machine (a window passing between a file's create and its removal,
# a writer's writes split over windows) may need more lines: at most a few
# per 200 ms the workload took, besides one line per change that stays (sed:
# create, write, rename; make: a create and a write per output file).
windows=$((($(date +%s%N) - t0) / 200000000 + 1))
most=$((30 * 3 + (13 * 2 + 1) * 2 + 2 + 9 * windows))
"$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1 # writes what is still pending

lines=$(grep -vc '"op":"journal_' "$J")
bytes=$(stat -c %s "$J")
echo "# journal: $bytes bytes, $lines entries for at least $ops operations" \
        "($(awk -v l="$lines" -v o="$ops" 'BEGIN { printf "%.3f", l / o }') per operation)"
check "journal_reads_back_without_damage" \
        '"$CLOISTER" log "$t/ws.ini" --all --json >"$t/log.json" 2>"$t/log.err"; [ $? -eq 0 ] && [ ! -s "$t/log.err" ] && python3 -c "import json,sys; [json.loads(l) for l in open(sys.argv[1])]" "$t/log.json"'
# Before compaction this was more than one line per operation.
check "the_journal_holds_far_fewer_lines_than_operations ($lines for $ops, at most $most)" \
        '[ "$lines" -gt 0 ] && [ "$lines" -le "$most" ]'
# Each of the 2,300 temporary names is in the journal: its own create or
# mkdir (a window passed before its removal), counted in a transient entry,
# or (written, then removed with tmp/ or a trash directory) in a
# removed_tree entry, which counts the names made under it and itself.
check "every_temporary_name_is_written_or_counted_in_a_transient_entry" \
        'python3 - "$J" <<PY
import json, sys
summed = written = 0
for e in map(json.loads, open(sys.argv[1])):
    if e["op"] == "removed_tree" and e["path"] == "/workspace/tmp":
        written += e["count"] - 1
        continue
    if not e.get("path", "").startswith("/workspace/tmp/"):
        continue
    if e["op"] == "removed_tree":
        written += e["count"]
    elif e["op"] == "transient":
        summed += e["count"]
    elif e["op"] in ("create", "mkdir"):
        written += 1
print("# %d temporary names summed up in transient entries, %d written" % (summed, written))
sys.exit(0 if summed + written == 2300 else 1)
PY'

"$CLOISTER" log "$t/ws.ini" --path '/workspace/tmp/*' >"$t/log.tmp" 2>&1
check "log_prints_transient_entries_as_counts_of_names" \
        '! grep -q "\"op\":\"transient\"" "$J" || grep -qE "transient /workspace/tmp/.* \[the last of [0-9]+ made and removed within a window, [0-9]+ operations\]  \((bash|mkdir)\[" "$t/log.tmp"'

# --- what survives, and who made it -----------------------------------------------
"$CLOISTER" diff "$t/ws.ini" --name-status >"$t/ns" 2>"$t/ns.err"
mv "$J" "$J.aside"
"$CLOISTER" diff "$t/ws.ini" --name-status >"$t/ns.nojournal" 2>/dev/null
mv "$J.aside" "$J"
{
        for i in $(seq 1 30); do printf 'M\tdocs/d%s.txt\n' "$i"; done
        if [ "$built" = 1 ]; then
                for f in main $(seq -f 'f%g' 1 12); do printf 'A\tc/%s.o\nA\tc/%s.d\n' "$f" "$f"; done
                printf 'A\tc/prog\n'
        fi
} | sort >"$t/ns.expected"
check "diff_lists_exactly_what_the_workload_left" \
        '[ -s "$t/ns" ] && [ "$(sort "$t/ns")" = "$(cat "$t/ns.expected")" ]'
check "diff_does_not_depend_on_the_journal" 'cmp -s "$t/ns" "$t/ns.nojournal"'
# Each surviving file: an entry naming it (its create, a write, or the rename
# that put it there) and the command that did it.
check "log_names_the_command_that_changed_each_surviving_file" \
        'python3 - "$t/log.json" "$t/ns.expected" <<PY
import json, sys
who = {}
for e in map(json.loads, open(sys.argv[1])):
    if e.get("result") == 0 and e.get("comm") and e["op"] in ("create", "write", "rename"):
        who.setdefault(e.get("path2") if e["op"] == "rename" else e["path"], set()).add(e["comm"])
bad = [l.split("\t")[1].strip() for l in open(sys.argv[2])
       if not who.get("/workspace/" + l.split("\t")[1].strip())]
for b in bad:
    print("# no entry names who changed " + b)
print("# e.g. docs/d1.txt by %s, docs/d30.txt by %s" % (sorted(who.get("/workspace/docs/d1.txt", [])),
      sorted(who.get("/workspace/docs/d30.txt", []))))
sys.exit(1 if bad else 0)
PY'
