/* SPDX-License-Identifier: MIT */
/*
 * no-seccomp: run a command on a machine where installing a seccomp filter
 * fails, to prove that `cloister run` then refuses and runs nothing.
 *
 *   no-seccomp [--load-only] CMD [ARG...]
 *
 * Installs a filter (libseccomp) under which seccomp(2) and
 * prctl(PR_SET_SECCOMP) fail with EINVAL, as on a kernel built without
 * CONFIG_SECCOMP_FILTER, then execs CMD. With --load-only, only installing
 * a filter fails (seccomp(SECCOMP_SET_MODE_FILTER), prctl(PR_SET_SECCOMP)):
 * libseccomp can still probe the kernel and build one, and bubblewrap is
 * the one that fails. With --no-mount-ns, mount(2) fails with EPERM
 * instead, as where a security module keeps unprivileged namespaces from
 * mounting: cloister's own tmpfs setup is the first to need it.
 * Everything CMD starts inherits the filter. Exit 77 if the filter itself
 * can't be installed.
 */
#include <errno.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        scmp_filter_ctx ctx;
        bool load_only = argc > 1 && strcmp(argv[1], "--load-only") == 0;
        bool no_mount = argc > 1 && strcmp(argv[1], "--no-mount-ns") == 0;
        int r;

        if (load_only || no_mount) {
                argv++;
                argc--;
        }
        if (argc < 2) {
                fprintf(stderr, "usage: no-seccomp [--load-only|--no-mount-ns] CMD [ARG...]\n");
                return 2;
        }
        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx) {
                fprintf(stderr, "no-seccomp: seccomp_init failed\n");
                return 77;
        }
        if (no_mount)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mount), 0);
        else if (load_only)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(seccomp), 1,
                                     SCMP_A0(SCMP_CMP_EQ, SECCOMP_SET_MODE_FILTER));
        else
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(seccomp), 0);
        if (r == 0 && !no_mount)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(prctl), 1,
                                     SCMP_A0(SCMP_CMP_EQ, PR_SET_SECCOMP));
        if (r == 0)
                r = seccomp_load(ctx);
        seccomp_release(ctx);
        if (r < 0) {
                fprintf(stderr, "no-seccomp: cannot install the filter: %s\n", strerror(-r));
                return 77;
        }
        execvp(argv[1], argv + 1);
        fprintf(stderr, "no-seccomp: %s: %m\n", argv[1]);
        return 127;
}
