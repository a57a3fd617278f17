/* SPDX-License-Identifier: MIT */
/*
 * config.c: read a workspace config with inih and turn it into a
 * struct config, or into one precise error line.
 *
 * inih does the lexing. We feed it from memory through ini_parse_stream() so
 * that we can (a) refuse oversized files and NUL bytes before parsing,
 * (b) count lines ourselves (Debian builds inih without INI_HANDLER_LINENO),
 * and (c) refuse lines longer than inih's buffer, which it would otherwise
 * split silently into two "lines".
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
#include "util.h"

struct reader {
        const char *buf, *end, *pos;
        unsigned line;
        bool too_long;
        struct parse_state *st;
};

static int section_parse(struct parse_state *st, const char *section);
static void section_header_check(struct reader *r, const char *line);

/* ini_reader: like fgets() over the in-memory file, counting lines. */
static char *reader_gets(char *str, int num, void *stream)
{
        struct reader *r = stream;
        size_t n = 0;

        if (r->pos >= r->end || r->too_long)
                return NULL;
        r->line++;
        while (r->pos < r->end && n + 1 < (size_t)num) {
                char ch = *r->pos++;
                str[n++] = ch;
                if (ch == '\n')
                        break;
        }
        if (n + 1 >= (size_t)num && str[n - 1] != '\n' && r->pos < r->end) {
                if (*r->pos != '\n') {
                        r->too_long = true;
                        return NULL;
                }
                r->pos++; /* exactly full: the newline does not need the space */
        }
        str[n] = '\0';
        section_header_check(r, str);
        if (r->st->error)
                return NULL; /* stop at the first error: it is the one to fix */
        return str;
}

/*
 * inih only calls the handler for keys, so a section header is seen here,
 * where its line is known and an empty or unknown section is not missed.
 * inih's rule: the name is what lies between '[' and the first ']'.
 */
static void section_header_check(struct reader *r, const char *line)
{
        struct parse_state *st = r->st;
        const char *p = line, *end;

        while (*p == ' ' || *p == '\t')
                p++;
        if (p == line && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
            (unsigned char)p[2] == 0xBF && r->line == 1)
                p += 3; /* UTF-8 BOM, which inih skips too */
        if (*p != '[')
                return;
        end = strchr(p, ']');
        if (!end) {
                config_error(st, r->line, "malformed line: expected 'key = value' or '[section]'");
                return;
        }
        _cleanup_free_ char *name = strndup(p + 1, (size_t)(end - p - 1));
        if (!name) {
                config_error(st, 0, "out of memory");
                return;
        }
        free(st->current_section);
        st->current_section = TAKE_PTR(name);
        section_parse(st, st->current_section);
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
        if (!st->error)
                st->error = strdup("config: out of memory");
        return 0;
}

/* Split `mirror "NAME"` into its parts; NAME must be a plain identifier. */
static int section_parse(struct parse_state *st, const char *section)
{
        const char *q;
        size_t n;

        st->mirror = NULL;
        for (size_t i = 0; i < SECTION_MAX; i++) {
                if (streq(section, config_section_names[i])) {
                        if (i == SECTION_MIRROR)
                                break;
                        st->section = (enum section_kind)i;
                        return 1;
                }
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
        return TAKE_PTR(out);
}

static int file_read(const char *path, char **ret, size_t *ret_len, char **ret_error)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        struct stat sb;
        size_t len = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                int r = negative_errno();
                if (asprintf(ret_error, "%s: cannot open: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        if (fstat(fd, &sb) < 0)
                return negative_errno();
        if (!S_ISREG(sb.st_mode)) {
                if (asprintf(ret_error, "%s: not a regular file", path) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        if (sb.st_size > CONFIG_MAX_FILE_SIZE) {
                if (asprintf(ret_error, "%s: file too large (%lld bytes, at most %d)", path,
                             (long long)sb.st_size, CONFIG_MAX_FILE_SIZE) < 0)
                        *ret_error = NULL;
                return -EFBIG;
        }
        buf = malloc(CONFIG_MAX_FILE_SIZE + 1);
        if (!buf)
                return -ENOMEM;
        /* Read to EOF, not st_size: the file may be a growing one. */
        for (;;) {
                ssize_t n = read(fd, buf + len, CONFIG_MAX_FILE_SIZE + 1 - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > CONFIG_MAX_FILE_SIZE) {
                        if (asprintf(ret_error, "%s: file too large (at most %d bytes)", path,
                                     CONFIG_MAX_FILE_SIZE) < 0)
                                *ret_error = NULL;
                        return -EFBIG;
                }
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int config_load(const char *path, struct config **ret, char **ret_error)
{
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_config_ struct config *cfg = NULL;
        struct parse_state st = {.file = path};
        struct reader rd = {0};
        size_t len = 0;
        int r;

        r = file_read(path, &buf, &len, &error);
        if (r < 0)
                goto fail;

        rd = (struct reader){.buf = buf, .pos = buf, .end = buf + len, .st = &st};
        const char *nul = memchr(buf, '\0', len);
        if (nul) {
                unsigned line = 1;
                for (const char *c = buf; c < nul; c++)
                        line += *c == '\n';
                if (asprintf(&error, "%s:%u: NUL byte in config", path, line) < 0)
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

        r = ini_parse_stream(reader_gets, &rd, handler, &st);
        free(st.current_section);
        free(st.config_dir);
        if (rd.too_long && !st.error)
                config_error(&st, rd.line, "line longer than %d bytes", INI_MAX_LINE - 1);
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
        }
        free(c->mirrors);
        free(c->broker.socket);
        free(c->broker.policy);
        free(c->broker.dir);
        strv_free(c->run.env);
        free(c->run.user);
        free(c);
}
