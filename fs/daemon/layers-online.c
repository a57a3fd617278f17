/* SPDX-License-Identifier: MIT */
/*
 * layers-online.c: a checkpoint while the workspace is mounted and in use,
 * asked for over <state>/fs.sock (docs/fs-design.md, "Checkpoint while
 * mounted").
 *
 * The socket: one thread accepts one connection at a time, from root or
 * the daemon's own uid only (SO_PEERCRED; the file is 0600 in a 0700
 * state directory the sandbox never sees), reads one JSON request of at
 * most FS_CONTROL_MAX bytes within CTL_READ_TIMEOUT_S, answers one line.
 *
 * The switch, under ns_lock and the write gate (both exclusive), so that
 * no lookup, namespace change, copy-up or write is half done:
 *   1. fs_checkpoint_begin: an empty writable layer, not yet referenced;
 *   2. prepare, for every node of the repo the kernel holds: the entry it
 *      will be in the new stack (the same inode, now of the newest frozen
 *      layer, or the lower entry it was, at its view path) -- everything
 *      that can fail, with nothing changed yet;
 *   3. fs_checkpoint_commit: layers.json, the commit point;
 *   4. apply: nodes take their new entries, the stack and the writable
 *      layer are switched (nothing here can fail);
 *   5. files open for writing are copied up into the new layer and their
 *      descriptors switched with dup3(2) (a write racing it would reach
 *      one file or the other, but none runs: the gate is held); read-only
 *      handles of the old writable layer are marked as reading a lower
 *      file, so that a later write through another handle is seen, as
 *      after any copy-up. A copy-up that fails (quota) leaves that handle
 *      failing its writes with the error, and says so in the reply.
 * A failure before 3 leaves everything as it was (the new layer dir is
 * removed); SIGKILL anywhere leaves the old state or the new one on disk.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core.h"
#include "daemon.h"
#include "layers.h"
#include "ops.h"
#include "lib/crashpoint.h"
#include "lib/util.h"

#define CTL_READ_TIMEOUT_S 5
/* The reply names files not carried while their paths take at most this
 * much, so that it stays within FS_CONTROL_MAX; it counts them all. */
#define NOT_CARRIED_NAMES_MAX 2048

/*
 * What a node becomes (step 2), kept apart until the commit. The frozen entry of
 * an entry of the layer being frozen shares the node's own descriptor
 * (held) rather than a duplicate, so that the switch needs no descriptor
 * per node beyond what the workspace already holds: with a duplicate, a
 * workspace holding half the daemon's RLIMIT_NOFILE could not checkpoint.
 * The node hands it over at step 4; until then it stays the node's.
 */
struct rebase {
        struct node *n; /* a reference held */
        struct lower_entry lower_entry;
        int *held; /* &n->ufd or &n->hfd: the fd lower_entry.fz shares, until apply */
};

/* The frozen entry lets go of the node's descriptor, which stays the node's. */
static void rebase_unshare(struct rebase *rb)
{
        if (rb->held && rb->lower_entry.fz)
                rb->lower_entry.fz->fd = -1;
        rb->held = NULL;
}

struct plan {
        struct rebase *v;
        size_t n, cap;
        struct lower *stack;     /* the new stack */
        struct lower_entry root; /* its root, for the layer's root node */
};

static void plan_free(struct fs_workspace *ws, struct plan *p)
{
        for (size_t i = 0; i < p->n; i++) {
                rebase_unshare(&p->v[i]);
                lower_entry_clear(&p->v[i].lower_entry);
                node_unref(ws, p->v[i].n);
        }
        free(p->v);
        lower_entry_clear(&p->root);
        if (p->stack)
                lower_free(p->stack);
        *p = (struct plan){0};
}

