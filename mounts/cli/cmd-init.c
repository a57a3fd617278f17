/* SPDX-License-Identifier: MIT */
/*
 * cmd-init.c: `cloister init [DIR] [--name NAME] [--output FILE] [--force]`:
 * a working config for the git repository at DIR, that `cloister check
 * --strict` passes and `cloister run` takes at once (docs/cloister-init.md).
 *
 * The home is hidden, so a toolchain installed in the user's home (rustup's
 * ~/.cargo and ~/.rustup, ~/go, nvm's node, ~/.local/bin) does not exist in
 * the sandbox: a build that wants cargo fails there. init looks for the ones
 * the repository needs (Cargo.toml, go.mod, package.json, ...) or the user's
 * PATH goes through, and writes each as a read-only mirror on the
 * sandbox's PATH, with a comment saying why.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <git2.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "command.h"
#include "config.h"
#include "lint.h"
#include "operations.h"
#include "lib/mkdir.h"
#include "lib/util.h"
#include "lib/values.h"

/* A toolchain a user installs in the home, and what says a repository uses it. */
struct toolchain {
        const char *name;     /* the mirror's */
        const char *dir;      /* below the home */
        const char *bin;      /* its folder of programs, or NULL */
        const char *env;      /* the variable that says where it is, or NULL */
        const char *needs[4]; /* files at the repository's top that need it */
        const char *why;
};

static const struct toolchain toolchains[] = {
        {"cargo",
         ".cargo",
         "bin",
         NULL,
         {"Cargo.toml", "rust-toolchain", "rust-toolchain.toml"},
         "rustup's cargo and rustc"},
        {"rustup",
         ".rustup",
         NULL,
         "RUSTUP_HOME",
         {"Cargo.toml", "rust-toolchain", "rust-toolchain.toml"},
         "the Rust toolchains that ~/.cargo/bin's programs run"},
        {"go", "go", "bin", NULL, {"go.mod", "go.work"}, "Go's installed programs (GOPATH/bin)"},
        {"node",
         ".nvm",
         "bin",
         NULL,
         {"package.json", ".nvmrc", ".node-version"},
         "nvm's node and npm"},
        {"local-bin",
         ".local/bin",
         ".",
         NULL,
         {NULL},
         "programs installed with pip --user, pipx, ..."},
};

