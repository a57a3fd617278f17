/* SPDX-License-Identifier: MIT */
/*
 * http.h: HTTP/1.1 message heads and bodies, parsed by llhttp.
 *
 * llhttp is the parser; this module only runs it strictly and refuses what
 * it lets through that a proxy must not pass on, because two parsers could
 * read it two ways (request smuggling): a bare LF or a lone CR anywhere in
 * the head, obs-fold continuation lines, NUL bytes, white space in a header
 * name, a tab or form feed in the request-target (which llhttp's
 * non-strict build takes), a second Host, HTTP versions other than 1.0
 * and 1.1. llhttp itself
 * refuses Content-Length with Transfer-Encoding, duplicate Content-Length,
 * and Transfer-Encoding values other than a final "chunked" in requests.
 *
 * A head is parsed whole, from one buffer (proxy_http_head_scan() finds its
 * end first), so proxy_http_parse_head() is a pure function of its input:
 * it is the fuzz entry point. The body then streams through the same
 * parser, which says where the message ends and hands over the decoded
 * bytes (on_body); the proxy frames them anew (forward.c), so the framing
 * the next hop sees is the framing that was parsed, never bytes of the
 * client's chunk lines, extensions or trailers. Trailer fields are read
 * (at most PROXY_HEAD_MAX bytes of them) and dropped. A chunk-size line
 * (the size, its extensions, CRLF) is at most PROXY_CHUNK_LINE_MAX bytes:
 * llhttp bounds neither extensions nor leading zeros, nor the blanks it
 * skips before a trailer value, and a peer could stream one line for
 * ever. llhttp pauses at each chunk's header and end (on_chunk_header,
 * on_chunk_complete), so each line, and the trailer section from the last
 * chunk's header to the message's end, is measured byte for byte where
 * the parser says it begins and ends.
 */
#pragma once

#include <llhttp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROXY_HEAD_MAX    (32 * 1024)
#define PROXY_HEADERS_MAX 128
/* A chunk-size line, size, extensions and CRLF. */
#define PROXY_CHUNK_LINE_MAX 4096

struct proxy_header {
        char *name;  /* as sent */
        char *value; /* without surrounding white space */
};

struct proxy_http_head {
        char *method; /* requests */
        char *target; /* requests: the request-target as sent */
        int status;   /* responses */
        char *reason; /* responses: the reason phrase (may be NULL) */
        unsigned major, minor;
        struct proxy_header *headers;
        size_t n_headers;
        bool keep_alive; /* the connection may carry another message after this one */
        bool upgrade;    /* CONNECT, or an Upgrade header */
        bool has_body;   /* a body follows the head (Content-Length > 0 or chunked or EOF) */
        bool chunked;    /* the body is chunked (Transfer-Encoding ends in chunked) */
        bool has_length; /* framed by Content-Length (content_length; may be 0) */
        uint64_t content_length;
        size_t head_len; /* bytes from the first line to the blank line, inclusive */
};

/* One direction of one connection: the parser state between head and body. */
struct proxy_http {
        llhttp_t parser;
        llhttp_settings_t settings;
        struct proxy_http_head *head; /* being filled by the callbacks */
        bool in_value;
        bool too_many;
        bool complete; /* the message ended */
        bool in_body;  /* past the head: header callbacks are trailer fields */
        /* What of a chunked body is being read, past the head: FRAME_LINE (a
         * chunk-size line, from a chunk's end or the head to the next chunk's
         * header), FRAME_TRAILER (from the last chunk's header to the end), or
         * 0 (chunk data); and how many bytes of it so far. */
        int framing;
        size_t framing_bytes;
        int chunk_event; /* what paused the parser: CHUNK_HEADER, CHUNK_END or 0 */
        /* Optional: the decoded body bytes (chunk framing removed) as they pass. */
        int (*on_body)(void *userdata, const char *data, size_t len);
        void *userdata;
};

/*
 * Look for the end of a head in buf[0..len). Returns 1 and *ret_len when the
 * blank line is there, 0 if more bytes are needed, -EBADMSG with a reason on
 * a bare LF, a lone CR, a NUL, an obs-fold line or a head over
 * PROXY_HEAD_MAX. Leading empty lines (RFC 9112 2.2) are not allowed.
 */
int proxy_http_head_scan(const char *buf, size_t len, size_t *ret_len, const char **ret_reason);

/*
 * Parse the head buf[0..len) (as found by proxy_http_head_scan()) into *ret.
 * skip_body: a response to HEAD (no body whatever the headers say).
 * On success the parser in *p is ready for the body.
 */
int proxy_http_parse_head(struct proxy_http *p, bool request, bool skip_body, const char *buf,
                          size_t len, struct proxy_http_head *ret, const char **ret_reason);

/*
 * Run body bytes through the parser. *ret_used is how many belong to this
 * message; *ret_done is set when the message ended (the rest, if any, is the
 * next message). -EBADMSG with a reason on malformed framing.
 */
int proxy_http_body(struct proxy_http *p, const char *data, size_t len, size_t *ret_used,
                    bool *ret_done, const char **ret_reason);
/* The peer closed: does that end the message (a response read until EOF)? */
bool proxy_http_eof_completes(struct proxy_http *p);

void proxy_http_head_done(struct proxy_http_head *h);
/* The value of the only header called name (any case); NULL if absent; -1 in *dup if repeated. */
const char *proxy_http_header(const struct proxy_http_head *h, const char *name, int *dup);
/*
 * The first token of any Connection header of h that is not a connection
 * option the proxy knows (close, keep-alive, te, upgrade, http2-settings),
 * copied into buf; NULL if there is none.
 */
const char *proxy_http_connection_unknown(const struct proxy_http_head *h, char *buf, size_t size);
