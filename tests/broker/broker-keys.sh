#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Signing keys: made on first start with mode 0600, refused when group or
# world could read them, rotated with old public keys still verifying.
. "$(dirname "$0")/lib.sh"

make_workspace ws1
keys=$T/ws1/state/broker/signing.keys
pub=$T/ws1/state/broker/public.paserk
start_broker "$T/ws1.ini" || { echo "Bail out! broker did not start"; exit 1; }
export CLOISTER_BROKER=$(sock ws1)

check "key_file_is_made_on_first_start" test -s "$keys"
check "broker_cannot_dump_core" grep -Eq '^Max core file size +0 +0 ' "/proc/$BROKER_PID/limits"
check "key_file_mode_is_0600" test "$(stat -c %a "$keys")" = 600
check "broker_dir_mode_is_0700" test "$(stat -c %a "$T/ws1/state/broker")" = 700
check "admin_socket_mode_is_0600" test "$(stat -c %a "$(admin_sock ws1)")" = 600
check "public_file_holds_a_paserk_public_key" grep -q '^k4\.public\.[A-Za-z0-9_-]\{43\}$' "$pub"
check "public_file_holds_no_secret" sh -c "! grep -q secret '$pub'"

old=$("$CLOISTER" token issue git)
oldkid=$("$CLOISTER" token verify "$old" --json | json_get kid)
check_rc "rotate_key_succeeds_while_the_broker_runs" 0 "$CLOISTER" broker rotate-key "$T/ws1.ini"
newkid=$(cat "$T/out")
check "rotation_makes_a_new_kid" test -n "$newkid" -a "$newkid" != "$oldkid"
check "public_file_lists_old_and_new_keys" test "$(grep -c '^k4.public' "$pub")" = 2
new=$("$CLOISTER" token issue git)
check "running_broker_signs_with_the_new_key" test "$("$CLOISTER" token verify "$new" --json | json_get kid)" = "$newkid"
check_rc "token_signed_by_the_old_key_still_verifies" 0 "$CLOISTER" token verify "$old" --config "$T/ws1.ini"
check_rc "token_signed_by_the_old_key_is_still_active" 0 "$CLOISTER" token introspect "$old"
check "key_file_stays_0600_after_rotation" test "$(stat -c %a "$keys")" = 600

# `broker public-key`: what an outside verifier configures. The same keys
# as the public file, the current one last; a token verifies offline with
# only what it printed, and a key it did not print does not verify it.
check_rc "public_key_prints_the_verifying_keys" 0 "$CLOISTER" broker public-key "$T/ws1.ini"
cp "$T/out" "$T/printed.paserk"
check "public_key_prints_both_live_keys_as_paserk" \
        test "$(grep -c '^k4\.public\.[A-Za-z0-9_-]\{43\}$' "$T/printed.paserk")" = 2
check "public_key_prints_what_the_public_file_holds" \
        test "$(cat "$T/printed.paserk")" = "$(grep '^k4' "$pub")"
check_rc "token_verifies_with_only_the_printed_keys" 0 \
        "$CLOISTER" token verify "$new" --keys "$T/printed.paserk" --workspace ws1
check_rc "public_key_json_names_the_current_kid_last" 0 "$CLOISTER" broker public-key "$T/ws1.ini" --json
check "public_key_json_current_is_the_new_kid" \
        test "$(python3 -c 'import json,sys; print(json.load(sys.stdin)["keys"][-1]["kid"])' <"$T/out")" = "$newkid"
tail -n 1 "$T/printed.paserk" >"$T/current.paserk"
check_rc "a_token_of_a_retired_key_fails_against_the_current_key_alone" 4 \
        "$CLOISTER" token verify "$old" --keys "$T/current.paserk" --workspace ws1
check_rc "public_key_of_a_missing_config_is_a_usage_error" 2 \
        "$CLOISTER" broker public-key "$T/nope.ini"
stop_broker

# A key that others could have read may have leaked: the broker must refuse it.
chmod 0640 "$keys"
check_rc "group_readable_key_file_is_refused" 1 "$CLOISTER" broker "$T/ws1.ini"
check "refusal_names_the_key_file_and_mode" grep -q "signing.keys: key file is accessible to group or others (mode 0640)" "$T/err"
chmod 0604 "$keys"
check_rc "world_readable_key_file_is_refused" 1 "$CLOISTER" broker "$T/ws1.ini"
check "refused_broker_leaves_no_socket" test ! -S "$(sock ws1)"
chmod 0600 "$keys"
printf 'k4.secret.garbage 1 0\n' >"$T/bad.keys"
cp "$T/bad.keys" "$keys"
check_rc "malformed_key_file_is_refused" 1 "$CLOISTER" broker "$T/ws1.ini"
check "malformed_key_file_error_names_file_and_line" grep -q "signing.keys:1: malformed secret key" "$T/err"

# Before the broker's first start: public-key makes the key the broker will
# then sign with (and publishes it), so a verifier can be set up first.
make_workspace ws2
check_rc "public_key_before_the_first_start_makes_the_key" 0 "$CLOISTER" broker public-key "$T/ws2.ini"
cp "$T/out" "$T/ws2.paserk"
check "the_key_made_is_private_0600" test "$(stat -c %a "$T/ws2/state/broker/signing.keys")" = 600
start_broker "$T/ws2.ini" || { echo "Bail out! broker did not start"; exit 1; }
tok=$("$CLOISTER" token issue git --socket "$(sock ws2)")
check_rc "the_broker_then_signs_with_that_key" 0 \
        "$CLOISTER" token verify "$tok" --keys "$T/ws2.paserk" --workspace ws2
stop_broker
done_testing
