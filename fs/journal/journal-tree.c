/* SPDX-License-Identifier: MIT */
/*
 * journal-tree.c: removed trees (journal.h, "Removed trees").
 *
 * A test suite keeps a scratch directory for a whole script (git's trash
 * directories), longer than any window compaction can hold: thousands of
 * lines each, then `rm -rf`, and a full run of a large project fills the
 * bound with the past of directories that no longer exist. That past is
 * only known to be dead once the directory is removed, minutes after it was
 * written, so it is not held: it is written, and rewritten.
 *
 * While lines are written (journal_tree_note), the directories made in this
 * session are followed: the number of their mkdir line, the bytes of the
 * lines about names under them since, and whether anything was moved or
 * linked out of them, or linked into them from outside (then their past is
 * not dead: a file that outlives the tree has its history in it). When a
 * followed directory's rmdir is written, it is a removed tree. Once removed
 * trees stand for enough bytes, the flusher rewrites the file: every line of
 * this session about names under a removed tree, numbered within its life
 * (from its mkdir to its rmdir), is left out, and its mkdir line is replaced
 * by one "removed_tree" entry that counts them and carries the SHA-256 of
 * the lines it replaces. The new file is written beside the journal, synced
 * and renamed over it: a crash leaves the old file or the new one, whole.
 *
 * Locking: called with j->lock held (journal-internal.h). The rewrite drops
 * it while it reads and writes what is already in the file (appends go on
 * past that point and are copied last, under the lock again).
 */
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal-internal.h"
#include "lib/util.h"

#define TREE_BUCKETS       16384
#define REWRITE_TMP_SUFFIX ".rewrite"

struct tree_dir {
        struct tree_dir *next; /* in its bucket */
        char *path;
        uint64_t hash;
        uint64_t seq;   /* of its mkdir line */
        uint64_t bytes; /* of the lines about names under it since */
        bool leaked;    /* something was moved or linked out of it, or linked into it */
};

struct tree_dead {
        char *path;
        uint64_t hash;
        uint64_t from, to; /* the numbers of its mkdir and rmdir lines */
        uint64_t bytes;
};

struct journal_trees {
        struct tree_dir *bucket[TREE_BUCKETS];
        size_t n_dirs;
        uint64_t path_bytes; /* of the followed and removed trees' names */
        struct tree_dead *dead;
        size_t n_dead, cap_dead;
        uint64_t freeable; /* bytes of the removed trees' lines */
        bool rewriting;
};

static struct journal_trees *trees_get(journal *j)
{
        if (!j->trees)
                j->trees = calloc(1, sizeof(*j->trees));
        return j->trees;
}

static void dead_clear(struct tree_dead *d, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(d[i].path);
        free(d);
}

void journal_tree_free_all(journal *j)
{
        struct journal_trees *t = j->trees;

        if (!t)
                return;
        for (size_t b = 0; b < TREE_BUCKETS; b++)
                while (t->bucket[b]) {
                        struct tree_dir *d = t->bucket[b];
                        t->bucket[b] = d->next;
                        free(d->path);
                        free(d);
                }
        dead_clear(t->dead, t->n_dead);
        free(t);
        j->trees = NULL;
}

static struct tree_dir **dir_slot(struct journal_trees *t, const char *path, size_t len, uint64_t h)
{
        struct tree_dir **p = &t->bucket[h % TREE_BUCKETS];

        for (; *p; p = &(*p)->next)
                if ((*p)->hash == h && strlen((*p)->path) == len &&
                    memcmp((*p)->path, path, len) == 0)
                        break;
        return p;
}

static void dir_unlink(struct journal_trees *t, struct tree_dir **p)
{
        struct tree_dir *d = *p;

        *p = d->next;
        if (d->path) /* NULL once a removed tree took it */
                t->path_bytes -= strlen(d->path) + 1;
        free(d->path);
        free(d);
        t->n_dirs--;
}

/* FNV-1a of the first len bytes (journal_path_hash's, for prefixes). */
static uint64_t hash_n(const char *s, size_t len)
{
        uint64_t h = 1469598103934665603ull;

        for (size_t i = 0; i < len; i++)
                h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
        return h;
}

/*
 * Call f on every followed directory that is path or above it, deepest
 * last. Each prefix ending at a '/' (and the whole path) is looked up.
 */
