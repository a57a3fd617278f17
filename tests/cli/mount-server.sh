#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cloister mount --server`: a mount through this user's server behaves as
# one forked by `cloister mount` itself (a read, a write, status, unmount);
# the server takes requests from its own uid only, and a client uses a
# server of its own uid only; a malformed or silent request gets an answer
# and the server keeps serving; the daemons outlive the server; without a
# server `cloister mount` forks the daemon as before (issue 48).
#
# Which path a mount took is told by the environment: a daemon forked
# through the server has the server's (MOUNT_SERVER_MARK), one forked by
# `cloister mount` the caller's.
set -u
: "${CLOISTER:?CLOISTER must name the cloister binary}"
. "${CLOISTER_SRC:-$(dirname "$0")/../..}/tests/cli/lib.sh"
need_root_fuse "FUSE mounts"
# The system's python3: another uid must be able to run it too.
py=$(command -v /usr/bin/python3 || command -v python3) || skip_all "needs python3 (raw requests)"
command -v setpriv >/dev/null || skip_all "needs setpriv (another uid)"

T=$(mktemp -d /tmp/cloister-mount-server.XXXXXX)
chmod 755 "$T"
tmp=$T
server_pid=""
cleanup() {
        for c in "$T"/ws-*.ini; do
                [ -e "$c" ] && timeout 60 "$CLOISTER" unmount "$c" >/dev/null 2>&1
        done
        [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
        [ -n "${other_pid:-}" ] && kill "$other_pid" 2>/dev/null
        unmount_under "$T"
        rm -rf "$T"
}
trap cleanup EXIT
export XDG_CONFIG_HOME=$T/config XDG_STATE_HOME=$T/state HOME=$T/home
mkdir -p "$HOME"
repo_new "$T/src" "from the repo"
for i in 1 2 3 4; do
        printf '[workspace]\nname = w%s\nstate = %s\nmountpoint = %s\n[repo]\nsource = %s\n' \
                "$i" "$T/state-$i" "$T/mnt-$i" "$T/src" >"$T/ws-$i.ini"
done
sock=$T/state/cloister/mount.sock

# server_start: once it says it listens (a dead server's socket may be there before).
server_start() {
        MOUNT_SERVER_MARK=1 "$CLOISTER" mount --server 2>"$T/server.err" &
        server_pid=$!
        for _ in $(seq 300); do
                grep -q "serving mounts at $sock" "$T/server.err" && return 0
                kill -0 "$server_pid" || return 1
                sleep 0.1
        done
        return 1
}

# gone PID: the daemon ends once unmounted (waits for it, not for a time).
gone() {
        for _ in $(seq 600); do
                kill -0 "$1" 2>/dev/null || return 0
                sleep 0.1
        done
        return 1
}

# marked PID: the daemon has the server's environment; unmarked PID: it is
# alive and has not (a missing pid is neither).
marked() { [ -n "$1" ] && tr '\0' '\n' <"/proc/$1/environ" | grep -qx 'MOUNT_SERVER_MARK=1'; }
unmarked() { [ -n "$1" ] && [ -r "/proc/$1/environ" ] && ! marked "$1"; }

# behaves N WHICH: mount ws-N, read, write, status, unmount; WHICH: server or fork.
behaves() {
        local i=$1 which=$2 pid
        run "$CLOISTER" mount --json "$T/ws-$i.ini"
        expect "${which}_mount_succeeds" 0
        pid=$(cat "$T/state-$i/mount.pid" 2>/dev/null)
        if [ "$which" = server ]; then
                marked "$pid"
                ok $? "${which}_the_daemon_was_forked_by_the_server" "pid $pid"
        else
                unmarked "$pid"
                ok $? "${which}_the_daemon_was_forked_by_cloister_mount" "pid $pid"
        fi
        grep -q "\"pid\":$pid," <<<"$out"
        ok $? "${which}_json_names_the_daemon" "$out / $pid"
        out=$(cat "$T/mnt-$i/workspace/a.txt" 2>&1)
        ok $([ "$out" = "from the repo" ] && echo 0 || echo 1) "${which}_it_serves_a_read" "$out"
        echo "written" >"$T/mnt-$i/workspace/new.txt" &&
                [ "$(cat "$T/mnt-$i/workspace/new.txt")" = written ]
        ok $? "${which}_it_serves_a_write"
        run "$CLOISTER" status "$T/ws-$i.ini"
        grep -q "mounted at $T/mnt-$i" <<<"$out"
        ok $? "${which}_status_says_mounted" "$out"
        run "$CLOISTER" unmount "$T/ws-$i.ini"
        expect "${which}_unmount_succeeds" 0
        ! mountpoint -q "$T/mnt-$i" && gone "$pid"
        ok $? "${which}_and_the_daemon_is_gone"
        [ -f "$T/state-$i/upper/new.txt" ] || grep -q new.txt "$T/state-$i/journal.jsonl"
        ok $? "${which}_and_the_write_is_kept"
}

# Without a server: forked by `cloister mount`, as before.
behaves 1 fork

server_start
ok $? "server_listens" "$(cat "$T/server.err")"
out=$(stat -c %a "$sock")
ok $([ "$out" = 600 ] && echo 0 || echo 1) "its_socket_is_the_users_only" "$out"
run "$CLOISTER" mount --server
expect "a_second_server_is_refused" 1 "listens at .* already"
behaves 1 server

# A relative config path is the caller's: its working directory goes with the request.
(cd "$T" && "$CLOISTER" mount ws-2.ini >"$T/out" 2>"$T/err")
ok $? "a_relative_config_is_found_from_the_callers_directory" "$(cat "$T/err")"
marked "$(cat "$T/state-2/mount.pid")"
ok $? "through_the_server"
# The caller's descriptor limit, not the server's (fs/nofile.sh mounts this way).
prlimit --nofile=2048:2048 "$CLOISTER" mount "$T/ws-3.ini" >/dev/null 2>"$T/err"
ok $? "a_mount_under_a_lower_descriptor_limit" "$(cat "$T/err")"
d3=$(cat "$T/state-3/mount.pid")
out=$(awk '/^Max open files/ { print $4, $5 }' "/proc/$d3/limits")
marked "$d3" && [ "$out" = "2048 2048" ]
ok $? "the_daemon_has_the_callers_limit" "$out"
"$CLOISTER" unmount "$T/ws-3.ini" >/dev/null 2>&1
gone "$d3"
# [logs] stdout = json: the journal's lines go to the caller's stdout, as from a forked daemon.
printf '[scope "git"]\naudience = https://git.example.com\n' >"$T/policy.ini"
printf '[workspace]\nname = wj\nstate = %s\nmountpoint = %s\n[repo]\nsource = %s\n[broker]\npolicy = %s\n[logs]\nstdout = json\n' \
        "$T/state-j" "$T/mnt-j" "$T/src" "$T/policy.ini" >"$T/ws-j.ini"
"$CLOISTER" mount "$T/ws-j.ini" >"$T/logs.jsonl" 2>"$T/err"
ok $? "a_mount_with_logs_on_stdout" "$(cat "$T/err")"
echo logged >"$T/mnt-j/workspace/logged.txt"
marked "$(cat "$T/state-j/mount.pid")"
ok $? "through_the_server_as_well"
"$CLOISTER" unmount "$T/ws-j.ini" >/dev/null 2>&1
grep -q '"workspace":"wj","stream":"journal"' "$T/logs.jsonl" && grep -q 'logged.txt' "$T/logs.jsonl"
ok $? "its_journal_lines_reach_the_callers_stdout" "$(head -c 600 "$T/logs.jsonl")"
# The binary hands the command over without loading the commands module.
if command -v strace >/dev/null; then
        # LeakSanitizer cannot run under ptrace (the ASan build).
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
                strace -o "$T/strace" -e trace=openat "$CLOISTER" mount "$T/ws-3.ini" \
                >/dev/null 2>"$T/err"
        ok $? "a_mount_under_strace" "$(cat "$T/err")"
        ! grep -q 'cloister-commands' "$T/strace" && marked "$(cat "$T/state-3/mount.pid")"
        ok $? "the_client_loaded_no_module" "$(grep cloister-commands "$T/strace")"
        "$CLOISTER" unmount "$T/ws-3.ini" >/dev/null 2>&1
else
        ok 0 "the_client_loaded_no_module # SKIP no strace"
fi
# Errors are the caller's to see: a second mount of a served workspace.
run "$CLOISTER" mount "$T/ws-2.ini"
expect "mounting_it_again_exits_3" 3 "already served"

# raw HEX-PAYLOAD [fds]: send one raw request; prints the answer's code and message.
raw() {
        python3 - "$sock" "$@" <<'EOF'
import socket, struct, sys, os
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
payload = bytes.fromhex(sys.argv[2])
if len(sys.argv) > 3 and sys.argv[3] == "silent":
    pass
elif len(sys.argv) > 3 and sys.argv[3] == "fds":
    s.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
               struct.pack("3i", os.open("/", os.O_RDONLY), 1, 2))])
