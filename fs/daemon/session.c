/* SPDX-License-Identifier: MIT */
/*
 * session.c: the FUSE session: the ops table, connection setup and the
 * serving (the loop itself is loop.c).
 *
 * Mount options: default_permissions (the kernel checks modes), nosuid and
 * nodev (setuid bits and device nodes are metadata only, attr.c), allow_other
 * when root (the sandbox runs the agent as another uid). The writeback cache
 * stays off: quotas must fail the write(2) that crosses them, and with
 * writeback the error would surface only at close or never.
 */
#include <fcntl.h>
#include <linux/capability.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "daemon.h"
#include "ops.h"
#include "state.h"
#include "lib/util.h"

/*
 * Why a FUSE mount failed, as far as can be told (libfuse keeps the
 * errno): /dev/fuse that can't be opened; root without CAP_SYS_ADMIN (a
 * container's capabilities); or else the kernel's refusal of mount itself
 * (a seccomp profile or an LSM). Not /dev/fuse when it opens fine.
 */
static const char *mount_hint(void)
{
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {};
        int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);

        if (fd < 0)
                return "/dev/fuse cannot be opened";
        close(fd);
        if (geteuid() == 0 && syscall(SYS_capget, &h, d) == 0 &&
            !(d[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN)))
                return "this process lacks CAP_SYS_ADMIN, which the mount takes; "
                       "in a container: --cap-add SYS_ADMIN";
        return "/dev/fuse opens: the mount itself was refused, by a seccomp profile or an LSM "
               "that denies mount, or a missing privilege";
}

#define FS_MAX_WRITE (1u << 20)

/* What every connection asks for, the root's and the parts'. */
static void init_common(struct fuse_conn_info *conn)
{
        (void)fuse_set_feature_flag(conn, FUSE_CAP_SPLICE_READ);
        if (fuse_set_feature_flag(conn, FUSE_CAP_SPLICE_WRITE))
                (void)fuse_set_feature_flag(conn, FUSE_CAP_SPLICE_MOVE);
        if (fuse_set_feature_flag(conn, FUSE_CAP_READDIRPLUS))
                (void)fuse_set_feature_flag(conn, FUSE_CAP_READDIRPLUS_AUTO);
        (void)fuse_set_feature_flag(conn, FUSE_CAP_CACHE_SYMLINKS);
        fuse_unset_feature_flag(conn, FUSE_CAP_WRITEBACK_CACHE);
        fuse_unset_feature_flag(conn, FUSE_CAP_POSIX_ACL);
        fuse_unset_feature_flag(conn, FUSE_CAP_HANDLE_KILLPRIV);
        fuse_unset_feature_flag(conn, FUSE_CAP_EXPORT_SUPPORT);
        conn->max_write = FS_MAX_WRITE;
        conn->max_readahead = 1 << 20;
        conn->time_gran = 1;
}

/*
 * The 3.17+ feature API: fuse_set_feature_flag() sets a flag in want_ext
 * only where the kernel is capable of it, and the 32-bit want/capable
 * fields are deprecated.
 */
static void ops_init(void *userdata, struct fuse_conn_info *conn)
{
        struct fs_conn *c = userdata;
        struct fs_workspace *ws = c->ws;

        init_common(conn);
        (void)fuse_set_feature_flag(conn, FUSE_CAP_ATOMIC_O_TRUNC);
        uring_negotiate(ws, conn);
        /*
         * KILLPRIV_V2: the kernel no longer asks GETXATTR security.capability
         * before every write(2), and flags the write, truncate, chown or
         * O_TRUNC open whose writer lacks CAP_FSETID instead; we drop the
         * bits then (attr_kill_suidgid). Where the kernel can't, it clears
         * them itself with a SETATTR of the mode, as before. Not over
         * io_uring, where the flags can't be read (uring.c): there too.
         */
        if (ws->uring)
                fuse_unset_feature_flag(conn, FUSE_CAP_HANDLE_KILLPRIV_V2);
        else
                ws->killpriv_v2 = fuse_set_feature_flag(conn, FUSE_CAP_HANDLE_KILLPRIV_V2);
        /* For `cloister status`; serving does not depend on it. */
        (void)datapath_write(ws);
}

