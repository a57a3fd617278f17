/* SPDX-License-Identifier: MIT */
/*
 * ops-trace.c: which command wrote each hunk of `cloister report`
 * (operations.h, ops_trace_*).
 *
 * The journal names the bytes each write covered (its offset and length;
 * a merged write the extent from its lowest offset to its highest end), so
 * the report replays it, file by file, into a map of byte ranges to the
 * command whose write last put them there: a write claims its range, a
 * truncate cuts what is past the new size, a new file starts empty, a
 * rename moves a file's map to its new name (a directory's, all below
 * it), an unlink drops it. A hunk's changed bytes in the new file
 * (review_hunks()) are then looked up in the map of its file: the
 * commands whose ranges overlap them wrote it. A command that rewrites a
 * whole file (an editor, `sed -i` through a new file renamed over it) is
 * named for every hunk of it, since it did write all of them last.
 *
 * The command of a write is joined two ways. Exactly, by cgroup: a
 * root-run sandbox has a cgroup of its own, which its run record's end
 * names ("cgroup") and the journal names in every entry its processes
 * made ("run_cgroup", fs/journal/journal-cgroup.c); the run with the
 * entry's cgroup whose span holds the entry's time is its command (the
 * time tells apart two runs whose names met again, a runner's pid reused).
 * Otherwise by time: the run whose span holds the write's time (the latest
 * started, when several ran at once), never one whose cgroup is known and
 * is not the entry's. So a write of a host process, an unprivileged run's
 * (no cgroup), a run without its end line, or a journal of an older daemon
 * is joined by time, as it always was. Every attribution says which it
 * used ("join": "cgroup", "time", or "mixed" for a hunk or file with both).
 *
 * Where the bytes are not known, it says so ("traced": "file"): a file
 * the journal saw only in coarse entries (past its soft bound: no names,
 * no offsets), more than OPS_TRACE_EXTENTS_MAX ranges in one file, or a
 * hunk no range overlaps. Then the commands that touched the file at all
 * are given instead.
 *
 * Bounded: OPS_TRACE_FILES_MAX files are followed (then new ones are not),
 * OPS_TRACE_EXTENTS_MAX ranges and OPS_TRACE_RUNS_MAX commands each, and
 * the renames of folders look at OPS_TRACE_SCAN_MAX names in all (each
 * looks at every name followed): past that, no hunk is traced to the byte
 * ("file"), so a journal made to be slow to replay is not.
 *
 * Trust: every path is the agent's; they are only compared, and turned
 * into JSON text by ops_json_text() as the report's are.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "operations.h"
#include "lib/util.h"

#define OPS_TRACE_FILES_MAX   1000000
#define OPS_TRACE_EXTENTS_MAX 512
#define OPS_TRACE_RUNS_MAX    16
/* Names looked at, over all the renames of folders in the journal. */
#define OPS_TRACE_SCAN_MAX (64u * 1024 * 1024)

struct extent {
        uint64_t start, end; /* [start, end) */
        uint32_t run;        /* 1-based; 0: no command was running */
        bool exact;          /* run joined by cgroup, not by time */
};

/* A run and how the write was joined to it. */
struct join {
        uint32_t run;
        bool exact;
};

/* Which joins an attribution used: bit 1 cgroup, bit 2 time. */
#define JOIN_CGROUP 1u
#define JOIN_TIME   2u

struct tfile {
        struct extent *v;
        size_t n;
        bool imprecise;                    /* the bytes' writers are not known */
        uint32_t runs[OPS_TRACE_RUNS_MAX]; /* every command that touched it */
        size_t n_runs;
        unsigned joins;  /* JOIN_*: how those were joined */
        uint64_t cut_at; /* the last truncate: its size and command */
        struct join cut_run;
        bool cut;
};

struct coarse_dir {
        char *dir; /* repo-relative, "" for the root */
        struct join run;
};

struct ops_trace {
        char *root; /* the repository's path in the sandbox, "/workspace" */
        size_t root_len;
        json_t *runs;      /* borrowed */
        json_t *by_cgroup; /* a run's "cgroup" -> [its 1-based indices] */
        json_t *map;       /* repo-relative path (as ops_json_text makes it) -> index in files */
        struct tfile *files;
        size_t n_files, cap_files;
        struct coarse_dir coarse[64];
        size_t n_coarse;
        bool coarse_overflow; /* more coarse directories than that: nothing is precise */
        size_t scan_budget;   /* names a rename may still look at (OPS_TRACE_SCAN_MAX) */
        bool scan_spent;      /* a rename went unfollowed: nothing is precise */
};

