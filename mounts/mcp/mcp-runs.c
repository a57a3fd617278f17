/* SPDX-License-Identifier: MIT */
/*
 * mcp-runs.c: run_command, run_output and run_kill. The runs live in the
 * server's loop (mcp-private.h says why): it starts them, reads their
 * output as it comes, sends progress while they run, and answers for them
 * when they end. A run in the foreground is answered by its result; one in
 * the background is answered at once with its run_id, keeps its unread
 * output (bounded, the oldest dropped first and counted) and is forgotten
 * once its end has been read.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "mcp-private.h"
#include "lib/util.h"

#define PROGRESS_EVERY_MS 1000

static size_t count(const struct mcp_server *s, bool background_only)
{
        size_t n = 0;

        for (const struct mcp_run *r = s->runs; r; r = r->next)
                if (background_only ? r->background : !r->ended)
                        n++;
        return n;
}

size_t mcp_runs_live(const struct mcp_server *s, size_t ws)
{
        size_t n = 0;

        for (const struct mcp_run *r = s->runs; r; r = r->next)
                if (!r->ended && r->ws == ws)
                        n++;
        return n;
}

static void run_free(struct mcp_server *s, struct mcp_run *run)
{
        for (struct mcp_run **p = &s->runs; *p; p = &(*p)->next)
                if (*p == run) {
                        *p = run->next;
                        break;
                }
        ops_run_free(run->r);
        json_decref(run->reply_id);
        json_decref(run->progress_token);
        free(run);
}

static struct mcp_run *run_find(struct mcp_server *s, const char *id)
{
        char *end;
        unsigned long n;

        if (!id || !startswith(id, "run-"))
                return NULL;
        errno = 0;
        n = strtoul(id + 4, &end, 10);
        if (errno || *end || end == id + 4)
                return NULL;
        for (struct mcp_run *r = s->runs; r; r = r->next)
                if (r->n == n && r->background)
                        return r;
        return NULL;
}

/* For a client that reads only text: the output, as a terminal would show it. */
static char *run_text(json_t *o)
{
        const char *out = json_string_value(json_object_get(o, "stdout"));
        const char *err = json_string_value(json_object_get(o, "stderr"));
        const char *error = json_string_value(json_object_get(o, "error"));
        const char *stopped = json_string_value(json_object_get(o, "stopped"));
        json_t *code = json_object_get(o, "exit_code");
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (!f)
                return NULL;
        if (error)
                fprintf(f, "nothing was run: %s\n", error);
        if (json_is_true(json_object_get(o, "running")))
                fprintf(f, "%s: still running", json_string_value(json_object_get(o, "run_id")));
        else if (json_is_integer(code))
                fprintf(f, "exit code %" JSON_INTEGER_FORMAT, json_integer_value(code));
        if (json_is_integer(json_object_get(o, "duration_ms")))
                fprintf(f, " after %" JSON_INTEGER_FORMAT " ms",
                        json_integer_value(json_object_get(o, "duration_ms")));
        if (json_is_true(json_object_get(o, "timed_out")))
                fprintf(f, "; timed out");
        else if (stopped)
                fprintf(f, "; stopped (%s)", stopped);
        if (json_is_true(json_object_get(o, "truncated")))
                fprintf(f, "; output truncated (its first and last bytes are kept)");
        if (json_integer_value(json_object_get(o, "dropped")) > 0)
                fprintf(f, "; %" JSON_INTEGER_FORMAT " bytes of output were not read in time",
                        json_integer_value(json_object_get(o, "dropped")));
        fputc('\n', f);
        if (out && *out)
                fprintf(f, "--- stdout ---\n%s%s", out, out[strlen(out) - 1] == '\n' ? "" : "\n");
        if (err && *err)
                fprintf(f, "--- stderr ---\n%s%s", err, err[strlen(err) - 1] == '\n' ? "" : "\n");
        fclose(f);
        return text;
}

static json_t *run_result(json_t *o, struct mcp_run *run)
{
        char id[32];
        _cleanup_free_ char *text = NULL;

        if (!o)
                return mcp_result_error("out of memory");
        snprintf(id, sizeof(id), "run-%lu", run->n);
        json_object_set_new(o, "run_id", json_string(id));
        if (!json_object_get(o, "running"))
                json_object_set_new(o, "running", json_boolean(!run->ended));
        text = run_text(o);
        return mcp_result(o, text);
}

/* The rest of a background run's output; forgets the run once its end is read. */
static json_t *run_take(struct mcp_server *s, struct mcp_run *run)
{
        json_t *res = run_result(ops_run_take_output(run->r), run);

        if (run->ended)
                run_free(s, run);
        return res;
}

