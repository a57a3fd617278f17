/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h: what the fuzz harnesses share (docs/fuzzing.md).
 *
 * Each harness defines LLVMFuzzerTestOneInput for one parser. Linked with
 * libFuzzer (clang, -Dfuzz=true) it is a coverage-guided fuzzer; linked
 * with driver.c it is a plain program that feeds a corpus and seeded
 * mutations of it, which `meson test` runs with any compiler.
 *
 * A harness checks more than that the parser survives: a parser's error
 * is one line, names the input's file and a line that exists, and reads
 * back exactly through lint_add_error(); an accepted input satisfies the
 * invariants its users rely on. A broken promise aborts, and the fuzzer
 * reports the input.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * Put data in a file and return its path: a memfd, reached as
 * /proc/self/fd/N, so parsers that take a path read it as any file.
 */
const char *fuzz_file(const uint8_t *data, size_t size);

/* Abort unless err is one line "PATH[:LINE]: ..." with LINE inside data. */
void fuzz_error_check(const char *path, const uint8_t *data, size_t size, const char *err);

struct lint;
/* Abort unless every finding in l formats as one line; then free them. */
void fuzz_lint_check(struct lint *l, const char *what);

/* Abort with a message: a promise of the parser does not hold. */
__attribute__((noreturn, format(printf, 1, 2))) void fuzz_fail(const char *fmt, ...);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
