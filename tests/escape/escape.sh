#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# escape.sh: hostile probes inside a real sandbox. Every probe must fail in
# exactly the expected way (an errno name, a signal, or a measured value);
# docs/security.md lists each one next to the threat it covers.

. "$CLOISTER_SRC/tests/sandbox/lib.sh"
: "${CLOISTER_PROBE:?CLOISTER_PROBE must name the probe binary}"

T=$(mktemp -d /tmp/cloister-escape.XXXXXX)
chmod 755 "$T"
at_exit "rm -rf '$T'"
echo "# workspace served by: $fs_mode"

# Host-side bait the agent must never reach.
mkdir -p "$T/hosthome/.ssh" "$T/state/broker"
echo "host-secret" >"$T/hosthome/.ssh/id_ed25519"
echo "broker-key" >"$T/state/broker/key"
echo "sealed" >"$T/state/broker/secrets"

ws_new "$T" "[run]
env = ESCAPE_TEST_OK, GITHUB_TOKEN, ESCAPE_TEST_VALUE"
ws_mount || { not_ok workspace_mounts "cloister mount failed"; done_testing; exit; }
preflight
# Writable by anyone on the host, so that only the read-only mount can refuse
# the overwrite (the agent owns no host file; as root it is not even this one's owner).
chmod 666 "$T/mirror-src/sub/readme"

# The probe travels in through the workspace, like any file of the agent's.
mkdir -p "$MNT/workspace/.probe"
cp "$CLOISTER_PROBE" "$MNT/workspace/.probe/probe"
P=/workspace/.probe/probe

# A listener on the host's loopback; the sandbox must not reach it.
"$CLOISTER_PROBE" serve "$T/listener" &
at_exit "kill $! 2>/dev/null"
for _ in $(seq 600); do [ -s "$T/listener.port" ] && break; sleep 0.1; done
PORT=$(cat "$T/listener.port" 2>/dev/null || echo 9)
HOSTIP=$("$CLOISTER_PROBE" host-ip)
case "$HOSTIP" in [0-9]*) ;; *) HOSTIP="" ;; esac

# Files only root can open: the agent is never host uid 0, not even when
# cloister runs as root (it is then an unprivileged host uid of its own), so
# their permission bits refuse it (EACCES) before any capability check.
privileged=EACCES
kcore=$privileged
[ -e /proc/kcore ] || kcore=ENOENT # a kernel without /proc/kcore
kmsg=$privileged
[ -e /proc/kmsg ] || kmsg=ENOENT # a kernel without printk
# sysctls: root's, so their mode stops the agent first (and the read-only
# mount would stop it next).
sysctl=EACCES
sysrq=$sysctl
[ -e /proc/sysrq-trigger ] || sysrq=ENOENT # a kernel without magic SysRq

