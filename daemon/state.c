/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state.c - semaphore table, sessions, holds, waiters, deadlines.
 *
 * Plain logic: no I/O, no clock, no randomness (see state.h). Every permit a
 * client holds is a struct sm_hold, owned by its session or, for a detached
 * hold, by the principal until its lease runs out. Every down that waits is a
 * struct sm_wait around a core struct sema_waiter; the core decides who gets
 * permits (strict FIFO, direct hand-off) and calls wait_wake() on a grant.
 *
 * For an OWNED semaphore, held + count == limit at all times: permits only
 * move between the core's free count and hold records, and a limit change
 * moves the free count by the same delta (so after a shrink count may be
 * negative while the holders drain). A SIGNAL semaphore has no holds: a down
 * consumes permits, any up adds them back, and count never exceeds limit.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/semaphore.h"
#include "daemon/hmap.h"
#include "daemon/ordidx.h"
#include "daemon/state.h"

#define SM_LIMIT_MAX	(1u << 30)
#define SM_STR_MAX	255	/* client name, host: longer is cut */

enum { T_WAIT = 1, T_HOLD, T_SESSION };

struct sm_timer {
	uint64_t	when;
	uint64_t	seq;		/* ties broken in arming order */
	size_t		idx;		/* in the heap, or SIZE_MAX */
	int		kind;
};

/*
 * A principal: who sessions, holds and names belong to, with its counts for
 * the per-principal caps (struct sm_caller). Referenced by its clients,
 * identities and the names it created; freed with the last reference (every
 * counted object holds one, so the counts are then zero).
 */
struct sm_principal {
	struct hnode	node;		/* sm->principals */
	unsigned int	refs;
	uint64_t	count[SM_NLIMITS];
	size_t		len;
	char		name[];
};

/* Who a session is; shared by the session and its detached holds. */
struct sm_ident {
	unsigned int		refs;
	uint32_t		pid;
	struct sm_principal	*pr;
	char			*client_name;
	char			*host;
};

/* Laid out without holes: an idle name costs this plus its bytes. */
struct sm_sem {
	struct hnode		node;		/* sm->names */
	struct semaphore	sem;
	uint64_t		held;		/* permits in hold records */
	struct list_head	holders;	/* sm_hold.sem_entry, grant order */
	struct list_head	waiters;	/* sm_wait.sem_entry, queue order */
	struct sm_principal	*owner;		/* explicit creator; NULL: nobody */
	uint32_t		limit;
	uint32_t		nholders;
	uint32_t		nwaiters;
	uint8_t			mode;		/* Semd__Mode */
	bool			auto_created;
	uint8_t			len;		/* <= SM_NAME_MAX */
	char			name[];
};

_Static_assert(SM_NAME_MAX <= UINT8_MAX, "sm_sem.len holds a name length");

/*
 * Key of the idempotency index: (session id, request id) of a down, and
 * what it led to: a waiter, a hold, or a memo of its answer.
 */
enum { REQ_WAIT, REQ_HOLD, REQ_MEMO };
struct sm_reqkey {
	struct hnode	node;
	uint64_t	session_id;
	uint64_t	request_id;
	uint8_t		kind;		/* REQ_* */
	bool		indexed;
};

struct sm_hold {
	struct hnode		permit_node;	/* sm->permits */
	struct hnode		token_node;	/* sm->tokens */
	struct sm_reqkey	req;		/* sm->requests */
	uint64_t		permit_id;
	uint64_t		token;
	uint32_t		n;
	struct sm_sem		*sem;
	struct sm_session	*session;	/* NULL: detached */
	struct sm_ident		*ident;
	struct list_head	sem_entry;
	struct list_head	owner_entry;	/* session->holds or sm->detached */
	uint64_t		since_wall;
	uint64_t		expires_wall;	/* detached only */
	struct sm_timer		expiry;		/* detached only */
};

struct sm_wait {
	struct sema_waiter	w;
	struct sm_reqkey	req;
	struct sm		*sm;
	uint64_t		seq;		/* arrival order, unique */
	uint32_t		n;
	uint32_t		lease_ms;
	struct sm_sem		*sem;
	struct sm_session	*session;
	struct list_head	sem_entry;
	struct list_head	session_entry;
	uint64_t		since_ms;
	uint64_t		since_wall;
	uint64_t		deadline_wall;	/* 0: none */
	struct sm_timer		deadline;
};

/*
 * A session. With a lease it ends lease_ms after the last request heard on
 * it (heard), connected or not: while connected its expiry timer is re-armed
 * lazily when it fires early (a request only stores heard). While its
 * client is away (lingering) its waiters keep their places; those of
 * signal-mode semaphores are parked, since a grant there would be consumed
 * by nobody. Answers that leave nothing behind to find a retry by (a
 * signal-mode grant, a waiting down's failure) are kept as memos for a
 * down retried after a resume, the newest max-waiters-per-session of them.
 */
struct sm_session {
	struct hnode		node;		/* sm->sessions */
	uint64_t		id;
	uint8_t			secret[SM_SECRET_LEN];
	struct sm_client	*client;	/* NULL while lingering */
	struct sm_ident		*ident;
	uint32_t		lease_ms;
	uint32_t		nholds;
	uint32_t		nwaiters;
	uint32_t		nmemos;
	uint64_t		heard;		/* time of its last request */
	struct list_head	holds;
	struct list_head	waiters;
	struct list_head	memos;		/* struct sm_memo, oldest first */
	struct sm_timer		expiry;
};

/* The answer to a down, for its retry (see struct sm_session). */
struct sm_memo {
	struct sm_reqkey	req;		/* sm->requests, kind REQ_MEMO */
	struct list_head	entry;		/* session->memos */
	int			code;
	uint32_t		n;		/* a grant's */
	uint64_t		token;
};

struct sm_client {
	void			*conn;
	struct sm_principal	*pr;
	bool			local;		/* SM_CLIENT_LOCAL: a close is death */
	bool			detach;		/* Detach: the lease outlives a close */
	uint8_t			secret[SM_SECRET_LEN];
	bool			hello;
	struct sm_session	*session;
	struct list_head	entry;
	/* The last semaphore it named, valid while sm->sem_gen is last_gen. */
	struct sm_sem		*last_sem;
	uint64_t		last_gen;
};

/* A freed hold or waiter kept for the next one (see sm_cache_get). */
struct sm_cached {
	struct sm_cached	*next;
};

struct sm_cache {
	struct sm_cached	*head;
	size_t			n;
};

#define SM_CACHE_MAX	4096	/* freed records kept per kind */
#define SM_SEM_CACHE_MAX 256	/* freed semaphores kept per size class */
/*
 * Semaphore records come in size classes 16 bytes apart, each the usable
 * size of a malloc chunk (8 bytes of header), so a freed auto-created name
 * is reused by the next one of about its length without going to the heap.
 */
#define SEM_CLASS(len)	((sizeof(struct sm_sem) + (len) + 1 + 8 + 15) / 16)
#define SEM_CLASS_SIZE(k) ((k) * 16 - 8)
#define SM_SEM_CLASSES	(SEM_CLASS(SM_NAME_MAX) + 1)

struct sm {
	struct sm_config	cfg;
	struct sm_cache		hold_cache;
	struct sm_cache		wait_cache;
	struct sm_cache		sem_cache[SM_SEM_CLASSES];
	struct sm_out		out;
	uint64_t		start_ms;
	uint64_t		token_base;
	uint64_t		token_hwm;	/* highest token of freed semaphores */
	struct hmap		names;
	struct ordidx		byname;		/* the same names, in order */
	uint64_t		sem_gen;	/* semaphores freed so far */
	uint64_t		byname_lost;	/* frees missing from it: a bug */
	struct hmap		sessions;
	struct hmap		permits;
	struct hmap		tokens;
	struct hmap		requests;
	struct sm_timer		**heap;
	size_t			heap_n;
	size_t			heap_cap;
	uint64_t		timer_seq;
	uint64_t		next_session;
	uint64_t		next_permit;
	uint64_t		next_wait_seq;
	struct list_head	clients;
	struct list_head	detached;
	struct sm_counters	ctr;
	uint64_t		mem;
	bool			shutting_down;
	uint64_t		overgrants;	/* grants that left held > limit: a bug */
	struct hmap		principals;
	const struct sm_caller	*who;		/* of the request in progress */
	sm_visible_fn		visible;	/* what List shows, or NULL: all */
	void			*visible_arg;
	uint64_t		now;		/* of the call in progress */
	bool			req_memo_valid;	/* req_hash()'s last result */
	uint64_t		req_memo_sid;
	uint64_t		req_memo_rid;
	uint64_t		req_memo;
	int			cur_op;		/* op the replies answer */
};

static void hold_release(struct sm *sm, struct sm_hold *h, bool up);
static void sem_maybe_free(struct sm *sm, struct sm_sem *sem);
static void memo_add(struct sm *sm, struct sm_session *s, uint64_t request_id,
    int code, uint32_t n, uint64_t token);

/* Default configuration. */
void sm_config_defaults(struct sm_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->default_limit = 1;
	cfg->max_semaphores = 1000000;
	cfg->max_sessions = 100000;
	cfg->max_waiters_per_session = 1024;
	cfg->max_holds_per_session = 4096;
	cfg->max_lease_ms = 24u * 3600u * 1000u;
	cfg->max_reply = 1u << 20;
	cfg->server = "semd";
}

/* --- memory, with accounting --------------------------------------------- */

/* Zeroed allocation counted in the memory figure. */
static void *sm_alloc(struct sm *sm, size_t size)
{
	void *p = calloc(1, size);

	if (p != NULL)
		sm->mem += size;
	return p;
}

/* Free what sm_alloc() gave. */
static void sm_dealloc(struct sm *sm, void *p, size_t size)
{
	if (p == NULL)
		return;
	sm->mem -= size;
	free(p);
}

/*
 * Zeroed record from a cache of freed ones, so a down/up on an existing
 * name does not go to the heap; counted like sm_alloc().
 */
static void *sm_cache_get(struct sm *sm, struct sm_cache *c, size_t size)
{
	struct sm_cached *p = c->head;

	if (p == NULL)
		return sm_alloc(sm, size);
	c->head = p->next;
	c->n--;
	memset(p, 0, size);
	sm->mem += size;
	return p;
}

/* Give a record back to its cache (or the heap when max are kept). */
static void sm_cache_put_max(struct sm *sm, struct sm_cache *c, void *p,
    size_t size, size_t max)
{
	struct sm_cached *e = p;

	if (p == NULL)
		return;
	if (c->n >= max) {
		sm_dealloc(sm, p, size);
		return;
	}
	sm->mem -= size;
	e->next = c->head;
	c->head = e;
	c->n++;
}

/* Give a hold or waiter record back. */
static void sm_cache_put(struct sm *sm, struct sm_cache *c, void *p, size_t size)
{
	sm_cache_put_max(sm, c, p, size, SM_CACHE_MAX);
}

/* Free a cache's records. */
static void sm_cache_drain(struct sm_cache *c)
{
	struct sm_cached *p;

	while ((p = c->head) != NULL) {
		c->head = p->next;
		free(p);
	}
	c->n = 0;
}

/* Free a string from sm_label(). */
static void sm_strfree(struct sm *sm, char *s)
{
	if (s != NULL)
		sm_dealloc(sm, s, strlen(s) + 1);
}

/* Unix time in ms for a monotonic now. */
static uint64_t sm_wall(const struct sm *sm, uint64_t now)
{
	return sm->cfg.wall_ms + (now - sm->start_ms);
}

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
static char *sm_label(struct sm *sm, const char *s)
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
static uint64_t name_hash(const struct sm *sm, const char *name, size_t len)
{
	return hmap_siphash(sm->cfg.hash_key, name, len);
}

/* Hash of two 64-bit values (SipHash: clients may choose them). */
static uint64_t pair_hash(const struct sm *sm, uint64_t a, uint64_t b)
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
static uint64_t id_hash(const struct sm *sm, uint64_t a, uint64_t b)
{
	uint64_t k0, k1;

	memcpy(&k0, sm->cfg.hash_key, sizeof k0);
	memcpy(&k1, sm->cfg.hash_key + 8, sizeof k1);
	return mix64(a ^ k0 ^ mix64(b ^ k1));
}

struct name_key {
	const char	*name;
	size_t		len;
};

/* Does a table node carry this name? */
static bool name_eq(const struct hnode *n, const void *key)
{
	const struct sm_sem *sem = container_of(n, struct sm_sem, node);
	const struct name_key *k = key;

	return sem->len == k->len && memcmp(sem->name, k->name, k->len) == 0;
}

/* Look up a semaphore by a name of len bytes. */
static struct sm_sem *sem_find_len(const struct sm *sm, const char *name,
    size_t len)
{
	struct name_key k = { name, len };
	struct hnode *n;

	n = hmap_find(&sm->names, name_hash(sm, k.name, k.len), name_eq, &k);
	return n ? container_of(n, struct sm_sem, node) : NULL;
}

/* Look up a semaphore by name. */
static struct sm_sem *sem_find(const struct sm *sm, const char *name)
{
	return sem_find_len(sm, name, strlen(name));
}

