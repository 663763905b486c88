/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_health.c - readiness (/readyz) as a table: in memory,
 * a log of one voter, and a cluster node as leader, leader not serving yet,
 * follower in step, follower behind by ready-max-lag and by one more,
 * installing a snapshot, knowing no leader or not its address, stopping;
 * refusing writes while its disk takes none (issue 35).
 */
#include <stdio.h>
#include <string.h>

#include "daemon/health.h"
#include "tests/common/check.h"

/* One case: the verdict and the start of the reason. */
static void expect_ready(const struct health_view *v, bool want,
    const char *why_starts)
{
	char why[256];
	bool got = health_ready(v, why, sizeof why);

	if (got != want)
		FAIL("ready: want %d, got %d (%s)", want, got, why);
	if (strncmp(why, why_starts, strlen(why_starts)) != 0)
		FAIL("reason: want \"%s...\", got \"%s\"", why_starts, why);
	if (strncmp(why, want ? "ready: " : "not ready: ",
	    want ? 7 : 11) != 0)
		FAIL("reason does not say it: \"%s\"", why);
}

/* A follower of node 1 in step with it at entry 500. */
static struct health_view follower(void)
{
	struct health_view v;

	memset(&v, 0, sizeof v);
	v.durable = true;
	v.max_lag = 100;
	v.log.cluster = true;
	v.log.node_id = 2;
	v.log.leader_id = 1;
	v.log.leader_addr = true;
	v.log.term = 3;
	v.log.applied = 500;
	v.log.commit = 500;
	return v;
}

/*
 * A follower that applied up to entry 500 and heard commit index commit
 * from its leader, with ready-max-lag max_lag.
 */
static const struct {
	uint64_t	commit;
	uint32_t	max_lag;
	bool		want;
	const char	*why;
} lags[] = {
	{ 500, 100, true, "ready: follower of node 1, 0 entries behind" },
	{ 600, 100, true, "ready: follower of node 1, 100 entries behind" },
	{ 601, 100, false, "not ready: 101 entries behind the leader (node 1; ready-max-lag 100)" },
	{ 500, 0, true, "ready: follower of node 1, 0 entries behind" },
	/* The commit index heard may trail what was applied: no lag then. */
	{ 400, 0, true, "ready: follower of node 1, 0 entries behind" },
};

int main(void)
{
	struct health_view v;
	size_t i;

	TEST_START("in memory: ready once it answers, not while stopping");
	memset(&v, 0, sizeof v);
	expect_ready(&v, true, "ready: in memory");
	v.stopping = true;
	expect_ready(&v, false, "not ready: stopping");

	TEST_START("one voter: ready while its log serves");
	memset(&v, 0, sizeof v);
	v.durable = true;
	v.log.serving = true;
	v.log.leader = true;
	v.log.applied = 42;
	expect_ready(&v, true, "ready: log loaded, applied up to entry 42");
	v.log.disk = SEMLOG_DISK_FULL;
	expect_ready(&v, true, "ready: log loaded");	/* a write waits: no more */
	v.log.refusing = true;
	expect_ready(&v, false, "not ready: writes refused: the data directory's disk is full");
	v.log.disk = SEMLOG_DISK_STALLED;
	expect_ready(&v, false, "not ready: writes refused: the data directory's disk takes no writes");
	v.log.disk = SEMLOG_DISK_OK;
	v.log.refusing = false;
	v.log.serving = false;
	expect_ready(&v, false, "not ready: the log is not serving");

	TEST_START("cluster: the leader once it serves");
	v = follower();
	v.log.node_id = 1;
	v.log.leader = true;
	expect_ready(&v, false, "not ready: elected leader, applying the log");
	v.log.serving = true;
	expect_ready(&v, true, "ready: leader (node 1, term 3)");
	/* its own disk full, the others commit: it serves writes still */
	v.log.disk = SEMLOG_DISK_FULL;
	expect_ready(&v, true, "ready: leader (node 1, term 3)");
	v.log.refusing = true;
	expect_ready(&v, false, "not ready: writes refused: the data directory's disk is full");
	v.log.refusing = false;
	v.stopping = true;
	expect_ready(&v, false, "not ready: stopping");

	TEST_START("cluster: a follower with a full disk is ready while in step");
	v = follower();
	v.log.disk = SEMLOG_DISK_FULL;
	expect_ready(&v, true, "ready: follower of node 1, 0 entries behind");

	TEST_START("cluster: a follower within ready-max-lag entries");
	for (i = 0; i < sizeof lags / sizeof lags[0]; i++) {
		v = follower();
		v.max_lag = lags[i].max_lag;
		v.log.commit = lags[i].commit;
		expect_ready(&v, lags[i].want, lags[i].why);
	}

	TEST_START("cluster: installing a snapshot");
	v = follower();
	v.log.snapshot = 9000;
	v.log.commit = 9000;
	expect_ready(&v, false, "not ready: installing a snapshot from the leader (up to entry 9000, applied 500)");
	v.log.applied = 9000;
	expect_ready(&v, true, "ready: follower of node 1, 0 entries behind");

	TEST_START("cluster: no leader known, or not its address");
	v = follower();
	v.log.leader_id = 0;
	v.log.leader_addr = false;
	expect_ready(&v, false, "not ready: no leader known");
	v.log.leader_id = 3;
	expect_ready(&v, false, "not ready: leader node 3 known, its address not yet");

	return check_done("health");
}
