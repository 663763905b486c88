/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/session/requests.c - the requests of the handle: encoded once (kept to
 * be sent again after a resume), queued in the order they were made,
 * completed by a reply or a client-side error (the holds they make or give
 * back kept in step), and abandoned by a caller that stops waiting.
 */
#include <stdlib.h>
#include <string.h>

#include "client/session/session.h"
#include "proto/frame.h"

/* Free a request. */
void semc_req_free(struct semc_req *r)
{
	if (r == NULL)
		return;
	if (r->reply != NULL)
		semd__reply__free_unpacked(r->reply, NULL);
	free(r->frame);
	free(r->name);
	free(r);
}

/* Encode rq (giving it a fresh id) into a new request. */
struct semc_req *semc_req_new(struct semc *c, Semd__Request *rq)
{
	struct semc_req *r;
	size_t len;

	r = calloc(1, sizeof *r);
	if (r == NULL)
		return NULL;
	pthread_mutex_lock(&c->lock);
	r->id = c->next_id++;
	pthread_mutex_unlock(&c->lock);
	rq->id = r->id;
	r->op = rq->op_case;
	if (rq->op_case == SEMD__REQUEST__OP_DOWN) {
		r->name = strdup(rq->down->name);
		r->n = rq->down->n ? rq->down->n : 1;
		r->lease_ms = rq->down->lease_ms;
	} else if (rq->op_case == SEMD__REQUEST__OP_UP) {
		r->name = strdup(rq->up->name);
		r->n = rq->up->n ? rq->up->n : 1;
		r->permit_id = rq->up->permit_id;
	} else if (rq->op_case == SEMD__REQUEST__OP_DOWN_MULTI) {
		r->lease_ms = rq->down_multi->lease_ms;
	}
	len = semd__request__get_packed_size(rq);
	r->frame = malloc(FRAME_HDR + len);
	if (r->frame == NULL || ((r->op == SEMD__REQUEST__OP_DOWN ||
				  r->op == SEMD__REQUEST__OP_UP) && r->name == NULL)) {
		semc_req_free(r);
		return NULL;
	}
	frame_put_header(r->frame, (uint32_t)len);
	semd__request__pack(rq, r->frame + FRAME_HDR);
	r->frame_len = FRAME_HDR + len;
	return r;
}

/* Append r to the queue of requests to send (lock held). */
void semc_req_queue_locked(struct semc *c, struct semc_req *r)
{
	struct semc_req **pp;

	for (pp = &c->pending; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = r;
	r->next = NULL;
}

/* Append a library-internal request (cancel, give back, keepalive) to the
 * queue. */
struct semc_req *semc_internal_push_locked(struct semc *c, Semd__Request *rq)
{
	struct semc_req *r, **pp;
	size_t len;

	r = calloc(1, sizeof *r);
	if (r == NULL)
		return NULL;
	r->id = c->next_id++;
	rq->id = r->id;
	r->op = rq->op_case;
	r->internal = true;
	if (rq->op_case == SEMD__REQUEST__OP_UP) {
		/* a give-back: by permit id, nameless (no hold of ours to drop) */
		r->permit_id = rq->up->permit_id;
		r->n = rq->up->n ? rq->up->n : 1;
	}
	len = semd__request__get_packed_size(rq);
	r->frame = malloc(FRAME_HDR + len);
	if (r->frame == NULL) {
		free(r);
		return NULL;
	}
	frame_put_header(r->frame, (uint32_t)len);
	semd__request__pack(rq, r->frame + FRAME_HDR);
	r->frame_len = FRAME_HDR + len;
	for (pp = &c->pending; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = r;
	return r;
}

/* Queue giving back a grant nobody waits for any more: by its permit id,
 * or (a signal-mode grant has none) its n permits by count. */
static void give_back_locked(struct semc *c, const char *name, uint64_t permit_id, uint32_t n)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Up up = SEMD__UP__INIT;

	up.name = (char *)name;
	up.permit_id = permit_id;
	up.n = permit_id != 0 ? 0 : n;
	rq.op_case = SEMD__REQUEST__OP_UP;
	rq.up = &up;
	semc_internal_push_locked(c, &rq);
}

/* Take r off the pending list. */
void semc_pending_unlink_locked(struct semc *c, struct semc_req *r)
{
	struct semc_req **pp;

	for (pp = &c->pending; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			r->next = NULL;
			return;
		}
	}
}

/* Whether code, answering a request sent again after a resume, only says
 * that the first sending already did the work (e.g. the permit it gives
 * back is gone, the name it deletes is gone). */
static bool resend_succeeded(const struct semc_req *r, Semd__Code code)
{
	switch (r->op) {
	case SEMD__REQUEST__OP_UP:
		return r->permit_id != 0 && code == SEMD__CODE__NOT_HOLDER;
	case SEMD__REQUEST__OP_RELEASE:
	case SEMD__REQUEST__OP_DELETE:
	case SEMD__REQUEST__OP_CANCEL:
		return code == SEMD__CODE__NOT_FOUND;
	case SEMD__REQUEST__OP_CREATE:
		return code == SEMD__CODE__EXISTS;
	default:
		return false;
	}
}

/* Whether an answer to r shows that a majority of the cluster's voters
 * heard from the leader after r was sent, for the guard (handle.h): a Ping
 * (a read barrier) and the downs and ups (entries) answered OK. Other
 * answers may come from the node alone (a refusal, a redirect, a cluster
 * status): a leader cut off from the others gives them for a while. */
