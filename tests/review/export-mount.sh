#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cloister diff / export / log on a real FUSE mount: a seeded random series of
# agent edits plus every corner case, then the real git binary applies the
# patch (git apply) and the series (git am) to fresh clones, and the result
# must equal the mounted tree byte for byte. The source repository must be
# unchanged apart from refs/cloister/NAME (checksums). The journal must stay
# readable, and the export correct, after the daemon is SIGKILLed mid-write.
. "$CLOISTER_SRC/tests/review/lib.sh"
need_mount
SEED=${CLOISTER_TEST_SEED:-4242}
export GIT_AUTHOR_NAME="Base Author" GIT_AUTHOR_EMAIL=base@example.org
export GIT_COMMITTER_NAME="Base Committer" GIT_COMMITTER_EMAIL=committer@example.org

base_files() {
        mkdir -p dir/sub old/deep/er becomes-file
        printf 'one\ntwo\nthree\n' >a.txt
        printf 'no newline' >nonl.txt
        printf 'x\n' >dir/x
        printf 'y\n' >dir/sub/y
        seq 1 60 | sed 's/^/line /' >dir/rename-me.txt
        printf 'f\n' >becomes-dir
        printf 'g\n' >becomes-file/g
        printf 'h\n' >old/deep/er/h
        printf 'i\n' >old/i
        printf '#!/bin/sh\n' >run.sh && chmod +x run.sh
        printf 'plain\n' >mode.txt
        head -c 4000 /dev/urandom >bin.dat
        ln -s a.txt link
        printf 'a\r\nb\r\nc\r\n' >crlf-base.txt
        printf 'x\r\n' >crlf-becomes-dir
        for i in $(seq 1 30); do printf 'file %s\n' "$i" >"dir/f$i"; done
}
make_src base_files
write_config rt
# A failed tree comparison says where the trees differ.
check_failed() {
        [ -s "$t/same.diff" ] && sed 's/^/# /' "$t/same.diff" | head -20
        cmp -s "$t/c1.types" "$t/c2.types" 2>/dev/null || diff "$t/c1.types" "$t/c2.types" 2>/dev/null | sed 's/^/# /' | head -10
}
mount_ws
echo "1..24"

# Checksums of every file in the source's .git, HEAD, refs, status.
snapshot() {
        (cd "$t/src" && find .git -type f | sort | xargs sha256sum >"$t/$1.files" &&
                { git rev-parse HEAD; git show-ref | grep -v ' refs/cloister/';
                  GIT_OPTIONAL_LOCKS=0 git status --porcelain; } >"$t/$1.state")
}
# Same tree? Compare two directories ignoring .git and empty directories
# (git holds none): contents, symlinks as links, types, executable bits.
same_tree() {
        rm -rf "$t/c1" "$t/c2"
        mkdir "$t/c1" "$t/c2"
        (cd "$1" && tar --exclude=./.git -cf - .) | tar -C "$t/c1" -xf - &&
                (cd "$2" && tar --exclude=./.git -cf - .) | tar -C "$t/c2" -xf - &&
                find "$t/c1" "$t/c2" -depth -type d -empty -delete
        mkdir -p "$t/c1" "$t/c2"
        diff -r --no-dereference "$t/c1" "$t/c2" >"$t/same.diff" || return 1
        for d in c1 c2; do
                (cd "$t/$d" && find . -printf '%p %y\n' | sort >"$t/$d.types" &&
                        find . -type f -perm -u+x | sort >"$t/$d.exec")
        done
        cmp -s "$t/c1.types" "$t/c2.types" && cmp -s "$t/c1.exec" "$t/c2.exec"
}
fresh_clone() { rm -rf "$t/fresh" && git clone -q "$t/src" "$t/fresh"; }