/*
 * A part's connection (parts.c), mounted once the root's was initialized.
 * No ATOMIC_O_TRUNC: with no OPEN sent, the kernel would take the
 * truncation of an O_TRUNC open as done by the OPEN and skip the SETATTR
 * that now does it. KILLPRIV_V2 as the root's got it, since the handlers
 * read ws->killpriv_v2 whichever connection a request came on; /dev/fuse
 * only (uring.c plans the rings of the root's connection).
 */
static void ops_init_part(void *userdata, struct fuse_conn_info *conn)
{
        struct fs_conn *c = userdata;

        init_common(conn);
        fuse_unset_feature_flag(conn, FUSE_CAP_ATOMIC_O_TRUNC);
        fuse_unset_feature_flag(conn, FUSE_CAP_OVER_IO_URING);
        if (c->ws->killpriv_v2)
                (void)fuse_set_feature_flag(conn, FUSE_CAP_HANDLE_KILLPRIV_V2);
        else
                fuse_unset_feature_flag(conn, FUSE_CAP_HANDLE_KILLPRIV_V2);
        /* Every kernel cloister runs on has it (4.20); where one did not, an
         * OPEN answered ENOSYS would fail the open: serve them there. */
        if (!fuse_set_feature_flag(conn, FUSE_CAP_NO_OPEN_SUPPORT))
                c->no_open = false;
}

/* Every mutating handler goes through the journal's gate, and every one that
 * may leave the daemon holding a descriptor through the descriptors' (admit.c). */
const struct fuse_lowlevel_ops fs_ops = {
        .init = ops_init,
        .lookup = admit_lookup,
        .forget = ops_forget,
        .forget_multi = ops_forget_multi,
        .getattr = ops_getattr_req,
        .setattr = admit_setattr,
        .readlink = ops_readlink,
        .mknod = admit_mknod,
        .mkdir = admit_mkdir,
        .unlink = admit_unlink,
        .rmdir = admit_rmdir,
        .symlink = admit_symlink,
        .rename = admit_rename,
        .link = admit_link,
        .open = admit_open,
        .read = ops_read,
        .write_buf = admit_write_buf,
        .flush = ops_flush,
        .release = ops_release,
        .fsync = ops_fsync,
        .opendir = ops_opendir,
        .readdir = ops_readdir,
        .readdirplus = ops_readdirplus,
        .releasedir = ops_releasedir,
        .fsyncdir = ops_fsyncdir,
        .statfs = ops_statfs,
        .setxattr = admit_setxattr,
        .getxattr = ops_getxattr,
        .listxattr = ops_listxattr,
        .removexattr = admit_removexattr,
        .create = admit_create,
        .fallocate = admit_fallocate,
        .lseek = ops_lseek,
};

/* A part's: the same handlers, but for INIT, OPEN and FLUSH. */
void session_part_ops(struct fuse_lowlevel_ops *ops)
{
        *ops = fs_ops;
        ops->init = ops_init_part;
        ops->open = ops_open_part;
        ops->flush = ops_flush_part;
}

static int write_pid(struct fs_workspace *ws)
{
        char buf[32];
        _cleanup_close_ int fd = -1;
        int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
        fd = openat(ws->state_fd, "mount.pid.tmp",
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, buf, (size_t)n) != n)
                return negative_errno();
        if (renameat(ws->state_fd, "mount.pid.tmp", ws->state_fd, "mount.pid") < 0)
                return negative_errno();
        return 0;
}

