/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_holds.c - holds and places seen from their owner: Renew (a
 * detached hold's lease, longer), Holds (every hold of a principal), Where
 * (a waiting down's place in each of its queues) and Sessions (the
 * sessions of a principal, or every one for an administrator).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

#define WHERE_WALK_MAX	100000	/* places counted in one queue, at most */

/* Renew h: its lease from now, lease_ms (0: its own again), capped. */
static uint64_t renew_one(struct sm *sm, struct sm_hold *h, uint32_t lease_ms)
{
	uint64_t when;

	if (lease_ms == 0)
		lease_ms = h->lease_ms;
	if (lease_ms > sm->cfg.max_lease_ms)
		lease_ms = sm->cfg.max_lease_ms;
	h->lease_ms = lease_ms;
	when = sm->now + lease_ms;
	timer_disarm(sm, &h->expiry);
	/* Cannot fail: the heap has the room the old expiry had. */
	if (timer_arm(sm, &h->expiry, T_HOLD, when) != 0)
		h->expiry.idx = SIZE_MAX;
	return when;
}

/* Renew: extend the lease of the caller's principal's detached holds on a name. */
void op_renew(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Renew *rn = req->renew;
	Semd__Renewed rd = SEMD__RENEWED__INIT;
	struct sm_principal *pr = c->session->ident->pr;
	struct list_head *pos;
	struct sm_hold *h;
	struct sm_sem *sem;
	uint64_t id = req->id, when = 0;
	uint32_t n = 0;

	if ((sem = sem_need(sm, c, id, rn->name)) == NULL)
		return;
	if (rn->permit_id != 0) {
		h = permit_find(sm, rn->permit_id);
		if (h == NULL || h->sem != sem || h->ident->pr != pr) {
			reply_err(sm, c, id, SEMD__CODE__NOT_HOLDER,
			    "permit %" PRIu64 " of %s is not held by %s",
			    rn->permit_id, sem->name, pr->name);
			return;
		}
		if (h->session != NULL) {
			reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
			    "permit %" PRIu64 " of %s is kept by its session's lease, not its own",
			    rn->permit_id, sem->name);
			return;
		}
		when = renew_one(sm, h, rn->lease_ms);
		n = 1;
	} else {
		list_for_each(pos, &sem->holders) {
			h = list_entry(pos, struct sm_hold, sem_entry);
			if (h->session != NULL || h->ident->pr != pr)
				continue;
			when = renew_one(sm, h, rn->lease_ms);
			n++;
		}
		if (n == 0) {
			reply_err(sm, c, id, SEMD__CODE__NOT_HOLDER,
			    "%s holds no detached permit of %s", pr->name,
			    sem->name);
			return;
		}
	}
	rd.holds = n;
	rd.expires_ms = sm_wall(sm, when);
	REPLY_BODY(sm, c, id, RENEWED, renewed, &rd);
}

/*
 * Holds: a principal's holds on every name, by permit id, one page: the
 * caller's, or (administrators) another's.
 */
void op_holds(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Holds *hq = req->holds;
	Semd__HoldsReply hr = SEMD__HOLDS_REPLY__INIT;
	Semd__Holder **hp;
	struct sm_principal *pr = c->pr;
	struct list_head *pos;
	struct sm_hold *h;
	uint64_t id = req->id;
	size_t max = page_max(hq->max, SM_INFO_PAGE, SM_INFO_PAGE_MAX), nh = 0;

	if (*hq->principal != '\0' && strcmp(hq->principal, c->pr->name) != 0) {
		if (sm->who != NULL && (sm->who->privs & SM_PRIV_ADMIN) == 0) {
			reply_err(sm, c, id, SEMD__CODE__PERMISSION_DENIED,
			    "%s may not list the holds of %s (administrators may)",
			    c->pr->name, hq->principal);
			return;
		}
		pr = principal_find(sm, hq->principal);	/* NULL: it holds nothing */
	}
	if ((hp = reply_page(sm, c, id, max, sizeof **hp)) == NULL)
		return;
	if (pr != NULL) {
		list_for_each(pos, &pr->holds) {
			h = list_entry(pos, struct sm_hold, pr_entry);
			if (h->permit_id <= hq->after_permit)
				continue;
			if (nh == max) {
				hr.next_permit = hp[nh - 1]->permit_id;
				break;
			}
			reply_holder(sm, hp[nh], h);
			hp[nh++]->name = h->sem->name;
		}
		hr.total = pr->nholds;
	}
	hr.n_holds = nh;
	hr.holds = hp;
	REPLY_BODY_REV(sm, c, id, HOLDS, holds, &hr);
	free(hp);
}