# --- the agent's edits: every corner case, then a seeded random series -------
corner_edits() {
        printf 'one\nTWO\nthree\n' >"$W/a.txt"
        printf 'no newline, still' >"$W/nonl.txt"
        : >"$W/empty"
        printf '\0\1x\377\0\ny' >"$W/new.bin"
        printf '\0\0\3' >>"$W/bin.dat"
        rm "$W/becomes-dir" && mkdir "$W/becomes-dir" && printf 'now a dir\n' >"$W/becomes-dir/inside"
        rm -r "$W/becomes-file" && printf 'now a file\n' >"$W/becomes-file"
        mkdir "$W/other" && mv "$W/dir/rename-me.txt" "$W/other/renamed.txt"
        chmod +x "$W/mode.txt" && chmod -x "$W/run.sh"
        ln -s dir/x "$W/newlink" && ln -sfn nonl.txt "$W/link" && ln -s /etc/passwd "$W/outside"
        printf 'spaced\n' >"$W/with space.txt"
        mkdir "$W/ünïcødé" && printf 'u\n' >"$W/ünïcødé/ファイル.txt"
        rm -r "$W/old"
        # CRs at line ends, which git am's mailsplit would drop from a text patch.
        printf 'a\r\nB\r\nc\r\n' >"$W/crlf-base.txt"
        printf 'l1\r\nl2\r\n' >"$W/crlf-new.txt"
        printf 'ends in a CR\r' >"$W/cr-end.txt"
        rm "$W/crlf-becomes-dir" && mkdir "$W/crlf-becomes-dir" && printf 'in\r\n' >"$W/crlf-becomes-dir/inside"
}
random_edits() {
        RANDOM=$1
        local i f d files
        for i in $(seq 1 60); do
                # Only dir/ and what this series made: the corner cases stay as checked.
                mapfile -t files < <(cd "$W" && find . -path ./.git -prune -o -type f -print |
                        sed 's|^\./||' | grep -E '^(dir/|r[0-9]/|n[0-9]/|new-)')
                ((${#files[@]})) || files=(dir/x)
                f=${files[RANDOM % ${#files[@]}]}
                case $((RANDOM % 8)) in
                0) printf 'appended %s\n' "$RANDOM" >>"$W/$f" ;;
                1) rm -f -- "$W/$f" ;;
                2) mkdir -p "$W/r$((RANDOM % 5))" && mv -- "$W/$f" "$W/r$((RANDOM % 5))/m$RANDOM" 2>/dev/null ;;
                3) chmod +x -- "$W/$f" ;;
                4) head -c $((RANDOM % 3000)) /dev/urandom >"$W/new-$RANDOM.bin" ;;
                5) truncate -s $((RANDOM % 50)) -- "$W/$f" ;;
                6) d="$W/n$((RANDOM % 3))/d e" && mkdir -p "$d" && printf 'n %s\n' "$RANDOM" >"$d/f $RANDOM" ;;
                7) sed -i "1s/^/edited $RANDOM /" -- "$W/$f" 2>/dev/null ;;
                esac
        done
}

snapshot before
corner_edits
random_edits "$SEED"

"$CLOISTER" diff "$t/ws.ini" >"$t/patch" 2>"$t/diff.err"
check "diff_of_a_real_mount_succeeds" '[ $st -eq 0 ] && [ -s "$t/patch" ]'
check "diff_has_binary_rename_mode_and_symlink_records" \
        'grep -q "GIT binary patch" "$t/patch" && grep -q "^rename from dir/rename-me.txt" "$t/patch" && grep -q "^new mode 100755" "$t/patch" && grep -q "^+/etc/passwd" "$t/patch" && ! grep -q "^+root:" "$t/patch"'
fresh_clone
(cd "$t/fresh" && git apply --whitespace=nowarn "$t/patch") 2>"$t/apply.err"
check "git_apply_on_a_fresh_clone_reproduces_the_mounted_tree (seed $SEED)" \
        '[ $st -eq 0 ] && same_tree "$W" "$t/fresh"'
snapshot after-diff
check "diff_leaves_the_source_repository_byte_identical" \
        'cmp -s "$t/before.files" "$t/after-diff.files" && cmp -s "$t/before.state" "$t/after-diff.state"'

"$CLOISTER" diff "$t/ws.ini" --stat >"$t/stat"
"$CLOISTER" diff "$t/ws.ini" --name-status >"$t/ns"
check "stat_and_name_status_list_the_changes" \
        'grep -q "files changed" "$t/stat" && grep -q "^R[0-9]\{3\}	dir/rename-me.txt	" "$t/ns" && grep -q "^D	old/i" "$t/ns"'

mkdir -p "$t/mnt/home/agent" 2>/dev/null
printf 'secret-token' >"$t/mnt/home/agent/.netrc" 2>/dev/null
"$CLOISTER" diff "$t/ws.ini" >"$t/patch2" 2>"$t/diff2.err"
check "hidden_home_never_appears_in_the_patch" '! grep -q secret-token "$t/patch2" && ! grep -q "\.netrc" "$t/patch2"'
home=$("$CLOISTER" diff "$t/ws.ini" --home)
check "hidden_home_changes_listed_with_names_and_sizes" \
        'grep -q "^file  *12  /home/agent/.netrc$" <<<"$home" && grep -q "/home/agent/.netrc" "$t/diff2.err"'
printf 'x' >"$t/mnt/home/agent/$(printf 'a\033]0;owned\007\nfile    1  forged')" 2>/dev/null
home=$("$CLOISTER" diff "$t/ws.ini" --home)
check "home_names_cannot_forge_lines_or_send_terminal_escapes" \
        '[ $(wc -l <<<"$home") -eq 2 ] && ! LC_ALL=C grep -q "$(printf "\033")" <<<"$home" && grep -qF "\"/home/agent/a\\033]0;owned\\a\\nfile    1  forged\"" <<<"$home"'
