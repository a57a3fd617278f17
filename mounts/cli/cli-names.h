/* SPDX-License-Identifier: MIT */
/*
 * cli-names.h: printing what the agent named (file names, symlink targets,
 * xattr names, command names) on the reviewer's terminal, and the progress
 * line the review commands share.
 *
 * Trust boundary: every byte of such a name is chosen by the agent. Printed
 * raw, a newline forges extra lines of `cloister log` or `cloister diff
 * --home`, and an escape sequence drives the reviewer's terminal (retitle
 * it, hide text, on some terminals answer back). So names are quoted the
 * way git quotes paths (core.quotePath): unchanged when they are plain,
 * else in double quotes with C escapes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* True when s can be printed as it is: valid UTF-8, no controls, no '"' or '\\'. */
bool cli_name_is_plain(const char *s);
/* Print s to f, quoted and escaped unless it is plain. */
void cli_name_print(FILE *f, const char *s);
/* Progress callback for review_options.progress: one self-overwriting line on stderr. */
void cli_progress_tty(const char *stage, size_t done, size_t total, void *userdata);
