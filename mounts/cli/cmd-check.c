/* SPDX-License-Identifier: MIT */
/*
 * cmd-check.c: `cloister check [--strict] [--json] CONFIG`: check a
 * workspace's blueprint whole before anything runs: the config, the broker
 * policy it names (parsed by the broker's own parser), the host paths and
 * revision they name, the security lint, and the cross-checks of the files
 * against each other and the host (blueprint.c).
 *
 * Every finding is collected first and then printed, as text on stderr or
 * as JSON lines on stdout, so one run reports everything it can.
 */
#include <fcntl.h>
#include <getopt.h>
#include <git2.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blueprint.h"
#include "command.h"
#include "claims.h"
#include "config.h"
#include "lint.h"
#include "policy.h"
#include "sandbox.h"
#include "lib/util.h"

struct check {
        struct lint out;
        bool invalid; /* a file did not parse: exit 2 */
};

/* Every home directory the invoking person may have: $HOME, uid's, sudoer's. */
static size_t homes_collect(char *homes[3])
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
                if (!dup && (homes[n] = strdup(cand[i])))
                        n++;
        }
        return n;
}

/* 1 if path exists (and is a directory, if dir); else 0 and an error finding. */
static int host_path_check(struct check *ck, const struct config *c, unsigned line,
                           const char *section, const char *key, const char *path, bool dir)
{
        struct stat sb;

        if (stat(path, &sb) < 0)
                return lint_add(&ck->out, LINT_ERROR, c->file, line, section, key, "'%s': %s", path,
                                strerror(errno));
        if (dir && !S_ISDIR(sb.st_mode))
                return lint_add(&ck->out, LINT_ERROR, c->file, line, section, key,
                                "'%s' is not a directory", path);
        return 1;
}

/*
 * The repo source must be a git repository whose rev resolves, or a plain
 * folder. The repository goes to bp, for the remote cross-checks.
 */
