/* SPDX-License-Identifier: MIT */
/*
 * server.c: the broker's sockets and its single-threaded poll loop.
 *
 * Why one thread: every request is a few microseconds of crypto and a line
 * appended to the audit log, and the token table and audit chain need a
 * strict order anyway. poll() over non-blocking sockets serves hundreds of
 * concurrent clients without locks. Each connection is conn.c's: served one
 * request a turn, and closed when it sits idle or takes too long (its
 * deadlines bound the poll's wait); at the workspace's connection bound the
 * connection idle the longest makes room for a new one. None of it can
 * stop the loop. After a turn that served a connection the loop may poll for a
 * moment before it sleeps (lib/busypoll.h), where that keeps catching the
 * next request and a CPU is spare: a client asking token after token is
 * then served without a wakeup.
 *
 * Socket activation: when systemd (or anything speaking its LISTEN_FDS
 * protocol) passes a listening socket, the workspace whose [broker] socket
 * is that socket's path takes it instead of binding its own; the file is
 * then the service manager's and is left in place at exit. A passed socket
 * that no workspace names, or that others than the broker's uid could
 * connect to, is refused: the broker does not start.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include "jsonw.h"
#include "server-private.h"
#include "lib/busypoll.h"
#include "lib/lifetime.h"
#include "lib/listen-fds.h"
#include "lib/mkdir.h"
#include "lib/util.h"

#define WS_MAX 64

struct broker {
        struct ws *ws[WS_MAX];
        size_t n_ws;
        struct conn **conns;
        size_t n_conns;
        size_t conns_max; /* BROKER_CONNS_MAX, or less if file descriptors are fewer */
        int sigfd;
        int lifetime_fd;               /* lib/lifetime.h; -1: serve until a signal */
        void (*log)(const char *line); /* the program's; the library does not print */
        int passed[LISTEN_FDS_MAX];    /* from the service manager; -1 once a workspace took it */
        int n_passed;                  /* -1 until LISTEN_FDS was read */
        struct busypoll bp;
};

static void *wipe_malloc(size_t n)
{
        return malloc(n);
}

void broker_wipe_free(void *p)
{
        if (p) {
                sodium_memzero(p, malloc_usable_size(p));
                free(p);
        }
}

void broker_json_wipe_on_free(void)
{
        json_set_alloc_funcs(wipe_malloc, broker_wipe_free);
}

int broker_harden_process(void)
{
        struct rlimit rl = {0, 0};

        if (setrlimit(RLIMIT_CORE, &rl) < 0)
                return negative_errno();
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return negative_errno();
        return 0;
}

int broker_new(broker **ret)
{
        broker *b = calloc(1, sizeof(*b));

        if (!b)
                return -ENOMEM;
        b->sigfd = -1;
        b->lifetime_fd = -1;
        b->n_passed = -1;
        busypoll_init(&b->bp);
        *ret = b;
        return 0;
}

static void ws_free(struct ws *ws)
{
        if (!ws)
                return;
        if (ws->agent_fd >= 0) {
                safe_close(ws->agent_fd);
                if (ws->agent_path && !ws->agent_passed)
                        unlink(ws->agent_path);
        }
        if (ws->admin_fd >= 0) {
                safe_close(ws->admin_fd);
                if (ws->admin_path)
                        unlink(ws->admin_path);
        }
        free(ws->agent_path);
        free(ws->admin_path);
        broker_policy_free(ws->policy);
        broker_keyring_free(ws->keys);
        broker_audit_free(ws->audit);
        broker_tokens_free(ws);
        sodium_free(ws->jti_pool);
        safe_close(ws->dirfd);
        free(ws->dir);
        free(ws->policy_path);
        free(ws->name);
        free(ws);
}

void broker_free(broker *b)
{
        if (!b)
                return;
        for (size_t i = 0; i < b->n_conns; i++)
                broker_conn_free(b->conns[i]);
        free(b->conns);
        for (size_t i = 0; i < b->n_ws; i++)
                ws_free(b->ws[i]);
        for (int i = 0; i < b->n_passed; i++)
                safe_close(b->passed[i]);
        safe_close(b->sigfd);
        safe_close(b->lifetime_fd); /* after the sockets: a new run waits until they are gone */
        busypoll_done(&b->bp);
        free(b);
}

