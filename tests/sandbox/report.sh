#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# report.sh: `cloister report` of a real session whose agent is hostile:
# file names, contents and command lines made of <script>, "><img
# onerror>, javascript: links, a bidirectional override, ANSI escapes,
# invalid UTF-8, NUL bytes and a 1 MB line, 10,000 changed files and a
# 1 GiB file. The page must hold all of it as text only (no element,
# attribute or URL of the agent's), carry its Content-Security-Policy and
# load nothing, show the numbers the other commands show, stay within its
# size bound, and name for each hunk the command that wrote it.

. "$CLOISTER_SRC/tests/sandbox/lib.sh"

[ "$fs_mode" = fuse ] || skip_all "the report's diff needs the FUSE mount"
T=$(mktemp -d /tmp/cloister-report.XXXXXX)
chmod 755 "$T"
at_exit "rm -rf '$T'"
ws_new "$T/a"
# A file of the base for the per-hunk trace below (line 50 at byte 138).
seq 100 >"$REPO/nums.txt"
git -C "$REPO" add nums.txt
git -C "$REPO" -c user.name=t -c user.email=t@t commit -q -m nums
preflight

# The agent's session: hostile names, contents and commands.
crun "$CFG" -- bash -c '
printf "x\n" > "\"><img src=x onerror=alert(1)>"
printf "x\n" > "<script>alert(1)<\\script>"
printf "x\n" > $'"'"'\u202etxt.exe'"'"'
printf "x\n" > $'"'"'\e[31mred\e[0m'"'"'
printf "x\n" > $'"'"'bad\xff\xfe'"'"'
printf "<script>alert(2)</script>\n<a href=\"javascript:alert(3)\">x</a>\n\e[2J\xe2\x80\xae\xff\n" > hostile.txt
printf "a\0b\0c" > nul.bin
head -c 1048576 /dev/zero | tr "\0" "A" > longline.txt
mkdir many && for i in $(seq 10000); do echo $i > many/f$i; done
yes "a line of text" | head -c 1073741824 > big.txt
echo ok' >/dev/null
is agent_session_ran "$?" 0
crun "$CFG" -- sh -c 'echo "<script>alert(4)</script>"; exit 3' >/dev/null
crun "$CFG" -- true "\"><img src=x onerror=alert(5)>" 'javascript:alert(6)' >/dev/null
# Runs #5-#8: each writes one place of nums.txt (its bytes in place, or a
# new file renamed over it by sed -i): each hunk names its own command.
crun "$CFG" -- sh -c 'printf "ONE\n" | dd of=nums.txt conv=notrunc status=none'
crun "$CFG" -- sh -c 'printf FIFTY | dd of=nums.txt bs=1 seek=138 conv=notrunc status=none'
crun "$CFG" -- sh -c 'echo tail >> nums.txt'
crun "$CFG" -- sed -i 's/^hello$/bye/' hello.txt

"$CLOISTER" report "$CFG" -o "$T/r.html" 2>"$T/err"
is report_is_written "$?" 0
contains report_says_where "$(cat "$T/err")" "$T/r.html"
html=$(tr -d '\0' <"$T/r.html")

# Only the page's own elements: none of the agent's.
own=" <b <body <circle <code <details <div <h1 <h2 <h3 <head <html <li <line <meta <p <path <pre <rect <section <span <style <summary <svg <table <td <text <th <title <tr <ul "
other=$(grep -o '<[a-zA-Z][a-zA-Z0-9-]*' "$T/r.html" | sort -u | while read -r t; do
        [[ $own == *" $t "* ]] || printf '%s ' "$t"
done)
is only_the_pages_own_elements "$other" ""
grep -qi '<script\|<img\|<a \|<iframe\|<object\|<embed\|<link\|<base' "$T/r.html" &&
        not_ok no_script_img_or_link "$(grep -oi '<script[^>]*\|<img[^>]*\|<a [^>]*' "$T/r.html" | head -3)" ||
        ok no_script_img_or_link