static json_t *run_command(struct mcp_server *s, size_t ws, json_t *args, json_t *id,
                           json_t *progress_token)
{
        const struct config *c = s->ws[ws].c;
        json_t *env = json_object_get(args, "env"), *in = json_object_get(args, "stdin"), *v;
        const char *cwd = json_string_value(json_object_get(args, "cwd")), *key;
        bool background = json_is_true(json_object_get(args, "background"));
        _cleanup_free_ char *cwd_abs = NULL, *error = NULL;
        _cleanup_(strv_freep) char **envv = NULL;
        struct mcp_run *run, *oldest = NULL;
        size_t n = 0;
        int r;

        if (count(s, false) >= s->o->runs_max)
                return mcp_result_error("%u commands are running, the most this server runs at "
                                        "once: wait for one to end, or run_kill a background run",
                                        s->o->runs_max);
        if (background && count(s, true) >= s->o->background_max) {
                /* Room is made by forgetting the oldest background run that
                 * has ended, once this one has started: a call refused (a bad
                 * env name, a cwd outside) forgets nothing. */
                for (struct mcp_run *x = s->runs; x; x = x->next)
                        if (x->background && x->ended && !x->reply_id)
                                oldest = x;
                if (!oldest)
                        return mcp_result_error("%u background runs are live, the most this "
                                                "server keeps: run_kill one first",
                                                s->o->background_max);
        }
        if (json_is_object(env)) {
                envv = calloc(json_object_size(env) + 1, sizeof(char *));
                if (!envv)
                        return mcp_result_error("out of memory");
                json_object_foreach (env, key, v) {
                        /* NAME=VALUE is split at the first '=': a name can't hold one. */
                        if (!*key || strchr(key, '='))
                                return mcp_result_error("env: '%.64s' is not a variable name", key);
                        if (asprintf(&envv[n], "%s=%s", key, json_string_value(v)) < 0) {
                                envv[n] = NULL;
                                return mcp_result_error("out of memory");
                        }
                        n++;
                }
        }
        /* A relative cwd is the agent's: below the repository, as in a shell there. */
        if (cwd && cwd[0] != '/' && asprintf(&cwd_abs, "%s/%s", c->repo.path, cwd) < 0)
                return mcp_result_error("out of memory");
        struct ops_run_options o = {
                .config = c,
                .config_path = s->ws[ws].config_path,
                .command = json_string_value(json_object_get(args, "command")),
                .cwd = cwd_abs ? cwd_abs : cwd,
                .env = envv,
                .stdin_data = json_string_value(in),
                .stdin_len = in ? json_string_length(in) : 0,
                .timeout_s =
                        (uint64_t)(json_is_integer(json_object_get(args, "timeout_s"))
                                           ? json_integer_value(json_object_get(args, "timeout_s"))
                                           : 0),
                .output_max = s->o->output_max,
                .source = background ? "mcp_background" : "mcp",
        };
        /* Without the hold, each run would mount and, as the last one
         * to end, unmount: a fresh home every command (issue 46). */
        r = mcp_ws_hold(s, ws, false, &error);
        if (r < 0)
                return mcp_result_error("%s", error ? error : strerror(-r));
        run = calloc(1, sizeof(*run));
        if (!run)
                return mcp_result_error("out of memory");
        r = ops_run_start(&o, &run->r, &error);
        if (r < 0) {
                free(run);
                return mcp_result_error("%s", error ? error : strerror(-r));
        }
        if (oldest) {
                mcp_logf(s, "cloister mcp: forgetting run-%lu (ended, its output unread)",
                         oldest->n);
                run_free(s, oldest);
        }
        run->n = s->next_run++;
        run->ws = ws;
        run->background = background;
        run->next = s->runs;
        s->runs = run;
        mcp_logf(s, "cloister mcp: run-%lu started in '%s'%s", run->n, c->workspace.name,
                 background ? " (background)" : "");
        if (background)
                return run_result(json_pack("{s:b}", "running", 1), run);
        run->reply_id = json_incref(id);
        run->reply_result = true;
        if (json_is_string(progress_token) || json_is_integer(progress_token)) {
                run->progress_token = json_incref(progress_token);
                run->progress_next_ms = mcp_now_ms() + PROGRESS_EVERY_MS;
        }
        return NULL;
}

