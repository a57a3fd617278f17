/* SPDX-License-Identifier: MIT */
/*
 * sidecar.c: the on-disk format of an upper tree, apart from any node:
 * how a name is stored, how a sidecar is read, written and encoded, and
 * the device type a record gives. core/upper.c keeps the half that works
 * on a node (its cached sidecar, the quota of a save); lower-stack.c and
 * layers-squash.c read and write frozen layers with this half.
 *
 * Names: the upper tree keeps the agent's names verbatim (gitdir and
 * review read it as a plain tree), except that names starting with the
 * reserved prefix ".cloister~" are stored as ".cloister~=" + name. Every
 * other name with that prefix is ours, so no name the agent picks (".wh.x",
 * ".cloister~meta", ...) can ever be taken for a marker.
 *
 * Sidecar: each upper directory may hold ".cloister~meta", a JSON object
 *   {"wh": {"name": 1, ...},                 whiteouts: hidden lower names
 *    "c":  {"name": {"ino": N,               the child's st_ino if not its own
 *                    "origin": "lower/path", a redirect (renamed lower entry)
 *                    "metacopy": true,       data still in the lower
 *                    "opaque": true}}}       dir hides the lower dir
 * replaced atomically (write + rename), so SIGKILL leaves the old or the new
 * one. Names are arbitrary bytes but JSON strings must be UTF-8: on disk a
 * name that is not UTF-8 moves to "whx" / "cx" (same shape, keyed by the
 * name's lowercase hex) and an origin that is not UTF-8 is "origin_hex"
 * (next to a lossy "origin"). In memory "wh" and "c" hold every name
 * verbatim (jansson's *_nocheck setters). Old sidecars simply lack the hex
 * sections. Trust boundary: all access is through the directory's fd with
 * single-component names and O_NOFOLLOW.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "format.h"
#include "fs.h"
#include "lib/readall.h"
#include "lib/util.h"

bool fs_name_valid(const char *name)
{
        size_t n = strnlen(name, 256);
        return n > 0 && n <= 255 && !strchr(name, '/') && !streq(name, ".") && !streq(name, "..");
}

/* jansson rejects invalid UTF-8 in json_string(); use that as the check. */
static bool utf8_ok(const char *s)
{
        json_t *t = json_string(s);
        json_decref(t);
        return t != NULL;
}

static char *hex_encode(const char *s)
{
        size_t n = strlen(s);
        char *hex = malloc(2 * n + 1);
        if (hex)
                sodium_bin2hex(hex, 2 * n + 1, (const unsigned char *)s, n);
        return hex;
}

/* The bytes hex encodes, NUL-terminated; NULL if not a valid name's hex. */
static char *hex_decode(const char *hex)
{
        size_t hl = strlen(hex), len = 0;
        char *b;
        if (hl % 2 != 0 || !(b = malloc(hl / 2 + 1)))
                return NULL;
        if (sodium_hex2bin((unsigned char *)b, hl / 2, hex, hl, NULL, &len, NULL) != 0 ||
            len != hl / 2 || memchr(b, 0, len)) {
                free(b);
                return NULL;
        }
        b[len] = 0;
        return b;
}

int upper_json_set_name(json_t *o, const char *key, const char *value)
{
        _cleanup_free_ char *lossy = NULL, *hex = NULL;
        char hkey[64];

        json_object_del(o, key);
        snprintf(hkey, sizeof(hkey), "%s_hex", key);
        json_object_del(o, hkey);
        if (utf8_ok(value))
                return json_object_set_new(o, key, json_string(value)) < 0 ? -ENOMEM : 0;
        lossy = strdup(value);
        hex = hex_encode(value);
        if (!lossy || !hex)
                return -ENOMEM;
        for (char *p = lossy; *p; p++)
                if ((unsigned char)*p >= 0x80)
                        *p = '?';
        if (json_object_set_new(o, key, json_string(lossy)) < 0 ||
            json_object_set_new(o, hkey, json_string(hex)) < 0)
                return -ENOMEM;
        return 0;
}

