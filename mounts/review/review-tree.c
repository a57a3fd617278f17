/* SPDX-License-Identifier: MIT */
/*
 * review-tree.c: build a git tree from the workspace view.
 *
 * Start from the base tree in an in-memory index and refresh only the paths
 * the fs lists in .cloister/changes (a superset of what differs from the
 * base); everything else keeps the base tree's entries, so unchanged files
 * are neither read nor hashed. The view is the truth: a listed path is
 * re-read as it is now, whatever type the changes file claims, so the result
 * does not depend on the order of the list. Without a changes file the whole
 * view is walked.
 *
 * Never taken into the tree: any `.git` component (the workspace's own
 * repository; git refuses such paths anyway) and excluded paths (read-only
 * mirrors).
 *
 * Nothing the agent puts in the view may stop the review (it would be the
 * agent blocking its own review): a path that cannot be taken (over a size
 * limit, a FIFO, socket or device, unreadable, nested or named past a
 * bound) is left out instead. The tree keeps what the base has there, and
 * the path and why are recorded (review_left_out()) for the caller to say.
 * A file over a size limit is never read: its size is known from lstat,
 * and one that grows while read stops at the limit.
 *
 * As `git add -A` does: a path the base does not track that git's ignore
 * rules match is left out (counted), and an ignored directory is not even
 * walked; tracked paths stay whatever the rules say. Files are stored as git
 * add stores them (eol, ident: review-rules.c). What costs reading is done
 * once: a directory taken whole is not taken again for the paths listed
 * under it, the names of one hard-linked file are read once, and a file the
 * fs lists as a metacopy (metadata changed, data the base's) is not read.
 */
#include <fcntl.h>
#include <git2/sys/odb_backend.h>
#include <jansson.h>
#include <limits.h>
#include <sodium.h>
#include <strings.h>

#include "review-private.h"

/* A file with several names, read once: (device, inode) -> its blob. */
struct link {
        dev_t dev;
        ino_t ino;
        git_oid id;
        bool used;
};

struct builder {
        review *r;
        git_index *idx;
        size_t seen;        /* entries looked at, bounded by REVIEW_MAX_FILES */
        size_t total;       /* for progress: changed paths, 0 when walking everything */
        bool ignores;       /* apply git's ignore rules (not --include-ignored) */
        struct link *links; /* open addressing, cap_links a power of two */
        size_t n_links, cap_links;
        char **done; /* listed dirs taken whole or left out, in the list's (sorted) order */
        size_t n_done, cap_done;
        char *pdir; /* the parent dir path_refresh() last opened, and its fd (or -1) */
        int pdir_fd;
        const char *listed; /* the listed path path_refresh() is taking, or NULL */
        uint64_t max_total; /* REVIEW_MAX_TOTAL_SIZE, or the caller's lower one */
};

static int done_add(struct builder *b, const char *rel)
{
        if (b->n_done == b->cap_done) {
                size_t nc = b->cap_done ? 2 * b->cap_done : 64;
                char **nv = realloc(b->done, nc * sizeof(char *));
                if (!nv)
                        return review_fail(b->r, -ENOMEM, "out of memory");
                b->done = nv;
                b->cap_done = nc;
        }
        if (!(b->done[b->n_done] = strdup(rel)))
                return review_fail(b->r, -ENOMEM, "out of memory");
        b->n_done++;
        return 0;
}

static int str_pcmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Is an ancestor of rel a directory already taken whole or left out? */
static bool done_covers(struct builder *b, const char *rel)
{
        char buf[PATH_MAX];
        size_t len = strlen(rel);

        if (b->n_done == 0 || len >= sizeof(buf))
                return false;
        memcpy(buf, rel, len + 1);
        for (char *s = strchr(buf, '/'); s; s = strchr(s + 1, '/')) {
                char *key = buf;
                *s = 0;
                bool hit = bsearch(&key, b->done, b->n_done, sizeof(char *), str_pcmp) != NULL;
                *s = '/';
                if (hit)
                        return true;
        }
        return false;
}

