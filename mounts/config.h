/* SPDX-License-Identifier: MIT */
/*
 * config.h: one workspace, as described by one INI file.
 *
 * The config is the trust boundary's blueprint: everything the agent will see
 * of the host is named here, so the parser refuses anything it does not
 * understand (unknown keys, relative paths, "..", overlaps) instead of
 * guessing. docs/config.md lists every key with its default.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/rules.h"

#define CONFIG_MAX_FILE_SIZE (1024 * 1024) /* a config is small; refuse more */
#define CONFIG_MAX_MIRRORS   64
#define CONFIG_MAX_SEEDS     256
#define CONFIG_MAX_EXCLUDES  256
#define CONFIG_MAX_ENV       256
#define CONFIG_NAME_MAX      64
#define CONFIG_MAX_HOSTS     1024 /* allow and deny entries, each */
#define CONFIG_MAX_RESOLVE   64
#define CONFIG_MAX_INJECTS   64
#define CONFIG_MAX_PATTERNS  64 /* paths and push_refs of one [inject] rule */

/*
 * [run] host_uids: the host uids (and gids, the same numbers) that root's
 * sandboxes run as, one per mounted workspace. The default lies above the
 * ranges shadow's useradd hands out for subordinate ids (up to SUB_UID_MAX,
 * 600100000), above systemd's container range (524288-1879048191) and
 * SSSD's default id mapping (up to 2000200000), and below 2^31.
 */
#define CONFIG_HOST_UID_MIN   2100000000U
#define CONFIG_HOST_UID_MAX   2100065535U
#define CONFIG_HOST_UID_FLOOR 65536U /* above the 16-bit ids: system, users, nobody */
/*
 * With [limits] cgroup = container the ids are those of the container's user
 * namespace, where no host user lives: Kubernetes gives a Pod's (hostUsers:
 * false) 65536 ids, 0-65535, so the sandbox's must lie below 65536 there.
 */
#define CONFIG_HOST_UID_CONTAINER_FLOOR 1000U
#define CONFIG_HOST_UID_CEILING         2147483647U /* ids stay positive as a signed int */

/* [limits] cgroup: where the sandbox's processes and memory are capped as root. */
enum config_cgroup {
        CONFIG_CGROUP_SANDBOX = 0, /* a pids (and memory) cgroup per sandbox (default) */
        CONFIG_CGROUP_CONTAINER,   /* the container's own cgroup, verified (sandbox-container.c) */
};

enum config_network {
        CONFIG_NETWORK_NONE = 0, /* loopback only (default) */
        CONFIG_NETWORK_HOST,     /* the host's network; refused by run without a flag */
        CONFIG_NETWORK_PROXY,    /* loopback only, and the egress proxy at 127.0.0.1:3128 */
};

struct config_id_range {
        uint32_t first, last; /* inclusive */
};

struct config_seed {
        char *source; /* absolute host path (file or directory) */
        char *dest;   /* relative path inside the home, no "..", no leading "/" */
        unsigned line;
};

struct config_mirror {
        char *name;     /* from [mirror "NAME"] */
        char *source;   /* absolute host directory */
        char *path;     /* absolute path inside the workspace */
        char **exclude; /* NULL-terminated list of fnmatch(3) globs, never NULL */
        char *bin; /* a folder of it (relative; "." itself) put on the sandbox's PATH, or NULL */
        char *env; /* a variable set to its path in the sandbox (RUSTUP_HOME, ...), or NULL */
        unsigned line; /* line of the section header */
        unsigned path_line;
};

/*
 * A value that used a specifier (%C, %R), where it stands in the file: a
 * copy of the file written elsewhere (cloister fork) replaces `raw` on
 * that line by `fixed`, the same value with the specifiers expanded and
 * any '%' it then holds written "%%", so that it means the same there.
 */
struct config_expanded {
        unsigned line;
        char *raw;
        char *fixed;
};

struct config {
        char *file; /* the path it was loaded from */
        struct config_expanded *expanded;
        size_t n_expanded;

        struct {
                char *name;       /* [A-Za-z0-9._-]{1,64}, not "." or ".." */
                char *state;      /* absolute; upper layers, journal, broker state */
                char *mountpoint; /* absolute; default <state>/mnt */
        } workspace;

        struct {
                char *source; /* absolute; a git repository or a plain directory */
                char *rev;    /* default "HEAD" */
                char *path;   /* absolute path inside; default "/workspace" */
        } repo;

        struct {
                char *path; /* absolute path inside; default "/home/agent" */
                struct config_seed *seeds;
                size_t n_seeds;
                bool persist; /* keep home writes across unmount; default false */
        } home;

        struct config_mirror *mirrors;
        size_t n_mirrors;

        struct {
                char *socket; /* absolute host path; default <state>/broker.sock */
                char *policy; /* absolute host path; NULL: no broker */
                char *dir;    /* keys, sealed secrets, audit log; default <state>/broker */
        } broker;

