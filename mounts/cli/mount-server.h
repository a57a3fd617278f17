/* SPDX-License-Identifier: MIT */
/*
 * mount-server.h: `cloister mount --server` (mount-server.c), a long-lived
 * process per user that starts the FUSE daemons `cloister mount` asks it
 * for, and what cmd-mount.c and it share.
 *
 * Why: every daemon forked from its own short-lived `cloister mount` owns a
 * private copy of every page the dynamic loader wrote (relocations of the
 * commands module's 31 libraries: libcrypto's alone is about 400 kB).
 * Daemons forked from one process that loaded the module once share those
 * pages with it and with each other, copy-on-write.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

struct sockaddr_un;

/* mount_client_forward's answer when no server of ours listens: run as before. */
#define MOUNT_SERVER_NONE (-1)

/*
 * The request (SOCK_SEQPACKET, one message): struct mount_request, then
 * argc NUL-terminated arguments (argv[0] "mount"), then MOUNT_SERVER_ENV
 * fields "NAME=value", or "NAME" where the caller has none; and
 * MOUNT_REQUEST_FDS descriptors: the caller's working directory, stdout and
 * stderr. The answer: struct mount_answer, the code `cloister mount` exits
 * with; whatever the command printed went to the caller's stdout and stderr.
 */
#define MOUNT_REQUEST_MAGIC 0x636c6d32u /* "clm2" */
#define MOUNT_REQUEST_FDS   3
#define MOUNT_SERVER_ARGS   3 /* mount CONFIG [--json] */
#define MOUNT_SERVER_ENV    6
#define MOUNT_REQUEST_MAX   (sizeof(struct mount_request) + 8 * 4096)

struct mount_request {
        uint32_t magic;
        uint32_t umask;
        uint64_t nofile_cur, nofile_max; /* the caller's RLIMIT_NOFILE */
        uint32_t argc;
        uint32_t reserved;
};

struct mount_answer {
        uint32_t magic;
        int32_t code;
        int32_t reserved;
        char message[244];
};

/* The variables that place a user's state and config, where its helpers are found, and
 * an image's timestamps (SOURCE_DATE_EPOCH): passed as the caller has them. */
extern const char *const mount_server_env[MOUNT_SERVER_ENV];

/* $XDG_STATE_HOME/cloister/mount.sock (known_xdg_dir); 0 or a negative errno. */
int mount_server_path(char **ret);
void mount_server_address(const char *path, struct sockaddr_un *a);

/* The peer's uid is ours (root's: root); its uid and pid in *ret_uid, *ret_pid (may be NULL). */
bool mount_server_peer_is_us(int fd, uid_t *ret_uid, pid_t *ret_pid);

/* pid mounts where we do (the same mount namespace): what the one forks, the other sees. */
bool mount_server_same_namespace(pid_t pid);

/* Whether argv (argv[0] "mount") is what a server runs: one config, --json at most. */
bool mount_server_args_ok(int argc, char *const *argv);

/*
 * `cloister mount ARGS` through this user's server, from the binary before
 * it loads the module (mount-client.c says why): MOUNT_SERVER_NONE where
 * the arguments are not the server's or no usable server listens, else the
 * exit code.
 */
int mount_client_forward(int argc, char *const *argv);

/* `cloister mount --server`: serve until SIGTERM, SIGINT or SIGHUP; the exit code. */
int mount_server_main(void);

/*
 * In a server's handler, its connection (the daemon must not keep it);
 * else -1. cmd-mount.c passes it to mount_daemon_fork.
 */
extern int mount_server_conn;

/*
 * Start c's daemon in a child of this process (cmd-mount.c): 0 once it
 * serves, with its pid in *ret_pid, else the exit code, the reason on
 * stderr. close_in_child: a descriptor the daemon must not keep, or -1.
 */
int mount_daemon_fork(const struct config *c, int close_in_child, int *ret_pid);
