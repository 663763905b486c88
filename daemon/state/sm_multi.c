/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_multi.c - requests that need more than one semaphore's permits:
 * a DownMulti (several names, all or nothing) and a down on a name with a
 * rate and a limit (a free permit and the tokens). How they wait, and how
 * they are granted atomically.
 *
 * Design. Such a request is one struct sm_wait with one member per name;
 * each member sits in its name's core queue, gated (core/semaphore.h): it
 * keeps its place and blocks everyone behind it, but the core only offers
 * it - when it is first in line with its permits free - and never grants it
 * by itself. An offer puts the request on sm->offers; when the call that
 * made it is over, sm_settle() looks at each offered request: if every one
 * of its members is first in line with its permits free (and its tokens,
 * on a name with a rate), every member is granted with sema_grant(), one
 * after the other with nothing in between, and the request is answered;
 * otherwise nothing happens and it keeps its places. Nothing is held while
 * waiting.
 *
 * No deadlock between waiters. Every member of every request is queued at
 * the tail when its request arrives, and requests arrive one at a time with
 * a sequence number from one counter (sm->next_wait_seq), so every queue is
 * in that one global order. Take the oldest waiting request: nobody is in
 * front of it anywhere, so it is granted as soon as the holders of its
 * names have given back enough - waiters never wait for each other in a
 * circle, and two multi-name requests that overlap are served oldest first
 * on every name they share. FIFO holds on every name, because sema_grant()
 * only ever grants the first in line, and the core never lets anyone behind
 * a gated member pass it. (A cycle through holds - a session that holds one
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* Look at w once the current call is over (an offer from the core). */
void wait_offer(struct sm *sm, struct sm_wait *w)
{
	if (list_empty(&w->offer_entry))
		list_add_tail(&w->offer_entry, &sm->offers);
}

/* Has a name with a limit and a rate n tokens now (refilled first)? */
static bool tokens_ok(struct sm *sm, struct sm_sem *sem, uint32_t n)
{
	if (sem->rate == NULL || sem->mode == SEMD__MODE__RATE)
		return true;
	rate_refill(sm, sem);
	return rate_whole(sem) >= n;
}

/* Is every member of w first in line with what it needs? */
bool wait_ready(struct sm *sm, struct sm_wait *w)
{
	unsigned int i;

	for (i = 0; i < w->nm; i++)
		if (!sema_fits(&w->m[i].sem->sem, &w->m[i].w) ||
		    !tokens_ok(sm, w->m[i].sem, w->m[i].n))
			return false;
	return true;
}

/* Send a MultiGrant. */
static void reply_multi(struct sm *sm, struct sm_client *c, uint64_t id,
    unsigned int k, struct sm_sem *const *sems, const uint64_t *permits,
    const uint64_t *tokens, const uint32_t *ns, uint64_t waited_ms)
{
	Semd__MultiGrant mg = SEMD__MULTI_GRANT__INIT;
	Semd__NamedGrant gv[SM_MULTI_MAX], *gp[SM_MULTI_MAX];
	unsigned int i;

	for (i = 0; i < k; i++) {
		semd__named_grant__init(&gv[i]);
		gv[i].name = sems[i]->name;
		gv[i].permit_id = permits[i];
		gv[i].token = tokens[i];
		gv[i].n = ns[i];
		gp[i] = &gv[i];
	}
	mg.n_grants = k;
	mg.grants = gp;
	mg.waited_us = waited_ms * 1000;
	REPLY_BODY(sm, c, id, MULTI_GRANT, multi_grant, &mg);
}

/*
 * Turn the grants of a DownMulti (permits taken, tokens[i] the fencing
 * tokens) into holds, linked as one group, and answer it.
 */
static void multi_deliver(struct sm *sm, struct sm_session *s, uint64_t id,
    unsigned int k, struct sm_sem *const *sems, const uint32_t *ns,
    const uint64_t *tokens, uint32_t lease_ms, uint64_t since, uint64_t now)
{
	struct sm_hold *h[SM_MULTI_MAX];
	uint64_t permits[SM_MULTI_MAX] = { 0 }, key = 0;
	unsigned int i;
	int op = sm->cur_op;

	for (i = 0; i < k; i++) {
		h[i] = hold_new(sm, sems[i], s, i == 0 ? id : 0, ns[i], tokens[i],
		    lease_ms, now, key);
		if (h[i] == NULL)
			break;
		if (i == 0)
			key = h[i]->group_key = h[i]->permit_id;
		else
			list_add_tail(&h[i]->group, &h[0]->group);
		permits[i] = h[i]->permit_id;
	}
	sm->cur_op = SEMD__REQUEST__OP_DOWN_MULTI;
	if (i < k) {
		/* Out of memory: everything goes back, the client hears why. */
		while (i-- > 0)
			hold_release(sm, h[i], false, "out of memory");
		for (i = 0; i < k; i++)
			sema_up_n(&sems[i]->sem, ns[i]);
		reply_err(sm, s->client, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory recording the grants");
		sm->cur_op = op;
		return;
	}
	sm->ctr.grants += k;
	sm->ctr.multi_grants++;
	hist_add(&sm->ctr.wait, now > since ? now - since : 0);
	for (i = 0; i < k; i++)
		if (sems[i]->held > sems[i]->limit)
			sm->overgrants++;
	reply_multi(sm, s->client, id, k, sems, permits, tokens, ns, now - since);
	for (i = 0; i < k; i++)
		watch_grant(sm, sems[i], s, id, permits[i], tokens[i], ns[i]);
	sm->cur_op = op;
	deadlock_after_grant(sm, s);
}

/*
 * Grant a ready request: every member at once, then the answer. Its record
 * is freed.
 */
static void wait_grant(struct sm *sm, struct sm_wait *w)
{
	struct sm_sem *sems[SM_MULTI_MAX];
	uint64_t tokens[SM_MULTI_MAX];
	uint32_t ns[SM_MULTI_MAX];
	struct sm_session *s = w->session;
	uint64_t id = w->req.request_id, since = w->since_ms;
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
				sema_up_n(&sems[i]->sem, ns[i]);
		wait_dealloc(sm, w);
		reply_err(sm, s->client, id, SEMD__CODE__INTERNAL,
		    "a ready request could not be granted");
		return;
	}
	wait_dealloc(sm, w);
	if (multi) {
		multi_deliver(sm, s, id, k, sems, ns, tokens, lease, since, sm->now);
	} else {
		int op = sm->cur_op;

		sm->cur_op = SEMD__REQUEST__OP_DOWN;
		grant_deliver(sm, sems[0], s, id, ns[0], tokens[0], lease, since,
		    sm->now);
		sm->cur_op = op;
	}
}

/*
 * After every call into the state machine: grant the offered requests that
 * are ready, set the timers of the token buckets that changed, and look for
 * deadlocks closed by the grants made, until there is nothing left to do.
 */
void sm_settle(struct sm *sm)
{
	struct sm_wait *w;

	if (sm->settling || sm->freeing)
		return;
	sm->settling = true;
	for (;;) {
		if (!list_empty(&sm->offers)) {
			w = list_first_entry(&sm->offers, struct sm_wait, offer_entry);
			list_del_init(&w->offer_entry);
			if (wait_ready(sm, w))
				wait_grant(sm, w);
			continue;
		}
		if (rate_settle(sm) || deadlock_settle(sm))
			continue;
		break;
	}
	sm->settling = false;
}

/* Is sem free for n right now: nobody in line, n permits and tokens? */
static bool want_free(struct sm *sm, struct sm_sem *sem, uint32_t n)
{
	return list_empty(&sem->waiters) && sema_count(&sem->sem) >= (long)n &&
	    tokens_ok(sm, sem, n);
}

/* Why a trydown of sem (n) would block, for WOULD_BLOCK. */
static void want_busy(struct sm *sm, struct sm_client *c, uint64_t id,
    struct sm_sem *sem, uint32_t n)
{
	if (sem->rate != NULL && rate_whole(sem) < n)
		reply_err(sm, c, id, SEMD__CODE__WOULD_BLOCK,
		    "%s: %" PRIu64 " of %u tokens in the bucket, %u wanted, %u waiting",
		    sem->name, rate_whole(sem), sem->rate->burst, n, sem->nwaiters);
	else
		reply_err(sm, c, id, SEMD__CODE__WOULD_BLOCK,
		    "%s: %ld of %u permits free, %u waiting", sem->name,
		    sema_count(&sem->sem), sem->limit, sem->nwaiters);
}

/*
 * The common end of Down and DownMulti, once the names are found and the
 * caps checked: grant every want now if all are free, or answer
 * WOULD_BLOCK (a trydown), DEADLOCK or an error, or queue a waiter.
 */
void down_wants(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_want *wants, unsigned int k, int64_t timeout_ms,
    uint32_t lease_ms, bool multi, uint64_t now)
{
	struct sm_session *s = c->session;
	struct sm_sem *sems[SM_MULTI_MAX];
	uint64_t tokens[SM_MULTI_MAX], deadline;
	uint32_t ns[SM_MULTI_MAX];
	struct sm_wait *w;
	unsigned int i;
	bool gated = multi || sem_gates(wants[0].sem), took;
	char why[SM_DEADLOCK_MSG];
	int r;

	for (i = 0; i < k; i++) {
		sems[i] = wants[i].sem;
		ns[i] = wants[i].n;
		rate_refill(sm, sems[i]);
	}
	/* Now, if every one is free. */
	if (!gated) {
		if (sema_trydown_n(&sems[0]->sem, ns[0], &tokens[0])) {
			grant_deliver(sm, sems[0], s, id, ns[0], tokens[0], lease_ms,
			    now, now);
			return;
		}
	} else {
		for (i = 0; i < k && want_free(sm, sems[i], ns[i]); i++)
			;
		if (i == k) {
			for (i = 0; i < k; i++) {
				if (sems[i]->rate != NULL &&
				    sems[i]->mode == SEMD__MODE__OWNED)
					rate_take(sems[i], ns[i]);
				took = sema_trydown_n(&sems[i]->sem, ns[i],
				    &tokens[i]);
				SM_ASSERT(took);	/* want_free() said so */
				rate_touch(sm, sems[i]);
			}
			if (multi)
				multi_deliver(sm, s, id, k, sems, ns, tokens,
				    lease_ms, now, now);
			else
				grant_deliver(sm, sems[0], s, id, ns[0], tokens[0],
				    lease_ms, now, now);
			return;
		}
	}
	if (timeout_ms == 0) {
		for (i = 0; i < k && want_free(sm, sems[i], ns[i]); i++)
			;
		want_busy(sm, c, id, sems[i < k ? i : 0], ns[i < k ? i : 0]);
		return;
	}
	if (sm->shutting_down) {
		reply_err(sm, c, id, SEMD__CODE__UNAVAILABLE,
		    "semd is shutting down");
		return;
	}
	if (s->nwaiters >= sm->cfg.max_waiters_per_session) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "session has too many waiting downs (max-waiters-per-session %u)",
		    sm->cfg.max_waiters_per_session);
		return;
	}
	if (deadlock_new(sm, s, wants, k, why, sizeof why)) {
		reply_err(sm, c, id, SEMD__CODE__DEADLOCK, "%s", why);
		for (i = 0; i < k; i++)
			watch_deadlock(sm, sems[i], s, id, ns[i], why);
		return;
	}
	if ((w = wait_alloc(sm, k)) == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		return;
	}
	w->seq = ++sm->next_wait_seq;
	w->lease_ms = lease_ms;
	w->multi = multi;
	w->session = s;
	w->since_ms = now;
	w->since_wall = sm_wall(sm, now);
	w->req.request_id = id;
	for (i = 0; i < k; i++) {
		w->m[i].sem = sems[i];
		w->m[i].n = ns[i];
	}
	if (timeout_ms > 0) {
		deadline = (uint64_t)timeout_ms > UINT64_MAX / 4 - now ?
		    UINT64_MAX / 4 : now + (uint64_t)timeout_ms;
		if (timer_arm(sm, &w->deadline, T_WAIT, deadline) != 0) {
			wait_dealloc(sm, w);
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "out of memory");
			return;
		}
	}
	if (!gated) {
		r = sema_down_async(&sems[0]->sem, &w->m[0].w, ns[0], wait_wake);
		if (r <= 0) {
			/* Not queued: free since the trydown above, or refused. */
			timer_disarm(sm, &w->deadline);
			tokens[0] = w->m[0].w.token;
			wait_dealloc(sm, w);
			if (r == 0)
				grant_deliver(sm, sems[0], s, id, ns[0], tokens[0],
				    lease_ms, now, now);
			else
				reply_err(sm, c, id, SEMD__CODE__INTERNAL,
				    "the core refused the down (%d)", r);
			return;
		}
	} else {
		for (i = 0; i < k; i++) {
			r = sema_enqueue(&sems[i]->sem, &w->m[i].w, ns[i],
			    wait_wake, SEMA_Q_GATED);
			SM_ASSERT(r == 0);	/* n >= 1 */
		}
	}
	wait_link(sm, w);
	for (i = 0; i < k; i++)
		watch_wait(sm, w, &w->m[i]);
}

