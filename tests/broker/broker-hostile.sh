#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Requests an attacker shapes so that the broker's own messages come out
# cut in the middle of a character: a host as long as the field allows, a
# forged token's (unverified) key id, an unknown field's name. Each still
# gets its real answer, and each refusal is in the audit log; what the
# agent chose (newlines, escapes, bidirectional overrides) stays inside one
# JSON string of one ASCII line there (docs/security.md).
. "$(dirname "$0")/lib.sh"

make_workspace ws1
start_broker "$T/ws1.ini" || { echo "Bail out! broker did not start"; cat "$T/broker.log"; exit 1; }
S=$(sock ws1)
export CLOISTER_BROKER=$S
log="$T/ws1/state/broker/audit.jsonl"
tok=$("$CLOISTER" token issue git)

# The requests (made by python: exact bytes), one connection, one answer each.
mapfile -t reqs < <(python3 - "$tok" <<'EOP'
import base64, json, sys
tok = sys.argv[1]
# 146 bytes, then two-byte characters up to 252: a 160-byte message would
# end inside one.
host = "a" * 146 + "\u00e9" * 53
kid = "k" * 59 + "\u00e9"
footer = base64.urlsafe_b64encode(json.dumps({"kid": kid}).encode()).rstrip(b"=").decode()
forged = tok.rsplit(".", 1)[0] + "." + footer
field = "f" * 63 + "\u00e9"
evil = "evil\n{\"event\":\"issue\"}\x1b]0;owned\x07\u202e.example.com"
for r in [{"op": "issue", "host": host}, {"op": "introspect", "token": forged},
          {"op": "pubkey", field: 1}, {"op": "issue", "host": evil}]:
    print(json.dumps(r))
EOP
)
raw "$S" "${reqs[@]}" | python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    print(d.get("ok"), d.get("error"), d.get("active"), d.get("reason"), d.get("message"))
' >"$T/hostile.out"
sed 's/^/# /' "$T/hostile.out"
line() { sed -n "${1}p" "$T/hostile.out"; }
case "$(line 1)" in
False\ denied\ *) ok "a_refused_long_host_is_answered_denied" ;;
*) not_ok "a_refused_long_host_is_answered_denied" ;;
esac
check "a_refused_long_host_is_audited" grep -q '"event":"refuse".*"request":"issue host '"'"'aaaa' "$log"
case "$(line 2)" in
True\ None\ False\ signed\ by\ an\ unknown\ key*) ok "a_forged_kid_cut_mid_character_is_answered_inactive" ;;
*) not_ok "a_forged_kid_cut_mid_character_is_answered_inactive" ;;
esac
check "a_forged_kid_cut_mid_character_is_audited" grep -q '"event":"introspect".*"reason":"signed by an unknown key (kid kkkk' "$log"
case "$(line 3)" in
False\ malformed\ *unknown\ field*) ok "an_unknown_field_cut_mid_character_is_answered_malformed" ;;
*) not_ok "an_unknown_field_cut_mid_character_is_answered_malformed" ;;
esac
case "$(line 4)" in
False\ denied\ *) ok "a_host_with_controls_is_answered_denied" ;;
*) not_ok "a_host_with_controls_is_answered_denied" ;;
esac
check "a_host_with_controls_is_audited_escaped" \
        grep -qF 'evil\n{\"event\":\"issue\"}\u001B]0;owned\u0007\u202E' "$log"
check "every_audit_line_is_one_ascii_json_object" python3 -c '
import json, sys
for l in open(sys.argv[1], "rb"):
    assert l.endswith(b"\n") and all(0x20 <= b < 0x7f for b in l[:-1]), l
    json.loads(l)
' "$log"
check_rc "the_audit_chain_is_intact" 0 "$CLOISTER" audit verify "$T/ws1.ini"
check "the_broker_survives" kill -0 "$BROKER_PID"
done_testing
