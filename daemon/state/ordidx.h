/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/ordidx.h - an ordered index of string-keyed elements: a B+tree
 * of element pointers.
 *
 * The index stores pointers to elements owned by someone else; each element
 * carries its key as a NUL-terminated string at a fixed offset (key_off),
 * compared with strcmp() (byte order). Keys are unique. Nodes are wide
 * (ORDIDX_LEAF_CAP pointers per leaf, 512-byte malloc chunks) so the index
 * costs 8.7 bytes per element filled in key order, about 10 in random order
 * and at most about 18 (nodes at least half full): much less than a tree
 * node per element. The price is a cache miss per key comparison (the key
 * lives in the element), about 20 of them per seek at a million elements.
 *
 * Every node but the root is at least half full. Insert and remove work top
 * down in one pass: a full child is relieved (keys moved to a sibling with
 * room, else split) before the descent enters it, and a child at the minimum
 * is topped up (from a sibling, else merged with it) before a removal enters
 * it. Both are O(log n) with at most one node allocated or freed per level:
 * nothing ever rebuilds the whole index. An inner node keeps the smallest
 * key of each child (a pointer to that child's first element), so seeking
 * costs O(log n) key comparisons and walking on is a step along the leaves'
 * next pointers: a page of k elements costs O(log n + k).
 */
#ifndef SEMD_ORDIDX_H
#define SEMD_ORDIDX_H

#include <stdbool.h>
#include <stddef.h>

#define ORDIDX_NODE_SIZE	504	/* malloc chunks of 512 bytes */
#define ORDIDX_LEAF_CAP		61	/* element pointers per leaf */
#define ORDIDX_INNER_CAP	31	/* children per inner node */
#define ORDIDX_MAX_HEIGHT	24	/* levels: 2 * 15^22 * 30 > 2^64 elements */

struct ordidx_node;

struct ordidx {
	struct ordidx_node	*root;		/* NULL until the first insert */
	struct ordidx_node	*spare;		/* one freed node kept, or NULL */
	size_t			 key_off;	/* of the key in an element */
	size_t			 count;		/* elements */
	size_t			 nodes;		/* allocated, the spare too */
	unsigned int		 height;	/* levels, 1: the root is a leaf */
};

/* A position in the index, for walking forward. */
struct ordidx_iter {
	struct ordidx_node	*leaf;
	unsigned int		 i;
};

/* Set up an empty index whose elements carry their key at key_off. */
void ordidx_init(struct ordidx *x, size_t key_off);
/* Free the nodes (the elements belong to their owners). */
void ordidx_destroy(struct ordidx *x);
/* Add elem: 0, -EEXIST when its key is there, or -ENOMEM (same set). */
int ordidx_insert(struct ordidx *x, void *elem);
/* Take elem out: 0, or -ENOENT when elem itself is not in the index. */
int ordidx_remove(struct ordidx *x, const void *elem);
/* Element with this key, or NULL. */
void *ordidx_find(const struct ordidx *x, const char *key);
size_t ordidx_count(const struct ordidx *x);
/* Bytes of node memory, the spare node included. */
size_t ordidx_bytes(const struct ordidx *x);

/*
 * Position it before the first element whose key is greater than key, or
 * greater or equal when inclusive; ordidx_next() then returns the elements
 * in order. Any insert or remove invalidates an iterator.
 */
void ordidx_seek(const struct ordidx *x, struct ordidx_iter *it,
    const char *key, bool inclusive);
/* Position it before the first element. */
void ordidx_first(const struct ordidx *x, struct ordidx_iter *it);
/* The next element, or NULL at the end. */
void *ordidx_next(struct ordidx_iter *it);

/*
 * Check the structure (fill, uniform depth, ordered keys, inner keys equal
 * to their children's first keys, leaf chain, counts); 0 or -1 with a
 * description in err. For tests and sm_check(); O(n).
 */
int ordidx_check(const struct ordidx *x, char *err, size_t errlen);

#endif
