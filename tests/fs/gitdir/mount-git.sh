#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# mount-git.sh: the `.git` inside a real `cloister mount`. Right after the
# mount git status is clean without opening a file and git log shows the
# history; diff/add/commit/switch -c/stash work through FUSE; the source
# repository (with a hostile config) is byte-for-byte unchanged; and the
# agent's git work survives an unmount and a second mount.
set -u
. "$(dirname "$0")/lib.sh"

CLOISTER=${CLOISTER:?CLOISTER must point at the cloister binary}
need_mount

tmp=$(mktemp -d)
chmod 0755 "$tmp" # the agent's uid reaches the mount below (agent_prefix)
cfg=$tmp/workspace.ini
M=$tmp/mnt
cleanup() {
        force_unmount "$cfg" "$M"
        force_unmount "$tmp/attrs.ini" "$tmp/attrs-mnt"
        rm -rf "$tmp"
}
trap cleanup EXIT
git_isolate "$tmp/home"
mkdir -p "$tmp/home"

R=$tmp/source
git init -q -b main "$R"
mkdir -p "$R/src/deep"
printf 'hello\n' >"$R/README"
printf '#!/bin/sh\necho run\n' >"$R/run.sh"
chmod +x "$R/run.sh"
ln -s README "$R/readme-link"
printf 'int x;\n' >"$R/src/deep/x.c"
git -C "$R" add -A
GIT_COMMITTER_DATE=@1600000000 git -C "$R" commit -qm first
printf 'int y;\n' >"$R/src/y.c"
git -C "$R" add -A
GIT_COMMITTER_DATE=@1700000000 git -C "$R" commit -qm second
git -C "$R" tag -a v2 -m "release 2"
history=$(git -C "$R" rev-list main)
base=$(git -C "$R" rev-parse main)
T=1700000000

marker=$tmp/markers
mkdir -p "$marker"
printf '#!/bin/sh\ntouch %s/hook\n' "$marker" >"$R/.git/hooks/pre-commit"
chmod +x "$R/.git/hooks/pre-commit"
cat >>"$R/.git/config" <<EOF
[credential]
	helper = store --file=$tmp/stolen
[url "https://user:SECRETTOKEN@example.com/"]
	insteadOf = https://example.com/
[core]
	fsmonitor = touch $marker/fsmonitor
EOF
src_before=$(tree_sum "$R")

cat >"$cfg" <<EOF
[workspace]
name = gitdir-test
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

check dot_git_exists_right_after_mount test -f "$W/.git/HEAD"
check source_objects_are_exposed_for_alternates test -d "$M/.cloister/objects"
expect_eq lower_files_are_dated_at_the_base_commit "$T" "$(stat -c %Y "$W/src/deep/x.c")"
# First as the agent: git on the host (another owner) refreshes the index.
agent_prefix "$W"
check_no_data_read status_as_the_agent_opens_no_work_tree_file "$W" \
        "${AGENT[@]}" git -C "$W" status --porcelain
expect_eq status_as_the_agent_is_clean "" \
        "$("${AGENT[@]}" git -C "$W" status --porcelain --untracked-files=all 2>&1)"
expect_eq status_is_clean_right_after_mount "" \
        "$(git -C "$W" status --porcelain --untracked-files=all 2>&1)"
# An edit that keeps the size and puts the mtime back (cp -p, touch -r, tar)
# changes the ctime, which git compares: seen, by the agent and on the host.
cp -p "$W/src/deep/x.c" "$tmp/x.c.orig"
tr 'a-z' 'b-za' <"$tmp/x.c.orig" >"$W/src/deep/x.c"
touch -r "$tmp/x.c.orig" "$W/src/deep/x.c"
expect_eq status_as_the_agent_sees_a_same_size_edit_that_keeps_the_mtime " M src/deep/x.c" \
        "$("${AGENT[@]}" git -C "$W" status --porcelain 2>&1)"
expect_eq status_on_the_host_sees_it_too " M src/deep/x.c" "$(git -C "$W" status --porcelain 2>&1)"
cp -p "$tmp/x.c.orig" "$W/src/deep/x.c"
expect_eq status_is_clean_again_once_it_is_put_back "" \
        "$("${AGENT[@]}" git -C "$W" status --porcelain 2>&1)"
expect_eq log_shows_the_history "$history" "$(git -C "$W" rev-list HEAD 2>&1)"
expect_eq head_is_on_the_source_branch "refs/heads/main" "$(git -C "$W" symbolic-ref HEAD 2>&1)"
expect_eq tags_are_visible "v2" "$(git -C "$W" describe --tags 2>&1)"

