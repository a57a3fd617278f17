/* SPDX-License-Identifier: MIT */
/*
 * rules.h: the egress policy's value types and their parsers: allowlist
 * host patterns, IP literals, the test-only name overrides, injection rules,
 * request path normalization, path and ref patterns, and the fixed set of
 * addresses the proxy never connects to.
 *
 * Everything here is pure (no I/O, no global state) so that the workspace
 * config (mounts/config-network.c), `cloister check` and fuzzers can call it
 * on untrusted strings. Errors come back as a negative errno and a short
 * static reason ("port out of range"), which callers wrap with the file,
 * line and key.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define PROXY_HOST_MAX        253 /* DNS name, without a trailing dot */
#define PROXY_LITERAL_MAX     48  /* INET6_ADDRSTRLEN, plus brackets */
#define PROXY_PATH_MAX        4096
#define PROXY_PATTERN_MAX     1024
#define PROXY_REF_MAX         1024
#define PROXY_USERNAME_MAX    128
#define PROXY_HEADER_NAME_MAX 64

/* One allow or deny entry: "host[:port]", "*.example.com[:port]", "203.0.113.7",
 * "[2001:db8::1]:443". */
struct proxy_host_pattern {
        char *host; /* lower case; for a wildcard the suffix after "*."; for a literal its canonical
                       form */
        bool wildcard; /* "*.example.com": its subdomains only, never the apex */
        bool literal;  /* an IP address, listed exactly */
        uint16_t port; /* 0: 443 for CONNECT, 80 for plain HTTP */
        unsigned line;
};

/* resolve = NAME:ADDR (test only): NAME connects to ADDR, with no lookup and no deny set. */
struct proxy_resolve {
        char *host;
        struct sockaddr_storage addr; /* port 0 */
        socklen_t addr_len;
        unsigned line;
};

enum proxy_scheme {
        PROXY_SCHEME_BEARER, /* Authorization: Bearer SECRET */
        PROXY_SCHEME_BASIC,  /* Authorization: Basic base64(USERNAME:SECRET) */
        PROXY_SCHEME_HEADER, /* HEADER: SECRET (e.g. x-api-key) */
};

/* [inject "NAME"]: which requests get which real secret. */
struct proxy_inject_rule {
        char *name;
        char *host;     /* exact, lower case, never a literal or a wildcard */
        uint16_t port;  /* upstream TLS port; 443 */
        char **methods; /* NULL-terminated, upper case */
        char **paths;   /* NULL-terminated path patterns */
        char *scope;    /* the broker scope whose token the request must carry */
        char *secret;   /* the broker's sealed secret to inject */
        enum proxy_scheme scheme;
        char *username;   /* PROXY_SCHEME_BASIC: the fixed username */
        char *header;     /* PROXY_SCHEME_HEADER: the header name, lower case */
        char **push_refs; /* NULL-terminated ref patterns for git-receive-pack; NULL: any */
        bool push_delete; /* may a push delete a ref */
        unsigned line;    /* of the [inject "NAME"] header */
        /* Lines of the keys that `cloister check` cross-checks; 0: not set. */
        unsigned line_host, line_scope, line_secret;
};

/* Lower-case, check and split "host[:port]" (port 0 if absent). */
int proxy_host_pattern_parse(const char *s, struct proxy_host_pattern *ret,
                             const char **ret_reason);
void proxy_host_pattern_done(struct proxy_host_pattern *p);
/*
 * Does host:port match p? host is as proxy_host_normalize() made it; connect
 * picks the default port (443 for CONNECT, 80 for plain HTTP).
 */
bool proxy_host_pattern_match(const struct proxy_host_pattern *p, const char *host, bool literal,
                              uint16_t port, bool connect);

/*
 * A request's host, as the client wrote it (URL authority or CONNECT target,
 * without the port): lower-cased into buf. An IP literal in any form the
 * resolver would accept ("127.1", "0x7f.1", "2130706433", "[::ffff:7f00:1]")
 * is recognized and written in canonical form with *ret_literal set, so it
 * can only match an allow entry that lists that exact address; *ret_exact
 * says whether the client wrote it canonically. Names must be LDH labels.
 */
