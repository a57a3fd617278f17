/* SPDX-License-Identifier: MIT */
/*
 * image-workspace.c: a workspace's [image], between the config and the
 * store.
 *
 * `cloister mount` imports [image] source when the store does not hold
 * the image yet (image_workspace_import(), in the commands module), and
 * writes the digest it resolved to <state>/image. `cloister run` only
 * reads: the digest is [image] digest, else <state>/image, and the image
 * must be in the store (image_workspace_resolve(), which links jansson
 * and nothing of libarchive). Where the config names a digest and the
 * source or the record says another, the run is refused with both.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "image-private.h"
#include "lib/mkdir.h"
#include "lib/util.h"

#define STATE_FILE "image"

static int state_read(const struct config *c, char digest[static IMAGE_DIGEST_LEN + 1])
{
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        ssize_t n;

        if (asprintf(&path, "%s/" STATE_FILE, c->workspace.state) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        n = read(fd, digest, IMAGE_DIGEST_LEN + 1);
        if (n < IMAGE_DIGEST_LEN)
                return -EBADMSG;
        digest[IMAGE_DIGEST_LEN] = '\0';
        return image_digest_valid(digest) ? 0 : -EBADMSG;
}

int image_workspace_digest(const struct config *c, char ret[static IMAGE_DIGEST_LEN + 1])
{
        if (!c->image.source)
                return -ENOENT;
        if (c->image.digest) {
                memcpy(ret, c->image.digest, IMAGE_DIGEST_LEN + 1);
                return 0;
        }
        return state_read(c, ret);
}

int image_workspace_state_write(const struct config *c, const char *digest)
{
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        _cleanup_close_ int fd = -1;
        int r = 0;

        r = mkdir_p(c->workspace.state, 0755, 0700);
        if (r < 0)
                return r;
        if (asprintf(&path, "%s/" STATE_FILE, c->workspace.state) < 0 ||
            asprintf(&tmp, "%s/." STATE_FILE ".tmp", c->workspace.state) < 0)
                return -ENOMEM;
        (void)unlink(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return negative_errno();
        if (dprintf(fd, "%s\n", digest) < 0 || rename(tmp, path) < 0)
                r = negative_errno();
        if (r < 0)
                (void)unlink(tmp);
        return r;
}

int image_workspace_resolve(const struct config *c, char **ret_root, char **ret_digest,
                            int *ret_hold, char **ret_error)
{
        _cleanup_free_ char *store = NULL, *root = NULL, *digest = NULL;
        char recorded[IMAGE_DIGEST_LEN + 1];
        int r, rs;

        *ret_root = *ret_digest = NULL;
        if (!c->image.source)
                return 0;
        rs = state_read(c, recorded);
        if (c->image.digest && rs == 0 && !streq(recorded, c->image.digest))
                return image_errorf(ret_error, -EBADMSG,
                                    "%s: [image] digest is %s, but %s is %s (imported by the "
                                    "last mount): refused; unmount and mount again to import "
                                    "the source anew",
                                    c->file, c->image.digest, c->image.source, recorded);
        if (!c->image.digest && rs < 0)
                return image_errorf(ret_error, -ENOENT,
                                    "%s: [image] source %s is not imported for this workspace: "
                                    "`cloister mount` imports it",
                                    c->file, c->image.source);
        digest = strdup(c->image.digest ? c->image.digest : recorded);
        if (!digest)
                return -ENOMEM;
        r = image_store_path(&store);
        if (r < 0)
                return image_errorf(ret_error, r, "cannot tell where the image store is: %s",
                                    strerror(-r));
        r = image_lookup(store, digest, &root, NULL, ret_error);
        if (r < 0)
                return image_errorf(ret_error, r, "%s: [image]: %s", c->file, strerror(-r));
        r = image_hold(store, digest, ret_hold, ret_error);
        if (r < 0)
                return r;
        *ret_root = TAKE_PTR(root);
        *ret_digest = TAKE_PTR(digest);
        return 0;
}