static void dirs_above(struct journal_trees *t, const char *path,
                       void (*f)(struct journal_trees *t, struct tree_dir *d, void *arg), void *arg)
{
        size_t len = strlen(path);

        if (t->n_dirs == 0)
                return;
        for (size_t i = 1; i <= len; i++) {
                if (i < len && path[i] != '/')
                        continue;
                struct tree_dir *d = *dir_slot(t, path, i, hash_n(path, i));
                if (d)
                        f(t, d, arg);
        }
}

struct note_arg {
        const char *path2; /* the other name of a rename or link, or NULL */
        uint64_t bytes;
        bool moves_out; /* a rename or link: mark the dirs it leaves as leaked */
};

static void dir_note(struct journal_trees *t, struct tree_dir *d, void *arg)
{
        struct note_arg *a = arg;

        (void)t;
        if (a->moves_out && !streq(a->path2, d->path) && !journal_path_under(a->path2, d->path))
                d->leaked = true;
        else
                d->bytes += a->bytes;
}

/*
 * A hard link from outside into d: what is written through the new name
 * changes a file that outlives the tree, so the tree's past is not dead.
 */
static void dir_linked_into(struct journal_trees *t, struct tree_dir *d, void *arg)
{
        const char *from = arg;

        (void)t;
        if (!streq(from, d->path) && !journal_path_under(from, d->path))
                d->leaked = true;
}

/* The exact name under key (decoded from key_hex when it is not UTF-8); NULL if absent. */
static char *exact_name(json_t *o, const char *key)
{
        char hkey[32];
        const char *hex, *s;
        size_t hl, len = 0;
        char *out;

        snprintf(hkey, sizeof(hkey), "%s_hex", key);
        hex = json_string_value(json_object_get(o, hkey));
        s = json_string_value(json_object_get(o, key));
        if (!hex)
                return s ? strdup(s) : NULL;
        hl = strlen(hex);
        out = malloc(hl / 2 + 1);
        if (!out)
                return NULL;
        if (hl % 2 ||
            sodium_hex2bin((unsigned char *)out, hl / 2, hex, hl, NULL, &len, NULL) != 0 ||
            len != hl / 2) {
                free(out);
                return s ? strdup(s) : NULL;
        }
        out[len] = 0;
        return out;
}

/*
 * Drop the followed directory path and those under it: a renamed
 * directory's names changed. Only a followed directory has followed ones
 * under it (each was made in it), so a file's rename costs one lookup.
 */
static void dirs_drop_under(struct journal_trees *t, const char *path)
{
        size_t n = strlen(path);

        if (!*dir_slot(t, path, n, hash_n(path, n)))
                return;
        for (size_t b = 0; b < TREE_BUCKETS && t->n_dirs > 0; b++)
                for (struct tree_dir **p = &t->bucket[b]; *p;)
                        if (streq((*p)->path, path) || journal_path_under((*p)->path, path))
                                dir_unlink(t, p);
                        else
                                p = &(*p)->next;
}

static void dead_add(struct journal_trees *t, struct tree_dir *d, uint64_t seq)
{
        size_t k = 0;

        /* Trees removed inside it during its life are part of it now. */
        for (size_t i = 0; i < t->n_dead; i++) {
                struct tree_dead *x = &t->dead[i];
                if (x->from >= d->seq && journal_path_under(x->path, d->path)) {
                        t->freeable -= x->bytes;
                        t->path_bytes -= strlen(x->path) + 1;
                        free(x->path);
                        continue;
                }
                t->dead[k++] = *x;
        }
        t->n_dead = k;
        if (t->n_dead == t->cap_dead) {
                size_t cap = t->cap_dead ? 2 * t->cap_dead : 16;
                struct tree_dead *n;
                if (cap > JOURNAL_TREE_SLOTS || !(n = reallocarray(t->dead, cap, sizeof(*n))))
                        return; /* its lines stay */
                t->dead = n;
                t->cap_dead = cap;
        }
        /* The name goes with it, still counted in path_bytes until the rewrite. */
        t->dead[t->n_dead] = (struct tree_dead){
                .path = TAKE_PTR(d->path),
                .hash = d->hash,
                .from = d->seq,
                .to = seq,
                .bytes = d->bytes,
        };
        t->n_dead++;
        t->freeable += d->bytes;
}

