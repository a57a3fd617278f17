/* SPDX-License-Identifier: MIT */
/*
 * loop.c: the request loop, a leader/follower pool in place of libfuse's
 * multithreaded loop.
 *
 * Why: an agent's file traffic is mostly one process asking one thing at a
 * time (open, stat, readdir). libfuse's loop keeps every idle worker blocked
 * in read(2) on /dev/fuse, and the kernel wakes those readers in FIFO order,
 * so consecutive requests go to a different, sleeping thread each time: one
 * wakeup of a cold thread (an inter-processor interrupt on another CPU,
 * often) per request. Here only one worker reads at a time. It answers a
 * quick request itself and reads the next one, usually without sleeping,
 * while the caller is still on its way back. Before a request that may take
 * long (a write, a rename, a READ that inflates a blob, an fsync, or an open
 * for writing, which may copy the file up) it hands the reading on to a
 * parked worker, the most recently parked one, whose stack and caches are
 * the warmest, so slow requests still run in parallel with everything else.
 *
 * What makes running quick requests inline safe: no handler waits for
 * another FUSE request to be answered (the daemon never calls into its own
 * mount: config-validate.c refuses a mirror or source that overlaps it). A quick handler may wait
 * for a lock a slow one holds; that only delays the requests behind it. The one handler that waits
 * on purpose, the LOOKUP of .git/index while gitindex.c builds it, is handed on like a slow one.
 *
 * Lifetime: the calling thread only waits; workers have the stop signals
 * blocked, so SIGTERM (fs_unmount) or SIGINT lands in the waiting thread,
 * whose libfuse handler marks the session exited. Workers are then woken:
 * parked ones by their condition, the one waiting for a request in poll(2)
 * by an eventfd it polls too, or, where the device is read blocking (no
 * polling, one CPU), by cancelling that read (cancellation is enabled only
 * around it, as in libfuse's loop). And joined. Not cancelling a poll(2)
 * matters under ASan: a thread cancelled inside its poll interceptor leaves
 * poisoned stack behind, and its exit then reports an underflow.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>

#include "ops.h"
#include "lib/busypoll.h"
#include "lib/util.h"

/* The kernel's request header (include/uapi/linux/fuse.h, a stable ABI):
 * a system libfuse installs no fuse_kernel.h. */
struct loop_in_header {
        uint32_t len;
        uint32_t opcode;
        uint64_t unique;
        uint64_t nodeid;
        uint32_t uid, gid, pid;
        uint16_t total_extlen;
        uint16_t padding;
};

enum {
        OP_LOOKUP = 1,
        OP_FORGET = 2,
        OP_GETATTR = 3,
        OP_READLINK = 5,
        OP_OPEN = 14,
        OP_WRITE = 16,
        OP_STATFS = 17,
        OP_RELEASE = 18,
        OP_GETXATTR = 22,
        OP_LISTXATTR = 23,
        OP_FLUSH = 25,
        OP_INIT = 26,
        OP_OPENDIR = 27,
        OP_READDIR = 28,
        OP_RELEASEDIR = 29,
        OP_ACCESS = 34,
        OP_INTERRUPT = 36,
        OP_BATCH_FORGET = 42,
        OP_READDIRPLUS = 44,
        OP_LSEEK = 46,
};

/* Where the kill flags sit (uapi fuse.h): fuse_write_in.write_flags and
 * fuse_open_in.open_flags, as offsets after the header. */
#define LOOP_WRITE_FLAGS_OFF 20 /* after fh, offset, size */
#define LOOP_WRITE_IN_SIZE   40
#define LOOP_OPEN_FLAGS_OFF  4         /* after flags */
#define LOOP_KILL_SUIDGID    (1u << 2) /* FUSE_WRITE_KILL_SUIDGID */
#define LOOP_OPEN_KILL       (1u << 0) /* FUSE_OPEN_KILL_SUIDGID */

struct worker {
        struct loop *loop;
        pthread_t thread;
        pthread_cond_t wake;
        bool woken;
        struct worker *next_parked; /* protected by loop->lock */
        struct worker *next;        /* all workers, for the join */
        struct fuse_buf buf;
};

