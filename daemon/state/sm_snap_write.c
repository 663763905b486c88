/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_snap_write.c - the whole state as bytes: the snapshot a log
 * is compacted into (sm_snapshot). sm_snap_read.c reads it back.
 *
 * Only the state goes in: what a replica needs to answer the next entries
 * exactly as the machine that wrote it would, whatever its hash key, clock
 * or memory addresses. Nothing in it depends on hash order or pointers, so
 * two machines that applied the same entries write the same bytes.
 *
 * Layout (version 3): little-endian integers, strings as u32 length + bytes.
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
 *   sections (version 3) tag, length, bytes, each (sm_snap_sections.c),
 *            then a tag 0
 * Timers are saved with their tie-breaking sequence, so they fire in the
 * same order after a restore.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

#define SNAP_K(f)	offsetof(struct sm_counters, f)
const size_t snap_counters[SNAP_COUNTERS] = {
	SNAP_K(grants), SNAP_K(timeouts), SNAP_K(cancels),
	SNAP_K(cancels_disconnect), SNAP_K(leases_expired),
	SNAP_K(sessions_expired), SNAP_K(errors),
	/* version 2 */
	SNAP_K(multi_grants), SNAP_K(deadlocks), SNAP_K(deadlock_checks),
	SNAP_K(deadlock_steps), SNAP_K(deadlock_cut),
};

/* Into a struct sm_batch (its ncmds unused), as log entries are: sm_bytes.c. */
static void w_u8(struct sm_batch *b, uint64_t v) { bytes_int(b, v, 1); }
static void w_u32(struct sm_batch *b, uint64_t v) { bytes_int(b, v, 4); }
static void w_u64(struct sm_batch *b, uint64_t v) { bytes_int(b, v, 8); }

/* The sections (snap_sections), each tag, length and bytes, then tag 0. */
static void w_sections(struct sm_batch *b, const struct sm *sm)
{
	const struct snap_section *s;
	size_t at, len;
	unsigned int i;

	for (s = snap_sections; s->tag != 0; s++) {
		w_u32(b, s->tag);
		at = b->len;
		w_u32(b, 0);
		if (!s->write(b, sm))
			b->failed = true;
		if (b->failed)
			return;
		len = b->len - at - 4;
		for (i = 0; i < 4; i++)
			b->p[at + i] = (uint8_t)(len >> (8 * i));
	}
	w_u32(b, 0);
}

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
	for (i = 0; i < SNAP_COUNTERS; i++)
		w_u64(b, *(const uint64_t *)((const char *)k + snap_counters[i]));
	for (i = 0; i < SNAP_V3_NOPS; i++)
		w_u64(b, k->ops[i]);
	for (i = 0; i < SNAP_V3_NOPS; i++)
		for (j = 0; j < SNAP_V3_NCODES; j++)
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
	ptr_sort(wv, n, sm_wait_cmp);
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
	if (w_waits(&b, sm, ss, ns))
		w_sections(&b, sm);
	if (b.failed || idents.failed)
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

/*
 * Backup: a copy of the whole state for an administrator, handed to the
 * shell (sm_out.backup), which answers it in chunks from then on. It is
 * taken where the client's connection is; the other replicas of a log
 * apply the request too and take none (nothing in the state changes).
 */
void op_backup(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	uint8_t *p;
	size_t len;

	if (sm->who != NULL && (sm->who->privs & SM_PRIV_ADMIN) == 0) {
		reply_err(sm, c, req->id, SEMD__CODE__PERMISSION_DENIED,
		    "%s may not back up the state (administrators may)",
		    c->pr->name);
		return;
	}
	if (req->backup->offset != 0) {
		reply_err(sm, c, req->id, SEMD__CODE__INVALID_ARGUMENT,
		    "no backup is being read on this connection: ask for "
		    "offset 0 first");
		return;
	}
	if (sm->out.backup == NULL) {
		reply_err(sm, c, req->id, SEMD__CODE__UNAVAILABLE,
		    "this semd takes no backups");
		return;
	}
	if (c->conn == NULL)
		return;		/* answered by the node its connection is on */
	if (sm_snapshot(sm, &p, &len) != 0) {
		reply_err(sm, c, req->id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory taking the backup");
		return;
	}
	sm->out.backup(sm->out.ctx, c->conn, req->id, p, len,
	    sm_wall(sm, sm->now));
}
