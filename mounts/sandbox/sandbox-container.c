/* SPDX-License-Identifier: MIT */
/*
 * sandbox-container.c: [limits] cgroup = container.
 *
 * Inside a container the cgroup tree is read-only, and the container's own
 * cgroup already holds every process cloister starts there: the mount
 * daemon, the broker, bubblewrap and the agent. So instead of a cgroup per
 * sandbox (sandbox-limits.c), this mode checks that the cgroup cloister
 * runs in really enforces [limits] memory, and says on every run what
 * enforces memory and processes; if the cgroup does not, the run is
 * refused, never run without the limit.
 *
 * "Enforces" means, for memory: the cgroup we are in is found through
 * /proc/self/cgroup and the mount of its hierarchy in /proc/self/mountinfo
 * (a container usually sees its own cgroup as the mount's root, not at its
 * full path); the directory is on a cgroup file system (statfs), so no
 * look-alike file can pass; and the smallest limit from it up to the
 * mount's root (every ancestor's limit also binds, except a v1 memory
 * ancestor without use_hierarchy) is set and at most [limits] memory. The
 * limit binds the container as a whole, daemons included, so it is
 * stricter for the agent than [limits] itself.
 *
 * Processes need no cgroup: the agent is never uid 0 of the initial user
 * namespace (sandbox-identity.c), so the kernel enforces the RLIMIT_NPROC
 * set on the sandbox (sandbox-limits.c), counted in the sandbox's own user
 * namespace; the container's cgroup holds every process for the memory cap,
 * and the sandbox's PID namespace for teardown. A pids limit the container
 * shows is reported, not required: Kubernetes sets a Pod's (the kubelet's
 * podPidsLimit) on the Pod's cgroup, above what the container sees.
 * RLIMIT_AS and RLIMIT_CPU are set as in every mode.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <sys/vfs.h>

#include "config.h"
#include "sandbox-private.h"
#include "lib/cgroup.h"
#include "lib/util.h"

#define LINE_MAX_BYTES 4096

struct cgroup_place {
        char *dir;   /* our cgroup's directory, as this mount namespace sees it */
        char *mount; /* the hierarchy's mount point: the walk stops there */
        bool v2;
};

static void cgroup_place_done(struct cgroup_place *p)
{
        free(p->dir);
        free(p->mount);
}

/*
 * The mount of the hierarchy: fstype "cgroup" with controller among its
 * super options (v1), or "cgroup2" (controller NULL). *ret_root is the
 * cgroup the mount shows at *ret_mount. Paths with escapes (white space)
 * are skipped: no cgroup mount has them.
 */
static int hierarchy_mount(const char *controller, char **ret_root, char **ret_mount)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[LINE_MAX_BYTES];

        if (!f)
                return negative_errno();
        while (fgets(line, sizeof(line), f)) {
                char *field[6] = {0}, *save = NULL, *tail = strstr(line, " - "), *type, *opts;
                size_t n = 0;

                if (!tail || strchr(line, '\\'))
                        continue;
                *tail = '\0';
                tail += 3;
                for (char *t = strtok_r(line, " ", &save); t && n < ELEMENTSOF(field);
                     t = strtok_r(NULL, " ", &save))
                        field[n++] = t;
                type = strtok_r(tail, " ", &save);
                (void)strtok_r(NULL, " ", &save); /* the source */
                opts = strtok_r(NULL, " \n", &save);
                if (n < 5 || !type || !opts)
                        continue;
                if (controller ? !streq(type, "cgroup") ||
                                         !cgroup_list_has(opts, strlen(opts), controller)
                               : !streq(type, "cgroup2"))
                        continue;
                *ret_root = strdup(field[3]);
                *ret_mount = strdup(field[4]);
                if (!*ret_root || !*ret_mount) {
                        free(*ret_root);
                        free(*ret_mount);
                        return -ENOMEM;
                }
                return 0;
        }
        return -ENOENT;
}

/* Whether the v2 hierarchy mounted at mount offers controller. */
static bool v2_has_controller(const char *mount, const char *controller)
{
        _cleanup_free_ char *p = NULL;

        return asprintf(&p, "%s/cgroup.controllers", mount) >= 0 && cgroup_file_has(p, controller);
}

/* Where our cgroup of this controller is: its v1 hierarchy if it has one, else v2. */
static int cgroup_find(const char *controller, struct cgroup_place *ret)
{
        _cleanup_free_ char *path = NULL, *root = NULL, *mount = NULL, *dir = NULL;
        const char *rest;
        bool v2 = false;
        struct statfs sf;
        int r;

        r = hierarchy_mount(controller, &root, &mount);
        if (r == -ENOENT) {
                v2 = true;
                r = hierarchy_mount(NULL, &root, &mount);
                if (r >= 0 && !v2_has_controller(mount, controller))
                        r = -ENOENT;
        }
        if (r < 0)
                return r;
        r = cgroup_self_path(v2 ? NULL : controller, &path);
        if (r < 0)
                return r;
        /* Our cgroup must be the mount's root or below it: else it is not visible here. */
        rest = streq(root, "/") ? path : startswith(path, root);
        if (!rest || (*rest && *rest != '/'))
                return -ENOENT;
        if (asprintf(&dir, "%s%s", mount, streq(rest, "/") ? "" : rest) < 0)
                return -ENOMEM;
        if (statfs(dir, &sf) < 0)
                return negative_errno();
        if (sf.f_type != CGROUP_SUPER_MAGIC && sf.f_type != CGROUP2_SUPER_MAGIC)
                return -EMEDIUMTYPE;
        ret->dir = TAKE_PTR(dir);
        ret->mount = TAKE_PTR(mount);
        ret->v2 = v2;
        return 0;
}

