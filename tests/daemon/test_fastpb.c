/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_fastpb.c - the hand coder of daemon/fastpb.c gives what
 * protobuf-c gives: random Down/Up/Ping requests packed by protobuf-c (and
 * then cut, or with bytes changed) decode to the same fields whenever the
 * fast decoder accepts them, and random replies pack to the same bytes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/fastpb.h"

#define ROUNDS 200000

static int failures;
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* xorshift64* */
static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}

/* A value that is often 0, small, or big. */
static uint64_t rnd_value(void)
{
	switch (rnd() % 5) {
	case 0:
		return 0;
	case 4:
		return UINT64_MAX;	/* the longest varint */
	case 1:
		return rnd() % 200;
	case 2:
		return rnd() >> (rnd() % 64);
	default:
		return rnd();
	}
}

/* Fill a random string of up to max bytes (NULs and high bytes too). */
static void rnd_string(char *s, size_t max)
{
	size_t len = rnd() % 4 == 0 ? 0 : rnd() % max, i;

	for (i = 0; i < len; i++)
		s[i] = rnd() % 8 == 0 ? (char)(rnd() % 256) : (char)('a' + rnd() % 26);
	s[len] = '\0';
}

/* Do the protobuf-c request and the fast one carry the same fields? */
static int same_request(const Semd__Request *a, const Semd__Request *b)
{
	if (a->id != b->id || a->op_case != b->op_case)
		return 0;
	switch (a->op_case) {
	case SEMD__REQUEST__OP_DOWN:
		return strcmp(a->down->name, b->down->name) == 0 &&
		    a->down->n == b->down->n &&
		    a->down->timeout_ms == b->down->timeout_ms &&
		    a->down->lease_ms == b->down->lease_ms;
	case SEMD__REQUEST__OP_UP:
		return strcmp(a->up->name, b->up->name) == 0 &&
		    a->up->n == b->up->n && a->up->permit_id == b->up->permit_id;
	case SEMD__REQUEST__OP_PING:
		return a->ping->payload.len == b->ping->payload.len &&
		    (a->ping->payload.len == 0 ||
		    memcmp(a->ping->payload.data, b->ping->payload.data,
		    a->ping->payload.len) == 0);
	default:
		return 0;
	}
}

/* Random requests, whole, cut and mangled. */
static void test_requests(void)
{
	Semd__Request rq;
	Semd__Down d;
	Semd__Up u;
	Semd__Ping g;
	struct fastpb_req f;
	uint8_t wire[1024], payload[64];
	char name[300], buf[4096];
	size_t len, i, k;
	unsigned long fast = 0, checked = 0;
	int round;

	printf("# %d random requests\n", ROUNDS);
	for (round = 0; round < ROUNDS; round++) {
		Semd__Request *ref;

		semd__request__init(&rq);
		rq.id = rnd_value();
		rnd_string(name, sizeof name - 1);
		switch (rnd() % 3) {
		case 0:
			semd__down__init(&d);
			d.name = name;
			d.n = (uint32_t)rnd_value();
			d.timeout_ms = (int64_t)rnd_value();
			d.lease_ms = (uint32_t)rnd_value();
			rq.op_case = SEMD__REQUEST__OP_DOWN;
			rq.down = &d;
			break;
		case 1:
			semd__up__init(&u);
			u.name = name;
			u.n = (uint32_t)rnd_value();
			u.permit_id = rnd_value();
			rq.op_case = SEMD__REQUEST__OP_UP;
			rq.up = &u;
			break;
		default:
			semd__ping__init(&g);
			g.payload.len = rnd() % sizeof payload;
			for (i = 0; i < g.payload.len; i++)
				payload[i] = (uint8_t)rnd();
			g.payload.data = payload;
			rq.op_case = SEMD__REQUEST__OP_PING;
			rq.ping = &g;
			break;
		}
		len = semd__request__pack(&rq, wire);
		/* Sometimes cut it, change bytes, or append a copy of a part. */
		switch (rnd() % 4) {
		case 1:
			len = len ? rnd() % len : 0;
			break;
		case 2:
			for (k = rnd() % 3 + 1; k > 0 && len > 0; k--)
				wire[rnd() % len] = (uint8_t)rnd();
			break;
		case 3:
			k = len ? rnd() % len : 0;
			memcpy(wire + len, wire + k, len - k);
			len += len - k;
			break;
		}
		ref = semd__request__unpack(NULL, len, wire);
		if (fastpb_request(&f, wire, len, buf, sizeof buf)) {
			fast++;
			if (ref == NULL || !same_request(ref, &f.req)) {
				failures++;
				printf("not ok - round %d: fast decode differs from protobuf-c (%s)\n",
				    round, ref == NULL ? "which rejects it" : "fields");
			}
		}
		if (ref != NULL) {
			checked++;
			semd__request__free_unpacked(ref, NULL);
		}
		if (failures > 10)
			return;
	}
	printf("# %lu decoded by the fast path, %lu valid for protobuf-c\n",
	    fast, checked);
	if (fast < ROUNDS / 4) {
		failures++;
		printf("not ok - the fast path took only %lu of %d requests\n",
		    fast, ROUNDS);
	}
}

