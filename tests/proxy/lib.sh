# SPDX-License-Identifier: MIT
# lib.sh: what the proxy's TAP scripts share. Sourced, not run.
#
# A test CA and a server certificate for the test names (git.test,
# web.test, api.test, other.test, localhost) made fresh per run with the
# openssl CLI; test servers (server.py) on ephemeral ports of 127.0.0.1; a
# workspace config and broker policy; the broker and the proxy as real
# processes. Every process started here is stopped by its pid on EXIT.
# Network: loopback only. Names reach 127.0.0.1 through the config's
# test-only `resolve =` key, never through DNS.

set -u
: "${CLOISTER:?CLOISTER must name the built cloister binary}"
: "${CLOISTER_SRC:?}"
: "${CLOISTER_BUILD:?}"
CRED_HELPER="$CLOISTER_BUILD/broker/git-credential-cloister"
SERVER="$CLOISTER_SRC/tests/proxy/server.py"
SECRET=REALSECRET-$RANDOM$RANDOM-do-not-leak
GITSECRET=GITSECRET-$RANDOM$RANDOM-do-not-leak

n_test=0
n_fail=0
PIDS=()
ok() { n_test=$((n_test + 1)); echo "ok $n_test - $1"; }
not_ok() {
        n_test=$((n_test + 1)); n_fail=$((n_fail + 1)); echo "not ok $n_test - $1"
        [ $# -ge 2 ] && printf '%s\n' "$2" | head -c 2000 | sed 's/^/# /'
        return 0
}
skip_test() { n_test=$((n_test + 1)); echo "ok $n_test - $1 # SKIP $2"; }
skip_all() { echo "1..0 # SKIP $1"; exit 77; }
is() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "got '$2', want '$3'"; fi; }
contains() {
        case "$2" in *"$3"*) ok "$1" ;; *) not_ok "$1" "'$3' not in: $2" ;; esac
}
lacks() {
        case "$2" in *"$3"*) not_ok "$1" "'$3' found in: $2" ;; *) ok "$1" ;; esac
}
done_testing() {
        stop_all
        if grep -q "Sanitizer" "$T"/*.log 2>/dev/null; then
                not_ok "daemons_ran_clean_under_sanitizers" "$(grep -h -A5 Sanitizer "$T"/*.log | head -30)"
        fi
        echo "1..$n_test"
        [ "$n_fail" = 0 ]
}

for tool in python3 curl openssl; do
        command -v "$tool" >/dev/null || skip_all "$tool is not installed"
done

T=$(mktemp -d /tmp/cloister-proxy-test.XXXXXX)
chmod 755 "$T"
stop_all() {
        local p
        for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
        for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
        PIDS=()
}
cleanup() {
        stop_all
        [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

# A CA and one certificate for every test name.
make_certs() {
        mkdir -p "$T/ca"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
                -subj /CN=cloister-test-ca -keyout "$T/ca/ca.key" -out "$T/ca/ca.pem" 2>/dev/null &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=web.test \
                -keyout "$T/ca/srv.key" -out "$T/ca/srv.csr" 2>/dev/null &&
        printf 'subjectAltName=DNS:git.test,DNS:web.test,DNS:api.test,DNS:other.test,DNS:localhost,DNS:api.example-model.com\n' \
                >"$T/ca/ext" &&
        openssl x509 -req -in "$T/ca/srv.csr" -CA "$T/ca/ca.pem" -CAkey "$T/ca/ca.key" \
                -CAcreateserial -days 2 -extfile "$T/ca/ext" -out "$T/ca/srv.pem" 2>/dev/null
}

# start_server NAME [--tls] ARGS...: a server.py on an ephemeral port; its
# port goes to $T/NAME.port and its request log to $T/NAME.requests.
start_server() {
        local name=$1 tls=()
        shift
        if [ "${1:-}" = --tls ]; then
                tls=(--cert "$T/ca/srv.pem" --key "$T/ca/srv.key")
                shift
        fi
        python3 "$SERVER" --port-file "$T/$name.port" --log "$T/$name.requests" --name "$name" \
                "${tls[@]}" "$@" 2>>"$T/$name.log" &
        PIDS+=($!)
        for _ in $(seq 300); do
                [ -s "$T/$name.port" ] && return 0
                sleep 0.05
        done
        return 1
}
port() { cat "$T/$1.port"; }

# start_broker CONFIG: waits for its agent socket.
start_broker() {
        local sock=$2
        "$CLOISTER" broker "$1" 2>>"$T/broker.log" &
        BROKER_PID=$!
        PIDS+=($!)
        for _ in $(seq 200); do
                [ -S "$sock" ] && return 0
                kill -0 "$BROKER_PID" 2>/dev/null || return 1
                sleep 0.05
        done
        return 1
}

# start_proxy CONFIG NAME: `cloister proxy --listen 127.0.0.1:0`; the
# address it listens on goes to $T/NAME.addr.
start_proxy() {
        rm -f "$T/$2.addr"
        "$CLOISTER" proxy --listen 127.0.0.1:0 "$1" >"$T/$2.addr" 2>>"$T/proxy.log" &
        PROXY_PID=$!
        PIDS+=($!)
        for _ in $(seq 200); do
                [ -s "$T/$2.addr" ] && return 0
                kill -0 "$PROXY_PID" 2>/dev/null || return 1
                sleep 0.05
        done
        return 1
}

# raw ADDR TEXT: send TEXT (printf escapes) on a fresh connection, print
# what comes back (the first 64 KiB, or until the peer closes, or until
# $RAW_TIMEOUT seconds (10) pass without a byte).
cat >"$T/raw.py" <<'EOP'
import os, socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=float(os.environ.get("RAW_TIMEOUT", "10")))
s.sendall(sys.argv[2].encode("latin-1").decode("unicode_escape").encode("latin-1"))
data = b""
try:
    while len(data) < 65536:
        b = s.recv(65536)
        if not b:
            break
        data += b
except OSError:
    pass
sys.stdout.write(data.decode("latin-1"))
EOP
raw() { python3 "$T/raw.py" "$1" "$2"; }
# status_of TEXT: the status code on the first line of an HTTP answer.
status_of() { printf '%s' "$1" | head -n1 | cut -d' ' -f2; }
# header_of TEXT NAME: a header's value (first match, any case).
header_of() { printf '%s' "$1" | tr -d '\r' | sed -n "s/^$2: //Ip" | head -n1; }

b64() { printf '%s' "$1" | base64 -w0; }
