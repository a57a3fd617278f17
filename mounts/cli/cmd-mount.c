/* SPDX-License-Identifier: MIT */
/*
 * cmd-mount.c: `cloister mount CONFIG [--foreground | --no-server]`,
 * `cloister mount --server` (mount-server.c) and `cloister unmount CONFIG | --all`.
 *
 * mount forks the daemon and returns 0 only once the mount serves requests
 * (the daemon writes one byte to a pipe); if setup fails the daemon prints
 * why and the exit code is passed on. Exit 3: a live daemon already serves
 * this workspace. With a mount server of this user listening
 * (mount-server.h), the binary hands the whole command to it before it
 * loads this module (mount-client.c), and the server's handler runs it
 * here. See docs/cloister-mount.md.
 */
#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "command.h"
#include "compose.h"
#include "claims.h"
#include "config.h"
#include "fs.h"
#include "hostid.h"
#include "image.h"
#include "known.h"
#include "cli-logsink.h"
#include "lib/logsink.h"
#include "operations.h"
#include "lib/util.h"
#include "mount-server.h"
#include "sandbox.h"

#define EXIT_ALREADY 3

static int load(const struct command *cmd, const char *path, struct config **ret)
{
        _cleanup_free_ char *err = NULL;
        int r = config_load(path, ret, &err);
        if (r < 0)
                return command_fail(cmd, EXIT_USAGE, "%s", err ? err : strerror(-r));
        return 0;
}

/*
 * The filesystem of c; f holds what its options borrow, until ws is freed.
 * As root, the daemon reserves the sandbox identity that every run of this
 * workspace will have (hostid.h) and holds it, in *id, for as long as it
 * serves: the files are shown as that identity's.
 */
static int workspace_open(const struct config *c, struct compose_fs *f, fs_workspace **ws,
                          hostid **id, char **err)
{
        int r;

        *id = NULL;
        if (geteuid() == 0) {
                _cleanup_free_ char *why = NULL;

                r = hostid_acquire(c->run.host_uids.first, c->run.host_uids.last,
                                   c->workspace.state, id, &why);
                if (r < 0) {
                        if (asprintf(err, "%s: [run] host_uids: %s", c->file,
                                     why ? why : strerror(-r)) < 0)
                                *err = NULL;
                        return r;
                }
        }
        r = compose_fs_options(c, f);
        if (r < 0)
                goto fail;
        /* [image]: its digest goes in the journal's open mark, whatever the run records. */
        char image[IMAGE_DIGEST_LEN + 1];
        if (image_workspace_digest(c, image) == 0)
                f->options.image = image;
        if (*id)
                f->options.agent = (typeof(f->options.agent)){
                        .host_uid = hostid_uid(*id),
                        .host_gid = (gid_t)hostid_uid(*id),
                        .uid = SANDBOX_AGENT_UID,
                        .gid = SANDBOX_AGENT_GID,
                };
        r = fs_workspace_new(&f->options, ws, err);
        if (r < 0) {
                compose_fs_options_free(f);
                goto fail;
        }
        return 0;
fail:
        hostid_free(*id);
        *id = NULL;
        return r;
}

/* [logs] stdout = json: the journal's lines also on what stdout is now, signed (cli-logsink.h). */
static int sink_open(const struct config *c)
{
        _cleanup_free_ char *error = NULL;
        int r = cli_logsink_open(c, &error);

        if (r < 0)
                return command_fail(&command_mount, 1, "%s", error ? error : strerror(-r));
        return 0;
}

/* The daemon's stdout/stderr, once it serves: a log in the state dir. */
static void redirect_output(const struct config *c)
{
        _cleanup_free_ char *p = NULL;
        int fd, null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                dup2(null, STDIN_FILENO);
                close(null);
        }
        if (asprintf(&p, "%s/fs/daemon.log", c->workspace.state) < 0)
                return;
        fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
                close(fd);
        }
}