/*
 * The semaphore a client named last, if name is it: a client usually names
 * the same semaphore in its down and its up, and this spares the hash, the
 * table walk and the name check (a name in the table is valid). Any free
 * of a semaphore bumps sm->sem_gen and so forgets every such pointer.
 */
static struct sm_sem *client_sem(const struct sm *sm,
    const struct sm_client *c, const char *name, size_t len)
{
	const struct sm_sem *sem = c->last_sem;

	if (sem != NULL && c->last_gen == sm->sem_gen && sem->len == len &&
	    memcmp(sem->name, name, len) == 0)
		return c->last_sem;
	return NULL;
}

/* Remember sem as the one c named last. */
static void client_sem_set(const struct sm *sm, struct sm_client *c,
    struct sm_sem *sem)
{
	c->last_sem = sem;
	c->last_gen = sm->sem_gen;
}

/* Does a session node have this id? */
static bool session_eq(const struct hnode *n, const void *key)
{
	return container_of(n, struct sm_session, node)->id ==
	    *(const uint64_t *)key;
}

/* Look up a session by id. */
static struct sm_session *session_find(const struct sm *sm, uint64_t id)
{
	struct hnode *n;

	n = hmap_find(&sm->sessions, pair_hash(sm, id, 0), session_eq, &id);
	return n ? container_of(n, struct sm_session, node) : NULL;
}

/* Does a permit node have this id? */
static bool permit_eq(const struct hnode *n, const void *key)
{
	return container_of(n, struct sm_hold, permit_node)->permit_id ==
	    *(const uint64_t *)key;
}

/* Look up a hold by permit id. */
static struct sm_hold *permit_find(const struct sm *sm, uint64_t id)
{
	struct hnode *n;

	n = hmap_find(&sm->permits, id_hash(sm, id, 1), permit_eq, &id);
	return n ? container_of(n, struct sm_hold, permit_node) : NULL;
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
static struct sm_hold *token_find(const struct sm *sm, const struct sm_sem *sem,
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
static struct sm_reqkey *req_find(struct sm *sm, uint64_t session_id,
    uint64_t request_id)
{
	struct sm_reqkey k = { .session_id = session_id, .request_id = request_id };
	struct hnode *n;

	n = hmap_find(&sm->requests, req_hash(sm, session_id, request_id),
	    req_eq, &k);
	return n ? container_of(n, struct sm_reqkey, node) : NULL;
}

/* Index a down's request key (id 0 is never indexed). */
static void req_index(struct sm *sm, struct sm_reqkey *r, uint64_t session_id,
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
static void req_unindex(struct sm *sm, struct sm_reqkey *r)
{
	if (r->indexed)
		hmap_remove(&sm->requests, &r->node);
	r->indexed = false;
}

/* --- the deadline heap ------------------------------------------------------ */

/* Does timer a fire before timer b? */
static bool timer_before(const struct sm_timer *a, const struct sm_timer *b)
{
	return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

/* Put heap slot i's timer in place, moving it up or down. */
static void heap_fix(struct sm *sm, size_t i)
{
	struct sm_timer **h = sm->heap, *t = h[i];
	size_t p, c;

	while (i > 0 && timer_before(t, h[p = (i - 1) / 2])) {
		h[i] = h[p];
		h[i]->idx = i;
		i = p;
	}
	for (;;) {
		c = 2 * i + 1;
		if (c >= sm->heap_n)
			break;
		if (c + 1 < sm->heap_n && timer_before(h[c + 1], h[c]))
			c++;
		if (!timer_before(h[c], t))
			break;
		h[i] = h[c];
		h[i]->idx = i;
		i = c;
	}
	h[i] = t;
	t->idx = i;
}

/* Arm a timer; -ENOMEM if the heap cannot grow. */
static int timer_arm(struct sm *sm, struct sm_timer *t, int kind, uint64_t when)
{
	struct sm_timer **h;
	size_t cap;

	if (sm->heap_n == sm->heap_cap) {
		cap = sm->heap_cap ? sm->heap_cap * 2 : 64;
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
		h = realloc(sm->heap, cap * sizeof *h);
		if (h == NULL)
			return -ENOMEM;
		sm->heap = h;
		sm->heap_cap = cap;
	}
	t->kind = kind;
	t->when = when;
	t->seq = sm->timer_seq++;
	sm->heap[sm->heap_n] = t;
	t->idx = sm->heap_n++;
	heap_fix(sm, t->idx);
	return 0;
}

/* Disarm a timer (no-op when not armed). */
static void timer_disarm(struct sm *sm, struct sm_timer *t)
{
	size_t i = t->idx;

	if (i == SIZE_MAX)
		return;
	t->idx = SIZE_MAX;
	if (i == --sm->heap_n)
		return;
	sm->heap[i] = sm->heap[sm->heap_n];
	sm->heap[i]->idx = i;
	heap_fix(sm, i);
}

/* --- replies --------------------------------------------------------------- */

/* Count a duration in a histogram: bucket ceil(log2(ms)), capped. */
static void hist_add(struct sm_hist *h, uint64_t ms)
{
	unsigned int i = ms <= 1 ? 0 : 64 - (unsigned int)__builtin_clzll(ms - 1);

	h->bucket[i < SM_HIST_BUCKETS - 1 ? i : SM_HIST_BUCKETS - 1]++;
	h->sum_ms += ms;
	h->count++;
}

/* Hand a reply to the I/O layer if the client is still connected. */
static void reply_send(struct sm *sm, struct sm_client *c, Semd__Reply *r)
{
	if (r->code != SEMD__CODE__OK)
		sm->ctr.errors++;
	if ((unsigned int)r->code < SM_NCODES)
		sm->ctr.replies[sm->cur_op][r->code]++;
	if (c != NULL && c->conn != NULL && sm->out.reply != NULL)
		sm->out.reply(sm->out.ctx, c->conn, r);
}

/* Send an error reply with a formatted message. */
static void __attribute__((format(printf, 5, 6)))
reply_err(struct sm *sm, struct sm_client *c, uint64_t id, int code,
    const char *fmt, ...)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	r.id = id;
	r.code = code;
	r.message = msg;
	reply_send(sm, c, &r);
}

/* Send a bare OK. */
static void reply_ok(struct sm *sm, struct sm_client *c, uint64_t id)
{
	Semd__Reply r = SEMD__REPLY__INIT;

	r.id = id;
	reply_send(sm, c, &r);
}

/* Send a Grant. */
static void reply_grant(struct sm *sm, struct sm_client *c, uint64_t id,
    uint64_t permit_id, uint64_t token, uint32_t n, uint64_t waited_ms)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__Grant g = SEMD__GRANT__INIT;

	g.permit_id = permit_id;
	g.token = token;
	g.n = n;
	g.waited_us = waited_ms * 1000;
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_GRANT;
	r.grant = &g;
	reply_send(sm, c, &r);
}

/* Send Released{n}. */
static void reply_released(struct sm *sm, struct sm_client *c, uint64_t id,
    uint32_t n)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__Released rel = SEMD__RELEASED__INIT;

	rel.n = n;
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_RELEASED;
	r.released = &rel;
	reply_send(sm, c, &r);
}

/* --- principals, identities ---------------------------------------------- */

/* Does a principal node carry this name? */
static bool principal_eq(const struct hnode *n, const void *key)
{
	const struct sm_principal *pr = container_of(n, struct sm_principal, node);
	const struct name_key *k = key;

	return pr->len == k->len && memcmp(pr->name, k->name, k->len) == 0;
}

/* A reference to the principal named name, made on first use; NULL: no memory. */
static struct sm_principal *principal_get(struct sm *sm, const char *name)
{
	struct name_key k = { name, strlen(name) };
	struct sm_principal *pr;
	struct hnode *n;
	uint64_t hash = name_hash(sm, k.name, k.len);

	n = hmap_find(&sm->principals, hash, principal_eq, &k);
	if (n != NULL) {
		pr = container_of(n, struct sm_principal, node);
		pr->refs++;
		return pr;
	}
	pr = sm_alloc(sm, sizeof *pr + k.len + 1);
	if (pr == NULL)
		return NULL;
	pr->refs = 1;
	pr->len = k.len;
	memcpy(pr->name, name, k.len);
	hmap_insert(&sm->principals, &pr->node, hash);
	return pr;
}

/* Another reference to pr. */
static struct sm_principal *principal_ref(struct sm_principal *pr)
{
	pr->refs++;
	return pr;
}

/* Drop a reference; the last frees the principal. */
static void principal_put(struct sm *sm, struct sm_principal *pr)
{
	if (pr == NULL || --pr->refs > 0)
		return;
	hmap_remove(&sm->principals, &pr->node);
	sm_dealloc(sm, pr, sizeof *pr + pr->len + 1);
}

static const char *const limit_names[SM_NLIMITS] = {
	[SM_LIMIT_SESSIONS] = "sessions",
	[SM_LIMIT_PERMITS] = "permits",
	[SM_LIMIT_WAITERS] = "waiters",
	[SM_LIMIT_SEMAPHORES] = "semaphores",
};

/*
 * May pr have n more of kind under the caller's cap? Otherwise answer
 * RESOURCE_EXHAUSTED naming the cap.
 */
static bool principal_room(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_principal *pr, enum sm_limit_kind kind, uint64_t n)
{
	uint64_t cap = sm->who != NULL ? sm->who->limit[kind] : 0;

	if (cap == 0 || (pr->count[kind] <= cap && n <= cap - pr->count[kind]))
		return true;
	reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
	    "quota: %s has %" PRIu64 " %s, %" PRIu64 " more would pass its %s quota (%" PRIu64 ")",
	    pr->name, pr->count[kind], limit_names[kind], n, limit_names[kind], cap);
	return false;
}

/* Count delta more (or fewer) of kind for pr. */
static void principal_count(struct sm_principal *pr, enum sm_limit_kind kind,
    int64_t delta)
{
	pr->count[kind] += (uint64_t)delta;
}

/* Take a reference. */
static struct sm_ident *ident_get(struct sm_ident *id)
{
	id->refs++;
	return id;
}

/* Drop a reference; free on the last. */
static void ident_put(struct sm *sm, struct sm_ident *id)
{
	if (id == NULL || --id->refs > 0)
		return;
	principal_put(sm, id->pr);
	sm_strfree(sm, id->client_name);
	sm_strfree(sm, id->host);
	sm_dealloc(sm, id, sizeof *id);
}

/* Make an identity from a principal and a Hello. */
static struct sm_ident *ident_new(struct sm *sm, struct sm_principal *pr,
    const Semd__Hello *h)
{
	struct sm_ident *id = sm_alloc(sm, sizeof *id);

	if (id == NULL)
		return NULL;
	id->refs = 1;
	id->pid = h->pid;
	id->pr = principal_ref(pr);
	id->client_name = sm_label(sm, h->client_name);
	id->host = sm_label(sm, h->host);
	if (id->client_name == NULL || id->host == NULL) {
		ident_put(sm, id);
		return NULL;
	}
	return id;
}

/* --- semaphores ---------------------------------------------------------- */

/* Create a semaphore; NULL when out of memory. */
static struct sm_sem *sem_new(struct sm *sm, const char *name, uint32_t limit,
    int mode, bool auto_created, uint64_t now)
{
	size_t len = strlen(name), k = SEM_CLASS(len);
	struct sm_sem *sem = sm_cache_get(sm, &sm->sem_cache[k],
	    SEM_CLASS_SIZE(k));

	if (sem == NULL)
		return NULL;
	memcpy(sem->name, name, len);
	sem->len = (uint8_t)len;
	if (ordidx_insert(&sm->byname, sem) != 0) {
		sm_cache_put_max(sm, &sm->sem_cache[k], sem, SEM_CLASS_SIZE(k),
		    SM_SEM_CACHE_MAX);
		return NULL;
	}
	sema_init(&sem->sem, limit);
	sem->sem.token = sm->token_base + (now - sm->start_ms) * 1000;
	if (sem->sem.token < sm->token_hwm)
		sem->sem.token = sm->token_hwm;
	sem->limit = limit;
	sem->mode = (uint8_t)mode;
	sem->auto_created = auto_created;
	sem->owner = NULL;
	INIT_LIST_HEAD(&sem->holders);
	INIT_LIST_HEAD(&sem->waiters);
	hmap_insert(&sm->names, &sem->node, name_hash(sm, name, len));
	sm->ctr.semaphores++;
	return sem;
}

/* Make pr the owner of an explicitly created sem: it counts against pr's cap. */
static void sem_set_owner(struct sm_sem *sem, struct sm_principal *pr)
{
	if (sem->owner != NULL)
		return;
	principal_count(pr, SM_LIMIT_SEMAPHORES, 1);
	sem->owner = principal_ref(pr);
}

/* Give the owner's count back (the semaphore goes away). */
static void sem_unown(struct sm *sm, struct sm_sem *sem)
{
	if (sem->owner == NULL)
		return;
	principal_count(sem->owner, SM_LIMIT_SEMAPHORES, -1);
	principal_put(sm, sem->owner);
	sem->owner = NULL;
}

