#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# identity.sh: when cloister runs as root, the agent is not host root. Its
# uid and gid map to an unprivileged host uid of its own, reserved from
# [run] host_uids for as long as its workspace is mounted: never 0, never a
# user of the host, one per workspace, released at the end, freed when its
# holder is killed. Looked at from the host (/proc/PID/status, ps) and from
# inside (id, the uid map, a root-only file the config binds in on purpose).
# An ordinary user's agent stays that user.

. "$CLOISTER_SRC/tests/sandbox/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "the sandbox identity is what root-run sandboxes get; an ordinary user's agent is that user"
[ "$fs_mode" = fuse ] || skip_all "needs this build's FUSE mount (the identity is the mount's)"

T=$(mktemp -d /tmp/cloister-identity.XXXXXX)
chmod 755 "$T"
at_exit "rm -rf '$T'"

# A folder with a root-only file, bound in by the test's own config on purpose.
mkdir -p "$T/bait"
echo root-secret >"$T/bait/secret"
chmod 600 "$T/bait/secret"
echo public >"$T/bait/public"
chmod 644 "$T/bait/public"

# Ranges of one uid for the release tests, away from the default range so
# that other sandboxes on this machine never take them in between.
R1=$((2101000000 + (RANDOM % 30000) * 64))
R2=$((R1 + 1))

