#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sealed secrets: stored from stdin only, sealed at rest, released only to
# a redeemer on the admin socket for a live token of a scope that names
# the secret; never to the agent, never into the audit log.
. "$(dirname "$0")/lib.sh"

make_workspace ws1
rmdir "$T/ws1/state" # secret add before the broker ever ran: it makes the dirs
SECRET="s3cr3t-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
echo "$SECRET" | "$CLOISTER" secret add deploy-key --config "$T/ws1.ini" 2>"$T/err"
check "secret_add_reads_stdin" test "$?" = 0
check_rc "secret_add_refuses_a_value_on_the_command_line" 2 "$CLOISTER" secret add deploy-key "$SECRET" --config "$T/ws1.ini"
check_rc "secret_add_refuses_an_empty_stdin" 1 sh -c "'$CLOISTER' secret add empty --config '$T/ws1.ini' </dev/null"
check_rc "secret_add_refuses_a_bad_name" 2 sh -c "echo x | '$CLOISTER' secret add ../evil --config '$T/ws1.ini'"
check "sealed_file_is_a_v4_local_token" grep -q '^v4\.local\.' "$T/ws1/state/broker/secrets/deploy-key"
check "plaintext_is_nowhere_in_the_broker_dir" sh -c "! grep -rq '$SECRET' '$T/ws1/state/broker'"
check "secrets_key_mode_is_0600" test "$(stat -c %a "$T/ws1/state/broker/secrets.key")" = 600
check "secret_add_makes_a_private_broker_dir" test "$(stat -c %a "$T/ws1/state/broker")" = 700
echo other | "$CLOISTER" secret add zzz --config "$T/ws1.ini" 2>/dev/null
check_rc "secret_list_names_the_secrets" 0 "$CLOISTER" secret list --config "$T/ws1.ini"
check "secret_list_prints_names_only" test "$(cat "$T/out" | tr '\n' ' ')" = "deploy-key zzz "
check_rc "secret_rm_removes_it" 0 "$CLOISTER" secret rm zzz --config "$T/ws1.ini"
check_rc "secret_rm_of_a_missing_secret_fails" 1 "$CLOISTER" secret rm zzz --config "$T/ws1.ini"
# A sealed file copied to another name does not open (implicit assertion).
cp "$T/ws1/state/broker/secrets/deploy-key" "$T/ws1/state/broker/secrets/renamed"

start_broker "$T/ws1.ini" || { echo "Bail out! broker did not start"; exit 1; }
export CLOISTER_BROKER=$(sock ws1)
d=$("$CLOISTER" token issue deploy --json)
tok=$(echo "$d" | json_get token)
check "issued_response_to_the_agent_holds_no_secret" sh -c "! echo '$d' | grep -q '$SECRET'"

redeem() { python3 "$T/raw.py" "$1" "{\"op\":\"redeem\",\"token\":\"$2\"}"; }
check "agent_socket_cannot_redeem" bash -c "T='$T'; $(declare -f redeem); redeem '$(sock ws1)' '$tok' | grep -q '\"error\":\"denied\"'"
out=$(redeem "$(admin_sock ws1)" "$tok")
check "redeemer_on_admin_socket_gets_the_secret" test "$(echo "$out" | json_get secret)" = "$SECRET"
check "second_redeem_is_allowed_by_max_uses_2" test "$(redeem "$(admin_sock ws1)" "$tok" | json_get ok)" = true
check "third_redeem_is_refused_used_up" bash -c "T='$T'; $(declare -f redeem); redeem '$(admin_sock ws1)' '$tok' | grep -q 'used up'"
g=$("$CLOISTER" token issue git)
check "scope_without_a_secret_releases_nothing" bash -c "T='$T'; $(declare -f redeem); redeem '$(admin_sock ws1)' '$g' | grep -q 'releases no secret'"
t2=$("$CLOISTER" token issue deploy)
jti2=$("$CLOISTER" token verify "$t2" --json | json_get jti)
"$CLOISTER" token revoke "$jti2" >/dev/null
check "revoked_token_releases_nothing" bash -c "T='$T'; $(declare -f redeem); redeem '$(admin_sock ws1)' '$t2' | grep -q '\"error\":\"inactive\"'"
check "releases_are_audited" grep -q '"event":"release".*"secret":"deploy-key"' "$T/ws1/state/broker/audit.jsonl"
check "audit_never_holds_the_secret" sh -c "! grep -q '$SECRET' '$T/ws1/state/broker/audit.jsonl'"
check "audit_never_holds_a_token" sh -c "! grep -q 'v4\.public\.' '$T/ws1/state/broker/audit.jsonl'"

