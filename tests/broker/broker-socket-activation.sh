#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Socket activation: the broker takes the agent socket a service manager
# passes (LISTEN_FDS/LISTEN_PID, as systemd's cloister-broker@.socket does)
# instead of binding its own, serves on it, and leaves the file to its owner
# at exit; a passed socket no workspace names, or one other users may
# connect to, stops it from starting; sockets passed to another process are
# not taken. The "service manager" is a small launcher that binds a real
# socket and execs the broker with it on fd 3, exactly as systemd does.
. "$(dirname "$0")/lib.sh"

cat >"$T/activate.py" <<'EOP'
import os, socket, sys
path, mode, whose = sys.argv[1], int(sys.argv[2], 8), sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
old = os.umask(0o777 & ~mode)
s.bind(path)
os.umask(old)
os.chmod(path, mode)
s.listen(16)
with open(os.environ["INODE_FILE"], "w") as f:
    f.write(str(os.stat(path).st_ino))
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ["LISTEN_FDS"] = "1"
os.environ["LISTEN_PID"] = str(os.getpid()) if whose == "self" else "1"
os.environ["LISTEN_FDNAMES"] = "agent"
os.execvp(sys.argv[4], sys.argv[4:])
EOP

# activated PATH MODE self|other CONFIG...: the broker, started with a socket at PATH
activated() {
        local path=$1 mode=$2 whose=$3
        shift 3
        rm -f "$T/inode"
        INODE_FILE="$T/inode" python3 "$T/activate.py" "$path" "$mode" "$whose" "$CLOISTER" broker "$@" \
                2>>"$T/broker.log" &
        BROKER_PID=$!
        BROKER_PIDS+=("$BROKER_PID")
}

wait_socket() { # wait_socket PATH: until a pubkey request is answered there
        for _ in $(seq 200); do
                raw "$1" '{"op":"pubkey"}' 2>/dev/null | grep -q '"ok":true' && return 0
                kill -0 "$BROKER_PID" 2>/dev/null || return 1
                sleep 0.05
        done
        return 1
}

# exits PID: wait for it (not in a subshell: only the parent may); its status in $rc
exits() { rc=0; wait "$1" || rc=$?; }

make_workspace ws1
S=$(sock ws1)
mkdir -p "$(dirname "$S")"

activated "$S" 0600 self "$T/ws1.ini"
check "broker_serves_on_the_socket_the_service_manager_passed" wait_socket "$S"
inode_bound=$(cat "$T/inode")
check_rc "token_issue_works_through_the_passed_socket" 0 "$CLOISTER" token issue git --socket "$S"
check "the_passed_socket_is_not_replaced_by_one_of_its_own" test "$(stat -c %i "$S")" = "$inode_bound"
check "the_broker_says_the_socket_was_passed" \
        grep -q "agent socket $S passed by the service manager" "$T/broker.log"
check "the_admin_socket_is_still_its_own" test -S "$(admin_sock ws1)"
kill -TERM "$BROKER_PID"
exits "$BROKER_PID"
check "broker_stops_cleanly_on_sigterm" test "$rc" = 0
check "the_passed_socket_file_is_left_to_the_service_manager" test -S "$S"
check "its_own_admin_socket_is_removed" test ! -e "$(admin_sock ws1)"
rm -f "$S"

# A socket no workspace names: refused, nothing served.
activated "$T/elsewhere.sock" 0600 self "$T/ws1.ini"
exits "$BROKER_PID"
check "a_passed_socket_no_workspace_names_stops_the_broker" test "$rc" = 1
check "the_error_names_the_stray_socket" \
        grep -q "passed the socket $T/elsewhere.sock, which no workspace's \[broker\] socket names" \
        "$T/broker.log"
check "nothing_was_bound_in_its_place" test ! -e "$S"
rm -f "$T/elsewhere.sock"

# A socket others may connect to: refused (the agent socket is the broker uid's only).
activated "$S" 0666 self "$T/ws1.ini"
exits "$BROKER_PID"
check "a_passed_socket_others_may_connect_to_is_refused" test "$rc" = 1
check "the_refusal_says_which_mode_and_how_to_fix_it" \
        grep -q "$S: passed by the service manager with owner $(id -u) and mode 0666.*SocketMode=0600" \
        "$T/broker.log"
rm -f "$S"

# Sockets for another process (LISTEN_PID not ours) are not taken: the broker
# binds its own and the stray one is no error.
activated "$T/not-mine.sock" 0600 other "$T/ws1.ini"
check "sockets_passed_to_another_pid_are_ignored" wait_socket "$S"
check_rc "and_the_broker_serves_on_its_own_socket" 0 "$CLOISTER" token issue git --socket "$S"
kill -TERM "$BROKER_PID"
exits "$BROKER_PID"
check "that_broker_stops_cleanly" test "$rc" = 0
check "and_removes_the_socket_it_bound_itself" test ! -e "$S"

done_testing
