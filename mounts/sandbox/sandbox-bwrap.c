/* SPDX-License-Identifier: MIT */
/*
 * sandbox-bwrap.c: translate a workspace config into bubblewrap's argv.
 *
 * The sandbox's root is an empty tmpfs that bwrap remounts read-only at the
 * end; into it go, and nothing else:
 *   - /usr (and /bin, /sbin, /lib* as on the host) read-only;
 *   - a synthesized /etc, read-only: passwd and group naming only the
 *     agent, hosts, hostname, nsswitch.conf, resolv.conf, plus the host's CA
 *     certificates and a few files that hold no secrets (ld.so.cache,
 *     alternatives), in one tmpfs (sandbox-etc.c);
 *   - the repo, the home and every mirror, bound from the FUSE mount
 *     (<root>/<path> -> <path>); mirrors read-only a second time here;
 *   - <root>/.cloister/objects read-only at /.cloister/objects, which the
 *     workspace's .git/objects/info/alternates names relatively;
 *   - a new /proc, a minimal read-only /dev (null, zero, full, random,
 *     urandom, tty, pts, shm), and /tmp and /dev/shm, tmpfs limited in size
 *     and inodes (sandbox-tmpfs.c);
 *   - the broker socket at SANDBOX_BROKER_SOCKET, if there is a broker.
 * No host home, /root, /var, /run, /sys, /mnt, D-Bus or docker socket.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "cloister-config.h"
#include "config.h"
#include "sandbox-private.h"
#include "lib/util.h"

void sandbox_strv_add(struct strv_builder *b, const char *s)
{
        char *d;

        if (b->error)
                return;
        if (b->n + 2 > b->allocated) {
                size_t a = MAX(b->allocated * 2, (size_t)64);
                char **v = realloc(b->v, a * sizeof(char *));
                if (!v) {
                        b->error = -ENOMEM;
                        return;
                }
                b->v = v;
                b->allocated = a;
        }
        d = strdup(s);
        if (!d) {
                b->error = -ENOMEM;
                return;
        }
        b->v[b->n++] = d;
        b->v[b->n] = NULL;
}

void sandbox_strv_addf(struct strv_builder *b, const char *fmt, ...)
{
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int r;

        if (b->error)
                return;
        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0) {
                s = NULL;
                b->error = -ENOMEM;
                return;
        }
        sandbox_strv_add(b, s);
}

void sandbox_strv_clear(struct strv_builder *b)
{
        if (b->v)
                strv_free(b->v);
        *b = (struct strv_builder){0};
}

int sandbox_strv_finish(struct strv_builder *b, char ***ret)
{
        int r = b->error;

        if (r == 0 && !b->v) { /* never hand out NULL: an empty vector */
                b->v = calloc(1, sizeof(char *));
                if (!b->v)
                        r = -ENOMEM;
        }
        if (r < 0) {
                sandbox_strv_clear(b);
                return r;
        }
        *ret = b->v;
        *b = (struct strv_builder){0};
        return 0;
}

