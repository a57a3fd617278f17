/* SPDX-License-Identifier: MIT */
/*
 * config-keys.c: every key a workspace config may hold, with its type and
 * range, in one table. A key that is not in the table is an error: a typo in
 * a security boundary must never be silently ignored.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>

#include "config-private.h"
#include "lib/envname.h"
#include "lib/util.h"
#include "lib/values.h"
#include "proxy/proxy.h"

const char *const config_section_names[SECTION_MAX] = {
        [SECTION_WORKSPACE] = "workspace", [SECTION_REPO] = "repo",     [SECTION_HOME] = "home",
        [SECTION_MIRROR] = "mirror",       [SECTION_BROKER] = "broker", [SECTION_LIMITS] = "limits",
        [SECTION_NETWORK] = "network",     [SECTION_RUN] = "run",       [SECTION_INJECT] = "inject",
        [SECTION_LOGS] = "logs",           [SECTION_IMAGE] = "image",   [SECTION_FS] = "fs",
};

enum key_type {
        KEY_NAME,        /* workspace name */
        KEY_HOST_PATH,   /* absolute path on the host */
        KEY_INSIDE_PATH, /* absolute path inside the workspace */
        KEY_REV,
        KEY_BOOL,
        KEY_SIZE,
        KEY_DURATION,
        KEY_COUNT,
        KEY_NETWORK,
        KEY_CGROUP,
        KEY_LOG_STDOUT,
        KEY_IO_URING, /* auto or off (io_uring, zero_message_opens) */
        KEY_ENV_LIST,
        KEY_USER,
        KEY_SEED,         /* repeatable */
        KEY_EXCLUDE,      /* mirror only, repeatable */
        KEY_MIRROR_BIN,   /* mirror only: "." or a clean relative path */
        KEY_MIRROR_ENV,   /* mirror only: a variable name the sandbox lets be set */
        KEY_ID_RANGE,     /* FIRST-LAST, two host ids */
        KEY_IMAGE_SOURCE, /* oci:DIR[:TAG], oci-archive:FILE[:TAG], docker-archive:FILE, dir:PATH */
        KEY_DIGEST,       /* sha256:<64 lowercase hex digits> */
};

struct key {
        enum section_kind section;
        const char *name;
        enum key_type type;
        size_t offset; /* into struct config; mirror keys: into struct config_mirror */
        uint64_t min, max;
        size_t set_flag; /* offset of a bool in struct config, or 0 */
};

#define CFG(f) offsetof(struct config, f)
#define MIR(f) offsetof(struct config_mirror, f)
#define KiB    (1ULL << 10)
#define MiB    (1ULL << 20)
#define GiB    (1ULL << 30)
#define TiB    (1ULL << 40)
#define DAY    86400ULL

