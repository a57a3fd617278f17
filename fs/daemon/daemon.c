/* SPDX-License-Identifier: MIT */
/*
 * daemon.c: setting a workspace up and serving it.
 *
 * Setup opens every layer and builds the synthetic root before anything is
 * mounted, and fails closed: if a part cannot be provided as configured the
 * mount does not happen. Nothing here walks the repo: mount time does not
 * grow with its size (the .git index is built once serving, gitindex.c).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "core.h"
#include "daemon.h"
#include "ops.h"
#include "state.h"
#include "lib/util.h"

#include "gitdir.h"

static int fail(char **ret_error, int r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int fail(char **ret_error, int r, const char *fmt, ...)
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

static struct node *synth_new(struct fs_workspace *ws, struct node *parent, const char *name,
                              enum node_kind kind, mode_t type)
{
        struct node *n = node_new(ws, kind, type, ++ws->next_synth_ino);
        if (!n)
                return NULL;
        if (name && !(n->name = strdup(name))) {
                node_free(n);
                return NULL;
        }
        n->parent = parent;
        n = node_insert_lookup(ws, n);
        n->refs++; /* permanent */
        return n;
}

static int synth_add_child(struct node *dir, struct node *child)
{
        struct node **c = realloc(dir->children, (dir->n_children + 1) * sizeof(*c));
        if (!c)
                return -ENOMEM;
        dir->children = c;
        dir->children[dir->n_children++] = child;
        return 0;
}

/* The synthetic dir that holds the last component of path (made as needed). */
static int synth_parent_of(struct fs_workspace *ws, const char *path, struct node **ret,
                           char **ret_last)
{
        _cleanup_free_ char *p = strdup(path);
        struct node *dir = ws->root;
        char *save = NULL, *comp, *next;

        if (!p)
                return -ENOMEM;
        comp = strtok_r(p, "/", &save);
        while (comp && (next = strtok_r(NULL, "/", &save))) {
                struct node *found = NULL;
                for (size_t i = 0; i < dir->n_children; i++)
                        if (streq(dir->children[i]->name, comp))
                                found = dir->children[i];
                if (found && found->kind != NODE_SYNTH)
                        return -EEXIST;
                if (!found) {
                        found = synth_new(ws, dir, comp, NODE_SYNTH, S_IFDIR);
                        if (!found || synth_add_child(dir, found) < 0)
                                return -ENOMEM;
                }
                dir = found;
                comp = next;
        }
        if (!comp)
                return -EINVAL;
        for (size_t i = 0; i < dir->n_children; i++)
                if (streq(dir->children[i]->name, comp))
                        return -EEXIST;
        *ret_last = strdup(comp);
        if (!*ret_last)
                return -ENOMEM;
        *ret = dir;
        return 0;
}

static int attach_layer(struct fs_workspace *ws, struct layer *l)
{
        _cleanup_free_ char *last = NULL;
        struct node *dir, *n;
        int r = synth_parent_of(ws, l->mpath, &dir, &last);
        if (r < 0)
                return r;
        r = cow_layer_root(ws, l, dir, last, &n);
        if (r < 0)
                return r;
        return synth_add_child(dir, n);
}

static int attach_mirror(struct fs_workspace *ws, struct mirror *m)
{
        _cleanup_free_ char *last = NULL;
        struct node *dir, *n;
        int r = synth_parent_of(ws, m->mpath, &dir, &last);
        if (r < 0)
                return r;
        r = mirror_root(ws, m, dir, last, &n);
        if (r < 0)
                return r;
        return synth_add_child(dir, n);
}

