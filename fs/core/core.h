/* SPDX-License-Identifier: MIT */
/*
 * core.h: fs/core, the private header of the copy-on-write core.
 *
 * Owns: the node table (inode.c), the node's upper half (upper.c: its
 * sidecar, pin and open), owners and special bits kept off the host
 * (owner.c, attr.c), frozen-layer entries as the agent sees them
 * (frozen.c), hard links across layers (links.c), lookup and listing of
 * copy-on-write nodes (cow.c), copy-up (copyup.c), the quota (quota.c),
 * the workspace .git's index build (gitindex.c), host mirrors (mirror.c),
 * the /.cloister control files (control.c) and the closing of removed
 * files' fds (reap.c). Sections below follow those files.
 *
 * struct node and struct fs_workspace live here, though ops/ and daemon/
 * use them too: core/ is the lowest folder that needs them whole (a node
 * is what copy-up, lookup and the quota work on), and one struct per
 * workspace, as overlayfs has one ovl_fs, keeps every lock in one place.
 * Their fields that belong to a folder above (ws->shed for ops/shed.c,
 * ws->ctl for daemon/layers-online.c) are data only: core/ reaches ops/
 * only through the one hook it is given (ws->shed.kick).
 *
 * May call: layers/ (its constants), lower/, format/, journal/, gitdir/
 * and lib/; never ops/ or daemon/. tests/lint/fs-layers.py checks both
 * the includes and the calls.
 *
 * Locks, outermost first:
 *   ws->ns_lock (rwlock)   the namespace: node parent/name, upper/lower
 *                          state and the per-directory sidecars. Lookups,
 *                          getattr and readdir take it shared; namespace
 *                          changes and copy-ups take it exclusive. Reads
 *                          and writes of open files never take it.
 *   node->lock (mutex)     a file's size while a write extends it (so that
 *                          quota accounting is exact), a dir's sidecar load.
 *   ws->itable_lock        the inode table and lookup/reference counts.
 */
#pragma once

#include <stdio.h>

#include <fuse_lowlevel.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"

/*
 * The "caller holds" notes, checked (overlayfs checks its own with
 * lockdep; these are the cheap part of it). assert_held: this thread holds
 * the mutex (glibc records its owner). assert_rwlocked: someone holds the
 * rwlock, for reading or writing (a write lock cannot be taken).
 * assert_wrlocked: someone holds it for writing (not even a read lock can
 * be taken; a caller that holds it only for reading gets one, and fails).
 * They cannot see which thread holds an rwlock; they catch a note that
 * nobody keeps. On in every build unless NDEBUG.
 */
#ifndef NDEBUG
#include <assert.h>
#include <unistd.h>
static inline bool lock_mutex_held(pthread_mutex_t *m)
{
#ifdef __GLIBC__
        return m->__data.__owner == gettid();
#else
        return pthread_mutex_trylock(m) != 0 || (pthread_mutex_unlock(m), false);
#endif
}
static inline bool lock_rw_held(pthread_rwlock_t *l)
{
        if (pthread_rwlock_trywrlock(l) != 0)
                return true;
        pthread_rwlock_unlock(l);
        return false;
}
static inline bool lock_rw_wrheld(pthread_rwlock_t *l)
{
        if (pthread_rwlock_tryrdlock(l) != 0)
                return true;
        pthread_rwlock_unlock(l);
        return false;
}
#define assert_held(m)     assert(lock_mutex_held(m))
#define assert_rwlocked(l) assert(lock_rw_held(l))
#define assert_wrlocked(l) assert(lock_rw_wrheld(l))
#else
#define assert_held(m)     ((void)0)
#define assert_rwlocked(l) ((void)0)
#define assert_wrlocked(l) ((void)0)
#endif
#include "format.h"
#include "journal.h"
#include "lower.h"

#define FS_TIMEOUT_LONG 86400.0     /* all changes pass through this mount */
#define FS_SMALL_BLOB   (64 * 1024) /* lower files up to this size are read into memory */
#define REAP_MAX        256         /* removed files' fds waiting for their close (reap.c) */