static struct link *link_slot(struct builder *b, dev_t dev, ino_t ino)
{
        size_t i;

        if (!b->cap_links)
                return NULL;
        for (i = ((uint64_t)ino * 0x9e3779b97f4a7c15ULL) & (b->cap_links - 1); b->links[i].used;
             i = (i + 1) & (b->cap_links - 1))
                if (b->links[i].dev == dev && b->links[i].ino == ino)
                        break;
        return &b->links[i];
}

static int link_add(struct builder *b, dev_t dev, ino_t ino, const git_oid *id)
{
        struct link *l;

        if (2 * (b->n_links + 1) > b->cap_links) {
                size_t nc = b->cap_links ? 2 * b->cap_links : 64;
                struct link *old = b->links, *nl = calloc(nc, sizeof(*nl));
                size_t oc = b->cap_links;
                if (!nl)
                        return review_fail(b->r, -ENOMEM, "out of memory");
                b->links = nl;
                b->cap_links = nc;
                for (size_t i = 0; i < oc; i++)
                        if (old[i].used)
                                *link_slot(b, old[i].dev, old[i].ino) = old[i];
                free(old);
        }
        l = link_slot(b, dev, ino);
        if (!l->used)
                b->n_links++;
        *l = (struct link){.dev = dev, .ino = ino, .id = *id, .used = true};
        return 0;
}

/* What the base has at rel: 0 nothing, else the entry's type. */
static git_object_t base_type(struct builder *b, const char *rel)
{
        git_tree_entry *te = NULL;
        git_object_t t;

        if (git_tree_entry_bypath(&te, b->r->base_tree, rel) < 0) {
                git_error_clear();
                return GIT_OBJECT_INVALID;
        }
        t = git_tree_entry_type(te);
        git_tree_entry_free(te);
        return t;
}

/*
 * Would `git add -A` leave rel out? Only what the base does not track can
 * be ignored (a tracked file stays; a directory the base has is walked).
 */
static int ignored(struct builder *b, const char *rel, bool dir, bool *ret)
{
        git_object_t t;

        *ret = false;
        if (!b->ignores)
                return 0;
        t = base_type(b, rel);
        if (dir ? t == GIT_OBJECT_TREE : (t == GIT_OBJECT_BLOB || t == GIT_OBJECT_COMMIT))
                return 0;
        int k = review_rules_ignored(b->r, rel, dir, ret);
        if (k == 0 && *ret)
                b->r->ignored++;
        return k;
}

static void progress(struct builder *b, bool force)
{
        if (b->r->o.progress && (force || (b->seen & 255) == 0))
                b->r->o.progress("reading", b->seen, b->total, b->r->o.userdata);
}

static bool excluded(review *r, const char *rel)
{
        if (!r->o.exclude)
                return false;
        for (const char *const *e = r->o.exclude; *e; e++) {
                const char *rest = startswith(rel, *e);
                if (rest && (*rest == 0 || *rest == '/'))
                        return true;
        }
        return false;
}

static int index_drop(struct builder *b, const char *rel, bool subtree)
{
        int g = git_index_remove(b->idx, rel, 0);
        if (g < 0 && g != GIT_ENOTFOUND)
                return review_git_fail(b->r, g, "removing '%s' from the tree", rel);
        if (subtree) {
                g = git_index_remove_directory(b->idx, rel, 0);
                if (g < 0 && g != GIT_ENOTFOUND)
                        return review_git_fail(b->r, g, "removing '%s/' from the tree", rel);
        }
        return 0;
}

/*
 * git_odb_write, minus what a miss costs it: before storing, it "freshens"
 * the object in every backend and, not finding it (the usual case for a
 * changed file), re-lists objects/pack/ and tries again, a directory scan
 * per blob. Here a miss goes straight to the in-memory backend (where
 * git_odb_write would put it too); an object the odb has is written through
 * git_odb_write, freshened as before. A pack that appeared meanwhile is not
 * looked for: at worst the object is stored twice.
 */
