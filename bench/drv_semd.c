/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/drv_semd.c - the semd wire driver for the shared load generator
 * (../shared/bench/load, driver.h). bench/compare.sh builds loadgen from a
 * temp copy of the shared sources with this file added, so semd is driven
 * by the very same client as the reference server and Redis.
 *
 * Same shape as the redis driver: acquire = a trydown (Down, timeout 0: a
 * full semaphore answers WOULD_BLOCK, counted as refused and retried),
 * release = Up by count on the same name. Names are KEY:i (i = conn % K),
 * created once by init with the run's limit. Each connection's first
 * request is preceded by a Hello; its reply is skipped by parse. Replies to
 * trydown and up are never deferred, so they come back in request order.
 *
 * Protobuf is encoded and decoded by hand (a few fixed fields), as the
 * redis driver does RESP: no library cost on the client side.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"

#define SEMD_CODE_OK		0
#define SEMD_CODE_WOULD_BLOCK	2
#define SEMD_FRAME_MAX		(1u << 20)

static int nkeys;
static struct lg_buf *down_body, *up_body;	/* per key: Down / Up message */
static unsigned char *hello_sent;		/* per connection */
static size_t hello_cap;
static uint64_t next_id = 1;

/* Append a varint. */
static void pb_varint(struct lg_buf *b, uint64_t v)
{
	unsigned char t[10];
	size_t n = 0;

	do {
		t[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	lg_buf_append(b, t, n);
}

/* Append a length-delimited field. */
static void pb_bytes(struct lg_buf *b, unsigned field, const void *p, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	lg_buf_append(b, p, n);
}

/* Append a varint field. */
static void pb_uint(struct lg_buf *b, unsigned field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

/* Write v as a varint at p; the byte after it. */
static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

/*
 * Append one frame: Request { id, op = body }. Written in place and
 * appended in one go, as the other drivers append theirs: the load
 * generator shares the machine with the daemon it measures, so what it
 * spends a request (an allocation and a free, before) is taken from it.
 */
static void semd_frame(struct lg_buf *out, unsigned op, const struct lg_buf *body)
{
	unsigned char f[4 + 1 + 10 + 1 + 10 + 256], *p = f + 4;
	size_t len;

	if (body->len > 256) {
		fprintf(stderr, "semd: a request body of %zu bytes\n", body->len);
		exit(1);
	}
	*p++ = 1 << 3;					/* id */
	p = put_varint(p, next_id++);
	p = put_varint(p, (uint64_t)op << 3 | 2);	/* op = body */
	p = put_varint(p, body->len);
	memcpy(p, body->p, body->len);
	p += body->len;
	len = (size_t)(p - f) - 4;
	f[0] = (unsigned char)(len >> 24);
	f[1] = (unsigned char)(len >> 16);
	f[2] = (unsigned char)(len >> 8);
	f[3] = (unsigned char)len;
	lg_buf_append(out, f, 4 + len);
}

/* Read a varint at *p (< end). Returns 0 or -1. */
static int pb_get(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		unsigned char c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
		shift += 7;
	}
	return -1;
}

/*
 * Cut one frame off p[0..n). Returns its size, 0 when incomplete, -1 when
 * malformed; *code, *is_hello and the message (for errors) are filled.
 */
static ssize_t semd_reply(const char *p, size_t n, uint64_t *code, int *is_hello,
    const char **msg, size_t *msglen)
{
	const unsigned char *q = (const unsigned char *)p, *end;
	size_t len;
	uint64_t key, v;

	if (n < 4)
		return 0;
	len = (size_t)q[0] << 24 | (size_t)q[1] << 16 | (size_t)q[2] << 8 | q[3];
	if (len > SEMD_FRAME_MAX)
		return -1;
	if (n < 4 + len)
		return 0;
	*code = SEMD_CODE_OK;
	*is_hello = 0;
	*msg = "";
	*msglen = 0;
	q += 4;
	end = q + len;
	while (q < end) {
		if (pb_get(&q, end, &key) < 0)
			return -1;
		switch (key & 7) {
		case 0:
			if (pb_get(&q, end, &v) < 0)
				return -1;
			if (key >> 3 == 2)
				*code = v;
			break;
		case 2:
			if (pb_get(&q, end, &v) < 0 || v > (uint64_t)(end - q))
				return -1;
			if (key >> 3 == 4)
				*is_hello = 1;
			if (key >> 3 == 3) {
				*msg = (const char *)q;
				*msglen = (size_t)v;
			}
			q += v;
			break;
		default:
			return -1;
		}
	}
	return (ssize_t)(4 + len);
}

/* Blocking: write one frame, read one reply; returns its code or -1. */
static int semd_roundtrip(int fd, unsigned op, const struct lg_buf *body)
{
	struct lg_buf f = {0};
	char buf[4096];
	size_t have = 0;
	uint64_t code;
	int hello;
	const char *msg;
	size_t ml;

	semd_frame(&f, op, body);
	if (lg_write_all(fd, f.p, f.len) < 0) {
		free(f.p);
		return -1;
	}
	free(f.p);
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof buf - have), k;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			perror("semd read");
			return -1;
		}
		have += (size_t)r;
		k = semd_reply(buf, have, &code, &hello, &msg, &ml);
		if (k < 0)
			return -1;
		if (k > 0) {
			if (code != SEMD_CODE_OK)
				fprintf(stderr, "semd: code %llu: %.*s\n",
				    (unsigned long long)code, (int)ml, msg);
			return (int)code;
		}
		if (have == sizeof buf)
			return -1;
	}
}

