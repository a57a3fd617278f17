/* SPDX-License-Identifier: MIT */
/*
 * sandbox-private.h: what the files of mounts/sandbox share and nobody else
 * needs: a growable argv, the bwrap argument builder and the limit helpers.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hostid.h"
#include "sandbox.h"

/* A NULL-terminated, growable vector of strings; errors stick until the end. */
struct strv_builder {
        char **v;
        size_t n, allocated;
        int error; /* first failure, negative errno */
};
void sandbox_strv_add(struct strv_builder *b, const char *s);
void sandbox_strv_addf(struct strv_builder *b, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* Take the vector (NULL on error, with the error returned). */
int sandbox_strv_finish(struct strv_builder *b, char ***ret);
void sandbox_strv_clear(struct strv_builder *b);

/* Bind sources staged for a root-run sandbox (sandbox-identity.c): at most this many. */
#define SANDBOX_STAGE_MAX 96

/* The descriptors bwrap reads; all close-on-exec until the child clears them. */
struct sandbox_fds {
        int seccomp;   /* --seccomp, read end of a pipe */
        int status_w;  /* --json-status-fd, write end */
        int env;       /* the sandbox's environment, a sealed memfd (sandbox_env_memfd()) */
        bool env_args; /* ... read by bwrap's --args (no cloister-exec), not by cloister-exec */
        const struct sandbox_tmpfs *tmpfs; /* the /tmp and /dev/shm to bind */
        struct sandbox_etc *etc;           /* filled by sandbox_bwrap_argv() */
        int userns; /* --userns: a root-run sandbox's user namespace, or -1 */
        const struct sandbox_record *record; /* claimed by the child for its group */
        struct {
                char *path; /* a host path of root's; mounted at SANDBOX_STAGE_DIR/<index> */
                bool dir;
        } stage[SANDBOX_STAGE_MAX];
        size_t n_stage;
};

/*
 * /tmp and /dev/shm, each a tmpfs of [limits] tmp bytes and tmp_files
 * inodes, mounted by the child that execs bwrap in a mount namespace of its
 * own (sandbox-tmpfs.c says why and how).
 */
#define SANDBOX_TMPFS_N 2
struct sandbox_tmpfs {
        char *stage; /* the staging mountpoint: <state>/sandbox-tmpfs, root's SANDBOX_STAGE_DIR */
        const char *stage_options;   /* its tmpfs's */
        char *dirs[SANDBOX_TMPFS_N]; /* in it: the tmpfs bwrap binds, one per directory */
        char *options;               /* "size=...,nr_inodes=...,mode=1777" */
        uint64_t size, nr_inodes;
        bool userns; /* not root: mount inside a user namespace of our own */
        char uid_map[32], gid_map[32];
};
/*
 * In the parent: the names, options and maps, and the (empty) staging
 * directory; root_staged: a root-run sandbox's, in SANDBOX_STAGE_DIR.
 */
int sandbox_tmpfs_prepare(const struct config *c, bool root_staged, struct sandbox_tmpfs *t,
                          char **ret_error);
void sandbox_tmpfs_clear(struct sandbox_tmpfs *t);
/* Where the sandbox sees t->dirs[i] (bwrap --binds it there). */
const char *sandbox_tmpfs_dest(size_t i);
/*
 * In the child between fork and exec of bwrap (system calls only): the
 * namespace and the mounts. Prints why on stderr and returns < 0 on failure;
 * then nothing may run.
 */
int sandbox_tmpfs_enter(const struct sandbox_tmpfs *t);
/*
 * For the child's steps (write(2) only, no allocation): prints "cloister
 * run: cannot set up the sandbox's SETUP, so nothing runs: WHAT[ DIR][NAME]:
 * ERRNAME" on stderr and returns -err.
 */
int sandbox_child_fail(const char *setup, const char *what, const char *dir, const char *name,
                       int err);

/*
 * The sandbox's /etc (sandbox-etc.c says why one tmpfs): synthesized files
 * and binds of SANDBOX_ETC_HOST_N host entries, in a tmpfs at
 * <stage>/etc (sandbox-tmpfs.c) that bwrap binds read-only.
 */
#define SANDBOX_ETC_HOST_N 14
/* A host file up to this size is copied in; a larger one is bound. */
#define SANDBOX_ETC_COPY_MAX (1024 * 1024)
struct sandbox_etc {
        char *dir;        /* <stage>/etc, in the staging tmpfs */
        char options[64]; /* its tmpfs's size and inodes */
        struct {
                const char *name; /* under /etc */
                char *data;
                size_t len;
        } files[8];
        size_t n_files;
        char *host_dest[SANDBOX_ETC_HOST_N]; /* where each host entry is bound, under dir */
        uid_t uid;                           /* owner of the synthesized entries, or -1 */
        gid_t gid;
        bool no_host; /* [image]: its /etc is bound, with only the synthesized files over it */
};
/* In the parent: the files' contents and the paths. */
int sandbox_etc_prepare(const struct sandbox_options *o, const struct sandbox_tmpfs *t,
                        struct sandbox_etc *e);
void sandbox_etc_clear(struct sandbox_etc *e);
/*
 * In the child between fork and exec of bwrap, after sandbox_tmpfs_enter()
 * (system calls only): the tmpfs, its files and binds. Prints why on stderr
 * and returns < 0 on failure; then nothing may run.
 */
int sandbox_etc_enter(const struct sandbox_etc *e);

/*
 * The sandbox's environment (NAME=VALUE strings) in a sealed memfd at
 * offset 0, for bwrap and never in its own environment: NUL-terminated
 * NAME=VALUE entries for cloister-exec --env-fd, or with as_args the
 * NUL-separated arguments "--clearenv" and "--setenv NAME VALUE" for
 * bwrap's --args.
 */
int sandbox_env_memfd(char *const *env, bool as_args, int *ret_fd);
/* The one environment bwrap itself is executed with. */
#define SANDBOX_BWRAP_ENV_PATH "PATH=/usr/sbin:/usr/bin:/sbin:/bin"

/*
 * Build bwrap's argv (argv[0] is CLOISTER_BWRAP). Fills fds->etc (which
 * must be set, like fds->tmpfs) with the sandbox's /etc. The other fds must
 * already be set.
 */
int sandbox_bwrap_argv(const struct sandbox_options *o, struct sandbox_fds *fds, char ***ret,
                       char **ret_error);

/*
 * Limits on the sandbox's first process, applied after bubblewrap created
 * its user namespace and before the command runs (see sandbox-limits.c for
 * why that order makes RLIMIT_NPROC count only the sandbox).
 */
struct sandbox_cgroup;
/*
 * For a root-run sandbox: a helper with its host identity, forked ahead,
 * that sets the limits when sandbox_limits_apply() gives it the pid.
 */
struct sandbox_limiter;
int sandbox_limiter_start(const struct config *c, uid_t uid, gid_t gid,
                          struct sandbox_limiter **ret, char **ret_error);
void sandbox_limiter_free(struct sandbox_limiter *l);
/*
 * As root: the sandbox's pids cgroup (and memory cap), made and limited
 * before its pid is known (*ret is NULL when not root). Fails when none can
 * be made: then running as root is refused. With [limits] cgroup =
 * container, none is made (*ret NULL): the container's cgroup is checked
 * instead, and *ret_note says what enforces the limits.
 */
int sandbox_cgroup_prepare(const struct config *c, struct sandbox_cgroup **ret, char **ret_note,
                           char **ret_error);
/*
 * [limits] cgroup = container: 0 and *ret_note (malloc'd, one line) if the
 * cgroup this process is in caps memory at or below [limits] memory (what
 * enforces processes is said too); else an error naming the limit missing.
 */
int sandbox_container_verify(const struct config *c, char **ret_note, char **ret_error);
/* As root, early: pay the kernel's first-move wait off the path (sandbox-limits.c). */
void sandbox_cgroup_prime(void);
/*
 * The rlimits on pid, then pid into cg (if any). l: the root-run sandbox's
 * limiter; NULL: the pid is our own uid's, set here.
 */
int sandbox_limits_apply(const struct config *c, pid_t pid, struct sandbox_limiter *l,
                         const struct sandbox_cgroup *cg, char **ret_error);
/* Whether the memory cap killed a process, or the pids cap refused a fork (as root). */
void sandbox_cgroup_hits(const struct sandbox_cgroup *cg, struct sandbox_result *res);
/* The pids cgroup's name, its path's last component (sandbox_result.cgroup); "" without one. */
void sandbox_cgroup_name(const struct sandbox_cgroup *cg, char *buf, size_t size);
void sandbox_cgroup_free(struct sandbox_cgroup *cg);

/*
 * Kill every process of the sandbox whose first process is pid1: 0, or the
 * negative errno of a kill(2) that failed (EPERM: no CAP_KILL over the
 * sandbox's uid), so that nobody is told the sandbox stopped when it did not.
 */
int sandbox_kill_all(pid_t pid1, int sig);
/*
 * Whether this process may stop a sandbox run as another uid (host_uid: a
 * root-run sandbox's), which [limits] timeout and every teardown need: 0,
 * or an error naming the capability missing.
 */
int sandbox_kill_check(const struct config *c, uid_t host_uid, char **ret_error);
/* As root: refuse (with why and what to do) where sandbox_host_root_detect() says 1 or fails. */
int sandbox_host_root_check(const struct config *c, char **ret_error);

int sandbox_errorf(char **ret_error, int r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Records of running sandboxes in <state>/sandboxes (sandbox-registry.c). */
struct sandbox_record {
        int fd; /* the record, open for rewrites; -1: none */
        char *path;
        unsigned long long run_start; /* this run's start time */
};
#define SANDBOX_RECORD_NULL ((struct sandbox_record){.fd = -1})
/* Before the spawn: the run's record, naming nothing to kill yet. */
int sandbox_registry_open(const char *state, struct sandbox_record *ret);
/* In the spawned child, before its exec (nothing allocated): names the
 * process group the child has just made as the sandbox's. */
int sandbox_registry_claim(const struct sandbox_record *rec);
/* pgid: bubblewrap's process group (0: none of its own); pid1: its child. */
int sandbox_registry_update(const struct sandbox_record *rec, pid_t pgid, pid_t pid1);
void sandbox_registry_close(struct sandbox_record *rec); /* unlinks; a closed one is a no-op */
void sandbox_registry_sweep(const char *state);

/*
 * A root-run sandbox's identity (sandbox-identity.c). bubblewrap sets up the
 * sandbox as the agent's host uid, which can't reach root's private paths
 * (the state directory, the build tree): those bind sources are mounted,
 * by root in the bwrap process's own mount namespace, under
 * SANDBOX_STAGE_DIR, where that uid can reach them.
 */
#define SANDBOX_STAGE_DIR "/run/cloister/stage"
/*
 * A user namespace mapping SANDBOX_AGENT_UID/GID to host_uid/gid only,
 * nesting disabled, made in two steps so that the helper's fork and
 * unshare overlap the caller's own work: start forks the helper; finish
 * waits for it, writes the maps, puts the namespace's fd on fd (dup3,
 * close-on-exec), a number the caller reserved and may already have used,
 * and lets the helper exit; free reaps it (not on the way to bwrap).
 */
struct sandbox_userns;
/*
 * Fork a helper tied to us by a pipe to it and a stream socket from it (so
 * it can send a descriptor back), as the user namespace's and the limits'
 * helpers are. In the parent *to is the write end of the pipe to the
 * helper and *from our end of the socket; in the helper (return 0) *to is
 * its read end and *from its end of the socket, and the parent's ends are
 * closed there. Returns the helper's pid; < 0 with
 * nothing left open.
 */
pid_t sandbox_helper_fork(int *to, int *from);
int sandbox_userns_start(uid_t host_uid, gid_t host_gid, struct sandbox_userns **ret,
                         char **ret_error);
int sandbox_userns_finish(struct sandbox_userns *u, int fd, char **ret_error);
void sandbox_userns_free(struct sandbox_userns *u);
/* Stage src; *ret_path (malloc'd) is the path bwrap binds from instead. */
int sandbox_stage_add(struct sandbox_fds *fds, const char *src, bool dir, char **ret_path);
/*
 * In the child about to exec bwrap, after sandbox_tmpfs_enter() made its
 * mount namespace and the staging tmpfs on SANDBOX_STAGE_DIR: the staged
 * sources, mounted in it.
 */
int sandbox_stage_mount(const struct sandbox_fds *fds);
int sandbox_stage_dir_ensure(char **ret_error);
/*
 * The host uid/gid a root-run sandbox of c runs as: the one its mount's
 * daemon reserved (checked against the reservation), or with no_mount one
 * reserved now, held in *ret_held until hostid_free().
 */
struct config;
int sandbox_identity_for(const struct config *c, bool no_mount, uid_t *ret_uid, gid_t *ret_gid,
                         hostid **ret_held, char **ret_error);
