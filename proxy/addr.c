/* SPDX-License-Identifier: MIT */
/*
 * addr.c: the fixed set of addresses the proxy never connects to.
 *
 * The check runs on the address the proxy is about to connect() to, after
 * resolution, and that same sockaddr is what it connects to: there is no
 * second lookup a rebinding DNS server could answer differently. IPv6 forms
 * that embed an IPv4 address (mapped, translated, compatible, NAT64, 6to4,
 * Teredo) are denied whole rather than unwrapped: no public service needs
 * them, and unwrapping is where filters get bypassed. The IPv6 rows follow
 * IANA's special-purpose registry: every block it marks not globally
 * reachable, and the blocks that embed IPv4.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

struct net4 {
        uint32_t net;
        unsigned bits;
        const char *why;
};

static const struct net4 deny4[] = {
        {0x00000000, 8, "0.0.0.0/8 ('this network')"},
        {0x0a000000, 8, "private (10/8)"},
        {0x64400000, 10, "carrier-grade NAT (100.64/10)"},
        {0x7f000000, 8, "loopback (127/8)"},
        {0xa9fe0000, 16, "link-local (169.254/16, cloud metadata)"},
        {0xac100000, 12, "private (172.16/12)"},
        {0xc0000000, 24, "IETF protocol assignments (192.0.0/24)"},
        {0xc0000200, 24, "documentation (192.0.2/24)"},
        {0xc0586300, 24, "6to4 relay anycast (192.88.99/24)"},
        {0xc0a80000, 16, "private (192.168/16)"},
        {0xc6120000, 15, "benchmarking (198.18/15)"},
        {0xc6336400, 24, "documentation (198.51.100/24)"},
        {0xcb007100, 24, "documentation (203.0.113/24)"},
        {0xe0000000, 4, "multicast (224/4)"},
        {0xf0000000, 4, "reserved and broadcast (240/4)"},
};

struct net6 {
        uint8_t net[16];
        unsigned bits;
        const char *why;
};

static const struct net6 deny6[] = {
        {{0}, 128, "the unspecified address (::)"},
        {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, "loopback (::1)"},
        {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96, "IPv4-mapped (::ffff:0:0/96)"},
        /* RFC 2765 SIIT; Linux routes ::ffff:0:a.b.c.d as IPv6, a translator
         * on the path to the IPv4 address. */
        {{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96, "IPv4-translated (::ffff:0:0:0/96)"},
        {{0}, 96, "IPv4-compatible (::/96)"},
        {{0, 0x64, 0xff, 0x9b}, 96, "NAT64 (64:ff9b::/96)"},
        {{0, 0x64, 0xff, 0x9b, 0, 1}, 48, "local NAT64 (64:ff9b:1::/48)"},
        {{0x01}, 64, "discard (100::/64)"},
        {{0x01, 0, 0, 0, 0, 0, 0, 0x01}, 64, "dummy prefix (100:0:0:1::/64)"},
        {{0x20, 0x01, 0, 0}, 32, "Teredo (2001::/32)"},
        /* Benchmarking, ORCHID, AMT, anycast: nothing an agent fetches from,
         * and as 192.0.0/24 for IPv4, denied whole. */
        {{0x20, 0x01, 0, 0}, 23, "IETF protocol assignments (2001::/23)"},
        {{0x20, 0x01, 0x0d, 0xb8}, 32, "documentation (2001:db8::/32)"},
        {{0x20, 0x02}, 16, "6to4 (2002::/16)"},
        {{0x3f, 0xff}, 20, "documentation (3fff::/20)"},
        {{0x5f, 0x00}, 16, "segment routing SIDs (5f00::/16)"},
        {{0xfc}, 7, "unique local (fc00::/7)"},
        {{0xfe, 0x80}, 10, "link-local (fe80::/10)"},
        {{0xfe, 0xc0}, 10, "site-local (fec0::/10)"},
        {{0xff}, 8, "multicast (ff00::/8)"},
};

static bool prefix6(const uint8_t *a, const uint8_t *net, unsigned bits)
{
        unsigned whole = bits / 8, rest = bits % 8;

        if (memcmp(a, net, whole) != 0)
                return false;
        return rest == 0 || ((a[whole] ^ net[whole]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

const char *proxy_addr_denied(const struct sockaddr *sa)
{
        if (sa->sa_family == AF_INET) {
                uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
                for (size_t i = 0; i < sizeof(deny4) / sizeof(deny4[0]); i++) {
                        uint32_t mask = deny4[i].bits ? ~0U << (32 - deny4[i].bits) : 0;
                        if ((a & mask) == deny4[i].net)
                                return deny4[i].why;
                }
                return NULL;
        }
        if (sa->sa_family == AF_INET6) {
                const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
                for (size_t i = 0; i < sizeof(deny6) / sizeof(deny6[0]); i++)
                        if (prefix6(a, deny6[i].net, deny6[i].bits))
                                return deny6[i].why;
                return NULL;
        }
        return "not an IP address";
}

void proxy_addr_format(const struct sockaddr *sa, char *buf, size_t size)
{
        const void *a = sa->sa_family == AF_INET6
                                ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
                                : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;

        if (!inet_ntop(sa->sa_family, a, buf, (socklen_t)size))
                snprintf(buf, size, "?");
}
