/* SPDX-License-Identifier: MIT */
/*
 * sandbox-identity.c: who the agent is on the host when cloister runs as
 * root, and the user namespace that makes it so.
 *
 * The agent must not be host uid 0, even without capabilities: the owner
 * bits of every root-owned file would apply to it the moment a path to the
 * host leaked. So a root-run sandbox maps SANDBOX_AGENT_UID/GID to an
 * unprivileged host uid/gid that owns nothing (hostid.h): the identity the
 * workspace's FUSE daemon reserved and shows as the owner of the agent's
 * files, or, with --no-mount, one this run reserves for itself.
 *
 * Trust boundary. Everything here runs as root, before the sandbox exists:
 *   - sandbox_userns_start/finish(): root (CAP_SETUID in the initial
 *     namespace) may write any mapping, so the namespace maps the agent's
 *     uid and gid to the host identity and nothing else; uid 0 does not
 *     exist in it.
 *     Nested user namespaces are disabled the way bubblewrap's
 *     --disable-userns does it (user.max_user_namespaces = 0 in it), and
 *     setgroups is denied in it.
 *   - bubblewrap runs as the host identity, joins the namespace (--userns)
 *     as its owner, and builds the sandbox with that identity: root's
 *     private directories are closed to it. The sources it
 *     must bind from there (the workspace mount under a 0700 state
 *     directory, the broker socket, the broker clients in a build tree) are
 *     bind-mounted by root under SANDBOX_STAGE_DIR, in a mount namespace of
 *     the bwrap process's own that the host never sees.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "config.h"
#include "hostid.h"
#include "sandbox-private.h"
#include "lib/util.h"

#define WORKSPACE_JSON_MAX (64 * 1024)

static int file_write(int dir_fd, const char *name, const char *s)
{
        _cleanup_close_ int fd = openat(dir_fd, name, O_WRONLY | O_CLOEXEC);
        size_t l = strlen(s);

        if (fd < 0)
                return negative_errno();
        if (write(fd, s, l) != (ssize_t)l)
                return negative_errno();
        return 0;
}

/* Become host uid/gid, keeping CAP_SYS_ADMIN and nothing else; 0 or an errno. */
static int become(uid_t uid, gid_t gid)
{
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct d[2] = {{0}};

        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setgroups(0, NULL) < 0 ||
            setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                return errno;
        d[0].permitted = d[0].effective = 1U << CAP_SYS_ADMIN;
        return syscall(SYS_capset, &h, d) < 0 ? errno : 0;
}

/*
 * Send err and, with 0, the helper's own user namespace, which it may always
 * open: root may not open the helper's /proc/PID/ns/user (the helper is
 * another uid, and that takes CAP_SYS_PTRACE, which a container's root
 * usually lacks), so the namespace travels as a descriptor instead.
 */
static int userns_send(int sock, int err)
{
        _cleanup_close_ int ns = -1;
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {0};
        struct iovec iov = {.iov_base = &err, .iov_len = sizeof(err)};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};

        if (!err) {
                ns = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
                if (ns < 0)
                        err = errno;
        }
        if (ns >= 0) {
                struct cmsghdr *c;

                m.msg_control = control.buf;
                m.msg_controllen = sizeof(control.buf);
                c = CMSG_FIRSTHDR(&m);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &ns, sizeof(int));
        }
        return sendmsg(sock, &m, MSG_NOSIGNAL) == sizeof(err) ? 0 : -1;
}

/* The helper's errno (EIO if it said nothing) and, with 0, its namespace in *ret_ns. */
static int userns_receive(int sock, int *ret_ns)
{
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {0};
        int err = EIO;
        struct iovec iov = {.iov_base = &err, .iov_len = sizeof(err)};
        struct msghdr m = {.msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = control.buf,
                           .msg_controllen = sizeof(control.buf)};
        struct cmsghdr *c;
        ssize_t n;

        *ret_ns = -1;
        do
                n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        c = n > 0 ? CMSG_FIRSTHDR(&m) : NULL;
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int)))
                memcpy(ret_ns, CMSG_DATA(c), sizeof(int));
        if (n != sizeof(err) || (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC)))
                err = EIO;
        if (!err && *ret_ns < 0)
                err = EIO;
        if (err)
                *ret_ns = safe_close(*ret_ns);
        return err;
}

