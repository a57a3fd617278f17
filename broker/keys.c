/* SPDX-License-Identifier: MIT */
/*
 * keys.c: generate, load, rotate and publish the broker's signing keys.
 *
 * Trust boundary: the key file is the broker's crown jewel. It lives in the
 * broker dir, which is never mounted into a sandbox, and we refuse to use it
 * if anyone but its owner could read it: a key that may have leaked must not
 * keep signing. Secret halves only ever sit in sodium_malloc'd memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <time.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys.h"
#include "paseto.h"
#include "lib/readall.h"
#include "lib/util.h"

#define KEY_FILE_MAX  (16 * 1024)
#define SECRET_PREFIX "k4.secret."
#define PUBLIC_PREFIX "k4.public."

struct broker_keyring {
        struct broker_key keys[BROKER_KEYS_MAX];
        size_t n;
};

static int errorf(char **ret_error, int r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int errorf(char **ret_error, int r, const char *fmt, ...)
{
        va_list ap;

        if (ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

void broker_keyring_free(broker_keyring *kr)
{
        if (!kr)
                return;
        for (size_t i = 0; i < kr->n; i++)
                sodium_free(kr->keys[i].sk);
        free(kr);
}

static void keyring_freep(broker_keyring **kr)
{
        broker_keyring_free(*kr);
}

int broker_key_paserk_public(const unsigned char pk[32], char **ret)
{
        _cleanup_free_ char *b = NULL;
        int r = broker_b64_encode(pk, 32, &b);

        if (r < 0)
                return r;
        if (asprintf(ret, PUBLIC_PREFIX "%s", b) < 0)
                return -ENOMEM;
        return 0;
}

/* PASERK "pid": "k4.pid." || b64(BLAKE2b-264("k4.pid." || paserk)). */
int broker_key_pid(const unsigned char pk[32], char ret[BROKER_KID_MAX])
{
        _cleanup_free_ char *paserk = NULL, *msg = NULL, *b = NULL;
        unsigned char d[33];
        int r;

        r = broker_key_paserk_public(pk, &paserk);
        if (r < 0)
                return r;
        if (asprintf(&msg, "k4.pid.%s", paserk) < 0)
                return -ENOMEM;
        if (crypto_generichash(d, sizeof(d), (unsigned char *)msg, strlen(msg), NULL, 0) != 0)
                return -EIO;
        r = broker_b64_encode(d, sizeof(d), &b);
        if (r < 0)
                return r;
        if ((size_t)snprintf(ret, BROKER_KID_MAX, "k4.pid.%s", b) >= BROKER_KID_MAX)
                return -EOVERFLOW;
        return 0;
}

static int key_add(broker_keyring *kr, const unsigned char pk[32], const unsigned char *sk,
                   int64_t created, int64_t retired)
{
        struct broker_key *k;
        int r;

        if (kr->n >= BROKER_KEYS_MAX)
                return -E2BIG;
        k = &kr->keys[kr->n];
        *k = (struct broker_key){.created = created, .retired = retired};
        memcpy(k->pk, pk, 32);
        r = broker_key_pid(pk, k->kid);
        if (r < 0)
                return r;
        if (sk) {
                k->sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
                if (!k->sk)
                        return -ENOMEM;
                memcpy(k->sk, sk, crypto_sign_SECRETKEYBYTES);
        }
        kr->n++;
        return 0;
}

static int key_generate(broker_keyring *kr, int64_t now)
{
        unsigned char pk[32], *sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
        int r;

        if (!sk)
                return -ENOMEM;
        crypto_sign_keypair(pk, sk);
        r = key_add(kr, pk, sk, now, 0);
        sodium_free(sk);
        return r;
}

/* Read a whole small file into sodium_malloc'd memory (it may hold keys). */
static int secret_file_read(int fd, char **ret)
{
        char *buf = sodium_malloc(KEY_FILE_MAX + 1);
        size_t len = 0;

        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = read(fd, buf + len, KEY_FILE_MAX + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int r = negative_errno();
                        sodium_free(buf);
                        return r;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > KEY_FILE_MAX) {
                        sodium_free(buf);
                        return -EFBIG;
                }
        }
        buf[len] = '\0';
        *ret = buf;
        return 0;
}