static const struct key keys[] = {
        {SECTION_WORKSPACE, "name", KEY_NAME, CFG(workspace.name), 0, 0, 0},
        {SECTION_WORKSPACE, "state", KEY_HOST_PATH, CFG(workspace.state), 0, 0, 0},
        {SECTION_WORKSPACE, "mountpoint", KEY_HOST_PATH, CFG(workspace.mountpoint), 0, 0, 0},
        {SECTION_REPO, "source", KEY_HOST_PATH, CFG(repo.source), 0, 0, 0},
        {SECTION_REPO, "rev", KEY_REV, CFG(repo.rev), 0, 0, 0},
        {SECTION_REPO, "path", KEY_INSIDE_PATH, CFG(repo.path), 0, 0, 0},
        {SECTION_HOME, "path", KEY_INSIDE_PATH, CFG(home.path), 0, 0, 0},
        {SECTION_HOME, "seed", KEY_SEED, 0, 0, 0, 0},
        {SECTION_HOME, "persist", KEY_BOOL, CFG(home.persist), 0, 0, 0},
        {SECTION_MIRROR, "source", KEY_HOST_PATH, MIR(source), 0, 0, 0},
        {SECTION_MIRROR, "path", KEY_INSIDE_PATH, MIR(path), 0, 0, 0},
        {SECTION_MIRROR, "exclude", KEY_EXCLUDE, MIR(exclude), 0, 0, 0},
        {SECTION_MIRROR, "bin", KEY_MIRROR_BIN, MIR(bin), 0, 0, 0},
        {SECTION_MIRROR, "env", KEY_MIRROR_ENV, MIR(env), 0, 0, 0},
        {SECTION_BROKER, "socket", KEY_HOST_PATH, CFG(broker.socket), 0, 0, 0},
        {SECTION_BROKER, "policy", KEY_HOST_PATH, CFG(broker.policy), 0, 0, 0},
        {SECTION_BROKER, "dir", KEY_HOST_PATH, CFG(broker.dir), 0, 0, 0},
        {SECTION_LIMITS, "bytes", KEY_SIZE, CFG(limits.bytes), 1 * MiB, 16 * TiB,
         CFG(limits.set_bytes)},
        {SECTION_LIMITS, "files", KEY_COUNT, CFG(limits.files), 16, 100000000ULL,
         CFG(limits.set_files)},
        {SECTION_LIMITS, "timeout", KEY_DURATION, CFG(limits.timeout), 1, 30 * DAY,
         CFG(limits.set_timeout)},
        {SECTION_LIMITS, "memory", KEY_SIZE, CFG(limits.memory), 16 * MiB, 16 * TiB,
         CFG(limits.set_memory)},
        {SECTION_LIMITS, "processes", KEY_COUNT, CFG(limits.processes), 1, 1000000,
         CFG(limits.set_processes)},
        {SECTION_LIMITS, "cpu", KEY_DURATION, CFG(limits.cpu), 1, 30 * DAY, 0},
        {SECTION_LIMITS, "tmp", KEY_SIZE, CFG(limits.tmp), 1 * MiB, 1 * TiB, 0},
        {SECTION_LIMITS, "tmp_files", KEY_COUNT, CFG(limits.tmp_files), 16, 100000000ULL, 0},
        {SECTION_LIMITS, "journal", KEY_SIZE, CFG(limits.journal), 1 * MiB, 64 * GiB, 0},
        {SECTION_LIMITS, "audit", KEY_SIZE, CFG(limits.audit), 1 * MiB, 64 * GiB, 0},
        {SECTION_LIMITS, "netlog", KEY_SIZE, CFG(limits.netlog), 1 * MiB, 64 * GiB, 0},
        {SECTION_LIMITS, "runlog", KEY_SIZE, CFG(limits.runlog), 1 * MiB, 64 * GiB, 0},
        {SECTION_LIMITS, "cgroup", KEY_CGROUP, CFG(limits.cgroup), 0, 0, 0},
        {SECTION_LOGS, "stdout", KEY_LOG_STDOUT, CFG(logs.stdout_json), 0, 0, 0},
        {SECTION_FS, "io_uring", KEY_IO_URING, CFG(fs.io_uring_off), 0, 0, 0},
        {SECTION_FS, "zero_message_opens", KEY_IO_URING, CFG(fs.zero_open_off), 0, 0, 0},
        {SECTION_LIMITS, "tree_cache", KEY_SIZE, CFG(limits.tree_cache), 4 * KiB, 64 * GiB, 0},
        {SECTION_NETWORK, "mode", KEY_NETWORK, CFG(network.mode), 0, 0, 0},
        {SECTION_RUN, "env", KEY_ENV_LIST, CFG(run.env), 0, 0, 0},
        {SECTION_RUN, "user", KEY_USER, CFG(run.user), 0, 0, 0},
        /* Below CONFIG_HOST_UID_FLOOR only in a container (config-validate.c). */
        {SECTION_RUN, "host_uids", KEY_ID_RANGE, CFG(run.host_uids),
         CONFIG_HOST_UID_CONTAINER_FLOOR, CONFIG_HOST_UID_CEILING, 0},
        {SECTION_RUN, "allow_host_root", KEY_BOOL, CFG(run.allow_host_root), 0, 0, 0},
        {SECTION_NETWORK, "test_ca", KEY_HOST_PATH, CFG(network.test_ca), 0, 0, 0},
        {SECTION_NETWORK, "connections", KEY_COUNT, CFG(network.connections), 1, PROXY_CONNS_MAX,
         0},
        {SECTION_NETWORK, "rate", KEY_COUNT, CFG(network.rate), 1, 100000, 0},
        {SECTION_NETWORK, "bytes_out", KEY_SIZE, CFG(network.bytes_out), 1 * KiB, 16 * TiB,
         CFG(network.set_bytes_out)},
        /* The declared environment (mounts/image, docs/cloister-image.md). */
        {SECTION_IMAGE, "source", KEY_IMAGE_SOURCE, CFG(image.source), 0, 0, 0},
        {SECTION_IMAGE, "digest", KEY_DIGEST, CFG(image.digest), 0, 0, 0},
        {SECTION_IMAGE, "allow_setuid", KEY_BOOL, CFG(image.allow_setuid), 0, 0, 0},
        {SECTION_IMAGE, "max_file", KEY_SIZE, CFG(image.max_file), 1 * KiB, 1 * TiB, 0},
        {SECTION_IMAGE, "max_size", KEY_SIZE, CFG(image.max_size), 1 * MiB, 16 * TiB, 0},
        {SECTION_IMAGE, "max_entries", KEY_COUNT, CFG(image.max_entries), 16, 100000000ULL, 0},
};