json_t *mcp_runs_call(struct mcp_server *s, const char *name, size_t ws, json_t *args, json_t *id,
                      json_t *progress_token)
{
        const char *run_id = json_string_value(json_object_get(args, "run_id"));
        struct mcp_run *run;

        if (streq(name, "run_command"))
                return run_command(s, ws, args, id, progress_token);
        run = run_find(s, run_id);
        if (!run || run->ws != ws)
                return mcp_result_error("no background run '%.64s' in this workspace (a run_id "
                                        "comes from run_command with background: true, and is "
                                        "forgotten once its end has been read)",
                                        run_id ? run_id : "");
        if (run->reply_id)
                return mcp_result_error("%s is being stopped already", run_id);
        if (streq(name, "run_output") || run->ended)
                return run_take(s, run);
        /* run_kill: answered when it has ended, with the rest of its output. */
        ops_run_stop(run->r, "killed");
        run->reply_id = json_incref(id);
        run->reply_result = false;
        return NULL;
}

size_t mcp_runs_fds(const struct mcp_server *s, int *fds, size_t max)
{
        size_t n = 0;

        for (const struct mcp_run *r = s->runs; r; r = r->next) {
                int some[OPS_RUN_FDS];
                if (r->ended)
                        continue;
                ops_run_fds(r->r, some);
                for (int i = 0; i < OPS_RUN_FDS && n < max; i++)
                        if (some[i] >= 0)
                                fds[n++] = some[i];
        }
        return n;
}

static void progress_send(struct mcp_server *s, struct mcp_run *run)
{
        _cleanup_free_ char *msg = NULL;

        if (asprintf(&msg, "running for %" PRId64 " s", ops_run_elapsed_ms(run->r) / 1000) < 0)
                msg = NULL;
        /* progress only grows: the count of notifications sent. */
        mcp_send(s,
                 json_pack("{s:s, s:s, s:{s:O, s:I, s:s}}", "jsonrpc", "2.0", "method",
                           "notifications/progress", "params", "progressToken", run->progress_token,
                           "progress", ++run->progress, "message", msg ? msg : "running"));
}

int mcp_runs_pump(struct mcp_server *s)
{
        int64_t now = mcp_now_ms();
        int timeout = -1;

        for (struct mcp_run *run = s->runs, *next; run; run = next) {
                next = run->next;
                if (run->ended)
                        continue;
                if (ops_run_pump(run->r) != 1) {
                        int soon = ops_run_timeout_ms(run->r);
                        if (run->progress_token && now >= run->progress_next_ms) {
                                progress_send(s, run);
                                run->progress_next_ms = now + PROGRESS_EVERY_MS;
                        }
                        /* Wake up for progress, and for a stop's deadline (ops_run_pump);
                         * the run's end wakes us through its fds (ops_run_fds). */
                        if (timeout < 0 || timeout > PROGRESS_EVERY_MS)
                                timeout = PROGRESS_EVERY_MS;
                        if (soon >= 0 && soon < timeout)
                                timeout = soon;
                        continue;
                }
                run->ended = true;
                mcp_logf(s, "cloister mcp: run-%lu ended", run->n);
                if (run->reply_id) {
                        json_t *id = json_incref(run->reply_id);
                        json_t *res = run->reply_result
                                              ? run_result(ops_run_result(run->r), run)
                                              : run_result(ops_run_take_output(run->r), run);
                        mcp_reply(s, id, res);
                        json_decref(id);
                        run_free(s, run); /* a foreground run, or a killed one: all is said */
                } else if (!run->background) {
                        run_free(s, run); /* cancelled: nobody waits for it */
                }
        }
        return timeout;
}

bool mcp_runs_cancel(struct mcp_server *s, json_t *id)
{
        for (struct mcp_run *run = s->runs; run; run = run->next)
                if (run->reply_id && json_equal(run->reply_id, id)) {
                        /* A cancelled run_kill still stops the run; only its answer goes. */
                        if (run->reply_result)
                                ops_run_stop(run->r, "cancelled");
                        json_decref(run->reply_id);
                        run->reply_id = NULL;
                        mcp_logf(s, "cloister mcp: run-%lu: its request was cancelled", run->n);
                        return true;
                }
        return false;
}

void mcp_runs_stop_all(struct mcp_server *s)
{
        for (struct mcp_run *run = s->runs; run; run = run->next)
                if (!run->ended)
                        ops_run_stop(run->r, "killed");
        /* ops_run_pump() kills a run that outlasts its grace: this ends. */
        while (count(s, false) > 0) {
                struct pollfd pfd[OPS_RUN_FDS * MCP_RUNS_MAX];
                int fds[OPS_RUN_FDS * MCP_RUNS_MAX];
                size_t n = mcp_runs_fds(s, fds, ELEMENTSOF(fds));
                for (size_t i = 0; i < n; i++)
                        pfd[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
                (void)poll(pfd, n, 200);
                (void)mcp_runs_pump(s);
        }
        while (s->runs)
                run_free(s, s->runs);
}