static int blob_store(review *r, const void *data, size_t len, git_oid *ret_id)
{
        int g = git_odb_hash(ret_id, data, len, GIT_OBJECT_BLOB);

        if (g < 0)
                return g;
        if (git_odb_exists_ext(r->odb, ret_id, GIT_ODB_LOOKUP_NO_REFRESH))
                return git_odb_write(ret_id, r->odb, data, len, GIT_OBJECT_BLOB);
        return r->mempack->write(r->mempack, ret_id, data, len, GIT_OBJECT_BLOB);
}

static int blob_add(struct builder *b, const char *rel, const void *data, size_t len, uint32_t mode,
                    git_oid *ret_id)
{
        git_index_entry e = {.mode = mode, .path = rel, .file_size = (uint32_t)len};
        int g;

        b->r->bytes_read += len;
        g = blob_store(b->r, data, len, &e.id);
        if (g < 0)
                return review_git_fail(b->r, g, "storing '%s'", rel);
        g = git_index_add(b->idx, &e);
        if (g < 0)
                return review_git_fail(b->r, g, "adding '%s' to the tree", rel);
        b->r->files_read++;
        if (ret_id)
                *ret_id = e.id;
        return 0;
}

/* Put a blob we already have (a hard link's, the base's) into the tree at rel. */
static int id_add(struct builder *b, const char *rel, const git_oid *id, uint32_t mode)
{
        git_index_entry e = {.mode = mode, .path = rel, .id = *id};
        int g = git_index_add(b->idx, &e);

        if (g < 0)
                return review_git_fail(b->r, g, "adding '%s' to the tree", rel);
        return 0;
}

struct restore {
        struct builder *b;
        const char *rel;
        int k;
};

static int restore_one(const char *root, const git_tree_entry *te, void *payload)
{
        struct restore *x = payload;
        _cleanup_free_ char *path = NULL;

        if (git_tree_entry_type(te) == GIT_OBJECT_TREE)
                return 0;
        if (asprintf(&path, "%s/%s%s", x->rel, root, git_tree_entry_name(te)) < 0) {
                x->k = review_fail(x->b->r, -ENOMEM, "out of memory");
                return -1;
        }
        x->k = id_add(x->b, path, git_tree_entry_id(te), git_tree_entry_filemode(te));
        return x->k < 0 ? -1 : 0;
}

/* What the base has at rel (a blob, a link, a submodule or a whole tree), back in the tree. */
static int base_restore(struct builder *b, const char *rel)
{
        git_tree_entry *te = NULL;
        git_tree *sub = NULL;
        struct restore x = {.b = b, .rel = rel};
        int g, k = index_drop(b, rel, true);

        if (k < 0)
                return k;
        if (git_tree_entry_bypath(&te, b->r->base_tree, rel) < 0) {
                git_error_clear();
                return 0;
        }
        if (git_tree_entry_type(te) != GIT_OBJECT_TREE) {
                k = id_add(b, rel, git_tree_entry_id(te), git_tree_entry_filemode(te));
                git_tree_entry_free(te);
                return k;
        }
        g = git_tree_lookup(&sub, b->r->repo, git_tree_entry_id(te));
        git_tree_entry_free(te);
        if (g == 0)
                g = git_tree_walk(sub, GIT_TREEWALK_PRE, restore_one, &x);
        git_tree_free(sub);
        if (x.k < 0)
                return x.k;
        if (g < 0)
                return review_git_fail(b->r, g, "the base's '%s'", rel);
        return 0;
}

/*
 * Leave rel out (review.h): the tree keeps the base's rel. A listed path
 * is done: what is listed below it stays the base's too.
 */
static int leave_out(struct builder *b, const char *rel, struct review_left_out l)
{
        int k = review_left_out_add(b->r, rel, &l);

        if (k == 0)
                k = base_restore(b, rel);
        if (k == 0 && b->listed && streq(rel, b->listed))
                k = done_add(b, rel);
        return k;
}