/* --json: the mount, once it serves (docs/cloister-mount.md). */
static void json_print(const struct config *c, int pid, bool already)
{
        json_t *o =
                json_pack("{s:s, s:s, s:s, s:o, s:b}", "workspace", c->workspace.name, "mountpoint",
                          c->workspace.mountpoint, "state", c->workspace.state, "pid",
                          pid > 0 ? json_integer(pid) : json_null(), "already_mounted", already);

        if (o)
                json_dumpf(o, stdout, JSON_COMPACT);
        putchar('\n');
        fflush(stdout);
        json_decref(o);
}

/*
 * Serve until unmounted, in this process: `--foreground`, the child that
 * `cloister mount` forks, or with --ready-fd this very process. detach:
 * from / and, once set up, with the output in the log. Errors before that
 * go to the caller's stderr, the others to the log (the caller shows its
 * last line: fs_daemon_log_error_show). One byte goes to ready_fd (if >= 0)
 * once the mount serves.
 */
static int serve(const struct config *c, int ready_fd, bool detach)
{
        struct compose_fs f;
        fs_workspace *ws = NULL;
        hostid *id = NULL;
        _cleanup_free_ char *err = NULL;
        int r;

        if (detach && chdir("/") < 0)
                return command_fail(&command_mount, 1, "cannot change to /: %s", strerror(errno));
        r = workspace_open(c, &f, &ws, &id, &err);
        if (r < 0)
                return command_fail(&command_mount, 1, "%s", err ? err : strerror(-r));
        if (detach)
                redirect_output(c);
        r = fs_workspace_serve(ws, ready_fd, &err);
        fs_workspace_free(ws);
        logsink_close(); /* the journal's final head, once its last line is written */
        compose_fs_options_free(&f);
        hostid_free(id);
        if (r < 0)
                return command_fail(&command_mount, 1, "%s", err ? err : strerror(-r));
        return 0;
}

/* The N of --ready-fd=N: an open descriptor above stderr, else -1. */
static int ready_fd_parse(const char *s)
{
        char *end;
        long n;

        errno = 0;
        n = strtol(s, &end, 10);
        if (errno || end == s || *end || n < 3 || n > INT_MAX ||
            fcntl((int)n, F_SETFD, FD_CLOEXEC) < 0)
                return -1;
        return (int)n;
}