uid_of() { awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$1/status" 2>/dev/null; }
gid_of() { awk '/^Gid:/ {print $2, $3, $4, $5}' "/proc/$1/status" 2>/dev/null; }
wait_for() { # wait_for PATTERN: the host pid of the one process matching it
        local p
        for _ in $(seq 200); do
                p=$(pgrep -f "$1" | head -n 1)
                [ -n "$p" ] && { echo "$p"; return 0; }
                sleep 0.05
        done
        return 1
}
map_host() { awk '{print $2}' <<<"$1"; } # the host id in a one-line uid_map
held_by() { cut -d' ' -f1 "/run/cloister/host-uids/$1" 2>/dev/null; }

ws_new "$T/a" "[mirror \"bait\"]
source = $T/bait
path = /opt/bait"
A_CFG=$CFG A_MNT=$MNT A_STATE=$STATE
preflight

# --- the agent, seen from the host ------------------------------------------
crun "$A_CFG" -- sh -c 'cat /proc/self/uid_map >/tmp/m; cat /proc/self/gid_map >>/tmp/m
        { id -u; id -un; id -g; cat /tmp/m; } >/workspace/.identity; exec sleep 31.4159' \
        >/dev/null 2>"$T/a.err" &
a_run=$!
a_pid=$(wait_for '^sleep 31.4159$') || { not_ok agent_runs "no sandbox: $(cat "$T/a.err")"; done_testing; exit; }
read -r u_r u_e u_s u_f <<<"$(uid_of "$a_pid")"
read -r g_r g_e g_s g_f <<<"$(gid_of "$a_pid")"
U=$u_r
if [ "$U" != 0 ] && [ "$u_e" != 0 ] && [ "$u_s" != 0 ] && [ "$u_f" != 0 ]; then
        ok agent_host_uid_is_not_root
else
        not_ok agent_host_uid_is_not_root "Uid: $u_r $u_e $u_s $u_f"
fi
is agent_host_uids_are_one "$u_e $u_s $u_f" "$U $U $U"
is agent_host_gid_is_its_own "$g_r $g_e $g_s $g_f" "$U $U $U $U"
if getent passwd "$U" >/dev/null || getent group "$U" >/dev/null ||
        awk -F: -v u="$U" '$3 == u' /etc/passwd /etc/group | grep -q .; then
        not_ok agent_host_uid_is_no_user_of_the_host "$U is in the user or group database"
else
        ok agent_host_uid_is_no_user_of_the_host
fi
if [ "$U" -ge 2100000000 ] && [ "$U" -le 2100065535 ]; then ok agent_host_uid_is_from_the_default_range; else
        not_ok agent_host_uid_is_from_the_default_range "$U"; fi
is ps_shows_the_agent_unprivileged "$(ps -o uid= -p "$a_pid" | tr -d ' ')" "$U"
is agent_has_no_supplementary_groups "$(awk '/^Groups:/ {print $2}' "/proc/$a_pid/status")" ""
# Every process of the sandbox (bwrap's init included) and bwrap itself.
ns=$(stat -L -c %i "/proc/$a_pid/ns/pid")
bad="" n=0
for d in /proc/[0-9]*; do
        [ "$(stat -L -c %i "$d/ns/pid" 2>/dev/null)" = "$ns" ] || continue
        n=$((n + 1))
        [ "$(uid_of "${d#/proc/}" | cut -d' ' -f1)" = "$U" ] || bad+=" ${d#/proc/}"
done
for p in $(pgrep -f "^/usr/bin/bwrap .* sleep 31.4159$"); do
        [ "$(uid_of "$p" | cut -d' ' -f1)" = "$U" ] || bad+=" bwrap:$p"
done
if [ -z "$bad" ] && [ "$n" -ge 2 ]; then ok every_sandbox_process_is_the_host_uid; else
        not_ok every_sandbox_process_is_the_host_uid "$n in the namespace; not $U:$bad"; fi

# --- and from inside --------------------------------------------------------
mapfile -t id_lines <"$A_MNT/workspace/.identity"
is agent_sees_its_configured_uid "${id_lines[0]:-}" 1000
is agent_sees_its_configured_name "${id_lines[1]:-}" agent
is agent_sees_its_configured_gid "${id_lines[2]:-}" 1000
is uid_map_maps_only_the_agent "$(echo ${id_lines[3]:-})" "1000 $U 1"
is gid_map_maps_only_the_agent "$(echo ${id_lines[4]:-})" "1000 $U 1"
out=$(crun "$A_CFG" -- sh -c 'cat /opt/bait/secret 2>&1; cat /opt/bait/public' 2>&1)
contains root_only_file_bound_in_is_unreadable "$out" "Permission denied"
contains readable_file_beside_it_is_read "$out" "public"
out=$(crun "$A_CFG" -- sh -c 'stat -c %u:%g /workspace/hello.txt; echo made >/workspace/made-by-agent &&
        stat -c %u:%g /workspace/made-by-agent; setuid=$(id -u); echo $setuid' 2>&1)
is agent_owns_its_files_inside "$(echo $out)" "1000:1000 1000:1000 1000"
is upper_files_stay_owned_by_the_daemon "$(stat -c %u:%g "$A_STATE/fs/repo/made-by-agent" 2>&1)" "0:0"
is host_sees_the_agent_as_owner "$(stat -c %u "$A_MNT/workspace/made-by-agent")" "$U"
contains mount_names_the_identity "$(cat "$A_MNT/.cloister/workspace")" "\"host_uid\":$U,"
daemon=$(pgrep -f "cloister mount $A_CFG" | head -n 1)
is daemon_holds_the_reservation "$(held_by "$U")" "$daemon"
# The journal's own marks (journal_open, ...) match any glob: take the entry.
entry() { "$CLOISTER" log "$A_CFG" --json --path "$1" 2>&1 | grep -F "\"path\":\"$1\"" | head -n 1; }
# A create is written at most 200 ms after it; a loaded machine may take longer.
for _ in $(seq 100); do
        line=$(entry /workspace/made-by-agent)
        [ -z "$line" ] || break
        sleep 0.1
done
contains log_shows_the_writers_sandbox_identity \
        "$("$CLOISTER" log "$A_CFG" --path /workspace/made-by-agent 2>&1)" "uid 1000, host uid $U)"
contains journal_records_host_and_sandbox_uid "$line" "\"uid\":$U,\"gid\":$U,\"sandbox_uid\":1000,"
# Root writing through the mount on the host is not the agent.
echo host >"$A_MNT/workspace/made-by-root"
# Entries reach the file at most 200 ms after the write; a loaded machine may take longer.
for _ in $(seq 100); do
        line=$(entry /workspace/made-by-root)
        [ -z "$line" ] || break
        sleep 0.1
done
case "$line" in
*'"uid":0,"gid":0,"comm"'*) ok journal_does_not_call_root_the_agent ;;
*) not_ok journal_does_not_call_root_the_agent "$line" ;;
esac
# What root makes through the mount is root's, as on a local filesystem; the
# agent's files stay the agent's, and a chown by root hands a file over.
is root_made_file_is_roots "$(stat -c %u:%g "$A_MNT/workspace/made-by-root")" "0:0"
is agent_file_is_still_the_agents "$(stat -c %u:%g "$A_MNT/workspace/made-by-agent")" "$U:$U"
out=$(crun "$A_CFG" -- sh -c 'echo agent >>/workspace/made-by-root' 2>&1)
contains agent_cannot_write_roots_file "$out" "Permission denied"
chown "$U:$U" "$A_MNT/workspace/made-by-root"
is chown_to_the_agent_hands_it_over "$(stat -c %u:%g "$A_MNT/workspace/made-by-root")" "$U:$U"
is handed_over_file_is_stored_as_roots "$(stat -c %u:%g "$A_STATE/fs/repo/made-by-root" 2>&1)" "0:0"
out=$(crun "$A_CFG" -- sh -c 'echo agent >>/workspace/made-by-root && echo wrote' 2>&1)
contains agent_writes_the_handed_over_file "$out" "wrote"
chown 0:0 "$A_MNT/workspace/made-by-agent"
is chown_to_root_makes_it_roots "$(stat -c %u:%g "$A_MNT/workspace/made-by-agent")" "0:0"
chown "$U:$U" "$A_MNT/workspace/made-by-agent"

# --- sandboxes side by side -------------------------------------------------
ws_new "$T/b"
B_CFG=$CFG
out=$(crun "$B_CFG" -- cat /proc/self/uid_map 2>&1)
UB=$(map_host "$out")
if [ -n "$UB" ] && [ "$UB" != "$U" ] && [ "$UB" != 0 ]; then
        ok two_concurrent_sandboxes_get_different_host_uids
else
        not_ok two_concurrent_sandboxes_get_different_host_uids "a: $U, b: $out"
fi
# A second run of a workspace shares its mount, hence its files and their owner.
out=$(crun "$A_CFG" -- cat /proc/self/uid_map 2>&1)
is runs_of_one_workspace_share_its_host_uid "$(map_host "$out")" "$U"

# A range whose only uid is held by the running sandbox's workspace.
ws_new "$T/c" "[run]
host_uids = $U-$U"
C_MNT=$MNT C_STATE=$STATE
err=$(crun "$CFG" -- sh -c 'echo x >/workspace/ran' 2>&1)
is exhausted_range_is_refused "$?" 125
contains exhausted_range_refusal_says_why "$err" "[run] host_uids: no free host uid in $U-$U"
if [ -e "$C_MNT/workspace/ran" ] || [ -e "$C_STATE/fs/repo/ran" ]; then
        not_ok exhausted_range_runs_nothing "the command ran"
else
        ok exhausted_range_runs_nothing
fi

kill "$a_pid"
wait "$a_run"
is first_sandbox_ended "$?" 143

# --- reservations end with their holder ---------------------------------------
ws_new "$T/d" "[run]
host_uids = $R1-$R1"
D_CFG=$CFG
ws_new "$T/e" "[run]
host_uids = $R1-$R1"
E_CFG=$CFG
out=$(crun "$D_CFG" -- cat /proc/self/uid_map 2>&1)
is configured_range_gives_its_uid "$(map_host "$out")" "$R1"
[ -e "/run/cloister/host-uids/$R1" ] && not_ok host_uid_is_released_at_the_end "still reserved by $(held_by "$R1")" ||
        ok host_uid_is_released_at_the_end
out=$(crun "$E_CFG" -- cat /proc/self/uid_map 2>&1)
is released_host_uid_is_given_again "$(map_host "$out")" "$R1"

# A SIGKILLed run takes its sandbox along but leaves the mount, which keeps the uid...
"$CLOISTER" run "$D_CFG" -- sleep 27.1828 >/dev/null 2>&1 &
d_run=$!
wait_for '^sleep 27.1828$' >/dev/null
kill -KILL "$d_run"
wait "$d_run" 2>/dev/null
for _ in $(seq 100); do pgrep -f '^sleep 27.1828$' >/dev/null || break; sleep 0.1; done
pgrep -f '^sleep 27.1828$' >/dev/null && not_ok killed_run_takes_its_sandbox_along "still running" ||
        ok killed_run_takes_its_sandbox_along
err=$(crun "$E_CFG" -- true 2>&1)
contains killed_runs_mount_keeps_its_uid "$err" "no free host uid in $R1-$R1"
# ...until it is unmounted; a killed daemon frees it at once.
"$CLOISTER" unmount "$D_CFG"
out=$(crun "$E_CFG" -- cat /proc/self/uid_map 2>&1)
is host_uid_is_reclaimed_after_a_killed_run "$(map_host "$out")" "$R1"
"$CLOISTER" mount "$D_CFG"
daemon=$(held_by "$R1")
if [ -n "$daemon" ] && kill -KILL "$daemon"; then
        for _ in $(seq 100); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.05; done
        "$CLOISTER" unmount "$D_CFG" >/dev/null 2>&1
        out=$(crun "$E_CFG" -- cat /proc/self/uid_map 2>&1)
        is killed_daemon_frees_its_host_uid "$(map_host "$out")" "$R1"
else
        not_ok killed_daemon_frees_its_host_uid "the mount holds no reservation of $R1"
fi

# --no-mount: the run reserves one for itself, for as long as it runs.
mkdir -p "$T/layout/workspace" "$T/layout/home/agent" "$T/layout/opt/mirror"
sed -e "s#^mountpoint = .*#mountpoint = $T/layout#" -e "s#^host_uids = .*#host_uids = $R2-$R2#" \
        "$D_CFG" >"$T/layout.ini"
out=$("$CLOISTER" run --no-mount "$T/layout.ini" -- sh -c 'cat /proc/self/uid_map; touch /workspace/x 2>&1' 2>&1)
is no_mount_run_reserves_a_host_uid "$(map_host "$(head -n 1 <<<"$out")")" "$R2"
contains no_mount_layout_is_not_the_agents "$out" "Permission denied"
[ -e "/run/cloister/host-uids/$R2" ] && not_ok no_mount_run_releases_its_uid "still reserved" ||
        ok no_mount_run_releases_its_uid

# --- an ordinary user's agent is that user, as before -----------------------
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
        asnobody() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$@"; }
        N=$T/n
        mkdir -p "$N"
        chown nobody "$N"
        asnobody bash -c "$(declare -f ws_new at_exit); fs_mode=stub; ws_new '$N/w'" >/dev/null 2>&1
        asnobody "$CLOISTER" run --no-mount "$N/w/ws.ini" -- sleep 16.18 >/dev/null 2>&1 &
        n_run=$!
        if n_pid=$(wait_for '^sleep 16.18$'); then
                is unprivileged_agent_is_the_user "$(uid_of "$n_pid" | cut -d' ' -f1)" "$(id -u nobody)"
                kill "$n_pid"
        else
                not_ok unprivileged_agent_is_the_user "the sandbox did not start"
        fi
        wait "$n_run" 2>/dev/null
else
        skip_test unprivileged_agent_is_the_user "needs setpriv and a user nobody"
fi

done_testing
