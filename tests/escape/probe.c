/* SPDX-License-Identifier: MIT */
/*
 * probe.c: one hostile action, run inside the sandbox by escape.sh.
 *
 * `probe ACTION ARGS...` tries one thing and prints exactly one word: "ok"
 * if the action succeeded, the errno name (EPERM, ENOENT...) if the call
 * failed, or "SIG<NAME>" if the attempt killed the process (each risky
 * action runs in a forked child so that a seccomp kill is observable).
 * Some actions print a measured value instead (see each). The test
 * compares the word with the exact outcome it expects.
 *
 * It is built without sanitizers: it runs under RLIMIT_AS, which an ASan
 * binary's shadow memory cannot fit.
 *
 * Numeric arguments are read with strtoull(.., 0): "0x100000028" is AF_VSOCK
 * with bit 32 set, which the kernel ignores and a filter must not.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static int report(long r)
{
        if (r < 0)
                printf("%s\n", strerrorname_np(errno) ? strerrorname_np(errno) : "E?");
        else
                printf("ok\n");
        return 0;
}

static int usage(void)
{
        fprintf(stderr, "usage: probe ACTION [ARGS...]\n");
        return 2;
}

/* Run fn in a child; print its word, or the signal that killed it. */
static int in_child(long (*fn)(char **), char **args)
{
        int status;
        pid_t pid;

        fflush(stdout);
        pid = fork();
        if (pid < 0)
                return report(-1);
        if (pid == 0) {
                long r = fn(args);
                report(r);
                fflush(stdout);
                _exit(0);
        }
        if (waitpid(pid, &status, 0) < 0)
                return report(-1);
        if (WIFSIGNALED(status))
                printf("SIG%s\n", sigabbrev_np(WTERMSIG(status)));
        return 0;
}

#if defined(__x86_64__)
static long do_x32(char **a)
{
        (void)a;
        /* getpid through the x32 ABI: the 0x40000000 syscall bit */
        return syscall(0x40000000 | SYS_getpid);
}

static long do_i386(char **a)
{
        long ret;
        (void)a;
        /* getpid (20) through int 0x80, the i386 ABI */
        __asm__ volatile("int $0x80" : "=a"(ret) : "0"(20L) : "memory");
        if (ret < 0) {
                errno = (int)-ret;
                return -1;
        }
        return 0;
}
#else
/* Other ABIs are an x86_64 concern; escape.sh skips these elsewhere. */
static long do_x32(char **a)
{
        (void)a;
        errno = ENOSYS;
        return -1;
}
#define do_i386 do_x32
#endif

/* A syscall this probe knows by name (socket, ioctl...), or -1. */
static int nr_of(const char *name)
{
        int nr = seccomp_syscall_resolve_name(name);
        return nr == __NR_SCMP_ERROR ? -1 : nr;
}

static unsigned long long num(const char *s)
{
        return strtoull(s, NULL, 0);
}

/* sock socket|socketpair A0 A1 A2: the raw call, all 64 bits of each argument as given. */
static long do_sock(char **a)
{
        int sv[2];
        int nr = nr_of(a[0]);

        if (nr < 0 || !a[1] || !a[2] || !a[3]) {
                errno = EINVAL;
                return -1;
        }
        return syscall(nr, num(a[1]), num(a[2]), num(a[3]), (unsigned long)sv);
}

/*
 * Would cloister's filter let this call through? The probe stacks a filter
 * of its own that answers SECCOMP_RET_TRACE for the call. With no tracer,
 * the kernel then fails the call with ENOSYS and never runs it; and since
 * the strictest answer of all filters wins and ERRNO and KILL beat TRACE,
 * the outcome is cloister's verdict alone, whatever this kernel supports:
 * the errno the filter chose, or ENOSYS ("passes") if it allowed the call.
 */
static int gate_install(int nr)
{
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        int r;

        if (!ctx)
                return -ENOMEM;
        r = seccomp_rule_add(ctx, SCMP_ACT_TRACE(0), nr, 0);
        if (r == 0)
                r = seccomp_load(ctx);
        seccomp_release(ctx);
        return r;
}

