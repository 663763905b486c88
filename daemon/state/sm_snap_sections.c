/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_snap_sections.c - the sections a snapshot ends with
 * (version 3, sm-int.h: struct snap_section), one row a part of the state
 * that came after the fixed layout, in tag order. Tags are never reused.
 */
#include <stdio.h>

#include "daemon/state/sm-int.h"

/*
 * 1 leases: u8, whether sessions' leases are the leader's, and u32, the
 * least grace a new leader gives them (sm_batch_leases).
 */
static bool leases_write(struct sm_batch *b, const struct sm *sm)
{
	bytes_int(b, sm->leader_leases ? 1 : 0, 1);
	bytes_int(b, sm->lease_floor_ms, 4);
	return !b->failed;
}

static bool leases_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen)
{
	uint64_t v = rbuf_int(r, 1);
	uint32_t floor_ms = (uint32_t)rbuf_int(r, 4);

	if (r->bad || v > 1) {
		snprintf(err, errlen, "leases: %llu is no flag",
		    (unsigned long long)v);
		return false;
	}
	/* The sessions' timers were written unarmed: nothing to disarm. */
	sm->leader_leases = v == 1;
	sm->lease_floor_ms = floor_ms;
	return true;
}

/*
 * "watch history" (21): the last event's revision (u64), the history's
 * size (u32), its records (u32), then each oldest first: revision (u64),
 * length (u32), bytes (sm_evring.c, sm_watch.c).
 */
static bool snap_evring_write(struct sm_batch *b, const struct sm *sm)
{
	struct evring_it it;
	const uint8_t *p;
	uint64_t rev;
	uint32_t len;

	bytes_int(b, sm->ev_rev, 8);
	bytes_int(b, sm->evring.size, 4);
	bytes_int(b, sm->evring.n, 4);
	evring_first(&sm->evring, &it);
	while (evring_next(&sm->evring, &it, &rev, &p, &len)) {
		bytes_int(b, rev, 8);
		bytes_int(b, len, 4);
		bytes_put(b, p, len);
	}
	return true;
}

static bool snap_evring_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen)
{
	uint64_t rev, last = 0;
	uint32_t size, n, len, i;
	const uint8_t *p;

	sm->ev_rev = rbuf_int(r, 8);
	size = (uint32_t)rbuf_int(r, 4);
	n = (uint32_t)rbuf_int(r, 4);
	if (r->bad || size > SM_WATCH_HISTORY_MAX) {
		snprintf(err, errlen, "watch history of %u bytes", size);
		return false;
	}
	evring_resize(&sm->evring, size);
	sm->cfg.watch_history = size;
	for (i = 0; i < n; i++) {
		rev = rbuf_int(r, 8);
		len = (uint32_t)rbuf_int(r, 4);
		if (r->bad || (p = rbuf_take(r, len)) == NULL ||
		    (i > 0 && rev != last + 1) || rev > sm->ev_rev ||
		    !evring_push(&sm->evring, rev, p, len)) {
			snprintf(err, errlen, "watch history record %u", i);
			return false;
		}
		last = rev;
	}
	if (n > 0 && (sm->evring.n != n || last != sm->ev_rev)) {
		snprintf(err, errlen, "watch history not whole");
		return false;
	}
	return true;
}

const struct snap_section snap_sections[] = {
	{ 1, "leases", leases_write, leases_read },
	{ 10, "counters of new ops and codes", counters_snap_write,
	    counters_snap_read },
	{ 11, "queue policies", queue_snap_write, queue_snap_read },
	{ 12, "priorities", prio_snap_write, prio_snap_read },
	{ 13, "fair shares", share_snap_write, shares_section_read },
	{ 21, "watch history", snap_evring_write, snap_evring_read },
	{ 30, "parent links", snap_families_write, snap_families_read },
	{ 0, NULL, NULL, NULL },
};
