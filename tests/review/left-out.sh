#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Nothing the agent puts in the workspace stops its review (issue 43, 5):
# a sparse 600 MB file, a dense one over the 512 MiB limit, a tracked file
# grown past it, a directory replaced by a huge file, FIFOs and a socket
# (one named with a newline and an escape sequence), on a real mount. Each
# is left out; `cloister diff` (patch, --stat, --json), `export --commit`
# (and --json), `export --mbox` and MCP's diff still give the review of
# everything else, which applies and keeps the base's version of each
# left-out path; each is named on stderr (quoted), in the JSON's left_out,
# in the commit's trailers, and the exit status is 3. No file is read into
# memory whole (the diff's peak memory stays far below the files' size),
# and --discard resets the left-out paths too.
. "$CLOISTER_SRC/tests/fs/lib.sh"
# Its own state: what it mounts is not recorded in the user's (claims, known configs).
export XDG_STATE_HOME=$T/xdg-state XDG_CONFIG_HOME=$T/xdg-config
command -v python3 >/dev/null || skip_all "no python3"

src=$T/src
make_repo "$src"
printf 'small\n' >"$src/tracked.bin"
printf 'was a file\n' >"$src/becomes-fifo"
git_quiet -C "$src" add -A
git_quiet -C "$src" commit -m more
cfg=$(make_config lo "$src")
do_mount "$cfg" >/dev/null || skip_all "cloister mount failed"
W=$(mnt_of "$cfg")/workspace
evil=$'evil\nname\033[31m'

fresh_clone() { rm -rf "$T/fresh" && git clone -q "$src" "$T/fresh"; }
# The review of everything else: the agent's other changes, the base's version of the left-out paths.
is_everything_else() { # DIR
        grep -qx changed "$1/src/main.c" && grep -qx new "$1/new.txt" &&
                cmp -s "$1/tracked.bin" "$src/tracked.bin" &&
                cmp -s "$1/becomes-fifo" "$src/becomes-fifo" &&
                cmp -s "$1/docs/guide.md" "$src/docs/guide.md" &&
                [ ! -e "$1/sparse.bin" ] && [ ! -e "$1/dense.bin" ] && [ ! -e "$1/fifo" ] &&
                [ ! -e "$1/sock" ] && [ ! -e "$1/$evil" ]
}
# Every left-out path named on stderr, with its reason, the agent's name quoted.
names_each() { # FILE CMD WHAT
        local f=$1 p="cloister $2: left out of $3: "
        grep -q "^${p}sparse.bin (629145600 bytes, past the limit of 536870912 bytes for one file)$" "$f" &&
                grep -q "^${p}dense.bin (537919488 bytes, past the limit" "$f" &&
                grep -q "^${p}tracked.bin (629145600 bytes" "$f" &&
                grep -q "^${p}docs (629145600 bytes" "$f" &&
                grep -q "^${p}becomes-fifo (a FIFO, which git cannot hold)$" "$f" &&
                grep -q "^${p}sock (a socket, which git cannot hold)$" "$f" &&
                grep -qF "${p}\"evil\\nname\\033[31m\" (a FIFO, which git cannot hold)" "$f" &&
                grep -q "^cloister $2: 7 paths left out of $3: it holds everything else" "$f" &&
                ! grep -q $'\033' "$f" && ! grep -qx 'name.*' "$f"
}

# --- the agent's work ---------------------------------------------------------
printf 'changed\n' >"$W/src/main.c"
printf 'new\n' >"$W/new.txt"
truncate -s 600M "$W/sparse.bin"
printf 'end' | dd of="$W/sparse.bin" bs=1 seek=300000000 conv=notrunc status=none
dd if=/dev/zero of="$W/dense.bin" bs=1M count=513 status=none
truncate -s 600M "$W/tracked.bin"
rm -r "$W/docs" && truncate -s 600M "$W/docs"
rm "$W/becomes-fifo" && mkfifo "$W/becomes-fifo"
mkfifo "$W/$evil"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$W/sock"

