/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/sm_snap.c - the whole state as bytes and back: the snapshot a log
 * is compacted into (sm_snapshot, sm_restore).
 *
 * Only the state goes in: what a replica needs to answer the next entries
 * exactly as the machine that wrote it would, whatever its hash key, clock
 * or memory addresses. Nothing in it depends on hash order or pointers, so
 * two machines that applied the same entries write the same bytes.
 *
 * Layout (version 2): little-endian integers, strings as u32 length + bytes.
 *   header   "SEMDSNAP", u32 version, the scalars (times, counters, next ids,
 *            the settings that came through the log), the counters
 *   principals  by name; referred to by their index
 *   idents   (pid, client name, host, principal); referred to by index
 *   sessions by id: id, secret, ident, lease, heard, expiry timer, memos
 *   clients  in the order they were opened: id, principal, flags, secret,
 *            hello, session id
 *   watches  in the order they were made: client id, id, flags, name
 *   names    in name order: limit, mode, owner, token, free count, its
 *            token bucket if any (rate, period, burst, level, last refill,
 *            timer), then its holders in grant order (with their DownMulti
 *            group and lease)
 *   waiters  in arrival order: seq, session, lease, times, request id, and
 *            each name waited for with its n; every queue is in arrival
 *            order, so queueing them again in this order rebuilds each
 * Version 1 (semd 0.2.0: no buckets, watches or multi-name waiters; each
 * name's waiters after its holders; fewer ops and codes counted) is read
 * too. Timers are saved with their tie-breaking sequence, so they fire in
 * the same order after a restore. A restore checks every count and
 * reference, and the state it made against every invariant (sm_check), and
 * refuses bytes that do not make a consistent state.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sm-int.h"

#define SNAP_MAGIC	"SEMDSNAP"
#define SNAP_VERSION	2u
/* Version 1's counter arrays: ops up to Detach, codes up to SESSION_EXPIRED. */
#define SNAP_V1_NOPS	16
#define SNAP_V1_NCODES	14

/* --- writing ------------------------------------------------------------------ */

/* Into a struct sm_batch (its ncmds unused), as log entries are: sm_bytes.c. */

static void w_u8(struct sm_batch *b, uint64_t v) { bytes_int(b, v, 1); }
static void w_u32(struct sm_batch *b, uint64_t v) { bytes_int(b, v, 4); }
static void w_u64(struct sm_batch *b, uint64_t v) { bytes_int(b, v, 8); }

/* Append a string: its length, then its bytes. */
static void w_str(struct sm_batch *b, const char *s, size_t len)
{
	w_u32(b, len);
	bytes_put(b, s, len);
}

/* Append a timer: armed, then when and seq. */
static void w_timer(struct sm_batch *b, const struct sm_timer *t)
{
	w_u8(b, t->idx != SIZE_MAX);
	if (t->idx != SIZE_MAX) {
		w_u64(b, t->when);
		w_u64(b, t->seq);
	}
}

/*
 * Pointer -> index, for the principals and identities the records refer
 * to: open addressing, linear probing, a power-of-two size at least twice
 * the number of keys.
 */
struct ptrmap {
	const void	**keys;
	uint32_t	*vals;
	size_t		size;
	uint32_t	n;
};

/* A map for up to n keys; false when out of memory. */
static bool ptrmap_init(struct ptrmap *m, size_t n)
{
	m->size = 16;
	while (m->size < 2 * n + 2)
		m->size *= 2;
	m->n = 0;
	m->keys = ptr_array(m->size);
	m->vals = calloc(m->size, sizeof *m->vals);
	return m->keys != NULL && m->vals != NULL;
}

/* Free a map. */
static void ptrmap_free(struct ptrmap *m)
{
	free(m->keys);
	free(m->vals);
}

/* The slot of key: where it is, or the empty one where it would go. */
static size_t ptrmap_slot(const struct ptrmap *m, const void *key)
{
	size_t i = (size_t)(((uintptr_t)key >> 4) * 0x9e3779b97f4a7c15ULL) &
	    (m->size - 1);

	while (m->keys[i] != NULL && m->keys[i] != key)
		i = (i + 1) & (m->size - 1);
	return i;
}

/* Index of key, added with the next index if new; true when it was new. */
static bool ptrmap_add(struct ptrmap *m, const void *key, uint32_t *idx)
{
	size_t i = ptrmap_slot(m, key);

	if (m->keys[i] != NULL) {
		*idx = m->vals[i];
		return false;
	}
	m->keys[i] = key;
	m->vals[i] = m->n;
	*idx = m->n++;
	return true;
}

/* Index of a key known to be in the map. */
static uint32_t ptrmap_get(const struct ptrmap *m, const void *key)
{
	return m->vals[ptrmap_slot(m, key)];
}

/* Order of principals by name. */
static int principal_cmp(const void *a, const void *b)
{
	const struct sm_principal *x = *(const struct sm_principal *const *)a;
	const struct sm_principal *y = *(const struct sm_principal *const *)b;
	size_t n = x->len < y->len ? x->len : y->len;
	int r = memcmp(x->name, y->name, n);

	return r != 0 ? r : (x->len > y->len) - (x->len < y->len);
}


/* Every element of a hash table, in an array sorted by cmp; NULL: no memory. */
static void **sorted_nodes(const struct hmap *m, size_t offset,
    int (*cmp)(const void *, const void *))
{
	struct hmap_iter it;
	struct hnode *n;
	size_t i = 0;
	void **v;

	v = ptr_array(hmap_count(m) + 1);
	if (v == NULL)
		return NULL;
	hmap_iter_init(&it, m);
	while ((n = hmap_iter_next(&it)) != NULL)
		v[i++] = (char *)n - offset;
	ptr_sort(v, i, cmp);
	return v;
}

/* The identity table: add id's entry when first seen. */
static void w_ident_note(struct sm_batch *idents, struct ptrmap *im,
    const struct ptrmap *pm, const struct sm_ident *id)
{
	uint32_t k;

	if (!ptrmap_add(im, id, &k))
		return;
	w_u32(idents, ptrmap_get(pm, id->pr));
	w_u32(idents, id->pid);
	w_str(idents, id->client_name, strlen(id->client_name));
	w_str(idents, id->host, strlen(id->host));
}

/* The scalars of the state machine. */
static void w_header(struct sm_batch *b, const struct sm *sm)
{
	const struct sm_counters *k = &sm->ctr;
	size_t i, j;

	bytes_put(b, SNAP_MAGIC, 8);
	w_u32(b, SNAP_VERSION);
	w_u64(b, sm->now);
	w_u64(b, sm->start_ms);
	w_u64(b, sm->token_base);
	w_u64(b, (uint64_t)sm->wall_off);
	w_u64(b, sm->token_hwm);
	w_u64(b, sm->timer_seq);
	w_u64(b, sm->next_session);
	w_u64(b, sm->next_permit);
	w_u64(b, sm->next_wait_seq);
	w_u64(b, sm->overgrants);
	w_u8(b, sm->shutting_down);
	w_u64(b, sm->leader_id);
	w_str(b, sm->leader_addr, strlen(sm->leader_addr));
	/* The settings that came through the log. */
	w_u32(b, sm->cfg.default_limit);
	w_u32(b, sm->cfg.max_semaphores);
	w_u32(b, sm->cfg.max_sessions);
	w_u32(b, sm->cfg.max_waiters_per_session);
	w_u32(b, sm->cfg.max_holds_per_session);
	w_u32(b, sm->cfg.max_lease_ms);
	w_u32(b, sm->cfg.max_reply);
	/* The counters (the gauges are recounted on restore). */
	w_u64(b, k->grants);
	w_u64(b, k->timeouts);
	w_u64(b, k->cancels);
	w_u64(b, k->cancels_disconnect);
	w_u64(b, k->leases_expired);
	w_u64(b, k->sessions_expired);
	w_u64(b, k->errors);
	w_u64(b, k->multi_grants);
	w_u64(b, k->deadlocks);
	w_u64(b, k->deadlock_checks);
	w_u64(b, k->deadlock_steps);
	w_u64(b, k->deadlock_cut);
	for (i = 0; i < SM_NOPS; i++)
		w_u64(b, k->ops[i]);
	for (i = 0; i < SM_NOPS; i++)
		for (j = 0; j < SM_NCODES; j++)
			w_u64(b, k->replies[i][j]);
	for (i = 0; i < SM_HIST_BUCKETS; i++) {
		w_u64(b, k->wait.bucket[i]);
		w_u64(b, k->hold.bucket[i]);
	}
	w_u64(b, k->wait.sum_ms);
	w_u64(b, k->wait.count);
	w_u64(b, k->hold.sum_ms);
	w_u64(b, k->hold.count);
}

/* One name with its holders and waiters. */
static void w_sem(struct sm_batch *b, const struct ptrmap *im,
    const struct ptrmap *pm, const struct sm_sem *sem)
{
	const struct list_head *pos;
	const struct sm_hold *h;

	w_str(b, sem->name, sem->len);
	w_u32(b, sem->limit);
	w_u8(b, sem->mode);
	w_u8(b, sem->auto_created);
	w_u32(b, sem->owner ? ptrmap_get(pm, sem->owner) + 1 : 0);
	w_u64(b, sem->sem.token);
	w_u64(b, (uint64_t)sem->sem.count);
	w_u8(b, sem->rate != NULL);
	if (sem->rate != NULL) {
		w_u32(b, sem->rate->rate);
		w_u32(b, sem->rate->period_ms);
		w_u32(b, sem->rate->burst);
		w_u64(b, sem->rate->frac);
		w_u64(b, sem->rate->tokens);
		w_u64(b, sem->rate->last);
		w_timer(b, &sem->rate->due);
	}
	w_u32(b, sem->nholders);
	list_for_each(pos, &sem->holders) {
		h = list_entry(pos, struct sm_hold, sem_entry);
		w_u64(b, h->permit_id);
		w_u64(b, h->token);
		w_u32(b, h->n);
		w_u64(b, h->session ? h->session->id : 0);
		w_u32(b, ptrmap_get(im, h->ident));
		w_u64(b, h->since_wall);
		w_u64(b, h->req.indexed ? h->req.request_id : 0);
		w_u64(b, h->req.session_id);
		w_u64(b, h->group_key);
		w_u32(b, h->lease_ms);
		w_timer(b, &h->expiry);
	}
}

/* Waiters by arrival order. */
static int wait_seq_cmp(const void *a, const void *b)
{
	const struct sm_wait *x = *(const struct sm_wait *const *)a;
	const struct sm_wait *y = *(const struct sm_wait *const *)b;

	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Every waiter, in arrival order, with the names it waits for. */
static bool w_waits(struct sm_batch *b, const struct sm *sm,
    struct sm_session *const *ss, size_t ns)
{
	const struct list_head *pos;
	struct sm_wait **wv;
	const struct sm_wait *w;
	size_t n = 0, i, j;

	for (i = 0; i < ns; i++)
		n += ss[i]->nwaiters;
	if ((wv = ptr_array(n + 1)) == NULL)
		return false;
	n = 0;
	for (i = 0; i < ns; i++)
		list_for_each(pos, &ss[i]->waiters)
			wv[n++] = list_entry(pos, struct sm_wait, session_entry);
	ptr_sort(wv, n, wait_seq_cmp);
	w_u64(b, n);
	for (i = 0; i < n; i++) {
		w = wv[i];
		w_u64(b, w->seq);
		w_u64(b, w->session->id);
		w_u32(b, w->lease_ms);
		w_u64(b, w->since_ms);
		w_u64(b, w->since_wall);
		w_u64(b, w->req.request_id);
		w_u8(b, w->multi);
		w_u8(b, w->nm);
		for (j = 0; j < w->nm; j++) {
			w_str(b, w->m[j].sem->name, w->m[j].sem->len);
			w_u32(b, w->m[j].n);
		}
		w_timer(b, &w->deadline);
	}
	(void)sm;
	free(wv);
	return true;
}

/*
 * The identities, numbered as first seen: the sessions' in id order, then
 * the holders' in name and grant order. Their table comes before the
 * records that refer to them, so they are gathered in a pass of their own
 * (the records are then written straight after: no copy of the body).
 * Also the bytes the records will take, about, so that the buffer is
 * allocated once.
 */
static size_t w_idents(struct sm_batch *idents, struct ptrmap *im,
    const struct ptrmap *pm, const struct sm *sm, struct sm_session **ss,
    size_t ns)
{
	const struct list_head *pos;
	const struct sm_sem *sem;
	struct ordidx_iter it;
	size_t i, need = 64;

	for (i = 0; i < ns; i++) {
		w_ident_note(idents, im, pm, ss[i]->ident);
		need += 64 + 24 * (size_t)ss[i]->nmemos;
	}
	need += 40 * sm->ctr.clients;
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL) {
		need += 96 + sem->len + 64 * (size_t)sem->nwaiters;
		list_for_each(pos, &sem->holders) {
			w_ident_note(idents, im, pm, list_entry(pos,
			    struct sm_hold, sem_entry)->ident);
			need += 96;
		}
	}
	list_for_each(pos, &sm->watches)
		need += 32 + list_entry(pos, struct sm_watch, entry)->len;
	return need;
}

/*
 * The state as bytes: *out (malloc'ed, the caller frees it) and *len.
 * -ENOMEM when out of memory.
 */
int sm_snapshot(const struct sm *sm, uint8_t **out, size_t *len)
{
	struct sm_batch b = { 0 }, idents = { 0 };
	struct sm_principal **prs = NULL;
	struct sm_session **ss = NULL;
	struct ptrmap pm = { 0 }, im = { 0 };
	const struct list_head *pos, *wpos;
	const struct sm_client *c;
	const struct sm_memo *m;
	const struct sm_watch *x;
	struct ordidx_iter it;
	const struct sm_sem *sem;
	size_t i, n, need, np = hmap_count(&sm->principals);
	size_t ns = hmap_count(&sm->sessions);
	uint32_t k;
	int r = -ENOMEM;

	*out = NULL;
	*len = 0;
	prs = (struct sm_principal **)sorted_nodes(&sm->principals,
	    offsetof(struct sm_principal, node), principal_cmp);
	ss = (struct sm_session **)sorted_nodes(&sm->sessions,
	    offsetof(struct sm_session, node), sm_session_cmp);
	if (prs == NULL || ss == NULL || !ptrmap_init(&pm, np) ||
	    !ptrmap_init(&im, ns + sm->ctr.holders))
		goto out;
	for (i = 0; i < np; i++)
		ptrmap_add(&pm, prs[i], &k);
	need = w_idents(&idents, &im, &pm, sm, ss, ns);
	if (!bytes_room(&b, need + idents.len + 64 * np + 4096))
		goto out;
	w_header(&b, sm);
	w_u32(&b, np);
	for (i = 0; i < np; i++)
		w_str(&b, prs[i]->name, prs[i]->len);
	w_u32(&b, im.n);
	bytes_put(&b, idents.p, idents.len);
	/* Sessions, clients and names. */
	w_u32(&b, ns);
	for (i = 0; i < ns; i++) {
		w_u64(&b, ss[i]->id);
		bytes_put(&b, ss[i]->secret, SM_SECRET_LEN);
		w_u32(&b, ptrmap_get(&im, ss[i]->ident));
		w_u32(&b, ss[i]->lease_ms);
		w_u64(&b, ss[i]->heard);
		w_timer(&b, &ss[i]->expiry);
		w_u32(&b, ss[i]->nmemos);
		list_for_each(pos, &ss[i]->memos) {
			m = list_entry(pos, struct sm_memo, entry);
			w_u64(&b, m->req.request_id);
			w_u32(&b, (uint32_t)m->code);
			w_u32(&b, m->n);
			w_u64(&b, m->token);
		}
	}
	w_u64(&b, sm->ctr.clients);
	list_for_each(pos, &sm->clients) {
		c = list_entry(pos, struct sm_client, entry);
		w_u64(&b, c->id);
		w_u32(&b, ptrmap_get(&pm, c->pr));
		w_u8(&b, c->local | c->detach << 1 | c->hello << 2);
		bytes_put(&b, c->secret, SM_SECRET_LEN);
		w_u64(&b, c->session ? c->session->id : 0);
	}
	n = 0;
	list_for_each(wpos, &sm->watches)
		n++;
	w_u64(&b, n);
	list_for_each(wpos, &sm->watches) {
		x = list_entry(wpos, struct sm_watch, entry);
		w_u64(&b, x->client->id);
		w_u64(&b, x->id);
		w_u8(&b, x->prefix | x->admin << 1);
		w_str(&b, x->name, x->len);
	}
	w_u64(&b, sm->ctr.semaphores);
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL)
		w_sem(&b, &im, &pm, sem);
	if (!w_waits(&b, sm, ss, ns) || b.failed || idents.failed)
		goto out;
	*out = b.p;
	*len = b.len;
	b.p = NULL;
	r = 0;
out:
	free(b.p);
	free(idents.p);
	free(prs);
	free(ss);
	ptrmap_free(&pm);
	ptrmap_free(&im);
	return r;
}

