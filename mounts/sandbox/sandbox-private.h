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

/* The descriptors bwrap reads; all close-on-exec until the child clears them. */
struct sandbox_fds {
        int seccomp;  /* --seccomp, read end of a pipe */
        int status_w; /* --json-status-fd, write end */
        int etc[8];   /* --ro-bind-data sources */
        size_t n_etc;
        const struct sandbox_tmpfs *tmpfs; /* the /tmp and /dev/shm to bind */
};

/*
 * /tmp and /dev/shm, each a tmpfs of [limits] tmp bytes and tmp_files
 * inodes, mounted by the child that execs bwrap in a mount namespace of its
 * own (sandbox-tmpfs.c says why and how).
 */
#define SANDBOX_TMPFS_N 2
struct sandbox_tmpfs {
        char *stage;                 /* <state>/sandbox-tmpfs, the staging mountpoint */
        char *dirs[SANDBOX_TMPFS_N]; /* in it: the tmpfs bwrap binds, one per directory */
        char *options;               /* "size=...,nr_inodes=...,mode=1777" */
        uint64_t size, nr_inodes;
        bool userns; /* not root: mount inside a user namespace of our own */
        char uid_map[32], gid_map[32];
};
/* In the parent: the names, options and maps, and the (empty) staging directory. */
int sandbox_tmpfs_prepare(const struct config *c, struct sandbox_tmpfs *t, char **ret_error);
void sandbox_tmpfs_clear(struct sandbox_tmpfs *t);
/* --bind arguments that put the mounts in place. */
void sandbox_tmpfs_bind_args(const struct sandbox_tmpfs *t, struct strv_builder *b);
/*
 * In the child between fork and exec of bwrap (system calls only): the
 * namespace and the mounts. Prints why on stderr and returns < 0 on failure;
 * then nothing may run.
 */
int sandbox_tmpfs_enter(const struct sandbox_tmpfs *t);

/*
 * Build bwrap's argv (argv[0] is CLOISTER_BWRAP). Opens the /etc data memfds
 * into fds->etc. The other fds must already be set.
 */
int sandbox_bwrap_argv(const struct sandbox_options *o, struct sandbox_fds *fds, char ***ret,
                       char **ret_error);

/*
 * Limits on the sandbox's first process, applied after bubblewrap created
 * its user namespace and before the command runs (see sandbox-limits.c for
 * why that order makes RLIMIT_NPROC count only the sandbox).
 */
struct sandbox_cgroup;
int sandbox_limits_apply(const struct config *c, pid_t pid, struct sandbox_cgroup **ret_cg,
                         char **ret_error);
void sandbox_cgroup_free(struct sandbox_cgroup *cg);

/* Kill every process of the sandbox whose first process is pid1. */
void sandbox_kill_all(pid_t pid1, int sig);

int sandbox_errorf(char **ret_error, int r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Records of running sandboxes in <state>/sandboxes (sandbox-registry.c). */
int sandbox_registry_add(const char *state, pid_t pid1, char **ret_path);
void sandbox_registry_remove(char *path); /* unlinks and frees; NULL is a no-op */
void sandbox_registry_sweep(const char *state);