static int keyring_parse_secret(broker_keyring *kr, char *text, const char *path, char **ret_error)
{
        unsigned line = 0;
        char *next = text;

        for (char *l; (l = strsep(&next, "\n"));) {
                unsigned char *sk = NULL;
                size_t sk_len = 0, tl;
                long long created, retired;
                char *sp, *end;
                int r;

                line++;
                if (*l == '#' || *l == '\0')
                        continue;
                if (!startswith(l, SECRET_PREFIX))
                        return errorf(ret_error, -EBADMSG, "%s:%u: expected '" SECRET_PREFIX "…'",
                                      path, line);
                sp = strchr(l, ' ');
                if (!sp)
                        return errorf(ret_error, -EBADMSG, "%s:%u: missing creation time", path,
                                      line);
                tl = (size_t)(sp - l) - strlen(SECRET_PREFIX);
                r = broker_b64_decode_secret(l + strlen(SECRET_PREFIX), tl, &sk, &sk_len);
                if (r < 0 || sk_len != crypto_sign_SECRETKEYBYTES) {
                        sodium_free(sk);
                        return errorf(ret_error, -EBADMSG, "%s:%u: malformed secret key", path,
                                      line);
                }
                errno = 0;
                created = strtoll(sp + 1, &end, 10);
                retired = end && *end == ' ' ? strtoll(end + 1, &end, 10) : -1;
                if (errno || created < 0 || retired < 0 || *end != '\0') {
                        sodium_free(sk);
                        return errorf(ret_error, -EBADMSG,
                                      "%s:%u: expected 'KEY CREATED RETIRED' (Unix times)", path,
                                      line);
                }
                r = key_add(kr, sk + 32, sk, created, retired);
                sodium_free(sk); /* wipes */
                if (r < 0)
                        return errorf(ret_error, r, "%s:%u: %s", path, line,
                                      r == -E2BIG ? "too many keys" : strerror(-r));
        }
        if (!broker_keyring_current(kr))
                return errorf(ret_error, -EBADMSG, "%s: no current key (RETIRED 0)", path);
        return 0;
}

/* Write name in dirfd atomically with the given mode: temp file, fsync, rename. */
static int file_replace(int dirfd, const char *name, mode_t mode, const char *data, size_t len)
{
        char tmp[256];
        _cleanup_close_ int fd = -1;
        int r = 0;

        /* A name of this process's: two processes that replace the file at
         * once (a starting broker, `broker public-key`) must not remove or
         * rename each other's temporary file. */
        snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid());
        (void)unlinkat(dirfd, tmp, 0);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return negative_errno();
        if (fchmod(fd, mode) < 0)
                r = negative_errno();
        if (r == 0)
                r = fd_write_whole(fd, data, len);
        if (r == 0 && fsync(fd) < 0)
                r = negative_errno();
        if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = negative_errno();
        if (r < 0)
                (void)unlinkat(dirfd, tmp, 0);
        return r;
}

static int keyring_write_secret(const broker_keyring *kr, int dirfd)
{
        size_t cap = kr->n * 160 + 128, len = 0;
        char *buf = sodium_malloc(cap);
        int r = 0;

        if (!buf)
                return -ENOMEM;
        len += (size_t)snprintf(buf, cap, "# cloister broker signing keys: secret, mode 0600\n");
        for (size_t i = 0; i < kr->n && r == 0; i++) {
                const struct broker_key *k = &kr->keys[i];
                char b[100];

                if (!k->sk)
                        continue;
                sodium_bin2base64(b, sizeof(b), k->sk, crypto_sign_SECRETKEYBYTES,
                                  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
                len += (size_t)snprintf(buf + len, cap - len, SECRET_PREFIX "%s %lld %lld\n", b,
                                        (long long)k->created, (long long)k->retired);
                sodium_memzero(b, sizeof(b));
        }
        r = file_replace(dirfd, BROKER_KEY_FILE, 0600, buf, len);
        sodium_free(buf);
        return r;
}

int broker_keyring_public_text(const broker_keyring *kr, char **ret)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < kr->n; i++) {
                _cleanup_free_ char *p = NULL;
                if (broker_key_paserk_public(kr->keys[i].pk, &p) == 0)
                        fprintf(f, "%s\n", p);
        }
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

