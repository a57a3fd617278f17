/* SPDX-License-Identifier: MIT */
/*
 * cmd-log.c: `cloister log CONFIG [--json] [--since T] [--path GLOB]`:
 * print the workspace's journal (fs/journal), oldest first; --net and
 * --runs print the network log and the run record instead.
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

#include "cmd-log.h"
#include "command.h"
#include "config.h"
#include "journal.h"
#include "layers.h"
#include "review.h"
#include "lib/quote.h"
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

/* The journal's own marks: sessions of the daemon, and where the journal was cut. */
static void mark_print(const struct journal_record *rec)
{
        json_t *o = (json_t *)rec->json;
        int64_t max = json_integer_value(json_object_get(o, "max_bytes"));

        if (rec->after_unclean_stop)
                printf("-- the daemon before this one stopped without closing the journal "
                       "(SIGKILL or crash?): its last operations may be missing above --\n");
        printf("%s %-9s ", rec->time_str, rec->op);
        if (streq(rec->op, JOURNAL_MARK_PREFIX "open")) {
                printf("daemon pid %" PRId64, rec->pid);
                if (max > 0)
                        printf(", bound %" PRId64 " bytes", max);
        } else if (streq(rec->op, JOURNAL_MARK_PREFIX "close")) {
                int64_t dropped = json_integer_value(json_object_get(o, "dropped"));
                int64_t refused = json_integer_value(json_object_get(o, "refused"));
                fputs("clean", stdout);
                if (dropped || refused)
                        printf(" (%" PRId64 " entr%s lost after the cut, %" PRId64
                               " operation(s) refused with EDQUOT)",
                               dropped, dropped == 1 ? "y" : "ies", refused);
        } else if (streq(rec->op, JOURNAL_MARK_PREFIX "truncated")) {
                printf("the journal reached its bound ([limits] journal = %" PRId64
                       " bytes): later operations were refused with EDQUOT and are not here",
                       max);
        } else if (streq(rec->op, JOURNAL_MARK_PREFIX "fork")) {
                /* docs/cloister-fork.md: the first entry of a fork's journal */
                json_t *p = json_object_get(o, "parent");
                const char *pn = json_string_value(json_object_get(p, "name"));
                const char *ps = json_string_value(json_object_get(p, "state"));
                const char *cp = json_string_value(json_object_get(o, "checkpoint"));
                fputs("a fork of ", stdout);
                quote_fputs(stdout, pn ? pn : "?", 0);
                fputs(" (", stdout);
                quote_fputs(stdout, ps ? ps : "?", 0);
                fputs(") at checkpoint ", stdout);
                quote_fputs(stdout, cp ? cp : "?", 0);
        } else if (streq(rec->op, JOURNAL_MARK_PREFIX "checkpoint") ||
                   streq(rec->op, JOURNAL_MARK_PREFIX "restore")) {
                const char *cp = json_string_value(json_object_get(o, "name"))
                                         ?: json_string_value(json_object_get(o, "checkpoint"));
                quote_fputs(stdout, cp ? cp : "?", 0);
        } else if (streq(rec->op, JOURNAL_MARK_PREFIX "squash")) {
                printf("%" JSON_INTEGER_FORMAT " frozen layers merged into one",
                       json_integer_value(json_object_get(o, "depth")));
        } else if (streq(rec->op, JOURNAL_MARK_PREFIX "coarse")) {
                printf("the journal passed %" JSON_INTEGER_FORMAT
                       " bytes, three quarters of the way to its cut ([limits] journal = %" PRId64
                       " bytes): from here on, one entry per operation, command and directory "
                       "every %" JSON_INTEGER_FORMAT " ms, without file names",
                       json_integer_value(json_object_get(o, "at_bytes")), max,
                       json_integer_value(json_object_get(o, "window_ms")));
        }
        putchar('\n');
}

/* Agent-chosen strings (paths, link targets, xattr and command names) are quoted as git
 * quotes paths (lib/quote). */
