/* SPDX-License-Identifier: BSD-2-Clause */
/* daemon/state/hmap.c - intrusive hash table with incremental rehashing. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/hmap.h"

#define HMAP_MIN	16
#define REHASH_MOVES	4	/* non-empty buckets moved per insert */
#define REHASH_VISITS	64	/* empty buckets skipped per insert */

/*
 * An array of n empty buckets (pointers: sized by the pointer type, not
 * sizeof *tab, which the analyser takes for a mistaken sizeof of a pointer).
 */
static struct hnode **buckets_new(size_t n)
{
	return calloc(n, sizeof(struct hnode *));
}

/* Set up an empty table with at least buckets buckets. */
int hmap_init(struct hmap *m, size_t buckets)
{
	size_t size = HMAP_MIN;

	memset(m, 0, sizeof *m);
	while (size < buckets)
		size <<= 1;
	m->tab[0] = buckets_new(size);
	if (m->tab[0] == NULL)
		return -ENOMEM;
	m->size[0] = size;
	return 0;
}

/* Free the bucket arrays (the nodes belong to their owners). */
void hmap_destroy(struct hmap *m)
{
	if (m == NULL)
		return;
	free(m->tab[0]);
	free(m->tab[1]);
	memset(m, 0, sizeof *m);
}

/* Move a few buckets from the old array to the new one. */
static void hmap_rehash_step(struct hmap *m)
{
	int moved = 0, visited = 0;
	struct hnode *n, *next;
	size_t b;

	while (m->tab[1] != NULL && moved < REHASH_MOVES &&
	    visited < REHASH_VISITS) {
		if (m->rehash == m->size[0]) {
			free(m->tab[0]);
			m->tab[0] = m->tab[1];
			m->size[0] = m->size[1];
			m->tab[1] = NULL;
			m->size[1] = 0;
			m->rehash = 0;
			return;
		}
		n = m->tab[0][m->rehash];
		if (n == NULL) {
			visited++;
			m->rehash++;
			continue;
		}
		for (; n != NULL; n = next) {
			next = n->next;
			b = n->hash & (m->size[1] - 1);
			n->next = m->tab[1][b];
			m->tab[1][b] = n;
		}
		m->tab[0][m->rehash++] = NULL;
		moved++;
	}
}

/* Insert a node; start or continue a rehash when the table is full. */
void hmap_insert_slow(struct hmap *m, struct hnode *n, uint64_t hash)
{
	struct hnode **tab;
	size_t b;

	n->hash = hash;
	if (m->tab[1] == NULL && m->used >= m->size[0]) {
		m->tab[1] = buckets_new(m->size[0] * 2);
		if (m->tab[1] != NULL) {
			m->size[1] = m->size[0] * 2;
			m->rehash = 0;
		}
	}
	hmap_rehash_step(m);
	if (m->tab[1] != NULL) {
		tab = m->tab[1];
		b = hash & (m->size[1] - 1);
	} else {
		tab = m->tab[0];
		b = hash & (m->size[0] - 1);
	}
	n->next = tab[b];
	tab[b] = n;
	m->used++;
}

/* Unlink a node that is in the table. */
void hmap_remove(struct hmap *m, struct hnode *n)
{
	struct hnode **pp;
	int t;

	for (t = 0; t < 2; t++) {
		if (m->tab[t] == NULL)
			continue;
		pp = &m->tab[t][n->hash & (m->size[t] - 1)];
		for (; *pp != NULL; pp = &(*pp)->next) {
			if (*pp == n) {
				*pp = n->next;
				n->next = NULL;
				m->used--;
				return;
			}
		}
	}
}

/* Number of nodes. */
size_t hmap_count(const struct hmap *m)
{
	return m->used;
}

/* Bytes used by the bucket arrays. */
size_t hmap_bytes(const struct hmap *m)
{
	return (m->size[0] + m->size[1]) * sizeof(struct hnode *);
}

/* Start an iteration. */
void hmap_iter_init(struct hmap_iter *it, const struct hmap *m)
{
	it->m = m;
	it->t = 0;
	it->b = 0;
	it->next = NULL;
}

/* Next node of the iteration, or NULL at the end. */
struct hnode *hmap_iter_next(struct hmap_iter *it)
{
	struct hnode *n;

	while (it->next == NULL) {
		if (it->t == 2)
			return NULL;
		if (it->m->tab[it->t] == NULL || it->b == it->m->size[it->t]) {
			it->t++;
			it->b = 0;
			continue;
		}
		it->next = it->m->tab[it->t][it->b++];
	}
	n = it->next;
	it->next = n->next;
	return n;
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

/* SipHash's state: four words. */
struct sip {
	uint64_t	v0, v1, v2, v3;
};

static inline void sip_round(struct sip *s)
{
	s->v0 += s->v1; s->v1 = ROTL(s->v1, 13); s->v1 ^= s->v0;
	s->v0 = ROTL(s->v0, 32);
	s->v2 += s->v3; s->v3 = ROTL(s->v3, 16); s->v3 ^= s->v2;
	s->v0 += s->v3; s->v3 = ROTL(s->v3, 21); s->v3 ^= s->v0;
	s->v2 += s->v1; s->v1 = ROTL(s->v1, 17); s->v1 ^= s->v2;
	s->v2 = ROTL(s->v2, 32);
}

/* Read 8 little-endian bytes (one load on a little-endian machine). */
static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof v);
	return le64toh(v);
}

/* The state keyed by key's 16 bytes. */
static inline void sip_init(struct sip *s, const uint8_t key[16])
{
	uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);

	s->v0 = 0x736f6d6570736575ULL ^ k0;
	s->v1 = 0x646f72616e646f6dULL ^ k1;
	s->v2 = 0x6c7967656e657261ULL ^ k0;
	s->v3 = 0x7465646279746573ULL ^ k1;
}

/* One 8-byte word in (one compression round: the "1" of 1-3). */
static inline void sip_word(struct sip *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	s->v0 ^= m;
}

/* The hash (three finalization rounds: the "3"). */
static inline uint64_t sip_final(struct sip *s)
{
	s->v2 ^= 0xff;
	sip_round(s);
	sip_round(s);
	sip_round(s);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/*
 * SipHash-1-3 (Aumasson and Bernstein's SipHash with one compression and
 * three finalization rounds, the variant CPython and Rust use for their
 * hash tables): keyed, so clients cannot aim names at one bucket, and
 * about half the work of SipHash-2-4 on the short names of every request.
 */
uint64_t hmap_siphash(const uint8_t key[16], const void *data, size_t len)
{
	const uint8_t *in = data, *end = in + (len & ~(size_t)7);
	uint64_t b = (uint64_t)len << 56;
	struct sip s;

	sip_init(&s, key);
	for (; in != end; in += 8)
		sip_word(&s, load_le64(in));
	if (len & 7) {
		uint8_t tail[8] = { 0 };

		memcpy(tail, in, len & 7);
		b |= load_le64(tail);
	}
	sip_word(&s, b);
	return sip_final(&s);
}

/* SipHash-1-3 of the 16 little-endian bytes of a then b, without a buffer. */
uint64_t hmap_siphash_u64x2(const uint8_t key[16], uint64_t a, uint64_t b)
{
	struct sip s;

	sip_init(&s, key);
	sip_word(&s, a);
	sip_word(&s, b);
	sip_word(&s, (uint64_t)16 << 56);
	return sip_final(&s);
}
