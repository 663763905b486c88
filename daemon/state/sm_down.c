/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_down.c - Down: n permits of one name, now or when they
 * come. Found (or auto-created) and checked, a down takes its permits at
 * once when nobody is in line and they are free - the core's trydown, or
 * for a name with a rate and a limit the permits and the tokens together -
 * and is answered Grant (sm_sem.c); else a trydown is answered WOULD_BLOCK,
 * and a down that may wait and would close no cycle of sessions
 * (sm_deadlock.c) is queued (sm_wait.c), its deadline armed. The steps
 * after the lookup are shared with DownMulti (sm_multi.c), which differs in
 * how it finds its names and that it is always gated.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/*
 * Is sem free right now for n, of a new request with order key key: nobody
 * in line before it but parked waiters (who block nobody; without
 * priorities, nobody in line at all), n permits and tokens? The count is
 * read as the state holds it (every change of it is under the state's
 * lock, as this is): not through sema_count(), which takes the
 * semaphore's own lock, an atomic operation on every down.
 */
static bool want_free(struct sm *sm, struct sm_sem *sem, uint32_t n,
    uint64_t key)
{
	const struct sm_member *first = sem_first_in_line(sem);

	return (first == NULL || first->wait->key > key) &&
	    sem->sem.count >= (long)n && rate_has(sm, sem, n);
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
 * Take every want of a request with order key key now if every one is free
 * (nobody in line before it, the permits and the tokens there): true with
 * the fencing tokens in tokens[], the caller delivers the grant.
 */
bool down_take_all(struct sm *sm, const struct sm_want *wants, unsigned int k,
    uint64_t key, uint64_t *tokens)
{
	unsigned int i;
	bool took;

	for (i = 0; i < k && want_free(sm, wants[i].sem, wants[i].n, key); i++)
		;
	if (i < k)
		return false;
	for (i = 0; i < k; i++) {
		if (wants[i].sem->rate != NULL &&
		    wants[i].sem->mode == SEMD__MODE__OWNED)
			rate_take(wants[i].sem, wants[i].n);
		took = sema_take_n_owned(&wants[i].sem->sem, wants[i].n,
		    &tokens[i]);
		SM_ASSERT(took);	/* want_free() said so */
		effect_rate(sm, wants[i].sem);
	}
	return true;
}

/*
 * A down that cannot be granted now: may it wait? If not it is answered: a
 * trydown WOULD_BLOCK (why, of the first name that is busy), a down while
 * shutting down UNAVAILABLE, one over max-waiters-per-session
 * RESOURCE_EXHAUSTED, one on a name whose queue is full QUEUE_FULL (old:
 * the waiter it replaces, or NULL), one that would close a cycle of
 * sessions DEADLOCK.
 */
bool down_may_wait(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_want *wants, unsigned int k, int64_t timeout_ms,
    uint64_t key, const struct sm_wait *old)
{
	struct sm_session *s = c->session;
	char why[SM_DEADLOCK_MSG];
	unsigned int i;

	if (timeout_ms == 0) {
		for (i = 0; i < k && want_free(sm, wants[i].sem, wants[i].n, key);
		    i++)
			;
		if (i == k)
			i = 0;
		want_busy(sm, c, id, wants[i].sem, wants[i].n);
		return false;
	}
	if (sm->shutting_down) {
		reply_err(sm, c, id, SEMD__CODE__UNAVAILABLE,
		    "semd is shutting down");
		return false;
	}
	if (s->nwaiters >= sm->cfg.max_waiters_per_session) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "session has too many waiting downs (max-waiters-per-session %u)",
		    sm->cfg.max_waiters_per_session);
		return false;
	}
	for (i = 0; i < k; i++)
		if (!queue_room(sm, c, id, wants[i].sem, old))
			return false;
	if (deadlock_new(sm, s, wants, k, why, sizeof why)) {
		reply_err(sm, c, id, SEMD__CODE__DEADLOCK, "%s", why);
		for (i = 0; i < k; i++)
			watch_deadlock(sm, wants[i].sem, s, id, wants[i].n, why);
		return false;
	}
	return true;
}

/*
 * The waiter of a down that may wait: a member for each want, its deadline
 * armed (timeout_ms > 0; negative: none), its priority prio. Not queued
 * yet. NULL, answered RESOURCE_EXHAUSTED, when out of memory.
 */
