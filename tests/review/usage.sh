#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cloister diff / export: bad invocations are usage errors (exit 2) with one
# clear line, and nothing is mounted or written for them.
set -uo pipefail
: "${CLOISTER:?run through meson test}"
t=$(mktemp -d /tmp/cloister-review-usage.XXXXXX)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/state" "$t/src"
git -C "$t/src" init -q && git -C "$t/src" -c user.name=t -c user.email=t@t commit -q --allow-empty -m base
cat >"$t/ws.ini" <<INI
[workspace]
name = usage
state = $t/state
mountpoint = $t/mnt
[repo]
source = $t/src
INI
n=0
# st: the exit status of the command just before the check.
check() { st=$?; n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }
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
