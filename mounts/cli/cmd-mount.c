/* SPDX-License-Identifier: MIT */
/*
 * cmd-mount.c: `cloister mount CONFIG [--foreground]` and
 * `cloister unmount CONFIG`.
 *
 * mount forks the daemon and returns 0 only once the mount serves requests
 * (the daemon writes one byte to a pipe); if setup fails the daemon prints
 * why and the exit code is passed on. Exit 3: a live daemon already serves
 * this workspace. See docs/cloister-mount.md.
 */
#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "command.h"
#include "compose.h"
#include "config.h"
#include "fs.h"
#include "hostid.h"
#include "lib/logsink.h"
#include "operations.h"
#include "lib/util.h"
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

/* [logs] stdout = json: the journal's lines also on what stdout is now. */
static int sink_open(const struct config *c)
{
        int r;

        if (!c->logs.stdout_json)
                return 0;
        r = logsink_open_stdout(c->workspace.name);
        if (r < 0)
                return command_fail(&command_mount, 1,
                                    "%s: [logs] stdout = json: cannot open standard output: %s",
                                    c->file, strerror(-r));
        return 0;
}

static int serve(const struct config *c, int ready_fd)
{
        struct compose_fs f;
        fs_workspace *ws = NULL;
        hostid *id = NULL;
        _cleanup_free_ char *err = NULL;
        int r;

        r = workspace_open(c, &f, &ws, &id, &err);
        if (r < 0)
                return command_fail(&command_mount, 1, "%s", err ? err : strerror(-r));
        r = fs_workspace_serve(ws, ready_fd, &err);
        fs_workspace_free(ws);
        compose_fs_options_free(&f);
        hostid_free(id);
        if (r < 0)
                return command_fail(&command_mount, 1, "%s", err ? err : strerror(-r));
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

/*
 * The last line of the daemon's log on our stderr, if it is the daemon's
 * own error ("cloister mount: ..."): a mount that fails once its output
 * went to the log (FUSE refused, in a container without CAP_SYS_ADMIN, say)
 * would otherwise say nothing where it was started.
 */
static void log_last_line_show(const struct config *c)
{
        _cleanup_free_ char *p = NULL;
        _cleanup_close_ int fd = -1;
        char buf[4096], *line;
        struct stat st;
        ssize_t n;
        off_t at;

        if (asprintf(&p, "%s/fs/daemon.log", c->workspace.state) < 0)
                return;
        fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return;
        at = st.st_size > (off_t)sizeof(buf) - 1 ? st.st_size - (off_t)sizeof(buf) + 1 : 0;
        n = pread(fd, buf, sizeof(buf) - 1, at);
        if (n <= 0)
                return;
        buf[n] = '\0';
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        line = strrchr(buf, '\n');
        line = line ? line + 1 : buf;
        if (!startswith(line, "cloister mount: "))
                return;
        /* libfuse's (or fusermount3's) own reason is the line before ours. */
        if (line > buf) {
                char *prev;

                line[-1] = '\0';
                prev = strrchr(buf, '\n');
                prev = prev ? prev + 1 : buf;
                if (startswith(prev, "fuse: ") || startswith(prev, "fusermount3: "))
                        fprintf(stderr, "%s\n", prev);
        }
        fprintf(stderr, "%s\n", line);
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

static int mount_run(int argc, char **argv)
{
        _cleanup_config_ struct config *c = NULL;
        const char *file = NULL;
        bool foreground = false, json = false;
        int p[2], r, pid = 0, status;
        pid_t child;
        char byte;

        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--foreground") || streq(argv[i], "-f"))
                        foreground = true;
                else if (streq(argv[i], "--json"))
                        json = true;
                else if (argv[i][0] == '-')
                        return command_fail(&command_mount, EXIT_USAGE, "unknown option '%s'",
                                            argv[i]);
                else if (!file)
                        file = argv[i];
                else
                        return command_fail(&command_mount, EXIT_USAGE, "too many arguments");
        }
        if (!file)
                return command_fail(&command_mount, EXIT_USAGE,
                                    "usage: cloister mount CONFIG [--foreground]");
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
        /* For `cloister list`: a workspace once mounted is one this user knows. */
        (void)ops_config_remember(file);
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
        r = sink_open(c);
        if (r)
                return r;
        if (foreground)
                return serve(c, -1);

        if (pipe2(p, O_CLOEXEC) < 0)
                return command_fail(&command_mount, 1, "pipe: %s", strerror(errno));
        fflush(NULL);
        child = fork();
        if (child < 0)
                return command_fail(&command_mount, 1, "fork: %s", strerror(errno));
        if (child == 0) {
                close(p[0]);
                fs_daemon_prepare(); /* beside the identity's reservation */
                setsid();
                if (chdir("/") < 0)
                        _exit(1);
                /* Errors before serving go to the caller's stderr; after, to the log. */
                {
                        struct compose_fs f;
                        fs_workspace *ws = NULL;
                        hostid *id = NULL;
                        _cleanup_free_ char *err = NULL;
                        r = workspace_open(c, &f, &ws, &id, &err);
                        if (r < 0)
                                _exit(command_fail(&command_mount, 1, "%s",
                                                   err ? err : strerror(-r)));
                        redirect_output(c);
                        r = fs_workspace_serve(ws, p[1], &err);
                        if (r < 0)
                                fprintf(stderr, "cloister mount: %s\n", err ? err : strerror(-r));
                        fs_workspace_free(ws);
                        compose_fs_options_free(&f);
                        hostid_free(id);
                        exit(r < 0 ? 1 : 0); /* exit, not _exit: LeakSanitizer runs at exit */
                }
        }
        close(p[1]);
        r = (int)read(p[0], &byte, 1);
        close(p[0]);
        if (r == 1 && json) {
                (void)fs_mount_probe(c->workspace.state, c->workspace.mountpoint, &pid);
                json_print(c, pid, false);
        }
        if (r == 1)
                return 0;
        if (waitpid(child, &status, 0) < 0)
                return command_fail(&command_mount, 1, "waitpid: %s", strerror(errno));
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
                /* It failed after its output went to the log (the mount itself): say why here. */
                log_last_line_show(c);
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

static int unmount_run(int argc, char **argv)
{
        _cleanup_config_ struct config *c = NULL;
        int r;

        if (argc != 2 || argv[1][0] == '-')
                return command_fail(&command_unmount, EXIT_USAGE, "usage: cloister unmount CONFIG");
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