/*
 * May the caller manage sem (delete, set-limit, release others' holds, see
 * every holder)? Administrators may; otherwise only the principal that
 * created it explicitly (nobody owns an auto-created name).
 */
static bool sem_manager(const struct sm *sm, const struct sm_client *c,
    const struct sm_sem *sem)
{
	return sm->who == NULL || (sm->who->privs & SM_PRIV_ADMIN) != 0 ||
	    (sem->owner != NULL && sem->owner == c->pr);
}

/* Remove a semaphore that has no holders and no waiters. */
static void sem_free(struct sm *sm, struct sm_sem *sem)
{
	/* A name created again later must not reuse its tokens. */
	if (sem->sem.token > sm->token_hwm)
		sm->token_hwm = sem->sem.token;
	hmap_remove(&sm->names, &sem->node);
	sm->sem_gen++;
	/* Fails only in sm_free(), which drops the whole index first. */
	if (ordidx_remove(&sm->byname, sem) != 0)
		sm->byname_lost++;
	sm->ctr.semaphores--;
	sem_unown(sm, sem);
	sm_cache_put_max(sm, &sm->sem_cache[SEM_CLASS(sem->len)], sem,
	    SEM_CLASS_SIZE(SEM_CLASS(sem->len)), SM_SEM_CACHE_MAX);
}

/* Free an auto-created semaphore nobody uses any more. */
static void sem_maybe_free(struct sm *sm, struct sm_sem *sem)
{
	if (sem->auto_created && sem->nholders == 0 && sem->nwaiters == 0)
		sem_free(sm, sem);
}

/* --- holds -------------------------------------------------------------- */

/* Record a grant of n permits as a hold; NULL when out of memory. */
static struct sm_hold *hold_new(struct sm *sm, struct sm_sem *sem,
    struct sm_session *s, uint64_t request_id, uint32_t n, uint64_t token,
    uint32_t lease_ms, uint64_t now)
{
	struct sm_hold *h = sm_cache_get(sm, &sm->hold_cache, sizeof *h);

	if (h == NULL)
		return NULL;
	h->permit_id = ++sm->next_permit;
	h->token = token;
	h->n = n;
	h->sem = sem;
	h->ident = ident_get(s->ident);
	h->since_wall = sm_wall(sm, now);
	h->expiry.idx = SIZE_MAX;
	if (lease_ms > 0) {
		if (lease_ms > sm->cfg.max_lease_ms)
			lease_ms = sm->cfg.max_lease_ms;
		if (timer_arm(sm, &h->expiry, T_HOLD, now + lease_ms) != 0) {
			ident_put(sm, h->ident);
			sm_cache_put(sm, &sm->hold_cache, h, sizeof *h);
			return NULL;
		}
		h->expires_wall = sm_wall(sm, now) + lease_ms;
		list_add_tail(&h->owner_entry, &sm->detached);
	} else {
		h->session = s;
		list_add_tail(&h->owner_entry, &s->holds);
		s->nholds++;
	}
	list_add_tail(&h->sem_entry, &sem->holders);
	sem->nholders++;
	sem->held += n;
	hmap_insert(&sm->permits, &h->permit_node, id_hash(sm, h->permit_id, 1));
	hmap_insert(&sm->tokens, &h->token_node,
	    id_hash(sm, sem->node.hash, token));
	req_index(sm, &h->req, s->id, request_id, REQ_HOLD);
	sm->ctr.holders++;
	principal_count(h->ident->pr, SM_LIMIT_PERMITS, n);
	return h;
}

/* Forget a hold; with up, its permits go back to the semaphore. */
static void hold_release(struct sm *sm, struct sm_hold *h, bool up)
{
	struct sm_sem *sem = h->sem;
	uint32_t n = h->n;

	timer_disarm(sm, &h->expiry);
	list_del_init(&h->owner_entry);
	if (h->session != NULL)
		h->session->nholds--;
	list_del_init(&h->sem_entry);
	sem->nholders--;
	sem->held -= n;
	hmap_remove(&sm->permits, &h->permit_node);
	hmap_remove(&sm->tokens, &h->token_node);
	req_unindex(sm, &h->req);
	principal_count(h->ident->pr, SM_LIMIT_PERMITS, -(int64_t)n);
	ident_put(sm, h->ident);
	hist_add(&sm->ctr.hold, sm_wall(sm, sm->now) > h->since_wall ?
	    sm_wall(sm, sm->now) - h->since_wall : 0);
	sm_cache_put(sm, &sm->hold_cache, h, sizeof *h);
	sm->ctr.holders--;
	if (up)
		sema_up_n(&sem->sem, n);
}

/* Give back take of h's permits (fewer than it has) to its principal's count. */
static void hold_shrink(struct sm_hold *h, uint32_t take)
{
	h->n -= take;
	h->sem->held -= take;
	principal_count(h->ident->pr, SM_LIMIT_PERMITS, -(int64_t)take);
}

/* Does the session (or its principal, for detached holds) own h? */
static bool hold_owned_by(const struct sm_hold *h, const struct sm_session *s)
{
	if (h->session != NULL)
		return h->session == s;
	return h->ident->pr == s->ident->pr;
}

/* Turn a grant into a hold and answer it (owned), or just answer (signal). */
static void grant_deliver(struct sm *sm, struct sm_sem *sem, struct sm_session *s,
    uint64_t request_id, uint32_t n, uint64_t token, uint32_t lease_ms,
    uint64_t since, uint64_t now)
{
	struct sm_hold *h;

	sm->ctr.grants++;
	hist_add(&sm->ctr.wait, now > since ? now - since : 0);
	if (sem->mode == SEMD__MODE__SIGNAL) {
		/* Nothing is left to find a retry by: keep the answer. */
		memo_add(sm, s, request_id, SEMD__CODE__OK, n, token);
		reply_grant(sm, s->client, request_id, 0, token, n, now - since);
		return;
	}
	h = hold_new(sm, sem, s, request_id, n, token, lease_ms, now);
	if (h == NULL) {
		/* Out of memory: the permits go back, the client hears why. */
		sema_up_n(&sem->sem, n);
		reply_err(sm, s->client, request_id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory recording the grant on %s", sem->name);
		return;
	}
	/*
	 * A grant needs count >= n with count == limit - held, so it can never
	 * leave more held than the limit (a shrink leaves holders above it, but
	 * then nobody is granted). Counted, not asserted, for sm_check().
	 */
	if (sem->held > sem->limit)
		sm->overgrants++;
	reply_grant(sm, s->client, request_id, h->permit_id, token, n,
	    now - since);
}

/* --- waiters ------------------------------------------------------------ */

/* Take a waiter out of our lists, index and heap (not the core's list). */
static void wait_unlink(struct sm *sm, struct sm_wait *w)
{
	timer_disarm(sm, &w->deadline);
	list_del_init(&w->sem_entry);
	list_del_init(&w->session_entry);
	w->sem->nwaiters--;
	w->session->nwaiters--;
	req_unindex(sm, &w->req);
	sm->ctr.waiters--;
	principal_count(w->session->ident->pr, SM_LIMIT_WAITERS, -1);
}

/* Unlink and free a waiter the core no longer knows. */
static void wait_free(struct sm *sm, struct sm_wait *w)
{
	wait_unlink(sm, w);
	sm_cache_put(sm, &sm->wait_cache, w, sizeof *w);
}

/* Core callback: a queued waiter was granted its permits. */
static void wait_wake(struct sema_waiter *sw)
{
	struct sm_wait *w = container_of(sw, struct sm_wait, w);
	struct sm *sm = w->sm;
	struct sm_sem *sem = w->sem;
	struct sm_session *s = w->session;
	uint64_t id = w->req.request_id, token = sw->token, since = w->since_ms;
	uint32_t n = w->n, lease = w->lease_ms;
	int op = sm->cur_op;

	wait_free(sm, w);
	sm->cur_op = SEMD__REQUEST__OP_DOWN;	/* the reply answers a down */
	grant_deliver(sm, sem, s, id, n, token, lease, since, sm->now);
	sm->cur_op = op;
}

/*
 * Cancel a queued waiter and answer it with code (no answer when code is
 * OK). The answer goes out before the core hands the freed place on, so a
 * client sees the cancellation before the grant it caused. The state is
 * touched by one thread at a time (the caller serializes every call: semd
 * under its state lock), so a waiter in our lists is still queued in the
 * core (wait_wake unlinks a granted one before anything else).
 */
static void wait_cancel(struct sm *sm, struct sm_wait *w, int code,
    const char *why)
{
	/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): false positive: every loop that frees a record unlinks it from the list it walks first (list_del_init in wait_unlink/hold_release); the analyzer loses that across calls */
	struct sm_session *s = w->session;
	bool removed;
	int op = sm->cur_op;

	sm->cur_op = SEMD__REQUEST__OP_DOWN;	/* the reply answers a down */
	if (code != SEMD__CODE__OK)
		reply_err(sm, s->client, w->req.request_id, code, "%s", why);
	sm->cur_op = op;
	wait_unlink(sm, w);
	/* The answer stays findable by a retry (not when the session ends). */
	if (code != SEMD__CODE__OK && code != SEMD__CODE__SESSION_EXPIRED)
		memo_add(sm, s, w->req.request_id, code, 0, 0);
	removed = sema_cancel(&w->sem->sem, &w->w);
	if (!removed) {
		/* Cannot happen with calls serialized; never lose the permits. */
		sema_up_n(&w->sem->sem, w->n);
	}
	sm_cache_put(sm, &sm->wait_cache, w, sizeof *w);
}

/* --- sessions ------------------------------------------------------------ */

/* Forget a memo. */
static void memo_free(struct sm *sm, struct sm_session *s, struct sm_memo *m)
{
	req_unindex(sm, &m->req);
	list_del_init(&m->entry);
	s->nmemos--;
	sm_dealloc(sm, m, sizeof *m);
}

/*
 * Keep the answer to a down for its retry (indexed like its waiter was);
 * the oldest goes when the session keeps max-waiters-per-session of them.
 */
static void memo_add(struct sm *sm, struct sm_session *s, uint64_t request_id,
    int code, uint32_t n, uint64_t token)
{
	struct sm_memo *m;

	if (request_id == 0 || req_find(sm, s->id, request_id) != NULL)
		return;
	if (s->nmemos >= sm->cfg.max_waiters_per_session && s->nmemos > 0)
		memo_free(sm, s, list_first_entry(&s->memos, struct sm_memo,
		    entry));
	if ((m = sm_alloc(sm, sizeof *m)) == NULL)
		return;		/* a retry then counts as a new down */
	m->code = code;
	m->n = n;
	m->token = token;
	list_add_tail(&m->entry, &s->memos);
	s->nmemos++;
	req_index(sm, &m->req, s->id, request_id, REQ_MEMO);
}

/* Answer a retried down from its memo, which is then forgotten. */
static void memo_answer(struct sm *sm, struct sm_client *c, struct sm_memo *m)
{
	uint64_t id = m->req.request_id;

	if (m->code == SEMD__CODE__OK)
		reply_grant(sm, c, id, 0, m->token, m->n, 0);
	else
		reply_err(sm, c, id, m->code, "%s (answered before this retry)",
		    protobuf_c_enum_descriptor_get_value(&semd__code__descriptor,
		    m->code) != NULL ? protobuf_c_enum_descriptor_get_value(
		    &semd__code__descriptor, m->code)->name : "error");
	memo_free(sm, c->session, m);
}

/*
 * Tell a session at once that it lost a hold (a notice, id 0, with the
 * hold): code says why (CANCELLED, SESSION_EXPIRED, UNAVAILABLE).
 */
static void notice_lost(struct sm *sm, const struct sm_hold *h, int code,
    const char *why)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__HoldLost hl = SEMD__HOLD_LOST__INIT;
	char msg[384];
	int op = sm->cur_op;

	if (h->session == NULL || h->session->client == NULL)
		return;
	snprintf(msg, sizeof msg, "hold on %s (permit %" PRIu64 ") lost: %s",
	    h->sem->name, h->permit_id, why);
	hl.name = (char *)h->sem->name;
	hl.permit_id = h->permit_id;
	hl.token = h->token;
	hl.n = h->n;
	r.code = code;
	r.message = msg;
	r.body_case = SEMD__REPLY__BODY_HOLD_LOST;
	r.hold_lost = &hl;
	sm->cur_op = 0;
	reply_send(sm, h->session->client, &r);
	sm->cur_op = op;
}

/* Park (away) or unpark (back) the session's signal-mode waiters. */
static void session_park(struct sm_session *s, bool away)
{
	struct list_head *pos, *prev;
	struct sm_wait *w;

	/*
	 * Newest first: changing one may grant waiters queued after it, and
	 * this session's later waiters have been done by then (parked, so
	 * passed over; unparked, so their grant frees only entries already
	 * visited), so the walk never meets a freed entry.
	 */
	for (pos = s->waiters.prev; pos != &s->waiters; pos = prev) {
		prev = pos->prev;
		w = list_entry(pos, struct sm_wait, session_entry);
		if (w->sem->mode == SEMD__MODE__SIGNAL)
			sema_park(&w->sem->sem, &w->w, away);
	}
}

