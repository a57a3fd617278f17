#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The journal's soak (opt-in: CLOISTER_SOAK_JOURNAL=1; issue 46, item 5): a
# test-suite-sized workload inside `cloister run`, with the default journal
# bound. SCRIPTS test scripts (default 1000, two at a time like make -j2),
# each of which makes a trash directory, fills it with FILES files
# (default 2000) in 20 folders, renames and links and chmods some, keeps it
# longer than the compaction window and removes it, and appends its result
# to a file that survives. Without removed trees such a run writes several
# times the default bound; it must stay under the soft bound (no
# journal_coarse, no journal_truncated), with one removed_tree entry per
# script, and `cloister diff` must show exactly what survives.
#
#   CLOISTER_SOAK_JOURNAL=1 SCRIPTS=300 FILES=2000 meson test -C build journal_suite_soak
#
# The numbers (time, journal size at its peak and at the end, what the
# removed_tree entries stand for) are printed as TAP comments.
set -uo pipefail
: "${CLOISTER:?run through meson test}"

skip() { echo "1..0 # SKIP $*"; exit 77; }
[ "${CLOISTER_SOAK_JOURNAL:-0}" = 1 ] || skip "opt-in: set CLOISTER_SOAK_JOURNAL=1"
[ "$(id -u)" -eq 0 ] || skip "needs root for FUSE mounts and cloister run"
[ -c /dev/fuse ] || skip "no /dev/fuse"
command -v git >/dev/null || skip "no git binary"
command -v bwrap >/dev/null || skip "no bubblewrap"
command -v python3 >/dev/null || skip "no python3 (the checks)"
SCRIPTS=${SCRIPTS:-1000} FILES=${FILES:-2000}

t=$(mktemp -d /tmp/cloister-journal-soak.XXXXXX)
cleanup() {
        [ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null
        "$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1
        mountpoint -q "$t/mnt" && umount -l "$t/mnt"
        rm -rf "$t"
}
trap cleanup EXIT
export HOME=$t GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
# The project's test harness, in the repository: each script makes its
# trash directory, fills it, keeps it past the window and removes it.
mkdir -p "$t/src/t"
cat >"$t/src/t/suite.sh" <<'SH'
#!/bin/sh
# usage: suite.sh FIRST STEP SCRIPTS FILES
i=$1
while [ "$i" -le "$3" ]; do
        d="t/trash directory.t$i"
        mkdir -p "$d"
        k=0
        while [ $k -lt 20 ]; do mkdir "$d/s$k"; k=$((k + 1)); done
        f=0
        while [ $f -lt "$4" ]; do
                printf 'test %s file %s\n' "$i" "$f" >"$d/s$((f % 20))/f$f"
                f=$((f + 1))
        done
        mv "$d/s0/f0" "$d/s1/renamed"
        ln "$d/s1/renamed" "$d/s2/hardlink"
        ln -s ../s1/renamed "$d/s3/symlink"
        chmod 600 "$d/s4/f4"
        sleep 0.3
        rm -rf "$d"
        echo "ok $i" >>"t/results.$1"
        i=$(($i + $2))
done
SH
git init -q -b main "$t/src"
(cd "$t/src" && printf 'tests\n' >t/README && git add -A &&
        git -c user.name=b -c user.email=b@b commit -qm base) || { echo "Bail out! no repo"; exit 1; }
mkdir -p "$t/state" "$t/mnt"
cat >"$t/ws.ini" <<INI
[workspace]
name = jsoak
state = $t/state
mountpoint = $t/mnt
[repo]
source = $t/src
INI
J=$t/state/journal.jsonl
n=0
check() { st=$?; n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }
echo "1..6"

# The journal's size, each second, for its peak.
(while :; do stat -c %s "$J" 2>/dev/null; sleep 1; done >"$t/sizes") &
sampler=$!
start=$(date +%s)
"$CLOISTER" run "$t/ws.ini" -- sh -c "cd /workspace && { sh t/suite.sh 1 2 $SCRIPTS $FILES & sh t/suite.sh 2 2 $SCRIPTS $FILES; wait; }" \
        >"$t/run.out" 2>&1
rc=$?
elapsed=$(($(date +%s) - start))
kill "$sampler" 2>/dev/null
sampler=
results=$("$CLOISTER" run "$t/ws.ini" -- sh -c 'cat /workspace/t/results.*' 2>/dev/null | wc -l)
check "the_suite_ran_to_its_end ($SCRIPTS scripts of $FILES files in ${elapsed}s)" \
        '[ $rc -eq 0 ] && [ "$results" -eq "$SCRIPTS" ]'
[ $rc -eq 0 ] || sed 's/^/# /' "$t/run.out" | tail -5
"$CLOISTER" log "$t/ws.ini" --json >"$t/log.json" 2>"$t/log.err"
"$CLOISTER" diff "$t/ws.ini" >"$t/diff.txt" 2>&1
"$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1
final=$(stat -c %s "$J")
peak=$(sort -n "$t/sizes" | tail -1)
python3 - "$t/log.json" >"$t/sum.txt" <<'PY'
import json, sys
trees = lines = nbytes = names = ops = other = 0
tops = set()
marks = set()
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o["op"] == "removed_tree":
        trees += 1; lines += o["lines"]; nbytes += o["bytes"]; names += o["count"]; ops += o["ops"]
        # A folder removed (and rewritten) before its trash directory keeps its own entry.
        if o["path"].count("/") == 3:
            tops.add(o["path"])
    elif o["op"].startswith("journal_"):
        marks.add(o["op"])
    else:
        other += 1
print(trees, len(tops), lines, nbytes, names, ops, other, int("journal_coarse" in marks), int("journal_truncated" in marks))
PY
read -r trees tops lines nbytes names ops other coarse cut <"$t/sum.txt"
bound=$((256 * 1024 * 1024))
echo "# journal: peak $peak bytes, final $final bytes, default bound $bound"
echo "# removed_tree: $trees entries ($tops of trash directories) standing for $names names, $ops operations, $lines lines, $nbytes bytes"
echo "# other entries left: $other"
# Each trash directory is one entry; a folder of it that a rewrite caught
# removed before the directory itself keeps its own (at most 20 a script).
check "one_removed_tree_entry_per_trash_directory ($tops, $trees with folders)" \
        '[ "$tops" -eq "$SCRIPTS" ] && [ "$trees" -le $((SCRIPTS * 21)) ] && [ "$other" -le $((SCRIPTS + 50)) ]'
check "the_journal_stayed_under_the_soft_bound (peak $peak, final $final)" \
        '[ "$coarse" -eq 0 ] && [ "$cut" -eq 0 ] && [ "$peak" -lt $((bound / 4 * 3)) ] && [ "$final" -lt $((bound / 4 * 3)) ]'
check "the_lines_it_stands_for_are_the_workload ($lines lines, $nbytes bytes)" \
        '[ "$names" -ge $((SCRIPTS * FILES)) ]'
check "log_read_without_complaint" '[ ! -s "$t/log.err" ] || { sed "s/^/# /" "$t/log.err"; false; }'
check "diff_shows_the_results_and_no_trash" \
        'grep -q "t/results" "$t/diff.txt" && ! grep -q "trash directory" "$t/diff.txt"'
exit 0
