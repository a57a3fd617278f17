#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bodies.sh: what the proxy takes as a body, both ways, on both paths (an
# injected host over TLS, a plain allowed host).
# - A chunk-size line (size, extensions, CRLF) is at most 4 KiB, and the
#   trailer section 32 KiB, every byte counted: llhttp bounds neither
#   extensions nor leading zeros nor the blanks before a trailer value, and
#   a client streaming one line held the proxy busy until its idle timeout;
#   an upstream could do the same to a response.
# - A body on a method that normally has none: GET, HEAD and TRACE with one
#   are refused (a server that ignores it reads it as the next request,
#   one no rule judged and the net log never saw); DELETE, OPTIONS and the
#   rest go up with Connection: close, so such a server reads nothing more.
# The upstream records every request (server.py --log) and the raw bytes of
# every connection (--raw-dir): each case asserts on what the server got.
. "$CLOISTER_SRC/tests/proxy/lib.sh"

make_certs || skip_all "openssl could not make a test CA"
mkdir -p "$T/raw" "$T/rawplain" "$T/ws/repo" "$T/ws/state"
start_server web --tls --raw-dir "$T/raw" --auth "Bearer $SECRET" ||
        { echo "Bail out! the HTTPS test server did not start"; exit 1; }
start_server plain --raw-dir "$T/rawplain" ||
        { echo "Bail out! the HTTP test server did not start"; exit 1; }
