/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_wait.c - waiting downs: a down that cannot be granted at
 * once waits as one struct sm_wait with a member in each queue it needs, in
 * the core's FIFO wait list of that name. A plain member is granted by the
 * core's hand-off (wait_wake); a request that needs more than one
 * semaphore's permits - a DownMulti (several names, all or nothing) or a
 * down on a name with a rate and a limit (a free permit and the tokens) -
 * is gated, and granted here all at once when it is ready. Cancels
 * (timeouts, Cancel, a session's end, DEADLOCK) take a waiter out of every
 * queue.
 *
 * Design of the gated ones. Such a request is one struct sm_wait with one
 * member per name; each member sits in its name's core queue, gated
 * (core/semaphore.h): it keeps its place and blocks everyone behind it, but
 * the core only offers it - when it is first in line with its permits free -
 * and never grants it by itself. An offer is queued as an effect
 * (effect_offer(), sm_effect.c); when the call that made it is over,
 * sm_settle() looks at each offered request: if every one
 * of its members is first in line with its permits free (and its tokens,
 * on a name with a rate), every member is granted with sema_grant(), one
 * after the other with nothing in between, and the request is answered;
 * otherwise nothing happens and it keeps its places. Nothing is held while
 * waiting.
 *
 * No deadlock between waiters. Every member of every request is queued in
 * the order of one key of the request's (sm-int.h: wait_key(), its arrival
 * time less its priority's head start, then its arrival number from one
 * counter, sm->next_wait_seq), fixed when it arrives, so every queue is in
 * that one global order. Take the first waiting request in it: nobody is in
 * front of it anywhere, so it is granted as soon as the holders of its
 * names have given back enough - waiters never wait for each other in a
 * circle, and two multi-name requests that overlap are served in that
 * order on every name they share. The order holds on every name (FIFO
 * within a class), because sema_grant() only ever grants the first in
 * line, and the core never lets anyone behind a gated member pass it.
 * Without priorities the key is the arrival time: every queue is in
 * arrival order, and a new member goes at the tail. (A cycle through holds - a session that holds one
 * name and waits for another - is the deadlock sm_deadlock.c reports.)
 *
 * Liveness: a gated member is offered whenever its queue changes in its
 * favour (an up, a cancel in front of it, a larger limit), and a request
 * waiting for tokens is offered by its name's T_RATE timer (sm_rate.c), so
 * a request that becomes ready is always looked at. sm_check() verifies
 * after every step of the tests that no waiting request is ready.
 *
 * Cost: an offer costs O(names) to look at; a grant O(names) plus the
 * core's hand-offs it causes. Settling loops until nothing is offered; each
 * round grants a request or drops an offer, so it ends.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* A waiter record for nm members, zeroed; NULL when out of memory. */
struct sm_wait *wait_alloc(struct sm *sm, unsigned int nm)
{
	struct sm_wait *w;

	w = nm == 1 ? sm_cache_get(sm, &sm->wait_cache, WAIT_SIZE(1)) :
	    sm_alloc(sm, WAIT_SIZE(nm));
	if (w == NULL)
		return NULL;
	w->sm = sm;
	w->nm = (uint8_t)nm;
	w->deadline.idx = SIZE_MAX;
	INIT_LIST_HEAD(&w->offer_entry);
	INIT_LIST_HEAD(&w->session_entry);
	for (unsigned int i = 0; i < nm; i++) {
		w->m[i].wait = w;
		INIT_LIST_HEAD(&w->m[i].sem_entry);
	}
	return w;
}

/* Give a waiter record back. */
void wait_dealloc(struct sm *sm, struct sm_wait *w)
{
	if (w == NULL)
		return;
	sm_strfree(sm, w->rkey);
	w->rkey = NULL;
	idem_free(sm, w->idem);		/* it ended without a grant */
	if (w->nm == 1)
		sm_cache_put(sm, &sm->wait_cache, w, WAIT_SIZE(1));
	else
		sm_dealloc(sm, w, WAIT_SIZE(w->nm));
}

/*
 * Should a member on sem be gated: does its request need more than sem's
 * permits (other names, or a bucket's tokens besides a limit's permits)?
 */
bool member_gated(const struct sm_wait *w, const struct sm_sem *sem)
{
	return w->multi || sem_gates(sem);
}

/*
 * The member of sem's line that w goes just before (NULL: the tail), in
 * (key, seq) order. Searched from the tail: a down of the default class
 * arriving now goes there at once, O(1); one of a higher class passes the
 * members of lower ones that arrived up to a class's head start before it.
 */
static struct sm_member *wait_place(const struct sm_sem *sem,
    const struct sm_wait *w)
{
	const struct list_head *pos;
	struct sm_member *m, *at = NULL;

	for (pos = sem->waiters.prev; pos != &sem->waiters; pos = pos->prev) {
		m = list_entry(pos, struct sm_member, sem_entry);
		if (wait_before(m->wait, w))
			break;
		at = m;
	}
	return at;
}

