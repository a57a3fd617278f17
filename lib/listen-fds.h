/* SPDX-License-Identifier: MIT */
/*
 * listen-fds.h: sockets handed over by the service manager (systemd's socket
 * activation, sd_listen_fds(3)), read from the environment without
 * libsystemd. The protocol is three variables: LISTEN_PID (the process they
 * are for), LISTEN_FDS (how many descriptors, from fd 3 on) and
 * LISTEN_FDNAMES (ignored here: a daemon that needs to know which socket is
 * which asks the socket itself, see listen_fd_unix_path()).
 */
#pragma once

#include <stddef.h>

#define LISTEN_FDS_START 3
#define LISTEN_FDS_MAX   64 /* a daemon that is passed more refuses them all */

/*
 * How many descriptors the service manager passed this process, from
 * LISTEN_FDS_START on: 0 when LISTEN_PID is unset or names another process.
 * Each one is made close-on-exec. The three variables are removed from the
 * environment in every case, so that no child takes them for its own.
 * -EINVAL: a variable is malformed or LISTEN_FDS is over LISTEN_FDS_MAX;
 * -EBADF: a descriptor it announces is not open.
 */
int listen_fds_take(void);

/*
 * The filesystem path of fd, which must be a listening AF_UNIX stream
 * socket bound to a path. -ENOTSOCK: not a socket; -EPROTOTYPE: not a
 * stream socket; -EINVAL: not listening; -EAFNOSUPPORT: not AF_UNIX, or an
 * abstract or unnamed socket; -ENAMETOOLONG: the path does not fit size.
 */
int listen_fd_unix_path(int fd, char *buf, size_t size);
