/* SPDX-License-Identifier: MIT */
/*
 * config-validate.c: the checks that need the whole file: required keys,
 * defaults, and the layout of parts inside the workspace (no duplicates, no
 * nesting, nothing over the system directories the sandbox provides).
 */
#include <errno.h>
#include <string.h>
#include <sys/un.h>

#include "broker.h"
#include "config-private.h"
#include "proxy.h"
#include "lib/util.h"

/* Paths inside the sandbox that cloister run provides itself. */
static const char *const reserved[] = {
        "/bin",  "/boot", "/dev",  "/etc", "/lib", "/lib32", "/lib64",     "/libx32",
        "/proc", "/run",  "/sbin", "/sys", "/tmp", "/usr",   "/.cloister",
};

/* Is a equal to b, or beneath it? */
static bool path_within(const char *a, const char *b)
{
        size_t n = strlen(b);

        if (streq(b, "/"))
                return true;
        return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

static bool paths_overlap(const char *a, const char *b)
{
        return path_within(a, b) || path_within(b, a);
}

static int dup_default(struct parse_state *st, char **field, const char *a, const char *b)
{
        if (*field)
                return 1;
        if (asprintf(field, "%s%s", a, b) < 0) {
                *field = NULL;
                return config_error(st, 0, "out of memory");
        }
        return 1;
}

/*
 * A unix socket's path must fit sun_path (107 bytes and its NUL): the
 * kernel takes no longer one, and cutting it would bind another path. Each
 * socket a workspace uses is checked here, so that a long state path is
 * reported at its line rather than when a daemon first binds.
 */
static bool socket_fits(struct parse_state *st, unsigned line, const char *key, const char *dir,
                        const char *name)
{
        size_t max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;
        size_t len = strlen(dir) + (name ? 1 + strlen(name) : 0);

        if (len <= max)
                return true;
        config_error(st, line,
                     "%s: the socket '%s%s%s' is %zu bytes long; a unix socket's path may have "
                     "at most %zu",
                     key, dir, name ? "/" : "", name ? name : "", len, max);
        return false;
}

static bool sockets_fit(struct parse_state *st)
{
        const struct config *c = st->cfg;
        unsigned state_line = st->lines[KEY_LINE_STATE];
        unsigned sock_line = st->lines[KEY_LINE_BROKER_SOCKET];
        unsigned dir_line = st->lines[KEY_LINE_BROKER_DIR];

        if (c->broker.policy &&
            (!socket_fits(st, sock_line ?: state_line,
                          sock_line ? "key 'socket' in [broker]" : "key 'state' in [workspace]",
                          c->broker.socket, NULL) ||
             !socket_fits(st, dir_line ?: state_line,
                          dir_line ? "key 'dir' in [broker]" : "key 'state' in [workspace]",
                          c->broker.dir, BROKER_ADMIN_SOCKET)))
                return false;
        if (c->network.mode == CONFIG_NETWORK_PROXY &&
            !socket_fits(st, state_line, "key 'state' in [workspace]", c->workspace.state,
                         PROXY_CONTROL_FILE))
                return false;
        return true;
}

struct part {
        const char *what; /* e.g. "key 'path' in [repo]" */
        const char *path;
        unsigned line;
        char label[96];
};

void config_finish(struct parse_state *st)
{
        struct config *c = st->cfg;
        struct part parts[2 + CONFIG_MAX_MIRRORS];
        size_t n = 0;

        if (!c->workspace.name) {
                config_error(st, 0, "key 'name' in [workspace]: required");
                return;
        }
        if (!c->workspace.state) {
                config_error(st, 0, "key 'state' in [workspace]: required");
                return;
        }
        if (!c->repo.source) {
                config_error(st, 0, "key 'source' in [repo]: required");
                return;
        }
        for (size_t i = 0; i < c->n_mirrors; i++) {
                const struct config_mirror *m = &c->mirrors[i];
                if (!m->source || !m->path) {
                        config_error(st, m->line, "key '%s' in [mirror \"%s\"]: required",
                                     m->source ? "path" : "source", m->name);
                        return;
                }
        }

        if (!dup_default(st, &c->workspace.mountpoint, c->workspace.state, "/mnt") ||
            !dup_default(st, &c->repo.rev, "HEAD", "") ||
            !dup_default(st, &c->repo.path, "/workspace", "") ||
            !dup_default(st, &c->home.path, "/home/agent", "") ||
            !dup_default(st, &c->broker.socket, c->workspace.state, "/broker.sock") ||
            !dup_default(st, &c->broker.dir, c->workspace.state, "/broker") ||
            !dup_default(st, &c->run.user, "agent", ""))
                return;
        if (!c->limits.set_bytes)
                c->limits.bytes = 4ULL << 30;
        if (!c->limits.set_files)
                c->limits.files = 100000;
        if (!c->limits.set_timeout)
                c->limits.timeout = 3600;
        if (!c->limits.set_memory)
                c->limits.memory = 4ULL << 30;
        if (!c->limits.set_processes)
                c->limits.processes = 512;
        if (!c->limits.cpu)
                c->limits.cpu = 3600;
        if (!c->limits.tmp)
                c->limits.tmp = 512ULL << 20;
        /*
         * An empty file costs a tmpfs no blocks but about a KiB of kernel
         * memory: the size alone doesn't bound it. One inode per 16 KiB of
         * size keeps what the inodes can take to a sixteenth of that.
         */
        if (!c->limits.tmp_files)
                c->limits.tmp_files = MAX(c->limits.tmp / (16 * 1024), (uint64_t)16);
        if (!c->limits.journal)
                c->limits.journal = 256ULL << 20; /* JOURNAL_MAX_BYTES_DEFAULT */
        if (!c->limits.audit)
                c->limits.audit = 64ULL << 20; /* BROKER_AUDIT_MAX_DEFAULT */
        if (!c->limits.netlog)
                c->limits.netlog = 256ULL << 20; /* PROXY_NETLOG_MAX_DEFAULT */
        if (!c->limits.runlog)
                c->limits.runlog = 16ULL << 20; /* OPS_RUNLOG_MAX_DEFAULT */
        if (c->run.host_uids.first && c->run.host_uids.first < CONFIG_HOST_UID_FLOOR &&
            c->limits.cgroup != CONFIG_CGROUP_CONTAINER) {
                config_error(st, config_key_line(st, SECTION_RUN, "host_uids"),
                             "key 'host_uids' in [run]: ids below %u are for a container's own "
                             "user namespace: only with [limits] cgroup = container",
                             CONFIG_HOST_UID_FLOOR);
                return;
        }
        if (!c->limits.tree_cache)
                c->limits.tree_cache = 32ULL << 20; /* TREE_CACHE_BUDGET_DEFAULT */
        /* [image]'s bounds: IMAGE_*_MAX_DEFAULT (mounts/image/image.h). */
        if (!c->image.max_file)
                c->image.max_file = 4ULL << 30;
        if (!c->image.max_size)
                c->image.max_size = 16ULL << 30;
        if (!c->image.max_entries)
                c->image.max_entries = 1000000;
        if (c->image.digest && !c->image.source) {
                config_error(st, config_key_line(st, SECTION_IMAGE, "digest"),
                             "key 'digest' in [image]: no 'source' to take the image from");
                return;
        }
        if (!c->run.host_uids.first)
                c->run.host_uids =
                        (struct config_id_range){CONFIG_HOST_UID_MIN, CONFIG_HOST_UID_MAX};
        config_network_finish(st);
        if (st->error || !sockets_fit(st))
                return;

        /* The parts inside the workspace: none may nest in, or equal, another. */
        parts[n++] =
                (struct part){"key 'path' in [repo]", c->repo.path, st->lines[KEY_LINE_REPO_PATH]};
        parts[n++] =
                (struct part){"key 'path' in [home]", c->home.path, st->lines[KEY_LINE_HOME_PATH]};
        for (size_t i = 0; i < c->n_mirrors; i++) {
                struct part *p = &parts[n++];
                *p = (struct part){NULL, c->mirrors[i].path, c->mirrors[i].path_line};
                snprintf(p->label, sizeof(p->label), "key 'path' in [mirror \"%s\"]",
                         c->mirrors[i].name);
                p->what = p->label;
        }
        for (size_t i = 0; i < n; i++) {
                for (size_t r = 0; r < ELEMENTSOF(reserved); r++)
                        if (paths_overlap(parts[i].path, reserved[r])) {
                                config_error(st, parts[i].line,
                                             "%s: '%s' overlaps '%s', which the sandbox "
                                             "provides itself",
                                             parts[i].what, parts[i].path, reserved[r]);
                                return;
                        }
                for (size_t j = 0; j < i; j++)
                        if (paths_overlap(parts[i].path, parts[j].path)) {
                                config_error(st, parts[i].line, "%s: '%s' %s the %s", parts[i].what,
                                             parts[i].path,
                                             streq(parts[i].path, parts[j].path) ? "duplicates"
                                                                                 : "overlaps",
                                             parts[j].what);
                                return;
                        }
        }

        /*
         * Host side: the daemon's own state must never be readable through a
         * part (it holds broker keys and other workspaces' layers), and the
         * mountpoint must not sit inside a source, or the mount would recurse.
         */
        const char *state = c->workspace.state, *mnt = c->workspace.mountpoint;
        if (paths_overlap(state, c->repo.source)) {
                config_error(st, st->lines[KEY_LINE_STATE],
                             "key 'state' in [workspace]: '%s' overlaps [repo] source '%s'", state,
                             c->repo.source);
                return;
        }
        if (path_within(mnt, c->repo.source)) {
                config_error(st, st->lines[KEY_LINE_MOUNTPOINT],
                             "key 'mountpoint' in [workspace]: '%s' is inside [repo] source", mnt);
                return;
        }
        for (size_t i = 0; i < c->n_mirrors; i++) {
                const struct config_mirror *m = &c->mirrors[i];
                if (paths_overlap(state, m->source) || path_within(mnt, m->source) ||
                    path_within(m->source, mnt)) {
                        config_error(st, m->line,
                                     "key 'source' in [mirror \"%s\"]: '%s' overlaps the "
                                     "workspace state or mountpoint",
                                     m->name, m->source);
                        return;
                }
        }
        /* Two mirrors can't both say where one variable points. */
        for (size_t i = 0; i < c->n_mirrors; i++)
                for (size_t j = 0; c->mirrors[i].env && j < i; j++)
                        if (c->mirrors[j].env && streq(c->mirrors[i].env, c->mirrors[j].env)) {
                                config_error(st, c->mirrors[i].line,
                                             "key 'env' in [mirror \"%s\"]: '%s' is set by "
                                             "[mirror \"%s\"] already",
                                             c->mirrors[i].name, c->mirrors[i].env,
                                             c->mirrors[j].name);
                                return;
                        }
        for (size_t i = 0; i < c->home.n_seeds; i++) {
                const struct config_seed *s = &c->home.seeds[i];
                if (paths_overlap(state, s->source) || paths_overlap(mnt, s->source)) {
                        config_error(st, s->line,
                                     "key 'seed' in [home]: '%s' overlaps the workspace state "
                                     "or mountpoint",
                                     s->source);
                        return;
                }
        }
}
