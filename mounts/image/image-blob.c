/* SPDX-License-Identifier: MIT */
/*
 * image-blob.c: the sha256 checks every blob of an image passes (the OCI
 * image spec names each blob by its digest), and the bounded reading of
 * the JSON documents (index, manifest, config) that jansson then parses.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "image-private.h"
#include "lib/util.h"

int image_errorf(char **ret_error, int r, const char *fmt, ...)
{
        va_list ap;

        if (ret_error && !*ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

static void hex_of(const unsigned char *d, char hex[static IMAGE_HEX_LEN + 1])
{
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < crypto_hash_sha256_BYTES; i++) {
                hex[2 * i] = digits[d[i] >> 4];
                hex[2 * i + 1] = digits[d[i] & 15];
        }
        hex[IMAGE_HEX_LEN] = '\0';
}

void image_mem_sha256(const void *p, size_t len, char hex[static IMAGE_HEX_LEN + 1])
{
        unsigned char d[crypto_hash_sha256_BYTES];

        crypto_hash_sha256(d, p, len);
        hex_of(d, hex);
}

int image_fd_sha256(int fd, char hex[static IMAGE_HEX_LEN + 1])
{
        crypto_hash_sha256_state st;
        unsigned char d[crypto_hash_sha256_BYTES];
        /*
         * Not a static __thread buffer: thread-local storage of the binary is
         * laid out, zeroed, in every thread of every process that links this
         * file, which hashes or not (each FUSE daemon's threads held 64 KiB
         * each of it).
         */
        enum { BUF_SIZE = 1 << 16 };
        _cleanup_free_ unsigned char *buf = malloc(BUF_SIZE);
        off_t off = 0;

        if (!buf)
                return -ENOMEM;
        crypto_hash_sha256_init(&st);
        for (;;) {
                ssize_t n = pread(fd, buf, BUF_SIZE, off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                crypto_hash_sha256_update(&st, buf, (unsigned long long)n);
                off += n;
        }
        crypto_hash_sha256_final(&st, d);
        hex_of(d, hex);
        return 0;
}

bool image_digest_valid(const char *digest)
{
        if (!digest || strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != IMAGE_DIGEST_LEN)
                return false;
        for (const char *p = digest + 7; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

const char *image_digest_hex(const char *digest)
{
        return image_digest_valid(digest) ? digest + 7 : NULL;
}

int image_open_beneath(int dirfd, const char *path, int flags)
{
        struct open_how how = {
                .flags = (uint64_t)(flags | O_CLOEXEC | O_NOCTTY),
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

        return fd < 0 ? negative_errno() : fd;
}

int image_file_read(int dirfd, const char *path, const char *want_hex, char **ret_text,
                    size_t *ret_len, json_t **ret_json, char **ret_error)
{
        _cleanup_close_ int fd = image_open_beneath(dirfd, path, O_RDONLY);
        _cleanup_free_ char *buf = NULL;
        char hex[IMAGE_HEX_LEN + 1];
        json_error_t jerr;
        struct stat st;
        size_t len = 0;

        if (fd < 0)
                return image_errorf(ret_error, fd, "%s: %s", path, strerror(-fd));
        if (fstat(fd, &st) < 0)
                return image_errorf(ret_error, negative_errno(), "%s: %m", path);
        if (!S_ISREG(st.st_mode))
                return image_errorf(ret_error, -EINVAL, "%s: not a regular file", path);
        if (st.st_size > IMAGE_JSON_MAX)
                return image_errorf(ret_error, -EFBIG,
                                    "%s: over %d bytes, more than an image's JSON", path,
                                    IMAGE_JSON_MAX);
        buf = malloc((size_t)st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        while (len < (size_t)st.st_size) {
                ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return image_errorf(ret_error, negative_errno(), "%s: %m", path);
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        if (want_hex) {
                image_mem_sha256(buf, len, hex);
                if (strcmp(hex, want_hex) != 0)
                        return image_errorf(ret_error, -EBADMSG,
                                            "%s: its sha256 is sha256:%s, not the sha256:%s that "
                                            "names it",
                                            path, hex, want_hex);
        }
        if (ret_json) {
                *ret_json = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
                if (!*ret_json)
                        return image_errorf(ret_error, -EBADMSG, "%s:%d: %s", path, jerr.line,
                                            jerr.text);
        }
        if (ret_len)
                *ret_len = len;
        if (ret_text)
                *ret_text = TAKE_PTR(buf);
        return 0;
}