/* --- reading ------------------------------------------------------------------ */

static uint8_t r_u8(struct sm_rbuf *r) { return (uint8_t)rbuf_int(r, 1); }
static uint32_t r_u32(struct sm_rbuf *r) { return (uint32_t)rbuf_int(r, 4); }
static uint64_t r_u64(struct sm_rbuf *r) { return rbuf_int(r, 8); }

/* A string into buf (max bytes and a NUL); its length, or bad. */
static size_t r_str(struct sm_rbuf *r, char *buf, size_t max)
{
	size_t n = r_u32(r);
	const uint8_t *p;

	if (n > max) {
		r->bad = true;
		return 0;
	}
	p = rbuf_take(r, n);
	if (p == NULL)
		return 0;
	memcpy(buf, p, n);
	buf[n] = '\0';
	if (strlen(buf) != n)
		r->bad = true;		/* a NUL inside */
	return n;
}

/* Arm t from the bytes (when, seq kept, so ties fire in the same order). */
static void r_timer(struct sm_rbuf *r, struct sm *sm, struct sm_timer *t, int kind)
{
	uint64_t when, seq;

	t->idx = SIZE_MAX;
	if (r_u8(r) == 0)
		return;
	when = r_u64(r);
	seq = r_u64(r);
	if (r->bad || seq >= sm->timer_seq ||
	    timer_arm_seq(sm, t, kind, when, seq) != 0)
		r->bad = true;
}

