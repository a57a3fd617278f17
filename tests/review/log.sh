#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cloister log: prints the journal, filters by --since/--path, passes --json
# lines through verbatim (as ASCII if they are not), and reports (without
# failing) a damaged journal.
. "$CLOISTER_SRC/tests/review/lib.sh"
make_src :
write_config logtest
echo "1..18"

out=$("$CLOISTER" log "$t/ws.ini" 2>&1)
check "missing_journal_prints_nothing_and_succeeds" '[ $st -eq 0 ] && [ -z "$out" ]'

cat >"$t/state/journal.jsonl" <<'J'
{"time":"2026-01-01T10:00:00.000000Z","op":"create","path":"/workspace/a.c","mode":33188,"result":0,"pid":7,"uid":1000,"gid":1000,"comm":"vim"}
{"time":"2026-01-01T11:00:00.000000Z","op":"write","path":"/workspace/a.c","offset":0,"length":8192,"count":2,"result":0,"pid":7,"uid":1000,"gid":1000,"comm":"vim"}
{"time":"2026-01-01T12:00:00.000000Z","op":"rename","path":"/workspace/a.c","path2":"/workspace/src/b.c","result":0,"pid":8,"uid":1000,"gid":1000,"comm":"mv"}
{"time":"2026-01-01T13:00:00.000000Z","op":"unlink","path":"/home/agent/x","result":-2,"error":"ENOENT","pid":9,"uid":1000,"gid":1000,"comm":null}
J
out=$("$CLOISTER" log "$t/ws.ini")
check "every_entry_is_printed_with_op_path_and_process" \
        '[ $(wc -l <<<"$out") -eq 4 ] && grep -q "write .*/workspace/a.c \[0+8192 in 2 writes\]  (vim\[7\] uid 1000)" <<<"$out" && grep -q "rename .*/workspace/a.c -> /workspace/src/b.c" <<<"$out" && grep -q "failed: ENOENT" <<<"$out"'
out=$("$CLOISTER" log "$t/ws.ini" --since 2026-01-01T11:30:00Z)
check "since_keeps_only_later_entries" '[ $(wc -l <<<"$out") -eq 2 ] && ! grep -q create <<<"$out"'
out=$("$CLOISTER" log "$t/ws.ini" --path '/workspace/src/*')
check "path_glob_matches_rename_targets" '[ $(wc -l <<<"$out") -eq 1 ] && grep -q rename <<<"$out"'
out=$("$CLOISTER" log "$t/ws.ini" --json --path '/home/*')
check "json_prints_the_raw_line" '[ "$out" = "$(sed -n 4p "$t/state/journal.jsonl")" ]'

printf '%s' '{"time":"2026-01-01T14:00:00.000000Z","op":"wr' >>"$t/state/journal.jsonl"
out=$("$CLOISTER" log "$t/ws.ini" 2>"$t/err")
rc=$?
check "cut_short_last_line_is_reported_not_fatal" \
        '[ $rc -eq 0 ] && [ $(wc -l <<<"$out") -eq 4 ] && grep -q "1 damaged line(s) skipped, the first at line 5; the last entry was cut short" "$t/err"'

"$CLOISTER" log "$t/ws.ini" --since yesterday-ish >/dev/null 2>"$t/err"
check "bad_since_is_a_usage_error" '[ $st -eq 2 ] && grep -q -- "--since" "$t/err"'
"$CLOISTER" log "$t/nope.ini" >/dev/null 2>"$t/err"
check "missing_config_is_a_usage_error" '[ $st -eq 2 ] && [ $(wc -l <"$t/err") -eq 1 ]'