/* A limit file: "max" (v2) is UINT64_MAX; *ret untouched on error. */
static int limit_read(const char *dir, const char *name, uint64_t *ret)
{
        _cleanup_free_ char *p = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char buf[64], *end;
        uint64_t v;

        if (asprintf(&p, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        f = fopen(p, "re");
        if (!f)
                return negative_errno();
        if (!fgets(buf, sizeof(buf), f))
                return -EIO;
        buf[strcspn(buf, "\n")] = '\0';
        if (streq(buf, "max")) {
                *ret = UINT64_MAX;
                return 0;
        }
        errno = 0;
        v = strtoull(buf, &end, 10);
        if (errno || end == buf || *end)
                return -EINVAL;
        /* v1 says "no limit" with the largest page count it holds, about 2^63. */
        *ret = v >= (1ULL << 62) ? UINT64_MAX : v;
        return 0;
}

/*
 * The smallest limit that binds our cgroup: its own and every ancestor's
 * up to the mount point (v1 memory: an ancestor's only where its
 * memory.use_hierarchy is 1). *ret_where gets the directory that set it.
 */
static int limit_effective(const struct cgroup_place *p, const char *file, bool v1_memory,
                           uint64_t *ret, char **ret_where)
{
        _cleanup_free_ char *dir = strdup(p->dir);
        uint64_t best = UINT64_MAX;
        char *where = NULL;
        bool own = true;
        int r;

        if (!dir)
                return -ENOMEM;
        for (;;) {
                uint64_t v, hier = 1;

                if (!own && v1_memory &&
                    (limit_read(dir, "memory.use_hierarchy", &hier) < 0 || hier != 1))
                        goto up;
                r = limit_read(dir, file, &v);
                /* A cgroup without the file (the root) sets no limit. */
                if (r == -ENOENT)
                        r = -EAGAIN;
                else if (r < 0 && own) {
                        free(where);
                        return r;
                }
                if (r >= 0 && v < best) {
                        best = v;
                        free(where);
                        where = strdup(dir);
                        if (!where)
                                return -ENOMEM;
                }
        up:
                own = false;
                if (streq(dir, p->mount))
                        break;
                char *slash = strrchr(dir, '/');
                if (!slash || slash == dir || strlen(dir) <= strlen(p->mount))
                        break;
                *slash = '\0';
        }
        *ret = best;
        *ret_where = where;
        return 0;
}

static void size_format(uint64_t v, char *buf, size_t n)
{
        if (v == UINT64_MAX)
                snprintf(buf, n, "none");
        else if (v % (1ULL << 30) == 0)
                snprintf(buf, n, "%" PRIu64 "G", v >> 30);
        else if (v % (1ULL << 20) == 0)
                snprintf(buf, n, "%" PRIu64 "M", v >> 20);
        else
                snprintf(buf, n, "%" PRIu64, v);
}

int sandbox_container_verify(const struct config *c, char **ret_note, char **ret_error)
{
        struct cgroup_place pids = {0}, mem = {0};
        _cleanup_free_ char *pids_where = NULL, *mem_where = NULL, *pids_text = NULL;
        uint64_t pids_max = UINT64_MAX, mem_max = UINT64_MAX;
        char have[32], want[32];
        int r;

        r = cgroup_find("memory", &mem);
        if (r >= 0)
                r = limit_effective(&mem, mem.v2 ? "memory.max" : "memory.limit_in_bytes", !mem.v2,
                                    &mem_max, &mem_where);
        if (r < 0) {
                r = sandbox_errorf(ret_error, r,
                                   "[limits] cgroup = container: cannot find the memory cgroup "
                                   "this process is in: %s",
                                   strerror(-r));
                goto out;
        }
        if (mem_max > c->limits.memory) {
                size_format(mem_max, have, sizeof(have));
                size_format(c->limits.memory, want, sizeof(want));
                r = sandbox_errorf(ret_error, -EPERM,
                                   "[limits] cgroup = container: the container's cgroup (%s) "
                                   "limits memory to %s, more than [limits] memory = %s; give "
                                   "the container a memory limit of at most that (podman "
                                   "--memory; Kubernetes: resources.limits.memory)",
                                   mem.dir, mem_max == UINT64_MAX ? "nothing" : have, want);
                goto out;
        }
        /* Only reported: a Pod's limit (the kubelet's) is often above what a
         * container sees, and RLIMIT_NPROC already binds the agent. */
        if (cgroup_find("pids", &pids) >= 0 &&
            limit_effective(&pids, "pids.max", false, &pids_max, &pids_where) >= 0 &&
            pids_max != UINT64_MAX)
                r = asprintf(&pids_text, "the container's own pids.max is %" PRIu64 " (%s)",
                             pids_max, pids_where);
        else
                r = asprintf(&pids_text, "the container shows no pids limit of its own");
        if (r < 0) {
                pids_text = NULL;
                r = sandbox_errorf(ret_error, -ENOMEM, "out of memory");
                goto out;
        }
        size_format(mem_max, have, sizeof(have));
        if (asprintf(ret_note,
                     "[limits] cgroup = container: the container's cgroup enforces memory <= %s "
                     "(%s/%s); processes <= %" PRIu64 " by RLIMIT_NPROC in the sandbox's user "
                     "namespace (%s)",
                     have, mem_where, mem.v2 ? "memory.max" : "memory.limit_in_bytes",
                     c->limits.processes, pids_text) < 0)
                r = sandbox_errorf(ret_error, -ENOMEM, "out of memory");
        else
                r = 0;
out:
        cgroup_place_done(&pids);
        cgroup_place_done(&mem);
        return r;
}
