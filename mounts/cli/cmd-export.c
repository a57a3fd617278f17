/* SPDX-License-Identifier: MIT */
/*
 * cmd-export.c: `cloister export CONFIG --commit | --commits | --mbox |
 * --discard`: hand the agent's work to the reviewer.
 *
 *   --commit    the workspace as one commit on top of the base, at
 *               refs/cloister/NAME in the source repository
 *   --commits   the agent's own commits (made in the workspace's .git),
 *               authors and messages kept, at refs/cloister/NAME
 *   --label L   with either: at refs/cloister/NAME+L instead
 *   --mbox      a `git am` series on stdout (or -o FILE); writes nothing
 *               into the source
 *   --discard   reset the workspace to the base revision (asks first)
 *
 * Nothing but refs/cloister/NAME and new objects is written to the source:
 * not HEAD, the index, the working tree or another ref. The review is
 * opened, and --commit and --commits made, by mounts/ops (ops_review_open,
 * ops_export_review): the same code and result as MCP's export tool.
 */
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <unistd.h>

#include "cli-review.h"
#include "command.h"
#include "operations.h"
#include "config.h"
#include "review.h"
#include "lib/util.h"

enum mode { MODE_NONE, MODE_COMMIT, MODE_COMMITS, MODE_MBOX, MODE_DISCARD };

static bool confirm(const char *what)
{
        char buf[16];

        if (!isatty(STDIN_FILENO))
                return false;
        fprintf(stderr, "%s [y/N] ", what);
        if (!fgets(buf, sizeof(buf), stdin))
                return false;
        return buf[0] == 'y' || buf[0] == 'Y';
}

/* An earlier export the ref pointed at stays in its reflog: say where. */
static void replaced_note(const json_t *o)
{
        const char *ref = json_string_value(json_object_get(o, "ref"));
        const char *old = json_string_value(json_object_get(o, "replaced"));

        if (ref && old)
                fprintf(stderr,
                        "cloister export: %s was at %s (an earlier export); it stays in the "
                        "ref's reflog as %s@{1}\n",
                        ref, old, ref);
}

/*
 * --commit and --commits: ops_export_review()'s object, the one MCP's
 * export returns too; with --json as it is, else its ref and commit.
 */
static int export_print(const json_t *o, bool json, bool series)
{
        json_int_t n = json_integer_value(json_object_get(o, "commits"));

        if (json)
                return json_dumpf(o, stdout, JSON_COMPACT) < 0 || putchar('\n') == EOF ? -EIO : 0;
        if (series)
                printf("%s %s (%" JSON_INTEGER_FORMAT " commit%s)\n",
                       json_string_value(json_object_get(o, "ref")),
                       json_string_value(json_object_get(o, "commit")), n, n == 1 ? "" : "s");
        else
                printf("%s %s\n", json_string_value(json_object_get(o, "ref")),
                       json_string_value(json_object_get(o, "commit")));
        replaced_note(o);
        return 0;
}

