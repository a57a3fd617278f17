/* SPDX-License-Identifier: MIT */
/*
 * errorf.c: see errorf.h.
 */
#include <stdarg.h>
#include <stdio.h>

#include "errorf.h"

int errorf(char **ret_error, int code, const char *fmt, ...)
{
        va_list ap;

        if (!ret_error)
                return code;
        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return code;
}

int errorf_first(char **ret_error, int code, const char *fmt, ...)
{
        va_list ap;

        if (!ret_error || *ret_error)
                return code;
        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return code;
}
