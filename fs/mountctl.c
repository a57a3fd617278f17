/* SPDX-License-Identifier: MIT */
/*
 * mountctl.c: finding, cleaning up and stopping a workspace's daemon.
 *
 * A daemon killed with SIGKILL leaves its pid file and a dead FUSE mount
 * (ENOTCONN); both are cleaned up here so that the next mount just works.
 * The pid file is trusted only if that pid is still a cloister process.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs-private.h"
#include "fs.h"
#include "lib/util.h"

static int read_pid(const char *state)
{
        _cleanup_free_ char *p = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        int pid;
        if (asprintf(&p, "%s/mount.pid", state) < 0)
                return -ENOMEM;
        f = fopen(p, "re");
        if (!f)
                return errno == ENOENT ? 0 : negative_errno();
        if (fscanf(f, "%d", &pid) != 1 || pid <= 1)
                return 0;
        return pid;
}

int fs_proc_starttime(int pid, unsigned long long *ret)
{
        char path[64], stat[1024] = "", *p;
        _cleanup_fclose_ FILE *f = NULL;
        unsigned long long t;
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        f = fopen(path, "re");
        if (!f || !fgets(stat, sizeof(stat), f))
                return -ESRCH;
        p = strrchr(stat, ')');
        /* Field 22 (starttime); after ')' come fields 3.. */
        if (!p || sscanf(p + 2,
                         "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                         "%*d %*d %*d %llu",
                         &t) != 1)
                return -EIO;
        *ret = t;
        return 0;
}

/* Is pid the daemon that wrote <state>/fs/mount.start (not a reused pid)? */
static bool pid_started_as_recorded(const char *state, int pid)
{
        _cleanup_free_ char *p = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        unsigned long long want, have;
        if (asprintf(&p, "%s/fs/mount.start", state) < 0)
                return true;
        f = fopen(p, "re");
        if (!f || fscanf(f, "%llu", &want) != 1)
                return true; /* nothing recorded: trust the pid */
        return fs_proc_starttime(pid, &have) == 0 && have == want;
}

/* A live (not zombie) process named cloister. */
static bool pid_is_cloister(int pid)
{
        char path[64], stat[256] = "", *p;
        _cleanup_fclose_ FILE *f = NULL;
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        f = fopen(path, "re");
        if (!f || !fgets(stat, sizeof(stat), f))
                return false;
        /* "PID (comm) S ...": comm may hold spaces, so find the last ')'. */
        p = strrchr(stat, ')');
        if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
                return false;
        return strncmp(strchr(stat, '(') ? strchr(stat, '(') + 1 : "", "cloister", 8) == 0;
}

/* Is path a mountpoint? 1: a cloister FUSE mount, 2: something else, 0: no. */
static int mount_kind(const char *path)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        char *line = NULL;
        size_t n = 0;
        int kind = 0;
        if (!f)
                return 0;
        while (getline(&line, &n, f) > 0) {
                char mp[4096], fstype[256];
                const char *sep = strstr(line, " - ");
                if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && streq(mp, path)) {
                        kind = sep && sscanf(sep + 3, "%255s", fstype) == 1 &&
                                               streq(fstype, "fuse.cloister")
                                       ? 1
                                       : 2;
                }
        }
        free(line);
        return kind;
}

static bool is_mounted(const char *path)
{
        return mount_kind(path) != 0;
}

static void detach(const char *mountpoint)
{
        if (geteuid() == 0) {
                (void)umount2(mountpoint, MNT_DETACH);
                return;
        }
        pid_t pid = fork();
        if (pid == 0) {
                execlp("fusermount3", "fusermount3", "-u", "-z", mountpoint, (char *)NULL);
                _exit(127);
        }
        if (pid > 0)
                (void)waitpid(pid, NULL, 0);
}

int fs_mount_probe(const char *state, const char *mountpoint, int *ret_pid)
{
        int pid = read_pid(state);
        bool alive;
        if (pid < 0)
                return pid;
        alive = pid > 0 && pid_is_cloister(pid) && pid_started_as_recorded(state, pid);
        if (alive && is_mounted(mountpoint)) {
                if (ret_pid)
                        *ret_pid = pid;
                return 1;
        }
        if (alive) {
                /* Starting up, or shutting down: treat as serving; the caller may retry. */
                if (ret_pid)
                        *ret_pid = pid;
                return 1;
        }
        /* Dead daemon: detach its mount (ENOTCONN) and forget its pid. */
        if (is_mounted(mountpoint)) {
                if (mount_kind(mountpoint) != 1)
                        return -EBUSY; /* not a cloister mount: leave it alone */
                detach(mountpoint);
                if (is_mounted(mountpoint))
                        return -EBUSY;
        }
        {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/mount.pid", state) >= 0)
                        (void)unlink(p);
        }
        return 0;
}

int fs_unmount(const char *state, const char *mountpoint, int timeout_ms)
{
        int pid = 0, r;
        struct timespec delay = {.tv_nsec = 20 * 1000 * 1000};

        r = fs_mount_probe(state, mountpoint, &pid);
        if (r <= 0)
                return r;
        /* The daemon unmounts (lazily, so an open file can't wedge it) and exits. */
        if (kill(pid, SIGTERM) < 0 && errno != ESRCH)
                return negative_errno();
        for (int waited = 0; pid_is_cloister(pid); waited += 20) {
                if (waited >= timeout_ms)
                        return -ETIMEDOUT;
                nanosleep(&delay, NULL);
        }
        if (is_mounted(mountpoint))
                detach(mountpoint);
        return 0;
}