enum node_kind {
        NODE_SYNTH,  /* the read-only root and the dirs leading to each part */
        NODE_COW,    /* the repo or the home: an upper over a lower */
        NODE_MIRROR, /* read-only passthrough of a host dir */
        NODE_CTL,    /* a file in /.cloister */
};

enum ctl_file {
        CTL_WORKSPACE,
        CTL_CHANGES,
};

struct layer {
        struct fs_workspace *ws; /* set when attached (daemon.c) */
        unsigned part;           /* distinguishes lower inode numbers */
        const char *mpath;       /* where it appears in the mount, e.g. "/workspace" */
        int upper_fd;            /* the upper tree's root directory (the writable layer) */
        struct lower *lower;     /* what the upper tree merges with: base, or a stack over it */
        struct lower *base;      /* the git tree or plain dir at the bottom (owned) */
        /* stacks replaced by a checkpoint while mounted: their entries may still be
         * held by nodes and handles, so they are freed only at unmount */
        struct lower **retired;
        size_t n_retired;
        struct node *root;
        /* Its own FUSE connection (parts.c, "Zero-message opens" in
         * docs/fs-design.md), or NULL: served on the root's. Set while the
         * root's is serving already, so atomic. */
        struct fs_conn *_Atomic conn;
};

/*
 * A FUSE connection of the daemon (session.c). The root's serves the
 * synthetic root, the mirrors and /.cloister, with an OPEN per open file;
 * each copy-on-write part may have its own, mounted over the root's
 * directory, on which OPEN and FLUSH are answered ENOSYS once and never
 * sent again: reads and writes then come without a handle (fh 0) and are
 * served through one made for the request (ops_request_handle).
 */
struct fs_conn {
        struct fs_workspace *ws;
        struct fuse_session *se;
        struct node *root;   /* FUSE_ROOT_ID on this connection */
        struct layer *layer; /* the part it serves; NULL: the root's */
        /* OPEN and FLUSH answered ENOSYS: set by a part's, cleared at its
         * FUSE_INIT where the kernel has no FUSE_NO_OPEN_SUPPORT */
        _Atomic bool no_open;
        bool mounted, started;
        /* The part's connection is the one its kernel side uses (its loop
         * runs); stopping: parts_stop asked it to end */
        _Atomic bool live, stopping;
        int mnt_fd;       /* O_PATH on its mount's root: a part's to unmount it by, the root's
                             to find the parts' directories from (parts.c) */
        pthread_t thread; /* a part's loop */
        int error;        /* what its loop ended with */
};

struct mirror {
        unsigned part;
        const char *mpath;
        int root_fd;          /* O_PATH, the host directory */
        char *const *exclude; /* fnmatch globs, NULL-terminated */
};

struct node {
        uint64_t ino; /* st_ino: stable, see docs/fs-design.md */
        /* protected by ws->itable_lock */
        uint64_t nlookup;
        unsigned refs; /* children, open handles, permanent nodes */
        struct node *hnext;
        bool hashed;

        enum node_kind kind;
        mode_t type; /* S_IFMT bits; never changes for a node */

        /* parent, name, unlinked, name_stale: written holding ws->ns_lock
         * exclusively and ws->itable_lock (node_set_parent,
         * node_mark_unlinked), so either lock is enough to read them: the
         * handlers hold ns_lock, the shed (shed.c) only itable_lock. */
        struct node *parent;
        char *name;
        /* No name any more (unlinked, rmdir'ed, renamed over): the node lives on
         * for open files and keeps its upper inode (ufd, hfd) or its lower entry,
         * so fstat, read and write still work; st_nlink is then 0. */
        bool unlinked;
        /* A file whose recorded name was removed while another name of it
         * stays: no name is known to reach it by, so shed.c leaves it. A link
         * records the new name (ops_link), as a rename does. */
        bool name_stale;

        /* The node's data and its open handles' (ops.h, struct handle):
         * the upper fds once made, metacopy's end, a handle's switch to the
         * upper file. Taken inside ns_lock, never around it. */
        pthread_mutex_t lock;

