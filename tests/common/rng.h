/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/common/rng.h - the tests' reproducible randomness: xorshift64*, one
 * state per sequence (seed it non-zero), so a failure replays exactly from
 * the seed it printed.
 */
#ifndef SEMD_TESTS_COMMON_RNG_H
#define SEMD_TESTS_COMMON_RNG_H

#include <stdint.h>

/* The next number of the sequence in *s. */
static inline uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/*
 * The test's one sequence, for rnd() and rnd_below(): rng, one per file; a
 * program of several files that must draw from one sequence names its own
 * (extern) as RNG_STATE before including this.
 */
#ifndef RNG_STATE
static uint64_t rng;
#define RNG_STATE rng
#endif

/* The next number of the test's sequence. */
static inline uint64_t rnd(void)
{
	return rng_next(&RNG_STATE);
}

/* A number of the test's sequence in [0, n). */
static inline uint64_t rnd_below(uint64_t n)
{
	return rnd() % n;
}

#endif
