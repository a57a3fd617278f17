/* SPDX-License-Identifier: MIT */
/*
 * mkdir.c: mkdir -p (mkdir.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mkdir.h"
#include "util.h"

int mkdir_parents(const char *path, mode_t mode)
{
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return negative_errno();
                *s = '/';
        }
        return 0;
}

int mkdir_p(const char *path, mode_t parent_mode, mode_t mode)
{
        int r = mkdir_parents(path, parent_mode);

        if (r < 0)
                return r;
        if (mkdir(path, mode) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}
