#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the shed cannot drop, an agent can pin (fs/ops/shed.c): files it keeps
# open, and directories, whose entries are never dropped. The outside
# review's agent pinned every descriptor of a daemon at a limit of 512
# with 480 directories, and the host's `cloister diff` then failed with
# "Too many open files", as did everything else: the agent could stop its
# own review. Now a caller in the sandbox is refused (EMFILE) once the
# daemon's count reaches the part kept for the host, and the host's
# review, which reads the workspace through the same daemon, goes on.
. "$(dirname "$0")/lib.sh"
command -v prlimit >/dev/null || skip_all "no prlimit (util-linux)"
command -v bwrap >/dev/null || skip_all "no bwrap: cloister run needs bubblewrap"
command -v python3 >/dev/null || skip_all "no python3 for the agent"
[ -e /proc/self/ns/pid ] || skip_all "no /proc/self/ns/pid: the daemon tells the host's callers by their pid namespace"
export XDG_STATE_HOME=$T/xdg

LIMIT=512
make_repo "$T/repo"
C=$(make_config nofilereview "$T/repo" "
[limits]
files = 20000
")
W=$(mnt_of "$C")/workspace
mount_nofile "$C" $LIMIT
pid=$NOFILE_PID

# run_agent NAME SCRIPT: the agent's python SCRIPT in the sandbox, in the
# background; it says what it did on $T/NAME.out, then holds on until
# release closes its standard input (a fifo).
run_agent() {
        rm -f "$T/release"
        mkfifo "$T/release"
        "$CLOISTER" run "$C" -- python3 -c "$AGENT_LIB$2" <"$T/release" >"$T/$1.out" 2>"$T/$1.err" &
        AGENT=$!
        exec 9>"$T/release"
        check "${1}_holds_what_it_could" bash -c "
                for i in \$(seq 900); do grep -q '^holding' '$T/$1.out' && exit 0
                        kill -0 $AGENT 2>/dev/null || exit 1; sleep 0.1; done; exit 1"
        sed 's/^/# agent: /' "$T/$1.out" "$T/$1.err" | head -10
        echo "# daemon descriptors: $(fds_of "$pid") of $LIMIT"
}
release() {
        exec 9>&-
        wait "$AGENT"
        same "${1}_ends_well" "$? $(tail -n 1 "$T/$1.out")" "0 released"
}
# The host's review, while the agent holds what it could.
host_reviews() { # host_reviews NAME FILES READ: diff lists FILES changed files; READ is unread
        "$CLOISTER" diff "$C" --name-status >"$T/ns" 2>"$T/ns.err"
        same "${1}_host_diff_works" "$(grep -c . "$T/ns") $(cat "$T/ns.err")" "$2 "
        check "${1}_host_status_works" "$CLOISTER" status "$C"
        check "${1}_host_log_works" "$CLOISTER" log "$C"
        check "${1}_host_export_works" "$CLOISTER" export "$C" --mbox --message held -o "$T/$1.mbox"
        check "${1}_host_reads_a_file_never_read" cat "$W/$3"
        check "${1}_host_makes_a_file" cp "$W/$3" "$W/host-$1"
        rm -f "$W/host-$1"
        check "${1}_daemon_stays_below_its_limit" test "$(fds_of "$pid")" -lt $LIMIT
}
AGENT_LIB='
import errno, os, sys
def say(*a):
    print(*a, flush=True)
held = []
def grab(what, make, n):
    for i in range(n):
        try:
            held.append(make(i))
        except OSError as e:
            say(what, i, errno.errorcode.get(e.errno, e.errno))
            return
    say(what, n, "none")
def hold():
    say("holding")
    sys.stdin.read()
    say("released")
'

# 1. Files kept open. In the copy-on-write parts, on connections that send
#    no OPEN (fs/daemon/parts.c), an open file costs the daemon nothing:
#    all 600 open, and the host's review goes on.
OPENS_AGENT='
with open("/workspace/kept.txt", "w") as f:
    f.write("kept\n")
grab("open", lambda i: os.open("/workspace/kept.txt", os.O_RDONLY), 600)
hold()
'
run_agent opens "$OPENS_AGENT"
same opens_cost_the_daemon_no_descriptor \
        "$(sed -n 's/^open \([0-9]*\) \(.*\)/\1 \2/p' "$T/opens.out")" "600 none"
host_reviews opens 1 src/lib/a.c
release opens


# 2. Directories, whose entries the shed never drops (a process's working
#    directory there would lose its path): made, each with a file, and
#    not even kept open.
run_agent dirs '
def mkdir(i):
    os.mkdir("/workspace/d%03d" % i)
    with open("/workspace/d%03d/f" % i, "w") as f:
        f.write("%d\n" % i)
grab("mkdir", mkdir, 600)
hold()
'
made=$(sed -n 's/^mkdir \([0-9]*\) .*/\1/p' "$T/dirs.out")
same dirs_refused_with_emfile_below_the_limit \
        "$(sed -n 's/^mkdir [0-9]* \(.*\)/\1/p' "$T/dirs.out")" EMFILE
# Each directory made has its file, except perhaps the last one refused.
files=$(ls -d "$W"/d*/f | wc -l)
host_reviews dirs $((files + 1)) docs/guide.md
release dirs
check the_directories_the_agent_made_are_whole test "$files" -ge $((made - 1))

# 3. Files kept open on the root's connection (the mirrors always, the
#    parts with zero_message_opens = off): each is a descriptor of the
#    daemon's, which no shed can take back while it is open, so they are
#    refused once the host's part is reached.
#    A workspace of its own, as new as the first one was.
check unmount "$CLOISTER" unmount "$C"
C=$(make_config nofileoff "$T/repo" "
[limits]
files = 20000

[fs]
zero_message_opens = off
")
W=$(mnt_of "$C")/workspace
mount_nofile "$C" $LIMIT
pid=$NOFILE_PID
run_agent opens_off "$OPENS_AGENT"
same opens_refused_with_emfile_below_the_limit \
        "$(sed -n 's/^open \([0-9]*\) \(.*\)/\2/p' "$T/opens_off.out")" EMFILE
host_reviews opens_off 1 src/lib/a.c
release opens_off
check unmount_off "$CLOISTER" unmount "$C"
finish
