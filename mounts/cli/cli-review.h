/* SPDX-License-Identifier: MIT */
/*
 * cli-review.h: what cloister diff and cloister export share on the
 * terminal: the progress line and the note on ignored paths.
 */
#pragma once

#include <stddef.h>

struct command;
typedef struct review review;

/* Progress callback for review_options.progress: one self-overwriting line on stderr. */
void cli_progress_tty(const char *stage, size_t done, size_t total, void *userdata);
/* On stderr, if the ignore rules left paths out: how many, and how to take them. */
void cli_review_ignored_note(const struct command *cmd, const review *r);