/* Random replies pack to the same bytes. */
static void test_replies(void)
{
	Semd__Reply r;
	Semd__Grant gr;
	Semd__Released rel;
	Semd__Pong pong;
	uint8_t a[1024], b[1024], payload[300], *exact;
	char msg[200];
	size_t la, lb, fs, i, bound = 0;
	int round;

	printf("# %d random replies\n", ROUNDS);
	for (round = 0; round < ROUNDS; round++) {
		semd__reply__init(&r);
		r.id = rnd_value();
		r.code = (Semd__Code)(rnd() % 4 == 0 ? rnd() % 14 : 0);
		if (rnd() % 3 == 0) {
			rnd_string(msg, sizeof msg - 1);
			r.message = msg;
		}
		switch (rnd() % 4) {
		case 0:
			break;
		case 1:
			semd__grant__init(&gr);
			gr.permit_id = rnd_value();
			gr.token = rnd_value();
			gr.n = (uint32_t)rnd_value();
			gr.waited_us = rnd_value();
			r.body_case = SEMD__REPLY__BODY_GRANT;
			r.grant = &gr;
			break;
		case 2:
			semd__released__init(&rel);
			rel.n = (uint32_t)rnd_value();
			r.body_case = SEMD__REPLY__BODY_RELEASED;
			r.released = &rel;
			break;
		default:
			semd__pong__init(&pong);
			pong.payload.len = rnd() % sizeof payload;
			for (i = 0; i < pong.payload.len; i++)
				payload[i] = (uint8_t)rnd();
			pong.payload.data = payload;
			r.body_case = SEMD__REPLY__BODY_PONG;
			r.pong = &pong;
			break;
		}
		la = semd__reply__pack(&r, a);
		if (!fastpb_reply_size(&r, &fs)) {
			failures++;
			printf("not ok - round %d: reply not taken by the fast encoder\n",
			    round);
			continue;
		}
		/*
		 * The daemon sizes its buffer with the bound and packs there:
		 * the bound must hold every reply packed (in a heap buffer of
		 * exactly that size, so ASan sees any byte past it).
		 */
		if (!fastpb_reply_bound(&r, &bound) || bound < la) {
			failures++;
			printf("not ok - round %d: bound %zu below the packed size %zu\n",
			    round, bound, la);
			continue;
		}
		exact = malloc(bound);
		if (exact == NULL || fastpb_reply_pack(&r, exact) != la ||
		    memcmp(exact, a, la) != 0) {
			failures++;
			printf("not ok - round %d: packed in a buffer of the bound\n",
			    round);
		}
		free(exact);
		lb = fastpb_reply_pack(&r, b);
		if (fs != la || lb != la || memcmp(a, b, la) != 0) {
			failures++;
			printf("not ok - round %d: reply bytes differ (protobuf-c %zu, size %zu, packed %zu)\n",
			    round, la, fs, lb);
		}
		if (failures > 10)
			return;
	}
	/* A body the fast encoder leaves to protobuf-c. */
	semd__reply__init(&r);
	r.body_case = SEMD__REPLY__BODY_STATS;
	if (fastpb_reply_size(&r, &fs) || fastpb_reply_bound(&r, &fs)) {
		failures++;
		printf("not ok - a Stats reply was taken by the fast encoder\n");
	}
}

int main(void)
{
	test_requests();
	test_replies();
	if (failures) {
		printf("%d failure(s)\n", failures);
		return 1;
	}
	printf("all fastpb tests passed\n");
	return 0;
}
