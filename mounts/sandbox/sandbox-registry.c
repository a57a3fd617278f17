/* SPDX-License-Identifier: MIT */
/*
 * sandbox-registry.c: which sandboxes are running, so that the next run can
 * kill one that outlived its `cloister run`.
 *
 * bubblewrap ties the sandbox to the run (--die-with-parent), but arms that
 * only once the command is about to start; a run SIGKILLed in that instant
 * leaves the sandbox running. Each run therefore records its sandbox in
 * <state>/sandboxes/RUNPID as "RUNSTART PID1 PID1START PGID PGIDSTART"
 * (start times from /proc/PID/stat, so a reused pid is never mistaken for
 * ours), and removes the record when the sandbox is gone. It is written
 * twice: as soon as bubblewrap is spawned, naming its process group (PID1
 * 0: bubblewrap's child is not known yet), and again once the child is. A
 * run SIGKILLed between the two can leave bubblewrap's child waiting, in
 * that group, for a parent that is gone. A run that starts sweeps the
 * records of runs that are dead: it SIGKILLs their sandbox's first process,
 * which takes its whole PID namespace with it, and their process group.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>

#include "sandbox-private.h"
#include "lib/pidfile.h"
#include "lib/util.h"

static int proc_starttime(pid_t pid, unsigned long long *ret)
{
        return pidfile_starttime(pid, ret);
}

static bool process_is(pid_t pid, unsigned long long start)
{
        unsigned long long now;

        return pid > 0 && proc_starttime(pid, &now) == 0 && now == start;
}

int sandbox_registry_add(const char *state, pid_t pgid, pid_t pid1, char **ret_path)
{
        _cleanup_free_ char *dir = NULL, *path = NULL;
        unsigned long long run_start, start = 0, group_start = 0;
        _cleanup_close_ int fd = -1;
        char line[160];
        int r, l;

        r = proc_starttime(getpid(), &run_start);
        if (r < 0)
                return r;
        if (pid1 > 0 && (r = proc_starttime(pid1, &start)) < 0)
                return r;
        if (pgid > 0 && proc_starttime(pgid, &group_start) < 0)
                pgid = 0; /* gone already: nothing to sweep */
        if (asprintf(&dir, "%s/sandboxes", state) < 0 ||
            asprintf(&path, "%s/%d", dir, (int)getpid()) < 0)
                return -ENOMEM;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return negative_errno();
        l = snprintf(line, sizeof(line), "%llu %d %llu %d %llu\n", run_start, (int)pid1, start,
                     (int)pgid, group_start);
        if (write(fd, line, (size_t)l) != l)
                return negative_errno();
        if (ret_path)
                *ret_path = TAKE_PTR(path);
        return 0;
}

void sandbox_registry_remove(char *path)
{
        if (path)
                (void)unlink(path);
        free(path);
}

void sandbox_registry_sweep(const char *state)
{
        _cleanup_free_ char *dir = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        if (asprintf(&dir, "%s/sandboxes", state) < 0)
                return;
        d = opendir(dir);
        if (!d)
                return;
        while ((de = readdir(d))) {
                unsigned long long run_start, start;
                _cleanup_fclose_ FILE *f = NULL;
                char *end;
                long run = strtol(de->d_name, &end, 10);
                int fd, pid1;

                if (*end || run <= 0)
                        continue;
                fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0)
                        continue;
                f = fdopen(fd, "re");
                if (!f) {
                        close(fd);
                        continue;
                }
                unsigned long long group_start = 0, now;
                int pgid = 0, n = fscanf(f, "%llu %d %llu %d %llu", &run_start, &pid1, &start,
                                         &pgid, &group_start);
                if (n != 3 && n != 5)
                        continue;
                if (process_is((pid_t)run, run_start))
                        continue; /* that run is alive and owns its sandbox */
                if (process_is(pid1, start))
                        (void)kill(pid1, SIGKILL);
                /*
                 * bubblewrap's group: its leader may be gone, but a pid that
                 * names a group with members is never reused, so the group
                 * is still that run's; skipped only if a new process took
                 * the number (its start time differs).
                 */
                if (pgid > 1 && (proc_starttime(pgid, &now) < 0 || now == group_start))
                        (void)kill(-pgid, SIGKILL);
                (void)unlinkat(dirfd(d), de->d_name, 0);
        }
}
