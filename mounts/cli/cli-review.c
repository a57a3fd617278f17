/* SPDX-License-Identifier: MIT */
/*
 * cli-review.c: what cloister diff and cloister export print besides their
 * result: the progress line (only when stderr is a terminal; the callers
 * decide) and the note on what the ignore rules left out.
 */
#include <stdio.h>

#include "cli-review.h"
#include "command.h"
#include "review.h"

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
