/* SPDX-License-Identifier: MIT */
/*
 * lower-git.c: a git tree at a fixed revision as a read-only lower layer.
 *
 * Nothing is walked at mount: listings read one tree object, sizes come
 * from object headers (git_odb_read_header), and a blob is inflated once,
 * on first open, into a cache file named by its object id; every later
 * read and copy-up is served from that file. A tree is read and parsed
 * once while it is hot: lookups and listings go through the daemon's own
 * index of it (lower-tree.c), shared by every thread and bounded.
 *
 * libgit2's git_repository is not safe for concurrent use, so each FUSE
 * worker thread opens its own repository handle (a pthread key, freed with
 * the thread) and no lock is taken on the read path.
 *
 * Files are shown as a fresh checkout of the base writes them: eol=crlf and
 * ident (from the base revision's .gitattributes, applied by libgit2's own
 * filters) convert the blob, and the converted file is what is cached (as
 * <oid>.<key>), sized and read. Nothing else is consulted: the per-thread
 * handle is a repository with the source's objects only, an empty index, no
 * work tree and a fixed config (no core.autocrlf, no attributes file, no
 * info/attributes), so neither the source's checkout nor a host file can
 * change what the agent sees. Filters that run programs (filter=, LFS) are
 * never run: libgit2 knows none, and the agent sees the blob as stored. A
 * path with no .gitattributes above it in the base tree that could convert
 * anything (attr_scope: none mentions "crlf" or "ident", lower-tree.c)
 * costs no attribute lookup at all.
 */
#include <fcntl.h>
#include <git2/sys/repository.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lower-private.h"
#include "lower-tree.h"
#include "lib/readall.h"
#include "lib/util.h"

struct thread_git {
        git_repository *repo;
        git_odb *odb;
        git_index *index; /* the repo's: the .gitattributes of the base met so far */
};

static void thread_git_free(void *p)
{
        struct thread_git *t = p;
        if (!t)
                return;
        git_index_free(t->index);
        git_odb_free(t->odb);
        git_repository_free(t->repo);
        free(t);
}

/*
 * The handle: the source's object database (its alternates included) in a
 * repository of our own making, with the fixed config and an empty index,
 * so that attributes come from the base commit alone (see the top).
 */
static struct thread_git *thread_git(struct lower *l)
{
        struct thread_git *t = pthread_getspecific(l->thread_key);
        git_repository *src = NULL;
        git_config *cfg = NULL, *snap = NULL;
        int g;