static long gate_call(int nr, const unsigned long long *v)
{
        return syscall(nr, v[0], v[1], v[2], v[3], v[4], v[5]);
}

/* gate NAME [A0..A5]: prints "passes" or the errno cloister's filter answers. */
static long do_gate(char **a)
{
        unsigned long long v[6] = {0};
        int nr = nr_of(a[0]);

        for (int i = 0; i < 6 && a[i + 1]; i++)
                v[i] = num(a[i + 1]);
        if (nr < 0 || gate_install(nr) < 0) {
                printf("cannot gate %s\n", a[0]);
                _exit(0);
        }
        if (gate_call(nr, v) < 0 && errno == ENOSYS)
                printf("passes\n");
        else
                report(-1);
        fflush(stdout);
        _exit(0);
}

/*
 * gate-sweep NAME POS FROM TO [A0..A5]: the values FROM..TO of argument POS
 * (the others as given) that cloister's filter lets through, in order, or
 * "none".
 */
static long do_gate_sweep(char **a)
{
        unsigned long long v[6] = {0}, from, to;
        int nr = nr_of(a[0]), pos, n = 0;

        if (!a[1] || !a[2] || !a[3]) {
                printf("usage\n");
                _exit(0);
        }
        pos = atoi(a[1]);
        from = num(a[2]);
        to = num(a[3]);
        for (int i = 0; i < 6 && a[i + 4]; i++)
                v[i] = num(a[i + 4]);
        if (nr < 0 || pos < 0 || pos > 5 || to - from > 100000 || gate_install(nr) < 0) {
                printf("cannot gate %s\n", a[0]);
                _exit(0);
        }
        for (unsigned long long x = from; x <= to; x++) {
                v[pos] = x;
                if (gate_call(nr, v) < 0 && errno == ENOSYS)
                        printf("%s%llu", n++ ? " " : "", x);
        }
        printf("%s\n", n ? "" : "none");
        fflush(stdout);
        _exit(0);
}

static long do_ptrace(char **a)
{
        pid_t child = fork();
        long r;
        (void)a;

        if (child == 0) {
                pause();
                _exit(0);
        }
        r = ptrace(PTRACE_ATTACH, child, 0, 0);
        int e = errno;
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        errno = e;
        return r;
}

/* A child that waits to be tampered with; the caller kills it. */
static pid_t sibling(void)
{
        pid_t child = fork();

        if (child == 0) {
                pause();
                _exit(0);
        }
        return child;
}

static long sibling_done(pid_t child, long r)
{
        int e = errno;

        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        errno = e;
        return r;
}

/* Write access to a sibling's memory through /proc: the other ptrace. */
static long do_sibling_mem(char **a)
{
        pid_t child = sibling();
        char path[64];
        (void)a;

        snprintf(path, sizeof(path), "/proc/%d/mem", (int)child);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd >= 0)
                close(fd);
        return sibling_done(child, fd < 0 ? -1 : 0);
}

/* Take a sibling's descriptor 0 with pidfd_getfd. */
static long do_pidfd_getfd(char **a)
{
        pid_t child = sibling();
        long pidfd, r = -1;
        (void)a;

        pidfd = syscall(SYS_pidfd_open, child, 0);
        if (pidfd >= 0) {
                r = syscall(SYS_pidfd_getfd, (int)pidfd, 0, 0);
                int e = errno;
                if (r >= 0)
                        close((int)r);
                close((int)pidfd);
                errno = e;
        }
        return sibling_done(child, r < 0 ? -1 : 0);
}

static long do_fork_bomb(char **a)
{
        long n = 0, max = atol(a[0]);

        for (; n < max; n++) {
                pid_t p = fork();
                if (p < 0)
                        break;
                if (p == 0) {
                        pause();
                        _exit(0);
                }
        }
        if (n < max)
                printf("%s\n", strerrorname_np(errno));
        else
                printf("forked %ld\n", n);
        fflush(stdout);
        kill(0, SIGKILL); /* this child's whole process group */
        return 0;
}

