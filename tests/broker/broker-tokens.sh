#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tokens end to end over the real broker socket: issue, clamp, refusal,
# offline verification and each of its distinct exit codes.
. "$(dirname "$0")/lib.sh"

make_workspace ws1
make_workspace ws2
start_broker "$T/ws1.ini" "$T/ws2.ini" || { echo "Bail out! broker did not start"; cat "$T/broker.log"; exit 1; }
export CLOISTER_BROKER=$(sock ws1)

tok=$("$CLOISTER" token issue git)
check "issue_prints_a_v4_public_token" test "${tok#v4.public.}" != "$tok"
check_rc "issued_token_verifies_offline_with_the_config_keys" 0 \
        "$CLOISTER" token verify "$tok" --config "$T/ws1.ini" --aud https://git.example.com --scope git
check_rc "issued_token_verifies_with_the_public_paserk_file" 0 \
        "$CLOISTER" token verify "$tok" --keys "$T/ws1/state/broker/public.paserk" --workspace ws1
check_rc "issued_token_verifies_with_keys_fetched_over_the_socket" 0 "$CLOISTER" token verify "$tok"
check_rc "token_read_from_stdin_verifies" 0 sh -c "echo '$tok' | '$CLOISTER' token verify - --config '$T/ws1.ini'"

check_rc "wrong_audience_exits_9" 9 "$CLOISTER" token verify "$tok" --config "$T/ws1.ini" --aud https://evil.example.com
grep -q "audience is 'https://git.example.com'" "$T/err" && ok "wrong_audience_says_why_in_one_line" || not_ok "wrong_audience_says_why_in_one_line"
check_rc "wrong_scope_exits_10" 10 "$CLOISTER" token verify "$tok" --config "$T/ws1.ini" --scope deploy
check_rc "token_of_one_workspace_fails_for_another_exit_5" 5 \
        "$CLOISTER" token verify "$tok" --keys "$T/ws1/state/broker/public.paserk" --workspace ws2
check_rc "token_checked_against_other_broker_keys_is_unknown_key_exit_4" 4 \
        "$CLOISTER" token verify "$tok" --config "$T/ws2.ini"

exp=$("$CLOISTER" token issue git --json | json_get exp)
tok2=$("$CLOISTER" token issue git)
check_rc "token_expired_past_skew_exits_7" 7 "$CLOISTER" token verify "$tok2" --config "$T/ws1.ini" --now $((exp + 3600))
check_rc "token_just_past_exp_within_skew_is_valid" 0 "$CLOISTER" token verify "$tok2" --config "$T/ws1.ini" --now $((exp + 10))
check_rc "token_past_exp_with_zero_skew_is_expired" 7 "$CLOISTER" token verify "$tok2" --config "$T/ws1.ini" --now $((exp + 10)) --skew 0
check_rc "token_before_nbf_minus_skew_exits_8" 8 "$CLOISTER" token verify "$tok2" --config "$T/ws1.ini" --now $((exp - 3600))

# One character changed in the payload: the signature must fail.
bad=$(python3 -c 'import sys; t=sys.argv[1]; i=20; print(t[:i] + ("A" if t[i] != "A" else "B") + t[i+1:])' "$tok")
check_rc "altered_token_exits_5" 5 "$CLOISTER" token verify "$bad" --config "$T/ws1.ini"
check_rc "garbage_token_exits_3" 3 "$CLOISTER" token verify "not-a-token" --config "$T/ws1.ini"
check_rc "local_token_is_refused_as_malformed_exit_3" 3 "$CLOISTER" token verify "v4.local.AAAA" --config "$T/ws1.ini"
# Non-canonical base64: a last character with nonzero trailing bits.
footer=${tok##*.}
if [ "$(( ${#footer} % 4 ))" != 0 ]; then
        last=${footer: -1}
        alt=$(python3 -c 'import sys
a="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
c=sys.argv[1]; n=len(sys.argv[2]) % 4; bits = 4 if n==2 else 2
i=a.index(c); print(a[i+1] if (i % (1<<bits)) == 0 else a[i-1])' "$last" "$footer")
        check_rc "footer_with_nonzero_trailing_bits_is_malformed_exit_3" 3 \
                "$CLOISTER" token verify "${tok%.*}.${footer%?}$alt" --config "$T/ws1.ini"
fi

# A forged token whose (unverified) footer names a key id that drives the
# terminal: the refusal quotes it, here and in --json.
evil_footer=$(printf '{"kid":"\\u001b]0;owned\\u0007\\u202e"}' | base64 -w0 | tr '+/' '-_' | tr -d =)
check_rc "unknown_key_exits_4" 4 "$CLOISTER" token verify "${tok%.*}.$evil_footer" --config "$T/ws1.ini"
if LC_ALL=C grep -q "$(printf '[\033\007]')" "$T/err" || LC_ALL=C grep -q "$(printf '\342\200\256')" "$T/err"; then
        not_ok "forged_kid_is_quoted_in_the_refusal"; sed 's/^/# /' "$T/err" | cat -v
elif grep -qF 'kid \033]0;owned\a\342\200\256' "$T/err"; then ok "forged_kid_is_quoted_in_the_refusal"
else not_ok "forged_kid_is_quoted_in_the_refusal"; sed 's/^/# /' "$T/err" | cat -v; fi
check_rc "unknown_key_json_exits_4" 4 "$CLOISTER" token verify "${tok%.*}.$evil_footer" --config "$T/ws1.ini" --json
check "forged_kid_is_escaped_in_json" sh -c "! LC_ALL=C grep -q \"\$(printf '[\\033\\007]')\" '$T/out' && grep -qF 'kid \\u001B]0;owned\\u0007\\u202E' '$T/out'"

json=$("$CLOISTER" token issue git --ttl 99999 --json 2>"$T/clamp.err")
check "ttl_above_max_is_clamped_to_max_ttl" test "$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ttl"])')" = 900
check "clamped_response_says_so" test "$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["clamped"])')" = True
check "clamp_note_goes_to_stderr" grep -q "clamped from 99999 to 900" "$T/clamp.err"
json=$("$CLOISTER" token issue git --ttl 60 --json)
check "ttl_below_max_is_granted_as_asked" test "$(echo "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["ttl"], "clamped" in d)')" = "60 False"

