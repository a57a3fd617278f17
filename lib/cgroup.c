/* SPDX-License-Identifier: MIT */
/*
 * cgroup.c: /proc/PID/cgroup's lines (proc(5)): "ID:controllers:path" a
 * hierarchy, the v2 one as "0::path". One parser for the three readers
 * that each split the line their own way: the sandbox's own cgroup for
 * its pids and memory cgroups (mounts/sandbox/sandbox-limits.c), the
 * container's cgroup whose limits it checks (sandbox-container.c), and
 * the journal's cgroup of a writer (fs/journal/journal-cgroup.c), which
 * reads another process's file and so must bound what it reads and refuse
 * what is cut. And a v2 cgroup's lists of controllers
 * (cgroup.controllers, cgroup.subtree_control), which both sandbox files
 * read too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "readall.h"
#include "util.h"

/* Our own file: a line per hierarchy, a dozen or so, each under CGROUP_LINE_MAX. */
#define CGROUP_SELF_MAX (64 * 1024)

int cgroup_line_next(const char **pos, const char *end, struct cgroup_line *ret)
{
        const char *line = *pos;

        while (line < end) {
                const char *nl = memchr(line, '\n', (size_t)(end - line));
                const char *c1, *c2;

                /* A line cut at the read's bound (or past it) is no answer. */
                if (!nl)
                        return -EBADMSG;
                if (nl - line >= CGROUP_LINE_MAX)
                        return -EMSGSIZE;
                c1 = memchr(line, ':', (size_t)(nl - line));
                c2 = c1 ? memchr(c1 + 1, ':', (size_t)(nl - c1 - 1)) : NULL;
                if (c2) {
                        *ret = (struct cgroup_line){
                                .id = line,
                                .id_len = (size_t)(c1 - line),
                                .controllers = c1 + 1,
                                .controllers_len = (size_t)(c2 - c1 - 1),
                                .path = c2 + 1,
                                .path_len = (size_t)(nl - c2 - 1),
                        };
                        *pos = nl + 1;
                        return 1;
                }
                line = nl + 1;
        }
        *pos = end;
        return 0;
}

bool cgroup_list_has(const char *list, size_t len, const char *controller)
{
        size_t cl = strlen(controller);

        if (cl == 0)
                return false;
        while (len) {
                const char *comma = memchr(list, ',', len);
                size_t l = comma ? (size_t)(comma - list) : len;

                if (l == cl && memcmp(list, controller, cl) == 0)
                        return true;
                if (!comma)
                        break;
                len -= l + 1;
                list = comma + 1;
        }
        return false;
}

bool cgroup_line_is(const struct cgroup_line *line, const char *controller)
{
        if (!controller)
                return line->id_len == 1 && line->id[0] == '0' && line->controllers_len == 0;
        return cgroup_list_has(line->controllers, line->controllers_len, controller);
}

int cgroup_text_path(const char *text, size_t len, const char *controller, const char **ret_path,
                     size_t *ret_len)
{
        const char *pos = text;
        struct cgroup_line line;
        int r;

        while ((r = cgroup_line_next(&pos, text + len, &line)) > 0)
                if (cgroup_line_is(&line, controller)) {
                        *ret_path = line.path;
                        *ret_len = line.path_len;
                        return 0;
                }
        return r < 0 ? r : -ENOENT;
}

int cgroup_self_path(const char *controller, char **ret)
{
        _cleanup_close_ int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *text = NULL;
        const char *path;
        size_t len, n;
        char *p;
        int r;

        if (fd < 0)
                return negative_errno();
        r = fd_read_whole(fd, 0, CGROUP_SELF_MAX, &text, &len);
        if (r < 0)
                return r;
        r = cgroup_text_path(text, len, controller, &path, &n);
        if (r < 0)
                return r;
        if (memchr(path, '\0', n))
                return -EBADMSG;
        p = strndup(path, n);
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

bool cgroup_file_has(const char *path, const char *controller)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char buf[CGROUP_FILE_MAX], *nl, *save = NULL;

        /* A line cut at the bound could end in a prefix of a longer name. */
        if (!f || !fgets(buf, sizeof(buf), f) || !(nl = strchr(buf, '\n')))
                return false;
        *nl = '\0';
        for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
                if (streq(t, controller))
                        return true;
        return false;
}
