/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/hist.h - log-linear latency histogram (HdrHistogram's layout).
 *
 * Values are nanoseconds. Below 2^HIST_SUB_BITS every value has its own
 * bucket; above, each power of two is cut into 2^(HIST_SUB_BITS-1) equal
 * buckets, so any value is known to within 1/64 (1.6 %). The buckets are
 * one fixed array: recording is an index computation and an increment, no
 * allocation, and histograms of several threads merge by addition.
 */
#ifndef SEMD_BENCH_HIST_H
#define SEMD_BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS	7
#define HIST_SUB	(1u << HIST_SUB_BITS)		/* 128 */
#define HIST_HALF	(HIST_SUB / 2)			/* 64 */
#define HIST_BUCKETS	((64 - HIST_SUB_BITS + 1) * HIST_HALF + HIST_HALF)

struct hist {
	uint64_t	count;
	uint64_t	min;
	uint64_t	max;
	double		sum;
	uint64_t	buckets[HIST_BUCKETS];
};

/* Empty h. */
void hist_init(struct hist *h);

/* Count one value. */
void hist_record(struct hist *h, uint64_t v);

/* Add every count of src to dst. */
void hist_merge(struct hist *dst, const struct hist *src);

/*
 * The value at quantile q (0..1): the highest value equivalent to the
 * bucket holding the ceil(q * count)-th smallest sample, clamped to the
 * exact max. 0 when empty.
 */
uint64_t hist_quantile(const struct hist *h, double q);

/* Mean of the recorded values, 0 when empty. */
double hist_mean(const struct hist *h);

/* Bucket index of v, and the lowest and highest value of bucket i. */
unsigned hist_index(uint64_t v);
uint64_t hist_lowest(unsigned i);
uint64_t hist_highest(unsigned i);

#endif
