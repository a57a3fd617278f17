/* SPDX-License-Identifier: MIT */
/*
 * cmd-check.c: `cloister check [--strict] CONFIG`: validate a workspace
 * config, check that the host paths it names exist, that the revision
 * resolves, and lint it for settings that would undermine the boundary.
 */
#include <getopt.h>
#include <git2.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "command.h"
#include "config.h"
#include "lib/util.h"

/* Every home directory the invoking person may have: $HOME, uid's, sudoer's. */
static size_t homes_collect(const char *homes[3])
{
        const char *cand[3] = {getenv("HOME"), NULL, NULL};
        struct passwd *pw = getpwuid(getuid());
        const char *sudo = getenv("SUDO_USER");
        size_t n = 0;

        if (pw && pw->pw_dir)
                cand[1] = strdupa(pw->pw_dir);
        if (sudo && (pw = getpwnam(sudo)) && pw->pw_dir)
                cand[2] = strdupa(pw->pw_dir);
        for (size_t i = 0; i < 3; i++) {
                bool dup = false;
                if (!cand[i] || cand[i][0] != '/' || streq(cand[i], "/"))
                        continue;
                for (size_t j = 0; j < n; j++)
                        dup |= streq(homes[j], cand[i]);
                if (!dup)
                        homes[n++] = strdup(cand[i]);
        }
        return n;
}

static int host_dir_check(const char *cfgfile, const char *what, const char *path, bool dir)
{
        struct stat sb;

        if (stat(path, &sb) < 0) {
                fprintf(stderr, "cloister check: %s: %s: '%s': %m\n", cfgfile, what, path);
                return -1;
        }
        if (dir && !S_ISDIR(sb.st_mode)) {
                fprintf(stderr, "cloister check: %s: %s: '%s' is not a directory\n", cfgfile, what,
                        path);
                return -1;
        }
        return 0;
}

/* The repo source must be a git repository whose rev resolves, or a plain folder. */
static int repo_check(const struct config *c)
{
        git_repository *repo = NULL;
        git_object *obj = NULL;
        int r;

        if (host_dir_check(c->file, "key 'source' in [repo]", c->repo.source, true) < 0)
                return -1;
        git_libgit2_init();
        r = git_repository_open_ext(&repo, c->repo.source, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
        if (r == GIT_ENOTFOUND) {
                git_libgit2_shutdown();
                return 0; /* a plain directory: the lower layer is the folder itself */
        }
        if (r == 0)
                r = git_revparse_single(&obj, repo, c->repo.rev);
        if (r == 0 && git_object_type(obj) != GIT_OBJECT_COMMIT) {
                git_object *commit = NULL;
                r = git_object_peel(&commit, obj, GIT_OBJECT_COMMIT);
                git_object_free(commit);
        }
        if (r < 0) {
                const git_error *e = git_error_last();
                fprintf(stderr, "cloister check: %s: key 'rev' in [repo]: '%s': %s\n", c->file,
                        c->repo.rev, e && e->message ? e->message : "cannot resolve");
        }
        git_object_free(obj);
        git_repository_free(repo);
        git_libgit2_shutdown();
        return r < 0 ? -1 : 0;
}

static int check_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"strict", no_argument, NULL, 's'},
                {"quiet", no_argument, NULL, 'q'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *error = NULL;
        bool strict = false, quiet = false;
        const char *homes[3] = {};
        char **seen = NULL;
        size_t n_homes, n_seen = 0;
        int opt, failed = 0;

        optind = 1;
        opterr = 0;
        while ((opt = getopt_long(argc, argv, "+sqh", opts, NULL)) != -1) {
                switch (opt) {
                case 's':
                        strict = true;
                        break;
                case 'q':
                        quiet = true;
                        break;
                case 'h':
                        command_usage(&command_check);
                        return 0;
                default:
                        return command_fail(&command_check, EXIT_USAGE, "unknown option '%s'",
                                            argv[optind - 1]);
                }
        }
        if (argc - optind != 1)
                return command_fail(&command_check, EXIT_USAGE,
                                    "usage: cloister check [--strict] CONFIG");

        if (config_load(argv[optind], &c, &error) < 0) {
                fprintf(stderr, "cloister check: %s\n", error ? error : "cannot load config");
                return EXIT_USAGE;
        }

        if (repo_check(c) < 0)
                failed = 1;
        for (size_t i = 0; i < c->n_mirrors; i++) {
                char what[128];
                snprintf(what, sizeof(what), "key 'source' in [mirror \"%s\"]", c->mirrors[i].name);
                if (host_dir_check(c->file, what, c->mirrors[i].source, true) < 0)
                        failed = 1;
        }
        for (size_t i = 0; i < c->home.n_seeds; i++)
                if (host_dir_check(c->file, "key 'seed' in [home]", c->home.seeds[i].source,
                                   false) < 0)
                        failed = 1;
        if (c->broker.policy &&
            host_dir_check(c->file, "key 'policy' in [broker]", c->broker.policy, false) < 0)
                failed = 1;

        n_homes = homes_collect(homes);
        for (size_t h = 0; h < MAX(n_homes, (size_t)1); h++) {
                char **lines = NULL;
                int n = config_lint(c, n_homes ? homes[h] : NULL, &lines);
                if (n < 0) {
                        fprintf(stderr, "cloister check: out of memory\n");
                        return 1;
                }
                for (int i = 0; i < n; i++) {
                        bool dup = false;
                        for (size_t j = 0; j < n_seen; j++)
                                dup |= streq(seen[j], lines[i]);
                        if (dup)
                                continue;
                        char **nv = realloc(seen, (n_seen + 1) * sizeof(char *));
                        if (!nv)
                                break;
                        seen = nv;
                        seen[n_seen++] = strdup(lines[i]);
                        fprintf(stderr, "cloister check: %s: %s\n", strict ? "error" : "warning",
                                lines[i]);
                }
                strv_free(lines);
        }
        for (size_t h = 0; h < n_homes; h++)
                free((char *)homes[h]);
        for (size_t j = 0; j < n_seen; j++)
                free(seen[j]);
        free(seen);

        if (failed)
                return 1;
        if (strict && n_seen > 0)
                return 1;
        if (!quiet)
                printf("%s: ok%s\n", c->file, n_seen ? " (with warnings)" : "");
        return 0;
}

const struct command command_check = {
        .name = "check",
        .run = check_run,
};
