/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/test_peer_addr.c - peer_addr_parse: IPv4, [IPv6] and DNS
 * names with a port are taken apart; a missing, zero, signed or too large
 * port, an IPv6 literal without brackets, a name DNS does not allow (bad
 * characters, an empty label, a label of 64, a name of 254, an all-digit
 * last label) and an address of 256 characters or more (the TLS
 * header's field) are refused. A
 * plain (not TLS) peer takes an IPv4 literal only. A literal's socket
 * address is made without the resolver.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "daemon/log/peer_addr.h"
#include "tests/security/check.h"

/* s parses to kind, host, port. */
static void good(const char *s, enum peer_host_kind kind, const char *host,
    unsigned port)
{
	struct peer_addr a;
	int rc = peer_addr_parse(s, &a);

	t_check(rc == 0 && a.kind == kind && strcmp(a.host, host) == 0 &&
	    a.port == port, __FILE__, __LINE__, "'%s': rc %d kind %d host '%s' "
	    "port %u", s, rc, rc == 0 ? (int)a.kind : -1, rc == 0 ? a.host : "",
	    rc == 0 ? (unsigned)a.port : 0);
}

static void bad(const char *s)
{
	struct peer_addr a;

	t_check(peer_addr_parse(s, &a) == -1, __FILE__, __LINE__,
	    "'%.80s' (%zu chars) was accepted", s, strlen(s));
}

/* A literal's socket address: family and port, no resolver. */
static void resolved(const char *s, int family, unsigned port)
{
	struct sockaddr_storage sa;
	struct peer_addr a;

	CHECK(peer_addr_parse(s, &a) == 0 && peer_addr_resolve(&a, &sa) == 0);
	CHECK(sa.ss_family == family);
	CHECK(ntohs(family == AF_INET ? ((struct sockaddr_in *)&sa)->sin_port :
	    ((struct sockaddr_in6 *)&sa)->sin6_port) == port);
}

/* A name of n labels of lens[i] letters each, then :7101; its host length. */
static size_t labels(char *buf, size_t size, const size_t *lens, size_t n)
{
	size_t i, at = 0;

	for (i = 0; i < n && at + lens[i] + 8 < size; i++) {
		if (i > 0)
			buf[at++] = '.';
		memset(buf + at, 'a' + (int)i, lens[i]);
		at += lens[i];
	}
	snprintf(buf + at, size - at, ":7101");
	return at;
}

/* The name of lens parses (ok) or not, its host whole. */
static void name_len(const size_t *lens, size_t n, int ok)
{
	struct peer_addr a;
	char buf[600];
	size_t len = labels(buf, sizeof buf, lens, n);
	int rc = peer_addr_parse(buf, &a);

	if (ok)
		CHECK(rc == 0 && a.kind == PEER_NAME && strlen(a.host) == len);
	else
		CHECK(rc == -1);
}

int main(void)
{
	char buf[600];

	TEST_START("peer addresses");
	good("127.0.0.1:7101", PEER_IPV4, "127.0.0.1", 7101);
	good("10.1.2.3:1", PEER_IPV4, "10.1.2.3", 1);
	good("[::1]:65535", PEER_IPV6, "::1", 65535);
	good("[fe80::1:2]:7101", PEER_IPV6, "fe80::1:2", 7101);
	good("localhost:7101", PEER_NAME, "localhost", 7101);
	good("node-1.example:7101", PEER_NAME, "node-1.example", 7101);
	good("N1.Example.ORG:80", PEER_NAME, "N1.Example.ORG", 80);
	good("1node.a1:80", PEER_NAME, "1node.a1", 80);

	bad("");
	bad("localhost");
	bad("localhost:");
	bad(":7101");
	bad("localhost:0");
	bad("localhost:65536");
	bad("localhost:123456");
	bad("localhost:-1");
	bad("localhost:+80");
	bad("localhost:80x");
	bad("localhost: 80");
	bad("::1:7101");
	bad("[::1]7101");
	bad("[]:7101");
	bad("[127.0.0.1]:7101");
	bad("[node-1]:7101");
	bad("[::1:7101");
	bad("node_1:7101");
	bad("node 1:7101");
	bad("node-1.:7101");
	bad(".node:7101");
	bad("a..b:7101");
	bad("-node:7101");
	bad("node-:7101");
	bad("a-.b:7101");
	bad("node\n1:7101");
	bad("node/1:7101");
	bad("127.1:7101");
	bad("1.2.3.4.5:7101");
	bad("example.123:7101");
	bad("n\xc3\xa9:7101");

	name_len((const size_t[]){ 63 }, 1, 1);
	name_len((const size_t[]){ 64 }, 1, 0);
	name_len((const size_t[]){ 63, 64, 3 }, 3, 0);
	/* A whole address of 255 characters, the most; then 256. */
	name_len((const size_t[]){ 63, 63, 63, 58 }, 4, 1);
	name_len((const size_t[]){ 63, 63, 63, 59 }, 4, 0);
	name_len((const size_t[]){ 63, 63, 63, 63, 63 }, 5, 0);
	memset(buf, 'a', 300);
	strcpy(buf + 300, ":7101");
	bad(buf);

	resolved("127.0.0.1:7101", AF_INET, 7101);
	resolved("[::1]:65535", AF_INET6, 65535);

	/* Plain peers (libraft's TCP): IPv4 only. */
	CHECK(peer_addr_check("127.0.0.1:7101", false) == NULL);
	CHECK(peer_addr_check("localhost:7101", false) != NULL);
	CHECK(peer_addr_check("[::1]:7101", false) != NULL);
	CHECK(peer_addr_check("localhost:7101", true) == NULL);
	CHECK(peer_addr_check("[::1]:7101", true) == NULL);
	CHECK(peer_addr_check("localhost:0", true) != NULL);
	CHECK(peer_addr_check("127.0.0.1", false) != NULL);

	return t_done("test_peer_addr");
}