/* Free a session: it has no client; its waiters go, its holds go back. */
static void session_free(struct sm *sm, struct sm_session *s)
{
	struct sm_hold *h;
	struct sm_wait *w;
	struct sm_sem *sem;
	struct sm_memo *m;

	/* Cancelling may grant later waiters of this session: loop on head. */
	while (!list_empty(&s->waiters)) {
		w = list_first_entry(&s->waiters, struct sm_wait, session_entry);
		sem = w->sem;
		wait_cancel(sm, w, SEMD__CODE__OK, NULL);
		sm->ctr.cancels_disconnect++;
		sem_maybe_free(sm, sem);
	}
	while (!list_empty(&s->holds)) {
		h = list_first_entry(&s->holds, struct sm_hold, owner_entry);
		/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): false positive: every loop that frees a record unlinks it from the list it walks first (list_del_init in wait_unlink/hold_release); the analyzer loses that across calls */
		sem = h->sem;
		hold_release(sm, h, true);
		sem_maybe_free(sm, sem);
	}
	while (!list_empty(&s->memos)) {
		m = list_first_entry(&s->memos, struct sm_memo, entry);
		memo_free(sm, s, m);
	}
	timer_disarm(sm, &s->expiry);
	hmap_remove(&sm->sessions, &s->node);
	principal_count(s->ident->pr, SM_LIMIT_SESSIONS, -1);
	ident_put(sm, s->ident);
	sm_dealloc(sm, s, sizeof *s);
	sm->ctr.sessions--;
}

/* (Re)arm a session's lease for lease_ms after the last request heard. */
static void session_arm(struct sm *sm, struct sm_session *s)
{
	timer_disarm(sm, &s->expiry);
	if (s->lease_ms > 0 &&
	    timer_arm(sm, &s->expiry, T_SESSION, s->heard + s->lease_ms) != 0)
		s->lease_ms = 0;	/* out of memory: a lease it cannot have */
}

/*
 * The session's lease ran out (nothing heard for lease_ms). A client still
 * connected (silent: a partition) is told what it lost and its connection
 * is closed; then the session ends.
 */
static void session_expire(struct sm *sm, struct sm_session *s, uint64_t now)
{
	struct sm_client *c = s->client;
	struct list_head *pos;
	struct sm_wait *w;
	struct sm_sem *sem;
	char why[128];

	sm->ctr.sessions_expired++;
	if (c != NULL) {
		snprintf(why, sizeof why, "session %" PRIu64 " expired: nothing "
		    "heard for %" PRIu64 " ms", s->id, now - s->heard);
		list_for_each(pos, &s->holds)
			notice_lost(sm, list_entry(pos, struct sm_hold,
			    owner_entry), SEMD__CODE__SESSION_EXPIRED, why);
		while (!list_empty(&s->waiters)) {
			w = list_first_entry(&s->waiters, struct sm_wait,
			    session_entry);
			sem = w->sem;
			wait_cancel(sm, w, SEMD__CODE__SESSION_EXPIRED, why);
			sem_maybe_free(sm, sem);
		}
		reply_err(sm, c, 0, SEMD__CODE__SESSION_EXPIRED, "%s", why);
		s->client = NULL;
		c->session = NULL;
		if (c->conn != NULL && sm->out.close != NULL)
			sm->out.close(sm->out.ctx, c->conn);
	}
	session_free(sm, s);
}

/*
 * The connection of a session closed. Death (down_killable's fatal signal)
 * when nothing can be in between: no lease, a local client that did not
 * Detach, or a shutdown; its waiters are cancelled and its holds go back.
 * Otherwise the session lingers until its lease runs out, counted from
 * the last request heard, with its waiters in their places.
 */
static void session_detach(struct sm *sm, struct sm_session *s, bool death,
    uint64_t now)
{
	s->client = NULL;
	if (death || s->lease_ms == 0 || sm->shutting_down ||
	    s->heard + s->lease_ms <= now) {
		session_free(sm, s);
		return;
	}
	session_park(s, true);
}

/* --- lifecycle --------------------------------------------------------- */

/* Make a state machine. */
struct sm *sm_new(const struct sm_config *cfg, const struct sm_out *out,
    uint64_t now_ms)
{
	struct sm *sm = calloc(1, sizeof *sm);

	if (sm == NULL)
		return NULL;
	sm->cfg = *cfg;
	if (out != NULL)
		sm->out = *out;
	sm->start_ms = now_ms;
	sm->token_base = cfg->wall_ms * 1000;
	INIT_LIST_HEAD(&sm->clients);
	INIT_LIST_HEAD(&sm->detached);
	ordidx_init(&sm->byname, offsetof(struct sm_sem, name));
	if (hmap_init(&sm->names, 64) != 0 || hmap_init(&sm->sessions, 64) != 0 ||
	    hmap_init(&sm->permits, 64) != 0 || hmap_init(&sm->tokens, 64) != 0 ||
	    hmap_init(&sm->requests, 64) != 0 || hmap_init(&sm->principals, 64) != 0)
		goto fail;
	return sm;
fail:
	sm_free(sm);
	return NULL;
}

/* Free everything, answering nobody. */
void sm_free(struct sm *sm)
{
	struct sm_client *c;
	struct hmap_iter it;
	struct hnode *n;
	struct sm_sem *sem;
	struct sm_session *s;

	if (sm == NULL)
		return;
	sm->out.reply = NULL;
	sm->shutting_down = true;
	while (!list_empty(&sm->clients)) {
		c = list_first_entry(&sm->clients, struct sm_client, entry);
		sm_client_close(sm, c, sm->start_ms);
	}
	if (sm->sessions.tab[0] != NULL) {
		hmap_iter_init(&it, &sm->sessions);
		while ((n = hmap_iter_next(&it)) != NULL) {
			s = container_of(n, struct sm_session, node);
			session_free(sm, s);
		}
	}
	while (!list_empty(&sm->detached))
		hold_release(sm, list_first_entry(&sm->detached, struct sm_hold,
		    owner_entry), false);
	/* All at once rather than one name at a time in sem_free(). */
	ordidx_destroy(&sm->byname);
	if (sm->names.tab[0] != NULL) {
		hmap_iter_init(&it, &sm->names);
		while ((n = hmap_iter_next(&it)) != NULL) {
			sem = container_of(n, struct sm_sem, node);
			sem_free(sm, sem);
		}
	}
	hmap_destroy(&sm->names);
	hmap_destroy(&sm->sessions);
	hmap_destroy(&sm->permits);
	hmap_destroy(&sm->tokens);
	hmap_destroy(&sm->requests);
	hmap_destroy(&sm->principals);
	sm_cache_drain(&sm->hold_cache);
	sm_cache_drain(&sm->wait_cache);
	for (size_t k = 0; k < SM_SEM_CLASSES; k++)
		sm_cache_drain(&sm->sem_cache[k]);
	free(sm->heap);
	free(sm);
}

/* Install the List visibility hook (NULL: every name is shown). */
void sm_set_visible(struct sm *sm, sm_visible_fn fn, void *arg)
{
	sm->visible = fn;
	sm->visible_arg = arg;
}

/* Apply new limits; existing objects over a lowered limit stay. */
void sm_reconfigure(struct sm *sm, const struct sm_config *cfg)
{
	uint8_t key[16];
	uint64_t wall = sm->cfg.wall_ms;
	const char *server = sm->cfg.server;
	uint64_t (*alloc_count)(void) = sm->cfg.alloc_count;

	memcpy(key, sm->cfg.hash_key, sizeof key);
	sm->cfg = *cfg;
	memcpy(sm->cfg.hash_key, key, sizeof key);	/* tables depend on it */
	sm->cfg.wall_ms = wall;
	sm->cfg.server = server;
	sm->cfg.alloc_count = alloc_count;
}

/* A new connection. */
struct sm_client *sm_client_open(struct sm *sm, void *conn,
    const char *principal, const uint8_t secret[SM_SECRET_LEN],
    unsigned int flags, uint64_t now_ms)
{
	struct sm_client *c = sm_alloc(sm, sizeof *c);

	if (c == NULL)
		return NULL;
	c->pr = principal_get(sm, principal);
	if (c->pr == NULL) {
		sm_dealloc(sm, c, sizeof *c);
		return NULL;
	}
	c->conn = conn;
	c->local = (flags & SM_CLIENT_LOCAL) != 0;
	memcpy(c->secret, secret, SM_SECRET_LEN);
	list_add_tail(&c->entry, &sm->clients);
	sm->ctr.clients++;
	return c;
}

/* The connection is gone. */
void sm_client_close(struct sm *sm, struct sm_client *c, uint64_t now_ms)
{
	if (c == NULL)
		return;
	sm->now = now_ms;
	/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): false positive: every loop that frees a record unlinks it from the list it walks first (list_del_init in wait_unlink/hold_release); the analyzer loses that across calls */
	c->conn = NULL;
	if (c->session != NULL)
		session_detach(sm, c->session, c->local && !c->detach, now_ms);
	c->session = NULL;
	list_del_init(&c->entry);
	principal_put(sm, c->pr);
	sm_dealloc(sm, c, sizeof *c);
	sm->ctr.clients--;
}

/* Session id of a client. */
uint64_t sm_client_session(const struct sm_client *c)
{
	return c->session ? c->session->id : 0;
}

/* Undecodable input from a client. */
void sm_protocol_error(struct sm *sm, struct sm_client *c, const char *why)
{
	sm->cur_op = 0;
	reply_err(sm, c, 0, SEMD__CODE__PROTOCOL_ERROR, "%s", why);
}

/* --- operations ---------------------------------------------------------- */

/* Hello: start or resume a session. */
static int op_hello(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Hello *h, uint64_t now)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__HelloReply hr = SEMD__HELLO_REPLY__INIT;
	struct sm_session *s;
	uint32_t lease;
	bool back = false;

	if (h->version != SM_PROTO_VERSION) {
		reply_err(sm, c, id, SEMD__CODE__PROTOCOL_ERROR,
		    "unsupported protocol version %u (this daemon speaks %u)",
		    h->version, SM_PROTO_VERSION);
		return SM_CLOSE;
	}
	if (c->hello) {
		reply_err(sm, c, id, SEMD__CODE__PROTOCOL_ERROR,
		    "hello was already received on this connection");
		return SM_OK;
	}
	lease = h->lease_ms;
	if (lease > sm->cfg.max_lease_ms)
		lease = sm->cfg.max_lease_ms;
	if (h->resume_session != 0) {
		s = session_find(sm, h->resume_session);
		if (s == NULL || h->resume_secret.len != SM_SECRET_LEN ||
		    memcmp(h->resume_secret.data, s->secret, SM_SECRET_LEN) != 0) {
			reply_err(sm, c, id, SEMD__CODE__SESSION_EXPIRED,
			    "session %" PRIu64 " does not exist (expired, or a wrong secret)",
			    h->resume_session);
			return SM_OK;
		}
		if (s->ident->pr != c->pr) {
			reply_err(sm, c, id, SEMD__CODE__PERMISSION_DENIED,
			    "session %" PRIu64 " belongs to %s, not %s", s->id,
			    s->ident->pr->name, c->pr->name);
			return SM_OK;
		}
		if (s->client != NULL) {
			/* Taken over: the old connection loses the session. */
			s->client->session = NULL;
		} else {
			back = true;	/* its parked waiters, after the reply */
		}
		s->client = c;
		s->lease_ms = lease;
		s->heard = now;
		session_arm(sm, s);
		hr.resumed = true;
	} else {
		if (sm->ctr.sessions >= sm->cfg.max_sessions) {
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "too many sessions (max-sessions %u)",
			    sm->cfg.max_sessions);
			return SM_CLOSE;
		}
		if (!principal_room(sm, c, id, c->pr, SM_LIMIT_SESSIONS, 1))
			return SM_CLOSE;
		s = sm_alloc(sm, sizeof *s);
		if (s == NULL || (s->ident = ident_new(sm, c->pr, h)) == NULL) {
			sm_dealloc(sm, s, sizeof *s);
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "out of memory");
			return SM_CLOSE;
		}
		s->id = ++sm->next_session;
		memcpy(s->secret, c->secret, SM_SECRET_LEN);
		s->client = c;
		s->lease_ms = lease;
		s->heard = now;
		s->expiry.idx = SIZE_MAX;
		INIT_LIST_HEAD(&s->holds);
		INIT_LIST_HEAD(&s->waiters);
		INIT_LIST_HEAD(&s->memos);
		session_arm(sm, s);
		hmap_insert(&sm->sessions, &s->node, pair_hash(sm, s->id, 0));
		principal_count(c->pr, SM_LIMIT_SESSIONS, 1);
		sm->ctr.sessions++;
	}
	c->session = s;
	c->hello = true;
	hr.version = SM_PROTO_VERSION;
	hr.session = s->id;
	hr.secret.data = s->secret;
	hr.secret.len = SM_SECRET_LEN;
	hr.lease_ms = s->lease_ms;
	hr.principal = s->ident->pr->name;
	hr.server = (char *)(sm->cfg.server ? sm->cfg.server : "semd");
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_HELLO;
	r.hello = &hr;
	reply_send(sm, c, &r);
	if (back)
		session_park(s, false);	/* grants now go to c, after HelloReply */
	return SM_OK;
}