static int mount_run(int argc, char **argv)
{
        _cleanup_config_ struct config *c = NULL;
        const char *file = NULL, *v;
        bool foreground = false, json = false, server = false, no_server = false;
        int r, pid = 0, ready_fd = -1;

        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--foreground") || streq(argv[i], "-f"))
                        foreground = true;
                else if ((v = startswith(argv[i], "--ready-fd="))) {
                        ready_fd = ready_fd_parse(v);
                        if (ready_fd < 0)
                                return command_fail(&command_mount, EXIT_USAGE,
                                                    "--ready-fd takes an open descriptor above 2");
                } else if (streq(argv[i], "--json"))
                        json = true;
                else if (streq(argv[i], "--server"))
                        server = true;
                else if (streq(argv[i], "--no-server"))
                        no_server = true;
                else if (argv[i][0] == '-')
                        return command_fail(&command_mount, EXIT_USAGE, "unknown option '%s'",
                                            argv[i]);
                else if (!file)
                        file = argv[i];
                else
                        return command_fail(&command_mount, EXIT_USAGE, "too many arguments");
        }
        if (server && (file || foreground || json || no_server || ready_fd >= 0))
                return command_fail(&command_mount, EXIT_USAGE,
                                    "--server takes no config and no other option");
        if (server)
                return mount_server_main();
        if (!file)
                return command_fail(
                        &command_mount, EXIT_USAGE,
                        "usage: cloister mount CONFIG [--foreground | --no-server] | --server");
        if (ready_fd >= 0 && (foreground || json))
                return command_fail(&command_mount, EXIT_USAGE,
                                    "--ready-fd is for `cloister run`, without --foreground or "
                                    "--json");
        /*
         * --ready-fd N: this process is the daemon, started by `cloister run`
         * (sandbox-session.c, mount_spawn), which waits for the byte on fd N, not
         * for an exit. A daemon forked from `cloister mount` cost every run from
         * cold that fork of a process with 31 libraries mapped, their
         * copy-on-write faults, and then the parent's exit; and libgit2's
         * initialization, most of the daemon's setup, could only start in the
         * child. Here it starts first (mount_run), beside the config, the
         * mountpoint's checks and the sandbox identity's reservation. The run made
         * this process the leader of its own session already.
         */
        if (ready_fd >= 0)
                fs_daemon_prepare();
        r = load(&command_mount, file, &c);
        if (r)
                return r;
        {
                _cleanup_free_ char *why = NULL;
                r = fs_mountpoint_check(c->workspace.state, c->workspace.name,
                                        c->workspace.mountpoint, c->repo.source, &why);
                if (r < 0)
                        return command_fail(&command_mount, 1, "%s: %s", c->file,
                                            why ? why : strerror(-r));
        }
        {
                /* Nowhere another workspace's agent reads or writes, nor over its paths. */
                _cleanup_free_ char *why = NULL;
                r = claims_check(c, NULL, NULL, &why);
                if (r < 0)
                        return command_fail(&command_mount, 1, "%s: %s", c->file,
                                            why ? why : strerror(-r));
        }
        {
                /* [image]: in the store before anything runs on it (image-workspace.c). */
                _cleanup_free_ char *why = NULL, *digest = NULL;
                r = image_workspace_import(c, &digest, &why);
                if (r < 0)
                        return command_fail(&command_mount, 1, "%s: %s", c->file,
                                            why ? why : strerror(-r));
        }
        /* For `cloister list`: a workspace once mounted is one this user knows; and the
         * next check finds it by where it lies. */
        (void)ops_config_remember(file);
        (void)claims_record(c);
        if (json && foreground)
                return command_fail(&command_mount, EXIT_USAGE,
                                    "--json tells how a mount in the background went; with "
                                    "--foreground nothing returns until it ends");
        r = fs_mount_probe(c->workspace.state, c->workspace.mountpoint, &pid);
        if (r > 0 && json) {
                json_print(c, pid, true);
                return EXIT_ALREADY;
        }
        if (r > 0)
                return command_fail(&command_mount, EXIT_ALREADY,
                                    "'%s' (state '%s') is already served by pid %d",
                                    c->workspace.mountpoint, c->workspace.state, pid);
        if (r < 0)
                return command_fail(&command_mount, 1, "cannot clean up '%s': %s",
                                    c->workspace.mountpoint, strerror(-r));
        if (foreground || ready_fd >= 0) {
                r = sink_open(c);
                if (r)
                        return r;
                return serve(c, foreground ? -1 : ready_fd, !foreground);
        }
        /*
         * Forked by us: in a mount server's handler (mount-server.c), which
         * the binary asked before it loaded this module (mount-client.c), or
         * in `cloister mount` where no server listens, or with --no-server
         * (the daemon then is this process's child: a systemd unit's, in its
         * cgroup, with its limits).
         */
        r = mount_daemon_fork(c, mount_server_conn, &pid);
        if (r)
                return r;
        (void)claims_record(c); /* by its state's device and inode too, now there */
        if (json)
                json_print(c, pid, false);
        return 0;
}

