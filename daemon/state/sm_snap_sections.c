/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_snap_sections.c - the sections a snapshot ends with
 * (version 3, sm-int.h: struct snap_section), one row a part of the state
 * that came after the fixed layout, in tag order. Tags are never reused.
 */
#include "daemon/state/sm-int.h"

const struct snap_section snap_sections[] = {
	{ 10, "counters of new ops and codes", counters_snap_write,
	    counters_snap_read },
	{ 11, "queue policies", queue_snap_write, queue_snap_read },
	{ 12, "priorities", prio_snap_write, prio_snap_read },
	{ 13, "fair shares", share_snap_write, shares_section_read },
	{ 0, NULL, NULL, NULL },
};
