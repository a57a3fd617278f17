#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The layers' include rule holds for the tree (tests/lint/includes.py), and
# the check is not blind: each kind of upward or sideways include, planted
# in a copy of the tree, makes it fail and name the file and line.
set -u
src=${CLOISTER_SRC:?}
check=$src/tests/lint/includes.py
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; shift; printf '# %s\n' "$@"; }
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "1..9"

if out=$("$check" --root "$src" 2>&1); then
        ok "tree_includes_point_only_down"
else
        not_ok "tree_includes_point_only_down" "$out"
fi

# plant TEST FILE LINE-TEXT EXPECTED: a fresh copy with LINE-TEXT added to
# FILE must make the check fail with EXPECTED in its output.
plant() {
        local name=$1 file=$2 text=$3 want=$4 out
        rm -rf "$T/tree"
        mkdir -p "$T/tree"
        cp -r "$src/lib" "$src/fs" "$src/broker" "$src/proxy" "$src/mounts" "$T/tree/"
        printf '%s\n' "$text" >>"$T/tree/$file"
        if out=$("$check" --root "$T/tree" 2>&1); then
                not_ok "$name" "the check passed a tree with '$text' in $file"
        elif grep -qF -- "$want" <<<"$out"; then
                ok "$name"
        else
                not_ok "$name" "want '$want' in:" "$out"
        fi
}
lines() { wc -l <"$src/$1" | tr -d ' '; }

plant "fs_including_the_config_fails" fs/core/inode.c '#include "config.h"' \
        "fs/core/inode.c:$(($(lines fs/core/inode.c) + 1)): includes \"config.h\" from mounts/"
plant "broker_including_a_sandbox_path_fails" broker/keys.c '#include "mounts/sandbox/sandbox.h"' \
        "broker/keys.c:$(($(lines broker/keys.c) + 1)): includes \"mounts/sandbox/sandbox.h\" from mounts/"
plant "broker_including_fs_fails" broker/audit.c '#include "fs.h"' \
        "broker/audit.c:$(($(lines broker/audit.c) + 1)): includes \"fs.h\" from fs/"
plant "lib_including_a_layer_above_fails" lib/values.c '#include "../broker/policy.h"' \
        "lib/values.c:$(($(lines lib/values.c) + 1)): includes \"../broker/policy.h\" from broker/"
plant "fs_subfolder_including_upward_fails" fs/journal/journal.c '#include <review.h>' \
        "fs/journal/journal.c:$(($(lines fs/journal/journal.c) + 1)): includes \"review.h\" from mounts/"
plant "proxy_including_the_config_fails" proxy/conn.c '#include "config.h"' \
        "proxy/conn.c:$(($(lines proxy/conn.c) + 1)): includes \"config.h\" from mounts/"
plant "broker_including_the_proxy_fails" broker/request.c '#include "proxy/proxy.h"' \
        "broker/request.c:$(($(lines broker/request.c) + 1)): includes \"proxy/proxy.h\" from proxy/"
plant "fs_build_using_a_higher_dependency_fails" fs/meson.build 'x = [sandbox_dep]' \
        "fs/meson.build:$(($(lines fs/meson.build) + 1)): uses 'sandbox_dep'"
exit $failed
