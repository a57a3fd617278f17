/* SPDX-License-Identifier: MIT */
/*
 * blueprint.c: the cross-checks of `cloister check` (blueprint.h).
 *
 * Each finding here is a warning, an error under --strict: the blueprint
 * parses and would run, but part of it does nothing (a scope no one here
 * may ask for, a host no remote leads to) or will fail when it is used (a
 * secret that is not stored), or it grants more than a task needs (a
 * token lifetime past the lint's bound).
 *
 * Nothing here writes: the broker dir is only read, never made, and a
 * stored secret is only looked up by name, never unsealed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "blueprint.h"
#include "secrets.h"
#include "lib/util.h"

/* The credential host of each remote of [repo] source. */
struct remote {
        char *name;
        char *host[2]; /* of its url and its pushurl; NULL: git asks no credential helper */
};

struct remotes {
        struct remote *v;
        size_t n;
};

static void remotes_done(struct remotes *rs)
{
        for (size_t i = 0; i < rs->n; i++) {
                free(rs->v[i].name);
                free(rs->v[i].host[0]);
                free(rs->v[i].host[1]);
        }
        free(rs->v);
}

static int hex(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/*
 * libgit2 keeps its URL parser private, and an RFC 3986 parser would not
 * give what matters here: the host string git itself hands a helper (port
 * kept, nothing validated). So this follows git's credential_from_url().
 */
int blueprint_url_credential_host(const char *url, char **ret)
{
        static const char *const curl_schemes[] = {"http://", "https://", "ftp://", "ftps://"};
        const char *cp = NULL, *at, *end;
        char *host, *o;

        *ret = NULL;
        for (size_t i = 0; !cp && i < ELEMENTSOF(curl_schemes); i++)
                cp = startswith(url, curl_schemes[i]);
        if (!cp)
                return 0;
        end = cp + strcspn(cp, "/?#");
        /* git ends the user info at the first '@', if that comes before the path */
        at = strchr(cp, '@');
        if (at && at < end)
                cp = at + 1;
        host = malloc((size_t)(end - cp) + 1);
        if (!host)
                return -ENOMEM;
        o = host;
        for (const char *c = cp; c < end; c++) {
                if (c[0] == '%' && c + 2 < end && hex(c[1]) >= 0 && hex(c[2]) >= 0) {
                        *o++ = (char)(hex(c[1]) << 4 | hex(c[2]));
                        c += 2;
                } else {
                        *o++ = *c;
                }
        }
        *o = '\0';
        /* git refuses a component with a newline; a NUL would end it early. */
        if ((size_t)(o - host) != strlen(host) || strchr(host, '\n')) {
                free(host);
                return 0;
        }
        *ret = host;
        return 0;
}

static int remotes_load(git_repository *repo, struct remotes *ret)
{
        git_strarray names = {0};
        struct remotes rs = {0};
        int r = 0;

        if (git_remote_list(&names, repo) < 0)
                return -EIO; /* an unreadable config: no remotes we can speak for */
        rs.v = calloc(names.count ? names.count : 1, sizeof(*rs.v));
        if (!rs.v) {
                git_strarray_dispose(&names);
                return -ENOMEM;
        }
        for (size_t i = 0; r >= 0 && i < names.count; i++) {
                git_remote *remote = NULL;
                struct remote *m;
                const char *url[2];

                /* lookup applies url.*.insteadOf, as git does before it asks a helper */
                if (git_remote_lookup(&remote, repo, names.strings[i]) < 0)
                        continue;
                m = &rs.v[rs.n++];
                m->name = strdup(names.strings[i]);
                url[0] = git_remote_url(remote);
                url[1] = git_remote_pushurl(remote);
                if (!m->name)
                        r = -ENOMEM;
                for (size_t u = 0; r >= 0 && u < 2; u++)
                        if (url[u])
                                r = blueprint_url_credential_host(url[u], &m->host[u]);
                git_remote_free(remote);
        }
        git_strarray_dispose(&names);
        if (r < 0) {
                remotes_done(&rs);
                return r;
        }
        *ret = rs;
        return 0;
}

static const char *workspace_name(const struct blueprint *bp)
{
        return bp->config->workspace.name;
}

static int scope_section(const struct broker_scope *s, char *buf, size_t size)
{
        return snprintf(buf, size, "scope \"%s\"", s->name);
}

/* A scope this workspace may not ask for is dead weight in its policy. */
static int check_scope_workspaces(const struct blueprint *bp, struct lint *out)
{
        const struct broker_policy *p = bp->policy;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < p->n_scopes; i++) {
                const struct broker_scope *s = &p->scopes[i];
                char sec[96];

                if (broker_scope_allows(s, workspace_name(bp)))
                        continue;
                scope_section(s, sec, sizeof(sec));
                r = lint_add(out, LINT_WARNING, p->file, s->line_workspaces ?: s->line, sec,
                             "workspaces",
                             "does not name workspace '%s': the scope is dead for it (%s)",
                             workspace_name(bp), bp->config->file);
        }
        return r;
}

