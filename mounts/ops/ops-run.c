/* SPDX-License-Identifier: MIT */
/*
 * ops-run.c: a command in a sandbox, its output collected (operations.h).
 *
 * The run is sandbox_session_run(), the very code of `cloister run`, in a
 * child process of ours: a run blocks signals, reads them from a signalfd
 * and changes dispositions, which must not touch a caller that serves
 * several runs on several threads (cloister mcp). The child is forked from
 * a threaded process, so it only calls what is safe there (glibc's malloc
 * is; it never touches the parent's locks or stdio) and its stdin, stdout
 * and stderr are pipes of ours. It writes its result, one JSON line, on a
 * fourth pipe. Stopping it is SIGTERM to the child, which the session
 * takes as `cloister run` takes Ctrl-C: the sandbox's processes get
 * SIGTERM, then SIGKILL, and the run ends with its teardown done.
 *
 * Output is bounded: of each stream, the first OUTPUT_HEAD bytes and the
 * last (max - OUTPUT_HEAD) are kept for the result (the rest is counted);
 * for a background run, what was not yet taken is kept up to max bytes, the
 * oldest dropped first and counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "operations.h"
#include "sandbox.h"
#include "lib/errorf.h"
#include "lib/util.h"

#define OUTPUT_HEAD  (16 * 1024)
#define RESULT_MAX   (64 * 1024)
#define STOP_GRACE_S (SANDBOX_GRACE_SECONDS + 10) /* then the child itself is killed */
/* Without a pidfd: how soon to look again for an exit the result pipe announced. */
#define REAP_RETRY_MS 5

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture */
#endif

extern char **environ;

/* A byte queue of at most cap bytes that drops its oldest bytes. */
struct ring {
        char *buf;
        size_t cap, start, len;
        uint64_t dropped;
};

struct stream {
        int fd;
        uint64_t total;
        char *head; /* the first OUTPUT_HEAD bytes (or fewer) */
        size_t head_len;
        struct ring tail;   /* the last bytes, for the result */
        struct ring unread; /* not yet taken (background runs) */
};

struct ops_run {
        pid_t pid;
        int pidfd;    /* readable once the child has exited; -1 without pidfd_open */
        pid_t writer; /* writes a large stdin, or 0 */
        int result_fd;
        char result[RESULT_MAX + 1];
        size_t result_len;
        struct stream out, err;
        int64_t start_ms, end_ms;
        int64_t stop_at_ms;  /* SIGKILL the child then; -1: not stopping */
        const char *stopped; /* why we stopped it, or NULL */
        bool done;
        int wstatus;
        const struct config *config;           /* the caller's, alive while the run is */
        char runlog_id[OPS_RUNLOG_ID_LEN + 1]; /* its run record; "" if none */
        pid_t child;                           /* pid, kept once it is reaped */
};

