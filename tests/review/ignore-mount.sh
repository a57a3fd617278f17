#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 15 on a real mount, with the real git and a real build: after `make`
# inside the workspace, `cloister diff --name-status` lists exactly what
# `git status --porcelain` lists there (build outputs left out by the
# project's .gitignore, a count of them on stderr); the exported commit's
# tree is the tree `git add -A` makes in the workspace; the patch applies on
# a fresh clone and reproduces every file git tracks byte for byte, eol=crlf
# and ident files included; --include-ignored takes everything; discard
# writes files back as a fresh checkout does.
. "$CLOISTER_SRC/tests/review/lib.sh"
need_mount
need make
need cc "no C compiler"
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@a GIT_COMMITTER_NAME=c GIT_COMMITTER_EMAIL=c@c

base_files() {
        mkdir -p src lib tools
        printf '*.o\n*.d\n/prog\n/prog-*\nbuild/\n' >.gitignore
        printf '*.txt eol=crlf\n*.c ident\n' >.gitattributes
        for i in 1 2 3 4 5 6; do
                printf '/* $Id$ */\nint f%d(void) { return %d; }\n' "$i" "$i" >"src/f$i.c"
        done
        printf 'int main(void) { return 0; }\n' >src/main.c
        printf 'CFLAGS += -MMD\nOBJ := $(patsubst %%.c,%%.o,$(wildcard src/*.c))\n' >Makefile
        printf 'prog: $(OBJ)\n\t$(CC) -o $@ $^\n\tfor i in 1 2 3 4 5; do ln -f prog prog-$$i; done\n' >>Makefile
        printf '\tmkdir -p build/cache && echo cache >build/cache/c.bin\n' >>Makefile
        printf 'notes\nmore\n' >NOTES.txt
        printf 'lib\n' >lib/keep.d # a tracked file a rule matches
        git add -f lib/keep.d
}
make_src base_files
write_config ig
mount_ws
echo "1..12"

git clone -q "$t/src" "$t/fresh0"
check "eol_and_ident_files_are_shown_as_a_fresh_clone_has_them" \
        'cmp "$W/NOTES.txt" "$t/fresh0/NOTES.txt" && cmp "$W/src/f1.c" "$t/fresh0/src/f1.c" && grep -Eq "[$]Id: [0-9a-f]{40} [$]" "$W/src/f1.c"'

# The agent's work: a build, edits in CRLF and ident files, new files.
(cd "$W" && make -s >/dev/null 2>"$t/make.err") || { echo "Bail out! make failed: $(cat "$t/make.err")"; exit 1; }
printf 'notes\r\nmore\r\nadded\r\n' >"$W/NOTES.txt"
printf 'new\r\ntext\r\n' >"$W/NEW.txt"
printf 'int g(void) { return 7; }\n' >"$W/src/g.c"
printf 'lib changed\n' >"$W/lib/keep.d"
printf '/* $Id$ */\nint f2(void) { return 22; }\n' >"$W/src/f2.c"
printf 'stray.o\n' >>"$W/.git/info/exclude"
printf 'x\n' >"$W/stray.o"

# What git says, and what cloister diff says, as "STATUS PATH" lines.
(cd "$W" && git status --porcelain -uall) | sed 's/^ \(.\) /\1 /; s/^?? /A /' | sort >"$t/git.list"
"$CLOISTER" diff "$t/ws.ini" --name-status >"$t/ns" 2>"$t/ns.err"
check "diff_succeeds" '[ $st -eq 0 ]'
tr '\t' ' ' <"$t/ns" | sort >"$t/cl.list"
check "diff_lists_exactly_what_git_status_lists" 'cmp -s "$t/git.list" "$t/cl.list" || { diff "$t/git.list" "$t/cl.list" | sed "s/^/# /"; false; }'
objs=$(cd "$W" && git status --porcelain --ignored | grep -c '^!!')
check "stderr_says_how_many_ignored_paths_were_left_out" \
        'grep -q "cloister diff: $objs ignored paths left out" "$t/ns.err"'

"$CLOISTER" diff "$t/ws.ini" >"$t/patch" 2>/dev/null
rm -rf "$t/fresh" && git clone -q "$t/src" "$t/fresh"
(cd "$t/fresh" && git apply "$t/patch") 2>"$t/apply.err"
check "patch_applies_on_a_fresh_clone" '[ $st -eq 0 ] && [ ! -s "$t/apply.err" ]'
# Every file git tracks or would add, byte for byte (eol files included). An
# ident file the agent wrote holds what it wrote ($Id$ here); checked out, git
# expands the keyword with the new blob's id: only that keyword may differ.
(cd "$W" && git ls-files -co --exclude-standard | sort) >"$t/want.files"
(cd "$t/fresh" && git ls-files -co --exclude-standard | sort) >"$t/got.files"
same_bytes() {
        local f
        cmp -s "$t/want.files" "$t/got.files" || return 1
        while read -r f; do
                case $f in
                *.c) cmp -s <(sed 's/[$]Id: [0-9a-f]* [$]/$Id$/' "$W/$f") \
                        <(sed 's/[$]Id: [0-9a-f]* [$]/$Id$/' "$t/fresh/$f") ;;
                *) cmp -s "$W/$f" "$t/fresh/$f" ;;
                esac || { echo "# differs: $f"; return 1; }
        done <"$t/want.files"
}
check "applied_patch_reproduces_the_workspace_byte_for_byte" 'same_bytes'

"$CLOISTER" export "$t/ws.ini" --commit >/dev/null 2>"$t/commit.err"
want_tree=$(cd "$W" && cp .git/index "$t/index.save" && git add -A && git write-tree; cp "$t/index.save" .git/index)
got_tree=$(git -C "$t/src" rev-parse refs/cloister/ig^{tree})
check "exported_commit_is_the_tree_git_add_all_makes ($got_tree)" '[ -n "$want_tree" ] && [ "$got_tree" = "$want_tree" ]'
check "export_says_how_many_ignored_paths_were_left_out" 'grep -q "ignored paths left out" "$t/commit.err"'

"$CLOISTER" export "$t/ws.ini" --mbox >"$t/mbox" 2>/dev/null
rm -rf "$t/fresh" && git clone -q "$t/src" "$t/fresh"
(cd "$t/fresh" && git am -q "$t/mbox") 2>/dev/null
check "mbox_applies_with_git_am_to_the_same_tree" '[ "$(git -C "$t/fresh" rev-parse HEAD^{tree})" = "$want_tree" ]'

"$CLOISTER" diff "$t/ws.ini" --name-status --include-ignored >"$t/ns-all" 2>"$t/ns-all.err"
check "include_ignored_takes_the_build_outputs_too" \
        'grep -q "^A	src/f1.o$" "$t/ns-all" && grep -q "^A	prog-5$" "$t/ns-all" && grep -q "^A	build/cache/c.bin$" "$t/ns-all" && ! grep -q "ignored paths left out" "$t/ns-all.err"'

"$CLOISTER" export "$t/ws.ini" --discard --yes >/dev/null 2>&1
check "discard_writes_eol_files_back_as_a_fresh_checkout_does" \
        'cmp "$W/NOTES.txt" "$t/fresh0/NOTES.txt" && cmp "$W/src/f2.c" "$t/fresh0/src/f2.c"'
check "after_discard_git_status_is_clean" '[ -z "$(cd "$W" && git status --porcelain)" ]'
