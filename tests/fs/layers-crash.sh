#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGKILL at every step of checkpoint (unmounted, and in the daemon while
# mounted), restore, fork, checkpoint --delete and squash (docs/fs-design.md,
# "What a crash leaves"): CLOISTER_TEST_CRASH_AT=OP:N kills the process at
# its Nth step (lib/crashpoint.h), for N = 1, 2, ... until the command
# completes. After each kill the workspace must hold the old state or the
# new one, whole: it mounts, shows exactly what one of them shows, every
# byte written with fsync before is there, git fsck of the workspace .git
# is clean, and the command run again completes.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_all "no python3"

make_repo "$T/repo"
C=$(make_config ws "$T/repo")
M=$(mnt_of "$C")
S=$(state_of "$C")
W=$M/workspace
G() { git -c safe.directory='*' -c user.name=t -c user.email=t@e "$@"; }
# view: what the workspace shows (names, types, modes, sizes, contents).
view() {
        (cd "$W" && find . -path ./.git -prune -o -printf '%p %y %m %s\n' | sort &&
                find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 -r sha256sum)
}
durable() { # durable FILE TEXT: written and fsync'd through the mount
        python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, sys.argv[2].encode()); os.fsync(fd); os.close(fd)' "$1" "$2"
}
has_cp() { "$CLOISTER" checkpoint --list --json "$1" | python3 -c 'import json,sys; print("yes" if sys.argv[1] in [c["name"] for c in json.load(sys.stdin)["checkpoints"]] else "no")' "$2"; }
# killed STATUS: the command died of SIGKILL (137), as asked
killed() { [ "$1" = 137 ]; }
# crash OP:N COMMAND...: run it with its Nth step killed (in a subshell, which
# takes the shell's "Killed" notice away)
crash() {
        local at=$1
        shift
        (CLOISTER_TEST_CRASH_AT=$at "$@" >/dev/null 2>&1; exit $?) 2>/dev/null
}

check mount do_mount "$C"
mkdir -p "$W/d"
durable "$W/d/synced" "fsync'd before everything"
echo one >"$W/one.txt"
G -C "$W" add -A >/dev/null && G -C "$W" commit -qm base-work
view >"$T/v0"
check unmount do_unmount "$C"

# after_crash NAME WANT...: mounts, the view is one of the WANT files, fsck clean, unmount
after_crash() {
        local name=$1 v ok=1
        shift
        if ! do_mount "$C" >"$T/.m" 2>&1; then
                sed 's/^/# /' "$T/.m"
                ok 1 "$name: mounts"
                return
        fi
        view >"$T/vnow"
        for v in "$@"; do cmp -s "$T/vnow" "$v" && ok=0; done
        if [ "$ok" != 0 ]; then diff "$T/vnow" "$1" | head -10 | sed 's/^/# /'; fi
        ok "$ok" "$name: shows the old or the new state, whole"
        same "$name: fsync'd data is there" "$(cat "$W/d/synced")" "fsync'd before everything"
        check "$name: git fsck is clean" bash -c "git -c safe.directory='*' -C '$W' fsck --no-dangling >'$T/.fsck' 2>&1"
        do_unmount "$C" >/dev/null 2>&1
}

# 1. checkpoint, unmounted.
steps=0
for i in $(seq 1 20); do
        crash "checkpoint:$i" "$CLOISTER" checkpoint "$C" c1
        st=$?
        killed "$st" || break
        steps=$i
        after_crash "checkpoint_killed_at_step_$i" "$T/v0"
        same "checkpoint_killed_at_step_$i: made or not" "$(has_cp "$C" c1 | grep -c 'yes\|no')" 1
        [ "$(has_cp "$C" c1)" = yes ] && break
done
check checkpoint_completes_after_the_kills bash -c "[ '$(has_cp "$C" c1)' = yes ] || '$CLOISTER' checkpoint '$C' c1 >/dev/null"
check checkpoint_had_steps_to_kill test "$steps" -ge 2

# 2. checkpoint in the daemon, mounted, with a writer busy.
for i in $(seq 1 20); do
        CLOISTER_TEST_CRASH_AT=checkpoint:$i "$CLOISTER" mount "$C" >/dev/null 2>&1
        exec 7>>"$W/open.txt"
        echo "round $i" >&7
        view >"$T/vm"
        "$CLOISTER" checkpoint "$C" "m$i" >/dev/null 2>&1
        st=$?
        echo "after $i" >&7 2>/dev/null
        exec 7>&-
        if [ "$st" = 0 ] && [ -e "$S/mount.pid" ] && kill -0 "$(cat "$S/mount.pid")" 2>/dev/null; then
                check "online_checkpoint_completes_at_step_$i" true
                check "online_checkpoint_unmount" do_unmount "$C"
                break
        fi
        do_unmount "$C" >/dev/null 2>&1
        after_crash "online_checkpoint_daemon_killed_at_step_$i" "$T/vm"
        rm -f "$W/open.txt" 2>/dev/null
        do_mount "$C" >/dev/null 2>&1 && rm -f "$W/open.txt" && do_unmount "$C" >/dev/null 2>&1
done

