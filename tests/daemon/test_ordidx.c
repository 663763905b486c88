/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_ordidx.c - the ordered name index (daemon/state/ordidx.c):
 * random insert/remove/seek/find sequences checked against a sorted model
 * after every step, and 200,000 keys in ascending, descending and random
 * order (memory per key, seeks, draining back to one leaf).
 *
 *   test_ordidx [SEED]     (default: from the clock; printed first)
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/state/ordidx.h"
#include "tests/common/rng.h"

static int failures;
static uint64_t seed;
static const char *where = "";

#define EXPECT(cond) do {						\
	if (!(cond)) {							\
		failures++;						\
		printf("not ok - %s:%d: %s (%s, seed %" PRIu64 ")\n",	\
		    __FILE__, __LINE__, #cond, where, seed);		\
	}								\
} while (0)

#define EXPECT_EQ(a, b) do {						\
	long long a_ = (long long)(a), b_ = (long long)(b);		\
	if (a_ != b_) {							\
		failures++;						\
		printf("not ok - %s:%d: %s == %lld, want %s == %lld "	\
		    "(%s, seed %" PRIu64 ")\n", __FILE__, __LINE__, #a,	\
		    a_, #b, b_, where, seed);				\
	}								\
} while (0)

struct item {
	int	id;
	char	name[24];
};

/* qsort order of items by name. */
static int item_cmp(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->name,
	    ((const struct item *)b)->name);
}

/* Check the index structure; count a failure with its description. */
static int check_index(const struct ordidx *x)
{
	char err[256];

	if (ordidx_check(x, err, sizeof err) == 0)
		return 0;
	failures++;
	printf("not ok - ordidx_check: %s (%s, seed %" PRIu64 ")\n", err,
	    where, seed);
	return -1;
}

/* A random short name over a small alphabet (shared prefixes, a high byte). */
static void random_name(char *buf, size_t len)
{
	static const char alpha[] = "abz/\xc3\xa9";
	size_t n = 1 + rnd_below(len - 2 < 8 ? len - 2 : 8);

	for (size_t i = 0; i < n; i++)
		buf[i] = alpha[rnd_below(sizeof alpha - 1)];
	buf[n] = '\0';
}