int ops_trace_new(const char *root, json_t *runs, ops_trace **ret)
{
        ops_trace *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->root = strdup(root);
        t->map = json_object();
        t->by_cgroup = json_object();
        if (!t->root || !t->map || !t->by_cgroup) {
                ops_trace_free(t);
                return -ENOMEM;
        }
        json_t *run;
        size_t i;
        json_array_foreach (runs, i, run) {
                const char *cg = json_string_value(json_object_get(run, "cgroup"));
                json_t *list;
                if (!cg)
                        continue;
                list = json_object_get(t->by_cgroup, cg);
                if (!list) {
                        list = json_array();
                        if (!list || json_object_set_new(t->by_cgroup, cg, list) < 0)
                                continue;
                }
                json_array_append_new(list, json_integer((json_int_t)i + 1));
        }
        t->root_len = strlen(root);
        t->scan_budget = OPS_TRACE_SCAN_MAX;
        while (t->root_len > 1 && t->root[t->root_len - 1] == '/')
                t->root[--t->root_len] = 0;
        t->runs = runs;
        *ret = t;
        return 0;
}

void ops_trace_free(ops_trace *t)
{
        if (!t)
                return;
        for (size_t i = 0; i < t->n_files; i++)
                free(t->files[i].v);
        for (size_t i = 0; i < t->n_coarse; i++)
                free(t->coarse[i].dir);
        free(t->files);
        json_decref(t->map);
        json_decref(t->by_cgroup);
        free(t->root);
        free(t);
}

static double run_time(json_t *run, const char *k)
{
        return json_number_value(json_object_get(run, k)) / 1000.0;
}

/* Does run's span hold t? Started at or before it, and not ended before it. */
static bool run_holds(json_t *run, double t)
{
        return run_time(run, "start_ms") <= t && (!json_is_true(json_object_get(run, "ended")) ||
                                                  run_time(run, "end_ms") + 0.001 >= t);
}

/*
 * The command of a journal entry at time t made in cgroup (NULL: none): by
 * cgroup, the last started run of that cgroup whose span holds t; else by
 * time, the last one started at or before t that had not ended and whose
 * cgroup, if known, is not another. 1-based; 0 if none.
 */
static struct join run_at(ops_trace *tr, double t, const char *cgroup)
{
        json_t *runs = tr->runs, *list = cgroup ? json_object_get(tr->by_cgroup, cgroup) : NULL;
        size_t lo = 0, hi = json_array_size(runs);

        for (size_t i = json_array_size(list); i > 0; i--) {
                json_int_t k = json_integer_value(json_array_get(list, i - 1));
                if (run_holds(json_array_get(runs, (size_t)k - 1), t))
                        return (struct join){(uint32_t)k, true};
        }

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (run_time(json_array_get(runs, mid), "start_ms") <= t)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        /* Runs overlap (several at once): look back a little for one still running. */
        for (size_t i = lo, seen = 0; i > 0 && seen < 16; i--, seen++) {
                json_t *run = json_array_get(runs, i - 1);
                /* A run of a known cgroup made no entry of another cgroup or of none. */
                if (cgroup && json_is_string(json_object_get(run, "cgroup")))
                        continue;
                if (!json_is_true(json_object_get(run, "ended")) ||
                    run_time(run, "end_ms") + 0.001 >= t)
                        return (struct join){(uint32_t)i, false};
        }
        return (struct join){0, false};
}

/* The repo-relative key of a sandbox path, or NULL if it is not below the repository. */
static json_t *key_of(ops_trace *t, const char *path)
{
        if (!path || strncmp(path, t->root, t->root_len) != 0 ||
            (path[t->root_len] != '/' && path[t->root_len] != 0))
                return NULL;
        path += t->root_len;
        while (*path == '/')
                path++;
        return ops_json_text(path, strlen(path));
}

static struct tfile *file_get(ops_trace *t, const char *key, bool make)
{
        json_t *i = json_object_get(t->map, key);

