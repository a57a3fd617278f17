#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A whole agent session over `cloister mcp`, through the official MCP
# TypeScript SDK client (tests/npm), as a model would drive it: a small C
# project with a bug, its files read and edited, built and tested with
# run_command (some runs in the background), checkpointed, forked, run in
# the fork, the two compared with diff, exported. First a session of
# run_command alone, whose home and build outputs must last from one
# command to the next (issue 46). mcp-session.mjs holds the checks and
# prints the TAP, with each tool's latency as comments (never asserted).
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

T=$(mktemp -d /tmp/cloister-mcp-session.XXXXXX)
cleanup() {
        for c in "$T"/*.ini; do
                "$CLOISTER" unmount "$c" >/dev/null 2>&1 || true
        done
        rm -rf "$T"
}
trap cleanup EXIT

# The project: calc, whose add() subtracts; its tests say so.
repo=$T/repo
git init -q -b main "$repo"
mkdir -p "$repo/src" "$repo/tests"
cat >"$repo/src/calc.c" <<'EOC'
#include "calc.h"

int calc_add(int a, int b)
{
        return a - b;
}

int calc_mul(int a, int b)
{
        return a * b;
}
EOC
cat >"$repo/src/calc.h" <<'EOC'
int calc_add(int a, int b);
int calc_mul(int a, int b);
EOC
cat >"$repo/src/main.c" <<'EOC'
#include <stdio.h>
#include <stdlib.h>
#include "calc.h"

int main(int argc, char **argv)
{
        if (argc != 4)
                return 2;
        int a = atoi(argv[2]), b = atoi(argv[3]);
        printf("%d\n", argv[1][0] == '+' ? calc_add(a, b) : calc_mul(a, b));
        return 0;
}
EOC
cat >"$repo/tests/run.sh" <<'EOC'
#!/bin/sh
# Each case: op a b expected.
fail=0
while read -r op a b want; do
        got=$(./calc "$op" "$a" "$b")
        if [ "$got" = "$want" ]; then echo "ok $op $a $b"; else echo "FAIL $op $a $b: $got, not $want"; fail=1; fi
done <tests/cases.txt
exit $fail
EOC
printf '+ 1 2 3\n+ 10 5 15\nx 3 4 12\n' >"$repo/tests/cases.txt"
printf 'calc: src/calc.c src/main.c src/calc.h\n\tcc -O0 -o calc src/calc.c src/main.c\n\ntest: calc\n\tsh tests/run.sh\n\n.PHONY: test\n' >"$repo/Makefile"
printf 'calc\n' >"$repo/.gitignore"
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

[limits]
timeout = 10m
EOI

CLOISTER=$CLOISTER CFG=$T/ws.ini REPO=$repo WS=ws SDK=$sdk node "$src/tests/mcp/mcp-session.mjs"
rc=$?
while pgrep -f "cloister mcp .*$T/" >/dev/null; do sleep 0.1; done
for m in $(grep -o " $T/[^ ]*" /proc/self/mounts); do
        echo "not ok - $m is still mounted after the servers ended"
        rc=1
done
exit $rc
