/* SPDX-License-Identifier: MIT */
/*
 * sandbox-private.h: what the files of mounts/sandbox share and nobody else
 * needs: a growable argv, the bwrap argument builder and the limit helpers.
 */
#pragma once

#include <stdarg.h>
#include <stddef.h>
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
};

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