/* Check a name field of len bytes; answers INVALID_ARGUMENT when bad. */
static bool check_name_len(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, size_t len)
{
	if (len == 0) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "a semaphore name is required");
		return false;
	}
	if (len > SM_NAME_MAX) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "semaphore name is %zu bytes long (max %d)", len, SM_NAME_MAX);
		return false;
	}
	if (!sm_name_valid(name, len)) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "semaphore name is not valid UTF-8, or has control, bidirectional or zero-width characters");
		return false;
	}
	return true;
}

/* Check a name field; answers INVALID_ARGUMENT when bad. */
static bool check_name(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name)
{
	return check_name_len(sm, c, id, name, strlen(name));
}

/* Find a semaphore or answer NOT_FOUND. */
static struct sm_sem *need_sem(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name)
{
	size_t len = strlen(name);
	struct sm_sem *sem;

	if ((sem = client_sem(sm, c, name, len)) != NULL)
		return sem;
	if (!check_name_len(sm, c, id, name, len))
		return NULL;
	sem = sem_find_len(sm, name, len);
	if (sem == NULL)
		reply_err(sm, c, id, SEMD__CODE__NOT_FOUND,
		    "no semaphore named %s", name);
	else
		client_sem_set(sm, c, sem);
	return sem;
}

/* Check a limit; answers INVALID_ARGUMENT when bad. */
static bool check_limit(struct sm *sm, struct sm_client *c, uint64_t id,
    uint32_t limit)
{
	if (limit >= 1 && limit <= SM_LIMIT_MAX)
		return true;
	reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
	    "limit %u is out of range (1..%u)", limit, SM_LIMIT_MAX);
	return false;
}

/*
 * Would nobody but pr be left out if pr took sem over: is every holder and
 * waiter of it pr's?
 */
static bool sem_used_only_by(const struct sm_sem *sem,
    const struct sm_principal *pr)
{
	const struct list_head *pos;

	list_for_each(pos, &sem->holders)
		if (list_entry(pos, struct sm_hold, sem_entry)->ident->pr != pr)
			return false;
	list_for_each(pos, &sem->waiters)
		if (list_entry(pos, struct sm_wait, sem_entry)->session->ident->pr != pr)
			return false;
	return true;
}

/* Create: a named semaphore with a limit and a mode. */
static void op_create(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Create *cr, uint64_t now)
{
	struct sm_principal *pr = c->pr;
	struct sm_sem *sem;

	if (!check_name(sm, c, id, cr->name) || !check_limit(sm, c, id, cr->limit))
		return;
	if (cr->mode != SEMD__MODE__OWNED && cr->mode != SEMD__MODE__SIGNAL) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "unknown mode %d", (int)cr->mode);
		return;
	}
	if (cr->initial_set && (cr->mode != SEMD__MODE__SIGNAL ||
	    cr->initial > cr->limit)) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    cr->mode != SEMD__MODE__SIGNAL ?
		    "initial is for signal-mode semaphores (an owned one starts with every permit free)" :
		    "initial %u is more than the limit %u", cr->initial, cr->limit);
		return;
	}
	sem = sem_find(sm, cr->name);
	if (sem != NULL) {
		if (!cr->if_not_exists) {
			reply_err(sm, c, id, SEMD__CODE__EXISTS,
			    "semaphore %s exists (limit %u)", sem->name,
			    sem->limit);
			return;
		}
		/*
		 * Explicitly wanted now: an auto-created name stays, owned and
		 * counted - by the caller only if it is an administrator or
		 * nobody else uses the name (no one takes over a name others
		 * hold); otherwise it stays as it is and the answer is OK.
		 */
		if (sem->auto_created && (sem_manager(sm, c, sem) ||
		    sem_used_only_by(sem, pr))) {
			if (!principal_room(sm, c, id, pr, SM_LIMIT_SEMAPHORES, 1))
				return;
			sem->auto_created = false;
			sem_set_owner(sem, pr);
		}
		reply_ok(sm, c, id);
		return;
	}
	if (sm->ctr.semaphores >= sm->cfg.max_semaphores) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "too many semaphores (max-semaphores %u)",
		    sm->cfg.max_semaphores);
		return;
	}
	if (!principal_room(sm, c, id, pr, SM_LIMIT_SEMAPHORES, 1))
		return;
	if ((sem = sem_new(sm, cr->name, cr->limit, cr->mode, false, now)) == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		return;
	}
	if (cr->initial_set)
		sema_adjust(&sem->sem, (long)cr->initial - (long)cr->limit);
	sem_set_owner(sem, pr);
	reply_ok(sm, c, id);
}

/*
 * Per-principal caps of a down: n more held permits (owned mode), and one
 * more waiter if it may wait. Answers RESOURCE_EXHAUSTED when over.
 */
static bool down_room(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_sem *sem, uint32_t n, bool may_wait)
{
	struct sm_principal *pr = c->session->ident->pr;

	return (sem->mode != SEMD__MODE__OWNED ||
	    principal_room(sm, c, id, pr, SM_LIMIT_PERMITS, n)) &&
	    (!may_wait || principal_room(sm, c, id, pr, SM_LIMIT_WAITERS, 1));
}

/* Down: take n permits now, or wait for them until a deadline. */
static void op_down(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Down *d, uint64_t now)
{
	struct sm_session *s = c->session;
	struct sm_reqkey *prev;
	struct sm_hold *h;
	struct sm_sem *sem;
	struct sm_wait *w;
	uint32_t n = d->n ? d->n : 1;
	uint64_t token, deadline = 0;
	size_t len = strlen(d->name);
	int r;

	sem = client_sem(sm, c, d->name, len);
	if (sem == NULL && !check_name_len(sm, c, id, d->name, len))
		return;
	if (n > SM_LIMIT_MAX) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "n = %u is out of range", n);
		return;
	}
	if (id != 0 && (prev = req_find(sm, s->id, id)) != NULL) {
		/* A retried down: answer what the first one got. */
		if (prev->kind == REQ_MEMO) {
			memo_answer(sm, c, container_of(prev, struct sm_memo,
			    req));
			return;
		}
		if (prev->kind == REQ_HOLD) {
			h = container_of(prev, struct sm_hold, req);
			if (strcmp(h->sem->name, d->name) == 0) {
				reply_grant(sm, c, id, h->permit_id, h->token,
				    h->n, 0);
				return;
			}
		} else {
			w = container_of(prev, struct sm_wait, req);
			if (strcmp(w->sem->name, d->name) == 0)
				return;	/* the pending waiter will answer */
		}
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "request id %" PRIu64 " is in use by a down on another name", id);
		return;
	}

	if (s->nholds + s->nwaiters >= sm->cfg.max_holds_per_session) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "session holds or waits for too many permits (max-holds-per-session %u)",
		    sm->cfg.max_holds_per_session);
		return;
	}
	if (sem == NULL)
		sem = sem_find_len(sm, d->name, len);
	if (sem != NULL && d->limit != 0 && d->limit != sem->limit) {
		reply_err(sm, c, id, SEMD__CODE__EXISTS,
		    "%s exists with limit %u, not %u", sem->name, sem->limit,
		    d->limit);
		return;
	}
	if (sem == NULL) {
		/* Auto-created, with the default limit or the one asked for. */
		if (d->limit != 0 && !check_limit(sm, c, id, d->limit))
			return;
		if (sm->ctr.semaphores >= sm->cfg.max_semaphores) {
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "too many semaphores (max-semaphores %u)",
			    sm->cfg.max_semaphores);
			return;
		}
		sem = sem_new(sm, d->name, d->limit ? d->limit :
		    sm->cfg.default_limit, SEMD__MODE__OWNED, true, now);
		if (sem == NULL) {
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "out of memory");
			return;
		}
	}
	client_sem_set(sm, c, sem);
	if (n > sem->limit) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "n = %u is more than the limit of %s (%u)", n, sem->name,
		    sem->limit);
		goto out;
	}
	if (!down_room(sm, c, id, sem, n, d->timeout_ms != 0))
		goto out;
	if (d->timeout_ms == 0) {
		if (sema_trydown_n(&sem->sem, n, &token)) {
			grant_deliver(sm, sem, s, id, n, token, d->lease_ms,
			    now, now);
		} else {
			reply_err(sm, c, id, SEMD__CODE__WOULD_BLOCK,
			    "%s: %ld of %u permits free, %u waiting", sem->name,
			    sema_count(&sem->sem), sem->limit, sem->nwaiters);
		}
		goto out;
	}
	if (sm->shutting_down) {
		reply_err(sm, c, id, SEMD__CODE__UNAVAILABLE,
		    "semd is shutting down");
		goto out;
	}
	if (s->nwaiters >= sm->cfg.max_waiters_per_session) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "session has too many waiting downs (max-waiters-per-session %u)",
		    sm->cfg.max_waiters_per_session);
		goto out;
	}
	w = sm_cache_get(sm, &sm->wait_cache, sizeof *w);
	if (w == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		goto out;
	}
	w->sm = sm;
	w->seq = ++sm->next_wait_seq;
	w->n = n;
	w->lease_ms = d->lease_ms;
	w->sem = sem;
	w->session = s;
	w->since_ms = now;
	w->since_wall = sm_wall(sm, now);
	w->deadline.idx = SIZE_MAX;
	w->req.request_id = id;
	if (d->timeout_ms > 0) {
		deadline = (uint64_t)d->timeout_ms > UINT64_MAX / 4 - now ?
		    UINT64_MAX / 4 : now + (uint64_t)d->timeout_ms;
		if (timer_arm(sm, &w->deadline, T_WAIT, deadline) != 0) {
			sm_cache_put(sm, &sm->wait_cache, w, sizeof *w);
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "out of memory");
			goto out;
		}
		w->deadline_wall = sm_wall(sm, deadline);
	}
	r = sema_down_async(&sem->sem, &w->w, n, wait_wake);
	if (r < 0) {
		timer_disarm(sm, &w->deadline);
		sm_cache_put(sm, &sm->wait_cache, w, sizeof *w);
		reply_err(sm, c, id, SEMD__CODE__INTERNAL,
		    "the core refused the down (%d)", r);
		goto out;
	}
	if (r == 0) {
		timer_disarm(sm, &w->deadline);
		token = w->w.token;
		sm_cache_put(sm, &sm->wait_cache, w, sizeof *w);
		grant_deliver(sm, sem, s, id, n, token, d->lease_ms, now, now);
		goto out;
	}
	list_add_tail(&w->sem_entry, &sem->waiters);
	list_add_tail(&w->session_entry, &s->waiters);
	sem->nwaiters++;
	s->nwaiters++;
	sm->ctr.waiters++;
	principal_count(s->ident->pr, SM_LIMIT_WAITERS, 1);
	req_index(sm, &w->req, s->id, id, REQ_WAIT);
	return;
out:
	sem_maybe_free(sm, sem);
}

/* Up in signal mode: anyone adds permits, up to the limit. */
static void up_signal(struct sm *sm, struct sm_client *c, uint64_t id,
    struct sm_sem *sem, uint32_t n)
{
	if (sema_up_max(&sem->sem, n, sem->limit) != 0) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "%s: up %u would exceed the limit %u (%ld free)", sem->name,
		    n, sem->limit, sema_count(&sem->sem));
		return;
	}
	reply_released(sm, c, id, n);
}

/* Up: give back permits the caller holds (owned) or add permits (signal). */
static void op_up(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Up *u, uint64_t now)
{
	struct sm_session *s = c->session;
	struct list_head *pos, *tmp;
	struct sm_hold *h;
	struct sm_sem *sem;
	uint32_t n = u->n ? u->n : 1, take;
	uint64_t have = 0, left;

	if ((sem = need_sem(sm, c, id, u->name)) == NULL)
		return;
	if (sem->mode == SEMD__MODE__SIGNAL && u->permit_id == 0) {
		if (n > SM_LIMIT_MAX) {
			reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
			    "n = %u is out of range", n);
			return;
		}
		up_signal(sm, c, id, sem, n);
		return;
	}
	if (u->permit_id != 0) {
		h = permit_find(sm, u->permit_id);
		if (h == NULL || h->sem != sem || !hold_owned_by(h, s)) {
			reply_err(sm, c, id, SEMD__CODE__NOT_HOLDER,
			    "permit %" PRIu64 " of %s is not held by you",
			    u->permit_id, sem->name);
			return;
		}
		n = h->n;
		hold_release(sm, h, true);
		reply_released(sm, c, id, n);
		sem_maybe_free(sm, sem);
		return;
	}
	/* Count what the caller holds: session holds, then detached ones. */
	list_for_each(pos, &s->holds) {
		h = list_entry(pos, struct sm_hold, owner_entry);
		if (h->sem == sem)
			have += h->n;
	}
	if (have < n) {
		list_for_each(pos, &sem->holders) {
			h = list_entry(pos, struct sm_hold, sem_entry);
			if (h->session == NULL && hold_owned_by(h, s))
				have += h->n;
		}
	}
	if (have < n) {
		reply_err(sm, c, id, SEMD__CODE__NOT_HOLDER,
		    "you hold %" PRIu64 " permit(s) of %s, cannot up %u", have,
		    sem->name, n);
		return;
	}
	/*
	 * Shrink the records first (newest first), then hand all n back to
	 * the core in one go, so the grants it makes see consistent counts.
	 */
	left = n;
	for (pos = s->holds.prev, tmp = pos->prev; left > 0 && pos != &s->holds;
	    pos = tmp, tmp = pos->prev) {
		h = list_entry(pos, struct sm_hold, owner_entry);
		if (h->sem != sem)
			continue;
		take = h->n < left ? h->n : (uint32_t)left;
		left -= take;
		if (take == h->n)
			hold_release(sm, h, false);
		else
			hold_shrink(h, take);
	}
	for (pos = sem->holders.prev, tmp = pos->prev;
	    left > 0 && pos != &sem->holders; pos = tmp, tmp = pos->prev) {
		h = list_entry(pos, struct sm_hold, sem_entry);
		if (h->session != NULL || !hold_owned_by(h, s))
			continue;
		take = h->n < left ? h->n : (uint32_t)left;
		left -= take;
		if (take == h->n)
			hold_release(sm, h, false);
		else
			hold_shrink(h, take);
	}
	sema_up_n(&sem->sem, n);
	reply_released(sm, c, id, n);
	sem_maybe_free(sm, sem);
}

