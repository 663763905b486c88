/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/hmap.h - intrusive chained hash table with incremental
 * rehashing.
 *
 * Nodes are embedded in the objects they index (struct hnode), so insertion
 * never allocates except when the bucket array grows. Growth doubles the
 * bucket array and moves the old buckets over a few at a time on later
 * inserts (Redis' dict does the same), so a table of a million names never
 * stalls the event loop for a whole rehash. Lookups and removals look in
 * both arrays while a rehash is in progress. The table never shrinks: its
 * size is bounded by the configured limits.
 *
 * Keys are hashed with SipHash-1-3 under a per-daemon key, so clients that
 * choose names or request ids cannot aim them at one bucket.
 */
#ifndef SEMD_HMAP_H
#define SEMD_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hnode {
	struct hnode	*next;
	uint64_t	 hash;
};

struct hmap {
	struct hnode	**tab[2];
	size_t		  size[2];	/* buckets, a power of two, or 0 */
	size_t		  used;		/* nodes in both arrays */
	size_t		  rehash;	/* next bucket of tab[0] to move */
};

/* Does node n carry the key? */
typedef bool (*hmap_eq_fn)(const struct hnode *n, const void *key);

int hmap_init(struct hmap *m, size_t buckets);
void hmap_destroy(struct hmap *m);
/* hmap_insert() when the table grows or is being rehashed. */
void hmap_insert_slow(struct hmap *m, struct hnode *n, uint64_t hash);

/*
 * Insert n under hash; never fails (growth is skipped when out of memory).
 * Inline: every grant inserts three nodes, almost always into a table with
 * room and no rehash under way.
 */
static inline void hmap_insert(struct hmap *m, struct hnode *n, uint64_t hash)
{
	struct hnode **b;

	if (__builtin_expect(m->tab[1] != NULL || m->used >= m->size[0], 0)) {
		hmap_insert_slow(m, n, hash);
		return;
	}
	n->hash = hash;
	b = &m->tab[0][hash & (m->size[0] - 1)];
	n->next = *b;
	*b = n;
	m->used++;
}

/*
 * The node with this key, or NULL. Inline, so that each caller's eq is a
 * direct call its compiler can inline too.
 */
static inline struct hnode *hmap_find(const struct hmap *m, uint64_t hash,
    hmap_eq_fn eq, const void *key)
{
	struct hnode *n;
	int t;

	for (t = 0; t < 2; t++) {
		if (m->tab[t] == NULL)
			continue;
		for (n = m->tab[t][hash & (m->size[t] - 1)]; n; n = n->next) {
			if (n->hash == hash && eq(n, key))
				return n;
		}
	}
	return NULL;
}
void hmap_remove(struct hmap *m, struct hnode *n);
size_t hmap_count(const struct hmap *m);
size_t hmap_bytes(const struct hmap *m);

/*
 * Iteration over every node. Removing the node just returned is allowed;
 * inserting during an iteration is not (it may move buckets).
 */
struct hmap_iter {
	const struct hmap	*m;
	int			 t;
	size_t			 b;
	struct hnode		*next;
};
void hmap_iter_init(struct hmap_iter *it, const struct hmap *m);
struct hnode *hmap_iter_next(struct hmap_iter *it);

/* SipHash-1-3 of len bytes under a 16-byte key. */
uint64_t hmap_siphash(const uint8_t key[16], const void *data, size_t len);
/* The same as hmap_siphash() of a and b as 16 little-endian bytes. */
uint64_t hmap_siphash_u64x2(const uint8_t key[16], uint64_t a, uint64_t b);

#endif
