/* SPDX-License-Identifier: MIT */
/*
 * config.c: read a workspace config with inih and turn it into a
 * struct config, or into one precise error line.
 *
 * inih does the lexing, fed from memory by lib/inifile so that oversized
 * files, NUL bytes and lines longer than inih's buffer are refused, and
 * lines are counted (Debian builds inih without INI_HANDLER_LINENO).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "config-private.h"
#include "lib/inifile.h"
#include "lib/util.h"

static int section_parse(struct parse_state *st, const char *section);

/*
 * inih only calls the handler for keys, so a section header is seen here,
 * where its line is known and an empty or unknown section is not missed.
 * inih's rule: the name is what lies between '[' and the first ']'.
 */
static bool section_header_check(void *user, const char *line)
{
        struct parse_state *st = user;
        const char *p = line, *end;

        while (*p == ' ' || *p == '\t')
                p++;
        if (p == line && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
            (unsigned char)p[2] == 0xBF && st->reader->line == 1)
                p += 3; /* UTF-8 BOM, which inih skips too */
        if (*p != '[')
                return !st->error;
        end = strchr(p, ']');
        if (!end) {
                config_error(st, st->reader->line,
                             "malformed line: expected 'key = value' or '[section]'");
                return false;
        }
        _cleanup_free_ char *name = strndup(p + 1, (size_t)(end - p - 1));
        if (!name) {
                config_error(st, 0, "out of memory");
                return false;
        }
        free(st->current_section);
        st->current_section = TAKE_PTR(name);
        section_parse(st, st->current_section);
        /* stop at the first error: it is the one to fix */
        return !st->error;
}

unsigned config_reader_line(const struct parse_state *st)
{
        return st->reader->line;
}

_printf_(3, 4) int config_error(struct parse_state *st, unsigned line, const char *fmt, ...)
{
        va_list ap;
        char *msg = NULL;

        if (st->error)
                return 0; /* keep the first error: it is the one to fix first */
        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (line > 0) {
                if (asprintf(&st->error, "%s:%u: %s", st->file, line, msg ? msg : "error") < 0)
                        st->error = NULL;
        } else if (asprintf(&st->error, "%s: %s", st->file, msg ? msg : "error") < 0) {
                st->error = NULL;
        }
        free(msg);
        /* A value echoed in the message must not split it or drive the terminal. */
        msg = st->error ? inifile_escape(st->error, false) : NULL;
        free(st->error);
        st->error = msg ?: strdup("config: out of memory");
        return 0;
}

/* Split `mirror "NAME"` into its parts; NAME must be a plain identifier. */
static int section_parse(struct parse_state *st, const char *section)
{
        const char *q;
        size_t n;

        st->mirror = NULL;
        st->inject = NULL;
        for (size_t i = 0; i < SECTION_MAX; i++) {
                if (streq(section, config_section_names[i])) {
                        if (i == SECTION_MIRROR || i == SECTION_INJECT)
                                break;
                        st->section = (enum section_kind)i;
                        return 1;
                }
        }
        q = startswith(section, "inject");
        if (q && (*q == '\0' || *q == ' ' || *q == '\t' || *q == '"')) {
                while (*q == ' ' || *q == '\t')
                        q++;
                n = strlen(q);
                if (n < 3 || q[0] != '"' || q[n - 1] != '"')
                        return config_error(st, st->reader->line,
                                            "section [%s]: expected [inject \"NAME\"]", section);
                for (size_t i = 1; i + 1 < n; i++)
                        if (!isalnum((unsigned char)q[i]) && !strchr("._-", q[i]))
                                return config_error(st, st->reader->line,
                                                    "section [%s]: a rule name may hold only "
                                                    "letters, digits, '.', '_' and '-'",
                                                    section);
                if (n - 2 > CONFIG_NAME_MAX)
                        return config_error(st, st->reader->line,
                                            "section [%s]: rule name longer than %d characters",
                                            section, CONFIG_NAME_MAX);
                return config_inject_begin(st, q + 1, n - 2);
        }
        q = startswith(section, "mirror");
        if (!q)
                return config_error(st, st->reader->line, "unknown section [%s]", section);
        while (*q == ' ' || *q == '\t')
                q++;
        n = strlen(q);
        if (n < 3 || q[0] != '"' || q[n - 1] != '"')
                return config_error(st, st->reader->line,
                                    "section [%s]: expected [mirror \"NAME\"]", section);
        n -= 2;
        q++;
        if (n > CONFIG_NAME_MAX)
                return config_error(st, st->reader->line,
                                    "section [%s]: mirror name longer than %d characters", section,
                                    CONFIG_NAME_MAX);
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char)q[i]) && !strchr("._-", q[i]))
                        return config_error(st, st->reader->line,
                                            "section [%s]: mirror name may hold only "
                                            "letters, digits, '.', '_' and '-'",
                                            section);
        for (size_t i = 0; i < st->cfg->n_mirrors; i++)
                if (strlen(st->cfg->mirrors[i].name) == n &&
                    strncmp(st->cfg->mirrors[i].name, q, n) == 0)
                        return config_error(st, st->reader->line,
                                            "section [%s]: duplicate mirror (first on line %u)",
                                            section, st->cfg->mirrors[i].line);
        if (st->cfg->n_mirrors >= CONFIG_MAX_MIRRORS)
                return config_error(st, st->reader->line, "too many mirrors (at most %d)",
                                    CONFIG_MAX_MIRRORS);

        struct config_mirror *m = realloc(st->cfg->mirrors, (st->cfg->n_mirrors + 1) * sizeof(*m));
        if (!m)
                return config_error(st, 0, "out of memory");
        st->cfg->mirrors = m;
        m = &st->cfg->mirrors[st->cfg->n_mirrors++];
        *m = (struct config_mirror){.line = st->reader->line};
        m->name = strndup(q, n);
        m->exclude = calloc(1, sizeof(char *));
        if (!m->name || !m->exclude)
                return config_error(st, 0, "out of memory");
        memset(&st->mirror_lines, 0, sizeof(st->mirror_lines));
        st->section = SECTION_MIRROR;
        st->mirror = m;
        return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
        struct parse_state *st = user;

        if (st->error)
                return 0;
        if (section[0] == '\0')
                return config_error(st, st->reader->line, "key '%s' outside of any section", name);
        return config_key_apply(st, section, name, value);
}