static int64_t now_ms(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void ring_push(struct ring *r, const char *p, size_t n)
{
        if (!r->buf || r->cap == 0) {
                r->dropped += n;
                return;
        }
        if (n >= r->cap) {
                r->dropped += r->len + (n - r->cap);
                p += n - r->cap;
                n = r->cap;
                r->start = r->len = 0;
        }
        if (r->len + n > r->cap) {
                size_t drop = r->len + n - r->cap;
                r->start = (r->start + drop) % r->cap;
                r->len -= drop;
                r->dropped += drop;
        }
        for (size_t i = 0; i < n; i++)
                r->buf[(r->start + r->len + i) % r->cap] = p[i];
        r->len += n;
}

/* The ring's bytes, oldest first, malloc'd and NUL-terminated; emptied. */
static char *ring_take(struct ring *r, size_t *ret_len)
{
        char *s = malloc(r->len + 1);

        if (!s)
                return NULL;
        for (size_t i = 0; i < r->len; i++)
                s[i] = r->buf[(r->start + i) % r->cap];
        s[r->len] = '\0';
        *ret_len = r->len;
        r->start = r->len = 0;
        return s;
}

static int stream_init(struct stream *s, int fd, size_t max)
{
        size_t tail = max > OUTPUT_HEAD ? max - OUTPUT_HEAD : max / 2;

        *s = (struct stream){.fd = fd};
        s->head = malloc(MIN((size_t)OUTPUT_HEAD, max) + 1);
        s->tail = (struct ring){.buf = malloc(tail), .cap = tail};
        s->unread = (struct ring){.buf = malloc(max), .cap = max};
        return s->head && s->tail.buf && s->unread.buf ? 0 : -ENOMEM;
}

static void stream_free(struct stream *s)
{
        safe_close(s->fd);
        free(s->head);
        free(s->tail.buf);
        free(s->unread.buf);
}

/* Read what is there; false once the stream is at its end. */
static bool stream_pump(struct stream *s, size_t max)
{
        char buf[16384];
        size_t head_max = MIN((size_t)OUTPUT_HEAD, max);

        while (s->fd >= 0) {
                ssize_t n = read(s->fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return true;
                if (n <= 0) {
                        s->fd = safe_close(s->fd);
                        return false;
                }
                s->total += (uint64_t)n;
                size_t h = MIN((size_t)n, head_max - s->head_len);
                memcpy(s->head + s->head_len, buf, h);
                s->head_len += h;
                if ((size_t)n > h)
                        ring_push(&s->tail, buf + h, (size_t)n - h);
                ring_push(&s->unread, buf, (size_t)n);
        }
        return false;
}

static json_t *stream_result(const struct stream *s)
{
        size_t tail_len = s->tail.len;
        char *all = malloc(s->head_len + tail_len + 64);
        size_t n = 0;
        json_t *j;

        if (!all)
                return NULL;
        memcpy(all, s->head, s->head_len);
        n = s->head_len;
        if (s->tail.dropped)
                n += (size_t)snprintf(all + n, 64, "\n[... %llu bytes left out ...]\n",
                                      (unsigned long long)s->tail.dropped);
        for (size_t i = 0; i < tail_len; i++)
                all[n + i] = s->tail.buf[(s->tail.start + i) % s->tail.cap];
        n += tail_len;
        j = ops_json_text(all, n);
        free(all);
        return j;
}

static void write_all(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return; /* the command stopped reading: what it read is what it got */
                p += w;
                n -= (size_t)w;
        }
}

int ops_run_check_env(const struct config *c, char *const *env, char **ret_error)
{
        size_t n = 0;

        for (char *const *e = env; e && *e; e++, n++) {
                const char *eq = strchr(*e, '=');
                _cleanup_free_ char *name = eq ? strndup(*e, (size_t)(eq - *e)) : NULL;
                if (n >= 256)
                        return errorf(ret_error, -E2BIG, "env: at most 256 variables");
                if (strlen(*e) > 128 * 1024)
                        return errorf(ret_error, -E2BIG, "env: a variable longer than 128 KiB");
                if (!name ||
                    !sandbox_env_name_allowed(name, c->network.mode == CONFIG_NETWORK_PROXY))
                        return errorf(
                                ret_error, -EINVAL,
                                "env: '%.64s' may not be set: a name the sandbox sets itself "
                                "(PATH, HOME, USER, ...), LD_*, CLOISTER_*, a proxy variable, "
                                "or not [A-Za-z_][A-Za-z0-9_]*",
                                name ? name : *e);
        }
        return 0;
}

/* The child: the session of `cloister run`, its stdio our pipes. Never returns. */
static _noreturn_ void child_main(const struct ops_run_options *o, pid_t parent, int in, int out,
                                  int err, int result)
{
        struct config *c = (struct config *)o->config; /* our copy of it, after fork */
        struct sandbox_result res = {0};
        char *error = NULL, *line = NULL;
        const char *script = "cd -- \"$0\" && exec /bin/sh -c \"$1\"";
        char *argv_cwd[] = {(char *)"/bin/sh", (char *)"-c",       (char *)script,
                            (char *)o->cwd,    (char *)o->command, NULL};
        char *argv_plain[] = {(char *)"/bin/sh", (char *)"-c", (char *)o->command, NULL};
        sigset_t none;
        int r;

        /* Our end is the run's: SIGTERM is its teardown, as Ctrl-C is for
         * `cloister run`. ops_run_start() forks from a thread that lives as
         * long as the process (the signal comes when that thread ends). */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
                _exit(125);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        (void)setsid();
        /* fd 3 is ours alone (close-on-exec): its end is the child's end,
         * whatever the daemons the session starts keep of fds 0-2. */
        if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 ||
            dup3(result, 3, O_CLOEXEC) < 0)
                _exit(125);
        (void)syscall(SYS_close_range, 4, ~0U, 0);
        if (o->timeout_s && o->timeout_s < c->limits.timeout)
                c->limits.timeout = o->timeout_s;
        struct sandbox_session_options so = {
                .config_path = o->config_path,
                .config = c,
                .argv = o->cwd ? argv_cwd : argv_plain,
                .host_env = environ,
                .extra_env = o->env,
        };
        r = sandbox_session_run(&so, &res, &error);
        if (r < 0)
                res.status = 125;
        if (asprintf(&line,
                     "{\"r\":%d,\"status\":%d,\"signal\":%d,\"timed_out\":%s,\"memory\":%s,"
                     "\"processes\":%s,\"pid\":%d,\"bwrap_pid\":%d,\"pgid\":%d,"
                     "\"cgroup\":\"%s\"}\n%s\n",
                     r, res.status, res.signal, res.timed_out ? "true" : "false",
                     res.memory_hit ? "true" : "false", res.processes_hit ? "true" : "false",
                     (int)res.pid, (int)res.bwrap_pid, (int)res.pgid,
                     /* cloister-PID-SEQ: digits and letters, nothing to escape */
                     r < 0 ? "" : res.cgroup, error ? error : "") >= 0)
                (void)!write(3, line, strlen(line));
        _exit(0);
}