int broker_keyring_publish(const broker_keyring *kr, int dirfd, int64_t now, int64_t keep)
{
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return -ENOMEM;
        fprintf(f, "# cloister broker public keys (PASERK k4.public); the current key is last\n");
        for (size_t i = 0; i < kr->n; i++) {
                const struct broker_key *k = &kr->keys[i];
                _cleanup_free_ char *p = NULL;

                if (k->retired && k->retired + keep < now)
                        continue;
                if (broker_key_paserk_public(k->pk, &p) == 0)
                        fprintf(f, "%s\n", p);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        return file_replace(dirfd, BROKER_PUBLIC_FILE, 0644, buf, len);
}

static int keyring_open_checked(int dirfd, const char *dir, int *ret_fd, char **ret_error)
{
        _cleanup_close_ int fd = -1;
        struct stat sb;

        fd = openat(dirfd, BROKER_KEY_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &sb) < 0)
                return errorf(ret_error, negative_errno(), "%s/%s: cannot stat: %m", dir,
                              BROKER_KEY_FILE);
        if (!S_ISREG(sb.st_mode))
                return errorf(ret_error, -EINVAL, "%s/%s: not a regular file", dir,
                              BROKER_KEY_FILE);
        if (sb.st_mode & 077)
                return errorf(ret_error, -EPERM,
                              "%s/%s: key file is accessible to group or others (mode %04o); "
                              "refusing to use it: run 'chmod 600' on it, or delete it to "
                              "make a new key",
                              dir, BROKER_KEY_FILE, (unsigned)(sb.st_mode & 07777));
        if (sb.st_uid != geteuid())
                return errorf(ret_error, -EPERM, "%s/%s: key file is owned by uid %u, not %u", dir,
                              BROKER_KEY_FILE, (unsigned)sb.st_uid, (unsigned)geteuid());
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* have_lock: the caller holds dirfd's flock (a rotate), which must outlast this. */
static int keyring_load(int dirfd, const char *dir, bool create, bool have_lock,
                        broker_keyring **ret, char **ret_error)
{
        _cleanup_(keyring_freep) broker_keyring *kr = NULL;
        _cleanup_close_ int fd = -1;
        char *text = NULL, path[4096];
        int r;

        snprintf(path, sizeof(path), "%s/%s", dir, BROKER_KEY_FILE);
        kr = calloc(1, sizeof(*kr));
        if (!kr)
                return -ENOMEM;
        r = keyring_open_checked(dirfd, dir, &fd, ret_error);
        if (r == -ENOENT && create) {
                /*
                 * Made under the directory's flock, looked for again under it:
                 * the daemons of a first run (the broker, and with [logs]
                 * stdout = json the mount and the proxy) start together, and
                 * two keys made at once would leave one process signing with
                 * a key that is not on disk.
                 */
                if (!have_lock && flock(dirfd, LOCK_EX) < 0)
                        return errorf(ret_error, negative_errno(), "%s: cannot lock: %m", dir);
                r = keyring_open_checked(dirfd, dir, &fd, ret_error);
                if (r == -ENOENT) {
                        r = key_generate(kr, time(NULL));
                        if (r < 0)
                                r = errorf(ret_error, r, "%s: cannot generate a key: %s", path,
                                           strerror(-r));
                        else if ((r = keyring_write_secret(kr, dirfd)) < 0)
                                r = errorf(ret_error, r, "%s: cannot write: %s", path,
                                           strerror(-r));
                        if (!have_lock)
                                (void)flock(dirfd, LOCK_UN);
                        if (r < 0)
                                return r;
                        *ret = TAKE_PTR(kr);
                        return 0;
                }
                if (!have_lock)
                        (void)flock(dirfd, LOCK_UN);
        }
        if (r < 0) {
                if (ret_error && !*ret_error)
                        return errorf(ret_error, r, "%s: cannot open: %s", path, strerror(-r));
                return r;
        }
        r = secret_file_read(fd, &text);
        if (r < 0)
                return errorf(ret_error, r, "%s: cannot read: %s", path, strerror(-r));
        r = keyring_parse_secret(kr, text, path, ret_error);
        sodium_free(text);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(kr);
        return 0;
}

int broker_keyring_load(int dirfd, const char *dir, bool create, broker_keyring **ret,
                        char **ret_error)
{
        return keyring_load(dirfd, dir, create, false, ret, ret_error);
}

int broker_keyring_rotate(int dirfd, const char *dir, int64_t now, int64_t keep, char **ret_error)
{
        _cleanup_(keyring_freep) broker_keyring *kr = NULL, *next = NULL;
        char path[4096];
        int r;

        snprintf(path, sizeof(path), "%s/%s", dir, BROKER_KEY_FILE);
        /* Serialize with a concurrent rotate or first start: flock the directory. */
        if (flock(dirfd, LOCK_EX) < 0)
                return errorf(ret_error, negative_errno(), "%s: cannot lock: %m", dir);
        r = keyring_load(dirfd, dir, true, true, &kr, ret_error);
        if (r < 0)
                goto out;
        next = calloc(1, sizeof(*next));
        if (!next) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < kr->n; i++) {
                struct broker_key *k = &kr->keys[i];
                int64_t retired = k->retired ? k->retired : now;

                if (retired + keep < now)
                        continue; /* every token it signed has expired */
                r = key_add(next, k->pk, k->sk, k->created, retired);
                if (r < 0)
                        goto fail;
        }
        r = key_generate(next, now);
        if (r < 0)
                goto fail;
        r = keyring_write_secret(next, dirfd);
        if (r < 0)
                goto fail;
        r = broker_keyring_publish(next, dirfd, now, keep);
        if (r < 0)
                goto fail;
        goto out;
fail:
        errorf(ret_error, r, "%s: cannot rotate: %s", path,
               r == -E2BIG ? "too many live keys" : strerror(-r));
out:
        (void)flock(dirfd, LOCK_UN);
        return r;
}

