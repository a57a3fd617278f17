/* SPDX-License-Identifier: MIT */
/*
 * ops-report.c: everything a reviewer gets from `cloister report`, as
 * data (operations.h): the workspace's status, the verdicts checked now,
 * the run record, the changes, the journal's writes, the network log, the
 * broker's audit log and the checkpoints. mounts/cli/report-html.c renders
 * it; --json prints it.
 *
 * It reads what the other operations and logs already give (ops_status,
 * ops_diff_since (from the base, or with --since a checkpoint), ops_runlog_read,
 * ops_checkpoint_list, the journal reader, broker_audit_verify); nothing here interprets a log
 * anew, but for the journal's writes replayed to trace each hunk to its commands (ops-trace.c).
 *
 * Trust: every string in the result may be the agent's (paths, contents,
 * command lines, hosts): the renderer escapes it. Every list is bounded
 * (OPS_REPORT_*_MAX), and what was left out is counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker/audit.h"
#include "config.h"
#include "journal.h"
#include "layers.h"
#include "operations.h"
#include "proxy/proxy.h"
#include "lib/util.h"

/* One chained log: {"file", "present", "verified", "lines", "error"?}. */
static json_t *chain_check(const char *dir, const char *file)
{
        _cleanup_free_ char *path = NULL, *reason = NULL;
        unsigned lines = 0, line = 0;
        json_t *o;
        int r;

        if (asprintf(&path, "%s/%s", dir, file) < 0)
                return NULL;
        if (access(path, F_OK) < 0)
                return json_pack("{s:s, s:b, s:b, s:i}", "file", path, "present", false, "verified",
                                 true, "lines", 0);
        r = broker_audit_verify(path, &lines, &line, &reason);
        o = json_pack("{s:s, s:b, s:b, s:i}", "file", path, "present", true, "verified", r == 0,
                      "lines", (int)lines);
        if (o && r < 0)
                json_object_set_new(o, "error", json_string(reason ? reason : strerror(-r)));
        return o;
}

/* The lines of a chained log after since (unix s), at most max of them: {"lines", "more"}. */
static json_t *log_lines(const char *dir, const char *file, double since, size_t max)
{
        _cleanup_free_ char *path = NULL, *buf = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        json_t *lines = json_array();
        size_t cap = 0, more = 0, refused = 0;
        ssize_t n;

        if (!lines || asprintf(&path, "%s/%s", dir, file) < 0) {
                json_decref(lines);
                return NULL;
        }
        f = fopen(path, "re");
        while (f && (n = getline(&buf, &cap, f)) > 0) {
                json_t *j = json_loadb(buf, (size_t)n, 0, NULL);
                if (!j)
                        continue;
                if (json_number_value(json_object_get(j, "time")) < since) {
                        json_decref(j);
                        continue;
                }
                json_object_del(j, "prev");
                json_object_del(j, "hash");
                /* Counted over every line, listed or not (the net log's "decision"). */
                const char *d = json_string_value(json_object_get(j, "decision"));
                if (d && !streq(d, "allow"))
                        refused++;
                if (json_array_size(lines) < max)
                        json_array_append_new(lines, j);
                else {
                        more++;
                        json_decref(j);
                }
        }
        return json_pack("{s:o, s:I, s:I}", "lines", lines, "more", (json_int_t)more, "refused",
                         (json_int_t)refused);
}

/*
 * The journal: its verdict and its writes (time, op, path, pid), bounded.
 * Every record, listed or not, before since or not, is fed to trace.
 */
