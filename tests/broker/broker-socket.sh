#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The socket under hostile and heavy use: malformed, oversized and unknown
# requests get an error response and neither the connection nor the broker
# dies; 200 concurrent clients each get a distinct valid token; limits hold.
. "$(dirname "$0")/lib.sh"

make_workspace ws1
start_broker "$T/ws1.ini" || { echo "Bail out! broker did not start"; exit 1; }
S=$(sock ws1)
export CLOISTER_BROKER=$S

# One connection, many bad requests, then a good one: every line answered in order.
python3 - "$S" >"$T/bad.out" <<'EOP'
import socket, sys, json
s = socket.socket(socket.AF_UNIX); s.settimeout(20); s.connect(sys.argv[1])
reqs = [b"garbage", b"[1,2,3]", b'"str"', b"{}", b'{"op":42}', b'{"op":"nope"}',
        b'{"op":"issue"}', b'{"op":"issue","scope":"git","host":"x"}',
        b'{"op":"issue","scope":"git","ttl":-5}', b'{"op":"issue","scope":"git","ttl":"9"}',
        b'{"op":"issue","scope":"git","extra":1}', b'{"op":"issue","scope":"' + b"a" * 200 + b'"}',
        b'{"op":"introspect","token":12}', b'{"op":"revoke"}', b'{"op":"redeem","token":"x"}',
        b'{"op":"reload-keys"}', b'{"op":"pubkey","op":"pubkey"}', b"\xff\xfe\x00\x01binary",
        b'{"op":"issue","scope":"git\\u0000x"}', b"x" * 20000, b'{"op":"pubkey","id":7}']
for r in reqs:
    s.sendall(r + b"\n")
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    b = s.recv(65536)
    if not b: break
    data += b
lines = data.decode().splitlines()
print(len(reqs), len(lines))
for l in lines:
    d = json.loads(l)
    print(d.get("ok"), d.get("error"), d.get("id"))
EOP
read -r nreq nresp <"$T/bad.out"
check "every_malformed_request_gets_exactly_one_response" test "$nreq" = "$nresp"
check "all_bad_requests_are_errors" test "$(sed -n '2,21p' "$T/bad.out" | grep -c '^False ')" = 20
check "oversized_request_gets_too_large" grep -q '^False too_large' "$T/bad.out"
check "unknown_op_gets_unknown_op" grep -q '^False unknown_op' "$T/bad.out"
check "admin_ops_on_agent_socket_are_denied" test "$(grep -c '^False denied' "$T/bad.out")" = 2
check "connection_survives_and_answers_after_bad_input" test "$(tail -1 "$T/bad.out")" = "True None 7"
check "broker_survives_bad_input" kill -0 "$BROKER_PID"
check_rc "broker_still_issues_after_bad_input" 0 "$CLOISTER" token issue git

# A line split across many writes and a client that vanishes mid-line.
python3 - "$S" >"$T/split.out" <<'EOP'
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
for ch in b'{"op":"pubkey"}\n':
    s.sendall(bytes([ch]))
print(s.recv(65536).decode().strip()[:10])
t = socket.socket(socket.AF_UNIX); t.connect(sys.argv[1]); t.sendall(b'{"op":"iss'); t.close()
EOP
check "request_split_across_writes_is_answered" grep -q '{"ok":true' "$T/split.out"
check "broker_survives_a_client_vanishing_mid_request" kill -0 "$BROKER_PID"

# 200 concurrent clients: all connected at once, then all ask, then all read.
python3 - "$S" >"$T/load.out" <<'EOP'
import socket, sys, json
N = 200
socks = []
for i in range(N):
    s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(sys.argv[1]); socks.append(s)
for i, s in enumerate(socks):
    s.sendall(json.dumps({"op": "issue", "scope": "git", "id": i}).encode() + b"\n")
ok = 0
jtis = set()
for i, s in enumerate(socks):
    f = s.makefile("rb")
    d = json.loads(f.readline())
    if d.get("ok") and d.get("id") == i and d.get("token", "").startswith("v4.public."):
        ok += 1
        jtis.add(d["jti"])
        print(d["token"])
    s.close()
print("RESULT", ok, len(jtis))
EOP
check "200_concurrent_clients_all_get_a_token" grep -q '^RESULT 200 200$' "$T/load.out"
bad=0
for tok in $(grep '^v4' "$T/load.out" | shuf -n 20 --random-source=/dev/zero); do
        "$CLOISTER" token verify "$tok" --config "$T/ws1.ini" >/dev/null 2>&1 || bad=$((bad + 1))
done
check "concurrent_tokens_verify" test "$bad" = 0
check "every_concurrent_issue_is_audited" test "$(grep -c '"event":"issue"' "$T/ws1/state/broker/audit.jsonl")" -ge 201
check_rc "audit_chain_intact_after_concurrent_load" 0 "$CLOISTER" audit verify "$T/ws1.ini"
stop_broker