_Static_assert(ELEMENTSOF(keys) <= CONFIG_KEYS_MAX, "raise CONFIG_KEYS_MAX");

static bool user_is_valid(const char *v)
{
        size_t n = strlen(v);

        if (n == 0 || n > 32 || !(islower((unsigned char)v[0]) || v[0] == '_'))
                return false;
        for (const char *c = v; *c; c++)
                if (!islower((unsigned char)*c) && !isdigit((unsigned char)*c) && !strchr("_-", *c))
                        return false;
        return true;
}

static bool env_name_is_valid(const char *v)
{
        if (!*v || !(isalpha((unsigned char)v[0]) || v[0] == '_') || strlen(v) > 128)
                return false;
        for (const char *c = v; *c; c++)
                if (!isalnum((unsigned char)*c) && *c != '_')
                        return false;
        return true;
}

static char *strip(char *s)
{
        char *e;

        while (isspace((unsigned char)*s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char)e[-1]))
                *--e = '\0';
        return s;
}

/* Append comma-separated items to a NULL-terminated vector, checking each. */
static int list_append(struct parse_state *st, const struct key *k, char ***vec, const char *value,
                       size_t max, bool (*valid)(const char *), const char *what)
{
        _cleanup_free_ char *copy = strdup(value);
        size_t n = 0;
        char *save = NULL;

        if (!copy)
                return config_error(st, 0, "out of memory");
        while ((*vec)[n])
                n++;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *item = strip(tok);
                if (!*item)
                        return config_error(st, config_reader_line(st),
                                            "key '%s' in [%s]: empty item in list", k->name,
                                            config_section_names[k->section]);
                if (valid && !valid(item))
                        return config_error(st, config_reader_line(st),
                                            "key '%s' in [%s]: '%s' is not %s", k->name,
                                            config_section_names[k->section], item, what);
                if (n >= max)
                        return config_error(st, config_reader_line(st),
                                            "key '%s' in [%s]: more than %zu items", k->name,
                                            config_section_names[k->section], max);
                char **nv = realloc(*vec, (n + 2) * sizeof(char *));
                if (!nv)
                        return config_error(st, 0, "out of memory");
                *vec = nv;
                nv[n] = strdup(item);
                nv[++n] = NULL;
                if (!nv[n - 1])
                        return config_error(st, 0, "out of memory");
        }
        return 1;
}

static bool glob_is_valid(const char *g)
{
        return strlen(g) <= NAME_MAX && !strchr(g, '\n');
}

/* seed = SOURCE [-> DEST] */
static int seed_add(struct parse_state *st, const struct key *k, const char *value)
{
        struct config *c = st->cfg;
        unsigned line = config_reader_line(st);
        _cleanup_free_ char *copy = strdup(value);
        _cleanup_free_ char *src = NULL, *dst = NULL;
        char *arrow;

        if (!copy)
                return config_error(st, 0, "out of memory");
        if (c->home.n_seeds >= CONFIG_MAX_SEEDS)
                return config_error(st, line, "key 'seed' in [home]: more than %d seeds",
                                    CONFIG_MAX_SEEDS);
        arrow = strstr(copy, "->");
        if (arrow) {
                *arrow = '\0';
                dst = strdup(strip(arrow + 2));
        }
        src = config_expand(st, "seed", strip(copy));
        if (!src)
                return 0;
        if (arrow && !dst)
                return config_error(st, 0, "out of memory");
        if (!value_path_is_clean_absolute(src) || streq(src, "/"))
                return config_error(st, line,
                                    "key 'seed' in [home]: source '%s' must be a clean "
                                    "absolute path (no '..', '.', '//' or trailing '/')",
                                    src);
        if (!dst) {
                dst = strdup(strrchr(src, '/') + 1);
                if (!dst)
                        return config_error(st, 0, "out of memory");
        }
        if (!value_path_is_clean_relative(dst))
                return config_error(st, line,
                                    "key 'seed' in [home]: destination '%s' must be a clean "
                                    "relative path inside the home",
                                    dst);
        for (size_t i = 0; i < c->home.n_seeds; i++)
                if (streq(c->home.seeds[i].dest, dst))
                        return config_error(st, line,
                                            "key 'seed' in [home]: destination '%s' already "
                                            "seeded on line %u",
                                            dst, c->home.seeds[i].line);
        struct config_seed *s = realloc(c->home.seeds, (c->home.n_seeds + 1) * sizeof(*s));
        if (!s)
                return config_error(st, 0, "out of memory");
        c->home.seeds = s;
        s[c->home.n_seeds++] =
                (struct config_seed){.source = TAKE_PTR(src), .dest = TAKE_PTR(dst), .line = line};
        (void)k;
        return 1;
}

