# SPDX-License-Identifier: MIT
# lib.sh: shared setup for the broker's TAP tests. Sourced, not run.
# Makes a temp workspace (config + policy), starts and stops real brokers,
# and always cleans up (trap EXIT): no daemon outlives its test.

set -u
: "${CLOISTER:?CLOISTER must name the built cloister binary}"
: "${CLOISTER_BUILD:?}"
CRED_HELPER="$CLOISTER_BUILD/broker/git-credential-cloister"
# The raw socket client and the JSON checks below are python3.
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 77; }

T=$(mktemp -d /tmp/cloister-broker-test.XXXXXX)
BROKER_PIDS=()
n_test=0
n_fail=0

cleanup() {
        for p in "${BROKER_PIDS[@]}"; do
                kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
        done
        [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

ok() { n_test=$((n_test + 1)); echo "ok $n_test - $1"; }
not_ok() { n_test=$((n_test + 1)); n_fail=$((n_fail + 1)); echo "not ok $n_test - $1"; }
# check NAME CMD...: ok if CMD succeeds
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
# check_rc NAME RC CMD...: ok if CMD exits with RC
check_rc() {
        local name=$1 want=$2 rc=0; shift 2
        "$@" >"$T/out" 2>"$T/err" || rc=$?
        if [ "$rc" = "$want" ]; then ok "$name"; else
                not_ok "$name (exit $rc, want $want)"; sed 's/^/# /' "$T/err"; fi
}
# Stops every broker, then fails if any of them reported a sanitizer error.
done_testing() {
        for p in "${BROKER_PIDS[@]}"; do
                kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
        done
        BROKER_PIDS=()
        if grep -q "Sanitizer" "$T/broker.log" 2>/dev/null; then
                not_ok "brokers_ran_clean_under_sanitizers"
                sed 's/^/# /' "$T/broker.log" | head -40
        fi
        echo "1..$n_test"
        [ "$n_fail" = 0 ]
        exit $?
}
skip_all() { echo "1..0 # SKIP $1"; exit 77; }

# make_workspace NAME [POLICY-TEXT]: writes $T/NAME.ini and $T/NAME-policy.ini
make_workspace() {
        local name=$1
        mkdir -p "$T/$name/repo" "$T/$name/state"
        cat >"$T/$name.ini" <<EOT
[workspace]
name = $name
state = $T/$name/state

[repo]
source = $T/$name/repo

[broker]
policy = $T/$name-policy.ini
EOT
        if [ $# -ge 2 ]; then printf '%s\n' "$2" >"$T/$name-policy.ini"; else
                cat >"$T/$name-policy.ini" <<EOT
[limits]
connections = 300
rate = 5000
issue_rate = 5000
issue_total = 5000

[scope "git"]
audience = https://git.example.com
ttl = 5m
max_ttl = 15m
workspaces = $name
hosts = git.example.com
username = x-access-token

[scope "deploy"]
audience = https://deploy.example.com
ttl = 60
max_ttl = 120
max_uses = 2
workspaces = $name
secret = deploy-key

[scope "other-only"]
audience = https://other.example.com
workspaces = someone-else
EOT
        fi
}

sock() { echo "$T/$1/state/broker.sock"; }
admin_sock() { echo "$T/$1/state/broker/admin.sock"; }

# start_broker CONFIG...: runs the broker in the background, waits until
# every agent socket answers.
start_broker() {
        "$CLOISTER" broker "$@" 2>>"$T/broker.log" &
        BROKER_PIDS+=($!)
        BROKER_PID=$!
        for cfg in "$@"; do
                local name
                name=$(basename "$cfg" .ini)
                for _ in $(seq 600); do
                        if [ -S "$(sock "$name")" ] &&
                                raw "$(sock "$name")" '{"op":"pubkey"}' >/dev/null 2>&1; then
                                break
                        fi
                        kill -0 "$BROKER_PID" 2>/dev/null || return 1
                        sleep 0.05
                done
                [ -S "$(sock "$name")" ] || return 1
        done
}

stop_broker() {
        kill "$BROKER_PID" 2>/dev/null
        wait "$BROKER_PID"
}

# raw SOCKET LINE...: send lines over a real socket, print the responses.
cat >"$T/raw.py" <<'EOP'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(20)
s.connect(sys.argv[1])
for line in sys.argv[2:]:
    s.sendall(line.encode() + b"\n")
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
sys.stdout.write(data.decode())
EOP
chmod 0644 "$T/raw.py"
raw() { python3 "$T/raw.py" "$@"; }

# json_get KEY: read one JSON object on stdin, print .KEY
json_get() {
        python3 -c 'import json,sys; v=json.load(sys.stdin)
for k in sys.argv[1].split("."): v=v[k]
print(v if not isinstance(v,bool) else str(v).lower())' "$1"
}
