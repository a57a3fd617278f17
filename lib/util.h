/* SPDX-License-Identifier: MIT */
/*
 * util.h: small helpers shared by every cloister module.
 *
 * Cleanup attributes in the style of systemd's alloc-util.h and bubblewrap's
 * utils.h, so that every early return frees what it owns. It lives in lib/,
 * the bottom layer, so fs/, broker/ and mounts/ all use it without any of
 * them depending on another; header-only, so it costs no link dependency.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#define _cleanup_(f)   __attribute__((cleanup(f)))
#define _unused_       __attribute__((unused))
#define _noreturn_     __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _must_check_   __attribute__((warn_unused_result))
#define _likely_(x)    __builtin_expect(!!(x), 1)
#define _unlikely_(x)  __builtin_expect(!!(x), 0)
#define ELEMENTSOF(x)  (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b)      ((a) < (b) ? (a) : (b))
#define MAX(a, b)      ((a) > (b) ? (a) : (b))

/* Hand ownership of a pointer or fd out of a _cleanup_ variable. */
#define TAKE_PTR(p)                                                                                \
        ({                                                                                         \
                __typeof__(p) _p_ = (p);                                                           \
                (p) = NULL;                                                                        \
                _p_;                                                                               \
        })
#define TAKE_FD(fd)                                                                                \
        ({                                                                                         \
                int _fd_ = (fd);                                                                   \
                (fd) = -1;                                                                         \
                _fd_;                                                                              \
        })

static inline void freep(void *p)
{
        free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

/* close() that keeps errno, so it can run on error paths. */
static inline int safe_close(int fd)
{
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -1;
}

static inline void closep(int *fd)
{
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

static inline void closedirp(DIR **d)
{
        if (*d)
                closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Free a NULL-terminated array of strings. */
static inline void strv_free(char **v)
{
        if (!v)
                return;
        for (char **s = v; *s; s++)
                free(*s);
        free(v);
}
static inline void strv_freep(char ***v)
{
        strv_free(*v);
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)

static inline bool streq(const char *a, const char *b)
{
        return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b)
{
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

static inline const char *startswith(const char *s, const char *prefix)
{
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

/* Negative errno of the last failed libc call, never 0. */
static inline int negative_errno(void)
{
        return errno > 0 ? -errno : -EIO;
}
