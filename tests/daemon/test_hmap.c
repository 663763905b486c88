/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_hmap.c - the hash table: growth by incremental rehash,
 * lookups and removals while a rehash is in progress, iteration with
 * removal, and SipHash against the reference vectors.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/list.h"
#include "daemon/state/hmap.h"
#include "tests/common/check.h"


struct item {
	struct hnode	node;
	uint64_t	key;
	int		seen;
};

static const uint8_t key16[16] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
};

/* Does the node carry this key? */
static bool item_eq(const struct hnode *n, const void *k)
{
	return container_of(n, struct item, node)->key == *(const uint64_t *)k;
}

/* Hash of an item key. */
static uint64_t item_hash(uint64_t k)
{
	return hmap_siphash(key16, &k, sizeof k);
}

/* Find an item by key. */
static struct item *find(struct hmap *m, uint64_t k)
{
	struct hnode *n = hmap_find(m, item_hash(k), item_eq, &k);

	return n ? container_of(n, struct item, node) : NULL;
}

/*
 * SipHash-1-3 reference outputs: key 0, message 00..len-1. They come from
 * CPython 3.11, whose hash() of bytes is SipHash-1-3 and whose key is all
 * zeros under PYTHONHASHSEED=0:
 *   PYTHONHASHSEED=0 python3 -c 'print(hex(hash(bytes(range(5))) % 2**64))'
 */
static void test_siphash(void)
{
	static const uint8_t key0[16];
	static const uint64_t want[] = {
		0x68a914128e01e473ULL,	/* len 1 */
		0x010bac45c41e3669ULL,	/* len 2 */
		0x4d4c9a4a8ef6e0adULL,	/* len 3 */
		0x7cc43f98813e4dbdULL,	/* len 4 */
		0x5abe2169dff36275ULL,	/* len 5 */
		0xe3c25f87624f1cdbULL,	/* len 6 */
		0x2f098ab0c751325aULL,	/* len 7 */
		0xead411e67ebe2eeaULL,	/* len 8 */
		0x75927f9d95124362ULL,	/* len 9 */
		0xaf9f77a65ab51a1dULL,	/* len 10 */
		0xfe64ce8b6617fcffULL,	/* len 11 */
		0xa6baf4fb0f9fe1c2ULL,	/* len 12 */
		0xa0cf3211850f8e0dULL,	/* len 13 */
		0x7f86049379fbfe67ULL,	/* len 14 */
		0xf30eb725bb91c9eaULL,	/* len 15 */
		0x8972188433a5c5b7ULL,	/* len 16 */
		0x4883c49a2c009c1dULL,	/* len 17 */
		0xadc2c0b63044067dULL,	/* len 18 */
		0x091f4a3329f87d19ULL,	/* len 19 */
		0x639e355ae68c0100ULL,	/* len 20 */
		0xb17bef2cb5213239ULL,	/* len 21 */
		0xf8aeb1066236ccfeULL,	/* len 22 */
		0x37332b1389daa4ffULL,	/* len 23 */
		0x31185a47af932f3aULL,	/* len 24 */
	};
	uint8_t msg[64];
	size_t i;

	printf("# siphash reference vectors\n");
	for (i = 0; i < sizeof msg; i++)
		msg[i] = (uint8_t)i;
	for (i = 0; i < sizeof want / sizeof want[0]; i++) {
		uint64_t got = hmap_siphash(key0, msg, i + 1);

		if (got != want[i]) {
			failures++;
			printf("not ok - siphash len %zu: want %016" PRIx64
			    ", got %016" PRIx64 "\n", i + 1, want[i], got);
		}
	}
}

/* The two-word SipHash equals SipHash of the same 16 bytes. */
static void test_siphash_u64x2(void)
{
	static const uint8_t key0[16];
	uint64_t a = 0x0706050403020100ULL, b = 0x0f0e0d0c0b0a0908ULL, x;
	uint8_t buf[16];
	int i, k;

	printf("# siphash of two words\n");
	/* Reference vector: key 0, message 00..0f (CPython, as above). */
	if (hmap_siphash_u64x2(key0, a, b) != 0x8972188433a5c5b7ULL) {
		failures++;
		printf("not ok - siphash_u64x2 reference vector: got %016" PRIx64 "\n",
		    hmap_siphash_u64x2(key0, a, b));
	}
	for (k = 0; k < 1000; k++) {
		a = a * 6364136223846793005ULL + 1442695040888963407ULL;
		b = b * 6364136223846793005ULL + 1442695040888963407ULL;
		for (i = 0; i < 8; i++) {
			buf[i] = (uint8_t)(a >> (8 * i));
			buf[8 + i] = (uint8_t)(b >> (8 * i));
		}
		x = hmap_siphash(key16, buf, sizeof buf);
		if (hmap_siphash_u64x2(key16, a, b) != x) {
			failures++;
			printf("not ok - siphash_u64x2 differs for %016" PRIx64
			    " %016" PRIx64 "\n", a, b);
			return;
		}
	}
}

#define N 100000

/* Grow through many rehashes; find, remove, iterate. */
static void test_table(void)
{
	struct item *items = calloc(N, sizeof *items);
	struct hmap m;
	struct hmap_iter it;
	struct hnode *n;
	size_t i, count;

	printf("# %d items: insert, find during rehash, remove, iterate\n", N);
	EXPECT(hmap_init(&m, 1) == 0);
	for (i = 0; i < N; i++) {
		items[i].key = i * 7919;
		hmap_insert(&m, &items[i].node, item_hash(items[i].key));
		/* Everything inserted so far is findable, rehash or not. */
		if (i % 997 == 0)
			EXPECT(find(&m, items[i / 2].key) == &items[i / 2]);
	}
	EXPECT(hmap_count(&m) == N);
	for (i = 0; i < N; i++)
		if (find(&m, items[i].key) != &items[i])
			break;
	EXPECT(i == N);
	EXPECT(find(&m, 3) == NULL);
	/* Remove every odd item. */
	for (i = 1; i < N; i += 2)
		hmap_remove(&m, &items[i].node);
	EXPECT(hmap_count(&m) == N / 2);
	EXPECT(find(&m, items[1].key) == NULL);
	EXPECT(find(&m, items[2].key) == &items[2]);
	/* Iterate, removing every node as it is returned. */
	count = 0;
	hmap_iter_init(&it, &m);
	while ((n = hmap_iter_next(&it)) != NULL) {
		container_of(n, struct item, node)->seen++;
		hmap_remove(&m, n);
		count++;
	}
	EXPECT(count == N / 2);
	EXPECT(hmap_count(&m) == 0);
	for (i = 0; i < N; i += 2)
		if (items[i].seen != 1)
			break;
	EXPECT(i >= N);
	EXPECT(hmap_bytes(&m) > 0);
	hmap_destroy(&m);
	hmap_destroy(NULL);
	free(items);
}

int main(void)
{
	test_siphash();
	test_siphash_u64x2();
	test_table();
	return check_done("hmap");
}
