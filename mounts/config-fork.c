/* SPDX-License-Identifier: MIT */
/*
 * config-fork.c: the config of a fork (cloister fork), written from its
 * parent's file.
 *
 * The text is the parent's, line for line, so that its comments and order
 * stay; inih, fed by our line reader exactly as config_load() feeds it,
 * says which line holds which key. Changed: [workspace] name and state,
 * [repo] rev (the parent's pinned base commit, so the fork's base can
 * never move); dropped: [workspace] mountpoint and [broker] socket and dir
 * (their defaults lie in the fork's own state: a mount and a broker
 * identity of its own). A value that used %C or %R is written expanded
 * (config.h, struct config_expanded), so the file means the same wherever
 * it lies. The result is loaded with config_load() before it is put in
 * place; it never replaces an existing file.
 */
#include <fcntl.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "lib/crashpoint.h"
#include "lib/inifile.h"
#include "lib/util.h"

enum edit {
        KEEP,
        DROP,
        SET_NAME,
        SET_STATE,
        SET_REV,
};

struct scan {
        struct inifile_reader *rd;
        enum edit *edits; /* by line, 1-based */
        unsigned n_lines;
        unsigned source_last; /* last line of [repo] source */
        bool has_rev;
        unsigned prev_line;
        enum edit prev; /* the key line's edit, for its continuation lines */
};

static enum edit edit_of(const char *section, const char *name)
{
        if (streq(section, "workspace"))
                return streq(name, "name")         ? SET_NAME
                       : streq(name, "state")      ? SET_STATE
                       : streq(name, "mountpoint") ? DROP
                                                   : KEEP;
        if (streq(section, "repo") && streq(name, "rev"))
                return SET_REV;
        if (streq(section, "broker") && (streq(name, "socket") || streq(name, "dir")))
                return DROP;
        return KEEP;
}

static int scan_handler(void *user, const char *section, const char *name, const char *value)
{
        struct scan *sc = user;
        unsigned line = sc->rd->line;
        enum edit e = edit_of(section, name);
        (void)value;

        if (line == 0 || line > sc->n_lines)
                return 1;
        if (line == sc->prev_line + 1 && sc->prev != KEEP && e == sc->prev && e != DROP) {
                /* A continuation line of a value being replaced: it goes with it. */
                sc->edits[line] = DROP;
        } else {
                sc->edits[line] = e;
        }
        sc->prev_line = line;
        sc->prev = e;
        if (e == SET_REV)
                sc->has_rev = true;
        if (streq(section, "repo") && streq(name, "source"))
                sc->source_last = line;
        return 1;
}

static char *escape_pct(const char *s)
{
        size_t n = 0;
        char *out, *o;

        for (const char *p = s; *p; p++)
                n += *p == '%' ? 2 : 1;
        out = o = malloc(n + 1);
        for (const char *p = s; out && *p; p++) {
                *o++ = *p;
                if (*p == '%')
                        *o++ = '%';
        }
        if (out)
                *o = 0;
        return out;
}

/* The line, with a specifier value expanded (c->expanded) when it has one. */
static int put_line(FILE *f, const struct config *c, unsigned no, const char *line, size_t len)
{
        for (size_t i = 0; i < c->n_expanded; i++) {
                const struct config_expanded *x = &c->expanded[i];
                _cleanup_free_ char *copy = strndup(line, len);
                const char *at = copy ? strstr(copy, x->raw) : NULL;

                if (x->line != no || !at)
                        continue;
                fprintf(f, "%.*s%s%s\n", (int)(at - copy), copy, x->fixed, at + strlen(x->raw));
                return 0;
        }
        fprintf(f, "%.*s\n", (int)len, line);
        return 0;
}

static int render(const struct config *c, const struct config_fork_edits *e, const char *text,
                  size_t len, char **ret, char **ret_error)
{
        struct inifile_reader rd = {.pos = text, .end = text + len};
        struct scan sc = {.rd = &rd};
        _cleanup_free_ char *state = escape_pct(e->state), *out = NULL;
        size_t out_len = 0;
        const char *p = text;
        FILE *f;
        int r;

        for (size_t i = 0; i < len; i++)
                sc.n_lines += text[i] == '\n';
        sc.n_lines++;
        sc.edits = calloc(sc.n_lines + 2, sizeof(*sc.edits));
        if (!sc.edits || !state)
                return -ENOMEM;
        r = ini_parse_stream(inifile_reader_gets, &rd, scan_handler, &sc);
        if (r != 0) {
                free(sc.edits);
                if (asprintf(ret_error, "%s:%d: cannot read it again", c->file, r) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        f = open_memstream(&out, &out_len);
        if (!f) {
                free(sc.edits);
                return -ENOMEM;
        }
        if (e->comment)
                fprintf(f, "# %s\n", e->comment);
        for (unsigned no = 1; p < text + len || (no == 1 && len == 0); no++) {
                const char *nl = memchr(p, '\n', (size_t)(text + len - p));
                size_t n = nl ? (size_t)(nl - p) : (size_t)(text + len - p);

                switch (no < sc.n_lines + 1 ? sc.edits[no] : KEEP) {
                case DROP:
                        break;
                case SET_NAME:
                        fprintf(f, "name = %s\n", e->name);
                        break;
                case SET_STATE:
                        fprintf(f, "state = %s\n", state);
                        break;
                case SET_REV:
                        if (e->rev)
                                fprintf(f, "rev = %s\n", e->rev);
                        else
                                put_line(f, c, no, p, n);
                        break;
                default:
                        put_line(f, c, no, p, n);
                }
                if (no == sc.source_last && !sc.has_rev && e->rev)
                        fprintf(f, "rev = %s\n", e->rev);
                if (!nl)
                        break;
                p = nl + 1;
        }
        free(sc.edits);
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

int config_fork_write(const struct config *c, const struct config_fork_edits *e, const char *path,
                      char **ret_error)
{
        _cleanup_free_ char *text = NULL, *out = NULL, *tmp = NULL, *err = NULL;
        _cleanup_config_ struct config *check = NULL;
        _cleanup_close_ int fd = -1;
        size_t len = 0, n;
        int r;

        r = inifile_read(c->file, CONFIG_MAX_FILE_SIZE, &text, &len, ret_error);
        if (r < 0)
                return r;
        r = render(c, e, text, len, &out, ret_error);
        if (r < 0)
                return r;
        if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
                r = -errno;
                if (asprintf(ret_error, "cannot write '%s': %s", tmp, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        n = strlen(out);
        if (write(fd, out, n) != (ssize_t)n || fsync(fd) < 0) {
                r = -errno;
                (void)unlink(tmp);
                if (asprintf(ret_error, "cannot write '%s': %s", tmp, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        /* What it says must load, as the parent's did. */
        r = config_load(tmp, &check, &err);
        if (r < 0) {
                (void)unlink(tmp);
                if (asprintf(ret_error, "the fork's config would not load: %s",
                             err ? err : strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        crashpoint("fork");
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
                r = -errno;
                (void)unlink(tmp);
                if (asprintf(ret_error, "cannot put '%s' in place: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        {
                _cleanup_free_ char *dir = strdup(path);
                char *slash = dir ? strrchr(dir, '/') : NULL;
                _cleanup_close_ int dfd = -1;
                if (slash) {
                        *slash = 0;
                        dfd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                } else {
                        dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                }
                if (dfd >= 0)
                        (void)fsync(dfd);
        }
        return 0;
}
