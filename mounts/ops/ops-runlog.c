/* SPDX-License-Identifier: MIT */
/*
 * ops-runlog.c: the run record, <state>/runs.jsonl (operations.h).
 *
 * Every command started in a workspace (`cloister run`, `shell`, MCP
 * run_command) gets two lines: "run_start" before the sandbox is built
 * (what was asked: argv, cwd, environment names, the front end) and
 * "run_end" once it is gone (exit code or signal, timed_out, output sizes,
 * the pids the host saw, and the sandbox's own cgroup, which the journal
 * names in every entry its processes made: the report's exact join). Both carry the same "run" id,
 * so a run whose end was never written (its runner killed) still shows. The file is chained and
 * headed by the audit log's own code (broker/audit.c: "seq", "prev", "hash", runs.head), so
 * `cloister audit verify` and `cloister log --runs` find an edited, reordered or cut line; and it
 * is bounded by [limits] runlog the same way (one audit_full line, then appends fail).
 *
 * Trust: the record lives in the state directory, which the sandbox never
 * sees; everything in it that the agent chose (argv, cwd, names) is data,
 * stored as JSON text (invalid UTF-8 replaced, NUL as a space) and cut at
 * RUNLOG_ARGV_MAX bytes. Several processes append (runs of one workspace
 * in parallel, cloister mcp): each append holds runlog.lock, opens the log
 * at its end (checking its last line against runs.head), writes one line
 * and closes it.
 *
 * The write side (begin, end) is linked into the `cloister` binary itself
 * (mounts/ops/meson.build: libcloister_runlog), so that `cloister run`
 * records its command without loading cloister-commands.so.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "broker/audit.h"
#include "config.h"
#include "image.h"
#include "operations.h"
#include "lib/mkdir.h"
#include "lib/util.h"

/* Not runs.lock: that is lib/lifetime.h's, held shared by every live run. */
#define RUNLOG_LOCK "runlog.lock"