static int build_tree(struct fs_workspace *ws)
{
        struct node *ctl, *f;
        int r;

        ws->root = synth_new(ws, NULL, NULL, NODE_SYNTH, S_IFDIR);
        if (!ws->root)
                return -ENOMEM;
        /* The root's times: the mount time (kept in the root's lower_entry). */
        clock_gettime(CLOCK_REALTIME, &ws->root->lower.mtime);
        ws->root->lower.mtime.tv_nsec = 0;
        r = attach_layer(ws, &ws->repo);
        if (r == 0 && ws->has_home)
                r = attach_layer(ws, &ws->home);
        for (size_t i = 0; r == 0 && i < ws->n_mirrors; i++)
                r = attach_mirror(ws, &ws->mirrors[i]);
        if (r < 0)
                return r;
        ctl = synth_new(ws, ws->root, ".cloister", NODE_SYNTH, S_IFDIR);
        if (!ctl || synth_add_child(ws->root, ctl) < 0)
                return -ENOMEM;
        f = synth_new(ws, ctl, "workspace", NODE_CTL, S_IFREG);
        if (!f || synth_add_child(ctl, f) < 0)
                return -ENOMEM;
        f->ctl = CTL_WORKSPACE;
        f = synth_new(ws, ctl, "changes", NODE_CTL, S_IFREG);
        if (!f || synth_add_child(ctl, f) < 0)
                return -ENOMEM;
        f->ctl = CTL_CHANGES;
        if (ws->has_objects) {
                r = mirror_root(ws, &ws->objects, ctl, "objects", &f);
                if (r < 0 || synth_add_child(ctl, f) < 0)
                        return r < 0 ? r : -ENOMEM;
        }
        return 0;
}

