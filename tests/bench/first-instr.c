/* SPDX-License-Identifier: MIT */
/*
 * first-instr.c: the time from launching a command to a sandboxed
 * program's first instruction, for tests/bench/startup.
 *
 *   first-instr probe          print CLOCK_MONOTONIC in ns and exit
 *   first-instr launch CMD...  run CMD with stdout on a pipe; print the ms
 *                              between just before exec'ing CMD and the
 *                              first number CMD (some probe inside it)
 *                              writes, then wait for CMD
 *   first-instr trace CMD...   the same, and the steps CMD reports on
 *                              stderr as "cloister: trace MS STEP" lines
 *                              (CLOISTER_TRACE_STARTUP), as ms since launch
 *
 * The probe is built static and without libc (see meson.build): its
 * _start reads the clock before anything else, so no dynamic linking, no
 * libc start-up and no page faults of a larger binary are counted.
 * CLOCK_MONOTONIC is the same clock in every namespace but a time
 * namespace, which neither bubblewrap nor cloister makes.
 */
#ifdef FIRST_INSTR_PROBE
#include <asm/unistd.h>
#include <linux/time.h>

static long sys3(long n, long a, long b, long c)
{
        long r;

        __asm__ volatile("syscall"
                         : "=a"(r)
                         : "a"(n), "D"(a), "S"(b), "d"(c)
                         : "rcx", "r11", "memory");
        return r;
}

__attribute__((noreturn, used)) void probe_main(void);
__attribute__((noreturn, used)) void probe_main(void)
{
        struct timespec ts;
        char buf[24];
        int i = sizeof(buf);
        unsigned long long v;

        sys3(__NR_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0);
        v = (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
        buf[--i] = '\n';
        do
                buf[--i] = (char)('0' + v % 10);
        while ((v /= 10) && i > 0);
        sys3(__NR_write, 1, (long)(buf + i), (long)(sizeof(buf) - (unsigned)i));
        for (;;)
                sys3(__NR_exit_group, 0, 0, 0);
}

/* The stack is 16-byte aligned at _start; a call makes it what C expects. */
__asm__(".globl _start\n_start:\n\txor %rbp, %rbp\n\tcall probe_main\n\thlt\n");

#else /* the launcher */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* Append what fd has to buf (of size cap); false on EOF or error. */
static bool slurp(int fd, char *buf, size_t cap, size_t *len)
{
        char sink[4096];
        ssize_t n;

        if (*len + 1 < cap)
                n = read(fd, buf + *len, cap - 1 - *len);
        else
                n = read(fd, sink, sizeof(sink)); /* full: keep draining */
        if (n < 0 && errno == EINTR)
                return true;
        if (n <= 0)
                return false;
        if (*len + 1 < cap)
                *len += (size_t)n;
        buf[*len] = '\0';
        return true;
}

/* The "cloister: trace MS STEP" lines of err, as ms since t0. */
static void trace_print(const char *err, double t0_ms, double t1_ms)
{
        double prev = t0_ms;
        const char *l = err;

        while (l && *l) {
                const char *nl = strchr(l, '\n');
                double ms;
                int off = 0;

                if (sscanf(l, "cloister: trace %lf %n", &ms, &off) == 1 && off > 0) {
                        printf("%8.2f ms (+%6.2f) %.*s\n", ms - t0_ms, ms - prev,
                               (int)((nl ? nl : l + strlen(l)) - (l + off)), l + off);
                        prev = ms;
                }
                l = nl ? nl + 1 : NULL;
        }
        printf("%8.2f ms (+%6.2f) the command's first instruction\n", t1_ms - t0_ms, t1_ms - prev);
}

int main(int argc, char **argv)
{
        static char out[256], err[65536];
        size_t out_len = 0, err_len = 0;
        unsigned long long t0, t1;
        int p[2], e[2] = {-1, -1}, status;
        bool trace;
        pid_t pid;

        if (argc < 3 || (strcmp(argv[1], "launch") != 0 && strcmp(argv[1], "trace") != 0)) {
                fprintf(stderr, "usage: first-instr launch|trace CMD [ARGS...]\n");
                return 2;
        }
        trace = strcmp(argv[1], "trace") == 0;
        if (pipe(p) < 0 || (trace && pipe(e) < 0)) {
                perror("pipe");
                return 1;
        }
        t0 = now_ns(); /* includes the fork, a fraction of a millisecond */
        pid = fork();
        if (pid < 0) {
                perror("fork");
                return 1;
        }
        if (pid == 0) {
                dup2(p[1], 1);
                if (trace)
                        dup2(e[1], 2);
                execvp(argv[2], argv + 2);
                _exit(127);
        }
        close(p[1]);
        if (trace)
                close(e[1]);
        /* stdout until its first line; in trace mode, stderr until EOF. */
        for (bool out_open = true, err_open = trace; out_open || err_open;) {
                struct pollfd f[2] = {{.fd = out_open ? p[0] : -1, .events = POLLIN},
                                      {.fd = err_open ? e[0] : -1, .events = POLLIN}};

                if (poll(f, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        perror("poll");
                        return 1;
                }
                if (f[0].revents &&
                    (!slurp(p[0], out, sizeof(out), &out_len) || memchr(out, '\n', out_len)))
                        out_open = false;
                if (f[1].revents && !slurp(e[0], err, sizeof(err), &err_len))
                        err_open = false;
        }
        close(p[0]);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "first-instr: the command failed (status %d)\n%s", status, err);
                return 1;
        }
        if (sscanf(out, "%llu", &t1) != 1) {
                fprintf(stderr, "first-instr: no timestamp from the command\n");
                return 1;
        }
        if (trace)
                trace_print(err, (double)t0 / 1e6, (double)t1 / 1e6);
        else
                printf("%.3f\n", (double)(t1 - t0) / 1e6);
        return 0;
}
#endif