rm -f "$t/mnt/home/agent/$(printf 'a\033]0;owned\007\nfile    1  forged')"

"$CLOISTER" export "$t/ws.ini" --commit --message "Agent work" --author "A U Thor <a@u.th>" >"$t/commit.out"
check "export_commit_prints_the_ref" '[ $st -eq 0 ] && grep -q "^refs/cloister/rt [0-9a-f]\{40\}$" "$t/commit.out"'
first_export=$(cut -d" " -f2 "$t/commit.out")
snapshot after-export
check "export_commit_changes_nothing_in_the_source_but_the_ref_and_objects" \
        'cmp -s "$t/before.state" "$t/after-export.state" && (cd "$t/src" && sha256sum -c --quiet "$t/before.files") && ! cut -c67- "$t/after-export.files" | grep -v -x -F -f <(cut -c67- "$t/before.files") | grep -v -e "^.git/objects/pack/" -e "^.git/refs/cloister/rt$" -e "^.git/logs/refs/cloister/rt$" | grep -q .'
fresh_clone
check "exported_commit_is_the_mounted_tree_on_top_of_the_base" \
        '(cd "$t/fresh" && git fetch -q "$t/src" refs/cloister/rt && git checkout -q FETCH_HEAD && [ "$(git rev-parse HEAD^)" = "$(git -C "$t/src" rev-parse HEAD)" ] && [ "$(git log -1 --format="%an|%s")" = "A U Thor|Agent work" ]) && same_tree "$W" "$t/fresh"'

"$CLOISTER" export "$t/ws.ini" --mbox --message "Mailed work" -o "$t/work.mbox"
fresh_clone
(cd "$t/fresh" && git am -q "$t/work.mbox") 2>"$t/am.err"
check "mbox_applies_with_git_am_and_reproduces_the_mounted_tree" \
        '[ $st -eq 0 ] && same_tree "$W" "$t/fresh" && [ "$(git -C "$t/fresh" log -1 --format=%s)" = "Mailed work" ]'
check "mbox_has_each_file_once" '[ -z "$(grep "^diff --git " "$t/work.mbox" | sort | uniq -d)" ]'

if [ -d "$W/.git" ] && git -C "$W" rev-parse HEAD >/dev/null 2>&1; then
        (cd "$W" && git add -A && GIT_AUTHOR_NAME="Agent One" GIT_AUTHOR_EMAIL=one@agent git commit -qm "Agent commit one" &&
                printf 'more\n' >>a.txt && git add -A &&
                GIT_AUTHOR_NAME="Agent Two" GIT_AUTHOR_EMAIL=two@agent git commit -qm "Agent commit two") >/dev/null 2>&1
        "$CLOISTER" export "$t/ws.ini" --commits >"$t/commits.out" 2>&1
        check "a_second_export_keeps_the_first_in_the_reflog" \
                '[ "$(git -C "$t/src" rev-parse "refs/cloister/rt@{1}")" = "$first_export" ] && [ "$(git -C "$t/src" reflog show --format=%gs refs/cloister/rt | head -n 2 | tr "\n" ,)" = "cloister export,cloister export," ]'
        check "a_second_export_says_what_it_replaced" \
                'grep -q "refs/cloister/rt was at $first_export (an earlier export); it stays in the ref.s reflog as refs/cloister/rt@{1}" "$t/commits.out"'
        check "export_commits_keeps_the_agents_series" \
                '[ "$(git -C "$t/src" log --format="%an|%s" -2 refs/cloister/rt | tr "\n" ,)" = "Agent Two|Agent commit two,Agent One|Agent commit one," ] && git -C "$t/src" fsck --no-dangling >/dev/null 2>&1'
        "$CLOISTER" export "$t/ws.ini" --mbox --commits -o "$t/series.mbox" 2>"$t/series.err"
        fresh_clone
        (cd "$t/fresh" && git am -q "$t/series.mbox") 2>>"$t/series.err"
        check "mbox_of_the_agents_series_applies_with_git_am" \
                '[ $st -eq 0 ] && [ "$(git -C "$t/fresh" log --format="%an|%s" -2 | tr "\n" ,)" = "Agent Two|Agent commit two,Agent One|Agent commit one," ] && [ "$(git -C "$t/fresh" rev-parse HEAD^{tree})" = "$(git -C "$W" rev-parse HEAD^{tree})" ]'
        mv "$W/.git/HEAD" "$W/.git/HEAD.real" && ln -s HEAD.real "$W/.git/HEAD"
        "$CLOISTER" export "$t/ws.ini" --commits >"$t/symhead.out" 2>&1
        check "export_commits_with_a_symlinked_head_says_so_in_one_line" \
                '[ $st -eq 1 ] && [ "$(wc -l <"$t/symhead.out")" -eq 1 ] && grep -q "^cloister export: the workspace.s .git/HEAD is a symlink, and cloister never follows the agent.s links" "$t/symhead.out"'
        rm "$W/.git/HEAD" && mv "$W/.git/HEAD.real" "$W/.git/HEAD"