static void record_print(const struct journal_record *rec)
{
        json_t *o = (json_t *)rec->json;
        json_t *v;

        if (rec->mark) {
                mark_print(rec);
                return;
        }
        printf("%s %-9s ", rec->time_str, rec->op);
        quote_fputs(stdout, rec->path, 0);
        if (rec->path2) {
                fputs(" -> ", stdout);
                quote_fputs(stdout, rec->path2, 0);
        }
        if (rec->coarse) {
                /* Past the soft bound: a count per directory, not a file. */
                bool tree = streq_ptr(json_string_value(json_object_get(o, "coarse")), "tree");
                printf(" [coarse: %" PRId64 " %s this directory", rec->count,
                       tree ? "anywhere under" : "in");
                if ((v = json_object_get(o, "bytes")) && json_is_integer(v))
                        printf(", %" JSON_INTEGER_FORMAT " bytes", json_integer_value(v));
                if (json_is_true(json_object_get(o, "mixed")))
                        fputs(", by more than this caller", stdout);
                putchar(']');
        } else if (streq(rec->op, "removed_tree")) {
                /* journal.h, "Removed trees": its past, in one entry. */
                size_t i;
                json_t *c;
                printf(" [created and removed %" PRId64 " entr%s under it, %" JSON_INTEGER_FORMAT
                       " operations in %" JSON_INTEGER_FORMAT " lines",
                       rec->count, rec->count == 1 ? "y" : "ies",
                       json_integer_value(json_object_get(o, "ops")),
                       json_integer_value(json_object_get(o, "lines")));
                if ((v = json_object_get(o, "failed")) && json_integer_value(v) > 0)
                        printf(", %" JSON_INTEGER_FORMAT " refused", json_integer_value(v));
                if ((v = json_object_get(o, "until")) && json_is_string(v))
                        printf(", until %s", json_string_value(v));
                fputs(", by ", stdout);
                json_array_foreach (json_object_get(o, "comms"), i, c) {
                        if (i > 0)
                                fputs(", ", stdout);
                        quote_fputs(stdout, json_string_value(c) ?: "?", 0);
                }
                if (json_is_true(json_object_get(o, "more")))
                        fputs(" and more", stdout);
                putchar(']');
        } else if (streq(rec->op, "transient")) {
                v = json_object_get(o, "ops");
                printf(" [the last of %" PRId64
                       " made and removed within a window, %" JSON_INTEGER_FORMAT " operations]",
                       rec->count, json_integer_value(v));
        } else if ((v = json_object_get(o, "length")) && json_is_integer(v)) {
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
        if ((v = json_object_get(o, "owner_uid")) && json_is_integer(v) && !streq(rec->op, "chown"))
                printf(" owner %" JSON_INTEGER_FORMAT ":%" JSON_INTEGER_FORMAT,
                       json_integer_value(v), json_integer_value(json_object_get(o, "owner_gid")));
        if ((v = json_object_get(o, "folded")) && json_is_integer(v))
                printf(" [and %" JSON_INTEGER_FORMAT " change(s) of its maker folded in]",
                       json_integer_value(v));
        if (rec->name) {
                putchar(' ');
                quote_fputs(stdout, rec->name, 0);
        }
        fputs("  (", stdout);
        quote_fputs(stdout, rec->comm ? rec->comm : "?", 0);
        if (rec->sandbox_uid >= 0) /* a root-run sandbox: its uid inside, and on the host */
                printf("[%" PRId64 "] uid %" PRId64 ", host uid %" PRId64 ")", rec->pid,
                       rec->sandbox_uid, rec->uid);
        else
                printf("[%" PRId64 "] uid %" PRId64 ")", rec->pid, rec->uid);
        if (rec->result < 0) {
                v = json_object_get(o, "error");
                fputs(" failed: ", stdout);
                quote_fputs(stdout, json_is_string(v) ? json_string_value(v) : "error", 0);
        }
        if (!streq(rec->op, "write") && !streq(rec->op, "transient") &&
            !streq(rec->op, "removed_tree") && !rec->coarse && rec->count > 1)
                printf(" [%" PRId64 " times]", rec->count);
        putchar('\n');
}

/*
 * --json: the line as the journal holds it. jansson escaped its control
 * characters but wrote other UTF-8 as it is, C1 controls and bidi overrides
 * included; a line with any byte from 0x80 is written again as ASCII.
 */
static void record_print_json(const struct journal_record *rec)
{
        _cleanup_free_ char *ascii = NULL;

        for (const unsigned char *c = (const unsigned char *)rec->line; *c; c++)
                if (*c >= 0x80) {
                        ascii = json_dumps((const json_t *)rec->json,
                                           JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
                        break;
                }
        puts(ascii ? ascii : rec->line);
}

/*
 * What a reviewer reads by default: the agent's changes to its files. Left
 * out unless --all: the journal's marks of daemon sessions (a clean open
 * and close per mount: every `cloister diff` of an unmounted workspace
 * makes one) and git's bookkeeping in the workspace's own .git (its index,
 * lock files, objects), which no patch carries. Kept always: a session
 * that ended unclean, a close that counts lost or refused operations, and
 * the bound's cut, which say the journal is short.
 */
static bool record_is_noise(const struct journal_record *rec, const char *gitdir)
{
        size_t n = strlen(gitdir);

        if (rec->mark) {
                json_t *o = (json_t *)rec->json;
                if (streq(rec->op, JOURNAL_MARK_PREFIX "open"))
                        return !rec->after_unclean_stop;
                if (streq(rec->op, JOURNAL_MARK_PREFIX "close"))
                        return !json_integer_value(json_object_get(o, "dropped")) &&
                               !json_integer_value(json_object_get(o, "refused"));
                return false;
        }
        return strncmp(rec->path, gitdir, n) == 0 && (rec->path[n] == '/' || !rec->path[n]) &&
               (!rec->path2 ||
                (strncmp(rec->path2, gitdir, n) == 0 && (rec->path2[n] == '/' || !rec->path2[n])));
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
                {"json", no_argument, NULL, 'j'},       {"since", required_argument, NULL, 's'},
                {"path", required_argument, NULL, 'p'}, {"net", no_argument, NULL, 'n'},
                {"runs", no_argument, NULL, 'r'},       {"all", no_argument, NULL, 'a'},
                {"help", no_argument, NULL, 'h'},       {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL, *gitdir = NULL;
        _cleanup_close_ int dfd = -1;
        journal_reader *rd = NULL;
        struct journal_record rec;
        const char *glob = NULL;
        double since = 0;
        bool json = false, have_since = false, last_closed = true, net = false, all = false,
             runs = false;
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
                case 'n':
                        net = true;
                        break;
                case 'r':
                        runs = true;
                        break;
                case 'a':
                        all = true;
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
        if (net && glob)
                return command_fail(&command_log, EXIT_USAGE,
                                    "--path is for the journal, not --net");
        if (net && all)
                return command_fail(&command_log, EXIT_USAGE,
                                    "--all is for the journal, not --net");
        if (runs && (net || glob || all))
                return command_fail(&command_log, EXIT_USAGE,
                                    "--runs goes with --json and --since only");
        if (runs)
                return log_runs_print(c, json, have_since, since);
        if (net)
                return log_net_print(c, json, have_since, since);
        if (asprintf(&gitdir, "%s/.git", streq(c->repo.path, "/") ? "" : c->repo.path) < 0)
                return command_fail(&command_log, 1, "out of memory");
        /*
         * A live daemon holds entries for a moment before it writes them
         * (compaction): ask it to write them now, so that everything that
         * happened is read, in order. No daemon: nothing is held.
         */
        {
                _cleanup_free_ char *ferr = NULL;
                r = fs_journal_flush_online(c->workspace.state, &ferr);
                if (r < 0 && r != -ENOENT && r != -ECONNREFUSED)
                        fprintf(stderr,
                                "cloister log: the daemon of %s did not write what it holds "
                                "(%s): the last moments may be missing below\n",
                                c->workspace.state, ferr ? ferr : strerror(-r));
        }
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
                if (rec.mark && !streq(rec.op, JOURNAL_MARK_PREFIX "truncated"))
                        last_closed = streq(rec.op, JOURNAL_MARK_PREFIX "close");
                if (have_since && rec.time < since)
                        continue;
                if (!all && record_is_noise(&rec, gitdir))
                        continue;
                /* Marks belong to no path; they are shown whatever --path says. */
                if (!rec.mark && !record_matches(&rec, glob))
                        continue;
                if (json)
                        record_print_json(&rec);
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
        /* The reader knows both only once it reached the end. */
        if (r >= 0 && journal_reader_unclean_stops(rd) > 0) {
                if (!json && !journal_reader_live(rd) && !last_closed)
                        puts("-- the daemon stopped without closing the journal (SIGKILL or "
                             "crash?): its last operations may be missing above --");
                fprintf(stderr,
                        "cloister log: %s/journal.jsonl may be short: %u time(s) the daemon "
                        "stopped without closing it (SIGKILL or crash?); what it did in its last "
                        "moments may be missing (see cloister-log(1))\n",
                        c->workspace.state, journal_reader_unclean_stops(rd));
        }
        if (r >= 0 && journal_reader_coarse(rd) > 0)
                fprintf(stderr,
                        "cloister log: %s/journal.jsonl passed its soft bound ([limits] journal): "
                        "later entries count operations per command and directory, without file "
                        "names; cloister diff still shows every change\n",
                        c->workspace.state);
        if (r >= 0 && journal_reader_cuts(rd) > 0)
                fprintf(stderr,
                        "cloister log: %s/journal.jsonl was cut at its bound ([limits] journal): "
                        "operations after the cut were refused and are not in it; cloister diff "
                        "still shows every change\n",
                        c->workspace.state);
        journal_reader_free(rd);
        if (r < 0)
                return command_fail(&command_log, 1, "reading the journal: %s", strerror(-r));
        return 0;
}

const struct command command_log = {
        .name = "log",
        .run = log_run,
};
