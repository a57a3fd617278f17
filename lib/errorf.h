/* SPDX-License-Identifier: MIT */
/*
 * errorf.h: the one-line error message of a function that returns a
 * negative errno and, for its caller to print, says why in words.
 */
#pragma once

/*
 * Set *ret_error (if ret_error is not NULL) to a malloc'd message made
 * from fmt, and return code, so that an error path is one statement:
 *         return errorf(ret_error, -EINVAL, "'%s': not a directory", path);
 * Out of memory leaves *ret_error NULL; the caller then says strerror(code).
 */
int errorf(char **ret_error, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * The same, but the first message stands: *ret_error is set only if it is
 * still NULL, so that an inner function's more precise reason is kept
 * when its caller fails in turn (the layer stack's operations, fs/layers*.c).
 */
int errorf_first(char **ret_error, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
