/* SPDX-License-Identifier: MIT */
/*
 * sandbox-etc.c: the sandbox's /etc, one read-only directory that bwrap
 * binds in one step.
 *
 * It holds the synthesized files (passwd and group naming only the agent,
 * hostname, hosts, nsswitch.conf, resolv.conf, a gitconfig for the proxy)
 * and a few host files and directories that hold no secrets and that
 * ordinary tools expect (CA certificates, ld.so.cache, alternatives, ...).
 *
 * Why not bwrap's --ro-bind-data and one --ro-bind-try per host file, as
 * before: bwrap makes each of them a mount of its own and, for each, reads
 * and parses /proc/self/mountinfo to remount it read-only. The 21 of them
 * were about 2 ms of every `cloister run` on the benchmark machine (bare
 * bwrap is 11 ms). Here the child that is about to exec bwrap, already in
 * a mount namespace of its own (sandbox-tmpfs.c), mounts a small tmpfs at
 * <stage>/etc, writes the synthesized files into it, copies in the host
 * files that are small and that anyone may read, and binds the rest (the
 * directories) onto empty ones in it; bwrap binds that tree to /etc
 * read-only, submounts included, with one parse. Every mount left is a
 * line that each of bwrap's parses reads again. Like every mount of that
 * namespace, none of it is seen on the host or outlives the run; a copy
 * is the host file as it was when the run started.
 *
 * The contents are built in the parent (sandbox_etc_prepare); the child
 * only makes system calls (sandbox_etc_enter), as between fork and exec
 * nothing may allocate. A host entry that does not exist is left out, as
 * --ro-bind-try did.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

#include "cloister-config.h"
#include "compose.h"
#include "config.h"
#include "sandbox-private.h"
#include "lib/readall.h"
#include "lib/util.h"

/* Host entries; "/etc/ssl" is the one directory they need made. */
static const char *const host_etc[SANDBOX_ETC_HOST_N] = {
        "/etc/ssl/certs",   "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/alternatives",
        "/etc/ld.so.cache", "/etc/ld.so.conf",      "/etc/ld.so.conf.d",    "/etc/localtime",
        "/etc/profile",     "/etc/bash.bashrc",     "/etc/inputrc",         "/etc/mime.types",
        "/etc/protocols",   "/etc/services",
};
#define ETC_PREFIX_LEN (sizeof("/etc/") - 1)

/* Read a small host file (resolv.conf); a missing one reads as empty. */
static int host_file_read(const char *path, char **ret)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        char *buf = NULL;
        size_t len = 0;
        struct stat st;
        int r;

        if (fd < 0) {
                if (errno != ENOENT)
                        return negative_errno();
                return (*ret = strdup("")) ? 0 : -ENOMEM;
        }
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        r = fd_read_whole(fd, (size_t)st.st_size, SANDBOX_ETC_FILE_MAX, &buf, &len);
        if (r < 0)
                return r;
        buf[len] = '\0';
        *ret = buf;
        return 0;
}