static bool answer_heard_by_voters(const struct semc_req *r, const Semd__Reply *rp)
{
	if (rp->code != SEMD__CODE__OK)
		return false;
	switch (r->op) {
	case SEMD__REQUEST__OP_PING:
	case SEMD__REQUEST__OP_DOWN:
	case SEMD__REQUEST__OP_DOWN_MULTI:
	case SEMD__REQUEST__OP_UP:
		return true;
	default:
		return false;
	}
}

/* Finish a request with a reply or a client-side error. */
void semc_req_complete_locked(struct semc *c, struct semc_req *r, Semd__Reply *rp, int err,
			      struct semc_deliver *d)
{
	semc_pending_unlink_locked(c, r);
	/* any answer: the daemon heard us; for the guard, the voters did */
	if (rp != NULL && r->sent_at > c->lease_base &&
	    (c->granted_lease > 0 || c->guard_ms == 0 || answer_heard_by_voters(r, rp)))
		c->lease_base = r->sent_at;
	if (r->keepalive)
		c->ka_out = false;
	if (rp != NULL && rp->code == SEMD__CODE__OK &&
	    semc_grant_void_locked(c, r, rp, semc_now_ms())) {
		/* too late to be trusted: neither handed out nor given back;
		 * the session is given up at the next duty (its end gives the
		 * permit back: semc_lease_check_locked()) */
		semd__reply__free_unpacked(rp, NULL);
		rp = NULL;
		err = SEMC_E_HOLD_LOST;
		c->untrusted = true;
	}
	if (rp != NULL && r->resent && resend_succeeded(r, rp->code))
		rp->code = SEMD__CODE__OK;	/* error replies carry no body */
	r->done = true;
	r->reply = rp;
	r->error = rp ? semc_code_error(rp->code) : err;
	if (r->internal && rp != NULL && rp->code == SEMD__CODE__OK &&
	    r->op == SEMD__REQUEST__OP_DOWN && rp->body_case == SEMD__REPLY__BODY_GRANT) {
		/* a grant for a down its caller gave up on: return it at once */
		give_back_locked(c, r->name, rp->grant->permit_id, rp->grant->n ? rp->grant->n : r->n);
	} else if (rp != NULL && rp->code == SEMD__CODE__OK &&
		   rp->body_case == SEMD__REPLY__BODY_MULTI_GRANT) {
		/* a multi-name down: every name's hold, given back or kept */
		size_t i;

		for (i = 0; i < rp->multi_grant->n_grants; i++) {
			Semd__NamedGrant *ng = rp->multi_grant->grants[i];
			Semd__Grant g = SEMD__GRANT__INIT;

			if (r->internal) {
				give_back_locked(c, ng->name, ng->permit_id, ng->n);
				continue;
			}
			g.permit_id = ng->permit_id;
			g.token = ng->token;
			g.n = ng->n;
			if (r->lease_ms == 0)
				semc_hold_add_locked(c, ng->name, &g);
		}
	} else if (rp != NULL && rp->code == SEMD__CODE__OK && r->op == SEMD__REQUEST__OP_UP) {
		/* the caller's, or one it stopped waiting for */
		semc_hold_drop_locked(c, r->name, r->permit_id,
				 rp->body_case == SEMD__REPLY__BODY_RELEASED &&
				 rp->released->n ? rp->released->n : r->n);
	} else if (rp != NULL && rp->code == SEMD__CODE__OK && !r->internal) {
		if (r->op == SEMD__REQUEST__OP_DOWN && r->lease_ms == 0 &&
		    rp->body_case == SEMD__REPLY__BODY_GRANT)
			semc_hold_add_locked(c, r->name, rp->grant);
	}
	if (r->internal) {
		semc_req_free(r);
	} else if (r->async) {
		/* at the tail: callbacks run in the order the replies came,
		 * so grants read together reach their callers in FIFO order */
		r->next = NULL;
		*d->done_tail = r;
		d->done_tail = &r->next;
	}
	pthread_cond_broadcast(&c->cond);
}

/*
 * r's caller stops waiting (its reply did not come in time): what was asked
 * must still be undone or done. A down that was sent stays queued as the
 * library's own: a late grant is given back, and the daemon is asked to
 * cancel. An up by permit id can be sent again safely: it stays queued as
 * the library's own, sent again after a reconnection, so that the permit
 * is given back although its caller stopped waiting (a failover can
 * outlast the reply timeout). Anything else is dropped. Returns whether r
 * stays queued (the queue owns it then).
 */
bool semc_req_abandon_locked(struct semc *c, struct semc_req *r)
{
	bool kept = true;

	if ((r->op == SEMD__REQUEST__OP_DOWN || r->op == SEMD__REQUEST__OP_DOWN_MULTI) &&
	    r->sent_gen != 0) {
		Semd__Request rq = SEMD__REQUEST__INIT;
		Semd__Cancel cn = SEMD__CANCEL__INIT;

		r->internal = true;
		cn.request_id = r->id;
		rq.op_case = SEMD__REQUEST__OP_CANCEL;
		rq.cancel = &cn;
		semc_internal_push_locked(c, &rq);
	} else if (r->op == SEMD__REQUEST__OP_UP && r->permit_id != 0) {
		r->internal = true;
	} else {
		semc_pending_unlink_locked(c, r);
		r->done = true;
		kept = false;
	}
	r->error = SEMC_E_NO_REPLY;
	return kept;
}
