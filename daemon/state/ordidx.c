/* SPDX-License-Identifier: BSD-2-Clause */
/* daemon/state/ordidx.c - ordered index of string-keyed elements (a B+tree). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/ordidx.h"

/*
 * A node starts with this header; a leaf goes on with its next leaf and its
 * elements, an inner node with the first element of each child and the
 * children. Both are ORDIDX_NODE_SIZE bytes, so a freed node serves either.
 */
struct ordidx_node {
	uint16_t	n;		/* elements or children */
	uint16_t	leaf;
	uint32_t	unused;
};

struct ox_leaf {
	struct ordidx_node	h;
	struct ox_leaf		*next;		/* in key order, NULL: last */
	void			*key[ORDIDX_LEAF_CAP];
};

struct ox_inner {
	struct ordidx_node	h;
	void			*key[ORDIDX_INNER_CAP];	/* child[i]'s first */
	struct ordidx_node	*child[ORDIDX_INNER_CAP];
};

_Static_assert(sizeof(struct ox_leaf) == ORDIDX_NODE_SIZE, "leaf size");
_Static_assert(sizeof(struct ox_inner) == ORDIDX_NODE_SIZE, "inner size");

#define LEAF(p)		((struct ox_leaf *)(void *)(p))
#define INNER(p)	((struct ox_inner *)(void *)(p))
#define CLEAF(p)	((const struct ox_leaf *)(const void *)(p))
#define CINNER(p)	((const struct ox_inner *)(const void *)(p))

/* The key an element carries. */
static const char *ox_key(const struct ordidx *x, const void *elem)
{
	return (const char *)elem + x->key_off;
}

/* Entries a node can hold. */
static unsigned int ox_cap(const struct ordidx_node *n)
{
	return n->leaf ? ORDIDX_LEAF_CAP : ORDIDX_INNER_CAP;
}

/* Entries a node other than the root holds at least. */
static unsigned int ox_min(const struct ordidx_node *n)
{
	return ox_cap(n) / 2;
}

/* The key slots of a node. */
static void **ox_keys(struct ordidx_node *n)
{
	return n->leaf ? LEAF(n)->key : INNER(n)->key;
}

/* First element under a non-empty node. */
static void *ox_first(const struct ordidx_node *n)
{
	return n->leaf ? CLEAF(n)->key[0] : CINNER(n)->key[0];
}

/* A node from the spare or the heap; NULL when out of memory. */
static struct ordidx_node *ox_alloc(struct ordidx *x, bool leaf)
{
	struct ordidx_node *n = x->spare;

	if (n != NULL) {
		x->spare = NULL;
	} else {
		n = calloc(1, ORDIDX_NODE_SIZE);
		if (n == NULL)
			return NULL;
		x->nodes++;
	}
	n->n = 0;
	n->leaf = leaf;
	n->unused = 0;
	if (leaf)
		LEAF(n)->next = NULL;
	return n;
}

/* Keep a node as the spare (so a split after a merge does not allocate). */
static void ox_release(struct ordidx *x, struct ordidx_node *n)
{
	if (x->spare == NULL) {
		x->spare = n;
		return;
	}
	free(n);
	x->nodes--;
}

/* Copy cnt entries from s at si to d at di (both one kind); may overlap. */
static void ox_copy(struct ordidx_node *d, unsigned int di,
    struct ordidx_node *s, unsigned int si, unsigned int cnt)
{
	if (cnt == 0)
		return;
	memmove(&ox_keys(d)[di], &ox_keys(s)[si], cnt * sizeof(void *));
	if (!d->leaf)
		memmove(&INNER(d)->child[di], &INNER(s)->child[si],
		    cnt * sizeof(struct ordidx_node *));
}

