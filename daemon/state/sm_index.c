/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_index.c - names (what a valid one is), hashing, and the
 * indexes: names (hash table and ordered B+tree), sessions, permits, tokens,
 * requests.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strcopy.h"
#include "daemon/state/sm-int.h"

/* --- names ------------------------------------------------------------------ */

/* Decode one UTF-8 sequence; returns its length or 0 if invalid. */
static size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
	size_t need, i;
	uint32_t c, min;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	} else if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		need = 1; c = s[0] & 0x1f; min = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		need = 2; c = s[0] & 0x0f; min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		need = 3; c = s[0] & 0x07; min = 0x10000;
	} else
		return 0;
	if (len < need + 1)
		return 0;
	for (i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return need + 1;
}

/*
 * Code points that change how text around them is shown without showing
 * themselves: bidirectional controls, zero-width characters, line and
 * paragraph separators, the byte order mark. A name with one could pass
 * for another name in a listing, so none is accepted.
 */
static bool invisible_cp(uint32_t cp)
{
	return cp == 0x00ad || cp == 0x061c || cp == 0x180e ||
	    (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
	    (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x2069) ||
	    cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb);
}

/*
 * 1-255 bytes of valid UTF-8 with no C0, DEL or C1 control characters and
 * no invisible formatting code points (invisible_cp()).
 */
bool sm_name_valid(const char *name, size_t len)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t i = 0, k;
	uint32_t cp;

	if (len == 0 || len > SM_NAME_MAX)
		return false;
	while (i < len) {
		/*
		 * Eight bytes of printable ASCII at once (the usual case): no
		 * byte below 0x20 (the first term) and none at or above 0x7f
		 * (the second); otherwise byte by byte below.
		 */
		if (len - i >= 8) {
			uint64_t w;

			memcpy(&w, s + i, sizeof w);
			if (((((w - 0x2020202020202020ULL) & ~w) |
			    (w + 0x0101010101010101ULL) | w) &
			    0x8080808080808080ULL) == 0) {
				i += 8;
				continue;
			}
		}
		/* Printable ASCII needs no decoding. */
		if (s[i] >= 0x20 && s[i] < 0x7f) {
			i++;
			continue;
		}
		k = utf8_decode(s + i, len - i, &cp);
		if (k == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
		    invisible_cp(cp))
			return false;
		i += k;
	}
	return true;
}

/* Copy a client-supplied label, cut at max bytes, bad bytes become '?'. */
char *sm_label(struct sm *sm, const char *s)
{
	size_t len = strlen(s), i = 0, k, o = 0;
	char *p;
	uint32_t cp;

	if (len > SM_STR_MAX)
		len = SM_STR_MAX;
	p = sm_alloc(sm, len + 1);
	if (p == NULL)
		return NULL;
	while (i < len) {
		k = utf8_decode((const unsigned char *)s + i, len - i, &cp);
		if (k == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
			p[o++] = '?';
			i++;
			continue;
		}
		memcpy(p + o, s + i, k);
		o += k;
		i += k;
	}
	return p;	/* o <= len: the rest stays zero */
}

/* --- hashing and indexes --------------------------------------------------- */

/* Hash of a name. */
uint64_t name_hash(const struct sm *sm, const char *name, size_t len)
{
	return hmap_siphash(sm->cfg.hash_key, name, len);
}

/* Hash of two 64-bit values (SipHash: clients may choose them). */
uint64_t pair_hash(const struct sm *sm, uint64_t a, uint64_t b)
{
	return hmap_siphash_u64x2(sm->cfg.hash_key, a, b);
}

/* Finalizer of MurmurHash3: every input bit moves every output bit. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/*
 * Hash of two values the daemon chose (permit ids, fencing tokens): no
 * client can aim them at a bucket, so a keyed mix is enough and costs a
 * fraction of SipHash on every grant. Lookups by a client-given value only
 * walk chains built from the daemon's values.
 */
uint64_t id_hash(const struct sm *sm, uint64_t a, uint64_t b)
{
	uint64_t k0, k1;

	memcpy(&k0, sm->cfg.hash_key, sizeof k0);
	memcpy(&k1, sm->cfg.hash_key + 8, sizeof k1);
	return mix64(a ^ k0 ^ mix64(b ^ k1));
}

/* Does a table node carry this name? */
static bool name_eq(const struct hnode *n, const void *key)
{
	const struct sm_sem *sem = container_of(n, struct sm_sem, node);
	const struct name_key *k = key;

	return sem->len == k->len && memcmp(sem->name, k->name, k->len) == 0;
}

/* Look up a semaphore by a name of len bytes. */
struct sm_sem *sem_find_len(const struct sm *sm, const char *name,
    size_t len)
{
	struct name_key k = { name, len };
	struct hnode *n;

	n = hmap_find(&sm->names, name_hash(sm, k.name, k.len), name_eq, &k);
	return n ? container_of(n, struct sm_sem, node) : NULL;
}

/* Look up a semaphore by name. */
struct sm_sem *sem_find(const struct sm *sm, const char *name)
{
	return sem_find_len(sm, name, strlen(name));
}

/*
 * The semaphore a client named last, if name is it: a client usually names
 * the same semaphore in its down and its up, and this spares the hash, the
 * table walk and the name check (a name in the table is valid). Any free
 * of a semaphore bumps sm->sem_gen and so forgets every such pointer.
 */
