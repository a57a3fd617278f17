/* SPDX-License-Identifier: MIT */
/*
 * cmd-secret.c: `cloister secret add|list|rm` manage the real secrets a
 * broker may release to a redeemer. `add` reads the secret from stdin only:
 * argv is visible to every process on the host (/proc/PID/cmdline).
 */
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker.h"
#include "command.h"
#include "config.h"
#include "policy.h"
#include "secrets.h"
#include "lib/mkdir.h"
#include "lib/util.h"

#define FAIL(code, ...) command_fail(&command_secret, code, __VA_ARGS__)

/* The broker dir of --config CONFIG (made 0700 if missing). */
static int dir_open(const char *cfgfile, int *ret_fd)
{
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *error = NULL;
        int fd, r;

        if (config_load(cfgfile, &c, &error) < 0)
                return FAIL(EXIT_USAGE, "%s", error);
        /* mkdir -p, private: the broker may not have run yet. */
        r = mkdir_p(c->broker.dir, 0700, 0700);
        if (r < 0)
                return FAIL(1, "%s: cannot create: %s", c->broker.dir, strerror(-r));
        fd = open(c->broker.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return FAIL(1, "%s: cannot open: %m", c->broker.dir);
        *ret_fd = fd;
        return 0;
}

static int secret_add(const char *name, int dirfd)
{
        unsigned char *buf = sodium_malloc(BROKER_SECRET_MAX + 1);
        size_t len = 0;
        int r;

        if (!buf)
                return FAIL(1, "out of memory");
        if (isatty(STDIN_FILENO))
                fprintf(stderr, "cloister secret: reading the secret from stdin (end with "
                                "Ctrl-D)\n");
        for (;;) {
                ssize_t n = read(STDIN_FILENO, buf + len, BROKER_SECRET_MAX + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        sodium_free(buf);
                        return FAIL(1, "cannot read stdin: %m");
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > BROKER_SECRET_MAX) {
                        sodium_free(buf);
                        return FAIL(1, "secret longer than %d bytes", BROKER_SECRET_MAX);
                }
        }
        /* `echo TOKEN |` adds a newline that is not part of the secret. */
        if (len > 0 && buf[len - 1] == '\n')
                len--;
        if (len > 0 && buf[len - 1] == '\r')
                len--;
        if (len == 0) {
                sodium_free(buf);
                return FAIL(1, "empty secret on stdin; nothing stored");
        }
        r = broker_secret_store(dirfd, name, buf, len);
        sodium_free(buf);
        if (r == -EPERM)
                return FAIL(1, "%s is accessible to group or others; refusing to use it",
                            BROKER_SECRET_KEY_FILE);
        if (r < 0)
                return FAIL(1, "cannot store secret '%s': %s", name, strerror(-r));
        fprintf(stderr, "cloister secret: stored '%s' (%zu bytes, sealed)\n", name, len);
        return 0;
}

static int secret_run(int argc, char **argv)
{
        const char *cfg = NULL, *verb = argc > 1 ? argv[1] : "", *name = NULL;
        _cleanup_close_ int dirfd = -1;
        int r;

        if (streq(verb, "--help") || streq(verb, "-h")) {
                command_usage(&command_secret);
                return 0;
        }
        for (int i = 2; i < argc; i++) {
                if (streq(argv[i], "--config") && i + 1 < argc)
                        cfg = argv[++i];
                else if (argv[i][0] == '-')
                        return FAIL(EXIT_USAGE, "unknown option '%s'", argv[i]);
                else if (!name)
                        name = argv[i];
                else
                        return FAIL(EXIT_USAGE, "too many arguments; secrets are read from "
                                                "stdin, never from the command line");
        }
        if (!cfg)
                cfg = getenv("CLOISTER_CONFIG");
        if (!cfg)
                return FAIL(EXIT_USAGE, "give --config CONFIG (or set CLOISTER_CONFIG)");
        if (sodium_init() < 0)
                return FAIL(1, "libsodium failed to initialize");
        r = broker_harden_process();
        if (r < 0)
                return FAIL(1, "cannot disable core dumps: %s", strerror(-r));
        if ((streq(verb, "add") || streq(verb, "rm")) && (!name || !broker_name_is_valid(name)))
                return FAIL(EXIT_USAGE,
                            "%s: NAME must be [A-Za-z0-9._-], at most %d, not "
                            "starting with '.'",
                            verb, BROKER_NAME_MAX);
        if (!streq(verb, "add") && !streq(verb, "rm") && !streq(verb, "list"))
                return FAIL(EXIT_USAGE, "usage: cloister secret add|list|rm ... --config "
                                        "CONFIG");
        if (streq(verb, "list") && name)
                return FAIL(EXIT_USAGE, "usage: cloister secret list --config CONFIG");
        r = dir_open(cfg, &dirfd);
        if (r)
                return r;
        if (streq(verb, "add"))
                return secret_add(name, dirfd);
        if (streq(verb, "rm")) {
                r = broker_secret_remove(dirfd, name);
                if (r == -ENOENT)
                        return FAIL(1, "no secret '%s'", name);
                if (r < 0)
                        return FAIL(1, "cannot remove '%s': %s", name, strerror(-r));
                return 0;
        }
        char **names = NULL;
        r = broker_secret_list(dirfd, &names);
        if (r < 0)
                return FAIL(1, "cannot list secrets: %s", strerror(-r));
        for (char **n = names; *n; n++)
                printf("%s\n", *n);
        strv_free(names);
        return 0;
}

const struct command command_secret = {
        .name = "secret",
        .run = secret_run,
};