/* memfd MB: write MB MiB into a memfd without mapping it (not in RLIMIT_AS). */
static long do_memfd(char **a)
{
        static char chunk[1 << 20];
        long mb = atol(a[0]);
        int fd = memfd_create("cloister-probe", 0);

        if (fd < 0)
                return -1;
        memset(chunk, 1, sizeof(chunk));
        for (long i = 0; i < mb; i++)
                if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
                        return -1;
        return 0;
}

/* fill PATH MB: write MB MiB into a new file. */
static int fill(const char *path, const char *arg)
{
        static char chunk[1 << 20];
        long mb = atol(arg);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        if (fd < 0)
                return report(-1);
        for (long i = 0; i < mb; i++)
                if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
                        return report(-1);
        return report(close(fd));
}

/* mkfiles DIR N: make up to N empty files; "ok N", or the errno and how many were made. */
static int mkfiles(const char *dir, const char *arg)
{
        long n = atol(arg), i;
        char p[4096];

        for (i = 0; i < n; i++) {
                snprintf(p, sizeof(p), "%s/f%ld", dir, i);
                int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                if (fd < 0)
                        break;
                close(fd);
        }
        if (i < n)
                printf("%s %ld\n", strerrorname_np(errno) ? strerrorname_np(errno) : "E?", i);
        else
                printf("ok %ld\n", i);
        return 0;
}

static int alloc(const char *arg)
{
        size_t n = strtoull(arg, NULL, 10) * 1024 * 1024;
        char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (p == MAP_FAILED)
                return report(-1);
        memset(p, 1, n);
        return report(0);
}

static int net(const char *proto, const char *host, const char *port)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(port))};
        bool udp = strcmp(proto, "udp") == 0;
        int fd = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);

        if (fd < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1)
                return report(-1);
        if (udp)
                return report(
                        sendto(fd, "cloister-escape", 15, 0, (struct sockaddr *)&sa, sizeof(sa)));
        return report(connect(fd, (struct sockaddr *)&sa, sizeof(sa)));
}

/* Is DIR/.. (ten times over) the sandbox's root? Prints "root" or "other". */
static int dotdot(const char *dir)
{
        char p[4096];
        struct stat root, st;
        size_t l;

        l = (size_t)snprintf(p, sizeof(p), "%s", dir);
        for (int i = 0; i < 10 && l + 4 < sizeof(p); i++)
                l += (size_t)snprintf(p + l, sizeof(p) - l, "/..");
        if (stat("/", &root) < 0 || stat(p, &st) < 0)
                return report(-1);
        printf("%s\n", st.st_dev == root.st_dev && st.st_ino == root.st_ino ? "root" : "other");
        return 0;
}

/* Does any process visible here run `comm`? Prints "none" or "found". */
static int proc_find(const char *comm)
{
        char path[64], buf[64];
        bool found = false;

        for (int pid = 1; pid < 1 << 22 && !found; pid++) {
                snprintf(path, sizeof(path), "/proc/%d/comm", pid);
                FILE *f = fopen(path, "re");
                if (!f)
                        continue;
                if (fgets(buf, sizeof(buf), f) && strncmp(buf, comm, strlen(comm)) == 0)
                        found = true;
                fclose(f);
        }
        printf("%s\n", found ? "found" : "none");
        return 0;
}

/*
 * The broker, as the agent sees it: $CLOISTER_BROKER, JSON lines. The
 * replies are read with plain string search; the probe needs no JSON
 * library and only ever looks at fields the protocol documents.
 */
static int broker_call(const char *request, char *resp, size_t n)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        const char *path = getenv("CLOISTER_BROKER");
        size_t len = 0;
        int fd;

        if (!path || strlen(path) >= sizeof(sa.sun_path)) {
                errno = ENOENT;
                return -1;
        }
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -1;
        if (write(fd, request, strlen(request)) < 0 || write(fd, "\n", 1) < 0) {
                close(fd);
                return -1;
        }
        while (len + 1 < n) {
                ssize_t r = read(fd, resp + len, n - 1 - len);
                if (r <= 0)
                        break;
                len += (size_t)r;
                if (memchr(resp, '\n', len))
                        break;
        }
        close(fd);
        resp[len] = '\0';
        resp[strcspn(resp, "\n")] = '\0';
        return len ? 0 : (errno = EPROTO, -1);
}

