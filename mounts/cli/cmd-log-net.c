/* SPDX-License-Identifier: MIT */
/*
 * cmd-log-net.c: `cloister log --net CONFIG`: the egress proxy's audit log
 * (<[broker] dir>/net.jsonl), one line per request or tunnel, for the
 * reviewer. Hosts, paths and reasons can hold text the agent chose (a
 * refused host is logged as sent), so they are printed quoted, as the
 * journal's paths are; `cloister audit verify` checks the chain.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd-log.h"
#include "command.h"
#include "config.h"
#include "lib/util.h"
#include "lib/quote.h"
#include "proxy/proxy.h"
#include "review.h"

static const char *str(json_t *o, const char *k)
{
        json_t *v = json_object_get(o, k);
        return json_is_string(v) ? json_string_value(v) : NULL;
}

static void quoted(const char *s)
{
        quote_fputs(stdout, s ? s : "", 0);
}

static void line_print(json_t *o)
{
        json_int_t t = json_integer_value(json_object_get(o, "time"));
        const char *kind = str(o, "kind") ?: "?", *decision = str(o, "decision") ?: "?";
        char when[32];
        struct tm tm;
        time_t tt = (time_t)t;

        gmtime_r(&tt, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        printf("%s %-6s ", when, decision);
        if (streq(kind, "limit")) {
                printf("limit  ");
                quoted(str(o, "reason"));
                printf(" (%" JSON_INTEGER_FORMAT " refused)\n",
                       json_integer_value(json_object_get(o, "refused")));
                return;
        }
        printf("%-7s ", streq(kind, "connect") ? "CONNECT" : str(o, "method") ?: "?");
        quoted(str(o, "host"));
        printf(":%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(o, "port")));
        if (str(o, "path")) {
                putchar(' ');
                quoted(str(o, "path"));
        }
        printf(" %" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(o, "status")));
        if (str(o, "rule"))
                printf(" rule %s", str(o, "rule"));
        if (str(o, "jti"))
                printf(" jti %.8s", str(o, "jti"));
        printf(" out %" JSON_INTEGER_FORMAT " in %" JSON_INTEGER_FORMAT,
               json_integer_value(json_object_get(o, "bytes_out")),
               json_integer_value(json_object_get(o, "bytes_in")));
        if (str(o, "reason")) {
                fputs(": ", stdout);
                quoted(str(o, "reason"));
        }
        printf("  (run %" JSON_INTEGER_FORMAT ")\n", json_integer_value(json_object_get(o, "run")));
}

int log_net_print(const struct config *c, bool json, bool have_since, double since)
{
        _cleanup_free_ char *path = NULL, *line = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        size_t cap = 0;
        ssize_t n;
        unsigned bad = 0;

        if (asprintf(&path, "%s/%s", c->broker.dir, PROXY_AUDIT_FILE) < 0)
                return command_fail(&command_log, 1, "out of memory");
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? 0 /* no proxy has run: nothing went out */
                                       : command_fail(&command_log, 1, "%s: %m", path);
        while ((n = getline(&line, &cap, f)) > 0) {
                json_t *o;

                if (line[n - 1] == '\n')
                        line[--n] = '\0';
                o = json_loadb(line, (size_t)n, 0, NULL);
                if (!json_is_object(o) || !streq_ptr(str(o, "event"), "net")) {
                        bad += !json_is_object(o);
                        json_decref(o);
                        continue;
                }
                if (!have_since ||
                    (double)json_integer_value(json_object_get(o, "time")) >= since) {
                        if (json)
                                puts(line);
                        else
                                line_print(o);
                }
                json_decref(o);
        }
        if (fflush(stdout) != 0)
                return command_fail(&command_log, 1, "writing: %m");
        if (bad)
                fprintf(stderr,
                        "cloister log: %s: %u line(s) that are not JSON skipped; check it with "
                        "'cloister audit verify'\n",
                        path, bad);
        return 0;
}
