/* SPDX-License-Identifier: MIT */
/*
 * sandbox-hostroot.c: a root-run sandbox refuses to start in a container
 * whose root is the host's root, one without a user namespace of its own
 * (podman without --uidmap, Kubernetes' hostUsers: true).
 *
 * Why only in a container: a root-run sandbox runs as a host uid of
 * [run] host_uids (sandbox-identity.c). On a host, cloister sees the
 * host's users and its ids lie above every range they use. In a container
 * that shares the host's ids it sees neither the host's users nor its other
 * containers' files: its sandbox uid is then a real host uid, maybe a
 * person's or another container's, for whatever reaches the host (a volume,
 * an escape); and the container's root, whose capabilities the sandbox's
 * setup relies on, is the host's root. With a user namespace of its own,
 * every id in the container is one the runtime set aside for it.
 *
 * The two facts, each from the kernel or from a file a runtime writes on
 * purpose at the container's start:
 *   - root here is root of the parent user namespace: /proc/self/uid_map
 *     maps 0 to 0 (the initial namespace's map is "0 0 4294967295");
 *   - this is a container: the PID namespace is not the initial one
 *     (/proc/self/ns/pid, on nsfs, has another inode than the one the
 *     kernel fixes for the initial namespace, PROC_PID_INIT_INO), or
 *     /run/.containerenv (podman, CRI-O) or /run/systemd/container
 *     (systemd-nspawn, LXC) exists: /run is a tmpfs made at each start.
 * Not /.dockerenv: it lives in the image's root file system and outlives
 * the container (a virtual machine's disk made from a container image keeps
 * it, as this project's test machines do), and not `container=` in PID 1's
 * environment, which a root without CAP_SYS_PTRACE can't read. A root-run
 * cloister in the initial PID namespace of a machine (a CI virtual
 * machine, whose uid_map is the identity too) is not refused.
 *
 * What is not seen: a container sharing the host's PID namespace (podman
 * --pid=host, hostPID: true) under a runtime that writes neither file
 * (Docker, containerd). docs/deploy.md says so; never run it that way.
 */
#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "config.h"
#include "sandbox-private.h"
#include "lib/util.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif
/* include/linux/proc_ns.h: the initial PID namespace's inode, fixed. */
#define PROC_PID_INIT_INO 0xEFFFFFFCU

/* 1 if uid 0 here is uid 0 of the parent user namespace, 0 if not, < 0 if unknown. */
static int root_is_parent_root(void)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/uid_map", "re");
        unsigned long inner, outer, count;

        if (!f)
                return negative_errno();
        while (fscanf(f, "%lu %lu %lu", &inner, &outer, &count) == 3)
                if (inner == 0 && outer == 0 && count > 0)
                        return 1;
        return ferror(f) ? -EIO : 0;
}

/* 1 if the PID namespace is not the machine's initial one, 0 if it is, < 0 if unknown. */
static int pid_namespace_own(void)
{
        struct statfs sf;
        struct stat st;

        if (statfs("/proc/self/ns/pid", &sf) < 0 || stat("/proc/self/ns/pid", &st) < 0)
                return negative_errno();
        if (sf.f_type != NSFS_MAGIC && sf.f_type != PROC_SUPER_MAGIC)
                return -EMEDIUMTYPE;
        /* Before Linux 3.19 namespace files were on proc itself: no fixed inode to compare. */
        if (sf.f_type == PROC_SUPER_MAGIC)
                return -EOPNOTSUPP;
        return st.st_ino != PROC_PID_INIT_INO;
}

int sandbox_host_root_detect(char **ret_why)
{
        static const char *const markers[] = {"/run/.containerenv", "/run/systemd/container"};
        const char *marker = NULL;
        int root, own_pid;

        root = root_is_parent_root();
        if (root < 0)
                return asprintf(ret_why, "cannot read /proc/self/uid_map: %s", strerror(-root)) < 0
                               ? -ENOMEM
                               : root;
        if (root == 0)
                return 0;
        own_pid = pid_namespace_own();
        if (own_pid < 0)
                return asprintf(ret_why, "cannot tell the PID namespace (/proc/self/ns/pid): %s",
                                strerror(-own_pid)) < 0
                               ? -ENOMEM
                               : own_pid;
        for (size_t i = 0; !own_pid && !marker && i < ELEMENTSOF(markers); i++)
                if (access(markers[i], F_OK) == 0)
                        marker = markers[i];
        if (!own_pid && !marker)
                return 0;
        if (asprintf(ret_why,
                     "this is a container (%s%s) whose root is the host's root "
                     "(/proc/self/uid_map maps 0 to 0: no user namespace of its own)",
                     own_pid ? "a PID namespace of its own" : marker, own_pid ? "" : " exists") < 0)
                return -ENOMEM;
        return 1;
}

int sandbox_host_root_check(const struct config *c, char **ret_error)
{
        _cleanup_free_ char *why = NULL;
        int r;

        if (c->run.allow_host_root)
                return 0;
        r = sandbox_host_root_detect(&why);
        if (r < 0)
                return sandbox_errorf(ret_error, r,
                                      "%s; as root, cloister needs to know whether "
                                      "it runs in a container sharing the host's ids",
                                      why ? why : strerror(-r));
        if (r == 0)
                return 0;
        return sandbox_errorf(
                ret_error, -EPERM,
                "%s, so the sandbox's uids ([run] host_uids) would be the host's own: "
                "give the container a user namespace (podman --uidmap, Kubernetes "
                "hostUsers: false), or set [run] allow_host_root = "
                "true to run anyway",
                why);
}