/* The string value of "key" in a flat JSON reply, or "" */
static void json_field(const char *json, const char *key, char *out, size_t n)
{
        char pat[64];
        const char *p;
        size_t l = 0;

        snprintf(pat, sizeof(pat), "\"%s\":", key);
        out[0] = '\0';
        p = strstr(json, pat);
        if (!p)
                return;
        p += strlen(pat);
        if (*p == '"') {
                for (p++; *p && *p != '"' && l + 1 < n; p++)
                        out[l++] = *p;
        } else {
                for (; *p && !strchr(",}", *p) && l + 1 < n; p++)
                        out[l++] = *p;
        }
        out[l] = '\0';
}

/* issue SCOPE [TTL]: prints "TOKEN JTI", or the error code. */
static int broker_issue(const char *scope, const char *ttl)
{
        char req[256], resp[8192], tok[4096], jti[128];

        if (ttl)
                snprintf(req, sizeof(req), "{\"op\":\"issue\",\"scope\":\"%s\",\"ttl\":%ld}", scope,
                         atol(ttl));
        else
                snprintf(req, sizeof(req), "{\"op\":\"issue\",\"scope\":\"%s\"}", scope);
        if (broker_call(req, resp, sizeof(resp)) < 0)
                return report(-1);
        json_field(resp, "token", tok, sizeof(tok));
        json_field(resp, "jti", jti, sizeof(jti));
        if (!*tok) {
                json_field(resp, "error", tok, sizeof(tok));
                printf("%s\n", tok);
                return 0;
        }
        printf("%s %s\n", tok, jti);
        return 0;
}

/* introspect/redeem/revoke: prints "active", "inactive", or the error code. */
static int broker_op(const char *op, const char *field, const char *value)
{
        char req[8192], resp[8192], v[256];

        snprintf(req, sizeof(req), "{\"op\":\"%s\",\"%s\":\"%s\"}", op, field, value);
        if (broker_call(req, resp, sizeof(resp)) < 0)
                return report(-1);
        json_field(resp, "ok", v, sizeof(v));
        if (strcmp(v, "true") != 0) {
                json_field(resp, "error", v, sizeof(v));
                printf("%s\n", v);
                return 0;
        }
        if (strcmp(op, "introspect") == 0) {
                json_field(resp, "active", v, sizeof(v));
                printf("%s\n", strcmp(v, "true") == 0 ? "active" : "inactive");
                return 0;
        }
        printf("ok\n");
        return 0;
}

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static size_t b64_decode(const char *in, size_t n, unsigned char *out)
{
        uint32_t acc = 0;
        int bits = 0;
        size_t l = 0;

        for (size_t i = 0; i < n; i++) {
                const char *c = strchr(b64url, in[i]);
                if (!c || !in[i])
                        break;
                acc = (acc << 6) | (uint32_t)(c - b64url);
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[l++] = (unsigned char)(acc >> bits);
                }
        }
        return l;
}

static void b64_encode(const unsigned char *in, size_t n, char *out)
{
        uint32_t acc = 0;
        int bits = 0;
        size_t l = 0;

        for (size_t i = 0; i < n; i++) {
                acc = (acc << 8) | in[i];
                bits += 8;
                while (bits >= 6) {
                        bits -= 6;
                        out[l++] = b64url[(acc >> bits) & 63];
                }
        }
        if (bits)
                out[l++] = b64url[(acc << (6 - bits)) & 63];
        out[l] = '\0';
}

/*
 * tamper WHAT TOKEN: the token with its audience rewritten ("aud": the
 * agent points it at another service) or one signature byte flipped
 * ("sig": a forgery). Prints the new token.
 */