static int workspace_json(struct fs_workspace *ws)
{
        char when[64];
        struct tm tm;
        time_t now = time(NULL);
        const char *rev = lower_commit_hex(ws->repo.base);
        json_t *j;

        gmtime_r(&now, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        j = json_pack("{s:s,s:s?,s:s,s:s,s:s,s:s,s:I}", "name", ws->name, "revision", rev, "rev",
                      ws->rev, "source", lower_is_git(ws->repo.base) ? "git" : "directory",
                      "repo_path", ws->repo.mpath, "mounted_at", when, "mounted_at_unix",
                      (json_int_t)now);
        if (!j)
                return -ENOMEM;
        /* Who serves, and as whom the agent must run (`cloister run` reads both). */
        if (json_object_set_new(j, "daemon_pid", json_integer(getpid())) < 0 ||
            (ws->uid != ws->store_uid &&
             json_object_set_new(j, "sandbox",
                                 json_pack("{s:I,s:I,s:I,s:I}", "uid", (json_int_t)ws->agent_uid,
                                           "gid", (json_int_t)ws->agent_gid, "host_uid",
                                           (json_int_t)ws->uid, "host_gid", (json_int_t)ws->gid)) <
                     0)) {
                json_decref(j);
                return -ENOMEM;
        }
        ws->workspace_json = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (!ws->workspace_json)
                return -ENOMEM;
        {
                /* One line, newline-terminated, for `cat`. */
                size_t n = strlen(ws->workspace_json);
                char *s = realloc(ws->workspace_json, n + 2);
                if (!s)
                        return -ENOMEM;
                s[n] = '\n';
                s[n + 1] = 0;
                ws->workspace_json = s;
        }
        return 0;
}

/*
 * The base revision is resolved once, at the first mount of a state, and
 * pinned in <state>/fs/base: the upper layer's whiteouts and redirects name
 * paths of that tree, so a later mount must not follow a moved HEAD.
 */
static int open_git_lower(struct fs_workspace *ws, const struct fs_options *o, int fsdir, int cache,
                          char **ret_error)
{
        char pinned[GIT_OID_HEXSZ + 2] = "";
        _cleanup_close_ int fd = -1;
        ssize_t n;
        int r;

        fd = openat(fsdir, "base", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
                n = read(fd, pinned, GIT_OID_HEXSZ + 1);
                if (n < GIT_OID_HEXSZ || strspn(pinned, "0123456789abcdef") < GIT_OID_HEXSZ)
                        return fail(ret_error, -EINVAL, "%s/fs/base: not a commit id", ws->state);
                pinned[GIT_OID_HEXSZ] = 0;
                r = lower_git_open(o->repo.source, pinned, cache, o->tree_cache, &ws->repo.lower,
                                   ret_error);
                if (r < 0)
                        return fail(ret_error, r,
                                    "the base commit %s of this state is gone from '%s'", pinned,
                                    o->repo.source);
                return 0;
        }
        if (errno != ENOENT)
                return fail(ret_error, negative_errno(), "cannot read %s/fs/base: %m", ws->state);
        r = lower_git_open(o->repo.source, o->repo.rev, cache, o->tree_cache, &ws->repo.lower,
                           ret_error);
        if (r < 0)
                return r;
        fd = openat(fsdir, "base.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 || dprintf(fd, "%s\n", lower_commit_hex(ws->repo.lower)) < 0 ||
            renameat(fsdir, "base.tmp", fsdir, "base") < 0)
                return fail(ret_error, negative_errno(), "cannot write %s/fs/base: %m", ws->state);
        return 0;
}

static bool is_git_repo(const char *path)
{
        git_repository *repo = NULL;
        bool ok;
        git_libgit2_init();
        ok = git_repository_open_ext(&repo, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) == 0;
        git_repository_free(repo);
        git_libgit2_shutdown();
        return ok;
}

/*
 * The workspace's .git, made once per state (gitdir owner's module): built
 * under a reserved temporary name in the repo's upper root, then renamed
 * into place, so a crash never leaves a half-made .git; a marker file says
 * it was done, so an agent that deletes .git does not get it back. Its
 * index, one entry per file, is left to gitindex.c, which builds it while
 * the mount already serves: mount time does not grow with the repo.
 */
static int setup_gitdir(struct fs_workspace *ws, int fsdir, char **ret_error)
{
        const char *tmp = UPPER_PREFIX "gitdir.tmp";
        _cleanup_free_ char *alt = NULL, *err = NULL;
        _cleanup_close_ int dfd = -1, marker = -1;
        struct gitdir_params p = {0};
        int r;

        if (!lower_is_git(ws->repo.base))
                return 0;
        if (faccessat(fsdir, "gitdir-done", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                return gitindex_init(ws, fsdir, ret_error);
        r = gitdir_alternates_path(ws->repo.mpath, &alt);
        if (r < 0)
                return fail(ret_error, r, "cannot compute the .git alternates path: %s",
                            strerror(-r));
        r = state_rm_rf_at(ws->repo.upper_fd, tmp, 0);
        if (r < 0)
                return fail(ret_error, r, "cannot clear %s: %s", tmp, strerror(-r));
        dfd = state_open_dir(ws->repo.upper_fd, tmp, true);
        if (dfd < 0)
                return fail(ret_error, dfd, "cannot create the workspace .git: %s", strerror(-dfd));
        (void)fchmod(dfd, 0755);
        p.source = ws->source;
        p.rev = ws->rev;
        p.alternates = alt;
        p.name = ws->name;
        p.config_extra = ws->git_config_extra;
        p.lower_mtime = lower_commit_time(ws->repo.base);
        p.uid = ws->uid;
        p.gid = ws->gid;
        p.skip_index = true;
        r = gitdir_prepare_msg(&p, dfd, &err);
        if (r < 0)
                return fail(ret_error, r, "cannot prepare the workspace .git: %s",
                            err ? err : strerror(-r));
        if (renameat(ws->repo.upper_fd, tmp, ws->repo.upper_fd, ".git") < 0)
                return fail(ret_error, negative_errno(),
                            "cannot put the workspace .git in place: %m");
        marker = openat(fsdir, "gitdir-done", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (marker < 0)
                return fail(ret_error, negative_errno(), "cannot record the workspace .git: %m");
        return gitindex_init(ws, fsdir, ret_error);
}

static int setup_home(struct fs_workspace *ws, const struct fs_options *o, int fsdir,
                      char **ret_error)
{
        _cleanup_close_ int home = -1, seed = -1;
        _cleanup_free_ char *seed_path = NULL;
        int r;

        home = state_open_dir(fsdir, "home", true);
        if (home < 0)
                return fail(ret_error, home, "cannot open %s/fs/home: %s", ws->state,
                            strerror(-home));
        if (!o->home.persist) {
                /* Left by a crash or a previous mount: a non-persistent home starts empty. */
                r = state_rm_rf_at(home, "upper", 0);
                if (r < 0)
                        return fail(ret_error, r, "cannot clear the home's upper layer: %s",
                                    strerror(-r));
        }
        r = state_rm_rf_at(home, "seed", 0);
        if (r < 0)
                return fail(ret_error, r, "cannot clear the seed snapshot: %s", strerror(-r));
        seed = state_open_dir(home, "seed", true);
        if (seed < 0)
                return fail(ret_error, seed, "cannot make the seed snapshot: %s", strerror(-seed));
        (void)fchmod(seed, 0755);
        for (size_t i = 0; i < o->home.n_seeds; i++) {
                r = state_copy_seed(o->home.seeds[i].source, seed, o->home.seeds[i].dest);
                if (r < 0)
                        return fail(ret_error, r,
                                    "%s:%u: key 'seed' in [home]: cannot copy '%s': %s", o->origin,
                                    o->home.seeds[i].line, o->home.seeds[i].source, strerror(-r));
        }
        ws->home.upper_fd = state_open_dir(home, "upper", true);
        if (ws->home.upper_fd < 0)
                return fail(ret_error, ws->home.upper_fd, "cannot open the home's upper layer: %s",
                            strerror(-ws->home.upper_fd));
        (void)fchmod(ws->home.upper_fd, 0755);
        if (asprintf(&seed_path, "%s/fs/home/seed", ws->state) < 0)
                return -ENOMEM;
        r = lower_dir_open(seed_path, &ws->home.lower, ret_error);
        if (r < 0)
                return r;
        ws->home.part = 2;
        ws->home.mpath = o->home.path;
        ws->home.ws = ws;
        ws->has_home = true;
        return 0;
}

/*
 * Memory of a daemon that serves one workspace (issue 17: density). Called
 * before anything touches libgit2. The daemon opens no network connection,
 * so what libgit2's global init prepares for the network is never used:
 *
 * - libssh2_init() initializes OpenSSL (libgit2 calls it from
 *   git_libgit2_init), which faults in about 1.4 MB of libcrypto and some
 *   heap. libssh2 initializes its crypto only in the first call; a first
 *   call with LIBSSH2_INIT_NO_CRYPTO makes libgit2's a no-op. Looked up at
 *   run time: a libgit2 built without SSH has no libssh2 to tell.
 * - glibc gives each thread that allocates its own arena (up to 8 per
 *   core), and FUSE workers allocate nodes: arenas that each keep their own
 *   free memory. Two are enough for two threads to allocate at once; tcache
 *   serves most small allocations without taking an arena's lock.
 *
 * And one libgit2 reference held for the life of the process: without it,
 * is_git_repo()'s init and shutdown tear libgit2's global state down and
 * lower_git_open() builds it again, and each git_libgit2_init parses the
 * system's CA bundle with mbedTLS (about 54 M of its 55 M instructions).
 *
 * libgit2's object cache keeps no tree or blob: the git lower keeps its own
 * index of every tree it reads, bounded by [limits] tree_cache
 * (lower-tree.c), and a second copy of the small trees in each worker's
 * handle (libgit2's default keeps trees up to 4 KiB, per repository, up to
 * 256 MiB in all) would only cost memory. Commits and tags stay cached,
 * within 4 MiB.
 */
static void daemon_tune_process(void)
{
        enum { SSH2_INIT_NO_CRYPTO = 0x0001 }; /* LIBSSH2_INIT_NO_CRYPTO */
        static bool done;
        int (*ssh2_init)(int);

        if (done)
                return;
        done = true;
        (void)mallopt(M_ARENA_MAX, 2);
        *(void **)&ssh2_init = dlsym(RTLD_DEFAULT, "libssh2_init");
        if (ssh2_init)
                (void)ssh2_init(SSH2_INIT_NO_CRYPTO);
}

static void libgit2_init_tuned(void)
{
        (void)git_libgit2_init();
        /*
         * Debian's libgit2 parses the system's CA bundle into mbedTLS at init:
         * about 500 KiB, kept for the daemon's life, of the 1.6 MiB an idle
         * daemon owns. The daemon reads local repositories only and never
         * talks TLS: a chain loaded from a directory with no regular file
         * (none is a certificate) takes its place, and the bundle is freed.
         */
        (void)git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, NULL, "/proc/self/task");
        (void)git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, (int)GIT_OBJECT_TREE, (size_t)0);
        (void)git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, (int)GIT_OBJECT_BLOB, (size_t)0);
        (void)git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, (ssize_t)(4 << 20));
}

