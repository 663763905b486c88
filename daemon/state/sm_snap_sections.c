/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_snap_sections.c - the sections a snapshot ends with
 * (version 3, sm-int.h: struct snap_section), one row a part of the state
 * that came after the fixed layout, in tag order. Tags are never reused.
 */
#include "daemon/state/sm-int.h"

const struct snap_section snap_sections[] = {
	{ 30, "parent links", snap_families_write, snap_families_read },
	{ 0, NULL, NULL, NULL },
};