grep -qiE '\s(on[a-z]+|href|src|xlink:href)="' "$T/r.html" &&
        not_ok no_event_handler_or_url_attribute "$(grep -oiE '\s(on[a-z]+|href|src)="[^"]*' "$T/r.html" | head -3)" ||
        ok no_event_handler_or_url_attribute
contains csp_is_strict "$html" "content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:;"
contains script_shows_as_text "$html" "&lt;script&gt;alert(2)&lt;/script&gt;"
contains img_shows_as_text "$html" "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
contains javascript_link_shows_as_text "$html" "&lt;a href=&quot;javascript:alert(3)&quot;&gt;"
contains bidi_override_is_shown "$html" "&lt;U+202E&gt;txt.exe"
contains ansi_escape_is_shown "$html" '\x1b[31mred'
grep -q $'\e\|\xe2\x80\xae' "$T/r.html" && not_ok no_raw_escape_or_override "found" ||
        ok no_raw_escape_or_override
python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$T/r.html" &&
        ok page_is_valid_utf8 || not_ok page_is_valid_utf8 "invalid UTF-8 in the page"
grep -qP '\x00' "$T/r.html" && not_ok page_has_no_nul "NUL" || ok page_has_no_nul
contains long_line_is_cut "$html" "bytes more)"
longest=$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$T/r.html")
[ "$longest" -lt 100000 ] && ok no_line_of_a_megabyte || not_ok no_line_of_a_megabyte "$longest"
contains nul_file_is_binary "$html" "nul.bin</code></td><td>added (binary)"

# The numbers are the other commands'.
files=$("$CLOISTER" diff --json --stat "$CFG" | python3 -c 'import json,sys; print(json.load(sys.stdin)["changed"])')
contains changed_files_match_diff "$html" "Changes ($files files"
runs=$("$CLOISTER" log --runs --json "$CFG" | wc -l)
contains commands_match_log_runs "$html" "<h2>Commands ($runs)</h2>"
contains run_record_verified "$html" "run record chain verified"
contains journal_complete "$html" "journal complete"
contains exit_code_shown "$html" '<td class="bad">3'
contains command_is_shown_as_text "$html" "&quot;&gt;&lt;img src=x onerror=alert(5)&gt;</span>"
contains hunk_traced_to_command "$html" "<code>hostile.txt</code></td><td>added</td><td class=\"add\">3</td><td class=\"del\">0</td><td>#2</td>"

# Each hunk names the command whose writes put its bytes there.
nums=$(sed -n '/^<details class="file"><summary><code>diff --git a\/nums.txt/,/<\/details>/p' "$T/r.html")
contains first_hunk_written_by_its_command "$nums" $'@@ -1,5 +1,4 @@</span>\n<span class="who">written by #5 (by'
contains middle_hunk_written_by_its_command "$nums" $'@@ -47,8 +46,7 @@</span>\n<span class="who">written by #6 (by'
contains appended_hunk_written_by_its_command "$nums" $'@@ -98,3 +96,4 @@</span>\n<span class="who">written by #7 (by'
contains renamed_over_file_traced_to_sed "$html" $'@@ -1 +1 @@</span>\n<span class="who">written by #8 (by'
contains file_index_names_all_its_writers "$html" "<code>nums.txt</code></td><td>modified</td><td class=\"add\">3</td><td class=\"del\">4</td><td>#5 #6 #7</td>"

# Scale: 10,000 changed files and a 1 GiB file, within the default bound.
size=$(stat -c %s "$T/r.html")
[ "$size" -le $((20 * 1024 * 1024)) ] && ok default_report_under_20_mib || not_ok default_report_under_20_mib "$size bytes"
contains big_file_named_as_left_out "$html" "<li><code>big.txt</code>: "
contains last_of_many_files_listed "$html" "<code>many/f9999</code>"
# ...and light to open: the writes' ticks are one path (not one element
# per write), and an index of 10,000 files starts folded.
ticks=$(grep -c '<line ' "$T/r.html")
[ "$ticks" -le 10 ] && ok timeline_marks_stay_few_for_thousands_of_writes ||
        not_ok timeline_marks_stay_few_for_thousands_of_writes "$ticks <line> elements"
contains writes_are_one_path "$html" '<path stroke="#666" d="M'
contains long_file_index_starts_folded "$html" '<details class="index"><summary>File index ('

# --json: the same data.
"$CLOISTER" report --json "$CFG" >"$T/r.json"
python3 - "$T/r.json" "$files" "$runs" <<'EOF' && ok json_has_the_same_counts || not_ok json_has_the_same_counts "$(head -c 300 "$T/r.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["changes"]["stat"]["changed"] == int(sys.argv[2]), d["changes"]["stat"]["changed"]
assert len(d["runs"]["runs"]) == int(sys.argv[3])
assert d["verdicts"]["runs_chain"]["verified"] is True
f = {f["path"]: f for f in d["changes"]["stat"]["files"]}
h = f["nums.txt"]["hunks"]
assert [x["runs"] for x in h] == [[5], [6], [7]], h
assert all(x["traced"] == "bytes" for x in h), h
assert f["nums.txt"]["runs"] == [5, 6, 7], f["nums.txt"]
EOF

# Bounded: a small bound cuts the page, visibly, and holds.
"$CLOISTER" report "$CFG" --max-size 100K -o "$T/small.html" 2>/dev/null
is bounded_report_is_written "$?" 0
size=$(stat -c %s "$T/small.html")
[ "$size" -le 102400 ] && ok report_stays_within_its_bound || not_ok report_stays_within_its_bound "$size bytes"
contains cut_report_says_so "$(cat "$T/small.html")" "was cut at its size bound"
tail -c 20 "$T/small.html" | grep -q '</html>' && ok cut_report_is_whole_html ||
        not_ok cut_report_is_whole_html "$(tail -c 40 "$T/small.html")"

# Limits in units a person reads in the page; exact numbers in --json.
contains limit_shown_in_mib "$html" "<tr><th>Limit runlog</th><td>16 MiB</td></tr>"
contains limit_bytes_shown_in_units "$html" "<tr><th>Limit journal</th><td>256 MiB</td></tr>"
contains limit_count_stays_a_number "$html" "<tr><th>Limit processes</th><td>"
grep -q '<tr><th>Limit [a-z]*</th><td>[0-9]\{7,\}</td>' "$T/r.html" &&
        not_ok no_limit_as_raw_bytes "$(grep -o '<tr><th>Limit [a-z]*</th><td>[0-9]*</td>' "$T/r.html" | head -3)" ||
        ok no_limit_as_raw_bytes
python3 - "$T/r.json" <<'EOF' && ok json_limits_are_exact_numbers || not_ok json_limits_are_exact_numbers "$(head -c 300 "$T/r.json")"
import json, sys
l = json.load(open(sys.argv[1]))["status"]["limits"]
assert l["runlog"] == 16 * 1024 * 1024, l
assert l["journal"] == 256 * 1024 * 1024, l
EOF

# --since a checkpoint: commands, writes, log lines and the changes are
# all those since it, in the page and in --json alike.
"$CLOISTER" checkpoint "$CFG" before-late >/dev/null
is checkpoint_made "$?" 0
crun "$CFG" -- sh -c 'echo late > late-file.txt; echo changed >> hostile.txt' >/dev/null
"$CLOISTER" report "$CFG" --since before-late --json >"$T/since.json"
is report_since_json_is_written "$?" 0
"$CLOISTER" diff "$CFG" --since before-late --json --stat >"$T/diff-since.json"
python3 - "$T/since.json" "$T/diff-since.json" <<'EOF' && ok json_since_is_all_since_the_checkpoint || not_ok json_since_is_all_since_the_checkpoint "$(head -c 300 "$T/since.json")"
import json, sys
d = json.load(open(sys.argv[1]))
want = json.load(open(sys.argv[2]))
st = d["changes"]["stat"]
paths = sorted(f["path"] for f in st["files"])
assert paths == ["hostile.txt", "late-file.txt"], paths
assert paths == sorted(f["path"] for f in want["files"]), want
assert st["changed"] == want["changed"] == 2, (st["changed"], want["changed"])
patch = d["changes"]["patch"]["patch"]
assert "late-file.txt" in patch and "+changed" in patch, patch[:300]
assert "many/f1" not in patch and "longline.txt" not in patch, "a change from before the checkpoint"
assert len(d["runs"]["runs"]) == 1, [r["argv"] for r in d["runs"]["runs"]]
assert all(w["path"] in ("/workspace/late-file.txt", "/workspace/hostile.txt") for w in d["journal"]["writes"]), d["journal"]["writes"][:3]
EOF
"$CLOISTER" report "$CFG" --since before-late -o "$T/since.html" 2>/dev/null
is report_since_html_is_written "$?" 0
since_html=$(cat "$T/since.html")
contains html_since_changes_count "$since_html" "Changes (2 files"
contains html_since_lists_the_late_file "$since_html" "<code>late-file.txt</code>"
grep -q '<code>many/f1</code>' "$T/since.html" && not_ok html_since_leaves_out_earlier_changes "many/f1 listed" ||
        ok html_since_leaves_out_earlier_changes
contains html_since_commands_count "$since_html" "<h2>Commands (1)</h2>"

"$CLOISTER" report "$CFG" --since nope >/dev/null 2>"$T/err"
is unknown_checkpoint_is_a_usage_error "$?" 2
contains unknown_checkpoint_says_why "$(cat "$T/err")" "no such checkpoint"

done_testing
