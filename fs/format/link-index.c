/* SPDX-License-Identifier: MIT */
/*
 * link-index.c: reading a layer's link index (core/links.c says what it
 * is): its aliases.json and whether an inode is the index's entry for an
 * st_ino. core/links.c changes the writable layer's index; lower-stack.c
 * reads the frozen layers' with the same code.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "lib/readall.h"
#include "lib/util.h"

#define ALIASES     LINKS_ALIASES
#define ALIASES_MAX (64u * 1024 * 1024)

void links_key_of(uint64_t ino, char buf[static 17])
{
        snprintf(buf, 17, "%016llx", (unsigned long long)ino);
}

json_t *links_aliases_load(int rootfd)
{
        _cleanup_close_ int dfd = openat(rootfd, LINKS_DIR,
                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC),
                            fd = -1;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len = 0;
        json_t *j = NULL;

        if (dfd >= 0)
                fd = openat(dfd, ALIASES, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &st) == 0 &&
            fd_read_whole(fd, (size_t)st.st_size, ALIASES_MAX, &buf, &len) == 0)
                j = json_loadb(buf, len, 0, NULL);
        if (!json_is_object(j)) {
                json_decref(j);
                j = json_object();
        }
        return j;
}

unsigned links_aliases_get(json_t *aliases, uint64_t ino)
{
        char k[17];
        json_t *v;

        links_key_of(ino, k);
        v = json_object_get(aliases, k);
        return json_is_integer(v) && json_integer_value(v) > 0 ? (unsigned)json_integer_value(v)
                                                               : 0;
}

/* Is fd's inode the one rootfd's index holds for ino? */
bool links_in_index(int rootfd, uint64_t ino, int fd)
{
        char name[sizeof(LINKS_DIR) + 20];
        struct stat a, b;

        snprintf(name, sizeof(name), LINKS_DIR "/%016llx", (unsigned long long)ino);
        return fstatat(rootfd, name, &a, AT_SYMLINK_NOFOLLOW) == 0 &&
               fstatat(fd, "", &b, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0 &&
               a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
