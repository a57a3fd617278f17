/* SPDX-License-Identifier: MIT */
/*
 * sandbox-bwrap.c: translate a workspace config into bubblewrap's argv.
 *
 * The sandbox's root is an empty tmpfs that bwrap remounts read-only at the
 * end; into it go, and nothing else:
 *   - /usr (and /bin, /sbin, /lib* as on the host) read-only;
 *   - a synthesized /etc: passwd and group naming only the agent, hosts,
 *     hostname, nsswitch.conf, resolv.conf, plus the host's CA certificates
 *     and a few files that hold no secrets (ld.so.cache, alternatives);
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
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "cloister-config.h"
#include "compose.h"
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

/* A sealed memfd holding data, for --ro-bind-data. */
static int data_fd(const char *name, const char *data, size_t len, int *ret_fd)
{
        _cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        size_t done = 0;

        if (fd < 0)
                return negative_errno();
        while (done < len) {
                ssize_t n = write(fd, data + done, len - done);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                done += (size_t)n;
        }
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
            lseek(fd, 0, SEEK_SET) < 0)
                return negative_errno();
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Read a small host file (resolv.conf); a missing one reads as empty. */
static int host_file_read(const char *path, char **ret)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *buf = malloc(SANDBOX_ETC_FILE_MAX + 1);
        size_t len = 0;

        if (!buf)
                return -ENOMEM;
        if (fd < 0) {
                if (errno != ENOENT)
                        return negative_errno();
        } else {
                for (;;) {
                        ssize_t n = read(fd, buf + len, SANDBOX_ETC_FILE_MAX - len);
                        if (n < 0) {
                                if (errno == EINTR)
                                        continue;
                                return negative_errno();
                        }
                        if (n == 0)
                                break;
                        len += (size_t)n;
                        if (len == SANDBOX_ETC_FILE_MAX)
                                return -EFBIG;
                }
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}

