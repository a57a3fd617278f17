/* SPDX-License-Identifier: MIT */
/*
 * cli-review.h: what cloister diff and cloister export share on the
 * terminal: the progress line, the note on ignored paths and the lines on
 * left-out paths.
 */
#pragma once

#include <stddef.h>

struct command;
typedef struct review review;

/* Progress callback for review_options.progress: one self-overwriting line on stderr. */
void cli_progress_tty(const char *stage, size_t done, size_t total, void *userdata);
/* On stderr, if the ignore rules left paths out: how many, and how to take them. */
void cli_review_ignored_note(const struct command *cmd, const review *r);

/*
 * The review came out, but without the change of some paths (review.h,
 * review_left_out()): the exit status that says so, after the output.
 */
#define EXIT_LEFT_OUT 3
/*
 * On stderr, after the output: one line per left-out path (its name quoted
 * as git quotes paths) and a last one saying how many. Returns how many
 * were left out (0: nothing printed).
 */
size_t cli_review_left_out_note(const struct command *cmd, const review *r, const char *into);