        struct {
                uint64_t bytes;     /* bytes the agent may write; default 4 GiB */
                uint64_t files;     /* inodes the agent may create; default 100000 */
                uint64_t timeout;   /* seconds of wall clock for `run`; default 3600 */
                uint64_t memory;    /* bytes of address space; default 4 GiB */
                uint64_t processes; /* RLIMIT_NPROC; default 512 */
                uint64_t cpu;       /* seconds of CPU (RLIMIT_CPU); default 3600 */
                uint64_t tmp;       /* size of the /tmp tmpfs; default 512 MiB */
                uint64_t tmp_files; /* inodes of /tmp and of /dev/shm; default tmp / 16 KiB */
                uint64_t journal;   /* bytes of the write journal; default 256 MiB */
                uint64_t audit;     /* bytes of the broker's audit log; default 64 MiB */
                uint64_t netlog;    /* bytes of the proxy's net.jsonl; default 256 MiB */
                uint64_t runlog;    /* bytes of the run record, runs.jsonl; default 16 MiB */
                enum config_cgroup cgroup; /* default CONFIG_CGROUP_SANDBOX */
                uint64_t
                        tree_cache; /* bytes of parsed git trees the daemon keeps; default 32 MiB */
                bool set_bytes, set_files, set_timeout, set_memory, set_processes;
        } limits;

        struct {
                enum config_network mode;
                struct proxy_host_pattern *allow, *deny;
                size_t n_allow, n_deny;
                struct proxy_resolve *resolve; /* test only */
                size_t n_resolve;
                char *test_ca;        /* test only */
                uint64_t connections; /* per run; default 64 */
                uint64_t rate;        /* requests per second per run; default 50 */
                uint64_t bytes_out;   /* bytes sent upstream per run; default 1 GiB */
                bool set_bytes_out;
                unsigned mode_line, first_proxy_key_line;
        } network;

        /* [inject "NAME"] sections, in file order */
        struct proxy_inject_rule *injects;
        size_t n_injects;

        struct {
                /* [logs] stdout = json: the journal, audit and network lines also on
                 * standard output, tagged (lib/logsink.h); default none */
                bool stdout_json;
        } logs;

        struct {
                /* [fs] io_uring = off: the daemon serves on /dev/fuse even where
                 * FUSE over io_uring is on in the kernel; default auto */
                bool io_uring_off;
                /* [fs] zero_message_opens = off: the copy-on-write parts stay on the
                 * root's FUSE connection, an OPEN per open file; default auto */
                bool zero_open_off;
        } fs;

        /* [image]: the declared environment the sandbox runs on (docs/cloister-image.md) */
        struct {
                char *source;         /* "oci:/DIR[:TAG]", ...; NULL: the host's /usr (default) */
                char *digest;         /* "sha256:..." the manifest must have; NULL: any */
                bool allow_setuid;    /* setuid files imported without the bit; default false */
                uint64_t max_file;    /* bytes of one entry; default 4 GiB */
                uint64_t max_size;    /* bytes unpacked per import; default 16 GiB */
                uint64_t max_entries; /* entries unpacked per import; default 1000000 */
        } image;

        struct {
                char **env; /* NULL-terminated host variable names allowed in; never NULL */
                char *user; /* the agent's user name; default "agent" */
                struct config_id_range host_uids; /* default CONFIG_HOST_UID_MIN-MAX */
                /* root in a container whose root is the host's (no user namespace of
                 * its own): run anyway (check warns); default false, refused */
                bool allow_host_root;
        } run;
};

/*
 * Load and validate a config. On failure returns a negative errno and, if
 * ret_error is not NULL, a malloc'd one-line message in the form
 * "FILE:LINE: key 'x' in [section]: reason". ret is untouched on failure.
 */
int config_load(const char *path, struct config **ret, char **ret_error);
void config_free(struct config *c);
static inline void config_freep(struct config **c)
{
        config_free(*c);
}
#define _cleanup_config_ __attribute__((cleanup(config_freep)))

/*
 * Security lint: a warning in out for each setting that undermines the
 * boundary, with host_home (may be NULL) as the user's home. -ENOMEM only.
 */
struct lint;
int config_lint(const struct config *c, const char *host_home, struct lint *out);

/*
 * The config of a fork of c (cloister fork; config-fork.c): c's file with
 * its own [workspace] name and state, [repo] rev pinned (rev NULL: as it
 * is), no [workspace] mountpoint and no [broker] socket or dir (their
 * defaults lie in the fork's state), specifiers expanded; checked with
 * config_load() and written to path, which must not exist.
 */
struct config_fork_edits {
        const char *name;
        const char *state;
        const char *rev;
        const char *comment; /* a first line, "# " + comment, or NULL */
};
int config_fork_write(const struct config *c, const struct config_fork_edits *e, const char *path,
                      char **ret_error);
