/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/sm-deadlock.c - what the deadlock search costs the state machine,
 * with N waiters (default 100,000; -n): driven directly, no network.
 *
 *   1. N sessions wait for one name held by another; a session that holds
 *      a name starts waiting for a second one (the usual case: the search
 *      looks at the few holders of what it waits for).
 *   2. The worst case: a chain of N sessions, each holding a name and
 *      waiting for the next one's; the last one's down closes the cycle,
 *      and the search walks all N.
 * Prints the time of the searched down, of the downs that built the chain
 * (each one searched too), and the holds the searches looked at.
 *
 * Usage: sm-deadlock [-n N]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/state/state.h"
#include "bench/sm-bench.h"

static int last_code = -1;

/* The reply sink: keep the code of the last reply. */
static void sink(void *ctx, void *conn, const Semd__Reply *r)
{
	(void)ctx;
	(void)conn;
	if (r->id != 0)
		last_code = (int)r->code;
}

/* A client with a session. */
static struct sm_client *client(struct sm *sm, uint64_t id)
{
	return sm_bench_client(sm, id, "sm-deadlock");
}

/* A down of name (waiting for ever); the reply's code, -1 if none yet. */
static int down(struct sm *sm, struct sm_client *c, uint64_t id, const char *name)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Down d = SEMD__DOWN__INIT;

	d.name = (char *)name;
	d.n = 1;
	d.timeout_ms = -1;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_DOWN;
	req.down = &d;
	last_code = -1;
	sm_request(sm, c, &req, NULL, 1000);
	return last_code;
}

/* The value of counter k now. */
static uint64_t counter(struct sm *sm, int which)
{
	struct sm_counters k;

	sm_get_counters(sm, &k);
	return which == 0 ? k.deadlock_steps : which == 1 ? k.deadlock_checks :
	    k.deadlocks;
}

int main(int argc, char **argv)
{
	struct sm_config cfg;
	struct sm_out out = { sink, NULL, NULL, NULL, NULL, NULL };
	struct sm_client **cs;
	struct sm *sm;
	char name[32], next[32];
	uint64_t t0, t1, steps, n = 100000, i;
	int c, code;

	while ((c = getopt(argc, argv, "n:")) != -1) {
		if (c != 'n')
			return 2;
		n = strtoull(optarg, NULL, 10);
	}
	if (n < 2)
		return 2;
	sm_config_defaults(&cfg);
	cfg.max_sessions = (uint32_t)n + 10;
	cfg.max_semaphores = (uint32_t)n + 10;
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
	if ((cs = calloc(n + 2, sizeof *cs)) == NULL)
		return 1;

	/* 1. N waiters on one name; a holder starts waiting elsewhere. */
	sm = sm_new(&cfg, &out, 1000);
	cs[0] = client(sm, 1);
	down(sm, cs[0], 2, "busy");			/* held */
	for (i = 1; i <= n; i++) {
		cs[i] = client(sm, i + 1);
		down(sm, cs[i], 2, "busy");		/* N waiters */
	}
	cs[n + 1] = client(sm, n + 2);
	down(sm, cs[n + 1], 2, "other");		/* holds other */
	steps = counter(sm, 0);
	t0 = now_ns();
	code = down(sm, cs[n + 1], 3, "busy");	/* waits: searched */
	t1 = now_ns();
	printf("%" PRIu64 " waiters on one name, a holder starts waiting on it: "
	    "%.1f us, %" PRIu64 " holds looked at, %s\n", n, (t1 - t0) / 1e3,
	    counter(sm, 0) - steps, code == -1 ? "queued" : "answered");
	sm_free(sm);

	/* 2. A chain of N sessions; the last down closes it. */
	sm = sm_new(&cfg, &out, 1000);
	for (i = 0; i < n; i++) {
		cs[i] = client(sm, i + 1);
		snprintf(name, sizeof name, "n%" PRIu64, i);
		down(sm, cs[i], 2, name);
	}
	steps = counter(sm, 0);
	t0 = now_ns();
	for (i = 0; i + 1 < n; i++) {
		snprintf(next, sizeof next, "n%" PRIu64, i + 1);
		down(sm, cs[i], 3, next);		/* searched, no cycle yet */
	}
	t1 = now_ns();
	printf("a chain of %" PRIu64 " sessions built: %.2f us a down (searched), "
	    "%.1f holds looked at each\n", n, (t1 - t0) / 1e3 / (double)(n - 1),
	    (double)(counter(sm, 0) - steps) / (double)(n - 1));
	steps = counter(sm, 0);
	t0 = now_ns();
	code = down(sm, cs[n - 1], 3, "n0");		/* closes the cycle */
	t1 = now_ns();
	printf("the down that closes it: %.1f us (%s), %" PRIu64 " holds looked at\n",
	    (t1 - t0) / 1e3, code == SEMD__CODE__DEADLOCK ? "DEADLOCK" : "not found",
	    counter(sm, 0) - steps);
	sm_free(sm);
	free(cs);
	return code == SEMD__CODE__DEADLOCK ? 0 : 1;
}
