/* SPDX-License-Identifier: MIT */
/*
 * ops-workspace.c: what a workspace is and holds, as data (operations.h): its
 * summary and status, the review's patch and stat, and the export.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "config.h"
#include "fs.h"
#include "operations.h"
#include "image.h"
#include "review-workspace.h"
#include "review.h"
#include "sandbox.h"
#include "lib/pidfile.h"
#include "lib/errorf.h"
#include "lib/values.h"
#include "lib/util.h"

static bool mounted(const struct config *c)
{
        char owner[FS_NAME_MAX + 1];

        return fs_mount_owner(c->workspace.state, c->workspace.name, c->workspace.mountpoint,
                              owner) == 1;
}

/* Runs of the workspace alive now: their records in <state>/sandboxes. */
static int runs_live(const struct config *c)
{
        _cleanup_free_ char *dir = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int n = 0;

        if (asprintf(&dir, "%s/sandboxes", c->workspace.state) < 0)
                return 0;
        d = opendir(dir);
        while (d && (de = readdir(d))) {
                char *end;
                long pid = strtol(de->d_name, &end, 10);
                if (*end == '\0' && pid > 0 && kill((pid_t)pid, 0) == 0)
                        n++;
        }
        return n;
}

/*
 * The data path the daemon negotiated (fs_datapath_read); null when not
 * mounted or not known. Read after a statfs of the mount, which waits for
 * the kernel's FUSE_INIT to be answered, when the daemon writes it.
 */
static json_t *datapath(const struct config *c)
{
        struct fs_datapath d;
        json_t *o;

        if (fs_datapath_read(c->workspace.state, &d) < 0)
                return json_null();
        o = json_pack("{s:s, s:b, s:s, s:b, s:b, s:b, s:s}", "transport", d.transport, "io_uring",
                      d.io_uring, "io_uring_why", d.io_uring_why, "killpriv_v2", d.killpriv_v2,
                      "passthrough", d.passthrough, "zero_message_opens", d.zero_message_opens,
                      "zero_message_opens_why", d.zero_message_opens_why);
        return o ? o : json_null();
}

int ops_workspace_summary(const struct config *c, json_t **ret, char **ret_error)
{
        bool m = mounted(c);
        json_t *o, *used = json_null(), *files = json_null(), *dp = json_null();
        struct statfs sf;

        (void)ret_error;
        /* The mount reports the quota as its size (fs/core/quota.c): used = size - free. */
        if (m && statfs(c->workspace.mountpoint, &sf) == 0) {
                used = json_integer(
                        (json_int_t)(c->limits.bytes -
                                     MIN(c->limits.bytes,
                                         (uint64_t)sf.f_bavail * (uint64_t)sf.f_bsize)));
                files = json_integer(
                        (json_int_t)(c->limits.files - MIN(c->limits.files, (uint64_t)sf.f_ffree)));
                dp = datapath(c);
        }
        o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:o, s:o, s:i, s:o}", "name",
                      c->workspace.name, "config", c->file, "repo", c->repo.source, "rev",
                      c->repo.rev, "repo_path", c->repo.path, "mounted", m, "bytes_used", used,
                      "files_used", files, "runs_live", runs_live(c), "datapath", dp);
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

/* The last export: refs/cloister/NAME in the source, if there is one. */
static json_t *last_export(const struct config *c)
{
        _cleanup_free_ char *ref = NULL;
        git_repository *repo = NULL;
        git_commit *commit = NULL;
        git_oid id;
        char hex[GIT_OID_HEXSZ + 1];
        json_t *o = json_null();

        if (asprintf(&ref, "refs/cloister/%s", c->workspace.name) < 0)
                return o;
        git_libgit2_init();
        if (git_repository_open_ext(&repo, c->repo.source, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) ==
                    0 &&
            git_reference_name_to_id(&id, repo, ref) == 0 &&
            git_commit_lookup(&commit, repo, &id) == 0)
                o = json_pack("{s:s, s:s, s:I}", "ref", ref, "commit",
                              git_oid_tostr(hex, sizeof(hex), &id), "time",
                              (json_int_t)git_commit_time(commit));
        git_commit_free(commit);
        git_repository_free(repo);
        git_libgit2_shutdown();
        return o ? o : json_null();
}

