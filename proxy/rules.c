/* SPDX-License-Identifier: MIT */
/*
 * rules.c: parse and match the egress policy's host patterns, IP literals,
 * name overrides, paths and refs (rules.h).
 *
 * Why IP literals get their own parser path: "127.1", "0x7f.1", "017700000001"
 * and "2130706433" all mean 127.0.0.1 to inet_aton(3) and to most HTTP
 * clients, so a host that looks numeric is parsed as an address the way the
 * C library would, and then may only match an allow entry that lists that
 * address exactly (in canonical form). A host whose last label starts with a
 * digit but does not parse is refused, never treated as a name: that is the
 * ambiguity WHATWG URL parsers resolve the same way.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "lib/quote.h"
#include "lib/util.h"
#include "broker/policy.h"
#include "rules.h"

static char lower(char c)
{
        return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

bool proxy_host_name_is_valid(const char *host)
{
        size_t n = strlen(host), label = 0;

        if (n == 0 || n > PROXY_HOST_MAX)
                return false;
        for (size_t i = 0; i <= n; i++) {
                char c = host[i];
                if (c == '.' || c == '\0') {
                        if (label == 0 || label > 63 || host[i - 1] == '-')
                                return false;
                        label = 0;
                        continue;
                }
                if (label == 0 && c == '-')
                        return false;
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
                        return false;
                label++;
        }
        return true;
}

/* Does the last label start with a digit (or "0x")? Then it must be an address. */
static bool looks_numeric(const char *host)
{
        const char *last = strrchr(host, '.');

        last = last ? last + 1 : host;
        return isdigit((unsigned char)last[0]);
}

int proxy_literal_parse(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len, char *buf,
                        size_t size)
{
        char tmp[PROXY_LITERAL_MAX];
        size_t n = strlen(s);

        memset(ret, 0, sizeof(*ret));
        if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)ret;
                if (n - 2 >= sizeof(tmp))
                        return -EINVAL;
                memcpy(tmp, s + 1, n - 2);
                tmp[n - 2] = '\0';
                if (inet_pton(AF_INET6, tmp, &a->sin6_addr) != 1)
                        return -EINVAL;
                a->sin6_family = AF_INET6;
                *ret_len = sizeof(*a);
                if (buf && !inet_ntop(AF_INET6, &a->sin6_addr, buf, (socklen_t)size))
                        return -ENOSPC;
                return 0;
        }
        if (strchr(s, ':')) {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)ret;
                if (inet_pton(AF_INET6, s, &a->sin6_addr) != 1)
                        return -EINVAL;
                a->sin6_family = AF_INET6;
                *ret_len = sizeof(*a);
                if (buf && !inet_ntop(AF_INET6, &a->sin6_addr, buf, (socklen_t)size))
                        return -ENOSPC;
                return 0;
        }
        /* inet_aton accepts every historical IPv4 spelling, and trailing junk after a space. */
        for (const char *c = s; *c; c++)
                if (!isxdigit((unsigned char)*c) && *c != '.' && *c != 'x' && *c != 'X')
                        return -EINVAL;
        struct sockaddr_in *a = (struct sockaddr_in *)ret;
        if (n == 0 || inet_aton(s, &a->sin_addr) == 0)
                return -EINVAL;
        a->sin_family = AF_INET;
        *ret_len = sizeof(*a);
        if (buf && !inet_ntop(AF_INET, &a->sin_addr, buf, (socklen_t)size))
                return -ENOSPC;
        return 0;
}

