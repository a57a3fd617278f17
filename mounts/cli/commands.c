/* SPDX-License-Identifier: MIT */
/*
 * commands.c: the entry point of cloister-commands.so, the shared module
 * that holds every subcommand but run, shell and help (main.c says why
 * they are apart), and --version, which names the libraries only the
 * module links.
 */
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <git2.h>
#include <jansson.h>
#include <seccomp.h>
#include <sodium.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cloister-config.h"
#include "cloister-version.h"
#include "command.h"
#include "lib/util.h"

/* This module's own table: cmd-help.c, linked in for command_usage(), lists it. */
const struct command *const commands[] = {
        &command_check,   &command_mount,
        &command_unmount, &command_diff,
        &command_export,  &command_log,
        &command_broker,  &command_token,
        &command_secret,  &command_audit,
        &command_proxy,   &command_mcp,
        &command_init,    &command_status,
        &command_list,    &command_checkpoint,
        &command_fork,    &command_restore,
        &command_squash,  &command_report,
        &command_image,   NULL,
};

/*
 * The first line `bwrap --version` prints ("bubblewrap 0.8.0"), without a
 * shell and with a clean environment; NULL if it can't be run.
 */
static char *bwrap_version(void)
{
        char *const argv[] = {(char *)CLOISTER_BWRAP, (char *)"--version", NULL};
        char *const envp[] = {(char *)"PATH=/usr/bin:/bin", (char *)"LC_ALL=C", NULL};
        posix_spawn_file_actions_t fa;
        char buf[256];
        size_t len = 0;
        ssize_t n;
        int p[2], status;
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0)
                return NULL;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        if (posix_spawn(&pid, CLOISTER_BWRAP, &fa, NULL, argv, envp) != 0)
                pid = -1;
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
        while (pid > 0 && len < sizeof(buf) - 1 &&
               (n = read(p[0], buf + len, sizeof(buf) - 1 - len)) != 0) {
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        break;
                len += (size_t)n;
        }
        close(p[0]);
        if (pid < 0)
                return NULL;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        buf[len] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !*buf)
                return NULL;
        return strdup(buf);
}

/*
 * What a bug report needs: cloister's version and those of the libraries
 * and of the bubblewrap it runs with, as found at run time (a packaged
 * binary may run against newer libraries than it was built with).
 */
static int version_print(void)
{
        _cleanup_free_ char *bwrap = bwrap_version();
        const struct scmp_version *sv = seccomp_version();
        int gmaj = 0, gmin = 0, grev = 0;
        struct utsname u;

        git_libgit2_version(&gmaj, &gmin, &grev);
        printf("cloister %s\n", CLOISTER_VERSION);
        if (!streq(CLOISTER_VCS_VERSION, CLOISTER_VERSION))
                printf("built from git %s\n", CLOISTER_VCS_VERSION);
        printf("libfuse %s\n", fuse_pkgversion());
        printf("libgit2 %d.%d.%d\n", gmaj, gmin, grev);
        printf("libsodium %s\n", sodium_version_string());
        if (sv)
                printf("libseccomp %u.%u.%u\n", sv->major, sv->minor, sv->micro);
        printf("jansson %s\n", jansson_version_str());
        if (bwrap)
                printf("%s (%s)\n", bwrap, CLOISTER_BWRAP);
        else
                printf("bubblewrap not found at %s: cloister run and shell refuse to start\n",
                       CLOISTER_BWRAP);
        if (uname(&u) == 0)
                printf("kernel %s %s %s\n", u.sysname, u.release, u.machine);
        return fflush(stdout) == 0 ? 0 : 1;
}

/* argv[0] is the command's name (main.c checked it), or "--version". */
__attribute__((visibility("default"))) int cloister_commands_main(int argc, char **argv)
{
        const struct command *c;

        if (streq(argv[0], "--version"))
                return version_print();
        c = command_find(argv[0]);
        if (!c) {
                fprintf(stderr, "cloister: '%s' is not a cloister command; see 'cloister help'\n",
                        argv[0]);
                return EXIT_USAGE;
        }
        return c->run(argc, argv);
}