struct loop {
        struct fuse_session *se;
        pthread_mutex_t lock;
        bool reading;           /* a worker is in (or about to enter) read(2) */
        bool exit;              /* stop: set once, under lock */
        struct worker *parked;  /* LIFO: the most recently parked first */
        struct worker *workers; /* every worker started */
        unsigned n_workers, max_workers;
        int error;
        sem_t finish;               /* posted when a worker stops the loop */
        struct busypoll bp;         /* used by the reading worker only */
        int fd;                     /* /dev/fuse made O_NONBLOCK, when polling is on; else -1 */
        void (*after_init)(void *); /* run once INIT was answered (uring.c), or NULL */
        void *after_init_arg;
        int stop_fd; /* an eventfd, readable once the loop stops (with fd) */
};

/* Quick requests: answered from the node table and the kernel-facing state,
 * without writing anything or inflating data. */
static bool request_is_quick(const struct fuse_buf *buf)
{
        const struct loop_in_header *in = buf->mem;

        if (buf->flags & FUSE_BUF_IS_FD) /* data left in a pipe: a large WRITE */
                return false;
        if (buf->size < sizeof(*in))
                return true; /* libfuse answers a malformed request itself */
        switch (in->opcode) {
        case OP_LOOKUP:
                /* May wait for the index build (gitindex_wait). */
                return !(buf->size >= sizeof(*in) + sizeof("index") &&
                         memcmp((const char *)(in + 1), "index", sizeof("index")) == 0);
        case OP_OPEN: {
                /* Opening for writing may copy the file up (all of it for O_APPEND). */
                uint32_t flags;
                if (buf->size < sizeof(*in) + sizeof(flags))
                        return true;
                memcpy(&flags, in + 1, sizeof(flags)); /* fuse_open_in.flags */
                return (flags & O_ACCMODE) == O_RDONLY && !(flags & O_TRUNC);
        }
        case OP_FORGET:
        case OP_GETATTR:
        case OP_READLINK:
        case OP_STATFS:
        case OP_RELEASE:
        case OP_GETXATTR:
        case OP_LISTXATTR:
        case OP_FLUSH:
        case OP_OPENDIR:
        case OP_READDIR:
        case OP_RELEASEDIR:
        case OP_ACCESS:
        case OP_INTERRUPT:
        case OP_BATCH_FORGET:
        case OP_READDIRPLUS:
        case OP_LSEEK:
                return true;
        case OP_INIT:
                /* Nothing else comes before it is answered, and libfuse writes
                 * what was negotiated while it runs: a second reader started
                 * now would read that as it is written (TSan, libfuse 3.18). */
                return true;
        default:
                return false;
        }
}

static bool request_is_init(const struct fuse_buf *buf)
{
        const struct loop_in_header *in = buf->mem;

        return !(buf->flags & FUSE_BUF_IS_FD) && buf->size >= sizeof(*in) && in->opcode == OP_INIT;
}

static void loop_stop_locked(struct loop *l, int error)
{
        if (l->exit)
                return;
        l->exit = true;
        if (error < 0)
                l->error = error;
        for (struct worker *w = l->parked; w; w = w->next_parked) {
                w->woken = true;
                pthread_cond_signal(&w->wake);
        }
        l->parked = NULL;
        sem_post(&l->finish);
}

static void *worker_main(void *arg);

/*
 * Read the next request: one that is queued already, else by polling
 * /dev/fuse for a moment when that pays (lib/busypoll.h: grep's next OPEN,
 * just after its RELEASE, then finds a worker awake, not one to wake on
 * another CPU), else by sleeping in poll(2), which the stop's eventfd also
 * ends (returning 0, as an unmount does). Only the reading worker is here,
 * so the poll state needs no lock.
 */
static int receive_once(void *arg)
{
        struct worker *w = arg;

        return fuse_session_receive_buf(w->loop->se, &w->buf); /* -EAGAIN: none yet */
}

static int loop_receive(struct loop *l, struct worker *w)
{
        int res;

        if (l->fd < 0) { /* polling is off: sleep in read(2) */
                pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
                res = fuse_session_receive_buf(l->se, &w->buf);
                pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
                return res;
        }
        res = busypoll_run(&l->bp, receive_once, w, -EAGAIN);
        if (res != -EAGAIN)
                return res;
        for (;;) {
                struct pollfd pfd[2] = {{.fd = l->fd, .events = POLLIN},
                                        {.fd = l->stop_fd, .events = POLLIN}};

                res = poll(pfd, 2, -1);
                if (res < 0 && errno != EINTR)
                        return negative_errno();
                if (res > 0 && pfd[1].revents)
                        return 0;
                res = fuse_session_receive_buf(l->se, &w->buf);
                if (res != -EAGAIN)
                        return res;
        }
}