int blueprint_secret_check(const struct blueprint *bp, const char *secret, const char *file,
                           unsigned line, const char *section, const char *key, struct lint *out)
{
        const char *dir = bp->config->broker.dir;
        int r;

        if (bp->broker_dirfd < 0 && bp->broker_dir_error != -ENOENT)
                return lint_add(out, LINT_WARNING, file, line, section, key,
                                "cannot tell whether secret '%s' is stored: [broker] dir '%s': "
                                "%s",
                                secret, dir, strerror(-bp->broker_dir_error));
        r = bp->broker_dirfd < 0 ? 0 : broker_secret_is_stored(bp->broker_dirfd, secret);
        if (r > 0)
                return 0;
        if (r < 0)
                return lint_add(out, LINT_WARNING, file, line, section, key,
                                "cannot tell whether secret '%s' is stored in '%s': %s", secret,
                                dir, strerror(-r));
        return lint_add(out, LINT_WARNING, file, line, section, key,
                        "secret '%s' is not stored in '%s' (cloister secret add %s --config %s)",
                        secret, dir, secret, bp->config->file);
}

/* A scope that releases a secret nobody stored fails every redeem. */
static int check_scope_secrets(const struct blueprint *bp, struct lint *out)
{
        const struct broker_policy *p = bp->policy;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < p->n_scopes; i++) {
                const struct broker_scope *s = &p->scopes[i];
                char sec[96];

                if (!s->secret || !broker_scope_allows(s, workspace_name(bp)))
                        continue;
                scope_section(s, sec, sizeof(sec));
                r = blueprint_secret_check(bp, s->secret, p->file, s->line_secret ?: s->line, sec,
                                           "secret", out);
        }
        return r;
}

static int check_scope_max_ttl(const struct blueprint *bp, struct lint *out)
{
        const struct broker_policy *p = bp->policy;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < p->n_scopes; i++) {
                const struct broker_scope *s = &p->scopes[i];
                char sec[96];

                if (s->max_ttl <= BLUEPRINT_LINT_MAX_TTL)
                        continue;
                scope_section(s, sec, sizeof(sec));
                r = lint_add(out, LINT_WARNING, p->file, s->line_max_ttl ?: s->line, sec, "max_ttl",
                             "%lld s%s is longer than the lint's bound of %d s (1 hour)",
                             (long long)s->max_ttl, s->line_max_ttl ? "" : " (from ttl)",
                             BLUEPRINT_LINT_MAX_TTL);
        }
        return r;
}