# name | expected | probe arguments (run inside, in this order)
probes=(
"read_host_home_fails|ENOENT|read $T/hosthome/.ssh/id_ed25519"
"read_root_home_fails|ENOENT|read /root"
"read_etc_shadow_fails|ENOENT|read /etc/shadow"
"read_broker_key_fails|ENOENT|read $T/state/broker/key"
"read_broker_secrets_fails|ENOENT|read $T/state/broker/secrets"
"read_state_dir_fails|ENOENT|read $STATE"
"read_fuse_control_dir_fails|ENOENT|read /.cloister/workspace"
"read_docker_socket_fails|ENOENT|read /var/run/docker.sock"
"read_dbus_socket_fails|ENOENT|read /run/dbus/system_bus_socket"
"read_sys_fails|ENOENT|read /sys/kernel"
"read_mnt_fails|ENOENT|read /mnt"
"open_dev_fuse_fails|ENOENT|read /dev/fuse"
"open_dev_mem_fails|ENOENT|read /dev/mem"
"read_kernel_memory_fails|$kcore|read /proc/kcore"
"read_kernel_log_fails|$kmsg|read /proc/kmsg"
"write_usr_fails|EROFS|write /usr/cloister-escape"
"write_root_dir_fails|EROFS|write /cloister-escape"
"write_etc_passwd_fails|EROFS|write /etc/passwd"
"mkdir_in_etc_fails|EROFS|mkdir /etc/cloister-escape"
"write_dev_fails|EROFS|write /dev/cloister-escape"
"mkdir_in_dev_fails|EROFS|mkdir /dev/cloister-escape"
"write_mirror_fails|EROFS|write /opt/mirror/cloister-escape"
"overwrite_mirror_file_fails|EROFS|write /opt/mirror/sub/readme"
"write_proc_sys_fails|$sysctl|write /proc/sys/kernel/hostname"
"write_global_sysctl_fails|$sysctl|write /proc/sys/kernel/core_pattern"
"write_sysrq_trigger_fails|$sysrq|write /proc/sysrq-trigger"
"symlink_to_shadow_is_made|ok|symlink /etc/shadow /workspace/evil-shadow"
"symlink_to_shadow_reads_nothing|ENOENT|read /workspace/evil-shadow"
"symlink_to_host_home_is_made|ok|symlink $T/hosthome/.ssh/id_ed25519 /home/agent/evil-key"
"symlink_to_host_home_reads_nothing|ENOENT|read /home/agent/evil-key"
"symlink_via_proc1_root_reads_nothing|ok|symlink /proc/1/root/etc/shadow /workspace/evil-proc"
"symlink_via_proc1_root_fails|ENOENT|read /workspace/evil-proc"
"hardlink_usr_into_workspace_fails|EXDEV|link /usr/bin/env /workspace/evil-link"
"hardlink_etc_into_home_fails|EXDEV|link /etc/passwd /home/agent/evil-link"
"dotdot_from_workspace_stays_in_root|root|dotdot /workspace"
"dotdot_from_home_stays_in_root|root|dotdot /home/agent"
"dotdot_from_mirror_stays_in_root|root|dotdot /opt/mirror/sub"
"dotdot_from_tmp_stays_in_root|root|dotdot /tmp"
"dotdot_from_usr_stays_in_root|root|dotdot /usr/bin"
"dotdot_from_proc_cwd_stays_in_root|root|dotdot /proc/self/cwd"
"proc1_root_shows_the_sandbox|ENOENT|read /proc/1/root/etc/shadow"
"host_processes_are_invisible|none|proc-find cloister"
"mount_is_denied|EPERM|sys mount"
"umount_is_denied|EPERM|sys umount /workspace"
"pivot_root_is_denied|EPERM|sys pivot_root"
"chroot_is_denied|EPERM|sys chroot"
"open_tree_is_denied|EPERM|sys open_tree"
"fsopen_is_denied|EPERM|sys fsopen"
"unshare_user_is_denied|EPERM|sys unshare-user"
"unshare_mount_is_denied|EPERM|sys unshare-mount"
"unshare_net_is_denied|EPERM|sys unshare-net"
"clone_newuser_is_denied|EPERM|sys clone-newuser"
"clone3_is_unavailable|ENOSYS|sys clone3"
"setns_is_denied|EPERM|sys setns"
"ptrace_is_denied|EPERM|ptrace"
"writing_a_siblings_memory_through_proc_is_refused|EROFS|sibling-mem"
"pidfd_getfd_of_a_sibling_is_denied|EPERM|pidfd-getfd"
"bpf_is_denied|EPERM|sys bpf"
"perf_event_open_is_denied|EPERM|sys perf_event_open"
"userfaultfd_is_denied|EPERM|sys userfaultfd"
"add_key_is_denied|EPERM|sys add_key"
"keyctl_is_denied|EPERM|sys keyctl"
"io_uring_setup_is_denied|EPERM|sys io_uring_setup"
"open_by_handle_at_is_denied|EPERM|sys open_by_handle_at"
"name_to_handle_at_is_denied|EPERM|sys name_to_handle_at"
"kexec_load_is_denied|EPERM|sys kexec_load"
"init_module_is_denied|EPERM|sys init_module"
"personality_change_is_denied|EPERM|sys personality"
"tiocsti_is_denied|EPERM|sys tiocsti"
"setuid_root_is_impossible|EINVAL|sys setuid0"
"mknod_is_denied|EPERM|sys mknod"
"sethostname_is_denied|EPERM|sys sethostname"
"vsock_is_denied|EAFNOSUPPORT|sys vsock"
"vsock_with_high_bits_is_denied|EAFNOSUPPORT|sock socket 0x100000028 1 0"
"socket_family_high_bits_is_filtered|EAFNOSUPPORT|gate socket 0x100000028 1 0"
"socket_family_unix_with_high_bits_is_filtered|EAFNOSUPPORT|gate socket 0x100000001 1 0"
"socket_family_minus_one_is_filtered|EAFNOSUPPORT|gate socket 0xffffffffffffffff 1 0"
"socketpair_family_high_bits_is_filtered|EAFNOSUPPORT|gate socketpair 0x100000028 1 0"
"socket_protocol_high_bits_is_filtered|EPROTONOSUPPORT|gate socket 16 3 0x100000000"
"ioctl_tiocsti_high_bits_is_denied|EPERM|gate ioctl 0 0x100005412 0"
"ioctl_tiocsti_high_bits_fails|EPERM|sys tiocsti-high"
"ioctl_tioclinux_high_bits_is_denied|EPERM|gate ioctl 0 0x10000541c 0"
"clone_newuser_high_bits_is_denied|EPERM|gate clone 0x110000011 0 0 0 0"
"clone_newuser_high_bits_fails|EPERM|sys clone-newuser-high"
"unshare_newns_high_bits_is_denied|EPERM|gate unshare 0x100020000"
"personality_high_bits_is_denied|EPERM|gate personality 0x100040000"
"personality_high_bits_fails|EPERM|sys personality-high"
"personality_default_passes|passes|gate personality 0"
"socket_families_passing_are_the_allowlist|1 2 10 16|gate-sweep socket 0 0 255 0 1 0"
"socketpair_families_passing_are_the_allowlist|1 2 10 16|gate-sweep socketpair 0 0 255 0 1 0"
"netlink_protocols_passing_are_the_allowlist|0 4 15|gate-sweep socket 2 0 255 16 3 0"
"inet_protocols_passing_are_the_allowlist|0 1 6 17 58 262|gate-sweep socket 2 0 511 2 1 0"
"inet6_protocols_passing_are_the_allowlist|0 1 6 17 58 262|gate-sweep socket 2 0 511 10 1 0"
"af_unspec_is_filtered|EAFNOSUPPORT|gate socket 0 1 0"
"af_packet_is_filtered|EAFNOSUPPORT|gate socket 17 3 0"
"af_packet_fails|EAFNOSUPPORT|sock socket 17 3 0"
"af_alg_is_filtered|EAFNOSUPPORT|gate socket 38 5 0"
"af_bluetooth_is_filtered|EAFNOSUPPORT|gate socket 31 5 2"
"af_vsock_is_filtered|EAFNOSUPPORT|gate socket 40 1 0"
"af_tipc_is_filtered|EAFNOSUPPORT|gate socket 30 5 0"
"af_rds_is_filtered|EAFNOSUPPORT|gate socket 21 5 0"
"af_can_is_filtered|EAFNOSUPPORT|gate socket 29 3 1"
"af_key_is_filtered|EAFNOSUPPORT|gate socket 15 3 2"
"af_xdp_is_filtered|EAFNOSUPPORT|gate socket 44 3 0"
"af_kcm_is_filtered|EAFNOSUPPORT|gate socket 41 5 0"
"af_smc_is_filtered|EAFNOSUPPORT|gate socket 43 1 0"
"af_qipcrtr_is_filtered|EAFNOSUPPORT|gate socket 42 2 0"
"af_mctp_is_filtered|EAFNOSUPPORT|gate socket 45 2 0"
"af_appletalk_is_filtered|EAFNOSUPPORT|gate socket 5 2 0"
"af_x25_is_filtered|EAFNOSUPPORT|gate socket 9 5 0"
"af_ax25_is_filtered|EAFNOSUPPORT|gate socket 3 2 0"
"af_llc_is_filtered|EAFNOSUPPORT|gate socket 26 2 0"
"af_nfc_is_filtered|EAFNOSUPPORT|gate socket 39 5 0"
"af_rxrpc_is_filtered|EAFNOSUPPORT|gate socket 33 2 2"
"af_pppox_is_filtered|EAFNOSUPPORT|gate socket 24 1 0"
"af_phonet_is_filtered|EAFNOSUPPORT|gate socket 35 2 0"
"af_ieee802154_is_filtered|EAFNOSUPPORT|gate socket 36 2 0"
"af_isdn_is_filtered|EAFNOSUPPORT|gate socket 34 2 0"
"af_caif_is_filtered|EAFNOSUPPORT|gate socket 37 5 0"
"af_ib_is_filtered|EAFNOSUPPORT|gate socket 27 1 0"
"socketpair_af_tipc_is_filtered|EAFNOSUPPORT|gate socketpair 30 5 0"
"netlink_generic_is_filtered|EPROTONOSUPPORT|gate socket 16 3 16"
"netlink_netfilter_is_filtered|EPROTONOSUPPORT|gate socket 16 3 12"
"netlink_xfrm_is_filtered|EPROTONOSUPPORT|gate socket 16 3 6"
"netlink_audit_is_filtered|EPROTONOSUPPORT|gate socket 16 3 9"
"netlink_crypto_is_filtered|EPROTONOSUPPORT|gate socket 16 3 21"
"netlink_rdma_is_filtered|EPROTONOSUPPORT|gate socket 16 3 20"
"sctp_is_filtered|EPROTONOSUPPORT|gate socket 2 1 132"
"dccp_is_filtered|EPROTONOSUPPORT|gate socket 2 6 33"
"l2tp_is_filtered|EPROTONOSUPPORT|gate socket 10 2 115"
"udplite_is_filtered|EPROTONOSUPPORT|gate socket 2 2 136"
"unix_socket_works|ok|sock socket 1 1 0"
"unix_socketpair_works|ok|sock socketpair 1 1 0"
"unix_datagram_socketpair_works|ok|sock socketpair 1 2 0"
"tcp_socket_works|ok|sock socket 2 1 0"
"udp_socket_works|ok|sock socket 2 2 17"
"netlink_route_works|ok|sock socket 16 3 0"
"netlink_sock_diag_works|ok|sock socket 16 3 4"
"netlink_uevent_works|ok|sock socket 16 3 15"
"no_capabilities|0000000000000000|status CapEff"
"no_bounding_capabilities|0000000000000000|status CapBnd"
"no_new_privs_is_set|1|status NoNewPrivs"
"seccomp_filter_is_on|2|status Seccomp"
"no_inherited_descriptors|0|fds"
"tcp_to_host_loopback_listener_fails|ECONNREFUSED|net tcp 127.0.0.1 $PORT"
"udp_to_loopback_stays_inside|ok|net udp 127.0.0.1 $PORT"
"host_env_var_is_not_passed|unset|env ESCAPE_HOST_ONLY"
"allowed_secret_named_var_is_not_passed|unset|env GITHUB_TOKEN"
"allowed_var_with_token_value_is_not_passed|unset|env ESCAPE_TEST_VALUE"
"allowed_plain_var_is_passed|set|env ESCAPE_TEST_OK"
)
# A host pid is not a pid of the sandbox's; in a container, where pids are
# small, the number may well be one of the sandbox's own processes.
if [ "${CLOISTER_TEST_CGROUP:-}" = container ]; then
        skip_test daemon_fd_dir_is_invisible "the container's pids are small enough to be the sandbox's own"
