#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# untracked.sh: what git's untracked scan sees in a real `cloister mount`.
#
# - Directory times through the mount: a directory's mtime changes when an
#   entry is made, removed or renamed in it (POSIX), not when a file in it
#   is written or chmodded, and it survives a remount. git's untracked cache
#   and every build tool that watches directories depend on this.
# - A differential run: the same steps (untracked files and directories,
#   nested and ignored ones, removals, a changed .gitignore, a directory of
#   the base moved over another one, a remount) in the workspace and in a
#   native clone, `git status` compared after each. The step that moves a
#   base directory over another is the one git's untracked cache gets wrong
#   in the workspace (docs/workspace-git.md, "The untracked scan"): it
#   fails if the synthesized config ever turns the cache on.
set -u
. "$(dirname "$0")/lib.sh"

CLOISTER=${CLOISTER:?CLOISTER must point at the cloister binary}
need_mount

tmp=$(mktemp -d)
cfg=$tmp/workspace.ini
M=$tmp/mnt
cleanup() {
        force_unmount "$cfg" "$M"
        rm -rf "$tmp"
}
trap cleanup EXIT
git_isolate "$tmp/home"
mkdir -p "$tmp/home"

R=$tmp/source
git init -q -b main "$R"
(
        cd "$R" || exit 1
        # Sizes differ between any two files that a step renames over one
        # another, but for s/: see the last test.
        for d in a m1 m2 m3 m4 m5 m6 m7 m8 m9 m10 m11 m12 p s; do
                mkdir "$d"
                printf '%s one\n' "$d" >"$d/one"
                printf '%s second\n' "$d" >"$d/two"
        done
        mkdir q
        printf 'q: one\n' >q/one
        printf 'q: second\n' >q/two
        printf 'q: third\n' >q/three
        printf 's two\n' >s/two
        mkdir -p c/x/y ign m12/sub
        printf 'sub\n' >m12/sub/f
        printf 'deep\n' >c/x/y/z.txt
        printf '*.log\nbuild/\n' >ign/.gitignore
        printf 'kept\n' >ign/kept.txt
        printf '*.o\n' >.gitignore
)
git -C "$R" add -A
GIT_COMMITTER_DATE=@1700000000 git -C "$R" commit -qm base
T=1700000000

cat >"$cfg" <<EOF
[workspace]
name = untracked-test
state = $tmp/state
mountpoint = $M

[repo]
source = $R
rev = main
path = /workspace
EOF

if ! out=$("$CLOISTER" mount "$cfg" 2>&1); then
        not_ok "cloister_mount_serves_the_workspace"
        printf '# %s\n' "$out"
        finish
fi
ok cloister_mount_serves_the_workspace
W=$M/workspace

# --- directory mtimes -----------------------------------------------------------
# Every directory of the base starts at the commit time, so one change in
# one of them is enough to see whether its mtime moved.
mt() { stat -c %.9Y "$1"; }
changed() { # NAME DIR CMD...: CMD run in W changes DIR's mtime
        local name=$1 dir=$2 before
        shift 2
        before=$(mt "$W/$dir")
        (cd "$W" && "$@") || {
                not_ok "$name"
                echo "#   the command failed: $*"
                return
        }
        if [ "$(mt "$W/$dir")" != "$before" ]; then ok "$name"; else
                not_ok "$name"
                echo "#   mtime of $dir stayed $before after: $*"
        fi
}
unchanged() { # NAME DIR CMD...: CMD run in W leaves DIR's mtime alone
        local name=$1 dir=$2 before
        shift 2
        before=$(mt "$W/$dir")
        (cd "$W" && "$@") && [ "$(mt "$W/$dir")" = "$before" ] && ok "$name" || not_ok "$name"
}

expect_eq base_dirs_are_dated_at_the_commit "$T.000000000" "$(mt "$W/m1")"
changed dir_mtime_changes_on_create m1 touch m1/new
changed dir_mtime_changes_on_unlink m2 rm m2/one
changed dir_mtime_changes_on_rename_out m3 mv m3/one m4/moved
expect_eq dir_mtime_changes_on_rename_in "1" "$([ "$(mt "$W/m4")" != "$T.000000000" ] && echo 1)"
changed dir_mtime_changes_on_rename_over m5 mv m5/one m5/two
changed dir_mtime_changes_on_mkdir m6 mkdir m6/sub
changed dir_mtime_changes_on_symlink m7 ln -s one m7/link
changed dir_mtime_changes_on_hard_link m8 ln m8/one m8/hard
changed dir_mtime_changes_on_mkfifo m9 mkfifo m9/fifo
unchanged dir_mtime_stays_on_file_write m10 sh -c 'echo more >>m10/one'
unchanged dir_mtime_stays_on_chmod m11 chmod 600 m11/two
sleep 0.05 # past the upper filesystem's timestamp granularity
changed dir_mtime_changes_on_rmdir m6 rmdir m6/sub
changed dir_mtime_changes_on_rename_of_a_subdir m12 mv m12/sub m12/sub2
before_remount=$(cd "$W" && stat -c '%n %.9Y' m* | LC_ALL=C sort)

