/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/peer_addr.h - a peer's address in the cluster: HOST:PORT, HOST
 * an IPv4 literal, an [IPv6] literal in brackets or a DNS name.
 *
 * The one parser every path that takes a peer address goes through
 * (peer-listen, peer-bind, --bootstrap, cluster add, the TLS transport and
 * the header a TLS peer sends), so what one accepts the others do. Pure: no
 * resolving here.
 */
#ifndef SEMD_PEER_ADDR_H
#define SEMD_PEER_ADDR_H

#include <stdbool.h>
#include <stdint.h>

#define PEER_ADDR_MAX	256	/* a whole address, with its NUL (the TLS
				   header's field: peer_tls.c) */
#define PEER_HOST_MAX	254	/* a name of 253 characters, and its NUL */

enum peer_host_kind { PEER_IPV4, PEER_IPV6, PEER_NAME };

struct peer_addr {
	enum peer_host_kind	kind;
	uint16_t		port;			/* 1..65535 */
	char			host[PEER_HOST_MAX];	/* bare: no brackets */
};

/*
 * Parse s into a: 0, or -1 for anything else (too long, no port, port 0 or
 * past 65535, a name with a character or label DNS does not allow, an IPv6
 * literal without its brackets).
 */
int peer_addr_parse(const char *s, struct peer_addr *a);
/*
 * Can s be a peer's address, with the peer transport in TLS or not
 * (libraft's plain TCP transport takes IPv4 literals only)? NULL, or why
 * not (a phrase to follow the address).
 */
const char *peer_addr_check(const char *s, bool tls);

#endif