/*
 * The helper: enter a new user namespace as the host identity, so that the
 * namespace is that identity's (see sandbox_userns_finish), close it to
 * nesting, and wait to be told to go.
 */
static _noreturn_ void userns_child(uid_t uid, gid_t gid, int ready_w, int go_r)
{
        int err = become(uid, gid);
        char b;

        /* CAP_SYS_ADMIN: made as root would, whatever the policy for unprivileged users. */
        if (!err && unshare(CLONE_NEWUSER) < 0)
                err = errno;
        if (!err && file_write(AT_FDCWD, "/proc/sys/user/max_user_namespaces", "0") < 0)
                err = errno ? errno : EIO; /* this namespace's own limit: it has the caps */
        if (userns_send(ready_w, err) < 0)
                _exit(1);
        /* EOF when the parent is done with us (or dies). */
        while (read(go_r, &b, 1) < 0 && errno == EINTR)
                ;
        _exit(0);
}

/*
 * The namespace belongs to the host identity, not to root: bubblewrap then
 * runs entirely as that identity (sandbox.c drops to it before the exec),
 * joins the namespace as its owner, and every process of the sandbox,
 * bwrap's own included, has one uid. That matters for more than looks: the
 * kernel delivers a parent-death signal only where the dying parent may
 * signal the child, so a root-owned bwrap could not take an unprivileged
 * sandbox down with it when `cloister run` is SIGKILLed. Only root writes
 * the maps (CAP_SETUID in the initial namespace), and the agent, inside,
 * has no capabilities in it.
 *
 * Two steps: the helper's fork, identity change and unshare (about 2 ms
 * on the benchmark machine) run while the caller builds bwrap's argv.
 */
struct sandbox_userns {
        pid_t pid;
        uid_t uid;
        gid_t gid;
        int ready_r; /* the helper's errno of becoming the identity and unsharing, and the namespace
                      */
        int go_w;    /* closed: the helper exits */
};

void sandbox_userns_free(struct sandbox_userns *u)
{
        int status;

        if (!u)
                return;
        safe_close(u->ready_r);
        safe_close(u->go_w);
        while (u->pid > 0 && waitpid(u->pid, &status, 0) < 0 && errno == EINTR)
                ;
        free(u);
}

pid_t sandbox_helper_fork(int *to, int *from)
{
        int t[2], f[2], r;
        pid_t pid;

        if (pipe2(t, O_CLOEXEC) < 0)
                return negative_errno();
        /* A socket, so the user namespace helper can send a descriptor back. */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f) < 0) {
                r = negative_errno();
                goto close_t;
        }
        pid = fork();
        if (pid < 0) {
                r = negative_errno();
                close(f[0]);
                close(f[1]);
                goto close_t;
        }
        /* Each side keeps its own ends only: a helper must see EOF when we go. */
        close(pid == 0 ? t[1] : t[0]);
        close(pid == 0 ? f[0] : f[1]);
        *to = pid == 0 ? t[0] : t[1];
        *from = pid == 0 ? f[1] : f[0];
        return pid;
close_t:
        close(t[0]);
        close(t[1]);
        return r;
}

int sandbox_userns_start(uid_t host_uid, gid_t host_gid, struct sandbox_userns **ret,
                         char **ret_error)
{
        struct sandbox_userns *u = calloc(1, sizeof(*u));
        int go = -1, ready = -1;
        pid_t pid;

        if (!u)
                return sandbox_errorf(ret_error, -ENOMEM, "out of memory");
        pid = sandbox_helper_fork(&go, &ready);
        if (pid == 0)
                userns_child(host_uid, host_gid, ready, go);
        if (pid < 0) {
                free(u);
                return sandbox_errorf(ret_error, (int)pid,
                                      "cannot start the user namespace helper: %s",
                                      strerror((int)-pid));
        }
        *u = (struct sandbox_userns){
                .pid = pid, .uid = host_uid, .gid = host_gid, .ready_r = ready, .go_w = go};
        *ret = u;
        return 0;
}