int mount_daemon_fork(const struct config *c, int close_in_child, int *ret_pid)
{
        int p[2], r, status;
        pid_t child;
        char byte;

        r = sink_open(c);
        if (r)
                return r;
        if (pipe2(p, O_CLOEXEC) < 0)
                return command_fail(&command_mount, 1, "pipe: %s", strerror(errno));
        fflush(NULL);
        child = fork();
        if (child < 0)
                return command_fail(&command_mount, 1, "fork: %s", strerror(errno));
        if (child == 0) {
                close(p[0]);
                if (close_in_child >= 0)
                        close(close_in_child);
                fs_daemon_prepare(); /* beside the identity's reservation */
                setsid();
                exit(serve(c, p[1], true)); /* exit, not _exit: LeakSanitizer runs at exit */
        }
        close(p[1]);
        r = (int)read(p[0], &byte, 1);
        close(p[0]);
        *ret_pid = child;
        if (r == 1)
                return 0;
        if (waitpid(child, &status, 0) < 0)
                return command_fail(&command_mount, 1, "waitpid: %s", strerror(errno));
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
                /* It failed after its output went to the log (the mount itself): say why here. */
                _cleanup_free_ char *why = fs_daemon_log_error(c->workspace.state, 0);
                if (why)
                        fprintf(stderr, "%s\n", why);
                return WEXITSTATUS(status);
        }
        return command_fail(&command_mount, 1,
                            "the daemon exited before serving (see %s/fs/daemon.log)",
                            c->workspace.state);
}

const struct command command_mount = {
        .name = "mount",
        .run = mount_run,
};

/*
 * --all: every workspace this user knows (known.h) that is mounted, all at
 * once (fs_unmount_many): a host stopping thousands of workspaces waits for
 * the slowest daemon, not for the sum of them.
 */
static int unmount_all(void)
{
        _cleanup_strv_free_ char **known = NULL;
        _cleanup_free_ const char **states = NULL, **mnts = NULL;
        _cleanup_free_ struct config **cs = NULL;
        _cleanup_free_ int *results = NULL;
        size_t n = 0, m = 0, failed = 0;
        int r = known_configs(NULL, &known, &n);

        if (r < 0)
                return command_fail(&command_unmount, 1, "cannot list the known configs: %s",
                                    strerror(-r));
        states = calloc(n + 1, sizeof(*states));
        mnts = calloc(n + 1, sizeof(*mnts));
        cs = calloc(n + 1, sizeof(*cs));
        results = calloc(n + 1, sizeof(*results));
        if (!states || !mnts || !cs || !results)
                return command_fail(&command_unmount, 1, "out of memory");
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *err = NULL;

                if (config_load(known[i], &cs[m], &err) < 0)
                        continue; /* names nothing anyone can have mounted */
                states[m] = cs[m]->workspace.state;
                mnts[m] = cs[m]->workspace.mountpoint;
                m++;
        }
        r = fs_unmount_many(states, mnts, m, 30000, results);
        for (size_t i = 0; i < m; i++) {
                if (r >= 0 && results[i] < 0) {
                        fprintf(stderr, "cloister unmount: cannot unmount '%s' (%s): %s\n", mnts[i],
                                cs[i]->file, strerror(-results[i]));
                        failed++;
                }
                config_free(cs[i]);
        }
        if (r < 0)
                return command_fail(&command_unmount, 1, "%s", strerror(-r));
        return failed ? 1 : 0;
}

static int unmount_run(int argc, char **argv)
{
        _cleanup_config_ struct config *c = NULL;
        int r;

        if (argc == 2 && streq(argv[1], "--all"))
                return unmount_all();
        if (argc != 2 || argv[1][0] == '-')
                return command_fail(&command_unmount, EXIT_USAGE,
                                    "usage: cloister unmount CONFIG | --all");
        r = load(&command_unmount, argv[1], &c);
        if (r)
                return r;
        r = fs_unmount(c->workspace.state, c->workspace.mountpoint, 30000);
        if (r < 0)
                return command_fail(&command_unmount, 1, "cannot unmount '%s': %s",
                                    c->workspace.mountpoint, strerror(-r));
        return 0;
}

const struct command command_unmount = {
        .name = "unmount",
        .run = unmount_run,
};