static const char *agent_shell(void)
{
        return access("/usr/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
}

/* The synthesized /etc files: one memfd each, bound read-only. */
static int etc_add(const struct sandbox_options *o, struct sandbox_fds *fds, struct strv_builder *b)
{
        const struct config *c = o->config;
        _cleanup_free_ char *passwd = NULL, *group = NULL, *hosts = NULL, *hostname = NULL;
        _cleanup_free_ char *resolv = NULL, *gitconfig = NULL;
        struct {
                const char *dest;
                const char *data;
        } files[7];
        size_t n = 0;
        int r;

        if (asprintf(&passwd, "%s:x:%u:%u:cloister agent:%s:%s\n", c->run.user, SANDBOX_AGENT_UID,
                     SANDBOX_AGENT_GID, c->home.path, agent_shell()) < 0 ||
            asprintf(&group, "%s:x:%u:\n", c->run.user, SANDBOX_AGENT_GID) < 0 ||
            asprintf(&hostname, "%s\n", c->workspace.name) < 0 ||
            asprintf(&hosts, "127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\t%s\n",
                     c->workspace.name) < 0)
                return -ENOMEM;
        if (o->host_network) {
                r = host_file_read("/etc/resolv.conf", &resolv);
                if (r < 0)
                        return r;
        } else {
                resolv = strdup(c->network.mode == CONFIG_NETWORK_PROXY
                                        ? "# cloister: [network] mode = proxy; no name servers: "
                                          "the proxy at " SANDBOX_PROXY_URL " resolves names\n"
                                        : "# cloister: [network] mode = none; no name servers\n");
                if (!resolv)
                        return -ENOMEM;
        }
        r = compose_git_proxy_config(c, &gitconfig);
        if (r < 0)
                return r;
        files[n++] = (typeof(files[0])){"/etc/passwd", passwd};
        files[n++] = (typeof(files[0])){"/etc/group", group};
        files[n++] = (typeof(files[0])){"/etc/hostname", hostname};
        files[n++] = (typeof(files[0])){"/etc/hosts", hosts};
        files[n++] = (typeof(files[0])){"/etc/resolv.conf", resolv};
        files[n++] = (typeof(files[0])){"/etc/nsswitch.conf",
                                        "passwd: files\ngroup: files\nshadow: files\n"
                                        "hosts: files dns\nnetworks: files\n"};
        if (gitconfig)
                files[n++] = (typeof(files[0])){"/etc/gitconfig", gitconfig};
        _Static_assert(ELEMENTSOF(files) <= ELEMENTSOF(fds->etc), "fds->etc too small");

        sandbox_strv_add(b, "--dir");
        sandbox_strv_add(b, "/etc");
        for (size_t i = 0; i < n; i++) {
                int fd;

                r = data_fd("cloister-etc", files[i].data, strlen(files[i].data), &fd);
                if (r < 0)
                        return r;
                fds->etc[fds->n_etc++] = fd;
                sandbox_strv_add(b, "--perms");
                sandbox_strv_add(b, "0644");
                sandbox_strv_add(b, "--ro-bind-data");
                sandbox_strv_addf(b, "%d", fd);
                sandbox_strv_add(b, files[i].dest);
        }

        /* Host files that hold no secrets and that ordinary tools expect. */
        static const char *const host_etc[] = {
                "/etc/ssl/certs",    "/etc/ssl/openssl.cnf", "/etc/ca-certificates",
                "/etc/alternatives", "/etc/ld.so.cache",     "/etc/ld.so.conf",
                "/etc/ld.so.conf.d", "/etc/localtime",       "/etc/profile",
                "/etc/bash.bashrc",  "/etc/inputrc",         "/etc/mime.types",
                "/etc/protocols",    "/etc/services",
        };
        for (size_t i = 0; i < ELEMENTSOF(host_etc); i++) {
                sandbox_strv_add(b, "--ro-bind-try");
                sandbox_strv_add(b, host_etc[i]);
                sandbox_strv_add(b, host_etc[i]);
        }
        return 0;
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

bool sandbox_commands_module(char path[static PATH_MAX])
{
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        char *slash;

        if (n > 0) {
                exe[n] = '\0';
                slash = strrchr(exe, '/');
                if (slash &&
                    snprintf(path, PATH_MAX, "%.*s/%s", (int)(slash - exe), exe,
                             SANDBOX_COMMANDS_MODULE) < PATH_MAX &&
                    access(path, F_OK) == 0)
                        return true;
        }
        _Static_assert(sizeof(CLOISTER_COMMANDS_MODULE) <= PATH_MAX, "module path too long");
        memcpy(path, CLOISTER_COMMANDS_MODULE, sizeof(CLOISTER_COMMANDS_MODULE));
        return access(path, F_OK) == 0;
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
        _cleanup_free_ char *objects = NULL, *from = NULL;
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

        usr_add(&b);
        r = etc_add(o, fds, &b);
        if (r < 0) {
                sandbox_errorf(ret_error, r, "cannot synthesize /etc: %s", strerror(-r));
                goto out;
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
        sandbox_strv_add(&b, "--dev");
        sandbox_strv_add(&b, "/dev");
        /*
         * /dev/shm is RAM like /tmp: the same limits, or it bypasses them.
         * Both are mounted before bwrap runs, with an inode limit bwrap's
         * --tmpfs can't set (sandbox-tmpfs.c).
         */
        if (!fds->tmpfs) {
                r = sandbox_errorf(ret_error, -EINVAL, "the sandbox's /tmp was not prepared");
                goto out;
        }
        for (size_t i = 0; i < SANDBOX_TMPFS_N; i++) {
                _cleanup_free_ char *tmp_from = NULL;

                r = bind_source(o, fds, fds->tmpfs->dirs[i], true, &tmp_from);
                if (r < 0) {
                        r = sandbox_errorf(ret_error, r, "cannot stage the sandbox's %s: %s",
                                           sandbox_tmpfs_dest(i), strerror(-r));
                        goto out;
                }
                sandbox_strv_add(&b, "--bind");
                sandbox_strv_add(&b, tmp_from);
                sandbox_strv_add(&b, sandbox_tmpfs_dest(i));
        }
        /*
         * --dev's own tmpfs is unlimited and the agent owns it: read-only,
         * so no file can be made there (device nodes stay writable).
         */
        sandbox_strv_add(&b, "--remount-ro");
        sandbox_strv_add(&b, "/dev");
        sandbox_strv_add(&b, "--dir");
        sandbox_strv_add(&b, "/var");
        sandbox_strv_add(&b, "--symlink");
        sandbox_strv_add(&b, "../tmp");
        sandbox_strv_add(&b, "/var/tmp");

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
                clients_bind(o, fds, &b);
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
