/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_metrics.c - the figures the metrics endpoint renders,
 * taken from the state with fake time: wait and hold histograms (bucket
 * boundaries, sums, the overflow bucket), replies by the op they answer
 * (a deferred grant or timeout counts as a down's), and sm_sem_each().
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "daemon/state/state.h"
#include "tests/common/check.h"
#include "tests/common/req.h"

static int replies;

/* The sink: only counts (the counters are what is tested). */
static void sink(void *ctx, void *conn, const Semd__Reply *r)
{
	(void)ctx;
	(void)conn;
	(void)r;
	replies++;
}

/* Send a Hello. */
static void hello(struct sm *sm, struct sm_client *c, uint64_t now)
{
	struct req q;

	sm_request(sm, c, req_make(&q, 1, SEMD__REQUEST__OP_HELLO, "version=%d",
	    SM_PROTO_VERSION), NULL, now);
}

/* Send a Down (timeout_ms < 0: wait forever). */
static void down(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, int64_t timeout_ms, uint64_t now)
{
	struct req q;

	sm_request(sm, c, req_make(&q, id, SEMD__REQUEST__OP_DOWN,
	    "name=%s timeout_ms=%" PRId64, name, timeout_ms), NULL, now);
}

/* Send an Up of one permit. */
static void up(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint64_t now)
{
	struct req q;

	sm_request(sm, c, req_make(&q, id, SEMD__REQUEST__OP_UP, "name=%s", name),
	    NULL, now);
}

struct seen {
	int		n;
	uint32_t	limit, holders, waiters;
	long		available;
};

/* sm_sem_each() callback: remember the gauges of "a". */
static void each_cb(void *arg, const struct sm_sem_gauges *g)
{
	struct seen *s = arg;

	s->n++;
	if (g->len == 1 && memcmp(g->name, "a", 1) == 0) {
		s->limit = g->limit;
		s->holders = g->holders;
		s->waiters = g->waiters;
		s->available = g->available;
	}
}

int main(void)
{
	static const uint8_t secret[SM_SECRET_LEN];
	struct sm_out out = { sink, NULL, NULL, NULL, NULL, NULL };
	struct sm_config cfg;
	struct sm_counters k;
	struct sm_client *c1, *c2;
	struct seen seen = { 0, 0, 0, 0, 0 };
	struct sm *sm;
	uint64_t t = 1000;
	int i;

	sm_config_defaults(&cfg);
	sm = sm_new(&cfg, &out, t);
	c1 = sm_client_open(sm, (uint64_t)1, (void *)1, "uid:1", secret, 0, t);
	c2 = sm_client_open(sm, (uint64_t)2, (void *)2, "uid:2", secret, 0, t);
	hello(sm, c1, t);
	hello(sm, c2, t);

	printf("# an immediate grant waits 0 ms; a queued one 4 ms\n");
	down(sm, c1, 2, "a", -1, t);		/* granted at once */
	down(sm, c2, 2, "a", -1, t);		/* queued */
	sm_sem_each(sm, each_cb, &seen);
	EXPECT_U64(1, seen.n);
	EXPECT_U64(1, seen.limit);
	EXPECT_U64(1, seen.holders);
	EXPECT_U64(1, seen.waiters);
	EXPECT_U64(0, seen.available);
	up(sm, c1, 3, "a", t + 4);		/* c2 granted after 4 ms */
	sm_get_counters(sm, &k);
	EXPECT_U64(2, k.wait.count);
	EXPECT_U64(4, k.wait.sum_ms);
	EXPECT_U64(1, k.wait.bucket[0]);	/* <= 1 ms */
	EXPECT_U64(1, k.wait.bucket[2]);	/* (2, 4] ms */
	EXPECT_U64(1, k.hold.count);		/* c1 held 4 ms */
	EXPECT_U64(1, k.hold.bucket[2]);

	printf("# a deferred grant counts as a down's reply, not the up's\n");
	EXPECT_U64(2, k.replies[SEMD__REQUEST__OP_DOWN][SEMD__CODE__OK]);
	EXPECT_U64(1, k.replies[SEMD__REQUEST__OP_UP][SEMD__CODE__OK]);
	EXPECT_U64(2, k.replies[SEMD__REQUEST__OP_HELLO][SEMD__CODE__OK]);

	printf("# a hold of 5 ms is in (4, 8]; one of 2^21 ms overflows\n");
	up(sm, c2, 3, "a", t + 9);
	down(sm, c1, 4, "a", -1, t + 9);
	up(sm, c1, 5, "a", t + 9 + (1u << 21));
	sm_get_counters(sm, &k);
	EXPECT_U64(3, k.hold.count);
	EXPECT_U64(1, k.hold.bucket[3]);
	EXPECT_U64(1, k.hold.bucket[SM_HIST_BUCKETS - 1]);
	EXPECT_U64(4 + 5 + (1u << 21), k.hold.sum_ms);
	for (i = 0; i < SM_HIST_BUCKETS; i++)
		if (i != 2 && i != 3 && i != SM_HIST_BUCKETS - 1)
			EXPECT_U64(0, k.hold.bucket[i]);

	printf("# a timeout from the clock is a down's TIMEOUT\n");
	t += 10 + (1u << 21);
	down(sm, c1, 6, "a", -1, t);		/* held */
	down(sm, c2, 6, "a", 10, t);		/* times out */
	sm_tick(sm, t + 10);
	sm_get_counters(sm, &k);
	EXPECT_U64(1, k.timeouts);
	EXPECT_U64(1, k.replies[SEMD__REQUEST__OP_DOWN][SEMD__CODE__TIMEOUT]);
	EXPECT_U64(4, k.wait.count);		/* 4 grants; a timeout is no wait */

	printf("# a frame the I/O layer could not decode answers no op\n");
	sm_protocol_error(sm, c2, "bad frame");
	sm_get_counters(sm, &k);
	EXPECT_U64(1, k.replies[0][SEMD__CODE__PROTOCOL_ERROR]);

	printf("# a disconnect cancels a waiter\n");
	down(sm, c2, 7, "a", -1, t + 20);
	sm_client_close(sm, c2, t + 20);
	sm_get_counters(sm, &k);
	EXPECT_U64(1, k.cancels_disconnect);
	EXPECT_U64(0, k.waiters);

	sm_client_close(sm, c1, t + 30);
	sm_free(sm);
	printf("%s (%d replies seen)\n", failures ? "FAILED" : "all passed",
	    replies);
	return failures ? 1 : 0;
}