        /* NODE_SYNTH: children, fixed after setup; NODE_CTL: which file */
        struct node **children;
        size_t n_children;
        enum ctl_file ctl;

        /* NODE_COW (protected by ws->ns_lock). upper and metacopy are atomic
         * because a read peeks at them without ns_lock, to see whether its
         * handle must move to the upper file (do_read), and decides again
         * under the locks. */
        struct layer *layer;
        _Atomic bool upper;    /* exists in the upper tree */
        _Atomic bool metacopy; /* upper holds metadata only; data is the lower's */
        bool opaque;           /* upper dir hides the lower one */
        bool has_lower;
        struct lower_entry lower;
        bool indexed;          /* its upper inode is in the link index (links.c) */
        bool reclaimed;        /* unlinked file: its size was given back to the quota */
        uint64_t reclaimed_at; /* ... at this size (quota_reclaim) */
        int ufd;               /* dirs with an upper: the upper directory */
        /* dirs: an operation adding to its upper dir or sidecar is under way
         * (quota_dir_begin; ns_lock held exclusively): nested begins, what it
         * cost at the outermost, and the bytes reserved for it since */
        unsigned dir_depth;
        uint64_t dir_before, dir_reserved;
        json_t *meta;              /* dirs with an upper: the sidecar (NULL until loaded) */
        mode_t xbits;              /* dirs: S_ISUID/S_ISGID, kept off the host (attr.c) */
        uint8_t owner;             /* OWNER_* of the upper inode, once loaded (owner.c) */
        _Atomic uint64_t list_gen; /* dirs: bumped by every change of names (fs_dir_changed) */
        _Atomic bool moved;        /* dirs: given a new parent since the last opendir */
        /* dirs with a lower: st_nlink as merged, valid while list_gen == nlink_gen - 1 */
        _Atomic uint64_t nlink_gen;
        _Atomic nlink_t nlink;

        /* NODE_MIRROR */
        struct mirror *mirror;
        int hfd; /* O_PATH, never followed; also a COW non-dir's upper file */
};

enum {
        GITINDEX_NONE = 0,     /* built, or nothing to build */
        GITINDEX_BUILDING = 1, /* lookups of .git/index wait */
};

struct shed_stale;

struct fs_workspace {
        char *name, *state, *mountpoint, *source, *rev;
        char *git_config_extra; /* NULL: none */
        int state_fd;
        int lock_fd; /* <state>/fs.lock, held (LOCK_EX) while this daemon lives */
        uid_t uid;   /* the owner shown for the agent's files: agent.host_uid, or store_uid */
        gid_t gid;
        uid_t index_uid; /* the owner the workspace .git's index records (fs_options) */
        gid_t index_gid;
        uid_t store_uid; /* what the agent's files are owned by on disk: the daemon's ids */
        gid_t store_gid;
        uid_t agent_uid; /* the agent's ids inside the sandbox, if uid != store_uid */
        gid_t agent_gid;
        bool home_persist;
        char *home_upper_path; /* for discarding */

        struct node *root;
        pthread_rwlock_t ns_lock;
        /* SipHash key of the listing cookies (readdir offsets); see ops-entry.c */
        unsigned char dir_key[16];

        /* fds of removed files, closed by a thread of their own (reap.c) */
        struct {
                pthread_mutex_t lock;
                pthread_cond_t wake;
                pthread_t thread;
                bool started, stop;
                int fds[REAP_MAX];
                size_t n;
        } reap;