printf 'agent edit\n' >>"$W/README"
check diff_shows_the_agents_change sh -c "git -C '$W' diff | grep -q '^+agent edit'"
check add_and_commit_work sh -c "git -C '$W' add README && git -C '$W' commit -qm 'agent commit'"
expect_eq commit_parent_is_the_base "$base" "$(git -C "$W" rev-parse HEAD^ 2>&1)"
check switch_c_creates_a_branch git -C "$W" switch -q -c agent/topic
printf 'stashed\n' >>"$W/src/y.c"
check stash_and_pop_round_trip sh -c "git -C '$W' stash -q && [ -z \"\$(git -C '$W' status --porcelain)\" ] &&
        git -C '$W' stash pop -q && grep -q stashed '$W/src/y.c'"
expect_eq status_shows_only_the_agents_change " M src/y.c" \
        "$(git -C "$W" status --porcelain 2>&1)"
agent_head=$(git -C "$W" rev-parse HEAD)

expect_eq source_hooks_and_fsmonitor_never_run "" "$(ls "$marker")"
expect_eq source_is_unchanged "$src_before" "$(tree_sum "$R")"
expect_eq config_has_no_secrets_from_the_source "" \
        "$(grep -e SECRETTOKEN -e stolen -e fsmonitor.*touch "$W/.git/config")"

# --- inside the sandbox: the relative alternates resolve there too -----------
skip_sandbox() {
        local t
        for t in sandbox_status_is_clean sandbox_log_reads_objects_through_alternates \
                sandbox_commit_works sandbox_status_sees_edits_that_keep_size_and_mtime; do
                TAP_N=$((TAP_N + 1))
                echo "ok $TAP_N - $t # SKIP $1"
        done
}
if "$CLOISTER" run --help 2>&1 | grep -q "not available"; then
        skip_sandbox "cloister run is not available in this build"
elif ! command -v bwrap >/dev/null; then
        skip_sandbox "bubblewrap is not installed"
elif ! "$CLOISTER" run "$cfg" -- true >/dev/null 2>&1; then
        skip_sandbox "cloister run cannot start a sandbox here"
