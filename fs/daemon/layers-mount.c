/* SPDX-License-Identifier: MIT */
/*
 * layers-mount.c: the repo's layers at mount (docs/fs-design.md, "Layers,
 * checkpoints and forks"): the writable layer layers.json names, and the
 * frozen layers under it pushed one by one onto the base lower as a stack
 * (lower-stack.c). Each frozen layer's marker must hold the id the stack
 * names: a parent state deleted or replaced under a fork fails the mount,
 * naming the layer, rather than show another tree.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "daemon.h"
#include "layers.h"
#include "state.h"
#include "lib/errorf.h"
#include "lib/util.h"

static int own_fd_add(struct fs_workspace *ws, int fd)
{
        int *v = realloc(ws->frozen_own_fds, (ws->n_frozen_own + 1) * sizeof(int));
        int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);

        if (!v || d < 0) {
                if (v)
                        ws->frozen_own_fds = v;
                safe_close(d);
                return -ENOMEM;
        }
        ws->frozen_own_fds = v;
        ws->frozen_own_fds[ws->n_frozen_own++] = d;
        return 0;
}

int layers_mount(struct fs_workspace *ws, int fsdir, char **ret_error)
{
        _cleanup_layers_ struct fs_layers *l = NULL;
        struct lower *view = ws->repo.base;
        int r;

        r = fs_layers_load(ws->state, &l, ret_error);
        if (r < 0)
                return r;
        if (!l->exists) {
                /* No checkpoint yet: fs/repo, made at the first mount. */
                ws->repo.upper_fd = state_open_dir(fsdir, "repo", true);
                if (ws->repo.upper_fd < 0)
                        return errorf_first(ret_error, ws->repo.upper_fd,
                                            "cannot set up '%s/fs/repo': %s", ws->state,
                                            strerror(-ws->repo.upper_fd));
                (void)fchmod(ws->repo.upper_fd, 0755);
                return 0;
        }
        ws->repo.upper_fd =
                openat(ws->state_fd, l->top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ws->repo.upper_fd < 0)
                return errorf_first(ret_error, negative_errno(),
                                    "cannot open the writable layer '%s/%s': %m", ws->state,
                                    l->top);
        for (size_t i = 0; i < l->n_stack; i++) {
                const struct fs_layer_ref *ref = fs_layers_ref(l, l->stack[i]);
                _cleanup_free_ char *path = fs_layers_ref_path(l, ref);
                struct lower *next = NULL;
                int fd;

                if (!path)
                        return -ENOMEM;
                fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return errorf_first(ret_error, negative_errno(),
                                            "frozen layer %s at '%s': %m (was the state it lies in "
                                            "removed?)",
                                            ref->id, path);
                r = fs_layer_marker_check(fd, ref->id);
                if (r < 0) {
                        safe_close(fd);
                        return errorf_first(
                                ret_error, r,
                                "frozen layer %s: '%s' is not that layer (its marker says "
                                "otherwise)",
                                ref->id, path);
                }
                if (!ref->state && (r = own_fd_add(ws, fd)) < 0) {
                        safe_close(fd);
                        return r;
                }
                r = lower_stack_push(view, ws->repo.part, fd, ref->id, &next);
                if (r < 0)
                        return r;
                if (view != ws->repo.base)
                        lower_free(view); /* next holds what it needs of it */
                view = next;
        }
        ws->repo.lower = view;
        return 0;
}