/* Release: force-release anyone's hold by permit id (admin). */
static void op_release(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Release *rl, uint64_t now)
{
	struct sm_sem *sem;
	struct sm_hold *h;
	uint32_t n;

	char why[SM_NAME_MAX + 64];

	if ((sem = need_sem(sm, c, id, rl->name)) == NULL)
		return;
	h = permit_find(sm, rl->permit_id);
	if (h == NULL || h->sem != sem) {
		reply_err(sm, c, id, SEMD__CODE__NOT_FOUND,
		    "%s has no permit %" PRIu64, sem->name, rl->permit_id);
		return;
	}
	if (h->ident->pr != c->pr && !sem_manager(sm, c, sem)) {
		reply_err(sm, c, id, SEMD__CODE__PERMISSION_DENIED,
		    "%s may not release %s's permit of %s (only its creator and administrators may)",
		    c->pr->name, h->ident->pr->name, sem->name);
		return;
	}
	snprintf(why, sizeof why, "released by %s", c->pr->name);
	notice_lost(sm, h, SEMD__CODE__CANCELLED, why);
	n = h->n;
	hold_release(sm, h, true);
	reply_released(sm, c, id, n);
	sem_maybe_free(sm, sem);
}

/* Cancel a pending down of this session. */
static void op_cancel(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Cancel *cn, uint64_t now)
{
	struct sm_reqkey *k = req_find(sm, c->session->id, cn->request_id);
	struct sm_wait *w;
	struct sm_sem *sem;
	char why[96];

	if (k == NULL || k->kind != REQ_WAIT) {
		reply_err(sm, c, id, SEMD__CODE__NOT_FOUND,
		    "no pending down with id %" PRIu64, cn->request_id);
		return;
	}
	w = container_of(k, struct sm_wait, req);
	sem = w->sem;
	snprintf(why, sizeof why, "cancelled by request %" PRIu64, id);
	wait_cancel(sm, w, SEMD__CODE__CANCELLED, why);
	sm->ctr.cancels++;
	reply_ok(sm, c, id);
	sem_maybe_free(sm, sem);
}

/* Bytes a Holder or Waiter of ident takes in a reply, at most. */
static size_t info_entry_size(const struct sm_ident *id)
{
	/* Eight varint fields of at most 11 bytes, three strings with theirs. */
	return 8 * 11 + 3 * 5 + strlen(id->client_name) + strlen(id->host) +
	    id->pr->len + 8;
}

/*
 * Info: a semaphore's limit and counts, and one page of its holders (grant
 * order) and waiters (queue order): at most max of each, after the cursors,
 * and no more than cfg.max_reply bytes of them, so no reply ever outgrows a
 * client's output limit however long the queue. The caller sees every holder
 * and waiter if it may manage the name, else only its own (the counts stay
 * whole). next_permit / next_waiter are set when more follow.
 */
static void op_info(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Info *in, uint64_t now)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__InfoReply ir = SEMD__INFO_REPLY__INIT;
	Semd__Holder *hv = NULL, **hp = NULL;
	Semd__Waiter *wv = NULL, **wp = NULL;
	struct list_head *pos;
	struct sm_sem *sem;
	struct sm_hold *h;
	struct sm_wait *w;
	size_t max = in->max ? in->max : SM_INFO_PAGE, nh = 0, nw = 0, budget;
	bool all;

	if ((sem = need_sem(sm, c, id, in->name)) == NULL)
		return;
	if (max > SM_INFO_PAGE_MAX)
		max = SM_INFO_PAGE_MAX;
	all = sem_manager(sm, c, sem);
	budget = sm->cfg.max_reply / 2;		/* each list gets half */
	hv = calloc(max, sizeof *hv);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
	hp = calloc(max, sizeof *hp);
	wv = calloc(max, sizeof *wv);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
	wp = calloc(max, sizeof *wp);
	if (hv == NULL || hp == NULL || wv == NULL || wp == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		goto out;
	}
	list_for_each(pos, &sem->holders) {
		h = list_entry(pos, struct sm_hold, sem_entry);
		if (h->permit_id <= in->after_permit ||
		    (!all && h->ident->pr != c->pr))
			continue;
		if (nh == max || (nh > 0 && info_entry_size(h->ident) > budget)) {
			ir.next_permit = hv[nh - 1].permit_id;
			break;
		}
		budget -= info_entry_size(h->ident) < budget ?
		    info_entry_size(h->ident) : budget;
		semd__holder__init(&hv[nh]);
		hv[nh].permit_id = h->permit_id;
		hv[nh].token = h->token;
		hv[nh].n = h->n;
		hv[nh].client_name = h->ident->client_name;
		hv[nh].host = h->ident->host;
		hv[nh].pid = h->ident->pid;
		hv[nh].principal = h->ident->pr->name;
		hv[nh].since_ms = h->since_wall;
		hv[nh].detached = h->session == NULL;
		hv[nh].expires_ms = h->session ? 0 : h->expires_wall;
		if (h->session != NULL && h->session->client == NULL)
			hv[nh].expires_ms = sm_wall(sm, h->session->expiry.when);
		hp[nh] = &hv[nh];
		nh++;
	}
	budget = sm->cfg.max_reply / 2;
	list_for_each(pos, &sem->waiters) {
		w = list_entry(pos, struct sm_wait, sem_entry);
		if (w->seq <= in->after_waiter ||
		    (!all && w->session->ident->pr != c->pr))
			continue;
		if (nw == max || (nw > 0 && info_entry_size(w->session->ident) > budget)) {
			ir.next_waiter = wv[nw - 1].seq;
			break;
		}
		budget -= info_entry_size(w->session->ident) < budget ?
		    info_entry_size(w->session->ident) : budget;
		semd__waiter__init(&wv[nw]);
		wv[nw].request_id = w->req.request_id;
		wv[nw].n = w->n;
		wv[nw].client_name = w->session->ident->client_name;
		wv[nw].host = w->session->ident->host;
		wv[nw].pid = w->session->ident->pid;
		wv[nw].principal = w->session->ident->pr->name;
		wv[nw].since_ms = w->since_wall;
		wv[nw].deadline_ms = w->deadline_wall;
		wv[nw].seq = w->seq;
		wv[nw].detached = w->session->client == NULL;
		wp[nw] = &wv[nw];
		nw++;
	}
	ir.name = sem->name;
	ir.limit = sem->limit;
	ir.available = sema_count(&sem->sem);
	ir.mode = sem->mode;
	ir.auto_created = sem->auto_created;
	ir.n_holders = nh;
	ir.holders = hp;
	ir.n_waiters = nw;
	ir.waiters = wp;
	ir.holders_total = sem->nholders;
	ir.waiters_total = sem->nwaiters;
	ir.last_token = sem->sem.token;
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_INFO;
	r.info = &ir;
	reply_send(sm, c, &r);
out:
	free(hv);
	free(hp);
	free(wv);
	free(wp);
}

/*
 * The first key greater than every name beginning with name[0..len), in
 * key (len + 1 bytes); false when there is none (all bytes 0xff).
 */
static bool list_past_prefix(const char *name, size_t len, char *key)
{
	while (len > 0 && (unsigned char)name[len - 1] == 0xff)
		len--;
	if (len == 0)
		return false;
	memcpy(key, name, len);
	key[len - 1] = (char)((unsigned char)name[len - 1] + 1);
	key[len] = '\0';
	return true;
}

/*
 * List: names with a prefix, in byte order, strictly after a cursor. Besides
 * the hash table the names live in an ordered index (daemon/ordidx.h, a
 * B+tree of about 10 bytes a name), and the names with a prefix are one run
 * of it: a page seeks to the later of prefix and after, then walks forward
 * while the names keep the prefix: O(log N + max) per page, however many
 * other names there are (a page of 100 at a million names: about 30 us,
 * round trip included, where scanning the table took about 90 ms). One name
 * found past a full page sets next (to the last name listed).
 *
 * With a visibility hook (the daemon's ACL) only the names the caller may
 * inspect are listed, and next is always one of them. A hidden name whose
 * hook answer covers a whole subtree (a protected prefix) is stepped over
 * with one seek past that subtree; others one by one. A page visits at most
 * SM_LIST_HIDDEN_MAX hidden names: past that it ends at its last entry (next
 * set, the usual cursor), or with no entry yet is answered
 * RESOURCE_EXHAUSTED, so no client makes the loop scan without bound.
 */
static void op_list(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__List *l, uint64_t now)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__ListReply lr = SEMD__LIST_REPLY__INIT;
	Semd__Summary *sv = NULL, **sp = NULL;
	size_t max = l->max ? l->max : SM_LIST_DEFAULT, i = 0;
	size_t plen = strlen(l->prefix), hidden = 0, skip;
	char key[SM_NAME_MAX + 1];
	struct ordidx_iter it;
	struct sm_sem *sem;

	if (max > SM_LIST_MAX)
		max = SM_LIST_MAX;
	sv = calloc(max, sizeof *sv);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
	sp = calloc(max, sizeof *sp);
	if (sv == NULL || sp == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		goto out;
	}
	/* Every name with the prefix is >= prefix. */
	if (strcmp(l->after, l->prefix) >= 0)
		ordidx_seek(&sm->byname, &it, l->after, false);
	else
		ordidx_seek(&sm->byname, &it, l->prefix, true);
	while ((sem = ordidx_next(&it)) != NULL &&
	    strncmp(sem->name, l->prefix, plen) == 0) {
		skip = 0;
		if (sm->visible != NULL && !sm->visible(sm->visible_arg,
		    c->conn, sem->name, sem->len, &skip)) {
			if (++hidden > SM_LIST_HIDDEN_MAX)
				break;
			if (skip == 0 || skip > sem->len)
				continue;
			if (!list_past_prefix(sem->name, skip, key))
				break;
			ordidx_seek(&sm->byname, &it, key, true);
			continue;
		}
		if (i == max) {
			lr.next = sv[max - 1].name;
			break;
		}
		semd__summary__init(&sv[i]);
		sv[i].name = sem->name;
		sv[i].limit = sem->limit;
		sv[i].available = sema_count(&sem->sem);
		sv[i].mode = sem->mode;
		sv[i].holders = sem->nholders;
		sv[i].waiters = sem->nwaiters;
		sp[i] = &sv[i];
		i++;
	}
	if (hidden > SM_LIST_HIDDEN_MAX) {
		if (i == 0) {
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "more than %d names you may not inspect under this "
			    "prefix; list a narrower prefix",
			    SM_LIST_HIDDEN_MAX);
			goto out;
		}
		lr.next = sv[i - 1].name;
	}
	lr.n_entries = i;
	lr.entries = sp;
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_LIST;
	r.list = &lr;
	reply_send(sm, c, &r);
out:
	free(sv);
	free(sp);
}

/* Delete: remove a semaphore; busy ones only with force. */
static void op_delete(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Delete *dl, uint64_t now)
{
	struct sm_sem *sem;
	struct sm_wait *w;
	struct sm_hold *h;

	if ((sem = need_sem(sm, c, id, dl->name)) == NULL)
		return;
	if (!sem_manager(sm, c, sem)) {
		reply_err(sm, c, id, SEMD__CODE__PERMISSION_DENIED,
		    "%s may not delete %s (only its creator and administrators may)",
		    c->pr->name, sem->name);
		return;
	}
	if ((sem->nholders > 0 || sem->nwaiters > 0) && !dl->force) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "%s is in use (%u holders, %u waiters): delete with force",
		    sem->name, sem->nholders, sem->nwaiters);
		return;
	}
	/*
	 * Cancel from the tail: taking the last waiter off never lets anyone
	 * in front of it through, so nobody is granted a dying semaphore.
	 */
	while (!list_empty(&sem->waiters)) {
		w = list_entry(sem->waiters.prev, struct sm_wait, sem_entry);
		wait_cancel(sm, w, SEMD__CODE__CANCELLED, "semaphore deleted");
	}
	while (!list_empty(&sem->holders)) {
		h = list_first_entry(&sem->holders, struct sm_hold, sem_entry);
		notice_lost(sm, h, SEMD__CODE__CANCELLED, "semaphore deleted");
		hold_release(sm, h, false);
	}
	sem_free(sm, sem);
	reply_ok(sm, c, id);
}