        /* cached nodes let go of before descriptors run out (shed.c) */
        struct {
                pthread_mutex_t lock;
                pthread_cond_t wake;
                pthread_t thread;
                pthread_mutex_t repay_lock; /* the worker repaying (shed_repay) */
                bool started, stop, asked;
                /* shed_kick, set by shed_init: what the node table (inode.c)
                 * calls when it has grown by a round's worth, with
                 * itable_lock held. A hook, so that core/ never calls up
                 * into ops/, where the shed lives; NULL until then. */
                void (*kick)(struct fs_workspace *ws);
                size_t limit; /* RLIMIT_NOFILE */
                /* nodes ever inserted, and the count at which to kick a round
                 * (itable_lock): a count of nodes now would fall with the
                 * FORGETs a round causes and kick too late */
                size_t inserts, next;
                size_t cursor; /* the bucket the next round starts at */
                int proc_fd;   /* /proc/self/fd, to count them */
                /* descriptors open at the last count, and inserts then (itable_lock) */
                size_t open, open_at;
                /* entries owed by the lookups and creates made while short,
                 * paid by whichever worker holds repay_lock (itable_lock) */
                size_t debt;
                /* entries of other names of linked files, dropped by the
                 * thread (shed_stale_drop; lock) */
                struct shed_stale *stale;
                size_t n_stale;
                /* What a caller in the sandbox may bring the count to: the
                 * rest is the host's (shed_admit). handles: opens and creates
                 * ever admitted (atomic), handles_at: at the last count
                 * (itable_lock); counted_ns: when (itable_lock). */
                size_t cap;
                atomic_size_t handles;
                size_t handles_at;
                uint64_t counted_ns;
                char pidns[48]; /* the daemon's pid namespace (its ns/pid link) */
        } shed;

        pthread_mutex_t itable_lock;
        struct node **buckets;
        size_t n_buckets, n_nodes;

        struct layer repo, home;
        bool has_home;
        struct mirror *mirrors;
        size_t n_mirrors;
        struct mirror objects;
        bool has_objects;

        journal *journal;

        /*
         * A checkpoint while mounted (layers-online.c): every write through an
         * open file holds write_gate shared, the switch holds it exclusively;
         * handles lists the open files (handles_lock), whose descriptors the
         * switch moves to the new writable layer; ctl serves <state>/fs.sock.
         */
        pthread_rwlock_t write_gate;
        pthread_mutex_t handles_lock;
        struct handle *handles;
        struct {
                int listen_fd, stop_fd;
                pthread_t thread;
                bool started;
        } ctl;

        uint64_t max_bytes, max_files;
        _Atomic uint64_t used_bytes, used_files;
        json_t *links; /* the writable layer's link index aliases (links.c), once read */
        /* frozen layers this state wrote, counted by quota_init (then closed) */
        int *frozen_own_fds;
        size_t n_frozen_own;
        uint64_t max_file_size; /* the upper filesystem's, found at mount (attr.c) */
        bool xattr_ok;          /* trusted.* xattrs work in the upper trees (attr.c) */
        /* FUSE_HANDLE_KILLPRIV_V2 was negotiated: the kernel leaves clearing
         * set-uid/set-gid on write, truncate and chown to us (attr_kill_suidgid). */
        bool killpriv_v2;
        /* The transport (fs/daemon/uring.c): [fs] io_uring = off; the ring
         * depth planned (0: /dev/fuse); whether FUSE over io_uring is in use,
         * and why not when not. Written before serving and at FUSE_INIT. */
        bool uring_off, uring;
        unsigned uring_depth;
        const char *uring_why;
        /*
         * The copy-on-write parts on connections of their own that send no
         * OPEN (session.c): [fs] zero_message_opens = off keeps them on the
         * root's; parts_why says why they are not when they are not.
         */
        bool parts_off, parts_split;
        const char *parts_why;
        char parts_why_buf[192];
        _Atomic bool parts_lost;      /* a part's connection ended unasked: the daemon ends */
        struct fs_conn conn;          /* the root's */
        _Atomic uint64_t checkpoints; /* bumped by each checkpoint (layers-online.c) */

        struct {
                _Atomic int state; /* GITINDEX_* or a negative errno (failed) */
                pthread_mutex_t lock;
                pthread_cond_t done;
                bool started;
                pthread_t thread;
                int git_fd;   /* the repo's upper .git directory */
                int fsdir_fd; /* <state>/fs, for the marker */
        } index;

        char *workspace_json;
        unsigned next_synth_ino;
        struct fuse_session *se;
};

