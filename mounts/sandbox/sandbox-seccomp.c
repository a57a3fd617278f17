/* SPDX-License-Identifier: MIT */
/*
 * sandbox-seccomp.c: the syscall filter every sandboxed process runs under.
 *
 * The policy is "allow by default, deny what widens the attack surface":
 * the agent runs ordinary build tools, so an allow-list would break them,
 * while the calls below either reach kernel code that has a long record of
 * privilege escalations (bpf, io_uring, userfaultfd, keyctl, perf) or would
 * let the agent rebuild its view of the system (mount, new namespaces).
 * Denied calls fail with EPERM (clone3 with ENOSYS, so that libc falls back
 * to clone(), whose flags we can inspect), which keeps tools that probe for
 * features working.
 *
 * ptrace is denied outright, with the other ways into a sibling process:
 * process_vm_writev and pidfd_getfd here, and writes to /proc/PID/mem by
 * /proc being mounted read-only (sandbox-bwrap.c). The PID namespace
 * already hides every process outside the sandbox, so "ptrace only
 * inside" would be safe too; but the agent has no need to debug, and these
 * are how a compromised process would tamper with a sibling (e.g. a
 * credential helper) inside the sandbox.
 *
 * Alternate ABIs: the filter is built for the native architecture only and
 * any other audit arch (i386 via int 0x80, x32 via the 0x40000000 syscall
 * bit) kills the process, so a rule can't be bypassed by changing ABI.
 *
 * Argument width: a filter sees six 64-bit registers, but the kernel reads
 * most arguments as a 32-bit int (socket's family, type and protocol,
 * ioctl's request, personality, clone's flags) and ignores the upper half.
 * So no deny rule may compare all 64 bits for equality (the agent would set
 * bit 32 and walk past it): each matches on the low 32 bits (a masked
 * comparison), or on a 64-bit range that contains every value whose low 32
 * bits it must catch (see rule_deny_unless()).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>

#include "sandbox-private.h"
#include "lib/util.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Denied with EPERM whatever their arguments. */
static const char *const denied[] = {
        /* mount family: the agent's view of the filesystem is fixed */
        "mount",
        "umount",
        "umount2",
        "pivot_root",
        "chroot",
        "move_mount",
        "open_tree",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "mount_setattr",
        /* joining namespaces */
        "setns",
        /* kernel attack surface with a history of escalations */
        "kexec_load",
        "kexec_file_load",
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        /* the kernel keyring is shared across namespaces of one user */
        "keyctl",
        "add_key",
        "request_key",
        /* debugging other processes, and taking a sibling's descriptors (the
         * other way into a process, besides /proc/PID/mem, which is read-only:
         * sandbox-bwrap.c remounts /proc so) */
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "pidfd_getfd",
        /* file handles bypass path-based confinement (the "shocker" escape) */
        "open_by_handle_at",
        "name_to_handle_at",
        /* host administration; all need capabilities the sandbox lacks anyway */
        "init_module",
        "finit_module",
        "delete_module",
        "reboot",
        "swapon",
        "swapoff",
        "acct",
        "iopl",
        "ioperm",
        "quotactl",
        "syslog",
        "uselib",
        "vhangup",
        "lookup_dcookie",
};

/* Namespace flags that unshare() and clone() must not carry. */
static const uint64_t new_namespace_flags[] = {
        CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
        CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP,
};

static int rule_deny(scmp_filter_ctx ctx, const char *name, int err, unsigned n,
                     const struct scmp_arg_cmp *cmp)
{
        int nr = seccomp_syscall_resolve_name(name);

        /* A name this libseccomp doesn't know means a filter with a hole: refuse. */
        if (nr == __NR_SCMP_ERROR)
                return -ENOSYS;
        return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(err), nr, n, cmp);
}

/*
 * What socket() and socketpair() may open: an allowlist, since every other
 * family is kernel code agents don't need, some of it outside the network
 * namespace (vsock reaches a VM's host) and much of it loadable on demand
 * by an unprivileged socket() call (the kernel autoloads net-pf-N modules).
 * Anything else fails with EAFNOSUPPORT, as for a family the kernel lacks.
 */
static const uint32_t socket_families[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};

/*
 * Netlink, in the sandbox's own network namespace: routes and addresses
 * (getaddrinfo, ip), socket diagnostics (ss) and uevents (libudev; a
 * namespace not owned by the host's user namespace receives none). Not
 * netfilter, xfrm, audit, crypto, rdma or generic netlink, whose many
 * families are a large surface no build needs. EPROTONOSUPPORT otherwise.
 */
static const uint32_t netlink_protocols[] = {NETLINK_ROUTE, NETLINK_SOCK_DIAG,
                                             NETLINK_KOBJECT_UEVENT};

/*
 * IPv4 and IPv6: TCP, UDP, ping sockets and MPTCP (0 picks the type's
 * default). Not SCTP, DCCP, L2TP, UDP-Lite or SMC, which an unprivileged
 * socket() would autoload as modules. EPROTONOSUPPORT otherwise.
 */
static const uint32_t inet_protocols[] = {0,           IPPROTO_ICMP,   IPPROTO_TCP,
                                          IPPROTO_UDP, IPPROTO_ICMPV6, IPPROTO_MPTCP};

/*
 * Deny `name` with `err` unless argument `arg`, which the kernel reads as a
 * 32-bit int, is one of `allowed` (ascending); with `also`, only calls that
 * match it too (a comparison on another argument). libseccomp can't compare
 * one argument twice in a rule, so the complement of the list is covered
 * by several rules:
 *   - one 64-bit "greater than the largest allowed value", which catches
 *     every larger value and every value with any of the upper 32 bits set
 *     (the kernel would ignore them; the filter refuses the ambiguity);
 *   - for the gaps below it, one rule per aligned power-of-two block of
 *     values, each a masked comparison of the low 32 bits.
 */
