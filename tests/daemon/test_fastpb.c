/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_fastpb.c - the hand coder of daemon/fastpb.c gives what
 * protobuf-c gives: random Down/Up/Ping requests packed by protobuf-c (and
 * then cut, or with bytes changed) decode to the same fields whenever the
 * fast decoder accepts them, and replies of every shape the encoder takes,
 * random and at the edges, pack to the same bytes and within
 * fastpb_reply_bound(), the size the daemon gives their buffer, and as
 * whole frames by fastpb_reply_frame() when of its shape. And the
 * watch events as a snapshot carries them (proto/pbevent.c): random ones and
 * ones at the edges pack to protobuf-c's bytes, and one that does not fit
 * the room given is refused, never written past it. And the short-string
 * copies and compares of core/strcopy.h, against libc's.
 * And a watch event's reply made from its event packed once is the reply's
 * pack.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strcopy.h"
#include "daemon/fastpb.h"
#include "proto/frame.h"
#include "proto/pbevent.h"
#include "tests/common/check.h"
#include "tests/common/rnd_value.h"

#define ROUNDS 200000


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

/* The reply shapes the fast encoder takes, by body. */
static const Semd__Reply__BodyCase reply_shapes[] = {
	SEMD__REPLY__BODY__NOT_SET, SEMD__REPLY__BODY_GRANT,
	SEMD__REPLY__BODY_RELEASED, SEMD__REPLY__BODY_PONG,
};
#define NSHAPES (sizeof reply_shapes / sizeof reply_shapes[0])
#define PAYLOAD_MAX 20000

/* A reply and what it points to. */
struct reply {
	Semd__Reply	r;
	Semd__Grant	gr;
	Semd__Released	rel;
	Semd__Pong	pong;
	uint8_t		payload[PAYLOAD_MAX];
	char		msg[PAYLOAD_MAX];
};

/*
 * A reply of body shape: every number num() (the code, an enum, stays below
 * 14), the message msg (NULL: none) and a pong payload of paylen bytes.
 */
static void reply_make(struct reply *x, Semd__Reply__BodyCase shape,
    uint64_t (*num)(void), const char *msg, size_t paylen)
{
	size_t i;

	semd__reply__init(&x->r);
	x->r.id = num();
	x->r.code = (Semd__Code)(num() % 14);
	if (msg != NULL) {
		snprintf(x->msg, sizeof x->msg, "%s", msg);
		x->r.message = x->msg;
	}
	x->r.body_case = shape;
	switch (shape) {
	case SEMD__REPLY__BODY_GRANT:
		semd__grant__init(&x->gr);
		x->gr.permit_id = num();
		x->gr.token = num();
		x->gr.n = (uint32_t)num();
		x->gr.waited_us = num();
		x->r.grant = &x->gr;
		break;
	case SEMD__REPLY__BODY_RELEASED:
		semd__released__init(&x->rel);
		x->rel.n = (uint32_t)num();
		x->r.released = &x->rel;
		break;
	case SEMD__REPLY__BODY_PONG:
		semd__pong__init(&x->pong);
		x->pong.payload.len = paylen;
		for (i = 0; i < paylen; i++)
			x->payload[i] = (uint8_t)rnd();
		x->pong.payload.data = x->payload;
		x->r.pong = &x->pong;
		break;
	default:
		break;
	}
}

/*
 * fastpb_reply_frame() packs r, whose protobuf-c bytes are a[0..la), as
 * their frame into FASTPB_FRAME_ROOM bytes (a heap buffer of exactly that
 * size), or says it is not its shape: with a message, or a Pong body.
 * False, told, when not.
 */
