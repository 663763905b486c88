/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/peer_addr.c - a peer's HOST:PORT (peer_addr.h).
 */
#include <config.h>	/* autoconf's */

#include <arpa/inet.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "daemon/log/peer_addr.h"

/*
 * A host name as DNS allows it (RFC 1123): labels of 1 to 63 letters,
 * digits and hyphens, neither first nor last a hyphen, at most 253 in all,
 * and the last label not all digits (so "127.1" is no name, nor an address
 * some resolver would read as one).
 */
static bool name_ok(const char *s, size_t n)
{
	size_t i, label = 0;
	bool digits = true;

	if (n == 0 || n > PEER_HOST_MAX - 1)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '.') {
			if (label == 0 || s[i - 1] == '-')
				return false;
			label = 0;
			digits = true;
			continue;
		}
		if (c == '-' ? label == 0 : !((c >= 'a' && c <= 'z') ||
		    (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			return false;
		if (c < '0' || c > '9')
			digits = false;
		if (++label > 63)
			return false;
	}
	return label > 0 && s[n - 1] != '-' && !digits;
}

/* Parse HOST:PORT into a (peer_addr.h). */
int peer_addr_parse(const char *s, struct peer_addr *a)
{
	const char *colon = strrchr(s, ':'), *p;
	unsigned int port = 0;
	unsigned char buf[16];
	size_t n;

	if (colon == NULL || strlen(s) >= PEER_ADDR_MAX || colon[1] == '\0' ||
	    strlen(colon + 1) > 5)
		return -1;
	for (p = colon + 1; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		port = port * 10 + (unsigned int)(*p - '0');
	}
	if (port == 0 || port > 65535)
		return -1;
	n = (size_t)(colon - s);
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		if (n - 2 >= PEER_HOST_MAX)
			return -1;
		memcpy(a->host, s + 1, n - 2);
		a->host[n - 2] = '\0';
		a->kind = PEER_IPV6;
		a->port = (uint16_t)port;
		return inet_pton(AF_INET6, a->host, buf) == 1 ? 0 : -1;
	}
	if (n == 0 || n >= PEER_HOST_MAX)
		return -1;
	memcpy(a->host, s, n);
	a->host[n] = '\0';
	a->port = (uint16_t)port;
	if (inet_pton(AF_INET, a->host, buf) == 1) {
		a->kind = PEER_IPV4;
		return 0;
	}
	a->kind = PEER_NAME;
	return name_ok(a->host, n) ? 0 : -1;
}

/* Why s is no peer address (tls: names allowed), or NULL. */
const char *peer_addr_check(const char *s, bool tls)
{
	struct peer_addr a;

	if (peer_addr_parse(s, &a) != 0)
		return "is not HOST:PORT (HOST an IPv4 address, an [IPv6] "
		    "address or a DNS name; PORT 1 to 65535)";
	if (!tls && a.kind != PEER_IPV4)
		return "is not IPV4:PORT, and raft's plain peer transport takes "
		    "no other (names and IPv6 need peer TLS: peer-tls-cert, "
		    "peer-tls-key, peer-tls-ca)";
	return NULL;
}

/* getaddrinfo hints for a peer: TCP, any family. */
void peer_addr_hints(struct addrinfo *hints)
{
	memset(hints, 0, sizeof *hints);
	hints->ai_family = AF_UNSPEC;
	hints->ai_socktype = SOCK_STREAM;
	hints->ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV;
}

/* a's socket addresses (a literal at once, a name resolved). */
int peer_addr_resolve(const struct peer_addr *a, struct sockaddr_storage *sa)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
	struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
	struct addrinfo hints, *res = NULL;
	char port[8];
	int rv;

	memset(sa, 0, sizeof *sa);
	if (a->kind == PEER_IPV4) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(a->port);
		return inet_pton(AF_INET, a->host, &s4->sin_addr) == 1 ? 0 :
		    EAI_NONAME;
	}
	if (a->kind == PEER_IPV6) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(a->port);
		return inet_pton(AF_INET6, a->host, &s6->sin6_addr) == 1 ? 0 :
		    EAI_NONAME;
	}
	peer_addr_hints(&hints);
	hints.ai_flags |= AI_PASSIVE;
	snprintf(port, sizeof port, "%u", (unsigned)a->port);
	if ((rv = getaddrinfo(a->host, port, &hints, &res)) != 0)
		return rv;
	if (res == NULL || res->ai_addrlen > sizeof *sa)
		rv = EAI_NONAME;
	else
		memcpy(sa, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return rv;
}

/* Does cert name a's host (IP or DNS subjectAltName)? */
bool peer_addr_named(X509 *cert, const struct peer_addr *a)
{
	if (cert == NULL)
		return false;
	if (a->kind == PEER_NAME)
		return X509_check_host(cert, a->host, 0, PEER_SAN_FLAGS,
		    NULL) == 1;
	return X509_check_ip_asc(cert, a->host, 0) == 1;
}
