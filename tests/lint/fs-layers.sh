#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fs/'s folders include and call only down their layers
# (tests/lint/fs-layers.py), and the check is not blind: an upward or
# sideways include, an upward call and an address taken upward, planted in
# a copy of fs/, each make it fail and name the file and line.
set -u
src=${CLOISTER_SRC:?}
check=$src/tests/lint/fs-layers.py
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; shift; printf '# %s\n' "$@"; }
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "1..8"

if out=$("$check" --root "$src" 2>&1); then
        ok "fs_folders_include_and_call_only_down"
else
        not_ok "fs_folders_include_and_call_only_down" "$out"
fi

# plant TEST FILE TEXT EXPECTED: a fresh copy of fs/ with TEXT appended to
# FILE must make the check fail with EXPECTED in its output.
plant() {
        local name=$1 file=$2 text=$3 want=$4 out
        rm -rf "$T/tree"
        mkdir -p "$T/tree/$(dirname "$file")"
        cp -r "$src/fs" "$T/tree/"
        printf '%s\n' "$text" >>"$T/tree/$file"
        if out=$("$check" --root "$T/tree" 2>&1); then
                not_ok "$name" "the check passed a tree with '$text' in $file"
        elif grep -qF -- "$want" <<<"$out"; then
                ok "$name"
        else
                not_ok "$name" "want '$want' in:" "$out"
        fi
}
next() { echo $(($(wc -l <"$src/$1") + 1)); }

plant "core_including_an_ops_header_fails" fs/core/inode.c '#include "ops.h"' \
        "fs/core/inode.c:$(next fs/core/inode.c): includes \"ops.h\" from fs/ops/"
plant "lower_including_the_core_header_fails" fs/lower/lower.c '#include "core.h"' \
        "fs/lower/lower.c:$(next fs/lower/lower.c): includes \"core.h\" from fs/core/"
plant "leaf_including_its_sibling_fails" fs/journal/journal.c '#include "gitdir.h"' \
        "fs/journal/journal.c:$(next fs/journal/journal.c): includes \"gitdir.h\" from fs/gitdir/"
plant "lower_calling_the_shed_fails" fs/lower/lower.c \
        'static void planted(struct fs_workspace *ws) { shed_kick(ws); }' \
        "fs/lower/lower.c:$(next fs/lower/lower.c): calls shed_kick() of fs/ops/ (shed.c)"
plant "format_calling_the_node_table_fails" fs/format/state.c \
        'static char *planted(const struct node *n) { return node_path(n); }' \
        "fs/format/state.c:$(next fs/format/state.c): calls node_path() of fs/core/ (inode.c)"
plant "core_taking_an_ops_function_fails" fs/core/inode.c \
        'static void planted(struct fs_workspace *ws) { ws->shed.kick = shed_kick; }' \
        "fs/core/inode.c:$(next fs/core/inode.c): calls shed_kick() of fs/ops/ (shed.c)"
plant "an_unknown_folder_fails" fs/extra/x.c '/* a folder the check has no arrows for */' \
        "fs/extra/x.c:1: fs/extra/ is not a known folder of fs/"
exit $failed
