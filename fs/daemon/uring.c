/* SPDX-License-Identifier: MIT */
/*
 * uring.c: whether the daemon serves over FUSE's io_uring transport
 * (libfuse 3.18's rings) or over read(2)/write(2) on /dev/fuse (loop.c),
 * and why not when not.
 *
 * Three steps. Before the session (uring_plan): not when [fs] io_uring =
 * off; not when the kernel has no FUSE over io_uring (no
 * /sys/module/fuse/parameters/enable_uring) or it is off there (the daemon
 * never changes it: docs/config.md says how); not when the rings would not
 * fit their memory bound; not when this process may not make an io_uring
 * at all (kernel.io_uring_disabled, a seccomp filter). At FUSE_INIT
 * (uring_negotiate, from ops_init): only if the kernel offers it. After
 * INIT was answered (uring_confirm, from the loop): libfuse starts the
 * rings after ops_init returns and, if that fails, quietly serves on
 * /dev/fuse; whether they run is seen from their descriptors.
 *
 * Correctness on the rings: libfuse's ring threads call the handlers
 * directly, past loop.c. admit.c is in the handler table, so the journal's
 * and the descriptors' gates hold there too; fs_loop_hand_on() does
 * nothing outside a loop worker (a ring thread serves its queue in order,
 * which delays, never deadlocks: no handler waits for another request).
 * What does not hold: FUSE_HANDLE_KILLPRIV_V2's WRITE and OPEN flags reach
 * no handler through libfuse, and on a ring there is no raw request for
 * loop.c to read them from. So with io_uring, KILLPRIV_V2 is declined and
 * the kernel clears set-uid/set-gid itself, as on a kernel without it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "daemon.h"
#include "lib/util.h"

#define URING_PARAM "/sys/module/fuse/parameters/enable_uring"

/* A probe ring of the kind libfuse makes (fuse_uring.c): refused where
 * io_uring is disabled for this process. */
static int uring_probe(void)
{
        struct io_uring_params p = {.flags = IORING_SETUP_SQE128};
        long fd = syscall(__NR_io_uring_setup, 2, &p);

        if (fd < 0)
                return negative_errno();
        close((int)fd);
        return 0;
}

void uring_plan(struct fs_workspace *ws, unsigned max_write)
{
        _cleanup_close_ int fd = -1;
        size_t entry, cpus;
        char c = 0;

        ws->uring_depth = 0;
        if (ws->uring_off) {
                ws->uring_why = "switched off ([fs] io_uring = off)";
                return;
        }
        fd = open(URING_PARAM, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                ws->uring_why = "the kernel has no FUSE over io_uring";
                return;
        }
        if (read(fd, &c, 1) != 1 || c != 'Y') {
                ws->uring_why = "off in the kernel (" URING_PARAM " is N)";
                return;
        }
        /* One queue per possible CPU (the kernel wants them all), each of
         * depth entries holding a request's payload (max_write) and header. */
        cpus = (size_t)get_nprocs_conf();
        entry = (size_t)max_write + FS_URING_ENTRY_EXTRA;
        ws->uring_depth = (unsigned)MIN((size_t)FS_URING_DEPTH_MAX,
                                        FS_URING_MEMORY / (cpus ? cpus * entry : entry));
        if (ws->uring_depth == 0) {
                ws->uring_why = "too many CPUs for the rings' memory bound";
                return;
        }
        if (uring_probe() < 0) {
                ws->uring_depth = 0;
                ws->uring_why = "io_uring is refused to this process (kernel.io_uring_disabled, "
                                "seccomp)";
                return;
        }
        ws->uring_why = NULL;
}

void uring_negotiate(struct fs_workspace *ws, struct fuse_conn_info *conn)
{
        ws->uring = false;
        /* libfuse asks for it by default wherever the kernel offers it, and
         * FUSE_URING_ENABLE in the environment starts its rings: the choice
         * is made here, and only here. */
        if (ws->uring_depth == 0) {
                fuse_unset_feature_flag(conn, FUSE_CAP_OVER_IO_URING);
                return;
        }
        if (!fuse_set_feature_flag(conn, FUSE_CAP_OVER_IO_URING)) {
                ws->uring_why = "the kernel did not offer it at FUSE_INIT";
                return;
        }
        ws->uring = true;
}

/* The io_uring descriptors this process holds. */
static unsigned uring_fds(void)
{
        _cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        unsigned n = 0;

        if (!d)
                return 0;
        while ((e = readdir(d))) {
                char target[64];
                ssize_t k = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
                if (k <= 0)
                        continue;
                target[k] = 0;
                if (strcmp(target, "anon_inode:[io_uring]") == 0)
                        n++;
        }
        return n;
}

int uring_stop(struct fs_workspace *ws)
{
        int r;

        if (ws->uring_depth == 0)
                return 0;
        /*
         * libfuse 3.18 stops its rings only at the end of its own loops, and
         * fuse_session_destroy() does not: a ring thread would outlive the
         * session it reads. fuse_session_loop() of an exited session reads
         * nothing and just stops them (waking each, then joining it).
         */
        fuse_session_exit(ws->se);
        r = fuse_session_loop(ws->se); /* the error a ring thread ended the session with */
        fuse_session_reset(ws->se);
        return r > 0 ? -r : r;
}

void uring_confirm(void *arg)
{
        struct fs_workspace *ws = arg;

        if (!ws->uring)
                return;
        /* One ring per queue (a probe's was closed): none left means libfuse
         * could not start them (its log says why) and serves on /dev/fuse. */
        if (uring_fds() == 0) {
                ws->uring = false;
                ws->uring_why = "the rings failed to start (the daemon's log says why)";
                (void)datapath_write(ws);
        }
}
