#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# TAP tests of `cloister check` on the whole blueprint: the broker policy
# parsed by the broker's parser, the cross-checks of the policy against the
# workspace, the sealed-secret store and the source repository's remotes,
# and the --json form. Real files, a real git repository, real secrets.
set -u

: "${CLOISTER:?set by meson}" "${CLOISTER_SRC:?set by meson}"
tmp=$(mktemp -d /tmp/cloister-check.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$CLOISTER_SRC/tests/cli/lib.sh"

echo "1..68"

src="$tmp/src"
git init -q "$src"
git -C "$src" -c user.name=t -c user.email=t@e commit -q --allow-empty -m base
git -C "$src" remote add origin https://git.example.com/org/repo.git

# config [SOURCE]: a workspace config with nothing for the config lint to say.
config() {
        cat >"$tmp/ws.ini" <<INI
[workspace]
name = ck
state = $tmp/state
[repo]
source = ${1:-$src}
[broker]
policy = $tmp/policy.ini
[limits]
bytes = 1G
files = 1000
timeout = 10m
memory = 1G
processes = 100
INI
}
policy() { cat >"$tmp/policy.ini"; }
check() { run "$CLOISTER" check "$@" "$tmp/ws.ini"; }
no_finding() { ! grep -q "$1" <<<"$err$out"; }

# A policy that passes every cross-check: the scope is this workspace's,
# its host is origin's, and its max_ttl is within the bound.
good_policy() {
        policy <<'P'
# the one scope
[scope "git"]
audience = https://git.example.com
max_ttl = 15m
workspaces = ck
hosts = git.example.com
P
}

config
good_policy
check --strict
expect "blueprint_without_findings_passes_strict_check" 0
ok "$(grep -q ': ok$' <<<"$out" && [ -z "$err" ]; echo $?)" "clean_blueprint_prints_only_ok"

# ---- the policy is parsed by the broker's own parser ----

printf 'this is not a policy\n' | policy
check
expect "garbage_policy_fails_check_with_exit_2" 2 \
        "^cloister check: $tmp/policy.ini:1: malformed line: expected 'key = value' or '\[section\]'$"
ok "$(one_line; echo $?)" "garbage_policy_error_is_one_line"

printf '[scope "git"]\naudience = a\nworkspaces = ck\ncolour = red\n' | policy
check
expect "policy_error_names_file_line_key_and_section" 2 \
        "^cloister check: $tmp/policy.ini:4: key 'colour' in \[scope \"git\"\]: unknown key"

printf '[scope "git"]\naudience = a\nworkspaces = ck\nmax_ttl = 2d\n' | policy
check
expect "policy_ttl_past_the_ceiling_fails_as_in_the_broker" 2 \
        "policy.ini:4: key 'max_ttl' in \[scope \"git\"\]: 172800 s is longer than the ceiling"

printf '[scope "git"]\naud\033[2Jience = a\n' | policy
check
expect "policy_error_escapes_control_characters" 2 \
        "policy.ini:2: key 'aud\\\\x1b\[2Jience' in \[scope \"git\"\]: unknown key"
ok "$(one_line && ! grep -q $'\033' <<<"$err"; echo $?)" "escaped_error_stays_one_printable_line"

printf '[scope "git"]\naudience = a\n\n' | policy
check
expect "policy_missing_key_names_the_scope_header" 2 \
        "policy.ini:1: \[scope \"git\"\]: missing key 'workspaces'"

# A malformed line is reported at its own line, before any error a later
# line would make (inih goes on past it and reports it last).
printf '[scope "git"]\naudience = a\n[limits\nrate = 5\n' | policy
check
expect "policy_section_header_without_bracket_is_reported_at_its_line" 2 \
        "^cloister check: $tmp/policy.ini:3: malformed line: expected 'key = value' or '\[section\]'$"
printf '[scope "git"]\naudience = a\nno equals sign here\ncolour = red\n' | policy
check
expect "policy_line_without_a_value_is_reported_before_a_later_bad_key" 2 \
        "^cloister check: $tmp/policy.ini:3: malformed line"
printf '[workspace]\nname = x\nstate = %s/s\nthis is wrong\n[repo]\nsource = %s\nbogus = 1\n' \
        "$tmp" "$src" >"$tmp/bad.ini"
run "$CLOISTER" check "$tmp/bad.ini"
expect "config_malformed_line_is_reported_at_its_line" 2 \
        "^cloister check: $tmp/bad.ini:4: malformed line"
printf '[workspace]\nname = x\nstate = %s/s\n[repo\nsource = %s\n' "$tmp" "$src" >"$tmp/bad.ini"
run "$CLOISTER" check "$tmp/bad.ini"
expect "config_section_header_without_bracket_is_reported_at_its_line" 2 \
        "^cloister check: $tmp/bad.ini:4: malformed line"

# A unix socket path must fit sun_path (107 bytes): named with the line of
# the key that makes it, or of the state it comes from.
long=$tmp/$(printf 'd%.0s' $(seq 1 100))
good_policy
config
sed -i "s|^state = .*|state = $long|" "$tmp/ws.ini"
check
expect "socket_path_over_107_bytes_is_refused_at_the_state_line" 2 \
        "^cloister check: $tmp/ws.ini:3: key 'state' in \[workspace\]: the socket '$long/broker.sock' is [0-9]+ bytes long; a unix socket's path may have at most 107$"
config
sed -i '/^socket = /d; s|^policy = .*|&\nsocket = '"$tmp/$(printf 's%.0s' $(seq 1 100))"'.sock|' "$tmp/ws.ini"
check
expect "broker_socket_over_107_bytes_is_refused_at_its_line" 2 \
        "^cloister check: $tmp/ws.ini:8: key 'socket' in \[broker\]: the socket"
config
sed -i "s|^policy = .*|&\nsocket = $tmp/$(printf 's%.0s' $(seq 1 $((107 - ${#tmp} - 6))))".sock"|" "$tmp/ws.ini"
check
expect "broker_socket_of_exactly_107_bytes_is_accepted" 0

rm -f "$tmp/policy.ini"
config
check
expect "missing_policy_file_is_a_missing_host_path" 1 \
        "^cloister check: $tmp/ws.ini: key 'policy' in \[broker\]: '$tmp/policy.ini': No such file or directory$"

# Everything is reported in one run: a missing mirror source and a bad policy.
printf '[scope "git"]\nttl = soon\n' | policy
config
printf '[mirror "m"]\nsource = %s/absent\npath = /opt/m\n' "$tmp" >>"$tmp/ws.ini"
check
expect "every_problem_is_reported_in_one_run" 2 "mirror \"m\"\]: '$tmp/absent': No such file"
ok "$(grep -q "policy.ini:2: key 'ttl' in \[scope \"git\"\]: 'soon' is not a duration" <<<"$err"; echo $?)" \
        "the_policy_error_is_reported_beside_the_missing_path"
config

# ---- cross-checks ----

good_policy
sed -i 's/^workspaces = ck$/workspaces = other, more/' "$tmp/policy.ini"
check
expect "scope_for_other_workspaces_is_a_warning" 0 \
        "^cloister check: warning: $tmp/policy.ini:5: key 'workspaces' in \[scope \"git\"\]: does not name workspace 'ck': the scope is dead for it"
check --strict
expect "scope_for_other_workspaces_fails_under_strict" 1 "error: .*dead for it"
sed -i 's/^workspaces = .*/workspaces = */' "$tmp/policy.ini"
check --strict
expect "wildcard_workspaces_name_every_workspace" 0

good_policy
echo "secret = api-token" >>"$tmp/policy.ini"
check
expect "unstored_secret_is_a_warning" 0 \
        "policy.ini:7: key 'secret' in \[scope \"git\"\]: secret 'api-token' is not stored in '$tmp/state/broker' \(cloister secret add api-token --config $tmp/ws.ini\)"
ok "$([ ! -e "$tmp/state" ]; echo $?)" "check_creates_no_broker_dir"
printf 'tok-value\n' | "$CLOISTER" secret add api-token --config "$tmp/ws.ini" 2>/dev/null
check --strict
expect "stored_secret_passes_strict_check" 0
ok "$(no_finding tok-value; echo $?)" "check_never_prints_a_secret"
printf 'x\n' | "$CLOISTER" secret add other-token --config "$tmp/ws.ini" 2>/dev/null
"$CLOISTER" secret rm api-token --config "$tmp/ws.ini"
check
expect "another_stored_secret_does_not_count" 0 "secret 'api-token' is not stored"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
        chmod 0711 "$tmp"
        # The broker dir is 0700 and root's: another user cannot look inside.
        run setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent \
                "$CLOISTER" check "$tmp/ws.ini"
        expect "unreadable_broker_dir_is_reported_not_guessed" 0 \
                "cannot tell whether secret 'api-token' is stored: \[broker\] dir '$tmp/state/broker': Permission denied"
        chmod 0700 "$tmp"
else
        ok 0 "unreadable_broker_dir_is_reported_not_guessed # SKIP needs root and setpriv"
fi

good_policy
sed -i 's/^max_ttl = 15m$/max_ttl = 2h/' "$tmp/policy.ini"
check
expect "max_ttl_above_the_lint_bound_is_a_warning" 0 \
        "policy.ini:4: key 'max_ttl' in \[scope \"git\"\]: 7200 s is longer than the lint's bound of 3600 s"
sed -i 's/^max_ttl = 2h$/ttl = 90m/' "$tmp/policy.ini"
check
expect "max_ttl_taken_from_ttl_is_checked_too" 0 \
        "policy.ini:2: key 'max_ttl' in \[scope \"git\"\]: 5400 s \(from ttl\) is longer"
sed -i 's/^ttl = 90m$/max_ttl = 1h/' "$tmp/policy.ini"
check --strict
expect "max_ttl_at_the_bound_passes" 0

# hosts: what git would name to git-credential-cloister for each remote.
good_policy
sed -i 's/^hosts = .*/hosts = other.example.com/' "$tmp/policy.ini"
check
expect "host_no_remote_leads_to_is_a_warning" 0 \
        "policy.ini:6: key 'hosts' in \[scope \"git\"\]: 'other.example.com' matches no git remote of \[repo\] source \(origin asks for 'git.example.com'\)"
sed -i 's/^hosts = .*/hosts = GIT.Example.COM/' "$tmp/policy.ini"
check --strict
expect "host_matches_a_remote_ignoring_case" 0

good_policy
git -C "$src" remote set-url origin https://git.example.com:8443/org/repo.git
check
expect "a_port_is_part_of_the_host_git_names" 0 "origin asks for 'git.example.com:8443'"
git -C "$src" remote set-url origin 'https://bot:hunter2@git.example.com/org/repo.git'
check --strict
expect "user_info_is_not_part_of_the_host" 0
sed -i 's/^hosts = .*/hosts = other.example.com/' "$tmp/policy.ini"
check
ok "$(grep -q 'origin asks for' <<<"$err" && no_finding hunter2 && no_finding 'bot:'; echo $?)" \
        "remote_credentials_are_never_printed"
good_policy
git -C "$src" remote set-url origin git@git.example.com:org/repo.git
check
expect "ssh_remote_asks_no_credential_helper" 0 \
        "'git.example.com' matches no git remote of \[repo\] source \(origin asks none \(not http, https, ftp or ftps\)\)"
git -C "$src" remote set-url --push origin https://git.example.com/org/repo.git
check --strict
expect "a_push_url_counts" 0
git -C "$src" config --unset remote.origin.pushurl
git -C "$src" remote set-url origin ex:org/repo.git
git -C "$src" config url.https://git.example.com/.insteadOf ex:
check --strict
expect "url_insteadof_is_applied_as_git_does" 0
git -C "$src" remote remove origin
check
expect "repository_without_remotes_matches_no_host" 0 \
        "'git.example.com' can match no git remote: \[repo\] source '$src' has none"
mkdir -p "$tmp/plain"
config "$tmp/plain"
check
expect "plain_directory_source_matches_no_host" 0 \
        "'git.example.com' can match no git remote: \[repo\] source '$tmp/plain' is not a git repository"
git -C "$src" remote add origin https://git.example.com/org/repo.git
cp -r "$src" "$tmp/broken"
printf '[core\n' >>"$tmp/broken/.git/config"
config "$tmp/broken"
check
expect "unopenable_repository_is_an_error" 1 \
        "^cloister check: $tmp/ws.ini: key 'source' in \[repo\]: '$tmp/broken': cannot open the git repository: "
ok "$(no_finding "key 'hosts'"; echo $?)" "unopenable_repository_gets_no_guess_about_its_remotes"
config

# ---- --json ----

good_policy
sed -i 's/^max_ttl = 15m$/max_ttl = 2h/; s/^workspaces = ck$/workspaces = ck, other/' "$tmp/policy.ini"
run "$CLOISTER" check --json "$tmp/ws.ini"
expect "json_check_exits_as_text_check" 0
ok "$([ -z "$err" ]; echo $?)" "json_check_prints_nothing_on_stderr"
json_test() { # json_test NAME PYTHON-ASSERTIONS (on `rows`, the parsed lines)
        python3 -c "
import json, sys
rows = [json.loads(l) for l in sys.stdin.read().splitlines()]
$2
" <<<"$out"
        ok $? "$1"
}
json_test "json_lines_hold_every_field_and_nothing_else" "
assert rows, 'no findings'
for r in rows:
    assert set(r) == {'file', 'line', 'section', 'key', 'severity', 'message'}, r"
json_test "json_finding_names_file_line_section_and_key" "
assert rows == [{'file': '$tmp/policy.ini', 'line': 4, 'section': 'scope \"git\"',
                 'key': 'max_ttl', 'severity': 'warning',
                 'message': \"7200 s is longer than the lint's bound of 3600 s (1 hour)\"}], rows"
run "$CLOISTER" check --json --strict "$tmp/ws.ini"
expect "json_strict_check_fails_on_warnings" 1
json_test "json_strict_findings_are_errors" "assert [r['severity'] for r in rows] == ['error'], rows"

printf '[scope "git"]\naudience = a\nworkspaces = ck\ncolour = red\n' | policy
run "$CLOISTER" check --json "$tmp/ws.ini"
expect "json_policy_error_exits_2" 2
json_test "json_policy_error_is_split_into_its_parts" "
assert rows == [{'file': '$tmp/policy.ini', 'line': 4, 'section': 'scope \"git\"',
                 'key': 'colour', 'severity': 'error',
                 'message': 'unknown key (expected audience, ttl, max_ttl, max_uses, '
                            'workspaces, hosts, username or secret)'}], rows"
printf '[workspace]\nname = ck\nstate = /s\n[repo]\nsource = /r\nrevision = HEAD\n' >"$tmp/bad.ini"
run "$CLOISTER" check --json "$tmp/bad.ini"
json_test "json_config_error_is_split_into_its_parts" "
assert rows == [{'file': '$tmp/bad.ini', 'line': 6, 'section': 'repo', 'key': 'revision',
                 'severity': 'error', 'message': 'unknown key'}], rows"

# ---- the egress proxy's [inject] rules ----

# proxy_config [NETWORK-LINES]: config, then proxy mode and [inject "api"] (scope on line 21).
proxy_config() {
        config
        cat >>"$tmp/ws.ini" <<INI
[network]
mode = proxy
bytes_out = 1M
[inject "api"]
host = api.example.com
methods = POST
paths = /v1/**
scope = model
secret = model-key
INI
        [ -z "${1:-}" ] || printf '[network]\n%s\n' "$1" >>"$tmp/ws.ini"
}
model_scope() { printf '[scope "model"]\naudience = https://api.example.com\nworkspaces = ck\n' >>"$tmp/policy.ini"; }

rm -rf "$tmp/state"
good_policy
proxy_config
check
expect "inject_rule_without_its_scope_is_a_warning" 0 \
        "^cloister check: warning: $tmp/ws.ini:21: key 'scope' in \[inject \"api\"\]: scope 'model' is not in the broker policy '$tmp/policy.ini': no token carries it"
ok "$(grep -q "ws.ini:22: key 'secret' in \[inject \"api\"\]: secret 'model-key' is not stored in '$tmp/state/broker' (cloister secret add model-key --config $tmp/ws.ini)" <<<"$err"; echo $?)" \
        "inject_rule_with_an_unstored_secret_is_a_warning"
check --strict
expect "inject_rule_findings_fail_strict_check" 1 "error: .*scope 'model' is not in the broker policy"
model_scope
printf 'real-api-key\n' | "$CLOISTER" secret add model-key --config "$tmp/ws.ini" 2>/dev/null
check --strict
expect "inject_rule_with_its_scope_and_secret_passes_strict_check" 0
ok "$(no_finding real-api-key; echo $?)" "inject_check_never_prints_the_secret"
sed -i 's/^workspaces = ck$/workspaces = other/' "$tmp/policy.ini"
check
expect "inject_scope_of_other_workspaces_is_a_warning" 0 \
        "ws.ini:21: key 'scope' in \[inject \"api\"\]: scope 'model' \($tmp/policy.ini:[0-9]+\) does not name workspace 'ck'"
good_policy
model_scope
proxy_config "deny = *.example.com"
check
expect "deny_entry_over_an_inject_host_is_a_warning" 0 \
        "ws.ini:18: key 'host' in \[inject \"api\"\]: 'api.example.com' is denied by \[network\] deny entry '\*.example.com' \(line 24\)"
proxy_config "allow = api.example.com"
check
expect "allow_entry_for_an_inject_host_is_a_warning" 0 \
        "ws.ini:24: key 'allow' in \[network\]: 'api.example.com' also covers 'api.example.com', the host of \[inject \"api\"\]: it opens CONNECT tunnels"
proxy_config "allow = registry.npmjs.org, *.github.io"
check
expect "allow_wildcard_over_a_public_suffix_is_a_warning" 0 \
        "^cloister check: warning: $tmp/ws.ini:24: key 'allow' in \[network\]: '\*.github.io' is too broad: 'github.io' is a public suffix"
ok "$(no_finding registry.npmjs.org; echo $?)" "allow_of_one_host_is_not_too_broad"
run "$CLOISTER" check --json "$tmp/ws.ini"
json_test "json_inject_finding_names_file_line_section_and_key" "
assert [(r['line'], r['section'], r['key'], r['severity']) for r in rows] == [(24, 'network', 'allow', 'warning')], rows"
proxy_config
sed -i 's/^mode = proxy$/mode = none/' "$tmp/ws.ini"
check
expect "inject_rule_without_proxy_mode_is_a_config_error" 2 \
        "^cloister check: $tmp/ws.ini:16: \[network\] allow, deny, resolve, test_ca and \[inject\] rules need \[network\] mode = proxy$"
config
rm -rf "$tmp/state"

# ---- the quickstart config, with what examples/quickstart gives it ----
# Its repository (the demo project, with the git scope's host as origin),
# moved with its state under $tmp as CLOISTER_QUICKSTART_ROOT moves them.
# tests/examples/quickstart.sh runs the whole quickstart.

qs="$tmp/qs"
mkdir -p "$qs/config"
sed "s|/var/tmp/cloister/|$qs/|g" "$CLOISTER_SRC/examples/quickstart.ini" >"$qs/config/quickstart.ini"
cp "$CLOISTER_SRC/examples/policy.ini" "$qs/config/policy.ini"
git init -q "$qs/quickstart-repo"
cp -R "$CLOISTER_SRC/examples/demo/." "$qs/quickstart-repo/"
git -C "$qs/quickstart-repo" add .
git -C "$qs/quickstart-repo" -c user.name=t -c user.email=t@e commit -q -m quickstart
git -C "$qs/quickstart-repo" remote add origin https://git.example.com/demo/greet.git
run "$CLOISTER" check "$qs/config/quickstart.ini"
expect "quickstart_without_its_secret_passes_check_with_a_warning" 0 "warning: .*secret 'deploy-token' is not stored"
run "$CLOISTER" check --strict "$qs/config/quickstart.ini"
expect "quickstart_without_its_secret_fails_strict_check" 1 "secret 'deploy-token' is not stored"
printf 'deploy-secret\n' | "$CLOISTER" secret add deploy-token --config "$qs/config/quickstart.ini" 2>/dev/null
run "$CLOISTER" check --strict "$qs/config/quickstart.ini"
expect "quickstart_with_its_secret_and_remote_passes_strict_check" 0
git -C "$qs/quickstart-repo" remote set-url origin https://github.com/demo/greet.git
run "$CLOISTER" check --strict "$qs/config/quickstart.ini"
expect "quickstart_whose_origin_is_another_host_fails_strict_check" 1 "'git.example.com' matches no git remote"

[ "$fails" = 0 ]