        if (i)
                return &t->files[json_integer_value(i)];
        if (!make || t->n_files >= OPS_TRACE_FILES_MAX)
                return NULL;
        if (t->n_files == t->cap_files) {
                size_t cap = t->cap_files ? 2 * t->cap_files : 256;
                struct tfile *f = reallocarray(t->files, cap, sizeof(*f));
                if (!f)
                        return NULL;
                t->files = f;
                t->cap_files = cap;
        }
        if (json_object_set_new_nocheck(t->map, key, json_integer((json_int_t)t->n_files)) < 0)
                return NULL;
        t->files[t->n_files] = (struct tfile){0};
        return &t->files[t->n_files++];
}

static void file_touch(struct tfile *f, struct join j)
{
        if (!j.run)
                return;
        f->joins |= j.exact ? JOIN_CGROUP : JOIN_TIME;
        for (size_t i = 0; i < f->n_runs; i++)
                if (f->runs[i] == j.run)
                        return;
        if (f->n_runs < OPS_TRACE_RUNS_MAX)
                f->runs[f->n_runs++] = j.run;
}

static void file_reset(struct tfile *f)
{
        f->n = 0;
        f->joins = 0;
        f->imprecise = false;
        f->cut = false;
}

/* Bytes [s, e) are now run's: cut them out of every other range, then add them. */
static void file_write(struct tfile *f, uint64_t s, uint64_t e, struct join run)
{
        struct extent *v, tail = {0};
        size_t n = 0;

        if (f->imprecise || e <= s)
                return;
        /* Room for the tail of a range split in two, and the new one. */
        v = reallocarray(f->v, f->n + 2, sizeof(*v));
        if (!v) {
                f->imprecise = true;
                return;
        }
        f->v = v;
        /* The ranges are disjoint: at most one goes on past e. Kept ones move down (n <= i). */
        for (size_t i = 0; i < f->n; i++) {
                struct extent x = v[i];
                if (x.end <= s || x.start >= e) {
                        v[n++] = x;
                        continue;
                }
                if (x.start < s)
                        v[n++] = (struct extent){x.start, s, x.run, x.exact};
                if (x.end > e)
                        tail = (struct extent){e, x.end, x.run, x.exact};
        }
        if (tail.end)
                v[n++] = tail;
        /* The same command writing on where it stopped (or before where it started): one range. */
        for (size_t i = 0; i < n; i++)
                if (v[i].run == run.run && v[i].exact == run.exact &&
                    (v[i].end == s || v[i].start == e)) {
                        s = MIN(s, v[i].start);
                        e = MAX(e, v[i].end);
                        v[i--] = v[--n];
                }
        v[n++] = (struct extent){s, e, run.run, run.exact};
        f->n = n;
        if (f->n > OPS_TRACE_EXTENTS_MAX)
                f->imprecise = true;
}

static void file_truncate(struct tfile *f, uint64_t size, struct join run)
{
        size_t n = 0;

        for (size_t i = 0; i < f->n; i++) {
                if (f->v[i].start >= size)
                        continue;
                f->v[n] = f->v[i];
                if (f->v[n].end > size)
                        f->v[n].end = size;
                n++;
        }
        f->n = n;
        f->cut = true;
        f->cut_at = size;
        f->cut_run = run;
}

/* Every key at or below from moves to the same place below to; with to NULL, is dropped. */
static void move_keys(ops_trace *t, const char *from, const char *to)
{
        size_t fl = strlen(from);
        _cleanup_(json_decrefp) json_t *moved = json_object();
        const char *k;
        json_t *v;
        void *tmp;

        if (!moved)
                return;
        if ((v = json_object_get(t->map, from))) {
                /* A file, which has nothing below it. */
                if (to)
                        json_object_set_nocheck(moved, to, v);
                json_object_del(t->map, from);
        } else if (*from) {
                /*
                 * Maybe a directory ("" is the root: never renamed): every
                 * followed name is looked at, so the renames of folders are
                 * paid for from a budget; past it, nothing is traced to the
                 * byte any more.
                 */
                if (t->scan_budget < json_object_size(t->map)) {
                        t->scan_spent = true;
                        return;
                }
                t->scan_budget -= json_object_size(t->map);
                json_object_foreach_safe(t->map, tmp, k, v)
                {
                        if (strncmp(k, from, fl) != 0 || k[fl] != '/')
                                continue;
                        _cleanup_free_ char *nk = NULL;
                        if (to && asprintf(&nk, "%s%s", to, k + fl) >= 0)
                                json_object_set_nocheck(moved, nk, v);
                        json_object_del(t->map, k);
                }
        }
        if (!to)
                return;
        /* What was at the new name is replaced (a rename over a file). */
        json_object_del(t->map, to);
        json_object_update(t->map, moved);
}