/* Restoring: the tables the records refer to by index. */
struct restore {
	struct sm		*sm;
	struct sm_rbuf		r;
	struct sm_principal	**prs;
	uint32_t		np;
	struct sm_ident		**ids;
	uint32_t		nids;
	uint32_t		version;
	char			err[160];
};

/* Note why the bytes are refused (the first reason). */
static void __attribute__((format(printf, 2, 3)))
rs_fail(struct restore *rs, const char *fmt, ...)
{
	va_list ap;

	if (rs->err[0] == '\0') {
		va_start(ap, fmt);
		vsnprintf(rs->err, sizeof rs->err, fmt, ap);
		va_end(ap);
	}
	rs->r.bad = true;
}

/* The scalars (see w_header). */
static void r_header(struct restore *rs)
{
	struct sm_rbuf *r = &rs->r;
	struct sm *sm = rs->sm;
	struct sm_counters *k = &sm->ctr;
	const uint8_t *magic = rbuf_take(r, 8);
	size_t i, j, nops, ncodes;

	if (magic == NULL || memcmp(magic, SNAP_MAGIC, 8) != 0) {
		rs_fail(rs, "not a semd snapshot");
		return;
	}
	rs->version = r_u32(r);
	if (rs->version != 1 && rs->version != SNAP_VERSION) {
		rs_fail(rs, "snapshot format version %u not known", rs->version);
		return;
	}
	sm->now = r_u64(r);
	sm->start_ms = r_u64(r);
	sm->token_base = r_u64(r);
	sm->wall_off = (int64_t)r_u64(r);
	sm->token_hwm = r_u64(r);
	sm->timer_seq = r_u64(r);
	sm->next_session = r_u64(r);
	sm->next_permit = r_u64(r);
	sm->next_wait_seq = r_u64(r);
	sm->overgrants = r_u64(r);
	sm->shutting_down = r_u8(r) != 0;
	sm->leader_id = r_u64(r);
	r_str(r, sm->leader_addr, sizeof sm->leader_addr - 1);
	sm->cfg.default_limit = r_u32(r);
	sm->cfg.max_semaphores = r_u32(r);
	sm->cfg.max_sessions = r_u32(r);
	sm->cfg.max_waiters_per_session = r_u32(r);
	sm->cfg.max_holds_per_session = r_u32(r);
	sm->cfg.max_lease_ms = r_u32(r);
	sm->cfg.max_reply = r_u32(r);
	if (sm->cfg.default_limit == 0 || sm->cfg.default_limit > SM_LIMIT_MAX)
		rs_fail(rs, "default limit out of range");
	k->grants = r_u64(r);
	k->timeouts = r_u64(r);
	k->cancels = r_u64(r);
	k->cancels_disconnect = r_u64(r);
	k->leases_expired = r_u64(r);
	k->sessions_expired = r_u64(r);
	k->errors = r_u64(r);
	if (rs->version >= 2) {
		k->multi_grants = r_u64(r);
		k->deadlocks = r_u64(r);
		k->deadlock_checks = r_u64(r);
		k->deadlock_steps = r_u64(r);
		k->deadlock_cut = r_u64(r);
	}
	nops = rs->version >= 2 ? SM_NOPS : SNAP_V1_NOPS;
	ncodes = rs->version >= 2 ? SM_NCODES : SNAP_V1_NCODES;
	for (i = 0; i < nops; i++)
		k->ops[i] = r_u64(r);
	for (i = 0; i < nops; i++)
		for (j = 0; j < ncodes; j++)
			k->replies[i][j] = r_u64(r);
	for (i = 0; i < SM_HIST_BUCKETS; i++) {
		k->wait.bucket[i] = r_u64(r);
		k->hold.bucket[i] = r_u64(r);
	}
	k->wait.sum_ms = r_u64(r);
	k->wait.count = r_u64(r);
	k->hold.sum_ms = r_u64(r);
	k->hold.count = r_u64(r);
}