# The agent names files, link targets and itself: none of it may forge a
# line of the log or reach the reviewer's terminal as an escape sequence.
cat >"$t/state/journal.jsonl" <<'J'
{"time":"2026-01-01T10:00:00.000000Z","op":"create","path":"/workspace/a\n2026-01-01T10:00:01.000000Z unlink    /workspace/forged","mode":33188,"result":0,"pid":7,"uid":1000,"gid":1000,"comm":"x\u001b]0;owned\u0007"}
{"time":"2026-01-01T10:00:02.000000Z","op":"symlink","path":"/workspace/l","path2":"\u001b[2J\u009b31m\u202eevil","result":0,"pid":7,"uid":1000,"gid":1000,"comm":"ln"}
J
out=$("$CLOISTER" log "$t/ws.ini")
check "agent_names_cannot_forge_lines_or_send_terminal_escapes" \
        '[ $(wc -l <<<"$out") -eq 2 ] && ! LC_ALL=C grep -q "$(printf "\033")" <<<"$out" && ! LC_ALL=C grep -q "$(printf "\302\233")" <<<"$out" && grep -qF "\"/workspace/a\\n2026-01-01T10:00:01.000000Z unlink    /workspace/forged\"" <<<"$out" && grep -qF -e "-> \"\\033[2J\\302\\233""31m\\342\\200\\256evil\"" <<<"$out"'
cat >"$t/state/journal.jsonl" <<'J'
{"time":"2026-01-01T10:00:00.000000Z","op":"create","path":"/workspace/??","path_hex":"2f776f726b73706163652ffffe","mode":33188,"result":0,"pid":7,"uid":1000,"gid":1000,"comm":"sh"}
J
out=$("$CLOISTER" log "$t/ws.ini")
check "non_utf8_names_are_printed_as_their_exact_bytes_escaped" \
        'grep -qF "create    \"/workspace/\\377\\376\"" <<<"$out"'
# jansson escapes control characters but writes other UTF-8 raw, U+009B
# (a one-character CSI) and U+202E (right-to-left override) included:
# --json writes such a line again as ASCII.
printf '{"time":"2026-01-01T10:00:00.000000Z","op":"create","path":"/workspace/\302\23331m\342\200\256evil","mode":33188,"result":0,"pid":7,"uid":1000,"gid":1000,"comm":"sh"}\n' >"$t/state/journal.jsonl"
out=$("$CLOISTER" log "$t/ws.ini" --json)
check "json_writes_c1_and_bidi_controls_as_escapes" \
        '! LC_ALL=C grep -q "$(printf "\302\233")" <<<"$out" && ! LC_ALL=C grep -q "$(printf "\342\200\256")" <<<"$out" && grep -qF "\"path\":\"/workspace/\\u009B31m\\u202Eevil\"" <<<"$out"'

# The default is what a reviewer reads: the agent's changes, not the
# journal's marks of clean daemon sessions nor git's own files in the
# workspace .git; --all shows those too. A mark that says the journal is
# short is shown always.
cat >"$t/state/journal.jsonl" <<'J'
{"time":"2026-01-01T10:00:00.000000Z","op":"journal_open","pid":41,"start":5,"max_bytes":268435456}
{"time":"2026-01-01T10:00:01.000000Z","op":"create","path":"/workspace/.git/index.lock","mode":33188,"result":0,"pid":7,"uid":1000,"gid":1000,"comm":"git"}
{"time":"2026-01-01T10:00:02.000000Z","op":"rename","path":"/workspace/.git/index.lock","path2":"/workspace/.git/index","result":0,"pid":7,"uid":1000,"gid":1000,"comm":"git"}
{"time":"2026-01-01T10:00:03.000000Z","op":"write","path":"/workspace/main.c","offset":0,"length":10,"result":0,"pid":8,"uid":1000,"gid":1000,"comm":"sed"}
{"time":"2026-01-01T10:00:04.000000Z","op":"rename","path":"/workspace/.git/hooks/x","path2":"/workspace/hook","result":0,"pid":8,"uid":1000,"gid":1000,"comm":"mv"}
{"time":"2026-01-01T10:00:05.000000Z","op":"create","path":"/workspace/.gitignore","mode":33188,"result":0,"pid":8,"uid":1000,"gid":1000,"comm":"sh"}
{"time":"2026-01-01T10:00:06.000000Z","op":"journal_close","clean":true,"dropped":0,"refused":0}
{"time":"2026-01-01T10:00:07.000000Z","op":"journal_open","pid":42,"start":6,"max_bytes":268435456}
{"time":"2026-01-01T10:00:08.000000Z","op":"journal_truncated","max_bytes":268435456}
{"time":"2026-01-01T10:00:09.000000Z","op":"journal_close","clean":true,"dropped":0,"refused":3}
J
out=$("$CLOISTER" log "$t/ws.ini")
check "default_shows_the_agents_changes_but_not_clean_sessions_or_git_internals" \
        '[ $(wc -l <<<"$out") -eq 5 ] && grep -q "write .*/workspace/main.c" <<<"$out" && grep -q "rename .*/workspace/.git/hooks/x -> /workspace/hook" <<<"$out" && grep -q "create .*/workspace/.gitignore" <<<"$out" && ! grep -q "index.lock" <<<"$out" && ! grep -q "journal_open" <<<"$out"'