static int leave_out_unreadable(struct builder *b, const char *rel, int error)
{
        if (error == -ENOMEM)
                return review_fail(b->r, error, "out of memory");
        return leave_out(
                b, rel,
                (struct review_left_out){.reason = REVIEW_LEFT_OUT_UNREADABLE, .error = -error});
}

/* Would `len` more bytes of new blobs pass the total's limit? Then rel is left out. */
static int total_check(struct builder *b, const char *rel, uint64_t len, bool *ret_over)
{
        *ret_over = len > b->max_total || b->r->bytes_read > b->max_total - len;
        if (!*ret_over)
                return 0;
        return leave_out(b, rel,
                         (struct review_left_out){.reason = REVIEW_LEFT_OUT_TOTAL,
                                                  .size = len,
                                                  .limit = b->max_total});
}

/* A regular file: its blob as git add makes it, read once per inode. */
static int file_take(struct builder *b, int dirfd, const char *name, const char *rel,
                     const struct stat *st, const char *origin)
{
        uint32_t mode = (st->st_mode & S_IXUSR) ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
        _cleanup_free_ void *data = NULL;
        git_buf clean = GIT_BUF_INIT;
        bool filters = false, converted = false;
        struct link *l;
        git_oid id;
        size_t len = 0;
        bool over = false;
        int k;

        /*
         * A metacopy: the fs says its data is the base's at origin, as checked
         * out there. That is the base's blob when neither checking it out at
         * origin nor checking it in at rel converts anything.
         */
        if (origin) {
                git_tree_entry *te = NULL;
                bool in = true, out = true;
                k = review_rules_has_filters(b->r, rel, &in);
                if (k == 0)
                        k = review_rules_checkout_has_filters(b->r, origin, &out);
                if (k < 0)
                        return k;
                if (!in && !out && git_tree_entry_bypath(&te, b->r->base_tree, origin) == 0) {
                        bool blob = git_tree_entry_type(te) == GIT_OBJECT_BLOB &&
                                    git_tree_entry_filemode(te) != GIT_FILEMODE_LINK;
                        id = *git_tree_entry_id(te);
                        git_tree_entry_free(te);
                        if (blob)
                                return id_add(b, rel, &id, mode);
                }
                git_error_clear();
        }
        if (st->st_nlink > 1) {
                /* Names of one file share its blob, unless attributes convert them. */
                k = review_rules_has_filters(b->r, rel, &filters);
                if (k < 0)
                        return k;
                l = filters ? NULL : link_slot(b, st->st_dev, st->st_ino);
                if (l && l->used)
                        return id_add(b, rel, &l->id, mode);
        }
        /* Over a limit: left out unread, whatever its blocks (a sparse file). */
        if ((uint64_t)st->st_size > REVIEW_MAX_FILE_SIZE)
                return leave_out(b, rel,
                                 (struct review_left_out){.reason = REVIEW_LEFT_OUT_TOO_LARGE,
                                                          .size = (uint64_t)st->st_size,
                                                          .limit = REVIEW_MAX_FILE_SIZE});
        k = total_check(b, rel, (uint64_t)st->st_size, &over);
        if (k < 0 || over)
                return k;
        k = review_upper_read(b->r, rel, st, &data, &len);
        if (k == -EAGAIN)
                k = review_view_read(dirfd, name, &data, &len);
        if (k == -ENOENT)
                return 0; /* gone meanwhile: nothing to take */
        if (k == -EFBIG)  /* grew past the limit while read */
                return leave_out(b, rel,
                                 (struct review_left_out){.reason = REVIEW_LEFT_OUT_TOO_LARGE,
                                                          .limit = REVIEW_MAX_FILE_SIZE});
        if (k < 0) /* e.g. swapped for a FIFO meanwhile, or the daemon's EIO */
                return leave_out_unreadable(b, rel, k);
        /* It may have grown since lstat. */
        k = total_check(b, rel, len, &over);
        if (k < 0 || over)
                return k;
        k = review_rules_clean(b->r, rel, data, len, &clean, &converted);
        if (k == 0)
                k = converted ? blob_add(b, rel, clean.ptr, clean.size, mode, &id)
                              : blob_add(b, rel, data, len, mode, &id);
        git_buf_dispose(&clean);
        if (k == 0 && st->st_nlink > 1 && !filters)
                k = link_add(b, st->st_dev, st->st_ino, &id);
        return k;
}