static int export_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"commit", no_argument, NULL, 'c'},
                {"commits", no_argument, NULL, 'C'},
                {"mbox", no_argument, NULL, 'm'},
                {"discard", no_argument, NULL, 'd'},
                {"message", required_argument, NULL, 'M'},
                {"author", required_argument, NULL, 'a'},
                {"label", required_argument, NULL, 'l'},
                {"output", required_argument, NULL, 'o'},
                {"yes", no_argument, NULL, 'y'},
                {"include-ignored", no_argument, NULL, 'I'},
                {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ git_oid *ids = NULL;
        _cleanup_fclose_ FILE *outf = NULL;
        _cleanup_(json_decrefp) json_t *result = NULL;
        struct review_commit_options co = {0};
        struct ops_export_options eo = {0};
        struct ops_review x = {0};
        review *r = NULL;
        const char *output = NULL;
        enum mode mode = MODE_NONE;
        bool series = false, yes = false, include_ignored = false, json = false,
             tty = isatty(STDERR_FILENO);
        size_t n = 0, left_out = 0;
        git_oid id;
        char hex[GIT_OID_HEXSZ + 1];
        sigset_t stop_signals, old_mask;
        int opt, k, ret = 1;

        bool f_commit = false, f_mbox = false, f_discard = false;

        while ((opt = getopt_long(argc, argv, "ho:", opts, NULL)) >= 0) {
                switch (opt) {
                case 'c':
                        f_commit = true;
                        break;
                case 'C':
                        series = true;
                        break;
                case 'm':
                        f_mbox = true;
                        break;
                case 'd':
                        f_discard = true;
                        break;
                case 'M':
                        co.message = optarg;
                        break;
                case 'a':
                        co.author = optarg;
                        break;
                case 'l':
                        eo.label = optarg;
                        break;
                case 'o':
                        output = optarg;
                        break;
                case 'y':
                        yes = true;
                        break;
                case 'I':
                        include_ignored = true;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        command_usage(&command_export);
                        return 0;
                default:
                        return EXIT_USAGE;
                }
        }
        /* Exactly one action; --mbox may take --commits to say which series. */
        if (f_commit + (series && !f_mbox) + f_mbox + f_discard == 1)
                mode = f_commit    ? MODE_COMMIT
                       : f_mbox    ? MODE_MBOX
                       : f_discard ? MODE_DISCARD
                                   : MODE_COMMITS;
        if (optind != argc - 1 || mode == MODE_NONE)
                return command_fail(&command_export, EXIT_USAGE,
                                    "expected CONFIG and one of --commit, --commits, --mbox, "
                                    "--discard; see 'cloister help export'");
        if (output && mode != MODE_MBOX)
                return command_fail(&command_export, EXIT_USAGE, "--output goes with --mbox");
        if (json && mode == MODE_MBOX)
                return command_fail(&command_export, EXIT_USAGE,
                                    "--json goes with --commit, --commits or --discard (an mbox "
                                    "is its own format)");
        if ((co.message || co.author) && (series || mode == MODE_DISCARD))
                return command_fail(&command_export, EXIT_USAGE,
                                    "--message and --author go with --commit or --mbox; "
                                    "--commits keeps the agent's own");
        if (eo.label && mode != MODE_COMMIT && mode != MODE_COMMITS)
                return command_fail(&command_export, EXIT_USAGE,
                                    "--label goes with --commit or --commits (it names the ref)");
        if (ops_export_label_check(eo.label, &err) < 0)
                return command_fail(&command_export, EXIT_USAGE, "%s", err);
        k = config_load(argv[optind], &c, &err);
        if (k < 0)
                return command_fail(&command_export, EXIT_USAGE, "%s", err ? err : strerror(-k));
        co.name = c->workspace.name;
        eo.commits = series;
        eo.message = co.message;
        eo.author = co.author;
        if (mode == MODE_DISCARD) {
                if (!yes && !confirm("Discard all of the agent's changes in this workspace?"))
                        return command_fail(&command_export, 1,
                                            "not confirmed; nothing was discarded (use --yes)");
        }
        if (mode == MODE_MBOX && output) {
                outf = fopen(output, "wxe");
                if (!outf)
                        return command_fail(&command_export, 1, "'%s': %m", output);
        }
        /* As in cmd-diff.c: a mount we make is undone whatever happens. */
        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGINT);
        sigaddset(&stop_signals, SIGTERM);
        sigaddset(&stop_signals, SIGHUP);
        signal(SIGPIPE, SIG_IGN);
        sigprocmask(SIG_BLOCK, &stop_signals, &old_mask);
        k = ops_review_open(
                c, argv[optind],
                &(struct ops_review_options){.in_memory = mode == MODE_MBOX || mode == MODE_DISCARD,
                                             .include_ignored = include_ignored,
                                             .progress = tty ? cli_progress_tty : NULL},
                &x, &err);
        r = x.r;
        if (k < 0) {
                command_fail(&command_export, 1, "%s", err ? err : strerror(-k));
                goto out;
        }
        switch (mode) {
        case MODE_COMMIT:
        case MODE_COMMITS:
                k = ops_export_review(r, c, &eo, &result, &err);
                if (tty)
                        fputs("\r\033[K", stderr);
                if (k >= 0 && export_print(result, json, series) < 0) {
                        command_fail(&command_export, 1, "writing the output: %m");
                        goto out;
                }
                break;
        case MODE_MBOX:
                if (series) {
                        k = review_agent_commits(r, &ids, &n);
                } else {
                        k = review_commit(r, &co, &id);
                        ids = malloc(sizeof(git_oid));
                        if (k >= 0 && ids) {
                                ids[0] = id;
                                n = 1;
                        } else if (k >= 0) {
                                k = -ENOMEM;
                        }
                }
                if (tty)
                        fputs("\r\033[K", stderr);
                if (k >= 0)
                        k = review_mbox(r, ids, n, outf ? outf : stdout);
                break;
        case MODE_DISCARD:
                k = review_discard(r);
                if (tty)
                        fputs("\r\033[K", stderr);
                if (k >= 0 && json)
                        printf("{\"discarded\":true,\"base\":\"%s\"}\n",
                               git_oid_tostr(hex, sizeof(hex), review_base_commit(r)));
                else if (k >= 0)
                        printf("discarded: the workspace is at %s\n",
                               git_oid_tostr(hex, sizeof(hex), review_base_commit(r)));
                break;
        default:
                break;
        }
        if (review_warning(r) && !json)
                fprintf(stderr, "cloister export: warning: %s\n", review_warning(r));
        /* The workspace as a commit: say what the ignore rules and the review kept out of it. */
        if (k >= 0 && !json && (mode == MODE_COMMIT || (mode == MODE_MBOX && !series)))
                cli_review_ignored_note(&command_export, r);
        if (k >= 0 && (mode == MODE_COMMIT || (mode == MODE_MBOX && !series))) {
                size_t nl, more;
                (void)review_left_out(r, &nl, &more);
                left_out = nl + more;
                if (!json)
                        cli_review_left_out_note(&command_export, r,
                                                 mode == MODE_COMMIT ? "the commit" : "the mbox");
        }
        if (k < 0) {
                command_fail(&command_export, 1, "%s", err ? err : review_error(r));
                goto out;
        }
        if (fflush(outf ? outf : stdout) != 0 || (outf && ferror(outf))) {
                command_fail(&command_export, 1, "writing the output: %m");
                goto out;
        }
        ret = left_out ? EXIT_LEFT_OUT : 0;
out:
        if (ops_review_close(&x) < 0) {
                command_fail(&command_export, 1, "unmounting the workspace failed");
                ret = 1;
        }
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        return ret;
}

const struct command command_export = {
        .name = "export",
        .run = export_run,
};
