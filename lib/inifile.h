/* SPDX-License-Identifier: MIT */
/*
 * inifile.h: reading an INI file for inih, the way every cloister file is
 * read (workspace config, broker policy, egress rules).
 *
 * Debian's inih has no INI_HANDLER_LINENO, so we feed it from memory with
 * our own line reader: it counts lines, remembers the line of the last
 * section header (inih reports sections lazily, with the next key) and
 * stops at an over-long line instead of letting inih split it. The file is
 * read whole first, bounded, and a NUL byte in it is an error.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct inifile_reader {
        const char *pos, *end;
        unsigned line;         /* of the line last handed to inih */
        unsigned section_line; /* of the last "[header]" line */
        bool too_long;         /* stopped at a line longer than inih's buffer */
        /* The first line inih would reject (neither a comment, a section
         * header, 'key = value' nor a continuation), where reading stopped:
         * inih itself goes on past it and reports it only at the end, after
         * any error a later line makes, so the line named would be wrong. */
        unsigned malformed;
        bool in_key; /* a key line came since the last section header */
        /* Called with every line before inih sees it; returns false to stop. */
        bool (*on_line)(void *user, const char *line);
        void *user;
};

/*
 * Read a regular file of at most max bytes into a NUL-terminated buffer.
 * On failure returns a negative errno and a malloc'd one-line message
 * naming the file (ret_error may be NULL).
 */
int inifile_read(const char *path, size_t max, char **ret, size_t *ret_len, char **ret_error);

/* The 1-based line of the first NUL byte in buf[0..len), or 0 if none. */
unsigned inifile_nul_line(const char *buf, size_t len);

/* An ini_reader (fgets-like) over r; pass r as the stream. */
char *inifile_reader_gets(char *str, int num, void *stream);

/*
 * s, printable: each control character (below 0x20, and 0x7f) and, if
 * high, each byte from 0x80 written as \xNN. Every parser error passes
 * through it, so a value echoed in an error can neither split the error
 * into two lines nor drive the terminal. NULL if out of memory.
 */
char *inifile_escape(const char *s, bool high);
