/* SPDX-License-Identifier: MIT */
/*
 * cli-review.h: what cloister diff and cloister export share on the
 * terminal: the progress line.
 */
#pragma once

#include <stddef.h>

/* Progress callback for review_options.progress: one self-overwriting line on stderr. */
void cli_progress_tty(const char *stage, size_t done, size_t total, void *userdata);
