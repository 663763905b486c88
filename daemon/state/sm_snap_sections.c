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

const struct snap_section snap_sections[] = {
	{ 20, "ops", snap_ops_write, snap_ops_read },
	{ 0, NULL, NULL, NULL },
};
