#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# source-kinds.sh: gitdir_prepare() with the sources and revisions a config
# may name (bare repository, a `git clone --shared` whose objects live partly
# in another repository, a tag or commit id instead of a branch, a repo path
# deeper than /workspace, a submodule entry, a commit dated in the future),
# and the refusals: non-empty destination, unknown revision, not a repository.
set -u
. "$(dirname "$0")/lib.sh"

tool=${GITDIR_TOOL:?GITDIR_TOOL must point at gitdir-tool}
command -v git >/dev/null || skip_all "git is not installed"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git_isolate "$tmp/home"
mkdir -p "$tmp/home"

R=$tmp/source
git init -q -b trunk "$R"
mkdir -p "$R/lib"
printf 'one\n' >"$R/lib/a.txt"
printf 'two\n' >"$R/b.txt"
git -C "$R" add -A
GIT_COMMITTER_DATE=@1500000000 git -C "$R" commit -qm first
git -C "$R" tag -a rel-1 -m "release 1"
first=$(git -C "$R" rev-parse HEAD)
printf 'three\n' >>"$R/b.txt"
# A submodule entry: the fs shows it as an empty directory, as archive does.
git -C "$R" add -A
git -C "$R" update-index --add --cacheinfo "160000,$first,vendor/mod"
GIT_COMMITTER_DATE=@1600000000 git -C "$R" commit -qm second

# mount_like SOURCE REV MNT REPO_PATH [NAME]: lay out MNT like the fs mount and
# prepare MNT/REPO_PATH/.git; the object dir comes from the gitdir helper.
mount_like() {
        local src=$1 rev=$2 mnt=$3 rp=$4 name=${5:-}
        make_checkout "$src" "$rev" "$mnt$rp" || return 1
        mkdir -p "$mnt/.cloister" "$mnt$rp/.git" || return 1
        ln -s "$("$tool" objects "$src")" "$mnt/.cloister/objects" || return 1
        "$tool" prepare --source "$src" --rev "$rev" --repo-path "$rp" \
                ${name:+--name "$name"} --dest "$mnt$rp/.git"
}

clean() {
        [ -z "$(git -C "$1" status --porcelain --untracked-files=all 2>&1)" ]
}

# --- a bare source, checked out at an annotated tag ---------------------------
B=$tmp/bare.git
git clone -q --bare "$R" "$B"
B_before=$(tree_sum "$B")
check bare_source_prepares mount_like "$B" rel-1 "$tmp/m1" /workspace ws1
check bare_source_status_is_clean clean "$tmp/m1/workspace"
expect_eq tag_revision_starts_a_cloister_branch "refs/heads/cloister/ws1" \
        "$(git -C "$tmp/m1/workspace" symbolic-ref HEAD)"
expect_eq tag_revision_head_is_the_tagged_commit "$first" \
        "$(git -C "$tmp/m1/workspace" rev-parse HEAD)"
expect_eq bare_source_is_unchanged "$B_before" "$(tree_sum "$B")"

# --- a commit id, without a workspace name: the fixed fallback branch ----------
check commit_id_revision_prepares mount_like "$R" "$first" "$tmp/m2" /workspace
expect_eq commit_id_revision_uses_the_fallback_branch "refs/heads/cloister/workspace" \
        "$(git -C "$tmp/m2/workspace" symbolic-ref HEAD)"

# --- HEAD of a work tree names its branch; submodule entry; deep repo path -----
check deep_repo_path_prepares mount_like "$R" HEAD "$tmp/m3" /src/project
expect_eq deep_repo_path_alternates_climb_to_the_mount "../../../../.cloister/objects" \
        "$(cat "$tmp/m3/src/project/.git/objects/info/alternates")"
check deep_repo_path_status_is_clean clean "$tmp/m3/src/project"
check submodule_entry_is_in_the_index \
        sh -c "git -C '$tmp/m3/src/project' ls-files -s vendor/mod | grep -q '^160000'"
expect_eq head_revision_keeps_the_source_branch "refs/heads/trunk" \
        "$(git -C "$tmp/m3/src/project" symbolic-ref HEAD)"
expect_eq deep_repo_path_log_reads_objects_through_alternates "second first" \
        "$(git -C "$tmp/m3/src/project" log --format=%s | tr '\n' ' ' | sed 's/ $//')"

# --- a `git clone --shared`: the source's own alternates chain ------------------
S=$tmp/shared
git clone -q --shared "$R" "$S"
printf 'shared change\n' >>"$S/b.txt"
GIT_COMMITTER_DATE=@1650000000 git -C "$S" commit -qam "in the shared clone"
check shared_clone_has_an_alternates_chain test -s "$S/.git/objects/info/alternates"
check shared_clone_source_prepares mount_like "$S" HEAD "$tmp/m4" /workspace
check shared_clone_status_is_clean clean "$tmp/m4/workspace"
expect_eq shared_clone_history_spans_the_chain "in the shared clone|second|first" \
        "$(git -C "$tmp/m4/workspace" log --format=%s | paste -sd'|')"

