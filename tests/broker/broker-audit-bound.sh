#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The agent cannot grow the broker's audit log without bound: a flood of
# refused requests (and of requests that change nothing) is a few lines
# that count the rest, so issuing still works; and the log has a size bound
# ([limits] audit): at it, one audit_full line, then every token is refused
# (fail closed), the chain stays intact, and every token handed out is in it.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_all "no python3"

make_workspace ws1
log=$T/ws1/state/broker/audit.jsonl
# send N REQUEST: N times one request over one connection, each answer read
# before the next is sent; prints the answers, one a line.
cat >"$T/flood.py" <<'EOP'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(60)
s.connect(sys.argv[1])
f = s.makefile("rwb")
for _ in range(int(sys.argv[2])):
    f.write(sys.argv[3].encode() + b"\n")
    f.flush()
    sys.stdout.write(f.readline().decode())
EOP
send() { python3 "$T/flood.py" "$(sock ws1)" "$1" "$2"; }

start_broker "$T/ws1.ini" || { echo "Bail out! broker did not start"; exit 1; }
send 3000 '{"op":"issue","scope":"other-only"}' >"$T/refused.out"
send 1000 '{"op":"revoke","jti":"00"}' >/dev/null # not_found: not audited at all
CLOISTER_BROKER=$(sock ws1) "$CLOISTER" token issue git >/dev/null 2>"$T/issue.err"
issued=$?
stop_broker
check "every_flooded_request_was_refused" test "$(grep -c '"error":"denied"' "$T/refused.out")" = 3000
written=$(grep -c '"event":"refuse"' "$log")
counted=$(python3 - "$log" <<'EOP'
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("event") == "refuse":
        n += 1 + e.get("suppressed", 0)
    elif e.get("event") in ("audit_suppressed", "audit_full"):
        n += e.get("suppressed", 0)
print(n)
EOP
)
echo "# 3000 refusals: $written lines, counting $counted"
check "a_refusal_flood_is_a_few_lines" test "$written" -lt 600
check "the_lines_count_every_refusal" test "$counted" = 3000
check "issuing_still_works_after_the_flood" test "$issued" = 0
check_rc "the_chain_stays_intact" 0 "$CLOISTER" audit verify "$T/ws1.ini"

# --- the bound ------------------------------------------------------------------
before=$(grep -c '"event":"issue"' "$log")
printf '[limits]\naudit = 1M\n' >>"$T/ws1.ini"
start_broker "$T/ws1.ini" || { echo "Bail out! broker did not start"; exit 1; }
send 3000 '{"op":"issue","scope":"git"}' >"$T/issue.out"
stop_broker
ok_n=$(grep -c '"ok": *true' "$T/issue.out")
full_n=$(grep -c '"error": *"audit_unavailable"' "$T/issue.out")
echo "# $ok_n tokens issued, then $full_n refused: the log is $(stat -c %s "$log") bytes"
check "tokens_are_refused_once_the_log_is_at_its_bound" test "$full_n" -gt 0 -a "$ok_n" -gt 100
check "the_log_never_grows_past_its_bound" test "$(stat -c %s "$log")" -le 1048576
check "one_line_says_the_log_is_full" test "$(grep -c '"event":"audit_full"' "$log")" = 1
check "every_token_handed_out_is_in_the_log" test "$(grep -c '"event":"issue"' "$log")" = $((ok_n + before))
check_rc "the_chain_is_intact_at_the_bound" 0 "$CLOISTER" audit verify "$T/ws1.ini"
check "refused_responses_carry_no_token" test "$(grep -c '"token"' "$T/issue.out")" = "$ok_n"
done_testing
