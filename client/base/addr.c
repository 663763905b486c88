/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/base/addr.c - addresses: parsing unix:PATH, tcp:HOST[:PORT],
 * tls:HOST[:PORT], and the handle's list of daemons (a cluster's), the one
 * in use among them and the one a Redirect names.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/handle.h"

/* Parse a decimal port. */
static int addr_port(const char *s, unsigned *port)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > 65535)
		return -1;
	*port = (unsigned)v;
	return 0;
}

/* Split HOST[:PORT] or [V6][:PORT] into a. */
static int addr_hostport(const char *s, struct semc_addr *a)
{
	const char *colon, *host = s;
	size_t hlen;

	a->port = SEMC_DEFAULT_PORT;
	if (*s == '[') {
		const char *rb = strchr(s, ']');

		if (rb == NULL)
			return -1;
		host = s + 1;
		hlen = (size_t)(rb - host);
		if (rb[1] == ':') {
			if (addr_port(rb + 2, &a->port) != 0)
				return -1;
		} else if (rb[1] != '\0')
			return -1;
	} else {
		colon = strrchr(s, ':');
		if (colon != NULL && strchr(s, ':') != colon)
			return -1;	/* a bare IPv6 address needs brackets */
		hlen = colon ? (size_t)(colon - s) : strlen(s);
		if (colon != NULL && addr_port(colon + 1, &a->port) != 0)
			return -1;
	}
	if (hlen == 0 || hlen >= sizeof a->host)
		return -1;
	memcpy(a->host, host, hlen);
	a->host[hlen] = '\0';
	return 0;
}

/* Parse an address: unix:PATH, tcp:HOST[:PORT], tls:HOST[:PORT], /PATH, HOST[:PORT]. */
int semc_addr_parse(const char *s, struct semc_addr *a)
{
	const char *path = NULL;

	memset(a, 0, sizeof *a);
	if (s == NULL || *s == '\0')
		return SEMC_E_ADDRESS;
	if (strncmp(s, "unix:", 5) == 0)
		path = s + 5;
	else if (*s == '/' || *s == '.')
		path = s;
	if (path != NULL) {
		size_t plen = strlen(path);

		if (plen == 0 || plen >= sizeof a->path)
			return SEMC_E_ADDRESS;
		a->kind = SEMC_ADDR_UNIX;
		a->xprt = &semc_xprt_unix;
		memcpy(a->path, path, plen + 1);
		snprintf(a->canon, sizeof a->canon, "unix:%s", a->path);
		return 0;
	}
	a->kind = SEMC_ADDR_TCP;
	a->xprt = &semc_xprt_tcp;
	if (strncmp(s, "tcp:", 4) == 0) {
		s += 4;
	} else if (strncmp(s, "tls:", 4) == 0) {
		a->kind = SEMC_ADDR_TLS;
		a->xprt = &semc_xprt_tls;
		s += 4;
	} else if (strchr(s, '/') != NULL) {
		return SEMC_E_ADDRESS;	/* unknown scheme://... */
	}
	if (addr_hostport(s, a) != 0)
		return SEMC_E_ADDRESS;
	if (strchr(a->host, ':') != NULL)
		snprintf(a->canon, sizeof a->canon, "%s:[%s]:%u", a->xprt->name, a->host, a->port);
	else
		snprintf(a->canon, sizeof a->canon, "%s:%s:%u", a->xprt->name, a->host, a->port);
	return 0;
}

/* Set the handle's daemons from a comma-separated list of addresses. */
int semc_addrs_set(struct semc *c, const char *address)
{
	struct semc_addr a[SEMC_MAX_ADDRS];
	char buf[4096], *item, *save = NULL;
	unsigned n = 0;

	if (address == NULL || snprintf(buf, sizeof buf, "%s", address) >= (int)sizeof buf)
		return semc_fail(SEMC_E_ADDRESS, "bad server address '%s'", address ? address : "");
	for (item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
		if (n == SEMC_MAX_ADDRS)
			return semc_fail(SEMC_E_ADDRESS, "more than %d addresses in '%s'",
					 SEMC_MAX_ADDRS, address);
		if (semc_addr_parse(item, &a[n]) != 0)
			return semc_fail(SEMC_E_ADDRESS, "bad server address '%s'", item);
		n++;
	}
	if (n == 0)
		return semc_fail(SEMC_E_ADDRESS, "bad server address '%s'", address);
	pthread_mutex_lock(&c->lock);
	memcpy(c->addrs, a, n * sizeof a[0]);
	c->naddrs = n;
	c->cur = 0;
	c->addr = a[0];
	c->addr_set = true;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* Unless the program set one: $SEMD_SERVER, else the default UNIX socket. */
int semc_addrs_default(struct semc *c)
{
	const char *env = getenv("SEMD_SERVER");

	if (c->addr_set)
		return 0;
	if (env != NULL && *env != '\0')
		return semc_addrs_set(c, env);
	return semc_addrs_set(c, "unix:" SEMC_DEFAULT_UNIX);
}

/* Use addrs[i] from the next attempt on (lock held). */
void semc_addr_use_locked(struct semc *c, unsigned i)
{
	if (c->naddrs == 0 || i >= c->naddrs)
		return;
	c->cur = i;
	c->addr = c->addrs[i];
}

/* A Redirect names the leader: use it next if it is one of ours. */
void semc_addr_redirect_locked(struct semc *c, const Semd__Redirect *rd)
{
	struct semc_addr a;
	unsigned i;

	if (rd == NULL || rd->leader == NULL || rd->leader[0] == '\0' ||
	    semc_addr_parse(rd->leader, &a) != 0)
		return;
	for (i = 0; i < c->naddrs; i++) {
		if (strcmp(c->addrs[i].canon, a.canon) == 0) {
			semc_addr_use_locked(c, i);
			return;
		}
	}
}