# --- cloister diff ------------------------------------------------------------
python3 - "$CLOISTER" "$cfg" "$T/patch" "$T/diff.err" "$T/diff.rc" "$T/diff.rss" <<'PY'
import resource, subprocess, sys
cloister, cfg, out, err, rc, rss = sys.argv[1:7]
with open(out, "wb") as o, open(err, "wb") as e:
    r = subprocess.run([cloister, "diff", cfg], stdout=o, stderr=e)
open(rc, "w").write(str(r.returncode))
open(rss, "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
PY
check "diff_of_a_workspace_with_huge_and_special_files_exits_3" test "$(cat "$T/diff.rc")" = 3
check "diff_names_each_left_out_path_and_why_on_stderr" names_each "$T/diff.err" diff "the patch"
check "diff_patch_of_everything_else_applies" \
        bash -c "cd '$T' && rm -rf fresh && git clone -q '$src' fresh && cd fresh && git apply '$T/patch'"
check "applied_patch_is_everything_else_with_the_base_version_of_each_left_out_path" \
        is_everything_else "$T/fresh"
# The files are 600 MB each: none was read whole (peak in KiB; the sanitizers' own cost included).
echo "# the diff's peak memory: $(cat "$T/diff.rss") KiB"
check "diff_never_reads_a_huge_file_into_memory" test "$(cat "$T/diff.rss")" -lt 400000

"$CLOISTER" diff --stat "$cfg" >"$T/stat" 2>"$T/stat.err"
check "diff_stat_exits_3_and_lists_the_rest" \
        bash -c "[ $? = 3 ] && grep -q 'src/main.c' '$T/stat' && ! grep -q sparse '$T/stat'"
check "diff_stat_names_each_left_out_path" names_each "$T/stat.err" diff "the patch"

"$CLOISTER" diff --json "$cfg" >"$T/json" 2>"$T/json.err"
rc=$?
check "diff_json_exits_3_with_nothing_on_stderr" test $rc = 3 -a ! -s "$T/json.err"
check "diff_json_lists_each_left_out_path_with_its_reason" python3 - "$T/json" "$evil" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
lo = {e["path"]: e for e in j["left_out"]}
want = {"sparse.bin": ("too_large", 629145600), "dense.bin": ("too_large", 537919488),
        "tracked.bin": ("too_large", 629145600), "docs": ("too_large", 629145600),
        "becomes-fifo": ("special", None), "sock": ("special", None),
        sys.argv[2]: ("special", None)}
assert set(lo) == set(want), sorted(lo)
for p, (reason, size) in want.items():
    assert lo[p]["reason"] == reason and lo[p]["size"] == size and lo[p]["detail"], lo[p]
assert "left_out_more" not in j
assert "+++ b/new.txt" in j["patch"] and "sparse.bin" not in j["patch"]
PY
"$CLOISTER" diff --json --stat "$cfg" >"$T/jstat" 2>/dev/null
check "diff_json_stat_exits_3_with_left_out" \
        bash -c "[ $? = 3 ] && python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert len(j[\"left_out\"]) == 7' '$T/jstat'"

# --- MCP's diff (the ops layer) -----------------------------------------------
check "mcp_diff_returns_the_patch_and_left_out" python3 - "$CLOISTER" "$cfg" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["CLOISTER_SRC"], "tests"))
from mcp_client import McpClient
p = McpClient(sys.argv[1], sys.argv[2])
p.initialize("t")
for stat in (False, True):
    r = p.tool("diff", stat=stat)
    assert not r.get("isError"), r
    s = r["structuredContent"]
    assert len(s["left_out"]) == 7, s.get("left_out")
    assert {"sparse.bin", "docs", "becomes-fifo"} <= {e["path"] for e in s["left_out"]}
    assert ("+++ b/new.txt" in s["patch"]) if not stat else s["changed"] >= 2
p.close()
PY

# --- cloister export ----------------------------------------------------------
"$CLOISTER" export "$cfg" --commit >"$T/exp" 2>"$T/exp.err"
rc=$?
check "export_commit_exits_3_and_sets_the_ref" \
        bash -c "[ $rc = 3 ] && git -C '$src' rev-parse -q --verify refs/cloister/lo >/dev/null"
check "export_commit_names_each_left_out_path" names_each "$T/exp.err" export "the commit"
rm -rf "$T/co" && git clone -q "$src" "$T/co" && git -C "$T/co" fetch -q origin refs/cloister/lo &&
        git -C "$T/co" checkout -q FETCH_HEAD