static bool frame_check(const Semd__Reply *r, const uint8_t *a, size_t la,
    const char *what, int round)
{
	uint8_t *f = malloc(FASTPB_FRAME_ROOM), hdr[FRAME_HDR];
	bool mine = (r->message == NULL || r->message[0] == '\0') &&
	    r->body_case != SEMD__REPLY__BODY_PONG;
	size_t lf;
	bool ok;

	if (f == NULL) {
		printf("not ok - %s %d: out of memory\n", what, round);
		return false;
	}
	lf = fastpb_reply_frame(r, f);
	frame_put_header(hdr, (uint32_t)la);
	ok = mine ? lf == FRAME_HDR + la && memcmp(f, hdr, FRAME_HDR) == 0 &&
	    memcmp(f + FRAME_HDR, a, la) == 0 : lf == 0;
	if (!ok)
		printf("not ok - %s %d: framed %zu bytes for a reply of %zu%s\n",
		    what, round, lf, la, mine ? "" : " it should have left alone");
	free(f);
	return ok;
}

/*
 * r packs to protobuf-c's bytes, and into a buffer of the size the daemon
 * gives it: fastpb_reply_bound() (a heap buffer of exactly that size, so
 * ASan sees any byte written past it). False, told, when not.
 */
static bool reply_check(const Semd__Reply *r, const char *what, int round)
{
	size_t la = semd__reply__get_packed_size(r), bound = 0, lb;
	uint8_t *a = malloc(la), *b;
	bool ok = false;

	if (a == NULL || semd__reply__pack(r, a) != la) {
		printf("not ok - %s %d: protobuf-c did not pack it\n", what, round);
	} else if (!fastpb_reply_bound(r, &bound)) {
		printf("not ok - %s %d: not taken by the fast encoder\n", what,
		    round);
	} else if (bound < la) {
		printf("not ok - %s %d: bound %zu below the packed size %zu\n",
		    what, round, bound, la);
	} else if ((b = malloc(bound)) == NULL) {
		printf("not ok - %s %d: out of memory\n", what, round);
	} else {
		lb = fastpb_reply_pack(r, b);
		ok = lb == la && memcmp(a, b, la) == 0;
		if (!ok)
			printf("not ok - %s %d: packed %zu bytes (bound %zu), protobuf-c %zu, or other bytes\n",
			    what, round, lb, bound, la);
		free(b);
		if (ok)
			ok = frame_check(r, a, la, what, round);
	}
	free(a);
	if (!ok)
		failures++;
	return ok;
}

static uint64_t num_max(void)
{
	return UINT64_MAX;
}

/* Random replies of every shape pack to the same bytes, within the bound. */
static void test_replies(void)
{
	static struct reply x;
	char msg[200];
	int round;

	printf("# %d random replies\n", ROUNDS);
	for (round = 0; round < ROUNDS; round++) {
		rnd_string(msg, sizeof msg - 1);
		reply_make(&x, reply_shapes[rnd() % NSHAPES], rnd_value,
		    rnd() % 3 == 0 ? msg : NULL, rnd() % 300);
		reply_check(&x.r, "round", round);
		if (failures > 10)
			return;
	}
}

/*
 * The bound at the edges: every shape with every number at its longest
 * varint, no message, an empty one or a long one, and pong payloads
 * around each length whose varint gets a byte longer.
 */
static void test_reply_bound_edges(void)
{
	static const size_t lens[] = { 0, 1, 127, 128, 16383, 16384, PAYLOAD_MAX };
	static struct reply x;
	static char longmsg[PAYLOAD_MAX];
	const char *msgs[] = { NULL, "", longmsg };
	uint8_t frame[FASTPB_FRAME_ROOM];
	size_t s, m, l;
	int n = 0;

	memset(longmsg, 'm', sizeof longmsg - 1);
	printf("# the bound at the edges\n");
	for (s = 0; s < NSHAPES; s++)
		for (m = 0; m < sizeof msgs / sizeof msgs[0]; m++)
			for (l = 0; l < sizeof lens / sizeof lens[0]; l++) {
				reply_make(&x, reply_shapes[s], num_max, msgs[m],
				    lens[l]);
				reply_check(&x.r, "edge", n++);
			}
	/* A body the fast encoder leaves to protobuf-c. */
	semd__reply__init(&x.r);
	x.r.body_case = SEMD__REPLY__BODY_STATS;
	if (fastpb_reply_bound(&x.r, &s) || fastpb_reply_frame(&x.r, frame) != 0) {
		failures++;
		printf("not ok - a Stats reply was taken by the fast encoder\n");
	}
	/*
	 * Fields beside the body that it does not write: a Watch's OK with its
	 * revision, a COMPACTED with the oldest revision kept.
	 */
	semd__reply__init(&x.r);
	x.r.revision = 7;
	if (fastpb_reply_bound(&x.r, &s) || fastpb_reply_frame(&x.r, frame) != 0) {
		failures++;
		printf("not ok - a reply with a revision was taken by the fast encoder\n");
	}
	semd__reply__init(&x.r);
	x.r.code = SEMD__CODE__COMPACTED;
	x.r.oldest_revision = 3;
	if (fastpb_reply_bound(&x.r, &s) || fastpb_reply_frame(&x.r, frame) != 0) {
		failures++;
		printf("not ok - a reply with an oldest revision was taken by the fast encoder\n");
	}
}