/*
 * The agent's files are stored as the daemon's and shown as the agent's
 * (fs_options.agent); both are the identity when there is no sandbox
 * identity. Other owners pass through unchanged.
 */
static inline void fs_owner_show(const struct fs_workspace *ws, struct stat *st)
{
        if (st->st_uid == ws->store_uid)
                st->st_uid = ws->uid;
        if (st->st_gid == ws->store_gid)
                st->st_gid = ws->gid;
}
static inline uid_t fs_uid_store(const struct fs_workspace *ws, uid_t uid)
{
        return uid == ws->uid ? ws->store_uid : uid;
}
static inline gid_t fs_gid_store(const struct fs_workspace *ws, gid_t gid)
{
        return gid == ws->gid ? ws->store_gid : gid;
}

/*
 * dir's names are about to change (ns_lock held exclusively): what was read
 * of its listing before (a handle's snapshot, the merged st_nlink) goes.
 * Called at the start of every handler that adds, removes or moves a name,
 * whatever the outcome: one bump too many costs a listing, one too few
 * would leave a stale one in the kernel's cache.
 */
static inline void fs_dir_changed(struct node *dir)
{
        atomic_fetch_add(&dir->list_gen, 1);
}

/*
 * The session whose kernel knows n, for a notification, and n's number
 * there (FUSE_ROOT_ID for that connection's root); NULL when it is not
 * serving.
 */
static inline struct fs_conn *fs_node_conn(struct fs_workspace *ws, const struct node *n)
{
        /* Read once: it may be published meanwhile (parts.c), never unpublished. */
        struct fs_conn *c = n->kind == NODE_COW && n->layer ? atomic_load(&n->layer->conn) : NULL;

        return c && atomic_load(&c->live) ? c : &ws->conn;
}

static inline struct fuse_session *fs_node_session(struct fs_workspace *ws, struct node *n,
                                                   fuse_ino_t *ino)
{
        struct fs_conn *c = fs_node_conn(ws, n);

        *ino = n == c->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
        return c->se;
}

/*
 * Is n served on a connection that opens nothing? Then the daemon never
 * sees a file's last close, only the kernel's FORGET of it: a removed
 * file's space comes back then (release_locked, inode.c).
 */
static inline bool fs_node_opens_unseen(struct fs_workspace *ws, const struct node *n)
{
        return atomic_load(&fs_node_conn(ws, n)->no_open);
}

/* inode.c */
struct node *node_new(struct fs_workspace *ws, enum node_kind kind, mode_t type, uint64_t ino);
/* Find a hashed node by st_ino and take one lookup on it, or NULL. */
struct node *node_find_lookup(struct fs_workspace *ws, uint64_t ino);
/*
 * Hash n and take one lookup (n's parent gets a reference), or, if a node
 * with n's st_ino is hashed already, free n and take a lookup on that one.
 */
struct node *node_insert_lookup(struct fs_workspace *ws, struct node *n);
void node_free(struct node *n);
/* Hash a freshly created entry's node, displacing any stale node with its st_ino. */
struct node *node_insert_new(struct fs_workspace *ws, struct node *n);
/* Find by st_ino and take a reference (node_unref), or NULL. */
struct node *node_find_ref(struct fs_workspace *ws, uint64_t ino);
void node_forget(struct fs_workspace *ws, struct node *n, uint64_t nlookup);
void node_ref(struct fs_workspace *ws, struct node *n);
void node_unref(struct fs_workspace *ws, struct node *n);
/* Move n under a new parent/name (rename); caller holds ns_lock exclusively. */
int node_set_parent(struct fs_workspace *ws, struct node *n, struct node *parent, const char *name);
/* n lost its last name (unlink, rmdir, renamed over); caller holds ns_lock exclusively. */
void node_mark_unlinked(struct fs_workspace *ws, struct node *n);
/* The mount-absolute path, e.g. "/workspace/a/b"; caller holds ns_lock. */
char *node_path(const struct node *n);
void node_table_free(struct fs_workspace *ws);