static int tamper(const char *what, const char *token)
{
        static unsigned char raw[8192];
        static char enc[12288], out[16384];
        const char *body = token + strlen("v4.public."), *dot = strchr(body, '.');
        size_t blen = dot ? (size_t)(dot - body) : strlen(body);
        size_t n = b64_decode(body, blen, raw);

        if (strncmp(token, "v4.public.", 10) != 0 || n < 64)
                return report((errno = EINVAL, -1));
        if (strcmp(what, "aud") == 0) {
                static const char pat[] = "\"aud\":\"https://";
                char *aud = memmem(raw, n - 64, pat, sizeof(pat) - 1);
                if (!aud || aud + sizeof(pat) - 1 + 4 > (char *)raw + n - 64)
                        return report((errno = ENOENT, -1));
                memcpy(aud + sizeof(pat) - 1, "evil", 4); /* https://git.e… -> https://evil… */
        } else {
                raw[n - 1] ^= 1;
        }
        b64_encode(raw, n, enc);
        snprintf(out, sizeof(out), "v4.public.%s%s", enc, dot ? dot : "");
        printf("%s\n", out);
        return 0;
}

/* A field of /proc/self/status (CapEff, NoNewPrivs, Seccomp...). */
static int status_field(const char *field)
{
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        size_t l = strlen(field);

        if (!f)
                return report(-1);
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, field, l) == 0 && line[l] == ':') {
                        char *v = line + l + 1;
                        v += strspn(v, " \t");
                        printf("%s", v);
                }
        fclose(f);
        return 0;
}

/* How many descriptors besides stdio are open (not counting the one reading the list). */
static int fds(void)
{
        char p[64];
        int n = 0;

        for (int fd = 3; fd < 4096; fd++) {
                snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
                if (access(p, F_OK) == 0)
                        n++;
        }
        printf("%d\n", n);
        return 0;
}

/* The host's address towards the outside; no packet leaves (UDP connect). */
static int host_ip(void)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(9)};
        socklen_t l = sizeof(sa);
        char buf[INET_ADDRSTRLEN];
        int fd = socket(AF_INET, SOCK_DGRAM, 0);

        inet_pton(AF_INET, "192.0.2.1", &sa.sin_addr);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            getsockname(fd, (struct sockaddr *)&sa, &l) < 0)
                return report(-1);
        printf("%s\n", inet_ntop(AF_INET, &sa.sin_addr, buf, sizeof(buf)));
        return 0;
}

/*
 * On the host: listen on 127.0.0.1 (TCP and UDP, one port), write the port
 * to OUT.port, then log "tcp" or "udp" to OUT for everything that arrives.
 */