/* The holds of the DownMulti that hold h answers a retry with. */
static void multi_answer(struct sm *sm, struct sm_client *c, uint64_t id,
    struct sm_hold *h)
{
	struct sm_sem *sems[SM_MULTI_MAX];
	uint64_t permits[SM_MULTI_MAX], tokens[SM_MULTI_MAX];
	uint32_t ns[SM_MULTI_MAX];
	struct list_head *pos;
	struct sm_hold *g;
	unsigned int k = 0;

	sems[k] = h->sem;
	permits[k] = h->permit_id;
	tokens[k] = h->token;
	ns[k++] = h->n;
	list_for_each(pos, &h->group) {
		g = list_entry(pos, struct sm_hold, group);
		if (k == SM_MULTI_MAX)
			break;
		sems[k] = g->sem;
		permits[k] = g->permit_id;
		tokens[k] = g->token;
		ns[k++] = g->n;
	}
	reply_multi(sm, c, id, k, sems, permits, tokens, ns, 0);
}

/*
 * A retried DownMulti (same session and id): answer what the first one
 * got. True when answered (or still pending: its waiter will answer).
 */
static bool multi_retry(struct sm *sm, struct sm_client *c, uint64_t id)
{
	struct sm_reqkey *prev;
	struct sm_hold *h;
	struct sm_wait *w;

	if (id == 0 || (prev = req_find(sm, c->session->id, id)) == NULL)
		return false;
	if (prev->kind == REQ_MEMO) {
		memo_answer(sm, c, container_of(prev, struct sm_memo, req));
		return true;
	}
	if (prev->kind == REQ_HOLD) {
		h = container_of(prev, struct sm_hold, req);
		if (h->group_key != 0) {
			multi_answer(sm, c, id, h);
			return true;
		}
	} else {
		w = container_of(prev, struct sm_wait, req);
		if (w->multi)
			return true;	/* the pending waiter will answer */
	}
	reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
	    "request id %" PRIu64 " is in use by a down of one name", id);
	return true;
}

