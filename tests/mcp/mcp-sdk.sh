#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cloister mcp` end to end with the official MCP TypeScript SDK client
# (tests/npm pins it; tests/install-deps --tests installs it): the tools,
# their schemas, every file tool, a real build and test, diff and export,
# background runs, cancellation, a timeout, each path-escape attempt and
# malformed JSON-RPC (mcp-sdk.mjs holds the checks and prints the TAP).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
: "${CLOISTER:?CLOISTER must name the cloister binary}"
skip_all() {
        echo "1..0 # SKIP $1"
        exit 77
}
[ "$(id -u)" = 0 ] || skip_all "needs root (FUSE mounts and the sandbox's agent identity)"
[ -e /dev/fuse ] || skip_all "FUSE is not available (/dev/fuse missing)"
command -v bwrap >/dev/null || skip_all "bubblewrap is not installed"
command -v node >/dev/null || skip_all "node is not installed (tests/install-deps --tests installs it)"
sdk=$src/tests/npm/node_modules/@modelcontextprotocol/sdk
[ -d "$sdk" ] || skip_all "tests/npm is not installed: run tests/install-deps --tests (npm ci)"
command -v make >/dev/null && command -v cc >/dev/null || skip_all "make and cc are needed for the build"

T=$(mktemp -d /tmp/cloister-mcp.XXXXXX)
cleanup() {
        "$CLOISTER" unmount "$T/ws.ini" >/dev/null 2>&1 || true
        rm -rf "$T" "/tmp/${MARK:-none}"-* 2>/dev/null || true
}
trap cleanup EXIT
MARK=cloistermcp$$

repo=$T/repo
git init -q -b main "$repo"
mkdir -p "$repo/src"
cat >"$repo/src/main.c" <<'EOC'
#include <stdio.h>
int main(void) { puts("all tests passed"); return 0; }
EOC
printf 'test:\n\tcc -o /tmp/t src/main.c && /tmp/t\n' >"$repo/Makefile"
printf 'hello\nworld\n' >"$repo/a.txt"
printf 'one\ntwo\nthree\nfour\n' >"$repo/lines.txt"
head -c 4096 /dev/urandom >"$repo/blob.bin"
git -C "$repo" add -A
git -C "$repo" -c user.name=t -c user.email=t@example.com commit -qm base

cat >"$T/ws.ini" <<EOI
[workspace]
name = ws
state = $T/state
mountpoint = $T/state/mnt

[repo]
source = $repo
rev = HEAD
path = /workspace

[home]
path = /home/agent

[mirror "licenses"]
source = /usr/share/common-licenses
path = /opt/licenses

[limits]
timeout = 10m
EOI

CLOISTER=$CLOISTER CFG=$T/ws.ini REPO=$repo WS=ws MARK=$MARK SDK=$sdk DOCS=$src/docs \
        node "$src/tests/mcp/mcp-sdk.mjs"
rc=$?
# The server ends on its own once its stdin has (and unmounts what it mounted).
while pgrep -f "cloister mcp .*$T/ws.ini" >/dev/null; do sleep 0.1; done
# Nothing is left behind: the server unmounted what it mounted.
if grep -q " $T/state/mnt " /proc/self/mounts; then
        echo "not ok - the workspace is still mounted after the server ended"
        echo "# $(grep " $T/state/mnt " /proc/self/mounts)"
        rc=1
fi
exit $rc