static int errorf(char **ret_error, int r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int errorf(char **ret_error, int r, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return r;
}

/* Bind a listening socket; a stale socket file (no one listening) is replaced. */
static int socket_listen(const char *path, mode_t mode, int *ret_fd, char **ret_error)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_close_ int fd = -1;
        struct stat sb;

        if (strlen(path) >= sizeof(sa.sun_path))
                return errorf(ret_error, -ENAMETOOLONG, "%s: socket path longer than %zu bytes",
                              path, sizeof(sa.sun_path) - 1);
        strcpy(sa.sun_path, path);
        if (lstat(path, &sb) == 0) {
                _cleanup_close_ int probe = -1;

                if (!S_ISSOCK(sb.st_mode))
                        return errorf(ret_error, -EEXIST, "%s: exists and is not a socket", path);
                probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0)
                        return errorf(ret_error, -EADDRINUSE,
                                      "%s: another broker is serving this socket", path);
                if (unlink(path) < 0)
                        return errorf(ret_error, negative_errno(),
                                      "%s: cannot remove stale "
                                      "socket: %m",
                                      path);
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return errorf(ret_error, negative_errno(), "socket: %m");
        /* Created with the final mode: no window in which others may connect. */
        mode_t old = umask(~mode & 0777);
        int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        umask(old);
        if (r < 0)
                return errorf(ret_error, negative_errno(), "%s: cannot bind: %m", path);
        if (chmod(path, mode) < 0 || listen(fd, 512) < 0)
                return errorf(ret_error, negative_errno(), "%s: cannot listen: %m", path);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/*
 * The socket the service manager passed for path, if it did: 1 and *ret_fd
 * (non-blocking), 0 if it passed none for path. The file must be a socket
 * only the broker's uid may connect to, as the one socket_listen() makes.
 */
static int socket_passed(broker *b, const char *path, int *ret_fd, char **ret_error)
{
        char bound[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
        struct stat sb;
        int r, flags;

        if (b->n_passed < 0) {
                r = listen_fds_take();
                if (r < 0)
                        return errorf(ret_error, r, "LISTEN_FDS from the service manager: %s",
                                      strerror(-r));
                b->n_passed = r;
                for (int i = 0; i < r; i++)
                        b->passed[i] = LISTEN_FDS_START + i;
        }
        for (int i = 0; i < b->n_passed; i++) {
                if (b->passed[i] < 0)
                        continue;
                r = listen_fd_unix_path(b->passed[i], bound, sizeof(bound));
                if (r < 0)
                        return errorf(ret_error, r,
                                      "fd %d from the service manager: not a listening unix "
                                      "socket with a path: %s",
                                      b->passed[i], strerror(-r));
                if (!streq(bound, path))
                        continue;
                if (lstat(path, &sb) < 0 || !S_ISSOCK(sb.st_mode))
                        return errorf(ret_error, -ENOTSOCK,
                                      "%s: the socket the service manager passed is gone", path);
                if (sb.st_uid != geteuid() || (sb.st_mode & 0077))
                        return errorf(ret_error, -EPERM,
                                      "%s: passed by the service manager with owner %u and mode "
                                      "%04o; only uid %u may reach it (SocketUser=, "
                                      "SocketMode=0600)",
                                      path, (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 07777),
                                      (unsigned)geteuid());
                flags = fcntl(b->passed[i], F_GETFL);
                if (flags < 0 || fcntl(b->passed[i], F_SETFL, flags | O_NONBLOCK) < 0)
                        return errorf(ret_error, negative_errno(), "%s: fcntl: %m", path);
                *ret_fd = b->passed[i];
                b->passed[i] = -1;
                return 1;
        }
        return 0;
}

/* dir exists, is ours, and has exactly mode. */
static int mkdir_private(const char *dir, mode_t mode, char **ret_error)
{
        struct stat sb;

        if (mkdir_p(dir, 0700, 0700) < 0)
                return errorf(ret_error, negative_errno(), "%s: cannot create: %m", dir);
        if (lstat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
                return errorf(ret_error, -ENOTDIR, "%s: not a directory", dir);
        if (sb.st_uid != geteuid())
                return errorf(ret_error, -EPERM, "%s: owned by uid %u, not by the broker's %u", dir,
                              (unsigned)sb.st_uid, (unsigned)geteuid());
        if ((sb.st_mode & 07777) != mode && chmod(dir, mode) < 0)
                return errorf(ret_error, negative_errno(), "%s: cannot set mode %04o: %m", dir,
                              (unsigned)mode);
        return 0;
}

int broker_add_workspace(broker *b, const struct broker_workspace_options *o, char **ret_error)
{
        struct ws *ws;
        int r;

        *ret_error = NULL;
        if (!o->policy)
                return errorf(ret_error, -EINVAL,
                              "%s: no [broker] policy: this workspace has "
                              "no broker",
                              o->origin);
        if (b->n_ws >= WS_MAX)
                return errorf(ret_error, -E2BIG, "at most %d workspaces per broker", WS_MAX);
        for (size_t i = 0; i < b->n_ws; i++) {
                if (streq(b->ws[i]->name, o->name))
                        return errorf(ret_error, -EEXIST, "%s: workspace '%s' given twice",
                                      o->origin, o->name);
                if (streq(b->ws[i]->dir, o->dir) || streq(b->ws[i]->agent_path, o->socket))
                        return errorf(ret_error, -EEXIST,
                                      "%s: [broker] dir or socket shared with workspace '%s'",
                                      o->origin, b->ws[i]->name);
        }
        ws = calloc(1, sizeof(*ws));
        if (!ws)
                return -ENOMEM;
        ws->agent_fd = ws->admin_fd = ws->dirfd = -1;
        ws->name = strdup(o->name);
        ws->policy_path = strdup(o->policy);
        ws->dir = strdup(o->dir);
        if (!ws->name || !ws->policy_path || !ws->dir) {
                r = -ENOMEM;
                goto fail;
        }
        r = broker_policy_load(ws->policy_path, &ws->policy, ret_error);
        if (r < 0)
                goto fail;
        /*
         * Redeemers running as other users must reach the admin socket: then
         * the dir is 0711 (no listing; every file in it stays 0600) and the
         * socket 0666, and SO_PEERCRED is the gate (conn_accept).
         */
        bool foreign = false;
        for (size_t i = 0; i < ws->policy->n_redeemers; i++)
                foreign |= ws->policy->redeemers[i] != geteuid() && ws->policy->redeemers[i] != 0;
        r = mkdir_private(ws->dir, foreign ? 0711 : 0700, ret_error);
        if (r < 0)
                goto fail;
        ws->dirfd = open(ws->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ws->dirfd < 0) {
                r = errorf(ret_error, negative_errno(), "%s: cannot open: %m", ws->dir);
                goto fail;
        }
        r = broker_keyring_load(ws->dirfd, ws->dir, true, &ws->keys, ret_error);
        if (r < 0)
                goto fail;
        r = broker_keyring_publish(ws->keys, ws->dirfd, time(NULL),
                                   broker_policy_max_ttl(ws->policy) + 60);
        if (r < 0) {
                errorf(ret_error, r, "%s/%s: cannot write: %s", ws->dir, BROKER_PUBLIC_FILE,
                       strerror(-r));
                goto fail;
        }
        r = broker_audit_open(ws->dirfd, ws->dir, broker_tokens_replay, ws, &ws->audit, ret_error);
        if (r < 0)
                goto fail;
        r = broker_audit_set_name(ws->audit, ws->name);
        if (r < 0)
                goto fail;
        broker_audit_set_max(ws->audit, o->audit_max ? o->audit_max : BROKER_AUDIT_MAX_DEFAULT);
        if (asprintf(&ws->admin_path, "%s/%s", ws->dir, BROKER_ADMIN_SOCKET) < 0 ||
            !(ws->agent_path = strdup(o->socket))) {
                r = -ENOMEM;
                goto fail;
        }
        r = socket_listen(ws->admin_path, foreign ? 0666 : 0600, &ws->admin_fd, ret_error);
        if (r < 0) {
                free(ws->admin_path);
                ws->admin_path = NULL; /* not ours: never unlink it */
                goto fail;
        }
        if (mkdir_parents(ws->agent_path, 0700) < 0) {
                r = errorf(ret_error, negative_errno(), "%s: cannot create its directory: %m",
                           ws->agent_path);
                goto fail;
        }
        /* A root-run sandbox's agent is another uid: the peer check below is its gate. */
        ws->agent_uid_first = o->agent_uids.first;
        ws->agent_uid_last = o->agent_uids.last;
        r = socket_passed(b, ws->agent_path, &ws->agent_fd, ret_error);
        if (r > 0)
                ws->agent_passed = true;
        else if (r == 0)
                r = socket_listen(ws->agent_path, ws->agent_uid_first ? 0666 : 0600, &ws->agent_fd,
                                  ret_error);
        if (r < 0) {
                free(ws->agent_path);
                ws->agent_path = NULL;
                goto fail;
        }
        b->ws[b->n_ws++] = ws;
        return 0;
fail:
        if (!*ret_error)
                errorf(ret_error, r, "%s: %s", o->origin, strerror(-r));
        ws_free(ws);
        return r;
}

static int64_t mono_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Make room for a new agent connection of ws at its [limits] connections:
 * close the one idle the longest (no request under way, nothing to write),
 * so that connections left open and unused can't keep new clients out.
 * false: every connection is busy with a request (which request_timeout
 * bounds), and the newcomer is refused.
 */
static bool evict_idle(broker *b, struct ws *ws)
{
        size_t victim = SIZE_MAX;

        for (size_t i = 0; i < b->n_conns; i++) {
                struct conn *c = b->conns[i];
                if (c->ws != ws || c->peer.admin || !broker_conn_idle(c))
                        continue;
                if (victim == SIZE_MAX || c->active_seq < b->conns[victim]->active_seq)
                        victim = i;
        }
        if (victim == SIZE_MAX)
                return false;
        broker_conn_free(b->conns[victim]);
        b->conns[victim] = b->conns[--b->n_conns];
        return true;
}

/* 1: took one connection (or refused it), 0: none pending, < 0: error. */
static int conn_accept(broker *b, struct ws *ws, bool admin)
{
        struct ucred cred;
        socklen_t len = sizeof(cred);
        struct conn *c, **nc;
        int fd, r;

        fd = accept4(admin ? ws->admin_fd : ws->agent_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
                /* EMFILE: leave it queued; the loop stops polling listeners when full. */
                return errno == EAGAIN || errno == EMFILE || errno == ENFILE ? 0
                       : errno == ECONNABORTED                               ? 1
                                                                             : negative_errno();
        /* Identity comes from the kernel, never from the request. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
            (admin && cred.uid != geteuid() && cred.uid != 0 &&
             !broker_policy_is_redeemer(ws->policy, cred.uid)) ||
            (!admin && ws->agent_uid_first && cred.uid != geteuid() && cred.uid != 0 &&
             (cred.uid < ws->agent_uid_first || cred.uid > ws->agent_uid_last))) {
                safe_close(fd);
                return 1;
        }
        if (!admin && ws->n_agent_conns >= ws->policy->connections)
                (void)evict_idle(b, ws);
        if (b->n_conns >= b->conns_max ||
            (!admin && ws->n_agent_conns >= ws->policy->connections)) {
                static const char busy[] = "{\"ok\":false,\"error\":\"busy\",\"message\":"
                                           "\"too many connections (connections)\"}\n";
                (void)send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                safe_close(fd);
                return 1;
        }
        nc = realloc(b->conns, (b->n_conns + 1) * sizeof(*nc));
        if (!nc) {
                safe_close(fd);
                return -ENOMEM;
        }
        b->conns = nc;
        r = broker_conn_new(
                ws, fd,
                &(struct peer){.admin = admin,
                               .pid = cred.pid,
                               .uid = cred.uid,
                               .gid = cred.gid,
                               .owner = admin && (cred.uid == geteuid() || cred.uid == 0)},
                mono_ms(), &c);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        b->conns[b->n_conns++] = c;
        return 1;
}

static void shutdown_workspaces(broker *b)
{
        int64_t now = time(NULL);

        for (size_t i = 0; i < b->n_ws; i++) {
                struct ws *ws = b->ws[i];
                size_t n = broker_tokens_revoke_all(ws, now);

                (void)broker_audit_event(ws,
                                         json_pack("{s:s, s:b, s:I, s:s}", "event", "revoke", "all",
                                                   1, "count", (json_int_t)n, "reason",
                                                   "broker stopped"),
                                         NULL, now);
        }
}

/*
 * SIGHUP: re-read every policy. A policy that no longer parses is not
 * applied (the old one stays in force) and the error goes to the log
 * callback; tokens already issued keep their state either way.
 */
static void policies_reload(broker *b)
{
        for (size_t i = 0; i < b->n_ws; i++) {
                struct ws *ws = b->ws[i];
                struct broker_policy *p = NULL;
                _cleanup_free_ char *error = NULL, *msg = NULL;

                if (broker_policy_load(ws->policy_path, &p, &error) < 0) {
                        if (asprintf(&msg,
                                     "workspace '%s': policy not reloaded, keeping the old "
                                     "one: %s",
                                     ws->name, error ? error : "error") < 0)
                                msg = NULL;
                } else {
                        broker_policy_free(ws->policy);
                        ws->policy = p;
                        if (asprintf(&msg, "workspace '%s': policy reloaded from %s", ws->name,
                                     ws->policy_path) < 0)
                                msg = NULL;
                }
                if (b->log && msg)
                        b->log(msg);
        }
}

void broker_set_lifetime(broker *b, int fd)
{
        safe_close(b->lifetime_fd);
        b->lifetime_fd = fd;
}

void broker_set_log(broker *b, void (*log)(const char *line))
{
        b->log = log;
}

/*
 * Wait for events, at most timeout ms (-1: no limit). After a turn that
 * served a connection, first poll without sleeping for a moment when that
 * pays (lib/busypoll.h): a client that asks again at once, as a tool asking
 * token after token does, is then read with no wakeup.
 */
struct poll_set {
        struct pollfd *pfd;
        size_t n;
};

static int poll_now(void *arg)
{
        struct poll_set *ps = arg;

        return poll(ps->pfd, ps->n, 0); /* 0: none ready yet */
}

static int wait_events(struct busypoll *bp, struct pollfd *pfd, size_t n, int timeout, bool served)
{
        struct poll_set ps = {pfd, n};
        int r;

        if (!served || timeout == 0)
                return poll(pfd, n, timeout);
        r = busypoll_run(bp, poll_now, &ps, 0);
        return r != 0 ? r : poll(pfd, n, timeout);
}

int broker_run(broker *b, char **ret_error)
{
        _cleanup_free_ struct pollfd *pfd = NULL;
        int64_t head_due = -1;    /* when the stale audit heads are written (mono_ms); -1: none */
        bool served = false;      /* the last turn had a connection's events */
        int64_t lifetime_due = 0; /* when to look whether runs are left (lib/lifetime.h) */
        sigset_t mask;

        *ret_error = NULL;
        for (int i = 0; i < b->n_passed; i++)
                if (b->passed[i] >= 0) {
                        char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1] = "?";
                        (void)listen_fd_unix_path(b->passed[i], path, sizeof(path));
                        return errorf(ret_error, -EADDRNOTAVAIL,
                                      "the service manager passed the socket %s, which no "
                                      "workspace's [broker] socket names",
                                      path);
                }
        for (size_t i = 0; i < b->n_ws; i++)
                if (b->ws[i]->agent_passed && b->log) {
                        _cleanup_free_ char *line = NULL;
                        if (asprintf(&line,
                                     "workspace '%s': agent socket %s passed by the "
                                     "service manager",
                                     b->ws[i]->name, b->ws[i]->agent_path) >= 0)
                                b->log(line);
                }
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return errorf(ret_error, negative_errno(), "sigprocmask: %m");
        b->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (b->sigfd < 0)
                return errorf(ret_error, negative_errno(), "signalfd: %m");
        /* A full disk or a file size limit must fail a write, not kill us. */
        signal(SIGPIPE, SIG_IGN);
        signal(SIGXFSZ, SIG_IGN);
        /* Room for every connection we allow, or allow only as many as we have room for. */
        {
                struct rlimit rl;
                b->conns_max = BROKER_CONNS_MAX;
                if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                        if (rl.rlim_cur < BROKER_CONNS_MAX + 64 && rl.rlim_max > rl.rlim_cur) {
                                rl.rlim_cur = MIN(rl.rlim_max, (rlim_t)BROKER_CONNS_MAX + 64);
                                (void)setrlimit(RLIMIT_NOFILE, &rl);
                                (void)getrlimit(RLIMIT_NOFILE, &rl);
                        }
                        if (rl.rlim_cur < BROKER_CONNS_MAX + 64)
                                b->conns_max = rl.rlim_cur > 128 ? rl.rlim_cur - 64 : 64;
                }
        }

        for (;;) {
                size_t n = 0, nl = 1 + 2 * b->n_ws;
                struct pollfd *np = realloc(pfd, (nl + b->n_conns) * sizeof(*pfd));

                if (!np)
                        return errorf(ret_error, -ENOMEM, "out of memory");
                pfd = np;
                pfd[n++] = (struct pollfd){.fd = b->sigfd, .events = POLLIN};
                /* When full, leave new connections queued in the kernel: no busy loop. */
                short lev = b->n_conns < b->conns_max ? POLLIN : 0;
                for (size_t i = 0; i < b->n_ws; i++) {
                        pfd[n++] = (struct pollfd){.fd = b->ws[i]->agent_fd, .events = lev};
                        pfd[n++] = (struct pollfd){.fd = b->ws[i]->admin_fd, .events = lev};
                }
                /*
                 * Wake up for the first connection deadline, to write stale
                 * audit heads, or at once while a connection has whole
                 * requests waiting (served one per turn); else for events.
                 */
                int64_t now = mono_ms(), due = head_due >= 0 ? head_due : INT64_MAX;
                bool pending = false;
                for (size_t i = 0; i < b->n_conns; i++) {
                        struct conn *c = b->conns[i];
                        pfd[n++] = (struct pollfd){.fd = c->fd, .events = broker_conn_events(c)};
                        pending |= broker_conn_more(c);
                        due = MIN(due, broker_conn_deadline(c));
                }
                if (b->lifetime_fd >= 0) {
                        if (now >= lifetime_due) {
                                if (lifetime_over(b->lifetime_fd)) {
                                        shutdown_workspaces(b);
                                        return 0;
                                }
                                lifetime_due = now + LIFETIME_CHECK_MS;
                        }
                        due = MIN(due, lifetime_due);
                }
                int timeout = pending            ? 0
                              : due == INT64_MAX ? -1
                              : due <= now       ? 0
                                                 : (int)MIN(due - now, (int64_t)INT32_MAX);
                if (wait_events(&b->bp, pfd, n, timeout, served) < 0) {
                        if (errno == EINTR)
                                continue;
                        return errorf(ret_error, negative_errno(), "poll: %m");
                }
                if (pfd[0].revents) {
                        struct signalfd_siginfo si;
                        if (read(b->sigfd, &si, sizeof(si)) == sizeof(si)) {
                                if (si.ssi_signo == SIGHUP) {
                                        policies_reload(b);
                                } else {
                                        shutdown_workspaces(b);
                                        return 0;
                                }
                        }
                }
                /*
                 * Connections first (their indices are stable until we
                 * compact): each one's events, or its next waiting request,
                 * one request each per turn; then its deadline.
                 */
                size_t keep = 0, nc = b->n_conns;
                served = false;
                now = mono_ms();
                for (size_t i = 0; i < nc; i++) {
                        struct conn *c = b->conns[i];
                        short rev = pfd[nl + i].revents;
                        bool alive = true;

                        served |= rev != 0;
                        if (rev)
                                alive = broker_conn_event(c, rev, now);
                        else if (broker_conn_more(c))
                                alive = broker_conn_serve_next(c, now);
                        if (!alive || now >= broker_conn_deadline(c)) {
                                broker_conn_free(c);
                                continue;
                        }
                        b->conns[keep++] = c;
                }
                b->n_conns = keep;
                /*
                 * audit.head at most every BROKER_AUDIT_HEAD_LAG_MS under load,
                 * not once per batch: it was a pwrite(2) per token with one
                 * client. Every line is in the log before its reply is sent;
                 * only the head (which catches lines deleted at the end) may
                 * lag, by that long, if the broker dies (audit.h).
                 */
                if (head_due < 0)
                        for (size_t i = 0; i < b->n_ws; i++)
                                if (broker_audit_head_stale(b->ws[i]->audit)) {
                                        head_due = mono_ms() + BROKER_AUDIT_HEAD_LAG_MS;
                                        break;
                                }
                if (head_due >= 0 && mono_ms() >= head_due) {
                        for (size_t i = 0; i < b->n_ws; i++)
                                (void)broker_audit_sync_head(b->ws[i]->audit);
                        head_due = -1;
                }
                for (size_t i = 0; i < b->n_ws; i++) {
                        if (pfd[1 + 2 * i].revents & POLLIN)
                                for (int k = 0; k < 64 && conn_accept(b, b->ws[i], false) > 0 &&
                                                b->n_conns < b->conns_max;
                                     k++)
                                        ;
                        if (pfd[2 + 2 * i].revents & POLLIN)
                                (void)conn_accept(b, b->ws[i], true);
                }
        }
}