int proxy_host_normalize(const char *host, size_t len, char *buf, size_t size, bool *ret_literal,
                         bool *ret_exact, const char **ret_reason);
/* The same, for a deny entry: one without a port denies the host on every port. */
bool proxy_host_pattern_denies(const struct proxy_host_pattern *p, const char *host, bool literal,
                               uint16_t port);
/* "host[:port]" or "[v6]:port" split; port 0 when absent. For CONNECT targets and Host headers. */
int proxy_authority_split(const char *s, size_t len, const char **ret_host, size_t *ret_host_len,
                          uint16_t *ret_port, const char **ret_reason);
bool proxy_host_name_is_valid(const char *host);
/* An IP literal (brackets optional for IPv6) to an address; canonical text in buf. */
int proxy_literal_parse(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len, char *buf,
                        size_t size);

int proxy_resolve_parse(const char *s, struct proxy_resolve *ret, const char **ret_reason);
void proxy_resolve_done(struct proxy_resolve *r);

/*
 * The fixed deny set: loopback, 0/8, RFC 1918, 100.64/10, 169.254/16,
 * 198.18/15, multicast, reserved and broadcast, documentation nets; IPv6
 * unspecified, loopback, link-local, site-local, ULA, multicast, IPv4-mapped
 * and -compatible, NAT64, 6to4, Teredo, documentation. Returns why an
 * address is denied, or NULL if the proxy may connect to it.
 */
const char *proxy_addr_denied(const struct sockaddr *sa);
/* "203.0.113.7" or "2001:db8::1" */
void proxy_addr_format(const struct sockaddr *sa, char *buf, size_t size);

/*
 * Normalize a request path (the part of the request target before '?'):
 * percent-escapes are decoded and every segment checked. Refused: a decoded
 * '/', '\\', NUL or control byte ("%2F tricks"), a malformed escape, empty
 * segments ("//"), "." and ".." segments in any spelling ("%2e%2e", "..;").
 * *ret_decoded is what patterns are matched against; *ret_encoded is the
 * same path re-encoded canonically, which is what goes upstream, so the
 * server sees exactly what was matched. Both malloc'd.
 */
int proxy_path_normalize(const char *path, size_t len, char **ret_decoded, char **ret_encoded,
                         const char **ret_reason);
/* A path pattern: a clean absolute path; '*' matches within a segment, a last "**" any rest. */
int proxy_path_pattern_check(const char *pattern, const char **ret_reason);
bool proxy_path_pattern_match(const char *pattern, const char *decoded_path);

/* A ref pattern: "refs/..." with at most one '*', which matches any string (as in refspecs). */
int proxy_ref_pattern_check(const char *pattern, const char **ret_reason);
/* A concrete ref name as git would accept it (check-ref-format, under refs/). */
bool proxy_ref_name_is_valid(const char *ref);
bool proxy_ref_pattern_match(const char *pattern, const char *ref);

/* GET HEAD POST PUT PATCH DELETE OPTIONS. */
bool proxy_method_is_injectable(const char *method);
/* An HTTP token (RFC 9110 tchar), for header names. */
bool proxy_token_is_valid(const char *s, size_t len);

/*
 * Whole-rule check, after every key is set: what `cloister check` and the
 * config loader both call. *ret_reason names the key at fault.
 */
int proxy_inject_rule_check(const struct proxy_inject_rule *r, const char **ret_reason);
void proxy_inject_rule_done(struct proxy_inject_rule *r);
/* Does rule r cover this request? decoded_path from proxy_path_normalize(). */
bool proxy_inject_rule_match(const struct proxy_inject_rule *r, const char *host,
                             const char *method, const char *decoded_path);
const char *proxy_scheme_name(enum proxy_scheme s);