/* SetLimit: grow or shrink live; shrinking revokes nobody. */
static void op_set_limit(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__SetLimit *sl, uint64_t now)
{
	struct list_head *pos, *tmp;
	struct sm_sem *sem;
	struct sm_wait *w;
	long delta;

	if ((sem = need_sem(sm, c, id, sl->name)) == NULL)
		return;
	if (!sem_manager(sm, c, sem)) {
		reply_err(sm, c, id, SEMD__CODE__PERMISSION_DENIED,
		    "%s may not change the limit of %s (only its creator and administrators may)",
		    c->pr->name, sem->name);
		return;
	}
	if (!check_limit(sm, c, id, sl->limit))
		return;
	delta = (long)sl->limit - (long)sem->limit;
	sem->limit = sl->limit;
	sem->auto_created = false;
	/*
	 * The new count first: cancelling a head waiter below lets the ones
	 * behind it proceed, and they must be measured against the new limit,
	 * not the old one. (Growing cancels nobody: no waiter asks for more
	 * than the old limit.)
	 */
	sema_adjust(&sem->sem, delta);
	/* A waiter wanting more than the new limit would block the queue. */
	/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): false positive: every loop that frees a record unlinks it from the list it walks first (list_del_init in wait_unlink/hold_release); the analyzer loses that across calls */
	list_for_each_safe(pos, tmp, &sem->waiters) {
		w = list_entry(pos, struct sm_wait, sem_entry);
		if (w->n > sem->limit) {
			wait_cancel(sm, w, SEMD__CODE__INVALID_ARGUMENT,
			    "the limit shrank below the permits asked for");
			/* tmp may have been granted and freed: restart. */
			pos = &sem->waiters;
			tmp = pos->next;
		}
	}
	reply_ok(sm, c, id);
}

/* Validate: does this fencing token still hold a permit? */
static void op_validate(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Validate *v, uint64_t now)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__ValidateReply vr = SEMD__VALIDATE_REPLY__INIT;
	struct sm_sem *sem;

	if (!check_name(sm, c, id, v->name))
		return;
	sem = sem_find(sm, v->name);
	vr.valid = sem != NULL && token_find(sm, sem, v->token) != NULL;
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_VALIDATE;
	r.validate = &vr;
	reply_send(sm, c, &r);
}

/* Ping: echo the payload. */
static void op_ping(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Ping *p)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__Pong pong = SEMD__PONG__INIT;

	pong.payload = p->payload;
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_PONG;
	r.pong = &pong;
	reply_send(sm, c, &r);
}

static const char *const op_names[SM_NOPS] = {
	[SEMD__REQUEST__OP_HELLO] = "hello",
	[SEMD__REQUEST__OP_CREATE] = "create",
	[SEMD__REQUEST__OP_DOWN] = "down",
	[SEMD__REQUEST__OP_UP] = "up",
	[SEMD__REQUEST__OP_CANCEL] = "cancel",
	[SEMD__REQUEST__OP_INFO] = "info",
	[SEMD__REQUEST__OP_LIST] = "list",
	[SEMD__REQUEST__OP_DELETE] = "delete",
	[SEMD__REQUEST__OP_SET_LIMIT] = "set_limit",
	[SEMD__REQUEST__OP_PING] = "ping",
	[SEMD__REQUEST__OP_STATS] = "stats",
	[SEMD__REQUEST__OP_VALIDATE] = "validate",
	[SEMD__REQUEST__OP_RELEASE] = "release",
	[SEMD__REQUEST__OP_DETACH] = "detach",
};

/* Most counters a Stats reply carries (the named ones, ops x codes replies, 2 histograms). */
#define SM_STATS_MAX	(40 + 2 * SM_NOPS + SM_NOPS * SM_NCODES + 2 * (SM_HIST_BUCKETS + 2))

/* Add a histogram's count, sum and non-empty buckets to a Stats reply. */
static void stats_hist(const struct sm_hist *h, const char *what,
    Semd__Counter *cv, Semd__Counter **cp, char names[][40], size_t *n)
{
	size_t i;

	for (i = 0; i < SM_HIST_BUCKETS + 2; i++) {
		if (i < SM_HIST_BUCKETS && h->bucket[i] == 0)
			continue;
		if (i == SM_HIST_BUCKETS)
			snprintf(names[*n], 40, "%s_count", what);
		else if (i == SM_HIST_BUCKETS + 1)
			snprintf(names[*n], 40, "%s_sum_ms", what);
		else if (i == SM_HIST_BUCKETS - 1)
			snprintf(names[*n], 40, "%s_ms_le_inf", what);
		else
			snprintf(names[*n], 40, "%s_ms_le_%llu", what, 1ULL << i);
		semd__counter__init(&cv[*n]);
		cv[*n].name = names[*n];
		cv[*n].value = i == SM_HIST_BUCKETS ? h->count :
		    i == SM_HIST_BUCKETS + 1 ? h->sum_ms : h->bucket[i];
		cp[*n] = &cv[*n];
		(*n)++;
	}
}

/* Stats: the counters, by name. */
static void op_stats(struct sm *sm, struct sm_client *c, uint64_t id)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__StatsReply sr = SEMD__STATS_REPLY__INIT;
	Semd__Counter cv[SM_STATS_MAX], *cp[SM_STATS_MAX];
	char names[SM_STATS_MAX][40];
	const ProtobufCEnumValue *ev;
	struct sm_counters k;
	size_t n = 0, i, j;

	sm_get_counters(sm, &k);
#define COUNTER(nm, v) do {						\
	semd__counter__init(&cv[n]);					\
	cv[n].name = (char *)(nm);					\
	cv[n].value = (v);						\
	cp[n] = &cv[n];							\
	n++;								\
} while (0)
	COUNTER("semaphores", k.semaphores);
	COUNTER("holders", k.holders);
	COUNTER("waiters", k.waiters);
	COUNTER("sessions", k.sessions);
	COUNTER("connections", k.clients);
	COUNTER("grants", k.grants);
	COUNTER("timeouts", k.timeouts);
	COUNTER("cancels", k.cancels);
	COUNTER("cancels_disconnect", k.cancels_disconnect);
	COUNTER("leases_expired", k.leases_expired);
	COUNTER("sessions_expired", k.sessions_expired);
	COUNTER("errors", k.errors);
	COUNTER("memory_bytes", k.memory_bytes);
	if (sm->cfg.alloc_count != NULL)
		COUNTER("allocations", sm->cfg.alloc_count());
	for (i = 0; i < SM_NOPS; i++) {
		if (op_names[i] == NULL)
			continue;
		snprintf(names[n], sizeof names[n], "ops_%s", op_names[i]);
		COUNTER(names[n], k.ops[i]);
	}
	/* The figures of the metrics endpoint: replies by op and code... */
	for (i = 0; i < SM_NOPS; i++) {
		for (j = 0; j < SM_NCODES; j++) {
			ev = protobuf_c_enum_descriptor_get_value(
			    &semd__code__descriptor, (int)j);
			if (k.replies[i][j] == 0 || ev == NULL)
				continue;
			snprintf(names[n], sizeof names[n], "replies_%s_%s",
			    op_names[i] != NULL ? op_names[i] : "unknown", ev->name);
			COUNTER(names[n], k.replies[i][j]);
		}
	}
	/* ...and the wait and hold histograms (non-empty buckets, in ms). */
	stats_hist(&k.wait, "wait", cv, cp, names, &n);
	stats_hist(&k.hold, "hold", cv, cp, names, &n);
#undef COUNTER
	sr.n_counters = n;
	sr.counters = cp;
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_STATS;
	r.stats = &sr;
	reply_send(sm, c, &r);
}

/* Dispatch one request. */
int sm_request(struct sm *sm, struct sm_client *c, const Semd__Request *req,
    const struct sm_caller *who, uint64_t now)
{
	uint64_t id = req->id;

	int r = SM_OK;

	sm->now = now;
	sm->who = who;
	sm->cur_op = (unsigned)req->op_case < SM_NOPS ? (int)req->op_case : 0;
	sm->ctr.ops[sm->cur_op]++;
	if (req->op_case == SEMD__REQUEST__OP_HELLO) {
		r = op_hello(sm, c, id, req->hello, now);
		sm->who = NULL;
		return r;
	}
	if (!c->hello) {
		reply_err(sm, c, id, SEMD__CODE__PROTOCOL_ERROR,
		    "the first request must be hello");
		return SM_CLOSE;
	}
	if (c->session == NULL) {
		reply_err(sm, c, id, SEMD__CODE__SESSION_EXPIRED,
		    "this connection's session ended (expired, or resumed by another connection)");
		return SM_CLOSE;
	}
	c->session->heard = now;	/* the lease counts from here */
	switch (req->op_case) {
	case SEMD__REQUEST__OP_CREATE:
		op_create(sm, c, id, req->create, now);
		break;
	case SEMD__REQUEST__OP_DOWN:
		op_down(sm, c, id, req->down, now);
		break;
	case SEMD__REQUEST__OP_UP:
		op_up(sm, c, id, req->up, now);
		break;
	case SEMD__REQUEST__OP_CANCEL:
		op_cancel(sm, c, id, req->cancel, now);
		break;
	case SEMD__REQUEST__OP_INFO:
		op_info(sm, c, id, req->info, now);
		break;
	case SEMD__REQUEST__OP_LIST:
		op_list(sm, c, id, req->list, now);
		break;
	case SEMD__REQUEST__OP_DELETE:
		op_delete(sm, c, id, req->delete_, now);
		break;
	case SEMD__REQUEST__OP_SET_LIMIT:
		op_set_limit(sm, c, id, req->set_limit, now);
		break;
	case SEMD__REQUEST__OP_PING:
		op_ping(sm, c, id, req->ping);
		break;
	case SEMD__REQUEST__OP_STATS:
		op_stats(sm, c, id);
		break;
	case SEMD__REQUEST__OP_VALIDATE:
		op_validate(sm, c, id, req->validate, now);
		break;
	case SEMD__REQUEST__OP_RELEASE:
		op_release(sm, c, id, req->release, now);
		break;
	case SEMD__REQUEST__OP_DETACH:
		c->detach = true;
		reply_ok(sm, c, id);
		break;
	default:
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "unknown or missing operation");
		break;
	}
	sm->who = NULL;
	return r;
}

/* --- time ------------------------------------------------------------------- */

/* Earliest deadline. */
uint64_t sm_next_deadline(const struct sm *sm)
{
	return sm->heap_n ? sm->heap[0]->when : UINT64_MAX;
}

/* Fire every timer due at or before now. */
void sm_tick(struct sm *sm, uint64_t now)
{
	struct sm_timer *t;
	struct sm_wait *w;
	struct sm_hold *h;
	struct sm_sem *sem;
	struct sm_session *ss;
	char why[320];

	sm->now = now;
	while (sm->heap_n > 0 && sm->heap[0]->when <= now) {
		t = sm->heap[0];
		timer_disarm(sm, t);
		switch (t->kind) {
		case T_WAIT:
			w = container_of(t, struct sm_wait, deadline);
			sem = w->sem;
			snprintf(why, sizeof why,
			    "no permit of %s within %" PRIu64 " ms", sem->name,
			    now - w->since_ms);
			sm->ctr.timeouts++;
			wait_cancel(sm, w, SEMD__CODE__TIMEOUT, why);
			sem_maybe_free(sm, sem);
			break;
		case T_HOLD:
			h = container_of(t, struct sm_hold, expiry);
			sem = h->sem;
			sm->ctr.leases_expired++;
			hold_release(sm, h, true);
			sem_maybe_free(sm, sem);
			break;
		case T_SESSION:
			ss = container_of(t, struct sm_session, expiry);
			if (ss->heard + ss->lease_ms > now)
				session_arm(sm, ss);	/* heard since it was armed */
			else
				session_expire(sm, ss, now);
			break;
		}
	}
}

/*
 * Shutting down: waiters hear UNAVAILABLE, new waits are refused, and every
 * connected session is told that its holds are lost (the state goes with
 * the process) and that the daemon stops.
 */
