/* SPDX-License-Identifier: MIT */
/*
 * cmd-diff.c: `cloister diff CONFIG [--stat | --name-status | --home] [--include-ignored]
 * [--json] [--since CHECKPOINT]`: the agent's work as a git patch against the base
 * revision, or against one of the workspace's checkpoints (mounted apart for the command).
 * `cloister diff A B` compares two workspaces of one base (two forks): A's tree stands
 * where the base's stood, as a checkpoint's does for --since.
 *
 * The source repository is not written: new objects live in an in-memory
 * object database for the duration of the command. If the workspace is not
 * mounted, it is mounted for the command and unmounted after.
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <signal.h>
#include <inttypes.h>
#include <unistd.h>

#include "cli-review.h"
#include "operations.h"
#include "command.h"
#include "config.h"
#include "review-workspace.h"
#include "review.h"
#include "layers.h"
#include "state.h"
#include "lib/errorf.h"
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

/*
 * --since's side for `cloister diff A B`: workspace A, mounted for the
 * command if it is not. Refused unless A shows the same source and base
 * commit as B, since the trees are built over that base.
 */
static int other_open(const char *path, const struct config *b, const review *rb,
                      struct ops_since *sv, char **ret_error)
{
        _cleanup_free_ char *src_a = NULL, *src_b = NULL;
        char ha[GIT_OID_HEXSZ + 1], hb[GIT_OID_HEXSZ + 1];
        int k = config_load(path, &sv->c, ret_error);

        if (k < 0)
                return k;
        src_a = realpath(sv->c->repo.source, NULL);
        src_b = realpath(b->repo.source, NULL);
        if (!src_a || !src_b || !streq(src_a, src_b))
                return errorf(ret_error, -EXDEV,
                              "%s: its [repo] source is '%s', not '%s': only workspaces of one "
                              "repository compare",
                              path, sv->c->repo.source, b->repo.source);
        k = ops_review_open(sv->c, path, &(struct ops_review_options){.in_memory = true}, &sv->x,
                            ret_error);
        if (k < 0)
                return k;
        if (!git_oid_equal(review_base_commit(sv->x.r), review_base_commit(rb))) {
                git_oid_tostr(ha, sizeof(ha), review_base_commit(sv->x.r));
                git_oid_tostr(hb, sizeof(hb), review_base_commit(rb));
                return errorf(ret_error, -EXDEV,
                              "%s: its base commit is %.12s, not %.12s: compare their exports "
                              "instead (git diff refs/cloister/A refs/cloister/B)",
                              path, ha, hb);
        }
        return 0;
}

static int diff_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"stat", no_argument, NULL, 's'},
                {"name-status", no_argument, NULL, 'n'},
                {"home", no_argument, NULL, 'H'},
                {"include-ignored", no_argument, NULL, 'I'},
                {"since", required_argument, NULL, 'S'},
                {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        struct ops_since since = {0};
        const char *since_cp = NULL, *other = NULL;
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        struct ops_review x = {0};
        review *r = NULL;
        struct review_home_change *home = NULL;
        size_t n_home = 0, left_out = 0;
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
                case 'S':
                        since_cp = optarg;
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
        if (optind != argc - 1 && optind != argc - 2)
                return command_fail(&command_diff, EXIT_USAGE,
                                    "expected CONFIG, or two: A B; see 'cloister help diff'");
        if (optind == argc - 2) {
                if (since_cp)
                        return command_fail(&command_diff, EXIT_USAGE,
                                            "--since compares one workspace with its checkpoint; "
                                            "A B compares two workspaces: not both");
                other = argv[optind++]; /* the patch goes from A's tree to B's */
        }
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
        /* The same review MCP's diff opens (mounts/ops), with the CLI's options. */
        k = ops_review_open(c, argv[optind],
                            &(struct ops_review_options){.in_memory = true,
                                                         .include_ignored = include_ignored,
                                                         .progress = tty ? cli_progress_tty : NULL},
                            &x, &err);
        r = x.r;
        if (k < 0) {
                command_fail(&command_diff, 1, "%s", err ? err : strerror(-k));
                goto out;
        }
        if (other) {
                struct review_options so;
                k = other_open(other, c, r, &since, &err);
                if (k < 0) {
                        command_fail(&command_diff, 1, "%s", err ? err : strerror(-k));
                        goto out;
                }
                review_workspace_options(since.x.w, &so);
                k = review_since(r, &so);
                if (k < 0) {
                        command_fail(&command_diff, 1, "%s: %s", other, review_error(r));
                        goto out;
                }
        } else if (since_cp) {
                /* The checkpoint's tree first, from its own mount; the diff starts there. */
                struct review_options so;
                k = ops_since_open(c, since_cp, &since, &err);
                if (k < 0) {
                        command_fail(&command_diff, 1, "checkpoint %s: %s", since_cp,
                                     err ? err : strerror(-k));
                        goto out;
                }
                review_workspace_options(since.x.w, &so);
                k = review_since(r, &so);
                if (k < 0) {
                        command_fail(&command_diff, 1, "checkpoint %s: %s", since_cp,
                                     review_error(r));
                        goto out;
                }
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
                left_out = json_array_size(json_object_get(j, "left_out")) +
                           (size_t)json_integer_value(json_object_get(j, "left_out_more"));
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
                /* After the patch, which stays whole and applies: what is not in it, and why. */
                left_out = cli_review_left_out_note(&command_diff, r, "the patch");
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
        /* The review came out: the status says whether it is all of the work. */
        ret = left_out ? EXIT_LEFT_OUT : 0;
out:
        review_home_changes_free(home, n_home);
        if (ops_since_close(&since) < 0)
                fprintf(stderr, "cloister diff: unmounting the checkpoint's view failed\n");
        if (ops_review_close(&x) < 0) {
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
