/* SPDX-License-Identifier: MIT */
/*
 * server.c: the proxy's event loop, its listeners and control socket, the
 * per-run limits, and its lifecycle.
 *
 * Why libevent (and not epoll plus a thread pool): the proxy's hard parts
 * are non-blocking TLS (OpenSSL's WANT_READ/WANT_WRITE dance on both
 * directions, renegotiation, close_notify) and resolving names without
 * blocking; libevent_openssl's bufferevents and evdns are maintained
 * implementations of exactly those, so the proxy writes neither.
 * docs/network.md has the measurements.
 *
 * Control socket: `cloister run` connects (only our uid or root may; the
 * socket is 0600 and SO_PEERCRED is checked) and sends one line,
 * {"op":"attach","run":PID,"sandbox":PID}, with the listening socket it
 * made inside the sandbox's network namespace as SCM_RIGHTS. The connection
 * stays open for the sandbox's life: when it closes (the run ended or was
 * killed), the listener and every connection accepted on it are dropped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib/lifetime.h"
#include "lib/util.h"
#include "proxy-private.h"

#define CONTROL_LINE_MAX 1024

static int errorf(char **ret_error, int r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int errorf(char **ret_error, int r, const char *fmt, ...)
{
        va_list ap;

        if (!ret_error)
                return r;
        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return r;
}

static void logf_(struct proxy *px, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct proxy *px, const char *fmt, ...)
{
        _cleanup_free_ char *m = NULL;
        va_list ap;

        if (!px->log)
                return;
        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        if (m)
                px->log(m);
}

int64_t proxy_now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool proxy_bucket_take(struct bucket *b, double per_second, double burst, int64_t now)
{
        if (b->last_ms == 0) {
                b->level = burst;
                b->last_ms = now;
        }
        if (now > b->last_ms) {
                b->level = MIN(burst, b->level + (double)(now - b->last_ms) * per_second / 1000.0);
                b->last_ms = now;
        }
        if (b->level < 1.0)
                return false;
        b->level -= 1.0;
        return true;
}

bool proxy_budget_charge(struct client *c, size_t n)
{
        struct listener *ls = c->ls;

        c->rec.bytes_out += n;
        ls->bytes_out += n;
        if (ls->bytes_out > c->px->bytes_out)
                ls->budget_spent = true;
        return !ls->budget_spent;
}

/* --- allocations that wipe ---------------------------------------------- */

static void *wipe_malloc(size_t n)
{
        return malloc(n ? n : 1);
}

static void wipe_free(void *p)
{
        if (p) {
                sodium_memzero(p, malloc_usable_size(p));
                free(p);
        }
}

static void *wipe_realloc(void *p, size_t n)
{
        void *q;
        size_t old;

        if (!p)
                return wipe_malloc(n);
        if (n == 0) {
                wipe_free(p);
                return NULL;
        }
        old = malloc_usable_size(p);
        if (n <= old)
                return p;
        q = malloc(n);
        if (!q)
                return NULL;
        memcpy(q, p, old);
        wipe_free(p);
        return q;
}

static void *ossl_malloc(size_t n, const char *file, int line)
{
        return wipe_malloc(n);
}

static void *ossl_realloc(void *p, size_t n, const char *file, int line)
{
        return wipe_realloc(p, n);
}

static void ossl_free(void *p, const char *file, int line)
{
        wipe_free(p);
}

int proxy_wipe_allocations(void)
{
        if (!CRYPTO_set_mem_functions(ossl_malloc, ossl_realloc, ossl_free))
                return -EBUSY;
        event_set_mem_functions(wipe_malloc, wipe_realloc, wipe_free);
        return 0;
}

/* --- listeners ----------------------------------------------------------- */

static void listener_free(struct listener *ls)
{
        struct proxy *px;

        if (!ls)
                return;
        px = ls->px;
        while (ls->clients)
                proxy_client_free(ls->clients);
        if (ls->l)
                evconnlistener_free(ls->l);
        if (ls->ctl)
                bufferevent_free(ls->ctl);
        for (struct listener **p = &px->listeners; *p; p = &(*p)->next)
                if (*p == ls) {
                        *p = ls->next;
                        break;
                }
        free(ls);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                      void *arg)
{
        proxy_client_accept(arg, fd);
}

