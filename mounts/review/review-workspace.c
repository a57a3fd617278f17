/* SPDX-License-Identifier: MIT */
/*
 * review-workspace.c: from a workspace config to review options: where the
 * mount shows the repo, the hidden home and the changes list, which mirrors
 * to leave out, and mounting the workspace for the duration of a command
 * when nobody else has (`cloister mount` / `cloister unmount`, run as
 * /proc/self/exe so that the same build serves it).
 */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "config.h"
#include "fs.h"
#include "layers.h"
#include "review-workspace.h"
#include "lib/util.h"

extern char **environ;

struct review_workspace {
        const struct config *c;
        char *config_path;
        char *view, *home_view, *changes;
        char *upper; /* the repo's upper store, when this state's daemon serves the view */
        char **exclude;
        bool we_mounted;
};

static int self_run(const char *verb, const char *config_path, int *ret_status)
{
        char *argv[] = {(char *)"cloister", (char *)verb, (char *)config_path, NULL};
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, dflt;
        pid_t pid;
        int st, k;

        /* The daemon must not hold our stdout: a pipe reader would never see EOF. */
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        /* Nor inherit what the CLI blocked or ignored for its own cleanup. */
        sigemptyset(&none);
        sigemptyset(&dflt);
        sigaddset(&dflt, SIGPIPE);
        sigaddset(&dflt, SIGINT);
        sigaddset(&dflt, SIGTERM);
        sigaddset(&dflt, SIGHUP);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &dflt);
        k = posix_spawn(&pid, "/proc/self/exe", &fa, &attr, argv, environ);
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&fa);
        if (k != 0)
                return -k;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return negative_errno();
        *ret_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return 0;
}

static void error_set(char **ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void error_set(char **ret, const char *fmt, ...)
{
        va_list ap;

        if (!ret)
                return;
        va_start(ap, fmt);
        if (vasprintf(ret, fmt, ap) < 0)
                *ret = NULL;
        va_end(ap);
}

static bool mounted(const char *mountpoint)
{
        _cleanup_free_ char *p = NULL;
        struct stat st;

        if (asprintf(&p, "%s/.cloister/workspace", mountpoint) < 0)
                return false;
        return stat(p, &st) == 0;
}

int review_workspace_open(const struct config *c, const char *config_path, bool mount,
                          review_workspace **ret, char **ret_error)
{
        review_workspace *w;
        size_t nx = 0;
        int k = 0, status = 0;

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->c = c;
        w->config_path = strdup(config_path);
        w->exclude = calloc(c->n_mirrors + 1, sizeof(char *));
        if (!w->config_path || !w->exclude ||
            asprintf(&w->view, "%s%s", c->workspace.mountpoint, c->repo.path) < 0 ||
            asprintf(&w->home_view, "%s%s", c->workspace.mountpoint, c->home.path) < 0 ||
            asprintf(&w->changes, "%s/.cloister/changes", c->workspace.mountpoint) < 0) {
                k = -ENOMEM;
                goto out;
        }
        /* A read-only mirror inside the repo path is not the agent's work. */
        for (size_t i = 0; i < c->n_mirrors; i++) {
                const char *rest = startswith(c->mirrors[i].path, c->repo.path);
                if (rest && *rest == '/' && !(w->exclude[nx++] = strdup(rest + 1))) {
                        k = -ENOMEM;
                        goto out;
                }
        }
        /* Another workspace's mount at our mountpoint shows its work, not ours. */
        {
                char owner[FS_NAME_MAX + 1];
                if (fs_mount_owner(c->workspace.state, c->workspace.name, c->workspace.mountpoint,
                                   owner) == 0) {
                        error_set(ret_error,
                                  "mountpoint '%s' is the mount of another workspace ('%s'), "
                                  "not this one's; give this workspace its own [workspace] "
                                  "mountpoint",
                                  c->workspace.mountpoint, owner);
                        k = -EEXIST;
                        goto out;
                }
        }
        if (mount && !mounted(c->workspace.mountpoint)) {
                k = self_run("mount", config_path, &status);
                if (k < 0) {
                        error_set(ret_error, "starting 'cloister mount': %s", strerror(-k));
                        goto out;
                }
                if (status == 0) {
                        w->we_mounted = true;
                } else if (status != 3) { /* 3: a live daemon already serves it */
                        error_set(ret_error, "'cloister mount %s' failed (exit %d)", config_path,
                                  status);
                        k = -EIO;
                        goto out;
                }
                if (!mounted(c->workspace.mountpoint)) {
                        error_set(ret_error, "%s is not a cloister mount after mounting",
                                  c->workspace.mountpoint);
                        k = -ENOTCONN;
                        goto out;
                }
        }
        /*
         * The daemon of this state serves the view: its upper store holds the
         * data of every changed file, readable without a round trip each.
         */
        if (fs_mount_probe(c->workspace.state, c->workspace.mountpoint, NULL) == 1) {
                /* The writable layer: fs/repo, or the one layers.json names. */
                _cleanup_layers_ struct fs_layers *l = NULL;
                _cleanup_free_ char *lerr = NULL;
                if (fs_layers_load(c->workspace.state, &l, &lerr) == 0 &&
                    asprintf(&w->upper, "%s/%s", c->workspace.state, l->top) < 0) {
                        w->upper = NULL;
                        k = -ENOMEM;
                }
        }
out:
        if (k < 0) {
                review_workspace_close(w);
                return k;
        }
        *ret = w;
        return 0;
}

int review_workspace_close(review_workspace *w)
{
        int status = 0, k = 0;

        if (!w)
                return 0;
        if (w->we_mounted) {
                k = self_run("unmount", w->config_path, &status);
                if (k == 0 && status != 0)
                        k = -EIO;
        }
        free(w->config_path);
        free(w->view);
        free(w->home_view);
        free(w->changes);
        free(w->upper);
        strv_free(w->exclude);
        free(w);
        return k;
}

void review_workspace_options(const review_workspace *w, struct review_options *o)
{
        *o = (struct review_options){
                .source = w->c->repo.source,
                .rev = w->c->repo.rev,
                .view = w->view,
                .changes = w->changes,
                .repo_prefix = w->c->repo.path,
                .home_view = w->home_view,
                .home_prefix = w->c->home.path,
                .state = w->c->workspace.state,
                .upper = w->upper,
                .exclude = (const char *const *)w->exclude,
        };
}