/* First slot of a leaf whose key is > k (>= k when inclusive). */
static unsigned int ox_leaf_pos(const struct ordidx *x, const struct ox_leaf *l,
    const char *k, bool inclusive)
{
	unsigned int lo = 0, hi = l->h.n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(ox_key(x, l->key[mid]), k);
		if (c < 0 || (c == 0 && !inclusive))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Child to descend into for k: the last whose first key is <= k, else 0. */
static unsigned int ox_child(const struct ordidx *x, const struct ox_inner *in,
    const char *k)
{
	unsigned int lo = 0, hi = in->h.n - 1, mid;

	while (lo < hi) {
		mid = hi - (hi - lo) / 2;
		if (strcmp(ox_key(x, in->key[mid]), k) <= 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* Move m entries from the front of child i + 1 to the end of child i. */
static void ox_shift_left(struct ox_inner *p, unsigned int i, unsigned int m)
{
	struct ordidx_node *a = p->child[i], *b = p->child[i + 1];

	ox_copy(a, a->n, b, 0, m);
	ox_copy(b, 0, b, m, b->n - m);
	a->n += m;
	b->n -= m;
	p->key[i + 1] = ox_first(b);
}

/* Move m entries from the end of child i to the front of child i + 1. */
static void ox_shift_right(struct ox_inner *p, unsigned int i, unsigned int m)
{
	struct ordidx_node *a = p->child[i], *b = p->child[i + 1];

	ox_copy(b, m, b, 0, b->n);
	ox_copy(b, 0, a, a->n - m, m);
	a->n -= m;
	b->n += m;
	p->key[i + 1] = ox_first(b);
}

/* Split child i of p (p has room) in two halves; -ENOMEM. */
static int ox_split(struct ordidx *x, struct ox_inner *p, unsigned int i)
{
	struct ordidx_node *a = p->child[i], *b;
	unsigned int keep = a->n / 2;

	if ((b = ox_alloc(x, a->leaf)) == NULL)
		return -ENOMEM;
	ox_copy(b, 0, a, keep, a->n - keep);
	b->n = a->n - keep;
	a->n = keep;
	if (a->leaf) {
		LEAF(b)->next = LEAF(a)->next;
		LEAF(a)->next = LEAF(b);
	}
	ox_copy(&p->h, i + 2, &p->h, i + 1, p->h.n - i - 1);
	p->key[i + 1] = ox_first(b);
	p->child[i + 1] = b;
	p->h.n++;
	return 0;
}

/* Append child i + 1 of p to child i (they fit in one) and drop it. */
static void ox_merge(struct ordidx *x, struct ox_inner *p, unsigned int i)
{
	struct ordidx_node *a = p->child[i], *b = p->child[i + 1];

	ox_copy(a, a->n, b, 0, b->n);
	a->n += b->n;
	if (a->leaf)
		LEAF(a)->next = LEAF(b)->next;
	ox_copy(&p->h, i + 1, &p->h, i + 2, p->h.n - i - 2);
	p->h.n--;
	p->key[p->h.n] = NULL;
	p->child[p->h.n] = NULL;
	ox_release(x, b);
}

/*
 * Make room in full child i of p (p has room): move entries to a sibling
 * that keeps room of its own afterwards, else split. Moving first keeps
 * nodes fuller than splitting alone (names created in order fill their
 * leaves instead of leaving them half full).
 */
static int ox_relieve(struct ordidx *x, struct ox_inner *p, unsigned int i)
{
	unsigned int cap = ox_cap(p->child[i]), sn;

	if (i > 0 && (sn = p->child[i - 1]->n) + 2 <= cap) {
		ox_shift_left(p, i - 1, (cap - sn + 1) / 2);
		return 0;
	}
	if (i < p->h.n - 1u && (sn = p->child[i + 1]->n) + 2 <= cap) {
		ox_shift_right(p, i, (cap - sn + 1) / 2);
		return 0;
	}
	return ox_split(x, p, i);
}

/*
 * Give child i of p (at its minimum; p has two children or more) one entry
 * or more: from a sibling above the minimum, else merge with a sibling.
 */
static void ox_top_up(struct ordidx *x, struct ox_inner *p, unsigned int i)
{
	unsigned int cn = p->child[i]->n, min = ox_min(p->child[i]), sn;

	if (i > 0 && (sn = p->child[i - 1]->n) > min) {
		ox_shift_right(p, i - 1, (sn - cn + 1) / 2);
		return;
	}
	if (i < p->h.n - 1u && (sn = p->child[i + 1]->n) > min) {
		ox_shift_left(p, i, (sn - cn + 1) / 2);
		return;
	}
	ox_merge(x, p, i > 0 ? i - 1 : i);
}

/* Set up an empty index whose elements carry their key at key_off. */
void ordidx_init(struct ordidx *x, size_t key_off)
{
	memset(x, 0, sizeof *x);
	x->key_off = key_off;
}

/* Free a subtree. */
static void ox_free_tree(struct ordidx_node *n)
{
	if (!n->leaf)
		for (unsigned int i = 0; i < n->n; i++)
			ox_free_tree(INNER(n)->child[i]);
	free(n);
}

/* Free the nodes (the elements belong to their owners). */
void ordidx_destroy(struct ordidx *x)
{
	size_t key_off;

	if (x == NULL)
		return;
	key_off = x->key_off;
	if (x->root != NULL)
		ox_free_tree(x->root);
	free(x->spare);
	ordidx_init(x, key_off);
}

/* Add elem: 0, -EEXIST when its key is there, or -ENOMEM (same set). */
int ordidx_insert(struct ordidx *x, void *elem)
{
	const char *k = ox_key(x, elem);
	void **fix[ORDIDX_MAX_HEIGHT];
	unsigned int nfix = 0, i, pos;
	struct ordidx_node *cur, *c, *r;
	struct ox_inner *in;
	int rc;

	if (x->root == NULL) {
		if ((x->root = ox_alloc(x, true)) == NULL)
			return -ENOMEM;
		x->height = 1;
	}
	if (x->root->n == ox_cap(x->root)) {
		/* A new root over the full one; the descent splits that. */
		if (x->height >= ORDIDX_MAX_HEIGHT ||
		    (r = ox_alloc(x, false)) == NULL)
			return -ENOMEM;
		INNER(r)->key[0] = ox_first(x->root);
		INNER(r)->child[0] = x->root;
		INNER(r)->h.n = 1;
		x->root = r;
		x->height++;
	}
	for (cur = x->root; !cur->leaf; cur = c) {
		in = INNER(cur);
		i = ox_child(x, in, k);
		if (in->child[i]->n == ox_cap(in->child[i])) {
			if ((rc = ox_relieve(x, in, i)) != 0)
				return rc;
			i = ox_child(x, in, k);
		}
		c = in->child[i];
		/* Only down the leftmost path: k becomes the first key. */
		if (strcmp(k, ox_key(x, in->key[i])) < 0)
			fix[nfix++] = &in->key[i];
	}
	pos = ox_leaf_pos(x, LEAF(cur), k, true);
	if (pos < cur->n && strcmp(ox_key(x, LEAF(cur)->key[pos]), k) == 0)
		return -EEXIST;
	ox_copy(cur, pos + 1, cur, pos, cur->n - pos);
	LEAF(cur)->key[pos] = elem;
	cur->n++;
	while (nfix > 0)
		*fix[--nfix] = elem;
	x->count++;
	return 0;
}

/* Take elem out: 0, or -ENOENT when elem itself is not in the index. */
int ordidx_remove(struct ordidx *x, const void *elem)
{
	const char *k = ox_key(x, elem);
	void **fix[ORDIDX_MAX_HEIGHT];
	unsigned int nfix = 0, i, pos;
	struct ordidx_node *cur;
	struct ox_inner *in;
	struct ox_leaf *l;

	if ((cur = x->root) == NULL)
		return -ENOENT;
	while (!cur->leaf) {
		in = INNER(cur);
		if (cur == x->root && cur->n == 1) {
			/* A root with one child: the child becomes the root. */
			x->root = in->child[0];
			x->height--;
			ox_release(x, cur);
			cur = x->root;
			continue;
		}
		i = ox_child(x, in, k);
		if (in->child[i]->n <= ox_min(in->child[i])) {
			/* Then it is above the minimum: the loop goes on. */
			ox_top_up(x, in, i);
			continue;
		}
		/* Slots that name elem as a child's first element. */
		if (in->key[i] == elem)
			fix[nfix++] = &in->key[i];
		cur = in->child[i];
	}
	l = LEAF(cur);
	pos = ox_leaf_pos(x, l, k, true);
	if (pos >= cur->n || l->key[pos] != elem)
		return -ENOENT;
	ox_copy(cur, pos, cur, pos + 1, cur->n - pos - 1);
	cur->n--;
	/* nfix > 0 only for a leaf below the root, above its minimum. */
	while (nfix > 0)
		*fix[--nfix] = l->key[0];
	x->count--;
	return 0;
}

/* Element with this key, or NULL. */
void *ordidx_find(const struct ordidx *x, const char *key)
{
	struct ordidx_iter it;
	void *e;

	ordidx_seek(x, &it, key, true);
	e = ordidx_next(&it);
	if (e != NULL && strcmp(ox_key(x, e), key) != 0)
		e = NULL;
	return e;
}

/* Elements in the index. */
size_t ordidx_count(const struct ordidx *x)
{
	return x->count;
}

/* Bytes of node memory, the spare node included. */
size_t ordidx_bytes(const struct ordidx *x)
{
	return x->nodes * ORDIDX_NODE_SIZE;
}

/* Position it before the first element with a key > key (>= if inclusive). */
void ordidx_seek(const struct ordidx *x, struct ordidx_iter *it,
    const char *key, bool inclusive)
{
	struct ordidx_node *cur = x->root;

	it->leaf = NULL;
	it->i = 0;
	if (cur == NULL)
		return;
	while (!cur->leaf)
		cur = INNER(cur)->child[ox_child(x, INNER(cur), key)];
	it->leaf = cur;
	it->i = ox_leaf_pos(x, LEAF(cur), key, inclusive);
}

/* Position it before the first element. */
void ordidx_first(const struct ordidx *x, struct ordidx_iter *it)
{
	struct ordidx_node *cur = x->root;

	while (cur != NULL && !cur->leaf)
		cur = INNER(cur)->child[0];
	it->leaf = cur;
	it->i = 0;
}

/* The next element, or NULL at the end. */
void *ordidx_next(struct ordidx_iter *it)
{
	while (it->leaf != NULL && it->i >= it->leaf->n) {
		it->leaf = (struct ordidx_node *)LEAF(it->leaf)->next;
		it->i = 0;
	}
	if (it->leaf == NULL)
		return NULL;
	return LEAF(it->leaf)->key[it->i++];
}

/* State of ordidx_check()'s walk. */
struct ox_walk {
	const struct ordidx	*x;
	char			*err;
	size_t			 errlen;
	size_t			 count;
	size_t			 nodes;
	const void		*prev;		/* last element seen */
	const struct ox_leaf	*last;		/* last leaf seen */
};

#define OX_CHECK(cond, ...) do {					\
	if (!(cond)) {							\
		snprintf(w->err, w->errlen, __VA_ARGS__);		\
		return -1;						\
	}								\
} while (0)

/* Check a subtree at depth (1: the root); its first element in *first. */
static int ox_check_node(struct ox_walk *w, const struct ordidx_node *n,
    unsigned int depth, const void **first)
{
	const struct ordidx *x = w->x;
	const void *f;

	w->nodes++;
	OX_CHECK(n->n <= ox_cap(n), "ordidx: node of %u entries at depth %u",
	    n->n, depth);
	if (n == x->root)
		OX_CHECK(n->leaf || n->n >= 1, "ordidx: empty inner root");
	else
		OX_CHECK(n->n >= ox_min(n), "ordidx: node of %u entries at depth "
		    "%u, below the minimum %u", n->n, depth, ox_min(n));
	OX_CHECK(depth <= x->height, "ordidx: deeper than the height %u",
	    x->height);
	*first = NULL;
	if (n->leaf) {
		OX_CHECK(depth == x->height, "ordidx: leaf at depth %u, height "
		    "%u", depth, x->height);
		OX_CHECK(w->last == NULL || w->last->next == CLEAF(n),
		    "ordidx: leaf chain skips a leaf");
		w->last = CLEAF(n);
		for (unsigned int i = 0; i < n->n; i++) {
			const void *e = CLEAF(n)->key[i];

			OX_CHECK(e != NULL, "ordidx: NULL element");
			OX_CHECK(w->prev == NULL || strcmp(ox_key(x, w->prev),
			    ox_key(x, e)) < 0, "ordidx: %s not after %s",
			    ox_key(x, e), ox_key(x, w->prev));
			w->prev = e;
			w->count++;
		}
		if (n->n > 0)
			*first = CLEAF(n)->key[0];
		return 0;
	}
	for (unsigned int i = 0; i < n->n; i++) {
		if (ox_check_node(w, CINNER(n)->child[i], depth + 1, &f) != 0)
			return -1;
		OX_CHECK(CINNER(n)->key[i] == f, "ordidx: key %u at depth %u is "
		    "not its child's first element", i, depth);
		if (i == 0)
			*first = f;
	}
	return 0;
}

/* Check the structure; 0 or -1 with a description in err. */
int ordidx_check(const struct ordidx *x, char *err, size_t errlen)
{
	struct ox_walk walk = { x, err, errlen, 0, 0, NULL, NULL };
	struct ox_walk *w = &walk;
	const void *f;

	if (x->root == NULL) {
		OX_CHECK(x->count == 0 && x->height == 0,
		    "ordidx: no root but %zu elements", x->count);
	} else {
		if (ox_check_node(w, x->root, 1, &f) != 0)
			return -1;
		OX_CHECK(w->last->next == NULL, "ordidx: last leaf has a next");
	}
	OX_CHECK(w->count == x->count, "ordidx: %zu elements counted, %zu "
	    "walked", x->count, w->count);
	OX_CHECK(w->nodes + (x->spare != NULL) == x->nodes,
	    "ordidx: %zu nodes counted, %zu found", x->nodes,
	    w->nodes + (x->spare != NULL));
	return 0;
}
