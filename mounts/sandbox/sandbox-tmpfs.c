/* SPDX-License-Identifier: MIT */
/*
 * sandbox-tmpfs.c: the sandbox's writable tmpfs mounts, /tmp and /dev/shm,
 * with an inode limit ([limits] tmp_files) as well as a size ([limits] tmp).
 *
 * Why not bwrap's --tmpfs: bubblewrap 0.8 takes a size for it but no
 * nr_inodes, and a tmpfs's default inode count is half the host's pages of
 * RAM. Empty files cost no blocks but about a KiB of kernel memory each, so
 * a loop of `touch` grows host memory past any size limit. bwrap 0.8 has no
 * --bind-fd either, and a detached mount (fsmount) can't be bind-mounted.
 *
 * So the process that is about to exec bwrap mounts them itself, in a mount
 * namespace of its own, and bwrap binds them from there (--bind):
 *   1. unshare(CLONE_NEWNS); when not root, with CLONE_NEWUSER too (the
 *      caller's uid and gid mapped to themselves, so bwrap runs exactly as
 *      it would have, unprivileged, inside it);
 *   2. every mount becomes a slave: nothing propagates back to the host;
 *   3. a small staging tmpfs on <state>/sandbox-tmpfs (a root-run
 *      sandbox's on SANDBOX_STAGE_DIR), and in it one tmpfs per directory
 *      with size=, nr_inodes= and mode=1777; statfs() must report the
 *      limits back, or nothing runs (fail closed);
 *   4. exec bwrap, which binds <stage>/{tmp,shm} into place.
 * The mounts exist only in that namespace, which lives as long as bwrap
 * does: nothing of them is ever mounted on the host, and nothing is left
 * after the run, however it ends (SIGKILL included; <state>/sandbox-tmpfs
 * stays an empty directory).
 *
 * Trust boundary: this runs on the host side before anything of the agent
 * exists; the state directory is the user's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "config.h"
#include "sandbox-private.h"
#include "lib/util.h"

#define STAGE_NAME "sandbox-tmpfs"

static const struct {
        const char *name; /* under the staging tmpfs */
        const char *dest; /* in the sandbox */
} tmpfs_dirs[SANDBOX_TMPFS_N] = {{"tmp", "/tmp"}, {"shm", "/dev/shm"}};