/* upper.c: a node's upper half: its sidecar in memory, pin, stat and open */
json_t *upper_meta(struct node *dir);
/* Make dir's sidecar durable (fsync, fsyncdir): saves do not wait for the disk. */
int upper_meta_sync(struct node *dir);
bool upper_meta_whiteout(struct node *dir, const char *name);
int upper_meta_set_whiteout(struct node *dir, const char *name, bool on);
json_t *upper_meta_rec(struct node *dir, const char *name);
/* Replace the record for name (NULL: delete it); takes a reference on rec. */
int upper_meta_set_rec(struct node *dir, const char *name, json_t *rec);
/* The agent's view of n's upper inode (attr.c applied), also once n is unlinked. */
int upper_fstat(struct fs_workspace *ws, struct node *n, struct stat *st);
/* Keep an O_PATH fd on a non-directory's upper file (n->hfd), so that it stays
 * reachable when the name it was found by goes (hard links). */
int upper_node_pin(struct node *n);
int upper_open(struct node *n, int flags, int *ret_fd);

/* owner.c: root's own files among the agent's, when the agent has a host uid */
#define OWNER_LOADED   1u /* node->owner is known */
#define OWNER_ROOT_UID 2u /* the stored uid is the daemon's own, not the agent's */
#define OWNER_ROOT_GID 4u
/* n's OWNER_* (fd: any fd on its upper inode, or -1 if it has none). */
unsigned owner_load(struct fs_workspace *ws, struct node *n, int fd);
/* Turn the stored owner of n's upper inode into the one the agent and host see. */
void owner_show(struct fs_workspace *ws, struct node *n, int fd, struct stat *st);
/* The OWNER_* for a host file stored as stored_*, of the owner uid/gid asked for. */
unsigned owner_flags_for(const struct fs_workspace *ws, uid_t stored_uid, uid_t uid,
                         gid_t stored_gid, gid_t gid);
/* Record flags on the inode behind fd (and in n->owner, if n). */
int owner_mark(struct fs_workspace *ws, struct node *n, int fd, unsigned flags);

/* attr.c: setuid/setgid/sticky bits and device nodes, kept off the host */
int attr_probe(struct fs_workspace *ws);
/* Read a dir's special bits into dir->xbits (after its ufd is opened). */
int attr_dir_load(struct fs_workspace *ws, struct node *dir);
/* The same from another fd on the dir (a frozen layer's). */
int attr_dir_load_fd(struct fs_workspace *ws, struct node *dir, int fd);
/* Turn the host stat of n's upper inode (fd: any fd on it, O_PATH too) into the agent's. */
void attr_view(struct fs_workspace *ws, struct node *n, int fd, struct stat *st);
/* Give the upper inode behind fd the agent's mode; xbits: a dir's node->xbits. */
int attr_set_mode(struct fs_workspace *ws, mode_t type, int fd, mode_t mode, dev_t rdev,
                  mode_t *xbits);
/* Drop S_ISUID, and S_ISGID where group-execute is set, from an upper
 * non-directory (fd: any fd on it): the kernel's rule for a write or
 * truncate by a writer without CAP_FSETID, and for a chown. 1 if bits were dropped (the new
 * mode in *ret_mode), 0 if there were none. */
int attr_kill_suidgid(struct fs_workspace *ws, struct node *n, int fd, mode_t *ret_mode);
/* A device node's rdev. */
int attr_rdev(struct fs_workspace *ws, int fd, dev_t *ret);

/* frozen.c: entries of frozen layers (n->lower.fz) as the agent sees them */
int frozen_getattr(struct fs_workspace *ws, struct node *n, struct stat *st);
ssize_t frozen_getxattr(struct node *n, const char *name, void *buf, size_t size);
ssize_t frozen_listxattr(struct node *n, char *buf, size_t size);
/*
 * Give dst (an fd on the copy: O_PATH, or a dir's) the owner, host mode,
 * trusted.cloister.* and user.* xattrs (the latter charged to the quota:
 * *ret_charged) and times of n's frozen entry.
 */