/* First model slot whose name is > key (>= key when inclusive). */
static size_t model_pos(const struct item *u, size_t nu, const char *key,
    bool inclusive)
{
	size_t lo = 0, hi = nu, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(u[mid].name, key);
		if (c < 0 || (c == 0 && !inclusive))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Seek in the index and in the model; the next up to 25 must agree. */
static void check_seek(const struct ordidx *x, const struct item *u,
    const bool *present, size_t nu, const char *key, bool inclusive)
{
	struct ordidx_iter it;
	struct item *got;
	size_t j = model_pos(u, nu, key, inclusive);

	ordidx_seek(x, &it, key, inclusive);
	for (int k = 0; k < 25; k++) {
		while (j < nu && !present[j])
			j++;
		got = ordidx_next(&it);
		if (j == nu) {
			EXPECT(got == NULL);
			return;
		}
		EXPECT(got == &u[j]);
		if (got != &u[j])
			return;
		j++;
	}
}

/*
 * A random sequence over a universe of nu names: phases that grow (mostly
 * inserts) and shrink (mostly removes), then a drain to empty; the index
 * is checked against the model after every step.
 */
static void test_random(size_t nu, size_t steps)
{
	struct item *u = calloc(nu, sizeof *u), twin;
	bool *present = calloc(nu, sizeof *present);
	struct ordidx x;
	size_t n = 0, j, w, step, maxn = 0;
	char key[32], label[64];
	int rc, ins_pct;

	if (u == NULL || present == NULL) {
		printf("not ok - out of memory\n");
		failures++;
		goto out;
	}
	/* Distinct random names, sorted: the model is u[] with present[]. */
	for (j = 0, w = 0; j < nu * 4 && w < nu; j++) {
		random_name(u[w].name, sizeof u[w].name);
		snprintf(u[w].name + strlen(u[w].name), 8, "%zu", rnd_below(nu));
		w++;
	}
	qsort(u, w, sizeof *u, item_cmp);
	for (j = 0, n = 0; j < w; j++)
		if (n == 0 || strcmp(u[n - 1].name, u[j].name) != 0)
			u[n++] = u[j];
	nu = n;
	for (j = 0; j < nu; j++)
		u[j].id = (int)j;
	n = 0;
	ordidx_init(&x, offsetof(struct item, name));
	for (step = 0; step < steps || (n > 0 && step < steps + nu); step++) {
		snprintf(label, sizeof label, "random %zu names, step %zu", nu, step);
		where = label;
		ins_pct = step >= steps ? 0 : (step / (steps / 4)) % 2 == 0 ? 75 : 25;
		j = rnd_below(nu);
		switch (step >= steps ? 0 : rnd_below(10)) {
		case 0: case 1: case 2: case 3: case 4: case 5:
			if ((int)rnd_below(100) < ins_pct) {
				rc = ordidx_insert(&x, &u[j]);
				EXPECT_EQ(rc, present[j] ? -EEXIST : 0);
				if (rc == 0) {
					present[j] = true;
					n++;
				}
			} else {
				if (step >= steps) {
					/* Drain: the next present one. */
					for (w = 0; w < nu && !present[j]; w++)
						j = (j + 1) % nu;
				}
				rc = ordidx_remove(&x, &u[j]);
				EXPECT_EQ(rc, present[j] ? 0 : -ENOENT);
				if (rc == 0) {
					present[j] = false;
					n--;
				}
			}
			break;
		case 6:
			/* A twin: same name, another element. */
			twin = u[j];
			EXPECT_EQ(ordidx_remove(&x, &twin), -ENOENT);
			EXPECT_EQ(ordidx_insert(&x, &twin), present[j] ? -EEXIST : 0);
			if (!present[j])
				EXPECT_EQ(ordidx_remove(&x, &twin), 0);
			break;
		case 7:
			EXPECT(ordidx_find(&x, u[j].name) ==
			    (present[j] ? &u[j] : NULL));
			break;
		default:
			if (rnd_below(2) == 0)
				snprintf(key, sizeof key, "%s", u[j].name);
			else
				random_name(key, sizeof key);
			check_seek(&x, u, present, nu, key, rnd_below(2) == 0);
			break;
		}
		EXPECT_EQ(ordidx_count(&x), n);
		if (n > maxn)
			maxn = n;
		/* Every step while small; a big index every 97 steps. */
		if ((n < 5000 || step % 97 == 0) && check_index(&x) != 0)
			break;
		if (failures > 20)
			break;
	}
	EXPECT_EQ(n, 0);
	EXPECT(x.height <= 1);
	EXPECT(ordidx_bytes(&x) <= 2 * ORDIDX_NODE_SIZE);
	printf("ok - random: %zu names, %zu steps, up to %zu at once\n", nu,
	    step, maxn);
	ordidx_destroy(&x);
out:
	free(u);
	free(present);
}

/* Key i of the large case. */
static void big_name(struct item *it, size_t i)
{
	snprintf(it->name, sizeof it->name, "big/%08zu", i);
	it->id = (int)i;
}

/* Insert big[] in the order of perm; report and bound bytes per key. */
static void big_fill(struct ordidx *x, struct item *big, const size_t *perm,
    size_t n, const char *order, double max_bytes)
{
	double per;

	where = order;
	for (size_t i = 0; i < n; i++) {
		int rc = ordidx_insert(x, &big[perm[i]]);

		if (rc != 0) {
			EXPECT_EQ(rc, 0);
			return;
		}
	}
	EXPECT_EQ(ordidx_count(x), n);
	check_index(x);
	per = (double)ordidx_bytes(x) / (double)n;
	printf("ok - %zu keys inserted in %s order: %.2f bytes per key, "
	    "height %u\n", n, order, per, x->height);
	EXPECT(per <= max_bytes);
}

/* Seek from random keys, and walk a page: the keys that follow. */
static void big_seeks(const struct ordidx *x, const struct item *big, size_t n)
{
	struct ordidx_iter it;
	struct timespec t0, t1;
	char key[24];
	size_t i, k, bad = 0;
	struct item *e;
	double ns;

	where = "seeks";
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (k = 0; k < 20000; k++) {
		i = rnd_below(n + 1);
		/* "big/00000012" < "big/00000012x" < "big/00000013" */
		snprintf(key, sizeof key, "big/%08zu%s", i, k % 2 ? "x" : "");
		ordidx_seek(x, &it, key, k % 4 == 0);
		if (k % 2 == 0 && k % 4 != 0)
			i++;	/* strictly after an exact key */
		else if (k % 2 == 1)
			i++;
		for (int j = 0; j < 10; j++, i++) {
			e = ordidx_next(&it);
			if (i >= n ? e != NULL : e != &big[i])
				bad++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
	    (double)(t1.tv_nsec - t0.tv_nsec)) / 20000;
	EXPECT_EQ(bad, 0);
	printf("ok - 20000 seeks and 10-key walks at %zu keys: %.0f ns each\n",
	    n, ns);
}

/* Remove in the order of perm, checking now and then; one leaf left. */
static void big_drain(struct ordidx *x, struct item *big, const size_t *perm,
    size_t n)
{
	where = "drain";
	for (size_t i = 0; i < n; i++) {
		int rc = ordidx_remove(x, &big[perm[i]]);

		if (rc != 0) {
			EXPECT_EQ(rc, 0);
			return;
		}
		if (i % 20000 == 0 && check_index(x) != 0)
			return;
	}
	EXPECT_EQ(ordidx_count(x), 0);
	EXPECT_EQ(x->height, 1);
	EXPECT(ordidx_bytes(x) <= 2 * ORDIDX_NODE_SIZE);
	check_index(x);
}

/* 200,000 keys in three orders; memory per key within bounds. */
static void test_big(void)
{
	const size_t n = 200000;
	struct item *big = calloc(n, sizeof *big);
	size_t *asc = calloc(n, sizeof *asc), *desc = calloc(n, sizeof *desc);
	size_t *shuf = calloc(n, sizeof *shuf), i, j, t;
	struct ordidx x;

	if (big == NULL || asc == NULL || desc == NULL || shuf == NULL) {
		printf("not ok - out of memory\n");
		failures++;
		goto out;
	}
	for (i = 0; i < n; i++) {
		big_name(&big[i], i);
		asc[i] = shuf[i] = i;
		desc[i] = n - 1 - i;
	}
	for (i = n - 1; i > 0; i--) {
		j = rnd_below(i + 1);
		t = shuf[i]; shuf[i] = shuf[j]; shuf[j] = t;
	}
	ordidx_init(&x, offsetof(struct item, name));
	/* In order, leaves fill up (keys move to a sibling before a split). */
	big_fill(&x, big, asc, n, "ascending", 10.0);
	big_seeks(&x, big, n);
	big_drain(&x, big, shuf, n);
	big_fill(&x, big, desc, n, "descending", 10.0);
	big_drain(&x, big, asc, n);
	/* Any order: every node but the root is at least half full. */
	big_fill(&x, big, shuf, n, "random", 18.0);
	big_seeks(&x, big, n);
	big_drain(&x, big, desc, n);
	ordidx_destroy(&x);
	ordidx_destroy(NULL);
out:
	free(big);
	free(asc);
	free(desc);
	free(shuf);
}

/* The empty index, and one element. */
static void test_small(void)
{
	struct ordidx x;
	struct ordidx_iter it;
	struct item a = { 1, "a" }, b = { 2, "b" };

	where = "small";
	ordidx_init(&x, offsetof(struct item, name));
	EXPECT(ordidx_find(&x, "a") == NULL);
	EXPECT_EQ(ordidx_remove(&x, &a), -ENOENT);
	ordidx_first(&x, &it);
	EXPECT(ordidx_next(&it) == NULL);
	ordidx_seek(&x, &it, "", true);
	EXPECT(ordidx_next(&it) == NULL);
	EXPECT_EQ(ordidx_bytes(&x), 0);
	EXPECT_EQ(ordidx_insert(&x, &b), 0);
	EXPECT_EQ(ordidx_insert(&x, &a), 0);
	EXPECT_EQ(ordidx_insert(&x, &a), -EEXIST);
	ordidx_seek(&x, &it, "a", false);
	EXPECT(ordidx_next(&it) == &b);
	EXPECT(ordidx_next(&it) == NULL);
	ordidx_seek(&x, &it, "a", true);
	EXPECT(ordidx_next(&it) == &a);
	ordidx_first(&x, &it);
	EXPECT(ordidx_next(&it) == &a);
	EXPECT(ordidx_next(&it) == &b);
	EXPECT_EQ(ordidx_remove(&x, &a), 0);
	EXPECT_EQ(ordidx_remove(&x, &b), 0);
	EXPECT_EQ(ordidx_count(&x), 0);
	/* The root leaf stays: an auto-created name does not allocate. */
	EXPECT_EQ(ordidx_bytes(&x), ORDIDX_NODE_SIZE);
	check_index(&x);
	ordidx_destroy(&x);
	printf("ok - small cases\n");
}

int main(int argc, char **argv)
{
	seed = argc > 1 ? strtoull(argv[1], NULL, 0) :
	    (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
	if (seed == 0)
		seed = 1;
	rng = seed;
	printf("# test_ordidx seed %" PRIu64 " (rerun: test_ordidx %" PRIu64
	    ")\n", seed, seed);
	test_small();
	test_random(150, 20000);
	test_random(3000, 40000);
	test_random(40000, 100000);
	test_big();
	if (failures != 0) {
		printf("FAIL: %d failures (seed %" PRIu64 ")\n", failures, seed);
		return 1;
	}
	printf("PASS\n");
	return 0;
}