static int number_check(struct parse_state *st, const struct key *k, int r, uint64_t v,
                        const char *value, const char *what)
{
        unsigned line = config_reader_line(st);
        const char *sec = config_section_names[k->section];

        if (r == -ERANGE)
                return config_error(st, line, "key '%s' in [%s]: '%s' is too large", k->name, sec,
                                    value);
        if (r < 0)
                return config_error(st, line, "key '%s' in [%s]: '%s' is not %s", k->name, sec,
                                    value, what);
        if (v < k->min || v > k->max)
                return config_error(st, line, "key '%s' in [%s]: %s is out of range (%llu to %llu)",
                                    k->name, sec, value, (unsigned long long)k->min,
                                    (unsigned long long)k->max);
        return 1;
}

/* FIRST-LAST: both within the key's bounds, FIRST <= LAST. */
static int id_range_apply(struct parse_state *st, const struct key *k,
                          struct config_id_range *field, const char *value)
{
        unsigned line = config_reader_line(st);
        const char *sec = config_section_names[k->section];
        _cleanup_free_ char *first = strdup(value);
        uint64_t lo, hi;
        char *dash;

        if (!first)
                return config_error(st, 0, "out of memory");
        dash = strchr(first, '-');
        if (!dash)
                return config_error(st, line, "key '%s' in [%s]: '%s' is not a range FIRST-LAST",
                                    k->name, sec, value);
        *dash = '\0';
        if (value_parse_uint(strip(first), &lo) < 0 || value_parse_uint(strip(dash + 1), &hi) < 0)
                return config_error(st, line,
                                    "key '%s' in [%s]: '%s' is not a range of two whole numbers",
                                    k->name, sec, value);
        /* host_uids, the one range key: its table floor is a container's. */
        if (lo < k->min || hi > k->max || lo > hi)
                return config_error(st, line,
                                    "key '%s' in [%s]: %s is out of range (FIRST <= LAST, both "
                                    "%u to %llu, or from %llu with [limits] cgroup = container)",
                                    k->name, sec, value, CONFIG_HOST_UID_FLOOR,
                                    (unsigned long long)k->max, (unsigned long long)k->min);
        *field = (struct config_id_range){(uint32_t)lo, (uint32_t)hi};
        return 1;
}

/* KIND:PATH[:TAG], PATH absolute (%C and %R expanded), TAG for the OCI kinds only. */
static int image_source_apply(struct parse_state *st, const struct key *k, char **field,
                              const char *value)
{
        static const char *const kinds[] = {"oci:", "oci-archive:", "docker-archive:", "dir:"};
        unsigned line = config_reader_line(st);
        _cleanup_free_ char *expanded = NULL;
        const char *kind = NULL, *rest = NULL;

        for (size_t i = 0; !kind && i < ELEMENTSOF(kinds); i++)
                if ((rest = startswith(value, kinds[i])))
                        kind = kinds[i];
        if (!kind)
                return config_error(st, line,
                                    "key '%s' in [image]: '%s' is not oci:DIR[:TAG], "
                                    "oci-archive:FILE[:TAG], docker-archive:FILE or dir:PATH",
                                    k->name, value);
        expanded = config_expand(st, k->name, rest);
        if (!expanded)
                return 0;
        if (expanded[0] != '/' || strstr(expanded, "/../") || strchr(expanded, '\n'))
                return config_error(st, line,
                                    "key '%s' in [image]: '%s' must name an absolute path "
                                    "without '..'",
                                    k->name, expanded);
        free(*field);
        if (asprintf(field, "%s%s", kind, expanded) < 0) {
                *field = NULL;
                return config_error(st, 0, "out of memory");
        }
        return 1;
}