/* The Hello message body. */
static void semd_hello_body(struct lg_buf *b)
{
	pb_uint(b, 1, 1);
	pb_bytes(b, 2, "loadgen", 7);
}

/* Hello, then create every name with the run's limit. */
static int semd_init(const struct lg_opts *o, int fd)
{
	struct lg_buf h = {0};
	char key[256];
	int i, n;

	if (o->limit < 1 || o->limit > UINT32_MAX) {
		fprintf(stderr, "semd: limit must be 1..%u\n", UINT32_MAX);
		return -1;
	}
	semd_hello_body(&h);
	if (semd_roundtrip(fd, 2, &h) != SEMD_CODE_OK)
		return -1;
	free(h.p);
	nkeys = o->nkeys;
	down_body = calloc((size_t)nkeys, sizeof *down_body);
	up_body = calloc((size_t)nkeys, sizeof *up_body);
	if (down_body == NULL || up_body == NULL)
		return -1;
	for (i = 0; i < nkeys; i++) {
		struct lg_buf c = {0};
		int rc;

		n = snprintf(key, sizeof key, "%s:%d", o->key, i);
		pb_bytes(&c, 1, key, (size_t)n);
		pb_uint(&c, 2, (uint64_t)o->limit);
		pb_uint(&c, 4, 1);		/* if_not_exists */
		rc = semd_roundtrip(fd, 3, &c);
		free(c.p);
		if (rc != SEMD_CODE_OK)
			return -1;
		pb_bytes(&down_body[i], 1, key, (size_t)n);	/* timeout 0 */
		pb_bytes(&up_body[i], 1, key, (size_t)n);	/* n 0 = 1 */
	}
	return 0;
}

/* Down (step 0) or Up (step 1); Hello first on a new connection. */
static void semd_encode(int conn, int step, struct lg_buf *out)
{
	size_t i = (size_t)conn;

	if (i >= hello_cap) {
		size_t cap = hello_cap ? hello_cap : 64;

		while (cap <= i)
			cap *= 2;
		hello_sent = realloc(hello_sent, cap);
		if (hello_sent == NULL) {
			perror("semd: realloc");
			exit(1);
		}
		memset(hello_sent + hello_cap, 0, cap - hello_cap);
		hello_cap = cap;
	}
	if (!hello_sent[i]) {
		struct lg_buf h = {0};

		semd_hello_body(&h);
		semd_frame(out, 2, &h);
		free(h.p);
		hello_sent[i] = 1;
	}
	if (step == 0)
		semd_frame(out, 4, &down_body[conn % nkeys]);
	else
		semd_frame(out, 5, &up_body[conn % nkeys]);
}

/* One reply (after a connection's HelloReply, which is skipped). */
static ssize_t semd_parse(const char *p, size_t n, int step, int *granted)
{
	size_t off = 0;
	uint64_t code;
	int hello;
	const char *msg;
	size_t ml;
	ssize_t k;

	for (;;) {
		k = semd_reply(p + off, n - off, &code, &hello, &msg, &ml);
		if (k <= 0) {
			if (k < 0)
				fprintf(stderr, "semd: malformed reply\n");
			return k;
		}
		if (!hello)
			break;
		if (code != SEMD_CODE_OK) {
			fprintf(stderr, "semd: hello refused: %.*s\n", (int)ml, msg);
			return -1;
		}
		off += (size_t)k;
	}
	if (step == 0 && code == SEMD_CODE_WOULD_BLOCK) {
		*granted = 0;
	} else if (code == SEMD_CODE_OK) {
		*granted = 1;
	} else {
		fprintf(stderr, "semd: %s failed: code %llu: %.*s\n",
		    step ? "up" : "down", (unsigned long long)code, (int)ml, msg);
		return -1;
	}
	return (ssize_t)off + k;
}

const struct lg_driver lg_drv_semd = {
	.name = "semd",
	.init = semd_init,
	.encode = semd_encode,
	.parse = semd_parse,
};