/*
 * A table of *n pointers, n read first (each entry takes 4 bytes or more,
 * which bounds it); NULL, refused, when out of range or memory.
 */
static void *rs_table(struct restore *rs, uint32_t *n, const char *what)
{
	void *t;

	*n = r_u32(&rs->r);
	if (*n > rs->r.len / 4) {
		rs_fail(rs, "%s count out of range", what);
		return NULL;
	}
	if ((t = ptr_array((size_t)*n + 1)) == NULL)
		rs_fail(rs, "out of memory");
	return t;
}

/* The principals and identities the records refer to. */
static void r_tables(struct restore *rs)
{
	struct sm_rbuf *r = &rs->r;
	struct sm *sm = rs->sm;
	char name[SM_PRINCIPAL_MAX + 1], label[SM_STR_MAX + 1];
	char host[SM_STR_MAX + 1];
	struct sm_ident *id;
	uint32_t i, p;
	Semd__Hello h = SEMD__HELLO__INIT;

	if ((rs->prs = rs_table(rs, &rs->np, "principal")) == NULL)
		return;
	for (i = 0; i < rs->np && !r->bad; i++) {
		r_str(r, name, SM_PRINCIPAL_MAX);
		if (!r->bad && (rs->prs[i] = principal_get(sm, name)) == NULL)
			rs_fail(rs, "out of memory");
		/* Kept referenced by the table while restoring. */
	}
	if ((rs->ids = rs_table(rs, &rs->nids, "identity")) == NULL)
		return;
	for (i = 0; i < rs->nids && !r->bad; i++) {
		p = r_u32(r);
		h.pid = r_u32(r);
		r_str(r, label, SM_STR_MAX);
		r_str(r, host, SM_STR_MAX);
		if (r->bad || p >= rs->np) {
			rs_fail(rs, "bad identity %u", i);
			return;
		}
		h.client_name = label;
		h.host = host;
		if ((id = ident_new(sm, rs->prs[p], &h)) == NULL) {
			rs_fail(rs, "out of memory");
			return;
		}
		rs->ids[i] = id;	/* this reference is the table's */
	}
}