int frozen_copy_meta(struct fs_workspace *ws, struct node *n, int dst, uint64_t *ret_charged);

/* links.c: hard links whose names lie in different layers (ns_lock held) */
/* Does the writable layer's link index hold anything? */
bool links_top_any(struct fs_workspace *ws);
/* The writable layer's index entry for ino (O_PATH), or -ENOENT. */
int links_open_top(struct fs_workspace *ws, uint64_t ino, int *ret_fd);
/* Make st_nlink of n's upper inode (fd: any fd on it) the view's. */
void links_nlink(struct fs_workspace *ws, struct node *n, int fd, struct stat *st);
nlink_t links_view_nlink(struct fs_workspace *ws, struct node *n);
/* Copy n (of `names` names, lying below) into the index; fill copies its data and metadata. */
int links_copyup(struct fs_workspace *ws, struct node *n, nlink_t names,
                 int (*fill)(struct fs_workspace *ws, struct node *n, int out,
                             uint64_t *ret_charged));
/* Make the name (p, name) of indexed n a name of the writable layer, if it lies below;
 * p is copied up already (rename copies both parents up first). */
int links_materialize(struct fs_workspace *ws, struct node *p, const char *name, const char *en,
                      struct node *n);
/* The name (p, en) of n goes: one alias less if it lies below (*ret_alias). */
int links_name_gone(struct fs_workspace *ws, struct node *p, const char *en, struct node *n,
                    bool *ret_alias);
/* n's last name went: its index entry goes too. */
void links_drop_if_gone(struct fs_workspace *ws, struct node *n);

/* cow.c: lookup, attributes and listing of copy-on-write nodes */
struct cow_dirent {
        char *name;
        uint64_t ino;
        mode_t type;
        uint64_t off; /* its listing cookie: ops-entry.c */
};
int cow_lookup(struct fs_workspace *ws, struct node *parent, const char *name, struct node **ret);
int cow_getattr(struct fs_workspace *ws, struct node *n, struct stat *st);
int cow_list(struct fs_workspace *ws, struct node *dir, struct cow_dirent **ret, size_t *ret_n);
int cow_lower_has(struct fs_workspace *ws, struct node *dir, const char *name);
/* Is n's recorded name still one of its names? (A hard link's may be removed.) */
bool cow_name_current(struct fs_workspace *ws, struct node *n);
int cow_layer_root(struct fs_workspace *ws, struct layer *l, struct node *parent, const char *name,
                   struct node **ret);
void fs_dirents_free(struct cow_dirent *d, size_t n);

/* copyup.c */
int copyup_dir(struct fs_workspace *ws, struct node *dir);
enum copyup_how {
        COPYUP_META,  /* metadata only: an empty upper file, data stays in the lower */
        COPYUP_DATA,  /* full data */
        COPYUP_EMPTY, /* the file is about to be truncated to 0 */
};
int copyup(struct fs_workspace *ws, struct node *n, enum copyup_how how);
/* n is a frozen file with more than one name: removing one copies it up first (links.c). */
bool copyup_has_names_below(struct node *n);

/* quota.c */
int quota_init(struct fs_workspace *ws);
int quota_charge_files(struct fs_workspace *ws, uint64_t n);
void quota_refund_files(struct fs_workspace *ws, uint64_t n);
/* Reserve up to want bytes; returns how many were granted (0: none left). */
uint64_t quota_charge_bytes_upto(struct fs_workspace *ws, uint64_t want);
int quota_charge_bytes(struct fs_workspace *ws, uint64_t n);
void quota_refund_bytes(struct fs_workspace *ws, uint64_t n);
void quota_add(struct fs_workspace *ws, uint64_t files, uint64_t bytes);
/* What an upper inode costs (quota.c says what that is). */
uint64_t quota_cost(const struct stat *st);
/* The most the cost of fd (stat st, its lock held) can grow by when
 * [off, off + len) is written or allocated (keep_size: the size stays). */
uint64_t quota_write_bound(int fd, const struct stat *st, uint64_t off, uint64_t len,
                           bool keep_size);
