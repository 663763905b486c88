/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/peer_addr.h - a peer's address in the cluster: HOST:PORT, HOST
 * an IPv4 literal, an [IPv6] literal in brackets or a DNS name.
 *
 * The one parser every path that takes a peer address goes through
 * (peer-listen, peer-bind, --bootstrap, cluster add, the TLS transport and
 * the header a TLS peer sends), so what one accepts the others do; and what
 * the TLS transport asks of an address: where it is, and whether a
 * certificate names it.
 */
#ifndef SEMD_PEER_ADDR_H
#define SEMD_PEER_ADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <openssl/x509v3.h>

struct addrinfo;

#define PEER_ADDR_MAX	256	/* a whole address, with its NUL (the TLS
				   header's field: peer_net.c) */
#define PEER_HOST_MAX	254	/* a name of 253 characters, and its NUL */
/* How a name is matched to a DNS subjectAltName (peer_addr_named). */
#define PEER_SAN_FLAGS	(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | \
			 X509_CHECK_FLAG_NEVER_CHECK_SUBJECT)

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
/*
 * a's socket address: an IP literal's at once; a name's first address from
 * getaddrinfo, which blocks (for a listener at start only; a connection
 * resolves with uv_getaddrinfo and peer_addr_hints). 0, or an EAI_* code.
 */
int peer_addr_resolve(const struct peer_addr *a, struct sockaddr_storage *sa);
/* The hints for resolving a peer's name: stream sockets, either family. */
void peer_addr_hints(struct addrinfo *hints);
/*
 * Does cert name a's host? An IP literal as an IP subjectAltName, a name as
 * a DNS one (a wildcard only as a whole first label; never the subject CN).
 */
bool peer_addr_named(X509 *cert, const struct peer_addr *a);

#endif
