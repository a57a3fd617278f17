#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The workspace shows each file as a fresh `git checkout` of the base writes
# it: eol=crlf (and `text eol=crlf`) files with CRLF, ident files with
# $Id: <blob> $, everything else as stored; the same bytes and sizes as a
# fresh clone, and `git status` clean at once (the .git/index carries the
# converted sizes). Only the base revision's .gitattributes count: not the
# source's core.autocrlf, its info/attributes or checkout, nor the host
# user's ~/.config/git/attributes. Filters that run programs never run.
. "$(dirname "$0")/lib.sh"

R=$T/repo
mkdir -p "$R/sub" "$R/plain"
git_quiet -C "$R" init
cat >"$R/.gitattributes" <<'GA'
*.txt eol=crlf
*.id ident
sub/** text eol=crlf
*.bin binary
*.lfs filter=lfs diff=lfs merge=lfs -text
*.prog filter=shout
GA
printf 'one\ntwo\n' >"$R/a.txt"
printf 'already\r\ncrlf\n' >"$R/mixed.txt"
printf '$Id$\nint x;\n' >"$R/v.id"
printf 'x\ny\nz\n' >"$R/sub/deep"
printf 'b\n\0\n' >"$R/pic.bin"
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 3\n' >"$R/big.lfs"
printf 'quiet\n' >"$R/run.prog"
printf 'lf\nonly\n' >"$R/plain/p"
# .gitattributes of folders below the root: they add to the root's, and win.
mkdir -p "$R/nested/inner"
printf '*.c ident\n' >"$R/nested/inner/.gitattributes"
printf '$Id$\nint y;\n' >"$R/nested/inner/x.c"
printf 'p text eol=crlf\n' >"$R/plain/.gitattributes"
printf 'big\n%.0s' $(seq 1 20000) >"$R/large.txt" # over the 64 KiB in-memory read
git_quiet -C "$R" add -A
GIT_COMMITTER_DATE="2024-01-02T03:04:05Z" git_quiet -C "$R" commit -m base
# Host settings that a fresh checkout does not use and the workspace must not either.
git -C "$R" config core.autocrlf true
git -C "$R" config filter.shout.smudge "sh -c 'touch $T/SMUDGE-RAN; tr a-z A-Z'"
mkdir -p "$R/.git/info" "$T/home/.config/git"
printf '*.txt -text\n' >"$R/.git/info/attributes"
printf '* eol=crlf\n' >"$T/home/.config/git/attributes"
printf 'changed in the checkout\n' >"$R/a.txt" # the source's work tree is not the base

# The reference: a fresh clone with no user or system config.
HOME=$T/empty-home GIT_CONFIG_NOSYSTEM=1 git clone -q "$R" "$T/fresh"
C=$(make_config attrs "$R")
M=$(mnt_of "$C")
W=$M/workspace
HOME=$T/home check mount do_mount "$C"

for f in a.txt mixed.txt v.id sub/deep pic.bin big.lfs run.prog plain/p large.txt .gitattributes \
        nested/inner/x.c; do
        check "file_${f//[\/.]/_}_is_byte_identical_to_a_fresh_checkout" cmp "$W/$f" "$T/fresh/$f"
        same "size_of_${f//[\/.]/_}_is_the_checked_out_size" "$(stat -c %s "$W/$f")" "$(stat -c %s "$T/fresh/$f")"
done
bytes() { od -An -c "$1" | tr -d '\n' | tr -s ' '; }
same crlf_file_has_crlf_line_ends "$(bytes "$W/a.txt")" "$(printf ' o n e \\r \\n t w o \\r \\n')"
check ident_is_expanded_with_the_blob_id grep -q "^\$Id: $(git -C "$R" rev-parse HEAD:v.id) \\$\$" "$W/v.id"
check attributes_of_a_nested_folder_apply grep -q "^\$Id: $(git -C "$R" rev-parse HEAD:nested/inner/x.c) \\$\$" \
        "$W/nested/inner/x.c"
same attributes_of_a_folder_win_over_the_root "$(bytes "$W/plain/p")" "$(printf ' l f \\r \\n o n l y \\r \\n')"
check filters_that_run_programs_never_run test ! -e "$T/SMUDGE-RAN"
same lfs_pointer_is_shown_as_stored "$(head -1 "$W/big.lfs")" "version https://git-lfs.github.com/spec/v1"
same git_status_is_clean_at_once "$(cd "$W" && git status --porcelain 2>&1)" ""
# Copy-up keeps the checked-out bytes: an append lands after the CRLF content.
printf 'three\r\n' >>"$W/a.txt"
same append_to_a_converted_file_keeps_its_crlf "$(bytes "$W/a.txt")" \
        "$(printf ' o n e \\r \\n t w o \\r \\n t h r e e \\r \\n')"
same git_sees_only_the_appended_line "$(cd "$W" && git diff --numstat a.txt)" "$(printf '1\t0\ta.txt')"
chmod +x "$W/large.txt"
same chmod_of_a_converted_file_is_only_a_mode_change \
        "$(cd "$W" && git diff --numstat large.txt; git diff --summary large.txt | tr -s ' ')" \
        "$(printf '0\t0\tlarge.txt\n mode change 100644 => 100755 large.txt')"
check unmount do_unmount "$C"
# A second mount reads the converted files from the blob cache.
check mount_again do_mount "$C"
check converted_file_reads_the_same_from_the_cache cmp "$W/sub/deep" "$T/fresh/sub/deep"
finish