static json_t *journal_summary(const struct config *c, double since, ops_trace *trace)
{
        _cleanup_close_ int dfd = -1;
        journal_reader *rd = NULL;
        _cleanup_free_ char *held = NULL;
        struct journal_record rec;
        json_t *writes = json_array(), *o;
        size_t total = 0, more = 0;
        int r;

        if (!writes)
                return NULL;
        /*
         * A live daemon holds entries for a moment (compaction): ask it to
         * write them now, as `cloister log` does, so that the report reads
         * every write of the runs it lists. No daemon: nothing is held.
         */
        {
                _cleanup_free_ char *ferr = NULL;
                int k = fs_journal_flush_online(c->workspace.state, &ferr);
                if (k < 0 && k != -ENOENT && k != -ECONNREFUSED)
                        held = ferr ? TAKE_PTR(ferr) : strdup(strerror(-k));
        }
        dfd = open(c->workspace.state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r = dfd < 0 ? -errno : journal_reader_open(dfd, "journal.jsonl", &rd);
        if (r < 0)
                return json_pack("{s:b, s:b, s:o, s:I, s:I, s:s}", "present", false, "complete",
                                 r == -ENOENT, "writes", writes, "entries", (json_int_t)0, "more",
                                 (json_int_t)0, "detail",
                                 r == -ENOENT ? "no journal yet" : strerror(-r));
        while ((r = journal_reader_next(rd, &rec)) > 0) {
                if (trace)
                        ops_trace_feed(trace, &rec);
                if (rec.mark || rec.time < since)
                        continue;
                total++;
                if (json_array_size(writes) >= OPS_REPORT_WRITES_MAX) {
                        more++;
                        continue;
                }
                json_t *w = json_pack(
                        "{s:f, s:s, s:o, s:I, s:o}", "time", rec.time, "op", rec.op ? rec.op : "?",
                        "path", ops_json_text(rec.path, strlen(rec.path)), "pid",
                        (json_int_t)rec.pid, "comm",
                        rec.comm ? ops_json_text(rec.comm, strlen(rec.comm)) : json_null());
                /* Its command, as the hunks' are found (ops-trace.c), and how. */
                bool exact = false;
                uint32_t run = trace ? ops_trace_run_of(trace, &rec, &exact) : 0;
                if (w) {
                        json_object_set_new(w, "run", run ? json_integer(run) : json_null());
                        if (run)
                                json_object_set_new(w, "join",
                                                    json_string(exact ? "cgroup" : "time"));
                        if (rec.run_cgroup)
                                json_object_set_new(
                                        w, "run_cgroup",
                                        ops_json_text(rec.run_cgroup, strlen(rec.run_cgroup)));
                }
                /* A rename's new name: the file a reviewer sees changed. */
                if (w && rec.path2)
                        json_object_set_new(w, "path2",
                                            ops_json_text(rec.path2, strlen(rec.path2)));
                json_array_append_new(writes, w);
        }
        bool complete = r >= 0 && !journal_reader_corrupt(rd) &&
                        !journal_reader_unclean_stops(rd) && !journal_reader_cuts(rd) && !held;
        char detail[512];
        snprintf(detail, sizeof(detail),
                 "%u damaged line(s), %u unclean stop(s) of the daemon, %u cut(s) at the bound, "
                 "%u coarse session(s)%s%.200s",
                 journal_reader_corrupt(rd), journal_reader_unclean_stops(rd),
                 journal_reader_cuts(rd), journal_reader_coarse(rd),
                 held ? "; the live daemon did not write what it holds: " : "", held ?: "");
        o = json_pack("{s:b, s:b, s:s, s:o, s:I, s:I}", "present", true, "complete", complete,
                      "detail", detail, "writes", writes, "entries", (json_int_t)total, "more",
                      (json_int_t)more);
        journal_reader_free(rd);
        return o;
}

/* The checkpoint's creation time (unix s), or -ENOENT. */
static int checkpoint_time(json_t *list, const char *name, double *ret)
{
        json_t *cp;
        size_t i;

        json_array_foreach (json_object_get(list, "checkpoints"), i, cp) {
                if (streq_ptr(json_string_value(json_object_get(cp, "name")), name)) {
                        *ret = json_number_value(json_object_get(cp, "created_unix"));
                        return 0;
                }
        }
        return -ENOENT;
}

int ops_report(const struct config *c, const char *config_path, const char *since, json_t **ret,
               char **ret_error)
{
        _cleanup_(json_decrefp) json_t *o = json_object(), *status = NULL, *stat = NULL,
                                       *patch = NULL, *runs = NULL, *cps = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_(ops_trace_freep) ops_trace *trace = NULL;
        double since_t = 0;
        json_t *net, *jsum;
        size_t i;
        int r;

        if (!o)
                return -ENOMEM;
        r = ops_checkpoint_list(c, &cps, &error);
        if (r < 0)
                cps = json_pack("{s:s, s:[]}", "error", error ? error : strerror(-r),
                                "checkpoints");
        free(error);
        error = NULL;
        if (since && checkpoint_time(cps, since, &since_t) < 0) {
                if (asprintf(ret_error, "--since %s: no such checkpoint of '%s'", since,
                             c->workspace.name) < 0)
                        *ret_error = NULL;
                return -ENOENT;
        }
        r = ops_status(c, &status, ret_error);
        if (r < 0)
                return r;
        /* One review (one mount) for the stat with its hunks and the patch. */
        r = ops_diff_since(c, config_path, since, true, &stat, &patch, ret_error);
        if (r < 0)
                return r;
        r = ops_runlog_read(c, &runs, ret_error);
        if (r < 0)
                return r;
        if (since) {
                json_t *kept = json_array(), *run;
                json_array_foreach (json_object_get(runs, "runs"), i, run) {
                        if (json_number_value(json_object_get(run, "start_ms")) / 1000.0 >= since_t)
                                json_array_append(kept, run);
                }
                json_object_set_new(runs, "runs", kept);
        }
        r = ops_trace_new(json_string_value(json_object_get(status, "repo_path")) ?: "/workspace",
                          json_object_get(runs, "runs"), &trace);
        if (r < 0)
                return r;
        jsum = journal_summary(c, since_t, trace);
        ops_trace_annotate(trace, stat);
        net = log_lines(c->broker.dir, PROXY_AUDIT_FILE, since_t, OPS_REPORT_LINES_MAX);

        json_object_set_new(o, "workspace", json_string(c->workspace.name));
        json_object_set_new(o, "config", json_string(config_path));
        json_object_set_new(o, "repo", json_string(c->repo.source));
        json_object_set_new(o, "rev", json_string(c->repo.rev));
        json_object_set_new(o, "generated_unix", json_integer((json_int_t)time(NULL)));
        json_object_set_new(o, "since",
                            since ? json_pack("{s:s, s:f}", "checkpoint", since, "time", since_t)
                                  : json_null());
        json_object_set(o, "status", status);
        json_object_set_new(o, "verdicts",
                            json_pack("{s:o, s:o, s:o, s:I}", "audit_chain",
                                      chain_check(c->broker.dir, BROKER_AUDIT_FILE), "net_chain",
                                      chain_check(c->broker.dir, PROXY_AUDIT_FILE), "runs_chain",
                                      chain_check(c->workspace.state, OPS_RUNLOG_FILE),
                                      "requests_refused",
                                      json_integer_value(json_object_get(net, "refused"))));
        json_object_set(o, "runs", runs);
        json_object_set_new(o, "changes", json_pack("{s:O, s:O}", "stat", stat, "patch", patch));
        json_object_set_new(o, "journal", jsum);
        json_object_set_new(o, "net", net);
        json_object_set_new(
                o, "tokens",
                log_lines(c->broker.dir, BROKER_AUDIT_FILE, since_t, OPS_REPORT_LINES_MAX));
        json_object_set(o, "checkpoints", cps);
        *ret = TAKE_PTR(o);
        return 0;
}
