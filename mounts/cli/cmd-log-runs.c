/* SPDX-License-Identifier: MIT */
/*
 * cmd-log-runs.c: `cloister log --runs CONFIG`: the run record
 * (<state>/runs.jsonl, mounts/ops/ops-runlog.c), one line per command run
 * in the workspace, oldest first. Command lines and directories are the
 * agent's text: printed quoted, as the journal's paths are. A record whose
 * chain does not verify is still printed, and the reason goes to stderr
 * with exit status 1.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd-log.h"
#include "command.h"
#include "config.h"
#include "operations.h"
#include "lib/quote.h"
#include "lib/util.h"

static void when_print(int64_t ms)
{
        char when[32];
        struct tm tm;
        time_t t = (time_t)(ms / 1000);

        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        fputs(when, stdout);
}

/* One word of argv: quoted when it needs it (lib/quote), and also when a
 * shell would split it or read it, so that the words stay apart. */
static void word_print(const char *w)
{
        if (!quote_is_plain(w, 0) || !*w) {
                quote_fputs(stdout, w, 0);
                return;
        }
        if (!w[strcspn(w, " \t'\"\\$`;&|<>()*?[]#~!{}")]) {
                fputs(w, stdout);
                return;
        }
        putchar('"');
        for (; *w; w++) {
                if (*w == '"' || *w == '\\')
                        putchar('\\');
                putchar(*w);
        }
        putchar('"');
}

static void run_print(json_t *run)
{
        json_t *v, *argv = json_object_get(run, "argv");
        int64_t start = json_integer_value(json_object_get(run, "start_ms"));
        size_t i;

        when_print(start);
        printf(" %-14s ", json_string_value(json_object_get(run, "source")) ?: "?");
        if (!json_is_true(json_object_get(run, "ended")))
                printf("%-10s %8s", "no end", "");
        else if ((v = json_object_get(run, "signal")) && json_is_integer(v))
                printf("signal %-3" JSON_INTEGER_FORMAT " ", json_integer_value(v));
        else
                printf("exit %-5" JSON_INTEGER_FORMAT " ",
                       json_integer_value(json_object_get(run, "exit_code")));
        if (json_is_true(json_object_get(run, "ended")))
                printf("%7.1fs",
                       (double)(json_integer_value(json_object_get(run, "end_ms")) - start) /
                               1000.0);
        if (json_is_true(json_object_get(run, "timed_out")))
                printf(" timed out");
        if ((v = json_object_get(run, "pid")) && json_is_integer(v))
                printf(" pid %" JSON_INTEGER_FORMAT, json_integer_value(v));
        if ((v = json_object_get(run, "pgid")) && json_is_integer(v))
                printf(" pgid %" JSON_INTEGER_FORMAT, json_integer_value(v));
        printf(" in ");
        quote_fputs(stdout, json_string_value(json_object_get(run, "cwd")) ?: "?", 0);
        printf(":");
        json_array_foreach (argv, i, v) {
                putchar(' ');
                word_print(json_string_value(v) ?: "");
        }
        if (json_is_true(json_object_get(run, "argv_cut")))
                printf(" [cut]");
        if ((v = json_object_get(run, "error")) && json_is_string(v)) {
                printf(" (nothing ran: ");
                quote_fputs(stdout, json_string_value(v), 0);
                putchar(')');
        }
        putchar('\n');
}

int log_runs_print(const struct config *c, bool json, bool have_since, double since)
{
        _cleanup_(json_decrefp) json_t *o = NULL;
        _cleanup_free_ char *error = NULL;
        json_t *runs, *run;
        size_t i;
        int r;

        r = ops_runlog_read(c, &o, &error);
        if (r < 0)
                return command_fail(&command_log, 1, "%s", error ? error : strerror(-r));
        runs = json_object_get(o, "runs");
        json_array_foreach (runs, i, run) {
                if (have_since &&
                    (double)json_integer_value(json_object_get(run, "start_ms")) / 1000.0 < since)
                        continue;
                if (json) {
                        _cleanup_free_ char *line = json_dumps(run, JSON_COMPACT | JSON_SORT_KEYS);
                        if (line)
                                puts(line);
                } else
                        run_print(run);
        }
        if (!json_is_true(json_object_get(o, "verified")))
                return command_fail(&command_log, 1, "%s/%s: %s", c->workspace.state,
                                    OPS_RUNLOG_FILE,
                                    json_string_value(json_object_get(o, "error")) ?: "tampered");
        return 0;
}
