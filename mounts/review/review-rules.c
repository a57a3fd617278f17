/* SPDX-License-Identifier: MIT */
/*
 * review-rules.c: git's ignore rules and attributes for the review, as
 * `git add -A` in the workspace applies them, matched and applied by
 * libgit2 (git_ignore_path_is_ignored, git_filter_list_*), never by us.
 *
 * Trust boundary: the rule files are the agent's (.gitignore and
 * .gitattributes at every level of the view, .git/info/exclude). libgit2
 * reads rule files by path and follows symlinks, so it never sees the view:
 * each file is copied, when the review first needs its directory, from the
 * view (beneath the view's fd, no symlinks, regular files only, bounded in
 * size) into a private scratch tree that libgit2 takes for the work tree.
 * The repository libgit2 works in is made here: the source's objects, the
 * base tree as its index (attributes of files the agent did not touch, and
 * git's "CR in the index" rule for text=auto), and a config that sets
 * core.excludesFile to the copy of the agent's info/exclude and
 * core.attributesFile to an empty file. So no host file is read, neither a
 * core.excludesFile nor anything a config the agent wrote names; filters
 * that run programs (filter=, LFS) do not exist in libgit2 and never run.
 *
 * A second repository without a work tree gives the base revision's own
 * attributes, for writing files back as a fresh checkout would (discard).
 */
#include <fcntl.h>
#include <ftw.h>
#include <git2/sys/repository.h>
#include <limits.h>

#include "review-private.h"
#include "lib/quote.h"

struct review_rules {
        char *dir; /* the scratch directory: wt/, exclude, empty, config */
        char *wt;  /* dir/wt: libgit2's work tree, copies of the rule files */
        int wtfd;
        git_repository *repo; /* work tree = wt: ignores and check-in attributes */
        git_repository *base; /* no work tree: the base revision's attributes (made lazily) */
        git_index *index;     /* the base tree, shared by both */
        char *config;         /* path of our config */
        char **loaded;        /* directories whose rule files are in wt (hash set) */
        size_t n_loaded, cap_loaded;
        bool negations;  /* an ignore file has a '!' line (see review_rules_uncertain) */
        bool attributes; /* a .gitattributes is in wt or in the base tree (see no_attributes) */
};

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        remove(p);
        return 0;
}

