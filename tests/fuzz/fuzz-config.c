/* SPDX-License-Identifier: MIT */
/*
 * fuzz-config.c: the workspace config parser (config_load) and its lint.
 *
 * Any input: no crash, no leak, and either a config that holds what every
 * subcommand relies on (required keys set, paths clean, counts within
 * their limits) or one error line that names the file and a line in it.
 */
#include <string.h>

#include "config.h"
#include "fuzz.h"
#include "lint.h"
#include "lib/values.h"

static void path_check(const char *what, const char *p)
{
        if (!p || !value_path_is_clean_absolute(p))
                fuzz_fail("accepted config has %s '%s'", what, p ? p : "(null)");
}

static void config_invariants(const struct config *c)
{
        struct lint l = {0};

        if (!c->workspace.name || !value_name_is_valid(c->workspace.name, CONFIG_NAME_MAX, false))
                fuzz_fail("accepted config has workspace name '%s'",
                          c->workspace.name ? c->workspace.name : "(null)");
        path_check("state", c->workspace.state);
        path_check("mountpoint", c->workspace.mountpoint);
        path_check("repo source", c->repo.source);
        path_check("repo path", c->repo.path);
        path_check("home path", c->home.path);
        path_check("broker socket", c->broker.socket);
        path_check("broker dir", c->broker.dir);
        if (c->broker.policy)
                path_check("broker policy", c->broker.policy);
        if (!c->repo.rev || !*c->repo.rev || !c->run.user || !c->run.env)
                fuzz_fail("accepted config lacks a default (rev, user or env)");
        if (c->n_mirrors > CONFIG_MAX_MIRRORS || c->home.n_seeds > CONFIG_MAX_SEEDS)
                fuzz_fail("accepted config has %zu mirrors and %zu seeds", c->n_mirrors,
                          c->home.n_seeds);
        for (size_t i = 0; i < c->n_mirrors; i++) {
                path_check("mirror source", c->mirrors[i].source);
                path_check("mirror path", c->mirrors[i].path);
                if (!c->mirrors[i].exclude)
                        fuzz_fail("mirror '%s' has no exclude list", c->mirrors[i].name);
        }
        for (size_t i = 0; i < c->home.n_seeds; i++) {
                path_check("seed source", c->home.seeds[i].source);
                if (!value_path_is_clean_relative(c->home.seeds[i].dest))
                        fuzz_fail("accepted seed destination '%s'", c->home.seeds[i].dest);
        }

        /* The lint reads every field; each finding prints as one line. */
        if (config_lint(c, "/home/fuzz", &l) < 0)
                fuzz_fail("config_lint failed");
        fuzz_lint_check(&l, "lint");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *path = fuzz_file(data, size);
        struct config *c = NULL;
        char *err = NULL;

        if (config_load(path, &c, &err) < 0) {
                if (c)
                        fuzz_fail("config_load failed but returned a config");
                fuzz_error_check(path, data, size, err);
        } else {
                if (err)
                        fuzz_fail("config_load succeeded with an error: %s", err);
                config_invariants(c);
        }
        free(err);
        config_free(c);
        return 0;
}
