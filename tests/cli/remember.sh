#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A mount remembers its config once ($XDG_STATE_HOME/cloister/configs, for
# `cloister list`), asking an index beside the list instead of reading it
# whole (mounts/known.c, issue 48). The index follows the list when its
# user edits or removes it, and a name the index has for another path is
# compared exactly.
set -u
: "${CLOISTER:?CLOISTER must name the cloister binary}"
. "${CLOISTER_SRC:-$(dirname "$0")/../..}/tests/cli/lib.sh"
need_root_fuse "FUSE mounts"

T=$(mktemp -d /tmp/cloister-remember.XXXXXX)
cleanup() {
        for c in "$T"/w*.ini; do
                [ -e "$c" ] && timeout 60 "$CLOISTER" unmount "$c" >/dev/null 2>&1
        done
        unmount_under "$T"
        rm -rf "$T"
}
trap cleanup EXIT
export XDG_CONFIG_HOME=$T/config XDG_STATE_HOME=$T/state HOME=$T/home
mkdir -p "$HOME"
repo_new "$T/src"
list=$XDG_STATE_HOME/cloister/configs
for w in w1 w2 w3; do
        printf '[workspace]\nname = %s\nstate = %s\nmountpoint = %s\n[repo]\nsource = %s\n' \
                "$w" "$T/state-$w" "$T/mnt-$w" "$T/src" >"$T/$w.ini"
done
cycle() { # cycle NAME: mount and unmount it
        "$CLOISTER" mount "$T/$1.ini" >"$T/err" 2>&1 || echo "# mount $1: $(head -1 "$T/err")"
        "$CLOISTER" unmount "$T/$1.ini" >/dev/null 2>&1
}
lines() { grep -cxF "$T/$1.ini" "$list" 2>/dev/null || true; }

cycle w1
cycle w1
cycle w2
[ "$(lines w1)" = 1 ] && [ "$(lines w2)" = 1 ]
ok $? "each_config_is_listed_once_however_often_it_mounts" "$(cat "$list")"

rm "$list"
cycle w1
[ "$(lines w1)" = 1 ] && [ "$(lines w2)" = 0 ]
ok $? "a_list_its_user_removed_is_written_again_from_the_next_mount" "$(cat "$list" 2>&1)"

cycle w2
grep -vxF "$T/w1.ini" "$list" >"$T/list" && cat "$T/list" >"$list"
cycle w2
cycle w1
[ "$(lines w1)" = 1 ] && [ "$(lines w2)" = 1 ]
ok $? "a_line_its_user_deleted_comes_back_once" "$(cat "$list")"

# The index's entry for w1 names another path (as a collision of names would).
entry=$(grep -lxF "$T/w1.ini" "$XDG_STATE_HOME"/cloister/configs.index/* 2>/dev/null | head -1)
[ -n "$entry" ]
ok $? "the_index_holds_an_entry_naming_the_path" "$(ls -la "$XDG_STATE_HOME"/cloister/configs.index)"
[ -n "$entry" ] && printf '%s' "$T/elsewhere.ini" >"$entry"
cycle w1
[ "$(lines w1)" = 1 ]
ok $? "an_entry_naming_another_path_is_compared_exactly" "$(cat "$list")"

cycle w3
out=$("$CLOISTER" list 2>&1)
grep -q w1 <<<"$out" && grep -q w2 <<<"$out" && grep -q w3 <<<"$out"
ok $? "cloister_list_shows_every_remembered_workspace" "$out"

echo "1..$n"
[ "$fails" = 0 ]