static int walk(struct builder *b, int dirfd, const char *prefix, unsigned depth);

/*
 * Take `name` in dirfd (already lstat'ed as st) into the tree as `rel`,
 * unless git would leave it out. origin: the fs lists it as a metacopy of
 * that base path (or NULL).
 */
static int entry_take(struct builder *b, int dirfd, const char *name, const char *rel,
                      const struct stat *st, unsigned depth, const char *origin)
{
        bool skip = false, over = false;
        int k;

        /* What the rules leave out is not taken, nor said to be left out (as git add -A). */
        k = ignored(b, rel, S_ISDIR(st->st_mode), &skip);
        if (k < 0)
                return k;
        if (skip)
                return 0;
        if (S_ISREG(st->st_mode))
                return file_take(b, dirfd, name, rel, st, origin);
        if (S_ISLNK(st->st_mode)) {
                _cleanup_free_ char *target = NULL;
                k = review_view_readlink(dirfd, name, &target);
                if (k == -ENOENT)
                        return 0;
                if (k < 0)
                        return leave_out_unreadable(b, rel, k);
                k = total_check(b, rel, strlen(target), &over);
                if (k < 0 || over)
                        return k;
                return blob_add(b, rel, target, strlen(target), GIT_FILEMODE_LINK, NULL);
        }
        if (S_ISDIR(st->st_mode)) {
                _cleanup_close_ int fd = -1;
                if (depth + 1 > REVIEW_MAX_DEPTH)
                        return leave_out(
                                b, rel,
                                (struct review_left_out){.reason = REVIEW_LEFT_OUT_TOO_DEEP});
                fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 && errno == ENOENT)
                        return 0;
                if (fd < 0)
                        return leave_out_unreadable(b, rel, negative_errno());
                return walk(b, fd, rel, depth + 1);
        }
        /* Git cannot hold it: said, so that its absence is not taken for a deletion. */
        return leave_out(b, rel,
                         (struct review_left_out){.reason = REVIEW_LEFT_OUT_SPECIAL,
                                                  .kind = S_ISFIFO(st->st_mode)   ? 'p'
                                                          : S_ISSOCK(st->st_mode) ? 's'
                                                          : S_ISBLK(st->st_mode)  ? 'b'
                                                                                  : 'c'});
}

static int walk(struct builder *b, int dirfd, const char *prefix, unsigned depth)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd;

        if (depth > REVIEW_MAX_DEPTH)
                return review_fail(b->r, -ELOOP, "'%s' is nested deeper than %u directories",
                                   prefix, REVIEW_MAX_DEPTH);
        fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return review_fail(b->r, negative_errno(), "opening '%s': %m",
                                   *prefix ? prefix : ".");
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return review_fail(b->r, negative_errno(), "listing '%s': %m", prefix);
        }
        while ((errno = 0, de = readdir(d))) {
                _cleanup_free_ char *rel = NULL;
                struct stat st;
                int k;

                if (streq(de->d_name, ".") || streq(de->d_name, "..") ||
                    strcasecmp(de->d_name, ".git") == 0)
                        continue;
                if (asprintf(&rel, "%s%s%s", prefix, *prefix ? "/" : "", de->d_name) < 0)
                        return review_fail(b->r, -ENOMEM, "out of memory");
                if (excluded(b->r, rel))
                        continue;
                if (++b->seen > REVIEW_MAX_FILES)
                        return review_fail(b->r, -EMFILE, "more than %u entries in the workspace",
                                           REVIEW_MAX_FILES);
                progress(b, false);
                /* Git cannot hold it (nor can the base have it): said, not taken. */
                if (strlen(rel) >= PATH_MAX)
                        k = review_left_out_add(
                                b->r, rel,
                                &(struct review_left_out){.reason = REVIEW_LEFT_OUT_TOO_LONG});
                else if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        k = errno == ENOENT ? 0 : leave_out_unreadable(b, rel, negative_errno());
                else
                        k = entry_take(b, dirfd, de->d_name, rel, &st, depth, NULL);
                if (k < 0)
                        return k;
        }
        if (errno)
                return review_fail(b->r, negative_errno(), "listing '%s': %m", prefix);
        return 0;
}

