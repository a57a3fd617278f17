/* SPDX-License-Identifier: MIT */
/*
 * main.c: the `cloister` binary. Dispatches to a subcommand, git-style.
 *
 * run, shell and help are in the binary; every other command, and
 * --version, is in a shared module, cloister-commands.so, loaded only
 * for them. Why: the other commands link libgit2, libfuse, libsodium,
 * OpenSSL and libevent, 31 shared libraries with their dependencies, all
 * linked BIND_NOW by Debian; loading and relocating them was 12-15 ms of
 * every process start on the benchmark machine, more than all of `bwrap`.
 * `cloister run` needs libc, inih, jansson, libseccomp and libsodium (the
 * run record's chain, linked in: mounts/ops/meson.build) only, and it is
 * what users start most. The mount, broker and proxy it starts are
 * `/proc/self/exe VERB`, so they load the module as any command does.
 *
 * The module is looked for beside the binary first (the build tree, and
 * the sandbox, where both are bound into one directory), then at the
 * path it is installed to. Nothing in the environment changes where: a
 * variable that chose the code a root process loads would be a way in.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "command.h"
#include "mount-server.h"
#include "sandbox.h"
#include "lib/util.h"

static int module_run(int argc, char **argv);

/* The module's commands, by name: help lists them, module_run() runs them. */
#define MODULE_COMMAND(n) static const struct command module_##n = {.name = #n, .run = module_run}
MODULE_COMMAND(check);
MODULE_COMMAND(mount);
MODULE_COMMAND(unmount);
MODULE_COMMAND(diff);
MODULE_COMMAND(export);
MODULE_COMMAND(log);
MODULE_COMMAND(broker);
MODULE_COMMAND(token);
MODULE_COMMAND(secret);
MODULE_COMMAND(audit);
MODULE_COMMAND(proxy);
MODULE_COMMAND(mcp);
MODULE_COMMAND(init);
MODULE_COMMAND(status);
MODULE_COMMAND(list);
MODULE_COMMAND(checkpoint);
MODULE_COMMAND(fork);
MODULE_COMMAND(restore);
MODULE_COMMAND(squash);
MODULE_COMMAND(report);
MODULE_COMMAND(image);

const struct command *const commands[] = {
        &command_help,   &module_check,  &module_mount,  &module_unmount,    &command_run,
        &command_shell,  &module_diff,   &module_export, &module_log,        &module_broker,
        &module_token,   &module_secret, &module_audit,  &module_proxy,      &module_mcp,
        &module_init,    &module_status, &module_list,   &module_checkpoint, &module_fork,
        &module_restore, &module_squash, &module_report, &module_image,      NULL,
};

static int module_run(int argc, char **argv)
{
        char path[PATH_MAX];
        int (*entry)(int, char **);
        void *h;

        (void)sandbox_commands_module(path);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

        if (!h) {
                fprintf(stderr, "cloister: cannot load its commands (%s): %s\n", path, dlerror());
                return 1;
        }
        *(void **)&entry = dlsym(h, "cloister_commands_main");
        if (!entry) {
                fprintf(stderr, "cloister: '%s' is not cloister's commands module\n", path);
                return 1;
        }
        return entry(argc, argv);
}

int main(int argc, char **argv)
{
        const struct command *c;

        if (argc < 2) {
                fprintf(stderr, "usage: cloister COMMAND [ARGS...]; see 'cloister help'\n");
                return EXIT_USAGE;
        }
        if (streq(argv[1], "--version") || streq(argv[1], "version"))
                return module_run(1, (char *[]){(char *)"--version", NULL});
        if (streq(argv[1], "--help") || streq(argv[1], "-h"))
                return command_help.run(1, (char *[]){(char *)"help", NULL});
        if (argv[1][0] == '-') {
                fprintf(stderr, "cloister: unknown option '%s'; see 'cloister help'\n", argv[1]);
                return EXIT_USAGE;
        }
        c = command_find(argv[1]);
        if (!c) {
                fprintf(stderr, "cloister: '%s' is not a cloister command; see 'cloister help'\n",
                        argv[1]);
                return EXIT_USAGE;
        }
        /* The same help for every command, whether or not it parses --help itself. */
        if (argc == 3 && (streq(argv[2], "--help") || streq(argv[2], "-h")))
                return command_usage(c);
        /* `cloister mount CONFIG` through this user's mount server, if one listens: the
         * server has the module loaded, so this process needs not (mount-client.c). */
        if (c == &module_mount) {
                int r = mount_client_forward(argc - 1, argv + 1);

                if (r != MOUNT_SERVER_NONE)
                        return r;
        }
        return c->run(argc - 1, argv + 1);
}
