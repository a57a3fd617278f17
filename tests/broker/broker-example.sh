#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/policy.ini is a real, working policy for the quickstart workspace:
# the broker serves it, git gets a short-lived token, the rest is refused.
. "$(dirname "$0")/lib.sh"
: "${CLOISTER_SRC:?}"

mkdir -p "$T/repo"
sed -e "s|^state = .*|state = $T/quickstart/state|" -e "s|^mountpoint = .*|mountpoint = $T/quickstart/state/mnt|" \
    -e "s|^source = %R|source = $T/repo|" -e "s|^policy = .*|policy = $CLOISTER_SRC/examples/policy.ini|" \
    "$CLOISTER_SRC/examples/quickstart.ini" >"$T/quickstart.ini"
check "example_config_names_the_quickstart_workspace" grep -q '^name = quickstart$' "$T/quickstart.ini"
start_broker "$T/quickstart.ini" || { echo "Bail out! broker did not start on the example"; cat "$T/broker.log"; exit 1; }
export CLOISTER_BROKER=$(sock quickstart)

check_rc "example_policy_grants_git" 0 "$CLOISTER" token issue git --json
check "example_git_token_lives_five_minutes" grep -q '"ttl": 300' "$T/out"
check_rc "example_git_ttl_is_capped_at_fifteen_minutes" 0 "$CLOISTER" token issue git --ttl 86400 --json
check "example_clamp_is_reported" grep -q '"ttl": 900' "$T/out"
check_rc "example_policy_maps_the_git_host" 0 "$CLOISTER" token issue --host git.example.com
check_rc "example_policy_refuses_other_scopes" 1 "$CLOISTER" token issue admin
tok=$("$CLOISTER" token issue deploy)
check_rc "example_deploy_token_is_for_the_deploy_audience" 0 \
        "$CLOISTER" token verify "$tok" --config "$T/quickstart.ini" --aud https://deploy.example.com --scope deploy
done_testing