        if (t)
                return t;
        t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        g = git_repository_open_ext(&src, l->source, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
        if (g == 0)
                g = git_repository_odb(&t->odb, src);
        if (g == 0)
                g = git_repository_new(&t->repo);
        if (g == 0)
                g = git_repository_set_odb(t->repo, t->odb);
        if (g == 0)
                g = git_config_new(&cfg);
        if (g == 0 && l->config_path)
                g = git_config_add_file_ondisk(cfg, l->config_path, GIT_CONFIG_LEVEL_LOCAL, NULL,
                                               0);
        /* A snapshot: read-only, so libgit2 does not stat(2) the file again
         * for each key it looks up (three times per attribute lookup). */
        if (g == 0)
                g = git_config_snapshot(&snap, cfg);
        if (g == 0)
                g = git_repository_set_config(t->repo, snap);
        if (g == 0)
                g = git_index_new(&t->index);
        if (g == 0)
                g = git_repository_set_index(t->repo, t->index);
        git_config_free(snap);
        git_config_free(cfg);
        git_repository_free(src);
        if (g < 0 || pthread_setspecific(l->thread_key, t) != 0) {
                thread_git_free(t);
                return NULL;
        }
        return t;
}

/*
 * e from the entry te of tree, the folder dir (dir_len bytes). A file the
 * workspace index build noted (tree_index_note) has its size and "no
 * conversion" already: its first stat reads no object header and makes no
 * attribute lookup.
 */
static void fill_from_entry(const struct tree_index *tree, const char *dir, size_t dir_len,
                            const struct tree_ent *te, struct lower *l, bool attr_scope,
                            struct lower_entry *e)
{
        git_filemode_t fm = te->mode;
        e->oid = te->oid;
        e->attr_scope = attr_scope;
        switch (fm) {
        case GIT_FILEMODE_TREE:
                e->mode = S_IFDIR | 0755;
                break;
        case GIT_FILEMODE_COMMIT: /* a submodule: shown as an empty directory */
                e->mode = S_IFDIR | 0755;
                memset(&e->oid, 0, sizeof(e->oid));
                break;
        case GIT_FILEMODE_LINK:
                e->mode = S_IFLNK | 0777;
                break;
        case GIT_FILEMODE_BLOB_EXECUTABLE:
                e->mode = S_IFREG | 0755;
                break;
        default:
                e->mode = S_IFREG | 0644;
                break;
        }
        e->mtime = e->ctime = l->time;
        e->size_known = false;
        if (S_ISDIR(e->mode)) {
                e->size = 4096;
                e->size_known = true;
        } else if (S_ISREG(e->mode) && tree && tree_index_noted(tree, dir, dir_len, te, &e->size)) {
                e->size_known = true;
                e->conv = 1;
        }
}

/*
 * The errno that says what a failed libgit2 call g met, rather than -EIO
 * for all. missing is what GIT_ENOTFOUND means where it was called: -ENOENT
 * for a name or revision the caller gave, -EIO for an object that a tree
 * of the repository promised (the repository lacks it: a damaged or
 * partial clone, never "no such file" for a file the listing showed).
 */
static int git_errno(int g, int missing)
{
        const git_error *e = git_error_last();

        switch (g) {
        case GIT_ENOTFOUND:
                return missing;
        case GIT_EINVALIDSPEC:
        case GIT_EAMBIGUOUS:
        case GIT_EPEEL:
        case GIT_EBAREREPO:
                return -EINVAL;
        case GIT_EOWNER:
                return -EPERM;
        case GIT_ELOCKED:
                return -EBUSY;
        case GIT_EBUFS:
                return -ENOBUFS;
        case GIT_EEXISTS:
                return -EEXIST;
        default:
                break;
        }
        if (e && e->klass == GIT_ERROR_NOMEMORY)
                return -ENOMEM;
        return -EIO; /* a corrupt object, zlib, the ODB: the data can't be read */
}

/* The index of tree oid (tree_put() it back); -ENOENT for a submodule. */
static int tree_get(struct lower *l, const git_oid *oid, struct tree_index **ret)
{
        struct thread_git *t = thread_git(l);
        if (!t)
                return -EIO;
        if (git_oid_is_zero(oid))
                return -ENOENT; /* submodule */
        return tree_cache_get(l->trees, t->repo, oid, ret);
}

static void tree_put(struct lower *l, struct tree_index *t)
{
        tree_cache_put(l->trees, t);
}

static int git_root(struct lower *l, struct lower_entry *ret)
{
        char *p = strdup("");
        if (!p)
                return -ENOMEM;
        *ret = (struct lower_entry){.path = p,
                                    .oid = l->tree_oid,
                                    .mode = S_IFDIR | 0755,
                                    .size = 4096,
                                    .size_known = true,
                                    .mtime = l->time,
                                    .ctime = l->time};
        return 0;
}

static int git_child(struct lower *l, const struct lower_entry *dir, const char *name,
                     struct lower_entry *ret)
{
        struct tree_index *tree = NULL;
        const struct tree_ent *te;
        struct lower_entry e = {0};
        int r = tree_get(l, &dir->oid, &tree);
        if (r < 0)
                return r;
        te = tree_index_find(tree, name);
        if (!te) {
                r = -ENOENT;
                goto out;
        }
        fill_from_entry(tree, dir->path, strlen(dir->path), te, l,
                        dir->attr_scope || tree->attr_converts, &e);
        e.path = lower_path_join(dir->path, name);
        if (!e.path) {
                r = -ENOMEM;
                goto out;
        }
        *ret = e;
        r = 0;
out:
        tree_put(l, tree);
        return r;
}

/*
 * Walk path from the root: the entry it names (its mode and id into *ret)
 * and whether a .gitattributes that may convert is in a folder on the way
 * (the root, and each folder that holds the next component); if
 * ret_tree, the index of the folder that holds it, held (tree_put() it),
 * so that its notes can be read without a second walk. -ENOENT if a
 * component is missing, -ENOTDIR if one before the last is not a folder.
 */
static int path_walk(struct lower *l, const char *path, struct tree_ent *ret, bool *ret_scope,
                     struct tree_index **ret_tree)
{
        char comp[NAME_MAX + 1];
        git_oid cur = l->tree_oid;
        bool scope = false;
        const char *s = path;

