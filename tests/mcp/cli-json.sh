#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CLI's programmatic surface: --json of run, diff, export, mount, status
# and list, each parsed and checked against the schema its manual page
# gives; `cloister init` (a strict-clean config, home toolchains as mirrors
# on PATH, refusals); `cloister list` (what this user's configs know);
# [mirror] bin and env, and their errors.
set -u
: "${CLOISTER:?CLOISTER must name the cloister binary}"
n=0
fails=0
ok() { # ok STATUS NAME [WHY]
        n=$((n + 1))
        if [ "$1" = 0 ]; then echo "ok $n - $2"; else
                echo "not ok $n - $2"
                [ -n "${3:-}" ] && printf '%s\n' "$3" | head -20 | sed 's/^/# /'
                fails=$((fails + 1))
        fi
}
skip_all() {
        echo "1..0 # SKIP $1"
        exit 77
}
[ "$(id -u)" = 0 ] || skip_all "needs root (FUSE mounts and the sandbox's agent identity)"
[ -e /dev/fuse ] || skip_all "FUSE is not available (/dev/fuse missing)"
command -v bwrap >/dev/null || skip_all "bubblewrap is not installed"

T=$(mktemp -d /tmp/cloister-cli-json.XXXXXX)
trap '"$CLOISTER" unmount "$T/ws.ini" >/dev/null 2>&1; rm -rf "$T"' EXIT
# This user's XDG folders are the test's own: list sees only what it made.
export XDG_CONFIG_HOME=$T/xdg-config XDG_STATE_HOME=$T/xdg-state

# jq-less JSON checks: python3 evaluates an expression over the parsed line.
jcheck() { # jcheck NAME JSON PYTHON-EXPR
        if python3 -c 'import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if eval(sys.argv[2]) else 1)' \
                "$2" "$3" 2>"$T/py.err"; then
                ok 0 "$1"
        else
                ok 1 "$1" "json: $(printf %s "$2" | head -c 600)
expr: $3
$(cat "$T/py.err")"
        fi
}

repo=$T/repo
git init -q -b main "$repo"
printf 'hello\n' >"$repo/a.txt"
git -C "$repo" add -A
git -C "$repo" -c user.name=t -c user.email=t@example.com commit -qm base
cat >"$T/ws.ini" <<EOF
[workspace]
name = js
state = $T/state

[repo]
source = $repo

[limits]
timeout = 10m
processes = 64
EOF

# --- mount --json ---------------------------------------------------------------
out=$("$CLOISTER" mount --json "$T/ws.ini")
ok $? "mount_json_exits_0"
jcheck "mount_json_names_the_mount" "$out" \
        "j['workspace']=='js' and j['mountpoint']=='$T/state/mnt' and isinstance(j['pid'],int) and j['already_mounted'] is False"
out=$("$CLOISTER" mount --json "$T/ws.ini")
rc=$?
ok $([ $rc = 3 ] && echo 0 || echo 1) "mount_json_of_a_mounted_workspace_exits_3" "rc=$rc"
jcheck "mount_json_says_already_mounted" "$out" "j['already_mounted'] is True"

# --- run --json -------------------------------------------------------------------
"$CLOISTER" run --json "$T/ws.ini" -- sh -c 'echo out; echo a >new.txt; exit 7' >"$T/out" 2>"$T/err"
rc=$?
ok $([ $rc = 7 ] && [ "$(cat "$T/out")" = out ] && echo 0 || echo 1) "run_json_keeps_the_commands_stdout_and_status" "rc=$rc"
jcheck "run_json_summary_is_the_last_line_of_stderr" "$(tail -1 "$T/err")" \
        "j['workspace']=='js' and j['exit_code']==7 and j['signal'] is None and j['timed_out'] is False and j['limits_hit']==[] and j['duration_ms']>=0"