else
        skip_one "a_second_export_keeps_the_first_in_the_reflog" "the workspace has no .git in this build"
        skip_one "a_second_export_says_what_it_replaced" "the workspace has no .git in this build"
        skip_one "export_commits_keeps_the_agents_series" "the workspace has no .git in this build"
        skip_one "mbox_of_the_agents_series_applies_with_git_am" "the workspace has no .git in this build"
        skip_one "export_commits_with_a_symlinked_head_says_so_in_one_line" "the workspace has no .git in this build"
fi

# --- the journal after SIGKILL of the daemon mid-write ------------------------
pid=$(cat "$t/state/mount.pid" 2>/dev/null)
dd if=/dev/urandom of="$W/big.bin" bs=64k count=100000 status=none 2>/dev/null &
ddpid=$!
for _ in $(seq 1 100); do
        [ "$(stat -c %s "$W/big.bin" 2>/dev/null || echo 0)" -gt 1000000 ] && break
        sleep 0.05
done
kill -KILL "$pid" 2>/dev/null
kill -KILL "$ddpid" 2>/dev/null
wait "$ddpid" 2>/dev/null
"$CLOISTER" log "$t/ws.ini" >"$t/log.out" 2>"$t/log.err"
# stderr: at most the damaged last line, and that the daemon died without closing it.
check "journal_after_sigkill_is_readable" \
        '[ $st -eq 0 ] && grep -q "rename .*/workspace/dir/rename-me.txt -> /workspace/other/renamed.txt" "$t/log.out" && grep -q "may be short" "$t/log.err" && [ $(grep -c . "$t/log.err") -le 2 ]'
# Mounting again cleans up the dead daemon's mount.
"$CLOISTER" mount "$t/ws.ini" >/dev/null 2>&1
"$CLOISTER" diff "$t/ws.ini" >"$t/patch3" 2>"$t/diff3.err"
rc=$?
fresh_clone
(cd "$t/fresh" && git apply --whitespace=nowarn "$t/patch3") 2>/dev/null
check "export_after_sigkill_matches_the_remounted_tree" '[ $rc -eq 0 ] && same_tree "$W" "$t/fresh"'
"$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1

# --- not mounted: the command mounts for itself and unmounts after -----------
"$CLOISTER" diff "$t/ws.ini" --name-status >"$t/ns2" 2>"$t/ns2.err"
check "diff_of_an_unmounted_workspace_mounts_and_unmounts_itself" \
        '[ $st -eq 0 ] && grep -q "dir/rename-me.txt" "$t/ns2" && ! mountpoint -q "$t/mnt"'

"$CLOISTER" export "$t/ws.ini" --discard </dev/null >/dev/null 2>"$t/discard.err"
check "discard_without_yes_and_without_a_terminal_refuses" \
        '[ $st -eq 1 ] && grep -q "not confirmed" "$t/discard.err" && [ -s "$t/ns2" ]'
"$CLOISTER" export "$t/ws.ini" --discard --yes >/dev/null 2>"$t/discard.err"
"$CLOISTER" diff "$t/ws.ini" >"$t/patch4" 2>/dev/null
check "discard_resets_the_workspace_to_the_base" '[ $st -eq 0 ] && [ ! -s "$t/patch4" ]'

# An agent renaming FIFOs over a file discard restores: discard's open for
# writing must not wait for a reader (it did: the name was checked, then
# opened blocking). Each discard gets 20 s; a hang is the failure.
mount_ws
( while :; do mkfifo "$W/a.fifo" 2>/dev/null; mv -f "$W/a.fifo" "$W/a.txt" 2>/dev/null; done ) &
racer=$!
hung=0 runs=0
while [ $runs -lt 60 ]; do
        runs=$((runs + 1))
        # (KILL 5 s after TERM: an open(2) blocked on a FIFO restarts after a handled TERM)
        timeout -k 5 20 "$CLOISTER" export "$t/ws.ini" --discard --yes >/dev/null 2>>"$t/race.err"
        rc=$?
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
                hung=$runs
                break
        fi
done
kill "$racer" 2>/dev/null
wait "$racer" 2>/dev/null
# a discard that hung holds the FIFO open for writing: a reader lets it go
[ $hung -gt 0 ] && timeout 5 cat "$W/a.txt" >/dev/null 2>&1
check "discard_does_not_wait_on_a_fifo_the_agent_swaps_in" '[ $hung -eq 0 ]'
"$CLOISTER" unmount "$t/ws.ini" >/dev/null 2>&1