/*
 * The view's dir holding rel (the fd is the builder's), and rel's last
 * component. The list is sorted, so most paths share the last one's
 * parent: opening it again cost an openat2 and a close on the mount per
 * file. A dir renamed meanwhile is read where it went, as an open dir
 * would be; it is still beneath the view.
 */
static int parent_open(struct builder *b, const char *rel, int *ret_fd, const char **ret_base)
{
        const char *slash = strrchr(rel, '/');
        size_t dlen = slash ? (size_t)(slash - rel) : 0;
        int fd = -1, k;

        if (b->pdir_fd >= 0 && strlen(b->pdir) == dlen && memcmp(b->pdir, rel, dlen) == 0) {
                *ret_fd = b->pdir_fd;
                *ret_base = slash ? slash + 1 : rel;
                return 0;
        }
        b->pdir_fd = safe_close(b->pdir_fd);
        free(b->pdir);
        b->pdir = strndup(rel, dlen);
        if (!b->pdir)
                return -ENOMEM;
        k = review_view_parent(b->r->viewfd, rel, &fd, ret_base);
        if (k < 0)
                return k;
        *ret_fd = b->pdir_fd = fd;
        return 0;
}

/* Bring one listed path in line with the view. */
static int path_refresh(struct builder *b, const struct review_change *c)
{
        const char *rel = c->path;
        bool opaque = c->opaque;
        const char *base;
        struct stat st;
        int pfd = -1, k;

        k = parent_open(b, rel, &pfd, &base);
        if (k == 0 && fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
                k = negative_errno();
        if (k == -ENOENT || k == -ENOTDIR || k == -ELOOP || k == -EXDEV)
                return index_drop(b, rel, true); /* gone, or under something not a dir now */
        if (k < 0) {
                b->listed = rel;
                k = leave_out_unreadable(b, rel, k);
                b->listed = NULL;
                return k;
        }
        if (S_ISDIR(st.st_mode)) {
                git_tree_entry *te = NULL;
                bool walk_all = opaque;
                k = index_drop(b, rel, opaque);
                if (k < 0)
                        return k;
                /* A directory new in the upper layer: all of it is new, so take it all. */
                if (git_tree_entry_bypath(&te, b->r->base_tree, rel) < 0 ||
                    git_tree_entry_type(te) != GIT_OBJECT_TREE)
                        walk_all = true;
                git_tree_entry_free(te);
                if (!walk_all)
                        return 0;
                /* Taken whole (or left out whole): what is listed below it is done. */
                k = done_add(b, rel);
                return k < 0 ? k : entry_take(b, pfd, base, rel, &st, 0, NULL);
        }
        k = index_drop(b, rel, true);
        if (k < 0)
                return k;
        b->listed = rel;
        k = entry_take(b, pfd, base, rel, &st, 0,
                       c->metacopy && S_ISREG(st.st_mode) ? c->origin : NULL);
        b->listed = NULL;
        return k;
}

static int change_cmp(const void *a, const void *b)
{
        return strcmp(((const struct review_change *)a)->path,
                      ((const struct review_change *)b)->path);
}

static void json_decrefp_(json_t **o)
{
        json_decref(*o);
}

void review_changes_free(struct review_change *c, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(c[i].path);
                free(c[i].origin);
        }
        free(c);
}

int review_home_path_add(review *r, const char *p)
{
        if (r->n_home_paths == r->cap_home_paths) {
                size_t nc = r->cap_home_paths ? 2 * r->cap_home_paths : 64;
                char **np = realloc(r->home_paths, nc * sizeof(char *));
                if (!np)
                        return -ENOMEM;
                r->home_paths = np;
                r->cap_home_paths = nc;
        }
        if (!(r->home_paths[r->n_home_paths] = strdup(p)))
                return -ENOMEM;
        r->n_home_paths++;
        return 0;
}

