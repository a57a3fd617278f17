/* SPDX-License-Identifier: MIT */
/*
 * sandbox-registry.c: which sandboxes are running, so that the next run can
 * kill one that outlived its `cloister run`.
 *
 * bubblewrap ties the sandbox to the run (--die-with-parent), but arms that
 * only once the command is about to start; a run SIGKILLed before that
 * leaves the sandbox running, or bubblewrap's child blocked forever in its
 * setup on a wake-up from a bubblewrap that died. Each run therefore
 * records its sandbox in <state>/sandboxes/RUNPID as "RUNSTART PID1
 * PID1START PGID PGIDSTART" (start times from /proc/PID/stat, so a reused
 * pid is never mistaken for ours), and removes the record when the sandbox
 * is gone.
 *
 * The record exists before the spawn, naming nothing. The spawned child,
 * before it execs bubblewrap and while the run is suspended in the spawn
 * (CLONE_VFORK), makes its own process group and writes it in: so from the
 * first instant anything of the sandbox exists, a sweep can find it,
 * whenever the run dies. Once bubblewrap's child is known, the run adds
 * it. A run that starts sweeps the records of runs that are dead: it
 * SIGKILLs their sandbox's first process, which takes its whole PID
 * namespace with it, and their process group, where bubblewrap's child
 * stays until it is about to fork the command.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/*
 * The record's one line, rewritten in place: the run is its only writer, and
 * a sweep reads it only once the run is dead. No allocation: the child calls
 * this before its exec.
 */
static int record_write(const struct sandbox_record *rec, pid_t pgid, pid_t pid1)
{
        unsigned long long start = 0, group_start = 0;
        char line[160];
        ssize_t n;
        int r, l;

        if (pid1 > 0 && (r = proc_starttime(pid1, &start)) < 0)
                return r;
        if (pgid > 0 && proc_starttime(pgid, &group_start) < 0)
                pgid = 0; /* gone already: nothing to sweep */
        l = snprintf(line, sizeof(line), "%llu %d %llu %d %llu\n", rec->run_start, (int)pid1, start,
                     (int)pgid, group_start);
        n = pwrite(rec->fd, line, (size_t)l, 0);
        if (n < 0)
                return negative_errno();
        if (n != l)
                return -EIO; /* short, for one line of under 100 bytes: the disk is full */
        if (ftruncate(rec->fd, l) < 0)
                return negative_errno();
        return 0;
}

int sandbox_registry_open(const char *state, struct sandbox_record *ret)
{
        _cleanup_free_ char *dir = NULL;
        struct sandbox_record rec = SANDBOX_RECORD_NULL;
        int r;

        r = proc_starttime(getpid(), &rec.run_start);
        if (r < 0)
                return r;
        if (asprintf(&dir, "%s/sandboxes", state) < 0 ||
            asprintf(&rec.path, "%s/%d", dir, (int)getpid()) < 0)
                return -ENOMEM;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                goto fail;
        rec.fd = open(rec.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (rec.fd < 0)
                goto fail;
        r = record_write(&rec, 0, 0);
        if (r < 0) {
                sandbox_registry_close(&rec);
                return r;
        }
        *ret = rec;
        return 0;
fail:
        r = negative_errno();
        free(rec.path); /* nothing made yet to unlink */
        return r;
}

int sandbox_registry_claim(const struct sandbox_record *rec)
{
        return record_write(rec, (pid_t)syscall(SYS_getpid), 0);
}

int sandbox_registry_update(const struct sandbox_record *rec, pid_t pgid, pid_t pid1)
{
        return record_write(rec, pgid, pid1);
}

void sandbox_registry_close(struct sandbox_record *rec)
{
        if (rec->path)
                (void)unlink(rec->path);
        rec->fd = safe_close(rec->fd);
        free(rec->path);
        rec->path = NULL;
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
