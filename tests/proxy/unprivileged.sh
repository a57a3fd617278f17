#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# unprivileged.sh: tests/proxy/sandbox.sh again, run by an ordinary user
# (nobody). The proxy's listener then reaches the sandbox's network
# namespace through the user namespace that owns it, a different path from
# root's; git, curl and the kill-mid-run case must hold on both.

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root to become nobody"; exit 77; }
command -v setpriv >/dev/null || { echo "1..0 # SKIP setpriv is not installed"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "1..0 # SKIP there is no user nobody"; exit 77; }
[ -r /dev/fuse ] && [ -w /dev/fuse ] || [ "$(stat -c %a /dev/fuse 2>/dev/null)" = 666 ] ||
        { echo "1..0 # SKIP /dev/fuse is closed to ordinary users"; exit 77; }

home=$(mktemp -d /tmp/cloister-nobody.XXXXXX)
chown nobody "$home"
trap 'rm -rf "$home"' EXIT
HOME=$home setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
        bash "$CLOISTER_SRC/tests/proxy/sandbox.sh"
