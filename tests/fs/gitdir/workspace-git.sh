#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# workspace-git.sh: the `.git` that gitdir_prepare() writes makes a plain
# checkout a working git repository, checked with the real git binary:
# clean status without reading data, history, diff/add/commit/switch/stash
# with every write inside the workspace, a sanitized config although the
# source's config is hostile, and a source that is byte-for-byte unchanged.
#
# No FUSE here: the layout imitates the mount (<mnt>/workspace holds the
# files, dated like lower files; <mnt>/.cloister/objects is a symlink to the
# source's objects), so the alternates path is the one the fs will use.
set -u
. "$(dirname "$0")/lib.sh"

tool=${GITDIR_TOOL:?GITDIR_TOOL must point at gitdir-tool}
command -v git >/dev/null || skip_all "git is not installed"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git_isolate "$tmp/home"
mkdir -p "$tmp/home"

# --- the source repository: two commits on main, a side branch, tags ------
R=$tmp/source
git init -q -b main "$R"
mkdir -p "$R/src/deep/er" "$R/docs"
printf 'hello\n' >"$R/README"
printf '#!/bin/sh\necho run\n' >"$R/run.sh"
chmod +x "$R/run.sh"
ln -s README "$R/readme-link"
ln -s ../../README "$R/src/deep/up"
: >"$R/empty"
printf 'int x;\n' >"$R/src/deep/er/x.c"
printf 'spaced\n' >"$R/docs/with space.txt"
printf 'unicode\n' >"$R/docs/ünï.md"
git -C "$R" add -A
GIT_COMMITTER_DATE=@1600000000 git -C "$R" commit -qm first
git -C "$R" tag v1
git -C "$R" branch side
printf 'second line\n' >>"$R/README"
printf 'int y;\n' >"$R/src/y.c"
git -C "$R" add -A
GIT_COMMITTER_DATE=@1700000000 git -C "$R" commit -qm second
git -C "$R" tag -a v2 -m "release 2"
base=$(git -C "$R" rev-parse HEAD)
history=$(git -C "$R" rev-list main)
T=$(git -C "$R" log -1 --format=%ct main)

M=$tmp/mnt
W=$M/workspace
make_checkout "$R" main "$W"
mkdir -p "$M/.cloister"
objects=$("$tool" objects "$R")
expect_eq source_objects_helper_names_the_object_dir "$R/.git/objects" "$objects"
ln -s "$objects" "$M/.cloister/objects"

# --- now make the source's config and hooks hostile -----------------------
marker=$tmp/markers
mkdir -p "$marker" "$tmp/hosthooks"
for h in pre-commit post-commit post-checkout pre-auto-gc reference-transaction; do
        printf '#!/bin/sh\ntouch %s/hook-%s\n' "$marker" "$h" >"$R/.git/hooks/$h"
        cp "$R/.git/hooks/$h" "$tmp/hosthooks/$h"
        chmod +x "$R/.git/hooks/$h" "$tmp/hosthooks/$h"
done
printf '#!/bin/sh\ntouch %s/fsmonitor\n' "$marker" >"$tmp/fsmonitor"
chmod +x "$tmp/fsmonitor"
printf '[alias]\n\tst = !touch %s/include\n[user]\n\tname = Included\n' "$marker" \
        >"$tmp/hostile-include"
cat >>"$R/.git/config" <<EOF
[credential]
	helper = store --file=$tmp/stolen-credentials
[url "https://user:SECRETTOKEN@example.com/"]
	insteadOf = https://example.com/
[include]
	path = $tmp/hostile-include
[includeIf "gitdir:/"]
	path = $tmp/hostile-include
[core]
	hooksPath = $tmp/hosthooks
	fsmonitor = $tmp/fsmonitor
	sshCommand = touch $marker/ssh
[remote "origin"]
	url = https://user:SECRETTOKEN@example.com/repo.git
[user]
	name = Host User
	email = host@example.com
EOF

src_before=$(tree_sum "$R")

# --- prepare ----------------------------------------------------------------
mkdir "$W/.git"
check prepare_fills_an_empty_git_dir \
        "$tool" prepare --source "$R" --rev main --repo-path /workspace --dest "$W/.git"
expect_eq alternates_is_relative_to_the_mount \
        "../../../.cloister/objects" "$(cat "$W/.git/objects/info/alternates")"