int ops_run_start(const struct ops_run_options *o, ops_run **ret, char **ret_error)
{
        int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, res[2] = {-1, -1};
        size_t max = o->output_max ? o->output_max : OPS_OUTPUT_MAX_DEFAULT;
        pid_t parent;
        ops_run *r;
        int k;

        if (!o->command || !*o->command)
                return errorf(ret_error, -EINVAL, "command: empty");
        if (strlen(o->command) > 256 * 1024)
                return errorf(ret_error, -E2BIG, "command: longer than 256 KiB");
        if (o->stdin_len > OPS_STDIN_MAX)
                return errorf(ret_error, -E2BIG, "stdin: more than %d bytes", OPS_STDIN_MAX);
        if (o->cwd && (strlen(o->cwd) >= 4096 || !*o->cwd))
                return errorf(ret_error, -EINVAL, "cwd: empty or longer than 4095 bytes");
        k = ops_run_check_env(o->config, o->env, ret_error);
        if (k < 0)
                return k;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->pid = -1;
        r->pidfd = -1;
        r->result_fd = -1;
        r->stop_at_ms = -1;
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
            pipe2(res, O_CLOEXEC) < 0) {
                k = errorf(ret_error, negative_errno(), "pipe: %m");
                goto fail;
        }
        /*
         * The command runs as the agent, not as us: a pipe is its creator's
         * and mode 0600, so `echo x >/dev/stderr` (an open of
         * /proc/self/fd/2) would fail for it. Others may write to the
         * output pipes and read stdin's, and only that; reaching them at
         * all takes our /proc/PID/fd, which the sandbox does not show.
         */
        (void)fchmod(out[1], 0622);
        (void)fchmod(err[1], 0622);
        (void)fchmod(in[0], 0644);
        if (stream_init(&r->out, out[0], max) < 0 || stream_init(&r->err, err[0], max) < 0) {
                k = -ENOMEM;
                goto fail;
        }
        out[0] = err[0] = -1;
        r->result_fd = res[0];
        res[0] = -1;
        r->config = o->config;
        {
                /* Recorded before it runs: a command the record cannot hold does not run. */
                char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)o->command, NULL};
                struct ops_runlog_start rs = {
                        .source = o->source ? o->source : "mcp",
                        .argv = argv,
                        .cwd = o->cwd ? o->cwd : o->config->repo.path,
                        .env = o->env,
                        .start_ms = ops_runlog_now_ms(),
                };
                k = ops_runlog_begin(o->config, &rs, r->runlog_id, ret_error);
                if (k < 0)
                        goto fail;
        }
        r->start_ms = now_ms();
        parent = getpid();
        r->child = r->pid = fork();
        if (r->pid < 0) {
                k = errorf(ret_error, negative_errno(), "fork: %m");
                goto fail;
        }
        if (r->pid == 0) {
                close(in[1]);
                child_main(o, parent, in[0], out[1], err[1], res[1]);
        }
        /*
         * The child's exit, as an fd the caller polls: the result pipe's
         * end comes just before the exit, and nothing else would wake a
         * caller that waits for the exit itself (issue 46: a second's
         * stall). Before Linux 5.3 there is none: ops_run_timeout_ms()
         * then asks to be called again soon, while only the exit is
         * awaited. (A pidfd is close-on-exec.)
         */
        r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
        if (r->pidfd < 0)
                r->pidfd = -1;
        safe_close(in[0]);
        safe_close(out[1]);
        safe_close(err[1]);
        safe_close(res[1]);
        /* stdin: written now if it fits the pipe (64 KiB), else by a writer
         * process of its own, so that we never block on a command that does
         * not read it. */
        if (o->stdin_data && o->stdin_len > 60000) {
                r->writer = fork();
                if (r->writer == 0) {
                        write_all(in[1], o->stdin_data, o->stdin_len);
                        _exit(0);
                }
        } else if (o->stdin_data) {
                write_all(in[1], o->stdin_data, o->stdin_len);
        }
        safe_close(in[1]);
        (void)fcntl(r->out.fd, F_SETFL, O_NONBLOCK);
        (void)fcntl(r->err.fd, F_SETFL, O_NONBLOCK);
        (void)fcntl(r->result_fd, F_SETFL, O_NONBLOCK);
        *ret = r;
        return 0;
