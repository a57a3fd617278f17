#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# proxy.sh: the egress proxy as a whole program, with real clients (curl,
# openssl s_client, raw sockets) against real servers on 127.0.0.1, the
# proxy listening on the host (`cloister proxy --listen`): what it lets
# through, every refusal the threat model lists (each its own case), the
# credential swap, limits, failing closed, the audit log, and a search for
# the real secret everywhere it must not be. tests/proxy/sandbox.sh does
# the same through `cloister run`.
. "$CLOISTER_SRC/tests/proxy/lib.sh"

make_certs || skip_all "openssl could not make a test CA"
start_server web --tls --auth "Bearer $SECRET" --auth "Basic $(b64 "x-access-token:$SECRET")" ||
        { echo "Bail out! the HTTPS test server did not start"; exit 1; }
start_server plain || { echo "Bail out! the HTTP test server did not start"; exit 1; }
HP=$(port web) PP=$(port plain)
echo "# https server on 127.0.0.1:$HP, http server on 127.0.0.1:$PP"

# ws1: the workspace under test. ws2: another one, with its own broker.
mkdir -p "$T/ws1/repo" "$T/ws1/state" "$T/ws2/repo" "$T/ws2/state"
cat >"$T/policy1.ini" <<EOF
[limits]
rate = 1000
issue_rate = 1000
[scope "api"]
audience = https://api.test
workspaces = ws1
hosts = api.test
[scope "other"]
audience = https://other.test
workspaces = ws1
[scope "short"]
audience = https://api.test
workspaces = ws1
ttl = 1
max_ttl = 1
EOF
sed 's/ws1/ws2/' "$T/policy1.ini" >"$T/policy2.ini"
write_ws() { # write_ws NAME EXTRA-NETWORK-LINES
        cat >"$T/$1.ini" <<EOF
[workspace]
name = $1
state = $T/$1/state
[repo]
source = $T/$1/repo
[broker]
policy = $T/policy${1#ws}.ini
[network]
mode = proxy
allow = web.test:$HP, plain.test:$PP, localhost:$HP
deny = denied.test
resolve = web.test:127.0.0.1, plain.test:127.0.0.1, api.test:127.0.0.1, denied.test:127.0.0.1
resolve = nocert.test:127.0.0.1
test_ca = $T/ca/ca.pem
$2
[inject "api"]
host = api.test
port = $HP
methods = GET, POST
paths = /api/**, /echo, /redirect
scope = api
secret = api-key
[inject "nocert"]
host = nocert.test
port = $HP
methods = GET
paths = /api/**
scope = api
secret = api-key
[inject "nosecret"]
host = api.test
port = $HP
methods = PUT
paths = /api/**
scope = api
secret = never-stored
EOF
}
write_ws ws1 "rate = 1000"
write_ws ws2 "rate = 1000"
S1=$T/ws1/state/broker.sock S2=$T/ws2/state/broker.sock
start_broker "$T/ws1.ini" "$S1" || { echo "Bail out! broker 1 did not start"; exit 1; }
B1=$BROKER_PID
start_broker "$T/ws2.ini" "$S2" || { echo "Bail out! broker 2 did not start"; exit 1; }
printf '%s' "$SECRET" | "$CLOISTER" secret add api-key --config "$T/ws1.ini" >/dev/null 2>&1
start_proxy "$T/ws1.ini" p1 || { echo "Bail out! the proxy did not start: $(cat "$T/proxy.log")"; exit 1; }
P1_PID=$PROXY_PID
X=$(cat "$T/p1.addr")
echo "# proxy listening on $X"
tok() { "$CLOISTER" token issue "$1" --socket "${2:-$S1}" "${@:3}"; }
TOK=$(tok api)
[ "${TOK#v4.public.}" != "$TOK" ] || { echo "Bail out! no token from the broker"; exit 1; }
# curl through the proxy: prints "CODE" then the body; headers to $T/h
px() { curl -sS -x "http://$X" --cacert "$T/ca/ca.pem" -D "$T/h" -o "$T/body" -w '%{http_code}' "$@" 2>"$T/curl.err"; }
xerr() { header_of "$(cat "$T/h")" x-cloister-error; }
requests() { cat "$T/web.requests" "$T/plain.requests" 2>/dev/null | wc -l; }

# --- what goes through --------------------------------------------------
is connect_to_a_listed_host_works "$(px "https://web.test:$HP/hello")" 200
contains connect_reaches_the_real_server "$(cat "$T/body")" "hello from web"
is plain_http_to_a_listed_host_works "$(px "http://plain.test:$PP/x")" 200
contains plain_http_reaches_the_real_server "$(cat "$T/body")" "hello from plain"
is injected_request_succeeds "$(px "http://api.test/api/x" -H "Authorization: Bearer $TOK")" 200
last=$(tail -n1 "$T/web.requests")
contains injected_request_carries_the_real_secret "$last" "\"Bearer $SECRET\""
lacks injected_request_never_carries_the_token "$last" "v4.public."
is basic_auth_token_as_git_sends_it_works "$(px "http://api.test/api/x" -u "x-access-token:$TOK")" 200
# The client also sets its own Authorization: replaced, never forwarded.
is client_authorization_is_replaced "$(px "http://api.test/api/x" -H "Proxy-Authorization: Bearer $TOK" \
        -H "Authorization: Basic $(b64 "me:my-own-password")")" 200
last=$(tail -n1 "$T/web.requests")
lacks client_authorization_is_never_forwarded "$last" "$(b64 "me:my-own-password")"
lacks proxy_authorization_is_never_forwarded "$last" "Proxy-Authorization"
contains client_authorization_gets_the_real_secret_instead "$last" "\"Bearer $SECRET\""
is echoing_server_answers "$(px "http://api.test/echo" -H "Authorization: Bearer $TOK")" 200
lacks a_reflected_secret_is_masked "$(cat "$T/body")" "$SECRET"
contains a_reflected_secret_reads_as_stars "$(cat "$T/body")" "Authorization: Bearer *****"

# --- refusals: each its own case -----------------------------------------
before=$(requests)
code=$(px "https://other.test:$HP/")
is unlisted_host_is_refused "$code" 000
contains unlisted_host_gets_403 "$(cat "$T/curl.err")" "403"
r=$(raw "$X" "CONNECT other.test:$HP HTTP/1.1\r\nHost: other.test:$HP\r\n\r\n")
contains unlisted_host_says_why "$(header_of "$r" x-cloister-error)" "not on the [network] allow list"
r=$(raw "$X" "CONNECT web.test:1 HTTP/1.1\r\nHost: web.test:1\r\n\r\n")
is unlisted_port_is_refused "$(status_of "$r")" 403
r=$(raw "$X" "CONNECT 127.0.0.1:$HP HTTP/1.1\r\nHost: 127.0.0.1:$HP\r\n\r\n")
is ip_literal_is_refused "$(status_of "$r")" 403
for lit in 127.1 0x7f.1 2130706433 0177.0.0.1 "[::ffff:127.0.0.1]" "[::1]"; do
        name=$(printf '%s' "$lit" | tr -c 'A-Za-z0-9\n' _)
        r=$(raw "$X" "CONNECT $lit:$HP HTTP/1.1\r\nHost: $lit:$HP\r\n\r\n")
        is "connect_to_${name}_is_refused" "$(status_of "$r")" 403
        r=$(raw "$X" "GET http://$lit:$PP/ HTTP/1.1\r\nHost: $lit:$PP\r\n\r\n")
        is "plain_request_to_${name}_is_refused" "$(status_of "$r")" 403
done
r=$(raw "$X" "CONNECT denied.test:$HP HTTP/1.1\r\nHost: denied.test:$HP\r\n\r\n")
contains deny_entry_wins "$(header_of "$r" x-cloister-error)" "denied by a [network] deny entry"
# localhost is listed, but resolves (through /etc/hosts) to loopback.
if getent hosts localhost >/dev/null; then
        r=$(raw "$X" "CONNECT localhost:$HP HTTP/1.1\r\nHost: localhost:$HP\r\n\r\n")
        is name_resolving_to_a_private_address_is_refused "$(status_of "$r")" 403
        contains private_resolution_says_which_address "$(header_of "$r" x-cloister-error)" \
                "which is loopback"
else
        skip_test name_resolving_to_a_private_address_is_refused "no 'localhost' in /etc/hosts"
fi
out=$(echo | timeout 20 openssl s_client -proxy "$X" -connect "web.test:$HP" \
        -servername other.test -CAfile "$T/ca/ca.pem" 2>&1)
contains sni_different_from_connect_host_is_refused "$out" "no peer certificate available"
contains sni_mismatch_is_audited "$(tail -n3 "$T/ws1/state/broker/net.jsonl")" \
        "TLS server name 'other.test' is not the CONNECT host 'web.test'"
out=$(echo | timeout 20 openssl s_client -proxy "$X" -connect "web.test:$HP" \
        -servername web.test -CAfile "$T/ca/ca.pem" 2>&1)
contains matching_sni_goes_through "$out" "Verify return code: 0 (ok)"
lacks matching_sni_gets_the_servers_certificate "$out" "no peer certificate available"
r=$(raw "$X" "CONNECT web.test:$HP HTTP/1.1\r\nHost: web.test:$HP\r\n\r\nGET / HTTP/1.1\r\nHost: web.test\r\n\r\n")
lacks non_tls_bytes_in_a_tunnel_never_reach_the_server "$r" "hello from web"
is host_header_different_from_the_url_is_refused \
        "$(px "http://plain.test:$PP/x" -H "Host: evil.test")" 400
contains host_mismatch_says_why "$(xerr)" "Host header"
r=$(raw "$X" "POST http://plain.test:$PP/x HTTP/1.1\r\nHost: plain.test:$PP\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: plain.test\r\n\r\n")
is cl_te_smuggling_is_refused "$(status_of "$r")" 400
r=$(raw "$X" "POST http://plain.test:$PP/x HTTP/1.1\r\nHost: plain.test:$PP\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nabcd")
is duplicate_content_length_is_refused "$(status_of "$r")" 400
r=$(raw "$X" "GET http://plain.test:$PP/x HTTP/1.1\r\nHost: plain.test:$PP\r\nX-A: b\r\n folded\r\n\r\n")
is obs_fold_is_refused "$(status_of "$r")" 400
r=$(raw "$X" "GET http://plain.test:$PP/x HTTP/1.1\nHost: plain.test:$PP\n\n")
is bare_lf_is_refused "$(status_of "$r")" 400
r=$(raw "$X" "GET http://plain.test:$PP/x HTTP/1.1\r\nHost: plain.test:$PP\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
is upgrade_h2c_is_refused "$(status_of "$r")" 403
r=$(raw "$X" "GET /x HTTP/1.1\r\nHost: plain.test:$PP\r\n\r\n")
is origin_form_request_is_refused "$(status_of "$r")" 400
is requests_refused_above_reached_no_server "$(requests)" "$before"
! grep -q smuggled "$T/plain.requests" && ok smuggled_request_never_reached_the_server ||
        not_ok smuggled_request_never_reached_the_server
# A redirect to the metadata address is passed on, never followed, and refused when the client follows it.
code=$(px -L "http://api.test/redirect" -H "Authorization: Bearer $TOK")
is redirect_to_metadata_is_not_followed_by_the_proxy "$code" 403
contains following_the_redirect_is_refused "$(xerr)" "169.254.169.254"
is redirect_reached_the_server_once "$(grep -c '"/redirect"' "$T/web.requests")" 1
# Traversal to another repository, in every spelling.
before=$(requests)
for p in "/api/../other/x" "/api/%2e%2e/other/x" "/api/.%2E/other/x" "/api%2f..%2fother" "/api/..;/other" \
        "/api/%c0%ae%c0%ae/other/x" "/api/%e0%80%ae%e0%80%ae/other/x"; do
        name=$(printf '%s' "$p" | tr -c 'A-Za-z0-9\n' _)
        is "dotdot_path_${name}_is_refused" "$(px --path-as-is "http://api.test$p" -H "Authorization: Bearer $TOK")" 403
done
is traversal_reached_no_server "$(requests)" "$before"
is unmatched_path_is_refused "$(px "http://api.test/admin" -H "Authorization: Bearer $TOK")" 403
contains unmatched_path_names_the_rule "$(xerr)" "no [inject] rule for api.test covers GET /admin"
is unmatched_method_is_refused "$(px -X DELETE "http://api.test/api/x" -H "Authorization: Bearer $TOK")" 403
is injected_host_on_another_port_is_refused "$(px "http://api.test:8080/api/x" -H "Authorization: Bearer $TOK")" 403

# --- tokens -----------------------------------------------------------------
is missing_token_gets_401 "$(px "http://api.test/api/x")" 401
contains missing_token_challenges_as_git_expects "$(cat "$T/h")" 'WWW-Authenticate: Basic realm="cloister"'
is a_non_token_credential_gets_401 "$(px "http://api.test/api/x" -H "Authorization: Bearer sk-not-a-cloister-token")" 401
short=$(tok api "$S1" --ttl 1)
sleep 2.5
is expired_token_is_refused "$(px "http://api.test/api/x" -H "Authorization: Bearer $short")" 403
contains expired_token_says_why "$(xerr)" "expired"
rev=$(tok api "$S1" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["token"]); print(d["jti"], file=sys.stderr)' 2>"$T/jti")
"$CLOISTER" token revoke "$(cat "$T/jti")" --socket "$S1" >/dev/null 2>&1
is revoked_token_is_refused "$(px "http://api.test/api/x" -H "Authorization: Bearer $rev")" 403
contains revoked_token_says_why "$(xerr)" "revoked"
foreign=$(tok api "$S2")
is other_workspace_token_is_refused "$(px "http://api.test/api/x" -H "Authorization: Bearer $foreign")" 403
wrong=$(tok other)
is wrong_scope_token_is_refused "$(px "http://api.test/api/x" -H "Authorization: Bearer $wrong")" 403
contains wrong_scope_says_why "$(xerr)" "scope"
forged="${TOK%?}A"
[ "$forged" = "$TOK" ] && forged="${TOK%?}B"
is altered_token_is_refused "$(px "http://api.test/api/x" -H "Authorization: Bearer $forged")" 403

# --- failing closed ---------------------------------------------------------
is missing_secret_fails_closed "$(px -X PUT "http://api.test/api/x" -H "Authorization: Bearer $TOK")" 502
contains missing_secret_says_which "$(xerr)" "'never-stored' is not stored"
before=$(requests)
is tls_hostname_mismatch_fails_closed "$(px "http://nocert.test/api/x" -H "Authorization: Bearer $TOK")" 502
contains tls_hostname_mismatch_says_why "$(xerr)" "hostname mismatch"
is tls_failure_sends_no_request "$(requests)" "$before"
kill "$B1" && wait "$B1" 2>/dev/null
is broker_down_fails_closed "$(px "http://api.test/api/x" -H "Authorization: Bearer $TOK")" 502
contains broker_down_says_why "$(xerr)" "broker"
is broker_down_still_allows_plain_listed_hosts "$(px "http://plain.test:$PP/y")" 200

# --- the audit log ------------------------------------------------------------
NET=$T/ws1/state/broker/net.jsonl
out=$("$CLOISTER" audit verify "$T/ws1.ini" 2>&1)
is audit_verify_passes "$?" 0
contains audit_verify_checks_the_net_log "$out" "net.jsonl:"
# ws1 has a broker: its log gone with its head is still a failure, not "none".
mkdir "$T/aside" && mv "$T/ws1/state/broker/audit.jsonl" "$T/ws1/state/broker/audit.head" "$T/aside/"
"$CLOISTER" audit verify "$T/ws1.ini" >"$T/verify.out" 2>&1
is a_brokers_deleted_log_and_head_fail_verify "$?" 1
mv "$T/aside/audit.jsonl" "$T/aside/audit.head" "$T/ws1/state/broker/"
out=$("$CLOISTER" log --net "$T/ws1.ini")
contains log_net_shows_allowed_requests "$out" "allow  GET     api.test:80 /api/x 200 rule api"
contains log_net_shows_refused_tunnels "$out" "refuse CONNECT other.test:$HP 403"
contains log_net_shows_the_token_jti "$out" "jti "
n=$(grep -c '"event":"net"' "$NET")
[ "$n" -ge 40 ] && ok every_request_and_tunnel_is_a_line || not_ok every_request_and_tunnel_is_a_line "$n lines"
cp "$NET" "$T/net-copy.jsonl"
cp "$T/ws1/state/broker/net.head" "$T/net-copy.head"
sed -i '3s/"ms":/"ms":9/' "$T/net-copy.jsonl"
out=$("$CLOISTER" audit verify --file "$T/net-copy.jsonl" 2>&1)
is edited_net_log_fails_verify "$?" 1
contains edited_net_log_names_the_line "$out" "line 3"

# --- limits (a workspace of their own) ----------------------------------------
mkdir -p "$T/ws3/repo" "$T/ws3/state"
cat >"$T/ws3.ini" <<EOF
[workspace]
name = ws3
state = $T/ws3/state
[repo]
source = $T/ws3/repo
[network]
mode = proxy
allow = plain.test:$PP
resolve = plain.test:127.0.0.1
connections = 2
rate = 2
bytes_out = 4K
EOF
start_proxy "$T/ws3.ini" p3 || { echo "Bail out! proxy 3 did not start"; exit 1; }
P3_PID=$PROXY_PID
X3=$(cat "$T/p3.addr")
cat >"$T/hold.py" <<'EOP'
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
held = [socket.create_connection((host, int(port))) for _ in range(2)]
time.sleep(0.5)
s = socket.create_connection((host, int(port)), timeout=10)
print(s.recv(4096).decode().split("\r\n")[0])
EOP
is connection_limit_refuses_the_extra_connection "$(python3 "$T/hold.py" "$X3")" \
        "HTTP/1.1 503 Service Unavailable"
codes=$(curl -s -x "http://$X3" -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
        -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} ' "http://plain.test:$PP/r[1-8]")
contains rate_limit_refuses_with_429 "$codes" 429
grep -q '"kind":"limit"' "$T/ws3/state/broker/net.jsonl" && ok limit_refusals_are_audited ||
        not_ok limit_refusals_are_audited
sleep 1.5
head -c 8192 /dev/zero | tr '\0' x >"$T/upload"
code=$(curl -s -x "http://$X3" -o /dev/null -w '%{http_code}' --data-binary @"$T/upload" "http://plain.test:$PP/up")
[ "$code" != 200 ] && ok bytes_out_budget_stops_an_upload || not_ok bytes_out_budget_stops_an_upload "$code"
sleep 1.5
is bytes_out_budget_refuses_new_requests "$(curl -s -x "http://$X3" -o /dev/null -w '%{http_code}' "http://plain.test:$PP/after")" 403
grep -q '"/up"' "$T/plain.requests" && grep '"/up"' "$T/plain.requests" | grep -q '"body_len": 8192' &&
        not_ok upload_beyond_the_budget_never_arrived_whole || ok upload_beyond_the_budget_never_arrived_whole

# ws3 is proxy-only: no broker, so no audit.jsonl; its net.jsonl still verifies.
kill "$P3_PID" && wait "$P3_PID" 2>/dev/null
B3=$T/ws3/state/broker
out=$("$CLOISTER" audit verify "$T/ws3.ini" 2>&1)
is proxy_only_workspace_verifies "$?" 0
contains proxy_only_verify_checks_the_net_log "$out" "net.jsonl: "
contains proxy_only_verify_says_the_chain_is_intact "$out" "chain intact"
contains proxy_only_verify_says_there_is_no_broker_log "$out" "audit.jsonl: none (the workspace has no broker)"
cp "$B3/net.jsonl" "$T/net3.jsonl"
cp "$B3/net.head" "$T/net3.head"
sed -i '2s/"ms":/"ms":9/' "$B3/net.jsonl"
out=$("$CLOISTER" audit verify "$T/ws3.ini" 2>&1)
is proxy_only_edited_net_log_fails "$?" 1
contains proxy_only_edited_net_log_names_the_line "$out" "line 2"
# A start reads the log's end only: over a line edited further back it
# starts (audit verify finds that edit, before and after its new lines);
# over a last line edited, it checks the log whole and refuses.
start_proxy "$T/ws3.ini" p3b && ok proxy_starts_reading_only_the_net_logs_end ||
        not_ok proxy_starts_reading_only_the_net_logs_end "$(tail -3 "$T/proxy.log")"
X3=$(cat "$T/p3b.addr")
curl -s -x "http://$X3" -o /dev/null "http://plain.test:$PP/after-restart"
kill "$PROXY_PID" && wait "$PROXY_PID" 2>/dev/null
out=$("$CLOISTER" audit verify "$T/ws3.ini" 2>&1)
is an_edit_further_back_is_still_found_after_later_lines "$?" 1
contains an_edit_further_back_is_still_named "$out" "line 2"
cp "$T/net3.jsonl" "$B3/net.jsonl"
cp "$T/net3.head" "$B3/net.head"
sed -i '$s/"ms":/"ms":9/' "$B3/net.jsonl"
start_proxy "$T/ws3.ini" p3c && not_ok proxy_refuses_a_net_log_edited_at_its_end "it started" ||
        ok proxy_refuses_a_net_log_edited_at_its_end
contains proxy_names_the_edited_last_line "$(tail -2 "$T/proxy.log")" "net.jsonl"
rm "$B3/net.jsonl"
out=$("$CLOISTER" audit verify "$T/ws3.ini" 2>&1)
is proxy_only_deleted_net_log_fails "$?" 1
contains proxy_only_deleted_net_log_says_so "$out" "the log was deleted"
mv "$T/net3.jsonl" "$B3/net.jsonl"

# --- examples/model-proxy.ini: the agent's model key stays outside ---------------
start_server model --tls --header "x-api-key:$SECRET" || { echo "Bail out! no model server"; exit 1; }
mkdir -p "$T/model/repo" "$T/model/state"
sed -e "s|^state = .*|state = $T/model/state|" -e "s|^source = %R|source = $T/model/repo|" \
    -e "s|^policy = %C/|policy = $CLOISTER_SRC/examples/|" \
    -e "s|^mode = proxy|mode = proxy\nresolve = api.example-model.com:127.0.0.1\ntest_ca = $T/ca/ca.pem|" \
    -e "s|^scheme = header|scheme = header\nport = $(port model)|" \
    "$CLOISTER_SRC/examples/model-proxy.ini" >"$T/model.ini"
out=$("$CLOISTER" check "$CLOISTER_SRC/examples/model-proxy.ini" 2>&1)
is model_example_passes_check "$?" 0
start_broker "$T/model.ini" "$T/model/state/broker.sock" || { echo "Bail out! no model broker"; exit 1; }
printf '%s' "$SECRET" | "$CLOISTER" secret add model-key --config "$T/model.ini" >/dev/null 2>&1
start_proxy "$T/model.ini" pm || { echo "Bail out! no model proxy"; exit 1; }
mtok=$("$CLOISTER" token issue model --socket "$T/model/state/broker.sock")
code=$(curl -sS -x "http://$(cat "$T/pm.addr")" -o "$T/body" -w '%{http_code}' -X POST \
        -H "x-api-key: $mtok" -d '{"model":"m","messages":[]}' http://api.example-model.com/v1/messages)
is model_example_reaches_the_api_with_the_real_key "$code" 200
last=$(tail -n1 "$T/model.requests")
contains model_example_sends_the_key_in_its_header "$last" "[\"x-api-key\", \"$SECRET\"]"
lacks model_example_never_sends_the_token "$last" "v4.public."
code=$(curl -sS -x "http://$(cat "$T/pm.addr")" -o /dev/null -w '%{http_code}' -X POST \
        -H "x-api-key: sk-a-real-looking-key" http://api.example-model.com/v1/messages)
is model_example_refuses_a_key_that_is_not_a_token "$code" 401

# --- net.jsonl is bounded ([limits] netlog): at the bound, one audit_full
# line and every request refused (a request that can't be recorded never
# goes out); what is kept still verifies; a missing net.head fails verify.
mkdir -p "$T/ws4/repo" "$T/ws4/state"
sed 's/ws1/ws4/' "$T/policy1.ini" >"$T/policy4.ini"
write_ws ws4 "rate = 100000"
printf '[limits]\nnetlog = 1M\n' >>"$T/ws4.ini"
start_broker "$T/ws4.ini" "$T/ws4/state/broker.sock" || { echo "Bail out! broker 4 did not start"; exit 1; }
start_proxy "$T/ws4.ini" p4 || { echo "Bail out! proxy 4 did not start"; exit 1; }
P4_PID=$PROXY_PID
python3 - "$(cat "$T/p4.addr")" "plain.test:$PP" >"$T/flood.out" <<'EOP'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
for i in range(20000):
    s = socket.create_connection((host, int(port)), timeout=30)
    s.sendall(("GET http://%s/%d HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
               % (sys.argv[2], i, sys.argv[2])).encode())
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    status = data.split(b" ", 2)[1].decode() if data else "none"
    if status != "200":
        print(i, status, b"audit log cannot be written" in data)
        break
else:
    print("never refused")
EOP
read -r sent status said <"$T/flood.out"
is the_proxy_refuses_once_the_net_log_is_full "$status $said" "502 True"
size=$(stat -c %s "$T/ws4/state/broker/net.jsonl")
[ "$size" -le 1048576 ] && [ "$sent" -gt 1000 ] && ok "the_net_log_stays_within_its_bound ($size bytes, $sent requests)" ||
        not_ok the_net_log_stays_within_its_bound "$size bytes after $sent requests"
is the_bound_is_marked_in_the_log "$(tail -n1 "$T/ws4/state/broker/net.jsonl" | grep -c '"event":"audit_full"')" 1
kill "$P4_PID" && wait "$P4_PID" 2>/dev/null
"$CLOISTER" audit verify --file "$T/ws4/state/broker/net.jsonl" >"$T/verify.out" 2>&1
is what_the_full_net_log_keeps_verifies "$?" 0
mv "$T/ws4/state/broker/net.head" "$T/net.head.aside"
"$CLOISTER" audit verify --file "$T/ws4/state/broker/net.jsonl" >"$T/verify.out" 2>&1
is a_net_log_without_its_head_fails_verify "$?" 1
contains the_failure_names_the_missing_head "$(cat "$T/verify.out")" "net.head is missing"

# --- the proxy gone -------------------------------------------------------------
kill "$P1_PID" && wait "$P1_PID" 2>/dev/null
curl -s -x "http://$X" -o /dev/null "http://plain.test:$PP/z"
is proxy_not_running_refuses_connections "$?" 7
[ ! -e "$T/ws1/state/proxy.sock" ] && ok stopped_proxy_removes_its_control_socket ||
        not_ok stopped_proxy_removes_its_control_socket

# --- the secret never appears where it must not -----------------------------------
leaks=$(grep -rl -- "$SECRET" "$T" 2>/dev/null | grep -v -e '/web.requests$' -e '/model.requests$' -e '/policy' | tr '\n' ' ')
is real_secret_appears_nowhere_but_at_the_server "$leaks" ""
grep -q "v4.public." "$T/ws1/state/broker/net.jsonl" && not_ok tokens_never_enter_the_net_log ||
        ok tokens_never_enter_the_net_log
done_testing
