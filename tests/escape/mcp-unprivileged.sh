#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# mcp-unprivileged.sh: the MCP escape cases (mcp.py) again, with `cloister
# mcp` run by an ordinary user (nobody): no identity switch, no cgroups,
# the file tools acting as that user. Both ways must hold.
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root to become nobody"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "1..0 # SKIP /usr/bin/python3 is not installed"; exit 77; }
command -v setpriv >/dev/null || { echo "1..0 # SKIP setpriv is not installed"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "1..0 # SKIP there is no user nobody"; exit 77; }

home=$(mktemp -d /tmp/cloister-nobody.XXXXXX)
chown nobody "$home"
trap 'rm -rf "$home"' EXIT
HOME=$home TMPDIR=$home setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
        /usr/bin/python3 "$CLOISTER_SRC/tests/escape/mcp.py"