fail:
        safe_close(in[0]);
        safe_close(in[1]);
        safe_close(out[0]);
        safe_close(out[1]);
        safe_close(err[0]);
        safe_close(err[1]);
        safe_close(res[0]);
        safe_close(res[1]);
        ops_run_free(r);
        return k;
}

void ops_run_fds(const ops_run *r, int fds[OPS_RUN_FDS])
{
        fds[0] = r->out.fd;
        fds[1] = r->err.fd;
        fds[2] = r->result_fd;
        fds[3] = r->pid > 0 ? r->pidfd : -1;
}

int ops_run_timeout_ms(const ops_run *r)
{
        /* Only the exit is awaited, and no fd says when it comes. */
        if (!r->done && r->result_fd < 0 && r->pid > 0 && r->pidfd < 0)
                return REAP_RETRY_MS;
        return -1;
}

/* The run's end in its record, from the child's result line. A failure is
 * not the command's: its result stands, and the record shows a start
 * without an end. */
static void runlog_finish(ops_run *r)
{
        _cleanup_(json_decrefp) json_t *line = NULL;
        _cleanup_free_ char *ignored = NULL;
        const char *nl = strchr(r->result, '\n');
        json_t *res;

        if (!r->runlog_id[0] || !r->config)
                return;
        line = nl ? json_loadb(r->result, (size_t)(nl - r->result), 0, NULL) : NULL;
        res = ops_run_result(r);
        struct ops_runlog_finish f = {
                .end_ms = ops_runlog_now_ms(),
                .exit_code = (int)json_integer_value(json_object_get(res, "exit_code")),
                .signal = (int)json_integer_value(json_object_get(line, "signal")),
                .timed_out = json_is_true(json_object_get(res, "timed_out")),
                .stopped = r->stopped,
                .stdout_bytes = (int64_t)r->out.total,
                .stderr_bytes = (int64_t)r->err.total,
                .pid = (pid_t)json_integer_value(json_object_get(line, "pid")),
                .bwrap_pid = (pid_t)json_integer_value(json_object_get(line, "bwrap_pid")),
                .pgid = (pid_t)json_integer_value(json_object_get(line, "pgid")),
                .runner_pid = r->child,
                .cgroup = json_string_value(json_object_get(line, "cgroup")),
                .error = json_string_value(json_object_get(res, "error")),
        };
        (void)ops_runlog_end(r->config, r->runlog_id, &f, &ignored);
        json_decref(res);
}