/* A file that the journal saw as a copy of another (a hard link): its ranges, copied. */
static void file_link(ops_trace *t, const char *from, const char *to)
{
        struct tfile *f, *g = file_get(t, to, true);

        f = file_get(t, from, false); /* after: file_get may move the files */
        if (!f || !g || f == g)
                return;
        free(g->v);
        *g = (struct tfile){.imprecise = f->imprecise};
        g->v = malloc((f->n + 1) * sizeof(*g->v));
        if (!g->v) {
                g->imprecise = true;
                return;
        }
        memcpy(g->v, f->v, f->n * sizeof(*g->v));
        g->n = f->n;
}

uint32_t ops_trace_run_of(ops_trace *t, const struct journal_record *rec, bool *ret_exact)
{
        struct join j = rec->mark ? (struct join){0} : run_at(t, rec->time, rec->run_cgroup);

        *ret_exact = j.exact;
        return j.run;
}

void ops_trace_feed(ops_trace *t, const struct journal_record *rec)
{
        json_t *o = (json_t *)rec->json;
        _cleanup_(json_decrefp) json_t *k1 = NULL, *k2 = NULL;
        struct join run;
        struct tfile *f;
        const char *op = rec->op, *key, *key2;

        if (rec->mark || !op || rec->result < 0)
                return;
        run = run_at(t, rec->time, rec->run_cgroup);
        k1 = key_of(t, rec->path);
        key = json_string_value(k1);
        if (rec->coarse) {
                /*
                 * No names, no offsets: every file below the directory is
                 * imprecise (ops_trace_annotate() looks the list up).
                 */
                if (!key)
                        return;
                for (size_t i = 0; i < t->n_coarse; i++)
                        if (streq(t->coarse[i].dir, key) && t->coarse[i].run.run == run.run &&
                            t->coarse[i].run.exact == run.exact)
                                return;
                if (t->n_coarse == ELEMENTSOF(t->coarse)) {
                        t->coarse_overflow = true;
                        return;
                }
                t->coarse[t->n_coarse].dir = strdup(key);
                if (t->coarse[t->n_coarse].dir)
                        t->coarse[t->n_coarse++].run = run;
                return;
        }
        if (!key || streq(op, "transient") || streq(op, "removed_tree") || streq(op, "mkdir") ||
            streq(op, "rmdir"))
                return;
        if (streq(op, "rename") || streq(op, "link")) {
                k2 = key_of(t, rec->path2);
                key2 = json_string_value(k2);
                if (streq(op, "rename"))
                        move_keys(t, key, key2); /* key2 NULL: moved out of the repository */
                else if (key2)
                        file_link(t, key, key2);
                if (key2 && (f = file_get(t, key2, true)))
                        file_touch(f, run);
                return;
        }
        if (streq(op, "unlink")) {
                json_object_del(t->map, key);
                return;
        }
        f = file_get(t, key, true);
        if (!f)
                return;
        file_touch(f, run);
        if (streq(op, "create") || streq(op, "mknod") || streq(op, "symlink")) {
                file_reset(f);
        } else if (streq(op, "write")) {
                uint64_t off = (uint64_t)json_integer_value(json_object_get(o, "offset"));
                uint64_t len = (uint64_t)json_integer_value(json_object_get(o, "length"));
                if (off + len >= off)
                        file_write(f, off, off + len, run);
        } else if (streq(op, "truncate")) {
                file_truncate(f, (uint64_t)json_integer_value(json_object_get(o, "size")), run);
        }
}

static json_t *runs_json(const uint32_t *runs, size_t n)
{
        json_t *a = json_array();

        for (size_t i = 0; a && i < n; i++)
                json_array_append_new(a, json_integer(runs[i]));
        return a;
}

/* "join": how an attribution's commands were found; NULL when it names none. */
static json_t *join_json(unsigned joins)
{
        return joins == JOIN_CGROUP ? json_string("cgroup")
               : joins == JOIN_TIME ? json_string("time")
               : joins              ? json_string("mixed")
                                    : NULL;
}

