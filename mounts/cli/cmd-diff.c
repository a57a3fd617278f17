/* SPDX-License-Identifier: MIT */
/*
 * cmd-diff.c: `cloister diff CONFIG [--stat | --name-status | --home] [--include-ignored]
 * [--json]`: the agent's work as a git patch against the base revision.
 *
 * The source repository is not written: new objects live in an in-memory
 * object database for the duration of the command. If the workspace is not
 * mounted, it is mounted for the command and unmounted after.
 */
#include <getopt.h>
#include <signal.h>
#include <inttypes.h>
#include <unistd.h>

#include "cli-review.h"
#include "operations.h"
#include "command.h"
#include "config.h"
#include "review-workspace.h"
#include "review.h"
#include "lib/quote.h"
#include "lib/util.h"

static void home_print(FILE *out, const struct review_home_change *c, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                const char *t = c[i].type == 'f'   ? "file"
                                : c[i].type == 'd' ? "dir"
                                : c[i].type == 'l' ? "symlink"
                                : c[i].type == 'D' ? "deleted"
                                                   : "other";
                if (c[i].type == 'f')
                        fprintf(out, "%-8s %12" PRIu64 "  ", t, c[i].size);
                else
                        fprintf(out, "%-8s %12s  ", t, "-");
                /* The agent named it: one line per change, nothing for the terminal. */
                quote_fputs(out, c[i].path, 0);
                fputc('\n', out);
        }
}

static int diff_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"stat", no_argument, NULL, 's'},
                {"name-status", no_argument, NULL, 'n'},
                {"home", no_argument, NULL, 'H'},
                {"include-ignored", no_argument, NULL, 'I'},
                {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        review_workspace *w = NULL;
        review *r = NULL;
        struct review_options o;
        struct review_home_change *home = NULL;
        size_t n_home = 0;
        enum review_format fmt = REVIEW_PATCH;
        bool home_only = false, include_ignored = false, json = false, tty = isatty(STDERR_FILENO);
        sigset_t stop_signals, old_mask;
        int opt, k, ret = 1;

        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGINT);
        sigaddset(&stop_signals, SIGTERM);
        sigaddset(&stop_signals, SIGHUP);
        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (opt) {
                case 's':
                        fmt = REVIEW_STAT;
                        break;
                case 'n':
                        fmt = REVIEW_NAME_STATUS;
                        break;
                case 'H':
                        home_only = true;
                        break;
                case 'I':
                        include_ignored = true;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        command_usage(&command_diff);
                        return 0;
                default:
                        return EXIT_USAGE;
                }
        }
        if (optind != argc - 1)
                return command_fail(&command_diff, EXIT_USAGE,
                                    "expected one CONFIG; see 'cloister help diff'");
        if (json && (fmt == REVIEW_NAME_STATUS || home_only))
                return command_fail(&command_diff, EXIT_USAGE,
                                    "--json gives the patch, or with --stat the files; the home's "
                                    "changes are in both");
        k = config_load(argv[optind], &c, &err);
        if (k < 0)
                return command_fail(&command_diff, EXIT_USAGE, "%s", err ? err : strerror(-k));
        /*
         * A mount we make must be undone whatever happens: a closed pipe
         * becomes EPIPE (`cloister diff | head`), and Ctrl-C or SIGTERM wait
         * until the unmount (they are delivered when we unblock them).
         */
        signal(SIGPIPE, SIG_IGN);
        sigprocmask(SIG_BLOCK, &stop_signals, &old_mask);
        k = review_workspace_open(c, argv[optind], true, &w, &err);
        if (k < 0) {
                sigprocmask(SIG_SETMASK, &old_mask, NULL);
                return command_fail(&command_diff, 1, "%s", err ? err : strerror(-k));
        }
        review_workspace_options(w, &o);
        o.in_memory = true;
        o.include_ignored = include_ignored;
        if (tty)
                o.progress = cli_progress_tty;
        k = review_open(&o, &r, &err);
        if (k < 0) {
                command_fail(&command_diff, 1, "%s", err ? err : strerror(-k));
                goto out;
        }
        k = review_build(r);
        if (tty)
                fputs("\r\033[K", stderr);
        if (review_warning(r) && !json)
                fprintf(stderr, "cloister diff: warning: %s\n", review_warning(r));
        if (k >= 0)
                k = review_home_changes(r, &home, &n_home);
        if (k < 0) {
                command_fail(&command_diff, 1, "%s", review_error(r));
                goto out;
        }
        if (json) {
                _cleanup_(json_decrefp) json_t *j = NULL;
                k = ops_review_json(r, fmt == REVIEW_STAT, &j);
                if (k < 0) {
                        command_fail(&command_diff, 1, "%s", review_error(r));
                        goto out;
                }
                if (json_dumpf(j, stdout, JSON_COMPACT) < 0 || putchar('\n') == EOF) {
                        command_fail(&command_diff, 1, "writing the output: %m");
                        goto out;
                }
        } else if (home_only) {
                home_print(stdout, home, n_home);
        } else {
                k = review_print(r, fmt, stdout);
                if (k == -EPIPE)
                        goto out; /* the reader went away: nothing to say */
                if (k < 0) {
                        command_fail(&command_diff, 1, "%s", review_error(r));
                        goto out;
                }
                /* Nothing left out silently: say how much the ignore rules kept out. */
                cli_review_ignored_note(&command_diff, r);
                /* Never mixed into the patch: the home may hold what the agent was given. */
                if (n_home) {
                        fflush(stdout);
                        fprintf(stderr,
                                "cloister diff: %zu change(s) in the hidden home, not in the "
                                "patch (names and sizes only):\n",
                                n_home);
                        home_print(stderr, home, n_home);
                }
        }
        if (fflush(stdout) != 0) {
                command_fail(&command_diff, 1, "writing the output: %m");
                goto out;
        }
        ret = 0;
out:
        review_home_changes_free(home, n_home);
        review_free(r);
        if (review_workspace_close(w) < 0) {
                command_fail(&command_diff, 1, "unmounting the workspace failed");
                ret = 1;
        }
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        return ret;
}

const struct command command_diff = {
        .name = "diff",
        .run = diff_run,
};