/*
 * git_libgit2_init() is most of a daemon's setup: Debian's libgit2 is built
 * with mbedTLS, whose init parses the system's CA bundle, 51 M of the 74 M
 * instructions the daemon runs before it serves (callgrind, issue 35). It
 * has nothing to do with the rest of the setup (the sandbox identity's
 * reservation, the state directory), so fs_daemon_prepare() starts it in a
 * thread beside that, and fs_workspace_new() waits for it (pthread_once)
 * before it opens the git lower, or runs it itself if the thread could not
 * start. The thread is detached: a mount refused before it opens anything
 * exits without waiting, and leaves no thread unjoined.
 */
static pthread_once_t libgit2_once = PTHREAD_ONCE_INIT;

static void *libgit2_init_thread(void *arg)
{
        (void)arg;
        (void)pthread_once(&libgit2_once, libgit2_init_tuned);
        return NULL;
}

void fs_daemon_prepare(void)
{
        static bool started;
        pthread_attr_t attr;
        pthread_t t;

        daemon_tune_process();
        if (started || pthread_attr_init(&attr) != 0)
                return;
        if (pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
            pthread_create(&t, &attr, libgit2_init_thread, NULL) == 0)
                started = true;
        (void)pthread_attr_destroy(&attr);
}

static void daemon_tune_memory(void)
{
        static bool done;

        if (done)
                return;
        done = true;
        daemon_tune_process();
        (void)pthread_once(&libgit2_once, libgit2_init_tuned);
}