int sandbox_errorf(char **ret_error, int r, const char *fmt, ...)
{
        va_list ap;

        if (ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

/* /bin, /sbin, /lib*: a symlink into /usr on merged-/usr hosts, else a bind. */
static void usr_add(struct strv_builder *b)
{
        static const char *const dirs[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

        sandbox_strv_add(b, "--ro-bind");
        sandbox_strv_add(b, "/usr");
        sandbox_strv_add(b, "/usr");
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                char target[PATH_MAX];
                struct stat st;
                ssize_t n;

                if (lstat(dirs[i], &st) < 0)
                        continue;
                if (S_ISLNK(st.st_mode)) {
                        n = readlink(dirs[i], target, sizeof(target) - 1);
                        if (n <= 0)
                                continue;
                        target[n] = '\0';
                        sandbox_strv_add(b, "--symlink");
                        sandbox_strv_add(b, target);
                        sandbox_strv_add(b, dirs[i]);
                } else if (S_ISDIR(st.st_mode)) {
                        sandbox_strv_add(b, "--ro-bind");
                        sandbox_strv_add(b, dirs[i]);
                        sandbox_strv_add(b, dirs[i]);
                }
        }
}

/* The first component of an absolute path: "/home/agent" -> "home". */
static bool first_component_is(const char *path, const char *name)
{
        size_t n = strlen(name);

        return path && path[0] == '/' && strncmp(path + 1, name, n) == 0 &&
               (path[1 + n] == '/' || path[1 + n] == '\0');
}

static int bind_source(const struct sandbox_options *o, struct sandbox_fds *fds, const char *src,
                       bool dir, char **ret);

/*
 * [image]: the image's top-level entries instead of the host's /usr, /bin,
 * /lib*, each read-only (a directory or file bound, a symlink made). Left
 * out: what the sandbox makes itself (/etc below, /proc, /dev, /tmp, /run,
 * /sys) and every top-level directory a workspace part lies in (the repo,
 * the home, the mirrors, /.cloister), which bwrap must be able to make
 * mount points in. A root-run sandbox binds the one image root from its
 * staging (bind_source), so bwrap, as the agent's host uid, never needs
 * the store's path. *ret_etc: the image's /etc, as bwrap binds it.
 */
#define SANDBOX_IMAGE_TOP_MAX 64
static int image_add(const struct sandbox_options *o, struct sandbox_fds *fds,
                     struct strv_builder *b, char **ret_etc, bool *ret_var_tmp, char **ret_error)
{
        static const char *const own[] = {"etc", "proc", "dev", "tmp", "run", "sys", ".cloister"};
        const struct config *c = o->config;
        _cleanup_free_ char *from = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        size_t n = 0;
        int r;

        *ret_var_tmp = false;
        d = opendir(o->image_root);
        if (!d)
                return sandbox_errorf(ret_error, negative_errno(), "the image's root %s: %m",
                                      o->image_root);
        r = bind_source(o, fds, o->image_root, true, &from);
        if (r < 0)
                return sandbox_errorf(ret_error, r, "%s: %s", o->image_root, strerror(-r));
        while ((de = readdir(d))) {
                const char *name = de->d_name;
                char target[PATH_MAX];
                bool skip = name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
                struct stat st;
                ssize_t len;

                for (size_t i = 0; !skip && i < ELEMENTSOF(own); i++)
                        skip = streq(name, own[i]);
                skip = skip || first_component_is(c->repo.path, name) ||
                       first_component_is(c->home.path, name);
                for (size_t i = 0; !skip && i < c->n_mirrors; i++)
                        skip = first_component_is(c->mirrors[i].path, name);
                if (skip || fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (++n > SANDBOX_IMAGE_TOP_MAX)
                        return sandbox_errorf(ret_error, -E2BIG,
                                              "the image's root %s has more than %d entries at "
                                              "its top",
                                              o->image_root, SANDBOX_IMAGE_TOP_MAX);
                if (S_ISLNK(st.st_mode)) {
                        len = readlinkat(dirfd(d), name, target, sizeof(target) - 1);
                        if (len <= 0)
                                continue;
                        target[len] = '\0';
                        sandbox_strv_add(b, "--symlink");
                        sandbox_strv_add(b, target);
                        sandbox_strv_addf(b, "/%s", name);
                } else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
                        sandbox_strv_add(b, "--ro-bind");
                        sandbox_strv_addf(b, "%s/%s", from, name);
                        sandbox_strv_addf(b, "/%s", name);
                        if (streq(name, "var") &&
                            fstatat(dirfd(d), "var/tmp", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                            S_ISDIR(st.st_mode))
                                *ret_var_tmp = true;
                }
        }
        if (asprintf(ret_etc, "%s/etc", from) < 0)
                return -ENOMEM;
        return 0;
}

/*
 * The path bwrap binds src from: src itself, or for a root-run sandbox,
 * whose bwrap works as the agent's host uid and can't pass root's private
 * directories, src staged by sandbox-identity.c.
 */
static int bind_source(const struct sandbox_options *o, struct sandbox_fds *fds, const char *src,
                       bool dir, char **ret)
{
        if (!o->host_uid)
                return (*ret = strdup(src)) ? 0 : -ENOMEM;
        return sandbox_stage_add(fds, src, dir, ret);
}

static int layout_bind(const struct sandbox_options *o, struct sandbox_fds *fds,
                       struct strv_builder *b, const char *path, bool writable, char **ret_error)
{
        _cleanup_free_ char *src = NULL, *from = NULL;
        struct stat st;
        int r;

        if (asprintf(&src, "%s%s", o->root, path) < 0)
                return -ENOMEM;
        /* The mount root is ours (the fs daemon's); this only checks the layout. */
        if (stat(src, &st) < 0)
                return sandbox_errorf(ret_error, negative_errno(),
                                      "%s: %m (is the workspace mounted?)", src);
        if (!S_ISDIR(st.st_mode))
                return sandbox_errorf(ret_error, -ENOTDIR, "%s: not a directory", src);
        r = bind_source(o, fds, src, true, &from);
        if (r < 0)
                return sandbox_errorf(ret_error, r, "%s: %s", src, strerror(-r));
        sandbox_strv_add(b, writable ? "--bind" : "--ro-bind");
        sandbox_strv_add(b, from);
        sandbox_strv_add(b, path);
        return 0;
}

/* name beside this binary (the build tree, the sandbox's client dir), else installed. */
static bool find_beside(const char *name, const char *installed, char path[static PATH_MAX])
{
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        char *slash;

        if (n > 0) {
                exe[n] = '\0';
                slash = strrchr(exe, '/');
                if (slash &&
                    snprintf(path, PATH_MAX, "%.*s/%s", (int)(slash - exe), exe, name) < PATH_MAX &&
                    access(path, F_OK) == 0)
                        return true;
        }
        if (strlen(installed) >= PATH_MAX)
                return false;
        strcpy(path, installed);
        return access(path, F_OK) == 0;
}

bool sandbox_commands_module(char path[static PATH_MAX])
{
        return find_beside(SANDBOX_COMMANDS_MODULE, CLOISTER_COMMANDS_MODULE, path);
}

static bool sandbox_exec_helper(char path[static PATH_MAX])
{
        return find_beside(SANDBOX_EXEC_HELPER, CLOISTER_EXEC_HELPER, path);
}

/*
 * The broker's clients, read-only, at SANDBOX_CLIENT_DIR: this very binary
 * (`cloister token issue` is the one client an agent needs) and
 * git-credential-cloister, found beside it (installed) or in the build tree.
 * They are host binaries the agent may read and run, nothing more: they
 * reach the broker only through the socket, as the agent could itself.
 */
static void clients_bind(const struct sandbox_options *o, struct sandbox_fds *fds,
                         struct strv_builder *b)
{
        static const char *const helper_rel[] = {"git-credential-cloister",
                                                 "../../broker/git-credential-cloister"};
        _cleanup_free_ char *from = NULL;
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

        if (n <= 0)
                return;
        exe[n] = '\0';
        if (bind_source(o, fds, exe, false, &from) < 0)
                return;
        sandbox_strv_add(b, "--ro-bind");
        sandbox_strv_add(b, from);
        sandbox_strv_add(b, SANDBOX_CLIENT_DIR "/cloister");
        /* Its commands (`token` among them), beside it, where it looks first. */
        char module[PATH_MAX];
        _cleanup_free_ char *mfrom = NULL;
        if (sandbox_commands_module(module) && bind_source(o, fds, module, false, &mfrom) == 0) {
                sandbox_strv_add(b, "--ro-bind");
                sandbox_strv_add(b, mfrom);
                sandbox_strv_add(b, SANDBOX_CLIENT_DIR "/" SANDBOX_COMMANDS_MODULE);
        }

        char *slash = strrchr(exe, '/');
        if (!slash)
                return;
        *slash = '\0';
        for (size_t i = 0; i < ELEMENTSOF(helper_rel); i++) {
                _cleanup_free_ char *helper = NULL;
                if (asprintf(&helper, "%s/%s", exe, helper_rel[i]) < 0)
                        return;
                if (access(helper, X_OK) == 0) {
                        _cleanup_free_ char *hfrom = NULL;
                        if (bind_source(o, fds, helper, false, &hfrom) < 0)
                                return;
                        sandbox_strv_add(b, "--ro-bind");
                        sandbox_strv_add(b, hfrom);
                        sandbox_strv_add(b, SANDBOX_CLIENT_DIR "/git-credential-cloister");
                        return;
                }
        }
}

int sandbox_bwrap_argv(const struct sandbox_options *o, struct sandbox_fds *fds, char ***ret,
                       char **ret_error)
{
        const struct config *c = o->config;
        struct strv_builder b = {0};
        _cleanup_free_ char *objects = NULL, *from = NULL, *image_etc = NULL;
        bool image_var_tmp = false;
        struct stat st;
        int r;

        sandbox_strv_add(&b, CLOISTER_BWRAP);
        if (o->host_uid && fds->userns < 0) {
                r = sandbox_errorf(ret_error, -EINVAL, "no user namespace for host uid %u",
                                   (unsigned)o->host_uid);
                goto out;
        }
        if (o->host_uid) {
                /*
                 * Root-run: the user namespace is ours (sandbox-identity.c),
                 * nesting already disabled in it. bwrap never closes the
                 * --userns descriptor, and its child would pass it on to the
                 * command; as --block-fd the child reads it (a namespace file
                 * reads as EINVAL at once, which bwrap ignores) and closes it.
                 */
                sandbox_strv_add(&b, "--userns");
                sandbox_strv_addf(&b, "%d", fds->userns);
                sandbox_strv_add(&b, "--block-fd");
                sandbox_strv_addf(&b, "%d", fds->userns);
        } else {
                sandbox_strv_add(&b, "--unshare-user");
        }
        sandbox_strv_add(&b, "--unshare-pid");
        sandbox_strv_add(&b, "--unshare-ipc");
        sandbox_strv_add(&b, "--unshare-uts");
        sandbox_strv_add(&b, "--unshare-cgroup-try");
        if (!o->host_network)
                sandbox_strv_add(&b, "--unshare-net"); /* bwrap brings up lo, nothing else */
        /* No nested user namespaces, enforced by the kernel (besides seccomp). */
        if (!o->host_uid)
                sandbox_strv_add(&b, "--disable-userns");
        sandbox_strv_add(&b, "--assert-userns-disabled");
        sandbox_strv_add(&b, "--uid");
        sandbox_strv_addf(&b, "%u", SANDBOX_AGENT_UID);
        sandbox_strv_add(&b, "--gid");
        sandbox_strv_addf(&b, "%u", SANDBOX_AGENT_GID);
        sandbox_strv_add(&b, "--hostname");
        sandbox_strv_add(&b, c->workspace.name);
        sandbox_strv_add(&b, "--die-with-parent");
        sandbox_strv_add(&b, "--cap-drop");
        sandbox_strv_add(&b, "ALL");
        if (!o->interactive)
                sandbox_strv_add(&b, "--new-session"); /* no controlling terminal to abuse */

        if (o->image_root) {
                r = image_add(o, fds, &b, &image_etc, &image_var_tmp, ret_error);
                if (r < 0)
                        goto out;
        } else
                usr_add(&b);
        if (!fds->etc || !fds->tmpfs) {
                r = sandbox_errorf(ret_error, -EINVAL,
                                   "the sandbox's /etc and /tmp were not "
                                   "prepared");
                goto out;
        }
        /* In the staging tmpfs (sandbox-tmpfs.c), which bwrap can pass: bound from there. */
        r = sandbox_etc_prepare(o, fds->tmpfs, fds->etc);
        if (r < 0) {
                sandbox_errorf(ret_error, r, "cannot synthesize /etc: %s", strerror(-r));
                goto out;
        }
        if (image_etc) {
                /*
                 * The image's /etc, and over it each synthesized file, bound
                 * onto the empty one the import made (image-compose.c): the
                 * host's entries (certificates, ld.so.cache) are not the image's.
                 */
                sandbox_strv_add(&b, "--ro-bind");
                sandbox_strv_add(&b, image_etc);
                sandbox_strv_add(&b, "/etc");
                for (size_t i = 0; i < fds->etc->n_files; i++) {
                        sandbox_strv_add(&b, "--ro-bind");
                        sandbox_strv_addf(&b, "%s/%s", fds->etc->dir, fds->etc->files[i].name);
                        sandbox_strv_addf(&b, "/etc/%s", fds->etc->files[i].name);
                }
        } else {
                sandbox_strv_add(&b, "--ro-bind");
                sandbox_strv_add(&b, fds->etc->dir);
                sandbox_strv_add(&b, "/etc");
        }
        sandbox_strv_add(&b, "--proc");
        sandbox_strv_add(&b, "/proc");
        /*
         * bwrap leaves /proc/sys writable when its directory mode already
         * forbids writes; but global sysctls are writable by their owner,
         * root. The agent is never host uid 0 (sandbox-identity.c); freeze
         * them anyway, in case it ever were.
         */
        sandbox_strv_add(&b, "--ro-bind");
        sandbox_strv_add(&b, "/proc/sys");
        sandbox_strv_add(&b, "/proc/sys");
        sandbox_strv_add(&b, "--ro-bind-try");
        sandbox_strv_add(&b, "/proc/sysrq-trigger");
        sandbox_strv_add(&b, "/proc/sysrq-trigger");
        /*
         * /proc itself read-only: a process may open another's
         * /proc/PID/mem for writing when ptrace would be allowed (same uid,
         * dumpable), and seccomp can't tell that open from others. On a
         * read-only mount the kernel refuses the write open (EROFS) before
         * that check. What it costs: no process writes its own /proc files
         * either (oom_score_adj, comm, ...); /proc/self/fd/N still reopens
         * the file it links to, wherever that is.
         */
        sandbox_strv_add(&b, "--remount-ro");
        sandbox_strv_add(&b, "/proc");
        sandbox_strv_add(&b, "--dev");
        sandbox_strv_add(&b, "/dev");
        /*
         * /dev/shm is RAM like /tmp: the same limits, or it bypasses them.
         * Both are mounted before bwrap runs, with an inode limit bwrap's
         * --tmpfs can't set (sandbox-tmpfs.c).
         */
        for (size_t i = 0; i < SANDBOX_TMPFS_N; i++) {
                sandbox_strv_add(&b, "--bind");
                sandbox_strv_add(&b, fds->tmpfs->dirs[i]);
                sandbox_strv_add(&b, sandbox_tmpfs_dest(i));
        }
        /*
         * --dev's own tmpfs is unlimited and the agent owns it: read-only,
         * so no file can be made there (device nodes stay writable).
         */
        sandbox_strv_add(&b, "--remount-ro");
        sandbox_strv_add(&b, "/dev");
        if (image_var_tmp) {
                /* The image's /var, read-only; its /var/tmp is /tmp's tmpfs, as /tmp. */
                sandbox_strv_add(&b, "--bind");
                sandbox_strv_add(&b, fds->tmpfs->dirs[0]);
                sandbox_strv_add(&b, "/var/tmp");
        } else if (!o->image_root) {
                sandbox_strv_add(&b, "--dir");
                sandbox_strv_add(&b, "/var");
                sandbox_strv_add(&b, "--symlink");
                sandbox_strv_add(&b, "../tmp");
                sandbox_strv_add(&b, "/var/tmp");
        }

        r = layout_bind(o, fds, &b, c->repo.path, true, ret_error);
        if (r < 0)
                goto out;
        r = layout_bind(o, fds, &b, c->home.path, true, ret_error);
        if (r < 0)
                goto out;
        for (size_t i = 0; i < c->n_mirrors; i++) {
                r = layout_bind(o, fds, &b, c->mirrors[i].path, false, ret_error);
                if (r < 0)
                        goto out;
        }
        if (asprintf(&objects, "%s/.cloister/objects", o->root) < 0) {
                r = -ENOMEM;
                goto out;
        }
        if (stat(objects, &st) == 0 && S_ISDIR(st.st_mode)) {
                r = bind_source(o, fds, objects, true, &from);
                if (r < 0) {
                        sandbox_errorf(ret_error, r, "%s: %s", objects, strerror(-r));
                        goto out;
                }
                sandbox_strv_add(&b, "--ro-bind");
                sandbox_strv_add(&b, from);
                sandbox_strv_add(&b, "/.cloister/objects");
                free(TAKE_PTR(from));
        }
        if (o->broker_socket) {
                r = bind_source(o, fds, o->broker_socket, false, &from);
                if (r < 0) {
                        sandbox_errorf(ret_error, r, "%s: %s", o->broker_socket, strerror(-r));
                        goto out;
                }
                sandbox_strv_add(&b, "--ro-bind");
                sandbox_strv_add(&b, from);
                sandbox_strv_add(&b, SANDBOX_BROKER_SOCKET);
                free(TAKE_PTR(from));
                clients_bind(o, fds, &b);
        }
        /* The command through cloister-exec, for sh's 127 and 126; without
         * it (an incomplete install), bubblewrap executes it itself. */
        char helper[PATH_MAX];
        const char *exec_helper = NULL;
        if (sandbox_exec_helper(helper)) {
                if (strncmp(helper, "/usr/", 5) == 0 && !o->image_root) {
                        exec_helper = helper; /* installed: /usr is in the sandbox as it is */
                } else if (bind_source(o, fds, helper, false, &from) == 0) {
                        sandbox_strv_add(&b, "--ro-bind");
                        sandbox_strv_add(&b, from);
                        sandbox_strv_add(&b, SANDBOX_EXEC);
                        free(TAKE_PTR(from));
                        exec_helper = SANDBOX_EXEC;
                }
        }
        /*
         * The command's environment, out of bwrap's own and out of its
         * command line (sandbox-env.c): for cloister-exec to read, or else
         * for bwrap's --args, as --clearenv and --setenv.
         */
        fds->env_args = !exec_helper;
        r = sandbox_env_memfd(o->env, fds->env_args, &fds->env);
        if (r < 0) {
                sandbox_errorf(ret_error, r, "cannot pass the sandbox's environment: %s",
                               strerror(-r));
                goto out;
        }
        if (fds->env_args) {
                sandbox_strv_add(&b, "--args");
                sandbox_strv_addf(&b, "%d", fds->env);
        }
        /* Everything is in place: freeze the root itself. */
        sandbox_strv_add(&b, "--remount-ro");
        sandbox_strv_add(&b, "/");
        sandbox_strv_add(&b, "--chdir");
        sandbox_strv_add(&b, c->repo.path);
        sandbox_strv_add(&b, "--seccomp");
        sandbox_strv_addf(&b, "%d", fds->seccomp);
        sandbox_strv_add(&b, "--json-status-fd");
        sandbox_strv_addf(&b, "%d", fds->status_w);
        sandbox_strv_add(&b, "--");
        if (exec_helper) {
                sandbox_strv_add(&b, exec_helper);
                sandbox_strv_addf(&b, "--env-fd=%d", fds->env);
        }
        for (char *const *a = o->argv; *a; a++)
                sandbox_strv_add(&b, *a);

        r = sandbox_strv_finish(&b, ret);
        if (r < 0)
                sandbox_errorf(ret_error, r, "cannot build the bubblewrap command line: %s",
                               strerror(-r));
        return r;
out:
        sandbox_strv_clear(&b);
        return r;
}