struct sm_sem *client_sem(const struct sm *sm,
    const struct sm_client *c, const char *name, size_t len)
{
	const struct sm_sem *sem = c->last_sem;

	if (sem != NULL && c->last_gen == sm->sem_gen && sem->len == len &&
	    strcopy_same(sem->name, name, len))
		return c->last_sem;
	return NULL;
}

/* Remember sem as the one c named last. */
void client_sem_set(const struct sm *sm, struct sm_client *c,
    struct sm_sem *sem)
{
	c->last_sem = sem;
	c->last_gen = sm->sem_gen;
}

/* A record's u64 id, delta bytes from its table node (see id_lookup). */
struct id_key {
	ptrdiff_t	delta;
	uint64_t	id;
};

/* Does the record of a table node have the key's id? */
static bool id_eq(const struct hnode *n, const void *key)
{
	const struct id_key *k = key;
	uint64_t id;

	memcpy(&id, (const char *)n + k->delta, sizeof id);
	return id == k->id;
}

/*
 * The one lookup of every table keyed by a u64 id (sessions, permits,
 * clients): the record whose node is at node_off in it and whose id, at
 * id_off, is id; or NULL. Called through ID_LOOKUP, which gives the offsets.
 */
void *id_lookup(const struct hmap *m, uint64_t hash, size_t node_off,
    size_t id_off, uint64_t id)
{
	struct id_key k = { (ptrdiff_t)id_off - (ptrdiff_t)node_off, id };
	struct hnode *n = hmap_find(m, hash, id_eq, &k);

	return n != NULL ? (char *)n - node_off : NULL;
}

/* qsort order of session pointers by id. */
int sm_session_cmp(const void *a, const void *b)
{
	const struct sm_session *x = *(const struct sm_session *const *)a;
	const struct sm_session *y = *(const struct sm_session *const *)b;

	return (x->id > y->id) - (x->id < y->id);
}

/* qsort order of waiter pointers by arrival. */
int sm_wait_cmp(const void *a, const void *b)
{
	const struct sm_wait *x = *(const struct sm_wait *const *)a;
	const struct sm_wait *y = *(const struct sm_wait *const *)b;

	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Look up a session by id. */
struct sm_session *session_find(const struct sm *sm, uint64_t id)
{
	return ID_LOOKUP(&sm->sessions, pair_hash(sm, id, 0),
	    struct sm_session, node, id, id);
}

/* Look up a hold by permit id. */
struct sm_hold *permit_find(const struct sm *sm, uint64_t id)
{
	return ID_LOOKUP(&sm->permits, id_hash(sm, id, 1),
	    struct sm_hold, permit_node, permit_id, id);
}

struct token_key {
	const struct sm_sem	*sem;
	uint64_t		token;
};

/* Does a token node match (semaphore, token)? */
static bool token_eq(const struct hnode *n, const void *key)
{
	const struct sm_hold *h = container_of(n, struct sm_hold, token_node);
	const struct token_key *k = key;

	return h->sem == k->sem && h->token == k->token;
}

/* Look up the hold of a semaphore with this fencing token. */
struct sm_hold *token_find(const struct sm *sm, const struct sm_sem *sem,
    uint64_t token)
{
	struct token_key k = { sem, token };
	struct hnode *n;

	n = hmap_find(&sm->tokens, id_hash(sm, sem->node.hash, token),
	    token_eq, &k);
	return n ? container_of(n, struct sm_hold, token_node) : NULL;
}

/* Does a request node match (session, request id)? */
static bool req_eq(const struct hnode *n, const void *key)
{
	const struct sm_reqkey *r = container_of(n, struct sm_reqkey, node);
	const struct sm_reqkey *k = key;

	return r->session_id == k->session_id && r->request_id == k->request_id;
}

/*
 * Hash of a (session, request id) key. A down looks its key up and then
 * indexes its hold or waiter under it: the last hash is kept for that.
 */
static uint64_t req_hash(struct sm *sm, uint64_t session_id, uint64_t request_id)
{
	if (!sm->req_memo_valid || sm->req_memo_sid != session_id ||
	    sm->req_memo_rid != request_id) {
		sm->req_memo_sid = session_id;
		sm->req_memo_rid = request_id;
		sm->req_memo = pair_hash(sm, session_id, request_id);
		sm->req_memo_valid = true;
	}
	return sm->req_memo;
}

/* Find the hold or waiter made by a session's down with this id. */
struct sm_reqkey *req_find(struct sm *sm, uint64_t session_id,
    uint64_t request_id)
{
	struct sm_reqkey k = { .session_id = session_id, .request_id = request_id };
	struct hnode *n;

	n = hmap_find(&sm->requests, req_hash(sm, session_id, request_id),
	    req_eq, &k);
	return n ? container_of(n, struct sm_reqkey, node) : NULL;
}

/* Index a down's request key (id 0 is never indexed). */
void req_index(struct sm *sm, struct sm_reqkey *r, uint64_t session_id,
    uint64_t request_id, int kind)
{
	r->session_id = session_id;
	r->request_id = request_id;
	r->kind = (uint8_t)kind;
	r->indexed = request_id != 0;
	if (r->indexed)
		hmap_insert(&sm->requests, &r->node,
		    req_hash(sm, session_id, request_id));
}

/* Drop a request key from the index. */
void req_unindex(struct sm *sm, struct sm_reqkey *r)
{
	if (r->indexed)
		hmap_remove(&sm->requests, &r->node);
	r->indexed = false;
}