static void reenable_cb(evutil_socket_t fd, short what, void *arg)
{
        evconnlistener_enable(arg);
}

/* EMFILE and the like: stop accepting for a moment instead of spinning. */
static void accept_error_cb(struct evconnlistener *l, void *arg)
{
        struct listener *ls = arg;
        struct timeval tv = {0, 200 * 1000};

        evconnlistener_disable(l);
        event_base_once(ls->px->base, -1, EV_TIMEOUT, reenable_cb, l, &tv);
}

static struct listener *listener_new(struct proxy *px, int fd, struct bufferevent *ctl, pid_t run,
                                     pid_t sandbox)
{
        struct listener *ls = calloc(1, sizeof(*ls));

        if (!ls)
                return NULL;
        ls->px = px;
        ls->ctl = ctl;
        ls->run_pid = run;
        ls->sandbox_pid = sandbox;
        evutil_make_socket_nonblocking(fd);
        ls->l = evconnlistener_new(px->base, accept_cb, ls,
                                   LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
        if (!ls->l) {
                free(ls);
                return NULL;
        }
        evconnlistener_set_error_cb(ls->l, accept_error_cb);
        ls->next = px->listeners;
        px->listeners = ls;
        return ls;
}

static void ctl_event_cb(struct bufferevent *bev, short what, void *arg)
{
        struct listener *ls = arg;

        if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
                logf_(ls->px, "run %d ended: its listener is closed", (int)ls->run_pid);
                listener_free(ls);
        }
}

static void ctl_read_cb(struct bufferevent *bev, void *arg)
{
        /* Nothing more is expected on a control connection; drop what comes. */
        evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
}

/* Is fd a listening TCP socket on IPv4/IPv6? */
static bool fd_is_tcp_listener(int fd)
{
        int type = 0, acc = 0;
        socklen_t l = sizeof(type);
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);

        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0 || type != SOCK_STREAM)
                return false;
        l = sizeof(acc);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l) < 0 || !acc)
                return false;
        return getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
               (ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
}

