/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/sm-bench.h - what the state machine's own benchmarks (sm-deadlock,
 * sm-handoff) share: a monotonic clock in ns, and a client of the state
 * machine with a session, opened directly (no daemon, no socket).
 */
#ifndef SEMD_SM_BENCH_H
#define SEMD_SM_BENCH_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "daemon/state/state.h"

/* Monotonic ns. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A client of principal uid:1 with a session, on conn id; prog names the
 * program in the message when it cannot be opened (then it exits). */
static inline struct sm_client *sm_bench_client(struct sm *sm, uint64_t id,
    const char *prog)
{
	static const uint8_t secret[SM_SECRET_LEN];
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Hello h = SEMD__HELLO__INIT;
	struct sm_client *c = sm_client_open(sm, id, (void *)(uintptr_t)id, "uid:1",
	    secret, 0, 1000);

	h.version = 1;
	h.client_name = "bench";
	h.host = "h";
	req.id = 1;
	req.op_case = SEMD__REQUEST__OP_HELLO;
	req.hello = &h;
	if (c == NULL || sm_request(sm, c, &req, NULL, 1000) != SM_OK) {
		fprintf(stderr, "%s: cannot open client %" PRIu64 "\n", prog, id);
		exit(1);
	}
	return c;
}

#endif