/* The longest write at off, at most len, whose bound is within grant. */
uint64_t quota_write_fit(int fd, const struct stat *st, uint64_t off, uint64_t len, uint64_t grant);
/* reserved was charged for a change that took a cost from before to after:
 * give back what it did not use, count what the host added past it. */
void quota_settle(struct fs_workspace *ws, uint64_t reserved, uint64_t before, uint64_t after);
/* The same, after read from fd (any fd on the inode, O_PATH too). */
void quota_settle_fd(struct fs_workspace *ws, int fd, uint64_t reserved, uint64_t before);
/*
 * A directory costs its own host blocks and its sidecar's
 * (quota_dir_cost), which grow with the names added to it and which ext4
 * never gives back while the directory exists. Whatever adds a name to
 * d's upper directory or a record to its sidecar holds ns_lock
 * exclusively and first reserves what that can grow by (ENOSPC if the
 * bound has no room: one block, QUOTA_DIR_BLOCK, a name; two a sidecar
 * record), then settles to the cost the host reports after (quota_dir_end,
 * on every path). Begins nest: only the outermost measures and settles,
 * so a sidecar save inside a create does not spend the create's
 * reservation. d may have no upper yet (copied up inside: its new blocks
 * are then settled).
 */
#define QUOTA_DIR_BLOCK 4096
uint64_t quota_dir_cost(int dfd);
int quota_dir_begin(struct fs_workspace *ws, struct node *d, uint64_t reserve);
void quota_dir_end(struct fs_workspace *ws, struct node *d);
/* A removed file nobody has open: give its bytes back (again after a reopen). */
void quota_reclaim(struct fs_workspace *ws, struct node *n);
/*
 * Extended attributes count in [limits] bytes: each user.* attribute costs
 * its name (with its NUL) and its value. One file or directory may hold at
 * most FS_XATTR_FILE_MAX of them (ENOSPC past that, as ext4 when its block
 * is full), so the count per inode stays small however many names there are.
 */
#define FS_XATTR_FILE_MAX (64 * 1024)
static inline uint64_t quota_xattr_cost(const char *name, size_t size)
{
        return strlen(name) + 1 + size;
}
/* What fd's user.* attributes cost together (0 if it has none or can't say). */
uint64_t quota_xattrs_of(int fd);

/* gitindex.c: the workspace .git's index, built while the mount serves */
/* At setup: whether the index is still to be built (keeps fds for it). */
int gitindex_init(struct fs_workspace *ws, int fsdir, char **ret_error);
/* Once serving: start building it, if it is to be built. */
int gitindex_start(struct fs_workspace *ws);
/* A lookup of `name` in p: wait while that is the index being built; -EIO if it failed. */
int gitindex_wait(struct fs_workspace *ws, struct node *p, const char *name);
/* Wait for the build to end and release what it held. */
void gitindex_stop(struct fs_workspace *ws);

/* mirror.c */
int mirror_root(struct fs_workspace *ws, struct mirror *m, struct node *parent, const char *name,
                struct node **ret);
int mirror_lookup(struct fs_workspace *ws, struct node *parent, const char *name,
                  struct node **ret);
int mirror_getattr(struct fs_workspace *ws, struct node *n, struct stat *st);
int mirror_list(struct fs_workspace *ws, struct node *dir, struct cow_dirent **ret, size_t *ret_n);
int mirror_open(struct fs_workspace *ws, struct node *n, int flags, int *ret_fd);
int mirror_readlink(struct fs_workspace *ws, struct node *n, char **ret);
int mirror_getxattr(struct node *n, const char *name, void *buf, size_t size);
int mirror_listxattr(struct node *n, char *buf, size_t size);

/* control.c */
int control_read_all(struct fs_workspace *ws, enum ctl_file f, char **ret, size_t *ret_len);

/* reap.c: close fd (that of a removed file: the close frees its blocks) in a
 * thread of its own, so that no request waits for it. */
void reap_init(struct fs_workspace *ws);
void reap_close(struct fs_workspace *ws, int fd);
void reap_stop(struct fs_workspace *ws);
