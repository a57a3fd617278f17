/* SPDX-License-Identifier: MIT */
/*
 * cloister-exec.c: the first program of every sandbox. It runs the command
 * it is given as execvp(3) finds it, so that the command keeps this
 * process (its pid, its place in the sandbox's limits and filter), and if
 * that fails it says why in one line and exits as sh and env do: 127 when
 * the command is not found, 126 when it is found and cannot be run.
 *
 * Why a program of its own: bubblewrap executes the command itself and,
 * if it can't, exits 1 without the exit code it reports for a command
 * that ran, which cloister can't tell from a sandbox that failed to
 * build. A person (or a tool) that typed a wrong command name gets the
 * status every shell gives it, and a failed sandbox keeps 125.
 *
 * It also gives the command its environment: bubblewrap, which runs on the
 * host, is given none of it (sandbox-env.c), and the sandbox's comes here
 * on a sealed memfd, NUL-terminated NAME=VALUE entries, which this program
 * reads, closes and makes its own before the command's PATH search. PWD,
 * which bubblewrap sets to the --chdir directory, is kept unless the
 * environment names one.
 *
 * It runs inside the sandbox, under its seccomp filter, as the agent. Its
 * one option, --env-fd=N, comes first; everything after it is the command.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/quote.h"
#include "lib/readall.h"

extern char **environ;

/* Far above what an exec can take (the kernel's limit is a quarter of the stack). */
#define ENV_MAX (16 * 1024 * 1024)

/* environ from the NUL-terminated entries on fd; the fd is closed. */
static int env_load(int fd)
{
        const char *pwd = getenv("PWD");
        char *buf = NULL, **env;
        size_t len = 0, n = 0, i = 0;
        bool have_pwd = false;
        struct stat st;
        int r = fstat(fd, &st) < 0 ? -errno : 0;

        if (r == 0)
                r = fd_read_whole(fd, (size_t)st.st_size, ENV_MAX, &buf, &len);
        close(fd);
        if (r < 0)
                return r;
        if (len && buf[len - 1] != '\0')
                r = -EINVAL;
        for (size_t k = 0; k < len; k++)
                n += buf[k] == '\0';
        env = calloc(n + 2, sizeof(char *));
        if (!env)
                r = -ENOMEM;
        for (char *p = buf; r == 0 && p < buf + len; p += strlen(p) + 1) {
                if (!strchr(p, '=') || *p == '=') /* not cloister's: refuse, never guess */
                        r = -EINVAL;
                have_pwd |= strncmp(p, "PWD=", 4) == 0;
                env[i++] = p;
        }
        if (r == 0 && !have_pwd && pwd && asprintf(&env[i], "PWD=%s", pwd) >= 0)
                i++;
        if (r < 0) {
                free(env);
                free(buf);
                return r;
        }
        env[i] = NULL;
        environ = env; /* kept for the exec: this process's life ends there */
        return 0;
}

int main(int argc, char **argv)
{
        const char *opt = argc > 1 ? argv[1] : "";
        int e;

        if (strncmp(opt, "--env-fd=", 9) == 0) {
                char *end;
                long fd = strtol(opt + 9, &end, 10);

                if (*end || end == opt + 9 || fd < 0 || fd > 65535 || env_load((int)fd) < 0) {
                        fprintf(stderr, "cloister: cannot read the sandbox's environment (%s)\n",
                                opt);
                        return 125;
                }
                argv++;
                argc--;
        }
        if (argc < 2) {
                fputs("usage: cloister-exec [--env-fd=N] COMMAND [ARGS...]\n", stderr);
                return 125;
        }
        execvp(argv[1], argv + 1);
        e = errno;
        /* The name as typed, quoted if it holds bytes a terminal would act on. */
        fputs("cloister: ", stderr);
        quote_fputs(stderr, argv[1], QUOTE_UTF8);
        fprintf(stderr, ": %s\n",
                e == ENOENT && !strchr(argv[1], '/') ? "command not found" : strerror(e));
        return e == ENOENT || e == ENOTDIR ? 127 : 126;
}