char *upper_json_get_name(json_t *o, const char *key)
{
        char hkey[64];
        const char *v;

        snprintf(hkey, sizeof(hkey), "%s_hex", key);
        v = json_string_value(json_object_get(o, hkey));
        if (v)
                return hex_decode(v);
        v = json_string_value(json_object_get(o, key));
        return v ? strdup(v) : NULL;
}

/* The two name-keyed sections and where their non-UTF-8 names go on disk. */
static const char *const name_sections[][2] = {{"wh", "whx"}, {"c", "cx"}};

/* After loading: fold the hex-keyed sections into the verbatim ones. */
static int meta_decode(json_t *m)
{
        for (size_t i = 0; i < ELEMENTSOF(name_sections); i++) {
                json_t *hx = json_object_get(m, name_sections[i][1]), *s, *v;
                const char *k;
                if (!json_is_object(hx))
                        continue;
                s = json_object_get(m, name_sections[i][0]);
                if (!s) {
                        s = json_object();
                        if (!s || json_object_set_new(m, name_sections[i][0], s) < 0)
                                return -ENOMEM;
                }
                json_object_foreach (hx, k, v) {
                        _cleanup_free_ char *name = hex_decode(k);
                        if (name && json_object_set_nocheck(s, name, v) < 0)
                                return -ENOMEM;
                }
                json_object_del(m, name_sections[i][1]);
        }
        return 0;
}

/* Split section s of m into out[plain] (UTF-8 names) and out[hx] (hex keys). */
static int encode_section(json_t *out, json_t *s, const char *plain_key, const char *hex_key)
{
        json_t *plain = json_object(), *hx = json_object(), *v;
        const char *k;
        int r = -ENOMEM;

        if (!plain || !hx)
                goto out;
        json_object_foreach (s, k, v) {
                _cleanup_free_ char *hk = NULL;
                if (utf8_ok(k)) {
                        if (json_object_set(plain, k, v) < 0)
                                goto out;
                        continue;
                }
                hk = hex_encode(k);
                if (!hk || json_object_set(hx, hk, v) < 0)
                        goto out;
        }
        if (json_object_set(out, plain_key, plain) < 0)
                goto out;
        if (json_object_size(hx) > 0 && json_object_set(out, hex_key, hx) < 0)
                goto out;
        r = 0;
out:
        json_decref(plain);
        json_decref(hx);
        return r;
}

/* A copy of m that json_dumps() accepts: non-UTF-8 names in hex sections. */
static json_t *meta_encode(json_t *m)
{
        json_t *out = json_copy(m);
        if (!out)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(name_sections); i++) {
                json_t *s = json_object_get(m, name_sections[i][0]);
                if (s && encode_section(out, s, name_sections[i][0], name_sections[i][1]) < 0) {
                        json_decref(out);
                        return NULL;
                }
        }
        return out;
}

/*
 * The whole sidecar in one buffer: json_loadfd() reads one byte per
 * read(2), which made the changes list of 10,000 copied-up files cost the
 * daemon 0.5 s of system time (600 KB of records). NULL if it cannot be
 * read or is larger than UPPER_META_MAX.
 */
static char *meta_read(int fd, size_t *ret_len)
{
        char *buf = NULL;
        struct stat st;

        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
            fd_read_whole(fd, (size_t)st.st_size, UPPER_META_MAX, &buf, ret_len) < 0)
                return NULL;
        return buf;
}

json_t *upper_meta_load_fd(int fd)
{
        size_t len = 0;
        _cleanup_free_ char *buf = meta_read(fd, &len);
        json_t *m = buf ? json_loadb(buf, len, 0, NULL) : NULL;
        if (m && (!json_is_object(m) || meta_decode(m) < 0)) {
                json_decref(m);
                return NULL;
        }
        return m;
}

int upper_name_escape(const char *name, char buf[static 256])
{
        size_t n = strlen(name);
        if (startswith(name, UPPER_PREFIX)) {
                if (n + strlen(UPPER_ESCAPE) > 255)
                        return -ENAMETOOLONG;
                memcpy(buf, UPPER_ESCAPE, strlen(UPPER_ESCAPE));
                memcpy(buf + strlen(UPPER_ESCAPE), name, n + 1);
                return 0;
        }
        if (n > 255)
                return -ENAMETOOLONG;
        memcpy(buf, name, n + 1);
        return 0;
}