static int worker_start_locked(struct loop *l)
{
        struct worker *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->loop = l;
        pthread_cond_init(&w->wake, NULL);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
                pthread_cond_destroy(&w->wake);
                free(w);
                return -EAGAIN;
        }
        w->next = l->workers;
        l->workers = w;
        l->n_workers++;
        return 0;
}

/* The loop of the worker this thread is, if it is one. */
static __thread struct loop *loop_self;
/* The request this thread serves asked to drop set-uid/set-gid. */
static __thread bool loop_kill;
/* A pipe to tee a spliced request's header into (made when first needed). */
static __thread int loop_peek[2] = {-1, -1};

bool fs_loop_kill_suidgid(void)
{
        return loop_kill;
}

/*
 * The header and fuse_write_in of a request left in libfuse's pipe (a large
 * WRITE, read with splice), copied out without consuming it: tee(2) into a
 * pipe of our own, then read that. -errno if it cannot be had.
 */
static int peek_spliced(const struct fuse_buf *buf, void *dst, size_t len)
{
        ssize_t k;

        if (loop_peek[0] < 0 && pipe2(loop_peek, O_CLOEXEC | O_NONBLOCK) < 0)
                return negative_errno();
        k = tee(buf->fd, loop_peek[1], len, SPLICE_F_NONBLOCK);
        if (k < 0)
                return negative_errno();
        if (k == 0)
                return -EIO;
        if (read(loop_peek[0], dst, (size_t)k) != k) {
                /* Whatever is left would be read as the next header: start over. */
                close(loop_peek[0]);
                close(loop_peek[1]);
                loop_peek[0] = loop_peek[1] = -1;
                return -EIO;
        }
        return (size_t)k == len ? 0 : -EIO;
}

/*
 * Whether the kernel asked to kill set-uid/set-gid (with
 * FUSE_HANDLE_KILLPRIV_V2 only, when the writer lacks CAP_FSETID). A
 * spliced WRITE whose header cannot be read is taken as asking: a set-uid
 * bit left on a file an unprivileged writer changed is the worse error.
 */
static bool request_kills_suidgid(const struct fuse_buf *buf)
{
        unsigned char hdr[sizeof(struct loop_in_header) + LOOP_WRITE_IN_SIZE];
        const struct loop_in_header *in;
        size_t have;
        uint32_t f;

        if (buf->flags & FUSE_BUF_IS_FD) {
                have = MIN(buf->size, sizeof(hdr));
                if (peek_spliced(buf, hdr, have) < 0)
                        return true;
        } else {
                have = MIN(buf->size, sizeof(hdr));
                memcpy(hdr, buf->mem, have);
        }
        if (have < sizeof(*in))
                return false;
        in = (const struct loop_in_header *)hdr;
        if (in->opcode == OP_WRITE && have >= sizeof(*in) + LOOP_WRITE_FLAGS_OFF + sizeof(f)) {
                memcpy(&f, hdr + sizeof(*in) + LOOP_WRITE_FLAGS_OFF, sizeof(f));
                return f & LOOP_KILL_SUIDGID;
        }
        if (in->opcode == OP_OPEN && have >= sizeof(*in) + LOOP_OPEN_FLAGS_OFF + sizeof(f)) {
                memcpy(&f, hdr + sizeof(*in) + LOOP_OPEN_FLAGS_OFF, sizeof(f));
                return f & LOOP_OPEN_KILL;
        }
        return false;
}

/* Let another worker read: the most recently parked, or a new one. */
static void loop_hand_on_locked(struct loop *l)
{
        struct worker *w = l->parked;
        if (w) {
                l->parked = w->next_parked;
                w->woken = true;
                pthread_cond_signal(&w->wake);
        } else if (l->n_workers < l->max_workers) {
                (void)worker_start_locked(l); /* none: the request still runs here */
        }
}