check_rc "scope_not_in_policy_is_refused" 1 "$CLOISTER" token issue nosuchscope
check "refusal_names_the_reason" grep -q "denied" "$T/err"
check_rc "scope_granted_only_to_another_workspace_is_refused" 1 "$CLOISTER" token issue other-only
check "refusals_are_audited" grep -q '"event":"refuse".*"request":"issue scope '"'"'other-only'"'"'"' "$T/ws1/state/broker/audit.jsonl"
check_rc "issue_by_host_uses_the_scope_listing_that_host" 0 "$CLOISTER" token issue --host git.example.com --json
check "issue_by_host_returns_the_git_scope" grep -q '"scope": "git"' "$T/out"
check_rc "unknown_host_is_refused" 1 "$CLOISTER" token issue --host evil.example.com

tokws2=$("$CLOISTER" token issue git --socket "$(sock ws2)")
check_rc "one_broker_serves_two_workspaces_each_with_its_own_keys" 0 "$CLOISTER" token verify "$tokws2" --config "$T/ws2.ini"
check_rc "socket_decides_the_workspace_not_the_request" 5 \
        "$CLOISTER" token verify "$tokws2" --keys "$T/ws2/state/broker/public.paserk" --workspace ws1

# SIGHUP re-reads the policy; a broken policy is not applied.
check_rc "scope_missing_from_the_policy_is_refused_before_reload" 1 "$CLOISTER" token issue added
printf '\n[scope "added"]\naudience = https://added.example.com\nworkspaces = ws1\n' >>"$T/ws1-policy.ini"
kill -HUP "$BROKER_PID"
for _ in $(seq 600); do grep -q "workspace 'ws1': policy reloaded" "$T/broker.log" && break; sleep 0.05; done
check_rc "sighup_reloads_the_policy" 0 "$CLOISTER" token issue added
cp "$T/ws1-policy.ini" "$T/good-policy.ini"
printf '[scope "broken"]\nnonsense = 1\n' >>"$T/ws1-policy.ini"
kill -HUP "$BROKER_PID"
for _ in $(seq 600); do grep -q "policy not reloaded" "$T/broker.log" && break; sleep 0.05; done
check "broken_policy_on_sighup_is_reported_with_its_line" grep -q "policy not reloaded, keeping the old one: .*ws1-policy.ini:[0-9]*: key 'nonsense'" "$T/broker.log"
check_rc "broken_policy_on_sighup_keeps_the_old_one" 0 "$CLOISTER" token issue added
check "broker_survives_a_broken_policy_reload" kill -0 "$BROKER_PID"
cp "$T/good-policy.ini" "$T/ws1-policy.ini"

check "audit_never_holds_a_token" sh -c "! grep -q 'v4.public' '$T/ws1/state/broker/audit.jsonl'"
jti=$(echo "$json" | json_get jti)
check "audit_holds_the_jti_and_claims_of_each_issue" grep -q '^{"claims":{"aud":"https://git.example.com".*"event":"issue".*"jti":"'"$jti"'"' "$T/ws1/state/broker/audit.jsonl"
# The token CLI holds tokens in memory: no core dump may keep them.
mkfifo "$T/hold"
"$CLOISTER" token verify - --config "$T/ws1.ini" <"$T/hold" >/dev/null 2>&1 &
vpid=$!
exec 7>"$T/hold"
core=""
for _ in $(seq 50); do
        core=$(awk '/^Max core file size/ {print $5, $6}' "/proc/$vpid/limits" 2>/dev/null)
        [ "$core" = "0 0" ] && break
        sleep 0.1
done
exec 7>&-
wait "$vpid"
check "token_cli_runs_without_core_dumps" test "$core" = "0 0"
check_rc "oversized_token_on_stdin_is_refused_not_truncated_exit_3" 3 \
        sh -c "{ printf v4.public.; head -c 9000 /dev/zero | tr '\\0' A; } | '$CLOISTER' token verify - --config '$T/ws1.ini'"
grep -q "token longer than 8192 bytes" "$T/err" && ok "oversized_token_says_why" || not_ok "oversized_token_says_why"
done_testing