/* Every node of the repo part the table holds, each with a reference. */
static int collect(struct fs_workspace *ws, struct plan *p)
{
        int r = 0;

        pthread_mutex_lock(&ws->itable_lock);
        for (size_t b = 0; r == 0 && b < ws->n_buckets; b++)
                for (struct node *n = ws->buckets[b]; n; n = n->hnext) {
                        if (n->kind != NODE_COW || n->layer != &ws->repo || n == ws->repo.root ||
                            n->unlinked)
                                continue;
                        if (p->n == p->cap) {
                                size_t cap = p->cap ? p->cap * 2 : 256;
                                struct rebase *v = realloc(p->v, cap * sizeof(*v));
                                if (!v) {
                                        r = -ENOMEM;
                                        break;
                                }
                                p->v = v;
                                p->cap = cap;
                        }
                        n->refs++;
                        p->v[p->n++] = (struct rebase){.n = n};
                }
        pthread_mutex_unlock(&ws->itable_lock);
        return r;
}

/* n's path below the layer's root ("" for the root), from its mount path. */
static char *rel_path(struct fs_workspace *ws, struct node *n)
{
        _cleanup_free_ char *p = node_path(n);
        const char *rest = p ? startswith(p, ws->repo.mpath) : NULL;

        if (!rest)
                return NULL;
        return strdup(*rest == '/' ? rest + 1 : rest);
}

/* Step 2 for one node: its entry in the new stack. ns_lock held exclusively. */
static int prepare_node(struct fs_workspace *ws, struct plan *p, struct rebase *rb)
{
        struct node *n = rb->n;
        _cleanup_free_ char *path = rel_path(ws, n);
        struct lower_entry below = {0};
        int *held, r;

        assert_wrlocked(&ws->ns_lock);
        if (!path)
                return -ENOMEM;
        if (!n->upper) {
                /* A lower entry: the same, seen at its path in the new view. */
                if (!n->has_lower)
                        return 0;
                r = lower_entry_copy(&n->lower, &rb->lower_entry);
                if (r == 0)
                        r = lower_stack_set_path(&rb->lower_entry, path);
                return r;
        }
        /* An entry of the layer being frozen: the same inode, in the new stack. */
        if (!S_ISDIR(n->type)) {
                r = upper_node_pin(n);
                if (r < 0)
                        return r;
        }
        held = S_ISDIR(n->type) ? &n->ufd : &n->hfd;
        if (*held < 0)
                return -EBADF;
        if (n->has_lower && (r = lower_entry_copy(&n->lower, &below)) < 0)
                return r;
        r = lower_stack_adopt(p->stack, *held, n->type, n->opaque, n->metacopy,
                              S_ISDIR(n->type) ? upper_meta(n) : NULL, n->has_lower ? &below : NULL,
                              n->ino, path, &rb->lower_entry);
        lower_entry_clear(&below);
        if (r < 0)
                return r;
        rb->held = held;
        rb->lower_entry.fz->indexed = n->indexed; /* a copy in the link index (links.c) */
        return 0;
}

/* Step 4 for one node: nothing here can fail. */
static void apply_node(struct fs_workspace *ws, struct rebase *rb)
{
        struct node *n = rb->n;
        (void)ws;

        if (!rb->lower_entry.path && !rb->lower_entry.fz)
                return; /* nothing planned (no lower, not upper) */
        if (rb->held)
                *rb->held = -1; /* handed over: the frozen entry's now */
        rb->held = NULL;
        n->ufd = safe_close(n->ufd);
        n->hfd = safe_close(n->hfd);
        json_decref(n->meta);
        n->meta = NULL;
        lower_entry_clear(&n->lower);
        n->lower = rb->lower_entry;
        rb->lower_entry = (struct lower_entry){0};
        n->has_lower = true;
        n->upper = n->metacopy = n->opaque = n->indexed = false;
        fs_dir_changed(n); /* its listing and merged nlink are read afresh */
}