static int cmp_u32(const void *a, const void *b)
{
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
        return x < y ? -1 : x > y;
}

/*
 * The commands whose ranges hold the bytes of one hunk: [s, e), or the
 * place s when s == e; *joins gets how they were joined (JOIN_*).
 */
static size_t hunk_runs(const struct tfile *f, uint64_t s, uint64_t e, uint32_t *out,
                        unsigned *joins)
{
        size_t n = 0;

        *joins = 0;
        for (size_t i = 0; i < f->n; i++) {
                const struct extent *x = &f->v[i];
                bool hit = s < e ? x->start < e && x->end > s : x->start <= s && x->end >= s;
                if (!hit || !x->run)
                        continue;
                *joins |= x->exact ? JOIN_CGROUP : JOIN_TIME;
                bool had = false;
                for (size_t j = 0; j < n; j++)
                        had |= out[j] == x->run;
                if (!had && n < OPS_TRACE_RUNS_MAX)
                        out[n++] = x->run;
        }
        /* Lines removed at the end: the truncate that cut the file there. */
        if (!n && s == e && f->cut && f->cut_at == s && f->cut_run.run) {
                out[n++] = f->cut_run.run;
                *joins = f->cut_run.exact ? JOIN_CGROUP : JOIN_TIME;
        }
        qsort(out, n, sizeof(*out), cmp_u32);
        return n;
}

void ops_trace_annotate(ops_trace *t, json_t *stat)
{
        json_t *file, *h;
        size_t i, j;

        json_array_foreach (json_object_get(stat, "files"), i, file) {
                const char *path = json_string_value(json_object_get(file, "path"));
                struct tfile *f = path ? file_get(t, path, false) : NULL;
                uint32_t runs[OPS_TRACE_RUNS_MAX];
                size_t n_runs = f ? f->n_runs : 0;
                unsigned joins = f ? f->joins : 0;
                bool imprecise = !f || f->imprecise || t->coarse_overflow || t->scan_spent;

                if (f)
                        memcpy(runs, f->runs, n_runs * sizeof(*runs));
                /* A file under a coarse directory: its commands, at least, are known. */
                for (size_t c = 0; path && c < t->n_coarse; c++) {
                        size_t dl = strlen(t->coarse[c].dir);
                        if (*t->coarse[c].dir &&
                            (strncmp(path, t->coarse[c].dir, dl) != 0 || path[dl] != '/'))
                                continue;
                        imprecise = true;
                        bool had = false;
                        for (size_t r = 0; r < n_runs; r++)
                                had |= runs[r] == t->coarse[c].run.run;
                        if (t->coarse[c].run.run)
                                joins |= t->coarse[c].run.exact ? JOIN_CGROUP : JOIN_TIME;
                        if (!had && t->coarse[c].run.run && n_runs < OPS_TRACE_RUNS_MAX)
                                runs[n_runs++] = t->coarse[c].run.run;
                }
                qsort(runs, n_runs, sizeof(*runs), cmp_u32);
                json_object_set_new(file, "runs", runs_json(runs, n_runs));
                json_t *jj = n_runs ? join_json(joins) : NULL;
                if (jj)
                        json_object_set_new(file, "join", jj);
                json_array_foreach (json_object_get(file, "hunks"), j, h) {
                        json_t *b = json_object_get(h, "bytes");
                        uint32_t hr[OPS_TRACE_RUNS_MAX];
                        unsigned hj = 0;
                        size_t n = 0;

                        if (f && !imprecise && json_is_array(b))
                                n = hunk_runs(f, (uint64_t)json_integer_value(json_array_get(b, 0)),
                                              (uint64_t)json_integer_value(json_array_get(b, 1)),
                                              hr, &hj);
                        if (n) {
                                json_object_set_new(h, "runs", runs_json(hr, n));
                                json_object_set_new(h, "traced", json_string("bytes"));
                        } else {
                                hj = n_runs ? joins : 0;
                                json_object_set_new(h, "runs", runs_json(runs, n_runs));
                                json_object_set_new(h, "traced",
                                                    json_string(n_runs ? "file" : "none"));
                        }
                        json_t *hjj = join_json(hj);
                        if (hjj)
                                json_object_set_new(h, "join", hjj);
                }
        }
}