# A renamed sealed file fails to unseal: the name is bound into the seal.
make_workspace ws2 "[scope \"x\"]
audience = a
workspaces = ws2
secret = renamed"
mkdir -p "$T/ws2/state/broker/secrets"
cp "$T/ws1/state/broker/secrets.key" "$T/ws2/state/broker/"
cp "$T/ws1/state/broker/secrets/deploy-key" "$T/ws2/state/broker/secrets/renamed"
chmod 700 "$T/ws2/state/broker"
start_broker "$T/ws2.ini" || { echo "Bail out! broker did not start"; exit 1; }
x=$("$CLOISTER" token issue x --socket "$(sock ws2)")
check "sealed_secret_renamed_does_not_unseal" bash -c "T='$T'; $(declare -f redeem); redeem '$(admin_sock ws2)' '$x' | grep -q 'cannot be unsealed'"
# A redeemer running as another user: allowed by [broker] redeemers, gated
# by SO_PEERCRED; anyone else is turned away. Needs root to switch uids.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
        make_workspace ws3 "[broker]
redeemers = 65534

[scope \"deploy\"]
audience = https://deploy.example.com
workspaces = ws3
secret = deploy-key"
        echo "$SECRET" | "$CLOISTER" secret add deploy-key --config "$T/ws3.ini" 2>/dev/null
        chmod 0711 "$T"
        start_broker "$T/ws3.ini" || { echo "Bail out! broker did not start"; exit 1; }
        y=$("$CLOISTER" token issue deploy --socket "$(sock ws3)")
        # The system python: one under root's home is not runnable by other uids.
        py=/usr/bin/python3
        [ -x "$py" ] || py=$(command -v python3)
        as() { setpriv --reuid="$1" --regid="$1" --clear-groups "$py" "$T/raw.py" "$(admin_sock ws3)" "$2"; }
        as 65534 "{\"op\":\"redeem\",\"token\":\"$y\"}" >"$T/as.out" 2>&1
        check "redeemer_uid_gets_the_secret" grep -q "$SECRET" "$T/as.out"
        as 65533 '{"op":"pubkey"}' >"$T/as.out" 2>&1
        check "other_uid_is_turned_away_by_peer_credentials" sh -c "! grep -q -e '\"ok\"' -e 'ermission denied' '$T/as.out'"
        as 65534 '{"op":"revoke","workspace":"ws3"}' >"$T/as.out" 2>&1
        check "redeemer_uid_cannot_administer" grep -q '"error":"denied"' "$T/as.out"
        check "broker_dir_is_traversable_not_listable" test "$(stat -c %a "$T/ws3/state/broker")" = 711
        check "files_in_the_broker_dir_stay_private" test "$(stat -c %a "$T/ws3/state/broker/signing.keys")" = 600
fi
# Racing first adds into a fresh broker dir: the sealing key is made once,
# whole, and every add succeeds with it (no half-written key file).
make_workspace race
rmdir "$T/race/state"
pids=()
for i in $(seq 16); do
        (echo "v$i" | "$CLOISTER" secret add "s$i" --config "$T/race.ini" 2>>"$T/race.err"; echo $? >"$T/race.rc.$i") &
        pids+=($!)
done
wait "${pids[@]}" # not the brokers started above
check "racing_first_secret_adds_all_succeed" test "$(cat "$T"/race.rc.* | sort -u)" = 0
check "racing_adds_leave_one_whole_key_and_no_temp_files" \
        test "$(stat -c %s "$T/race/state/broker/secrets.key")" = 32 -a -z "$(ls -A "$T/race/state/broker" | grep tmp)"

done_testing
