/* SPDX-License-Identifier: MIT */
/*
 * lower-sizes.c: blob sizes on disk between mounts (lower-sizes.h).
 *
 * The file: an 8-byte magic, a little-endian 64-bit count, then count
 * records of a 20-byte object id and a little-endian 64-bit size, sorted by
 * id with no repeats. It is read whole at mount (a copy, not a mapping:
 * a file cut short under a mapping would kill the daemon with SIGBUS) and a
 * lookup bisects it. It lives in the state's blob cache, which only the daemon
 * writes and the agent never sees; still, a file that is not exactly what
 * this code writes (a torn write cannot happen: tmp + rename) is ignored
 * rather than trusted: its length must match its count and its ids must
 * increase, checked once when it is read.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lower-sizes.h"
#include "lib/readall.h"
#include "lib/util.h"

#define MAGIC    "CLSIZES1"
#define HEAD_LEN 16u
#define REC_LEN  (GIT_OID_RAWSZ + 8u)

struct blob_size_rec {
        git_oid oid;
        uint64_t size;
};

struct blob_sizes {
        unsigned char *buf;
        size_t n;
};

static const unsigned char *rec_at(const struct blob_sizes *s, size_t i)
{
        return s->buf + HEAD_LEN + i * REC_LEN;
}

int blob_sizes_open(int dirfd, struct blob_sizes **ret)
{
        /* O_NONBLOCK: a FIFO in its place must not hang the mount (S_ISREG below) */
        _cleanup_close_ int fd =
                openat(dirfd, BLOB_SIZES_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        _cleanup_free_ char *buf = NULL;
        struct blob_sizes *s;
        struct stat st;
        size_t len;
        uint64_t n;
        int r;

        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < HEAD_LEN ||
            (uint64_t)st.st_size > BLOB_SIZES_MAX_BYTES ||
            ((uint64_t)st.st_size - HEAD_LEN) % REC_LEN != 0)
                return -EINVAL;
        r = fd_read_whole(fd, (size_t)st.st_size, BLOB_SIZES_MAX_BYTES, &buf, &len);
        if (r < 0)
                return r == -EFBIG ? -EINVAL : r;
        if (len != (size_t)st.st_size)
                return -EINVAL; /* changed while it was read */
        memcpy(&n, buf + 8, sizeof(n));
        n = le64toh(n);
        if (memcmp(buf, MAGIC, 8) != 0 || n != (len - HEAD_LEN) / REC_LEN)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->buf = (unsigned char *)TAKE_PTR(buf);
        s->n = (size_t)n;
        for (size_t i = 1; i < s->n; i++)
                if (memcmp(rec_at(s, i - 1), rec_at(s, i), GIT_OID_RAWSZ) >= 0) {
                        blob_sizes_free(s);
                        return -EINVAL;
                }
        *ret = s;
        return 0;
}

bool blob_sizes_find(const struct blob_sizes *s, const git_oid *oid, uint64_t *ret_size)
{
        size_t lo = 0, hi = s ? s->n : 0;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const unsigned char *r = rec_at(s, mid);
                int c = memcmp(oid->id, r, GIT_OID_RAWSZ);
                if (c == 0) {
                        uint64_t v;
                        memcpy(&v, r + GIT_OID_RAWSZ, sizeof(v));
                        *ret_size = le64toh(v);
                        return true;
                }
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return false;
}

void blob_sizes_free(struct blob_sizes *s)
{
        if (!s)
                return;
        free(s->buf);
        free(s);
}

void blob_sizes_add(struct blob_sizes_builder *b, const git_oid *oid, uint64_t size)
{
        if (b->failed)
                return;
        if (b->n == b->cap) {
                size_t cap = b->cap ? b->cap * 2 : 1024;
                struct blob_size_rec *v = reallocarray(b->v, cap, sizeof(*v));
                if (!v) {
                        b->failed = true;
                        return;
                }
                b->v = v;
                b->cap = cap;
        }
        b->v[b->n].oid = *oid;
        b->v[b->n].size = size;
        b->n++;
}

static int rec_cmp(const void *a, const void *b)
{
        return git_oid_cmp(&((const struct blob_size_rec *)a)->oid,
                           &((const struct blob_size_rec *)b)->oid);
}

int blob_sizes_write(struct blob_sizes_builder *b, int dirfd, struct blob_sizes **ret)
{
        _cleanup_free_ unsigned char *buf = NULL;
        struct blob_sizes *s;
        char tmp[64];
        size_t n = 0, len;
        unsigned char *p;
        uint64_t v;
        int fd, r = 0;

        if (b->failed)
                return -ENOMEM;
        qsort(b->v, b->n, sizeof(*b->v), rec_cmp);
        len = HEAD_LEN + b->n * REC_LEN;
        buf = malloc(len);
        if (!buf)
                return -ENOMEM;
        p = buf + HEAD_LEN;
        for (size_t i = 0; i < b->n; i++) {
                if (i > 0 && git_oid_equal(&b->v[i - 1].oid, &b->v[i].oid))
                        continue; /* one blob in several places */
                memcpy(p, b->v[i].oid.id, GIT_OID_RAWSZ);
                v = htole64(b->v[i].size);
                memcpy(p + GIT_OID_RAWSZ, &v, sizeof(v));
                p += REC_LEN;
                n++;
        }
        memcpy(buf, MAGIC, 8);
        v = htole64((uint64_t)n);
        memcpy(buf + 8, &v, sizeof(v));
        len = HEAD_LEN + n * REC_LEN;

        snprintf(tmp, sizeof(tmp), BLOB_SIZES_FILE ".tmp.%ld", (long)getpid());
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                r = negative_errno();
        else {
                r = fd_write_whole(fd, buf, len);
                if (close(fd) < 0 && r == 0)
                        r = negative_errno();
                if (r == 0 && renameat(dirfd, tmp, dirfd, BLOB_SIZES_FILE) < 0)
                        r = negative_errno();
                if (r < 0)
                        (void)unlinkat(dirfd, tmp, 0);
        }
        /* What was written is the file's bytes: the daemon that wrote them
         * uses them as they are, written or not, rather than read them back. */
        s = ret ? calloc(1, sizeof(*s)) : NULL;
        if (s) {
                s->buf = TAKE_PTR(buf);
                s->n = n;
                *ret = s;
        }
        return r;
}

void blob_sizes_builder_done(struct blob_sizes_builder *b)
{
        free(b->v);
        *b = (struct blob_sizes_builder){0};
}