# --- git status against a native clone -------------------------------------------
N=$tmp/native
git clone -q "$R" "$N"
# Bring the native clone to where the workspace is now.
(cd "$N" && touch m1/new && rm m2/one && mv m3/one m4/moved && mv m5/one m5/two &&
        ln -s one m7/link && ln m8/one m8/hard && mkfifo m9/fifo &&
        echo more >>m10/one && chmod 600 m11/two && mv m12/sub m12/sub2)

same_status() { # NAME: every form of git status is the same in both
        local name=$1 args ws nat
        for args in "" "--untracked-files=all" "--ignored" "--untracked-files=all --ignored"; do
                # shellcheck disable=SC2086 # args is a list of options
                ws=$(git -C "$W" status --porcelain $args 2>&1)
                # shellcheck disable=SC2086
                nat=$(git -C "$N" status --porcelain $args 2>&1)
                if [ "$ws" != "$nat" ]; then
                        if [ -n "${TODO:-}" ]; then # a known bug: TAP does not count it
                                TAP_N=$((TAP_N + 1))
                                echo "not ok $TAP_N - $name$TODO"
                        else
                                not_ok "$name"
                        fi
                        echo "#   git status --porcelain $args"
                        diff <(echo "$nat") <(echo "$ws") | sed 's/^/#   /' | head -20
                        return
                fi
        done
        ok "$name${TODO:-}"
}
both() { # CMD: run the shell snippet CMD in the workspace and in the native clone
        (cd "$W" && sh -ec "$1") && (cd "$N" && sh -ec "$1")
}

same_status status_matches_native_after_namespace_changes
# Twice, so that whatever git keeps between runs has been written once.
same_status status_matches_native_when_run_again

both 'echo u >a/new.txt; mkdir -p c/x/newdir/deep; echo n >c/x/newdir/deep/f
        echo o >a/junk.o; mkdir -p ign/build; echo b >ign/build/out; echo l >ign/x.log'
same_status status_shows_new_untracked_and_ignored_files_like_native
both 'rm a/new.txt; echo n2 >c/x/y/n2'
same_status status_forgets_a_removed_untracked_file
both 'rm -r c/x/newdir; rm ign/x.log'
same_status status_forgets_a_removed_nested_untracked_dir
both 'printf "*.log\nbuild/\n*.tmp\n" >ign/.gitignore; echo t >ign/t.tmp; echo t >ign/t.txt'
same_status status_follows_a_changed_gitignore
both 'mkdir -p c/x/y/e1/e2'
same_status status_hides_empty_untracked_dirs_like_native
# The case git's untracked cache gets wrong here: "p" is replaced by "q",
# both untouched directories of the base, so the new "p" has the same mtime
# (the commit's) and size as the old one, and only its inode and ctime differ;
# git's untracked cache, which would key on those, is off in the workspace.
both 'rm -r p && mv q p'
same_status status_sees_a_base_dir_moved_over_another
both 'mv c/x c/x2'
same_status status_follows_a_renamed_dir_with_untracked_files

check unmount_succeeds "$CLOISTER" unmount "$cfg"
check remount_succeeds "$CLOISTER" mount "$cfg"
expect_eq dir_mtimes_survive_remount "$before_remount" \
        "$(cd "$W" && stat -c '%n %.9Y' m* | LC_ALL=C sort)"
same_status status_matches_native_after_remount
both 'echo late >m1/late; rm -r c/x2/y/e1'
same_status status_sees_changes_after_remount

# A base file renamed over another base file of the same size keeps the
# mtime (the commit's) and the size that the index has for the name it
# takes: git's default checks see its inode number (and ctime) differ, as
# native git does.
both 'mv s/one s/two'
same_status status_sees_a_base_file_renamed_over_one_of_the_same_size
check final_unmount_succeeds "$CLOISTER" unmount "$cfg"

finish
