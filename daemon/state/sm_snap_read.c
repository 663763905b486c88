/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_snap_read.c - a state machine from a snapshot's bytes
 * (sm_restore): decoding and validation of what sm_snap_write.c writes (the
 * layout is described there).
 *
 * Version 1 (semd 0.2.0: no buckets, watches or multi-name waiters; each
 * name's waiters after its holders; fewer ops and codes counted) is read
 * too. A restore checks every count and reference, and the state it made
 * against every invariant (sm_check), and refuses bytes that do not make a
 * consistent state.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* Version 1's counter arrays: ops up to Detach, codes up to SESSION_EXPIRED. */
#define SNAP_V1_NOPS	16
#define SNAP_V1_NCODES	14

static uint8_t r_u8(struct sm_rbuf *r) { return (uint8_t)rbuf_int(r, 1); }
static uint32_t r_u32(struct sm_rbuf *r) { return (uint32_t)rbuf_int(r, 4); }
static uint64_t r_u64(struct sm_rbuf *r) { return rbuf_int(r, 8); }

/* A string into buf (max bytes and a NUL); its length, or bad. */
static size_t r_str(struct sm_rbuf *r, char *buf, size_t max)
{
	return rbuf_str(r, 4, buf, max);
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

/* Does h hold buckets or a sum with no count (no state makes one)? */
static bool hist_hollow(const struct sm_hist *h)
{
	unsigned int i;

	if (h->count != 0)
		return false;
	for (i = 0; i < SM_HIST_BUCKETS; i++)
		if (h->bucket[i] != 0)
			return true;
	return h->sum_ms != 0;
}

/* The scalars (see w_header). */
static void r_header(struct restore *rs)
{
	struct sm_rbuf *r = &rs->r;
	struct sm *sm = rs->sm;
	struct sm_counters *k = &sm->ctr;
	const uint8_t *magic = rbuf_take(r, 8);
	size_t i, j, n, nops, ncodes;

	if (magic == NULL || memcmp(magic, SNAP_MAGIC, 8) != 0) {
		rs_fail(rs, "not a semd snapshot");
		return;
	}
	rs->version = r_u32(r);
	if (rs->version < 1 || rs->version > SNAP_VERSION) {
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
	n = rs->version >= 2 ? SNAP_COUNTERS : SNAP_V1_COUNTERS;
	for (i = 0; i < n; i++)
		*(uint64_t *)((char *)k + snap_counters[i]) = r_u64(r);
	nops = rs->version >= 2 ? SNAP_V3_NOPS : SNAP_V1_NOPS;
	ncodes = rs->version >= 2 ? SNAP_V3_NCODES : SNAP_V1_NCODES;
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
	/* a histogram counts what it holds: none counted, none held (the
	 * section of the histograms writes no more of one with no count) */
	if (hist_hollow(&k->wait) || hist_hollow(&k->hold))
		rs_fail(rs, "a histogram with buckets or a sum but no count");
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
		family_init(s);
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
	w->key = wait_key(w->since_ms, 0);
	w->since_wall = r_u64(r);
	w->req.request_id = r_u64(r);
	if (r->bad || s == NULL || w->seq <= *seq || w->seq > sm->next_wait_seq ||
	    m->n == 0 || m->n > sem->limit ||
	    (w->req.request_id != 0 && req_find(sm, s->id, w->req.request_id) != NULL) ||
	    sema_enqueue(&sem->sem, &m->w, m->n, wait_wake,
	    wait_parks_away(w, sem) && s->client == NULL ?
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
		w->key = wait_key(since, 0);	/* priorities: a section's */
		w->since_wall = wall;
		w->req.request_id = rid;
		w->multi = multi;
		for (j = 0; j < nm; j++) {
			w->m[j].sem = sems[j];
			w->m[j].n = ns[j];
			e = wait_queue(w, j,
			    (wait_parks_away(w, sems[j]) && s->client == NULL ?
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
	ptr_sort(wv, nw, sm_wait_cmp);
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

/* The sections (version 3): each one a row of snap_sections knows. */
static void r_sections(struct restore *rs)
{
	const struct snap_section *s;
	struct sm_rbuf sub = { 0 };
	uint32_t tag, len;

	while (!rs->r.bad && (tag = (uint32_t)r_u32(&rs->r)) != 0) {
		len = (uint32_t)r_u32(&rs->r);
		for (s = snap_sections; s->tag != 0 && s->tag != tag; s++)
			;
		if (s->tag == 0) {
			rs_fail(rs, "snapshot section %u not known (a newer semd?)", tag);
			return;
		}
		sub.p = rbuf_take(&rs->r, len);
		sub.len = len;
		sub.off = 0;
		sub.bad = false;
		if (sub.p == NULL)
			return;
		if (!s->read(rs->sm, &sub, rs->err, sizeof rs->err) || sub.bad ||
		    sub.off != sub.len) {
			rs_fail(rs, "snapshot section %s (%u) damaged", s->what, tag);
			return;
		}
	}
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
	if (!rs.r.bad && rs.version >= 3)
		r_sections(&rs);
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
