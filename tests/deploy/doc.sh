#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# doc.sh: docs/deploy.md's container steps, run as the page writes them,
# so that the page and what works cannot drift apart. The steps are the
# page's ```sh blocks whose first line is "# deploy step N: WHAT"; they
# are one script, pasted in order into a root shell at the top of a clone.
#
# What runs, and where:
#   - everywhere: the page has steps 1 to 4 in order, each is valid bash,
#     every path under $SRC it names exists in the tree, and the seccomp
#     profile is named by an absolute path;
#   - as root: step 2 (the repository) runs, and what it made is what the
#     container needs: committed and clean, owned by the container's root
#     ($IDBASE), with an origin whose host the quickstart's policy names;
#   - as root with podman, runc, /dev/fuse and the image tests/run's deploy
#     stage built (CLOISTER_OCI_IMAGE): step 3 runs the quickstart in a
#     container to a patch that applies, and step 4 runs the Kubernetes
#     task under podman kube play to a patch in the patches volume.
# Step 1 (building the image) is not run here: tests/run's deploy stage
# runs that same command, packaging/oci/build, and hands over its image.
#
# Only the page's choices of places are changed, line for line: SRC is
# this tree, WORK and OUT a temporary directory, and `podman` keeps its
# storage in the test's own directory (tests/deploy/lib.sh's), nothing of
# the machine's. TAP; skips with the reason where the machine can't.
set -u

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
page=$src/docs/deploy.md
n=0
fails=0
ok() { # ok STATUS NAME
        n=$((n + 1))
        if [ "$1" = 0 ]; then echo "ok $n - $2"; else
                echo "not ok $n - $2"
                fails=$((fails + 1))
        fi
}
skip() { # skip NAME REASON
        n=$((n + 1))
        echo "ok $n - $1 # SKIP $2"
}
finish() {
        echo "1..$n"
        [ "$fails" = 0 ]
        exit
}

D=$(mktemp -d /var/tmp/cloister-deploy-doc.XXXXXX)
chmod 0755 "$D"
trap 'rm -rf --one-file-system "$D"' EXIT

