/* SPDX-License-Identifier: MIT */
/*
 * secrets.c: seal, unseal, list and remove stored secrets.
 *
 * The plaintext only ever exists in sodium_malloc'd memory that is wiped
 * before it is freed; it is never logged or audited.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paseto.h"
#include "policy.h"
#include "secrets.h"
#include "lib/util.h"

#define SEALED_MAX (BROKER_SECRET_MAX * 2 + 1024)

/*
 * Make the sealing key: written and synced under a temporary name, then
 * linked into place, so the key file is either absent or complete (a
 * crash cannot leave an empty one that would refuse every later secret).
 * -EEXIST: someone else made it first; the caller reads theirs.
 */
static int key_create(int dirfd, const unsigned char *key)
{
        char tmp[64];
        _cleanup_close_ int fd = -1;
        int r = 0;

        snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", BROKER_SECRET_KEY_FILE, (long)getpid());
        (void)unlinkat(dirfd, tmp, 0);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        if (write(fd, key, 32) != 32 || fsync(fd) < 0)
                r = errno ? negative_errno() : -EIO;
        else if (linkat(dirfd, tmp, dirfd, BROKER_SECRET_KEY_FILE, 0) < 0)
                r = negative_errno();
        (void)unlinkat(dirfd, tmp, 0);
        return r;
}

static int key_load(int dirfd, bool create, unsigned char **ret)
{
        _cleanup_close_ int fd = -1;
        unsigned char *key = sodium_malloc(32);
        struct stat sb;
        ssize_t n;
        int r;

        if (!key)
                return -ENOMEM;
        fd = openat(dirfd, BROKER_SECRET_KEY_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && create) {
                randombytes_buf(key, 32);
                r = key_create(dirfd, key);
                if (r == 0) {
                        *ret = key;
                        return 0;
                }
                if (r != -EEXIST)
                        goto fail;
                /* Lost the race to another `secret add`: use the key it made. */
                fd = openat(dirfd, BROKER_SECRET_KEY_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (fd < 0) {
                r = negative_errno();
                goto fail;
        }
        if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || (sb.st_mode & 077) ||
            sb.st_uid != geteuid()) {
                r = -EPERM; /* a key others could read may have leaked: refuse it */
                goto fail;
        }
        n = read(fd, key, 32);
        if (n != 32) {
                r = -EINVAL;
                goto fail;
        }
        *ret = key;
        return 0;
fail:
        sodium_free(key);
        return r;
}

static int secrets_dir(int dirfd, bool create)
{
        int fd;

        if (create && mkdirat(dirfd, BROKER_SECRETS_DIR, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        fd = openat(dirfd, BROKER_SECRETS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

static int implicit_for(const char *name, char **ret)
{
        return asprintf(ret, "{\"secret\":\"%s\"}", name) < 0 ? -ENOMEM : 0;
}

int broker_secret_store(int dirfd, const char *name, const unsigned char *data, size_t len)
{
        _cleanup_free_ char *token = NULL, *implicit = NULL;
        _cleanup_close_ int sfd = -1, fd = -1;
        unsigned char *key = NULL;
        char tmp[BROKER_NAME_MAX + 16];
        size_t tl;
        int r;

        if (!broker_name_is_valid(name))
                return -EINVAL;
        if (len > BROKER_SECRET_MAX)
                return -EFBIG;
        r = implicit_for(name, &implicit);
        if (r < 0)
                return r;
        r = key_load(dirfd, true, &key);
        if (r < 0)
                return r;
        r = broker_paseto_encrypt(key, NULL, data, len, NULL, implicit, strlen(implicit), &token);
        sodium_free(key);
        if (r < 0)
                return r;
        sfd = secrets_dir(dirfd, true);
        if (sfd < 0)
                return sfd;
        snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
        (void)unlinkat(sfd, tmp, 0);
        fd = openat(sfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        tl = strlen(token);
        if (write(fd, token, tl) != (ssize_t)tl || write(fd, "\n", 1) != 1 || fsync(fd) < 0 ||
            renameat(sfd, tmp, sfd, name) < 0) {
                r = errno ? negative_errno() : -EIO;
                (void)unlinkat(sfd, tmp, 0);
                return r;
        }
        return 0;
}

int broker_secret_load(int dirfd, const char *name, unsigned char **ret, size_t *ret_len)
{
        _cleanup_free_ char *buf = NULL, *implicit = NULL;
        _cleanup_close_ int sfd = -1, fd = -1;
        unsigned char *key = NULL;
        ssize_t n;
        int r;

        if (!broker_name_is_valid(name))
                return -EINVAL;
        sfd = secrets_dir(dirfd, false);
        if (sfd < 0)
                return sfd;
        fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        buf = malloc(SEALED_MAX + 1);
        if (!buf)
                return -ENOMEM;
        n = read(fd, buf, SEALED_MAX + 1);
        if (n < 0)
                return negative_errno();
        if (n > SEALED_MAX)
                return -EFBIG;
        while (n > 0 && buf[n - 1] == '\n')
                n--;
        buf[n] = '\0';
        r = implicit_for(name, &implicit);
        if (r < 0)
                return r;
        r = key_load(dirfd, false, &key);
        if (r < 0)
                return r;
        r = broker_paseto_decrypt(key, buf, "", implicit, strlen(implicit), ret, ret_len);
        sodium_free(key);
        return r;
}

int broker_secret_is_stored(int dirfd, const char *name)
{
        _cleanup_close_ int sfd = -1;
        struct stat sb;

        if (!broker_name_is_valid(name))
                return -EINVAL;
        sfd = secrets_dir(dirfd, false);
        if (sfd == -ENOENT)
                return 0;
        if (sfd < 0)
                return sfd;
        if (fstatat(sfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : negative_errno();
        /* What broker_secret_load would open: a symlink or directory would not unseal. */
        return S_ISREG(sb.st_mode) ? 1 : 0;
}

static int cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int broker_secret_list(int dirfd, char ***ret)
{
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        size_t n = 0;
        int sfd;

        if (!l)
                return -ENOMEM;
        sfd = secrets_dir(dirfd, false);
        if (sfd == -ENOENT) {
                *ret = TAKE_PTR(l);
                return 0;
        }
        if (sfd < 0)
                return sfd;
        d = fdopendir(sfd);
        if (!d) {
                safe_close(sfd);
                return -ENOMEM;
        }
        while ((de = readdir(d))) {
                char **nl;

                if (!broker_name_is_valid(de->d_name))
                        continue; /* ".", "..", temp files */
                nl = realloc(l, (n + 2) * sizeof(char *));
                if (!nl)
                        return -ENOMEM;
                l = nl;
                l[n] = strdup(de->d_name);
                l[n + 1] = NULL;
                if (!l[n++])
                        return -ENOMEM;
        }
        qsort(l, n, sizeof(char *), cmp);
        *ret = TAKE_PTR(l);
        return 0;
}

int broker_secret_remove(int dirfd, const char *name)
{
        _cleanup_close_ int sfd = -1;

        if (!broker_name_is_valid(name))
                return -EINVAL;
        sfd = secrets_dir(dirfd, false);
        if (sfd < 0)
                return sfd;
        return unlinkat(sfd, name, 0) < 0 ? negative_errno() : 0;
}