/* Steps 4 and 5 for the handles: ws->handles_lock held. */
static int carry_handles(struct fs_workspace *ws, json_t *failed, size_t *n_failed)
{
        size_t names = 0;
        int r = 0;

        for (struct handle *h = ws->handles; h; h = h->hnext) {
                struct node *n = h->node;
                int acc, nfd = -1, k;

                if (!n || n->kind != NODE_COW || n->layer != &ws->repo || n->unlinked ||
                    !h->is_upper)
                        continue;
                if (!h->writable) {
                        h->is_upper = false; /* now a frozen inode: do_read switches later */
                        continue;
                }
                acc = fcntl(h->fd, F_GETFL);
                acc = acc < 0 ? O_RDWR : acc & O_ACCMODE;
                k = copyup(ws, n, n->metacopy ? COPYUP_META : COPYUP_DATA);
                crashpoint("checkpoint");
                if (k == 0)
                        k = upper_open(n, acc | O_NONBLOCK, &nfd);
                if (k == 0 && dup3(nfd, h->fd, O_CLOEXEC) < 0)
                        k = negative_errno();
                safe_close(nfd);
                if (k < 0) {
                        _cleanup_free_ char *p = node_path(n);
                        h->write_error = k;
                        r = k;
                        ++*n_failed;
                        names += p ? strlen(p) : 0;
                        if (names <= NOT_CARRIED_NAMES_MAX)
                                json_array_append_new(failed, json_pack("{s:s?,s:s}", "path", p,
                                                                        "error", strerror(-k)));
                }
        }
        return r;
}

static void index_wait(struct fs_workspace *ws)
{
        pthread_mutex_lock(&ws->index.lock);
        while (atomic_load(&ws->index.state) == GITINDEX_BUILDING)
                pthread_cond_wait(&ws->index.done, &ws->index.lock);
        pthread_mutex_unlock(&ws->index.lock);
}

static int checkpoint(struct fs_workspace *ws, const char *name, size_t *ret_depth, json_t *failed,
                      size_t *n_failed, char **ret_error)
{
        _cleanup_close_ int lock = -1;
        _cleanup_layers_ struct fs_layers *l = NULL;
        struct fs_checkpoint_tx tx = {.new_top_fd = -1};
        struct plan p = {0};
        struct lower *old;
        bool committed = false;
        int r, old_top;

        index_wait(ws); /* the first mount's .git/index goes into the writable layer */
        lock = fs_layers_lock(ws->state);
        if (lock < 0)
                return lock;
        r = fs_layers_load(ws->state, &l, ret_error);
        if (r < 0)
                return r;
        pthread_rwlock_wrlock(&ws->ns_lock);
        pthread_rwlock_wrlock(&ws->write_gate);
        r = fs_checkpoint_begin(l, name, &tx, ret_error);
        if (r < 0)
                goto out;
        {
                int fd = fcntl(ws->repo.upper_fd, F_DUPFD_CLOEXEC, 3);
                r = fd < 0 ? negative_errno()
                           : lower_stack_push(ws->repo.lower, ws->repo.part, fd, tx.old_id,
                                              &p.stack);
        }
        if (r == 0)
                r = lower_root(p.stack, &p.root);
        if (r == 0)
                r = collect(ws, &p);
        for (size_t i = 0; r == 0 && i < p.n; i++)
                r = prepare_node(ws, &p, &p.v[i]);
        if (r < 0) {
                if (ret_error && !*ret_error &&
                    asprintf(ret_error, "cannot prepare the switch: %s", strerror(-r)) < 0)
                        *ret_error = NULL;
                goto out;
        }
        crashpoint("checkpoint");
        r = fs_checkpoint_commit(l, &tx, ret_error);
        if (r < 0)
                goto out;
        committed = true;
        /* Step 4: the stack, the writable layer, the nodes. */
        old = ws->repo.lower;
        if (old != ws->repo.base) {
                struct lower **v = realloc(ws->repo.retired, (ws->repo.n_retired + 1) * sizeof(*v));
                if (v) {
                        ws->repo.retired = v;
                        v[ws->repo.n_retired++] = old;
                } /* else: kept alive by leaking it, as lower entries may still use it */
        }
        ws->repo.lower = p.stack;
        p.stack = NULL;
        old_top = ws->repo.upper_fd;
        ws->repo.upper_fd = TAKE_FD(tx.new_top_fd);
        safe_close(old_top);
        json_decref(ws->links); /* the new writable layer has no link index yet */
        ws->links = NULL;
        {
                struct node *root = ws->repo.root;
                root->ufd = safe_close(root->ufd);
                root->ufd = fcntl(ws->repo.upper_fd, F_DUPFD_CLOEXEC, 3);
                json_decref(root->meta);
                root->meta = NULL;
                lower_entry_clear(&root->lower);
                root->lower = p.root;
                p.root = (struct lower_entry){0};
                root->has_lower = true;
                (void)attr_dir_load(ws, root);
                fs_dir_changed(root);
        }
        for (size_t i = 0; i < p.n; i++)
                apply_node(ws, &p.v[i]);
        /* A handle made for one write before this point is of the frozen layer now. */
        atomic_fetch_add(&ws->checkpoints, 1);
        /* Step 5. */
        pthread_mutex_lock(&ws->handles_lock);
        (void)carry_handles(ws, failed, n_failed);
        pthread_mutex_unlock(&ws->handles_lock);
        *ret_depth = l->n_stack;
        r = 0;
out:
        fs_checkpoint_tx_done(l, &tx, committed);
        pthread_rwlock_unlock(&ws->write_gate);
        pthread_rwlock_unlock(&ws->ns_lock);
        plan_free(ws, &p);
        if (committed && ws->journal) {
                json_t *f = json_pack("{s:s,s:I}", "name", name, "depth", (json_int_t)*ret_depth);
                _cleanup_free_ char *s = f ? json_dumps(f, JSON_COMPACT) : NULL;
                json_decref(f);
                if (s)
                        (void)journal_mark(ws->journal, "checkpoint", s);
        }
        return r;
}

