/* SPDX-License-Identifier: MIT */
/*
 * fs.h: the cloister workspace filesystem, one FUSE session per workspace.
 *
 * The mount root is synthetic and read-only; beneath it are the copy-on-write
 * repo, the hidden home, read-only mirrors and the /.cloister control dir.
 * docs/fs-design.md describes the state directory, whiteouts, the inode map
 * and the caching rules. Library code: nothing here prints; errors come back
 * as a negative errno plus, where useful, a one-line message.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fs_workspace fs_workspace;

/* A host file or folder copied into the home at mount, read-only. */
struct fs_seed {
        const char *source; /* absolute host path */
        const char *dest;   /* clean relative path inside the home */
        unsigned line;      /* where the options came from, for errors (0: unknown) */
};

/* A host folder shown read-only. */
struct fs_mirror_options {
        const char *name;
        const char *source;   /* absolute host directory */
        const char *path;     /* absolute path inside the mount */
        char *const *exclude; /* NULL-terminated fnmatch(3) globs, or NULL */
        unsigned line;        /* for errors (0: unknown) */
};

/*
 * What the filesystem needs to know of a workspace, and nothing more:
 * mounts/ fills it in from the workspace config. Every pointer is borrowed
 * until fs_workspace_free().
 */
struct fs_options {
        const char *origin;     /* the file the options came from, for errors */
        const char *name;       /* the workspace name */
        const char *state;      /* absolute state directory */
        const char *mountpoint; /* absolute */
        struct {
                const char *source; /* a git repository or a plain directory */
                const char *rev;    /* the base revision of a git source */
                const char *path;   /* where it appears in the mount */
        } repo;
        struct {
                const char *path;
                const struct fs_seed *seeds;
                size_t n_seeds;
                bool persist; /* keep the home's writes across unmount */
        } home;
        const struct fs_mirror_options *mirrors;
        size_t n_mirrors;
        /*
         * Appended to the synthesized .git/config at the first mount, or NULL:
         * for a [network] mode = proxy workspace, the url.insteadOf rewrites
         * and the credential helper that send git through the egress proxy.
         */
        const char *git_config_extra;
        uint64_t max_bytes;   /* bytes the writable layers may hold */
        uint64_t max_files;   /* entries the writable layers may hold */
        uint64_t max_journal; /* bytes of <state>/journal.jsonl; 0: the default */
        /* [image]'s digest ("sha256:..."), for the journal's open mark; NULL: the host's
         * root. Read by fs_workspace_new() only. */
        const char *image;
        uint64_t tree_cache; /* bytes of parsed git trees the daemon keeps; 0: the default */
        bool io_uring_off;   /* [fs] io_uring = off: serve on /dev/fuse even where io_uring is on */
        /* [fs] zero_message_opens = off: the copy-on-write parts on the root's
         * connection, an OPEN and a RELEASE per open file */
        bool zero_open_off;
        /*
         * The sandbox identity of the agent, when the daemon runs as root
         * and the agent as an unprivileged host uid (host_uid 0: none, the
         * agent is the daemon's own user). Files the daemon stores as its
         * own are shown owned by host_uid/host_gid, which the sandbox maps
         * to uid/gid; what host_uid creates or chowns to itself is stored as
         * the daemon's; the journal names host_uid's requests as the agent's.
         */
        struct {
                uint32_t host_uid, host_gid;
                uint32_t uid, gid; /* inside the sandbox */
        } agent;
        /*
         * Who the agent's files are owned by as the sandbox shows them (its
         * uid and gid inside, whether cloister runs as root or not): what
         * the workspace .git's index records, so that git inside the
         * sandbox, which compares owners (core.checkStat = default), finds
         * every untouched file unchanged without reading it. 0: the owner
         * the mount shows on the host.
         */
        uint32_t index_uid, index_gid;
};

/*
 * Prepare the state directory and open every layer of the workspace
 * described by o (nothing is mounted yet). On failure returns a negative
 * errno and, if ret_error is not NULL, a malloc'd one-line reason.
 */
int fs_workspace_new(const struct fs_options *o, fs_workspace **ret, char **ret_error);
/*
 * Optional, in a process that will call fs_workspace_new() (a daemon): start
 * the slow part of its setup (libgit2's initialization) in a thread now,
 * so that what the caller does first runs beside it.
 */
void fs_daemon_prepare(void);
void fs_workspace_free(fs_workspace *w);