static bool exists_dir(const char *p)
{
        struct stat st;

        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists_at(const char *dir, const char *name)
{
        _cleanup_free_ char *p = NULL;

        return asprintf(&p, "%s/%s", dir, name) >= 0 && access(p, F_OK) == 0;
}

/* Whether an entry of PATH is dir or below it. */
static bool on_path(const char *dir)
{
        _cleanup_free_ char *path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
        char *save = NULL;

        for (char *e = path ? strtok_r(path, ":", &save) : NULL; e;
             e = strtok_r(NULL, ":", &save)) {
                const char *rest = startswith(e, dir);
                if (rest && (*rest == '\0' || *rest == '/'))
                        return true;
        }
        return false;
}

/*
 * nvm keeps one folder per node version: the one on PATH (nvm's current),
 * else the newest by name. *ret: below the home, e.g. ".nvm/versions/node/v20.1.0".
 */
static int nvm_version(const char *home, char **ret)
{
        _cleanup_free_ char *base = NULL, *best = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        if (asprintf(&base, "%s/.nvm/versions/node", home) < 0)
                return -ENOMEM;
        d = opendir(base);
        while (d && (de = readdir(d))) {
                _cleanup_free_ char *full = NULL;
                if (de->d_name[0] != 'v' || asprintf(&full, "%s/%s", base, de->d_name) < 0)
                        continue;
                if (on_path(full) || !best ||
                    (strverscmp(de->d_name, best) > 0 && !on_path(base))) {
                        free(best);
                        best = strdup(de->d_name);
                        if (on_path(full))
                                break;
                }
        }
        if (!best)
                return -ENOENT;
        return asprintf(ret, ".nvm/versions/node/%s", best) < 0 ? -ENOMEM : 0;
}

/* The mirrors for the toolchains found, as config text. */
static void toolchains_write(FILE *f, const char *home, const char *top)
{
        bool any = false, cargo = false;

        if (!home || streq(home, "/"))
                return;
        for (size_t i = 0; i < ELEMENTSOF(toolchains); i++) {
                const struct toolchain *t = &toolchains[i];
                _cleanup_free_ char *rel = NULL, *dir = NULL, *bin = NULL;
                bool needed = false;

                if (streq(t->name, "node") ? nvm_version(home, &rel) < 0 : !(rel = strdup(t->dir)))
                        continue;
                if (asprintf(&dir, "%s/%s", home, rel) < 0 || !exists_dir(dir))
                        continue;
                for (size_t k = 0; k < ELEMENTSOF(t->needs) && t->needs[k]; k++)
                        needed |= exists_at(top, t->needs[k]);
                if (t->bin && asprintf(&bin, "%s/%s", dir, t->bin) < 0)
                        continue;
                /* rustup's home goes with cargo's: its programs are rustup's proxies. */
                if (!needed && !(bin && on_path(streq(t->bin, ".") ? dir : bin)) &&
                    !(streq(t->name, "rustup") && cargo))
                        continue;
                cargo |= streq(t->name, "cargo");
                if (!any)
                        fprintf(f,
                                "# Toolchains in your home. The home is hidden, so without these\n"
                                "# read-only mirrors they would not exist in the sandbox.\n");
                any = true;
                fprintf(f, "\n# %s: %s; %s.\n", rel, t->why,
                        needed                              ? "this repository needs it"
                        : streq(t->name, "rustup") && cargo ? "cargo needs it"
                                                            : "your PATH has it");
                fprintf(f, "[mirror \"%s\"]\nsource = %s\npath = /opt/home/%s\n", t->name, dir,
                        t->name);
                if (t->bin)
                        fprintf(f, "# on the sandbox's PATH, before the system's\nbin = %s\n",
                                t->bin);
                if (t->env)
                        fprintf(f, "# set to the mirror's path in the sandbox\nenv = %s\n", t->env);
                if (streq(t->name, "cargo"))
                        fprintf(f, "# registry tokens stay out\nexclude = credentials, "
                                   "credentials.toml\n");
        }
        if (any)
                fputc('\n', f);
}

/* A workspace name from the folder's: what [workspace] name allows, or "workspace". */
static char *name_from(const char *top)
{
        const char *base = strrchr(top, '/') ? strrchr(top, '/') + 1 : top;
        char *n = strndup(base, 64);

        if (!n)
                return NULL;
        for (char *p = n; *p; p++)
                if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-",
                            *p))
                        *p = '-';
        while (n[0] == '.' || n[0] == '-')
                memmove(n, n + 1, strlen(n));
        if (!value_name_is_valid(n, 64, false)) {
                free(n);
                n = strdup("workspace");
        }
        return n;
}

/* Every finding of the lint, as check --strict prints them; 0 if none. */
static size_t lint_report(const char *path)
{
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        struct lint out = {0};
        size_t n;

        if (config_load(path, &c, &err) < 0) {
                fprintf(stderr, "cloister init: %s\n", err ? err : "the config does not load");
                return 1;
        }
        if (config_lint(c, getenv("HOME"), &out) < 0)
                return 1;
        for (size_t i = 0; i < out.n; i++) {
                _cleanup_free_ char *line = lint_finding_format(&out.findings[i]);
                fprintf(stderr, "cloister init: %s\n", line ? line : "a finding");
        }
        n = out.n;
        lint_done(&out);
        return n;
}