/* Check a DownMulti's names: count, validity, repeats. */
static bool multi_args_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__DownMulti *dm)
{
	size_t i, j;

	if (dm->n_wants == 0 || dm->n_wants > SM_MULTI_MAX) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "a multi-name down takes 1 to %d names, not %zu",
		    SM_MULTI_MAX, dm->n_wants);
		return false;
	}
	for (i = 0; i < dm->n_wants; i++) {
		if (!sem_name_ok(sm, c, id, dm->wants[i]->name))
			return false;
		if (dm->wants[i]->n > SM_LIMIT_MAX) {
			reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
			    "n = %u is out of range", dm->wants[i]->n);
			return false;
		}
		for (j = 0; j < i; j++) {
			if (strcmp(dm->wants[i]->name, dm->wants[j]->name) == 0) {
				reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
				    "%s is named twice", dm->wants[i]->name);
				return false;
			}
		}
	}
	return true;
}

/*
 * Find (or auto-create) the name of a want and check it can be part of a
 * multi-name down; NULL when answered. *made is set when auto-created.
 */
static struct sm_sem *multi_sem(struct sm *sm, struct sm_client *c,
    uint64_t id, const Semd__Want *wt, uint32_t n, bool *made)
{
	struct sm_sem *sem = sem_find(sm, wt->name);

	*made = false;
	if (sem == NULL) {
		if ((sem = sem_auto_create(sm, c, id, wt->name, wt->limit)) == NULL)
			return NULL;
		*made = true;
	} else if (sem->mode != SEMD__MODE__OWNED) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "%s is a %s semaphore: a multi-name down takes owned ones "
		    "(nothing would be held; take it with its own down)", sem->name,
		    sem_mode_name(sem->mode));
		return NULL;
	} else if (wt->limit != 0 && wt->limit != sem->limit) {
		reply_err(sm, c, id, SEMD__CODE__EXISTS,
		    "%s exists with limit %u, not %u", sem->name, sem->limit,
		    wt->limit);
		return NULL;
	}
	if (n > sem->limit || (sem->rate != NULL && n > sem->rate->burst)) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "n = %u is more than the %s of %s (%u)", n,
		    n > sem->limit ? "limit" : "burst", sem->name,
		    n > sem->limit ? sem->limit : sem->rate->burst);
		if (*made)
			sem_maybe_free(sm, sem);
		return NULL;
	}
	return sem;
}

