#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cloister diff / export: bad invocations are usage errors (exit 2) with one
# clear line, and nothing is mounted or written for them.
. "$CLOISTER_SRC/tests/review/lib.sh"
make_src :
write_config usage
usage_error() { # ARGS... -> exit 2, one line on stderr, nothing mounted
        "$CLOISTER" "$@" >/dev/null 2>"$t/err"
        [ $? -eq 2 ] && [ "$(wc -l <"$t/err")" -eq 1 ] && ! mountpoint -q "$t/mnt" 2>/dev/null
}
echo "1..9"
check "export_needs_an_action" 'usage_error export "$t/ws.ini"'
check "export_actions_are_exclusive" 'usage_error export "$t/ws.ini" --commit --discard'
check "export_commit_and_commits_are_exclusive" 'usage_error export "$t/ws.ini" --commit --commits'
check "export_output_goes_with_mbox" 'usage_error export "$t/ws.ini" --commit -o "$t/x"'
check "export_commits_keeps_the_agents_authors" 'usage_error export "$t/ws.ini" --commits --author "A <a@b>"'
check "diff_takes_one_config" 'usage_error diff'
check "diff_rejects_unknown_options" 'usage_error diff "$t/ws.ini" --bogus'
check "diff_of_a_missing_config_names_it" 'usage_error diff "$t/none.ini" && grep -q none.ini "$t/err"'
"$CLOISTER" export "$t/ws.ini" --discard </dev/null >/dev/null 2>"$t/err"
check "discard_without_yes_off_a_terminal_refuses_before_mounting" \
        '[ $st -eq 1 ] && grep -q "nothing was discarded" "$t/err" && ! mountpoint -q "$t/mnt" 2>/dev/null'