/* A string of rnd_string()'s, or NULL, or one of max - 1 bytes. */
static char *rnd_event_string(char *s, size_t max)
{
	switch (rnd() % 6) {
	case 0:
		return NULL;
	case 1:
		memset(s, 'x', max - 1);
		s[max - 1] = '\0';
		return s;
	default:
		rnd_string(s, max);
		return s;
	}
}

/*
 * ev packs by pbevent_pack() to protobuf-c's bytes, into exactly the room
 * they need (a heap buffer: ASan sees a byte written past it), and is
 * refused one byte less. False, told, when not.
 */
static bool event_check(const Semd__WatchEvent *ev, int round)
{
	size_t la = semd__watch_event__get_packed_size(ev), lb;
	uint8_t *a = malloc(la + 1), *b = malloc(la + 1);
	bool ok = false;

	if (a == NULL || b == NULL || semd__watch_event__pack(ev, a) != la) {
		printf("not ok - event %d: protobuf-c did not pack it\n", round);
	} else if ((lb = pbevent_pack(ev, b, la)) != la || memcmp(a, b, la) != 0) {
		printf("not ok - event %d: packed %zu bytes, protobuf-c %zu, or other bytes\n",
		    round, lb, la);
	} else if (la > 0 && pbevent_pack(ev, b, la - 1) != 0) {
		printf("not ok - event %d: packed into %zu bytes, it needs %zu\n",
		    round, la - 1, la);
	} else {
		ok = true;
	}
	free(a);
	free(b);
	if (!ok)
		failures++;
	return ok;
}

/* Random watch events, and every number at its longest, pack as protobuf-c's. */
static void test_events(void)
{
	static char name[300], pr[300], cl[300], host[300], why[5000];
	Semd__WatchEvent ev;
	uint64_t (*num)(void);
	int round;

	printf("# %d random watch events\n", ROUNDS / 4);
	for (round = 0; round < ROUNDS / 4; round++) {
		num = round % 50 == 0 ? num_max : rnd_value;
		semd__watch_event__init(&ev);
		ev.watch = num();
		ev.name = rnd_event_string(name, sizeof name);
		ev.kind = (Semd__EventKind)(num() % 9);
		ev.time_ms = num();
		ev.n = (uint32_t)num();
		ev.permit_id = num();
		ev.token = num();
		ev.request_id = num();
		ev.principal = rnd_event_string(pr, sizeof pr);
		ev.client_name = rnd_event_string(cl, sizeof cl);
		ev.host = rnd_event_string(host, sizeof host);
		ev.pid = (uint32_t)num();
		ev.holders = (uint32_t)num();
		ev.waiters = (uint32_t)num();
		ev.available = (int64_t)num();	/* negative ones too */
		ev.limit = (uint32_t)num();
		ev.rate = (uint32_t)num();
		ev.rate_period_ms = (uint32_t)num();
		ev.burst = (uint32_t)num();
		ev.reason = rnd_event_string(why, rnd() % 2 ? sizeof why : 64);
		ev.max_waiters = (uint32_t)num();
		ev.revision = num();
		event_check(&ev, round);
		if (failures > 10)
			return;
	}
}