int fs_upper_path(const char *rel, char *out, size_t size)
{
        size_t o = 0;

        for (const char *p = rel; *p;) {
                const char *e = strchrnul(p, '/');
                size_t n = (size_t)(e - p), l;
                char name[256], en[256];
                int r;

                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return -EINVAL;
                if (n >= sizeof(name))
                        return -ENAMETOOLONG;
                memcpy(name, p, n);
                name[n] = '\0';
                r = upper_name_escape(name, en);
                if (r < 0)
                        return r;
                l = strlen(en);
                if (o + l + (*e ? 1 : 0) + 1 > size) /* the '/' and the NUL */
                        return -ENAMETOOLONG;
                memcpy(out + o, en, l);
                o += l;
                if (*e)
                        out[o++] = '/';
                p = *e ? e + 1 : e;
        }
        if (size == 0)
                return -ENAMETOOLONG;
        out[o] = '\0';
        return 0;
}

const char *upper_name_unescape(const char *stored)
{
        const char *s = startswith(stored, UPPER_ESCAPE);
        if (s)
                return s;
        if (startswith(stored, UPPER_PREFIX))
                return NULL;
        return stored;
}

static bool meta_empty(json_t *m)
{
        const char *k;
        json_t *v;
        json_object_foreach (m, k, v)
                if (json_object_size(v) > 0)
                        return false;
        return true;
}

int upper_meta_write(int dfd, json_t *m)
{
        json_t *enc;
        _cleanup_free_ char *s = NULL;
        _cleanup_close_ int fd = -1;
        const char *tmp = UPPER_PREFIX "meta.tmp";
        int r;

        if (meta_empty(m)) {
                if (unlinkat(dfd, UPPER_META, 0) < 0 && errno != ENOENT)
                        return negative_errno();
                return 0;
        }
        enc = meta_encode(m);
        s = enc ? json_dumps(enc, JSON_COMPACT) : NULL;
        json_decref(enc);
        if (!s)
                return -ENOMEM;
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        r = fd_write_whole(fd, s, strlen(s));
        if (r < 0)
                return r;
        /*
         * Exchange, then unlink the old one, rather than rename over it: a
         * rename that replaces a file makes ext4 (auto_da_alloc) and btrfs
         * start writeback of the new file first, 0.4-0.7 ms a save on a
         * virtio disk, which doubled the cost of a copy-up
         * (docs/bench-log/append.md). Either way the name always holds the
         * old or the new sidecar, so a SIGKILL loses nothing; nothing here
         * was ever durable across power loss without fsync
         * (docs/fs-design.md), and fsync and fsyncdir sync the sidecar
         * (upper_meta_sync). No sidecar yet, or a store that cannot
         * exchange: rename.
         */
        if (renameat2(dfd, tmp, dfd, UPPER_META, RENAME_EXCHANGE) == 0) {
                (void)unlinkat(dfd, tmp, 0); /* a leftover is truncated by the next save */
                return 0;
        }
        if (renameat(dfd, tmp, dfd, UPPER_META) < 0)
                return negative_errno();
        return 0;
}

int upper_dir_clear_markers(int dfd)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                return negative_errno();
        }
        while ((de = readdir(d)))
                if (startswith(de->d_name, UPPER_PREFIX) && !upper_name_unescape(de->d_name))
                        (void)unlinkat(dfd, de->d_name, 0);
        return 0;
}

mode_t upper_rec_type(json_t *rec, mode_t host_type)
{
        const char *d;
        if (!S_ISREG(host_type))
                return host_type & S_IFMT;
        d = json_string_value(json_object_get(rec, "dev"));
        if (d && streq(d, "c"))
                return S_IFCHR;
        if (d && streq(d, "b"))
                return S_IFBLK;
        return S_IFREG;
}

int upper_rec_add_type(json_t *rec, mode_t type)
{
        if (!S_ISCHR(type) && !S_ISBLK(type))
                return 0;
        return json_object_set_new(rec, "dev", json_string(S_ISCHR(type) ? "c" : "b")) < 0 ? -ENOMEM
                                                                                           : 0;
}
