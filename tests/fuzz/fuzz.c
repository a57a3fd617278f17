/* SPDX-License-Identifier: MIT */
/*
 * fuzz.c: the input file and the error oracle every harness uses (fuzz.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "lint.h"

void fuzz_fail(const char *fmt, ...)
{
        va_list ap;

        fputs("fuzz: broken promise: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        abort();
}

const char *fuzz_file(const uint8_t *data, size_t size)
{
        static char path[64];
        static int fd = -1;

        if (fd < 0) {
                fd = memfd_create("fuzz-input.ini", MFD_CLOEXEC);
                if (fd < 0) {
                        perror("fuzz: memfd_create");
                        exit(1);
                }
                snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        }
        if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
                perror("fuzz: cannot write the input");
                exit(1);
        }
        return path;
}

void fuzz_error_check(const char *path, const uint8_t *data, size_t size, const char *err)
{
        struct lint l = {0};
        unsigned lines = 1;
        char *back;

        if (!err)
                fuzz_fail("a parser failed without an error message");
        for (size_t i = 0; i < size; i++)
                lines += data[i] == '\n';
        if (strchr(err, '\n'))
                fuzz_fail("error is not one line: %s", err);
        for (const unsigned char *c = (const unsigned char *)err; *c; c++)
                if (*c < 0x20 || *c == 0x7f)
                        fuzz_fail("error holds control character 0x%02x: %s", *c, err);
        if (strncmp(err, path, strlen(path)) != 0 || err[strlen(path)] != ':')
                fuzz_fail("error does not begin with the file '%s': %s", path, err);

        /* It reads back exactly as a finding, and names a line of the file. */
        if (lint_add_error(&l, LINT_ERROR, path, err) < 0 || l.n != 1)
                fuzz_fail("lint_add_error failed on: %s", err);
        back = lint_finding_format(&l.findings[0]);
        if (!back || strcmp(back, err) != 0)
                fuzz_fail("error does not read back as a finding:\n  %s\n  %s", err,
                          back ? back : "(null)");
        if (l.findings[0].line > lines)
                fuzz_fail("error names line %u of a %u-line file: %s", l.findings[0].line, lines,
                          err);
        free(back);
        lint_done(&l);
}

void fuzz_lint_check(struct lint *l, const char *what)
{
        for (size_t i = 0; i < l->n; i++) {
                char *s = lint_finding_format(&l->findings[i]);
                if (!s || strchr(s, '\n'))
                        fuzz_fail("%s finding is not one line: %s", what, s ? s : "(null)");
                free(s);
        }
        lint_done(l);
}
