/* SPDX-License-Identifier: MIT */
/*
 * journal-cgroup.c: the cgroup of the process behind an entry, its
 * "run_cgroup" field (journal.h, struct journal_caller).
 *
 * A root-run sandbox gets a pids cgroup of its own,
 * <parent>/cloister-<runner pid>-<seq> (mounts/sandbox/sandbox-limits.c),
 * and its run record's end names it ("cgroup"): so the report joins an
 * entry to the command that made it exactly, where today it can only join
 * by time (mounts/ops/ops-trace.c). Only that name is kept, the last
 * component of the path, and only when it is one (cloister-DIGITS-DIGITS);
 * a writer in any other cgroup (a host process, the review, an
 * unprivileged run, which has none) gets no field.
 *
 * Trust: the daemon reads the host's /proc/PID/cgroup; the agent cannot
 * choose what it says. The sandbox has no cgroupfs at all
 * (mounts/sandbox/sandbox-bwrap.c binds no /sys, and the seccomp filter,
 * sandbox-seccomp.c, refuses mount(2) and fsmount(2)), and the cgroup
 * directories on the host are root's while the agent runs as an
 * unprivileged host uid: it can neither make a cgroup nor move a process
 * into another run's. Its bwrap cgroup namespace changes only the path's
 * start, never its last component, which is all that is kept. What is
 * read is still bounded (lib/cgroup.c splits the lines): a file past
 * CGROUP_READ_MAX bytes is cut, and a cut line or one past
 * CGROUP_LINE_MAX ends the search with no answer; a name longer than
 * JOURNAL_CGROUP_MAX is none.
 *
 * Cost: a read per entry at most (entries are coalesced: one per window for
 * the writes of a process to a file), and each thread keeps its last
 * answer for JOURNAL_COALESCE_MS (whatever window a test sets): a pid is
 * not reused that fast, so the answer is still that process's.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "journal-internal.h"
#include "lib/cgroup.h"
#include "lib/util.h"

#define CGROUP_READ_MAX 4096

static bool run_name_valid(const char *s, size_t n)
{
        const char *p = s, *end = s + n;
        size_t digits;

        if (n >= JOURNAL_CGROUP_MAX || n < strlen("cloister-0-0") ||
            strncmp(s, "cloister-", strlen("cloister-")) != 0)
                return false;
        p += strlen("cloister-");
        for (int part = 0; part < 2; part++) {
                for (digits = 0; p < end && *p >= '0' && *p <= '9'; p++)
                        digits++;
                if (!digits || digits > 10)
                        return false;
                if (part == 0 && (p == end || *p++ != '-'))
                        return false;
        }
        return p == end;
}

bool journal_cgroup_parse(const char *text, size_t len, char *buf, size_t size)
{
        const char *pos = text;
        struct cgroup_line line;

        /* A line cut short or past CGROUP_LINE_MAX ends the search: no answer. */
        while (cgroup_line_next(&pos, text + len, &line) > 0) {
                const char *name = line.path, *end = line.path + line.path_len;
                size_t n;

                /* v2: "0::/path"; a v1 hierarchy: its pids controller's line. */
                if (!cgroup_line_is(&line, NULL) && !cgroup_line_is(&line, "pids"))
                        continue;
                for (const char *p = line.path; p < end; p++)
                        if (*p == '/')
                                name = p + 1;
                n = (size_t)(end - name);
                if (run_name_valid(name, n) && n < size) {
                        memcpy(buf, name, n);
                        buf[n] = 0;
                        return true;
                }
        }
        return false;
}

bool journal_cgroup_read(pid_t pid, char *buf, size_t size)
{
        /* This thread's last answer, and until when it holds (CLOCK_MONOTONIC). */
        static _Thread_local struct {
                pid_t pid;
                struct timespec until;
                bool have;
                char name[JOURNAL_CGROUP_MAX];
        } last;
        char text[CGROUP_READ_MAX], p[64];
        _cleanup_close_ int fd = -1;
        struct timespec now;
        size_t len = 0;
        ssize_t n;

        if (pid <= 0 || size == 0)
                return false;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (last.pid == pid && journal_timespec_before(&now, &last.until)) {
                if (!last.have || strlen(last.name) >= size)
                        return false;
                memcpy(buf, last.name, strlen(last.name) + 1);
                return true;
        }
        snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
        fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return false; /* gone: not cached, the pid may come back as another */
        while (len < sizeof(text) && (n = read(fd, text + len, sizeof(text) - len)) > 0)
                len += (size_t)n;
        last.pid = pid;
        last.until = journal_deadline_in(JOURNAL_COALESCE_MS);
        last.have = journal_cgroup_parse(text, len, last.name, sizeof(last.name));
        if (!last.have || strlen(last.name) >= size)
                return false;
        memcpy(buf, last.name, strlen(last.name) + 1);
        return true;
}