else:
    s.send(payload)
a = s.recv(256)
if len(a) < 12:
    print("no answer", len(a)); sys.exit(1)
magic, code, pid = struct.unpack("<Iii", a[:12])
print(code, a[12:].split(b"\0")[0].decode())
EOF
}

# greeting LAUNCHER...: connect as LAUNCHER's python3 and print the answer the
# server gives at once, before it reads anything: a refusal of the peer.
# Nothing is sent (unread, the request could make the reset beat the answer).
greeting() {
        "$@" - "$sock" 2>&1 <<'EOF'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
a = s.recv(256)
magic, code, pid = struct.unpack("<Iii", a[:12])
print(code, a[12:].split(b"\0")[0].decode())
EOF
}

# Malformed requests: an answer each, and the server keeps serving.
out=$(raw 414243 2>&1)
grep -q '^1 malformed request' <<<"$out"
ok $? "a_short_request_is_answered_malformed" "$out"
out=$(raw "$(printf '%0512x' 0)" fds 2>&1)
grep -q '^1 malformed request' <<<"$out"
ok $? "a_request_of_zeros_is_answered_malformed" "$out"
# req ARGC FIELD...: a request's bytes in hex, the right magic and header, then the fields.
req() {
        python3 - "$@" <<'EOF'
import struct, sys
argc, fields = int(sys.argv[1]), sys.argv[2:]
body = struct.pack("<IIQQII", 0x636c6d32, 0o22, 1024, 1024, argc, 0)
body += b"".join(f.encode() + b"\0" for f in fields)
print(body.hex())
EOF
}
env_fields="HOME=$HOME XDG_STATE_HOME=$XDG_STATE_HOME XDG_CONFIG_HOME=$XDG_CONFIG_HOME TMPDIR PATH=$PATH SOURCE_DATE_EPOCH"
# The right magic, but the argument not NUL-terminated.
out=$(raw "$(req 2 mount)2f746d70" fds 2>&1)
grep -q '^1 malformed request.*not terminated' <<<"$out"
ok $? "an_unterminated_argument_is_answered_malformed" "$out"
# Only what the binary forwards is run: never --server, --foreground, --ready-fd.
for what in "server:mount --server" "foreground:mount --foreground $T/ws-4.ini" \
        "ready_fd:mount --ready-fd=5 $T/ws-4.ini" "two_configs:mount $T/ws-4.ini $T/ws-3.ini" \
        "unmount:unmount $T/ws-4.ini"; do
        set -- ${what#*:}
        out=$(raw "$(req $# "$@" $env_fields)" fds 2>&1)
        grep -q '^1 malformed request.*arguments it does not run' <<<"$out"
        ok $? "the_server_does_not_run_${what%%:*}" "$out"
done
! mountpoint -q "$T/mnt-4"
ok $? "and_mounted_nothing"
# A well-formed request of our uid from another mount namespace (a container's):
# refused by the server itself, not only by the client's check.
if command -v unshare >/dev/null; then
        out=$(greeting unshare -m --propagation private "$py")
        grep -q '^1 the mount server serves its own mount namespace only' <<<"$out" &&
                ! mountpoint -q "$T/mnt-4"
        ok $? "a_client_in_another_mount_namespace_is_refused" "$out"
else
        ok 0 "a_client_in_another_mount_namespace_is_refused # SKIP no unshare"
fi
# The environment's fields: each one, in order, as NAME or NAME=value.
out=$(raw "$(req 2 mount "$T/ws-4.ini" HOME=/x)" fds 2>&1)
grep -q '^1 malformed request.*environment' <<<"$out"
ok $? "missing_environment_fields_are_answered_malformed" "$out"
out=$(raw "$(req 2 mount "$T/ws-4.ini" PATH=/x XDG_STATE_HOME XDG_CONFIG_HOME TMPDIR)" fds 2>&1)
grep -q '^1 malformed request.*environment' <<<"$out"
ok $? "another_variable_is_answered_malformed" "$out"
out=$(raw "$(req 2 mount "$T/ws-4.ini" $env_fields extra)" fds 2>&1)
grep -q '^1 malformed request.*environment' <<<"$out"
ok $? "a_field_past_them_is_answered_malformed" "$out"
# A client that connects and says nothing holds its handler only.
python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(sys.argv[1]); time.sleep(30)' "$sock" &
silent=$!
sleep 0.2
kill -0 "$server_pid"
ok $? "the_server_lives_on_after_bad_requests"
run "$CLOISTER" mount "$T/ws-3.ini"
expect "and_serves_the_next_mount_while_a_client_is_silent" 0
marked "$(cat "$T/state-3/mount.pid")"
ok $? "through_the_server_still"
kill "$silent" 2>/dev/null
wait "$silent" 2>/dev/null
# --no-server: forked by `cloister mount` though a server listens (cloister-mount@.service).
run "$CLOISTER" mount --no-server "$T/ws-4.ini"
expect "no_server_mounts_too" 0
unmarked "$(cat "$T/state-4/mount.pid")"
ok $? "no_server_forks_the_daemon_itself"
"$CLOISTER" unmount "$T/ws-4.ini" >/dev/null 2>&1
run "$CLOISTER" mount --server --no-server
expect "server_with_no_server_is_a_usage_error" 2

# Another uid: refused by the server, even with the socket opened to all.
chmod 666 "$sock"
chmod 755 "$T/state" "$T/state/cloister"
out=$(greeting setpriv --reuid 65534 --regid 65534 --clear-groups "$py")
grep -q '^1 the mount server of uid 0 serves that uid only, not 65534' <<<"$out"
ok $? "another_uid_is_refused" "$out"
chmod 600 "$sock"

# The daemons outlive the server.
d2=$(cat "$T/state-2/mount.pid")
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null
server_pid=""
sleep 0.2
kill -0 "$d2" && [ "$(cat "$T/mnt-2/workspace/a.txt")" = "from the repo" ]
ok $? "a_daemon_serves_on_once_its_server_is_killed"
# Its socket is left behind, dead: `cloister mount` forks the daemon itself.
run "$CLOISTER" mount "$T/ws-4.ini"
expect "with_the_server_gone_mount_forks_the_daemon_itself" 0
unmarked "$(cat "$T/state-4/mount.pid")"
ok $? "not_through_the_server"
"$CLOISTER" unmount "$T/ws-4.ini" >/dev/null 2>&1
# A new server takes the dead one's socket.
server_start
ok $? "a_new_server_replaces_a_dead_ones_socket" "$(cat "$T/server.err")"
kill "$server_pid"
wait "$server_pid"
ok $? "the_server_ends_cleanly_on_sigterm"
server_pid=""
[ ! -e "$sock" ]
ok $? "and_removes_its_socket"

# A server in another mount namespace: its daemons would mount where the caller sees nothing.
if command -v unshare >/dev/null; then
        MOUNT_SERVER_MARK=1 unshare -m --propagation private "$CLOISTER" mount --server \
                2>"$T/server.err" &
        server_pid=$!
        for _ in $(seq 300); do
                grep -q "serving mounts at" "$T/server.err" && break
                sleep 0.1
        done
        run "$CLOISTER" mount "$T/ws-4.ini"
        expect "a_server_in_another_mount_namespace_is_not_used" 0 "another mount namespace"
        mountpoint -q "$T/mnt-4" && unmarked "$(cat "$T/state-4/mount.pid")"
        ok $? "the_mount_is_made_here_by_cloister_mount"
        "$CLOISTER" unmount "$T/ws-4.ini" >/dev/null 2>&1
        kill "$server_pid"
        wait "$server_pid"
        server_pid=""
else
        ok 0 "a_server_in_another_mount_namespace_is_not_used # SKIP no unshare"
fi

# A client uses only a server of its own uid: one of nobody's is not handed root's descriptors.
mkdir -p "$T/nobody-state"
chown 65534:65534 "$T/nobody-state"
XDG_STATE_HOME=$T/nobody-state MOUNT_SERVER_MARK=1 setpriv --reuid 65534 --regid 65534 \
        --clear-groups "$CLOISTER" mount --server 2>"$T/other.err" &
other_pid=$!
for _ in $(seq 300); do
        grep -q "serving mounts at" "$T/other.err" && break
        sleep 0.1
done
chmod 666 "$T/nobody-state/cloister/mount.sock"
XDG_STATE_HOME=$T/nobody-state run "$CLOISTER" mount "$T/ws-4.ini"
expect "a_server_of_another_uid_is_not_used" 0 "served by uid 65534, not ours"
unmarked "$(cat "$T/state-4/mount.pid")"
ok $? "the_daemon_is_forked_by_cloister_mount" "$(cat "$T/other.err")"
XDG_STATE_HOME=$T/nobody-state "$CLOISTER" unmount "$T/ws-4.ini" >/dev/null 2>&1

echo "1..$n"
[ "$fails" = 0 ]