int sandbox_tmpfs_prepare(const struct config *c, bool root_staged, struct sandbox_tmpfs *t,
                          char **ret_error)
{
        _cleanup_close_ int sfd = -1;
        struct stat st;

        *t = (struct sandbox_tmpfs){.size = c->limits.tmp, .nr_inodes = c->limits.tmp_files};
        if (root_staged) {
                /*
                 * Root's staging directory, which bwrap (as the agent's host
                 * uid) can pass: one staging tmpfs for these and the staged
                 * bind sources (sandbox-identity.c), not one in the state
                 * directory bound there again. Every mount is a line that
                 * each of bwrap's mountinfo parses reads.
                 */
                t->stage = strdup(SANDBOX_STAGE_DIR);
                t->stage_options = "mode=0755,size=64k,nr_inodes=256";
                if (!t->stage)
                        goto oom;
        } else {
                sfd = open(c->workspace.state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sfd < 0)
                        return sandbox_errorf(ret_error, negative_errno(), "state directory %s: %m",
                                              c->workspace.state);
                if (mkdirat(sfd, STAGE_NAME, 0700) < 0 && errno != EEXIST)
                        return sandbox_errorf(ret_error, negative_errno(), "%s/" STAGE_NAME ": %m",
                                              c->workspace.state);
                if (fstatat(sfd, STAGE_NAME, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        return sandbox_errorf(ret_error, -ENOTDIR,
                                              "%s/" STAGE_NAME ": not a directory",
                                              c->workspace.state);
                if (asprintf(&t->stage, "%s/" STAGE_NAME, c->workspace.state) < 0)
                        goto oom;
                t->stage_options = "size=64k,nr_inodes=16,mode=0700";
        }
        for (size_t i = 0; i < SANDBOX_TMPFS_N; i++)
                if (asprintf(&t->dirs[i], "%s/%s", t->stage, tmpfs_dirs[i].name) < 0)
                        goto oom;
        if (asprintf(&t->options, "size=%" PRIu64 ",nr_inodes=%" PRIu64 ",mode=1777", t->size,
                     t->nr_inodes) < 0)
                goto oom;
        /* Written between fork and exec, where nothing may allocate: made now. */
        t->userns = geteuid() != 0;
        snprintf(t->uid_map, sizeof(t->uid_map), "%u %u 1\n", (unsigned)geteuid(),
                 (unsigned)geteuid());
        snprintf(t->gid_map, sizeof(t->gid_map), "%u %u 1\n", (unsigned)getegid(),
                 (unsigned)getegid());
        return 0;
oom:
        sandbox_tmpfs_clear(t);
        return sandbox_errorf(ret_error, -ENOMEM, "out of memory");
}

void sandbox_tmpfs_clear(struct sandbox_tmpfs *t)
{
        free(t->stage);
        for (size_t i = 0; i < SANDBOX_TMPFS_N; i++)
                free(t->dirs[i]);
        free(t->options);
        *t = (struct sandbox_tmpfs){0};
}

const char *sandbox_tmpfs_dest(size_t i)
{
        return i < SANDBOX_TMPFS_N ? tmpfs_dirs[i].dest : NULL;
}

/* Between fork and exec: plain system calls and write(2) only. */
static void say(const char *s)
{
        if (write(STDERR_FILENO, s, strlen(s)) < 0)
                return;
}

int sandbox_child_fail(const char *setup, const char *what, const char *dir, const char *name,
                       int err)
{
        const char *e = strerrorname_np(err);

        say("cloister run: cannot set up the sandbox's ");
        say(setup);
        say(", so nothing runs: ");
        say(what);
        if (dir) {
                say(" ");
                say(dir);
        }
        if (name)
                say(name);
        say(": ");
        say(e ? e : "error");
        say("\n");
        return -err;
}

static int fail(const char *what, const char *path, int err)
{
        return sandbox_child_fail("/tmp and /dev/shm with their inode limit ([limits] tmp_files)",
                                  what, path, NULL, err);
}

static int file_put(const char *path, const char *s)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        ssize_t n;
        int e;

        if (fd < 0)
                return fail("open", path, errno);
        n = write(fd, s, strlen(s));
        e = errno;
        close(fd);
        return n == (ssize_t)strlen(s) ? 0 : fail("write", path, n < 0 ? e : EIO);
}

int sandbox_tmpfs_enter(const struct sandbox_tmpfs *t)
{
        struct statfs sf;
        int r;

        if (unshare(t->userns ? CLONE_NEWUSER | CLONE_NEWNS : CLONE_NEWNS) < 0)
                return fail("unshare",
                            t->userns ? "(user and mount namespace)" : "(mount namespace)", errno);
        if (t->userns) {
                r = file_put("/proc/self/uid_map", t->uid_map);
                if (r == 0)
                        r = file_put("/proc/self/setgroups", "deny");
                if (r == 0)
                        r = file_put("/proc/self/gid_map", t->gid_map);
                if (r < 0)
                        return r;
        }
        /* Before mounting anything: no propagation back to the host's mounts. */
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                return fail("making the mounts slaves", NULL, errno);
        if (mount("cloister-stage", t->stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  t->stage_options) < 0)
                return fail("mount tmpfs on", t->stage, errno);
        for (size_t i = 0; i < SANDBOX_TMPFS_N; i++) {
                if (mkdir(t->dirs[i], 0700) < 0)
                        return fail("mkdir", t->dirs[i], errno);
                if (mount("tmpfs", t->dirs[i], "tmpfs", MS_NOSUID | MS_NODEV, t->options) < 0)
                        return fail("mount tmpfs on", t->dirs[i], errno);
                /* A kernel that took the mount but not the limit would fail open. */
                if (statfs(t->dirs[i], &sf) < 0)
                        return fail("statfs", t->dirs[i], errno);
                if ((uint64_t)sf.f_files != t->nr_inodes)
                        return fail("the kernel did not apply nr_inodes on", t->dirs[i],
                                    EOPNOTSUPP);
                /* The size is rounded up to whole pages. */
                if ((uint64_t)sf.f_blocks * (uint64_t)sf.f_bsize < t->size ||
                    (uint64_t)sf.f_blocks * (uint64_t)sf.f_bsize >= t->size + (uint64_t)sf.f_bsize)
                        return fail("the kernel did not apply size on", t->dirs[i], EOPNOTSUPP);
        }
        return 0;
}
