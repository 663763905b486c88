/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli/set.c - the commands that change a name in use: set-limit,
 * set-queue, set-rate.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/semctl.h"

/* set-limit NAME N */
int cmd_set_limit(struct cmd_args *a)
{
	struct semc *c;
	uint32_t limit;
	int r;

	limit = parse_count(a->argv[1], "set-limit: N", 1, COUNT_MAX);
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	if ((r = call_end(c, semc_set_limit(c, a->argv[0], limit), "set-limit")) != 0)
		return r;
	if (g.json)
		json_ok(a->argv[0], "limit", limit);
	else
		printf("%s: limit %u\n", esc(a->argv[0]), limit);
	return 0;
}

/* set-queue NAME --max-waiters N */
int cmd_set_queue(struct cmd_args *a)
{
	struct semc_queue qp = { .max_waiters = a->max_waiters };
	struct semc *c;
	int r;

	if (!a->given[OPT_MAX_WAITERS])
		usage_forms("set-queue: --max-waiters N is required");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	if ((r = call_end(c, semc_set_queue(c, a->argv[0], &qp), "set-queue")) != 0)
		return r;
	if (g.json)
		json_ok(a->argv[0], "max_waiters", qp.max_waiters);
	else
		printf("%s: at most %u waiters%s\n", esc(a->argv[0]), qp.max_waiters,
		       qp.max_waiters == 0 ? " (no bound)" : "");
	return 0;
}

/* set-rate NAME R/UNIT|0 [--burst N] */
int cmd_set_rate(struct cmd_args *a)
{
	struct semc_rate rate = { 0 };
	struct semc *c;
	char rb[64];
	int r;

	if (strcmp(a->argv[1], "0") != 0 &&
	    semc_parse_rate(a->argv[1], &rate.rate, &rate.period_ms) != 0)
		usage_fail("set-rate: '%s' is not a rate (5000/h, 10/s, 3/min, 1/250ms, 0)",
			   a->argv[1]);
	if (rate.rate == 0 && a->given[OPT_BURST])
		usage_fail("set-rate: --burst with rate 0 (no bucket)");
	rate.burst = a->rate.burst;
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	if ((r = call_end(c, semc_set_rate(c, a->argv[0], &rate), "set-rate")) != 0)
		return r;
	if (rate.rate != 0 && rate.burst == 0)
		rate.burst = rate.rate;
	if (g.json) {
		printf("{\"ok\":true,\"name\":");
		json_str(a->argv[0]);
		printf(",\"rate\":%u,\"rate_period_ms\":%u,\"burst\":%u}\n", rate.rate,
		       rate.period_ms, rate.burst);
	} else if (rate.rate == 0) {
		printf("%s: no rate\n", esc(a->argv[0]));
	} else {
		printf("%s: rate %s, burst %u\n", esc(a->argv[0]),
		       rate_text(rate.rate, rate.period_ms, rb, sizeof rb), rate.burst);
	}
	return 0;
}
