/* SPDX-License-Identifier: MIT */
/*
 * paseto.c: PASETO v4.public and v4.local, the PAE encoding and strict
 * base64url, on libsodium.
 *
 * The spec is followed to the letter (the official vectors are a unit test):
 * the header is authenticated, the footer is authenticated but not
 * encrypted, and the implicit assertion is authenticated but never sent.
 * Every comparison of an authenticator is constant time (sodium_memcmp, or
 * libsodium's own verify for Ed25519).
 */
#include <errno.h>
#include <sodium.h>
#include <string.h>

#include "paseto.h"
#include "lib/util.h"

#define LOCAL_NONCE   32
#define LOCAL_TAG     32
#define PUBLIC_SIG    crypto_sign_BYTES
#define ENC_KEY_INFO  "paseto-encryption-key"
#define AUTH_KEY_INFO "paseto-auth-key-for-aead"

int broker_b64_encode(const void *data, size_t len, char **ret)
{
        size_t n = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        char *s = malloc(n);

        if (!s)
                return -ENOMEM;
        sodium_bin2base64(s, n, data, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        *ret = s;
        return 0;
}

/*
 * Strict decoding, with the result in sodium_malloc'd memory (secret) or
 * malloc'd memory. For a secret, the decoded bytes and the re-encoded copy
 * used for the canonical check never sit in the plain heap, and both are
 * wiped on every path.
 */
static int b64_decode(const char *s, size_t len, bool secret, unsigned char **ret, size_t *ret_len)
{
        const int v = sodium_base64_VARIANT_URLSAFE_NO_PADDING;
        size_t cap = len / 4 * 3 + 3, elen, n = 0;
        unsigned char *out = NULL;
        char *again = NULL;
        const char *end = NULL;
        int r = -EINVAL;

        /* Length 1 mod 4 can never be valid; 2 and 3 mod 4 carry 4 and 2 spare bits. */
        if (len % 4 == 1)
                return -EINVAL;
        out = secret ? sodium_malloc(cap) : malloc(cap);
        if (!out)
                return -ENOMEM;
        if (sodium_base642bin(out, cap, s, len, NULL, &n, &end, v) != 0 || end != s + len)
                goto out;
        /*
         * libsodium 1.0.18 already refuses nonzero trailing bits, but a token
         * must have exactly one spelling whatever the library version does:
         * re-encode and compare.
         */
        elen = sodium_base64_ENCODED_LEN(n, v);
        again = secret ? sodium_malloc(elen) : malloc(elen);
        if (!again) {
                r = -ENOMEM;
                goto out;
        }
        sodium_bin2base64(again, elen, out, n, v);
        if (strlen(again) != len || sodium_memcmp(again, s, len) != 0)
                goto out;
        *ret = TAKE_PTR(out);
        *ret_len = n;
        r = 0;
out:
        if (secret) {
                sodium_free(out);
                sodium_free(again);
        } else {
                free(out);
                free(again);
        }
        return r;
}

int broker_b64_decode(const char *s, size_t len, unsigned char **ret, size_t *ret_len)
{
        return b64_decode(s, len, false, ret, ret_len);
}

int broker_b64_decode_secret(const char *s, size_t len, unsigned char **ret, size_t *ret_len)
{
        return b64_decode(s, len, true, ret, ret_len);
}

static void le64(unsigned char out[8], uint64_t n)
{
        for (int i = 0; i < 8; i++) {
                if (i == 7)
                        n &= 127; /* the spec clears the top bit for portability */
                out[i] = (unsigned char)(n & 255);
                n >>= 8;
        }
}

int broker_paseto_pae(const struct iovec *pieces, size_t n, unsigned char **ret, size_t *ret_len)
{
        size_t len = 8;
        unsigned char *out, *p;

        for (size_t i = 0; i < n; i++) {
                if (pieces[i].iov_len > SIZE_MAX / 2 - len - 8)
                        return -EOVERFLOW;
                len += 8 + pieces[i].iov_len;
        }
        out = malloc(len ? len : 1);
        if (!out)
                return -ENOMEM;
        le64(out, n);
        p = out + 8;
        for (size_t i = 0; i < n; i++) {
                le64(p, pieces[i].iov_len);
                p += 8;
                if (pieces[i].iov_len)
                        memcpy(p, pieces[i].iov_base, pieces[i].iov_len);
                p += pieces[i].iov_len;
        }
        *ret = out;
        *ret_len = len;
        return 0;
}

/* "header" "body" ["." "footer"], each part decoded strictly. */
struct parts {
        unsigned char *body;
        size_t body_len;
        char *footer; /* NUL-terminated, "" when absent */
        size_t footer_len;
};

/* A token is a bearer credential: wipe every copy of it we made. */
static void wipe_free(void *p, size_t len)
{
        if (p) {
                sodium_memzero(p, len);
                free(p);
        }
}

static void parts_done(struct parts *p)
{
        wipe_free(p->body, p->body_len);
        free(p->footer);
}

static int token_split(const char *token, const char *header, struct parts *ret)
{
        size_t hl = strlen(header), tl;
        const char *body, *dot;
        unsigned char *f = NULL;
        size_t flen = 0;
        int r;

        *ret = (struct parts){0};
        tl = strnlen(token, BROKER_PASETO_MAX_TOKEN + 1);
        if (tl > BROKER_PASETO_MAX_TOKEN)
                return -EINVAL;
        if (strncmp(token, header, hl) != 0) {
                /* A v4 token of the other purpose, or another version. */
                return -EPROTONOSUPPORT;
        }
        body = token + hl;
        dot = strchr(body, '.');
        if (dot && (strchr(dot + 1, '.') || dot[1] == '\0'))
                return -EINVAL;
        r = broker_b64_decode(body, dot ? (size_t)(dot - body) : strlen(body), &ret->body,
                              &ret->body_len);
        if (r < 0)
                return r;
        if (dot) {
                r = broker_b64_decode(dot + 1, strlen(dot + 1), &f, &flen);
                if (r < 0) {
                        parts_done(ret);
                        return r;
                }
        }
        ret->footer = malloc(flen + 1);
        if (!ret->footer) {
                free(f);
                parts_done(ret);
                return -ENOMEM;
        }
        if (flen)
                memcpy(ret->footer, f, flen);
        ret->footer[flen] = '\0';
        ret->footer_len = flen;
        free(f);
        return 0;
}

static int footer_check(const struct parts *p, const char *expected)
{
        size_t el;

        if (!expected)
                return 0;
        el = strlen(expected);
        if (el != p->footer_len)
                return -EBADMSG;
        if (el && sodium_memcmp(p->footer, expected, el) != 0)
                return -EBADMSG;
        return 0;
}

static int token_join(const char *header, const unsigned char *body, size_t body_len,
                      const char *footer, char **ret)
{
        _cleanup_free_ char *f = NULL;
        char *b = NULL;
        int r;

        r = broker_b64_encode(body, body_len, &b);
        if (r < 0)
                return r;
        if (footer && *footer) {
                r = broker_b64_encode(footer, strlen(footer), &f);
                if (r < 0) {
                        wipe_free(b, strlen(b));
                        return r;
                }
        }
        r = asprintf(ret, "%s%s%s%s", header, b, f ? "." : "", f ? f : "") < 0 ? -ENOMEM : 0;
        wipe_free(b, strlen(b));
        return r;
}

size_t broker_paseto_public_len(size_t msg_len, size_t footer_len)
{
        const int v = sodium_base64_VARIANT_URLSAFE_NO_PADDING;

        /* sodium_base64_ENCODED_LEN counts the NUL: one for the whole token. */
        return strlen(BROKER_PASETO_PUBLIC_HEADER) +
               sodium_base64_ENCODED_LEN(msg_len + PUBLIC_SIG, v) +
               (footer_len ? sodium_base64_ENCODED_LEN(footer_len, v) : 0);
}

#define SIGN_STACK 2048 /* PAE and body of a token up to this size need no allocation */

int broker_paseto_sign_to(const unsigned char sk[64], const void *msg, size_t msg_len,
                          const char *footer, const void *implicit, size_t implicit_len, char *out,
                          size_t out_size)
{
        const int v = sodium_base64_VARIANT_URLSAFE_NO_PADDING;
        const char *h = BROKER_PASETO_PUBLIC_HEADER;
        unsigned char pae_stack[SIGN_STACK], body_stack[SIGN_STACK];
        unsigned char *m2 = NULL, *body = body_stack;
        size_t hl = strlen(h), fl, m2_len = 0, n;
        int r = 0;

        footer = footer ? footer : "";
        fl = strlen(footer);
        if (msg_len > SIZE_MAX / 4 - PUBLIC_SIG || fl > SIZE_MAX / 4 || implicit_len > SIZE_MAX / 4)
                return -EOVERFLOW;
        if (out_size < broker_paseto_public_len(msg_len, fl))
                return -ENOBUFS;
        /* PAE(h, m, f, i): the count, then each piece after its length. */
        struct iovec pieces[] = {{(void *)h, hl},
                                 {(void *)msg, msg_len},
                                 {(void *)footer, fl},
                                 {(void *)implicit, implicit_len}};
        size_t pae_len = 8 + 4 * 8 + hl + msg_len + fl + implicit_len; /* each < SIZE_MAX / 4 */
        if (pae_len <= sizeof(pae_stack)) {
                unsigned char *p = pae_stack;
                le64(p, 4);
                p += 8;
                for (size_t i = 0; i < 4; i++) {
                        le64(p, pieces[i].iov_len);
                        p += 8;
                        if (pieces[i].iov_len)
                                memcpy(p, pieces[i].iov_base, pieces[i].iov_len);
                        p += pieces[i].iov_len;
                }
                m2_len = pae_len;
        } else {
                r = broker_paseto_pae(pieces, 4, &m2, &m2_len);
                if (r < 0)
                        return r;
        }
        if (msg_len + PUBLIC_SIG > sizeof(body_stack)) {
                body = malloc(msg_len + PUBLIC_SIG);
                if (!body) {
                        free(m2);
                        return -ENOMEM;
                }
        }
        if (msg_len)
                memcpy(body, msg, msg_len);
        if (crypto_sign_detached(body + msg_len, NULL, m2 ? m2 : pae_stack, m2_len, sk) != 0) {
                r = -EIO;
                goto out;
        }
        memcpy(out, h, hl);
        n = hl;
        sodium_bin2base64(out + n, out_size - n, body, msg_len + PUBLIC_SIG, v);
        n += strlen(out + n);
        if (fl) {
                out[n++] = '.';
                sodium_bin2base64(out + n, out_size - n, (const unsigned char *)footer, fl, v);
        }
out:
        /* The body holds the signature: it is (most of) the token. */
        sodium_memzero(body, msg_len + PUBLIC_SIG);
        if (body != body_stack)
                free(body);
        free(m2);
        return r;
}

int broker_paseto_sign(const unsigned char sk[64], const void *msg, size_t msg_len,
                       const char *footer, const void *implicit, size_t implicit_len,
                       char **ret_token)
{
        size_t n = broker_paseto_public_len(msg_len, footer ? strlen(footer) : 0);
        char *t = malloc(n);
        int r;

        if (!t)
                return -ENOMEM;
        r = broker_paseto_sign_to(sk, msg, msg_len, footer, implicit, implicit_len, t, n);
        if (r < 0) {
                wipe_free(t, n);
                return r;
        }
        *ret_token = t;
        return 0;
}

int broker_paseto_verify(const unsigned char pk[32], const char *token, const char *expected_footer,
                         const void *implicit, size_t implicit_len, char **ret_msg, size_t *ret_len)
{
        const char *h = BROKER_PASETO_PUBLIC_HEADER;
        _cleanup_free_ unsigned char *m2 = NULL;
        struct parts p;
        size_t m_len, m2_len;
        char *msg;
        int r;

        r = token_split(token, h, &p);
        if (r < 0)
                return r;
        if (p.body_len < PUBLIC_SIG) {
                r = -EINVAL;
                goto out;
        }
        r = footer_check(&p, expected_footer);
        if (r < 0)
                goto out;
        m_len = p.body_len - PUBLIC_SIG;
        r = broker_paseto_pae((struct iovec[]){{(void *)h, strlen(h)},
                                               {p.body, m_len},
                                               {p.footer, p.footer_len},
                                               {(void *)implicit, implicit_len}},
                              4, &m2, &m2_len);
        if (r < 0)
                goto out;
        if (crypto_sign_verify_detached(p.body + m_len, m2, m2_len, pk) != 0) {
                r = -EBADMSG;
                goto out;
        }
        msg = malloc(m_len + 1);
        if (!msg) {
                r = -ENOMEM;
                goto out;
        }
        memcpy(msg, p.body, m_len);
        msg[m_len] = '\0';
        *ret_msg = msg;
        if (ret_len)
                *ret_len = m_len;
        r = 0;
out:
        parts_done(&p);
        return r;
}

/* Ek || n2 = BLAKE2b-448(k, "paseto-encryption-key" || n); Ak = BLAKE2b-256(k, ...). */
static int local_keys(const unsigned char key[32], const unsigned char nonce[LOCAL_NONCE],
                      unsigned char *tmp56, unsigned char *ak32)
{
        unsigned char in[sizeof(AUTH_KEY_INFO) - 1 + LOCAL_NONCE];
        size_t el = strlen(ENC_KEY_INFO), al = strlen(AUTH_KEY_INFO);
        int r = 0;

        memcpy(in, ENC_KEY_INFO, el);
        memcpy(in + el, nonce, LOCAL_NONCE);
        if (crypto_generichash(tmp56, 56, in, el + LOCAL_NONCE, key, 32) != 0)
                r = -EIO;
        memcpy(in, AUTH_KEY_INFO, al);
        memcpy(in + al, nonce, LOCAL_NONCE);
        if (r == 0 && crypto_generichash(ak32, 32, in, al + LOCAL_NONCE, key, 32) != 0)
                r = -EIO;
        sodium_memzero(in, sizeof(in));
        return r;
}

/* t = BLAKE2b-256(Ak, PAE(h, n, c, f, i)) */
static int local_tag(const unsigned char *ak, const unsigned char *nonce, const unsigned char *c,
                     size_t c_len, const char *footer, size_t footer_len, const void *implicit,
                     size_t implicit_len, unsigned char tag[LOCAL_TAG])
{
        const char *h = BROKER_PASETO_LOCAL_HEADER;
        _cleanup_free_ unsigned char *pre = NULL;
        size_t pre_len;
        int r;

        r = broker_paseto_pae((struct iovec[]){{(void *)h, strlen(h)},
                                               {(void *)nonce, LOCAL_NONCE},
                                               {(void *)c, c_len},
                                               {(void *)footer, footer_len},
                                               {(void *)implicit, implicit_len}},
                              5, &pre, &pre_len);
        if (r < 0)
                return r;
        if (crypto_generichash(tag, LOCAL_TAG, pre, pre_len, ak, 32) != 0)
                return -EIO;
        return 0;
}

int broker_paseto_encrypt(const unsigned char key[32], const unsigned char *nonce, const void *msg,
                          size_t msg_len, const char *footer, const void *implicit,
                          size_t implicit_len, char **ret_token)
{
        unsigned char *keys = NULL, *body = NULL;
        size_t body_len = LOCAL_NONCE + msg_len + LOCAL_TAG;
        int r;

        footer = footer ? footer : "";
        keys = sodium_malloc(56 + 32);
        body = malloc(body_len);
        if (!keys || !body) {
                r = -ENOMEM;
                goto out;
        }
        if (nonce)
                memcpy(body, nonce, LOCAL_NONCE);
        else
                randombytes_buf(body, LOCAL_NONCE);
        r = local_keys(key, body, keys, keys + 56);
        if (r < 0)
                goto out;
        if (crypto_stream_xchacha20_xor(body + LOCAL_NONCE, msg, msg_len, keys + 32, keys) != 0) {
                r = -EIO;
                goto out;
        }
        r = local_tag(keys + 56, body, body + LOCAL_NONCE, msg_len, footer, strlen(footer),
                      implicit, implicit_len, body + LOCAL_NONCE + msg_len);
        if (r < 0)
                goto out;
        r = token_join(BROKER_PASETO_LOCAL_HEADER, body, body_len, footer, ret_token);
out:
        sodium_free(keys);
        free(body);
        return r;
}

int broker_paseto_decrypt(const unsigned char key[32], const char *token,
                          const char *expected_footer, const void *implicit, size_t implicit_len,
                          unsigned char **ret_msg, size_t *ret_len)
{
        unsigned char *keys = NULL, *msg = NULL, tag[LOCAL_TAG];
        struct parts p;
        size_t c_len;
        int r;

        r = token_split(token, BROKER_PASETO_LOCAL_HEADER, &p);
        if (r < 0)
                return r;
        if (p.body_len < LOCAL_NONCE + LOCAL_TAG) {
                r = -EINVAL;
                goto out;
        }
        r = footer_check(&p, expected_footer);
        if (r < 0)
                goto out;
        c_len = p.body_len - LOCAL_NONCE - LOCAL_TAG;
        keys = sodium_malloc(56 + 32);
        msg = sodium_malloc(c_len + 1);
        if (!keys || !msg) {
                r = -ENOMEM;
                goto out;
        }
        r = local_keys(key, p.body, keys, keys + 56);
        if (r < 0)
                goto out;
        r = local_tag(keys + 56, p.body, p.body + LOCAL_NONCE, c_len, p.footer, p.footer_len,
                      implicit, implicit_len, tag);
        if (r < 0)
                goto out;
        if (sodium_memcmp(tag, p.body + LOCAL_NONCE + c_len, LOCAL_TAG) != 0) {
                r = -EBADMSG;
                goto out;
        }
        if (crypto_stream_xchacha20_xor(msg, p.body + LOCAL_NONCE, c_len, keys + 32, keys) != 0) {
                r = -EIO;
                goto out;
        }
        msg[c_len] = '\0';
        *ret_msg = TAKE_PTR(msg);
        if (ret_len)
                *ret_len = c_len;
        r = 0;
out:
        sodium_memzero(tag, sizeof(tag));
        sodium_free(keys);
        sodium_free(msg);
        parts_done(&p);
        return r;
}

int broker_paseto_footer(const char *token, char **ret)
{
        struct parts p;
        int r;

        if (startswith(token, BROKER_PASETO_PUBLIC_HEADER))
                r = token_split(token, BROKER_PASETO_PUBLIC_HEADER, &p);
        else
                r = token_split(token, BROKER_PASETO_LOCAL_HEADER, &p);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p.footer);
        parts_done(&p);
        return 0;
}
