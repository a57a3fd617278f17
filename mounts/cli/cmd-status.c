/* SPDX-License-Identifier: MIT */
/*
 * cmd-status.c: `cloister status CONFIG [--json]` and `cloister list
 * [--json]`: what a workspace is doing, and which workspaces this user has
 * (mounts/ops: ops_status, ops_list; schemas in their manual pages).
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "command.h"
#include "config.h"
#include "operations.h"
#include "lib/quote.h"
#include "lib/util.h"

/* "1.5G": a size as a person reads it. */
static const char *human(json_t *v, char buf[32])
{
        const char *u = "BKMGT";
        double x;

        if (!json_is_integer(v))
                return "-";
        x = (double)json_integer_value(v);
        while (x >= 1024 && u[1]) {
                x /= 1024;
                u++;
        }
        snprintf(buf, 32, u[0] == 'B' ? "%.0f%c" : "%.1f%c", x, u[0] == 'B' ? 'B' : u[0]);
        return buf;
}

static int json_out(json_t *o)
{
        int r = json_dumpf(o, stdout, JSON_COMPACT);

        putchar('\n');
        return r < 0 || fflush(stdout) != 0 ? 1 : 0;
}

static const char *str(json_t *o, const char *key)
{
        const char *s = json_string_value(json_object_get(o, key));

        return s ? s : "-";
}

static void daemon_line(const char *what, json_t *d)
{
        if (json_is_null(d) || !d)
                printf("%-11s none configured\n", what);
        else if (json_is_true(json_object_get(d, "serving")))
                printf("%-11s serving at %s (pid %" JSON_INTEGER_FORMAT ")\n", what,
                       str(d, "socket"), json_integer_value(json_object_get(d, "pid")));
        else
                printf("%-11s not running (a run starts it)\n", what);
}

static const char *yes_no(json_t *o, const char *key)
{
        return json_is_true(json_object_get(o, key)) ? "yes" : "no";
}