static json_t *daemon_state(const struct config *c, const char *socket, const char *pidfile)
{
        _cleanup_close_ int state = open(c->workspace.state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        pid_t pid = state >= 0 ? pidfile_read(state, pidfile) : 0;

        return json_pack("{s:s, s:b, s:o}", "socket", socket, "serving",
                         sandbox_socket_live(socket), "pid",
                         pid > 0 ? json_integer(pid) : json_null());
}

int ops_status(const struct config *c, json_t **ret, char **ret_error)
{
        _cleanup_free_ char *proxy = NULL;
        json_t *o = NULL;
        int r = ops_workspace_summary(c, &o, ret_error);

        if (r < 0)
                return r;
        json_object_set_new(o, "state", json_string(c->workspace.state));
        json_object_set_new(o, "mountpoint", json_string(c->workspace.mountpoint));
        json_object_set_new(
                o, "limits",
                json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "bytes",
                          (json_int_t)c->limits.bytes, "files", (json_int_t)c->limits.files,
                          "timeout", (json_int_t)c->limits.timeout, "memory",
                          (json_int_t)c->limits.memory, "processes",
                          (json_int_t)c->limits.processes, "journal", (json_int_t)c->limits.journal,
                          "audit", (json_int_t)c->limits.audit, "netlog",
                          (json_int_t)c->limits.netlog, "runlog", (json_int_t)c->limits.runlog));
        json_object_set_new(o, "broker",
                            c->broker.policy ? daemon_state(c, c->broker.socket, "broker.for-runs")
                                             : json_null());
        if (c->network.mode == CONFIG_NETWORK_PROXY &&
            asprintf(&proxy, "%s/proxy.sock", c->workspace.state) >= 0)
                json_object_set_new(o, "proxy", daemon_state(c, proxy, "proxy.for-runs"));
        else
                json_object_set_new(o, "proxy", json_null());
        json_object_set_new(o, "network",
                            json_string(c->network.mode == CONFIG_NETWORK_PROXY  ? "proxy"
                                        : c->network.mode == CONFIG_NETWORK_HOST ? "host"
                                                                                 : "none"));
        json_object_set_new(o, "last_export", last_export(c));
        {
                char digest[IMAGE_DIGEST_LEN + 1];
                json_object_set_new(o, "image",
                                    image_workspace_digest(c, digest) == 0 ? json_string(digest)
                                                                           : json_null());
        }
        *ret = o;
        return 0;
}

int ops_review_open(const struct config *c, const char *config_path,
                    const struct ops_review_options *o, struct ops_review *x, char **ret_error)
{
        struct review_options ro;
        int k;

        *x = (struct ops_review){.opened = true};
        git_libgit2_init();
        k = review_workspace_open(c, config_path, true, &x->w, ret_error);
        if (k < 0)
                return k;
        review_workspace_options(x->w, &ro);
        ro.in_memory = o->in_memory;
        ro.include_ignored = o->include_ignored;
        ro.progress = o->progress;
        ro.userdata = o->userdata;
        return review_open(&ro, &x->r, ret_error);
}

int ops_review_close(struct ops_review *x)
{
        int k;

        if (!x->opened)
                return 0;
        review_free(x->r);
        k = review_workspace_close(x->w);
        git_libgit2_shutdown();
        *x = (struct ops_review){0};
        return k;
}

static const char *status_name(git_delta_t s)
{
        switch (s) {
        case GIT_DELTA_ADDED:
                return "added";
        case GIT_DELTA_DELETED:
                return "deleted";
        case GIT_DELTA_RENAMED:
                return "renamed";
        case GIT_DELTA_COPIED:
                return "copied";
        case GIT_DELTA_TYPECHANGE:
                return "typechange";
        default:
                return "modified";
        }
}

/* Delta i's hunks: [{"old_start", "old_lines", "new_start", "new_lines", "bytes": [start, end] or
 * null}]. */
static int hunks_json(review *r, git_diff *diff, size_t i, json_t **ret)
{
        _cleanup_free_ struct review_hunk *h = NULL;
        json_t *a;
        size_t n = 0;
        int k = review_hunks(r, diff, i, &h, &n);

        if (k < 0)
                return k;
        a = json_array();
        for (size_t j = 0; a && j < n; j++)
                json_array_append_new(
                        a, json_pack("{s:I, s:I, s:I, s:I, s:o}", "old_start",
                                     (json_int_t)h[j].old_start, "old_lines",
                                     (json_int_t)h[j].old_lines, "new_start",
                                     (json_int_t)h[j].new_start, "new_lines",
                                     (json_int_t)h[j].new_lines, "bytes",
                                     h[j].change_start == REVIEW_HUNK_NO_BYTES
                                             ? json_null()
                                             : json_pack("[I, I]", (json_int_t)h[j].change_start,
                                                         (json_int_t)h[j].change_end)));
        *ret = a;
        return a ? 0 : -ENOMEM;
}

