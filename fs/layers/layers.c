/* SPDX-License-Identifier: MIT */
/*
 * layers.c: <state>/fs/layers.json, read and written whole.
 *
 * The file is the daemon's and the CLI's, never the agent's (the state
 * directory is not in the sandbox), but it is still parsed strictly: every
 * id is 32 hex digits, every path clean, every count bounded, and any other
 * shape is an error naming the file and the field, never a guess. Written
 * to a temporary name, fsync'd, renamed over, and its directory fsync'd:
 * that rename is the commit point of every change of the stack.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "layers.h"
#include "lib/crashpoint.h"
#include "lib/errorf.h"
#include "lib/readall.h"
#include "lib/util.h"
#include "lib/values.h"

/* layers.json is small: FS_CHECKPOINTS_MAX stacks of FS_STACK_MAX ids at most. */
#define LAYERS_FILE_MAX (8u * 1024 * 1024)

static int failf(char **ret_error, int r, const char *fmt, ...) _printf_(3, 4);
static int failf(char **ret_error, int r, const char *fmt, ...)
{
        va_list ap;

        if (ret_error && !*ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

static bool id_valid(const char *s)
{
        if (!s || strlen(s) != FS_LAYER_ID_LEN)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

void fs_layer_id_new(char out[static FS_LAYER_ID_LEN + 1])
{
        unsigned char b[FS_LAYER_ID_LEN / 2];

        randombytes_buf(b, sizeof(b));
        sodium_bin2hex(out, FS_LAYER_ID_LEN + 1, b, sizeof(b));
}

static void strv_n_free(char **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

void fs_layers_free(struct fs_layers *l)
{
        if (!l)
                return;
        free(l->state);
        free(l->top);
        free(l->top_id);
        strv_n_free(l->stack, l->n_stack);
        for (size_t i = 0; i < l->n_layers; i++) {
                free(l->layers[i].state);
                free(l->layers[i].dir);
        }
        free(l->layers);
        for (size_t i = 0; i < l->n_cps; i++) {
                free(l->cps[i].name);
                strv_n_free(l->cps[i].stack, l->cps[i].n_stack);
        }
        free(l->cps);
        free(l->parent_name);
        free(l->parent_state);
        free(l->parent_checkpoint);
        free(l);
}

const struct fs_layer_ref *fs_layers_ref(const struct fs_layers *l, const char *id)
{
        for (size_t i = 0; i < l->n_layers; i++)
                if (streq(l->layers[i].id, id))
                        return &l->layers[i];
        return NULL;
}

const struct fs_checkpoint *fs_layers_checkpoint(const struct fs_layers *l, const char *name)
{
        for (size_t i = 0; i < l->n_cps; i++)
                if (streq(l->cps[i].name, name))
                        return &l->cps[i];
        return NULL;
}

char *fs_layers_ref_path(const struct fs_layers *l, const struct fs_layer_ref *ref)
{
        char *p;

        if (asprintf(&p, "%s/%s", ref->state ? ref->state : l->state, ref->dir) < 0)
                return NULL;
        return p;
}

/* A list of layer ids; each must be known in l->layers once those are read. */
static int parse_stack(json_t *a, char ***ret, size_t *ret_n, const char *file, const char *what,
                       char **ret_error)
{
        char **v;
        size_t n, i;
        json_t *e;

        if (!json_is_array(a))
                return failf(ret_error, -EBADMSG, "%s: %s: not a list", file, what);
        n = json_array_size(a);
        if (n > FS_STACK_MAX)
                return failf(ret_error, -EBADMSG, "%s: %s: %zu layers, more than %d", file, what, n,
                             FS_STACK_MAX);
        v = calloc(n + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        json_array_foreach (a, i, e) {
                if (!id_valid(json_string_value(e))) {
                        strv_n_free(v, i);
                        return failf(ret_error, -EBADMSG, "%s: %s: item %zu is not a layer id",
                                     file, what, i + 1);
                }
                v[i] = strdup(json_string_value(e));
                if (!v[i]) {
                        strv_n_free(v, i);
                        return -ENOMEM;
                }
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static const char *opt_string(json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

static int parse_layers(json_t *o, struct fs_layers *l, const char *file, char **ret_error)
{
        const char *id;
        json_t *v;

        if (!json_is_object(o))
                return failf(ret_error, -EBADMSG, "%s: layers: not an object", file);
        if (json_object_size(o) > (size_t)FS_STACK_MAX * FS_CHECKPOINTS_MAX)
                return failf(ret_error, -EBADMSG, "%s: layers: too many", file);
        l->layers = calloc(json_object_size(o) + 1, sizeof(*l->layers));
        if (!l->layers)
                return -ENOMEM;
        json_object_foreach (o, id, v) {
                struct fs_layer_ref *r = &l->layers[l->n_layers];
                const char *dir = opt_string(v, "dir"), *state = opt_string(v, "state");

                if (!id_valid(id))
                        return failf(ret_error, -EBADMSG, "%s: layers: '%s' is not a layer id",
                                     file, id);
                if (!dir || !value_path_is_clean_relative(dir))
                        return failf(ret_error, -EBADMSG,
                                     "%s: layers.%s.dir: missing or not a clean relative path",
                                     file, id);
                if (json_object_get(v, "state") && (!state || !value_path_is_clean_absolute(state)))
                        return failf(ret_error, -EBADMSG,
                                     "%s: layers.%s.state: not a clean absolute path", file, id);
                memcpy(r->id, id, FS_LAYER_ID_LEN + 1);
                r->dir = strdup(dir);
                r->state = state ? strdup(state) : NULL;
                l->n_layers++;
                if (!r->dir || (state && !r->state))
                        return -ENOMEM;
        }
        return 0;
}

static int parse_checkpoints(json_t *a, struct fs_layers *l, const char *file, char **ret_error)
{
        size_t i;
        json_t *c;
        int r;

        if (!json_is_array(a))
                return failf(ret_error, -EBADMSG, "%s: checkpoints: not a list", file);
        if (json_array_size(a) > FS_CHECKPOINTS_MAX)
                return failf(ret_error, -EBADMSG, "%s: checkpoints: more than %d", file,
                             FS_CHECKPOINTS_MAX);
        l->cps = calloc(json_array_size(a) + 1, sizeof(*l->cps));
        if (!l->cps)
                return -ENOMEM;
        json_array_foreach (a, i, c) {
                struct fs_checkpoint *cp = &l->cps[l->n_cps];
                const char *name = opt_string(c, "name");
                json_t *seq = json_object_get(c, "seq"), *time = json_object_get(c, "time");

                if (!name || !value_name_is_valid(name, FS_CHECKPOINT_MAX, false))
                        return failf(ret_error, -EBADMSG,
                                     "%s: checkpoints: item %zu: missing or invalid name", file,
                                     i + 1);
                if (!json_is_integer(seq) || json_integer_value(seq) < 0 || !json_is_integer(time))
                        return failf(ret_error, -EBADMSG,
                                     "%s: checkpoint '%s': seq and time must be integers", file,
                                     name);
                for (size_t k = 0; k < l->n_cps; k++)
                        if (streq(l->cps[k].name, name))
                                return failf(ret_error, -EBADMSG,
                                             "%s: checkpoint '%s' is listed twice", file, name);
                cp->name = strdup(name);
                if (!cp->name)
                        return -ENOMEM;
                cp->seq = (uint64_t)json_integer_value(seq);
                cp->time = (int64_t)json_integer_value(time);
                l->n_cps++;
                r = parse_stack(json_object_get(c, "stack"), &cp->stack, &cp->n_stack, file,
                                "checkpoints.stack", ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every id a stack names must say where it lies. */
static int check_refs(const struct fs_layers *l, char *const *stack, size_t n, const char *file,
                      char **ret_error)
{
        for (size_t i = 0; i < n; i++)
                if (!fs_layers_ref(l, stack[i]))
                        return failf(ret_error, -EBADMSG, "%s: layer %s is not in \"layers\"", file,
                                     stack[i]);
        return 0;
}

static int parse(json_t *j, struct fs_layers *l, const char *file, char **ret_error)
{
        const char *top = opt_string(j, "top"), *top_id = opt_string(j, "top_id");
        json_t *v = json_object_get(j, "version"), *seq = json_object_get(j, "seq"), *p;
        int r;

        if (!json_is_object(j))
                return failf(ret_error, -EBADMSG, "%s: not a JSON object", file);
        if (!json_is_integer(v) || json_integer_value(v) != 1)
                return failf(ret_error, -EBADMSG, "%s: version: not 1 (made by a newer cloister?)",
                             file);
        if (!top || !value_path_is_clean_relative(top))
                return failf(ret_error, -EBADMSG, "%s: top: missing or not a clean relative path",
                             file);
        if (json_object_get(j, "top_id") && !id_valid(top_id))
                return failf(ret_error, -EBADMSG, "%s: top_id: not a layer id", file);
        if (!json_is_integer(seq) || json_integer_value(seq) < 0)
                return failf(ret_error, -EBADMSG, "%s: seq: not a count", file);
        l->top = strdup(top);
        l->top_id = top_id ? strdup(top_id) : NULL;
        if (!l->top || (top_id && !l->top_id))
                return -ENOMEM;
        l->seq = (uint64_t)json_integer_value(seq);
        r = parse_layers(json_object_get(j, "layers"), l, file, ret_error);
        if (r == 0)
                r = parse_stack(json_object_get(j, "stack"), &l->stack, &l->n_stack, file, "stack",
                                ret_error);
        if (r == 0)
                r = parse_checkpoints(json_object_get(j, "checkpoints"), l, file, ret_error);
        if (r == 0)
                r = check_refs(l, l->stack, l->n_stack, file, ret_error);
        for (size_t i = 0; r == 0 && i < l->n_cps; i++)
                r = check_refs(l, l->cps[i].stack, l->cps[i].n_stack, file, ret_error);
        if (r < 0)
                return r;
        p = json_object_get(j, "parent");
        if (p) {
                const char *pn = opt_string(p, "name"), *ps = opt_string(p, "state"),
                           *pc = opt_string(p, "checkpoint");
                if (!pn || !ps || !pc || !value_path_is_clean_absolute(ps))
                        return failf(ret_error, -EBADMSG,
                                     "%s: parent: name, state and checkpoint are required", file);
                l->parent_name = strdup(pn);
                l->parent_state = strdup(ps);
                l->parent_checkpoint = strdup(pc);
                if (!l->parent_name || !l->parent_state || !l->parent_checkpoint)
                        return -ENOMEM;
        }
        return 0;
}

int fs_layers_load(const char *state, struct fs_layers **ret, char **ret_error)
{
        _cleanup_free_ char *path = NULL, *buf = NULL;
        _cleanup_close_ int fd = -1;
        struct fs_layers *l;
        json_error_t jerr;
        json_t *j;
        struct stat st;
        size_t len = 0;
        int r;

        if (asprintf(&path, "%s/fs/" FS_LAYERS_FILE, state) < 0)
                return -ENOMEM;
        l = calloc(1, sizeof(*l));
        if (!l || !(l->state = strdup(state))) {
                free(l);
                return -ENOMEM;
        }
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
                /* A state without checkpoints: fs/repo is writable, nothing frozen. */
                l->top = strdup(FS_FIRST_TOP);
                if (!l->top) {
                        fs_layers_free(l);
                        return -ENOMEM;
                }
                *ret = l;
                return 0;
        }
        if (fd < 0 || fstat(fd, &st) < 0) {
                r = failf(ret_error, negative_errno(), "cannot read %s: %m", path);
                fs_layers_free(l);
                return r;
        }
        r = fd_read_whole(fd, (size_t)st.st_size, LAYERS_FILE_MAX, &buf, &len);
        if (r < 0) {
                r = failf(ret_error, r, "cannot read %s: %s", path, strerror(-r));
                fs_layers_free(l);
                return r;
        }
        j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!j) {
                r = failf(ret_error, -EBADMSG, "%s:%d: %s", path, jerr.line, jerr.text);
                fs_layers_free(l);
                return r;
        }
        l->exists = true;
        r = parse(j, l, path, ret_error);
        json_decref(j);
        if (r < 0) {
                if (r == -ENOMEM)
                        (void)failf(ret_error, r, "%s: out of memory", path);
                fs_layers_free(l);
                return r;
        }
        *ret = l;
        return 0;
}

static json_t *stack_json(char *const *stack, size_t n)
{
        json_t *a = json_array();

        for (size_t i = 0; a && i < n; i++)
                if (json_array_append_new(a, json_string(stack[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

static json_t *to_json(const struct fs_layers *l)
{
        json_t *j = json_object(), *layers = json_object(), *cps = json_array();
        int bad = !j || !layers || !cps;

        for (size_t i = 0; !bad && i < l->n_layers; i++) {
                json_t *r = json_pack("{s:s}", "dir", l->layers[i].dir);
                bad = !r || (l->layers[i].state &&
                             json_object_set_new(r, "state", json_string(l->layers[i].state)) < 0);
                bad = bad || json_object_set_new(layers, l->layers[i].id, r) < 0;
        }
        for (size_t i = 0; !bad && i < l->n_cps; i++) {
                const struct fs_checkpoint *c = &l->cps[i];
                bad = json_array_append_new(
                              cps, json_pack("{s:s,s:o,s:I,s:I}", "name", c->name, "stack",
                                             stack_json(c->stack, c->n_stack), "seq",
                                             (json_int_t)c->seq, "time", (json_int_t)c->time)) < 0;
        }
        bad = bad || json_object_set_new(j, "version", json_integer(1)) < 0 ||
              json_object_set_new(j, "seq", json_integer((json_int_t)l->seq)) < 0 ||
              json_object_set_new(j, "top", json_string(l->top)) < 0 ||
              (l->top_id && json_object_set_new(j, "top_id", json_string(l->top_id)) < 0) ||
              json_object_set_new(j, "stack", stack_json(l->stack, l->n_stack)) < 0 ||
              json_object_set(j, "layers", layers) < 0 ||
              json_object_set(j, "checkpoints", cps) < 0;
        if (!bad && l->parent_name)
                bad = json_object_set_new(j, "parent",
                                          json_pack("{s:s,s:s,s:s}", "name", l->parent_name,
                                                    "state", l->parent_state, "checkpoint",
                                                    l->parent_checkpoint)) < 0;
        json_decref(layers);
        json_decref(cps);
        if (bad) {
                json_decref(j);
                return NULL;
        }
        return j;
}

int fs_layers_save(const struct fs_layers *l, const char *op, char **ret_error)
{
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int dfd = -1;

        if (asprintf(&dir, "%s/fs", l->state) < 0)
                return failf(ret_error, -ENOMEM, "out of memory");
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return failf(ret_error, negative_errno(), "cannot open %s: %m", dir);
        return fs_layers_save_at(l, dfd, op, ret_error);
}

int fs_layers_save_at(const struct fs_layers *l, int dfd, const char *op, char **ret_error)
{
        _cleanup_free_ char *dir = NULL, *s = NULL;
        _cleanup_close_ int fd = -1;
        json_t *j = to_json(l);
        size_t len, off = 0;

        if (!j)
                return failf(ret_error, -ENOMEM, "out of memory");
        s = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (!s || asprintf(&dir, "%s/fs", l->state) < 0)
                return failf(ret_error, -ENOMEM, "out of memory");
        fd = openat(dfd, FS_LAYERS_FILE ".tmp",
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return failf(ret_error, negative_errno(), "cannot write %s/%s.tmp: %m", dir,
                             FS_LAYERS_FILE);
        len = strlen(s);
        s[len++] = '\n'; /* over the NUL: written as a line, never read as a string */
        while (off < len) {
                ssize_t k = write(fd, s + off, len - off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return failf(ret_error, k < 0 ? negative_errno() : -EIO,
                                     "cannot write %s/%s.tmp: %m", dir, FS_LAYERS_FILE);
                off += (size_t)k;
        }
        if (fsync(fd) < 0)
                return failf(ret_error, negative_errno(), "cannot sync %s/%s.tmp: %m", dir,
                             FS_LAYERS_FILE);
        crashpoint(op); /* written, not yet in place */
        if (renameat(dfd, FS_LAYERS_FILE ".tmp", dfd, FS_LAYERS_FILE) < 0)
                return failf(ret_error, negative_errno(), "cannot replace %s/%s: %m", dir,
                             FS_LAYERS_FILE);
        (void)fsync(dfd);
        return 0;
}

static int lock_at(const char *state, const char *name, int how)
{
        _cleanup_free_ char *p = NULL;
        int fd;

        if (asprintf(&p, "%s/%s", state, name) < 0)
                return -ENOMEM;
        fd = open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        while (flock(fd, how) < 0) {
                int r = errno == EWOULDBLOCK ? -EBUSY : negative_errno();
                if (errno == EINTR)
                        continue;
                safe_close(fd);
                return r;
        }
        return fd;
}

int fs_layers_lock(const char *state)
{
        return lock_at(state, "fs/layers.lock", LOCK_EX);
}

int fs_layers_lock_offline(const char *state)
{
        return lock_at(state, "fs.lock", LOCK_EX | LOCK_NB);
}

int fs_layers_lock_load(const char *state, int *ret_lock, struct fs_layers **ret, char **ret_error)
{
        _cleanup_close_ int lock = fs_layers_lock(state);
        int r;

        if (lock < 0)
                return errorf_first(ret_error, lock, "cannot lock '%s/fs/layers.lock': %s", state,
                                    strerror(-lock));
        r = fs_layers_load(state, ret, ret_error);
        if (r < 0)
                return r;
        *ret_lock = TAKE_FD(lock);
        return 0;
}

int fs_layer_marker_write(int dirfd, const char *id)
{
        _cleanup_close_ int fd = -1;
        char buf[FS_LAYER_ID_LEN + 1];

        fd = openat(dirfd, FS_LAYER_MARKER ".tmp",
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        memcpy(buf, id, FS_LAYER_ID_LEN);
        buf[FS_LAYER_ID_LEN] = '\n';
        if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fsync(fd) < 0)
                return negative_errno();
        if (renameat(dirfd, FS_LAYER_MARKER ".tmp", dirfd, FS_LAYER_MARKER) < 0)
                return negative_errno();
        return fsync(dirfd) < 0 ? negative_errno() : 0;
}

int fs_layer_marker_check(int dirfd, const char *id)
{
        _cleanup_close_ int fd = openat(dirfd, FS_LAYER_MARKER, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        char buf[FS_LAYER_ID_LEN + 2];
        ssize_t n;

        if (fd < 0)
                return negative_errno();
        n = read(fd, buf, sizeof(buf));
        if (n != FS_LAYER_ID_LEN + 1 || buf[FS_LAYER_ID_LEN] != '\n' ||
            memcmp(buf, id, FS_LAYER_ID_LEN) != 0)
                return -ESTALE;
        return 0;
}

/* Copy the xattrs that are ours or the agent's (user.*, trusted.cloister.*). */
static void root_xattrs_copy(const char *from, const char *to)
{
        _cleanup_free_ char *names = malloc(128 * 1024), *val = malloc(64 * 1024);
        ssize_t len = names ? listxattr(from, names, 128 * 1024) : -1;

        for (ssize_t i = 0; val && i < len;) {
                const char *name = names + i;
                ssize_t v;

                i += (ssize_t)strnlen(name, (size_t)(len - i)) + 1;
                if (!startswith(name, "user.") && !startswith(name, "trusted.cloister."))
                        continue;
                v = getxattr(from, name, val, 64 * 1024);
                if (v >= 0)
                        (void)setxattr(to, name, val, (size_t)v, 0);
        }
}

int fs_layer_root_meta_copy(int from, int to)
{
        return fs_layer_meta_copy(from, to);
}

int fs_layer_meta_copy(int from, int to)
{
        char fp[40], tp[40];
        struct stat st;

        if (fstatat(from, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        if (geteuid() == 0 &&
            fchownat(to, "", st.st_uid, st.st_gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        snprintf(fp, sizeof(fp), "/proc/self/fd/%d", from);
        snprintf(tp, sizeof(tp), "/proc/self/fd/%d", to);
        /* The records first (attr.c): a marker bit never points at nothing. A
         * symlink has no mode, but may have owner.c's record. */
        root_xattrs_copy(fp, tp);
        if (!S_ISLNK(st.st_mode) && chmod(tp, st.st_mode & 07777) < 0)
                return negative_errno();
        if (utimensat(to, "", (struct timespec[]){st.st_atim, st.st_mtim},
                      AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        return 0;
}
