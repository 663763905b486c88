/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_ops_permit.c - the operations on permits held: Up,
 * Release, Cancel and Validate (dispatched by sm_ops.c; Down is sm_down.c's,
 * DownMulti sm_multi.c's).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/*
 * Release hold h (why: what its holder is told, NULL: it asked) and answer
 * Released; its name goes if that leaves it idle and auto-created.
 */
static void release_answer(struct sm *sm, struct sm_client *c, uint64_t id,
    struct sm_hold *h, const char *why)
{
	struct sm_sem *sem = h->sem;
	uint32_t n = h->n;

	hold_release(sm, h, true, why);
	reply_released(sm, c, id, n);
	sem_maybe_free(sm, sem);
}

/*
 * Of the left permits an up gives back, take what hold h has: it shrinks,
 * or is released when all of it goes (the permits are handed to the core
 * by the caller, all at once). Returns what is left to take.
 */
static uint64_t hold_give_back(struct sm *sm, struct sm_hold *h, uint64_t left)
{
	uint32_t take = h->n < left ? h->n : (uint32_t)left;

	if (take == h->n)
		hold_release(sm, h, false, NULL);
	else
		hold_shrink(sm, h, take);
	return left - take;
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
	watch_up(sm, sem, c, n);
	reply_released(sm, c, id, n);
}

/* Up: give back permits the caller holds (owned) or add permits (signal). */
void op_up(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Up *u = req->up;
	uint64_t id = req->id;
	struct sm_session *s = c->session;
	struct list_head *pos, *tmp;
	struct sm_hold *h;
	struct sm_sem *sem;
	uint32_t n = u->n ? u->n : 1;
	uint64_t have = 0, left;

	if ((sem = sem_need(sm, c, id, u->name)) == NULL)
		return;
	if (sem_mode_refused(sm, c, id, sem, SEMD__MODE__RATE,
	    SEMD__CODE__NOT_HOLDER,
	    "a down takes its tokens for good, nothing is held"))
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
		release_answer(sm, c, id, h, NULL);
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
		if (h->sem == sem)
			left = hold_give_back(sm, h, left);
	}
	for (pos = sem->holders.prev, tmp = pos->prev;
	    left > 0 && pos != &sem->holders; pos = tmp, tmp = pos->prev) {
		h = list_entry(pos, struct sm_hold, sem_entry);
		if (h->session == NULL && hold_owned_by(h, s))
			left = hold_give_back(sm, h, left);
	}
	sema_up_n_owned(&sem->sem, n);
	reply_released(sm, c, id, n);
	sem_maybe_free(sm, sem);
}

/*
 * Release of a waiter: cancel the waiting down of seq on sem (its creator,
 * an administrator, or the waiter's own principal), answered CANCELLED.
 */
static void release_waiter(struct sm *sm, struct sm_client *c, uint64_t id,
    struct sm_sem *sem, uint64_t seq)
{
	struct list_head *pos;
	struct sm_wait *w = NULL;
	char why[SM_PRINCIPAL_MAX + 32];

	list_for_each(pos, &sem->waiters) {
		struct sm_member *m = list_entry(pos, struct sm_member, sem_entry);

		if (m->wait->seq == seq) {
			w = m->wait;
			break;
		}
	}
	if (w == NULL) {
		reply_err(sm, c, id, SEMD__CODE__NOT_FOUND,
		    "%s has no waiter %" PRIu64, sem->name, seq);
		return;
	}
	if (w->session->ident->pr != c->pr && !sem_manager(sm, c, sem)) {
		reply_err(sm, c, id, SEMD__CODE__PERMISSION_DENIED,
		    "%s may not cancel %s's waiter of %s (only its creator and administrators may)",
		    c->pr->name, w->session->ident->pr->name, sem->name);
		return;
	}
	snprintf(why, sizeof why, "cancelled by %s", c->pr->name);
	sm_note(sm, c, "%s cancelled waiter %" PRIu64 " of %s (%s)",
	    c->pr->name, seq, sem->name, w->session->ident->pr->name);
	wait_cancel(sm, w, SEMD__CODE__CANCELLED, why, sem);
	sm->ctr.cancels++;
	reply_ok(sm, c, id);
	sem_maybe_free(sm, sem);
}

/* Release: force-release anyone's hold by permit id (admin). */
void op_release(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Release *rl = req->release;
	uint64_t id = req->id;
	struct sm_sem *sem;
	struct sm_hold *h;
	char why[SM_NAME_MAX + 64];

	if ((sem = sem_need(sm, c, id, rl->name)) == NULL)
		return;
	if (rl->waiter != 0) {
		release_waiter(sm, c, id, sem, rl->waiter);
		return;
	}
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
	sm_note(sm, c, "%s force-released permit %" PRIu64 " of %s (%u, "
	    "held by %s)", c->pr->name, h->permit_id, sem->name, h->n,
	    h->ident->pr->name);
	release_answer(sm, c, id, h, why);
}

/* Cancel a pending down of this session. */
void op_cancel(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Cancel *cn = req->cancel;
	uint64_t id = req->id;
	struct sm_reqkey *k = req_find(sm, c->session->id, cn->request_id);
	struct sm_wait *w;
	char why[96];

	if (k == NULL || k->kind != REQ_WAIT) {
		if (cn->request_id != 0 && watch_cancel(sm, c, cn->request_id)) {
			reply_ok(sm, c, id);	/* a watch of this connection */
			return;
		}
		reply_err(sm, c, id, SEMD__CODE__NOT_FOUND,
		    "no pending down with id %" PRIu64, cn->request_id);
		return;
	}
	w = container_of(k, struct sm_wait, req);
	snprintf(why, sizeof why, "cancelled by request %" PRIu64, id);
	wait_cancel(sm, w, SEMD__CODE__CANCELLED, why, NULL);
	sm->ctr.cancels++;
	reply_ok(sm, c, id);
}

/* Validate: does this fencing token still hold a permit? */
void op_validate(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Validate *v = req->validate;
	uint64_t id = req->id;
	Semd__ValidateReply vr = SEMD__VALIDATE_REPLY__INIT;
	struct sm_sem *sem;

	if (!sem_name_ok(sm, c, id, v->name))
		return;
	sem = sem_find(sm, v->name);
	vr.valid = sem != NULL && token_find(sm, sem, v->token) != NULL;
	REPLY_BODY(sm, c, id, VALIDATE, validate, &vr);
}
