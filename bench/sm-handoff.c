/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/sm-handoff.c - what queueing a down and a hand-off cost the state
 * machine with N waiters on one name (default 10,000; -n), driven
 * directly, no network, in three lines:
 *   plain       every down of the default class (FIFO: each goes at the
 *               tail);
 *   priorities  each down of a class from -8 to 7 in turn (each walks
 *               from the tail past the lower classes that came before);
 *   shares      a name with fair shares by key, the downs of 4 groups of
 *               weights 1 to 4 in turn (each placed by its group's tag).
 * A hand-off is an up by the holder that grants the first in line, who
 * then holds and gives back next. Prints the mean time of a queued down
 * and of a hand-off, each over all N.
 *
 * Usage: sm-handoff [-n N]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/state/state.h"
#include "bench/sm-bench.h"

static uintptr_t granted;	/* the conn of the last grant */
static uint64_t grants;

/* The reply sink: note who was granted. */
static void sink(void *ctx, void *conn, const Semd__Reply *r)
{
	(void)ctx;
	if (r->id != 0 && r->body_case == SEMD__REPLY__BODY_GRANT) {
		granted = (uintptr_t)conn;
		grants++;
	}
}

/* A client with a session. */
static struct sm_client *client(struct sm *sm, uint64_t id)
{
	return sm_bench_client(sm, id, "sm-handoff");
}

/* A down of "q" (waiting for ever) with a priority or a group. */
static void down(struct sm *sm, struct sm_client *c, int prio, const char *group)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Down d = SEMD__DOWN__INIT;

	d.name = (char *)"q";
	d.n = 1;
	d.timeout_ms = -1;
	d.priority = prio;
	d.group = (char *)group;
	req.id = 2;
	req.op_case = SEMD__REQUEST__OP_DOWN;
	req.down = &d;
	sm_request(sm, c, &req, NULL, 1000);
}

/* An up of "q". */
static void up(struct sm *sm, struct sm_client *c)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Up u = SEMD__UP__INIT;

	u.name = (char *)"q";
	u.n = 1;
	req.id = 3;
	req.op_case = SEMD__REQUEST__OP_UP;
	req.up = &u;
	sm_request(sm, c, &req, NULL, 1000);
}

/* One line: queue n waiters of the kind, then n hand-offs. */
static int run(const char *what, int kind, uint64_t n)
{
	static const char *const groups[4] = { "g1", "g2", "g3", "g4" };
	static Semd__GroupWeight gw[4] = {
		{ PROTOBUF_C_MESSAGE_INIT(&semd__group_weight__descriptor), (char *)"g1", 1 },
		{ PROTOBUF_C_MESSAGE_INIT(&semd__group_weight__descriptor), (char *)"g2", 2 },
		{ PROTOBUF_C_MESSAGE_INIT(&semd__group_weight__descriptor), (char *)"g3", 3 },
		{ PROTOBUF_C_MESSAGE_INIT(&semd__group_weight__descriptor), (char *)"g4", 4 },
	};
	Semd__GroupWeight *gwp[4] = { &gw[0], &gw[1], &gw[2], &gw[3] };
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Create cr = SEMD__CREATE__INIT;
	struct sm_out out = { sink, NULL, NULL, NULL, NULL, NULL };
	struct sm_client **cs;
	struct sm_config cfg;
	struct sm *sm;
	uint64_t t0, t1, t2, i;

	sm_config_defaults(&cfg);
	cfg.max_sessions = (uint32_t)n + 10;
	cfg.max_waiters_per_session = 4;
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
	if ((cs = calloc(n + 1, sizeof *cs)) == NULL)
		return 1;
	if ((sm = sm_new(&cfg, &out, 1000)) == NULL) {
		free(cs);
		return 1;
	}
	cs[0] = client(sm, 1);
	cr.name = (char *)"q";
	cr.limit = 1;
	if (kind == 2) {
		cr.share = SEMD__SHARE_BY__SHARE_KEY;
		cr.n_weights = 4;
		cr.weights = gwp;
	}
	req.id = 9;
	req.op_case = SEMD__REQUEST__OP_CREATE;
	req.create = &cr;
	sm_request(sm, cs[0], &req, NULL, 1000);
	down(sm, cs[0], 0, kind == 2 ? groups[0] : NULL);	/* held */
	for (i = 1; i <= n; i++)
		cs[i] = client(sm, i + 1);
	t0 = now_ns();
	for (i = 1; i <= n; i++)
		down(sm, cs[i], kind == 1 ? (int)(i % 16) - 8 : 0,
		    kind == 2 ? groups[i % 4] : NULL);
	t1 = now_ns();
	grants = 0;
	granted = 1;
	for (i = 0; i < n; i++)
		up(sm, cs[granted - 1]);	/* the holder: grants the next */
	t2 = now_ns();
	printf("%-10s %" PRIu64 " waiters: %.2f us a queued down, %.2f us a hand-off (%"
	    PRIu64 " grants)\n", what, n, (t1 - t0) / 1e3 / (double)n,
	    (t2 - t1) / 1e3 / (double)n, grants);
	sm_free(sm);
	free(cs);
	return grants == n ? 0 : 1;
}

int main(int argc, char **argv)
{
	uint64_t n = 10000;
	int c, r = 0;

	while ((c = getopt(argc, argv, "n:")) != -1) {
		if (c != 'n')
			return 2;
		n = strtoull(optarg, NULL, 10);
	}
	if (n < 1 || n > 10000000)
		return 2;
	r |= run("plain", 0, n);
	r |= run("priorities", 1, n);
	r |= run("shares", 2, n);
	return r;
}