/*
 * Queue member i of w in its name's core queue, in its place (before it is
 * linked into our lists, which wait_link() does in the same place), with
 * the core's flags (SEMA_Q_*). Grants nobody.
 */
int wait_queue(struct sm_wait *w, unsigned int i, unsigned int flags)
{
	struct sm_member *at = wait_place(w->m[i].sem, w);

	return sema_enqueue_before(&w->m[i].sem->sem, &w->m[i].w, w->m[i].n,
	    wait_wake, flags, at != NULL ? &at->w : NULL);
}

/* Order by (key, seq), for wait_sort(). */
static int member_cmp(const void *a, const void *b)
{
	const struct sm_member *x = *(const struct sm_member *const *)a;
	const struct sm_member *y = *(const struct sm_member *const *)b;

	return wait_before(x->wait, y->wait) ? -1 : wait_before(y->wait, x->wait);
}

/*
 * Put sem's line, ours and the core's alike, in (key, seq) order after its
 * waiters' keys were set (a snapshot read back); grants nobody. Out of
 * memory it is left as it is (sm_check() would say so).
 */
void wait_sort(struct sm_sem *sem)
{
	struct sm_member **mv;
	struct list_head *pos;
	size_t i, n = 0;

	if (sem->nwaiters < 2 || (mv = ptr_array(sem->nwaiters)) == NULL)
		return;
	list_for_each(pos, &sem->waiters)
		if (n < sem->nwaiters)
			mv[n++] = list_entry(pos, struct sm_member, sem_entry);
	ptr_sort(mv, n, member_cmp);
	for (i = 0; i < n; i++) {
		list_del_init(&mv[i]->sem_entry);
		list_add_tail(&mv[i]->sem_entry, &sem->waiters);
		sema_requeue_tail(&sem->sem, &mv[i]->w);
	}
	free(mv);
}

/* Put a waiter, its members queued in the core, into our lists and counts. */
void wait_link(struct sm *sm, struct sm_wait *w)
{
	struct sm_session *s = w->session;
	struct sm_member *at;
	unsigned int i;

	for (i = 0; i < w->nm; i++) {
		at = wait_place(w->m[i].sem, w);
		list_add_tail(&w->m[i].sem_entry, at != NULL ? &at->sem_entry :
		    &w->m[i].sem->waiters);
		w->m[i].sem->nwaiters++;
		sm->ctr.waiters++;
		effect_rate(sm, w->m[i].sem);
	}
	if (w->grp != NULL)
		share_waiting(w->grp, 1);
	list_add_tail(&w->session_entry, &s->waiters);
	s->nwaiters++;
	principal_count(s->ident->pr, SM_LIMIT_WAITERS, 1);
	req_index(sm, &w->req, s->id, w->req.request_id, REQ_WAIT);
}

/* Take a waiter out of our lists, index and heap (not the core's lists). */
void wait_unlink(struct sm *sm, struct sm_wait *w)
{
	unsigned int i;

	timer_disarm(sm, &w->deadline);
	list_del_init(&w->offer_entry);
	for (i = 0; i < w->nm; i++) {
		list_del_init(&w->m[i].sem_entry);
		w->m[i].sem->nwaiters--;
		sm->ctr.waiters--;
		effect_rate(sm, w->m[i].sem);
	}
	if (w->grp != NULL)
		share_waiting(w->grp, -1);
	list_del_init(&w->session_entry);
	w->session->nwaiters--;
	req_unindex(sm, &w->req);
	principal_count(w->session->ident->pr, SM_LIMIT_WAITERS, -1);
}

/*
 * Core callback of a member. Granted (a member that is not gated, the only
 * one of its request): the down is answered. Offered (a gated member first
 * in line with its permits free): the request is looked at once the call
 * that made the offer is over (sm_settle).
 */
void wait_wake(struct sema_waiter *sw)
{
	struct sm_member *m = container_of(sw, struct sm_member, w);
	struct sm_wait *w = m->wait;
	struct sm *sm = w->sm;
	struct sm_sem *sem = m->sem;
	struct sm_session *s = w->session;
	uint64_t id = w->req.request_id, token = sw->token, since = w->since_ms;
	uint64_t tag = w->key;
	struct sm_group *grp = w->grp;
	struct sm_idem *outer;
	uint32_t n = m->n, lease = w->lease_ms;
	int op = sm->cur_op;

	if (sw->state != SEMA_GRANTED) {
		effect_offer(sm, w);
		return;
	}
	wait_unlink(sm, w);
	outer = idem_grant_begin(sm, w);
	wait_dealloc(sm, w);
	sm->cur_op = SEMD__REQUEST__OP_DOWN;	/* the reply answers a down */
	grant_deliver(sm, sem, s, id, n, token, lease, since, sm->now, grp, tag);
	sm->cur_op = op;
	idem_grant_end(sm, outer);
}