int ops_run_pump(ops_run *r)
{
        size_t max = r->out.unread.cap;

        if (r->done)
                return 1;
        (void)stream_pump(&r->out, max);
        (void)stream_pump(&r->err, max);
        while (r->result_fd >= 0) {
                ssize_t n =
                        read(r->result_fd, r->result + r->result_len, RESULT_MAX - r->result_len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n <= 0 || r->result_len + (size_t)n >= RESULT_MAX) {
                        if (n > 0)
                                r->result_len += (size_t)n;
                        r->result_fd = safe_close(r->result_fd);
                        break;
                }
                r->result_len += (size_t)n;
        }
        /* Stopping: the child gets its grace, then it is killed outright. */
        if (r->stop_at_ms >= 0 && now_ms() >= r->stop_at_ms && r->pid > 0) {
                (void)kill(r->pid, SIGKILL);
                r->stop_at_ms = -1;
        }
        /*
         * The run has ended when the child has: the result pipe is at its
         * end and the child reaped. Not when stdout and stderr are at
         * theirs: the broker or the proxy that the run started (they
         * outlive it, for the workspace's next run) hold their write ends.
         * What the sandbox wrote is in the pipes by then; read it, and stop.
         * The child is reaped as soon as it has exited, whatever the pipe
         * says: its pidfd stays readable until then, and must not be left
         * in a caller's poll set (it would spin).
         */
        if (r->pid > 0) {
                pid_t w = waitpid(r->pid, &r->wstatus, WNOHANG);
                if (w != 0) { /* reaped (or not ours to reap: as good as) */
                        r->pid = -1;
                        r->pidfd = safe_close(r->pidfd);
                }
        }
        if (r->result_fd >= 0 || r->pid > 0)
                return 0;
        (void)stream_pump(&r->out, max);
        (void)stream_pump(&r->err, max);
        r->out.fd = safe_close(r->out.fd);
        r->err.fd = safe_close(r->err.fd);
        r->result[r->result_len] = '\0';
        r->end_ms = now_ms();
        r->done = true;
        runlog_finish(r);
        return 1;
}

void ops_run_stop(ops_run *r, const char *why)
{
        if (!r || r->done || r->pid <= 0 || r->stopped)
                return;
        r->stopped = why;
        (void)kill(r->pid, SIGTERM);
        r->stop_at_ms = now_ms() + STOP_GRACE_S * 1000;
}

int64_t ops_run_elapsed_ms(const ops_run *r)
{
        return (r->done ? r->end_ms : now_ms()) - r->start_ms;
}