/* The identity at index i, referenced once more; NULL when bad. */
static struct sm_ident *rs_ident(struct restore *rs, uint32_t i)
{
	if (i >= rs->nids) {
		rs_fail(rs, "identity index out of range");
		return NULL;
	}
	return ident_get(rs->ids[i]);
}

/* The sessions, with their memos. */
static void r_sessions(struct restore *rs)
{
	struct sm_rbuf *r = &rs->r;
	struct sm *sm = rs->sm;
	struct sm_session *s;
	struct sm_memo *m;
	const uint8_t *secret;
	uint32_t i, j, ns = r_u32(r), nm;
	uint64_t rid;

	for (i = 0; i < ns && !r->bad; i++) {
		if ((s = sm_alloc(sm, sizeof *s)) == NULL) {
			rs_fail(rs, "out of memory");
			return;
		}
		INIT_LIST_HEAD(&s->holds);
		INIT_LIST_HEAD(&s->waiters);
		INIT_LIST_HEAD(&s->memos);
		s->expiry.idx = SIZE_MAX;
		s->id = r_u64(r);
		if ((secret = rbuf_take(r, SM_SECRET_LEN)) != NULL)
			memcpy(s->secret, secret, SM_SECRET_LEN);
		s->ident = rs_ident(rs, r_u32(r));
		if (r->bad || s->id == 0 || s->id > sm->next_session ||
		    session_find(sm, s->id) != NULL) {
			ident_put(sm, s->ident);
			sm_dealloc(sm, s, sizeof *s);
			rs_fail(rs, "bad session record %u", i);
			return;
		}
		hmap_insert(&sm->sessions, &s->node, pair_hash(sm, s->id, 0));
		principal_count(s->ident->pr, SM_LIMIT_SESSIONS, 1);
		sm->ctr.sessions++;
		s->lease_ms = r_u32(r);
		s->heard = r_u64(r);
		r_timer(r, sm, &s->expiry, T_SESSION);
		nm = r_u32(r);
		for (j = 0; j < nm && !r->bad; j++) {
			rid = r_u64(r);
			if (r->bad || rid == 0 || req_find(sm, s->id, rid) != NULL ||
			    (m = sm_alloc(sm, sizeof *m)) == NULL) {
				rs_fail(rs, "bad memo in session %" PRIu64, s->id);
				return;
			}
			m->code = (int)r_u32(r);
			m->n = r_u32(r);
			m->token = r_u64(r);
			list_add_tail(&m->entry, &s->memos);
			s->nmemos++;
			req_index(sm, &m->req, s->id, rid, REQ_MEMO);
		}
	}
}

/* The clients, in the order they were opened. */
static void r_clients(struct restore *rs)
{
	struct sm_rbuf *r = &rs->r;
	struct sm *sm = rs->sm;
	struct sm_client *c;
	struct sm_session *s;
	uint64_t i, n = r_u64(r), id, sid;
	uint32_t p;
	uint8_t flags;
	const uint8_t *secret;

	for (i = 0; i < n && !r->bad; i++) {
		id = r_u64(r);
		p = r_u32(r);
		flags = r_u8(r);
		secret = rbuf_take(r, SM_SECRET_LEN);
		sid = r_u64(r);
		if (r->bad || p >= rs->np) {
			rs_fail(rs, "bad client record");
			return;
		}
		c = sm_client_open(sm, id, NULL, rs->prs[p]->name, secret,
		    flags & 1 ? SM_CLIENT_LOCAL : 0, sm->now);
		if (c == NULL) {
			rs_fail(rs, "client %" PRIu64 " twice, or out of memory", id);
			return;
		}
		c->detach = (flags & 2) != 0;
		c->hello = (flags & 4) != 0;
		if (sid != 0) {
			s = session_find(sm, sid);
			if (s == NULL || s->client != NULL) {
				rs_fail(rs, "client %" PRIu64 ": bad session %" PRIu64,
				    id, sid);
				return;
			}
			s->client = c;
			c->session = s;
		}
	}
}

