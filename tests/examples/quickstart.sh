#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/quickstart, the first command of the README, as a newcomer runs
# it: it must pass from a fresh state, again with the state of its last run,
# from another working directory and after `rm -rf` of its state; each time
# its own checks (check --strict, the agent's run, the patch applying to a
# fresh clone) must hold, and nothing may be left mounted. It runs this
# build's cloister (CLOISTER) with its state and repository under a
# directory of the test's own (CLOISTER_QUICKSTART_ROOT), so a user's own
# quickstart is never touched. TAP.
set -u
: "${CLOISTER:?run through meson test}"
: "${CLOISTER_SRC:?run through meson test}"

skip_all() {
        echo "1..0 # SKIP $*"
        exit 77
}
[ "$(id -u)" = 0 ] || skip_all "the quickstart runs as root (README), and mounts FUSE"
[ -c /dev/fuse ] || skip_all "no /dev/fuse: the quickstart mounts a workspace"
command -v bwrap >/dev/null || skip_all "bubblewrap is not installed"
command -v git >/dev/null || skip_all "git is not installed"

n=0
fails=0
ok() { # ok STATUS NAME
        n=$((n + 1))
        if [ "$1" = 0 ]; then echo "ok $n - $2"; else
                echo "not ok $n - $2"
                fails=$((fails + 1))
        fi
}

# An ASan client reserves ~20 TiB of shadow address space, more than the
# sandbox's RLIMIT_AS allows, so an ASan build's `cloister token issue`
# cannot start inside the sandbox: there the agent asks for no token, and
# the plain build's run of this test checks the token line.
token_line="agent: got a token: v4.public."
if ldd "$CLOISTER" 2>/dev/null | grep -q libasan; then
        echo "# ASan build: the agent asks for no token (the plain build checks it)"
        export CLOISTER_QUICKSTART_TOKEN=0
        token_line="agent: the mirror /opt/licenses is read-only"
fi

root=$(mktemp -d /tmp/cloister-qs.XXXXXX)
export CLOISTER_QUICKSTART_ROOT=$root/root
cleanup() {
        [ -f "$root/root/config/quickstart.ini" ] &&
                "$CLOISTER" unmount "$root/root/config/quickstart.ini" >/dev/null 2>&1
        grep -qF " $root/" /proc/self/mounts || rm -rf "$root"
}
trap cleanup EXIT

# run_qs NAME DIR: the quickstart, run from DIR; it must exit 0, print what
# each step promises, and leave no mount.
run_qs() {
        local name=$1 dir=$2 rc good=0
        (cd "$dir" && "$CLOISTER_SRC/examples/quickstart") >"$root/out" 2>"$root/err"
        rc=$?
        if [ "$rc" != 0 ]; then
                echo "# exit $rc"
                tail -n 15 "$root/out" "$root/err" | sed 's/^/# /'
                good=1
        fi
        for want in "quickstart.ini: ok" "agent: ~/.ssh exists? no" \
                "HOME=/home/agent holds: []" "ok - greet agent -> Hello, agent!" \
                "agent: the mirror /opt/licenses is read-only" "$token_line" \
                " 3 files changed, 2 insertions(+), 2 deletions(-)" \
                "+printf 'Hello, %s!\\n' \"\${1:-world}\"" \
                "the patch applies with git apply, and ./test.sh passes with it" \
                "the report: $root/root/quickstart-report.html"; do
                grep -qF -- "$want" "$root/out" || {
                        echo "# the output lacks: $want"
                        good=1
                }
        done
        if grep -qF " $root/root/" /proc/self/mounts; then
                echo "# a mount is left: $(grep -F " $root/root/" /proc/self/mounts)"
                good=1
        fi
        ok $good "$name"
}

run_qs "the_quickstart_passes_with_no_state_at_all" "$CLOISTER_SRC"
run_qs "the_quickstart_passes_again_over_the_state_of_its_last_run" "$CLOISTER_SRC"
run_qs "the_quickstart_passes_from_another_working_directory" /
rm -rf "$root/root/quickstart"
run_qs "the_quickstart_passes_after_rm_rf_of_its_state" "$root"
rm -rf "$root/root"
run_qs "the_quickstart_passes_after_rm_rf_of_everything_it_made" "$root"

# The report's numbers are those of diff --stat, log --runs and audit verify.
r=$root/root/quickstart-report.html
grep -qF "Changes (3 files, +2 -2)" "$r" && grep -qF "<h2>Commands (1)</h2>" "$r" &&
        grep -qF "audit log chain verified" "$r" && grep -qF "run record chain verified" "$r" &&
        grep -qF "journal complete" "$r"
ok $? "the_quickstart_report_matches_diff_log_and_audit"

# Its broker printed nothing of its own: the start and stop notes are -v's.
grep -q "cloister broker:" "$root/out" "$root/err"
[ $? = 1 ]
ok $? "the_quickstart_run_prints_no_broker_start_or_stop_notes"

# The state it leaves passes the strict check by itself, the secret it
# stored is a generated one, and the repository it made is unchanged.
"$CLOISTER" check --strict "$root/root/config/quickstart.ini" >/dev/null 2>&1
ok $? "the_state_it_leaves_passes_check_strict"
"$CLOISTER" secret list --config "$root/root/config/quickstart.ini" 2>/dev/null | grep -qx deploy-token
ok $? "the_demo_secret_is_stored_under_the_name_the_policy_gives"
[ -z "$(git -C "$root/root/quickstart-repo" status --porcelain)" ] &&
        [ "$(git -C "$root/root/quickstart-repo" remote get-url origin)" = https://git.example.com/demo/greet.git ]
ok $? "the_repository_is_clean_and_its_origin_is_the_policy_git_host"

# Strict stays strict: an origin the git scope does not name fails the
# quickstart at its check, before anything runs.
git -C "$root/root/quickstart-repo" remote set-url origin https://elsewhere.example.org/x.git
"$CLOISTER" check --strict "$root/root/config/quickstart.ini" >"$root/check.out" 2>&1
[ $? = 1 ] && grep -q "matches no git remote" "$root/check.out"
ok $? "check_strict_still_fails_when_the_origin_is_not_the_scope_host"

echo "1..$n"
[ "$fails" = 0 ]