int64_t ops_runlog_now_ms(void)
{
        struct timespec t;

        clock_gettime(CLOCK_REALTIME, &t);
        return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Hold runlog.lock, open the chain at its end and append entry. Only the
 * end is read (broker_audit_open_tail: the last line and runs.head), so a
 * run's cost does not grow with the record; a record cut or edited at its
 * end is refused, and an edit further back stays for `audit verify` and
 * `log --runs` to find, since every later line chains past it.
 */
static int runlog_append(const struct config *c, json_t *entry, char **ret_error)
{
        _cleanup_close_ int dfd = -1, lock = -1;
        _cleanup_free_ char *error = NULL;
        broker_audit *a = NULL;
        int r;

        r = mkdir_p(c->workspace.state, 0755, 0700);
        if (r < 0)
                goto fail;
        dfd = open(c->workspace.state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                r = negative_errno();
                goto fail;
        }
        lock = openat(dfd, RUNLOG_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (lock < 0 || flock(lock, LOCK_EX) < 0) {
                r = negative_errno();
                goto fail;
        }
        r = broker_audit_open_tail(dfd, c->workspace.state, OPS_RUNLOG_FILE, OPS_RUNLOG_HEAD, &a,
                                   &error);
        if (r < 0) {
                if (ret_error) {
                        *ret_error = TAKE_PTR(error);
                        if (!*ret_error && asprintf(ret_error, "%s/%s: %s", c->workspace.state,
                                                    OPS_RUNLOG_FILE, strerror(-r)) < 0)
                                *ret_error = NULL;
                }
                return r;
        }
        broker_audit_set_max(a, c->limits.runlog ? c->limits.runlog : OPS_RUNLOG_MAX_DEFAULT);
        /* Full since an earlier process wrote its audit_full line (the
         * record's last): -EDQUOT, one such line, ever. */
        r = broker_audit_append(a, entry, time(NULL));
        if (r == 0)
                r = broker_audit_sync_head(a);
        broker_audit_free(a);
        if (r == -EDQUOT) {
                if (ret_error &&
                    asprintf(ret_error,
                             "%s/%s: the run record is full ([limits] runlog = %llu bytes); "
                             "move it aside after review, or raise the bound",
                             c->workspace.state, OPS_RUNLOG_FILE,
                             (unsigned long long)c->limits.runlog) < 0)
                        *ret_error = NULL;
                return r;
        }
        if (r >= 0)
                return 0;
fail:
        if (ret_error && asprintf(ret_error, "%s/%s: cannot write the run record: %s",
                                  c->workspace.state, OPS_RUNLOG_FILE, strerror(-r)) < 0)
                *ret_error = NULL;
        return r;
}

/* argv as JSON text, at most RUNLOG_ARGV_MAX bytes of it in all. */
static json_t *argv_json(char *const *argv, bool *ret_cut)
{
        json_t *a = json_array();
        size_t left = OPS_RUNLOG_ARGV_MAX;

        *ret_cut = false;
        for (size_t i = 0; a && argv && argv[i]; i++) {
                size_t n = strlen(argv[i]);
                if (n > left || i >= OPS_RUNLOG_NAMES_MAX) {
                        *ret_cut = true;
                        n = i >= OPS_RUNLOG_NAMES_MAX ? 0 : left;
                        if (n)
                                json_array_append_new(a, ops_json_text(argv[i], n));
                        break;
                }
                left -= n;
                json_array_append_new(a, ops_json_text(argv[i], n));
        }
        return a;
}

/* The names of NAME=VALUE (or NAME) strings; never a value. */
static json_t *env_names_json(char *const *env)
{
        json_t *a = json_array();

        for (size_t i = 0; a && env && env[i] && i < OPS_RUNLOG_NAMES_MAX; i++) {
                size_t n = strcspn(env[i], "=");
                json_array_append_new(a, ops_json_text(env[i], MIN(n, (size_t)256)));
        }
        return a;
}

/* [image]: the digest the run is on, as known now (the end says it again, after the mount). */
static void image_set(const struct config *c, json_t *e)
{
        char digest[IMAGE_DIGEST_LEN + 1];

        if (image_workspace_digest(c, digest) == 0)
                json_object_set_new(e, "image", json_string(digest));
}

int ops_runlog_begin(const struct config *c, const struct ops_runlog_start *s,
                     char ret_id[OPS_RUNLOG_ID_LEN + 1], char **ret_error)
{
        _cleanup_(json_decrefp) json_t *e = NULL;
        unsigned char raw[OPS_RUNLOG_ID_LEN / 2];
        char id[OPS_RUNLOG_ID_LEN + 1];
        bool cut = false;
        int r;

        randombytes_buf(raw, sizeof(raw));
        sodium_bin2hex(id, sizeof(id), raw, sizeof(raw));
        e = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:I}", "event", "run_start", "run", id,
                      "source", s->source, "argv", argv_json(s->argv, &cut), "cwd",
                      s->cwd ? ops_json_text(s->cwd, strlen(s->cwd)) : json_null(), "env",
                      env_names_json(s->env), "start_ms", (json_int_t)s->start_ms);
        if (!e)
                return -ENOMEM;
        if (cut)
                json_object_set_new(e, "argv_cut", json_true());
        image_set(c, e);
        r = runlog_append(c, e, ret_error);
        if (r < 0)
                return r;
        memcpy(ret_id, id, sizeof(id));
        return 0;
}