HP=$(port web) PP=$(port plain)
cat >"$T/policy.ini" <<EOF
[limits]
rate = 10000
issue_rate = 1000
[scope "api"]
audience = https://api.test
workspaces = ws
hosts = api.test
EOF
cat >"$T/ws.ini" <<EOF
[workspace]
name = ws
state = $T/ws/state
[repo]
source = $T/ws/repo
[broker]
policy = $T/policy.ini
[network]
mode = proxy
rate = 10000
allow = plain.test:$PP
resolve = plain.test:127.0.0.1, api.test:127.0.0.1
test_ca = $T/ca/ca.pem
[inject "api"]
host = api.test
port = $HP
methods = GET, HEAD, POST, DELETE, OPTIONS
paths = /api/**, /ignore-body, /long-chunk-line
scope = api
secret = api-key
EOF
S=$T/ws/state/broker.sock
start_broker "$T/ws.ini" "$S" || { echo "Bail out! the broker did not start"; exit 1; }
printf '%s' "$SECRET" | "$CLOISTER" secret add api-key --config "$T/ws.ini" >/dev/null 2>&1
start_proxy "$T/ws.ini" p || { echo "Bail out! the proxy did not start: $(cat "$T/proxy.log")"; exit 1; }
X=$(cat "$T/p.addr")
TOK=$("$CLOISTER" token issue api --socket "$S")
[ "${TOK#v4.public.}" != "$TOK" ] || { echo "Bail out! no token from the broker"; exit 1; }
A="Authorization: Bearer $TOK"
NET=$T/ws/state/broker/net.jsonl
seen() { cat "$T/web.requests" "$T/plain.requests" 2>/dev/null; }
raw_seen() { cat "$T"/raw/conn-* "$T"/rawplain/conn-* 2>/dev/null; }
# The two paths: NAME URL-BASE HEADER-LINES A-PATH-ANSWERED-200 BODY-LESS-METHODS
# (no [inject] rule may allow TRACE: it is refused there before its body is looked at)
INJ=("injected" "http://api.test" "Host: api.test\r\n$A\r\n" /api/x "GET HEAD")
PLN=("plain" "http://plain.test:$PP" "Host: plain.test:$PP\r\n" /x "GET HEAD TRACE")
echo "# proxy on $X, https server on 127.0.0.1:$HP, http server on 127.0.0.1:$PP"

# --- a chunk-size line is at most 4 KiB -------------------------------------------------
# A line that never ends: before, no answer until the 120 s idle timeout
# (raw gives up after 10 s without a byte). Now a 400 as soon as it passes 4 KiB.
long=$(head -c 6000 /dev/zero | tr '\0' e)
zeros=$(head -c 6000 /dev/zero | tr '\0' 0)
for p in INJ PLN; do
        declare -n P=$p
        r=$(raw "$X" "POST ${P[1]}${P[3]} HTTP/1.1\r\n${P[2]}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n1a;name=$long")
        is "an_endless_chunk_extension_is_refused_${P[0]}" "$(status_of "$r")" 400
        contains "the_refusal_names_the_chunk_line_${P[0]}" "$(header_of "$r" x-cloister-error)" \
                "chunk-size line (size and extensions) longer than 4 KiB"
        r=$(raw "$X" "POST ${P[1]}${P[3]} HTTP/1.1\r\n${P[2]}Transfer-Encoding: chunked\r\n\r\n${zeros}1\r\na\r\n0\r\n\r\n")
        is "endless_leading_zeros_are_refused_${P[0]}" "$(status_of "$r")" 400
        # Trailer fields the same, every byte counted: llhttp skips the
        # blanks before a value without a callback.
        blanks=$(head -c 40000 /dev/zero | tr '\0' ' ')
        r=$(raw "$X" "POST ${P[1]}${P[3]} HTTP/1.1\r\n${P[2]}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer:$blanks")
        is "endless_blanks_in_a_trailer_field_are_refused_${P[0]}" "$(status_of "$r")" 400
        contains "the_refusal_names_the_trailer_${P[0]}" "$(header_of "$r" x-cloister-error)" \
                "trailer fields longer than 32 KiB"
        # At the bound it passes: 4 KiB with its CRLF.
        ext=$(head -c 4086 /dev/zero | tr '\0' e)
        r=$(raw "$X" "POST ${P[1]}${P[3]} HTTP/1.1\r\n${P[2]}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n3;n=$ext\r\nabc\r\n0\r\n\r\n")
        is "a_chunk_line_of_4_kib_passes_${P[0]}" "$(status_of "$r")" 200
        unset -n P
done
lacks no_chunk_extension_reached_a_server "$(raw_seen)" "name=eee"

# A response the same: its chunk line over 4 KiB is not relayed; the head
# went out already, so the connection is closed mid-body.
for p in INJ PLN; do
        declare -n P=$p
        r=$(raw "$X" "GET ${P[1]}/long-chunk-line?n=5000 HTTP/1.1\r\n${P[2]}Connection: close\r\n\r\n")
        lacks "a_response_chunk_line_over_4_kib_is_not_relayed_${P[0]}" "$r" "hello"
        r=$(raw "$X" "GET ${P[1]}/long-chunk-line?n=4000 HTTP/1.1\r\n${P[2]}Connection: close\r\n\r\n")
        contains "a_response_chunk_line_under_4_kib_passes_${P[0]}" "$r" "hello"
        unset -n P
done
contains the_cut_response_is_in_the_net_log "$(cat "$NET")" \
        "malformed response body from api.test: a chunk-size line"

# --- a body on a method that normally has none -------------------------------------------
# The smuggling: a GET with Content-Length to a server that reads no GET
# body; the body is a whole request of its own.
: >"$T/web.requests"
: >"$T/plain.requests"
for p in INJ PLN; do
        declare -n P=$p
        sm="DELETE /api/smuggled-${P[0]} HTTP/1.1\r\nHost: x\r\n\r\n"
        smlen=$(printf "$sm" | wc -c)
        for m in ${P[4]}; do
                r=$(raw "$X" "$m ${P[1]}/ignore-body HTTP/1.1\r\n${P[2]}Content-Length: $smlen\r\n\r\n$sm")
                is "${m,,}_with_a_body_is_refused_${P[0]}" "$(status_of "$r")" 400
                r=$(raw "$X" "$m ${P[1]}/ignore-body HTTP/1.1\r\n${P[2]}Transfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n")
                is "${m,,}_with_a_chunked_body_is_refused_${P[0]}" "$(status_of "$r")" 400
        done
        r=$(raw "$X" "GET ${P[1]}${P[3]} HTTP/1.1\r\n${P[2]}Content-Length: 0\r\nConnection: close\r\n\r\n")
        is "get_with_content_length_0_still_works_${P[0]}" "$(status_of "$r")" 200
        # DELETE and OPTIONS bodies go up, with Connection: close: the server
        # that ignored the body reads nothing more, so the smuggled DELETE never runs.
        for m in DELETE OPTIONS; do
                rm -f "$T"/raw/conn-* "$T"/rawplain/conn-*
                r=$(raw "$X" "$m ${P[1]}/ignore-body HTTP/1.1\r\n${P[2]}Connection: close\r\nContent-Length: $smlen\r\n\r\n$sm")
                is "${m,,}_with_a_body_is_forwarded_${P[0]}" "$(status_of "$r")" 200
                contains "${m,,}_with_a_body_goes_up_with_connection_close_${P[0]}" "$(raw_seen)" \
                        "Connection: close"
        done
        rm -f "$T"/raw/conn-* "$T"/rawplain/conn-*
        r=$(raw "$X" "DELETE ${P[1]}${P[3]} HTTP/1.1\r\n${P[2]}Connection: close\r\n\r\n")
        lacks "delete_without_a_body_keeps_its_connection_${P[0]}" "$(raw_seen)" "Connection: close"
        unset -n P
done
lacks no_smuggled_request_ran_on_a_server "$(seen)" "smuggled"
contains the_server_saw_the_delete_bodies "$(seen)" '"method": "DELETE", "path": "/ignore-body"'

# A DELETE's body counts against bytes_out like a POST's (forward.c charges
# every body it relays): one over a tiny budget is cut.
cat >"$T/small.ini" <<EOF
[workspace]
name = small
state = $T/small/state
[repo]
source = $T/ws/repo
[network]
mode = proxy
rate = 10000
bytes_out = 4K
allow = plain.test:$PP
resolve = plain.test:127.0.0.1
EOF
mkdir -p "$T/small/state"
start_proxy "$T/small.ini" q || { echo "Bail out! the second proxy did not start"; exit 1; }
Q=$(cat "$T/q.addr")
big=$(head -c 8000 /dev/zero | tr '\0' b)
: >"$T/plain.requests"
r=$(raw "$Q" "DELETE http://plain.test:$PP/x HTTP/1.1\r\nHost: plain.test:$PP\r\nContent-Length: 8000\r\n\r\n$big")
is a_delete_body_over_bytes_out_is_cut "$(status_of "$r")" 403
is a_delete_body_over_bytes_out_never_completes_upstream "$(grep -c '"body_len": 8000' "$T/plain.requests")" 0
r=$(raw "$Q" "DELETE http://plain.test:$PP/x HTTP/1.1\r\nHost: plain.test:$PP\r\n\r\n")
is and_the_budget_refuses_the_next_request "$(status_of "$r")" 403

leaks=$(grep -rl -- "$SECRET" "$T" 2>/dev/null | grep -v -e '/web.requests$' -e '/raw/' -e '/policy' | tr '\n' ' ')
is real_secret_appears_nowhere_but_at_the_server "$leaks" ""
done_testing
