/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/fuzz/fuzz_entry.c - hostile log entries for sm_apply.
 *
 * The input is a list of entries, each a 2-byte little-endian length and
 * that many bytes (the last one takes what is left), applied in order to a
 * new state machine as the raft thread does: an entry that is not one is
 * refused with -EINVAL (its commands before the bad one stay applied), and
 * after every entry, refused or not, sm_check holds. sm_entry_check, what a
 * follower asks of a leader's entry before it stores it, refuses exactly
 * the entries sm_apply refuses (a SEED is the log's, not sm_apply's). Then the checks of
 * fuzz_sm.h: the state snapshots and restores to the same bytes, and a
 * restart and the passing of every deadline leave nothing behind, alike on
 * the machine and on its restored copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_sm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sm *sm = fsm_new();
	size_t off = 0, len;
	const uint8_t *snap;
	uint8_t *entry;
	char err[160];
	size_t snap_len;
	int applied, checked;

	FUZZ_ASSERT(sm != NULL);
	while (size - off >= 2) {
		len = (size_t)data[off] | (size_t)data[off + 1] << 8;
		off += 2;
		if (len > size - off)
			len = size - off;
		/* A copy of its own, so that reading past it is caught. */
		entry = malloc(len + 1);
		FUZZ_ASSERT(entry != NULL);
		if (len > 0)
			memcpy(entry, data + off, len);
		checked = sm_entry_check(entry, len, err, sizeof(err));
		applied = sm_apply(sm, entry, len, &fsm_hooks, err, sizeof(err));
		if (sm_entry_seed(entry, len, &snap, &snap_len) != 1)
			FUZZ_ASSERT(checked == applied);
		free(entry);
		off += len;
		fsm_check(sm);
	}
	fsm_finish(sm);
	return 0;
}