static void *worker_main(void *arg)
{
        struct worker *w = arg;
        struct loop *l = w->loop;

        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
        loop_self = l;
        pthread_mutex_lock(&l->lock);
        for (;;) {
                bool init;
                int res;

                while (!l->exit && l->reading) {
                        w->woken = false;
                        w->next_parked = l->parked;
                        l->parked = w;
                        while (!w->woken)
                                pthread_cond_wait(&w->wake, &l->lock);
                }
                if (l->exit)
                        break;
                l->reading = true;
                pthread_mutex_unlock(&l->lock);

                res = loop_receive(l, w);

                pthread_mutex_lock(&l->lock);
                l->reading = false;
                if (res == -EINTR && !fuse_session_exited(l->se))
                        continue;
                if (res <= 0 || fuse_session_exited(l->se)) {
                        /* 0: unmounted (ENODEV); < 0: the device failed */
                        loop_stop_locked(l, res == -EINTR ? 0 : res);
                        break;
                }
                if (!request_is_quick(&w->buf))
                        loop_hand_on_locked(l);
                pthread_mutex_unlock(&l->lock);

                loop_kill = request_kills_suidgid(&w->buf);
                init = request_is_init(&w->buf);
                fuse_session_process_buf(l->se, &w->buf);
                loop_kill = false;
                /* INIT runs alone (request_is_quick): nothing races the hook. */
                if (init && l->after_init)
                        l->after_init(l->after_init_arg);

                pthread_mutex_lock(&l->lock);
        }
        pthread_mutex_unlock(&l->lock);
        if (loop_peek[0] >= 0) {
                close(loop_peek[0]);
                close(loop_peek[1]);
        }
        return NULL;
}

__thread bool fs_loop_settled;

/*
 * libfuse stops its io_uring rings by waking each ring thread and then
 * cancelling and joining it (fuse_uring.c): a ring thread still inside a
 * handler would be cancelled at its next cancellation point (a write, a
 * condition wait), its locks held. Handlers are not cancellable: the
 * thread finishes the request, sees the wake, and returns. Loop workers
 * have it disabled already (enabled only around their read).
 */
void fs_loop_settle_thread(void)
{
        if (!loop_self)
                pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
        fs_loop_settled = true;
}

bool fs_loop_serving(void)
{
        return loop_self != NULL;
}

void fs_loop_hand_on(void)
{
        struct loop *l = loop_self;

        if (!l)
                return;
        pthread_mutex_lock(&l->lock);
        if (!l->exit)
                loop_hand_on_locked(l);
        pthread_mutex_unlock(&l->lock);
}

int fs_loop_run(struct fuse_session *se, unsigned max_workers, void (*after_init)(void *),
                void *arg)
{
        struct loop l = {.se = se,
                         .max_workers = max_workers ? max_workers : 1,
                         .after_init = after_init,
                         .after_init_arg = arg};
        sigset_t stop, old;
        int r;

        pthread_mutex_init(&l.lock, NULL);
        if (sem_init(&l.finish, 0, 0) < 0)
                return negative_errno();
        l.fd = l.stop_fd = -1;
        busypoll_init(&l.bp);
        if (l.bp.on)
                l.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (l.stop_fd >= 0) {
                int fd = fuse_session_fd(se), fl = fcntl(fd, F_GETFL);
                if (fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0)
                        l.fd = fd;
        }
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &stop, &old);
        pthread_mutex_lock(&l.lock);
        r = worker_start_locked(&l);
        pthread_mutex_unlock(&l.lock);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0)
                goto out;

        /* The stop signals' handlers (fuse_set_signal_handlers) run here and
         * interrupt the wait; the timeout covers a signal taken just before it
         * (or by a thread of the daemon's that does not block them). */
        while (!fuse_session_exited(se)) {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += 1;
                if (sem_timedwait(&l.finish, &until) == 0)
                        break;
        }
        pthread_mutex_lock(&l.lock);
        loop_stop_locked(&l, 0);
        if (l.fd >= 0)
                (void)eventfd_write(l.stop_fd, 1); /* stays readable: every poll ends */
        else
                for (struct worker *w = l.workers; w; w = w->next)
                        pthread_cancel(w->thread); /* effective only inside read(2) */
        pthread_mutex_unlock(&l.lock);
        r = 0;
out:
        while (l.workers) {
                struct worker *w = l.workers;
                l.workers = w->next;
                pthread_join(w->thread, NULL);
                pthread_cond_destroy(&w->wake);
                free(w->buf.mem);
                free(w);
        }
        if (r == 0)
                r = l.error;
        fuse_session_reset(se);
        busypoll_done(&l.bp);
        safe_close(l.stop_fd);
        sem_destroy(&l.finish);
        pthread_mutex_destroy(&l.lock);
        return r;
}
