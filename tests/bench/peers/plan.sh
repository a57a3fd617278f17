#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# TAP: the plan of tests/bench/peers/run (its --list, which installs, mounts
# and times nothing), and the lock files that pin what it measures. The
# bench itself is run by hand; this only keeps it runnable: every row of
# issue 45's table is still in the plan, both sandboxes are pinned to an
# exact version with an integrity hash, and `tests/bench/run --peers`
# reaches it. No timing is checked.
set -u

: "${CLOISTER_SRC:?set by meson}"
peers="$CLOISTER_SRC/tests/bench/peers"
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 77; }

# pinned LOCK PACKAGE: the lock pins PACKAGE to one version with a sha512 hash.
pinned() {
        python3 - "$1" "$2" <<'EOF'
import json, re, sys
p = json.load(open(sys.argv[1]))["packages"].get("node_modules/" + sys.argv[2], {})
ok = re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", p.get("version", "")) and \
    p.get("integrity", "").startswith("sha512-")
sys.exit(0 if ok else 1)
EOF
}
# all_hashed LOCK: more than 100 packages, each but the root with its hash.
all_hashed() {
        python3 - "$1" <<'EOF'
import json, sys
pk = json.load(open(sys.argv[1]))["packages"]
bare = [k for k, v in pk.items() if v.get("integrity") is None and not v.get("link")]
sys.exit(0 if len(pk) > 100 and bare == [""] else 1)
EOF
}

n=0
ok() { # COND DESCRIPTION
        n=$((n + 1))
        if eval "$1"; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}

echo "1..16"
# shellcheck disable=SC2034 # both read by the conditions ok evaluates
plan=$("$peers/run" --list 2>&1) rc=$?
ok '[ $rc -eq 0 ]' "--list exits 0"
for row in '`git status`' '`find` + stat' 'read every tracked file' '`grep -r`' '`git grep`' \
        'create + delete 5,000 files' 'untar a real `node_modules`' 'write 64 MiB + fsync' \
        'start-up of `true`' 'test suite: 25 of git'; do
        ok 'grep -qF "row: $row" <<<"$plan"' "the plan has the row: $row"
done

lock="$peers/sandboxes/package-lock.json"
for pkg in @anthropic-ai/sandbox-runtime @openai/codex; do
        ok "pinned '$lock' '$pkg'" "$pkg is pinned to one version with an integrity hash"
done
ok "all_hashed '$peers/node-modules/package-lock.json'" \
        "the untar row's node_modules is pinned, every package with its hash"
ok '"$CLOISTER_SRC/tests/bench/run" --peers --list 2>&1 | grep -q "^columns: native; srt "' \
        "tests/bench/run --peers reaches it"
ok '! "$peers/run" --rounds 0 --list >/dev/null 2>&1' "--rounds 0 is refused"
