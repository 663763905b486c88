/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/health.c - readiness. In memory a semd that answers is ready;
 * with a log of one voter, once the log is loaded (the daemon answers
 * nothing before); in a cluster, the leader once it serves, or a follower
 * that knows the leader and its address (it redirects clients there) and
 * has applied all but at most ready-max-lag of the entries the leader has
 * committed. A node installing a snapshot, or knowing no leader (an
 * election, or no quorum on its side), is not ready; neither is one that
 * is stopping, nor one that refuses writes because its disk takes none
 * (semlog_refusal: it answers reads, but not what clients come for).
 */
#include <inttypes.h>
#include <stdio.h>

#include "daemon/health.h"

/* Is this node ready for clients? If not, why (health.h). */
bool health_ready(const struct health_view *v, char *why, size_t len)
{
	const struct semlog_health *h = &v->log;
	uint64_t lag;

	if (v->stopping) {
		snprintf(why, len, "not ready: stopping");
		return false;
	}
	if (!v->durable) {
		snprintf(why, len, "ready: in memory");
		return true;
	}
	if (h->refusing) {
		snprintf(why, len, "not ready: writes refused: the data "
		    "directory's disk %s", h->disk == SEMLOG_DISK_FULL ?
		    "is full" : "takes no writes");
		return false;
	}
	if (!h->cluster) {
		if (!h->serving) {
			snprintf(why, len, "not ready: the log is not serving");
			return false;
		}
		snprintf(why, len, "ready: log loaded, applied up to entry %" PRIu64,
		    h->applied);
		return true;
	}
	if (h->serving) {
		snprintf(why, len, "ready: leader (node %" PRIu64 ", term %" PRIu64 ")",
		    h->node_id, h->term);
		return true;
	}
	if (h->leader) {
		snprintf(why, len, "not ready: elected leader, applying the log "
		    "before serving (node %" PRIu64 ", term %" PRIu64 ")",
		    h->node_id, h->term);
		return false;
	}
	if (h->snapshot > h->applied) {
		snprintf(why, len, "not ready: installing a snapshot from the "
		    "leader (up to entry %" PRIu64 ", applied %" PRIu64 ")",
		    h->snapshot, h->applied);
		return false;
	}
	if (h->leader_id == 0) {
		snprintf(why, len, "not ready: no leader known (an election under "
		    "way, or no quorum)");
		return false;
	}
	if (!h->leader_addr) {
		snprintf(why, len, "not ready: leader node %" PRIu64 " known, its "
		    "address not yet (catching up)", h->leader_id);
		return false;
	}
	lag = h->commit > h->applied ? h->commit - h->applied : 0;
	if (lag > v->max_lag) {
		snprintf(why, len, "not ready: %" PRIu64 " entries behind the "
		    "leader (node %" PRIu64 "; ready-max-lag %" PRIu32 ")", lag,
		    h->leader_id, v->max_lag);
		return false;
	}
	snprintf(why, len, "ready: follower of node %" PRIu64 ", %" PRIu64
	    " entries behind", h->leader_id, lag);
	return true;
}