else
        probes+=("daemon_fd_dir_is_invisible|ENOENT|read /proc/$$/fd")
fi
if [ -d "$MNT/.cloister/objects" ]; then
        probes+=("dotdot_from_git_objects_stays_in_root|root|dotdot /.cloister/objects"
                 "git_objects_are_read_only|EROFS|write /.cloister/objects/evil")
fi
# Controls that need the kernel to have the feature: asked outside first.
for c in "tcp6_socket_works|sock socket 10 1 0" "mptcp_socket_works|sock socket 2 1 262"; do
        host=$("$CLOISTER_PROBE" ${c#*|} 2>&1)
        if [ "$host" = ok ]; then probes+=("${c%%|*}|ok|${c#*|}"); else
                skip_test "${c%%|*}" "this kernel refuses it outside the sandbox too ($host)"; fi
done
if [ "$(uname -m)" = x86_64 ]; then
        # seccomp sees an x32 call before the kernel decides whether it has x32.
        probes+=("x32_abi_kills|SIGSYS|x32")
        # int 0x80 reaches seccomp only where the kernel has the i386 entry:
        # without it (no IA32 emulation, ia32_emulation=0) the instruction
        # itself faults. Ask outside first; a filter that fails to kill
        # still fails the test wherever the entry works.
        host_i386=$("$CLOISTER_PROBE" i386 2>&1)
        if [ "$host_i386" = ok ]; then probes+=("i386_abi_kills|SIGSYS|i386"); else
                skip_test i386_abi_kills \
                        "int 0x80 fails outside the sandbox too ($host_i386): no i386 entry in this kernel"
        fi
fi
if [ -n "$HOSTIP" ] && [ "$HOSTIP" != 127.0.0.1 ]; then
        probes+=("tcp_to_host_address_fails|ENETUNREACH|net tcp $HOSTIP $PORT"
                 "udp_to_host_address_fails|ENETUNREACH|net udp $HOSTIP $PORT")
fi

script="cd /"
for p in "${probes[@]}"; do
        script+=$'\n'"$P ${p##*|} 2>&1 | head -n 1"
done
# One fd more than stdio is open here; it must not reach the sandbox.
exec 7</dev/null
out=$(ESCAPE_HOST_ONLY=1 ESCAPE_TEST_OK=1 GITHUB_TOKEN=ghp_x ESCAPE_TEST_VALUE=ghp_abc \
        crun "$CFG" -- sh -c "$script" 2>"$T/stderr")
rc=$?
exec 7<&-
is sandbox_ran_the_probes "$rc" 0
[ "$rc" = 0 ] || sed 's/^/# /' "$T/stderr"
mapfile -t got <<<"$out"
i=0
for p in "${probes[@]}"; do
        name=${p%%|*}
        rest=${p#*|}
        want=${rest%%|*}
        is "$name" "${got[$i]:-<missing>}" "$want"
        i=$((i + 1))
done
contains secret_looking_allowed_vars_are_reported "$(cat "$T/stderr")" "not passing GITHUB_TOKEN"
is host_listener_got_nothing "$(cat "$T/listener" 2>/dev/null)" ""

# Host files the symlink probes aimed at are untouched.
is host_secret_unchanged "$(cat "$T/hosthome/.ssh/id_ed25519")" "host-secret"

# --- limits: each must hold, and the host must stay well -----------------
limit_ws() { # limit_ws NAME INI: a second workspace with other limits
        local d=$T/$1
        mkdir -p "$d"
        ws_new "$d" "$2"
        ws_mount || return 1
        mkdir -p "$MNT/workspace/.probe"
        cp "$CLOISTER_PROBE" "$MNT/workspace/.probe/probe"
}

# In a container ([limits] cgroup = container) the container's memory
# limit must be as strict as every workspace's [limits] memory: the
# suite's smallest is then the container's (CLOISTER_TEST_MEMORY).
in_container=0
[ "${CLOISTER_TEST_CGROUP:-}" = container ] && in_container=1
limit_ws mem "[limits]
memory = ${CLOISTER_TEST_MEMORY:-64M}
tmp = 8M
tmp_files = 300"
out=$(crun "$CFG" -- $P alloc 256 2>&1)
is memory_limit_refuses_allocation "$out" ENOMEM
out=$(crun "$CFG" -- $P alloc 8 2>&1)
is memory_below_limit_is_usable "$out" ok
out=$(crun "$CFG" -- $P fill /tmp/big 16 2>&1)
is tmp_beyond_its_size_fails "$out" ENOSPC
out=$(crun "$CFG" -- $P fill /dev/shm/big 16 2>&1)
is dev_shm_beyond_the_tmp_size_fails "$out" ENOSPC
# Empty files cost no blocks, only kernel memory: the inode limit stops them
# (300 inodes, one of them the root directory).
out=$(crun "$CFG" -- $P mkfiles /tmp 100000 2>&1)
is tmp_file_flood_stops_at_tmp_files "$out" "ENOSPC 299"
out=$(crun "$CFG" -- $P mkfiles /dev/shm 100000 2>&1)
is dev_shm_file_flood_stops_at_tmp_files "$out" "ENOSPC 299"
out=$(crun "$CFG" -- sh -c "$P mkfiles /tmp 100000 >/dev/null; $P mkfiles /dev/shm 10" 2>&1)
is tmp_and_dev_shm_have_separate_inodes "$out" "ok 10"
# They are mounted in a namespace of the run's own: never on the host.
is sandbox_tmpfs_is_not_mounted_on_the_host "$(grep -c sandbox-tmpfs /proc/self/mountinfo)" 0
# Memory RLIMIT_AS can't see (a memfd written, never mapped) is capped by the
# sandbox's memory cgroup, which cloister makes when it runs as root and the
# machine has a memory controller to use (cgroup v1 or v2: best effort).
# run_gets_a_memory_cap: look at the cgroup a run's command lands in.
run_gets_a_memory_cap() {
        local bg pid="" line path v=""
        crun "$CFG" -- sleep 4747 >/dev/null 2>&1 &
        bg=$!
        for _ in $(seq 600); do
                pid=$(pgrep -f '^sleep 4747$' | head -n 1)
                [ -n "$pid" ] && break
                sleep 0.1
        done
        while read -r line; do
                path=${line#*:*:}
                case "$line" in
                0::*) for root in /sys/fs/cgroup /sys/fs/cgroup/unified; do
                              [ -r "$root$path/memory.max" ] && v=$(cat "$root$path/memory.max")
                      done ;;
                *:memory:* | *:*,memory:* | *:memory,*:*)
                        [ -r "/sys/fs/cgroup/memory$path/memory.limit_in_bytes" ] &&
                                v=$(cat "/sys/fs/cgroup/memory$path/memory.limit_in_bytes") ;;
                esac
        done <"/proc/${pid:-0}/cgroup" 2>/dev/null
        pkill -f '^sleep 4747$'
        wait "$bg" 2>/dev/null
        # No limit reads "max" (v2) or a huge page-rounded number (v1).
        [ -n "$v" ] && [ "$v" != max ] && [ "${#v}" -lt 19 ]
}
if [ "$in_container" = 1 ]; then
        skip_test unmapped_memory_beyond_limit_is_killed \
                "the total cap is the container's cgroup here, whose OOM killer may pick any process of the container"
elif [ "$(id -u)" = 0 ] && ! run_gets_a_memory_cap; then
        skip_test unmapped_memory_beyond_limit_is_killed \
                "no memory controller for the sandbox's cgroup on this machine"
elif [ "$(id -u)" = 0 ]; then
        out=$(crun "$CFG" -- $P memfd 256 2>&1)
        rc=$?
        if [ "$out" = SIGKILL ] || [ "$rc" = 137 ]; then ok unmapped_memory_beyond_limit_is_killed; else
                not_ok unmapped_memory_beyond_limit_is_killed "rc $rc: $out"; fi
        out=$(crun "$CFG" -- $P memfd 16 2>&1)
        is unmapped_memory_below_limit_is_usable "$out" ok
else
        skip_test unmapped_memory_beyond_limit_is_killed "the total cap is a memory cgroup, made as root"
fi

limit_ws procs "[limits]
processes = 16"
out=$(crun "$CFG" -- $P fork-bomb 200 2>&1)
is process_limit_stops_fork_bomb "$out" EAGAIN

limit_ws time "[limits]
timeout = 2s"
crun "$CFG" -- sleep 600 2>"$T/time.err"
is timeout_stops_command_with_sigterm "$?" 143
contains timeout_is_reported "$(cat "$T/time.err")" "timeout of 2s reached"
crun "$CFG" -- sh -c 'trap "" TERM; sleep 600' 2>/dev/null
is timeout_kills_command_ignoring_sigterm "$?" 137

limit_ws cpu "[limits]
cpu = 1s"
crun "$CFG" -- $P spin 2>/dev/null
is cpu_limit_kills_with_sigxcpu "$?" $((128 + 24))

out=$(crun "$CFG" -- sh -c 'echo alive' 2>&1)
is host_runs_sandboxes_after_the_limits "$out" alive

if [ "$fs_mode" = fuse ]; then
        limit_ws quota "[limits]
bytes = 1M"
        out=$(crun "$CFG" -- sh -c 'head -c 4194304 /dev/zero > /workspace/big 2>/dev/null; echo $?; 
                                    if [ -e /workspace/big ]; then stat -c %s /workspace/big; fi' 2>&1)
        first=$(echo "$out" | head -n 1)
        size=$(echo "$out" | sed -n 2p)
        is quota_write_beyond_bytes_fails "$first" 1
        if [ "${size:-0}" -le 1048576 ]; then ok quota_file_stays_within_bytes; else
                not_ok quota_file_stays_within_bytes "size $size"; fi
else
        skip_test quota_write_beyond_bytes_fails "the quota lives in the FUSE fs, not in this build"
fi

# --- broker tokens ----------------------------------------------------------
if "$CLOISTER" help broker 2>&1 | grep -q 'not available'; then
        for t in forged_token_is_refused expired_token_replay_is_refused \
                 token_with_changed_audience_is_refused revoked_token_is_refused; do
                skip_test "$t" "the broker is not in this build"
        done
        done_testing
        exit
fi
cat >"$T/policy.ini" <<INI
[scope "git"]
audience = https://git.example.com
ttl = 5m
workspaces = wbrk

[scope "deploy"]
audience = https://deploy.example.com
workspaces = someone-else
INI
limit_ws brk "[broker]
policy = $T/policy.ini"
B_CFG=$CFG B_MNT=$MNT
out=$(crun "$B_CFG" -- sh -c '
        P=/workspace/.probe/probe
        set -- $($P issue git)
        tok=$1 jti=$2
        # /workspace/.probe belongs to root, who made it through the mount: write beside it.
        echo "$tok" > /workspace/.token
        echo "$CLOISTER_BROKER"
        $P introspect "$tok"
        $P introspect "$($P tamper aud "$tok")"
        $P introspect "$($P tamper sig "$tok")"
        $P introspect "v4.public.AAAA"
        $P issue deploy
        $P redeem "$tok"
        $P revoke "$jti"
        $P introspect "$tok"
        $P read '"$STATE"'/broker/admin.sock
        $P read '"$T/brk/state/broker"'/signing.keys
        # Online, the broker judges expiry by its clock (whole seconds, no
        # skew): a 2 s token lives more than 1 s, at most 2 s. How long the
        # first introspection took is printed, for a loaded machine.
        t0=$(date +%s%N)
        set -- $($P issue git 2)
        $P introspect "$1"
        echo $(( ($(date +%s%N) - t0) / 1000000 ))
        sleep 3
        $P introspect "$1"
' 2>"$T/broker.err")
rc=$?
is broker_sandbox_ran "$rc" 0
[ "$rc" = 0 ] || sed 's/^/# /' "$T/broker.err"
mapfile -t got <<<"$out"
is broker_socket_is_announced "${got[0]:-}" /run/cloister/broker.sock
is issued_token_is_active "${got[1]:-}" active
is token_with_changed_audience_is_refused "${got[2]:-}" inactive
is forged_token_is_refused "${got[3]:-}" inactive
is garbage_token_is_refused "${got[4]:-}" inactive
is scope_not_granted_is_denied "${got[5]:-}" denied
is agent_socket_refuses_redeem "${got[6]:-}" denied
is agent_can_revoke_its_token "${got[7]:-}" ok
is revoked_token_is_refused "${got[8]:-}" inactive
is broker_admin_socket_is_invisible "${got[9]:-}" ENOENT
is broker_signing_keys_are_invisible "${got[10]:-}" ENOENT
if [ "${got[12]:-0}" -lt 1000 ]; then
        is short_token_is_active_at_first "${got[11]:-}" active
else
        skip_test short_token_is_active_at_first \
                "issuing and introspecting took ${got[12]:-?} ms here, past the token's shortest life"
fi
is expired_token_is_refused_online "${got[13]:-}" inactive

# The same tokens, checked offline on the host the way a service would.
tok=$(cat "$B_MNT/workspace/.token" 2>/dev/null)
"$CLOISTER" token verify "$tok" --config "$B_CFG" --aud https://git.example.com >/dev/null 2>&1
is issued_token_verifies_offline "$?" 0
"$CLOISTER" token verify "$tok" --config "$B_CFG" --aud https://evil.example.com >/dev/null 2>&1
is token_for_another_audience_fails_offline "$?" 9
bad=$("$CLOISTER_PROBE" tamper aud "$tok")
case "$bad" in v4.public.*) [ "$bad" != "$tok" ] && ok audience_tamper_makes_a_token ;;
*) not_ok audience_tamper_makes_a_token "$bad" ;; esac
"$CLOISTER" token verify "$bad" --config "$B_CFG" >/dev/null 2>&1
is token_with_rewritten_audience_fails_offline "$?" 5
"$CLOISTER" token verify "$("$CLOISTER_PROBE" tamper sig "$tok")" --config "$B_CFG" >/dev/null 2>&1
is forged_signature_fails_offline "$?" 5
"$CLOISTER" token verify "$tok" --config "$B_CFG" --now 2099-01-01T00:00:00Z >/dev/null 2>&1
is expired_token_replay_is_refused "$?" 7
proc_running "cloister broker( --quiet)?( --for-runs)? $B_CFG" && not_ok run_stops_the_broker_it_started "still running" ||
        ok run_stops_the_broker_it_started

done_testing