void sm_shutdown(struct sm *sm, uint64_t now)
{
	char key[SM_NAME_MAX + 1];
	struct ordidx_iter it;
	struct sm_sem *sem;
	struct sm_wait *w;
	struct sm_client *c;
	struct list_head *pos, *hpos;

	sm->now = now;
	sm->shutting_down = true;
	sm->cur_op = 0;
	/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): false positive: nothing is freed in this walk */
	list_for_each(pos, &sm->clients) {
		c = list_entry(pos, struct sm_client, entry);
		if (c->session != NULL)
			list_for_each(hpos, &c->session->holds)
				notice_lost(sm, list_entry(hpos, struct sm_hold,
				    owner_entry), SEMD__CODE__UNAVAILABLE,
				    "semd is shutting down");
		reply_err(sm, c, 0, SEMD__CODE__UNAVAILABLE, "semd is shutting down");
	}
	/* In name order (not hash order): the same on every replica. */
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL) {
		if (list_empty(&sem->waiters))
			continue;
		memcpy(key, sem->name, (size_t)sem->len + 1);
		while (!list_empty(&sem->waiters)) {
			w = list_entry(sem->waiters.prev, struct sm_wait,
			    sem_entry);
			wait_cancel(sm, w, SEMD__CODE__UNAVAILABLE,
			    "semd is shutting down");
		}
		sem_maybe_free(sm, sem);	/* the walk resumes after key */
		ordidx_seek(&sm->byname, &it, key, false);
	}
}

/* Current counters. */
void sm_get_counters(const struct sm *sm, struct sm_counters *out)
{
	*out = sm->ctr;
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
	out->memory_bytes = sm->mem + sizeof *sm + sm->heap_cap * sizeof *sm->heap +
	    hmap_bytes(&sm->names) + hmap_bytes(&sm->sessions) +
	    hmap_bytes(&sm->permits) + hmap_bytes(&sm->tokens) +
	    hmap_bytes(&sm->requests) + ordidx_bytes(&sm->byname);
}

/* Every semaphore's gauges. */
void sm_sem_each_prefix(struct sm *sm, const char *prefix,
    void (*fn)(void *arg, const struct sm_sem_gauges *g), void *arg)
{
	size_t plen = strlen(prefix);
	struct sm_sem_gauges g;
	struct ordidx_iter it;
	struct sm_sem *sem;

	/* The names with a prefix are one run of the ordered index. */
	ordidx_seek(&sm->byname, &it, prefix, true);
	while ((sem = ordidx_next(&it)) != NULL &&
	    strncmp(sem->name, prefix, plen) == 0) {
		g.name = sem->name;
		g.len = sem->len;
		g.limit = sem->limit;
		g.holders = sem->nholders;
		g.waiters = sem->nwaiters;
		g.available = sema_count(&sem->sem);
		fn(arg, &g);
	}
}

/* Call fn for every semaphore, in name order. */
void sm_sem_each(struct sm *sm,
    void (*fn)(void *arg, const struct sm_sem_gauges *g), void *arg)
{
	sm_sem_each_prefix(sm, "", fn, arg);
}

/* --- invariants, for tests ---------------------------------------------------- */

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		snprintf(err, errlen, __VA_ARGS__);			\
		return -1;						\
	}								\
} while (0)

/* Check one semaphore's invariants. */
static int check_sem(const struct sm *sm, const struct sm_sem *sem, char *err,
    size_t errlen, uint64_t *nholds, uint64_t *nwaits)
{
	struct list_head *pos, *cpos;
	const struct sm_hold *h;
	const struct sm_wait *w;
	uint64_t held = 0, nh = 0, nw = 0, seq = 0;
	long count = sem->sem.count;
	bool head_seen = false;

	list_for_each(pos, &sem->holders) {
		h = list_entry(pos, struct sm_hold, sem_entry);
		CHECK(h->sem == sem, "%s: holder of another semaphore", sem->name);
		CHECK(h->n > 0, "%s: empty hold", sem->name);
		CHECK(h->token <= sem->sem.token, "%s: token %" PRIu64
		    " above last %" PRIu64, sem->name, h->token, sem->sem.token);
		CHECK(token_find(sm, sem, h->token) == h,
		    "%s: token %" PRIu64 " not indexed", sem->name, h->token);
		CHECK(permit_find(sm, h->permit_id) == h,
		    "%s: permit %" PRIu64 " not indexed", sem->name, h->permit_id);
		held += h->n;
		nh++;
	}
	CHECK(held == sem->held, "%s: held %" PRIu64 " != records %" PRIu64,
	    sem->name, sem->held, held);
	CHECK(nh == sem->nholders, "%s: nholders", sem->name);
	if (sem->mode == SEMD__MODE__OWNED)
		CHECK((long)held + count == (long)sem->limit,
		    "%s: held %" PRIu64 " + free %ld != limit %u", sem->name,
		    held, count, sem->limit);
	else
		CHECK(held == 0 && count <= (long)sem->limit,
		    "%s: signal semaphore over its limit", sem->name);
	/*
	 * Our waiter list mirrors the core's FIFO list exactly, in arrival
	 * order; only signal-mode waiters of absent sessions are parked, and
	 * the first one not parked waits for more than is free.
	 */
	cpos = sem->sem.wait_list.next;
	list_for_each(pos, &sem->waiters) {
		w = list_entry(pos, struct sm_wait, sem_entry);
		CHECK(cpos != &sem->sem.wait_list && cpos == &w->w.list,
		    "%s: waiter order differs from the core", sem->name);
		CHECK(w->w.state == SEMA_WAITING, "%s: queued waiter not waiting",
		    sem->name);
		CHECK(w->seq > seq, "%s: waiters out of arrival order", sem->name);
		seq = w->seq;
		CHECK(w->w.parked == (sem->mode == SEMD__MODE__SIGNAL &&
		    w->session->client == NULL),
		    "%s: waiter %" PRIu64 " parked %d wrongly", sem->name, w->seq,
		    (int)w->w.parked);
		if (!head_seen && !w->w.parked) {
			CHECK(count < (long)w->n,
			    "%s: head waiter wants %u while %ld are free",
			    sem->name, w->n, count);
			head_seen = true;
		}
		cpos = cpos->next;
		nw++;
	}
	CHECK(cpos == &sem->sem.wait_list, "%s: core has extra waiters", sem->name);
	CHECK(nw == sem->nwaiters, "%s: nwaiters", sem->name);
	CHECK(!(sem->auto_created && nh == 0 && nw == 0),
	    "%s: idle auto-created semaphore not freed", sem->name);
	*nholds += nh;
	*nwaits += nw;
	return 0;
}

/*
 * The ordered name index holds exactly the table's names: as many, each
 * one found in the table, in strictly increasing order (ordidx_check).
 */
static int check_byname(const struct sm *sm, char *err, size_t errlen)
{
	struct ordidx_iter it;
	const struct sm_sem *sem;
	char why[200];

	CHECK(sm->byname_lost == 0, "%" PRIu64 " freed name(s) were not in the "
	    "ordered index", sm->byname_lost);
	CHECK(ordidx_check(&sm->byname, why, sizeof why) == 0, "name index: %s",
	    why);
	CHECK(ordidx_count(&sm->byname) == hmap_count(&sm->names),
	    "name index has %zu names, the table %zu",
	    ordidx_count(&sm->byname), hmap_count(&sm->names));
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL)
		CHECK(sem_find(sm, sem->name) == sem,
		    "%s: in the name index, not in the table", sem->name);
	return 0;
}

/* Add n of kind to principal pr's entry in the recount of check_principals(). */
static int recount(const struct sm_principal **prs, uint64_t (*cnt)[SM_NLIMITS],
    size_t np, const struct sm_principal *pr, enum sm_limit_kind kind,
    uint64_t n)
{
	size_t i;

	for (i = 0; i < np; i++) {
		if (prs[i] == pr) {
			cnt[i][kind] += n;
			return 0;
		}
	}
	return -1;
}

/*
 * Every principal's counts equal a recount of the sessions, holds, waiters
 * and owned names that are its, and every principal referred to is in the
 * table. O(objects x principals): a test check, with few principals.
 */
static int check_principals(const struct sm *sm, char *err, size_t errlen)
{
	const struct sm_principal **prs;
	uint64_t (*cnt)[SM_NLIMITS];
	struct hmap_iter it;
	struct hnode *n;
	struct list_head *pos;
	const struct sm_session *s;
	const struct sm_sem *sem;
	const struct sm_hold *h;
	size_t np = hmap_count(&sm->principals), i = 0, k;
	int r = -1;

	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
	prs = calloc(np + 1, sizeof *prs);
	cnt = calloc(np + 1, sizeof *cnt);
	if (prs == NULL || cnt == NULL) {
		snprintf(err, errlen, "out of memory checking principals");
		goto out;
	}
	hmap_iter_init(&it, &sm->principals);
	while ((n = hmap_iter_next(&it)) != NULL)
		prs[i++] = container_of(n, struct sm_principal, node);
	hmap_iter_init(&it, &sm->sessions);
	while ((n = hmap_iter_next(&it)) != NULL) {
		s = container_of(n, struct sm_session, node);
		if (recount(prs, cnt, np, s->ident->pr, SM_LIMIT_SESSIONS, 1) != 0 ||
		    recount(prs, cnt, np, s->ident->pr, SM_LIMIT_WAITERS,
		    s->nwaiters) != 0) {
			snprintf(err, errlen, "session %" PRIu64 ": principal not in the table",
			    s->id);
			goto out;
		}
	}
	hmap_iter_init(&it, &sm->names);
	while ((n = hmap_iter_next(&it)) != NULL) {
		sem = container_of(n, struct sm_sem, node);
		if (sem->owner != NULL && recount(prs, cnt, np, sem->owner,
		    SM_LIMIT_SEMAPHORES, 1) != 0) {
			snprintf(err, errlen, "%s: owner not in the table", sem->name);
			goto out;
		}
		list_for_each(pos, &sem->holders) {
			h = list_entry(pos, struct sm_hold, sem_entry);
			if (recount(prs, cnt, np, h->ident->pr, SM_LIMIT_PERMITS,
			    h->n) != 0) {
				snprintf(err, errlen, "%s: holder's principal not in the table",
				    sem->name);
				goto out;
			}
		}
	}
	for (i = 0; i < np; i++) {
		for (k = 0; k < SM_NLIMITS; k++) {
			if (cnt[i][k] != prs[i]->count[k]) {
				snprintf(err, errlen, "principal %s: %s counted %" PRIu64
				    ", recounted %" PRIu64, prs[i]->name, limit_names[k],
				    prs[i]->count[k], cnt[i][k]);
				goto out;
			}
		}
		if (prs[i]->refs == 0) {
			snprintf(err, errlen, "principal %s has no references",
			    prs[i]->name);
			goto out;
		}
	}
	r = 0;
out:
	free(prs);
	free(cnt);
	return r;
}

/* Check everything. */
int sm_check(const struct sm *sm, char *err, size_t errlen)
{
	struct hmap_iter it;
	struct hnode *n;
	struct list_head *pos;
	const struct sm_session *s;
	uint64_t nholds = 0, nwaits = 0, nsess = 0, k, sh;
	size_t i;

	hmap_iter_init(&it, &sm->names);
	k = 0;
	while ((n = hmap_iter_next(&it)) != NULL) {
		if (check_sem(sm, container_of(n, struct sm_sem, node), err,
		    errlen, &nholds, &nwaits) != 0)
			return -1;
		k++;
	}
	CHECK(sm->overgrants == 0, "%" PRIu64 " grant(s) left a semaphore held above its limit",
	    sm->overgrants);
	if (check_byname(sm, err, errlen) != 0)
		return -1;
	CHECK(k == sm->ctr.semaphores, "semaphore count %" PRIu64 " != %" PRIu64,
	    sm->ctr.semaphores, k);
	CHECK(nholds == sm->ctr.holders, "holder count");
	CHECK(nwaits == sm->ctr.waiters, "waiter count");
	CHECK(hmap_count(&sm->permits) == nholds, "permit index size");
	CHECK(hmap_count(&sm->tokens) == nholds, "token index size");
	hmap_iter_init(&it, &sm->sessions);
	while ((n = hmap_iter_next(&it)) != NULL) {
		s = container_of(n, struct sm_session, node);
		k = 0;
		list_for_each(pos, &s->holds)
			k++;
		CHECK(k == s->nholds, "session %" PRIu64 ": nholds", s->id);
		sh = 0;
		list_for_each(pos, &s->waiters)
			sh++;
		CHECK(sh == s->nwaiters, "session %" PRIu64 ": nwaiters", s->id);
		CHECK(s->client != NULL || s->lease_ms > 0,
		    "session %" PRIu64 ": lingering without a lease", s->id);
		CHECK(s->lease_ms == 0 || s->expiry.idx != SIZE_MAX,
		    "session %" PRIu64 ": a lease without a timer", s->id);
		CHECK(s->lease_ms == 0 || s->expiry.when <= s->heard + s->lease_ms,
		    "session %" PRIu64 ": lease timer past its lease", s->id);
		k = 0;
		list_for_each(pos, &s->memos)
			k++;
		CHECK(k == s->nmemos, "session %" PRIu64 ": nmemos", s->id);
		nsess++;
	}
	CHECK(nsess == sm->ctr.sessions, "session count");
	if (check_principals(sm, err, errlen) != 0)
		return -1;
	for (i = 0; i < sm->heap_n; i++) {
		CHECK(sm->heap[i]->idx == i, "heap index %zu", i);
		if (i > 0)
			CHECK(!timer_before(sm->heap[i], sm->heap[(i - 1) / 2]),
			    "heap order at %zu", i);
	}
	return 0;
}
