#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The check of where a workspace's paths may lie finds the remembered
# workspaces through an index by path (mounts/claims.c, issue 48): its cost
# does not grow with their number, and it refuses exactly as the full
# comparison did. Counts system calls with strace (no timing).
set -u
: "${CLOISTER:?CLOISTER must name the cloister binary}"
. "${CLOISTER_SRC:-$(dirname "$0")/../..}/tests/cli/lib.sh"
command -v strace >/dev/null || skip_all "strace is not installed"
command -v git >/dev/null || skip_all "git is not installed"

T=$(mktemp -d /tmp/cloister-claims-index.XXXXXX)
cleanup() {
        [ -e "$T/r.ini" ] && timeout 60 "$CLOISTER" unmount "$T/r.ini" >/dev/null 2>&1
        unmount_under "$T"
        rm -rf "$T"
}
trap cleanup EXIT

repo_new "$T/src"

config() { # config FILE NAME STATE
        printf '[workspace]\nname = %s\nstate = %s\n[repo]\nsource = %s\n' "$2" "$3" "$T/src" >"$1"
}
# home HOME COUNT: a user whose COUNT workspaces were mounted once (remembered).
home() {
        local h=$1 i
        mkdir -p "$h/config/cloister" "$h/state/cloister" "$h/ws"
        for ((i = 1; i <= $2; i++)); do
                config "$h/ws/w$i.ini" "w$i" "$h/states/w$i"
                echo "$h/ws/w$i.ini" >>"$h/state/cloister/configs"
        done
}
# syscalls HOME CONFIG: openat, read and flock calls of one `cloister check`.
syscalls() {
        XDG_CONFIG_HOME=$1/config XDG_STATE_HOME=$1/state "$CLOISTER" check "$2" >/dev/null 2>&1
        XDG_CONFIG_HOME=$1/config XDG_STATE_HOME=$1/state strace -f -qq -c -o "$T/strace" \
                -e trace=openat,read,flock "$CLOISTER" check "$2" >/dev/null 2>&1
        awk '$NF == "total" { print $(NF - 2) == "" ? 0 : ($(NF - 1) ~ /^[0-9]+$/ && NF >= 5 ? $(NF - 2) : $(NF - 1)) }' "$T/strace"
}

home "$T/few" 10
home "$T/many" 300
config "$T/x.ini" x "$T/x-state"
few=$(syscalls "$T/few" "$T/x.ini")
many=$(syscalls "$T/many" "$T/x.ini")
[ -n "$few" ] && [ "$few" -gt 0 ] && [ "$few" = "$many" ]
ok $? "a_check_costs_the_same_with_300_workspaces_known_as_with_10" \
        "openat+read+flock: $few with 10, $many with 300"

export XDG_CONFIG_HOME=$T/many/config XDG_STATE_HOME=$T/many/state
refused() { # refused NAME PATTERN CONFIG
        local out rc
        out=$("$CLOISTER" check "$3" 2>&1)
        rc=$?
        [ "$rc" = 1 ] && grep -qE -- "$2" <<<"$out"
        ok $? "$1" "rc=$rc, want /$2/ in: $out"
}
config "$T/q.ini" q "$T/many/states/w150/fs/repo/q"
refused a_state_inside_a_remembered_workspaces_state_is_refused \
        "state '$T/many/states/w150/fs/repo/q' is inside the state '$T/many/states/w150' of another workspace, 'w150'" \
        "$T/q.ini"
config "$T/q2.ini" q2 "$T/many/states"
refused a_state_containing_remembered_ones_is_refused \
        "state '$T/many/states' contains the state '$T/many/states/w[0-9]+' of another workspace" \
        "$T/q2.ini"
# The index only proposes: the config is compared as it is now.
config "$T/many/ws/w150.ini" w150 "$T/elsewhere/w150"
out=$("$CLOISTER" check "$T/q.ini" 2>&1)
ok $? "a_remembered_workspace_that_moved_away_refuses_nothing_there" "$out"
# (Moved by an edit, it is found at its new place once it mounts again, as it is recorded
# then: of two workspaces that overlap, the second to mount is refused.)

# Where the index can't be made (here a file stands in its place), every remembered
# config is compared, as before there was an index.
home "$T/noidx" 3
touch "$T/noidx/state/cloister/claims"
config "$T/q5.ini" q5 "$T/noidx/states/w2/q5"
out=$(XDG_CONFIG_HOME=$T/noidx/config XDG_STATE_HOME=$T/noidx/state "$CLOISTER" check "$T/q5.ini" 2>&1)
rc=$?
[ "$rc" = 1 ] && grep -q "inside the state '$T/noidx/states/w2' of another workspace, 'w2'" <<<"$out"
ok $? "without_an_index_a_remembered_workspace_is_still_compared" "rc=$rc: $out"

# A host of thousands: all 4200 remembered are known (`cloister list`, `unmount --all`).
home "$T/big" 4200
out=$(XDG_CONFIG_HOME=$T/big/config XDG_STATE_HOME=$T/big/state "$CLOISTER" list 2>&1 | grep -c "$T/big/ws/")
ok $([ "$out" = 4200 ] && echo 0 || echo 1) "all_of_4200_remembered_workspaces_are_known" "$out listed"

# A workspace mounted now is found by the next check (recorded as it mounts).
if [ "$(id -u)" = 0 ] && [ -e /dev/fuse ]; then
        printf '[workspace]\nname = r\nstate = %s\nmountpoint = %s\n[repo]\nsource = %s\n' \
                "$T/r-state" "$T/r-mnt" "$T/src" >"$T/r.ini"
        out=$("$CLOISTER" mount "$T/r.ini" 2>&1)
        ok $? "a_workspace_apart_from_the_others_mounts" "$out"
        config "$T/q4.ini" q4 "$T/r-mnt/q4"
        refused a_state_inside_a_just_mounted_workspaces_mountpoint_is_refused \
                "state '$T/r-mnt/q4' is inside the mountpoint '$T/r-mnt' of another workspace, 'r'" \
                "$T/q4.ini"
        "$CLOISTER" unmount "$T/r.ini" >/dev/null 2>&1
else
        ok 0 "a_workspace_apart_from_the_others_mounts # SKIP needs root and FUSE"
        ok 0 "a_state_inside_a_just_mounted_workspaces_mountpoint_is_refused # SKIP needs root and FUSE"
fi

echo "1..$n"
[ "$fails" = 0 ]