/* fs/mount.start: our start time, so a reused pid is never taken for us. */
static int write_start(struct fs_workspace *ws)
{
        unsigned long long t;
        char buf[32];
        _cleanup_close_ int fsdir = -1, fd = -1;
        int n, r = fs_proc_starttime(getpid(), &t);
        if (r < 0)
                return r;
        n = snprintf(buf, sizeof(buf), "%llu\n", t);
        fsdir = openat(ws->state_fd, "fs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fsdir < 0)
                return negative_errno();
        fd = openat(fsdir, "mount.start.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                    0644);
        if (fd < 0 || write(fd, buf, (size_t)n) != n ||
            renameat(fsdir, "mount.start.tmp", fsdir, "mount.start") < 0)
                return negative_errno();
        return 0;
}

/* The thread that mounts the parts once the root's mount is served, then says ready. */
struct serve_setup {
        struct fs_workspace *ws;
        int ready_fd;
        pthread_t thread;
        sem_t inited;            /* the root's FUSE_INIT was answered */
        _Atomic bool done, stop; /* see serve_until_set_up */
};

/* After the root's FUSE_INIT was answered (fs_loop_run's hook). */
static void serve_after_init(void *arg)
{
        struct serve_setup *su = arg;

        uring_confirm(su->ws);
        sem_post(&su->inited);
}

/*
 * Waits for the root's FUSE_INIT first: what it negotiated (ws->uring,
 * ws->killpriv_v2) is read by the parts' INIT and by datapath_write, and a
 * record written before it would say "not negotiated" (and could be
 * renamed over INIT's own). A stop before INIT (the connection gone) mounts
 * no part, whose lookups would wait for an INIT that never comes.
 */
static void *serve_setup_main(void *arg)
{
        struct serve_setup *su = arg;
        bool inited = false;

        while (!inited && !atomic_load(&su->stop)) {
                struct timespec until;

                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += 100 * 1000 * 1000;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                inited = sem_timedwait(&su->inited, &until) == 0;
        }
        if (inited) {
                parts_start(su->ws);
                (void)datapath_write(su->ws);
        }
        if (su->ready_fd >= 0) {
                char c = 1;
                (void)!write(su->ready_fd, &c, 1);
                close(su->ready_fd);
        }
        atomic_store(&su->done, true);
        if (atomic_load(&su->stop))
                fuse_session_exit(su->ws->se);
        return NULL;
}

/*
 * Serve the root's connection, and go on serving it after a stop (a
 * SIGTERM just after the mount) until the parts' mounts are made: each
 * looks its path up through this connection, and would wait for ever for
 * an answer that no loop gives. The setup thread ends the loop then
 * itself: it sets done before it reads stop, this sets stop before it
 * reads done, so one of the two sees the other.
 */
static int serve_until_set_up(struct fs_workspace *ws, struct serve_setup *su)
{
        /* Workers are kept once started (no idle limit): each one holds its own
         * libgit2 repository handle, which is worth not reopening per burst. */
        int r = fs_loop_run(ws->se, 16, serve_after_init, su);

        while (!atomic_load(&su->done)) {
                int k;

                fuse_session_reset(ws->se);
                atomic_store(&su->stop, true);
                if (atomic_load(&su->done))
                        break;
                k = fs_loop_run(ws->se, 16, NULL, NULL);
                if (k < 0 && r >= 0)
                        r = k;
        }
        return r;
}

static void raise_nofile(void)
{
        struct rlimit rl;
        /* Nodes of upper dirs and files hold fds, as in passthrough_ll. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void)setrlimit(RLIMIT_NOFILE, &rl);
        }
}

int fs_workspace_serve(fs_workspace *ws, int ready_fd, char **ret_error)
{
        struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
        _cleanup_free_ char *opts = NULL;
        int r;

        /*
         * Named before mount.pid names us: fs_mount_probe takes a pid whose
         * name is not cloister's for a dead daemon and detaches its mount.
         * Started as /proc/self/exe (cloister run, cloister diff), we would
         * be called "exe", and a second `cloister mount` would stack a
         * second daemon on the same state.
         */
        (void)prctl(PR_SET_NAME, "cloister-fs");
        raise_nofile();
        shed_init(ws);
        /*
         * The kernel applies the caller's umask to the mode of every mkdir,
         * create and mknod before sending it (we don't ask for
         * FUSE_CAP_DONT_MASK: without ACLs there is nothing to do with the
         * umask ourselves), so the daemon creates exactly the mode it gets;
         * its own umask must not mask it again. Every file the daemon makes
         * for itself names its mode.
         */
        umask(0);
        r = attr_probe(ws);
        if (r < 0) {
                if (ret_error &&
                    asprintf(ret_error, "cannot probe the upper layer: %s", strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        r = state_mkdir_p(ws->mountpoint, 0755);
        if (r < 0) {
                if (ret_error && asprintf(ret_error, "cannot create mountpoint '%s': %s",
                                          ws->mountpoint, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        /* The fsname names the state too (fs_mount_owner): a mount, even a
         * dead one, is then known for whose it is. */
        char id[FS_STATE_ID_MAX];
        r = fs_state_id(ws->state, id);
        if (r < 0) {
                if (ret_error && asprintf(ret_error, "cannot stat the state directory '%s': %s",
                                          ws->state, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        if (asprintf(&opts,
                     "default_permissions,nosuid,nodev,fsname=cloister:%s:%s,subtype=cloister%s",
                     ws->name, id, geteuid() == 0 ? ",allow_other" : "") < 0)
                return -ENOMEM;
        /* libfuse's rings, sized here (uring.c); ops_init still decides. */
        uring_plan(ws, FS_MAX_WRITE);
        if (ws->uring_depth) {
                char *o = NULL;
                if (asprintf(&o, "%s,io_uring,io_uring_q_depth=%u", opts, ws->uring_depth) < 0)
                        return -ENOMEM;
                free(opts);
                opts = o;
        }
        if (fuse_opt_add_arg(&args, "cloister") < 0 || fuse_opt_add_arg(&args, "-o") < 0 ||
            fuse_opt_add_arg(&args, opts) < 0) {
                fuse_opt_free_args(&args);
                return -ENOMEM;
        }
        ws->conn.ws = ws;
        ws->conn.root = ws->root;
        ws->conn.mnt_fd = -1;
        ws->se = ws->conn.se = fuse_session_new(&args, &fs_ops, sizeof(fs_ops), &ws->conn);
        fuse_opt_free_args(&args);
        if (!ws->se) {
                if (ret_error)
                        *ret_error = strdup("cannot create the FUSE session");
                return -EIO;
        }
        if (fuse_set_signal_handlers(ws->se) < 0) {
                r = -EIO;
                goto out_destroy;
        }
        /* A record of an earlier mount must not be read as this one's. */
        (void)unlinkat(ws->state_fd, "fs/datapath.json", 0);
        if (fuse_session_mount(ws->se, ws->mountpoint) != 0) {
                if (ret_error && asprintf(ret_error, "cannot mount FUSE at '%s' (%s)",
                                          ws->mountpoint, mount_hint()) < 0)
                        *ret_error = NULL;
                r = -EIO;
                goto out_signals;
        }
        /*
         * The mount's root, held: the parts' directories are found from it
         * (parts.c), never by the mountpoint's path again. O_PATH asks the
         * daemon nothing, which serves nothing yet; parts_start checks it
         * is a FUSE mount once it does.
         */
        ws->conn.mnt_fd = open(ws->mountpoint, O_PATH | O_DIRECTORY | O_CLOEXEC);
        /* Served from here on: lookups of .git/index wait for this thread. */
        r = gitindex_start(ws);
        if (r < 0) {
                if (ret_error &&
                    asprintf(ret_error, "cannot start building .git/index: %s", strerror(-r)) < 0)
                        *ret_error = NULL;
                goto out_unmount;
        }
        /* Checkpoints while mounted (layers-online.c). */
        r = layers_online_start(ws, ret_error);
        if (r < 0)
                goto out_unmount;
        r = shed_start(ws);
        if (r < 0) {
                if (ret_error &&
                    asprintf(ret_error, "cannot start the descriptor watch: %s", strerror(-r)) < 0)
                        *ret_error = NULL;
                goto out_unmount;
        }
        r = write_start(ws);
        if (r == 0)
                r = write_pid(ws);
        if (r < 0) {
                if (ret_error && asprintf(ret_error, "cannot write %s/mount.pid: %s", ws->state,
                                          strerror(-r)) < 0)
                        *ret_error = NULL;
                goto out_unmount;
        }
        /*
         * The parts' own mounts (parts.c) look their paths up through this
         * one, so they are made once it is served, by a thread of their own,
         * which then says the workspace is ready: a sandbox set up before
         * would bind the root's directories, not the parts.
         */
        {
                struct serve_setup su = {.ws = ws, .ready_fd = ready_fd};
                sigset_t stop, old;

                if (sem_init(&su.inited, 0, 0) < 0) {
                        r = negative_errno();
                        goto out_unmount;
                }

                sigemptyset(&stop);
                sigaddset(&stop, SIGINT);
                sigaddset(&stop, SIGTERM);
                sigaddset(&stop, SIGHUP);
                pthread_sigmask(SIG_BLOCK, &stop, &old);
                r = -pthread_create(&su.thread, NULL, serve_setup_main, &su);
                pthread_sigmask(SIG_SETMASK, &old, NULL);
                if (r < 0) {
                        sem_destroy(&su.inited);
                        if (ret_error &&
                            asprintf(ret_error, "cannot start serving: %s", strerror(-r)) < 0)
                                *ret_error = NULL;
                        goto out_unmount;
                }
                r = serve_until_set_up(ws, &su);
                r = r < 0 ? r : 0;
                pthread_join(su.thread, NULL);
                sem_destroy(&su.inited);
                /* A part whose connection ended (part_main said so in the log). */
                if (r == 0 && atomic_load(&ws->parts_lost))
                        r = -ENOTCONN;
                parts_stop(ws);
        }
        {
                /* A ring thread that failed ended the session as an unmount
                 * would: say so, and exit with it, not quietly with 0. */
                int ur = uring_stop(ws);

                if (ur < 0 && r == 0) {
                        fuse_log(FUSE_LOG_ERR, "cloister: the io_uring rings ended serving: %s\n",
                                 strerror(-ur));
                        r = ur;
                }
        }
        shed_stop(ws); /* it notifies the session */
        (void)unlinkat(ws->state_fd, "mount.pid", 0);
        (void)unlinkat(ws->state_fd, "fs/datapath.json", 0);
out_unmount:
        fuse_session_unmount(ws->se);
out_signals:
        fuse_remove_signal_handlers(ws->se);
out_destroy:
        shed_stop(ws);
        layers_online_stop(ws); /* before the session goes: a checkpoint may run */
        gitindex_stop(ws);      /* it may still notify the session */
        parts_stop(ws);         /* (an early failure: none started) */
        parts_free(ws);
        ws->conn.mnt_fd = safe_close(ws->conn.mnt_fd);
        fuse_session_destroy(ws->se);
        ws->se = ws->conn.se = NULL;
        if (ws->has_home && !ws->home_persist) {
                _cleanup_close_ int home = -1;
                int fsdir = state_open_dir(ws->state_fd, "fs", false);
                if (fsdir >= 0) {
                        home = state_open_dir(fsdir, "home", false);
                        close(fsdir);
                }
                if (home >= 0)
                        (void)state_rm_rf_at(home, "upper", 0);
        }
        if (ws->journal)
                (void)journal_flush(ws->journal);
        return r;
}
