/* SPDX-License-Identifier: MIT */
/*
 * cgroup.h: the one reader of /proc/PID/cgroup's lines,
 * "ID:controllers:path", for the sandbox's cgroups (mounts/sandbox) and
 * the journal's run_cgroup field (fs/journal/journal-cgroup.c); and of a
 * v2 cgroup's lists of controllers.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A line this long or longer (its newline not counted) is refused. */
#define CGROUP_LINE_MAX 4096

/* A v2 controller file's line (every controller the kernel has: some 80 bytes). */
#define CGROUP_FILE_MAX 512

/* One line, split; the pointers are into the text (no NUL after them). */
struct cgroup_line {
        const char *id;
        size_t id_len;
        const char *controllers; /* "a,b,c"; "" in v2 and in no v1 line */
        size_t controllers_len;
        const char *path; /* everything after the second colon, colons too */
        size_t path_len;
};

/*
 * The next line of text from *pos to end that has the two colons; a line
 * that has fewer is passed over. 1, *ret set and *pos moved past the
 * line's newline; 0 at the end of the text; -EBADMSG for a line with no
 * newline (a read cut short), -EMSGSIZE for one of CGROUP_LINE_MAX bytes
 * or more: what follows either is not read.
 */
int cgroup_line_next(const char **pos, const char *end, struct cgroup_line *ret);

/*
 * Whether the comma list of len bytes ("cpu,cpuacct", a line's
 * controllers or a v1 mount's super options) names controller exactly:
 * "cpu" is not "cpuacct", and "" is never named.
 */
bool cgroup_list_has(const char *list, size_t len, const char *controller);

/*
 * Whether line is the hierarchy of controller: a v1 line whose comma list
 * names it exactly ("cpu" is not in "cpuacct"), or, with controller NULL,
 * the v2 line ("0::path"). "" names no controller.
 */
bool cgroup_line_is(const struct cgroup_line *line, const char *controller);

/*
 * The path of the first line of text (len bytes) that is controller's
 * hierarchy (NULL: v2), as in cgroup_line_is(): 0 and *ret_path,
 * *ret_len set; -ENOENT if no line is; a refusal of cgroup_line_next()
 * met before it.
 */
int cgroup_text_path(const char *text, size_t len, const char *controller, const char **ret_path,
                     size_t *ret_len);

/*
 * Our own cgroup's path in controller's hierarchy (NULL: v2), read from
 * /proc/self/cgroup, malloc'd in *ret; cgroup_text_path()'s errors, a
 * path with a NUL is -EBADMSG, a file past 64 KiB -EFBIG.
 */
int cgroup_self_path(const char *controller, char **ret);

/*
 * Whether the v2 controller file at path (cgroup.controllers,
 * cgroup.subtree_control: "cpu io pids\n") lists controller. false if it
 * cannot be read, or its line has no newline within CGROUP_FILE_MAX bytes.
 */
bool cgroup_file_has(const char *path, const char *controller);