# Ctrl-C once the command runs (its file is there), not while the sandbox is
# still being set up: that is another answer (125), and a race under load.
"$CLOISTER" run --json "$T/ws.ini" -- sh -c 'echo >.started-int; sleep 30' 2>"$T/err" >/dev/null &
pid=$!
while [ ! -e "$T/state/mnt/workspace/.started-int" ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done
kill -INT $pid
wait $pid
rc=$?
"$CLOISTER" run "$T/ws.ini" -- rm -f .started-int
jcheck "run_json_after_ctrl_c_says_signal_2" "$(tail -1 "$T/err")" \
        "j['exit_code']==130 and j['signal']==2"
ok $([ $rc = 130 ] && echo 0 || echo 1) "run_json_after_ctrl_c_exits_130" "rc=$rc"
# As root, the sandbox's memory cgroup counts its OOM kills: 4 processes of 120M in 200M.
if grep -qE '^memory[[:space:]]+[0-9]+[[:space:]]+[0-9]+[[:space:]]+1' /proc/cgroups &&
        command -v python3 >/dev/null; then
        cat >"$T/mem.ini" <<EOF
[workspace]
name = jsmem
state = $T/memstate

[repo]
source = $repo

[limits]
memory = 200M
EOF
        "$CLOISTER" run --json "$T/mem.ini" -- sh -c 'for i in 1 2 3 4; do python3 -c "b = bytearray(120 << 20); import time; time.sleep(3)" & done; wait' \
                >/dev/null 2>"$T/err"
        jcheck "run_json_names_the_memory_limit_when_it_killed" "$(tail -1 "$T/err")" \
                "'memory' in j['limits_hit']"
else
        n=$((n + 1))
        echo "ok $n - run_json_names_the_memory_limit_when_it_killed # SKIP no memory cgroup controller (or no python3) here"
fi
cat >"$T/bad.ini" <<EOF
[workspace]
name = js2
state = $T/state2
mountpoint = $T/state/mnt

[repo]
source = $repo
EOF
"$CLOISTER" run --json "$T/bad.ini" -- true >/dev/null 2>"$T/err"
rc=$?
jcheck "run_json_of_a_run_that_could_not_start_has_error" "$(tail -1 "$T/err")" \
        "j['exit_code']==125 and 'another workspace' in j['error']"
ok $([ $rc = 125 ] && echo 0 || echo 1) "run_json_that_could_not_start_exits_125" "rc=$rc"
"$CLOISTER" shell --json "$T/ws.ini" </dev/null >/dev/null 2>&1
ok $([ $? = 2 ] && echo 0 || echo 1) "shell_refuses_json"

# --- diff --json ------------------------------------------------------------------
out=$("$CLOISTER" diff --json --stat "$T/ws.ini")
jcheck "diff_json_stat_lists_the_file" "$out" \
        "j['changed']==1 and j['files'][0]=={'path':'new.txt','status':'added','added':1,'removed':0,'binary':False} and j['home']==[] and j['ignored']==0"
out=$("$CLOISTER" diff --json "$T/ws.ini")
jcheck "diff_json_has_the_patch" "$out" "'+++ b/new.txt' in j['patch'] and j['bytes']==len(j['patch'].encode())"
"$CLOISTER" diff --json --name-status "$T/ws.ini" >/dev/null 2>&1
ok $([ $? = 2 ] && echo 0 || echo 1) "diff_json_refuses_name_status"

# --- export --json ----------------------------------------------------------------
out=$("$CLOISTER" export --json --commit "$T/ws.ini")
jcheck "export_json_names_the_ref_and_commit" "$out" \
        "j['ref']=='refs/cloister/js' and len(j['commit'])==40 and j['replaced'] is None and j['commits']==1"
commit=$(git -C "$repo" rev-parse refs/cloister/js)
jcheck "export_json_commit_is_the_ref" "$out" "j['commit']=='$commit'"
"$CLOISTER" run "$T/ws.ini" -- sh -c 'echo b >>new.txt'
out=$("$CLOISTER" export --json --commit "$T/ws.ini")
jcheck "export_json_says_what_it_replaced" "$out" "j['replaced']=='$commit'"
"$CLOISTER" export --json --mbox "$T/ws.ini" >/dev/null 2>&1
ok $([ $? = 2 ] && echo 0 || echo 1) "export_json_refuses_mbox"

# --- status --json and list --json --------------------------------------------------
out=$("$CLOISTER" status --json "$T/ws.ini")
jcheck "status_json_schema" "$out" \
        "j['name']=='js' and j['mounted'] is True and j['bytes_used']>0 and j['files_used']>0 and j['runs_live']==0 and j['limits']['processes']==64 and j['limits']['timeout']==600 and j['broker'] is None and j['proxy'] is None and j['network']=='none' and j['last_export']['ref']=='refs/cloister/js' and j['state']=='$T/state'"
out=$("$CLOISTER" status "$T/ws.ini")
ok $(grep -q '^mount  *mounted at' <<<"$out" && grep -q '^last export refs/cloister/js' <<<"$out" && echo 0 || echo 1) \
        "status_prints_for_a_person" "$out"
out=$("$CLOISTER" list --json)
jcheck "list_json_has_the_mounted_workspace" "$out" \
        "[(w['mounted'], w['config']) for w in j['workspaces'] if w['name']=='js']==[(True, '$T/ws.ini')]"
"$CLOISTER" unmount "$T/ws.ini"
out=$("$CLOISTER" list --json)
jcheck "list_keeps_an_unmounted_workspace" "$out" \
        "[(w['mounted'], w['bytes_used']) for w in j['workspaces'] if w['name']=='js']==[(False, None)]"
mkdir -p "$XDG_CONFIG_HOME/cloister"
printf '[workspace]\nname = broken\n' >"$XDG_CONFIG_HOME/cloister/broken.ini"
out=$("$CLOISTER" list --json)
jcheck "list_names_a_config_that_does_not_load" "$out" \
        "any(w.get('config','').endswith('broken.ini') and 'error' in w for w in j['workspaces'])"
rm -f "$XDG_CONFIG_HOME/cloister/broken.ini"

# --- init -----------------------------------------------------------------------------
home=$T/home
mkdir -p "$home/.cargo/bin" "$home/.rustup/toolchains" "$home/.local/bin" "$home/.ssh"
printf '#!/bin/sh\necho fake-cargo "$RUSTUP_HOME"\n' >"$home/.cargo/bin/cargo"
printf 'token = "secret"\n' >"$home/.cargo/credentials.toml"
printf '#!/bin/sh\necho mytool\n' >"$home/.local/bin/mytool"
chmod 755 "$home/.cargo/bin/cargo" "$home/.local/bin/mytool"
rust=$T/rusty
git init -q -b main "$rust"
printf '[package]\nname = "x"\n' >"$rust/Cargo.toml"
git -C "$rust" add -A
git -C "$rust" -c user.name=t -c user.email=t@example.com commit -qm base
mkdir -p "$rust/sub/dir"
out=$(cd "$rust/sub/dir" && HOME=$home PATH="$home/.local/bin:/usr/bin:/bin" "$CLOISTER" init 2>"$T/err")
ok $? "init_in_a_subfolder_exits_0" "$(cat "$T/err")"
ok $([ "$out" = "$XDG_CONFIG_HOME/cloister/rusty.ini" ] && echo 0 || echo 1) "init_writes_under_xdg_config_home" "$out"
cfg=$out
grep -q "^source = $rust\$" "$cfg"
ok $? "init_takes_the_repository_top" "$(cat "$cfg")"
grep -q "^state = $XDG_STATE_HOME/cloister/rusty\$" "$cfg"
ok $? "init_puts_state_under_xdg_state_home"
HOME=$home "$CLOISTER" check --strict "$cfg" >"$T/out" 2>&1
ok $? "init_config_is_strict_clean" "$(cat "$T/out")"
for m in cargo rustup local-bin; do
        grep -q "^\[mirror \"$m\"\]" "$cfg"
        ok $? "init_mirrors_$m"
done
grep -q '^exclude = credentials, credentials.toml' "$cfg"
ok $? "init_keeps_cargo_credentials_out"
! grep -q '^source = .*\.ssh' "$cfg"
ok $? "init_never_mirrors_ssh"
out=$(HOME=$home "$CLOISTER" run "$cfg" -- sh -c 'cargo; mytool; cat /opt/home/cargo/credentials.toml 2>&1 | head -c 40; echo; ls -A ~ | wc -l' 2>&1)
ok $([ "$(printf '%s\n' "$out" | head -2)" = "fake-cargo /opt/home/rustup
mytool" ] && echo 0 || echo 1) "init_toolchains_run_in_the_sandbox" "$out"
ok $(grep -q 'secret' <<<"$out" && echo 1 || echo 0) "init_cargo_credentials_are_hidden" "$out"
"$CLOISTER" unmount "$cfg" >/dev/null 2>&1
(cd "$rust" && HOME=$home "$CLOISTER" init >/dev/null 2>"$T/err")
ok $([ $? = 1 ] && grep -q 'exists' "$T/err" && echo 0 || echo 1) "init_refuses_to_replace" "$(cat "$T/err")"
(cd "$rust" && HOME=$home "$CLOISTER" init --force --name other.name >/dev/null 2>"$T/err")
ok $([ -f "$XDG_CONFIG_HOME/cloister/other.name.ini" ] && echo 0 || echo 1) "init_name_names_the_file" "$(cat "$T/err")"
(cd "$T" && HOME=$home "$CLOISTER" init >/dev/null 2>"$T/err")
ok $([ $? = 1 ] && grep -q 'not in a git repository' "$T/err" && echo 0 || echo 1) "init_outside_git_is_an_error" "$(cat "$T/err")"
HOME=$home "$CLOISTER" init --name -x "$rust" >/dev/null 2>"$T/err"
ok $([ $? = 2 ] && echo 0 || echo 1) "init_refuses_a_bad_name"
out=$(HOME=$home "$CLOISTER" list)
ok $(grep -q "^rusty " <<<"$out" && grep -q "^other.name " <<<"$out" && echo 0 || echo 1) "list_shows_inits_configs" "$out"

# --- [mirror] bin and env errors ------------------------------------------------------------
for bad in 'env = PATH' 'env = LD_PRELOAD' 'env = HTTPS_PROXY' 'env = 1X' 'bin = ../x' 'bin = /abs'; do
        cat >"$T/m.ini" <<EOF
[workspace]
name = m
state = $T/mstate

[repo]
source = $repo

[mirror "x"]
source = /usr/share/common-licenses
path = /opt/x
$bad
EOF
        "$CLOISTER" check "$T/m.ini" >/dev/null 2>"$T/err"
        ok $([ $? = 2 ] && grep -q "m.ini:11: key '${bad%% *}' in \[mirror\]" "$T/err" && echo 0 || echo 1) \
                "mirror_key_refused: $bad" "$(cat "$T/err")"
done

echo "1..$n"
[ "$fails" = 0 ]