# --- a linked worktree (`git worktree add`): objects live in the common dir ----
git -C "$R" branch -q wt-branch "$first"
git -C "$R" worktree add -q "$tmp/linked" wt-branch
expect_eq linked_worktree_objects_are_the_common_dirs "$R/.git/objects" \
        "$("$tool" objects "$tmp/linked")"
check linked_worktree_source_prepares mount_like "$tmp/linked" HEAD "$tmp/m6" /workspace
expect_eq linked_worktree_head_keeps_its_branch "refs/heads/wt-branch" \
        "$(git -C "$tmp/m6/workspace" symbolic-ref HEAD)"
check linked_worktree_status_is_clean clean "$tmp/m6/workspace"

# --- a base commit dated in the future: the index must still be newer ---------
F=$tmp/future
git init -q -b main "$F"
printf 'x\n' >"$F/x"
git -C "$F" add x
future=$(($(date +%s) + 86400))
GIT_COMMITTER_DATE="@$future" git -C "$F" commit -qm future
check future_commit_prepares mount_like "$F" HEAD "$tmp/m5" /workspace
check future_commit_index_is_dated_after_its_entries \
        test "$(stat -c %Y "$tmp/m5/workspace/.git/index")" -gt "$future"
check future_commit_status_is_clean clean "$tmp/m5/workspace"

# --- a hand-made tree with paths git refuses to track (".GIT", an NTFS alias)
E=$tmp/evil
git init -q -b main "$E"
blob=$(printf 'x\n' | git -C "$E" hash-object -w --stdin)
sub=$(printf '100644 blob %s\tconfig\n' "$blob" | git -C "$E" mktree)
tree=$(printf '100644 blob %s\tok.txt\n040000 tree %s\t.GIT\n100644 blob %s\tgit~1\n' \
        "$blob" "$sub" "$blob" | git -C "$E" mktree)
git -C "$E" update-ref refs/heads/main "$(git -C "$E" commit-tree -m evil "$tree")"
mkdir -p "$tmp/e0"
check untrackable_paths_do_not_fail_the_prepare \
        "$tool" prepare --source "$E" --rev main --dest "$tmp/e0"
expect_eq untrackable_paths_are_left_out_of_the_index "ok.txt" \
        "$(git --git-dir="$tmp/e0" ls-files 2>&1)"

# --- helpers ------------------------------------------------------------------
expect_eq commit_time_is_the_committer_time "$(git -C "$R" log -1 --format=%ct HEAD)" \
        "$("$tool" commit-time "$R" HEAD)"
expect_eq commit_time_of_a_tag_is_its_commits_time "1500000000" \
        "$("$tool" commit-time "$R" rel-1)"
expect_eq bare_objects_dir "$B/objects" "$("$tool" objects "$B")"
expect_eq alternates_for_workspace "../../../.cloister/objects" "$("$tool" alternates /workspace)"
for bad in workspace /a//b /a/../b /a/./b /a/ ""; do
        check "alternates_path_rejects_'$bad'" sh -c "! '$tool' alternates '$bad' 2>/dev/null"
done

# --- refusals: a clear error, and nothing that looks like a repository ---------
mkdir -p "$tmp/full"
printf 'keep\n' >"$tmp/full/precious"
out=$("$tool" prepare --source "$R" --dest "$tmp/full" 2>&1)
check non_empty_destination_is_refused test $? -ne 0
check non_empty_refusal_says_why sh -c "printf '%s' \"\$1\" | grep -q 'not empty'" _ "$out"
expect_eq non_empty_destination_is_left_alone "precious" "$(ls -A "$tmp/full")"

mkdir -p "$tmp/e1"
out=$("$tool" prepare --source "$R" --rev no-such-rev --mtime 0 --dest "$tmp/e1" 2>&1)
check unknown_revision_is_refused test $? -ne 0
check unknown_revision_error_names_it sh -c "printf '%s' \"\$1\" | grep -q no-such-rev" _ "$out"
expect_eq unknown_revision_writes_nothing "" "$(ls -A "$tmp/e1")"

mkdir -p "$tmp/e2" "$tmp/plain"
out=$("$tool" prepare --source "$tmp/plain" --mtime 0 --dest "$tmp/e2" 2>&1)
check plain_directory_source_is_refused test $? -ne 0
expect_eq plain_directory_source_writes_nothing "" "$(ls -A "$tmp/e2")"

mkdir -p "$tmp/e3"
out=$("$tool" prepare --source "$R" --alternates /abs/objects --mtime 0 --dest "$tmp/e3" 2>&1)
check absolute_alternates_are_refused test $? -ne 0

finish
