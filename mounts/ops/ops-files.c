/* SPDX-License-Identifier: MIT */
/*
 * ops-files.c: reading and changing the workspace's files as the agent in
 * the sandbox would (operations.h: ops_file_*), for `cloister mcp`'s file tools.
 *
 * Trust boundary: every path comes from a model. Nothing here joins it
 * onto a host path. It is resolved inside the mount, the very tree the
 * sandbox shows, from directory fds:
 *   - reads: openat2(mount root, path, RESOLVE_IN_ROOT | NO_MAGICLINKS):
 *     "/" is the mount's root, so "..", absolute symlinks the agent made
 *     and "/proc/self/root" all stay in it (the last one does not exist
 *     there);
 *   - writes: only under [repo] path, from its fd, with RESOLVE_BENEATH |
 *     NO_MAGICLINKS | NO_XDEV; the last component is never followed
 *     (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW), so a symlink can't carry a write
 *     to the home, a mirror or anywhere else. The home and the mirrors are
 *     read-only to these tools.
 * As root, each operation runs with the agent's identity (its host uid and
 * gid, no groups, through setfsuid/setfsgid and setgroups on this thread
 * only), so permissions, owners and the journal are the agent's, as for a
 * command in the sandbox; root's capabilities do not apply meanwhile.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sodium.h>

#include "config.h"
#include "operations.h"
#include "lib/errorf.h"
#include "lib/readall.h"
#include "lib/util.h"

#define LIST_DEPTH_MAX 64

/* The view of one workspace: its mount, its repo, and whose files they are. */
struct view {
        const struct config *c;
        int root, repo; /* O_PATH directory fds */
        /* The mounts of the view: the workspace's own and each copy-on-write
         * part's, which its daemon mounts over its directory (fs/daemon/parts.c) */
        dev_t devs[3];
        size_t n_devs;
        bool as_agent; /* root: switch this thread to uid/gid for each operation */
        uid_t uid;
        gid_t gid;
        gid_t groups[NGROUPS_MAX];
        int n_groups; /* this thread's own, restored after */
};

static void view_close(struct view *v)
{
        v->root = safe_close(v->root);
        v->repo = safe_close(v->repo);
}