else
        # As root, what this test's git made above through the mount is root's,
        # as on a local filesystem (object dirs 0755): hand it back to the
        # agent's host uid, as root would before letting the agent work on.
        agent=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1])).get("sandbox", {}).get("host_uid", ""))' "$M/.cloister/workspace")
        [ -z "$agent" ] || chown -R "$agent:$agent" "$W"
        inside() { "$CLOISTER" run "$cfg" -- "$@" 2>&1; }
        expect_eq sandbox_status_is_clean " M src/y.c" \
                "$(inside git -C /workspace status --porcelain)"
        expect_eq sandbox_log_reads_objects_through_alternates "$agent_head" \
                "$(inside git -C /workspace log -1 --format=%H)"
        check sandbox_commit_works sh -c "'$CLOISTER' run '$cfg' -- git -C /workspace commit -qam 'from the sandbox' >/dev/null 2>&1 &&
                [ \"\$(git -C '$W' log -1 --format=%s)\" = 'from the sandbox' ]"
        agent_head=$(git -C "$W" rev-parse HEAD)
        # cp -p, touch -r and tar keep the size and put the mtime back: git
        # inside sees the ctime (and, for a file moved over another, the
        # inode number) that differ, as it would natively. Like native git
        # (built, as Debian's is, without USE_NSEC), it compares whole
        # seconds: the edit must come in a later second than the index last
        # recorded the file (the commit just above), so wait for the clock
        # to turn one.
        now=$(date +%s)
        while [ "$(date +%s)" = "$now" ]; do sleep 0.05; done
        expect_eq sandbox_status_sees_edits_that_keep_size_and_mtime " M README| M run.sh" \
                "$(inside sh -c 'cd /workspace && cp -p README /tmp/r && printf "HELLO\n" >README &&
                        touch -r /tmp/r README && tr a-z A-Z <run.sh >/tmp/s && cp -p run.sh /tmp/t &&
                        cat /tmp/s >run.sh && touch -r /tmp/t run.sh && git status --porcelain' | tr '\n' '|' | sed 's/|$//')"
        inside git -C /workspace checkout -q -- README run.sh >/dev/null
        expect_eq source_is_unchanged_after_sandbox_git "$src_before" "$(tree_sum "$R")"
fi

# --- unmount and mount the same state again ------------------------------------
git -C "$W" status --porcelain >"$tmp/status-before-unmount" 2>&1
check unmount_succeeds "$CLOISTER" unmount "$cfg"
check remount_succeeds "$CLOISTER" mount "$cfg"
expect_eq agent_commits_survive_remount "$agent_head" "$(git -C "$W" rev-parse HEAD 2>&1)"
expect_eq agent_branch_survives_remount "refs/heads/agent/topic" \
        "$(git -C "$W" symbolic-ref HEAD 2>&1)"
expect_eq worktree_state_survives_remount "$(cat "$tmp/status-before-unmount")" \
        "$(git -C "$W" status --porcelain 2>&1)"
expect_eq source_is_unchanged_after_remount "$src_before" "$(tree_sum "$R")"
check final_unmount_succeeds "$CLOISTER" unmount "$cfg"

# --- attributes that cannot convert cost no data read -------------------------
# git.git's kind of .gitattributes: whitespace=, diff=, text and eol=lf
# rules over every file, one eol=crlf rule, and a folder's own attributes.
# The fresh workspace's index has every size right without inflating a blob
# that does not convert, so the agent's first git status is clean, opens no
# work tree file and leaves the index as it was built; the blob cache holds
# the one converted file and nothing else (docs/workspace-git.md).
A=$tmp/attrs-source
git init -q -b main "$A"
mkdir -p "$A/sub" "$A/t"
cat >"$A/.gitattributes" <<'GA'
* whitespace=!indent,trail,space
*.[ch] whitespace=indent,trail,space diff=cpp
*.sh text eol=lf
*.bat text eol=crlf
/t/*.sh conflict-marker-size=32
GA
printf '*.txt text -whitespace\n' >"$A/sub/.gitattributes"
printf 'int x;\n' >"$A/a.c"
printf '#!/bin/sh\necho a\n' >"$A/t/t0001.sh"
printf 'echo off\nrem two\n' >"$A/w.bat"
printf 'plain\ntext\n' >"$A/sub/n.txt"
printf 'no attributes here\n' >"$A/README"
git -C "$A" add -A
GIT_COMMITTER_DATE=@1700000000 git -C "$A" commit -qm attrs
acfg=$tmp/attrs.ini
AM=$tmp/attrs-mnt
cat >"$acfg" <<EOF
[workspace]
name = gitdir-attrs
state = $tmp/attrs-state
mountpoint = $AM

[repo]
source = $A
rev = main
path = /workspace
EOF
check mount_a_workspace_with_attributes "$CLOISTER" mount "$acfg"
AW=$AM/workspace
index_sum=$(sha256sum <"$AW/.git/index") # waits for the index to be built
agent_prefix "$AW"
check_no_data_read first_status_with_attributes_opens_no_work_tree_file "$AW" \
        "${AGENT[@]}" git -C "$AW" status --porcelain
expect_eq first_status_with_attributes_is_clean "" \
        "$("${AGENT[@]}" git -C "$AW" status --porcelain --untracked-files=all 2>&1)"
expect_eq status_as_the_agent_leaves_the_built_index_as_it_was "$index_sum" \
        "$(sha256sum <"$AW/.git/index")"
expect_eq only_the_converted_blob_was_inflated "$(git -C "$A" rev-parse HEAD:w.bat)" \
        "$(cd "$tmp/attrs-state/fs/cache" && ls | grep -v -e '^gitconfig$' -e '^sizes$' | sed 's/\..*//')"
expect_eq converted_file_is_crlf_as_a_checkout_writes_it "$(printf 'echo off\r\nrem two\r\n' | od -c)" \
        "$(od -c <"$AW/w.bat")"

# --- the blob sizes the build learned outlive the mount -----------------------
# The build writes every blob's size to the blob cache (fs/lower/lower-sizes.c),
# sorted by id: a daemon started on this state sizes a file from it, not
# from an object header, which walks the blob's delta chain in the pack.
sizes_file=$tmp/attrs-state/fs/cache/sizes
expect_eq build_keeps_one_size_per_blob "$(( 16 + 28 * $(git -C "$A" ls-tree -r HEAD | awk '{ print $3 }' | sort -u | wc -l) ))" \
        "$(stat -c %s "$sizes_file" 2>&1)"
# A size changed in the file (by hand, as only a test would) is what a
# remounted daemon shows for a.c: the file is what it reads. Put back, and
# then replaced by one that is not ours, the headers give the right size.
a_oid=$(git -C "$A" rev-parse HEAD:a.c)
cp "$sizes_file" "$tmp/sizes.good"
python3 - "$sizes_file" "$a_oid" <<'PY'
import sys
path, oid = sys.argv[1], bytes.fromhex(sys.argv[2])
b = bytearray(open(path, "rb").read())
for off in range(16, len(b), 28):
        if b[off:off + 20] == oid:
                b[off + 20:off + 28] = (12345).to_bytes(8, "little")
open(path, "wb").write(b)
PY
check attrs_unmount_for_the_kept_sizes "$CLOISTER" unmount "$acfg"
check attrs_mount_with_the_kept_sizes "$CLOISTER" mount "$acfg"
expect_eq a_remounted_daemon_sizes_from_the_kept_file 12345 "$(stat -c %s "$AW/a.c" 2>&1)"
cp "$tmp/sizes.good" "$sizes_file"
printf 'not ours, not sorted, not anything' >>"$sizes_file"
check attrs_unmount_for_a_broken_sizes_file "$CLOISTER" unmount "$acfg"
check attrs_mount_with_a_broken_sizes_file "$CLOISTER" mount "$acfg"
expect_eq a_sizes_file_not_ours_is_ignored "$(git -C "$A" cat-file -s HEAD:a.c)" \
        "$(stat -c %s "$AW/a.c" 2>&1)"
expect_eq and_the_file_still_reads_whole "$(git -C "$A" cat-file -p HEAD:a.c)" "$(cat "$AW/a.c")"
cp "$tmp/sizes.good" "$sizes_file"

# --- a cold lookup asks the host for no git file -------------------------------
# Mounted again, the daemon's tree cache is empty and nothing is noted, so
# the first stat of each file (all in attribute scope here) asks libgit2 for
# its attributes. The daemon has sealed libgit2 (lower_git_seal): no lookup
# looks for /etc/gitattributes, the user's git files or core.attributesFile,
# nor stats the handles' config again (before: three such calls per lookup).
check attrs_unmount_before_the_cold_lookups "$CLOISTER" unmount "$acfg"
check attrs_mount_again_for_the_cold_lookups "$CLOISTER" mount "$acfg"
skip_cold_lookups() {
        local t
        for t in cold_lookups_were_traced cold_lookups_look_up_no_host_git_file \
                cold_lookups_read_the_config_only_to_make_a_handle; do
                TAP_N=$((TAP_N + 1))
                echo "ok $TAP_N - $t # SKIP $1"
        done
}
dpid=$(cat "$tmp/attrs-state/mount.pid")
slog=$tmp/cold-lookups.strace
spid=""
if command -v strace >/dev/null && strace -qq -o /dev/null true 2>/dev/null; then
        strace -f -qq -e trace=access,faccessat,faccessat2,stat,lstat,newfstatat,statx,openat \
                -o "$slog" -p "$dpid" 2>/dev/null &
        spid=$!
        # strace -p attaches to every thread before it traces: wait for that
        # (or for strace to give up: ptrace of another process may be barred).
        for _ in $(seq 200); do
                kill -0 "$spid" 2>/dev/null || break
                untraced=$(grep -l '^TracerPid:[[:space:]]*0$' /proc/"$dpid"/task/*/status 2>/dev/null)
                [ -z "$untraced" ] && break
                sleep 0.05
        done
fi
if [ -z "$spid" ]; then
        skip_cold_lookups "strace or ptrace is not available"
elif ! kill -0 "$spid" 2>/dev/null || [ -n "$untraced" ]; then
        kill "$spid" 2>/dev/null
        wait "$spid" 2>/dev/null
        skip_cold_lookups "strace cannot attach to the daemon here (ptrace of a non-child)"
else
        stat "$AW/a.c" "$AW/t/t0001.sh" "$AW/sub/n.txt" "$AW/README" "$AW/w.bat" >/dev/null
        kill "$spid"
        wait "$spid" 2>/dev/null
        # The daemon's own lookup of README in the upper store: traced at all.
        check cold_lookups_were_traced grep -q '"README"' "$slog"
        expect_eq cold_lookups_look_up_no_host_git_file "" \
                "$(grep -E 'gitattributes|/dev/null|\.config/git|"/etc/|"/root/|"'"$HOME"'/' "$slog")"
        # Its own config (in the blob cache) is read once per thread, when the
        # thread makes its handle, and not looked at again by the lookup that
        # made it (libgit2 stats it once after reading it) or any other: no
        # thread touches it without opening it, or more than once after.
        expect_eq cold_lookups_read_the_config_only_to_make_a_handle "" \
                "$(awk '!/gitconfig"/ { next }
                        /openat\(/ { opened[$1] = 1; after[$1] = 0; next }
                        { seen[$1] = 1; if ($1 in opened) after[$1]++ }
                        END {
                                for (t in seen)
                                        if (!(t in opened)) print "thread " t " without opening it"
                                for (t in after) if (after[t] > 1) print "thread " t ": " after[t] " after"
                        }' "$slog")"
fi
check final_attrs_unmount_succeeds "$CLOISTER" unmount "$acfg"

finish
