/* SPDX-License-Identifier: BSD-2-Clause */
/* bench/hist.c - log-linear latency histogram. */
#include <string.h>

#include "bench/hist.h"

/* Empty h. */
void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

/* Bucket index of v: exact below HIST_SUB, then HIST_HALF per octave. */
unsigned hist_index(uint64_t v)
{
	unsigned shift;

	if (v < HIST_SUB)
		return (unsigned)v;
	shift = (unsigned)(63 - __builtin_clzll(v)) - (HIST_SUB_BITS - 1);
	return shift * HIST_HALF + (unsigned)(v >> shift);
}

/* Lowest value that falls in bucket i. */
uint64_t hist_lowest(unsigned i)
{
	unsigned shift;

	if (i < HIST_SUB)
		return i;
	shift = i / HIST_HALF - 1;
	return (uint64_t)(i - shift * HIST_HALF) << shift;
}

/* Highest value that falls in bucket i. */
uint64_t hist_highest(unsigned i)
{
	unsigned shift;

	if (i < HIST_SUB)
		return i;
	shift = i / HIST_HALF - 1;
	return hist_lowest(i) + ((uint64_t)1 << shift) - 1;
}

/* Count one value. */
void hist_record(struct hist *h, uint64_t v)
{
	h->buckets[hist_index(v)]++;
	h->count++;
	h->sum += (double)v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

/* Add every count of src to dst. */
void hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned i;

	if (src->count == 0)
		return;
	for (i = 0; i < HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

/* The value at quantile q, clamped to the recorded min and max. */
uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t rank, seen = 0, v;
	unsigned i;

	if (h->count == 0)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	rank = (uint64_t)(q * (double)h->count);
	if ((double)rank < q * (double)h->count)
		rank++;
	if (rank == 0)
		rank = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank)
			break;
	}
	if (i == HIST_BUCKETS)
		return h->max;
	v = hist_highest(i);
	if (v > h->max)
		v = h->max;
	if (v < h->min)
		v = h->min;
	return v;
}

/* Mean of the recorded values, 0 when empty. */
double hist_mean(const struct hist *h)
{
	return h->count ? h->sum / (double)h->count : 0.0;
}