int proxy_host_normalize(const char *host, size_t len, char *buf, size_t size, bool *ret_literal,
                         bool *ret_exact, const char **ret_reason)
{
        char low[PROXY_HOST_MAX + 3];
        struct sockaddr_storage ss;
        socklen_t sl;

        *ret_literal = false;
        *ret_exact = true;
        if (len == 0 || len >= sizeof(low) || memchr(host, '\0', len)) {
                *ret_reason = len == 0 ? "empty host" : "host name too long";
                return -EINVAL;
        }
        for (size_t i = 0; i < len; i++)
                low[i] = lower(host[i]);
        low[len] = '\0';
        if (low[0] == '[' || strchr(low, ':') || looks_numeric(low)) {
                char canon[PROXY_LITERAL_MAX];
                if (proxy_literal_parse(low, &ss, &sl, canon, sizeof(canon)) < 0) {
                        *ret_reason = "not a valid IP address (and a name's last label may not "
                                      "start with a digit)";
                        return -EINVAL;
                }
                if (strlen(canon) >= size)
                        return -ENOSPC;
                strcpy(buf, canon);
                *ret_literal = true;
                /* "[2001:db8::1]" is canonical when the inside is. */
                const char *inner = low;
                size_t il = len;
                if (low[0] == '[') {
                        inner++;
                        il -= 2;
                }
                *ret_exact = strlen(canon) == il && memcmp(canon, inner, il) == 0;
                return 0;
        }
        if (low[len - 1] == '.') {
                *ret_reason = "host name ends with '.'";
                return -EINVAL;
        }
        if (!proxy_host_name_is_valid(low)) {
                *ret_reason = "not a valid host name (letters, digits and '-' in dot-separated "
                              "labels)";
                return -EINVAL;
        }
        if (len >= size)
                return -ENOSPC;
        memcpy(buf, low, len + 1);
        return 0;
}

static int port_parse(const char *s, size_t len, uint16_t *ret)
{
        unsigned long v = 0;

        if (len == 0 || len > 5)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                if (!isdigit((unsigned char)s[i]))
                        return -EINVAL;
                v = v * 10 + (unsigned long)(s[i] - '0');
        }
        if (v == 0 || v > 65535 || (len > 1 && s[0] == '0'))
                return -ERANGE;
        *ret = (uint16_t)v;
        return 0;
}

int proxy_authority_split(const char *s, size_t len, const char **ret_host, size_t *ret_host_len,
                          uint16_t *ret_port, const char **ret_reason)
{
        const char *colon = NULL;

        *ret_port = 0;
        if (len > 0 && s[0] == '[') {
                const char *close = memchr(s, ']', len);
                if (!close) {
                        *ret_reason = "unterminated '[' in the host";
                        return -EINVAL;
                }
                if ((size_t)(close - s) + 1 < len) {
                        if (close[1] != ':') {
                                *ret_reason = "junk after ']' in the host";
                                return -EINVAL;
                        }
                        colon = close + 1;
                }
                *ret_host = s;
                *ret_host_len = (size_t)(close - s) + 1;
        } else {
                colon = memrchr(s, ':', len);
                *ret_host = s;
                *ret_host_len = colon ? (size_t)(colon - s) : len;
                if (colon && memchr(s, ':', (size_t)(colon - s))) {
                        *ret_reason = "an IPv6 address must be in brackets";
                        return -EINVAL;
                }
        }
        if (colon && port_parse(colon + 1, len - (size_t)(colon + 1 - s), ret_port) < 0) {
                *ret_reason = "not a port number (1-65535)";
                return -EINVAL;
        }
        if (memchr(s, '@', len)) {
                *ret_reason = "user information ('@') in the host";
                return -EINVAL;
        }
        return 0;
}

int proxy_host_pattern_parse(const char *s, struct proxy_host_pattern *ret, const char **ret_reason)
{
        char buf[PROXY_HOST_MAX + 3];
        const char *host;
        size_t hl;
        uint16_t port;
        bool literal, exact, wildcard = false;
        int r;

        r = proxy_authority_split(s, strlen(s), &host, &hl, &port, ret_reason);
        if (r < 0)
                return r;
        if (hl == 1 && host[0] == '*') {
                *ret_reason = "'*' would allow every host; list the hosts";
                return -EINVAL;
        }
        if (hl > 2 && host[0] == '*' && host[1] == '.') {
                wildcard = true;
                host += 2;
                hl -= 2;
        }
        if (memchr(host, '*', hl)) {
                *ret_reason = "'*' may only stand for the first label ('*.example.com')";
                return -EINVAL;
        }
        r = proxy_host_normalize(host, hl, buf, sizeof(buf), &literal, &exact, ret_reason);
        if (r < 0)
                return r;
        if (literal && wildcard) {
                *ret_reason = "a wildcard cannot cover an IP address";
                return -EINVAL;
        }
        if (literal && !exact) {
                *ret_reason = "write the IP address in its canonical form";
                return -EINVAL;
        }
        if (wildcard && !strchr(buf, '.')) {
                *ret_reason = "'*.TLD' would allow a whole top-level domain";
                return -EINVAL;
        }
        if (literal) {
                struct sockaddr_storage ss;
                socklen_t sl;
                const char *why;
                (void)proxy_literal_parse(buf, &ss, &sl, NULL, 0);
                why = proxy_addr_denied((struct sockaddr *)&ss);
                if (why) {
                        *ret_reason = "this address is in the fixed deny set (loopback, private, "
                                      "link-local, ...): the proxy never connects to it";
                        return -EINVAL;
                }
        }
        *ret = (struct proxy_host_pattern){
                .host = strdup(buf), .wildcard = wildcard, .literal = literal, .port = port};
        if (!ret->host)
                return -ENOMEM;
        return 0;
}