/* The watches (version 2), in the order they were made. */
static void r_watches(struct restore *rs)
{
	struct sm_rbuf *r = &rs->r;
	struct sm *sm = rs->sm;
	struct sm_client *c;
	uint64_t i, n = r_u64(r), cid, wid;
	char name[SM_NAME_MAX + 1];
	uint8_t flags;
	size_t len;

	for (i = 0; i < n && !r->bad; i++) {
		cid = r_u64(r);
		wid = r_u64(r);
		flags = r_u8(r);
		len = r_str(r, name, SM_NAME_MAX);
		c = r->bad ? NULL : sm_client_find(sm, cid);
		if (c == NULL || c->nwatches >= SM_WATCH_MAX || wid == 0 ||
		    (len > 0 && !sm_name_valid(name, len)) ||
		    ((flags & 1) == 0 && len == 0) || watch_cancel(sm, c, wid) ||
		    watch_add(sm, c, wid, name, len, (flags & 1) != 0,
		    (flags & 2) != 0) == NULL) {
			rs_fail(rs, "bad watch %" PRIu64, i);
			return;
		}
	}
}

/* The session with id sid (0: none, when none may be); NULL and bad if not. */
static struct sm_session *rs_session(struct restore *rs, uint64_t sid,
    bool may_be_none)
{
	struct sm_session *s;

	if (sid == 0 && may_be_none)
		return NULL;
	s = session_find(rs->sm, sid);
	if (s == NULL)
		rs_fail(rs, "reference to session %" PRIu64 " that is not there", sid);
	return s;
}

/* One hold of sem (see w_sem). */
static void r_hold(struct restore *rs, struct sm_sem *sem)
{
	struct sm_rbuf *r = &rs->r;
	struct sm *sm = rs->sm;
	struct sm_hold *h;
	uint64_t sid, rid, rsid;

	if ((h = sm_cache_get(sm, &sm->hold_cache, sizeof *h)) == NULL) {
		rs_fail(rs, "out of memory");
		return;
	}
	INIT_LIST_HEAD(&h->owner_entry);
	INIT_LIST_HEAD(&h->group);
	h->expiry.idx = SIZE_MAX;
	h->sem = sem;
	h->permit_id = r_u64(r);
	h->token = r_u64(r);
	h->n = r_u32(r);
	sid = r_u64(r);
	h->ident = rs_ident(rs, r_u32(r));
	h->since_wall = r_u64(r);
	rid = r_u64(r);
	rsid = r_u64(r);
	if (rs->version >= 2) {
		h->group_key = r_u64(r);
		h->lease_ms = r_u32(r);
	}
	if (h->ident == NULL || sem->mode != SEMD__MODE__OWNED ||
	    h->group_key > h->permit_id || r->bad || h->n == 0 || h->n > SM_LIMIT_MAX ||
	    h->permit_id == 0 || h->permit_id > sm->next_permit ||
	    permit_find(sm, h->permit_id) != NULL ||
	    token_find(sm, sem, h->token) != NULL || h->token > sem->sem.token ||
	    (rid != 0 && req_find(sm, rsid, rid) != NULL)) {
		ident_put(sm, h->ident);
		sm_cache_put(sm, &sm->hold_cache, h, sizeof *h);
		rs_fail(rs, "%s: bad holder record", sem->name);
		return;
	}
	h->session = rs_session(rs, sid, true);
	list_add_tail(&h->sem_entry, &sem->holders);
	/* In permit order afterwards (r_owner_lists). */
	list_add_tail(&h->pr_entry, &h->ident->pr->holds);
	h->ident->pr->nholds++;
	sem->nholders++;
	sem->held += h->n;
	hmap_insert(&sm->permits, &h->permit_node, id_hash(sm, h->permit_id, 1));
	hmap_insert(&sm->tokens, &h->token_node,
	    id_hash(sm, sem->node.hash, h->token));
	req_index(sm, &h->req, rsid, rid, REQ_HOLD);
	sm->ctr.holders++;
	principal_count(h->ident->pr, SM_LIMIT_PERMITS, h->n);
	r_timer(r, sm, &h->expiry, T_HOLD);
	/* Owner lists are filled in permit order afterwards (r_owner_lists). */
	if ((h->session == NULL) != (h->expiry.idx != SIZE_MAX))
		rs_fail(rs, "%s: a detached hold needs a lease, a session's none",
		    sem->name);
}

/* One waiter of sem, version 1 (each name's after its holders). */
static void r_waiter_v1(struct restore *rs, struct sm_sem *sem, uint64_t *seq)
{
	struct sm_rbuf *r = &rs->r;
	struct sm *sm = rs->sm;
	struct sm_member *m;
	struct sm_wait *w;
	struct sm_session *s;

	if ((w = wait_alloc(sm, 1)) == NULL) {
		rs_fail(rs, "out of memory");
		return;
	}
	m = &w->m[0];
	m->sem = sem;
	w->seq = r_u64(r);
	s = rs_session(rs, r_u64(r), false);
	m->n = r_u32(r);
	w->lease_ms = r_u32(r);
	w->since_ms = r_u64(r);
	w->since_wall = r_u64(r);
	w->req.request_id = r_u64(r);
	if (r->bad || s == NULL || w->seq <= *seq || w->seq > sm->next_wait_seq ||
	    m->n == 0 || m->n > sem->limit ||
	    (w->req.request_id != 0 && req_find(sm, s->id, w->req.request_id) != NULL) ||
	    sema_enqueue(&sem->sem, &m->w, m->n, wait_wake,
	    sem->mode == SEMD__MODE__SIGNAL && s->client == NULL ?
	    SEMA_Q_PARKED : 0) != 0) {
		wait_dealloc(sm, w);
		rs_fail(rs, "%s: bad waiter record", sem->name);
		return;
	}
	*seq = w->seq;
	w->session = s;
	/* Its session's list is filled in arrival order (r_owner_lists). */
	list_add_tail(&m->sem_entry, &sem->waiters);
	sem->nwaiters++;
	s->nwaiters++;
	sm->ctr.waiters++;
	principal_count(s->ident->pr, SM_LIMIT_WAITERS, 1);
	req_index(sm, &w->req, s->id, w->req.request_id, REQ_WAIT);
	r_timer(r, sm, &w->deadline, T_WAIT);
}

