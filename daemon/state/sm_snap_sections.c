/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_snap_sections.c - the sections a snapshot ends with
 * (version 3, sm-int.h: struct snap_section), one row a part of the state
 * that came after the fixed layout, in tag order. Tags are never reused.
 */
#include "daemon/state/sm-int.h"

#include <stdio.h>

/*
 * "ops" (20): the counters of the op cases after the fixed layout's
 * (SNAP_V2_NOPS on): a u32 count, then for each op its requests and its
 * replies by code (SM_NCODES), all u64. A snapshot with more of them than
 * this semd has ops came from a newer one: refused.
 */
static bool snap_ops_write(struct sm_batch *b, const struct sm *sm)
{
	size_t i, j;

	bytes_int(b, SM_NOPS - SNAP_V2_NOPS, 4);
	for (i = SNAP_V2_NOPS; i < SM_NOPS; i++) {
		bytes_int(b, sm->ctr.ops[i], 8);
		for (j = 0; j < SM_NCODES; j++)
			bytes_int(b, sm->ctr.replies[i][j], 8);
	}
	return true;
}

static bool snap_ops_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen)
{
	uint64_t n = rbuf_int(r, 4);
	size_t i, j;

	if (n > SM_NOPS - SNAP_V2_NOPS) {
		snprintf(err, errlen, "counters of %llu ops after the first %d: "
		    "more than this semd has", (unsigned long long)n,
		    SNAP_V2_NOPS);
		return false;
	}
	for (i = SNAP_V2_NOPS; i < SNAP_V2_NOPS + n; i++) {
		sm->ctr.ops[i] = rbuf_int(r, 8);
		for (j = 0; j < SM_NCODES; j++)
			sm->ctr.replies[i][j] = rbuf_int(r, 8);
	}
	return !r->bad;
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
	{ 20, "ops", snap_ops_write, snap_ops_read },
	{ 21, "watch history", snap_evring_write, snap_evring_read },
	{ 0, NULL, NULL, NULL },
};