/* Where: a pending down's place in each queue it is in. */
void op_where(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Where *wq = req->where;
	Semd__WhereReply wr = SEMD__WHERE_REPLY__INIT;
	Semd__Place pv[SM_MULTI_MAX], *pp[SM_MULTI_MAX];
	struct sm_sem *sems[SM_MULTI_MAX];
	struct sm_reqkey *k = req_find(sm, c->session->id, wq->request_id);
	struct list_head *pos;
	struct sm_member *m;
	struct sm_sem *sem;
	struct sm_wait *w;
	uint32_t place;
	unsigned int i, nm = 0;

	if (k != NULL && k->kind == REQ_WAIT) {
		/* Buckets first: a refill may grant the down itself. */
		w = container_of(k, struct sm_wait, req);
		for (nm = 0; nm < w->nm; nm++)
			sems[nm] = w->m[nm].sem;
		for (i = 0; i < nm; i++)
			rate_refill(sm, sems[i]);
		k = req_find(sm, c->session->id, wq->request_id);
	}
	if (k == NULL || k->kind != REQ_WAIT) {
		reply_err(sm, c, req->id, SEMD__CODE__NOT_FOUND,
		    "no pending down with id %" PRIu64, wq->request_id);
		return;
	}
	w = container_of(k, struct sm_wait, req);
	for (i = 0; i < w->nm; i++) {
		m = &w->m[i];
		sem = m->sem;
		place = 0;
		/* Bounded: a place further than WHERE_WALK_MAX is told as 0. */
		list_for_each(pos, &sem->waiters) {
			if (++place > WHERE_WALK_MAX) {
				place = 0;
				break;
			}
			if (pos == &m->sem_entry)
				break;
		}
		semd__place__init(&pv[i]);
		pv[i].name = sem->name;
		pv[i].position = place;
		pv[i].waiters = sem->nwaiters;
		pv[i].held = sem->held;
		pv[i].limit = sem->limit;
		pv[i].n = m->n;
		if (sem->rate != NULL) {
			pv[i].tokens_nano = rate_nano(sm, sem);
			pv[i].next_token_ms = rate_next_ms(sm, sem);
		}
		pv[i].available = rate_available(sm, sem);
		pp[i] = &pv[i];
	}
	wr.n_places = w->nm;
	wr.places = pp;
	wr.since_ms = w->since_wall;
	REPLY_BODY(sm, c, req->id, WHERE, where, &wr);
}

/* A session as Sessions shows it (its strings are the session's). */
static void session_info(const struct sm *sm, Semd__SessionInfo *e,
    const struct sm_session *s)
{
	semd__session_info__init(e);
	e->id = s->id;
	e->principal = s->ident->pr->name;
	e->client_name = s->ident->client_name;
	e->host = s->ident->host;
	e->pid = s->ident->pid;
	e->lease_ms = s->lease_ms;
	e->holds = s->nholds;
	e->waiters = s->nwaiters;
	e->heard_ms = sm_wall(sm, s->heard);
	e->connected = s->client != NULL;
}

/*
 * Sessions: one page of the sessions the caller may see, by id - its own
 * principal's, or an administrator's every one (or one principal's). It
 * walks every session (as Stats does): the table is in hash order, so the
 * page is what is left after the cursor, sorted.
 */
void op_sessions(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Sessions *q = req->sessions;
	Semd__SessionsReply sr = SEMD__SESSIONS_REPLY__INIT;
	Semd__SessionInfo *ev = NULL, **ep = NULL;
	bool admin = sm->who == NULL || (sm->who->privs & SM_PRIV_ADMIN) != 0;
	const struct sm_principal *pr = admin ? NULL : c->pr;
	struct sm_session *s, **ss = NULL;
	size_t max = page_max(q->max, SM_INFO_PAGE, SM_INFO_PAGE_MAX);
	size_t n = 0, i, total = 0;
	struct hmap_iter it;
	struct hnode *hn;
	uint64_t id = req->id;

	if (*q->principal != '\0' && strcmp(q->principal, c->pr->name) != 0 &&
	    !admin) {
		reply_err(sm, c, id, SEMD__CODE__PERMISSION_DENIED,
		    "%s may not list the sessions of %s (administrators may)",
		    c->pr->name, q->principal);
		return;
	}
	if (*q->principal != '\0' &&
	    (pr = principal_find(sm, q->principal)) == NULL)
		goto answer;	/* nobody of that name: none */
	if ((ss = ptr_array(hmap_count(&sm->sessions) + 1)) == NULL)
		goto oom;
	hmap_iter_init(&it, &sm->sessions);
	while ((hn = hmap_iter_next(&it)) != NULL) {
		s = container_of(hn, struct sm_session, node);
		if (pr != NULL && s->ident->pr != pr)
			continue;
		total++;
		if (s->id > q->after)
			ss[n++] = s;
	}
	ptr_sort(ss, n, sm_session_cmp);
	if (n > max) {
		sr.next = ss[max - 1]->id;
		n = max;
	}
	if ((ev = calloc(n + 1, sizeof *ev)) == NULL ||
	    (ep = ptr_array(n + 1)) == NULL)
		goto oom;
	for (i = 0; i < n; i++) {
		session_info(sm, &ev[i], ss[i]);
		ep[i] = &ev[i];
	}
answer:
	sr.n_sessions = n;
	sr.sessions = ep;
	sr.total = (uint32_t)total;
	REPLY_BODY_REV(sm, c, id, SESSIONS, sessions, &sr);
	goto out;
oom:
	reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
out:
	free(ss);
	free(ev);
	free(ep);
}