struct sm_wait *down_wait_new(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_want *wants, unsigned int k, int64_t timeout_ms,
    uint32_t lease_ms, bool multi, int prio, uint64_t now)
{
	struct sm_wait *w;
	uint64_t deadline;
	unsigned int i;

	if ((w = wait_alloc(sm, k)) == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		return NULL;
	}
	w->seq = ++sm->next_wait_seq;
	w->prio = (int16_t)prio;
	w->key = wait_key(now, prio);
	w->lease_ms = lease_ms;
	w->multi = multi;
	w->session = c->session;
	w->since_ms = now;
	w->since_wall = sm_wall(sm, now);
	w->req.request_id = id;
	for (i = 0; i < k; i++) {
		w->m[i].sem = wants[i].sem;
		w->m[i].n = wants[i].n;
	}
	idem_wait(sm, w);	/* the key of its down, if any */
	if (timeout_ms > 0) {
		deadline = (uint64_t)timeout_ms > UINT64_MAX / 4 - now ?
		    UINT64_MAX / 4 : now + (uint64_t)timeout_ms;
		if (timer_arm(sm, &w->deadline, T_WAIT, deadline) != 0) {
			wait_dealloc(sm, w);
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "out of memory");
			return NULL;
		}
	}
	return w;
}

/* Is prio a priority (SM_PRIO_MIN..SM_PRIO_MAX)? Answered when not. */
bool down_prio_ok(struct sm *sm, struct sm_client *c, uint64_t id, int prio)
{
	if (prio >= SM_PRIO_MIN && prio <= SM_PRIO_MAX)
		return true;
	reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
	    "priority %d is out of range (%d to %d)", prio, SM_PRIO_MIN,
	    SM_PRIO_MAX);
	return false;
}

/* A waiter queued in the core: into our lists, and told to the watchers. */
void down_queued(struct sm *sm, struct sm_wait *w)
{
	unsigned int i;

	wait_link(sm, w);
	for (i = 0; i < w->nm; i++)
		watch_wait(sm, w, &w->m[i]);
}

/*
 * A down of n permits of sem, found and its caps checked: granted now if
 * it is free, or answered, or queued. With a replace key, once granted or
 * queued it replaces the waiter of its principal with that key there
 * (sm_queue.c): found after the refill, which may grant, and nothing in
 * between grants anyone else.
 */
static void down_one(struct sm *sm, struct sm_client *c, uint64_t id,
    struct sm_sem *sem, uint32_t n, const Semd__Down *d, uint64_t now)
{
	struct sm_session *s = c->session;
	const struct sm_want want = { sem, n };
	bool gated = sem_gates(sem);
	const char *rkey = d->replace != NULL && d->replace[0] != '\0' ?
	    d->replace : NULL;
	struct sm_group *grp = NULL;
	struct sm_wait *w, *old;
	uint32_t lease_ms = d->lease_ms;
	uint64_t token, key = wait_key(now, d->priority);
	int r;

	rate_refill(sm, sem);
	old = rkey != NULL ? queue_replaced(sem, s, rkey) : NULL;
	/* Fair shares: the order is the group's tag (sm_share.c). */
	if (sem->share != NULL) {
		if ((grp = share_group(sm, sem, s->ident->pr->name,
		    d->group != NULL ? d->group : "")) == NULL) {
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "out of memory");
			return;
		}
		key = share_tag(sem, grp);
	}
	if (down_take_all(sm, &want, 1, key, &token)) {
		if (grp != NULL)
			share_charge(grp, key, n);
		grant_deliver(sm, sem, s, id, n, token, lease_ms, now, now, grp,
		    key);
		if (old != NULL)
			queue_replace(sm, old, id, sem);
		return;
	}
	if (!down_may_wait(sm, c, id, &want, 1, d->timeout_ms, key, old) ||
	    (w = down_wait_new(sm, c, id, &want, 1, d->timeout_ms, lease_ms,
	    false, d->priority, now)) == NULL) {
		share_group_put(sm, sem, grp);
		return;
	}
	if (rkey != NULL && !queue_set_rkey(sm, w, rkey)) {
		timer_disarm(sm, &w->deadline);
		wait_dealloc(sm, w);
		share_group_put(sm, sem, grp);
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		return;
	}
	if (grp != NULL) {
		w->grp = grp;
		w->key = key;
		share_charge(grp, key, n);
	}
	/*
	 * Not free (want_free): someone is in line before it, or the permits
	 * or tokens are not there, so it waits in its place, granted nothing.
	 */
	r = wait_queue(w, 0, gated ? SEMA_Q_GATED : 0);
	SM_ASSERT(r == 0);	/* n >= 1 */
	down_queued(sm, w);
	if (old != NULL)
		queue_replace(sm, old, id, sem);
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

static void down_request(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Down *d, uint32_t n, struct sm_sem *sem, size_t len);
static void down_keyed_retry(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Down *d, const struct sm_idem *k);