static int keyring_parse_public_into(broker_keyring *kr, const char *text, const char *what,
                                     char **ret_error)
{
        unsigned line = 0;

        for (const char *l = text; *l;) {
                const char *nl = strchr(l, '\n');
                size_t ll = nl ? (size_t)(nl - l) : strlen(l);
                _cleanup_free_ unsigned char *pk = NULL;
                size_t pk_len = 0;
                int r;

                line++;
                if (ll > 0 && l[ll - 1] == '\r')
                        ll--;
                if (ll > 0 && l[0] != '#') {
                        if (ll <= strlen(PUBLIC_PREFIX) ||
                            strncmp(l, PUBLIC_PREFIX, strlen(PUBLIC_PREFIX)) != 0)
                                return errorf(ret_error, -EINVAL, "%s:%u: expected 'k4.public.KEY'",
                                              what, line);
                        r = broker_b64_decode(l + strlen(PUBLIC_PREFIX), ll - strlen(PUBLIC_PREFIX),
                                              &pk, &pk_len);
                        if (r < 0 || pk_len != 32)
                                return errorf(ret_error, -EINVAL, "%s:%u: malformed public key",
                                              what, line);
                        r = key_add(kr, pk, NULL, 0, 0);
                        if (r < 0)
                                return errorf(ret_error, r, "%s:%u: %s", what, line,
                                              r == -E2BIG ? "too many keys" : strerror(-r));
                }
                l += nl ? (size_t)(nl - l) + 1 : ll;
                if (!nl)
                        break;
        }
        if (kr->n == 0)
                return errorf(ret_error, -ENOKEY, "%s: no public keys", what);
        return 0;
}

int broker_keyring_parse_public(const char *text, broker_keyring **ret, char **ret_error)
{
        _cleanup_(keyring_freep) broker_keyring *kr = calloc(1, sizeof(*kr));
        int r;

        if (!kr)
                return -ENOMEM;
        r = keyring_parse_public_into(kr, text, "public keys", ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(kr);
        return 0;
}

int broker_keyring_load_public(const char *path, broker_keyring **ret, char **ret_error)
{
        _cleanup_(keyring_freep) broker_keyring *kr = calloc(1, sizeof(*kr));
        _cleanup_free_ char *text = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        size_t len;
        int r;

        if (!kr)
                return -ENOMEM;
        f = fopen(path, "re");
        if (!f)
                return errorf(ret_error, negative_errno(), "%s: cannot open: %m", path);
        text = malloc(KEY_FILE_MAX + 1);
        if (!text)
                return -ENOMEM;
        len = fread(text, 1, KEY_FILE_MAX + 1, f);
        if (len > KEY_FILE_MAX)
                return errorf(ret_error, -EFBIG, "%s: file too large", path);
        text[len] = '\0';
        r = keyring_parse_public_into(kr, text, path, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(kr);
        return 0;
}

const struct broker_key *broker_keyring_at(const broker_keyring *kr, size_t i)
{
        return i < kr->n ? &kr->keys[i] : NULL;
}

const struct broker_key *broker_keyring_current(const broker_keyring *kr)
{
        /* The newest key that is not retired; public-only rings: the last. */
        for (size_t i = kr->n; i > 0; i--)
                if (kr->keys[i - 1].retired == 0)
                        return &kr->keys[i - 1];
        return NULL;
}

const struct broker_key *broker_keyring_find(const broker_keyring *kr, const char *kid)
{
        for (size_t i = 0; i < kr->n; i++)
                if (streq(kr->keys[i].kid, kid))
                        return &kr->keys[i];
        return NULL;
}

size_t broker_keyring_count(const broker_keyring *kr)
{
        return kr->n;
}
