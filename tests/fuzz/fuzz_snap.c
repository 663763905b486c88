/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/fuzz/fuzz_snap.c - hostile snapshots for sm_restore.
 *
 * The input is the snapshot's bytes. sm_restore either refuses them
 * (NULL, having freed all it made) or returns a state that passes
 * sm_check and the checks of fuzz_sm.h: it snapshots and restores to the
 * same bytes, and a restart and the passing of every deadline leave
 * nothing behind, alike on it and on its restored copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_sm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size + 1);
	struct sm *sm;

	/* A copy of its own, so that reading past it is caught. */
	FUZZ_ASSERT(copy != NULL);
	if (size > 0)
		memcpy(copy, data, size);
	copy[size] = 0;		/* no byte of it unset (GCC's PGO build asks) */
	sm = fsm_restore(copy, size);
	free(copy);
	if (sm != NULL)
		fsm_finish(sm);
	return 0;
}
