/* SPDX-License-Identifier: MIT */
/*
 * image-unpack.c: one untrusted tar archive (a layer, or an oci-archive or
 * docker-archive around the blobs) into an empty directory.
 *
 * Trust boundary: everything in the archive is the image author's, and the
 * directory is on the host. libarchive reads and decompresses; it does not
 * write. Its disk writer (even with ARCHIVE_EXTRACT_SECURE_SYMLINKS,
 * _SECURE_NODOTDOT and _SECURE_NOABSOLUTEPATHS) resolves paths from the
 * process's working directory by name, and would set owners, modes with
 * their setuid bits, device nodes, extended attributes (file capabilities)
 * and ACLs as the archive says. So each entry is written here, relative to
 * the layer's directory fd:
 *   - its name is refused if absolute, if any component is "..", or over
 *     NAME_MAX/PATH_MAX;
 *   - its parent is reached component by component with
 *     O_DIRECTORY|O_NOFOLLOW from the layer's fd: a symlink on the way (made
 *     by an earlier entry) is refused, never followed;
 *   - files are made with O_CREAT|O_EXCL|O_NOFOLLOW, owned by us, mode & 0777;
 *   - a symlink's target must stay in the layer, read lexically from the
 *     link's directory (absolute targets from the layer's root), and a hard
 *     link's target must be a file or symlink already in the layer;
 *   - device nodes and sockets are refused; setuid and setgid files are
 *     refused unless the limits allow them, and then stored without those
 *     bits (the sandbox is nosuid anyway); directories lose setgid silently
 *     (Debian ships setgid directories; the bit grants nothing);
 *   - no owner, no extended attribute, no ACL is ever set;
 *   - one entry's size, the bytes and the entries of the whole import are
 *     bounded (struct image_limits), counted as written, not as declared,
 *     which stops decompression bombs however the archive lies.
 * With a digest, the bytes read are hashed as they pass and checked before
 * success: a layer is never taken for another.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image-private.h"
#include "lib/util.h"

/* The archive's bytes, hashed as libarchive reads them. */
struct reader {
        int fd;
        crypto_hash_sha256_state sha;
        unsigned char buf[1 << 16];
};

static la_ssize_t reader_read(struct archive *a, void *data, const void **out)
{
        struct reader *rd = data;
        ssize_t n;

        do
                n = read(rd->fd, rd->buf, sizeof(rd->buf));
        while (n < 0 && errno == EINTR);
        if (n < 0) {
                archive_set_error(a, errno, "read: %s", strerror(errno));
                return -1;
        }
        crypto_hash_sha256_update(&rd->sha, rd->buf, (unsigned long long)n);
        *out = rd->buf;
        return n;
}

/* Directories whose mode is set at the end: until then each stays writable. */
struct dir_mode {
        char *path;
        mode_t mode;
};
struct unpack {
        int root;
        const char *what;
        struct image_budget *b;
        struct dir_mode *dirs;
        size_t n_dirs, allocated;
        char **error;
};

/*
 * A relative, normalized name: leading "./" and repeated "/" dropped, a
 * trailing "/" dropped. "" means the root itself. Refused: absolute names,
 * "..", overlong names.
 */
static int name_clean(struct unpack *u, const char *raw, char out[static PATH_MAX])
{
        size_t o = 0, depth = 0;
        const char *p = raw;

        if (!raw)
                return image_errorf(u->error, -EINVAL, "%s: an entry without a name", u->what);
        if (raw[0] == '/')
                return image_errorf(u->error, -EPERM,
                                    "%s: entry '%s' has an absolute path, outside the layer",
                                    u->what, raw);
        while (*p) {
                const char *end = strchrnul(p, '/');
                size_t len = (size_t)(end - p);

                if (len == 0 || (len == 1 && p[0] == '.')) {
                        /* "" or "." */
                } else if (len == 2 && p[0] == '.' && p[1] == '.') {
                        return image_errorf(u->error, -EPERM,
                                            "%s: entry '%s' has a '..' component, outside the "
                                            "layer",
                                            u->what, raw);
                } else {
                        if (len > NAME_MAX || o + len + 2 > PATH_MAX)
                                return image_errorf(u->error, -ENAMETOOLONG,
                                                    "%s: entry '%.64s...': name too long", u->what,
                                                    raw);
                        /* What the store's walks (compose, rm, gc) can take apart again. */
                        if (++depth > IMAGE_DEPTH_MAX)
                                return image_errorf(u->error, -ELOOP,
                                                    "%s: entry '%.64s...' is nested deeper than "
                                                    "%d directories",
                                                    u->what, raw, IMAGE_DEPTH_MAX);
                        if (o)
                                out[o++] = '/';
                        memcpy(out + o, p, len);
                        o += len;
                }
                p = *end ? end + 1 : end;
        }
        out[o] = '\0';
        return 0;
}