/*
 * A change record's path. A name that is not UTF-8 cannot be a JSON string:
 * like the journal, the record then carries its bytes in "path_hex" (and a
 * lossy "path"), and the exact bytes are what must be looked at. *buf holds
 * the decoded copy.
 */
static const char *change_name(json_t *o, const char *key, char **buf)
{
        char hkey[32];
        const char *hex;
        size_t hl, len = 0;
        char *nb;

        snprintf(hkey, sizeof(hkey), "%s_hex", key);
        hex = json_string_value(json_object_get(o, hkey));
        if (!hex)
                return json_string_value(json_object_get(o, key));
        hl = strlen(hex);
        if (hl % 2 != 0 || !(nb = realloc(*buf, hl / 2 + 1)))
                return NULL;
        *buf = nb;
        if (sodium_hex2bin((unsigned char *)nb, hl / 2, hex, hl, NULL, &len, NULL) != 0 ||
            len != hl / 2 || memchr(nb, 0, len))
                return NULL;
        nb[len] = 0;
        return nb;
}

/*
 * Parse the fs's changes file: repo paths (relative, sorted) with their
 * opaque flag, and hidden-home paths kept in r. A line naming the repo root
 * itself as opaque yields the path "" (walk everything).
 */
int review_changes_load(review *r, struct review_change **ret, size_t *ret_n)
{
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL, *exact = NULL, *exact_origin = NULL;
        struct review_change *c = NULL;
        size_t n = 0, cap = 0, lcap = 0, lineno = 0;
        int fd, k = 0;
        ssize_t len;

        /* Loaded afresh each time: the view may have changed (discard). */
        for (size_t i = 0; i < r->n_home_paths; i++)
                free(r->home_paths[i]);
        r->n_home_paths = 0;
        fd = open(r->o.changes, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return review_fail(r, negative_errno(), "'%s': %m", r->o.changes);
        f = fdopen(fd, "re");
        if (!f) {
                safe_close(fd);
                return review_fail(r, -ENOMEM, "out of memory");
        }
        while ((len = getline(&line, &lcap, f)) >= 0) {
                _cleanup_(json_decrefp_) json_t *o = NULL;
                const char *p, *rest;
                bool opaque;

                lineno++;
                if (len > REVIEW_MAX_CHANGES_LINE) {
                        k = review_fail(r, -EBADMSG, "%s:%zu: line longer than %u bytes",
                                        r->o.changes, lineno, REVIEW_MAX_CHANGES_LINE);
                        goto out;
                }
                if (len <= 1)
                        continue;
                o = json_loadb(line, (size_t)len, 0, NULL);
                p = change_name(o, "path", &exact);
                if (!p) {
                        k = review_fail(r, -EBADMSG, "%s:%zu: not a change record", r->o.changes,
                                        lineno);
                        goto out;
                }
                opaque = json_is_true(json_object_get(o, "opaque"));
                if (r->o.home_prefix && (rest = startswith(p, r->o.home_prefix)) &&
                    (*rest == '/' || *rest == 0)) {
                        if (review_home_path_add(r, p) < 0) {
                                k = review_fail(r, -ENOMEM, "out of memory");
                                goto out;
                        }
                        continue;
                }
                rest = startswith(p, r->o.repo_prefix ? r->o.repo_prefix : "/workspace");
                if (!rest || (*rest != '/' && *rest != 0))
                        continue; /* a mirror or another part of the view */
                if (*rest == 0 && !opaque)
                        continue;
                if (*rest == '/')
                        rest++;
                if (*rest && !review_path_ok(rest))
                        continue; /* .git and what git cannot hold */
                if (n + 1 > REVIEW_MAX_FILES) {
                        k = review_fail(r, -EMFILE, "%s: more than %u changes", r->o.changes,
                                        REVIEW_MAX_FILES);
                        goto out;
                }
                if (n == cap) {
                        size_t nc = cap ? 2 * cap : 256;
                        struct review_change *nv = realloc(c, nc * sizeof(*c));
                        if (!nv) {
                                k = review_fail(r, -ENOMEM, "out of memory");
                                goto out;
                        }
                        c = nv;
                        cap = nc;
                }
                c[n] = (struct review_change){.path = strdup(rest), .opaque = opaque};
                if (!c[n].path) {
                        k = review_fail(r, -ENOMEM, "out of memory");
                        goto out;
                }
                /* A metacopy: its data is the base's at "origin" (repo-relative). */
                if (json_is_true(json_object_get(o, "metacopy"))) {
                        const char *origin = change_name(o, "origin", &exact_origin);
                        if (origin && *origin && review_path_ok(origin)) {
                                c[n].metacopy = true;
                                c[n].origin = strdup(origin);
                                if (!c[n].origin) {
                                        free(c[n].path);
                                        k = review_fail(r, -ENOMEM, "out of memory");
                                        goto out;
                                }
                        }
                }
                n++;
        }
        if (ferror(f))
                k = review_fail(r, -EIO, "reading '%s'", r->o.changes);
out:
        if (k < 0) {
                review_changes_free(c, n);
                return k;
        }
        if (n > 1)
                qsort(c, n, sizeof(*c), change_cmp);
        *ret = c;
        *ret_n = n;
        return 0;
}

int review_build(review *r)
{
        struct builder b = {
                .r = r,
                .ignores = !r->o.include_ignored,
                .pdir_fd = -1,
                .max_total = r->o.max_total_size && r->o.max_total_size < REVIEW_MAX_TOTAL_SIZE
                                     ? r->o.max_total_size
                                     : REVIEW_MAX_TOTAL_SIZE,
        };
        struct review_change *c = NULL;
        size_t n = 0;
        bool walk_all = !r->o.changes;
        int g, k = 0;

        if (r->built)
                return 0;
        /*
         * Before the changes list: pages written through a mapping go to the
         * daemon (started, not waited for: see review_view_settle()).
         */
        k = review_view_settle(r);
        if (k < 0)
                return k;
        g = git_index_new(&b.idx);
        if (g < 0)
                return review_git_fail(r, g, "in-memory index");
        if (r->o.changes) {
                k = review_changes_load(r, &c, &n);
                r->changes_read = k == 0;
                if (k < 0) {
                        /*
                         * The list is only a shortcut. If it cannot be had
                         * (e.g. the fs cannot put a name in JSON), walking
                         * everything gives the same tree, only slower.
                         */
                        snprintf(r->warning, sizeof(r->warning),
                                 "the changes list could not be read (%s); read the whole "
                                 "workspace instead",
                                 review_error(r));
                        k = 0;
                        walk_all = true;
                }
                for (size_t i = 0; i < n; i++)
                        if (c[i].path[0] == 0)
                                walk_all = true;
        }
        if (walk_all) {
                k = walk(&b, r->viewfd, "", 0);
        } else {
                g = git_index_read_tree(b.idx, r->base_tree);
                if (g < 0) {
                        k = review_git_fail(r, g, "reading the base tree");
                        goto out;
                }
                b.total = n;
                for (size_t i = 0; i < n && k >= 0; i++) {
                        if (excluded(r, c[i].path) || done_covers(&b, c[i].path))
                                continue;
                        b.seen = i + 1;
                        progress(&b, false);
                        k = path_refresh(&b, &c[i]);
                }
        }
        if (k < 0)
                goto out;
        progress(&b, true);
        g = git_index_write_tree_to(&r->tree, b.idx, r->repo);
        if (g < 0) {
                k = review_git_fail(r, g, "writing the workspace tree");
                goto out;
        }
        r->built = true;
out:
        review_changes_free(c, n);
        git_index_free(b.idx);
        for (size_t i = 0; i < b.n_done; i++)
                free(b.done[i]);
        free(b.done);
        free(b.links);
        free(b.pdir);
        safe_close(b.pdir_fd);
        return k;
}