/*
 * Down: take n permits now, or wait for them until a deadline. Checked,
 * and a retry answered - by its request id on the same session, or by its
 * idempotency key from any session of its principal - before it runs.
 */
void op_down(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Down *d = req->down;
	uint64_t id = req->id;
	struct sm_session *s = c->session;
	struct sm_reqkey *prev;
	struct sm_idem *k;
	struct sm_hold *h;
	struct sm_sem *sem;
	struct sm_wait *w;
	uint32_t n = d->n ? d->n : 1;
	size_t len = strlen(d->name);

	sem = client_sem(sm, c, d->name, len);
	if (sem == NULL && !sem_name_len_ok(sm, c, id, d->name, len))
		return;
	if (n > SM_LIMIT_MAX) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "n = %u is out of range", n);
		return;
	}
	if (d->replace != NULL && d->replace[0] != '\0' &&
	    !queue_rkey_ok(sm, c, id, d->replace))
		return;
	if (!down_prio_ok(sm, c, id, d->priority))
		return;
	if (d->group != NULL && d->group[0] != '\0' &&
	    !share_group_name_ok(d->group)) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "a group is 1 to 64 printable characters without spaces");
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
			if (h->group_key == 0 && strcmp(h->sem->name, d->name) == 0) {
				reply_grant(sm, c, id, h->permit_id, h->token,
				    h->n, 0);
				return;
			}
		} else {
			w = container_of(prev, struct sm_wait, req);
			if (!w->multi && strcmp(w->m[0].sem->name, d->name) == 0)
				return;	/* the pending waiter will answer */
		}
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "request id %" PRIu64 " is in use by a down on another name", id);
		return;
	}
	if (d->idempotency_key == NULL || d->idempotency_key[0] == '\0') {
		down_request(sm, c, id, d, n, sem, len);
		return;
	}
	if (!idem_args_ok(sm, c, id, d->idempotency_key, &d->request_hash))
		return;
	if ((k = idem_find(sm, s->ident->pr, d->idempotency_key)) != NULL) {
		down_keyed_retry(sm, c, id, d, k);
		return;
	}
	if ((k = idem_new(sm, s->ident->pr, d->idempotency_key,
	    &d->request_hash)) == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		return;
	}
	sm->idem_next = k;	/* the hold or waiter made takes it */
	down_request(sm, c, id, d, n, sem, len);
	idem_unbound(sm);	/* none was made: forgotten */
}

/*
 * A down whose idempotency key k its principal gave before: answered what
 * that down made - its hold's grant, or Pending while it waits - when it
 * asks the same (its hash, its name, one name); else refused.
 */
static void down_keyed_retry(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Down *d, const struct sm_idem *k)
{
	const struct sm_hold *h = k->hold;
	const struct sm_wait *w = k->wait;

	if (!idem_same(k, &d->request_hash) ||
	    (h != NULL && (h->group_key != 0 || strcmp(h->sem->name, d->name) != 0)) ||
	    (w != NULL && (w->multi || strcmp(w->m[0].sem->name, d->name) != 0)))
		idem_reply_reused(sm, c, id, k);
	else if (h != NULL)
		reply_grant(sm, c, id, h->permit_id, h->token, h->n, 0);
	else
		idem_reply_pending(sm, c, id, w);
}

/* The down of n permits of d's name (sem, when its lookup found it). */
static void down_request(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Down *d, uint32_t n, struct sm_sem *sem, size_t len)
{
	struct sm_session *s = c->session;

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
	if (sem == NULL &&
	    (sem = sem_auto_create(sm, c, id, d->name, d->limit)) == NULL)
		return;
	client_sem_set(sm, c, sem);
	if (sem->mode != SEMD__MODE__RATE && n > sem->limit) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "n = %u is more than the limit of %s (%u)", n, sem->name,
		    sem->limit);
		goto out;
	}
	if (sem->rate != NULL && n > sem->rate->burst) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "n = %u is more than the burst of %s (%u tokens)", n,
		    sem->name, sem->rate->burst);
		goto out;
	}
	if (sem->share == NULL ? d->group != NULL && d->group[0] != '\0' :
	    d->priority != 0 || (share_by(sem) != SEMD__SHARE_BY__SHARE_KEY &&
	    d->group != NULL && d->group[0] != '\0')) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT, "%s: %s",
		    sem->name, sem->share == NULL ? "no fair shares, so no groups" :
		    d->priority != 0 ? "a name with fair shares has no priorities" :
		    "its shares are by principal (no --group)");
		goto out;
	}
	if (!down_room(sm, c, id, sem, n, d->timeout_ms != 0))
		goto out;
	down_one(sm, c, id, sem, n, d, sm->now);
out:
	sem_maybe_free(sm, sem);
}

