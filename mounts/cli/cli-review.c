/* SPDX-License-Identifier: MIT */
/*
 * cli-review.c: what cloister diff and cloister export print besides their
 * result: the progress line (only when stderr is a terminal; the callers
 * decide), the note on what the ignore rules left out, and the lines on
 * the paths the review itself left out.
 */
#include <stdio.h>

#include "cli-review.h"
#include "command.h"
#include "review.h"
#include "lib/quote.h"

void cli_progress_tty(const char *stage, size_t done, size_t total, void *userdata)
{
        (void)userdata;
        if (total)
                fprintf(stderr, "\rcloister: %s %zu/%zu paths", stage, done, total);
        else
                fprintf(stderr, "\rcloister: %s %zu paths", stage, done);
}

void cli_review_ignored_note(const struct command *cmd, const review *r)
{
        size_t n = review_ignored(r);

        if (n == 0)
                return;
        fflush(stdout);
        fprintf(stderr,
                "cloister %s: %zu ignored path%s left out, as `git add -A` would "
                "(.gitignore, .git/info/exclude); --include-ignored takes them\n",
                cmd->name, n, n == 1 ? "" : "s");
        if (review_ignored_uncertain(r))
                fprintf(stderr,
                        "cloister %s: note: the ignore rules have negations ('!'); libgit2 "
                        "applies one only against rules of its own file, git against all, so "
                        "git may take some of those paths\n",
                        cmd->name);
}

size_t cli_review_left_out_note(const struct command *cmd, const review *r, const char *into)
{
        size_t n, more;
        const struct review_left_out *l = review_left_out(r, &n, &more);

        if (n + more == 0)
                return 0;
        fflush(stdout);
        for (size_t i = 0; i < n; i++) {
                char why[256];
                review_left_out_describe(&l[i], why, sizeof(why));
                fprintf(stderr, "cloister %s: left out of %s: ", cmd->name, into);
                /* The agent named it: one line, nothing for the terminal. */
                quote_fputs(stderr, l[i].path, 0);
                fprintf(stderr, " (%s)\n", why);
        }
        if (more)
                fprintf(stderr, "cloister %s: left out of %s: %zu more paths, not listed\n",
                        cmd->name, into, more);
        fprintf(stderr,
                "cloister %s: %zu path%s left out of %s: it holds everything else, and the "
                "base's version of %s (exit status %d)\n",
                cmd->name, n + more, n + more == 1 ? "" : "s", into,
                n + more == 1 ? "that path" : "each of them", EXIT_LEFT_OUT);
        return n + more;
}
