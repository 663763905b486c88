/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/drv_semdhttp.c - semd's HTTP front door (doc/http.md) as a wire
 * driver of the shared load generator (../shared/bench/load, driver.h):
 * the same client as the reference server, Redis, etcd's JSON gateway and
 * semd's binary protocol (drv_semd.c). bench/http-compare.sh builds
 * loadgen from a temp copy of the shared sources with it added.
 *
 * HTTP/1.1 on a kept-alive connection, one request at a time (P = 1):
 *   acquire: POST /v1/semaphores/KEY:i/permits {"timeout_ms":0,"limit":L,
 *            "lease_ms":60000}: 201 granted (its permit id kept for the
 *            release), 409 would_block refused (the core retries);
 *   release: DELETE /v1/semaphores/KEY:i/permits/ID: 204.
 * Names KEY:i (i = connection % K) are made by the first acquire with the
 * run's limit, as the redis driver's keys are. parse() is not told the
 * connection, but the core calls encode() for the same connection right
 * after parse() cut its reply off (drv_etcd.c relies on it too): the
 * permit a 201 carried is the one the next release of that connection
 * gives back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "driver.h"

static const char *key_prefix;
static int nkeys;
static long limit;
static unsigned long long last_permit;	/* of the 201 parse() just cut */

/* One run: a connection at a time (HTTP/1.1 answers in turn). */
static int semdhttp_init(const struct lg_opts *o, int fd)
{
	(void)fd;
	if (o->pipeline != 1) {
		fprintf(stderr, "semdhttp: -P 1 (one HTTP request at a time)\n");
		return -1;
	}
	key_prefix = o->key;
	nkeys = o->nkeys > 0 ? o->nkeys : 1;
	limit = o->limit > (1L << 30) ? 1L << 30 : o->limit;
	return 0;
}

/* The request of step: the acquire, or the release of the last permit. */
static void semdhttp_encode(int conn, int step, struct lg_buf *out)
{
	char req[512], body[128];
	int n, bn;

	if (step == 0) {
		bn = snprintf(body, sizeof body, "{\"timeout_ms\":0,\"limit\":%ld,"
		    "\"lease_ms\":60000}", limit);
		n = snprintf(req, sizeof req, "POST /v1/semaphores/%s:%d/permits "
		    "HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
		    "Content-Length: %d\r\n\r\n%s", key_prefix, conn % nkeys, bn,
		    body);
	} else {
		n = snprintf(req, sizeof req, "DELETE /v1/semaphores/%s:%d/permits/"
		    "%llu HTTP/1.1\r\nHost: bench\r\n\r\n", key_prefix,
		    conn % nkeys, last_permit);
	}
	lg_buf_append(out, req, (size_t)n);
}

/* Cut one answer off p[0..n). */
static ssize_t semdhttp_parse(const char *p, size_t n, int step, int *granted)
{
	const char *eoh = memmem(p, n, "\r\n\r\n", 4), *h, *pm;
	size_t hlen, clen = 0;
	int status;

	if (eoh == NULL)
		return 0;
	hlen = (size_t)(eoh - p) + 4;
	if (n < 12 || memcmp(p, "HTTP/1.", 7) != 0) {
		fprintf(stderr, "semdhttp: not an HTTP answer: %.40s\n", p);
		return -1;
	}
	status = atoi(p + 9);
	for (h = p; h < eoh; h++) {
		if (h[0] == '\n' && strncasecmp(h + 1, "content-length:", 15) == 0) {
			clen = strtoul(h + 16, NULL, 10);
			break;
		}
	}
	if (n < hlen + clen)
		return 0;
	if (step == 0 && status == 201) {
		*granted = 1;
		pm = memmem(p + hlen, clen, "\"permit\":\"", 10);
		last_permit = pm != NULL ? strtoull(pm + 10, NULL, 10) : 0;
	} else if (step == 0 && status == 409 &&
	    memmem(p + hlen, clen, "would_block", 11) != NULL) {
		*granted = 0;
	} else if (step != 1 || status != 204) {
		fprintf(stderr, "semdhttp: step %d: %d %.*s\n", step, status,
		    (int)(clen < 200 ? clen : 200), p + hlen);
		return -1;
	}
	return (ssize_t)(hlen + clen);
}

const struct lg_driver lg_drv_semdhttp = {
	.name = "semdhttp",
	.init = semdhttp_init,
	.encode = semdhttp_encode,
	.parse = semdhttp_parse,
};