/* A name's token bucket (see w_sem). */
static void r_rate(struct restore *rs, struct sm_sem *sem)
{
	struct sm_rbuf *r = &rs->r;
	struct sm *sm = rs->sm;
	uint32_t rate = r_u32(r), period = r_u32(r), burst = r_u32(r);
	uint64_t frac = r_u64(r), tokens = r_u64(r), last = r_u64(r);

	if (r->bad || sem->mode == SEMD__MODE__SIGNAL || rate == 0 ||
	    rate > SM_LIMIT_MAX || period == 0 || period > SM_RATE_PERIOD_MAX ||
	    burst == 0 || burst > SM_LIMIT_MAX || frac >= period ||
	    last > sm->now || (sem->mode == SEMD__MODE__RATE ?
	    tokens != 0 || sem->sem.count < 0 || sem->sem.count > (long)burst :
	    tokens > burst)) {
		rs_fail(rs, "%s: bad token bucket", sem->name);
		return;
	}
	if (!rate_restore(sm, sem, rate, period, burst, frac, tokens, last)) {
		rs_fail(rs, "out of memory");
		return;
	}
	r_timer(r, sm, &sem->rate->due, T_RATE);
}

/* The names, each with its holders (and waiters, version 1). */
static void r_sems(struct restore *rs)
{
	struct sm_rbuf *r = &rs->r;
	struct sm *sm = rs->sm;
	char name[SM_NAME_MAX + 1], prev[SM_NAME_MAX + 1] = "";
	struct sm_sem *sem;
	uint64_t i, n = r_u64(r), seq;
	uint32_t limit, owner, j, nh, nw;
	uint8_t mode, autoc;
	size_t len;

	for (i = 0; i < n && !r->bad; i++) {
		len = r_str(r, name, SM_NAME_MAX);
		limit = r_u32(r);
		mode = r_u8(r);
		autoc = r_u8(r);
		owner = r_u32(r);
		if (r->bad || !sm_name_valid(name, len) || (i > 0 &&
		    strcmp(prev, name) >= 0) || limit > SM_LIMIT_MAX ||
		    (mode == SEMD__MODE__RATE) != (limit == 0) ||
		    mode > (rs->version >= 2 ? SEMD__MODE__RATE : SEMD__MODE__SIGNAL) ||
		    owner > rs->np || (autoc && owner != 0)) {
			rs_fail(rs, "bad semaphore record %" PRIu64, i);
			return;
		}
		memcpy(prev, name, len + 1);
		sem = sem_new(sm, name, limit, mode, autoc != 0, sm->now);
		if (sem == NULL) {
			rs_fail(rs, "out of memory");
			return;
		}
		if (owner != 0)
			sem_set_owner(sem, rs->prs[owner - 1]);
		sem->sem.token = r_u64(r);
		sem->sem.count = (long)r_u64(r);
		if (rs->version >= 2 && r_u8(r) != 0)
			r_rate(rs, sem);
		if (mode == SEMD__MODE__RATE && sem->rate == NULL && !r->bad)
			rs_fail(rs, "%s: a rate-only semaphore without a rate", name);
		nh = r_u32(r);
		for (j = 0; j < nh && !r->bad; j++)
			r_hold(rs, sem);
		if (rs->version >= 2)
			continue;
		nw = r_u32(r);
		seq = 0;
		for (j = 0; j < nw && !r->bad; j++)
			r_waiter_v1(rs, sem, &seq);
	}
}

/*
 * The waiters (version 2), in arrival order: each queued again at the tail
 * of every queue it was in, which rebuilds the queues in their order.
 */
static void r_waits(struct restore *rs)
{
	struct sm_rbuf *r = &rs->r;
	struct sm *sm = rs->sm;
	char name[SM_NAME_MAX + 1];
	struct sm_sem *sems[SM_MULTI_MAX];
	uint32_t ns[SM_MULTI_MAX], lease;
	struct sm_session *s;
	struct sm_wait *w;
	uint64_t i, n = r_u64(r), seq, prev = 0, since, wall, rid;
	unsigned int j, q, nm;
	bool multi;
	int e;

	for (i = 0; i < n && !r->bad; i++) {
		seq = r_u64(r);
		s = rs_session(rs, r_u64(r), false);
		lease = r_u32(r);
		since = r_u64(r);
		wall = r_u64(r);
		rid = r_u64(r);
		multi = r_u8(r) != 0;
		nm = r_u8(r);
		if (r->bad || seq <= prev || seq > sm->next_wait_seq || nm == 0 ||
		    nm > SM_MULTI_MAX || (!multi && nm != 1) ||
		    (rid != 0 && req_find(sm, s->id, rid) != NULL)) {
			rs_fail(rs, "bad waiter record %" PRIu64, seq);
			return;
		}
		prev = seq;
		for (j = 0; j < nm && !r->bad; j++) {
			r_str(r, name, SM_NAME_MAX);
			ns[j] = r_u32(r);
			sems[j] = r->bad ? NULL : sem_find(sm, name);
			if (sems[j] == NULL || ns[j] == 0 ||
			    (sems[j]->mode != SEMD__MODE__RATE && ns[j] > sems[j]->limit) ||
			    (sems[j]->rate != NULL && ns[j] > sems[j]->rate->burst) ||
			    (multi && sems[j]->mode != SEMD__MODE__OWNED))
				r->bad = true;
			for (q = 0; q < j && !r->bad; q++)
				if (sems[q] == sems[j])
					r->bad = true;
		}
		if (r->bad) {
			rs_fail(rs, "bad waiter record %" PRIu64, seq);
			return;
		}
		if ((w = wait_alloc(sm, nm)) == NULL) {
			rs_fail(rs, "out of memory");
			return;
		}
		w->seq = seq;
		w->session = s;
		w->lease_ms = lease;
		w->since_ms = since;
		w->since_wall = wall;
		w->req.request_id = rid;
		w->multi = multi;
		for (j = 0; j < nm; j++) {
			w->m[j].sem = sems[j];
			w->m[j].n = ns[j];
			e = sema_enqueue(&sems[j]->sem, &w->m[j].w, ns[j], wait_wake,
			    (sems[j]->mode == SEMD__MODE__SIGNAL && s->client == NULL ?
			    SEMA_Q_PARKED : 0) |
			    (member_gated(w, sems[j]) ? SEMA_Q_GATED : 0));
			SM_ASSERT(e == 0);	/* n >= 1, checked above */
		}
		wait_link(sm, w);
		r_timer(r, sm, &w->deadline, T_WAIT);
	}
}