static int serve(const char *out)
{
        struct sockaddr_in sa = {.sin_family = AF_INET};
        socklen_t l = sizeof(sa);
        char path[4096], buf[64];
        int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        FILE *f;

        inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
        if (t < 0 || u < 0 || bind(t, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(t, 8) < 0 ||
            getsockname(t, (struct sockaddr *)&sa, &l) < 0 ||
            bind(u, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return report(-1);
        snprintf(path, sizeof(path), "%s.port", out);
        f = fopen(path, "we");
        if (!f)
                return report(-1);
        fprintf(f, "%d\n", ntohs(sa.sin_port));
        fclose(f);
        for (;;) {
                fd_set s;
                FD_ZERO(&s);
                FD_SET(t, &s);
                FD_SET(u, &s);
                if (select(u > t ? u + 1 : t + 1, &s, NULL, NULL, NULL) < 0)
                        continue;
                f = fopen(out, "ae");
                if (FD_ISSET(t, &s)) {
                        int c = accept(t, NULL, NULL);
                        if (c >= 0)
                                close(c);
                        if (f)
                                fprintf(f, "tcp\n");
                }
                if (FD_ISSET(u, &s)) {
                        if (recv(u, buf, sizeof(buf), 0) >= 0 && f)
                                fprintf(f, "udp\n");
                }
                if (f)
                        fclose(f);
        }
}

static long sys_call(char **a)
{
        const char *w = a[0];
        static char buf[128];

        if (!strcmp(w, "mount"))
                return mount("none", "/tmp", "tmpfs", 0, NULL);
        if (!strcmp(w, "umount"))
                return umount2(a[1], MNT_DETACH);
        if (!strcmp(w, "pivot_root"))
                return syscall(SYS_pivot_root, "/tmp", "/tmp");
        if (!strcmp(w, "chroot"))
                return chroot("/tmp");
        if (!strcmp(w, "open_tree"))
                return syscall(SYS_open_tree, AT_FDCWD, "/tmp", 1 /* OPEN_TREE_CLONE */);
        if (!strcmp(w, "fsopen"))
                return syscall(SYS_fsopen, "tmpfs", 0);
        if (!strcmp(w, "unshare-user"))
                return unshare(CLONE_NEWUSER);
        if (!strcmp(w, "unshare-mount"))
                return unshare(CLONE_NEWNS);
        if (!strcmp(w, "unshare-net"))
                return unshare(CLONE_NEWNET);
        if (!strcmp(w, "clone-newuser")) {
                long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
                if (r == 0)
                        _exit(0);
                return r < 0 ? r : 0;
        }
        if (!strcmp(w, "clone3")) {
                uint64_t args[11] = {0};
                args[4] = SIGCHLD; /* exit_signal */
                long r = syscall(SYS_clone3, args, sizeof(args));
                if (r == 0)
                        _exit(0);
                return r < 0 ? r : 0;
        }
        if (!strcmp(w, "setns")) {
                int fd = open("/proc/self/ns/net", O_RDONLY);
                return fd < 0 ? fd : setns(fd, 0);
        }
        if (!strcmp(w, "bpf")) {
                union bpf_attr attr = {.map_type = BPF_MAP_TYPE_ARRAY,
                                       .key_size = 4,
                                       .value_size = 4,
                                       .max_entries = 1};
                return syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
        }
        if (!strcmp(w, "perf_event_open")) {
                struct perf_event_attr pe = {.type = PERF_TYPE_SOFTWARE,
                                             .size = sizeof(pe),
                                             .config = PERF_COUNT_SW_CPU_CLOCK};
                return syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0);
        }
        if (!strcmp(w, "userfaultfd"))
                return syscall(SYS_userfaultfd, 0);
        if (!strcmp(w, "add_key"))
                return syscall(SYS_add_key, "user", "cloister", "x", 1, KEY_SPEC_SESSION_KEYRING);
        if (!strcmp(w, "keyctl"))
                return syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "cloister");
        if (!strcmp(w, "io_uring_setup")) {
                struct io_uring_params p = {0};
                return syscall(SYS_io_uring_setup, 4, &p);
        }
        if (!strcmp(w, "open_by_handle_at")) {
                struct {
                        unsigned int bytes;
                        int type;
                        unsigned char h[8];
                } fh = {8, 1, {2, 0, 0, 0, 0, 0, 0, 0}};
                return syscall(SYS_open_by_handle_at, AT_FDCWD, &fh, O_RDONLY);
        }
        if (!strcmp(w, "name_to_handle_at")) {
                struct {
                        unsigned int bytes;
                        int type;
                        unsigned char h[128];
                } fh = {128, 0, {0}};
                int mnt;
                return syscall(SYS_name_to_handle_at, AT_FDCWD, "/", &fh, &mnt, 0);
        }
        if (!strcmp(w, "kexec_load"))
                return syscall(SYS_kexec_load, 0, 0, NULL, 0);
        if (!strcmp(w, "init_module"))
                return syscall(SYS_init_module, buf, sizeof(buf), "");
        if (!strcmp(w, "personality"))
                return personality(ADDR_NO_RANDOMIZE);
        if (!strcmp(w, "personality-high"))
                return syscall(SYS_personality, 0x100000000UL | ADDR_NO_RANDOMIZE);
        if (!strcmp(w, "tiocsti")) {
                char c = 'x';
                return ioctl(0, TIOCSTI, &c);
        }
        if (!strcmp(w, "tiocsti-high")) {
                char c = 'x';
                return syscall(SYS_ioctl, 0, 0x100000000UL | TIOCSTI, &c);
        }
        if (!strcmp(w, "clone-newuser-high")) {
                long r = syscall(SYS_clone, 0x100000000UL | CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
                if (r == 0)
                        _exit(0);
                return r < 0 ? r : 0;
        }
        if (!strcmp(w, "setuid0"))
                return setuid(0);
        if (!strcmp(w, "mknod"))
                return mknod("/tmp/mem", S_IFCHR | 0600, makedev(1, 1));
        if (!strcmp(w, "vsock"))
                return socket(AF_VSOCK, SOCK_STREAM, 0);
        if (!strcmp(w, "sethostname"))
                return sethostname("evil", 4);
        errno = EINVAL;
        return -1;
}

int main(int argc, char **argv)
{
        const char *a = argc > 1 ? argv[1] : "";

        if (argc < 2)
                return usage();
        if (!strcmp(a, "read") && argc == 3)
                return report(open(argv[2], O_RDONLY | O_CLOEXEC));
        if (!strcmp(a, "write") && argc == 3)
                return report(open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
        if (!strcmp(a, "mkdir") && argc == 3)
                return report(mkdir(argv[2], 0755));
        if (!strcmp(a, "unlink") && argc == 3)
                return report(unlink(argv[2]));
        if (!strcmp(a, "symlink") && argc == 4)
                return report(symlink(argv[2], argv[3]));
        if (!strcmp(a, "link") && argc == 4)
                return report(link(argv[2], argv[3]));
        if (!strcmp(a, "rename") && argc == 4)
                return report(rename(argv[2], argv[3]));
        if (!strcmp(a, "dotdot") && argc == 3)
                return dotdot(argv[2]);
        if (!strcmp(a, "proc-find") && argc == 3)
                return proc_find(argv[2]);
        if (!strcmp(a, "env") && argc == 3)
                return printf("%s\n", getenv(argv[2]) ? "set" : "unset") < 0;
        if (!strcmp(a, "net") && argc == 5)
                return net(argv[2], argv[3], argv[4]);
        if (!strcmp(a, "alloc") && argc == 3)
                return alloc(argv[2]);
        if (!strcmp(a, "fill") && argc == 4)
                return fill(argv[2], argv[3]);
        if (!strcmp(a, "mkfiles") && argc == 4)
                return mkfiles(argv[2], argv[3]);
        if (!strcmp(a, "memfd") && argc == 3)
                return in_child(do_memfd, argv + 2);
        if (!strcmp(a, "fork-bomb") && argc == 3)
                return in_child(do_fork_bomb, argv + 2);
        if (!strcmp(a, "ptrace"))
                return in_child(do_ptrace, argv + 2);
        if (!strcmp(a, "sibling-mem"))
                return in_child(do_sibling_mem, argv + 2);
        if (!strcmp(a, "pidfd-getfd"))
                return in_child(do_pidfd_getfd, argv + 2);
        if (!strcmp(a, "x32"))
                return in_child(do_x32, argv + 2);
        if (!strcmp(a, "i386"))
                return in_child(do_i386, argv + 2);
        if (!strcmp(a, "sys") && argc >= 3)
                return in_child(sys_call, argv + 2);
        if (!strcmp(a, "sock") && argc == 6)
                return in_child(do_sock, argv + 2);
        if (!strcmp(a, "gate") && argc >= 3 && argc <= 9)
                return in_child(do_gate, argv + 2);
        if (!strcmp(a, "gate-sweep") && argc >= 6 && argc <= 12)
                return in_child(do_gate_sweep, argv + 2);
        if (!strcmp(a, "issue") && (argc == 3 || argc == 4))
                return broker_issue(argv[2], argc == 4 ? argv[3] : NULL);
        if (!strcmp(a, "introspect") && argc == 3)
                return broker_op("introspect", "token", argv[2]);
        if (!strcmp(a, "redeem") && argc == 3)
                return broker_op("redeem", "token", argv[2]);
        if (!strcmp(a, "revoke") && argc == 3)
                return broker_op("revoke", "jti", argv[2]);
        if (!strcmp(a, "tamper") && argc == 4)
                return tamper(argv[2], argv[3]);
        if (!strcmp(a, "status") && argc == 3)
                return status_field(argv[2]);
        if (!strcmp(a, "fds"))
                return fds();
        if (!strcmp(a, "host-ip"))
                return host_ip();
        if (!strcmp(a, "serve") && argc == 3)
                return serve(argv[2]);
        if (!strcmp(a, "spin")) {
                for (volatile unsigned long i = 0;; i++)
                        ;
        }
        return usage();
}