void journal_tree_note(journal *j, json_t *o, uint64_t seq, size_t len)
{
        const char *op = json_string_value(json_object_get(o, "op"));
        _cleanup_free_ char *path = NULL, *path2 = NULL;
        struct journal_trees *t;
        struct note_arg a = {.bytes = len};
        bool ok;

        /* Summaries and marks are kept whatever they name (journal.h). */
        if (!op || startswith(op, JOURNAL_MARK_PREFIX) || streq(op, "transient") ||
            streq(op, "removed_tree") || json_object_get(o, "coarse"))
                return;
        t = trees_get(j);
        path = exact_name(o, "path");
        if (!t || !path)
                return;
        ok = json_integer_value(json_object_get(o, "result")) == 0;
        if (streq(op, "rename") || streq(op, "link")) {
                path2 = exact_name(o, "path2");
                if (!path2)
                        return;
                /* Counted in the trees that hold both names; what leaves one, leaks it. */
                a.path2 = path2;
                a.moves_out = ok;
                dirs_above(t, path, dir_note, &a);
                if (ok && streq(op, "link"))
                        dirs_above(t, path2, dir_linked_into, path);
                if (ok && streq(op, "rename")) {
                        dirs_drop_under(t, path);
                        dirs_drop_under(t, path2);
                }
                return;
        }
        dirs_above(t, path, dir_note, &a);
        if (!ok)
                return;
        if (streq(op, "mkdir")) {
                size_t n = strlen(path);
                uint64_t h = hash_n(path, n);
                struct tree_dir **p = dir_slot(t, path, n, h), *d;

                if (*p)
                        dir_unlink(t, p);
                /* Bounded: past it, newer directories are not followed (their lines stay). */
                if (t->n_dirs >= JOURNAL_TREE_SLOTS ||
                    t->path_bytes + n + 1 > JOURNAL_TREE_NAME_BYTES || !(d = calloc(1, sizeof(*d))))
                        return;
                t->path_bytes += n + 1;
                d->path = TAKE_PTR(path);
                d->hash = h;
                d->seq = seq;
                d->bytes = len;
                d->next = t->bucket[h % TREE_BUCKETS];
                t->bucket[h % TREE_BUCKETS] = d;
                t->n_dirs++;
        } else if (streq(op, "rmdir")) {
                size_t n = strlen(path);
                struct tree_dir **p = dir_slot(t, path, n, hash_n(path, n));

                if (!*p)
                        return;
                if (!(*p)->leaked)
                        dead_add(t, *p, seq);
                dir_unlink(t, p);
        }
}

bool journal_tree_rewrite_due(journal *j, bool any)
{
        struct journal_trees *t = j->trees;
        uint64_t min;

        if (!t || t->n_dead == 0 || t->rewriting)
                return false;
        if (any)
                return t->freeable > 0;
        min = JOURNAL_TREE_REWRITE_MIN;
        return t->freeable >= min && t->freeable >= j->size / 2;
}

int journal_tree_leftover_remove(journal *j)
{
        _cleanup_free_ char *tmp = NULL;

        if (asprintf(&tmp, "%s" REWRITE_TMP_SUFFIX, j->name) < 0)
                return -ENOMEM;
        if (unlinkat(j->dirfd, tmp, 0) < 0 && errno != ENOENT)
                return negative_errno();
        return 0;
}

/* ---- the rewrite ---- */

/* Lines of [off, end) of fd, read with pread (the journal's offset is the appender's). */
struct line_reader {
        int fd;
        uint64_t off, end;
        char *buf;
        size_t cap, len, pos;
};

