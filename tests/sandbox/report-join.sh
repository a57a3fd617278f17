#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# report-join.sh: two root runs of one workspace at once, each writing its
# own file while both are alive, B started after A. `cloister report`
# must give each file's hunk to the run that wrote it, joined by the run's
# cgroup: joined by time (the latest started run gets the write), A's file
# would be B's. The overlap is made certain by each run waiting for the
# files the other makes, never by a sleep's length. TAP.

. "$CLOISTER_SRC/tests/sandbox/lib.sh"

[ "$fs_mode" = fuse ] || skip_all "the report's diff needs the FUSE mount"
[ "$(id -u)" = 0 ] || skip_all "only a root-run sandbox has a cgroup of its own"
[ "${CLOISTER_TEST_CGROUP:-}" = container ] &&
        skip_all "[limits] cgroup = container: no run has a cgroup of its own"
T=$(mktemp -d /tmp/cloister-join.XXXXXX)
chmod 755 "$T"
at_exit "rm -rf '$T'"
ws_new "$T/w"
preflight
ws_mount
W=$MNT/workspace
# wait_for COND: up to a minute (a slow machine only makes the test slower).
wait_for() { for _ in $(seq 600); do eval "$1" && return 0; sleep 0.1; done; return 1; }
# In the sandbox: wait for a file the other run makes (a minute at most).
await='for _ in $(seq 1200); do [ -e "$1" ] && exit 0; sleep 0.05; done; exit 1'

# A: up; writes a.txt once B is up (so while B, the later started, runs);
# then stays until B has written too.
crun "$CFG" -- sh -c '
touch a-up
sh -c "$0" _ b-up || { echo "A: B never came up" >&2; exit 1; }
echo "written by A" > a.txt
touch a-wrote
sh -c "$0" _ b-wrote' "$await" >"$T/a.out" 2>"$T/a.err" &
a=$!
wait_for "[ -e '$W/a-up' ]" || not_ok run_a_starts "$(cat "$T/a.err")"
# B starts only now, after A: with a time join it would take every write.
crun "$CFG" -- sh -c '
touch b-up
sh -c "$0" _ a-wrote || { echo "B: A never wrote" >&2; exit 1; }
echo "written by B" > b.txt
touch b-wrote' "$await" >"$T/b.out" 2>"$T/b.err"
is run_b_ends_well "$?" 0
wait "$a"
is run_a_ends_well "$?" 0

"$CLOISTER" report --json "$CFG" >"$T/r.json" 2>"$T/err"
is report_json_is_written "$?" 0

# name -> "runs join" of the file's hunk, with runs named by their file.
hunk() {
        python3 - "$T/r.json" "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
runs = r["runs"]["runs"]
def who(n):
    argv = " ".join(runs[n - 1]["argv"])
    return "A" if "a.txt" in argv else "B" if "b.txt" in argv else "#%d" % n
for f in r["changes"]["stat"]["files"]:
    if f["path"] == sys.argv[2]:
        h = f["hunks"][0]
        print(" ".join(who(n) for n in h["runs"]), h.get("join"), h["traced"])
EOF
}
is a_txt_is_written_by_a_joined_by_cgroup "$(hunk a.txt)" "A cgroup bytes"
is b_txt_is_written_by_b_joined_by_cgroup "$(hunk b.txt)" "B cgroup bytes"

# The run record's end names each run's cgroup, and the journal's entries
# of each file name the cgroup of the run that wrote it.
check=$(python3 - "$T/r.json" <<'EOF'
import json, re, sys
r = json.load(open(sys.argv[1]))
runs = {("A" if "a.txt" in " ".join(x["argv"]) else "B"): x for x in r["runs"]["runs"]}
out = []
for name in "AB":
    cg = runs[name].get("cgroup", "")
    out.append(name + ":" + ("cgroup" if re.fullmatch(r"cloister-\d+-\d+", cg) else "none"))
    path = "/workspace/%s.txt" % name.lower()
    w = [x for x in r["journal"]["writes"] if x["path"] == path and x["op"] == "write"]
    out.append("match" if w and all(x.get("run_cgroup") == cg for x in w) else "nomatch")
print(" ".join(out), "distinct" if runs["A"].get("cgroup") != runs["B"].get("cgroup") else "same")
EOF
)
is each_run_records_its_cgroup_and_the_journal_names_it "$check" \
        "A:cgroup match B:cgroup match distinct"

# The page says how the hunks were joined.
"$CLOISTER" report "$CFG" -o "$T/r.html" 2>"$T/err"
contains page_says_the_join "$(cat "$T/r.html")" "(by its cgroup)"
done_testing