/* Holds by permit id and waiters by arrival order, for the owner lists. */
static int hold_cmp(const void *a, const void *b)
{
	const struct sm_hold *x = *(const struct sm_hold *const *)a;
	const struct sm_hold *y = *(const struct sm_hold *const *)b;

	return (x->permit_id > y->permit_id) - (x->permit_id < y->permit_id);
}

/*
 * Fill the sessions' hold lists, the detached list and the principals'
 * hold lists, each in permit order, and link the holds of each DownMulti;
 * for version 1, the sessions' waiter lists in arrival order.
 */
static void r_owner_lists(struct restore *rs)
{
	struct sm *sm = rs->sm;
	struct sm_hold **hv, *lead = NULL;
	struct sm_wait **wv;
	struct ordidx_iter it;
	struct list_head *pos;
	struct sm_sem *sem;
	size_t nh = 0, nw = 0, i;

	hv = ptr_array(sm->ctr.holders + 1);
	wv = ptr_array(sm->ctr.waiters + 1);
	if (hv == NULL || wv == NULL) {
		rs_fail(rs, "out of memory");
		goto out;
	}
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL) {
		list_for_each(pos, &sem->holders)
			hv[nh++] = list_entry(pos, struct sm_hold, sem_entry);
		if (rs->version < 2)
			list_for_each(pos, &sem->waiters)
				wv[nw++] = list_entry(pos, struct sm_member,
				    sem_entry)->wait;
	}
	ptr_sort(hv, nh, hold_cmp);
	ptr_sort(wv, nw, wait_seq_cmp);
	for (i = 0; i < nh; i++) {
		if (hv[i]->session != NULL) {
			list_add_tail(&hv[i]->owner_entry, &hv[i]->session->holds);
			hv[i]->session->nholds++;
		} else {
			list_add_tail(&hv[i]->owner_entry, &sm->detached);
		}
		list_del_init(&hv[i]->pr_entry);
		list_add_tail(&hv[i]->pr_entry, &hv[i]->ident->pr->holds);
		/* A DownMulti's holds have consecutive permit ids. */
		if (hv[i]->group_key == 0)
			continue;
		if (lead != NULL && lead->group_key == hv[i]->group_key)
			list_add_tail(&hv[i]->group, &lead->group);
		else
			lead = hv[i];
	}
	for (i = 0; i < nw; i++)
		list_add_tail(&wv[i]->session_entry, &wv[i]->session->waiters);
out:
	free(hv);
	free(wv);
}

/*
 * A state machine from sm_snapshot()'s bytes, with this node's settings
 * (cfg: its hash key, server name, allocation counter; the settings that
 * came through the log are the snapshot's) and effects. NULL when the
 * bytes are not a consistent state (why in err) or out of memory.
 */
struct sm *sm_restore(const struct sm_config *cfg, const struct sm_out *out,
    const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	struct restore rs = { 0 };
	char why[120];
	uint32_t i;

	rs.r.p = buf;
	rs.r.len = len;
	rs.sm = sm_new(cfg, out, 0);
	if (rs.sm == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r_header(&rs);
	if (!rs.r.bad)
		r_tables(&rs);
	if (!rs.r.bad)
		r_sessions(&rs);
	if (!rs.r.bad)
		r_clients(&rs);
	if (!rs.r.bad && rs.version >= 2)
		r_watches(&rs);
	if (!rs.r.bad)
		r_sems(&rs);
	/*
	 * Also when the bytes were refused: sm_free() frees holds and waiters
	 * through their owners' lists, and those read so far are only on
	 * their names'.
	 */
	if (!rs.r.bad && rs.version >= 2)
		r_waits(&rs);
	r_owner_lists(&rs);
	/* Restored as they were: nothing to settle (wait_link touched them). */
	while (!list_empty(&rs.sm->rate_touched))
		list_del_init(rs.sm->rate_touched.next);
	if (!rs.r.bad && rs.r.off != rs.r.len)
		rs_fail(&rs, "%zu bytes past the end of the state", rs.r.len - rs.r.off);
	/* The tables' own references go; the records keep theirs. */
	for (i = 0; rs.ids != NULL && i < rs.nids; i++)
		ident_put(rs.sm, rs.ids[i]);
	for (i = 0; rs.prs != NULL && i < rs.np; i++)
		principal_put(rs.sm, rs.prs[i]);
	free(rs.ids);
	free(rs.prs);
	/* What the records cannot show alone (counts against limits...). */
	if (!rs.r.bad && sm_check(rs.sm, why, sizeof why) != 0)
		rs_fail(&rs, "not a consistent state: %s", why);
	if (rs.r.bad) {
		snprintf(err, errlen, "%s", rs.err[0] ? rs.err :
		    "the snapshot ends early");
		sm_free(rs.sm);
		return NULL;
	}
	return rs.sm;
}