int sandbox_userns_finish(struct sandbox_userns *u, int fd, char **ret_error)
{
        _cleanup_close_ int dir = -1, ns = -1;
        char path[64], map[64];
        int err, r;

        err = userns_receive(u->ready_r, &ns);
        u->ready_r = safe_close(u->ready_r);
        /* EROFS: /proc/sys is read-only, as a container's masked /proc has it. */
        if (err)
                return sandbox_errorf(ret_error, -err,
                                      "cannot create the sandbox's user namespace: %s%s",
                                      strerror(err),
                                      err == EROFS ? " (/proc/sys/user/max_user_namespaces: in a "
                                                     "container, /proc must not be masked: "
                                                     "podman --security-opt unmask=/proc/*, "
                                                     "Kubernetes procMount: Unmasked)"
                                                   : "");
        snprintf(path, sizeof(path), "/proc/%d", (int)u->pid);
        dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return sandbox_errorf(ret_error, negative_errno(), "%s: %m", path);
        /* The agent's ids and nothing else; no setgroups, ever, in there. */
        r = file_write(dir, "setgroups", "deny");
        if (r >= 0) {
                snprintf(map, sizeof(map), "%u %u 1\n", SANDBOX_AGENT_GID, (unsigned)u->gid);
                r = file_write(dir, "gid_map", map);
        }
        if (r >= 0) {
                snprintf(map, sizeof(map), "%u %u 1\n", SANDBOX_AGENT_UID, (unsigned)u->uid);
                r = file_write(dir, "uid_map", map);
        }
        if (r < 0)
                return sandbox_errorf(ret_error, r,
                                      "cannot map the sandbox's uid to host uid %u: %s",
                                      (unsigned)u->uid, strerror(-r));
        if (dup3(ns, fd, O_CLOEXEC) < 0)
                return sandbox_errorf(ret_error, negative_errno(), "dup3: %m");
        /* The namespace lives on in fd: the helper may go (free reaps it, later). */
        u->go_w = safe_close(u->go_w);
        return 0;
}

int sandbox_stage_dir_ensure(char **ret_error)
{
        static const char *const dirs[] = {"/run/cloister", SANDBOX_STAGE_DIR};

        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                struct stat st;

                if (mkdir(dirs[i], 0755) < 0 && errno != EEXIST)
                        return sandbox_errorf(ret_error, negative_errno(), "cannot create %s: %m",
                                              dirs[i]);
                if (lstat(dirs[i], &st) < 0)
                        return sandbox_errorf(ret_error, negative_errno(), "%s: %m", dirs[i]);
                /* Only a mount point, but bwrap resolves through it: root's alone. */
                if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0022))
                        return sandbox_errorf(ret_error, -EPERM,
                                              "%s must be a directory of root's that no one "
                                              "else may write",
                                              dirs[i]);
        }
        return 0;
}

int sandbox_stage_add(struct sandbox_fds *fds, const char *src, bool dir, char **ret_path)
{
        char *path;

        if (fds->n_stage >= SANDBOX_STAGE_MAX)
                return -E2BIG;
        path = strdup(src);
        if (!path)
                return -ENOMEM;
        if (asprintf(ret_path, "%s/%zu", SANDBOX_STAGE_DIR, fds->n_stage) < 0) {
                free(path);
                return -ENOMEM;
        }
        fds->stage[fds->n_stage].path = path;
        fds->stage[fds->n_stage].dir = dir;
        fds->n_stage++;
        return 0;
}