static int init_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"name", required_argument, NULL, 'n'},
                {"output", required_argument, NULL, 'o'},
                {"force", no_argument, NULL, 'f'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_free_ char *top = NULL, *name = NULL, *cfgdir = NULL, *statedir = NULL,
                            *out = NULL, *tmp = NULL, *text = NULL;
        const char *dir = ".", *want_name = NULL, *output = NULL, *home = getenv("HOME");
        git_repository *repo = NULL;
        bool force = false;
        size_t len = 0;
        FILE *f;
        int opt, fd, k;

        while ((opt = getopt_long(argc, argv, "ho:n:f", opts, NULL)) >= 0) {
                switch (opt) {
                case 'n':
                        want_name = optarg;
                        break;
                case 'o':
                        output = optarg;
                        break;
                case 'f':
                        force = true;
                        break;
                case 'h':
                        command_usage(&command_init);
                        return 0;
                default:
                        return EXIT_USAGE;
                }
        }
        if (optind < argc)
                dir = argv[optind++];
        if (optind < argc)
                return command_fail(&command_init, EXIT_USAGE,
                                    "expected at most one DIR; see 'cloister help init'");
        if (want_name && !value_name_is_valid(want_name, 64, false))
                return command_fail(&command_init, EXIT_USAGE,
                                    "--name: '%s' is not 1-64 of A-Z a-z 0-9 . _ - (not starting "
                                    "with . or -)",
                                    want_name);
        /* The repository DIR is in: its top, or the git folder of a bare one. */
        git_libgit2_init();
        k = git_repository_open_ext(&repo, dir, 0, NULL);
        if (k == 0) {
                const char *wd = git_repository_workdir(repo);
                top = realpath(wd ? wd : git_repository_path(repo), NULL);
        }
        git_repository_free(repo);
        git_libgit2_shutdown();
        if (k < 0 || !top)
                return command_fail(&command_init, 1,
                                    "'%s' is not in a git repository (cloister init makes a "
                                    "workspace of one)",
                                    dir);
        name = want_name ? strdup(want_name) : name_from(top);
        if (!name || ops_xdg_dir("state", &statedir) < 0)
                return command_fail(&command_init, 1, "cannot find your home ($HOME)");
        if (output) {
                out = strdup(output);
        } else {
                if (ops_xdg_dir("config", &cfgdir) < 0 ||
                    asprintf(&out, "%s/%s.ini", cfgdir, name) < 0)
                        return command_fail(&command_init, 1, "cannot find your home ($HOME)");
                k = mkdir_p(cfgdir, 0755, 0755);
                if (k < 0)
                        return command_fail(&command_init, 1, "cannot create %s: %s", cfgdir,
                                            strerror(-k));
        }
        if (!out)
                return 1;
        if (!force && access(out, F_OK) == 0)
                return command_fail(&command_init, 1,
                                    "%s exists; --force replaces it, --output writes elsewhere",
                                    out);

        f = open_memstream(&text, &len);
        if (!f)
                return 1;
        fprintf(f,
                "# cloister workspace for %s, written by `cloister init`.\n"
                "# Every key is in docs/config.md (man 5 cloister.ini); check it with\n"
                "#   cloister check --strict %s\n\n",
                top, out);
        fprintf(f,
                "[workspace]\n# names the workspace: the export ref is refs/cloister/%s\n"
                "name = %s\n# the agent's writes, the journal and the logs (never in the "
                "repository)\nstate = %s/%s\n\n",
                name, name, statedir, name);
        fprintf(f,
                "[repo]\n# never changed: the agent works on a copy-on-write view of it\n"
                "source = %s\n# the revision the workspace starts from\nrev = HEAD\n"
                "# where the agent sees it\npath = /workspace\n\n",
                top);
        fprintf(f,
                "[home]\n# the agent's $HOME: empty, so your ~/.ssh, ~/.aws and dotfiles "
                "are not there\npath = /home/agent\n# forgotten at unmount\npersist = false\n\n");
        toolchains_write(f, home, top);
        fprintf(f, "[limits]\n# bytes and files the agent may write\nbytes = 4G\nfiles = 100000\n"
                   "# wall clock of one run\ntimeout = 1h\n# memory of each process (as root: "
                   "of the sandbox)\nmemory = 4G\n# processes at once\nprocesses = 512\n\n");
        fprintf(f, "[network]\n# no network at all; `proxy` gives an allow-listed one "
                   "(docs/network.md)\nmode = none\n");
        if (fclose(f) != 0)
                return 1;
        /* Atomically: a half-written config must never be there to run. */
        if (asprintf(&tmp, "%s.tmp.XXXXXX", out) < 0)
                return 1;
        fd = mkstemp(tmp);
        if (fd < 0)
                return command_fail(&command_init, 1, "cannot write %s: %m", out);
        if (write(fd, text, len) != (ssize_t)len || fchmod(fd, 0644) < 0 || fsync(fd) < 0 ||
            close(fd) < 0) {
                (void)unlink(tmp);
                return command_fail(&command_init, 1, "cannot write %s: %m", out);
        }
        if (lint_report(tmp) != 0) {
                (void)unlink(tmp);
                return command_fail(&command_init, 1,
                                    "the config it made is not clean (above); nothing was written");
        }
        if (rename(tmp, out) < 0) {
                (void)unlink(tmp);
                return command_fail(&command_init, 1, "cannot write %s: %m", out);
        }
        printf("%s\n", out);
        fprintf(stderr, "cloister init: wrote %s; try: cloister run %s -- git status\n", out, out);
        return 0;
}

const struct command command_init = {
        .name = "init",
        .run = init_run,
};