void proxy_host_pattern_done(struct proxy_host_pattern *p)
{
        free(p->host);
        p->host = NULL;
}

bool proxy_host_pattern_match(const struct proxy_host_pattern *p, const char *host, bool literal,
                              uint16_t port, bool connect)
{
        uint16_t want = p->port ? p->port : connect ? 443 : 80;

        if (port != want || literal != p->literal)
                return false;
        if (!p->wildcard)
                return streq(p->host, host);
        size_t hl = strlen(host), sl = strlen(p->host);
        return hl > sl + 1 && host[hl - sl - 1] == '.' && streq(host + hl - sl, p->host);
}

bool proxy_host_pattern_denies(const struct proxy_host_pattern *p, const char *host, bool literal,
                               uint16_t port)
{
        struct proxy_host_pattern any = *p;

        any.port = p->port ? p->port : port;
        return proxy_host_pattern_match(&any, host, literal, port, true);
}

int proxy_resolve_parse(const char *s, struct proxy_resolve *ret, const char **ret_reason)
{
        const char *colon = strchr(s, ':');
        char name[PROXY_HOST_MAX + 3], canon[PROXY_LITERAL_MAX];
        bool literal, exact;
        int r;

        if (!colon) {
                *ret_reason = "expected NAME:ADDRESS (e.g. git.test:127.0.0.1)";
                return -EINVAL;
        }
        r = proxy_host_normalize(s, (size_t)(colon - s), name, sizeof(name), &literal, &exact,
                                 ret_reason);
        if (r < 0)
                return r;
        if (literal) {
                *ret_reason = "NAME must be a host name, not an address";
                return -EINVAL;
        }
        *ret = (struct proxy_resolve){0};
        if (proxy_literal_parse(colon + 1, &ret->addr, &ret->addr_len, canon, sizeof(canon)) < 0 ||
            (!strchr(colon + 1, ':') && !streq(canon, colon + 1))) {
                *ret_reason = "ADDRESS must be an IPv4 address (a.b.c.d) or an IPv6 one in "
                              "brackets";
                return -EINVAL;
        }
        ret->host = strdup(name);
        return ret->host ? 0 : -ENOMEM;
}

void proxy_resolve_done(struct proxy_resolve *r)
{
        free(r->host);
        r->host = NULL;
}

/* --- paths ---------------------------------------------------------------- */

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        c = lower(c);
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

/* RFC 3986 pchar without '%': what may stand unescaped in a segment. */
static bool pchar_plain(unsigned char c)
{
        return isalnum(c) || strchr("-._~!$&'()*+,;=:@", c);
}

/*
 * What a lax decoder upstream could still read as '.', '/' or '\\': the
 * fullwidth forms (U+FF0E, U+FF0F, U+FF3C), which NFKC folds to them, and a
 * second layer of escapes (%252E decodes here to "%2E", which a server that
 * decodes twice reads as '.'). No rule needs them in a path it allows.
 */
static const char *path_lookalike(const char *dec, size_t d)
{
        for (size_t i = 0; i < d; i++) {
                const unsigned char *u = (const unsigned char *)dec + i;
                if (i + 2 < d && u[0] == 0xef && u[1] == 0xbc &&
                    (u[2] == 0x8e || u[2] == 0x8f || u[2] == 0xbc))
                        return "a fullwidth '.', '/' or '\\' in the path (U+FF0E, U+FF0F, U+FF3C)";
                if (u[0] == '%' && i + 2 < d &&
                    ((u[1] == '2' && (u[2] == 'e' || u[2] == 'E' || u[2] == 'f' || u[2] == 'F')) ||
                     (u[1] == '5' && (u[2] == 'c' || u[2] == 'C'))))
                        return "a double-escaped '.', '/' or '\\' in the path (%252E, %252F, "
                               "%255C)";
        }
        return NULL;
}