int ops_runlog_end(const struct config *c, const char *id, const struct ops_runlog_finish *f,
                   char **ret_error)
{
        _cleanup_(json_decrefp) json_t *e = NULL;

        e = json_pack(
                "{s:s, s:s, s:I, s:i, s:o, s:b, s:o, s:o, s:o, s:o, s:o}", "event", "run_end",
                "run", id, "end_ms", (json_int_t)f->end_ms, "exit_code", f->exit_code, "signal",
                f->signal ? json_integer(f->signal) : json_null(), "timed_out", f->timed_out,
                "stdout_bytes", f->stdout_bytes >= 0 ? json_integer(f->stdout_bytes) : json_null(),
                "stderr_bytes", f->stderr_bytes >= 0 ? json_integer(f->stderr_bytes) : json_null(),
                "pid", f->pid > 0 ? json_integer(f->pid) : json_null(), "bwrap_pid",
                f->bwrap_pid > 0 ? json_integer(f->bwrap_pid) : json_null(), "pgid",
                f->pgid > 0 ? json_integer(f->pgid) : json_null());
        if (!e)
                return -ENOMEM;
        if (f->runner_pid > 0)
                json_object_set_new(e, "runner_pid", json_integer(f->runner_pid));
        /* Known only now: made after the start line, gone with the sandbox. Ours, but
         * bounded and checked all the same (journal_cgroup_parse's names). */
        if (f->cgroup && *f->cgroup && strlen(f->cgroup) < 32 &&
            strspn(f->cgroup, "cloister-0123456789") == strlen(f->cgroup))
                json_object_set_new(e, "cgroup", json_string(f->cgroup));
        if (f->error)
                json_object_set_new(e, "error", ops_json_text(f->error, strlen(f->error)));
        if (f->stopped)
                json_object_set_new(e, "stopped", json_string(f->stopped));
        return (image_set(c, e), runlog_append(c, e, ret_error));
}

/* Fold one log line into the runs so far (an array, in start order). */
static void runs_fold(json_t *runs, json_t *byid, json_t *line)
{
        const char *ev = json_string_value(json_object_get(line, "event"));
        const char *id = json_string_value(json_object_get(line, "run"));
        json_t *run;
        const char *k;
        json_t *v;

        if (!ev || !id)
                return;
        run = json_object_get(byid, id);
        if (streq(ev, "run_start") && !run) {
                run = json_object();
                json_object_set_new(byid, id, json_incref(run));
                json_array_append_new(runs, run);
        }
        if (!run)
                return;
        json_object_foreach (line, k, v) {
                if (streq(k, "prev") || streq(k, "hash") || streq(k, "event") || streq(k, "time") ||
                    streq(k, "seq"))
                        continue;
                json_object_set(run, k, v);
        }
        json_object_set_new(run, "ended", json_boolean(streq(ev, "run_end")));
}

int ops_runlog_read(const struct config *c, json_t **ret, char **ret_error)
{
        _cleanup_free_ char *path = NULL, *reason = NULL;
        _cleanup_(json_decrefp) json_t *runs = json_array(), *byid = json_object(), *o = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t cap = 0;
        unsigned lines = 0, line = 0;
        ssize_t n;
        int r;

        if (!runs || !byid || asprintf(&path, "%s/%s", c->workspace.state, OPS_RUNLOG_FILE) < 0)
                return -ENOMEM;
        r = broker_audit_verify(path, &lines, &line, &reason);
        if (r == -ENOENT) {
                o = json_pack("{s:O, s:b, s:i}", "runs", runs, "verified", true, "lines", 0);
                if (!o)
                        return -ENOMEM;
                *ret = TAKE_PTR(o);
                return 0;
        }
        if (r < 0 && r != -EBADMSG) {
                if (asprintf(ret_error, "%s: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        f = fopen(path, "re");
        if (!f) {
                r = negative_errno();
                if (asprintf(ret_error, "%s: %m", path) < 0)
                        *ret_error = NULL;
                return r;
        }
        while ((n = getline(&buf, &cap, f)) > 0) {
                _cleanup_(json_decrefp) json_t *j = json_loadb(buf, (size_t)n, 0, NULL);
                if (j)
                        runs_fold(runs, byid, j);
        }
        o = json_pack("{s:O, s:b, s:i}", "runs", runs, "verified", r == 0, "lines", (int)lines);
        if (o && r < 0)
                json_object_set_new(o, "error", json_string(reason ? reason : "tampered"));
        if (!o)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}