check "exported_commit_is_everything_else_with_the_base_version_of_each_left_out_path" \
        is_everything_else "$T/co"
git -C "$src" log -1 --format=%B refs/cloister/lo >"$T/msg"
check "exported_commit_says_each_left_out_path_in_a_trailer" \
        bash -c "grep -qx 'Cloister-Left-Out: sparse.bin (629145600 bytes, past the limit of 536870912 bytes for one file)' '$T/msg' &&
                 grep -qxF 'Cloister-Left-Out: \"evil\\nname\\033[31m\" (a FIFO, which git cannot hold)' '$T/msg' &&
                 [ \$(grep -c '^Cloister-Left-Out: ' '$T/msg') = 7 ] &&
                 git -C '$src' interpret-trailers --parse <'$T/msg' | grep -c '^Cloister-Left-Out: ' | grep -qx 7"
"$CLOISTER" export "$cfg" --commit --json >"$T/exp.json" 2>"$T/expj.err"
rc=$?
check "export_commit_json_exits_3_with_left_out" \
        bash -c "[ $rc = 3 ] && [ ! -s '$T/expj.err' ] && python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert len(j[\"left_out\"]) == 7 and j[\"ref\"]' '$T/exp.json'"
"$CLOISTER" export "$cfg" --mbox -o "$T/mbox" 2>"$T/mbox.err"
rc=$?
check "export_mbox_exits_3_and_applies_with_git_am" \
        bash -c "[ $rc = 3 ] && rm -rf '$T/am' && git clone -q '$src' '$T/am' && git -C '$T/am' -c user.name=t -c user.email=t@e am -q '$T/mbox'"
check "mbox_is_everything_else" is_everything_else "$T/am"
check "export_mbox_names_each_left_out_path" names_each "$T/mbox.err" export "the mbox"

# --- only left-out work: still a commit, which says so ------------------------
cfg2=$(make_config lo2 "$src")
do_mount "$cfg2" >/dev/null
W2=$(mnt_of "$cfg2")/workspace
truncate -s 600M "$W2/only-huge"
"$CLOISTER" export "$cfg2" --commit >/dev/null 2>"$T/only.err"
rc=$?
check "export_of_only_left_out_work_is_a_commit_that_says_so" \
        bash -c "[ $rc = 3 ] && git -C '$src' log -1 --format=%B refs/cloister/lo2 | grep -q '^Cloister-Left-Out: only-huge '"

# --- discard resets the left-out paths too ------------------------------------
"$CLOISTER" export "$cfg" --discard --yes >/dev/null 2>"$T/discard.err"
check "discard_succeeds" test $? = 0
"$CLOISTER" diff "$cfg" >"$T/after" 2>"$T/after.err"
rc=$?
check "after_discard_nothing_is_left_out_or_changed" test $rc = 0 -a ! -s "$T/after" -a ! -s "$T/after.err"
check "discard_restored_the_base_version_of_each_left_out_path" \
        bash -c "cmp '$W/tracked.bin' '$src/tracked.bin' && cmp '$W/becomes-fifo' '$src/becomes-fifo' &&
                 cmp '$W/docs/guide.md' '$src/docs/guide.md' && [ ! -e '$W/sparse.bin' ] && [ ! -e '$W/sock' ]"

# --- a file that grows and shrinks while the review reads it ------------------
# Whatever the interleaving (nothing here depends on timing), every diff
# comes out: the file taken as it was read, or left out and named.
( while :; do truncate -s 100 "$W/racy"; truncate -s 600M "$W/racy"; done ) 2>/dev/null &
racer=$!
bad=0
for i in 1 2 3 4 5; do
        "$CLOISTER" diff "$cfg" >"$T/race.patch" 2>"$T/race.err"
        rc=$?
        case $rc in
        0) ;;
        3) grep -q '^cloister diff: left out of the patch: racy (' "$T/race.err" || bad=1 ;;
        *) bad=1; sed 's/^/# /' "$T/race.err" ;;
        esac
done
kill "$racer" && wait "$racer" 2>/dev/null
ok $bad "diff_of_a_file_changing_size_while_read_always_comes_out"

finish