# --- right after mount ------------------------------------------------------
# The index as written, before any git command refreshes it.
bad=$(git -C "$W" ls-files --debug | awk -v t="$T" '
        /^  ctime: / && $2 != t ":0" { print "ctime " $2 }
        /^  mtime: / && $2 != t ":0" { print "mtime " $2 }')
expect_eq index_entries_carry_the_lower_mtime "" "$bad"
expect_eq index_sizes_are_blob_sizes "18 6" \
        "$(git -C "$W" ls-files --debug README readme-link | awk '/size:/ { printf "%s%s", s, $2; s=" " }')"
check index_mtime_is_after_its_entries test "$(stat -c %Y "$W/.git/index")" -gt "$T"

# Same size, same mtime, different bytes (cp -p, touch -r): git's default
# checks see that the ctime is not the index's, and read the file. (A plain
# checkout can't show the mount's fixed ctimes and inode numbers, so here git
# reads every file once; mount-git.sh checks that on a real mount it reads
# none.)
cp "$W/src/deep/er/x.c" "$tmp/x.c.orig"
printf 'int z;\n' >"$W/src/deep/er/x.c"
touch -d "@$T" "$W/src/deep/er/x.c"
expect_eq status_sees_a_same_size_edit_that_keeps_the_mtime " M src/deep/er/x.c" \
        "$(git -C "$W" status --porcelain)"
cp "$tmp/x.c.orig" "$W/src/deep/er/x.c"
touch -d "@$T" "$W/src/deep/er/x.c"
expect_eq status_is_clean_once_it_is_put_back "" \
        "$(git -C "$W" status --porcelain --untracked-files=all 2>&1)"

expect_eq log_shows_the_history_up_to_the_revision "$history" "$(git -C "$W" rev-list HEAD)"
expect_eq head_is_on_the_source_branch "refs/heads/main" "$(git -C "$W" symbolic-ref HEAD)"
expect_eq tags_are_visible_for_describe "v2" "$(git -C "$W" describe --tags)"
expect_eq annotated_tags_peel "$(git -C "$R" rev-parse 'v2^{commit}')" \
        "$(git -C "$W" rev-parse 'v2^{commit}')"
expect_eq objects_are_not_copied "" \
        "$(find "$W/.git/objects" -type f ! -path '*/info/*')"
check fsck_finds_all_objects_through_alternates \
        git -C "$W" fsck --connectivity-only --no-progress

# --- the agent works ---------------------------------------------------------
printf 'agent edit\n' >>"$W/README"
check diff_shows_the_agents_change sh -c "git -C '$W' diff | grep -q '^+agent edit'"
check add_stages_the_change git -C "$W" add README
# No identity in the environment: the agent's commits use the config's.
check commit_records_the_change env -u GIT_AUTHOR_NAME -u GIT_AUTHOR_EMAIL \
        -u GIT_COMMITTER_NAME -u GIT_COMMITTER_EMAIL git -C "$W" commit -qm "agent commit"
expect_eq commit_parent_is_the_base "$base" "$(git -C "$W" rev-parse HEAD^)"
expect_eq commit_author_is_the_agent_placeholder "Cloister Agent <agent@cloister.invalid>" \
        "$(git -C "$W" log -1 --format='%an <%ae>')"
check switch_c_creates_a_branch git -C "$W" switch -q -c agent/topic
expect_eq switch_c_moves_head "refs/heads/agent/topic" "$(git -C "$W" symbolic-ref HEAD)"
printf 'stashed\n' >>"$W/src/y.c"
check stash_saves_the_change git -C "$W" stash -q
expect_eq stash_cleans_the_tree "" "$(git -C "$W" status --porcelain)"
check stash_pop_restores_the_change sh -c "git -C '$W' stash pop -q && grep -q stashed '$W/src/y.c'"
check switch_back_to_the_base_branch sh -c "git -C '$W' stash -q && git -C '$W' switch -q main"

expect_eq source_hooks_never_run "" "$(ls "$marker")"
expect_eq source_is_unchanged_after_agent_git_work "$src_before" "$(tree_sum "$R")"
c=$(git -C "$W" rev-parse agent/topic)
check new_objects_are_written_in_the_workspace test -f "$W/.git/objects/${c:0:2}/${c:2}"
check new_objects_are_not_in_the_source test ! -e "$R/.git/objects/${c:0:2}/${c:2}"

# --- sanitized config ----------------------------------------------------------
cfg=$(git config --file "$W/.git/config" --list)
expect_eq config_has_no_url_rewrites "" "$(printf '%s\n' "$cfg" | grep -i '^url\.')"
expect_eq config_has_no_includes "" "$(printf '%s\n' "$cfg" | grep -i '^include')"
expect_eq config_has_no_remotes "" "$(printf '%s\n' "$cfg" | grep -i '^remote\.')"
expect_eq config_credential_helper_is_reset "credential.helper=" \
        "$(printf '%s\n' "$cfg" | grep -i '^credential\.')"
expect_eq config_disables_hooks "core.hookspath=/dev/null" \
        "$(printf '%s\n' "$cfg" | grep -i '^core\.hookspath')"
expect_eq config_disables_fsmonitor "core.fsmonitor=false" \
        "$(printf '%s\n' "$cfg" | grep -i '^core\.fsmonitor')"
expect_eq config_has_no_ssh_command "" "$(printf '%s\n' "$cfg" | grep -i 'sshcommand')"
expect_eq config_mentions_no_host_path_or_secret "" \
        "$(grep -e SECRETTOKEN -e "$tmp" -e 'Host User' "$W/.git/config")"
expect_eq effective_config_comes_only_from_the_workspace "" \
        "$(git -C "$W" config --show-origin --list | grep -v "file:.git/config")"
expect_eq git_keeps_its_default_stat_checks " " \
        "$(git -C "$W" config core.checkStat) $(git -C "$W" config core.trustctime)"
expect_eq source_fsmonitor_include_and_ssh_never_ran "" "$(ls "$marker")"

finish
