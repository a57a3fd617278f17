#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Interop: a token made by the broker verifies with an independent PASETO
# implementation, the npm `paseto` package under Node, using only the
# published PASERK public key (as `cloister broker public-key` prints it)
# and the documented implicit assertion. The package is pinned in
# tests/npm/package-lock.json; tests/install-deps --tests installs it.
. "$(dirname "$0")/lib.sh"
command -v node >/dev/null || skip_all "node is not installed (tests/install-deps --tests installs it)"
[ -d "$CLOISTER_SRC/tests/npm/node_modules/paseto" ] ||
        skip_all "tests/npm is not installed: run tests/install-deps --tests (npm ci)"

make_workspace ws1
start_broker "$T/ws1.ini" || { echo "Bail out! broker did not start"; exit 1; }
tok=$("$CLOISTER" token issue git --socket "$(sock ws1)")
pub=$("$CLOISTER" broker public-key "$T/ws1.ini" | tail -1)

cat >"$T/verify.js" <<'EOJ'
const { V4 } = require(process.env.PASETO_DIR + '/node_modules/paseto');
const [token, key, assertion, audience] = process.argv.slice(2);
V4.verify(token, key, { assertion, audience, issuer: 'cloister', complete: true,
                        clockTolerance: '30s' })
  .then((r) => { console.log(JSON.stringify({ payload: r.payload, footer: r.footer.toString() })); })
  .catch((e) => { console.error(e.code || e.message); process.exit(1); });
EOJ
export PASETO_DIR=$CLOISTER_SRC/tests/npm
check_rc "node_paseto_verifies_a_broker_token" 0 \
        node "$T/verify.js" "$tok" "$pub" '{"workspace":"ws1"}' https://git.example.com
check "node_sees_the_workspace_as_sub" grep -q '"sub":"ws1"' "$T/out"
check "node_sees_the_scope_claim" grep -q '"scope":"git"' "$T/out"
check "node_sees_the_kid_footer" grep -q 'k4.pid.' "$T/out"
check_rc "node_paseto_rejects_it_for_another_workspace" 1 \
        node "$T/verify.js" "$tok" "$pub" '{"workspace":"ws2"}' https://git.example.com
check_rc "node_paseto_rejects_it_for_another_audience" 1 \
        node "$T/verify.js" "$tok" "$pub" '{"workspace":"ws1"}' https://evil.example.com
done_testing
