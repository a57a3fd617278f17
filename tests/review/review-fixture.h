/* SPDX-License-Identifier: MIT */
/*
 * review-fixture.h: helpers for the review unit tests: a scratch directory,
 * a source repository made by the real git binary, a plain directory that
 * stands in for the workspace view, and a record of the paths an edit
 * touched, written out in the fs's .cloister/changes format.
 */
#pragma once

#include <check.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char fx_dir[128]; /* the scratch directory: src/, view/, fresh/, changes */

/* Run a shell command in fx_dir; returns its exit status. */
int fx_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Output of a shell command run in fx_dir (malloc'd, NUL-terminated). */
char *fx_sh_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void fx_setup(void);
void fx_teardown(void);

/* Write a file below view/ (relative path), creating parent dirs. */
void fx_write(const char *rel, const void *data, size_t len);
void fx_write_str(const char *rel, const char *s);

/* Remember that rel was touched; opaque: it was removed or replaced as a directory. */
void fx_touch(const char *rel, bool opaque);
/* Write fx_dir/changes from the touched set, as the fs would ("/workspace/..."). */
void fx_changes_write(void);

/* Clone src at base into fresh/, apply the patch file, compare with view/: 0 if equal. */
int fx_apply_and_compare(const char *patch, bool am);
