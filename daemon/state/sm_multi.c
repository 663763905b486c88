/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_multi.c - DownMulti: permits of several names at once,
 * all or nothing, with one deadline (SysV semop for the network). Its names
 * are checked (owned ones, not twice, at most SM_MULTI_MAX), found or
 * auto-created, and counted against the caps; then it goes the way of a
 * down (sm_down.c), always gated: how it waits, and why two of them never
 * wait for each other for ever, is told in sm_wait.c. A retry (same
 * session, same id) is answered with what the first one got.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

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
	} else if (sem->share != NULL) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "%s has fair shares: it takes single downs (its order is its own)",
		    sem->name);
		return NULL;
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

/*
 * The names of a DownMulti, found and its caps checked: all granted now if
 * every one is free, or answered, or queued - gated in every queue.
 */
static void multi_down(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_want *wants, unsigned int k, int64_t timeout_ms,
    uint32_t lease_ms, int prio, uint64_t now)
{
	uint64_t key = wait_key(now, prio);
	struct sm_sem *sems[SM_MULTI_MAX];
	uint64_t tokens[SM_MULTI_MAX];
	uint32_t ns[SM_MULTI_MAX];
	struct sm_wait *w;
	unsigned int i;
	int r;

	for (i = 0; i < k; i++) {
		sems[i] = wants[i].sem;
		ns[i] = wants[i].n;
		rate_refill(sm, sems[i]);
	}
	if (down_take_all(sm, wants, k, key, tokens)) {
		multi_deliver(sm, c->session, id, k, sems, ns, tokens, lease_ms,
		    now, now);
		return;
	}
	if (!down_may_wait(sm, c, id, wants, k, timeout_ms, key, NULL) ||
	    (w = down_wait_new(sm, c, id, wants, k, timeout_ms, lease_ms,
	    true, prio, now)) == NULL)
		return;
	/* In its place on every name: not free on one of them, so not ready. */
	for (i = 0; i < k; i++) {
		r = wait_queue(w, i, SEMA_Q_GATED);
		SM_ASSERT(r == 0);	/* n >= 1 */
	}
	down_queued(sm, w);
}

/*
 * A DownMulti whose idempotency key k its principal gave before: answered
 * what it made - the holds of it that remain, or Pending while it waits -
 * when it asks the same; else refused.
 */
static void multi_keyed_retry(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__DownMulti *dm, const struct sm_idem *k)
{
	if (!idem_same(k, &dm->request_hash) ||
	    (k->hold != NULL && k->hold->group_key == 0) ||
	    (k->wait != NULL && !k->wait->multi))
		idem_reply_reused(sm, c, id, k);
	else if (k->hold != NULL)
		multi_answer(sm, c, id, k->hold);
	else
		idem_reply_pending(sm, c, id, k->wait);
}

static void multi_request(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__DownMulti *dm);

/*
 * DownMulti: several names at once, all or nothing. A retry - by its id
 * on the same session, or by its idempotency key from any session of its
 * principal - is answered before it runs.
 */
void op_down_multi(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__DownMulti *dm = req->down_multi;
	const char *key = dm->idempotency_key;
	struct sm_principal *pr = c->session->ident->pr;
	uint64_t id = req->id;
	struct sm_idem *k;

	if (!multi_args_ok(sm, c, id, dm) || multi_retry(sm, c, id) ||
	    !down_prio_ok(sm, c, id, dm->priority))
		return;
	if (key == NULL || key[0] == '\0') {
		multi_request(sm, c, id, dm);
		return;
	}
	if (!idem_args_ok(sm, c, id, key, &dm->request_hash))
		return;
	if ((k = idem_find(sm, pr, key)) != NULL) {
		multi_keyed_retry(sm, c, id, dm, k);
		return;
	}
	if ((k = idem_new(sm, pr, key, &dm->request_hash)) == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		return;
	}
	sm->idem_next = k;	/* the first hold or the waiter takes it */
	multi_request(sm, c, id, dm);
	idem_unbound(sm);	/* none was made: forgotten */
}

/* The names of a DownMulti found (or made), its caps checked, and down. */
static void multi_request(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__DownMulti *dm)
{
	uint64_t permits = 0;
	struct sm_session *s = c->session;
	struct sm_principal *pr = s->ident->pr;
	struct sm_want wants[SM_MULTI_MAX];
	unsigned int i, k = 0;
	bool made;

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
		multi_down(sm, c, id, wants, k, dm->timeout_ms, dm->lease_ms,
		    dm->priority, sm->now);
out:
	for (i = 0; i < k; i++)
		sem_maybe_free(sm, wants[i].sem);
}