static int status_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_(json_decrefp) json_t *o = NULL;
        json_t *limits, *exp, *dp;
        char a[32], b[32];
        bool json = false;
        int opt, k;

        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (opt) {
                case 'j':
                        json = true;
                        break;
                case 'h':
                        command_usage(&command_status);
                        return 0;
                default:
                        return EXIT_USAGE;
                }
        }
        if (optind != argc - 1)
                return command_fail(&command_status, EXIT_USAGE,
                                    "expected one CONFIG; see 'cloister help status'");
        k = config_load(argv[optind], &c, &err);
        if (k < 0)
                return command_fail(&command_status, EXIT_USAGE, "%s", err ? err : strerror(-k));
        k = ops_status(c, &o, &err);
        if (k < 0)
                return command_fail(&command_status, 1, "%s", err ? err : strerror(-k));
        if (json)
                return json_out(o);
        limits = json_object_get(o, "limits");
        printf("%-11s %s (%s)\n", "workspace", str(o, "name"), str(o, "config"));
        printf("%-11s %s at %s, seen at %s\n", "repo", str(o, "repo"), str(o, "rev"),
               str(o, "repo_path"));
        if (json_is_true(json_object_get(o, "mounted")))
                printf("%-11s mounted at %s\n", "mount", str(o, "mountpoint"));
        else
                printf("%-11s not mounted (%s)\n", "mount", str(o, "mountpoint"));
        dp = json_object_get(o, "datapath");
        if (json_is_object(dp)) {
                const char *why = json_string_value(json_object_get(dp, "io_uring_why"));
                if (!why)
                        why = "";
                printf("%-11s %s; killpriv_v2 %s, passthrough %s, io_uring %s%s%s%s\n", "data path",
                       str(dp, "transport"), yes_no(dp, "killpriv_v2"), yes_no(dp, "passthrough"),
                       yes_no(dp, "io_uring"), *why ? " (" : "", why, *why ? ")" : "");
                why = json_string_value(json_object_get(dp, "zero_message_opens_why"));
                if (!why)
                        why = "";
                printf("%-11s %s%s%s%s\n", "opens",
                       json_is_true(json_object_get(dp, "zero_message_opens"))
                               ? "no message per open file in the copy-on-write parts"
                               : "an OPEN and a RELEASE per open file",
                       *why ? " (" : "", why, *why ? ")" : "");
        }
        printf("%-11s %" JSON_INTEGER_FORMAT "\n", "runs live",
               json_integer_value(json_object_get(o, "runs_live")));
        if (json_is_true(json_object_get(o, "mounted")))
                printf("%-11s %s of %s bytes, %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
                       " files\n",
                       "used", human(json_object_get(o, "bytes_used"), a),
                       human(json_object_get(limits, "bytes"), b),
                       json_integer_value(json_object_get(o, "files_used")),
                       json_integer_value(json_object_get(limits, "files")));
        printf("%-11s timeout %" JSON_INTEGER_FORMAT
               " s, memory %s, processes %" JSON_INTEGER_FORMAT "\n",
               "limits", json_integer_value(json_object_get(limits, "timeout")),
               human(json_object_get(limits, "memory"), a),
               json_integer_value(json_object_get(limits, "processes")));
        printf("%-11s %s\n", "network", str(o, "network"));
        printf("%-11s %s\n", "image",
               json_is_string(json_object_get(o, "image")) ? str(o, "image")
                                                           : "none: the host's /usr ([image])");
        daemon_line("broker", json_object_get(o, "broker"));
        if (streq(str(o, "network"), "proxy"))
                daemon_line("proxy", json_object_get(o, "proxy"));
        exp = json_object_get(o, "last_export");
        if (json_is_object(exp)) {
                time_t t = (time_t)json_integer_value(json_object_get(exp, "time"));
                char when[64];
                strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %z", localtime(&t));
                printf("%-11s %s at %.12s (%s)\n", "last export", str(exp, "ref"),
                       str(exp, "commit"), when);
        } else {
                printf("%-11s none\n", "last export");
        }
        return fflush(stdout) != 0 ? 1 : 0;
}

const struct command command_status = {
        .name = "status",
        .run = status_run,
};

static int list_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_free_ char *err = NULL;
        _cleanup_(json_decrefp) json_t *o = NULL;
        bool json = false;
        json_t *w;
        size_t i;
        int opt, k;

        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (opt) {
                case 'j':
                        json = true;
                        break;
                case 'h':
                        command_usage(&command_list);
                        return 0;
                default:
                        return EXIT_USAGE;
                }
        }
        if (optind != argc)
                return command_fail(&command_list, EXIT_USAGE,
                                    "takes no arguments; see 'cloister help list'");
        k = ops_list(&o, &err);
        if (k < 0)
                return command_fail(&command_list, 1, "%s", err ? err : strerror(-k));
        if (json)
                return json_out(o);
        printf("%-24s %-8s %5s %10s  %s\n", "NAME", "MOUNTED", "RUNS", "USED", "CONFIG");
        json_array_foreach (json_object_get(o, "workspaces"), i, w) {
                char a[32];
                if (json_object_get(w, "error")) {
                        printf("%-24s %-8s %5s %10s  ", "?", "-", "-", "-");
                        quote_fputs(stdout, str(w, "config"), 0);
                        printf(" (%s)\n", str(w, "error"));
                        continue;
                }
                printf("%-24s %-8s %5" JSON_INTEGER_FORMAT " %10s  ", str(w, "name"),
                       json_is_true(json_object_get(w, "mounted")) ? "yes" : "no",
                       json_integer_value(json_object_get(w, "runs_live")),
                       human(json_object_get(w, "bytes_used"), a));
                quote_fputs(stdout, str(w, "config"), 0);
                putchar('\n');
        }
        return fflush(stdout) != 0 ? 1 : 0;
}

const struct command command_list = {
        .name = "list",
        .run = list_run,
};