/*
 * The directory holding name, reached from the root without following any
 * symlink; missing directories are made (create) or are an error.
 * *ret_base points into name.
 */
static int parent_open(struct unpack *u, const char *name, bool create, const char **ret_base)
{
        char buf[PATH_MAX];
        char *p = buf, *slash;
        int fd = dup(u->root);

        if (fd < 0)
                return negative_errno();
        snprintf(buf, sizeof(buf), "%s", name);
        while ((slash = strchr(p, '/'))) {
                int next;

                *slash = '\0';
                next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0 && errno == ENOENT && create) {
                        if (mkdirat(fd, p, 0755) < 0 && errno != EEXIST) {
                                int r = negative_errno();
                                close(fd);
                                return image_errorf(u->error, r, "%s: cannot make '%s': %s",
                                                    u->what, buf, strerror(-r));
                        }
                        next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                }
                if (next < 0) {
                        int r = negative_errno();
                        close(fd);
                        if (r == -ELOOP || r == -ENOTDIR)
                                return image_errorf(u->error, -EPERM,
                                                    "%s: entry '%s' lies under '%s', which is not "
                                                    "a directory (a symlink is never followed)",
                                                    u->what, name, buf);
                        return image_errorf(u->error, r, "%s: '%s': %s", u->what, buf,
                                            strerror(-r));
                }
                close(fd);
                fd = next;
                *slash = '/';
                p = slash + 1;
        }
        *ret_base = name + (p - buf);
        return fd;
}

/* A symlink's target read lexically from the link's directory: does it stay in? */
static bool link_target_inside(const char *name, const char *target)
{
        long depth = 0;
        const char *p;

        if (target[0] != '/') /* relative: from the link's own directory */
                for (p = name; (p = strchr(p, '/')); p++)
                        depth++;
        for (p = target; *p;) {
                const char *end = strchrnul(p, '/');
                size_t len = (size_t)(end - p);

                if (len == 2 && p[0] == '.' && p[1] == '.') {
                        if (--depth < 0)
                                return false;
                } else if (len > 0 && !(len == 1 && p[0] == '.')) {
                        depth++;
                }
                p = *end ? end + 1 : end;
        }
        return true;
}

