#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where a workspace's state and mountpoint may lie (issue 43, 3; issue 43,
# 2 from the CLI): never inside another known workspace's state, mountpoint
# or source work tree, nor containing one, nor its own state inside its own
# mountpoint. Refused by mount, run, check and fork, naming the other
# workspace; compared resolved (a symlink, a bind mount). A fork's state is
# a directory the fork makes: never an existing one, never a place a known
# config names, and a refused fork writes nothing, in the source's .git
# above all (docs/cloister-fork.md, docs/security.md).
set -u
: "${CLOISTER:?CLOISTER must name the cloister binary}"
. "${CLOISTER_SRC:-$(dirname "$0")/../..}/tests/cli/lib.sh"
need_root_fuse "FUSE mounts, bind mounts"
command -v bwrap >/dev/null || skip_all "bubblewrap is not installed"

T=$(mktemp -d /tmp/cloister-nesting.XXXXXX)
cleanup() {
        for c in "$T"/*.ini "$T"/forks/*.ini "$T"/xdg-config/cloister/*.ini; do
                [ -e "$c" ] && timeout 60 "$CLOISTER" unmount "$c" >/dev/null 2>&1
        done
        # Whatever a refusal that failed left mounted (deepest first).
        unmount_under "$T"
        rm -rf "$T"
}
trap cleanup EXIT
# This user's known configs are the test's own (`cloister list`).
export XDG_CONFIG_HOME=$T/xdg-config XDG_STATE_HOME=$T/xdg-state
known=$XDG_CONFIG_HOME/cloister
mkdir -p "$known"

# refused NAME WANT-RC PATTERN CMD...: CMD exits WANT-RC and says PATTERN.
refused() {
        local name=$1 want=$2 pat=$3 out rc
        shift 3
        out=$("$@" 2>&1)
        rc=$?
        if [ "$rc" = "$want" ] && grep -qE -- "$pat" <<<"$out"; then ok 0 "$name"; else
                ok 1 "$name" "rc=$rc (want $want), want /$pat/ in:
$out"
        fi
}

config() { # config FILE NAME STATE SOURCE [MOUNTPOINT]
        {
                printf '[workspace]\nname = %s\nstate = %s\n' "$2" "$3"
                [ -n "${5:-}" ] && printf 'mountpoint = %s\n' "$5"
                printf '[repo]\nsource = %s\n[limits]\ntimeout = 10m\nprocesses = 64\n' "$4"
        } >"$1"
}
repo_new "$T/src-p" "p's file"
repo_new "$T/src-q" "q's file"

# --- P: known (cloister init's folder), never run ----------------------------------
config "$known/p.ini" wsp "$T/s/P" "$T/src-p"

# Q's state inside P's state (its future upper layer).
config "$T/q.ini" wsq "$T/s/P/fs/repo/q" "$T/src-q"
refused mount_refuses_a_state_inside_another_workspaces_state 1 \
        "state '$T/s/P/fs/repo/q' is inside the state '$T/s/P' of another workspace, 'wsp'" \
        "$CLOISTER" mount "$T/q.ini"
refused run_refuses_it_too 125 "inside the state '$T/s/P' of another workspace, 'wsp'" \
        "$CLOISTER" run "$T/q.ini" -- true
[ ! -e "$T/s/P" ]
ok $? "and_nothing_was_made_in_the_others_state"
refused check_reports_it 1 "key 'state' in \[workspace\]: .*another workspace, 'wsp'" \
        "$CLOISTER" check "$T/q.ini"

# Q's state inside P's source work tree; Q's mountpoint inside P's state.
config "$T/q2.ini" wsq2 "$T/src-p/.git/q2" "$T/src-q"
refused a_state_inside_another_workspaces_source_is_refused 1 \
        "inside the \[repo\] source '$T/src-p' of another workspace, 'wsp'" "$CLOISTER" mount "$T/q2.ini"
config "$T/q3.ini" wsq3 "$T/s/Q3" "$T/src-q" "$T/s/P/mnt/inner"
refused a_mountpoint_inside_another_workspaces_state_is_refused 1 \
        "mountpoint '$T/s/P/mnt/inner' is inside the state '$T/s/P' of another workspace, 'wsp'" \
        "$CLOISTER" mount "$T/q3.ini"

# A state that contains another's: Q4's state is P's parent folder.
config "$T/q4.ini" wsq4 "$T/s" "$T/src-q"
refused a_state_containing_another_workspaces_state_is_refused 1 \
        "state '$T/s' contains the state '$T/s/P' of another workspace, 'wsp'" \
        "$CLOISTER" mount "$T/q4.ini"

# Resolved: through a symlink, and through a bind mount.
mkdir -p "$T/s/P"
ln -s "$T/s/P" "$T/link"
config "$T/q5.ini" wsq5 "$T/link/q5" "$T/src-q"
refused a_state_inside_another_workspaces_state_through_a_symlink_is_refused 1 \
        "is inside the state '$T/s/P' of another workspace, 'wsp'" "$CLOISTER" mount "$T/q5.ini"
mkdir -p "$T/bind"
if mount --bind "$T/s/P" "$T/bind" 2>/dev/null; then
        config "$T/q6.ini" wsq6 "$T/bind/q6" "$T/src-q"
        refused a_state_inside_another_workspaces_state_through_a_bind_mount_is_refused 1 \
                "'$T/bind/q6' is inside the state '$T/s/P' of another workspace, 'wsp'" \
                "$CLOISTER" mount "$T/q6.ini"
        umount "$T/bind"
else
        ok 0 "a_state_inside_another_workspaces_state_through_a_bind_mount_is_refused # SKIP no bind mount here"
fi
rmdir "$T/s/P"

# What the agent reads may not hold another's state or broker keys: a [home] seed
# (copied into the home), a [mirror] source; nor the broker dir lie in a source.
config "$T/q7.ini" wsq7 "$T/s/Q7" "$T/src-q"
printf '[home]\nseed = %s\n' "$T/s/P/broker" >>"$T/q7.ini"
refused a_seed_inside_another_workspaces_state_is_refused 1 \
        "\[home\] seed '$T/s/P/broker' is inside the state '$T/s/P' of another workspace, 'wsp'" \
        "$CLOISTER" mount "$T/q7.ini"
config "$T/q8.ini" wsq8 "$T/q8-state" "$T/src-q"
printf '[mirror "all"]\nsource = %s\npath = /opt/all\n' "$T/s" >>"$T/q8.ini"
refused a_mirror_holding_another_workspaces_state_is_refused 1 \
        "\[mirror\] source '$T/s' contains the state '$T/s/P' of another workspace, 'wsp'" \
        "$CLOISTER" mount "$T/q8.ini"
config "$T/q9.ini" wsq9 "$T/s/Q9" "$T/src-q"
printf '[broker]\ndir = %s\n' "$T/src-p/.git/keys" >>"$T/q9.ini"
refused a_broker_dir_inside_another_workspaces_source_is_refused 1 \
        "\[broker\] dir '$T/src-p/.git/keys' is inside the \[repo\] source '$T/src-p'" \
        "$CLOISTER" check "$T/q9.ini"

# The other way round: P, once Q's config is known, contains it.
cp "$T/q.ini" "$known/q.ini"
refused a_workspace_whose_state_contains_a_known_ones_is_refused 1 \
        "state '$T/s/P' contains the state '$T/s/P/fs/repo/q' of another workspace, 'wsq'" \
        "$CLOISTER" mount "$known/p.ini"
rm "$known/q.ini"

# Its own: a state inside its own mountpoint, a mountpoint in its own state's files
# (checked, not mounted: a daemon whose state its own mount hides hangs on itself).
config "$T/own1.ini" own1 "$T/own1/mnt/state" "$T/src-q" "$T/own1/mnt"
refused a_state_inside_its_own_mountpoint_is_refused 1 "is inside its own mountpoint" \
        "$CLOISTER" check "$T/own1.ini"
config "$T/own2.ini" own2 "$T/own2" "$T/src-q" "$T/own2/fs/repo"
refused a_mountpoint_among_its_own_states_files_is_refused 1 \
        "mountpoint '$T/own2/fs/repo' is inside its own state" "$CLOISTER" check "$T/own2.ini"
ln -s "$T/src-q" "$T/srclink"
config "$T/own3.ini" own3 "$T/srclink/.git/st" "$T/src-q" "$T/own3-mnt"
refused a_state_inside_its_own_source_through_a_symlink_is_refused 1 \
        "overlaps its own \[repo\] source '$T/src-q'" "$CLOISTER" mount "$T/own3.ini"

# P itself still mounts and runs.
out=$("$CLOISTER" run "$known/p.ini" -- sh -c 'cat /workspace/a.txt; echo work >/workspace/p-work.txt' 2>&1)
ok $([ "$out" = "p's file" ] && echo 0 || echo 1) "a_workspace_apart_from_the_others_runs" "$out"

# --- fork ---------------------------------------------------------------------------
# (The new configs go to a folder of their own: the configs beside a fork's are known to it.)
F=$T/forks
mkdir -p "$F"
"$CLOISTER" checkpoint "$known/p.ini" cp1 >/dev/null
config "$known/future.ini" future "$T/s/future" "$T/src-q"
refused fork_refuses_the_state_a_known_config_names 2 \
        "the fork's state '$T/s/future' is the state '$T/s/future' of another workspace, 'future'" \
        "$CLOISTER" fork "$known/p.ini" "$F/squat.ini" --from cp1 --name future
[ ! -e "$T/s/future" ] && [ ! -e "$F/squat.ini" ]
ok $? "and_makes_neither_the_state_nor_the_config"
out=$("$CLOISTER" run "$known/future.ini" -- sh -c 'cat /workspace/a.txt; ls /workspace' 2>&1)
ok $([ "$out" = "q's file
a.txt" ] && echo 0 || echo 1) "the_known_workspace_shows_its_own_files_not_the_others_work" "$out"
"$CLOISTER" unmount "$known/future.ini" >/dev/null 2>&1

config "$known/deep.ini" deep "$T/s/dp/inner" "$T/src-q"
refused fork_refuses_a_state_that_contains_a_known_ones 2 "contains the state '$T/s/dp/inner'" \
        "$CLOISTER" fork "$known/p.ini" "$F/dp.ini" --from cp1 --name dp
mkdir -p "$T/s/made-by-hand"
refused fork_refuses_an_existing_directory 1 "exists already" \
        "$CLOISTER" fork "$known/p.ini" "$F/mh.ini" --from cp1 --name made-by-hand

# --state inside the source repository: refused before anything is written.
snap() { (cd "$T/src-p" && find .git -printf '%p %y %m %s\n' | sort && find .git -type f -print0 | sort -z | xargs -0 sha256sum); }
snap >"$T/git-before"
"$CLOISTER" checkpoint --list "$known/p.ini" >"$T/cps-before"
refused fork_refuses_a_state_in_the_source_repository 2 \
        "the fork's state '$T/src-p/.git/fork' is inside the \[repo\] source '$T/src-p'" \
        "$CLOISTER" fork "$known/p.ini" "$F/ingit.ini" --state "$T/src-p/.git/fork"
snap >"$T/git-after"
cmp -s "$T/git-before" "$T/git-after"
ok $? "the_sources_git_is_byte_for_byte_unchanged" "$(diff "$T/git-before" "$T/git-after" | head)"
"$CLOISTER" checkpoint --list "$known/p.ini" >"$T/cps-after"
cmp -s "$T/cps-before" "$T/cps-after"
ok $? "and_no_checkpoint_was_made_for_it" "$(diff "$T/cps-before" "$T/cps-after")"

# A fork with a place of its own is made, and runs.
out=$("$CLOISTER" fork "$known/p.ini" "$F/good.ini" --from cp1 --name good 2>&1)
ok $? "a_fork_with_a_state_of_its_own_is_made" "$out"
out=$("$CLOISTER" run "$F/good.ini" -- cat /workspace/a.txt 2>&1)
ok $([ "$out" = "p's file" ] && echo 0 || echo 1) "and_runs_with_the_parents_files" "$out"
[ ! -e "$T/s/good/fork.partial" ]
ok $? "and_is_whole"

echo "1..$n"
[ "$fails" = 0 ]
