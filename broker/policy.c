/* SPDX-License-Identifier: MIT */
/*
 * policy.c: parse the broker policy with inih.
 *
 * Same error style as the workspace config: the first error wins and names
 * file, line, key and section. lib/inifile feeds inih from memory, so lines
 * are counted (Debian's inih has no INI_HANDLER_LINENO) and NUL bytes and
 * over-long lines are refused.
 */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "policy.h"
#include "lib/inifile.h"
#include "lib/util.h"
#include "lib/values.h"

#define POLICY_MAX_FILE (256 * 1024)
#define POLICY_MAX_LIST 64

struct state {
        const char *file;
        struct broker_policy *p;
        struct inifile_reader rd;
        char *section;
        unsigned section_line;      /* header line of st->section */
        struct broker_scope *scope; /* current [scope "NAME"], or NULL */
        bool in_broker, in_limits;
        char *error;
        unsigned line_audience;
};

static int perror_at(struct state *st, unsigned line, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int perror_at(struct state *st, unsigned line, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        if (st->error)
                return 0;
        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (line ? asprintf(&st->error, "%s:%u: %s", st->file, line, msg ? msg : "error") < 0
                 : asprintf(&st->error, "%s: %s", st->file, msg ? msg : "error") < 0)
                st->error = NULL;
        /* A value echoed in the message must not split it or drive the terminal. */
        char *printable = st->error ? inifile_escape(st->error, false) : NULL;
        free(st->error);
        st->error = printable ?: strdup("policy: out of memory");
        return 0;
}

bool broker_name_is_valid(const char *s)
{
        return value_name_is_valid(s, BROKER_NAME_MAX, true);
}

/* "a, b c" → {"a","b","c",NULL} */
static int list_parse(const char *v, char ***ret)
{
        _cleanup_strv_free_ char **l = calloc(POLICY_MAX_LIST + 1, sizeof(char *));
        size_t n = 0;

        if (!l)
                return -ENOMEM;
        for (const char *p = v; *p;) {
                size_t len;

                while (*p == ',' || isspace((unsigned char)*p))
                        p++;
                if (!*p)
                        break;
                len = strcspn(p, ", \t");
                if (n >= POLICY_MAX_LIST)
                        return -E2BIG;
                l[n] = strndup(p, len);
                if (!l[n++])
                        return -ENOMEM;
                p += len;
        }
        if (n == 0)
                return -ENODATA;
        *ret = TAKE_PTR(l);
        return 0;
}

#define KEYERR(fmt, ...)                                                                           \
        perror_at(st, st->rd.line, "key '%s' in [%s]: " fmt, name, st->section, ##__VA_ARGS__)

static int dup_value(struct state *st, const char *name, char **dst, const char *value)
{
        if (*dst)
                return KEYERR("duplicate key");
        if (!*value)
                return KEYERR("empty value");
        *dst = strdup(value);
        return *dst ? 1 : perror_at(st, 0, "out of memory");
}

static int ttl_parse(struct state *st, const char *name, const char *value, int64_t *dst)
{
        uint64_t v;

        if (*dst)
                return KEYERR("duplicate key");
        if (value_parse_duration(value, &v) < 0)
                return KEYERR("'%s' is not a duration (e.g. 90, 90s, 15m, 2h)", value);
        if (v == 0)
                return KEYERR("must be at least 1 second");
        if (v > BROKER_TTL_CEILING)
                return KEYERR("%llu s is longer than the ceiling of %d s (1 day)",
                              (unsigned long long)v, BROKER_TTL_CEILING);
        *dst = (int64_t)v;
        return 1;
}

/* A duration of 1 s to max s. */
static int timeout_value(struct state *st, const char *name, const char *value, uint64_t *dst,
                         uint64_t max)
{
        uint64_t v;

        if (*dst)
                return KEYERR("duplicate key");
        if (value_parse_duration(value, &v) < 0)
                return KEYERR("'%s' is not a duration (e.g. 30, 30s, 5m)", value);
        if (v < 1 || v > max)
                return KEYERR("%llu s is out of range (1 s to %llu s)", (unsigned long long)v,
                              (unsigned long long)max);
        *dst = v;
        return 1;
}

static int list_value(struct state *st, const char *name, char ***dst, const char *value,
                      bool names)
{
        int r;

        if (*dst)
                return KEYERR("duplicate key");
        r = list_parse(value, dst);
        if (r == -E2BIG)
                return KEYERR("more than %d entries", POLICY_MAX_LIST);
        if (r == -ENODATA)
                return KEYERR("empty list");
        if (r < 0)
                return perror_at(st, 0, "out of memory");
        for (char **s = *dst; names && *s; s++)
                if (!streq(*s, "*") && !broker_name_is_valid(*s))
                        return KEYERR("'%s' is not a valid name ([A-Za-z0-9._-], at most %d)", *s,
                                      BROKER_NAME_MAX);
        return 1;
}

static int uid_list(struct state *st, const char *name, const char *value)
{
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;
        int r;

        if (st->p->redeemers)
                return KEYERR("duplicate key");
        r = list_value(st, name, &l, value, false);
        if (!r || st->error)
                return 0;
        while (l[n])
                n++;
        st->p->redeemers = calloc(n, sizeof(uid_t));
        if (!st->p->redeemers)
                return perror_at(st, 0, "out of memory");
        for (size_t i = 0; i < n; i++) {
                uint64_t u;
                if (value_parse_uint(l[i], &u) == 0 && u < (uid_t)-1) {
                        st->p->redeemers[i] = (uid_t)u;
                } else {
                        struct passwd *pw = getpwnam(l[i]);
                        if (!pw)
                                return KEYERR("'%s' is neither a uid nor a user name", l[i]);
                        st->p->redeemers[i] = pw->pw_uid;
                }
        }
        st->p->n_redeemers = n;
        return 1;
}

static int limit_value(struct state *st, const char *name, const char *value, uint64_t *dst,
                       uint64_t max)
{
        uint64_t v;

        if (value_parse_uint(value, &v) < 0)
                return KEYERR("'%s' is not a whole number", value);
        if (v == 0 || v > max)
                return KEYERR("must be between 1 and %llu", (unsigned long long)max);
        *dst = v;
        return 1;
}

static int scope_key(struct state *st, const char *name, const char *value)
{
        struct broker_scope *s = st->scope;

        if (streq(name, "audience")) {
                st->line_audience = st->rd.line;
                return dup_value(st, name, &s->audience, value);
        }
        if (streq(name, "ttl"))
                return ttl_parse(st, name, value, &s->ttl);
        if (streq(name, "max_ttl")) {
                s->line_max_ttl = s->line_max_ttl ?: st->rd.line;
                return ttl_parse(st, name, value, &s->max_ttl);
        }
        if (streq(name, "max_uses")) {
                if (value_parse_uint(value, &s->max_uses) < 0)
                        return KEYERR("'%s' is not a whole number (0: no limit)", value);
                return 1;
        }
        if (streq(name, "workspaces")) {
                s->line_workspaces = s->line_workspaces ?: st->rd.line;
                return list_value(st, name, &s->workspaces, value, true);
        }
        if (streq(name, "hosts")) {
                s->line_hosts = s->line_hosts ?: st->rd.line;
                return list_value(st, name, &s->hosts, value, false);
        }
        if (streq(name, "username")) {
                if (strpbrk(value, "\n\r"))
                        return KEYERR("must be one line");
                return dup_value(st, name, &s->username, value);
        }
        if (streq(name, "secret")) {
                if (!broker_name_is_valid(value))
                        return KEYERR("'%s' is not a valid secret name", value);
                s->line_secret = s->line_secret ?: st->rd.line;
                return dup_value(st, name, &s->secret, value);
        }
        return KEYERR("unknown key (expected audience, ttl, max_ttl, max_uses, workspaces, "
                      "hosts, username or secret)");
}

static int section_begin(struct state *st, const char *section)
{
        const char *q;
        size_t n;

        st->scope = NULL;
        st->in_broker = streq(section, "broker");
        st->in_limits = streq(section, "limits");
        if (st->in_broker || st->in_limits)
                return 1;
        q = startswith(section, "scope");
        if (!q)
                return perror_at(st, st->rd.section_line,
                                 "unknown section [%s] (expected [broker], [limits] or "
                                 "[scope \"NAME\"])",
                                 section);
        while (*q == ' ' || *q == '\t')
                q++;
        n = strlen(q);
        if (n < 3 || q[0] != '"' || q[n - 1] != '"')
                return perror_at(st, st->rd.section_line, "section [%s]: expected [scope \"NAME\"]",
                                 section);
        _cleanup_free_ char *nm = strndup(q + 1, n - 2);
        if (!nm)
                return perror_at(st, 0, "out of memory");
        if (!broker_name_is_valid(nm))
                return perror_at(st, st->rd.section_line,
                                 "section [%s]: scope name may hold only letters, digits, '.', "
                                 "'_' and '-' (at most %d)",
                                 section, BROKER_NAME_MAX);
        for (size_t i = 0; i < st->p->n_scopes; i++)
                if (streq(st->p->scopes[i].name, nm))
                        return perror_at(st, st->rd.section_line,
                                         "section [%s]: duplicate scope (first on line %u)",
                                         section, st->p->scopes[i].line);
        if (st->p->n_scopes >= BROKER_POLICY_MAX_SCOPES)
                return perror_at(st, st->rd.section_line, "too many scopes (at most %d)",
                                 BROKER_POLICY_MAX_SCOPES);
        struct broker_scope *sc = realloc(st->p->scopes, (st->p->n_scopes + 1) * sizeof(*sc));
        if (!sc)
                return perror_at(st, 0, "out of memory");
        st->p->scopes = sc;
        st->scope = &sc[st->p->n_scopes++];
        *st->scope = (struct broker_scope){.name = TAKE_PTR(nm), .line = st->rd.section_line};
        return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
        struct state *st = user;

        if (st->error)
                return 0;
        /* A new header, even one repeating the last name, starts a new section. */
        if (!st->section || !streq(section, st->section) ||
            st->rd.section_line != st->section_line) {
                st->section_line = st->rd.section_line;
                free(st->section);
                st->section = strdup(section);
                if (!st->section)
                        return perror_at(st, 0, "out of memory");
                if (!*section)
                        return perror_at(st, st->rd.line, "key '%s' outside of any section", name);
                if (!section_begin(st, section))
                        return 0;
        }
        if (st->scope)
                return scope_key(st, name, value);
        if (st->in_broker) {
                if (streq(name, "issuer"))
                        return dup_value(st, name, &st->p->issuer, value);
                if (streq(name, "redeemers"))
                        return uid_list(st, name, value);
                return KEYERR("unknown key (expected issuer or redeemers)");
        }
        if (streq(name, "connections"))
                return limit_value(st, name, value, &st->p->connections, 1000);
        if (streq(name, "rate"))
                return limit_value(st, name, value, &st->p->rate, 100000);
        if (streq(name, "issue_rate"))
                return limit_value(st, name, value, &st->p->issue_rate, 100000);
        if (streq(name, "issue_total"))
                return limit_value(st, name, value, &st->p->issue_total, 1000000);
        if (streq(name, "idle_timeout"))
                return timeout_value(st, name, value, &st->p->idle_timeout, 3600);
        if (streq(name, "request_timeout"))
                return timeout_value(st, name, value, &st->p->request_timeout, 600);
        return KEYERR("unknown key (expected connections, rate, issue_rate, issue_total, "
                      "idle_timeout or request_timeout)");
}

/* Whole-file checks and defaults, once every key is known. */
static void policy_finish(struct state *st)
{
        struct broker_policy *p = st->p;

        if (!p->issuer && !(p->issuer = strdup("cloister")))
                perror_at(st, 0, "out of memory");
        if (!p->redeemers) {
                p->redeemers = calloc(1, sizeof(uid_t));
                if (!p->redeemers) {
                        perror_at(st, 0, "out of memory");
                        return;
                }
                p->redeemers[0] = geteuid();
                p->n_redeemers = 1;
        }
        p->connections = p->connections ?: 64;
        p->rate = p->rate ?: 20;
        p->issue_rate = p->issue_rate ?: 60;
        p->issue_total = p->issue_total ?: 1000;
        p->idle_timeout = p->idle_timeout ?: BROKER_IDLE_TIMEOUT_DEFAULT;
        p->request_timeout = p->request_timeout ?: BROKER_REQUEST_TIMEOUT_DEFAULT;
        if (p->n_scopes == 0)
                perror_at(st, 0, "no [scope \"NAME\"] section: the policy grants nothing");
        for (size_t i = 0; i < p->n_scopes && !st->error; i++) {
                struct broker_scope *s = &p->scopes[i];
                const char *sec = s->name;

                if (!s->audience)
                        perror_at(st, s->line, "[scope \"%s\"]: missing key 'audience'", sec);
                else if (!s->workspaces)
                        perror_at(st, s->line,
                                  "[scope \"%s\"]: missing key 'workspaces' (who may ask)", sec);
                if (!s->max_ttl)
                        s->max_ttl = s->ttl ? MAX(s->ttl, 900) : 900;
                if (!s->ttl)
                        s->ttl = MIN(300, s->max_ttl);
                if (s->ttl > s->max_ttl)
                        perror_at(st, s->line,
                                  "[scope \"%s\"]: ttl (%lld s) is longer than max_ttl (%lld s)",
                                  sec, (long long)s->ttl, (long long)s->max_ttl);
                if (!s->username && !(s->username = strdup("cloister")))
                        perror_at(st, 0, "out of memory");
        }
}

int broker_policy_load(const char *path, struct broker_policy **ret, char **ret_error)
{
        _cleanup_free_ char *buf = NULL;
        struct state st = {.file = path};
        size_t len = 0;
        unsigned nul_line;
        int r;

        *ret_error = NULL;
        r = inifile_read(path, POLICY_MAX_FILE, &buf, &len, ret_error);
        if (r < 0)
                return r;
        st.p = calloc(1, sizeof(*st.p));
        if (!st.p || !(st.p->file = strdup(path))) {
                broker_policy_free(st.p);
                return -ENOMEM;
        }
        nul_line = inifile_nul_line(buf, len);
        if (nul_line) {
                perror_at(&st, nul_line, "NUL byte in policy");
        } else {
                st.rd = (struct inifile_reader){.pos = buf, .end = buf + len};
                r = ini_parse_stream(inifile_reader_gets, &st.rd, handler, &st);
                if (st.rd.too_long)
                        perror_at(&st, st.rd.line, "line longer than %d bytes", INI_MAX_LINE - 1);
                if (st.rd.malformed)
                        perror_at(&st, st.rd.malformed,
                                  "malformed line: expected 'key = value' or '[section]'");
                if (r > 0)
                        perror_at(&st, (unsigned)r,
                                  "malformed line: expected 'key = value' or '[section]'");
                if (r < 0)
                        perror_at(&st, 0, "out of memory");
                if (!st.error)
                        policy_finish(&st);
        }
        free(st.section);
        if (st.error) {
                *ret_error = st.error;
                broker_policy_free(st.p);
                return -EINVAL;
        }
        *ret = st.p;
        return 0;
}

void broker_policy_free(struct broker_policy *p)
{
        if (!p)
                return;
        for (size_t i = 0; i < p->n_scopes; i++) {
                struct broker_scope *s = &p->scopes[i];
                free(s->name);
                free(s->audience);
                strv_free(s->workspaces);
                strv_free(s->hosts);
                free(s->username);
                free(s->secret);
        }
        free(p->scopes);
        free(p->redeemers);
        free(p->issuer);
        free(p->file);
        free(p);
}

const struct broker_scope *broker_policy_scope(const struct broker_policy *p, const char *name)
{
        for (size_t i = 0; i < p->n_scopes; i++)
                if (streq(p->scopes[i].name, name))
                        return &p->scopes[i];
        return NULL;
}

bool broker_scope_allows(const struct broker_scope *s, const char *workspace)
{
        for (char **w = s->workspaces; w && *w; w++)
                if (streq(*w, "*") || streq(*w, workspace))
                        return true;
        return false;
}

const struct broker_scope *broker_policy_scope_for_host(const struct broker_policy *p,
                                                        const char *host, const char *workspace)
{
        for (size_t i = 0; i < p->n_scopes; i++)
                for (char **h = p->scopes[i].hosts; h && *h; h++)
                        if (strcasecmp(*h, host) == 0 &&
                            broker_scope_allows(&p->scopes[i], workspace))
                                return &p->scopes[i];
        return NULL;
}

bool broker_policy_is_redeemer(const struct broker_policy *p, uid_t uid)
{
        for (size_t i = 0; i < p->n_redeemers; i++)
                if (p->redeemers[i] == uid)
                        return true;
        return false;
}

int64_t broker_policy_max_ttl(const struct broker_policy *p)
{
        int64_t m = 0;

        for (size_t i = 0; i < p->n_scopes; i++)
                m = MAX(m, p->scopes[i].max_ttl);
        return m;
}