static int key_value_apply(struct parse_state *st, const struct key *k, void *base,
                           const char *value)
{
        unsigned line = config_reader_line(st);
        const char *sec = config_section_names[k->section];
        void *field = (char *)base + k->offset;
        uint64_t n = 0;
        int r;

        switch (k->type) {
        case KEY_NAME:
                if (!value_name_is_valid(value, CONFIG_NAME_MAX, false))
                        return config_error(st, line,
                                            "key '%s' in [%s]: '%s' must be 1-%d letters, "
                                            "digits, '.', '_' or '-', not starting with '.' "
                                            "or '-'",
                                            k->name, sec, value, CONFIG_NAME_MAX);
                break;
        case KEY_HOST_PATH: {
                char *expanded = config_expand(st, k->name, value);
                if (!expanded)
                        return 0;
                if (!value_path_is_clean_absolute(expanded)) {
                        config_error(st, line,
                                     "key '%s' in [%s]: '%s' must be a clean absolute "
                                     "path (no '..', '.', '//' or trailing '/')",
                                     k->name, sec, expanded);
                        free(expanded);
                        return 0;
                }
                char **s = field;
                free(*s);
                *s = expanded;
                return 1;
        }
        case KEY_INSIDE_PATH:
                if (!value_path_is_clean_absolute(value))
                        return config_error(st, line,
                                            "key '%s' in [%s]: '%s' must be a clean absolute "
                                            "path (no '..', '.', '//' or trailing '/')",
                                            k->name, sec, value);
                if (k->type == KEY_INSIDE_PATH && streq(value, "/"))
                        return config_error(st, line,
                                            "key '%s' in [%s]: '/' is the synthetic root and "
                                            "cannot be a part",
                                            k->name, sec);
                break;
        case KEY_REV:
                if (!*value || strlen(value) > 255 || value[0] == '-')
                        return config_error(st, line, "key '%s' in [%s]: '%s' is not a revision",
                                            k->name, sec, value);
                for (const char *c = value; *c; c++)
                        if (isspace((unsigned char)*c) || iscntrl((unsigned char)*c))
                                return config_error(st, line,
                                                    "key '%s' in [%s]: revision holds white "
                                                    "space or control characters",
                                                    k->name, sec);
                break;
        case KEY_BOOL:
                if (value_parse_bool(value, (bool *)field) < 0)
                        return config_error(st, line,
                                            "key '%s' in [%s]: '%s' is not a boolean "
                                            "(true/false)",
                                            k->name, sec, value);
                return 1;
        case KEY_SIZE:
                r = value_parse_size(value, &n);
                if (number_check(st, k, r, n, value, "a size (e.g. 512M, 4G)") == 0)
                        return 0;
                *(uint64_t *)field = n;
                return 1;
        case KEY_DURATION:
                r = value_parse_duration(value, &n);
                if (number_check(st, k, r, n, value, "a duration (e.g. 90s, 15m, 2h)") == 0)
                        return 0;
                *(uint64_t *)field = n;
                return 1;
        case KEY_COUNT:
                r = value_parse_uint(value, &n);
                if (number_check(st, k, r, n, value, "a whole number") == 0)
                        return 0;
                *(uint64_t *)field = n;
                return 1;
        case KEY_NETWORK:
                if (streq(value, "none"))
                        *(enum config_network *)field = CONFIG_NETWORK_NONE;
                else if (streq(value, "host"))
                        *(enum config_network *)field = CONFIG_NETWORK_HOST;
                else if (streq(value, "proxy"))
                        *(enum config_network *)field = CONFIG_NETWORK_PROXY;
                else
                        return config_error(st, line,
                                            "key '%s' in [%s]: '%s' is not 'none', 'proxy' or "
                                            "'host'",
                                            k->name, sec, value);
                return 1;
        case KEY_CGROUP:
                if (streq(value, "sandbox"))
                        *(enum config_cgroup *)field = CONFIG_CGROUP_SANDBOX;
                else if (streq(value, "container"))
                        *(enum config_cgroup *)field = CONFIG_CGROUP_CONTAINER;
                else
                        return config_error(st, line,
                                            "key '%s' in [%s]: '%s' is not 'sandbox' or "
                                            "'container'",
                                            k->name, sec, value);
                return 1;
        case KEY_LOG_STDOUT:
                if (streq(value, "none"))
                        *(bool *)field = false;
                else if (streq(value, "json"))
                        *(bool *)field = true;
                else
                        return config_error(st, line,
                                            "key '%s' in [%s]: '%s' is not 'none' or 'json'",
                                            k->name, sec, value);
                return 1;
        case KEY_IO_URING:
                if (streq(value, "auto"))
                        *(bool *)field = false;
                else if (streq(value, "off"))
                        *(bool *)field = true;
                else
                        return config_error(st, line,
                                            "key '%s' in [%s]: '%s' is not 'auto' or 'off'",
                                            k->name, sec, value);
                return 1;
        case KEY_USER:
                if (!user_is_valid(value))
                        return config_error(st, line,
                                            "key '%s' in [%s]: '%s' is not a valid user name",
                                            k->name, sec, value);
                break;
        case KEY_ENV_LIST:
                return list_append(st, k, (char ***)field, value, CONFIG_MAX_ENV, env_name_is_valid,
                                   "a variable name");
        case KEY_EXCLUDE:
                return list_append(st, k, (char ***)field, value, CONFIG_MAX_EXCLUDES,
                                   glob_is_valid, "a glob");
        case KEY_MIRROR_BIN:
                if (!streq(value, ".") && !value_path_is_clean_relative(value))
                        return config_error(st, line,
                                            "key '%s' in [%s]: '%s' must be '.' or a clean "
                                            "relative path inside the mirror",
                                            k->name, sec, value);
                break;
        case KEY_MIRROR_ENV:
                if (!env_name_is_valid(value) || !env_name_settable(value, true))
                        return config_error(st, line,
                                            "key '%s' in [%s]: '%s' is not a variable the "
                                            "sandbox lets a config set (not PATH, HOME, LD_*, "
                                            "CLOISTER_*, a proxy variable, ...)",
                                            k->name, sec, value);
                break;
        case KEY_SEED:
                return seed_add(st, k, value);
        case KEY_ID_RANGE:
                return id_range_apply(st, k, field, value);
        case KEY_IMAGE_SOURCE:
                return image_source_apply(st, k, field, value);
        case KEY_DIGEST: {
                size_t len = strlen(value);
                if (len != 71 || strncmp(value, "sha256:", 7) != 0 ||
                    strspn(value + 7, "0123456789abcdef") != 64)
                        return config_error(st, line,
                                            "key '%s' in [%s]: '%s' is not sha256: and 64 "
                                            "lowercase hex digits",
                                            k->name, sec, value);
                break;
        }
        }

        char **s = field;
        free(*s);
        *s = strdup(value);
        if (!*s)
                return config_error(st, 0, "out of memory");
        return 1;
}