/* The agent's host identity, as the daemon serving the mount wrote it. */
static int agent_identity(int root, uid_t *uid, gid_t *gid)
{
        _cleanup_close_ int fd =
                openat(root, ".cloister/workspace", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        char buf[8192];
        ssize_t n;
        json_t *j, *sb;

        if (fd < 0)
                return negative_errno();
        n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return -EIO;
        j = json_loadb(buf, (size_t)n, 0, NULL);
        sb = json_object_get(j, "sandbox");
        if (!json_is_integer(json_object_get(sb, "host_uid"))) {
                json_decref(j);
                return -ENOENT;
        }
        *uid = (uid_t)json_integer_value(json_object_get(sb, "host_uid"));
        *gid = json_is_integer(json_object_get(sb, "host_gid"))
                       ? (gid_t)json_integer_value(json_object_get(sb, "host_gid"))
                       : (gid_t)*uid;
        json_decref(j);
        return 0;
}

static int view_open(const struct config *c, struct view *v, char **ret_error)
{
        *v = (struct view){.c = c, .root = -1, .repo = -1};
        v->root = open(c->workspace.mountpoint, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (v->root < 0)
                return errorf(ret_error, negative_errno(), "workspace '%s' is not mounted: %m",
                              c->workspace.name);
        v->repo = openat(v->root, c->repo.path + 1, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (v->repo < 0) {
                view_close(v);
                return errorf(ret_error, negative_errno(), "workspace '%s': %s: %m",
                              c->workspace.name, c->repo.path);
        }
        {
                struct stat st;
                _cleanup_close_ int home = -1;

                if (fstat(v->root, &st) == 0)
                        v->devs[v->n_devs++] = st.st_dev;
                if (fstat(v->repo, &st) == 0)
                        v->devs[v->n_devs++] = st.st_dev;
                if (c->home.path && c->home.path[0] == '/' && c->home.path[1])
                        home = openat(v->root, c->home.path + 1,
                                      O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (home >= 0 && fstat(home, &st) == 0)
                        v->devs[v->n_devs++] = st.st_dev;
        }
        if (geteuid() == 0) {
                if (agent_identity(v->root, &v->uid, &v->gid) < 0) {
                        view_close(v);
                        return errorf(ret_error, -EIO,
                                      "workspace '%s': its mount names no agent identity",
                                      c->workspace.name);
                }
                v->as_agent = true;
        }
        return 0;
}

/* Become the agent on this thread (root only); agent_end() undoes it. */
static void agent_begin(struct view *v)
{
        if (!v->as_agent)
                return;
        v->n_groups = getgroups(NGROUPS_MAX, v->groups);
        /* The raw calls: glibc's setgroups changes every thread's. */
        (void)syscall(SYS_setgroups, 0, NULL);
        (void)setfsgid(v->gid);
        (void)setfsuid(v->uid);
}

static void agent_end(struct view *v)
{
        if (!v->as_agent)
                return;
        (void)setfsuid(0);
        (void)setfsgid(0);
        if (v->n_groups >= 0)
                (void)syscall(SYS_setgroups, v->n_groups, v->groups);
}

/*
 * openat2 answers EAGAIN when a rename or a mount anywhere on the host
 * raced a lookup of ".." (its seqlock check); the call is then to be
 * retried. A bounded number of times: a host that renames without pause
 * gets an error, not a hung tool.
 */
#define OPEN2_TRIES 64

static int open2(int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
        struct open_how how = {.flags = flags | O_CLOEXEC, .resolve = resolve};
        long fd = -1;

        for (int i = 0; i < OPEN2_TRIES; i++) {
                fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
                if (fd >= 0 || (errno != EAGAIN && errno != EINTR))
                        break;
        }
        return fd < 0 ? negative_errno() : (int)fd;
}

/* A path a model gave: no NUL (jansson lets one through), not too long. */
static int path_check(const char *path, size_t len, char **ret_error)
{
        if (!path || len == 0)
                return errorf(ret_error, -EINVAL, "path: empty");
        if (strlen(path) != len)
                return errorf(ret_error, -EINVAL, "path: holds a NUL byte");
        if (len >= PATH_MAX)
                return errorf(ret_error, -ENAMETOOLONG, "path: longer than %d bytes", PATH_MAX - 1);
        return 0;
}

/* The path as it is looked up from the mount's root ("/workspace/x"). */
static char *in_view(const struct config *c, const char *path)
{
        char *p = NULL;

        if (path[0] == '/')
                return strdup(path);
        if (asprintf(&p, "%s/%s", c->repo.path, path) < 0)
                return NULL;
        return p;
}

/* The part of path below [repo] path, or NULL if it is elsewhere ("" for the repo itself). */
static const char *in_repo(const struct config *c, const char *path)
{
        const char *rest;

        if (path[0] != '/')
                return path;
        rest = startswith(path, c->repo.path);
        if (!rest || (*rest && *rest != '/'))
                return NULL;
        while (*rest == '/')
                rest++;
        return rest;
}

static const char *why(int e)
{
        switch (e) {
        case EXDEV:
                return "it leads out of the repository (through '..' or a symlink)";
        case ELOOP:
                return "a symlink is in the way (writes never follow one)";
        case ENOENT:
                return "no such file or directory";
        case EAGAIN:
                return "the host kept renaming files while it was looked up: try again";
        case EROFS:
                return "read-only: a mirror";
        default:
                return strerror(e);
        }
}

/*
 * Open the directory that holds path's last component, for a change: under
 * the repo only. *ret_name points into path (its last component).
 */
static int parent_open(struct view *v, const char *path, bool make, int *ret_fd,
                       const char **ret_name, char **ret_error)
{
        const char *rel = in_repo(v->c, path), *slash;
        _cleanup_free_ char *dir = NULL;
        int fd;

        if (!rel)
                return errorf(ret_error, -EACCES,
                              "'%s': the file tools change only the repository (%s); the home "
                              "and the mirrors are read-only to them",
                              path, v->c->repo.path);
        if (!*rel)
                return errorf(ret_error, -EISDIR, "'%s' is the repository itself", path);
        slash = strrchr(rel, '/');
        *ret_name = slash ? slash + 1 : rel;
        if (!**ret_name || streq(*ret_name, ".") || streq(*ret_name, ".."))
                return errorf(ret_error, -EINVAL, "'%s' does not name a file", path);
        dir = slash ? strndup(rel, (size_t)(slash - rel)) : strdup(".");
        if (!dir)
                return -ENOMEM;
        if (make && slash) {
                /*
                 * mkdir -p below the repo, one component at a time, each
                 * prefix resolved as the other file tools resolve a path
                 * (from the repo, beneath it): "src/../x" is the repo's x,
                 * a symlink inside the repo is followed, and "../x" or a
                 * symlink that leaves it is refused, as EXDEV.
                 */
                _cleanup_close_ int cur = fcntl(v->repo, F_DUPFD_CLOEXEC, 3);
                _cleanup_free_ char *prefix = calloc(1, strlen(dir) + 1);
                char *save = NULL;
                if (cur < 0 || !prefix)
                        return -ENOMEM;
                for (char *part = strtok_r(dir, "/", &save); part;
                     part = strtok_r(NULL, "/", &save)) {
                        int next;
                        if (*prefix)
                                strcat(prefix, "/");
                        strcat(prefix, part);
                        if (!streq(part, ".") && !streq(part, "..") &&
                            mkdirat(cur, part, 0777) < 0 && errno != EEXIST)
                                return errorf(ret_error, negative_errno(), "'%s': %s", path,
                                              why(errno));
                        next = open2(v->repo, prefix, O_PATH | O_DIRECTORY,
                                     RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
                        if (next < 0)
                                return errorf(ret_error, next, "'%s': %s", path, why(-next));
                        safe_close(cur);
                        cur = next;
                }
                *ret_fd = TAKE_FD(cur);
                return 0;
        }
        fd = open2(v->repo, dir, O_PATH | O_DIRECTORY,
                   RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
        if (fd < 0)
                return errorf(ret_error, fd, "'%s': %s", path, why(-fd));
        *ret_fd = fd;
        return 0;
}

/* Whether rel ("workspace/x", no leading '/') is at or below top ("/workspace"). */
static bool below(const char *rel, const char *top)
{
        const char *rest = startswith(rel, top + 1);

        return rest && (*rest == '\0' || *rest == '/');
}

/*
 * Open path (as looked up from the mount's root) inside the view: "..",
 * absolute symlinks and magic links all stay in the mount
 * (RESOLVE_IN_ROOT), and where it lands must be a tree the sandbox shows
 * (the repo, the home, a mirror), not the mount's own bookkeeping
 * (.cloister/) that a symlink to "/.cloister/..." would reach from inside
 * the mount but not from the sandbox.
 */
static int view_resolve(struct view *v, const char *path, uint64_t flags, bool *ret_outside)
{
        char proc[64], root_at[PATH_MAX], at[PATH_MAX];
        const char *rel;
        ssize_t n, m;
        bool ok;
        int fd;

        /*
         * Not RESOLVE_NO_XDEV: the parts are mounts of their own inside the
         * view. Where it lands must be on one of the view's mounts (never one
         * mounted over the view by anyone else).
         */
        fd = open2(v->root, path, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
        if (fd < 0)
                return fd;
        {
                struct stat st;
                bool ours = false;

                if (fstat(fd, &st) == 0)
                        for (size_t i = 0; i < v->n_devs; i++)
                                ours = ours || st.st_dev == v->devs[i];
                if (!ours) {
                        safe_close(fd);
                        return -EXDEV;
                }
        }
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", v->root);
        n = readlink(proc, root_at, sizeof(root_at) - 1);
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        m = readlink(proc, at, sizeof(at) - 1);
        if (n <= 0 || m <= 0) {
                safe_close(fd);
                return -EIO;
        }
        root_at[n] = at[m] = '\0';
        rel = startswith(at, root_at);
        if (rel && streq(root_at, "/"))
                rel = at;
        if (!rel || (*rel && *rel != '/')) {
                safe_close(fd);
                return -EXDEV;
        }
        while (*rel == '/')
                rel++;
        ok = below(rel, v->c->repo.path) || below(rel, v->c->home.path);
        for (size_t i = 0; !ok && i < v->c->n_mirrors; i++)
                ok = below(rel, v->c->mirrors[i].path);
        if (!ok) {
                safe_close(fd);
                *ret_outside = true;
                return -ENOENT; /* as in the sandbox: nothing is there */
        }
        return fd;
}

/*
 * Whether path (as looked up from the mount's root) is, by its name alone,
 * in a tree the sandbox shows: only to choose an error message (the
 * lookup itself is openat2's). ".." stops at "/", as RESOLVE_IN_ROOT does.
 */
static bool named_in_view(const struct config *c, const char *path)
{
        char norm[PATH_MAX] = "";
        size_t n = 0;
        bool ok;

        for (const char *p = path; *p;) {
                size_t len = strcspn(p, "/");
                if (len == 2 && p[0] == '.' && p[1] == '.') {
                        while (n > 0 && norm[n - 1] != '/')
                                n--;
                        if (n > 0)
                                n--;
                } else if (len > 0 && !(len == 1 && p[0] == '.')) {
                        if (n + 1 + len >= sizeof(norm))
                                return false;
                        if (n > 0)
                                norm[n++] = '/';
                        memcpy(norm + n, p, len);
                        n += len;
                }
                norm[n] = '\0';
                p += len;
                while (*p == '/')
                        p++;
        }
        ok = below(norm, c->repo.path) || below(norm, c->home.path);
        for (size_t i = 0; !ok && i < c->n_mirrors; i++)
                ok = below(norm, c->mirrors[i].path);
        return ok;
}

/* For a path the sandbox does not show: what the file tools can see. */
static int outside_view(const struct config *c, const char *path, char **ret_error)
{
        _cleanup_free_ char *mirrors = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&mirrors, &len);

        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_mirrors; i++)
                fprintf(f, "%s%s", i ? ", " : "", c->mirrors[i].path);
        if (fclose(f) != 0)
                return -ENOMEM;
        return errorf(ret_error, -ENOENT,
                      "'%s': not in the sandbox's view: the file tools see the repository (%s, "
                      "where a relative path starts), the home (%s)%s%s%s",
                      path, c->repo.path, c->home.path, c->n_mirrors ? " and the mirrors (" : "",
                      c->n_mirrors ? mirrors : "", c->n_mirrors ? ")" : "");
}

/*
 * A regular file's bytes, NUL-terminated (the text paths scan for it), at
 * most OPS_FILE_WRITE_MAX (-EFBIG past it); -EISDIR, or -EINVAL for
 * anything else that is not a regular file (a FIFO would block).
 */
static int read_regular(int fd, char **ret, size_t *ret_len)
{
        struct stat st;
        int r;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
        r = fd_read_whole(fd, (size_t)st.st_size, OPS_FILE_WRITE_MAX, ret, ret_len);
        if (r == 0)
                (*ret)[*ret_len] = '\0';
        return r;
}

static bool is_text(const char *p, size_t n)
{
        json_t *s;

        if (memchr(p, '\0', n))
                return false;
        s = json_stringn(p, n); /* jansson: valid UTF-8 */
        json_decref(s);
        return s != NULL;
}

int ops_file_read(const struct config *c, const char *path, int64_t offset_line, int64_t limit,
                  bool numbered, json_t **ret, char **ret_error)
{
        _cleanup_free_ char *p = NULL, *data = NULL, *text = NULL;
        struct view v;
        size_t len = 0;
        bool outside = false;
        int fd, r;

        r = path_check(path, path ? strlen(path) : 0, ret_error);
        if (r < 0)
                return r;
        /* The bound keeps offset_line + 1 (first_line) from overflowing. */
        if (offset_line < 0 || limit < 0 || offset_line > OPS_FILE_LINES_MAX ||
            limit > OPS_FILE_LINES_MAX)
                return errorf(ret_error, -EINVAL,
                              "offset and limit are counts of lines, 0 to %" PRId64,
                              OPS_FILE_LINES_MAX);
        p = in_view(c, path);
        if (!p)
                return -ENOMEM;
        r = view_open(c, &v, ret_error);
        if (r < 0)
                return r;
        agent_begin(&v);
        fd = view_resolve(&v, p, O_RDONLY | O_NONBLOCK | O_NOCTTY, &outside);
        if (fd >= 0) {
                r = read_regular(fd, &data, &len);
                safe_close(fd);
        }
        agent_end(&v);
        view_close(&v);
        if (fd == -ENOENT && (outside || !named_in_view(c, p)))
                return outside_view(c, path, ret_error);
        if (fd < 0)
                return errorf(ret_error, fd, "'%s': %s", path, why(-fd));
        if (r == -EISDIR || r == -EINVAL)
                return errorf(ret_error, r, "'%s': %s", path,
                              r == -EISDIR ? "a directory (file_list lists it)"
                                           : "not a regular file");
        if (r == -EFBIG)
                return errorf(ret_error, r, "'%s': larger than %d bytes", path, OPS_FILE_WRITE_MAX);
        if (r < 0)
                return errorf(ret_error, r, "'%s': %s", path, strerror(-r));
        if (!is_text(data, len)) {
                size_t n = MIN(len, (size_t)OPS_FILE_READ_MAX);
                size_t b64_len = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
                _cleanup_free_ char *b64 = malloc(b64_len);
                if (b64)
                        sodium_bin2base64(b64, b64_len, (const unsigned char *)data, n,
                                          sodium_base64_VARIANT_ORIGINAL);
                *ret = json_pack("{s:s, s:s, s:s, s:I, s:b}", "path", path, "encoding", "base64",
                                 "content", b64 ? b64 : "", "size", (json_int_t)len, "truncated",
                                 n < len);
                return *ret ? 0 : -ENOMEM;
        }
        /* Lines offset_line+1 .. +limit (all when 0), numbered as cat -n does. */
        FILE *f;
        size_t tlen = 0, out_bytes = 0, cut = 0, cut_at = 0;
        int64_t line = 0, lines_out = 0;
        bool truncated = false;
        f = open_memstream(&text, &tlen);
        if (!f)
                return -ENOMEM;
        for (const char *s = data; *s;) {
                const char *nl = strchr(s, '\n');
                size_t l = nl ? (size_t)(nl - s + 1) : strlen(s);
                line++;
                if (line > offset_line && (limit == 0 || lines_out < limit)) {
                        if (out_bytes + l > OPS_FILE_READ_MAX && lines_out == 0) {
                                /*
                                 * A first line longer than a whole read: its
                                 * first bytes (cut where a character
                                 * starts), and the read goes on at the next
                                 * line, or it would answer the same again.
                                 */
                                size_t n = OPS_FILE_READ_MAX;
                                while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
                                        n--;
                                if (numbered)
                                        fprintf(f, "%6lld\t", (long long)line);
                                fwrite(s, 1, n, f);
                                out_bytes += n;
                                lines_out++;
                                cut = l - n;
                                cut_at = (size_t)(s - data) + n;
                        }
                        if (cut || out_bytes + l > OPS_FILE_READ_MAX) {
                                truncated = true;
                                break;
                        }
                        if (numbered)
                                fprintf(f, "%6lld\t", (long long)line);
                        fwrite(s, 1, l, f);
                        out_bytes += l;
                        lines_out++;
                }
                s += l;
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = json_pack("{s:s, s:s, s:s%, s:I, s:I, s:I, s:b}", "path", path, "encoding", "utf-8",
                         "content", text, tlen, "size", (json_int_t)len, "first_line",
                         (json_int_t)(offset_line + 1), "lines", (json_int_t)lines_out, "truncated",
                         truncated || (limit && lines_out == limit && line > offset_line + limit));
        /* The line shown in part: how much of it was left out, and where that starts. */
        if (*ret && cut)
                json_object_set_new(*ret, "line_cut",
                                    json_pack("{s:I, s:I, s:I}", "line", (json_int_t)line,
                                              "bytes_left_out", (json_int_t)cut, "at_byte",
                                              (json_int_t)cut_at));
        return *ret ? 0 : -ENOMEM;
}

/* Write content to name in dirfd, replacing it (never through a symlink). */
static int write_file(int dirfd, const char *name, const char *content, size_t len, bool *created)
{
        struct stat st;
        int fd, r = 0;

        *created = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0;
        if (!*created && S_ISLNK(st.st_mode))
                return -ELOOP;
        if (!*created && !S_ISREG(st.st_mode))
                return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
        /*
         * The agent can put a FIFO at name between the fstatat() above and
         * the open (a rename over it): a blocking open would wait for a
         * reader for ever, holding this call, and the server's exit, with
         * it. Without a reader the open fails (ENXIO), with one it is
         * refused below; what is checked is what was opened.
         */
        fd = openat(dirfd, name,
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                    0666 & ~022);
        if (fd < 0)
                return errno == ENXIO ? -EINVAL : negative_errno();
        if (fstat(fd, &st) < 0)
                r = negative_errno();
        else if (!S_ISREG(st.st_mode))
                r = -EINVAL;
        else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
                r = negative_errno();
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        for (size_t off = 0; off < len;) {
                ssize_t n = write(fd, content + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = negative_errno();
                        break;
                }
                off += (size_t)n;
        }
        if (close(fd) < 0 && r == 0)
                r = negative_errno();
        return r;
}

int ops_file_write(const struct config *c, const char *path, const char *content, size_t len,
                   json_t **ret, char **ret_error)
{
        struct view v;
        const char *name;
        bool created = false;
        int dfd = -1, r;

        r = path_check(path, path ? strlen(path) : 0, ret_error);
        if (r < 0)
                return r;
        if (len > OPS_FILE_WRITE_MAX)
                return errorf(ret_error, -EFBIG, "content: more than %d bytes", OPS_FILE_WRITE_MAX);
        r = view_open(c, &v, ret_error);
        if (r < 0)
                return r;
        agent_begin(&v);
        r = parent_open(&v, path, true, &dfd, &name, ret_error);
        if (r == 0) {
                r = write_file(dfd, name, content, len, &created);
                if (r < 0)
                        errorf(ret_error, r, "'%s': %s", path,
                               r == -EISDIR   ? "a directory"
                               : r == -EINVAL ? "not a regular file"
                               : r == -ENOSPC || r == -EDQUOT
                                       ? "the workspace is full ([limits] bytes or files)"
                                       : why(-r));
        }
        safe_close(dfd);
        agent_end(&v);
        view_close(&v);
        if (r < 0)
                return r;
        *ret = json_pack("{s:s, s:I, s:b}", "path", path, "bytes", (json_int_t)len, "created",
                         created);
        return *ret ? 0 : -ENOMEM;
}

int ops_file_edit(const struct config *c, const char *path, const char *old_string,
                  const char *new_string, bool replace_all, json_t **ret, char **ret_error)
{
        _cleanup_free_ char *data = NULL, *out = NULL;
        size_t len = 0, olen, nlen, count = 0, outlen = 0;
        struct view v;
        const char *name;
        bool created;
        int dfd = -1, fd, r;

        r = path_check(path, path ? strlen(path) : 0, ret_error);
        if (r < 0)
                return r;
        if (!old_string || !*old_string)
                return errorf(ret_error, -EINVAL,
                              "old_string: empty (file_write replaces a whole file)");
        if (!new_string)
                return errorf(ret_error, -EINVAL, "new_string: missing");
        olen = strlen(old_string);
        nlen = strlen(new_string);
        r = view_open(c, &v, ret_error);
        if (r < 0)
                return r;
        agent_begin(&v);
        r = parent_open(&v, path, false, &dfd, &name, ret_error);
        if (r < 0)
                goto out;
        fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                r = errorf(ret_error, negative_errno(), "'%s': %s", path, why(errno));
                goto out;
        }
        r = read_regular(fd, &data, &len);
        safe_close(fd);
        if (r < 0) {
                errorf(ret_error, r, "'%s': %s", path,
                       r == -EFBIG    ? "too large to edit"
                       : r == -EISDIR ? "a directory"
                       : r == -EINVAL ? "not a regular file"
                                      : strerror(-r));
                goto out;
        }
        for (const char *s = data; (s = memmem(s, len - (size_t)(s - data), old_string, olen));
             s += olen)
                count++;
        if (count == 0) {
                r = errorf(ret_error, -ENOENT,
                           "'%s': old_string was not found (it must match exactly, whitespace "
                           "and line ends included)",
                           path);
                goto out;
        }
        if (count > 1 && !replace_all) {
                r = errorf(ret_error, -EEXIST,
                           "'%s': old_string occurs %zu times; give more context to make it "
                           "unique, or set replace_all",
                           path, count);
                goto out;
        }
        if (len - count * olen + count * nlen > OPS_FILE_WRITE_MAX) {
                r = errorf(ret_error, -EFBIG, "'%s': the edit would make it larger than %d bytes",
                           path, OPS_FILE_WRITE_MAX);
                goto out;
        }
        out = malloc(len - count * olen + count * nlen + 1);
        if (!out) {
                r = -ENOMEM;
                goto out;
        }
        for (const char *s = data, *hit;; s = hit + olen) {
                hit = memmem(s, len - (size_t)(s - data), old_string, olen);
                size_t keep = hit ? (size_t)(hit - s) : len - (size_t)(s - data);
                memcpy(out + outlen, s, keep);
                outlen += keep;
                if (!hit)
                        break;
                memcpy(out + outlen, new_string, nlen);
                outlen += nlen;
        }
        r = write_file(dfd, name, out, outlen, &created);
        if (r < 0)
                errorf(ret_error, r, "'%s': %s", path, why(-r));
out:
        safe_close(dfd);
        agent_end(&v);
        view_close(&v);
        if (r < 0)
                return r;
        *ret = json_pack("{s:s, s:I, s:I}", "path", path, "replacements", (json_int_t)count,
                         "bytes", (json_int_t)outlen);
        return *ret ? 0 : -ENOMEM;
}

struct lister {
        json_t *entries;
        const char *pattern;
        size_t n;
        bool truncated;
};

static const char *type_of(mode_t m)
{
        return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : "other";
}

static void list_dir(struct lister *l, int dfd, const char *prefix, bool recursive, unsigned depth)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent **names = NULL;
        int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n;

        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                return;
        }
        n = scandirat(dirfd(d), ".", &names, NULL, alphasort);
        for (int i = 0; i < n; i++) {
                const char *name = names[i]->d_name;
                _cleanup_free_ char *rel = NULL;
                struct stat st;

                if (l->truncated || streq(name, ".") || streq(name, "..") ||
                    fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (asprintf(&rel, "%s%s", prefix, name) < 0)
                        continue;
                if (!l->pattern || fnmatch(l->pattern, rel, 0) == 0 ||
                    fnmatch(l->pattern, name, 0) == 0) {
                        if (l->n >= OPS_LIST_MAX) {
                                l->truncated = true;
                                continue;
                        }
                        json_array_append_new(l->entries,
                                              json_pack("{s:o, s:s, s:I}", "path",
                                                        ops_json_text(rel, strlen(rel)), "type",
                                                        type_of(st.st_mode), "size",
                                                        (json_int_t)st.st_size));
                        l->n++;
                }
                if (recursive && S_ISDIR(st.st_mode) && depth < LIST_DEPTH_MAX &&
                    !(depth == 0 && streq(prefix, "") && streq(name, ".git"))) {
                        _cleanup_close_ int sub = openat(
                                dirfd(d), name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        _cleanup_free_ char *p2 = NULL;
                        if (sub >= 0 && asprintf(&p2, "%s/", rel) >= 0)
                                list_dir(l, sub, p2, true, depth + 1);
                }
        }
        for (int i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

int ops_file_list(const struct config *c, const char *path, const char *pattern, bool recursive,
                  json_t **ret, char **ret_error)
{
        _cleanup_free_ char *p = NULL;
        struct lister l = {.pattern = pattern && *pattern ? pattern : NULL};
        struct view v;
        bool outside = false;
        int fd, r;

        if (!path || !*path)
                path = c->repo.path;
        r = path_check(path, strlen(path), ret_error);
        if (r < 0)
                return r;
        if (pattern && strlen(pattern) > 1024)
                return errorf(ret_error, -EINVAL, "pattern: longer than 1024 bytes");
        p = in_view(c, path);
        if (!p)
                return -ENOMEM;
        r = view_open(c, &v, ret_error);
        if (r < 0)
                return r;
        l.entries = json_array();
        agent_begin(&v);
        fd = view_resolve(&v, p, O_PATH | O_DIRECTORY, &outside);
        if (fd >= 0) {
                list_dir(&l, fd, "", recursive, 0);
                safe_close(fd);
        }
        agent_end(&v);
        view_close(&v);
        if (fd < 0) {
                json_decref(l.entries);
                if (fd == -ENOENT && (outside || !named_in_view(c, p)))
                        return outside_view(c, path, ret_error);
                return errorf(ret_error, fd, "'%s': %s", path,
                              fd == -ENOTDIR ? "not a directory" : why(-fd));
        }
        *ret = json_pack("{s:s, s:o, s:b}", "path", path, "entries", l.entries, "truncated",
                         l.truncated);
        return *ret ? 0 : -ENOMEM;
}

int ops_file_delete(const struct config *c, const char *path, json_t **ret, char **ret_error)
{
        struct view v;
        const char *name;
        struct stat st;
        int dfd = -1, r;

        r = path_check(path, path ? strlen(path) : 0, ret_error);
        if (r < 0)
                return r;
        r = view_open(c, &v, ret_error);
        if (r < 0)
                return r;
        agent_begin(&v);
        r = parent_open(&v, path, false, &dfd, &name, ret_error);
        if (r == 0 && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                r = errorf(ret_error, negative_errno(), "'%s': %s", path, why(errno));
        if (r == 0 && unlinkat(dfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
                r = errorf(ret_error, negative_errno(), "'%s': %s", path,
                           errno == ENOTEMPTY || errno == EEXIST
                                   ? "a directory that is not empty (delete what it holds first)"
                                   : why(errno));
        safe_close(dfd);
        agent_end(&v);
        view_close(&v);
        if (r < 0)
                return r;
        *ret = json_pack("{s:s, s:s}", "path", path, "deleted", type_of(st.st_mode));
        return *ret ? 0 : -ENOMEM;
}
