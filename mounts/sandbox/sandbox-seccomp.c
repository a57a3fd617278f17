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
 * ptrace is denied outright. The PID namespace already hides every process
 * outside the sandbox, so "ptrace only inside" would be safe too; but the
 * agent has no need to debug, and ptrace is how a compromised process would
 * tamper with a sibling (e.g. a credential helper) inside the sandbox.
 *
 * Alternate ABIs: the filter is built for the native architecture only and
 * any other audit arch (i386 via int 0x80, x32 via the 0x40000000 syscall
 * bit) kills the process, so a rule can't be bypassed by changing ABI.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
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
        /* debugging other processes */
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
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
         */
        {
                struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_NE, PER_LINUX);

                r = rule_deny(ctx, "personality", EPERM, 1, &cmp);
                if (r < 0)
                        return r;
        }

        /*
         * vsock is not network-namespaced: in a VM it reaches the hypervisor
         * host whatever [network] mode says.
         */
        {
                struct scmp_arg_cmp vsock = SCMP_A0(SCMP_CMP_EQ, AF_VSOCK);

                r = rule_deny(ctx, "socket", EPERM, 1, &vsock);
                if (r < 0)
                        return r;
        }

        /* Faking terminal input would type commands into the host's shell. */
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
