/* SPDX-License-Identifier: MIT */
/*
 * readall.h: read a whole regular file from a descriptor, bounded; and
 * write a whole buffer to one.
 */
#pragma once

#include <stddef.h>

/*
 * Read fd to its end into a malloc'd buffer (*ret, *ret_len bytes; one
 * spare byte after them, so a caller may add a NUL). size is what fstat
 * said (a first guess: the file may grow or shrink while it is read); more
 * than max bytes is -EFBIG, as is a size over max. A read error is its
 * negative errno; nothing is returned then.
 */
int fd_read_whole(int fd, size_t size, size_t max, char **ret, size_t *ret_len);

/* Write all len bytes of buf to fd, again after a short write or EINTR.
 * 0, or the negative errno of the write that failed (-EIO for a write that
 * wrote nothing and set no errno, rather than trying forever). */
int fd_write_whole(int fd, const void *buf, size_t len);