/*
 * Mount at the config's mountpoint and serve until unmounted or signalled
 * (SIGTERM, SIGINT, SIGHUP). Once the mount serves requests, one byte is
 * written to ready_fd (if >= 0) and it is closed. Returns 0 after a clean
 * unmount.
 */
int fs_workspace_serve(fs_workspace *w, int ready_fd, char **ret_error);

/* The repo's first writable layer, relative to the state dir (docs/fs-design.md, "State
 * directory"); after a checkpoint, fs/layers.json names the writable one (layers.h). */
#define FS_REPO_UPPER "fs/repo"

/*
 * Where a workspace path (relative, '/'-separated, no empty, "." or ".."
 * component: -EINVAL) is stored in an upper tree: each component escaped
 * as the daemon stores it (a name beginning with the reserved prefix gets
 * one more; docs/fs-design.md). Fills out, or -ENAMETOOLONG.
 */
int fs_upper_path(const char *rel, char *out, size_t size);

/*
 * Is a daemon serving this mountpoint? 1 yes (its pid in *ret_pid), 0 no
 * (stale mounts are detached and a stale pid file removed), < 0 error.
 */
int fs_mount_probe(const char *state, const char *mountpoint, int *ret_pid);

/*
 * A state directory's identity on this host ("DEV.INO" in hex), which the
 * mount's fsname carries (cloister:NAME:ID), so that a mount is known to be
 * a workspace's even when its daemon is dead.
 */
#define FS_STATE_ID_MAX 40
#define FS_NAME_MAX     64
int fs_state_id(const char *state, char out[static FS_STATE_ID_MAX]);
/* The cloister mount at mountpoint: 1 state's own, 0 another's (its name in
 * owner), -ENOENT none. */
int fs_mount_owner(const char *state, const char *name, const char *mountpoint,
                   char owner[static FS_NAME_MAX + 1]);
/*
 * The data path a mounted workspace's daemon serves on, as negotiated with
 * the kernel when it mounted: the transport ("/dev/fuse" or "io_uring"),
 * whether FUSE over io_uring (and why not, when not), FUSE_HANDLE_KILLPRIV_V2,
 * passthrough and zero-message opens are in use.
 * -ENOENT before the kernel's FUSE_INIT was answered (or never mounted),
 * -EBADMSG if the record is damaged.
 */
struct fs_datapath {
        char transport[32];
        char io_uring_why[128]; /* "" when io_uring is in use */
        bool io_uring, killpriv_v2, passthrough;
        /* The copy-on-write parts on connections of their own, with no OPEN
         * per file (docs/fs-design.md); why not (or why a part is not). */
        bool zero_message_opens;
        char zero_message_opens_why[128];
};
int fs_datapath_read(const char *state, struct fs_datapath *ret);
/*
 * Whether this workspace may mount at mountpoint; else a negative errno and
 * a one-line reason: a mount of another workspace is there (live or dead),
 * or another file system; it is inside a cloister mount, inside the source
 * repository (resolved: symlinks can't hide it) or inside another
 * workspace's state; it is not an empty directory. 0 for a mount of its own.
 */
int fs_mountpoint_check(const char *state, const char *name, const char *mountpoint,
                        const char *source, char **ret_error);

/*
 * The last line of the daemon's log (<state>/fs/daemon.log), if it is the
 * daemon's own error ("cloister mount: ...", after libfuse's or
 * fusermount3's reason and a newline, if there is one), among what was
 * written past offset since; NULL if none (free() it). A mount that fails
 * once its output went to the log (FUSE refused, in a container without
 * CAP_SYS_ADMIN, say) would otherwise say nothing where it was started:
 * the caller says it.
 */
char *fs_daemon_log_error(const char *state, off_t since);

/* Unmount and wait up to timeout_ms for the daemon to exit; 0 if not mounted. */
int fs_unmount(const char *state, const char *mountpoint, int timeout_ms);
/*
 * The same for n workspaces at once: every daemon is signalled first, then
 * all are waited for (up to timeout_ms in all), and what they left mounted
 * is found in one pass over the mount table: O(n), not n times O(mounts).
 * ret_results[i]: 0 (stopped, or not mounted) or a negative errno.
 */
int fs_unmount_many(const char *const *states, const char *const *mountpoints, size_t n,
                    int timeout_ms, int *ret_results);
