/* SPDX-License-Identifier: MIT */
/*
 * cli-logsink.c: the daemons' [logs] stdout = json sink and its key
 * (cli-logsink.h).
 *
 * Why the broker's key: its public half is already what a verifier of the
 * workspace's tokens has (`cloister broker public-key`), it lives in the
 * state, which the agent never sees, and it stays in sodium_malloc'd
 * memory here as in the broker. Every daemon of the workspace runs as the
 * same host user as the broker, who can read the key anyway; the agent
 * cannot. The key file is made under the directory's flock (keys.c), since
 * the mount and the broker of a first run start together.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli-logsink.h"
#include "config.h"
#include "keys.h"
#include "lib/errorf.h"
#include "lib/logsink.h"
#include "lib/mkdir.h"
#include "lib/util.h"

int cli_logsink_add(const struct config *c, char **ret_error)
{
        _cleanup_close_ int dirfd = -1;
        broker_keyring *kr = NULL;
        const struct broker_key *k;
        int r;

        if (!c->logs.stdout_json)
                return 0;
        if (sodium_init() < 0)
                return errorf(ret_error, -EIO, "libsodium failed to initialize");
        r = mkdir_p(c->broker.dir, 0700, 0700);
        if (r < 0)
                return errorf(ret_error, r, "%s: [logs] stdout = json: cannot create %s: %s",
                              c->file, c->broker.dir, strerror(-r));
        dirfd = open(c->broker.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dirfd < 0)
                return errorf(ret_error, negative_errno(),
                              "%s: [logs] stdout = json: cannot open %s: %m", c->file,
                              c->broker.dir);
        r = broker_keyring_load(dirfd, c->broker.dir, true, &kr, ret_error);
        if (r < 0)
                return r;
        k = broker_keyring_current(kr);
        if (!k || !k->sk) {
                broker_keyring_free(kr);
                return errorf(ret_error, -ENOKEY, "%s/%s: no current signing key", c->broker.dir,
                              BROKER_KEY_FILE);
        }
        r = logsink_set_key(c->workspace.name, k->sk, k->kid);
        broker_keyring_free(kr);
        if (r < 0)
                return errorf(ret_error, r, "%s: [logs] stdout = json: cannot keep the key: %s",
                              c->file, strerror(-r));
        return 0;
}

int cli_logsink_open(const struct config *c, char **ret_error)
{
        int r;

        if (!c->logs.stdout_json)
                return 0;
        r = logsink_open_stdout(c->workspace.name);
        if (r < 0)
                return errorf(ret_error, r,
                              "%s: [logs] stdout = json: cannot open standard output: %s", c->file,
                              strerror(-r));
        r = cli_logsink_add(c, ret_error);
        if (r < 0)
                logsink_close();
        return r;
}
