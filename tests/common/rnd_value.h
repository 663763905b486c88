/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/common/rnd_value.h - a random field value for the encoder tests
 * (bench/test_bench.c, tests/daemon/test_fastpb.c): often 0, small, or of
 * any length up to the longest varint, from the test's one sequence.
 */
#ifndef SEMD_TESTS_COMMON_RND_VALUE_H
#define SEMD_TESTS_COMMON_RND_VALUE_H

#include <stdint.h>

#include "tests/common/rng.h"

/* A value that is often 0, small, or big. */
static inline uint64_t rnd_value(void)
{
	switch (rnd() % 5) {
	case 0:
		return 0;
	case 4:
		return UINT64_MAX;	/* the longest varint */
	case 1:
		return rnd() % 200;
	case 2:
		return rnd() >> (rnd() % 64);
	default:
		return rnd();
	}
}

#endif
