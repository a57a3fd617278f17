/* SPDX-License-Identifier: MIT */
/*
 * cli-review.c: the progress line of cloister diff and cloister export,
 * shown only when stderr is a terminal (the callers decide).
 */
#include <stdio.h>

#include "cli-review.h"

void cli_progress_tty(const char *stage, size_t done, size_t total, void *userdata)
{
        (void)userdata;
        if (total)
                fprintf(stderr, "\rcloister: %s %zu/%zu paths", stage, done, total);
        else
                fprintf(stderr, "\rcloister: %s %zu paths", stage, done);
}
