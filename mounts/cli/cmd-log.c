/* SPDX-License-Identifier: MIT */
/*
 * cmd-log.c: `cloister log CONFIG [--json] [--since T] [--path GLOB]`:
 * print the workspace's journal (fs/journal), oldest first.
 *
 * A damaged journal (a crash cut the last line short, a full disk) is still
 * printed; the damage is reported on stderr and does not change the exit code.
 */
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <time.h>

#include "command.h"
#include "config.h"
#include "journal.h"
#include "review.h"
#include "lib/util.h"
#include "lib/values.h"

/* RFC 3339 ("2026-12-02T16:00:00Z"), a date, "@EPOCH", or a duration ago ("15m"). */
static int since_parse(const char *s, double *ret)
{
        struct tm tm = {0};
        uint64_t secs;
        const char *e;
        char *end;

        if (journal_time_parse(s, ret) == 0)
                return 0;
        if (s[0] == '@') {
                errno = 0;
                double v = strtod(s + 1, &end);
                if (errno || end == s + 1 || *end)
                        return -EINVAL;
                *ret = v;
                return 0;
        }
        e = strptime(s, "%Y-%m-%d", &tm);
        if (e && *e == 0) {
                *ret = (double)timegm(&tm);
                return 0;
        }
        if (value_parse_duration(s, &secs) == 0) {
                *ret = (double)time(NULL) - (double)secs;
                return 0;
        }
        return -EINVAL;
}

/* Agent-chosen strings (paths, link targets, xattr and command names) are quoted as git
 * quotes paths. */
static void record_print(const struct journal_record *rec)
{
        json_t *o = (json_t *)rec->json;
        json_t *v;

        printf("%s %-9s ", rec->time_str, rec->op);
        review_path_print(stdout, rec->path);
        if (rec->path2) {
                fputs(" -> ", stdout);
                review_path_print(stdout, rec->path2);
        }
        if ((v = json_object_get(o, "length")) && json_is_integer(v)) {
                printf(" [%" JSON_INTEGER_FORMAT "+%" JSON_INTEGER_FORMAT,
                       json_integer_value(json_object_get(o, "offset")), json_integer_value(v));
                v = json_object_get(o, "count");
                if (json_integer_value(v) > 1)
                        printf(" in %" JSON_INTEGER_FORMAT " writes", json_integer_value(v));
                putchar(']');
        }
        if ((v = json_object_get(o, "size")) && json_is_integer(v))
                printf(" size %" JSON_INTEGER_FORMAT, json_integer_value(v));
        if ((v = json_object_get(o, "mode")) && json_is_integer(v))
                printf(" mode %04llo", (unsigned long long)json_integer_value(v) & 07777);
        if (rec->name) {
                putchar(' ');
                review_path_print(stdout, rec->name);
        }
        fputs("  (", stdout);
        review_path_print(stdout, rec->comm ? rec->comm : "?");
        printf("[%" PRId64 "] uid %" PRId64 ")", rec->pid, rec->uid);
        if (rec->result < 0) {
                v = json_object_get(o, "error");
                fputs(" failed: ", stdout);
                review_path_print(stdout, json_is_string(v) ? json_string_value(v) : "error");
        }
        putchar('\n');
}

static bool record_matches(const struct journal_record *rec, const char *glob)
{
        if (!glob)
                return true;
        return fnmatch(glob, rec->path, 0) == 0 ||
               (rec->path2 && fnmatch(glob, rec->path2, 0) == 0);
}

static int log_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"json", no_argument, NULL, 'j'},
                {"since", required_argument, NULL, 's'},
                {"path", required_argument, NULL, 'p'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_close_ int dfd = -1;
        journal_reader *rd = NULL;
        struct journal_record rec;
        const char *glob = NULL;
        double since = 0;
        bool json = false, have_since = false;
        int opt, r;

        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (opt) {
                case 'j':
                        json = true;
                        break;
                case 's':
                        if (since_parse(optarg, &since) < 0)
                                return command_fail(
                                        &command_log, EXIT_USAGE,
                                        "--since '%s': not a time (2026-12-02T16:00:00Z, "
                                        "2026-12-02, @EPOCH) or a duration ago (15m)",
                                        optarg);
                        have_since = true;
                        break;
                case 'p':
                        glob = optarg;
                        break;
                case 'h':
                        command_usage(&command_log);
                        return 0;
                default:
                        return EXIT_USAGE;
                }
        }
        if (optind != argc - 1)
                return command_fail(&command_log, EXIT_USAGE,
                                    "expected one CONFIG; see 'cloister help log'");
        r = config_load(argv[optind], &c, &err);
        if (r < 0)
                return command_fail(&command_log, EXIT_USAGE, "%s", err ? err : strerror(-r));
        dfd = open(c->workspace.state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return command_fail(&command_log, 1, "state directory '%s': %m",
                                    c->workspace.state);
        r = journal_reader_open(dfd, "journal.jsonl", &rd);
        if (r == -ENOENT)
                return 0; /* never mounted, or nothing written yet: an empty journal */
        if (r < 0)
                return command_fail(&command_log, 1, "%s/journal.jsonl: %s", c->workspace.state,
                                    strerror(-r));
        while ((r = journal_reader_next(rd, &rec)) > 0) {
                if (have_since && rec.time < since)
                        continue;
                if (!record_matches(&rec, glob))
                        continue;
                if (json)
                        puts(rec.line);
                else
                        record_print(&rec);
        }
        if (fflush(stdout) != 0 && r >= 0)
                r = negative_errno();
        if (journal_reader_corrupt(rd))
                fprintf(stderr,
                        "cloister log: %s/journal.jsonl: %u damaged line(s) skipped, the first at "
                        "line %u%s\n",
                        c->workspace.state, journal_reader_corrupt(rd),
                        journal_reader_first_corrupt_line(rd),
                        journal_reader_truncated(rd) ? "; the last entry was cut short (crash?)"
                                                     : "");
        journal_reader_free(rd);
        if (r < 0)
                return command_fail(&command_log, 1, "reading the journal: %s", strerror(-r));
        return 0;
}

const struct command command_log = {
        .name = "log",
        .run = log_run,
};
