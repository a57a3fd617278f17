#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# unprivileged.sh: the escape suite again, run by an ordinary user (nobody),
# since cloister must hold both ways and some outcomes differ (the agent's
# kernel uid is no longer 0; there are no cgroups).

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root to become nobody"; exit 77; }
command -v setpriv >/dev/null || { echo "1..0 # SKIP setpriv is not installed"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "1..0 # SKIP there is no user nobody"; exit 77; }

home=$(mktemp -d /tmp/cloister-nobody.XXXXXX)
chown nobody "$home"
trap 'rm -rf "$home"' EXIT
HOME=$home setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
        bash "$CLOISTER_SRC/tests/escape/escape.sh"