/* What the remotes do ask for, for the message: "origin: 'h', fork: none". */
static char *remotes_describe(const struct remotes *rs)
{
        char *s = strdup(""), *n;

        for (size_t i = 0; s && i < rs->n; i++) {
                const struct remote *m = &rs->v[i];
                const char *h0 = m->host[0], *h1 = m->host[1];
                int k;

                if (h0 && h1 && strcasecmp(h0, h1) != 0)
                        k = asprintf(&n, "%s%s%s asks for '%s' (push: '%s')", s, i ? ", " : "",
                                     m->name, h0, h1);
                else if (h0 || h1)
                        k = asprintf(&n, "%s%s%s asks for '%s'", s, i ? ", " : "", m->name,
                                     h0 ?: h1);
                else
                        k = asprintf(&n, "%s%s%s asks none (not http, https, ftp or ftps)", s,
                                     i ? ", " : "", m->name);
                free(s);
                s = k < 0 ? NULL : n;
        }
        return s;
}

/*
 * git-credential-cloister asks for a token by the host git names, and the
 * broker matches it against `hosts` ignoring case. An entry no remote of
 * the source repository leads to grants nothing the agent's git will ask.
 */
static int check_scope_hosts(const struct blueprint *bp, struct lint *out)
{
        const struct broker_policy *p = bp->policy;
        struct remotes rs = {0};
        _cleanup_free_ char *desc = NULL;
        int r = 0;

        if (bp->repo_broken)
                return 0; /* its error is reported already; a guess about its remotes would be noise
                           */
        if (bp->repo) {
                r = remotes_load(bp->repo, &rs);
                if (r == -EIO) {
                        const git_error *e = git_error_last();
                        return lint_add(out, LINT_WARNING, bp->config->file, 0, "repo", "source",
                                        "cannot read the git remotes of '%s' to check the "
                                        "policy's hosts: %s",
                                        bp->config->repo.source,
                                        e && e->message ? e->message : "unknown error");
                }
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; r >= 0 && i < p->n_scopes; i++) {
                const struct broker_scope *s = &p->scopes[i];
                char sec[96];

                if (!broker_scope_allows(s, workspace_name(bp)))
                        continue;
                scope_section(s, sec, sizeof(sec));
                for (char **h = s->hosts; r >= 0 && h && *h; h++) {
                        bool match = false;

                        for (size_t j = 0; j < rs.n; j++)
                                for (size_t u = 0; u < 2; u++)
                                        match |= rs.v[j].host[u] &&
                                                 strcasecmp(rs.v[j].host[u], *h) == 0;
                        if (match)
                                continue;
                        if (!bp->repo) {
                                r = lint_add(out, LINT_WARNING, p->file, s->line_hosts, sec,
                                             "hosts",
                                             "'%s' can match no git remote: [repo] source '%s' "
                                             "is not a git repository",
                                             *h, bp->config->repo.source);
                                continue;
                        }
                        if (rs.n == 0) {
                                r = lint_add(out, LINT_WARNING, p->file, s->line_hosts, sec,
                                             "hosts",
                                             "'%s' can match no git remote: [repo] source '%s' "
                                             "has none",
                                             *h, bp->config->repo.source);
                                continue;
                        }
                        if (!desc && !(desc = remotes_describe(&rs))) {
                                r = -ENOMEM;
                                break;
                        }
                        r = lint_add(out, LINT_WARNING, p->file, s->line_hosts, sec, "hosts",
                                     "'%s' matches no git remote of [repo] source (%s)", *h, desc);
                }
        }
        remotes_done(&rs);
        return r;
}

/*
 * Every cross-check, in the order its findings print. The egress proxy's
 * rules have theirs in blueprint-network.c; the allowlist entries too broad
 * for any blueprint are the config lint's (config-lint.c).
 */
static const struct {
        bool needs_policy;
        int (*run)(const struct blueprint *bp, struct lint *out);
} checks[] = {
        {true, check_scope_workspaces},   {true, check_scope_secrets},
        {true, check_scope_max_ttl},      {true, check_scope_hosts},
        {false, blueprint_network_check},
};

int blueprint_check(const struct blueprint *bp, struct lint *out)
{
        for (size_t i = 0; i < ELEMENTSOF(checks); i++) {
                int r;

                if (checks[i].needs_policy && !bp->policy)
                        continue;
                r = checks[i].run(bp, out);
                if (r < 0)
                        return r;
        }
        return 0;
}