# 3. restore: from the state after c1 (saved as c2) back to c1.
check mount_for_restore do_mount "$C"
echo two >"$W/two.txt"
rm "$W/one.txt"
view >"$T/v2"
check unmount_for_restore do_unmount "$C"
check checkpoint_c2 "$CLOISTER" checkpoint "$C" c2
for i in $(seq 1 20); do
        crash "restore:$i" "$CLOISTER" restore "$C" c1
        st=$?
        killed "$st" || break
        after_crash "restore_killed_at_step_$i" "$T/v0" "$T/v2"
        "$CLOISTER" restore "$C" c2 >/dev/null 2>&1 # the old state again
done
check restore_completes "$CLOISTER" restore "$C" c1
after_crash restore_done "$T/v0"
check restore_back_to_c2 "$CLOISTER" restore "$C" c2
after_crash restore_back "$T/v2"

# 4. fork at c1.
F=$T/forks/f.ini
for i in $(seq 1 20); do
        crash "fork:$i" "$CLOISTER" fork "$C" "$F" --from c1
        st=$?
        killed "$st" || break
        if [ -e "$F" ]; then
                CONFIGS+=("$F")
                check "fork_killed_at_step_$i: the fork is whole" bash -c "'$CLOISTER' mount '$F' && diff <(cd \"\$(sed -n 's/^state = //p' '$F')/mnt/workspace\" && find . -path ./.git -prune -o -printf '%p %y %m %s\n' | sort && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 -r sha256sum) '$T/v0' && '$CLOISTER' unmount '$F'"
                break
        fi
        ok 0 "fork_killed_at_step_$i: no fork (no config)"
        after_crash "fork_killed_at_step_$i: parent" "$T/v2"
done
if [ ! -e "$F" ]; then
        check fork_completes_after_the_kills "$CLOISTER" fork "$C" "$F" --from c1
        CONFIGS+=("$F")
fi
check fork_mounts "$CLOISTER" mount "$F"
FW=$(sed -n 's/^state = //p' "$F")/mnt/workspace
same fork_shows_the_checkpoint "$(cat "$FW/one.txt" "$FW/d/synced")" "$(printf "one\nfsync'd before everything")"
check fork_unmount "$CLOISTER" unmount "$F"

# 5. checkpoint --delete of c2 (the current state's layers stay).
for i in $(seq 1 20); do
        crash "delete:$i" "$CLOISTER" checkpoint --delete "$C" c2
        st=$?
        killed "$st" || break
        after_crash "delete_killed_at_step_$i" "$T/v2"
        [ "$(has_cp "$C" c2)" = no ] && break
done
check delete_completes bash -c "[ '$(has_cp "$C" c2)' = no ] || '$CLOISTER' checkpoint --delete '$C' c2 2>/dev/null"
after_crash delete_done "$T/v2"
same c1_is_still_there "$(has_cp "$C" c1)" yes

# 6. squash of the stack (c3's newest layer, which only the stack uses, goes).
depth() { "$CLOISTER" checkpoint --list --json "$C" | python3 -c 'import json,sys; print(json.load(sys.stdin)["depth"])'; }
check mount_for_squash do_mount "$C"
durable "$W/d/three.txt" "three"
view >"$T/v3"
check unmount_for_squash do_unmount "$C"
check checkpoint_c3 "$CLOISTER" checkpoint "$C" c3
check delete_c3_deferred "$CLOISTER" checkpoint --delete "$C" c3
d0=$(depth)
check several_layers_before_squash test "$d0" -ge 3
# the newest frozen layer: only the current stack uses it (c3 is deleted)
c3_dir=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["layers"][j["stack"][-1]]["dir"])' "$S/fs/layers.json")
check c3_layer_is_there test -d "$S/$c3_dir"
steps=0
for i in $(seq 1 20); do
        crash "squash:$i" "$CLOISTER" squash "$C"
        st=$?
        killed "$st" || break
        steps=$i
        after_crash "squash_killed_at_step_$i" "$T/v3"
        same "squash_killed_at_step_$i: all the layers or one" "$(depth | grep -cx "$d0\|1")" 1
done
check squash_had_steps_to_kill test "$steps" -ge 3
check squash_completes "$CLOISTER" squash "$C"
same squash_leaves_one_layer "$(depth)" 1
after_crash squash_done "$T/v3"
check squash_removed_the_unused_layer test ! -e "$S/$c3_dir"
check every_layer_left_is_named python3 -c '
import json, os, sys
s = sys.argv[1]
j = json.load(open(s + "/fs/layers.json"))
named = {j["top"]} | {v["dir"] for v in j["layers"].values() if "state" not in v}
left = {"layers/" + d for d in os.listdir(s + "/layers") if not d.startswith(".")}
sys.exit(0 if left <= named else "unnamed: %s" % (left - named))' "$S"
check fork_still_mounts_after_squash "$CLOISTER" mount "$F"
same fork_still_shows_c1 "$(cat "$FW/one.txt")" one
check fork_unmount_after_squash "$CLOISTER" unmount "$F"
check restore_c1_after_squash "$CLOISTER" restore "$C" c1
after_crash c1_after_squash "$T/v0"
finish
