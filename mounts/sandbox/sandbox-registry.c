/* SPDX-License-Identifier: MIT */
/*
 * sandbox-registry.c: which sandboxes are running, so that the next run can
 * kill one that outlived its `cloister run`.
 *
 * bubblewrap ties the sandbox to the run (--die-with-parent), but arms that
 * only once the command is about to start; a run SIGKILLed in that instant
 * leaves the sandbox running. Each run therefore records its sandbox in
 * <state>/sandboxes/RUNPID as "RUNSTART PID1 PID1START" (start times from
 * /proc/PID/stat, so a reused pid is never mistaken for ours), and removes
 * the record when the sandbox is gone. A run that starts sweeps the records
 * of runs that are dead and SIGKILLs their sandbox's first process, which
 * takes its whole PID namespace with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>

#include "sandbox-private.h"
#include "lib/util.h"

/* Field 22 of /proc/PID/stat: start time in clock ticks since boot. */
static int proc_starttime(pid_t pid, unsigned long long *ret)
{
        char path[64], buf[1024], *p;
        _cleanup_close_ int fd = -1;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return -EIO;
        buf[n] = '\0';
        p = strrchr(buf, ')'); /* the command name may hold spaces and parens */
        if (!p)
                return -EIO;
        p++;
        for (int field = 3; field < 22; field++) { /* p: the space before field 3 */
                p = strchr(p + 1, ' ');
                if (!p)
                        return -EIO;
        }
        return sscanf(p, " %llu", ret) == 1 ? 0 : -EIO;
}

static bool process_is(pid_t pid, unsigned long long start)
{
        unsigned long long now;

        return pid > 0 && proc_starttime(pid, &now) == 0 && now == start;
}

int sandbox_registry_add(const char *state, pid_t pid1, char **ret_path)
{
        _cleanup_free_ char *dir = NULL, *path = NULL;
        unsigned long long run_start, start;
        _cleanup_close_ int fd = -1;
        char line[128];
        int r, l;

        r = proc_starttime(getpid(), &run_start);
        if (r < 0)
                return r;
        r = proc_starttime(pid1, &start);
        if (r < 0)
                return r;
        if (asprintf(&dir, "%s/sandboxes", state) < 0 ||
            asprintf(&path, "%s/%d", dir, (int)getpid()) < 0)
                return -ENOMEM;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return negative_errno();
        l = snprintf(line, sizeof(line), "%llu %d %llu\n", run_start, (int)pid1, start);
        if (write(fd, line, (size_t)l) != l)
                return negative_errno();
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
                if (fscanf(f, "%llu %d %llu", &run_start, &pid1, &start) != 3)
                        continue;
                if (process_is((pid_t)run, run_start))
                        continue; /* that run is alive and owns its sandbox */
                if (process_is(pid1, start))
                        (void)kill(pid1, SIGKILL);
                (void)unlinkat(dirfd(d), de->d_name, 0);
        }
}