/* The next line (without its newline, *nl whether it had one); 0 at the end. */
static int line_next(struct line_reader *r, const char **ret, size_t *ret_len, bool *nl)
{
        for (;;) {
                char *e = memchr(r->buf + r->pos, '\n', r->len - r->pos);
                if (e || (r->off == r->end && r->pos < r->len)) {
                        *ret = r->buf + r->pos;
                        *ret_len = e ? (size_t)(e - (r->buf + r->pos)) : r->len - r->pos;
                        *nl = e != NULL;
                        r->pos = e ? (size_t)(e - r->buf) + 1 : r->len;
                        return 1;
                }
                if (r->off == r->end)
                        return 0;
                memmove(r->buf, r->buf + r->pos, r->len - r->pos);
                r->len -= r->pos;
                r->pos = 0;
                if (r->len == r->cap) {
                        char *nb = realloc(r->buf, r->cap * 2);
                        if (!nb)
                                return -ENOMEM;
                        r->buf = nb;
                        r->cap *= 2;
                }
                size_t want = MIN(r->cap - r->len, r->end - r->off);
                ssize_t k = pread(r->fd, r->buf + r->len, want, (off_t)r->off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? negative_errno() : -EIO;
                r->len += (size_t)k;
                r->off += (uint64_t)k;
        }
}

/* A removed tree while the file is rewritten: what its lines add up to. */
struct tree_sum {
        struct tree_dead d;
        bool found;  /* its mkdir line was read */
        json_t *mk;  /* that line */
        char *until; /* the time of its rmdir */
        uint64_t lines, bytes, names, ops, failed;
        json_t *comms;
        bool more;
        crypto_hash_sha256_state sha;
};

/* The "seq" of a line (written last by journal_line_write); -1 if none. */
static int64_t line_seq(const char *s, size_t n)
{
        static const char key[] = "\"seq\":";
        size_t k = sizeof(key) - 1;
        int64_t v = 0;

        for (size_t i = n; i >= k; i--) {
                if (memcmp(s + i - k, key, k) != 0)
                        continue;
                size_t p = i;
                if (p >= n || s[p] < '0' || s[p] > '9')
                        return -1;
                while (p < n && s[p] >= '0' && s[p] <= '9' && v < INT64_MAX / 10)
                        v = v * 10 + (s[p++] - '0');
                return v;
        }
        return -1;
}

/* Which removed tree a line belongs to (NULL: none), its object in *ret_o. */
static struct tree_sum *line_tree(struct tree_sum *sums, size_t n, uint64_t lo, uint64_t hi,
                                  const char *s, size_t len, json_t **ret_o)
{
        _cleanup_free_ char *path = NULL, *path2 = NULL;
        int64_t seq = line_seq(s, len);
        const char *op;
        json_t *o;

        *ret_o = NULL;
        if (seq < 0 || (uint64_t)seq < lo || (uint64_t)seq > hi)
                return NULL;
        o = json_loadb(s, len, 0, NULL);
        op = json_string_value(json_object_get(o, "op"));
        /* Summaries (an inner tree's of an earlier rewrite too) and marks stay. */
        if (!op || startswith(op, JOURNAL_MARK_PREFIX) || streq(op, "transient") ||
            streq(op, "removed_tree") || json_object_get(o, "coarse") ||
            !(path = exact_name(o, "path"))) {
                json_decref(o);
                return NULL;
        }
        path2 = json_object_get(o, "path2") ? exact_name(o, "path2") : NULL;
        /* A symlink's target is a string, not a name in the tree. */
        if (streq(op, "symlink")) {
                free(path2);
                path2 = NULL;
        }
        for (size_t i = 0; i < n; i++) {
                struct tree_sum *t = &sums[i];
                if ((uint64_t)seq < t->d.from || (uint64_t)seq > t->d.to)
                        continue;
                if (!streq(path, t->d.path) && !journal_path_under(path, t->d.path))
                        continue;
                if (path2 && !streq(path2, t->d.path) && !journal_path_under(path2, t->d.path))
                        continue;
                *ret_o = o;
                return t;
        }
        json_decref(o);
        return NULL;
}

static void sum_line(struct tree_sum *t, json_t *o, const char *s, size_t len, bool nl)
{
        const char *op = json_string_value(json_object_get(o, "op"));
        const char *comm = json_string_value(json_object_get(o, "comm"));
        json_int_t seq = json_integer_value(json_object_get(o, "seq"));
        json_t *c = json_object_get(o, "count");

        crypto_hash_sha256_update(&t->sha, (const unsigned char *)s, len);
        if (nl)
                crypto_hash_sha256_update(&t->sha, (const unsigned char *)"\n", 1);
        t->lines++;
        t->bytes += len + (nl ? 1 : 0);
        t->ops += (json_is_integer(c) ? (uint64_t)json_integer_value(c) : 1) +
                  (uint64_t)json_integer_value(json_object_get(o, "folded"));
        if (json_integer_value(json_object_get(o, "result")) < 0)
                t->failed++;
        else if (streq(op, "create") || streq(op, "mkdir") || streq(op, "mknod") ||
                 streq(op, "symlink") || streq(op, "link"))
                t->names++;
        if (comm) {
                size_t i;
                json_t *v;
                bool seen = false;
                json_array_foreach (t->comms, i, v)
                        seen |= streq(json_string_value(v), comm);
                if (!seen && json_array_size(t->comms) < JOURNAL_TREE_COMMS)
                        json_array_append_new(t->comms, json_string(comm));
                else if (!seen)
                        t->more = true;
        }
        if ((uint64_t)seq == t->d.from && streq(op, "mkdir") && !t->found) {
                t->found = true;
                t->mk = json_incref(o);
        }
        if ((uint64_t)seq == t->d.to) {
                free(t->until);
                t->until = strdup(json_string_value(json_object_get(o, "time")) ?: "");
        }
}

/* The entry that stands for a removed tree, in the place of its mkdir. */
static char *sum_line_build(struct tree_sum *t)
{
        static const char *const keep[] = {"time", "op", "path", "path_hex"};
        static const char *const caller[] = {"result",      "pid",  "uid",       "gid",
                                             "sandbox_uid", "comm", "run_cgroup"};
        _cleanup_(json_decrefp) json_t *o = json_object();
        unsigned char h[crypto_hash_sha256_BYTES];
        char hex[2 * sizeof(h) + 1];
        json_t *v;

        if (!o)
                return NULL;
        crypto_hash_sha256_final(&t->sha, h);
        sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
        for (size_t i = 0; i < ELEMENTSOF(keep); i++)
                if ((v = json_object_get(t->mk, keep[i])))
                        json_object_set(o, keep[i], v);
        json_object_set_new(o, "op", json_string("removed_tree"));
        json_object_set_new(o, "count", json_integer((json_int_t)t->names));
        json_object_set_new(o, "ops", json_integer((json_int_t)t->ops));
        json_object_set_new(o, "lines", json_integer((json_int_t)t->lines));
        json_object_set_new(o, "bytes", json_integer((json_int_t)t->bytes));
        json_object_set_new(o, "sha256", json_string(hex));
        if (t->until)
                json_object_set_new(o, "until", json_string(t->until));
        json_object_set(o, "comms", t->comms);
        if (t->more)
                json_object_set_new(o, "more", json_true());
        if (t->failed)
                json_object_set_new(o, "failed", json_integer((json_int_t)t->failed));
        for (size_t i = 0; i < ELEMENTSOF(caller); i++)
                if ((v = json_object_get(t->mk, caller[i])))
                        json_object_set(o, caller[i], v);
        json_object_set_new(o, "seq", json_integer((json_int_t)t->d.from));
        return json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

static int write_all(int fd, const char *s, size_t n)
{
        while (n > 0) {
                ssize_t k = write(fd, s, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? negative_errno() : -EIO;
                s += k;
                n -= (size_t)k;
        }
        return 0;
}

/* Copy [off, end) of in to out as it is (the kernel's copy first: earlier sessions can be large).
 */
static int copy_range(int in, int out, uint64_t off, uint64_t end)
{
        char buf[65536];
        loff_t from = (loff_t)off;

        while (off < end) {
                ssize_t k = copy_file_range(in, &from, out, NULL, (size_t)(end - off), 0);
                if (k <= 0)
                        break; /* not here (EXDEV, EINVAL...): by hand below */
                off += (uint64_t)k;
        }

        while (off < end) {
                ssize_t k = pread(in, buf, MIN(sizeof(buf), end - off), (off_t)off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? negative_errno() : -EIO;
                int r = write_all(out, buf, (size_t)k);
                if (r < 0)
                        return r;
                off += (uint64_t)k;
        }
        return 0;
}

/*
 * One pass over this session's lines up to end: sum them (out < 0) or write
 * the file without them (out >= 0).
 */
static int pass(journal *j, struct tree_sum *sums, size_t n, uint64_t lo, uint64_t hi, uint64_t end,
                int out)
{
        struct line_reader r = {.fd = j->fd, .off = j->session_off, .end = end, .cap = 1 << 20};
        const char *s;
        size_t len;
        bool nl;
        int k, ret = 0;

        r.buf = malloc(r.cap);
        if (!r.buf)
                return -ENOMEM;
        while ((k = line_next(&r, &s, &len, &nl)) > 0) {
                json_t *o = NULL;
                struct tree_sum *t = line_tree(sums, n, lo, hi, s, len, &o);

                if (out < 0) {
                        if (t)
                                sum_line(t, o, s, len, nl);
                } else if (!t || !t->found) {
                        ret = write_all(out, s, len);
                        if (ret == 0 && nl)
                                ret = write_all(out, "\n", 1);
                } else if (t->mk &&
                           json_integer_value(json_object_get(o, "seq")) == (json_int_t)t->d.from) {
                        _cleanup_free_ char *line = sum_line_build(t);
                        ret = line ? write_all(out, line, strlen(line)) : -ENOMEM;
                        if (ret == 0)
                                ret = write_all(out, "\n", 1);
                        json_decref(t->mk);
                        t->mk = NULL;
                }
                json_decref(o);
                if (ret < 0)
                        break;
        }
        free(r.buf);
        return ret < 0 ? ret : k;
}

int journal_tree_rewrite(journal *j)
{
        struct journal_trees *t = j->trees;
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int out = -1;
        struct tree_dead *dead;
        struct tree_sum *sums = NULL;
        size_t n;
        uint64_t end, lo = UINT64_MAX, hi = 0, size;
        int r;

        if (!t || t->n_dead == 0 || t->rewriting)
                return 0;
        if (asprintf(&tmp, "%s" REWRITE_TMP_SUFFIX, j->name) < 0 || sodium_init() < 0)
                return -ENOMEM;
        /* Take the trees removed so far; those removed meanwhile wait for the next time. */
        dead = TAKE_PTR(t->dead);
        n = t->n_dead;
        t->n_dead = t->cap_dead = 0;
        t->freeable = 0;
        t->rewriting = true;
        end = j->size;
        sums = calloc(n, sizeof(*sums));
        if (!sums) {
                r = -ENOMEM;
                goto out_locked;
        }
        for (size_t i = 0; i < n; i++) {
                sums[i].d = dead[i];
                sums[i].comms = json_array();
                crypto_hash_sha256_init(&sums[i].sha);
                lo = MIN(lo, dead[i].from);
                hi = MAX(hi, dead[i].to);
        }
        /* Not O_APPEND yet: copy_file_range() refuses to write to such a descriptor. */
        out = openat(j->dirfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY,
                     0600);
        if (out < 0) {
                r = negative_errno();
                goto out_locked;
        }
        /* What is written up to end stays as it is: read it without the lock. */
        pthread_mutex_unlock(&j->lock);
        r = pass(j, sums, n, lo, hi, end, -1);
        if (r == 0)
                r = copy_range(j->fd, out, 0, j->session_off);
        if (r == 0)
                r = pass(j, sums, n, lo, hi, end, out);
        pthread_mutex_lock(&j->lock);
        /* What was appended meanwhile, and the sync and the rename, under the lock. */
        if (r == 0)
                r = copy_range(j->fd, out, end, j->size);
        /* It becomes the journal: appends only, as journal_open() opens it. */
        if (r == 0 && fcntl(out, F_SETFL, O_APPEND) < 0)
                r = negative_errno();
        if (r == 0 && fsync(out) < 0)
                r = negative_errno();
        if (r == 0 && (size = (uint64_t)lseek(out, 0, SEEK_END)) > 0 &&
            renameat(j->dirfd, tmp, j->dirfd, j->name) == 0) {
                (void)fsync(j->dirfd);
                safe_close(j->fd);
                j->fd = TAKE_FD(out);
                __atomic_store_n(&j->size, size, __ATOMIC_RELAXED);
        } else if (r == 0) {
                r = negative_errno();
        }
out_locked:
        if (out >= 0 || r < 0)
                (void)unlinkat(j->dirfd, tmp, 0);
        for (size_t i = 0; sums && i < n; i++) {
                json_decref(sums[i].mk);
                json_decref(sums[i].comms);
                free(sums[i].until);
        }
        free(sums);
        for (size_t i = 0; i < n; i++)
                t->path_bytes -= strlen(dead[i].path) + 1;
        dead_clear(dead, n);
        t->rewriting = false;
        return r;
}
