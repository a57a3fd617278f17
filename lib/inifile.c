/* SPDX-License-Identifier: MIT */
/*
 * inifile.c: bounded file reading and a line-counting reader for inih.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inifile.h"
#include "lib/readall.h"
#include "lib/util.h"

static int read_error(char **ret_error, int r, const char *path, const char *what)
{
        if (ret_error && asprintf(ret_error, "%s: %s", path, what) < 0)
                *ret_error = NULL;
        return r;
}

int inifile_read(const char *path, size_t max, char **ret, size_t *ret_len, char **ret_error)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ char *msg = NULL;
        struct stat sb;
        size_t len = 0;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                r = negative_errno();
                if (asprintf(&msg, "cannot open: %s", strerror(-r)) < 0)
                        return -ENOMEM;
                return read_error(ret_error, r, path, msg);
        }
        if (fstat(fd, &sb) < 0)
                return read_error(ret_error, negative_errno(), path, "cannot stat");
        if (!S_ISREG(sb.st_mode))
                return read_error(ret_error, -EINVAL, path, "not a regular file");
        if ((uint64_t)sb.st_size > max) {
                if (asprintf(&msg, "file too large (%lld bytes, at most %zu)",
                             (long long)sb.st_size, max) < 0)
                        return -ENOMEM;
                return read_error(ret_error, -EFBIG, path, msg);
        }
        /*
         * Sized to the file, not to max: every subcommand loads a config,
         * and a fuzzer loads millions. Read to EOF, not st_size: the file
         * may be a growing one.
         */
        r = fd_read_whole(fd, (size_t)sb.st_size, max, &buf, &len);
        if (r == -EFBIG) {
                if (asprintf(&msg, "file too large (at most %zu bytes)", max) < 0)
                        return -ENOMEM;
                return read_error(ret_error, r, path, msg);
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return read_error(ret_error, r, path, "cannot read");
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

unsigned inifile_nul_line(const char *buf, size_t len)
{
        const char *nul = memchr(buf, '\0', len);
        unsigned line = 1;

        if (!nul)
                return 0;
        for (const char *c = buf; c < nul; c++)
                line += *c == '\n';
        return line;
}

/*
 * Whether inih accepts a line, by its own rules (ini.c): blank, a comment
 * (';' or '#' first), a "[section]" with its ']', "key = value" or
 * "key: value", or, indented, the continuation of the last key's value.
 * start is the line past its leading blanks.
 */
static bool line_is_wellformed(struct inifile_reader *r, const char *start, bool indented)
{
        if (*start == '\0' || *start == '\n' || *start == '\r' || *start == ';' || *start == '#')
                return true;
        if (*start == '[') {
                r->in_key = false;
                return strchr(start, ']') != NULL;
        }
        if (indented && r->in_key)
                return true;
        if (!strpbrk(start, "=:"))
                return false;
        r->in_key = true;
        return true;
}

char *inifile_reader_gets(char *str, int num, void *stream)
{
        struct inifile_reader *r = stream;
        size_t n = 0;
        const char *c;

        if (r->pos >= r->end || r->too_long)
                return NULL;
        r->line++;
        while (r->pos < r->end && n + 1 < (size_t)num) {
                char ch = *r->pos++;
                str[n++] = ch;
                if (ch == '\n')
                        break;
        }
        if (n + 1 >= (size_t)num && str[n - 1] != '\n' && r->pos < r->end) {
                if (*r->pos != '\n') {
                        r->too_long = true;
                        return NULL;
                }
                r->pos++; /* exactly full: the newline does not need the space */
        }
        str[n] = '\0';
        for (c = str; *c == ' ' || *c == '\t'; c++)
                ;
        if (r->line == 1 && (unsigned char)c[0] == 0xEF && (unsigned char)c[1] == 0xBB &&
            (unsigned char)c[2] == 0xBF)
                c += 3; /* a UTF-8 BOM, which inih skips */
        if (*c == '[')
                r->section_line = r->line;
        if (r->on_line && !r->on_line(r->user, str))
                return NULL;
        if (!line_is_wellformed(r, c, c > str)) {
                r->malformed = r->line;
                return NULL;
        }
        return str;
}

char *inifile_escape(const char *s, bool high)
{
        size_t n = 0;
        char *out, *o;

        for (const unsigned char *c = (const unsigned char *)s; *c; c++)
                n += (*c < 0x20 || *c == 0x7f || (high && *c >= 0x80)) ? 4 : 1;
        out = malloc(n + 1);
        if (!out)
                return NULL;
        o = out;
        for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
                if (*c < 0x20 || *c == 0x7f || (high && *c >= 0x80)) {
                        snprintf(o, 5, "\\x%02x", *c);
                        o += 4;
                } else {
                        *o++ = (char)*c;
                }
        }
        *o = '\0';
        return out;
}