/* An existing non-directory of that name goes (a later entry wins, as tar does). */
static int replace_prepare(struct unpack *u, int dir, const char *base, const char *name,
                           bool new_is_dir)
{
        struct stat st;

        if (fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : negative_errno();
        if (S_ISDIR(st.st_mode)) {
                if (new_is_dir)
                        return 1; /* kept */
                return image_errorf(u->error, -EEXIST,
                                    "%s: entry '%s' would replace a directory of the same name",
                                    u->what, name);
        }
        return unlinkat(dir, base, 0) < 0 ? negative_errno() : 0;
}

static int budget_add(struct unpack *u, uint64_t bytes, const char *name)
{
        const struct image_limits *l = u->b->limits;

        if (bytes > l->max_size - MIN(u->b->bytes, l->max_size))
                return image_errorf(u->error, -EFBIG,
                                    "%s: unpacks to more than [image] max_size (%llu bytes) at "
                                    "'%s': refused as a decompression bomb",
                                    u->what, (unsigned long long)l->max_size, name);
        u->b->bytes += bytes;
        return 0;
}

static int file_write(struct unpack *u, struct archive *a, int dir, const char *base,
                      const char *name, mode_t mode)
{
        _cleanup_close_ int fd =
                openat(dir, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        const struct image_limits *l = u->b->limits;
        uint64_t end = 0;
        int r;

        if (fd < 0)
                return image_errorf(u->error, negative_errno(), "%s: cannot create '%s': %m",
                                    u->what, name);
        for (;;) {
                const void *buf;
                size_t len;
                la_int64_t off;

                r = archive_read_data_block(a, &buf, &len, &off);
                if (r == ARCHIVE_EOF)
                        break;
                if (r < ARCHIVE_WARN)
                        return image_errorf(u->error, -EBADMSG, "%s: '%s': %s", u->what, name,
                                            archive_error_string(a));
                if (off < 0 || (uint64_t)off > l->max_file || len > l->max_file - (uint64_t)off)
                        return image_errorf(u->error, -EFBIG,
                                            "%s: entry '%s' is larger than [image] max_file "
                                            "(%llu bytes)",
                                            u->what, name, (unsigned long long)l->max_file);
                r = budget_add(u, len, name);
                if (r < 0)
                        return r;
                for (size_t done = 0; done < len;) {
                        ssize_t n =
                                pwrite(fd, (const char *)buf + done, len - done, off + (off_t)done);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return image_errorf(u->error, negative_errno(),
                                                    "%s: writing '%s': %m", u->what, name);
                        done += (size_t)n;
                }
                end = MAX(end, (uint64_t)off + len);
        }
        /* A sparse file's tail hole: the declared size, still bounded. */
        if (ftruncate(fd, (off_t)end) < 0 || fchmod(fd, mode) < 0)
                return image_errorf(u->error, negative_errno(), "%s: '%s': %m", u->what, name);
        return 0;
}

static int dir_remember(struct unpack *u, const char *name, mode_t mode)
{
        if (u->n_dirs == u->allocated) {
                size_t a = MAX(u->allocated * 2, (size_t)64);
                struct dir_mode *d = realloc(u->dirs, a * sizeof(*d));
                if (!d)
                        return -ENOMEM;
                u->dirs = d;
                u->allocated = a;
        }
        u->dirs[u->n_dirs].path = strdup(name);
        if (!u->dirs[u->n_dirs].path)
                return -ENOMEM;
        u->dirs[u->n_dirs++].mode = mode;
        return 0;
}

static int entry_write(struct unpack *u, struct archive *a, struct archive_entry *e)
{
        const struct image_limits *l = u->b->limits;
        char name[PATH_MAX], target[PATH_MAX];
        const char *base, *hardlink = archive_entry_hardlink(e);
        mode_t type = archive_entry_filetype(e), mode = archive_entry_perm(e);
        _cleanup_close_ int dir = -1;
        int r;

        r = name_clean(u, archive_entry_pathname(e), name);
        if (r < 0)
                return r;
        if (++u->b->entries > l->max_entries)
                return image_errorf(u->error, -EFBIG,
                                    "%s: more than [image] max_entries (%llu) entries", u->what,
                                    (unsigned long long)l->max_entries);
        if (!hardlink && (type == AE_IFCHR || type == AE_IFBLK))
                return image_errorf(u->error, -EPERM, "%s: entry '%s' is a device node: refused",
                                    u->what, name);
        if (!hardlink && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK &&
            type != AE_IFIFO)
                return image_errorf(u->error, -EPERM,
                                    "%s: entry '%s' is of a type an image may not hold (0%o)",
                                    u->what, name, (unsigned)type);
        if (mode & (S_ISUID | S_ISGID)) {
                if (type == AE_IFDIR || l->allow_setuid)
                        mode &= ~(mode_t)(S_ISUID | S_ISGID);
                else
                        return image_errorf(u->error, -EPERM,
                                            "%s: entry '%s' is set%sid: refused (allow with "
                                            "[image] allow_setuid; the bits are dropped)",
                                            u->what, name, mode & S_ISUID ? "u" : "g");
        }
        mode &= type == AE_IFDIR ? 01777 : 0777;
        if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0 &&
            (uint64_t)archive_entry_size(e) > l->max_file)
                return image_errorf(u->error, -EFBIG,
                                    "%s: entry '%s' is larger than [image] max_file (%llu bytes)",
                                    u->what, name, (unsigned long long)l->max_file);
        if (name[0] == '\0') /* the root itself: nothing to make */
                return 0;
        dir = parent_open(u, name, true, &base);
        if (dir < 0)
                return dir;

        if (hardlink) {
                const char *tbase;
                _cleanup_close_ int tdir = -1;
                struct stat st;

                _cleanup_free_ char *why = NULL;
                char **error = u->error;

                u->error = &why; /* said below, as the link's */
                r = name_clean(u, hardlink, target);
                u->error = error;
                if (r < 0)
                        return image_errorf(u->error, -EPERM,
                                            "%s: hard link '%s' points to '%s', out of the layer",
                                            u->what, name, hardlink);
                tdir = parent_open(u, target, false, &tbase);
                if (tdir < 0)
                        return image_errorf(u->error, -EPERM,
                                            "%s: hard link '%s' points to '%s', not in the layer",
                                            u->what, name, hardlink);
                if (fstatat(tdir, tbase, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
                        return image_errorf(u->error, -EPERM,
                                            "%s: hard link '%s' points to '%s', not a file in "
                                            "the layer",
                                            u->what, name, hardlink);
                r = replace_prepare(u, dir, base, name, false);
                if (r < 0)
                        return r;
                if (linkat(tdir, tbase, dir, base, 0) < 0)
                        return image_errorf(u->error, negative_errno(), "%s: link '%s': %m",
                                            u->what, name);
                return 0;
        }
        r = replace_prepare(u, dir, base, name, type == AE_IFDIR);
        if (r < 0)
                return image_errorf(u->error, r, "%s: '%s': %s", u->what, name, strerror(-r));
        switch (type) {
        case AE_IFDIR:
                if (r == 0 && mkdirat(dir, base, 0700) < 0)
                        return image_errorf(u->error, negative_errno(), "%s: mkdir '%s': %m",
                                            u->what, name);
                return dir_remember(u, name, mode);
        case AE_IFLNK: {
                const char *t = archive_entry_symlink(e);
                if (!t || !*t || !link_target_inside(name, t))
                        return image_errorf(u->error, -EPERM,
                                            "%s: symlink '%s' points to '%s', out of the layer",
                                            u->what, name, t ? t : "");
                if (symlinkat(t, dir, base) < 0)
                        return image_errorf(u->error, negative_errno(), "%s: symlink '%s': %m",
                                            u->what, name);
                return 0;
        }
        case AE_IFIFO:
                if (mkfifoat(dir, base, mode) < 0)
                        return image_errorf(u->error, negative_errno(), "%s: fifo '%s': %m",
                                            u->what, name);
                return 0;
        default:
                return file_write(u, a, dir, base, name, mode);
        }
}

/* Directory modes last, deepest first, so that none stops a later write. */
static int dirs_finish(struct unpack *u)
{
        for (size_t i = u->n_dirs; i-- > 0;) {
                const char *base;
                _cleanup_close_ int dir = parent_open(u, u->dirs[i].path, false, &base);
                if (dir < 0)
                        return dir;
                if (fchmodat(dir, base, u->dirs[i].mode | 0700, 0) < 0)
                        return image_errorf(u->error, negative_errno(), "%s: chmod '%s': %m",
                                            u->what, u->dirs[i].path);
        }
        return 0;
}

int image_unpack(int fd, const char *want_hex, int dirfd, struct image_budget *b, const char *what,
                 char **ret_error)
{
        struct unpack u = {.root = dirfd, .what = what, .b = b, .error = ret_error};
        struct archive *a = archive_read_new();
        struct reader *rd = malloc(sizeof(*rd));
        struct archive_entry *e;
        int r = 0, ar;

        if (!a || !rd) {
                r = -ENOMEM;
                goto out;
        }
        rd->fd = fd;
        crypto_hash_sha256_init(&rd->sha);
        /* Only tar, and only the filters built into libarchive: none runs a program. */
        archive_read_support_format_tar(a);
        archive_read_support_format_gnutar(a);
        archive_read_support_filter_gzip(a);
        archive_read_support_filter_xz(a);
        archive_read_support_filter_zstd(a);
        archive_read_support_filter_bzip2(a);
        if (archive_read_open(a, rd, NULL, reader_read, NULL) != ARCHIVE_OK) {
                r = image_errorf(ret_error, -EBADMSG, "%s: not a tar archive: %s", what,
                                 archive_error_string(a));
                goto out;
        }
        while ((ar = archive_read_next_header(a, &e)) != ARCHIVE_EOF) {
                if (ar < ARCHIVE_WARN) {
                        r = image_errorf(ret_error, -EBADMSG, "%s: %s", what,
                                         archive_error_string(a));
                        goto out;
                }
                r = entry_write(&u, a, e);
                if (r < 0)
                        goto out;
        }
        r = dirs_finish(&u);
        if (r < 0)
                goto out;
        if (want_hex) {
                unsigned char d[crypto_hash_sha256_BYTES];
                char hex[IMAGE_HEX_LEN + 1];
                static const char digits[] = "0123456789abcdef";
                ssize_t n;

                /* The rest after the end-of-archive blocks belongs to the blob too. */
                while ((n = read(fd, rd->buf, sizeof(rd->buf))) > 0 || (n < 0 && errno == EINTR))
                        if (n > 0)
                                crypto_hash_sha256_update(&rd->sha, rd->buf, (unsigned long long)n);
                crypto_hash_sha256_final(&rd->sha, d);
                for (size_t i = 0; i < sizeof(d); i++) {
                        hex[2 * i] = digits[d[i] >> 4];
                        hex[2 * i + 1] = digits[d[i] & 15];
                }
                hex[IMAGE_HEX_LEN] = '\0';
                if (strcmp(hex, want_hex) != 0)
                        r = image_errorf(ret_error, -EBADMSG,
                                         "%s: digest mismatch: its sha256 is sha256:%s, the "
                                         "manifest names sha256:%s",
                                         what, hex, want_hex);
        }
out:
        for (size_t i = 0; i < u.n_dirs; i++)
                free(u.dirs[i].path);
        free(u.dirs);
        if (a)
                archive_read_free(a);
        free(rd);
        return r;
}