static int repo_check(struct check *ck, const struct config *c, struct blueprint *bp)
{
        git_repository *repo = NULL;
        git_object *obj = NULL;
        int r;

        r = git_repository_open_ext(&repo, c->repo.source, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
        if (r == GIT_ENOTFOUND)
                return 0; /* a plain directory: the lower layer is the folder itself */
        if (r < 0) {
                const git_error *e = git_error_last();
                bp->repo_broken = true;
                return lint_add(&ck->out, LINT_ERROR, c->file, 0, "repo", "source",
                                "'%s': cannot open the git repository: %s", c->repo.source,
                                e && e->message ? e->message : "unknown error");
        }
        r = git_revparse_single(&obj, repo, c->repo.rev);
        if (r == 0 && git_object_type(obj) != GIT_OBJECT_COMMIT) {
                git_object *commit = NULL;
                r = git_object_peel(&commit, obj, GIT_OBJECT_COMMIT);
                git_object_free(commit);
        }
        git_object_free(obj);
        if (r < 0) {
                const git_error *e = git_error_last();
                r = lint_add(&ck->out, LINT_ERROR, c->file, 0, "repo", "rev", "'%s': %s",
                             c->repo.rev, e && e->message ? e->message : "cannot resolve");
                git_repository_free(repo);
                return r;
        }
        bp->repo = repo;
        return 0;
}

/* Parse the policy with the broker's parser; NULL in *ret if it does not load. */
static int policy_check(struct check *ck, const struct config *c, struct broker_policy **ret)
{
        _cleanup_free_ char *error = NULL;
        struct stat sb;

        /* A policy that is not there is a missing host path, like a mirror's. */
        if (stat(c->broker.policy, &sb) < 0)
                return host_path_check(ck, c, 0, "broker", "policy", c->broker.policy, false);
        (void)sb;
        if (broker_policy_load(c->broker.policy, ret, &error) == 0)
                return 0;
        ck->invalid = true;
        if (!error)
                return lint_add(&ck->out, LINT_ERROR, c->broker.policy, 0, NULL, NULL,
                                "cannot load the policy");
        return lint_add_error(&ck->out, LINT_ERROR, c->broker.policy, error);
}

static int lint_run(struct check *ck, const struct config *c)
{
        char *homes[3] = {};
        size_t n = homes_collect(homes);
        int r = 0;

        for (size_t h = 0; r >= 0 && h < MAX(n, (size_t)1); h++)
                r = config_lint(c, n ? homes[h] : NULL, &ck->out);
        for (size_t h = 0; h < n; h++)
                free(homes[h]);
        return r;
}

/*
 * A root-run sandbox in a container whose root is the host's root: the
 * opt-out key is always worth a warning; without it, where `cloister run`
 * as root would refuse (sandbox-hostroot.c), check says so first.
 */
static int host_root_check(struct check *ck, const struct config *c)
{
        _cleanup_free_ char *why = NULL;
        int r;

        if (c->run.allow_host_root)
                return lint_add(&ck->out, LINT_WARNING, c->file, 0, "run", "allow_host_root",
                                "true: as root, the sandbox runs even in a container whose root is "
                                "the host's root, as real host uids ([run] host_uids) that "
                                "cloister can't see the host's users of; give the container a "
                                "user namespace instead (docs/deploy.md)");
        if (geteuid() != 0)
                return 0;
        r = sandbox_host_root_detect(&why);
        if (r == 0)
                return 0;
        if (r == -ENOMEM)
                return r;
        return lint_add(&ck->out, LINT_ERROR, c->file, 0, "run", "allow_host_root",
                        "%s: `cloister run` as root refuses to start here (give the container "
                        "a user namespace: podman --uidmap, Kubernetes hostUsers: false)",
                        why ? why : "cannot tell whether this is a container");
}

/* Everything check can find about c; -ENOMEM only. */
static int blueprint_collect(struct check *ck, const struct config *c)
{
        struct blueprint bp = {.config = c, .broker_dirfd = -1};
        struct broker_policy *policy = NULL;
        int r, source;

        r = source = host_path_check(ck, c, 0, "repo", "source", c->repo.source, true);
        for (size_t i = 0; r >= 0 && i < c->n_mirrors; i++) {
                char sec[96];
                snprintf(sec, sizeof(sec), "mirror \"%s\"", c->mirrors[i].name);
                r = host_path_check(ck, c, c->mirrors[i].line, sec, "source", c->mirrors[i].source,
                                    true);
        }
        for (size_t i = 0; r >= 0 && i < c->home.n_seeds; i++)
                r = host_path_check(ck, c, c->home.seeds[i].line, "home", "seed",
                                    c->home.seeds[i].source, false);
        if (r >= 0 && source > 0)
                r = repo_check(ck, c, &bp);
        if (r >= 0 && c->broker.policy)
                r = policy_check(ck, c, &policy);
        if (r >= 0)
                r = lint_run(ck, c);
        /* The [inject] rules' checks of deny, allow and secrets need no policy. */
        if (r >= 0 && (policy || c->n_injects)) {
                bp.policy = policy;
                bp.broker_dirfd =
                        open(c->broker.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                bp.broker_dir_error = bp.broker_dirfd < 0 ? negative_errno() : 0;
                r = blueprint_check(&bp, &ck->out);
        }
        if (r >= 0) {
                /* Where its state and mountpoint lie, against every known workspace. */
                _cleanup_free_ char *why = NULL;
                const char *section = "workspace", *key = "state";
                int k = claims_check(c, &section, &key, &why);
                if (k == -ENOMEM)
                        r = k;
                else if (k < 0)
                        r = lint_add(&ck->out, LINT_ERROR, c->file, 0, section, key, "%s",
                                     why ? why : strerror(-k));
        }
        if (r >= 0)
                r = host_root_check(ck, c);
        safe_close(bp.broker_dirfd);
        git_repository_free(bp.repo);
        broker_policy_free(policy);
        return r;
}

static int report(const struct check *ck, bool strict, bool json)
{
        for (size_t i = 0; i < ck->out.n; i++) {
                const struct lint_finding *f = &ck->out.findings[i];
                _cleanup_free_ char *line = NULL;

                if (json) {
                        json_t *o = lint_finding_json(f, strict);
                        line = o ? json_dumps(o, JSON_COMPACT) : NULL;
                        json_decref(o);
                        if (!line)
                                return -ENOMEM;
                        printf("%s\n", line);
                        continue;
                }
                line = lint_finding_format(f);
                if (!line)
                        return -ENOMEM;
                if (f->severity == LINT_ERROR)
                        fprintf(stderr, "cloister check: %s\n", line);
                else
                        fprintf(stderr, "cloister check: %s: %s\n",
                                lint_severity_name(f->severity, strict), line);
        }
        return fflush(stdout) == 0 ? 0 : -EIO;
}

static int check_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"strict", no_argument, NULL, 's'},
                {"quiet", no_argument, NULL, 'q'},
                {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *error = NULL;
        struct check ck = {};
        bool strict = false, quiet = false, json = false;
        int opt, r, code;

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
                case 'j':
                        json = true;
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
                                    "usage: cloister check [--strict] [--json] CONFIG");

        git_libgit2_init();
        if (config_load(argv[optind], &c, &error) < 0) {
                ck.invalid = true;
                r = lint_add_error(&ck.out, LINT_ERROR, argv[optind],
                                   error ? error : "cannot load the config");
        } else {
                r = blueprint_collect(&ck, c);
        }
        if (r >= 0)
                r = report(&ck, strict, json);
        git_libgit2_shutdown();
        if (r < 0) {
                lint_done(&ck.out);
                return command_fail(&command_check, 1, "%s", strerror(-r));
        }

        if (ck.invalid)
                code = EXIT_USAGE;
        else if (lint_count(&ck.out, LINT_ERROR) || (strict && ck.out.n))
                code = 1;
        else
                code = 0;
        if (code == 0 && !quiet && !json)
                printf("%s: ok%s\n", c->file, ck.out.n ? " (with warnings)" : "");
        lint_done(&ck.out);
        return code;
}

const struct command command_check = {
        .name = "check",
        .run = check_run,
};