/*
 * core/strcopy.h against libc: every length to 40, the bytes random, with a
 * NUL at each place or none: the copy is the bytes (none written past
 * them), a NUL is found where memchr() finds one, and two strings are the
 * same where memcmp() says so (one byte changed at each place, or none).
 */
static void test_strcopy(void)
{
	uint8_t a[48], b[48], d[48];
	size_t n, at, i;
	bool nul, same;
	int round;

	printf("# core/strcopy.h against memcpy, memchr and memcmp\n");
	for (round = 0; round < 20; round++)
		for (n = 0; n <= 40; n++)
			for (at = 0; at <= n; at++) {
				for (i = 0; i < sizeof a; i++)
					a[i] = (uint8_t)(rnd() % 255 + 1);
				if (at < n && round % 2 == 0)
					a[at] = 0;
				memset(d, 0xee, sizeof d);
				nul = !strcopy(d, a, n, false);
				if (nul != (memchr(a, 0, n) != NULL) ||
				    (!nul && memcmp(d, a, n) != 0) || d[n] != 0xee) {
					failures++;
					printf("not ok - strcopy of %zu bytes, NUL at %zu\n", n, at);
				}
				memcpy(b, a, sizeof b);
				if (at < n && round % 4 < 2)
					b[at] ^= (uint8_t)(1u << (rnd() % 8));
				same = strcopy_same(a, b, n);
				if (same != (memcmp(a, b, n) == 0)) {
					failures++;
					printf("not ok - strcopy_same of %zu bytes, changed at %zu\n",
					    n, at);
				}
				if (failures > 10)
					return;
			}
}

/*
 * A watch event's reply framed from the event packed once without its
 * watch field (fastpb_notice_pack(), the daemon's notice path) is the pack
 * of the whole reply, within FASTPB_NOTICE_EXTRA more bytes than the event:
 * random events, watch ids at every varint length, event sizes around the
 * lengths whose varint gets a byte longer.
 */
static void test_notices(void)
{
	static char name[300], who[300], reason[20000];
	static uint8_t ev[32768], a[32768], b[32768];
	Semd__WatchEvent e;
	Semd__Reply r;
	size_t la, le, lb;
	uint64_t watch;
	int round;

	printf("# %d random watch events\n", ROUNDS / 10);
	for (round = 0; round < ROUNDS / 10 && failures <= 10; round++) {
		semd__watch_event__init(&e);
		rnd_string(name, sizeof name - 1);
		rnd_string(who, sizeof who - 1);
		rnd_string(reason, round % 7 == 0 ? sizeof reason - 1 : 200);
		e.name = name;
		e.principal = who;
		e.reason = reason;
		e.kind = (Semd__EventKind)(rnd() % 8);
		e.time_ms = rnd_value();
		e.n = (uint32_t)rnd_value();
		e.permit_id = rnd_value();
		e.token = rnd_value();
		e.revision = rnd_value();
		e.available = (int64_t)rnd_value();
		e.max_waiters = (uint32_t)rnd_value();
		le = semd__watch_event__pack(&e, ev);
		watch = round % 5 == 0 ? UINT64_MAX >> (rnd() % 64) : rnd_value();
		if (watch == 0)
			watch = 1;
		e.watch = watch;
		semd__reply__init(&r);
		r.body_case = SEMD__REPLY__BODY_WATCH_EVENT;
		r.watch_event = &e;
		la = semd__reply__pack(&r, a);
		lb = fastpb_notice_pack(watch, ev, le, b);
		if (la != lb || memcmp(a, b, la) != 0 ||
		    lb > le + FASTPB_NOTICE_EXTRA) {
			failures++;
			printf("not ok - watch event %d (watch %" PRIu64 ", %zu "
			    "bytes): %zu bytes, protobuf-c %zu, or other bytes\n",
			    round, watch, le, lb, la);
		}
	}
}

int main(void)
{
	rng = 0x9e3779b97f4a7c15ULL;
	test_requests();
	test_replies();
	test_reply_bound_edges();
	test_events();
	test_strcopy();
	test_notices();
	return check_done("fastpb");
}
