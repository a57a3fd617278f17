/* SPDX-License-Identifier: MIT */
/*
 * lower-git.c: a git tree at a fixed revision as a read-only lower layer.
 *
 * Nothing is walked at mount: listings read one tree object, sizes come
 * from object headers (git_odb_read_header), and a blob is inflated once,
 * on first open, into a cache file named by its object id; every later
 * read and copy-up is served from that file.
 *
 * libgit2's git_repository is not safe for concurrent use, so each FUSE
 * worker thread opens its own repository handle (a pthread key, freed with
 * the thread) and no lock is taken on the read path.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lower-private.h"
#include "lib/util.h"

struct thread_git {
        git_repository *repo;
        git_odb *odb;
};

static void thread_git_free(void *p)
{
        struct thread_git *t = p;
        if (!t)
                return;
        git_odb_free(t->odb);
        git_repository_free(t->repo);
        free(t);
}

static int git_errno(int r)
{
        if (r == GIT_ENOTFOUND)
                return -ENOENT;
        return -EIO;
}

static struct thread_git *thread_git(struct lower *l)
{
        struct thread_git *t = pthread_getspecific(l->thread_key);
        if (t)
                return t;
        t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        if (git_repository_open_ext(&t->repo, l->source, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0 ||
            git_repository_odb(&t->odb, t->repo) < 0 ||
            pthread_setspecific(l->thread_key, t) != 0) {
                thread_git_free(t);
                return NULL;
        }
        return t;
}

static void fill_from_entry(const git_tree_entry *te, struct lower *l, struct lent *e)
{
        git_filemode_t fm = git_tree_entry_filemode(te);
        e->oid = *git_tree_entry_id(te);
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
        }
}

static int tree_get(struct lower *l, const git_oid *oid, git_tree **ret)
{
        struct thread_git *t = thread_git(l);
        if (!t)
                return -EIO;
        if (git_oid_is_zero(oid))
                return -ENOENT; /* submodule */
        return git_tree_lookup(ret, t->repo, oid) < 0 ? -EIO : 0;
}

static int git_root(struct lower *l, struct lent *ret)
{
        char *p = strdup("");
        if (!p)
                return -ENOMEM;
        *ret = (struct lent){.path = p,
                             .oid = l->tree_oid,
                             .mode = S_IFDIR | 0755,
                             .size = 4096,
                             .size_known = true,
                             .mtime = l->time,
                             .ctime = l->time};
        return 0;
}

static int git_child(struct lower *l, const struct lent *dir, const char *name, struct lent *ret)
{
        git_tree *tree = NULL;
        const git_tree_entry *te;
        struct lent e = {0};
        int r = tree_get(l, &dir->oid, &tree);
        if (r < 0)
                return r;
        te = git_tree_entry_byname(tree, name);
        if (!te) {
                r = -ENOENT;
                goto out;
        }
        fill_from_entry(te, l, &e);
        e.path = lower_path_join(dir->path, name);
        if (!e.path) {
                r = -ENOMEM;
                goto out;
        }
        *ret = e;
        r = 0;
out:
        git_tree_free(tree);
        return r;
}

static int git_lookup_path(struct lower *l, const char *path, struct lent *ret)
{
        git_tree *root = NULL;
        git_tree_entry *te = NULL;
        struct lent e = {0};
        int r;

        if (!*path)
                return git_root(l, ret);
        r = tree_get(l, &l->tree_oid, &root);
        if (r < 0)
                return r;
        r = git_tree_entry_bypath(&te, root, path);
        if (r < 0) {
                r = git_errno(r);
                goto out;
        }
        fill_from_entry(te, l, &e);
        e.path = strdup(path);
        if (!e.path) {
                r = -ENOMEM;
                goto out;
        }
        *ret = e;
        r = 0;
out:
        git_tree_entry_free(te);
        git_tree_free(root);
        return r;
}

static int git_size(struct lower *l, struct lent *e)
{
        struct thread_git *t = thread_git(l);
        size_t len;
        git_object_t type;
        if (!t)
                return -EIO;
        if (git_odb_read_header(&len, &type, t->odb, &e->oid) < 0)
                return -EIO;
        e->size = len;
        e->size_known = true;
        return 0;
}