/* The top of the git work tree that holds dir, or NULL. */
static char *worktree_find(const char *dir)
{
        _cleanup_free_ char *p = strdup(dir);

        if (!p)
                return NULL;
        for (;;) {
                _cleanup_free_ char *dotgit = NULL;
                struct stat sb;

                if (asprintf(&dotgit, "%s/.git", p) < 0)
                        return NULL;
                if (lstat(dotgit, &sb) == 0)
                        return TAKE_PTR(p);
                char *slash = strrchr(p, '/');
                if (!slash || slash == p)
                        return NULL;
                *slash = '\0';
        }
}

/* Keep raw and its expansion, '%' escaped, for a copy of the file elsewhere (config.h). */
static int expanded_record(struct parse_state *st, const char *raw, const char *out)
{
        struct config *c = st->cfg;
        struct config_expanded *v = realloc(c->expanded, (c->n_expanded + 1) * sizeof(*v));
        size_t n = 0;
        char *fixed;

        if (!v)
                return -ENOMEM;
        c->expanded = v;
        for (const char *p = out; *p; p++)
                n += *p == '%' ? 2 : 1;
        fixed = malloc(n + 1);
        if (!fixed)
                return -ENOMEM;
        n = 0;
        for (const char *p = out; *p; p++) {
                fixed[n++] = *p;
                if (*p == '%')
                        fixed[n++] = '%';
        }
        fixed[n] = 0;
        v[c->n_expanded] = (struct config_expanded){
                .line = config_reader_line(st), .raw = strdup(raw), .fixed = fixed};
        if (!v[c->n_expanded].raw) {
                free(fixed);
                return -ENOMEM;
        }
        c->n_expanded++;
        return 0;
}

char *config_expand(struct parse_state *st, const char *key, const char *value)
{
        const char *sec = config_section_names[st->section];
        _cleanup_free_ char *out = NULL, *root = NULL;
        size_t len = 0, cap = strlen(value) + 1;

        if (!strchr(value, '%'))
                return strdup(value) ?: (config_error(st, 0, "out of memory"), NULL);
        for (const char *c = value; *c; c++) {
                const char *add = NULL;
                char ch[2] = {*c, 0};

                if (*c != '%') {
                        add = ch;
                } else if (c[1] == '%') {
                        add = "%";
                        c++;
                } else if (c[1] == 'C') {
                        add = st->config_dir;
                        c++;
                } else if (c[1] == 'R') {
                        if (!root && !(root = worktree_find(st->config_dir))) {
                                config_error(st, config_reader_line(st),
                                             "key '%s' in [%s]: %%R used, but the config is "
                                             "not inside a git work tree",
                                             key, sec);
                                return NULL;
                        }
                        add = root;
                        c++;
                } else {
                        config_error(st, config_reader_line(st),
                                     "key '%s' in [%s]: unknown specifier '%%%c' (use %%C, %%R "
                                     "or %%%%)",
                                     key, sec, c[1] ? c[1] : ' ');
                        return NULL;
                }
                size_t n = strlen(add);
                if (len + n + 1 > cap || !out) {
                        cap = MAX(cap * 2, len + n + 1);
                        char *no = realloc(out, cap);
                        if (!no) {
                                config_error(st, 0, "out of memory");
                                return NULL;
                        }
                        out = no;
                }
                memcpy(out + len, add, n);
                len += n;
                out[len] = '\0';
        }
        if (expanded_record(st, value, out) < 0) {
                config_error(st, 0, "out of memory");
                return NULL;
        }
        return TAKE_PTR(out);
}