static bool segment_is_dots(const char *seg, size_t len)
{
        /* ".", "..", and the ";params" spellings some servers normalize away. */
        const char *semi = memchr(seg, ';', len);
        size_t n = semi ? (size_t)(semi - seg) : len;
        return (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.');
}

int proxy_path_normalize(const char *path, size_t len, char **ret_decoded, char **ret_encoded,
                         const char **ret_reason)
{
        _cleanup_free_ char *dec = NULL, *enc = NULL;
        size_t d = 0, e = 0, seg = 1;

        if (len == 0 || path[0] != '/') {
                *ret_reason = "the path must start with '/'";
                return -EINVAL;
        }
        if (len > PROXY_PATH_MAX) {
                *ret_reason = "the path is too long";
                return -EINVAL;
        }
        dec = malloc(len + 1);
        enc = malloc(3 * len + 1);
        if (!dec || !enc)
                return -ENOMEM;
        dec[d++] = '/';
        for (size_t i = 1; i <= len; i++) {
                unsigned char c;

                if (i == len || path[i] == '/') {
                        /* a segment ended at dec[seg..d) */
                        if (d == seg && i != len) {
                                *ret_reason = "empty path segment ('//')";
                                return -EINVAL;
                        }
                        if (segment_is_dots(dec + seg, d - seg)) {
                                *ret_reason = "'.' or '..' in the path";
                                return -EINVAL;
                        }
                        if (i == len)
                                break;
                        dec[d++] = '/';
                        seg = d;
                        continue;
                }
                c = (unsigned char)path[i];
                if (c == '%') {
                        int h = i + 2 < len ? hexval(path[i + 1]) : -1;
                        int l = i + 2 < len ? hexval(path[i + 2]) : -1;
                        if (h < 0 || l < 0) {
                                *ret_reason = "malformed percent-escape in the path";
                                return -EINVAL;
                        }
                        c = (unsigned char)(h * 16 + l);
                        i += 2;
                        if (c == '/' || c == '\\') {
                                *ret_reason = "an escaped '/' or '\\' in the path (%2F, %5C)";
                                return -EINVAL;
                        }
                }
                if (c < 0x20 || c == 0x7f || c == '\\') {
                        *ret_reason = "a control byte or '\\' in the path";
                        return -EINVAL;
                }
                dec[d++] = (char)c;
        }
        dec[d] = '\0';
        for (size_t i = 0; i < d; i++)
                if ((unsigned char)dec[i] >= 0x80) {
                        if (!quote_utf8_valid(dec, d)) {
                                *ret_reason = "the decoded path is not UTF-8 (an overlong form "
                                              "such as %C0%AE reads as '.' to a lax decoder)";
                                return -EINVAL;
                        }
                        break;
                }
        if ((*ret_reason = path_lookalike(dec, d)))
                return -EINVAL;
        for (size_t i = 0; i < d; i++) {
                unsigned char c = (unsigned char)dec[i];
                if (c == '/' || pchar_plain(c)) {
                        enc[e++] = (char)c;
                } else {
                        static const char hex[] = "0123456789ABCDEF";
                        enc[e++] = '%';
                        enc[e++] = hex[c >> 4];
                        enc[e++] = hex[c & 15];
                }
        }
        enc[e] = '\0';
        *ret_decoded = TAKE_PTR(dec);
        *ret_encoded = TAKE_PTR(enc);
        return 0;
}

int proxy_path_pattern_check(const char *p, const char **ret_reason)
{
        size_t n = strlen(p);

        if (n == 0 || p[0] != '/') {
                *ret_reason = "a path pattern starts with '/'";
                return -EINVAL;
        }
        if (n > PROXY_PATTERN_MAX) {
                *ret_reason = "path pattern too long";
                return -EINVAL;
        }
        if (n == 1)
                return 0; /* "/" itself */
        for (const char *s = p + 1;;) {
                const char *end = strchrnul(s, '/');
                size_t l = (size_t)(end - s);
                if (l == 0) {
                        *ret_reason = "empty segment ('//' or a trailing '/') in the pattern";
                        return -EINVAL;
                }
                if (segment_is_dots(s, l)) {
                        *ret_reason = "'.' or '..' in the pattern";
                        return -EINVAL;
                }
                if (memmem(s, l, "**", 2) && (l != 2 || *end)) {
                        *ret_reason = "'**' may only be the whole last segment";
                        return -EINVAL;
                }
                for (size_t i = 0; i < l; i++) {
                        unsigned char c = (unsigned char)s[i];
                        if (c < 0x21 || c >= 0x7f || strchr("\\?#[]%", c)) {
                                *ret_reason = "patterns hold printable characters other than "
                                              "'\\ ? # [ ] %' (they match decoded paths)";
                                return -EINVAL;
                        }
                }
                if (!*end)
                        break;
                s = end + 1;
        }
        return 0;
}

/* '*' matches any run of characters within the segment (no '/'). */
static bool glob_segment(const char *p, size_t pl, const char *s, size_t sl)
{
        size_t pi = 0, si = 0, star = SIZE_MAX, mark = 0;

        while (si < sl) {
                if (pi < pl && p[pi] == '*') {
                        star = pi++;
                        mark = si;
                } else if (pi < pl && p[pi] == s[si]) {
                        pi++;
                        si++;
                } else if (star != SIZE_MAX) {
                        pi = star + 1;
                        si = ++mark;
                } else {
                        return false;
                }
        }
        while (pi < pl && p[pi] == '*')
                pi++;
        return pi == pl;
}

bool proxy_path_pattern_match(const char *pattern, const char *path)
{
        const char *p = pattern, *s = path;

        if (*p != '/' || *s != '/')
                return false;
        p++;
        s++;
        for (;;) {
                const char *pe = strchrnul(p, '/'), *se = strchrnul(s, '/');
                if (pe - p == 2 && p[0] == '*' && p[1] == '*' && !*pe)
                        return true; /* the rest, zero or more segments */
                if (!glob_segment(p, (size_t)(pe - p), s, (size_t)(se - s)))
                        return false;
                if (!*pe || !*se) {
                        if (!*pe && !*se)
                                return true;
                        /* a pattern ending in "/ **" also matches the path without it */
                        return !*se && pe[1] == '*' && pe[2] == '*' && !pe[3];
                }
                p = pe + 1;
                s = se + 1;
        }
}

/* --- refs ----------------------------------------------------------------- */

static bool ref_chars_ok(const char *ref, bool allow_star)
{
        size_t n = strlen(ref);
        int stars = 0;

        if (!startswith(ref, "refs/") || n > PROXY_REF_MAX || ref[n - 1] == '/' ||
            ref[n - 1] == '.' || strstr(ref, "..") || strstr(ref, "//") || strstr(ref, "@{") ||
            strstr(ref, "/.") || (n >= 5 && streq(ref + n - 5, ".lock")))
                return false;
        for (const char *c = ref; *c; c++) {
                unsigned char u = (unsigned char)*c;
                if (u < 0x20 || u == 0x7f || strchr(" ~^:?[\\", u))
                        return false;
                if (u == '*' && (!allow_star || ++stars > 1))
                        return false;
        }
        return true;
}

int proxy_ref_pattern_check(const char *pattern, const char **ret_reason)
{
        if (!ref_chars_ok(pattern, true)) {
                *ret_reason = "a ref pattern is a valid ref under 'refs/' with at most one '*' "
                              "(e.g. refs/heads/cloister/*)";
                return -EINVAL;
        }
        return 0;
}

bool proxy_ref_name_is_valid(const char *ref)
{
        return ref_chars_ok(ref, false);
}

bool proxy_ref_pattern_match(const char *pattern, const char *ref)
{
        const char *star = strchr(pattern, '*');
        size_t pre, post, n = strlen(ref);

        if (!star)
                return streq(pattern, ref);
        pre = (size_t)(star - pattern);
        post = strlen(star + 1);
        return n >= pre + post && strncmp(pattern, ref, pre) == 0 &&
               streq(ref + n - post, star + 1);
}

/* --- rules ---------------------------------------------------------------- */

bool proxy_method_is_injectable(const char *m)
{
        static const char *const ok[] = {"GET",   "HEAD",   "POST",   "PUT",
                                         "PATCH", "DELETE", "OPTIONS"};

        for (size_t i = 0; i < ELEMENTSOF(ok); i++)
                if (streq(m, ok[i]))
                        return true;
        return false;
}

bool proxy_token_is_valid(const char *s, size_t len)
{
        if (len == 0)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!isalnum((unsigned char)s[i]) && !strchr("!#$%&'*+-.^_`|~", s[i]))
                        return false;
        return true;
}

