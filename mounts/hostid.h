/* SPDX-License-Identifier: MIT */
/*
 * hostid.h: the unprivileged host identities that root's sandboxes run as.
 *
 * When cloister runs as root, the agent must not be host uid 0: its uid and
 * gid inside the sandbox map to a host uid and gid (the same number) that
 * owns nothing on the host. Each mounted workspace holds one, from
 * [run] host_uids, for as long as it is mounted; all runs of that workspace
 * share it, because they share its files (see docs/security.md).
 *
 * Reservations are files in HOSTID_DIR, one per uid, each held with an
 * exclusive flock(2) by the process that reserved it (the FUSE daemon, or a
 * `cloister run --no-mount`). The kernel drops the lock when that process
 * dies, however it dies, so a SIGKILLed holder frees its uid at once. Only
 * root reserves (the directory is root's, mode 0700).
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#define HOSTID_DIR "/run/cloister/host-uids"

typedef struct hostid hostid;

/*
 * Reserve the lowest uid in [first, last] that no other holder has and that
 * owns nothing visible on the host: no entry in the user or group database
 * (NSS, so /etc/passwd, /etc/group and any directory service), inside no
 * range of /etc/subuid or /etc/subgid, and no process running with it as
 * its real or saved uid (every sandbox process has it as all of its ids). owner goes into the
 * reservation file for people who read it (the workspace's state directory). Fails with -EUSERS and
 * a one-line message when every uid of the range is taken.
 */
int hostid_acquire(uint32_t first, uint32_t last, const char *owner, hostid **ret,
                   char **ret_error);
uid_t hostid_uid(const hostid *h);
/* Release (the reservation file goes away) and free. NULL is a no-op. */
void hostid_free(hostid *h);
static inline void hostid_freep(hostid **h)
{
        hostid_free(*h);
}
#define _cleanup_hostid_ __attribute__((cleanup(hostid_freep)))

/*
 * Is uid reserved, by process pid? 0 yes; -ESRCH if nobody holds it;
 * -EPERM if someone else does; another negative errno if it can't tell.
 */
int hostid_check(uid_t uid, pid_t pid);
