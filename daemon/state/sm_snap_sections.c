/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_snap_sections.c - the sections a snapshot ends with
 * (version 3, sm-int.h: struct snap_section), one row a part of the state
 * that came after the fixed layout, in tag order. Tags are never reused.
 */
#include <stdio.h>
#include <stdlib.h>

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
 * length (u32), bytes - the u16 length and name of its name's owner, then
 * the WatchEvent's protobuf bytes (the history holds them otherwise in
 * memory, sm_evrec.c: converted both ways here, so the section is what it
 * always was and loads in a semd of either kind).
 */
static bool snap_evring_write(struct sm_batch *b, const struct sm *sm)
{
	struct evring_it it;
	const uint8_t *p;
	uint8_t *buf;
	uint64_t rev;
	uint32_t len;
	size_t n;

	bytes_int(b, sm->ev_rev, 8);
	bytes_int(b, sm->evring.size, 4);
	bytes_int(b, evring_count(&sm->evring), 4);
	if (evring_count(&sm->evring) == 0)
		return true;
	/* As protobuf a record takes at most its fixed part's worth more. */
	if ((buf = malloc(2 * EVREC_MAX)) == NULL)
		return false;
	evring_first(&sm->evring, &it);
	while (evring_next(&sm->evring, &it, &rev, &p, &len)) {
		if ((n = evrec_to_pb(p, len, rev, buf, 2 * EVREC_MAX)) == 0) {
			free(buf);
			return false;
		}
		bytes_int(b, rev, 8);
		bytes_int(b, n, 4);
		bytes_put(b, buf, n);
	}
	free(buf);
	return true;
}

/*
 * Each record converted (sm_evrec.c) and kept as watch_keep() keeps one:
 * the records fit the size as protobuf, as the history holds them they may
 * not, and the oldest then go; the last is the last event.
 */
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
		    (i > 0 && rev != last + 1) || rev > sm->ev_rev || size == 0 ||
		    len > size / 2 || !evrec_from_pb(sm, rev, p, len)) {
			snprintf(err, errlen, "watch history record %u", i);
			return false;
		}
		last = rev;
	}
	if (n > 0 && last != sm->ev_rev) {
		snprintf(err, errlen, "watch history not whole");
		return false;
	}
	return true;
}

/* 42 instance: u64, the history the revisions count (HelloReply.instance). */
static bool instance_write(struct sm_batch *b, const struct sm *sm)
{
	bytes_int(b, sm->instance, 8);
	return !b->failed;
}

static bool instance_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen)
{
	sm->instance = rbuf_int(r, 8);
	if (r->bad)
		snprintf(err, errlen, "instance");
	return !r->bad;
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
	{ 40, "histograms", hists_snap_write, hists_snap_read },
	{ 41, "idempotency keys", idem_snap_write, idem_snap_read },
	{ 42, "instance", instance_write, instance_read },
	{ 0, NULL, NULL, NULL },
};