void review_rules_free(struct review_rules *s)
{
        if (!s)
                return;
        git_repository_free(s->repo);
        git_repository_free(s->base);
        git_index_free(s->index);
        free(s->config);
        safe_close(s->wtfd);
        if (s->dir)
                nftw(s->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        for (size_t i = 0; i < s->cap_loaded; i++)
                free(s->loaded[i]);
        free(s->loaded);
        free(s->wt);
        free(s->dir);
        free(s);
}

static uint64_t str_hash(const char *s)
{
        uint64_t h = 0xcbf29ce484222325ULL;
        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
        return h;
}

/* Add dir to the set; 1 if it was new, 0 if already there, < 0 on error. */
static int loaded_add(struct review_rules *s, const char *dir)
{
        size_t i;

        if (2 * (s->n_loaded + 1) > s->cap_loaded) {
                size_t nc = s->cap_loaded ? 2 * s->cap_loaded : 256;
                char **nv = calloc(nc, sizeof(char *));
                if (!nv)
                        return -ENOMEM;
                for (size_t k = 0; k < s->cap_loaded; k++) {
                        if (!s->loaded[k])
                                continue;
                        for (i = str_hash(s->loaded[k]) & (nc - 1); nv[i]; i = (i + 1) & (nc - 1))
                                ;
                        nv[i] = s->loaded[k];
                }
                free(s->loaded);
                s->loaded = nv;
                s->cap_loaded = nc;
        }
        for (i = str_hash(dir) & (s->cap_loaded - 1); s->loaded[i];
             i = (i + 1) & (s->cap_loaded - 1))
                if (streq(s->loaded[i], dir))
                        return 0;
        if (!(s->loaded[i] = strdup(dir)))
                return -ENOMEM;
        s->n_loaded++;
        return 1;
}

/* Is there a rule file `name` in vdir to copy (rule_file_copy() looks again)? */
static bool rule_file_present(int vdir, const char *name)
{
        struct stat st;

        return fstatat(vdir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/*
 * A rule file the review cannot read is not applied, as if it were absent
 * (a warning says so), rather than stopping the review: an agent that can
 * write it can as well empty it, so skipping it gives the agent nothing,
 * and its paths show up in the review rather than out of it.
 */
static int rule_file_skip(review *r, const char *rel, const char *name, const char *why)
{
        _cleanup_free_ char *msg = NULL, *q = NULL;

        if (asprintf(&msg, "'%s%s%s' %s; its %s were not applied", rel, *rel ? "/" : "", name, why,
                     streq(name, ".gitattributes") ? "attributes" : "ignore rules") < 0)
                return review_fail(r, -ENOMEM, "out of memory");
        /* The agent's name, printed by the program: one line, nothing for the terminal. */
        q = quote_dup(msg, QUOTE_UTF8 | QUOTE_BARE);
        if (!q)
                return review_fail(r, -ENOMEM, "out of memory");
        if (!r->warning[0])
                snprintf(r->warning, sizeof(r->warning), "%s", q);
        return 0;
}

/* Copy the agent's file `name` in vdir (if a regular file) to `name` in sdir. */
static int rule_file_copy(review *r, int vdir, int sdir, const char *rel, const char *name)
{
        _cleanup_free_ void *data = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;
        size_t len = 0;
        int k;

        /* lstat first: a symlinked rule file is not followed, as git >= 2.32 does. */
        if (fstatat(vdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                return 0;
        if ((uint64_t)st.st_size > REVIEW_MAX_RULES_SIZE)
                k = -EFBIG;
        else
                k = review_view_read(vdir, name, &data, &len);
        if (k == -ENOENT || k == -ELOOP || k == -EINVAL)
                return 0; /* gone, or swapped for a symlink or something else meanwhile */
        if (k == 0 && len > REVIEW_MAX_RULES_SIZE)
                k = -EFBIG;
        if (k == -ENOMEM)
                return review_fail(r, k, "out of memory");
        if (k == -EFBIG)
                return rule_file_skip(r, rel, name, "is larger than 4 MiB");
        if (k < 0)
                return rule_file_skip(r, rel, name, strerror(-k));
        /* Only looked at, never interpreted: see review_rules_uncertain(). */
        if (!streq(name, ".gitattributes")) {
                const char *d = data;
                for (size_t i = 0; i < len; i++)
                        if (d[i] == '!' && (i == 0 || d[i - 1] == '\n'))
                                r->rules->negations = true;
        }
        fd = openat(sdir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return review_fail(r, negative_errno(), "scratch copy of '%s': %m", name);
        if (streq(name, ".gitattributes"))
                r->rules->attributes = true;
        for (size_t off = 0; off < len;) {
                ssize_t w = write(fd, (const char *)data + off, len - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return review_fail(r, negative_errno(), "scratch copy of '%s': %m", name);
                off += (size_t)w;
        }
        return 0;
}

/* Open rel ("" = the root) in the view as a directory, no symlinks; -ENOENT etc. if not one. */
static int view_dir_open(review *r, const char *rel, int *ret)
{
        _cleanup_free_ char *probe = NULL;
        const char *base;
        int pfd = -1, k;

        if (!*rel) {
                pfd = openat(r->viewfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (pfd < 0)
                        return negative_errno();
                *ret = pfd;
                return 0;
        }
        if (asprintf(&probe, "%s/x", rel) < 0)
                return -ENOMEM;
        k = review_view_parent(r->viewfd, probe, &pfd, &base);
        if (k < 0)
                return k;
        *ret = pfd;
        return 0;
}

/* Make the scratch copy of directory rel ("" = the root): rel's components, mkdir'd. */
static int scratch_dir_open(struct review_rules *s, const char *rel, int *ret)
{
        _cleanup_close_ int cur = openat(s->wtfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        const char *p = rel;

        if (cur < 0)
                return negative_errno();
        while (*p) {
                const char *e = strchrnul(p, '/');
                char comp[NAME_MAX + 1];
                int next;

                if ((size_t)(e - p) > NAME_MAX || e == p)
                        return -EINVAL;
                memcpy(comp, p, (size_t)(e - p));
                comp[e - p] = 0;
                if (mkdirat(cur, comp, 0700) < 0 && errno != EEXIST)
                        return negative_errno();
                next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return negative_errno();
                safe_close(cur);
                cur = next;
                p = *e ? e + 1 : e;
        }
        *ret = TAKE_FD(cur);
        return 0;
}

/* The rule files of directory rel, copied once. */
static int dir_load(review *r, const char *rel)
{
        struct review_rules *s = r->rules;
        _cleanup_close_ int vdir = -1, sdir = -1;
        int k;

        k = loaded_add(s, rel);
        if (k <= 0)
                return k < 0 ? review_fail(r, k, "out of memory") : 0;
        k = view_dir_open(r, rel, &vdir);
        if (k < 0)
                return 0; /* not a directory of the view (gone, a symlink): no rules there */
        /*
         * A directory with no rule file needs no copy: libgit2 takes a missing
         * one for an empty one. Most have none, and a mkdir on ext4 costs
         * ~80 us (600 of them were 10% of a diff over 10,000 files).
         */
        if ((r->o.include_ignored || !rule_file_present(vdir, ".gitignore")) &&
            !rule_file_present(vdir, ".gitattributes"))
                return 0;
        k = scratch_dir_open(s, rel, &sdir);
        if (k < 0)
                return review_fail(r, k, "scratch copy of '%s': %s", rel, strerror(-k));
        /* --include-ignored needs no ignore rule: none is read. */
        k = r->o.include_ignored ? 0 : rule_file_copy(r, vdir, sdir, rel, ".gitignore");
        if (k == 0)
                k = rule_file_copy(r, vdir, sdir, rel, ".gitattributes");
        return k;
}

/* Every directory from the root down to rel's parent has its rule files in place. */
static int path_load(review *r, const char *rel)
{
        _cleanup_free_ char *dir = strdup(rel);
        char *slash;
        int k;

        if (!dir)
                return review_fail(r, -ENOMEM, "out of memory");
        k = dir_load(r, "");
        for (char *p = dir; k == 0 && (slash = strchr(p, '/')); p = slash + 1) {
                *slash = 0;
                k = dir_load(r, dir);
                *slash = '/';
        }
        return k;
}

static int config_file_write(review *r, const char *path, const char *text)
{
        _cleanup_close_ int fd =
                open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        size_t len = strlen(text);

        if (fd < 0 || write(fd, text, len) != (ssize_t)len)
                return review_fail(r, negative_errno(), "'%s': %m", path);
        return 0;
}

/* A repository of our own: the source's objects, the base as index, only our config. */
static int repo_make(review *r, const char *config, const char *workdir, git_repository **ret)
{
        struct review_rules *s = r->rules;
        git_repository *repo = NULL;
        git_config *cfg = NULL;
        int g = 0;

        if (!s->index) {
                g = git_index_new(&s->index);
                if (g == 0)
                        g = git_index_read_tree(s->index, r->base_tree);
                if (g < 0)
                        return review_git_fail(r, g, "reading the base tree");
                for (size_t i = 0, n = git_index_entrycount(s->index); i < n; i++) {
                        const char *p = git_index_get_byindex(s->index, i)->path;
                        const char *slash = strrchr(p, '/');
                        if (streq(slash ? slash + 1 : p, ".gitattributes"))
                                s->attributes = true;
                }
        }
        g = git_repository_new(&repo);
        if (g == 0)
                g = git_repository_set_odb(repo, r->odb);
        if (g == 0)
                g = git_config_new(&cfg);
        if (g == 0)
                g = git_config_add_file_ondisk(cfg, config, GIT_CONFIG_LEVEL_LOCAL, NULL, 0);
        if (g == 0)
                g = git_repository_set_config(repo, cfg);
        if (g == 0)
                g = git_repository_set_index(repo, s->index);
        if (g == 0 && workdir)
                g = git_repository_set_workdir(repo, workdir, 0);
        git_config_free(cfg);
        if (g < 0) {
                git_repository_free(repo);
                return review_git_fail(r, g, "setting up the ignore rules");
        }
        *ret = repo;
        return 0;
}

/* The agent's .git/info/exclude, copied (regular file, bounded), or nothing. */
static int exclude_copy(review *r, const char *dest)
{
        _cleanup_close_ int git = -1, info = -1, out = -1;

        git = openat(r->viewfd, ".git", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (git >= 0)
                info = openat(git, "info", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        out = openat(AT_FDCWD, dest, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (out < 0)
                return review_fail(r, negative_errno(), "'%s': %m", dest);
        if (info < 0)
                return 0;
        return rule_file_copy(r, info, out, ".git/info", "exclude");
}

static int rules_open(review *r)
{
        struct review_rules *s;
        const char *tmp = secure_getenv("TMPDIR");
        _cleanup_free_ char *config = NULL, *text = NULL, *empty = NULL, *excl = NULL, *bare = NULL;
        int k;

        if (r->rules)
                return 0;
        s = r->rules = calloc(1, sizeof(*s));
        if (!s)
                return review_fail(r, -ENOMEM, "out of memory");
        s->wtfd = -1;
        if (asprintf(&s->dir, "%s/cloister-rules-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp") < 0) {
                s->dir = NULL;
                return review_fail(r, -ENOMEM, "out of memory");
        }
        if (!mkdtemp(s->dir)) {
                k = review_fail(r, negative_errno(), "scratch directory: %m");
                free(s->dir);
                s->dir = NULL;
                return k;
        }
        if (asprintf(&s->wt, "%s/wt/", s->dir) < 0 || asprintf(&config, "%s/config", s->dir) < 0 ||
            asprintf(&bare, "%s/config-base", s->dir) < 0 ||
            asprintf(&empty, "%s/empty", s->dir) < 0 || asprintf(&excl, "%s/x", s->dir) < 0)
                return review_fail(r, -ENOMEM, "out of memory");
        if (mkdir(s->wt, 0700) < 0 || mkdir(excl, 0700) < 0)
                return review_fail(r, negative_errno(), "scratch directory: %m");
        s->wtfd = open(s->wt, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (s->wtfd < 0)
                return review_fail(r, negative_errno(), "'%s': %m", s->wt);
        k = config_file_write(r, empty, "");
        if (k == 0 && !r->o.include_ignored)
                k = exclude_copy(r, excl);
        if (k < 0)
                return k;
        /*
         * As a fresh checkout on Linux with no user config: LF line ends but
         * where the attributes say otherwise; the agent's info/exclude as the
         * one global excludes file (same precedence: below every .gitignore).
         */
        if (asprintf(&text,
                     "[core]\n\tautocrlf = false\n\teol = lf\n\tsafecrlf = false\n"
                     "\tignorecase = false\n\tattributesFile = %s\n\texcludesFile = %s/exclude\n",
                     empty, excl) < 0)
                return review_fail(r, -ENOMEM, "out of memory");
        k = config_file_write(r, config, text);
        if (k == 0)
                k = repo_make(r, config, s->wt, &s->repo);
        if (k == 0)
                s->config = TAKE_PTR(config);
        return k;
}

/* The repository without a work tree: made on first use (discard, metacopies). */
static int base_repo(review *r, git_repository **ret)
{
        struct review_rules *s;
        int k = rules_open(r);

        if (k < 0)
                return k;
        s = r->rules;
        if (!s->base) {
                k = repo_make(r, s->config, NULL, &s->base);
                if (k < 0)
                        return k;
        }
        *ret = s->base;
        return 0;
}

int review_rules_ignored(review *r, const char *rel, bool dir, bool *ret)
{
        _cleanup_free_ char *p = NULL;
        int g, k, ignored = 0;

        k = rules_open(r);
        if (k == 0)
                k = path_load(r, rel);
        if (k < 0)
                return k;
        if (dir && asprintf(&p, "%s/", rel) < 0)
                return review_fail(r, -ENOMEM, "out of memory");
        g = git_ignore_path_is_ignored(&ignored, r->rules->repo, p ? p : rel);
        if (g < 0) {
                /* A path libgit2 cannot take (too long for it): keep it, hide nothing. */
                git_error_clear();
                ignored = 0;
        }
        *ret = ignored == 1;
        return 0;
}

/*
 * libgit2 (1.5, and still 1.9: libgit2 issue #7284) keeps a negation ("!x")
 * only if it undoes a rule of the same file, where git undoes any rule of a
 * lower-priority file too (a parent's .gitignore, info/exclude). With a
 * negation in play, git may take a path that libgit2 calls ignored.
 */
bool review_rules_uncertain(const review *r)
{
        return r->rules && r->rules->negations;
}

/*
 * Check-in attributes come from the .gitattributes files in wt (copies of
 * the agent's, of every directory path_load() has seen), the base tree's
 * (the index), and core.attributesFile (our empty file); the system's are
 * skipped and our repository has no info/attributes. With none of them
 * there, no attribute is set, and with core.autocrlf false no check-in
 * filter applies (crlf and ident act only on attributes): libgit2's answer
 * is known without its lookups, which stat and realpath every component of
 * the path, for each of its two filters.
 */
static bool no_attributes(const review *r)
{
        return !r->rules->attributes;
}

int review_rules_base_index(review *r, git_index **ret)
{
        int k = rules_open(r); /* reads the base tree into s->index */

        if (k < 0)
                return k;
        *ret = r->rules->index;
        return 0;
}

/* Load the filters for rel in direction mode; *ret NULL when none applies. */
static int filters_load(review *r, git_repository *repo, const char *rel, git_filter_mode_t mode,
                        uint32_t flags, git_filter_list **ret)
{
        git_filter_options fo = GIT_FILTER_OPTIONS_INIT;
        int g;

        fo.flags = GIT_FILTER_NO_SYSTEM_ATTRIBUTES | flags;
        fo.attr_commit_id = *git_commit_id(r->base);
        g = git_filter_list_load_ext(ret, repo, NULL, rel, mode, &fo);
        if (g < 0)
                return review_git_fail(r, g, "attributes of '%s'", rel);
        return 0;
}

int review_rules_has_filters(review *r, const char *rel, bool *ret)
{
        git_filter_list *fl = NULL;
        int k;

        k = rules_open(r);
        if (k == 0)
                k = path_load(r, rel);
        if (k == 0 && !no_attributes(r))
                k = filters_load(r, r->rules->repo, rel, GIT_FILTER_TO_ODB, 0, &fl);
        if (k < 0)
                return k;
        *ret = fl != NULL;
        git_filter_list_free(fl);
        return 0;
}

int review_rules_checkout_has_filters(review *r, const char *rel, bool *ret)
{
        git_repository *base = NULL;
        git_filter_list *fl = NULL;
        int k;

        k = base_repo(r, &base);
        if (k == 0)
                k = filters_load(r, base, rel, GIT_FILTER_TO_WORKTREE,
                                 GIT_FILTER_ATTRIBUTES_FROM_COMMIT, &fl);
        if (k < 0)
                return k;
        *ret = fl != NULL;
        git_filter_list_free(fl);
        return 0;
}

int review_rules_clean(review *r, const char *rel, const void *data, size_t len, git_buf *out,
                       bool *ret_converted)
{
        git_filter_list *fl = NULL;
        int g, k;

        *ret_converted = false;
        k = rules_open(r);
        if (k == 0)
                k = path_load(r, rel);
        if (k == 0 && !no_attributes(r))
                k = filters_load(r, r->rules->repo, rel, GIT_FILTER_TO_ODB, 0, &fl);
        if (k < 0 || !fl)
                return k;
        g = git_filter_list_apply_to_buffer(out, fl, data, len);
        git_filter_list_free(fl);
        if (g < 0)
                return review_git_fail(r, g, "converting '%s' as git add does", rel);
        *ret_converted = true;
        return 0;
}

int review_rules_smudge(review *r, const char *rel, git_blob *blob, git_buf *out)
{
        git_repository *base = NULL;
        git_filter_list *fl = NULL;
        int g, k;

        k = base_repo(r, &base);
        if (k == 0)
                k = filters_load(r, base, rel, GIT_FILTER_TO_WORKTREE,
                                 GIT_FILTER_ATTRIBUTES_FROM_COMMIT, &fl);
        if (k < 0)
                return k;
        if (fl)
                g = git_filter_list_apply_to_blob(out, fl, blob);
        else
                g = git_buf_set(out, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
        git_filter_list_free(fl);
        if (g < 0)
                return review_git_fail(r, g, "checking '%s' out", rel);
        return 0;
}
