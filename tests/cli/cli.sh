#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# TAP tests of the cloister CLI: dispatch, exit codes and one-line errors,
# and `cloister check` on real configs and real git repositories.
set -u

: "${CLOISTER:?set by meson}" "${CLOISTER_SRC:?set by meson}"
tmp=$(mktemp -d /tmp/cloister-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$CLOISTER_SRC/tests/cli/lib.sh"

echo "1..30"

run "$CLOISTER" --version
expect "version_prints_the_version" 0
ok "$(grep -Eq '^cloister [0-9]+\.[0-9]+\.[0-9]+$' <<<"$out"; echo $?)" "version_output_is_name_and_semver"
# A bug report carries what cloister runs with: the versions found at run time.
ok "$(head -1 <<<"$out" | grep -Eq '^cloister [0-9]+\.[0-9]+\.[0-9]+$'; echo $?)" "version_first_line_is_name_and_semver"
ok "$(grep -Eq '^libfuse 3\.[0-9]+' <<<"$out" && grep -Eq '^libgit2 [0-9]+\.[0-9]+\.[0-9]+$' <<<"$out" &&
        grep -Eq '^libsodium [0-9]+\.[0-9]+' <<<"$out" && grep -Eq '^libseccomp [0-9]' <<<"$out"; echo $?)" \
        "version_names_the_libraries_it_runs_with"