/* bash where the sandbox's root (the host's, or [image]'s) has it. */
static const char *agent_shell(const struct sandbox_options *o)
{
        char path[PATH_MAX];

        if (!o->image_root)
                return access("/usr/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
        snprintf(path, sizeof(path), "%s/bin/bash", o->image_root);
        return faccessat(AT_FDCWD, path, X_OK, AT_SYMLINK_NOFOLLOW) == 0 ? "/bin/bash" : "/bin/sh";
}

static char *fmt(const char *format, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *format, ...)
{
        va_list ap;
        char *s;
        int r;

        va_start(ap, format);
        r = vasprintf(&s, format, ap);
        va_end(ap);
        return r < 0 ? NULL : s;
}

/* Takes data (NULL: out of memory). */
static int file_add(struct sandbox_etc *e, const char *name, char *data)
{
        if (!data)
                return -ENOMEM;
        e->files[e->n_files].name = name;
        e->files[e->n_files].data = data;
        e->n_files++;
        return 0;
}

int sandbox_etc_prepare(const struct sandbox_options *o, const struct sandbox_tmpfs *t,
                        struct sandbox_etc *e)
{
        const struct config *c = o->config;
        char *s = NULL;
        size_t bytes = 0;
        int r;

        _Static_assert(ELEMENTSOF(e->files) >= 7, "room for every synthesized file");
        sandbox_etc_clear(e);
        if (!t->stage)
                return -EINVAL;
        e->dir = fmt("%s/etc", t->stage);
        if (!e->dir)
                return -ENOMEM;
        /*
         * The synthesized files and directories are the agent's, as bwrap
         * made them before (a write is EROFS, not EACCES); -1 keeps ours,
         * which the sandbox's user namespace maps to the agent already.
         */
        e->no_host = o->image_root != NULL;
        e->uid = o->host_uid ? o->host_uid : (uid_t)-1;
        e->gid = o->host_uid ? o->host_gid : (gid_t)-1;
        r = file_add(e, "passwd",
                     fmt("%s:x:%u:%u:cloister agent:%s:%s\n", c->run.user, SANDBOX_AGENT_UID,
                         SANDBOX_AGENT_GID, c->home.path, agent_shell(o)));
        if (r >= 0)
                r = file_add(e, "group", fmt("%s:x:%u:\n", c->run.user, SANDBOX_AGENT_GID));
        if (r >= 0)
                r = file_add(e, "hostname", fmt("%s\n", c->workspace.name));
        if (r >= 0)
                r = file_add(e, "hosts",
                             fmt("127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\t%s\n",
                                 c->workspace.name));
        if (r >= 0)
                r = file_add(e, "nsswitch.conf",
                             strdup("passwd: files\ngroup: files\nshadow: files\n"
                                    "hosts: files dns\nnetworks: files\n"));
        if (r >= 0 && o->host_network) {
                r = host_file_read("/etc/resolv.conf", &s);
                if (r >= 0)
                        r = file_add(e, "resolv.conf", s);
        } else if (r >= 0) {
                r = file_add(e, "resolv.conf",
                             strdup(c->network.mode == CONFIG_NETWORK_PROXY
                                            ? "# cloister: [network] mode = proxy; no name "
                                              "servers: the proxy at " SANDBOX_PROXY_URL
                                              " resolves names\n"
                                            : "# cloister: [network] mode = none; no name "
                                              "servers\n"));
        }
        if (r >= 0) {
                s = NULL;
                r = compose_git_proxy_config(c, &s);
                if (r >= 0 && s)
                        r = file_add(e, "gitconfig", s);
        }
        for (size_t i = 0; r >= 0 && i < SANDBOX_ETC_HOST_N; i++) {
                e->host_dest[i] = fmt("%s/%s", e->dir, host_etc[i] + ETC_PREFIX_LEN);
                if (!e->host_dest[i])
                        r = -ENOMEM;
        }
        if (r < 0) {
                sandbox_etc_clear(e);
                return r;
        }
        /*
         * Whole pages per file, room for each host file's copy, a few pages
         * for the directories. Nothing is written after the child's copy:
         * the agent sees it read-only.
         */
        for (size_t i = 0; i < e->n_files; i++) {
                e->files[i].len = strlen(e->files[i].data);
                bytes += (e->files[i].len + 4095) / 4096 * 4096;
        }
        bytes += SANDBOX_ETC_HOST_N * (size_t)SANDBOX_ETC_COPY_MAX + 16 * 4096;
        snprintf(e->options, sizeof(e->options), "size=%zu,nr_inodes=%zu,mode=0755", bytes,
                 ELEMENTSOF(e->files) + SANDBOX_ETC_HOST_N + 8);
        return 0;
}

void sandbox_etc_clear(struct sandbox_etc *e)
{
        free(e->dir);
        for (size_t i = 0; i < e->n_files; i++)
                free(e->files[i].data);
        for (size_t i = 0; i < SANDBOX_ETC_HOST_N; i++)
                free(e->host_dest[i]);
        *e = (struct sandbox_etc){0};
}

static int fail(const char *what, const char *name, int err)
{
        return sandbox_child_fail("/etc", what, name ? "/etc/" : NULL, name, err);
}

static int data_write(const struct sandbox_etc *e, int dir, const char *name, const char *data,
                      size_t len)
{
        int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        size_t done = 0;
        int err = 0;

        if (fd < 0)
                return fail("create", name, errno);
        /* The caller's umask may be 077: the agent must still read them. */
        if (fchmod(fd, 0644) < 0 || fchown(fd, e->uid, e->gid) < 0)
                err = errno;
        while (!err && done < len) {
                ssize_t n = write(fd, data + done, len - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        err = n < 0 ? errno : EIO;
                else
                        done += (size_t)n;
        }
        close(fd);
        return err ? fail("write", name, err) : 0;
}

static int dir_make(const struct sandbox_etc *e, int dir, const char *name)
{
        if (mkdirat(dir, name, 0755) < 0 || fchmodat(dir, name, 0755, 0) < 0 ||
            fchownat(dir, name, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) < 0)
                return fail("mkdir", name, errno);
        return 0;
}

/*
 * Copied only if it is small and anyone may read it: a copy made by root
 * must not hand the agent what only root or a group could read, and a bind
 * keeps owner and mode.
 */
static bool copyable(const struct stat *st)
{
        return S_ISREG(st->st_mode) && (st->st_mode & S_IROTH) &&
               st->st_size <= SANDBOX_ETC_COPY_MAX;
}

/*
 * A host file, copied in the kernel (sendfile, no buffer of ours) if it is
 * copyable, or else an empty file to bind it onto: returns 1 then.
 */
static int host_file_copy(int dir, const char *name, const char *src, const struct stat *st)
{
        struct stat in_st;
        int in = -1, out, err = 0;
        off_t off = 0;

        if (copyable(st)) {
                /* Non-blocking: a FIFO put there meanwhile must not hang the run. */
                in = open(src, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (in >= 0 && (fstat(in, &in_st) < 0 || !copyable(&in_st)))
                        in = safe_close(in); /* changed since the stat: bound as it is now */
        }
        out = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (out < 0)
                err = errno;
        else if (fchmod(out, in >= 0 ? in_st.st_mode & 0755 : 0644) < 0)
                err = errno; /* the caller's umask may be 077 */
        while (!err && in >= 0 && off < in_st.st_size) {
                ssize_t n = sendfile(out, in, &off, (size_t)(in_st.st_size - off));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        err = errno;
                else if (n == 0)
                        break; /* it shrank meanwhile: what there was */
        }
        if (out >= 0)
                close(out);
        if (in >= 0)
                close(in);
        if (err)
                return fail("copy the host's", name, err);
        return in < 0;
}

int sandbox_etc_enter(const struct sandbox_etc *e)
{
        int dir, r = 0;

        if (mkdir(e->dir, 0700) < 0 && errno != EEXIST)
                return fail("mkdir", NULL, errno);
        if (mount("tmpfs", e->dir, "tmpfs", MS_NOSUID | MS_NODEV, e->options) < 0)
                return fail("mount a tmpfs for", NULL, errno);
        dir = open(e->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return fail("open", NULL, errno);
        if (fchown(dir, e->uid, e->gid) < 0)
                r = fail("chown", NULL, errno);
        for (size_t i = 0; r == 0 && i < e->n_files; i++)
                r = data_write(e, dir, e->files[i].name, e->files[i].data, e->files[i].len);
        if (r == 0 && !e->no_host)
                r = dir_make(e, dir, "ssl");
        for (size_t i = 0; r == 0 && !e->no_host && i < SANDBOX_ETC_HOST_N; i++) {
                const char *name = host_etc[i] + ETC_PREFIX_LEN;
                struct stat st;

                /* Followed, as bwrap's bind of it did (/etc/localtime is a symlink). */
                if (stat(host_etc[i], &st) < 0) {
                        if (errno == ENOENT || errno == ENOTDIR)
                                continue;
                        r = fail("stat", name, errno);
                        break;
                }
                /*
                 * Small files are copied, directories bound: every mount
                 * here is a line that each of bwrap's mountinfo parses
                 * reads again, and a remount.
                 */
                r = S_ISDIR(st.st_mode) ? dir_make(e, dir, name)
                                        : host_file_copy(dir, name, host_etc[i], &st);
                if (r > 0 || (r == 0 && S_ISDIR(st.st_mode))) {
                        r = 0;
                        if (mount(host_etc[i], e->host_dest[i], NULL, MS_BIND | MS_REC, NULL) < 0)
                                r = fail("bind the host's", name, errno);
                }
        }
        close(dir);
        return r;
}