/* What setup freed (libgit2's init and shutdown in is_git_repo, the probes)
 * goes back to the kernel before the daemon idles. */
static void daemon_tune_memory_after_setup(void)
{
        (void)malloc_trim(0);
}

int fs_workspace_new(const struct fs_options *o, fs_workspace **ret, char **ret_error)
{
        struct fs_workspace *ws;
        _cleanup_close_ int fsdir = -1, cache = -1;
        int r;

        daemon_tune_memory();
        ws = calloc(1, sizeof(*ws));
        if (!ws)
                return -ENOMEM;
        if (sodium_init() < 0) {
                free(ws);
                return fail(ret_error, -EIO, "cannot initialize libsodium");
        }
        randombytes_buf(ws->dir_key, sizeof(ws->dir_key));
        pthread_rwlock_init(&ws->ns_lock, NULL);
        {
                /* A steady stream of writers must not keep a checkpoint waiting. */
                pthread_rwlockattr_t ga;
                pthread_rwlockattr_init(&ga);
                pthread_rwlockattr_setkind_np(&ga, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
                pthread_rwlock_init(&ws->write_gate, &ga);
                pthread_rwlockattr_destroy(&ga);
        }
        pthread_mutex_init(&ws->handles_lock, NULL);
        ws->ctl.listen_fd = ws->ctl.stop_fd = -1;
        pthread_mutex_init(&ws->itable_lock, NULL);
        reap_init(ws);
        ws->shed.proc_fd = -1; /* shed_init, once serving */
        pthread_mutex_init(&ws->index.lock, NULL);
        pthread_cond_init(&ws->index.done, NULL);
        ws->state_fd = ws->repo.upper_fd = ws->home.upper_fd = ws->objects.root_fd = -1;
        ws->lock_fd = -1;
        ws->index.git_fd = ws->index.fsdir_fd = -1;
        ws->store_uid = ws->uid = geteuid();
        ws->store_gid = ws->gid = getegid();
        if (o->agent.host_uid) {
                ws->uid = o->agent.host_uid;
                ws->gid = o->agent.host_gid;
                ws->agent_uid = o->agent.uid;
                ws->agent_gid = o->agent.gid;
        }
        ws->index_uid = o->index_uid;
        ws->index_gid = o->index_gid;
        ws->name = strdup(o->name);
        ws->state = strdup(o->state);
        ws->mountpoint = strdup(o->mountpoint);
        ws->source = strdup(o->repo.source);
        ws->rev = strdup(o->repo.rev);
        ws->git_config_extra = o->git_config_extra ? strdup(o->git_config_extra) : NULL;
        if (!ws->name || !ws->state || !ws->mountpoint || !ws->source || !ws->rev ||
            (o->git_config_extra && !ws->git_config_extra)) {
                r = -ENOMEM;
                goto out;
        }
        ws->max_bytes = o->max_bytes;
        ws->max_files = o->max_files;
        ws->uring_off = o->io_uring_off;
        ws->parts_off = o->zero_open_off;
        ws->home_persist = o->home.persist;

        r = state_mkdir_p(ws->state, 0700);
        if (r < 0) {
                r = fail(ret_error, r, "cannot create state directory '%s': %s", ws->state,
                         strerror(-r));
                goto out;
        }
        ws->state_fd = open(ws->state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (ws->state_fd < 0) {
                r = fail(ret_error, negative_errno(), "cannot open state directory '%s': %m",
                         ws->state);
                goto out;
        }
        /*
         * One daemon per state, whatever config names it: another serving it
         * (through another mountpoint) would see the same upper files
         * change under it. The lock is the kernel's, gone with the process;
         * fs.lock also marks the directory as a workspace's state
         * (fs_mountpoint_check refuses a mountpoint inside another one).
         */
        ws->lock_fd =
                openat(ws->state_fd, "fs.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (ws->lock_fd < 0) {
                r = fail(ret_error, negative_errno(), "cannot open '%s/fs.lock': %m", ws->state);
                goto out;
        }
        if (flock(ws->lock_fd, LOCK_EX | LOCK_NB) < 0) {
                r = errno == EWOULDBLOCK
                            ? fail(ret_error, -EBUSY,
                                   "state directory '%s' is served by another daemon already "
                                   "(two may never serve one state; cloister unmount stops it)",
                                   ws->state)
                            : fail(ret_error, negative_errno(), "cannot lock '%s/fs.lock': %m",
                                   ws->state);
                goto out;
        }
        fsdir = state_open_dir(ws->state_fd, "fs", true);
        cache = fsdir < 0 ? fsdir : state_open_dir(fsdir, "cache", true);
        if (cache < 0) {
                r = fail(ret_error, cache, "cannot set up '%s/fs': %s", ws->state,
                         strerror(-cache));
                goto out;
        }

        if (is_git_repo(o->repo.source)) {
                r = open_git_lower(ws, o, fsdir, cache, ret_error);
                /* Before any lookup makes a per-thread handle; the daemon
                 * opens no repository but the source. Failing costs speed only. */
                if (r == 0)
                        (void)lower_git_seal(ws->repo.lower);
        } else
                r = lower_dir_open(o->repo.source, &ws->repo.lower, ret_error);
        if (r < 0) {
                r = fail(ret_error, r, "[repo] source '%s': cannot open", o->repo.source);
                goto out;
        }
        ws->repo.part = 1;
        ws->repo.mpath = o->repo.path;
        ws->repo.ws = ws;
        ws->repo.base = ws->repo.lower;
        /* The writable layer, and the frozen ones under it (layers-mount.c). */
        r = layers_mount(ws, fsdir, ret_error);
        if (r < 0)
                goto out;

        r = setup_gitdir(ws, fsdir, ret_error);
        if (r < 0)
                goto out;
        r = setup_home(ws, o, fsdir, ret_error);
        if (r < 0)
                goto out;

        ws->mirrors = calloc(o->n_mirrors + 1, sizeof(*ws->mirrors));
        if (!ws->mirrors) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < o->n_mirrors; i++) {
                struct mirror *m = &ws->mirrors[i];
                m->part = 16 + (unsigned)i;
                m->mpath = o->mirrors[i].path;
                m->exclude = o->mirrors[i].exclude;
                m->root_fd = open(o->mirrors[i].source, O_PATH | O_DIRECTORY | O_CLOEXEC);
                ws->n_mirrors++;
                if (m->root_fd < 0) {
                        r = fail(ret_error, negative_errno(),
                                 "%s:%u: [mirror \"%s\"] source '%s': %m", o->origin,
                                 o->mirrors[i].line, o->mirrors[i].name, o->mirrors[i].source);
                        goto out;
                }
        }
        if (lower_objects_dir(ws->repo.base)) {
                ws->objects.part = 15;
                ws->objects.mpath = "/.cloister/objects";
                ws->objects.root_fd =
                        open(lower_objects_dir(ws->repo.base), O_PATH | O_DIRECTORY | O_CLOEXEC);
                ws->has_objects = ws->objects.root_fd >= 0;
        }

        r = quota_init(ws);
        for (size_t i = 0; i < ws->n_frozen_own; i++)
                safe_close(ws->frozen_own_fds[i]);
        ws->n_frozen_own = 0;
        if (r < 0) {
                r = fail(ret_error, r, "cannot count the upper layers' usage: %s", strerror(-r));
                goto out;
        }
        r = journal_open(ws->state_fd, "journal.jsonl",
                         o->max_journal ? o->max_journal : JOURNAL_MAX_BYTES_DEFAULT, o->image,
                         &ws->journal);
        if (r < 0) {
                r = fail(ret_error, r, "cannot open the journal in '%s': %s", ws->state,
                         strerror(-r));
                goto out;
        }
        r = workspace_json(ws);
        if (r == 0)
                r = build_tree(ws);
        if (r < 0) {
                r = fail(ret_error, r, "cannot build the mount's root: %s", strerror(-r));
                goto out;
        }
        daemon_tune_memory_after_setup();
        *ret = ws;
        ws = NULL;
        r = 0;
out:
        fs_workspace_free(ws);
        return r;
}

void fs_workspace_free(fs_workspace *ws)
{
        if (!ws)
                return;
        gitindex_stop(ws);
        node_table_free(ws);
        reap_stop(ws);
        journal_free(ws->journal);
        if (ws->repo.lower != ws->repo.base)
                lower_free(ws->repo.lower);
        for (size_t i = 0; i < ws->repo.n_retired; i++)
                lower_free(ws->repo.retired[i]);
        free(ws->repo.retired);
        lower_free(ws->repo.base);
        lower_free(ws->home.lower);
        for (size_t i = 0; i < ws->n_frozen_own; i++)
                safe_close(ws->frozen_own_fds[i]);
        free(ws->frozen_own_fds);
        json_decref(ws->links);
        safe_close(ws->repo.upper_fd);
        safe_close(ws->home.upper_fd);
        for (size_t i = 0; i < ws->n_mirrors; i++)
                safe_close(ws->mirrors[i].root_fd);
        free(ws->mirrors);
        safe_close(ws->objects.root_fd);
        safe_close(ws->state_fd);
        safe_close(ws->lock_fd);
        free(ws->workspace_json);
        free(ws->name);
        free(ws->state);
        free(ws->mountpoint);
        free(ws->source);
        free(ws->rev);
        free(ws->git_config_extra);
        free(ws->home_upper_path);
        layers_online_stop(ws);
        pthread_rwlock_destroy(&ws->ns_lock);
        pthread_rwlock_destroy(&ws->write_gate);
        pthread_mutex_destroy(&ws->handles_lock);
        pthread_mutex_destroy(&ws->itable_lock);
        pthread_mutex_destroy(&ws->index.lock);
        pthread_cond_destroy(&ws->index.done);
        free(ws);
}
