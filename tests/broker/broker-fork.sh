#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Forks have broker identities of their own (docs/cloister-fork.md): two
# forks of one workspace get their own keys, and a token minted for one is
# refused for the other, by its keys and by its name.
. "$(dirname "$0")/lib.sh"

make_workspace ws1 "[scope \"git\"]
audience = https://git.example.com
ttl = 5m
workspaces = ws1 fa fb
hosts = git.example.com
username = x-access-token"
# Its writable layer, as a first mount leaves it: a checkpoint needs one.
mkdir -p "$T/ws1/state/fs/repo"
check_rc checkpoint_of_the_parent 0 "$CLOISTER" checkpoint "$T/ws1.ini" c1
check_rc fork_a 0 "$CLOISTER" fork "$T/ws1.ini" "$T/fa.ini" --from c1 --state "$T/fa/state"
check_rc fork_b 0 "$CLOISTER" fork "$T/ws1.ini" "$T/fb.ini" --from c1 --state "$T/fb/state"
check "fork_configs_name_their_own_workspaces" grep -qx 'name = fa' "$T/fa.ini"
check "fork_configs_leave_the_broker_dir_to_their_state" sh -c "! grep -q '^dir' '$T/fa.ini' '$T/fb.ini'"
start_broker "$T/fa.ini" "$T/fb.ini" || { echo "Bail out! broker did not start"; cat "$T/broker.log"; exit 1; }
check "forks_have_different_keys" sh -c "! cmp -s '$T/fa/state/broker/public.paserk' '$T/fb/state/broker/public.paserk'"
export CLOISTER_BROKER=$(sock fa)
tok=$("$CLOISTER" token issue git)
check "fork_a_issues_a_token" test "${tok#v4.public.}" != "$tok"
check_rc "token_of_fork_a_verifies_for_fork_a" 0 "$CLOISTER" token verify "$tok" --config "$T/fa.ini"
check_rc "token_of_fork_a_is_refused_by_fork_bs_keys" 4 "$CLOISTER" token verify "$tok" --config "$T/fb.ini"
check_rc "token_of_fork_a_is_refused_as_fork_b" 5 \
        "$CLOISTER" token verify "$tok" --keys "$T/fa/state/broker/public.paserk" --workspace fb
done_testing