/* ---- the socket ---- */

static json_t *handle_request(struct fs_workspace *ws, const char *buf)
{
        json_t *q = json_loads(buf, 0, NULL), *a;
        const char *op = json_string_value(json_object_get(q, "op"));
        const char *name = json_string_value(json_object_get(q, "name"));
        _cleanup_free_ char *err = NULL;
        json_t *failed = json_array();
        size_t depth = 0, n_failed = 0;
        int r;

        if (q && op && streq(op, "journal_flush")) {
                /* cloister log: everything held, written now (journal.h, journal_flush_all). */
                r = ws->journal ? journal_flush_all(ws->journal) : 0;
                json_decref(q);
                json_decref(failed);
                if (r < 0)
                        return json_pack("{s:b,s:i,s:s}", "ok", 0, "errno", -r, "error",
                                         strerror(-r));
                return json_pack("{s:b}", "ok", 1);
        }
        if (!q || !op || !streq(op, "checkpoint") || !name) {
                json_decref(q);
                json_decref(failed);
                return json_pack("{s:b,s:i,s:s}", "ok", 0, "errno", EINVAL, "error",
                                 "expected {\"op\":\"checkpoint\",\"name\":NAME}");
        }
        r = checkpoint(ws, name, &depth, failed, &n_failed, &err);
        if (r < 0)
                a = json_pack("{s:b,s:i,s:s}", "ok", 0, "errno", -r, "error",
                              err ? err : strerror(-r));
        else
                a = json_pack("{s:b,s:I,s:O,s:I}", "ok", 1, "depth", (json_int_t)depth,
                              "not_carried", failed, "not_carried_count", (json_int_t)n_failed);
        json_decref(failed);
        json_decref(q);
        return a;
}