const char *proxy_scheme_name(enum proxy_scheme s)
{
        return s == PROXY_SCHEME_BASIC ? "basic" : s == PROXY_SCHEME_HEADER ? "header" : "bearer";
}

int proxy_inject_rule_check(const struct proxy_inject_rule *r, const char **ret_reason)
{
        if (!r->host || !proxy_host_name_is_valid(r->host) || looks_numeric(r->host)) {
                *ret_reason = "key 'host': required, one exact host name (no wildcard, no "
                              "address)";
                return -EINVAL;
        }
        if (!r->methods || !r->methods[0]) {
                *ret_reason = "key 'methods': required (e.g. GET, POST)";
                return -EINVAL;
        }
        for (char **m = r->methods; *m; m++)
                if (!proxy_method_is_injectable(*m)) {
                        *ret_reason = "key 'methods': only GET, HEAD, POST, PUT, PATCH, DELETE "
                                      "and OPTIONS";
                        return -EINVAL;
                }
        if (!r->paths || !r->paths[0]) {
                *ret_reason = "key 'paths': required (e.g. /org/repo.git/**)";
                return -EINVAL;
        }
        for (char **p = r->paths; *p; p++)
                if (proxy_path_pattern_check(*p, ret_reason) < 0)
                        return -EINVAL;
        if (!r->scope || !broker_name_is_valid(r->scope)) {
                *ret_reason = "key 'scope': required, a broker scope name";
                return -EINVAL;
        }
        if (!r->secret || !broker_name_is_valid(r->secret)) {
                *ret_reason = "key 'secret': required, the name of a stored secret";
                return -EINVAL;
        }
        if (r->scheme == PROXY_SCHEME_BASIC &&
            (!r->username || !*r->username || strlen(r->username) > PROXY_USERNAME_MAX ||
             strpbrk(r->username, ":\r\n") ||
             !proxy_token_is_valid(r->username, strlen(r->username)))) {
                *ret_reason = "key 'username': scheme = basic needs a username (a token without "
                              "':')";
                return -EINVAL;
        }
        if (r->scheme != PROXY_SCHEME_BASIC && r->username) {
                *ret_reason = "key 'username': only with scheme = basic";
                return -EINVAL;
        }
        if (r->scheme == PROXY_SCHEME_HEADER) {
                static const char *const reserved[] = {
                        "host", "content-length", "transfer-encoding",   "connection", "upgrade",
                        "te",   "trailer",        "proxy-authorization", "keep-alive", "expect"};
                if (!r->header || strlen(r->header) > PROXY_HEADER_NAME_MAX ||
                    !proxy_token_is_valid(r->header, strlen(r->header))) {
                        *ret_reason = "key 'header': scheme = header needs a header name";
                        return -EINVAL;
                }
                for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
                        if (strcasecmp(r->header, reserved[i]) == 0) {
                                *ret_reason = "key 'header': that header frames the request; "
                                              "it cannot carry a secret";
                                return -EINVAL;
                        }
        } else if (r->header) {
                *ret_reason = "key 'header': only with scheme = header";
                return -EINVAL;
        }
        for (char **p = r->push_refs; p && *p; p++)
                if (proxy_ref_pattern_check(*p, ret_reason) < 0)
                        return -EINVAL;
        if (r->port == 0) {
                *ret_reason = "key 'port': 1-65535";
                return -EINVAL;
        }
        return 0;
}

void proxy_inject_rule_done(struct proxy_inject_rule *r)
{
        free(r->name);
        free(r->host);
        strv_free(r->methods);
        strv_free(r->paths);
        free(r->scope);
        free(r->secret);
        free(r->username);
        free(r->header);
        strv_free(r->push_refs);
        *r = (struct proxy_inject_rule){0};
}

bool proxy_inject_rule_match(const struct proxy_inject_rule *r, const char *host,
                             const char *method, const char *decoded_path)
{
        bool m = false;

        if (!streq(r->host, host))
                return false;
        for (char **x = r->methods; x && *x && !m; x++)
                m = streq(*x, method);
        if (!m)
                return false;
        for (char **p = r->paths; p && *p; p++)
                if (proxy_path_pattern_match(*p, decoded_path))
                        return true;
        return false;
}