static int stat_json(review *r, git_diff *diff, bool hunks, json_t **ret)
{
        _cleanup_(json_decrefp) json_t *files = json_array();
        size_t n = git_diff_num_deltas(diff);
        json_int_t ins = 0, del = 0;

        if (!files)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const git_diff_delta *d = git_diff_get_delta(diff, i);
                size_t a = 0, b = 0;
                const char *path = d->new_file.path ? d->new_file.path : d->old_file.path;
                json_t *e;
                int k = review_line_stats(r, diff, i, &a, &b);

                if (k < 0)
                        return k;
                e = json_pack("{s:o, s:s, s:I, s:I, s:b}", "path",
                              ops_json_text(path, strlen(path)), "status", status_name(d->status),
                              "added", (json_int_t)a, "removed", (json_int_t)b, "binary",
                              (d->flags & GIT_DIFF_FLAG_BINARY) != 0);
                if (d->status == GIT_DELTA_RENAMED || d->status == GIT_DELTA_COPIED)
                        json_object_set_new(
                                e, "from",
                                ops_json_text(d->old_file.path, strlen(d->old_file.path)));
                if (hunks) {
                        json_t *h = NULL;
                        k = hunks_json(r, diff, i, &h);
                        if (k < 0) {
                                json_decref(e);
                                return k;
                        }
                        json_object_set_new(e, "hunks", h);
                }
                json_array_append_new(files, e);
                ins += (json_int_t)a;
                del += (json_int_t)b;
        }
        *ret = json_pack("{s:O, s:I, s:I, s:I}", "files", files, "changed", (json_int_t)n,
                         "insertions", ins, "deletions", del);
        return *ret ? 0 : -ENOMEM;
}

static const char *home_type(char t)
{
        return t == 'f'   ? "file"
               : t == 'd' ? "dir"
               : t == 'l' ? "symlink"
               : t == 'D' ? "deleted"
                          : "other";
}

void ops_left_out_json(const review *r, json_t *o)
{
        size_t n, more;
        const struct review_left_out *l = review_left_out(r, &n, &more);
        json_t *a = json_array();

        for (size_t i = 0; a && i < n; i++) {
                char why[256];
                bool sized = (l[i].reason == REVIEW_LEFT_OUT_TOO_LARGE ||
                              l[i].reason == REVIEW_LEFT_OUT_TOTAL) &&
                             l[i].size;
                review_left_out_describe(&l[i], why, sizeof(why));
                json_array_append_new(
                        a, json_pack("{s:o, s:s, s:s, s:o}", "path",
                                     ops_json_text(l[i].path, strlen(l[i].path)), "reason",
                                     review_left_out_reason(&l[i]), "detail", why, "size",
                                     sized ? json_integer((json_int_t)l[i].size) : json_null()));
        }
        json_object_set_new(o, "left_out", a);
        if (more)
                json_object_set_new(o, "left_out_more", json_integer((json_int_t)more));
}

int ops_review_json(review *r, bool stat, json_t **ret)
{
        return ops_review_json_full(r, stat, false, ret);
}

int ops_review_json_full(review *r, bool stat, bool hunks, json_t **ret)
{
        struct review_home_change *home = NULL;
        size_t n_home = 0;
        git_diff *diff = NULL;
        json_t *o = NULL, *h;
        int k;

        if (stat) {
                k = review_diff(r, &diff);
                if (k == 0)
                        k = stat_json(r, diff, hunks, &o);
                git_diff_free(diff);
        } else {
                char *text = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&text, &len);
                k = f ? review_print(r, REVIEW_PATCH, f) : -ENOMEM;
                if (f && fclose(f) != 0 && k == 0)
                        k = -ENOMEM;
                if (k == 0 && !(o = json_pack("{s:o, s:I}", "patch", ops_json_text(text, len),
                                              "bytes", (json_int_t)len)))
                        k = -ENOMEM;
                free(text);
        }
        if (k == 0)
                k = review_home_changes(r, &home, &n_home);
        if (k < 0) {
                json_decref(o);
                return k;
        }
        /* The home's changes are never in the patch: their names and sizes only. */
        h = json_array();
        for (size_t i = 0; i < n_home; i++)
                json_array_append_new(
                        h, json_pack("{s:o, s:s, s:o}", "path",
                                     ops_json_text(home[i].path, strlen(home[i].path)), "type",
                                     home_type(home[i].type), "size",
                                     home[i].type == 'f' ? json_integer((json_int_t)home[i].size)
                                                         : json_null()));
        review_home_changes_free(home, n_home);
        json_object_set_new(o, "home", h);
        json_object_set_new(o, "ignored", json_integer((json_int_t)review_ignored(r)));
        ops_left_out_json(r, o);
        if (review_warning(r))
                json_object_set_new(o, "warning", json_string(review_warning(r)));
        *ret = o;
        return 0;
}