# Limits from the policy: connections, request rate, issuance rate and total.
make_workspace lim "[limits]
connections = 3
rate = 1000
issue_rate = 5
issue_total = 7

[scope \"git\"]
audience = https://git.example.com
workspaces = lim"
start_broker "$T/lim.ini" || { echo "Bail out! broker did not start"; exit 1; }
export CLOISTER_BROKER=$(sock lim)
# At the bound, a connection that sits idle makes room for a new client
# (the one idle the longest is closed); when every connection is in the
# middle of a request, the newcomer is refused with busy.
python3 - "$(sock lim)" >"$T/conn.out" <<'EOP'
import socket, sys
def conn():
    s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); return s
socks = [conn() for _ in range(3)]
for i in (1, 0, 2):  # each answered in turn: 1 is now the one idle the longest
    socks[i].sendall(b'{"op":"pubkey"}\n'); socks[i].recv(65536)
new = conn()
new.sendall(b'{"op":"pubkey"}\n')
print("newcomer:", "served" if b'"ok":true' in new.recv(65536) else "refused")
print("idlest:", "closed" if socks[1].recv(65536) == b"" else "open")
socks[0].sendall(b'{"op":"pubkey"}\n'); print("others:", "served" if b'"ok":true' in socks[0].recv(65536) else "refused")
# Now every connection is mid-request: nobody can be evicted.
for s in (socks[0], socks[2], new):
    s.sendall(b'{"op":')
late = conn()
print("late:", late.recv(65536).decode().strip())
EOP
check "an_idle_connection_makes_room_for_a_new_client" grep -q '^newcomer: served$' "$T/conn.out"
check "the_connection_idle_the_longest_is_the_one_closed" grep -q '^idlest: closed$' "$T/conn.out"
check "the_other_connections_keep_working" grep -q '^others: served$' "$T/conn.out"
check "connection_over_the_limit_is_refused_with_busy_when_all_are_in_use" grep -q '^late: .*"error":"busy"' "$T/conn.out"
n=0
for _ in 1 2 3 4 5 6; do "$CLOISTER" token issue git >/dev/null 2>>"$T/rate.err" && n=$((n + 1)); done
check "issue_rate_caps_tokens_per_minute" test "$n" = 5
check "rate_refusal_says_why" grep -q "rate_limited" "$T/rate.err"
check "rate_refusals_are_audited" grep -q '"error":"rate_limited"' "$T/lim/state/broker/audit.jsonl"

make_workspace cap "[limits]
issue_total = 3

[scope \"git\"]
audience = https://git.example.com
workspaces = cap"
start_broker "$T/cap.ini" || { echo "Bail out! broker did not start"; exit 1; }
n=0
for _ in 1 2 3 4 5; do "$CLOISTER" token issue git --socket "$(sock cap)" >/dev/null 2>>"$T/cap.err" && n=$((n + 1)); done
check "issue_total_caps_tokens_per_run" test "$n" = 3
check "quota_refusal_says_why" grep -q "quota_exceeded" "$T/cap.err"
check "other_requests_still_work_after_the_quota" test "$(raw "$(sock cap)" '{"op":"pubkey"}' | json_get ok)" = true
# Deadlines ([limits] idle_timeout, request_timeout): an idle connection
# and one whose request never ends (a byte, then nothing) are closed, each
# within its bound; waited for here up to a minute, so a slow machine only
# makes the test slower. The broker serves new clients afterwards.
make_workspace dl "[limits]
connections = 4
idle_timeout = 1
request_timeout = 1

[scope \"git\"]
audience = https://git.example.com
workspaces = dl"
start_broker "$T/dl.ini" || { echo "Bail out! broker did not start"; exit 1; }
python3 - "$(sock dl)" >"$T/dl.out" <<'EOP'
import socket, sys
def conn():
    s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(sys.argv[1]); return s
idle, slow = conn(), conn()
slow.sendall(b'{"op":')
print("idle:", "closed" if idle.recv(65536) == b"" else "open")
print("slow:", "closed" if slow.recv(65536) == b"" else "open")
late = conn()
late.sendall(b'{"op":"pubkey"}\n')
print("late:", "served" if b'"ok":true' in late.recv(65536) else "refused")
EOP
check "an_idle_connection_is_closed_after_idle_timeout" grep -q '^idle: closed$' "$T/dl.out"
check "a_request_that_never_ends_is_closed_after_request_timeout" grep -q '^slow: closed$' "$T/dl.out"
check "the_broker_serves_new_clients_after_closing_them" grep -q '^late: served$' "$T/dl.out"
stop_broker
make_workspace dlbad "[limits]
idle_timeout = 2h

[scope \"git\"]
audience = https://git.example.com
workspaces = dlbad"
check_rc "a_timeout_out_of_range_is_a_policy_error" 2 "$CLOISTER" check "$T/dlbad.ini"
check "the_error_names_the_key_and_its_range" grep -q "key 'idle_timeout' in \[limits\]: 7200 s is out of range (1 s to 3600 s)" "$T/err"
done_testing
