#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Interop: a token made by the broker verifies with an independent PASETO
# implementation, the npm `paseto` package under Node, using only the
# published PASERK public key and the documented implicit assertion.
# Skips (77) without node/npm or when the registry is unreachable.
. "$(dirname "$0")/lib.sh"
command -v node >/dev/null || skip_all "node is not installed"
command -v npm >/dev/null || skip_all "npm is not installed"
mkdir -p "$T/npm"
if ! (cd "$T/npm" && timeout 300 npm install --no-audit --no-fund --silent --prefix "$T/npm" \
        paseto@3 >"$T/npm.log" 2>&1); then
        skip_all "cannot install the npm paseto package (registry unreachable?)"
fi

make_workspace ws1
start_broker "$T/ws1.ini" || { echo "Bail out! broker did not start"; exit 1; }
tok=$("$CLOISTER" token issue git --socket "$(sock ws1)")
pub=$(grep '^k4.public' "$T/ws1/state/broker/public.paserk" | tail -1)

cat >"$T/verify.js" <<'EOJ'
const { V4 } = require(process.env.PASETO_DIR + '/node_modules/paseto');
const [token, key, assertion, audience] = process.argv.slice(2);
V4.verify(token, key, { assertion, audience, issuer: 'cloister', complete: true,
                        clockTolerance: '30s' })
  .then((r) => { console.log(JSON.stringify({ payload: r.payload, footer: r.footer.toString() })); })
  .catch((e) => { console.error(e.code || e.message); process.exit(1); });
EOJ
export PASETO_DIR=$T/npm
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