/*
 * Cancel a queued waiter and answer it with code (no answer when code is
 * OK). The answer goes out before the core hands the freed places on, so a
 * client sees the cancellation before the grant it caused. The state is
 * touched by one thread at a time (the caller serializes every call: semd
 * under its state lock), so a waiter in our lists is still queued in the
 * core (wait_wake unlinks a granted one before anything else). The
 * auto-created names it leaves idle are freed, all but keep (the caller's,
 * which it frees itself if it must).
 */
void wait_cancel(struct sm *sm, struct sm_wait *w, int code,
    const char *why, struct sm_sem *keep)
{
	struct sm_sem *sems[SM_MULTI_MAX];
	struct sm_session *s = w->session;
	unsigned int i, nm;
	int op = sm->cur_op;

	sm->cur_op = w->multi ? SEMD__REQUEST__OP_DOWN_MULTI :
	    SEMD__REQUEST__OP_DOWN;	/* the reply answers a down */
	if (code != SEMD__CODE__OK)
		reply_err(sm, s->client, w->req.request_id, code, "%s", why);
	sm->cur_op = op;
	wait_unlink(sm, w);
	if (w->grp != NULL)
		share_group_put(sm, w->m[0].sem, w->grp);
	watch_wait_end(sm, w, code, why);
	/* The answer stays findable by a retry (not when the session ends). */
	if (code != SEMD__CODE__OK && code != SEMD__CODE__SESSION_EXPIRED)
		memo_add(sm, s, w->req.request_id, code, 0, 0);
	for (i = 0; i < w->nm; i++) {
		sems[i] = w->m[i].sem;
		if (!sema_cancel(&w->m[i].sem->sem, &w->m[i].w)) {
			/* Cannot happen with calls serialized; never lose the permits. */
			sema_up_n_owned(&w->m[i].sem->sem, w->m[i].n);
		}
	}
	nm = w->nm;
	wait_dealloc(sm, w);
	for (i = 0; i < nm; i++)
		if (sems[i] != keep)
			sem_maybe_free(sm, sems[i]);
}
/* Is every member of w first in line with what it needs? */
bool wait_ready(struct sm *sm, struct sm_wait *w)
{
	unsigned int i;

	for (i = 0; i < w->nm; i++)
		if (!sema_fits(&w->m[i].sem->sem, &w->m[i].w) ||
		    !rate_has(sm, w->m[i].sem, w->m[i].n))
			return false;
	return true;
}

/*
 * Grant a ready request: every member at once, then the answer. Its record
 * is freed.
 */
void wait_grant(struct sm *sm, struct sm_wait *w)
{
	struct sm_sem *sems[SM_MULTI_MAX];
	uint64_t tokens[SM_MULTI_MAX];
	uint32_t ns[SM_MULTI_MAX];
	struct sm_session *s = w->session;
	uint64_t id = w->req.request_id, since = w->since_ms, tag = w->key;
	struct sm_group *grp = w->grp;
	struct sm_idem *outer;
	uint32_t lease = w->lease_ms;
	unsigned int i, k = w->nm;
	bool multi = w->multi, ok = true;

	SM_ASSERT(k > 0);

	for (i = 0; i < k; i++) {
		sems[i] = w->m[i].sem;
		ns[i] = w->m[i].n;
		if (sems[i]->rate != NULL && sems[i]->mode == SEMD__MODE__OWNED)
			rate_take(sems[i], ns[i]);
	}
	wait_unlink(sm, w);
	for (i = 0; i < k; i++) {
		/* Each grant may serve those behind it; nothing else changes. */
		if (!sema_grant(&sems[i]->sem, &w->m[i].w)) {
			sm->multi_bugs++;
			ok = false;
		}
		tokens[i] = w->m[i].w.token;
	}
	if (!ok) {
		/*
		 * Cannot happen (sm_check counts it): lose no permit. A
		 * member granted, or found granted when cancelled, gives its
		 * permits back.
		 */
		for (i = 0; i < k; i++)
			if (w->m[i].w.state == SEMA_GRANTED ||
			    !sema_cancel(&sems[i]->sem, &w->m[i].w))
				sema_up_n_owned(&sems[i]->sem, ns[i]);
		wait_dealloc(sm, w);
		share_group_put(sm, sems[0], grp);
		reply_err(sm, s->client, id, SEMD__CODE__INTERNAL,
		    "a ready request could not be granted");
		return;
	}
	outer = idem_grant_begin(sm, w);
	wait_dealloc(sm, w);
	if (multi) {
		multi_deliver(sm, s, id, k, sems, ns, tokens, lease, since, sm->now);
	} else {
		int op = sm->cur_op;

		sm->cur_op = SEMD__REQUEST__OP_DOWN;
		grant_deliver(sm, sems[0], s, id, ns[0], tokens[0], lease, since,
		    sm->now, grp, tag);
		sm->cur_op = op;
	}
	idem_grant_end(sm, outer);
}