int ops_diff(const struct config *c, const char *config_path, bool stat, json_t **ret,
             char **ret_error)
{
        struct ops_review x;
        int k = ops_review_open(c, config_path, &(struct ops_review_options){.in_memory = true}, &x,
                                ret_error);

        if (k == 0)
                k = ops_review_json(x.r, stat, ret);
        if (k < 0 && x.r && ret_error && !*ret_error)
                *ret_error = strdup(review_error(x.r));
        (void)ops_review_close(&x);
        return k;
}

int ops_export_label_check(const char *label, char **ret_error)
{
        /* NAME+LABEL: '+' is in no workspace's name, so one workspace's
         * labels never reach another's refs/cloister/OTHER (git's own
         * rules, ".lock" and the rest, are review_ref_set()'s). */
        if (label && (!value_name_is_valid(label, 64, false) || strstr(label, "..")))
                return errorf(ret_error, -EINVAL,
                              "label: '%.64s' is not 1-64 of A-Z a-z 0-9 . _ - (not starting "
                              "with . or -)",
                              label);
        return 0;
}

int ops_export_review(review *r, const struct config *c, const struct ops_export_options *o,
                      json_t **ret, char **ret_error)
{
        char image[IMAGE_DIGEST_LEN + 1];
        struct review_commit_options co = {
                .name = c->workspace.name,
                .message = o->message,
                .author = o->author,
                .image = image_workspace_digest(c, image) == 0 ? image : NULL,
        };
        char hex[GIT_OID_HEXSZ + 1], old[GIT_OID_HEXSZ + 1];
        _cleanup_free_ char *name = NULL;
        _cleanup_free_ git_oid *ids = NULL;
        const git_oid *replaced;
        size_t n = 1;
        git_oid id;
        json_t *j;
        int k = ops_export_label_check(o->label, ret_error);

        if (k < 0)
                return k;
        if (asprintf(&name, "%s%s%s", c->workspace.name, o->label ? "+" : "",
                     o->label ? o->label : "") < 0)
                return -ENOMEM;
        if (o->commits) {
                k = review_agent_commits(r, &ids, &n);
                if (k == 0)
                        id = ids[n - 1];
        } else {
                k = review_commit(r, &co, &id);
        }
        if (k == 0)
                k = review_ref_set(r, name, &id);
        if (k < 0) {
                if (ret_error && !*ret_error)
                        *ret_error = strdup(review_error(r));
                return k;
        }
        replaced = review_ref_replaced(r);
        j = json_pack("{s:s+, s:s, s:I, s:o, s:I}", "ref", "refs/cloister/", name, "commit",
                      git_oid_tostr(hex, sizeof(hex), &id), "commits", (json_int_t)n, "replaced",
                      replaced ? json_string(git_oid_tostr(old, sizeof(old), replaced))
                               : json_null(),
                      "ignored", (json_int_t)review_ignored(r));
        if (!j)
                return -ENOMEM;
        if (review_warning(r))
                json_object_set_new(j, "warning", json_string(review_warning(r)));
        ops_left_out_json(r, j);
        *ret = j;
        return 0;
}

int ops_export(const struct config *c, const char *config_path, const char *label, json_t **ret,
               char **ret_error)
{
        struct ops_review x;
        int k = ops_export_label_check(label, ret_error);

        if (k < 0)
                return k;
        k = ops_review_open(c, config_path, &(struct ops_review_options){0}, &x, ret_error);
        if (k == 0)
                k = ops_export_review(x.r, c, &(struct ops_export_options){.label = label}, ret,
                                      ret_error);
        if (k < 0 && x.r && ret_error && !*ret_error)
                *ret_error = strdup(review_error(x.r));
        (void)ops_review_close(&x);
        return k;
}