static void serve_one(struct fs_workspace *ws, int fd)
{
        struct ucred cred;
        socklen_t len = sizeof(cred);
        struct timeval tv = {.tv_sec = CTL_READ_TIMEOUT_S};
        char buf[FS_CONTROL_MAX + 1];
        size_t n = 0;
        json_t *a = NULL;
        _cleanup_free_ char *s = NULL;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
            (cred.uid != 0 && cred.uid != geteuid()))
                return; /* not root, not us: nothing to say */
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        while (n < FS_CONTROL_MAX) {
                ssize_t k = recv(fd, buf + n, FS_CONTROL_MAX - n, 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                n += (size_t)k;
                if (memchr(buf, '\n', n))
                        break;
        }
        buf[n] = 0;
        a = handle_request(ws, buf);
        s = a ? json_dumps(a, JSON_COMPACT) : NULL;
        json_decref(a);
        if (s) {
                size_t l = strlen(s);
                s[l] = '\n';
                (void)send(fd, s, l + 1, MSG_NOSIGNAL);
        }
}

static void *ctl_thread(void *arg)
{
        struct fs_workspace *ws = arg;

        for (;;) {
                struct pollfd pfd[2] = {{.fd = ws->ctl.listen_fd, .events = POLLIN},
                                        {.fd = ws->ctl.stop_fd, .events = POLLIN}};
                int fd;

                if (poll(pfd, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (pfd[1].revents)
                        break;
                fd = accept4(ws->ctl.listen_fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0) {
                        /* Out of descriptors, the connection stays queued and
                         * poll says so again at once: wait for the shed
                         * rather than spin. */
                        if (errno == EMFILE || errno == ENFILE) {
                                shed_wake(ws);
                                (void)poll(&pfd[1], 1, 50);
                        }
                        continue;
                }
                serve_one(ws, fd);
                close(fd);
        }
        return NULL;
}

int layers_online_start(struct fs_workspace *ws, char **ret_error)
{
        struct sockaddr_un sa;
        int r = fs_control_path(ws->state, &sa);
        mode_t old;

        if (r < 0) {
                /* The state's path is too long for a socket: checkpoints need an unmount. */
                fuse_log(FUSE_LOG_WARNING,
                         "cloister mount: %s/%s: path too long for a socket; "
                         "checkpoint needs the workspace unmounted\n",
                         ws->state, FS_CONTROL_SOCKET);
                return 0;
        }
        ws->ctl.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ws->ctl.stop_fd = eventfd(0, EFD_CLOEXEC);
        if (ws->ctl.listen_fd < 0 || ws->ctl.stop_fd < 0)
                goto fail;
        (void)unlinkat(ws->state_fd, FS_CONTROL_SOCKET, 0); /* a dead daemon's */
        old = umask(0077);
        r = bind(ws->ctl.listen_fd, (struct sockaddr *)&sa, sizeof(sa));
        umask(old);
        if (r < 0 || listen(ws->ctl.listen_fd, 8) < 0)
                goto fail;
        r = pthread_create(&ws->ctl.thread, NULL, ctl_thread, ws);
        if (r != 0) {
                errno = r;
                goto fail;
        }
        ws->ctl.started = true;
        return 0;
fail:
        r = negative_errno();
        if (ret_error && asprintf(ret_error, "cannot listen on %s/%s: %s", ws->state,
                                  FS_CONTROL_SOCKET, strerror(-r)) < 0)
                *ret_error = NULL;
        ws->ctl.listen_fd = safe_close(ws->ctl.listen_fd);
        ws->ctl.stop_fd = safe_close(ws->ctl.stop_fd);
        return r;
}

void layers_online_stop(struct fs_workspace *ws)
{
        if (ws->ctl.started) {
                uint64_t one = 1;
                (void)!write(ws->ctl.stop_fd, &one, sizeof(one));
                pthread_join(ws->ctl.thread, NULL);
                ws->ctl.started = false;
                (void)unlinkat(ws->state_fd, FS_CONTROL_SOCKET, 0);
        }
        ws->ctl.listen_fd = safe_close(ws->ctl.listen_fd);
        ws->ctl.stop_fd = safe_close(ws->ctl.stop_fd);
}
