/* SPDX-License-Identifier: MIT */
/*
 * copy.c: copying a file's data from one fd to another, as the host
 * allows: a reflink (FICLONE) when the two share a filesystem that can,
 * else copy_file_range over the data extents only (holes stay holes),
 * else read and write. Copy-up, the seed of a state and squash use it.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fs.h>

#include "format.h"
#include "lib/util.h"

int copyup_fd_data(int in, int out, uint64_t size)
{
        off_t pos = 0;

        if (size == 0)
                return 0;
        if (ioctl(out, FICLONE, in) == 0)
                return 0;
        while ((uint64_t)pos < size) {
                off_t data = lseek(in, pos, SEEK_DATA), hole;
                if (data < 0) {
                        if (errno == ENXIO)
                                break; /* only a hole remains */
                        data = pos;    /* no SEEK_DATA: copy everything */
                        hole = (off_t)size;
                } else {
                        hole = lseek(in, data, SEEK_HOLE);
                        if (hole < 0)
                                hole = (off_t)size;
                }
                while (data < hole) {
                        off_t o = data;
                        ssize_t n = copy_file_range(in, &data, out, &o, (size_t)(hole - data), 0);
                        if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
                                      errno == EOPNOTSUPP)) {
                                char buf[65536];
                                ssize_t k = pread(in, buf, MIN(sizeof(buf), (size_t)(hole - data)),
                                                  data);
                                if (k <= 0)
                                        return k < 0 ? negative_errno() : -EIO;
                                if (pwrite(out, buf, (size_t)k, data) != k)
                                        return negative_errno();
                                data += k;
                                continue;
                        }
                        if (n < 0)
                                return negative_errno();
                        if (n == 0)
                                return -EIO;
                }
                pos = hole;
        }
        if (ftruncate(out, (off_t)size) < 0)
                return negative_errno();
        return 0;
}