check "default_keeps_the_marks_that_say_the_journal_is_short" \
        'grep -q "journal_truncated" <<<"$out" && grep -q "journal_close clean (0 entries lost after the cut, 3 operation(s) refused" <<<"$out"'
out=$("$CLOISTER" log "$t/ws.ini" --all)
check "all_shows_every_entry" '[ $(wc -l <<<"$out") -eq 10 ]'
out=$("$CLOISTER" log "$t/ws.ini" --json)
check "json_has_the_same_default_as_text" \
        '[ $(wc -l <<<"$out") -eq 5 ] && ! grep -q index.lock <<<"$out" && [ $("$CLOISTER" log "$t/ws.ini" --json --all | wc -l) -eq 10 ]'

# Compaction (issue 34): a create with what folded into it, the count of
# files made and removed within a window, and past the soft bound its mark
# and coarse entries, each printed as what it stands for.
cat >"$t/state/journal.jsonl" <<'J'
{"time":"2026-01-01T10:00:00.000000Z","op":"journal_open","pid":41,"start":5,"max_bytes":1048576}
{"time":"2026-01-01T10:00:01.000000Z","op":"create","path":"/workspace/sedX","mode":33188,"result":0,"pid":7,"uid":1000,"gid":1000,"comm":"sed","owner_uid":1000,"owner_gid":1000,"folded":2}
{"time":"2026-01-01T10:00:02.000000Z","op":"transient","path":"/workspace/tmp/t.9","ops":30,"count":10,"result":0,"pid":8,"uid":1000,"gid":1000,"comm":"bash"}
{"time":"2026-01-01T10:00:03.000000Z","op":"journal_coarse","max_bytes":1048576,"at_bytes":586752,"window_ms":10000}
{"time":"2026-01-01T10:00:04.000000Z","op":"write","path":"/workspace/build","coarse":"dir","count":120,"bytes":4096,"result":0,"pid":9,"uid":1000,"gid":1000,"comm":"as"}
{"time":"2026-01-01T10:00:05.000000Z","op":"unlink","path":"/workspace","coarse":"tree","count":7,"mixed":true,"result":0,"pid":10,"uid":1000,"gid":1000,"comm":"rm"}
{"time":"2026-01-01T10:00:06.000000Z","op":"journal_close","clean":true,"dropped":0,"refused":0}
J
out=$("$CLOISTER" log "$t/ws.ini" 2>"$t/err")
check "log_prints_folded_creates_transient_counts_and_coarse_entries" \
        '[ $st -eq 0 ] && [ $(wc -l <<<"$out") -eq 5 ] && grep -qF "create    /workspace/sedX mode 0644 owner 1000:1000 [and 2 change(s) of its maker folded in]  (sed[7] uid 1000)" <<<"$out" && grep -qF "transient /workspace/tmp/t.9 [the last of 10 made and removed within a window, 30 operations]  (bash[8] uid 1000)" <<<"$out" && grep -qF "journal_coarse the journal passed 586752 bytes" <<<"$out" && grep -qF "write     /workspace/build [coarse: 120 in this directory, 4096 bytes]  (as[9] uid 1000)" <<<"$out" && grep -qF "unlink    /workspace [coarse: 7 anywhere under this directory, by more than this caller]  (rm[10] uid 1000)" <<<"$out" && ! grep -q "times\]" <<<"$out"'
check "log_says_on_stderr_that_entries_became_coarse" 'grep -q "passed its soft bound" "$t/err"'
out=$("$CLOISTER" log "$t/ws.ini" --json 2>/dev/null)
# (The reader skips a line that is not a JSON object: each was read as one.)
check "json_of_compacted_entries_is_the_lines_verbatim" \
        '[ "$out" = "$(sed -n "2,6p" "$t/state/journal.jsonl")" ]'