static int rule_deny_unless(scmp_filter_ctx ctx, const char *name, int err, unsigned arg,
                            const uint32_t *allowed, size_t n, const struct scmp_arg_cmp *also)
{
        struct scmp_arg_cmp cmp[2];
        uint64_t lo = 0;
        int r;

        if (also)
                cmp[1] = *also;
        cmp[0] = (struct scmp_arg_cmp){arg, SCMP_CMP_GT, allowed[n - 1], 0};
        r = rule_deny(ctx, name, err, also ? 2 : 1, cmp);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; lo = (uint64_t)allowed[i++] + 1) {
                if (i > 0 && allowed[i] <= allowed[i - 1])
                        return -EINVAL; /* not ascending: the cover below would be wrong */
                while (lo < allowed[i]) {
                        uint64_t size = 1;

                        while ((lo & (2 * size - 1)) == 0 && lo + 2 * size <= allowed[i])
                                size *= 2;
                        cmp[0] = (struct scmp_arg_cmp){arg, SCMP_CMP_MASKED_EQ,
                                                       0xffffffffu & ~(size - 1), lo};
                        r = rule_deny(ctx, name, err, also ? 2 : 1, cmp);
                        if (r < 0)
                                return r;
                        lo += size;
                }
        }
        return 0;
}

static int socket_rules(scmp_filter_ctx ctx)
{
        static const uint32_t inet[] = {AF_INET, AF_INET6};
        struct scmp_arg_cmp is_netlink = SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, AF_NETLINK);
        int r;

        r = rule_deny_unless(ctx, "socket", EAFNOSUPPORT, 0, socket_families,
                             ELEMENTSOF(socket_families), NULL);
        if (r >= 0)
                r = rule_deny_unless(ctx, "socketpair", EAFNOSUPPORT, 0, socket_families,
                                     ELEMENTSOF(socket_families), NULL);
        if (r >= 0)
                r = rule_deny_unless(ctx, "socket", EPROTONOSUPPORT, 2, netlink_protocols,
                                     ELEMENTSOF(netlink_protocols), &is_netlink);
        for (size_t i = 0; i < ELEMENTSOF(inet) && r >= 0; i++) {
                struct scmp_arg_cmp is_inet = SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, inet[i]);

                r = rule_deny_unless(ctx, "socket", EPROTONOSUPPORT, 2, inet_protocols,
                                     ELEMENTSOF(inet_protocols), &is_inet);
        }
        return r;
}

static int filter_build(scmp_filter_ctx ctx)
{
        int r;

        for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
                r = rule_deny(ctx, denied[i], EPERM, 0, NULL);
                if (r < 0)
                        return r;
        }

        /* clone3 passes its flags in memory a filter can't read: make libc use clone. */
        r = rule_deny(ctx, "clone3", ENOSYS, 0, NULL);
        if (r < 0)
                return r;

        /*
         * A one-bit mask ignores the upper half by itself: the kernel reads
         * clone's flags as their low 32 bits, and unshare refuses the rest.
         */
        for (size_t i = 0; i < ELEMENTSOF(new_namespace_flags); i++) {
                uint64_t f = new_namespace_flags[i];
                struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, f, f);

                r = rule_deny(ctx, "unshare", EPERM, 1, &cmp);
                if (r < 0)
                        return r;
                /* clone's flags are its first argument on x86_64 and arm64 */
                r = rule_deny(ctx, "clone", EPERM, 1, &cmp);
                if (r < 0)
                        return r;
        }
        {
                struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWTIME, CLONE_NEWTIME);
                r = rule_deny(ctx, "unshare", EPERM, 1, &cmp);
                if (r < 0)
                        return r;
        }

        /*
         * personality: only the default, PER_LINUX (0). Anything else
         * (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO...) weakens
         * exploit mitigations. A filter can't hold two comparisons of one
         * argument in a rule, so the query 0xffffffff is denied as well.
         * The kernel reads an unsigned int; a 64-bit "not 0" denies every
         * value whose low 32 bits are not 0, and a few harmless ones more.
         */
        {
                struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_NE, PER_LINUX);

                r = rule_deny(ctx, "personality", EPERM, 1, &cmp);
                if (r < 0)
                        return r;
        }

        r = socket_rules(ctx);
        if (r < 0)
                return r;

        /* Faking terminal input would type commands into the host's shell (request: 32 bits). */
        {
                struct scmp_arg_cmp sti = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI);
                struct scmp_arg_cmp linux_ = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX);

                r = rule_deny(ctx, "ioctl", EPERM, 1, &sti);
                if (r < 0)
                        return r;
                r = rule_deny(ctx, "ioctl", EPERM, 1, &linux_);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sandbox_seccomp_export(int *ret_fd)
{
        scmp_filter_ctx ctx;
        _cleanup_close_ int fd = -1;
        int r;

        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        /* Another ABI than the native one is a way around every rule: kill. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                goto out;
        r = filter_build(ctx);
        if (r < 0)
                goto out;

        fd = memfd_create("cloister-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0) {
                r = negative_errno();
                goto out;
        }
        r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                goto out;
        /* Sealed: nothing can change the program between here and bwrap. */
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
            lseek(fd, 0, SEEK_SET) < 0) {
                r = negative_errno();
                goto out;
        }
        *ret_fd = TAKE_FD(fd);
        r = 0;
out:
        seccomp_release(ctx);
        return r;
}