json_t *ops_run_result(const ops_run *r)
{
        _cleanup_(json_decrefp) json_t *line = NULL;
        json_t *o, *limits;
        const char *nl = strchr(r->result, '\n');
        int code = 125, rr = -EIO;
        bool timed_out = false;

        if (!r->done)
                return NULL;
        line = nl ? json_loadb(r->result, (size_t)(nl - r->result), 0, NULL) : NULL;
        if (line) {
                rr = (int)json_integer_value(json_object_get(line, "r"));
                code = (int)json_integer_value(json_object_get(line, "status"));
                timed_out = json_is_true(json_object_get(line, "timed_out"));
        } else if (WIFSIGNALED(r->wstatus)) {
                code = 128 + WTERMSIG(r->wstatus);
        }
        limits = json_array();
        if (timed_out || (r->stopped && streq(r->stopped, "timeout")))
                json_array_append_new(limits, json_string("timeout"));
        if (json_is_true(json_object_get(line, "memory")))
                json_array_append_new(limits, json_string("memory"));
        if (json_is_true(json_object_get(line, "processes")))
                json_array_append_new(limits, json_string("processes"));
        if (r->out.tail.dropped || r->err.tail.dropped)
                json_array_append_new(limits, json_string("output"));
        o = json_pack("{s:i, s:o, s:o, s:I, s:b, s:I, s:I, s:b, s:o, s:o}", "exit_code", code,
                      "stdout", stream_result(&r->out), "stderr", stream_result(&r->err),
                      "duration_ms", (json_int_t)(r->end_ms - r->start_ms), "truncated",
                      r->out.tail.dropped || r->err.tail.dropped, "stdout_bytes",
                      (json_int_t)r->out.total, "stderr_bytes", (json_int_t)r->err.total,
                      "timed_out", timed_out || (r->stopped && streq(r->stopped, "timeout")),
                      "stopped", r->stopped ? json_string(r->stopped) : json_null(), "limits_hit",
                      limits);
        /* Nothing ran: the reason, as `cloister run` says it. */
        if (o && rr < 0 && nl && nl[1])
                json_object_set_new(o, "error", ops_json_text(nl + 1, strcspn(nl + 1, "\n")));
        return o;
}

json_t *ops_run_take_output(ops_run *r)
{
        size_t no = 0, ne = 0;
        _cleanup_free_ char *out = ring_take(&r->out.unread, &no);
        _cleanup_free_ char *err = ring_take(&r->err.unread, &ne);
        uint64_t dropped = r->out.unread.dropped + r->err.unread.dropped;
        json_t *o;

        r->out.unread.dropped = r->err.unread.dropped = 0;
        o = json_pack("{s:o, s:o, s:I, s:b}", "stdout", ops_json_text(out ? out : "", no), "stderr",
                      ops_json_text(err ? err : "", ne), "dropped", (json_int_t)dropped, "running",
                      !r->done);
        if (o && r->done) {
                json_t *res = ops_run_result(r);
                json_object_set(o, "exit_code", json_object_get(res, "exit_code"));
                json_object_set(o, "duration_ms", json_object_get(res, "duration_ms"));
                json_object_set(o, "timed_out", json_object_get(res, "timed_out"));
                json_object_set(o, "stopped", json_object_get(res, "stopped"));
                json_object_set(o, "limits_hit", json_object_get(res, "limits_hit"));
                json_decref(res);
        }
        return o;
}

void ops_run_free(ops_run *r)
{
        if (!r)
                return;
        if (r->pid > 0) {
                int st;
                if (!r->done && !r->stopped)
                        ops_run_stop(r, "killed");
                /* Its teardown takes up to the grace; then it is killed. */
                for (int64_t until = now_ms() + STOP_GRACE_S * 1000;
                     waitpid(r->pid, &st, WNOHANG) == 0;) {
                        if (now_ms() >= until) {
                                (void)kill(r->pid, SIGKILL);
                                (void)waitpid(r->pid, &st, 0);
                                break;
                        }
                        usleep(20000);
                }
        }
        if (r->writer > 0) {
                (void)kill(r->writer, SIGKILL);
                (void)waitpid(r->writer, NULL, 0);
        }
        stream_free(&r->out);
        stream_free(&r->err);
        safe_close(r->result_fd);
        safe_close(r->pidfd);
        free(r);
}