int sandbox_stage_mount(const struct sandbox_fds *fds)
{
        _cleanup_close_ int dir = -1;

        /*
         * In the mount namespace sandbox_tmpfs_enter() made, its mounts
         * already slaves (nothing mounted here reaches the host's), into the
         * staging tmpfs it mounted here, beside /tmp's and /etc's.
         */
        dir = open(SANDBOX_STAGE_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return negative_errno();
        /*
         * By path, as root, now: a descriptor opened before unshare() would
         * name a mount of the host's namespace, which can't be bound here.
         * The sources are root's own paths (the mount, the state directory,
         * the build tree) that bwrap would otherwise have resolved itself.
         */
        for (size_t i = 0; i < fds->n_stage; i++) {
                char name[24], dest[sizeof(SANDBOX_STAGE_DIR) + 24];
                _cleanup_close_ int f = -1;

                snprintf(name, sizeof(name), "%zu", i);
                if (fds->stage[i].dir) {
                        if (mkdirat(dir, name, 0755) < 0)
                                return negative_errno();
                } else {
                        f = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                        if (f < 0)
                                return negative_errno();
                }
                snprintf(dest, sizeof(dest), "%s/%s", SANDBOX_STAGE_DIR, name);
                if (mount(fds->stage[i].path, dest, NULL, MS_BIND | MS_REC, NULL) < 0)
                        return negative_errno();
        }
        return 0;
}

/* <mountpoint>/.cloister/workspace, as the daemon serving it wrote it. */
static int workspace_json_read(const char *mountpoint, json_t **ret)
{
        _cleanup_free_ char *path = NULL, *buf = malloc(WORKSPACE_JSON_MAX);
        _cleanup_close_ int fd = -1;
        size_t len = 0;
        json_t *j;

        if (!buf || asprintf(&path, "%s/.cloister/workspace", mountpoint) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        for (;;) {
                ssize_t n = read(fd, buf + len, WORKSPACE_JSON_MAX - len);
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len == WORKSPACE_JSON_MAX)
                        return -EFBIG;
        }
        j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(j)) {
                json_decref(j);
                return -EBADMSG;
        }
        *ret = j;
        return 0;
}

int sandbox_identity_for(const struct config *c, bool no_mount, uid_t *ret_uid, gid_t *ret_gid,
                         hostid **ret_held, char **ret_error)
{
        const struct config_id_range *range = &c->run.host_uids;
        json_t *j = NULL, *sb;
        json_int_t uid, gid, pid;
        bool have;
        int r;

        *ret_held = NULL;
        if (no_mount) {
                /* No daemon holds one for this workspace: this run does, until it ends. */
                _cleanup_free_ char *why = NULL;
                hostid *h;

                r = hostid_acquire(range->first, range->last, c->workspace.state, &h, &why);
                if (r < 0)
                        return sandbox_errorf(ret_error, r, "%s: [run] host_uids: %s", c->file,
                                              why ? why : strerror(-r));
                *ret_uid = hostid_uid(h);
                *ret_gid = (gid_t)hostid_uid(h);
                *ret_held = h;
                return 0;
        }
        r = workspace_json_read(c->workspace.mountpoint, &j);
        if (r < 0)
                return sandbox_errorf(ret_error, r,
                                      "cannot read %s/.cloister/workspace to learn the "
                                      "sandbox's identity: %s",
                                      c->workspace.mountpoint, strerror(-r));
        sb = json_object_get(j, "sandbox"); /* borrowed from j */
        have = json_is_object(sb);
        uid = json_integer_value(json_object_get(sb, "host_uid"));
        gid = json_integer_value(json_object_get(sb, "host_gid"));
        pid = json_integer_value(json_object_get(j, "daemon_pid"));
        json_decref(j);
        if (!have)
                return sandbox_errorf(ret_error, -EPERM,
                                      "%s is mounted without a sandbox identity (by another "
                                      "user, or by an older cloister); as root, cloister run "
                                      "needs a mount made by root: run 'cloister unmount %s' "
                                      "and try again",
                                      c->workspace.mountpoint, c->file);
        /* The daemon says whom to run as; it must be a reservation of its own, from the range. */
        if (uid < range->first || uid > range->last || gid != uid || pid <= 1)
                return sandbox_errorf(ret_error, -EPERM,
                                      "%s: the mount's sandbox identity %lld is not in [run] "
                                      "host_uids %u-%u; remount the workspace",
                                      c->file, (long long)uid, range->first, range->last);
        r = hostid_check((uid_t)uid, (pid_t)pid);
        if (r < 0)
                return sandbox_errorf(ret_error, r,
                                      "host uid %lld of the mount at %s is not reserved by its "
                                      "daemon (%s); remount the workspace",
                                      (long long)uid, c->workspace.mountpoint,
                                      r == -ESRCH   ? "nobody holds it"
                                      : r == -EPERM ? "another process holds it"
                                                    : strerror(-r));
        *ret_uid = (uid_t)uid;
        *ret_gid = (gid_t)gid;
        return 0;
}