/* DownMulti: several names at once, all or nothing. */
void op_down_multi(struct sm *sm, struct sm_client *c, const Semd__Request *req,
    uint64_t now)
{
	const Semd__DownMulti *dm = req->down_multi;
	uint64_t id = req->id, permits = 0;
	struct sm_session *s = c->session;
	struct sm_principal *pr = s->ident->pr;
	struct sm_want wants[SM_MULTI_MAX];
	unsigned int i, k = 0;
	bool made;

	if (!multi_args_ok(sm, c, id, dm) || multi_retry(sm, c, id))
		return;
	if (s->nholds + s->nwaiters + dm->n_wants > sm->cfg.max_holds_per_session) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "session would hold or wait for too many permits (max-holds-per-session %u)",
		    sm->cfg.max_holds_per_session);
		return;
	}
	for (k = 0; k < dm->n_wants; k++) {
		wants[k].n = dm->wants[k]->n ? dm->wants[k]->n : 1;
		wants[k].sem = multi_sem(sm, c, id, dm->wants[k], wants[k].n, &made);
		if (wants[k].sem == NULL)
			goto out;
		permits += wants[k].n;
	}
	if (principal_room(sm, c, id, pr, SM_LIMIT_PERMITS, permits) &&
	    (dm->timeout_ms == 0 || principal_room(sm, c, id, pr,
	    SM_LIMIT_WAITERS, 1)))
		down_wants(sm, c, id, wants, k, dm->timeout_ms, dm->lease_ms,
		    true, now);
out:
	for (i = 0; i < k; i++)
		sem_maybe_free(sm, wants[i].sem);
}