/* One attach message on a fresh control connection. */
static void ctl_hello_cb(evutil_socket_t fd, short what, void *arg)
{
        struct proxy *px = arg;
        char line[CONTROL_LINE_MAX + 1], cbuf[CMSG_SPACE(sizeof(int) * 4)];
        struct iovec iov = {line, CONTROL_LINE_MAX};
        struct msghdr m = {.msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = cbuf,
                           .msg_controllen = sizeof(cbuf)};
        int lfd = -1;
        ssize_t n;
        json_t *j = NULL;
        struct bufferevent *bev = NULL;
        struct listener *ls;

        n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        for (struct cmsghdr *ch = CMSG_FIRSTHDR(&m); ch; ch = CMSG_NXTHDR(&m, ch))
                if (ch->cmsg_level == SOL_SOCKET && ch->cmsg_type == SCM_RIGHTS) {
                        size_t k = (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        int fds[4];
                        memcpy(fds, CMSG_DATA(ch), MIN(k, (size_t)4) * sizeof(int));
                        for (size_t i = 0; i < MIN(k, (size_t)4); i++) {
                                if (lfd < 0)
                                        lfd = fds[i];
                                else
                                        close(fds[i]); /* one listener per attach */
                        }
                }
        if (n <= 0 || (m.msg_flags & MSG_CTRUNC) || lfd < 0 || !fd_is_tcp_listener(lfd)) {
                static const char no[] = "{\"ok\":false,\"error\":\"expected one attach line "
                                         "with a listening TCP socket\"}\n";
                (void)send(fd, no, sizeof(no) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                goto fail;
        }
        line[n] = '\0';
        j = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(j) || !json_is_string(json_object_get(j, "op")) ||
            !streq(json_string_value(json_object_get(j, "op")), "attach"))
                goto fail;
        bev = bufferevent_socket_new(px->base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (!bev)
                goto fail;
        ls = listener_new(px, lfd, bev, (pid_t)json_integer_value(json_object_get(j, "run")),
                          (pid_t)json_integer_value(json_object_get(j, "sandbox")));
        if (!ls) {
                bufferevent_free(bev);
                fd = -1;
                goto fail;
        }
        lfd = -1;
        bufferevent_setcb(bev, ctl_read_cb, NULL, ctl_event_cb, ls);
        bufferevent_enable(bev, EV_READ);
        bufferevent_write(bev, "{\"ok\":true}\n", 12);
        logf_(px, "run %d attached its sandbox (pid %d)", (int)ls->run_pid, (int)ls->sandbox_pid);
        json_decref(j);
        return;
fail:
        json_decref(j);
        safe_close(lfd);
        safe_close(fd);
}

static void control_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                              int len, void *arg)
{
        struct proxy *px = arg;
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        struct timeval tv = {5, 0};

        /* Identity comes from the kernel: only our uid or root attaches sandboxes. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 ||
            (cred.uid != geteuid() && cred.uid != 0)) {
                close(fd);
                return;
        }
        if (event_base_once(px->base, fd, EV_READ | EV_TIMEOUT, ctl_hello_cb, px, &tv) < 0)
                close(fd);
}

static int control_listen(struct proxy *px, char **ret_error)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_close_ int fd = -1;
        struct stat sb;

        if (strlen(px->control_path) >= sizeof(sa.sun_path))
                return errorf(ret_error, -ENAMETOOLONG, "%s: socket path too long",
                              px->control_path);
        strcpy(sa.sun_path, px->control_path);
        if (lstat(px->control_path, &sb) == 0) {
                _cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (!S_ISSOCK(sb.st_mode))
                        return errorf(ret_error, -EEXIST, "%s: exists and is not a socket",
                                      px->control_path);
                if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0)
                        return errorf(ret_error, -EADDRINUSE,
                                      "%s: another proxy serves this workspace", px->control_path);
                if (unlink(px->control_path) < 0)
                        return errorf(ret_error, negative_errno(), "%s: cannot remove: %m",
                                      px->control_path);
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return errorf(ret_error, negative_errno(), "socket: %m");
        mode_t old = umask(0177);
        int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        umask(old);
        if (r < 0 || listen(fd, 64) < 0)
                return errorf(ret_error, negative_errno(), "%s: cannot listen: %m",
                              px->control_path);
        px->control = evconnlistener_new(px->base, control_accept_cb, px,
                                         LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
        if (!px->control)
                return errorf(ret_error, -ENOMEM, "out of memory");
        fd = -1;
        return 0;
}

int proxy_listen_tcp(proxy *px, const char *spec, char **ret_bound, char **ret_error)
{
        struct sockaddr_storage ss = {0};
        socklen_t sl = 0;
        const char *host;
        size_t hl;
        uint16_t port = 0;
        const char *why = NULL;
        char hbuf[64], canon[64];
        _cleanup_close_ int fd = -1;
        int one = 1;

        /* "ADDR:PORT", PORT may be 0 (the kernel picks one) */
        const char *colon = strrchr(spec, ':');
        if (!colon || streq(colon + 1, "0")) {
                if (!colon)
                        return errorf(ret_error, -EINVAL, "--listen %s: expected ADDRESS:PORT",
                                      spec);
                host = spec;
                hl = (size_t)(colon - spec);
        } else if (proxy_authority_split(spec, strlen(spec), &host, &hl, &port, &why) < 0) {
                return errorf(ret_error, -EINVAL, "--listen %s: %s", spec, why);
        }
        if (hl >= sizeof(hbuf))
                return errorf(ret_error, -EINVAL, "--listen %s: bad address", spec);
        memcpy(hbuf, host, hl);
        hbuf[hl] = '\0';
        if (proxy_literal_parse(hbuf, &ss, &sl, canon, sizeof(canon)) < 0)
                return errorf(ret_error, -EINVAL, "--listen %s: not an IP address", spec);
        bool loop = ss.ss_family == AF_INET
                            ? (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127
                            : IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
        if (!loop)
                return errorf(ret_error, -EPERM,
                              "--listen %s: only loopback addresses (the proxy is for this "
                              "machine's sandboxes)",
                              spec);
        if (ss.ss_family == AF_INET)
                ((struct sockaddr_in *)&ss)->sin_port = htons(port);
        else
                ((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return errorf(ret_error, negative_errno(), "socket: %m");
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 512) < 0)
                return errorf(ret_error, negative_errno(), "--listen %s: %m", spec);
        sl = sizeof(ss);
        getsockname(fd, (struct sockaddr *)&ss, &sl);
        port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                             : ((struct sockaddr_in6 *)&ss)->sin6_port);
        if (!listener_new(px, fd, NULL, getpid(), 0))
                return errorf(ret_error, -ENOMEM, "out of memory");
        fd = -1;
        if (ret_bound && asprintf(ret_bound, ss.ss_family == AF_INET ? "%s:%u" : "[%s]:%u", canon,
                                  (unsigned)port) < 0)
                *ret_bound = NULL;
        return 0;
}

/* --- setup and teardown --------------------------------------------------- */

static char **strv_copy(char *const *v)
{
        size_t n = 0;
        char **c;

        if (!v)
                return NULL;
        while (v[n])
                n++;
        c = calloc(n + 1, sizeof(char *));
        for (size_t i = 0; c && i < n; i++)
                if (!(c[i] = strdup(v[i]))) {
                        strv_free(c);
                        return NULL;
                }
        return c;
}

static int copy_options(struct proxy *px, const struct proxy_options *o)
{
        px->origin = strdup(o->origin ? o->origin : "proxy");
        px->workspace = strdup(o->workspace);
        px->broker_dir = strdup(o->broker_dir);
        px->control_path = strdup(o->control_socket);
        px->test_ca = o->test_ca ? strdup(o->test_ca) : NULL;
        if (!px->origin || !px->workspace || !px->broker_dir || !px->control_path ||
            (o->test_ca && !px->test_ca))
                return -ENOMEM;
        px->allow = calloc(o->n_allow + 1, sizeof(*px->allow));
        px->deny = calloc(o->n_deny + 1, sizeof(*px->deny));
        px->resolve = calloc(o->n_resolve + 1, sizeof(*px->resolve));
        px->rules = calloc(o->n_rules + 1, sizeof(*px->rules));
        if (!px->allow || !px->deny || !px->resolve || !px->rules)
                return -ENOMEM;
        for (size_t i = 0; i < o->n_allow; i++, px->n_allow++) {
                px->allow[i] = o->allow[i];
                if (!(px->allow[i].host = strdup(o->allow[i].host)))
                        return -ENOMEM;
        }
        for (size_t i = 0; i < o->n_deny; i++, px->n_deny++) {
                px->deny[i] = o->deny[i];
                if (!(px->deny[i].host = strdup(o->deny[i].host)))
                        return -ENOMEM;
        }
        for (size_t i = 0; i < o->n_resolve; i++, px->n_resolve++) {
                px->resolve[i] = o->resolve[i];
                if (!(px->resolve[i].host = strdup(o->resolve[i].host)))
                        return -ENOMEM;
        }
        for (size_t i = 0; i < o->n_rules; i++, px->n_rules++) {
                const struct proxy_inject_rule *s = &o->rules[i];
                struct proxy_inject_rule *d = &px->rules[i];
                *d = (struct proxy_inject_rule){.port = s->port,
                                                .scheme = s->scheme,
                                                .push_delete = s->push_delete,
                                                .line = s->line};
                d->name = strdup(s->name);
                d->host = strdup(s->host);
                d->scope = strdup(s->scope);
                d->secret = strdup(s->secret);
                d->username = s->username ? strdup(s->username) : NULL;
                d->header = s->header ? strdup(s->header) : NULL;
                d->methods = strv_copy(s->methods);
                d->paths = strv_copy(s->paths);
                d->push_refs = strv_copy(s->push_refs);
                if (!d->name || !d->host || !d->scope || !d->secret || !d->methods || !d->paths ||
                    (s->username && !d->username) || (s->header && !d->header) ||
                    (s->push_refs && !d->push_refs))
                        return -ENOMEM;
        }
        px->max_connections = MIN(o->connections ? o->connections : 64, (uint64_t)PROXY_CONNS_MAX);
        px->rate = o->rate ? o->rate : 50;
        px->bytes_out = o->bytes_out ? o->bytes_out : (1ULL << 30);
        px->log_max = o->log_max ? o->log_max : PROXY_NETLOG_MAX_DEFAULT;
        return 0;
}

static int tls_setup(struct proxy *px, char **ret_error)
{
        static const unsigned char alpn[] = "\x08http/1.1";

        px->tls = SSL_CTX_new(TLS_client_method());
        px->peek = SSL_CTX_new(TLS_server_method());
        if (!px->tls || !px->peek)
                return errorf(ret_error, -ENOMEM, "cannot set up OpenSSL");
        SSL_CTX_set_min_proto_version(px->tls, TLS1_2_VERSION);
        SSL_CTX_set_verify(px->tls, SSL_VERIFY_PEER, NULL);
        SSL_CTX_set_session_cache_mode(px->tls, SSL_SESS_CACHE_OFF);
        if (SSL_CTX_set_default_verify_paths(px->tls) != 1)
                return errorf(ret_error, -EIO, "cannot load the system CA store");
        if (px->test_ca && SSL_CTX_load_verify_file(px->tls, px->test_ca) != 1)
                return errorf(ret_error, -EIO, "%s: key 'test_ca' in [network]: cannot load %s",
                              px->origin, px->test_ca);
        SSL_CTX_set_alpn_protos(px->tls, alpn, sizeof(alpn) - 1);
        return 0;
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
        struct proxy *px = arg;

        logf_(px, "signal %d: stopping", (int)sig);
        event_base_loopbreak(px->base);
}

static void head_sync_cb(evutil_socket_t fd, short what, void *arg)
{
        struct proxy *px = arg;

        if (px->audit)
                (void)broker_audit_sync_head(px->audit);
}

void proxy_schedule_head_sync(struct proxy *px)
{
        struct timeval tv = {0, 50 * 1000};

        if (px->head_sync && !evtimer_pending(px->head_sync, NULL))
                evtimer_add(px->head_sync, &tv);
}

int proxy_new(const struct proxy_options *o, proxy **ret, char **ret_error)
{
        struct proxy *px;
        struct stat sb;
        int r;

        *ret_error = NULL;
        px = calloc(1, sizeof(*px));
        if (!px)
                return -ENOMEM;
        px->broker_dirfd = px->audit_lock_fd = px->lifetime_fd = -1;
        r = copy_options(px, o);
        if (r < 0) {
                errorf(ret_error, r, "out of memory");
                goto fail;
        }
        px->base = event_base_new();
        if (!px->base) {
                r = errorf(ret_error, -ENOMEM, "cannot make an event loop");
                goto fail;
        }
        /* The host's resolver configuration; a missing resolv.conf means 127.0.0.1. */
        px->dns = evdns_base_new(px->base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
                                                   EVDNS_BASE_NAMESERVERS_NO_DEFAULT);
        if (!px->dns)
                px->dns = evdns_base_new(px->base, 0);
        if (!px->dns) {
                r = errorf(ret_error, -ENOMEM, "cannot set up the resolver");
                goto fail;
        }
        r = tls_setup(px, ret_error);
        if (r < 0)
                goto fail;
        if (mkdir(px->broker_dir, 0700) < 0 && errno != EEXIST) {
                r = errorf(ret_error, negative_errno(), "%s: cannot create: %m", px->broker_dir);
                goto fail;
        }
        px->broker_dirfd = open(px->broker_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (px->broker_dirfd < 0 || fstat(px->broker_dirfd, &sb) < 0) {
                r = errorf(ret_error, negative_errno(), "%s: cannot open: %m", px->broker_dir);
                goto fail;
        }
        if (sb.st_uid != geteuid()) {
                r = errorf(ret_error, -EPERM, "%s: owned by uid %u, not by the proxy's %u",
                           px->broker_dir, (unsigned)sb.st_uid, (unsigned)geteuid());
                goto fail;
        }
        /* One proxy per workspace writes the net log. */
        px->audit_lock_fd = openat(px->broker_dirfd, PROXY_AUDIT_FILE,
                                   O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (px->audit_lock_fd < 0 || flock(px->audit_lock_fd, LOCK_EX | LOCK_NB) < 0) {
                r = errorf(ret_error, negative_errno(), "%s/%s: %s", px->broker_dir,
                           PROXY_AUDIT_FILE,
                           errno == EWOULDBLOCK ? "another proxy of this workspace is running"
                                                : strerror(errno));
                goto fail;
        }
        /*
         * The log's end only (its last line and net.head), however long it
         * is: a start stays as quick on the thousandth run as on the first.
         * A log cut or edited at its end is checked whole and refused; an
         * edit further back is `cloister audit verify`'s to find, before or
         * after the lines this proxy adds (they chain to it).
         */
        r = broker_audit_open_tail(px->broker_dirfd, px->broker_dir, PROXY_AUDIT_FILE,
                                   PROXY_AUDIT_HEAD, &px->audit, ret_error);
        if (r < 0)
                goto fail;
        r = broker_audit_set_name(px->audit, px->workspace);
        if (r < 0)
                goto fail;
        broker_audit_set_max(px->audit, px->log_max);
        px->head_sync = evtimer_new(px->base, head_sync_cb, px);
        if (!px->head_sync) {
                r = errorf(ret_error, -ENOMEM, "out of memory");
                goto fail;
        }
        (void)proxy_keys_reload(px); /* none yet is fine: injected requests then fail closed */
        r = control_listen(px, ret_error);
        if (r < 0)
                goto fail;
        *ret = px;
        return 0;
fail:
        if (!*ret_error)
                errorf(ret_error, r, "%s: %s", px->origin ? px->origin : "proxy", strerror(-r));
        proxy_free(px);
        return r;
}

void proxy_set_log(proxy *px, void (*log)(const char *line))
{
        px->log = log;
}

void proxy_set_lifetime(proxy *px, int fd)
{
        safe_close(px->lifetime_fd);
        px->lifetime_fd = fd;
}

static void lifetime_cb(evutil_socket_t fd, short what, void *arg)
{
        proxy *px = arg;

        (void)fd;
        (void)what;
        if (lifetime_over(px->lifetime_fd)) {
                logf_(px, "no run of the workspace is left: stopping");
                event_base_loopbreak(px->base);
        }
}

int proxy_run(proxy *px, char **ret_error)
{
        *ret_error = NULL;
        signal(SIGPIPE, SIG_IGN);
        signal(SIGXFSZ, SIG_IGN);
        px->sigterm = evsignal_new(px->base, SIGTERM, signal_cb, px);
        px->sigint = evsignal_new(px->base, SIGINT, signal_cb, px);
        if (!px->sigterm || !px->sigint || evsignal_add(px->sigterm, NULL) < 0 ||
            evsignal_add(px->sigint, NULL) < 0)
                return errorf(ret_error, -ENOMEM, "cannot watch signals");
        if (px->lifetime_fd >= 0) {
                struct timeval every = {LIFETIME_CHECK_MS / 1000,
                                        (LIFETIME_CHECK_MS % 1000) * 1000};
                px->lifetime = event_new(px->base, -1, EV_PERSIST, lifetime_cb, px);
                if (!px->lifetime || event_add(px->lifetime, &every) < 0)
                        return errorf(ret_error, -ENOMEM, "cannot watch the runs' lock");
        }
        if (event_base_dispatch(px->base) < 0)
                return errorf(ret_error, -EIO, "the event loop failed");
        return 0;
}

void proxy_free(proxy *px)
{
        if (!px)
                return;
        while (px->listeners)
                listener_free(px->listeners);
        proxy_broker_link_free(px);
        if (px->control) {
                evconnlistener_free(px->control);
                unlink(px->control_path);
        }
        if (px->sigterm)
                event_free(px->sigterm);
        if (px->sigint)
                event_free(px->sigint);
        if (px->head_sync)
                event_free(px->head_sync);
        if (px->lifetime)
                event_free(px->lifetime);
        broker_audit_free(px->audit);
        broker_keyring_free(px->keys);
        if (px->dns)
                evdns_base_free(px->dns, 0);
        if (px->base)
                event_base_free(px->base);
        SSL_CTX_free(px->tls);
        SSL_CTX_free(px->peek);
        safe_close(px->lifetime_fd); /* after the control socket: a new run waits for it */
        safe_close(px->broker_dirfd);
        safe_close(px->audit_lock_fd);
        for (size_t i = 0; i < px->n_allow; i++)
                proxy_host_pattern_done(&px->allow[i]);
        for (size_t i = 0; i < px->n_deny; i++)
                proxy_host_pattern_done(&px->deny[i]);
        for (size_t i = 0; i < px->n_resolve; i++)
                proxy_resolve_done(&px->resolve[i]);
        for (size_t i = 0; i < px->n_rules; i++)
                proxy_inject_rule_done(&px->rules[i]);
        free(px->allow);
        free(px->deny);
        free(px->resolve);
        free(px->rules);
        free(px->origin);
        free(px->workspace);
        free(px->broker_dir);
        free(px->control_path);
        free(px->test_ca);
        free(px);
}