if command -v bwrap >/dev/null; then
        ok "$(grep -Eq "^bubblewrap [0-9]+\.[0-9]+\.[0-9]+ \(/" <<<"$out"; echo $?)" "version_names_bubblewrap_and_its_path"
else
        ok "$(grep -q '^bubblewrap not found' <<<"$out"; echo $?)" "version_says_bubblewrap_is_missing"
fi

run "$CLOISTER" help
expect "help_exits_zero" 0
ok "$(grep -q '^  check ' <<<"$out" && grep -q '^  mount ' <<<"$out" && grep -q '^  run ' <<<"$out"; echo $?)" "help_lists_the_subcommands"

run "$CLOISTER" help check
expect "help_for_a_command_exits_zero" 0
ok "$(grep -q -- '--strict' <<<"$out" && grep -q 'docs/cloister-check.md' <<<"$out"; echo $?)" \
        "help_for_a_command_shows_its_options_and_manual"

run "$CLOISTER" help frobnicate
expect "help_for_an_unknown_command_is_a_usage_error" 2 "'frobnicate' is not a cloister command"

run "$CLOISTER" frobnicate
expect "unknown_subcommand_exits_2" 2 "^cloister: 'frobnicate' is not a cloister command"
ok "$(one_line; echo $?)" "unknown_subcommand_error_is_one_line"

run "$CLOISTER" --frob
expect "unknown_global_option_exits_2" 2 "^cloister: unknown option '--frob'"

run "$CLOISTER"
expect "no_subcommand_is_a_usage_error" 2 "usage: cloister COMMAND"

run "$CLOISTER" check --frob x.ini
expect "unknown_check_option_exits_2" 2 "^cloister check: unknown option '--frob'$"

run "$CLOISTER" check
expect "check_without_config_is_a_usage_error" 2 "usage: cloister check"

# A real git repository as the source.
src="$tmp/src"
git init -q "$src"
git -C "$src" -c user.name=t -c user.email=t@e commit -q --allow-empty -m base
mkdir -p "$tmp/home/.ssh" "$tmp/mirror"
cat >"$tmp/ok.ini" <<INI
[workspace]
name = cli
state = $tmp/state
[repo]
source = $src
[mirror "m"]
source = $tmp/mirror
path = /opt/m
[limits]
bytes = 1G
files = 1000
timeout = 10m
memory = 1G
processes = 100
INI
run env HOME="$tmp/home" "$CLOISTER" check "$tmp/ok.ini"
expect "check_accepts_a_valid_config" 0
ok "$(grep -q ': ok$' <<<"$out"; echo $?)" "check_reports_ok"

run env HOME="$tmp/home" "$CLOISTER" check --strict "$tmp/ok.ini"
expect "strict_check_accepts_a_config_without_findings" 0

sed "s|^source = $tmp/mirror|source = $tmp/home/.ssh|" "$tmp/ok.ini" >"$tmp/ssh.ini"
run env HOME="$tmp/home" "$CLOISTER" check "$tmp/ssh.ini"
expect "mirroring_ssh_is_a_warning" 0 "warning: .*ssh.ini:6: key 'source' in \[mirror \"m\"\]: '$tmp/home/.ssh' exposes"
run env HOME="$tmp/home" "$CLOISTER" check --strict "$tmp/ssh.ini"
expect "mirroring_ssh_fails_under_strict" 1 "error: .*exposes"

grep -v '^processes' "$tmp/ok.ini" >"$tmp/nolimit.ini"
run env HOME="$tmp/home" "$CLOISTER" check --strict "$tmp/nolimit.ini"
expect "absent_limit_fails_under_strict" 1 "key 'processes' in \[limits\]: not set"

printf '[workspace]\nname = x\nstate = /s\n[repo]\nsource = /r\nrevision = HEAD\n' >"$tmp/bad.ini"
run "$CLOISTER" check "$tmp/bad.ini"
expect "invalid_config_exits_2_with_file_line_key_and_reason" 2 \
        "^cloister check: $tmp/bad.ini:6: key 'revision' in \[repo\]: unknown key$"

sed "s|^\[repo\]|[repo]\nrev = no-such-branch|" "$tmp/ok.ini" >"$tmp/rev.ini"
run "$CLOISTER" check "$tmp/rev.ini"
expect "unresolvable_revision_fails" 1 "key 'rev' in \[repo\]: 'no-such-branch'"

run "$CLOISTER" check "$tmp/absent.ini"
expect "missing_config_file_exits_2" 2 "absent.ini: cannot open: No such file or directory"

# The binary links only what run and shell need; every other command lives
# in cloister-commands.so beside it, loaded only for them (mounts/cli/main.c).
# libsodium is one of what a run needs: the run record's chain (BLAKE2b), a
# library without dependencies, about 0.06 ms of a start.
if command -v readelf >/dev/null; then
        needed=$(readelf -d "$CLOISTER" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')
        ok "$(! grep -Eq 'libgit2|libfuse|libssl|libcrypto|libevent' <<<"$needed"; echo $?)" \
                "the_binary_links_none_of_the_commands_libraries"
else
        ok 0 "the_binary_links_none_of_the_commands_libraries # SKIP no readelf"
fi
# A copy of the binary without its module: the module's commands fail with
# one clear line, nothing runs; run and help, in the binary, still work.
mkdir "$tmp/alone"
cp "$CLOISTER" "$tmp/alone/cloister"
run "$tmp/alone/cloister" diff "$tmp/absent.ini"
if [ $rc = 1 ] && grep -q "cannot load its commands" <<<"$err"; then
        expect "a_missing_module_is_one_clear_line" 1 "^cloister: cannot load its commands \(.*cloister-commands.so\): "
        ok "$(one_line; echo $?)" "a_missing_module_error_is_one_line"
else
        # An installed cloister on this machine answers for the copy.
        ok 0 "a_missing_module_is_one_clear_line # SKIP an installed module is found"
        ok 0 "a_missing_module_error_is_one_line # SKIP an installed module is found"
fi
run "$tmp/alone/cloister" help
expect "help_needs_no_module" 0
# Something else under the module's name beside the binary is refused, not run.
printf 'not an ELF file\n' >"$tmp/alone/cloister-commands.so"
run "$tmp/alone/cloister" diff "$tmp/absent.ini"
expect "a_file_that_is_not_the_module_is_refused" 1 "^cloister: cannot load its commands \($tmp/alone/cloister-commands.so\): "

[ "$fails" = 0 ]