static int git_list(struct lower *l, const struct lent *dir, lower_list_fn fn, void *userdata)
{
        git_tree *tree = NULL;
        int r = tree_get(l, &dir->oid, &tree);
        if (r == -ENOENT)
                return 0; /* submodule: empty */
        if (r < 0)
                return r;
        for (size_t i = 0, n = git_tree_entrycount(tree); i < n; i++) {
                const git_tree_entry *te = git_tree_entry_byindex(tree, i);
                struct lent e = {0};
                fill_from_entry(te, l, &e);
                r = fn(git_tree_entry_name(te), &e, userdata);
                if (r < 0)
                        break;
                r = 0;
        }
        git_tree_free(tree);
        return r;
}

static int write_all(int fd, const void *buf, size_t len)
{
        const char *p = buf;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Inflate a blob into the cache (tmp file + rename, so a crash leaves no half file). */
static int inflate_blob(struct lower *l, const git_oid *oid, const char *hex)
{
        struct thread_git *t = thread_git(l);
        git_blob *blob = NULL;
        char tmp[GIT_OID_HEXSZ + 32];
        _cleanup_close_ int fd = -1;
        int r;

        if (!t)
                return -EIO;
        if (git_blob_lookup(&blob, t->repo, oid) < 0)
                return -EIO;
        snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", hex, (long)syscall(SYS_gettid));
        fd = openat(l->cache_dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                    0600);
        if (fd < 0) {
                r = negative_errno();
                goto out;
        }
        r = write_all(fd, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
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

static int git_open_data(struct lower *l, const struct lent *e, int *ret_fd)
{
        char hex[GIT_OID_HEXSZ + 1];
        int fd, r;

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

int lower_git_read_blob(struct lower *l, const git_oid *oid, char **ret, size_t *ret_len)
{
        struct thread_git *t = thread_git(l);
        git_blob *blob = NULL;
        char *s = NULL;
        size_t n;
        if (!t)
                return -EIO;
        if (git_blob_lookup(&blob, t->repo, oid) < 0)
                return -EIO;
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

static int git_readlink(struct lower *l, const struct lent *e, char **ret)
{
        struct thread_git *t = thread_git(l);
        git_blob *blob = NULL;
        char *s;
        size_t n;
        if (!t)
                return -EIO;
        if (git_blob_lookup(&blob, t->repo, &e->oid) < 0)
                return -EIO;
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
        safe_close(l->cache_dirfd);
        free(l->source);
        free(l->objects_dir);
        free(l);
}

const struct lower_ops lower_git_ops = {
        .root = git_root,
        .child = git_child,
        .lookup_path = git_lookup_path,
        .size = git_size,
        .list = git_list,
        .open_data = git_open_data,
        .readlink = git_readlink,
        .free = git_free,
};

static int set_error(char **ret_error, const char *what, const char *arg)
{
        const git_error *e = git_error_last();
        if (ret_error && asprintf(ret_error, "%s '%s': %s", what, arg,
                                  e && e->message ? e->message : "failed") < 0)
                *ret_error = NULL;
        return -EINVAL;
}

int lower_git_open(const char *source, const char *rev, int cache_dirfd, struct lower **ret,
                   char **ret_error)
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
        if (git_repository_open_ext(&repo, source, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
                r = set_error(ret_error, "cannot open git repository", source);
                goto out;
        }
        if (git_revparse_single(&obj, repo, rev) < 0) {
                r = set_error(ret_error, "cannot resolve revision", rev);
                goto out;
        }
        if (git_object_peel((git_object **)&commit, obj, GIT_OBJECT_COMMIT) < 0) {
                r = set_error(ret_error, "revision is not a commit", rev);
                goto out;
        }
        l->tree_oid = *git_commit_tree_id(commit);
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
        l->cache_dirfd = fcntl(cache_dirfd, F_DUPFD_CLOEXEC, 3);
        if (l->cache_dirfd < 0) {
                r = negative_errno();
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