unsigned config_key_line(const struct parse_state *st, enum section_kind section, const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (keys[i].section == section && streq(keys[i].name, name))
                        return st->lines[i];
        return 0;
}

int config_key_apply(struct parse_state *st, const char *section, const char *name,
                     const char *value)
{
        unsigned line = config_reader_line(st);
        const char *sec = config_section_names[st->section];

        if (st->section == SECTION_INJECT)
                return config_inject_key(st, name, value);
        if (st->section == SECTION_NETWORK && !streq(name, "mode") &&
            !st->cfg->network.first_proxy_key_line)
                st->cfg->network.first_proxy_key_line = line;
        if (st->section == SECTION_NETWORK && config_network_key_is_list(name))
                return config_network_list_add(st, name, value);
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                const struct key *k = &keys[i];
                bool repeatable =
                        k->type == KEY_SEED || k->type == KEY_EXCLUDE || k->type == KEY_ENV_LIST;
                unsigned *seen;
                void *base;

                if (k->section != st->section || !streq(k->name, name))
                        continue;
                if (st->section == SECTION_MIRROR) {
                        base = st->mirror;
                        seen = &st->mirror_lines[i - KEY_LINE_MIRROR_FIRST];
                } else {
                        base = st->cfg;
                        seen = &st->lines[i];
                }
                if (*seen && !repeatable)
                        return config_error(st, line,
                                            "key '%s' in [%s]: duplicate key (first set on "
                                            "line %u)",
                                            name, sec, *seen);
                if (!*seen)
                        *seen = line;
                if (st->section == SECTION_MIRROR && streq(name, "path"))
                        st->mirror->path_line = line;
                if (!*value && k->type != KEY_ENV_LIST && k->type != KEY_EXCLUDE)
                        return config_error(st, line, "key '%s' in [%s]: empty value", name, sec);
                if (k->set_flag)
                        *(bool *)((char *)st->cfg + k->set_flag) = true;
                return key_value_apply(st, k, base, value);
        }
        (void)section;
        return config_error(st, line, "key '%s' in [%s]: unknown key", name, sec);
}