# The steps, one file each: $D/step-N.sh.
awk -v dir="$D" '
        /^```sh[ \t]*$/ { inblock = 1; first = 1; next }
        /^```[ \t]*$/ && inblock { inblock = 0; out = ""; next }
        inblock && first {
                first = 0
                if (match($0, /^# deploy step [0-9]+:/)) {
                        split($0, w, " ")
                        out = dir "/step-" substr(w[4], 1, length(w[4]) - 1) ".sh"
                        print > (dir "/order")
                }
        }
        inblock && out != "" { print > out }
' "$page"
order=$(sed -E 's/^# deploy step ([0-9]+):.*/\1/' "$D/order" 2>/dev/null | tr '\n' ' ')
[ "$order" = "1 2 3 4 " ]
ok $? "docs/deploy.md holds deploy steps 1 to 4, in order (found: ${order:-none})"
for i in 1 2 3 4; do
        bash -n "$D/step-$i.sh" 2>"$D/syntax.log"
        rc=$?
        [ "$rc" = 0 ] || sed 's/^/# /' "$D/syntax.log"
        ok $rc "step $i is valid bash: $(head -n 1 "$D/step-$i.sh" | sed 's/^# deploy //')"
done
missing=$(cat "$D"/step-*.sh | grep -oE '\$SRC/[A-Za-z0-9_./-]+' | sort -u |
        while read -r p; do [ -e "$src/${p#\$SRC/}" ] || echo "$p"; done)
[ -z "$missing" ]
ok $? "every path under \$SRC the steps name is in the tree${missing:+ (missing: $missing)}"
! grep -qE 'seccomp=[^"$/]' "$D"/step-*.sh && grep -q 'seccomp=\$SRC/deploy/seccomp/cloister.json' "$D/step-3.sh"
ok $? "the seccomp profile is named by an absolute path"

# The page's variables, its places moved here; then each step after them.
settings() {
        grep -hE '^[A-Z]+=' "$D/step-1.sh" "$D/step-2.sh" | sed -E \
                -e "s|^SRC=.*|SRC='$src'|" -e "s|^WORK=.*|WORK='$D/work'|" -e "s|^OUT=.*|OUT='$D/oci'|"
}
script() { # script STEP...: the settings, then the steps, stopping at the first failure
        echo 'set -e -o pipefail'
        settings
        for i in "$@"; do
                # The steps' own settings stay as the settings above made them.
                grep -vE '^(SRC|WORK|OUT|IDBASE)=' "$D/step-$i.sh"
        done
}

if [ "$(id -u)" != 0 ]; then
        skip "step 2 makes the repository the container needs" "needs root (chown to the container's root)"
        finish
fi
script 2 >"$D/run-2.sh"
(cd "$src" && bash "$D/run-2.sh") >"$D/step-2.log" 2>&1
rc=$?
[ "$rc" = 0 ] || sed 's/^/# /' "$D/step-2.log"
ok $rc "step 2 runs as written"
eval "$(settings)"
REPO=$WORK/repo
git -c safe.directory='*' -C "$REPO" rev-parse -q --verify HEAD >/dev/null &&
        [ -z "$(git -c safe.directory='*' -C "$REPO" status --porcelain)" ]
ok $? "step 2's repository has its base committed, and nothing else"
[ "$(stat -c %u:%g "$REPO" "$REPO/.git/HEAD" | sort -u)" = "$IDBASE:$IDBASE" ]
ok $? "step 2's repository belongs to the container's root (uid $IDBASE on the host)"
origin_host=$(git -c safe.directory='*' -C "$REPO" remote get-url origin | sed -E 's|^[a-z]+://([^/:]+).*|\1|')
grep -qE "^hosts = (.*[ ,])?$origin_host([ ,].*)?$" "$src/examples/policy.ini"
ok $? "step 2's origin host ($origin_host) is the one the quickstart's policy names"

# Steps 3 and 4 need a podman that runs containers, and the image.
why=""
for t in podman runc; do command -v "$t" >/dev/null || why="$t is not installed (tests/install-deps --deploy)"; done
[ -c /dev/fuse ] || why="no /dev/fuse on this machine"
[ -z "$why" ] && [ ! -f "${CLOISTER_OCI_IMAGE:-}" ] &&
        why="no image: tests/run's deploy stage builds it (CLOISTER_OCI_IMAGE)"
if [ -n "$why" ]; then
        skip "steps 3 and 4 run as written" "$why"
        finish
fi
# tests/deploy/lib.sh: the test's own podman (storage, configuration), the
# image loaded into it, skips where podman can run no container here.
saved_n=$n saved_fails=$fails
. "$src/tests/deploy/lib.sh"
n=$saved_n fails=$saved_fails
trap 'cleanup; rm -rf --one-file-system "$D"' EXIT
image_load
# The steps run in a bash of their own: the places are written into the
# function, which that bash imports (T itself is not exported).
eval "podman() { command podman --root '$T/storage' --runroot '$T/run' --tmpdir '$T/libpod' \"\$@\"; }"
export -f podman
[ "$(bash -c "podman info --format '{{.Store.GraphRoot}}'" 2>/dev/null)" = "$T/storage" ] ||
        { echo "Bail out! the steps' podman would not use the test's storage"; exit 1; }

script 2 3 >"$D/run-3.sh"
(cd "$src" && bash "$D/run-3.sh") >"$D/step-3.log" 2>&1
rc=$?
[ "$rc" = 0 ] || show "$D/step-3.log" 30
ok $rc "step 3 runs the quickstart in a container as written"
patch_of "$D/step-3.log" >"$D/patch"
git clone -q "$D/work/repo" "$D/clone" 2>/dev/null &&
        git -C "$D/clone" apply "$D/patch" 2>"$D/apply.err" && (cd "$D/clone" && ./test.sh >/dev/null)
rc=$?
[ "$rc" = 0 ] || show "$D/apply.err"
ok $rc "step 3's patch applies to a clone outside, and the demo's tests pass with it"

if ! command -v catatonit >/dev/null && [ ! -x /usr/libexec/podman/catatonit ]; then
        skip "step 4 runs the Kubernetes task under podman kube play" "catatonit is not installed"
        finish
fi
script 2 4 >"$D/run-4.sh"
(cd "$src" && bash "$D/run-4.sh") >"$D/step-4.log" 2>&1
rc=$?
[ "$rc" = 0 ] || show "$D/step-4.log" 30
ok $rc "step 4 runs the Kubernetes task under podman kube play as written"
grep -qx 0 "$D/step-4.log" && grep -q '^diff --git a/greet.sh b/greet.sh' "$D/step-4.log"
ok $? "step 4's agent exits 0, and its patch comes out of the patches volume"
finish
