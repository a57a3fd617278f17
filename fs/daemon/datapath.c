/* SPDX-License-Identifier: MIT */
/*
 * datapath.c: which data path the daemon serves on, for `cloister status`:
 * the transport and the kernel features negotiated at FUSE_INIT, in
 * <state>/fs/datapath.json, written once the kernel has answered and read
 * by anyone who asks (the file is the daemon's; a reader only parses it).
 *
 * {"transport":"/dev/fuse","io_uring":false,"io_uring_why":"...","killpriv_v2":true,
 *  "passthrough":false,"zero_message_opens":true,"zero_message_opens_why":""}
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon.h"
#include "fs.h"
#include "lib/util.h"

#define DATAPATH_FILE "datapath.json"
#define DATAPATH_MAX  4096 /* the file is ours, but read it bounded all the same */

int datapath_write(struct fs_workspace *ws)
{
        _cleanup_close_ int fsdir = -1, fd = -1;
        _cleanup_free_ char *s = NULL;
        json_t *o;
        size_t len;

        /* Passthrough is not used (docs/performance.md says why). */
        o = json_pack("{s:s, s:b, s:s, s:b, s:b, s:b, s:s}", "transport",
                      ws->uring ? "io_uring" : "/dev/fuse", "io_uring", ws->uring, "io_uring_why",
                      ws->uring       ? ""
                      : ws->uring_why ? ws->uring_why
                                      : "not negotiated",
                      "killpriv_v2", ws->killpriv_v2, "passthrough", 0, "zero_message_opens",
                      ws->parts_split, "zero_message_opens_why",
                      ws->parts_split ? (ws->parts_why ? ws->parts_why : "")
                      : ws->parts_why ? ws->parts_why
                                      : "not set up yet");
        if (!o)
                return -ENOMEM;
        s = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        if (!s)
                return -ENOMEM;
        len = strlen(s);
        fsdir = openat(ws->state_fd, "fs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fsdir < 0)
                return negative_errno();
        fd = openat(fsdir, DATAPATH_FILE ".tmp",
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, s, len) != (ssize_t)len || write(fd, "\n", 1) != 1 ||
            renameat(fsdir, DATAPATH_FILE ".tmp", fsdir, DATAPATH_FILE) < 0)
                return negative_errno();
        return 0;
}

int fs_datapath_read(const char *state, struct fs_datapath *ret)
{
        _cleanup_free_ char *p = NULL;
        _cleanup_close_ int fd = -1;
        char buf[DATAPATH_MAX];
        json_error_t e;
        json_t *o, *t, *why, *zwhy;
        ssize_t k;
        int r = 0;

        if (asprintf(&p, "%s/fs/" DATAPATH_FILE, state) < 0)
                return -ENOMEM;
        fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        k = read(fd, buf, sizeof(buf) - 1);
        if (k < 0)
                return negative_errno();
        buf[k] = 0;
        o = json_loads(buf, 0, &e);
        if (!o)
                return -EBADMSG;
        t = json_object_get(o, "transport");
        why = json_object_get(o, "io_uring_why");
        zwhy = json_object_get(o, "zero_message_opens_why");
        if (!json_is_string(t) || strlen(json_string_value(t)) >= sizeof(ret->transport) ||
            (why && (!json_is_string(why) ||
                     strlen(json_string_value(why)) >= sizeof(ret->io_uring_why))) ||
            !json_is_boolean(json_object_get(o, "io_uring")) ||
            !json_is_boolean(json_object_get(o, "killpriv_v2")) ||
            !json_is_boolean(json_object_get(o, "passthrough")) ||
            (zwhy && (!json_is_string(zwhy) ||
                      strlen(json_string_value(zwhy)) >= sizeof(ret->zero_message_opens_why)))) {
                r = -EBADMSG;
        } else {
                snprintf(ret->transport, sizeof(ret->transport), "%s", json_string_value(t));
                /* A daemon from before io_uring_why (still mounted across an upgrade). */
                snprintf(ret->io_uring_why, sizeof(ret->io_uring_why), "%s",
                         why ? json_string_value(why) : "");
                ret->io_uring = json_is_true(json_object_get(o, "io_uring"));
                ret->killpriv_v2 = json_is_true(json_object_get(o, "killpriv_v2"));
                ret->passthrough = json_is_true(json_object_get(o, "passthrough"));
                /* A daemon from before the split parts: every open was a message. */
                ret->zero_message_opens = json_is_true(json_object_get(o, "zero_message_opens"));
                snprintf(ret->zero_message_opens_why, sizeof(ret->zero_message_opens_why), "%s",
                         zwhy ? json_string_value(zwhy) : "");
        }
        json_decref(o);
        return r;
}
