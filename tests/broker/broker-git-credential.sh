#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# git-credential-cloister driven by the real `git credential fill`: git gets
# a scoped short-lived token for a configured host, an expiry, and quit=1
# (no fallback to other helpers) when the broker refuses.
. "$(dirname "$0")/lib.sh"
command -v git >/dev/null || skip_all "git is not installed"

make_workspace ws1
start_broker "$T/ws1.ini" || { echo "Bail out! broker did not start"; exit 1; }
export CLOISTER_BROKER=$(sock ws1)
export HOME=$T GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 GIT_ASKPASS=/bin/false SSH_ASKPASS=
# A second helper that would leak a long-lived password if git fell back to it.
fallback='!f() { echo username=fallback; echo password=LONG-LIVED; }; f'
fill() {
        printf 'protocol=https\nhost=%s\n\n' "$1" |
                git -c credential.helper= -c "credential.helper=$CRED_HELPER" \
                    -c "credential.helper=$fallback" credential fill
}

check_rc "git_credential_fill_succeeds_for_a_configured_host" 0 fill git.example.com
check "git_gets_the_scope_username" grep -q '^username=x-access-token$' "$T/out"
tok=$(sed -n 's/^password=//p' "$T/out")
check "git_gets_a_broker_token_as_password" test "${tok#v4.public.}" != "$tok"
check_rc "git_token_verifies_for_the_git_audience" 0 \
        "$CLOISTER" token verify "$tok" --config "$T/ws1.ini" --aud https://git.example.com --scope git
check "git_never_sees_the_fallback_password" sh -c "! grep -q LONG-LIVED '$T/out'"

check_rc "refused_host_makes_git_fail" 128 fill evil.example.com
check "refusal_stops_git_with_quit" grep -q "told us to quit" "$T/err"
check "refusal_never_falls_back_to_other_helpers" sh -c "! grep -q LONG-LIVED '$T/out'"

# The helper's own answer, as git reads it.
printf 'protocol=https\nhost=git.example.com\n\n' | "$CRED_HELPER" get >"$T/helper.out"
exp=$(sed -n 's/^password_expiry_utc=//p' "$T/helper.out")
now=$(date +%s)
check "helper_answers_password_expiry_utc" test -n "$exp"
check "expiry_is_the_scope_ttl_from_now" test "$exp" -gt "$now" -a "$exp" -le $((now + 300 + 5))
printf 'protocol=https\nhost=evil.example.com\n\n' | "$CRED_HELPER" get >"$T/helper.out"
check "helper_answers_quit_1_on_refusal" grep -qx 'quit=1' "$T/helper.out"
printf 'protocol=https\nhost=git.example.com\n\n' | CLOISTER_BROKER=$T/nonexistent.sock "$CRED_HELPER" get >"$T/helper.out" 2>/dev/null
check "helper_answers_quit_1_without_a_broker" grep -qx 'quit=1' "$T/helper.out"
printf 'protocol=https\nhost=git.example.com\nusername=u\npassword=p\n\n' | "$CRED_HELPER" store >"$T/helper.out"
check "store_succeeds_and_keeps_nothing" test ! -s "$T/helper.out"
printf 'protocol=https\nhost=git.example.com\n\n' | "$CRED_HELPER" --scope deploy get >"$T/helper.out"
check "helper_scope_option_overrides_the_host" sh -c "sed -n 's/^password=//p' '$T/helper.out' | xargs -I{} '$CLOISTER' token verify {} --config '$T/ws1.ini' --scope deploy >/dev/null"
# git rejected the token: erase revokes it at the broker.
printf 'protocol=https\nhost=git.example.com\nusername=x-access-token\npassword=%s\n\n' "$tok" |
        git -c credential.helper= -c "credential.helper=$CRED_HELPER" credential reject
check_rc "git_credential_reject_revokes_the_token" 1 "$CLOISTER" token introspect "$tok"
check "rejected_token_reads_as_revoked" grep -q '"reason": "revoked"' "$T/out"
# An overlong attribute (a URL path the agent chose) must not be read as two
# lines: its tail would set host= and fetch another host's token.
pad=$(head -c 4090 /dev/zero | tr '\0' A)
printf 'protocol=https\nhost=evil.example.com\npath=%shost=git.example.com\n\n' "$pad" |
        "$CRED_HELPER" get >"$T/helper.out" 2>/dev/null
check "overlong_attribute_cannot_smuggle_a_host" \
        sh -c "grep -qx 'quit=1' '$T/helper.out' && ! grep -q '^password=' '$T/helper.out'"
done_testing