        for (;;) {
                struct tree_index *tree = NULL;
                const struct tree_ent *te;
                const char *end = strchrnul(s, '/');
                size_t n = (size_t)(end - s);
                int r;

                if (n == 0 || n > NAME_MAX)
                        return -ENOENT;
                memcpy(comp, s, n);
                comp[n] = 0;
                r = tree_get(l, &cur, &tree);
                if (r < 0)
                        return r == -ENOENT ? -ENOTDIR : r; /* a submodule has no entries */
                scope = scope || tree->attr_converts;
                te = tree_index_find(tree, comp);
                if (te && !*end)
                        *ret = *te;
                else if (te)
                        cur = te->oid;
                r = !te ? -ENOENT : (*end && te->mode != GIT_FILEMODE_TREE) ? -ENOTDIR : 0;
                if (r == 0 && !*end && ret_tree) {
                        *ret_scope = scope;
                        *ret_tree = tree;
                        return 0;
                }
                tree_put(l, tree);
                if (r < 0)
                        return r;
                if (!*end) {
                        *ret_scope = scope;
                        return 0;
                }
                s = end + 1;
        }
}

static int git_lookup_path(struct lower *l, const char *path, struct lower_entry *ret)
{
        struct tree_index *tree = NULL;
        struct tree_ent te;
        struct lower_entry e = {0};
        const char *slash = strrchr(path, '/');
        bool scope;
        int r;

        if (!*path)
                return git_root(l, ret);
        r = path_walk(l, path, &te, &scope, &tree);
        if (r < 0)
                return r == -ENOTDIR ? -ENOENT : r;
        /* te is a copy of the folder's entry, its note with it */
        fill_from_entry(tree, path, slash ? (size_t)(slash - path) : 0, &te, l, scope, &e);
        tree_put(l, tree);
        e.path = strdup(path);
        if (!e.path)
                return -ENOMEM;
        *ret = e;
        return 0;
}

/* The attributes that make a checkout change a blob (git's convert.c, libgit2's crlf.c). */
static const char *const conv_attrs[] = {"text", "eol", "crlf", "ident"};

/*
 * Put the .gitattributes files of the base tree that apply to path (in its
 * folder and the folders above) into the thread's index, with their blob
 * ids, if they are not there yet; the base tree is fixed, so an entry, once
 * there, stays right.
 *
 * Why an index: libgit2 reads attributes from a commit by walking the
 * commit's tree to each folder's .gitattributes, and checks each cached
 * file against the commit's root tree, for every query. With no tree in
 * libgit2's object cache (fs/daemon/daemon.c) that was three to four parses of the
 * root tree (530 entries in git.git) per stat of a file in attribute scope.
 * From the index, a cached file costs one lookup in the index.
 */
static int attr_index_fill(struct lower *l, struct thread_git *t, const char *path)
{
        char buf[PATH_MAX];
        git_oid cur = l->tree_oid;
        const char *s = path;

        for (;;) {
                struct tree_index *tree = NULL;
                const struct tree_ent *te, *attr;
                const char *end = strchr(s, '/');
                size_t n = (size_t)(s - path);
                char name[NAME_MAX + 1];
                int r = tree_get(l, &cur, &tree);

                if (r < 0)
                        return r;
                attr = tree_index_find(tree, ".gitattributes");
                if (attr && attr->mode != GIT_FILEMODE_TREE &&
                    n + sizeof(".gitattributes") <= sizeof(buf)) {
                        const git_index_entry *have;
                        memcpy(buf, path, n);
                        memcpy(buf + n, ".gitattributes", sizeof(".gitattributes"));
                        have = git_index_get_bypath(t->index, buf, 0);
                        if (!have) {
                                git_index_entry ie = {.mode = GIT_FILEMODE_BLOB, .id = attr->oid};
                                ie.path = buf;
                                int g = git_index_add(t->index, &ie);
                                if (g < 0)
                                        r = git_errno(g, -EIO);
                        }
                }
                te = NULL;
                if (r == 0 && end && (size_t)(end - s) <= NAME_MAX) {
                        memcpy(name, s, (size_t)(end - s));
                        name[end - s] = 0;
                        te = tree_index_find(tree, name);
                        if (te && te->mode == GIT_FILEMODE_TREE)
                                cur = te->oid;
                        else
                                te = NULL;
                }
                tree_put(l, tree);
                if (r < 0 || !te)
                        return r;
                s = end + 1;
        }
}

/*
 * Does checking e out convert its blob? With the fixed config (no autocrlf,
 * eol=lf) only eol=crlf (text not unset, not binary) and ident can change
 * anything; libgit2 applies them, from the base's .gitattributes (put into
 * the thread's index first). The answer and a key naming the attribute
 * values go into e->conv and e->conv_key.
 */
static int conv_decide(struct lower *l, struct thread_git *t, struct lower_entry *e)
{
        int g;
        git_attr_options o = GIT_ATTR_OPTIONS_INIT;
        const char *v[ELEMENTSOF(conv_attrs)] = {0};
        uint32_t h = 2166136261u;
        bool crlf, ident;
        int r;

        if (e->conv)
                return 0;
        if (!S_ISREG(e->mode) || !e->attr_scope) {
                e->conv = 1;
                return 0;
        }
        r = attr_index_fill(l, t, e->path);
        if (r < 0)
                return r;
        o.flags = GIT_ATTR_CHECK_INDEX_ONLY | GIT_ATTR_CHECK_NO_SYSTEM;
        if ((g = git_attr_get_many_ext(v, t->repo, &o, e->path, ELEMENTSOF(conv_attrs),
                                       (const char **)conv_attrs)) < 0)
                return git_errno(g, -EIO);
        crlf = v[1] && streq(v[1], "crlf") && !GIT_ATTR_IS_FALSE(v[0]) && !GIT_ATTR_IS_FALSE(v[2]);
        ident = GIT_ATTR_IS_TRUE(v[3]);
        e->conv = crlf || ident ? 2 : 1;
        for (size_t i = 0; i < ELEMENTSOF(conv_attrs); i++) {
                const char *s = GIT_ATTR_IS_TRUE(v[i])    ? "\1"
                                : GIT_ATTR_IS_FALSE(v[i]) ? "\2"
                                : v[i]                    ? v[i]
                                                          : "";
                for (; *s; s++)
                        h = (h ^ (unsigned char)*s) * 16777619u;
                h = (h ^ 0xff) * 16777619u;
        }
        e->conv_key = h;
        return 0;
}

/* The blob as a fresh checkout writes it, through libgit2's filters. */
static int conv_apply(struct lower *l, struct thread_git *t, const struct lower_entry *e,
                      git_buf *out)
{
        git_filter_options fo = GIT_FILTER_OPTIONS_INIT;
        git_filter_list *fl = NULL;
        git_blob *blob = NULL;
        int g;

        if ((g = git_blob_lookup(&blob, t->repo, &e->oid)) < 0)
                return git_errno(g, -EIO);
        fo.flags = GIT_FILTER_NO_SYSTEM_ATTRIBUTES | GIT_FILTER_ATTRIBUTES_FROM_COMMIT;
        fo.attr_commit_id = l->commit_oid;
        g = git_filter_list_load_ext(&fl, t->repo, blob, e->path, GIT_FILTER_TO_WORKTREE, &fo);
        if (g == 0 && fl)
                g = git_filter_list_apply_to_blob(out, fl, blob);
        else if (g == 0)
                g = git_buf_set(out, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
        git_filter_list_free(fl);
        git_blob_free(blob);
        return g < 0 ? git_errno(g, -EIO) : 0;
}

/* The cache file of a converted checkout: <oid>.<key>, made once (tmp + rename). */
static int conv_open(struct lower *l, struct thread_git *t, const struct lower_entry *e,
                     int *ret_fd)
{
        char name[GIT_OID_HEXSZ + 16], tmp[GIT_OID_HEXSZ + 48];
        git_buf buf = GIT_BUF_INIT;
        _cleanup_close_ int fd = -1;
        int r;

        snprintf(name, sizeof(name), "%s.%08x", git_oid_tostr_s(&e->oid), e->conv_key);
        fd = openat(l->cache_dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
                *ret_fd = TAKE_FD(fd);
                return 0;
        }
        if (errno != ENOENT)
                return negative_errno();
        r = conv_apply(l, t, e, &buf);
        if (r < 0)
                return r;
        snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", name, (long)syscall(SYS_gettid));
        fd = openat(l->cache_dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                    0600);
        if (fd < 0) {
                r = negative_errno();
                goto out;
        }
        r = fd_write_whole(fd, buf.ptr, buf.size);
        if (r == 0 && renameat(l->cache_dirfd, tmp, l->cache_dirfd, name) < 0)
                r = negative_errno();
        if (r < 0)
                unlinkat(l->cache_dirfd, tmp, 0);
        fd = safe_close(fd);
        if (r == 0) {
                fd = openat(l->cache_dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                r = fd < 0 ? negative_errno() : 0;
        }
        if (r == 0)
                *ret_fd = TAKE_FD(fd);
out:
        git_buf_dispose(&buf);
        return r;
}

static int git_size(struct lower *l, struct lower_entry *e)
{
        int g;
        struct thread_git *t = thread_git(l);
        uint64_t size;
        size_t len;
        git_object_t type;
        int r;

        if (!t)
                return -EIO;
        r = conv_decide(l, t, e);
        if (r < 0)
                return r;
        if (e->conv == 2) {
                _cleanup_close_ int fd = -1;
                struct stat st;
                r = conv_open(l, t, e, &fd);
                if (r < 0)
                        return r;
                if (fstat(fd, &st) < 0)
                        return negative_errno();
                e->size = (uint64_t)st.st_size;
                e->size_known = true;
                return 0;
        }
        if (blob_sizes_find(__atomic_load_n(&l->sizes, __ATOMIC_ACQUIRE), &e->oid, &size)) {
                e->size = size;
                e->size_known = true;
                return 0;
        }
        if ((g = git_odb_read_header(&len, &type, t->odb, &e->oid)) < 0)
                return git_errno(g, -EIO);
        e->size = len;
        e->size_known = true;
        return 0;
}

/*
 * A file of the base tree in attribute scope as a fresh checkout writes it:
 * *size holds the blob's size on the way in and is left alone unless the
 * file converts, so the blob is read only then.
 */
static int worktree_size(struct lower *l, const char *path, const git_oid *oid, uint64_t *size,
                         bool *ret_converted)
{
        struct lower_entry e = {
                .path = (char *)path, .oid = *oid, .mode = S_IFREG | 0644, .attr_scope = true};
        struct thread_git *t = thread_git(l);
        int r;

        *ret_converted = false;
        if (!t)
                return -EIO;
        r = conv_decide(l, t, &e);
        if (r < 0 || e.conv != 2)
                return r; /* as stored: *size, the blob's, is already right */
        r = git_size(l, &e);
        if (r < 0)
                return r;
        *size = e.size;
        *ret_converted = true;
        return 0;
}

int lower_git_index_file(struct lower *l, struct lower_git_cursor *c, const char *path,
                         const git_oid *oid, uint64_t *size)
{
        const char *slash = strrchr(path, '/');
        size_t n = slash ? (size_t)(slash - path) : 0;
        bool converted = false;
        int r;

        blob_sizes_add(&c->sizes, oid, *size); /* the blob's, before any conversion */
        if (!c->started || strlen(c->dir) != n || strncmp(c->dir, path, n) != 0) {
                struct tree_index *t = NULL;
                struct tree_ent te;
                bool scope = false;

                if (n >= sizeof(c->dir))
                        return -ENAMETOOLONG;
                tree_put(l, c->tree); /* the folder before's */
                c->tree = NULL;
                memcpy(c->dir, path, n);
                c->dir[n] = 0;
                c->started = true;
                /* The folder's tree, held while its files come, for the notes
                 * and, with the folders above it, the attribute scope: one
                 * walk per folder. A read error: no notes (only slower
                 * lookups later) and the attributes looked up. */
                if (n == 0)
                        (void)tree_get(l, &l->tree_oid, &t);
                else if (path_walk(l, c->dir, &te, &scope, NULL) == 0 &&
                         te.mode == GIT_FILEMODE_TREE)
                        (void)tree_get(l, &te.oid, &t);
                c->tree = t;
                c->scope = t ? scope || t->attr_converts : true;
        }
        if (c->scope) {
                r = worktree_size(l, path, oid, size, &converted);
                if (r < 0)
                        return r;
        }
        if (!converted && c->tree) {
                const struct tree_ent *te = tree_index_find(c->tree, slash ? slash + 1 : path);
                if (te && git_oid_equal(&te->oid, oid))
                        tree_index_note(c->tree, c->dir, n, te, *size);
        }
        return 0;
}

int lower_git_cursor_save(struct lower *l, struct lower_git_cursor *c)
{
        struct blob_sizes *s = NULL, *none = NULL;
        int r = blob_sizes_write(&c->sizes, l->cache_dirfd, &s);

        if (s && !__atomic_compare_exchange_n(&l->sizes, &none, s, false, __ATOMIC_ACQ_REL,
                                              __ATOMIC_ACQUIRE))
                blob_sizes_free(s); /* read at open already: the same sizes */
        return r;
}

void lower_git_cursor_done(struct lower *l, struct lower_git_cursor *c)
{
        tree_put(l, c->tree);
        c->tree = NULL;
        blob_sizes_builder_done(&c->sizes);
}

/* The blob's bytes as git stores them (no conversion), in memory. */
static int lower_git_read_blob(struct lower *l, const git_oid *oid, char **ret, size_t *ret_len)
{
        struct thread_git *t = thread_git(l);
        git_blob *blob = NULL;
        char *s = NULL;
        size_t n;
        int g;

        if (!t)
                return -EIO;
        if ((g = git_blob_lookup(&blob, t->repo, oid)) < 0)
                return git_errno(g, -EIO);
        n = (size_t)git_blob_rawsize(blob);
        if (n > 0) {
                s = malloc(n);
                if (!s) {
                        git_blob_free(blob);
                        return -ENOMEM;
                }
                memcpy(s, git_blob_rawcontent(blob), n);
        }
        git_blob_free(blob);
        *ret = s;
        *ret_len = n;
        return 0;
}

static int git_read_file(struct lower *l, struct lower_entry *e, char **ret, size_t *ret_len)
{
        struct thread_git *t = thread_git(l);
        git_buf buf = GIT_BUF_INIT;
        char *s = NULL;
        int r;

        if (!t)
                return -EIO;
        r = conv_decide(l, t, e);
        if (r < 0)
                return r;
        if (e->conv != 2)
                return lower_git_read_blob(l, &e->oid, ret, ret_len);
        r = conv_apply(l, t, e, &buf);
        if (r == 0 && buf.size > 0 && !(s = malloc(buf.size)))
                r = -ENOMEM;
        if (r == 0) {
                if (s)
                        memcpy(s, buf.ptr, buf.size);
                *ret = s;
                *ret_len = buf.size;
        }
        git_buf_dispose(&buf);
        return r;
}

static int git_list(struct lower *l, const struct lower_entry *dir, lower_list_fn fn,
                    void *userdata)
{
        struct tree_index *tree = NULL;
        int r = tree_get(l, &dir->oid, &tree);
        if (r == -ENOENT)
                return 0; /* submodule: empty */
        if (r < 0)
                return r;
        bool scope = dir->attr_scope || tree->attr_converts;
        size_t dir_len = strlen(dir->path);
        for (size_t i = 0; i < tree->n; i++) {
                const struct tree_ent *te = &tree->ents[i];
                struct lower_entry e = {0};
                fill_from_entry(tree, dir->path, dir_len, te, l, scope, &e);
                r = fn(tree_ent_name(tree, te), &e, userdata);
                if (r < 0)
                        break;
                r = 0;
        }
        tree_put(l, tree);
        return r;
}

/* Inflate a blob into the cache (tmp file + rename, so a crash leaves no half file). */
static int inflate_blob(struct lower *l, const git_oid *oid, const char *hex)
{
        int g;
        struct thread_git *t = thread_git(l);
        git_blob *blob = NULL;
        char tmp[GIT_OID_HEXSZ + 32];
        _cleanup_close_ int fd = -1;
        int r;

        if (!t)
                return -EIO;
        if ((g = git_blob_lookup(&blob, t->repo, oid)) < 0)
                return git_errno(g, -EIO);
        snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", hex, (long)syscall(SYS_gettid));
        fd = openat(l->cache_dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                    0600);
        if (fd < 0) {
                r = negative_errno();
                goto out;
        }
        r = fd_write_whole(fd, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
        if (r < 0) {
                unlinkat(l->cache_dirfd, tmp, 0);
                goto out;
        }
        if (renameat(l->cache_dirfd, tmp, l->cache_dirfd, hex) < 0) {
                r = negative_errno();
                unlinkat(l->cache_dirfd, tmp, 0);
        }
out:
        git_blob_free(blob);
        return r;
}

static int git_open_data(struct lower *l, const struct lower_entry *e, int *ret_fd)
{
        char hex[GIT_OID_HEXSZ + 1];
        struct lower_entry c = *e;
        struct thread_git *t = thread_git(l);
        int fd, r;

        if (!t)
                return -EIO;
        r = conv_decide(l, t, &c);
        if (r < 0)
                return r;
        if (c.conv == 2)
                return conv_open(l, t, &c, ret_fd);

        git_oid_tostr(hex, sizeof(hex), &e->oid);
        fd = openat(l->cache_dirfd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
                r = inflate_blob(l, &e->oid, hex);
                if (r < 0)
                        return r;
                fd = openat(l->cache_dirfd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (fd < 0)
                return negative_errno();
        *ret_fd = fd;
        return 0;
}

static int git_readlink(struct lower *l, const struct lower_entry *e, char **ret)
{
        int g;
        struct thread_git *t = thread_git(l);
        git_blob *blob = NULL;
        char *s;
        size_t n;
        if (!t)
                return -EIO;
        if ((g = git_blob_lookup(&blob, t->repo, &e->oid)) < 0)
                return git_errno(g, -EIO);
        n = (size_t)git_blob_rawsize(blob);
        s = malloc(n + 1);
        if (s) {
                memcpy(s, git_blob_rawcontent(blob), n);
                s[n] = 0;
        }
        git_blob_free(blob);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static void git_free(struct lower *l)
{
        if (l->key_created) {
                thread_git_free(pthread_getspecific(l->thread_key));
                pthread_setspecific(l->thread_key, NULL);
                pthread_key_delete(l->thread_key);
        }
        tree_cache_free(l->trees);
        blob_sizes_free(l->sizes);
        safe_close(l->cache_dirfd);
        free(l->config_path);
        free(l->source);
        free(l->objects_dir);
        free(l);
}

/* A file of at most max bytes, as checked out, in memory (its blob, converted
 * if its attributes say so). */
static int git_read_small(struct lower *l, struct lower_entry *e, size_t max, char **ret,
                          size_t *ret_len)
{
        int r;

        if (!S_ISREG(e->mode))
                return -EOPNOTSUPP;
        r = lower_size(l, e);
        if (r < 0)
                return r;
        if (e->size > max)
                return -EFBIG;
        return git_read_file(l, e, ret, ret_len);
}

static const struct lower_ops lower_git_ops = {
        .git = true,
        .root = git_root,
        .child = git_child,
        .lookup_path = git_lookup_path,
        .size = git_size,
        .list = git_list,
        .open_data = git_open_data,
        .readlink = git_readlink,
        .free = git_free,
        .read_small = git_read_small,
};

/*
 * The fixed config of the per-thread handles, in the blob cache (ours, never
 * the agent's): what a fresh checkout on Linux does with no user config. The
 * attributes and excludes files are /dev/null, which also keeps libgit2 from
 * falling back to the host user's ~/.config/git/attributes; once sealed
 * (lower_git_seal), libgit2 has no such file to fall back to, and the line
 * goes: libgit2 stat(2)s that file on every attribute lookup. libgit2 reads
 * a config only from a path: the cache directory's, through our own fd.
 */
static int config_write(struct lower *l)
{
        static const char head[] = "[core]\n"
                                   "\tautocrlf = false\n"
                                   "\teol = lf\n"
                                   "\tsafecrlf = false\n"
                                   "\tignorecase = false\n"
                                   "\texcludesFile = /dev/null\n";
        static const char attributes[] = "\tattributesFile = /dev/null\n";
        char tmp[64];
        _cleanup_close_ int fd = -1;
        int r;

        snprintf(tmp, sizeof(tmp), "gitconfig.tmp.%ld", (long)getpid());
        fd = openat(l->cache_dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                    0600);
        if (fd < 0)
                return negative_errno();
        r = fd_write_whole(fd, head, sizeof(head) - 1);
        if (r == 0 && !l->sealed)
                r = fd_write_whole(fd, attributes, sizeof(attributes) - 1);
        if (r == 0 && renameat(l->cache_dirfd, tmp, l->cache_dirfd, "gitconfig") < 0)
                r = negative_errno();
        if (r < 0) {
                unlinkat(l->cache_dirfd, tmp, 0);
                return r;
        }
        if (!l->config_path &&
            asprintf(&l->config_path, "/proc/self/fd/%d/gitconfig", l->cache_dirfd) < 0) {
                l->config_path = NULL;
                return -ENOMEM;
        }
        return 0;
}

int lower_git_seal(struct lower *l)
{
        static const int levels[] = {GIT_CONFIG_LEVEL_SYSTEM, GIT_CONFIG_LEVEL_XDG,
                                     GIT_CONFIG_LEVEL_GLOBAL};

        int g;

        for (size_t i = 0; i < ELEMENTSOF(levels); i++)
                if ((g = git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, levels[i], "")) < 0)
                        return git_errno(g, -EIO);
        /* The source's ownership (safe.directory) was checked when it was
         * opened; the files that could allow another owner are out of reach now. */
        if ((g = git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0)) < 0)
                return git_errno(g, -EIO);
        l->sealed = true;
        return config_write(l);
}

/* The message of a failed open step g, and its errno: a source or revision
 * that is not there is ENOENT, one that is not what it must be EINVAL. */
static int set_error(int g, char **ret_error, const char *what, const char *arg)
{
        const git_error *e = git_error_last();
        if (ret_error && asprintf(ret_error, "%s '%s': %s", what, arg,
                                  e && e->message ? e->message : "failed") < 0)
                *ret_error = NULL;
        return git_errno(g, -ENOENT);
}

int lower_git_open(const char *source, const char *rev, int cache_dirfd, uint64_t tree_budget,
                   struct lower **ret, char **ret_error)
{
        struct lower *l;
        git_repository *repo = NULL;
        git_object *obj = NULL;
        git_commit *commit = NULL;
        int r;

        git_libgit2_init();
        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->ops = &lower_git_ops;
        l->root_fd = -1;
        l->cache_dirfd = -1;
        l->source = strdup(source);
        if (!l->source) {
                r = -ENOMEM;
                goto out;
        }
        if ((r = git_repository_open_ext(&repo, source, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL)) < 0) {
                r = set_error(r, ret_error, "cannot open git repository", source);
                goto out;
        }
        if ((r = git_revparse_single(&obj, repo, rev)) < 0) {
                r = set_error(r, ret_error, "cannot resolve revision", rev);
                goto out;
        }
        if ((r = git_object_peel((git_object **)&commit, obj, GIT_OBJECT_COMMIT)) < 0) {
                /* A tag of a tree, a blob: not a commit, whatever libgit2 calls it. */
                r = set_error(GIT_EPEEL, ret_error, "revision is not a commit", rev);
                goto out;
        }
        l->tree_oid = *git_commit_tree_id(commit);
        l->commit_oid = *git_commit_id(commit);
        git_oid_tostr(l->commit_hex, sizeof(l->commit_hex), git_commit_id(commit));
        l->time.tv_sec = (time_t)git_commit_committer(commit)->when.time;
        if (asprintf(&l->objects_dir, "%s/objects", git_repository_commondir(repo)) < 0) {
                l->objects_dir = NULL;
                r = -ENOMEM;
                goto out;
        }
        /* commondir ends in '/': "x//objects" is fine for open(), but keep it clean. */
        {
                size_t n = strlen(l->objects_dir);
                char *s = strstr(l->objects_dir, "//objects");
                if (s && (size_t)(s - l->objects_dir) + strlen("//objects") == n)
                        memmove(s, s + 1, strlen(s));
        }
        if (pthread_key_create(&l->thread_key, thread_git_free) != 0) {
                r = -ENOMEM;
                goto out;
        }
        l->key_created = true;
        r = tree_cache_new(tree_budget, &l->trees);
        if (r < 0)
                goto out;
        l->cache_dirfd = fcntl(cache_dirfd, F_DUPFD_CLOEXEC, 3);
        if (l->cache_dirfd < 0) {
                r = negative_errno();
                goto out;
        }
        /* Sizes an earlier mount's index build learned; none (or a file not
         * ours to trust): object headers are read, as before. */
        (void)blob_sizes_open(l->cache_dirfd, &l->sizes);
        r = config_write(l);
        if (r < 0) {
                if (ret_error)
                        *ret_error = strdup("cannot write the blob cache's gitconfig");
                goto out;
        }
        *ret = l;
        l = NULL;
        r = 0;
out:
        git_commit_free(commit);
        git_object_free(obj);
        git_repository_free(repo);
        if (l)
                git_free(l);
        return r;
}