int config_load(const char *path, struct config **ret, char **ret_error)
{
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_config_ struct config *cfg = NULL;
        struct parse_state st = {.file = path};
        struct inifile_reader rd = {0};
        size_t len = 0;
        unsigned nul_line;
        int r;

        r = inifile_read(path, CONFIG_MAX_FILE_SIZE, &buf, &len, &error);
        if (r < 0)
                goto fail;

        rd = (struct inifile_reader){
                .pos = buf, .end = buf + len, .on_line = section_header_check, .user = &st};
        nul_line = inifile_nul_line(buf, len);
        if (nul_line) {
                if (asprintf(&error, "%s:%u: NUL byte in config", path, nul_line) < 0)
                        error = NULL;
                r = -EINVAL;
                goto fail;
        }

        cfg = calloc(1, sizeof(*cfg));
        if (!cfg) {
                r = -ENOMEM;
                goto fail;
        }
        st.cfg = cfg;
        st.reader = &rd;
        {
                _cleanup_free_ char *copy = strdup(path);
                st.config_dir = copy ? realpath(dirname(copy), NULL) : NULL;
                if (!st.config_dir) {
                        r = -ENOMEM;
                        goto fail;
                }
        }
        st.current_section = strdup("");
        cfg->file = strdup(path);
        cfg->run.env = calloc(1, sizeof(char *));
        if (!st.current_section || !cfg->file || !cfg->run.env) {
                free(st.current_section);
                r = -ENOMEM;
                goto fail;
        }

        r = ini_parse_stream(inifile_reader_gets, &rd, handler, &st);
        free(st.current_section);
        free(st.config_dir);
        if (rd.too_long && !st.error)
                config_error(&st, rd.line, "line longer than %d bytes", INI_MAX_LINE - 1);
        if (rd.malformed && !st.error)
                config_error(&st, rd.malformed,
                             "malformed line: expected 'key = value' or '[section]'");
        if (r > 0 && !st.error)
                config_error(&st, (unsigned)r,
                             "malformed line: expected 'key = value' or '[section]'");
        if (r < 0 && !st.error)
                config_error(&st, 0, "out of memory");
        if (!st.error)
                config_finish(&st);
        if (st.error) {
                error = st.error;
                r = -EINVAL;
                goto fail;
        }
        *ret = TAKE_PTR(cfg);
        return 0;

fail:
        if (ret_error) {
                if (!error && asprintf(&error, "%s: %s", path, strerror(-r)) < 0)
                        error = NULL;
                *ret_error = TAKE_PTR(error);
        }
        return r;
}

void config_free(struct config *c)
{
        if (!c)
                return;
        free(c->file);
        for (size_t i = 0; i < c->n_expanded; i++) {
                free(c->expanded[i].raw);
                free(c->expanded[i].fixed);
        }
        free(c->expanded);
        free(c->workspace.name);
        free(c->workspace.state);
        free(c->workspace.mountpoint);
        free(c->repo.source);
        free(c->repo.rev);
        free(c->repo.path);
        free(c->home.path);
        for (size_t i = 0; i < c->home.n_seeds; i++) {
                free(c->home.seeds[i].source);
                free(c->home.seeds[i].dest);
        }
        free(c->home.seeds);
        for (size_t i = 0; i < c->n_mirrors; i++) {
                free(c->mirrors[i].name);
                free(c->mirrors[i].source);
                free(c->mirrors[i].path);
                strv_free(c->mirrors[i].exclude);
                free(c->mirrors[i].bin);
                free(c->mirrors[i].env);
        }
        free(c->mirrors);
        free(c->broker.socket);
        free(c->broker.policy);
        free(c->broker.dir);
        strv_free(c->run.env);
        free(c->run.user);
        free(c->image.source);
        free(c->image.digest);
        config_network_free(c);
        free(c);
}
