/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/session.c - the session's bookkeeping, under the handle's lock:
 * requests (encoded, queued, completed), the holds it keeps, the events it
 * reports (queued in the order of the changes, delivered after the lock by
 * one thread at a time), a broken connection and a lost session, and the
 * client-side lease with its keepalive pings.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "client/client-int.h"
#include "proto/frame.h"

/* Queue e on the handle (lock held), for delivery after the lock is
 * dropped: the order of the queue is the order of the changes. */
void semc_event_queue_locked(struct semc *c, struct semc_deliver *d, struct semc_evq *e)
{
	e->next = NULL;
	*c->evq_tail = e;
	c->evq_tail = &e->next;
	d->events = true;
}

/* Queue an event for delivery after the lock is dropped. */
void semc_event_push_locked(struct semc *c, struct semc_deliver *d, enum semc_event_type type,
			    int error, const char *message, const struct semc_hold *h)
{
	struct semc_evq *e = calloc(1, sizeof *e);

	if (e == NULL)
		return;
	e->ev.type = type;
	e->ev.error = error;
	if (message != NULL)
		e->message = strdup(message);
	e->ev.message = e->message ? e->message : "";
	if (h != NULL) {
		e->name = strdup(h->name);
		e->ev.name = e->name;
		e->ev.permit_id = h->permit_id;
		e->ev.token = h->token;
		e->ev.n = h->n;
	}
	semc_event_queue_locked(c, d, e);
}

/* Initialise an empty delivery list. */
void semc_deliver_init(struct semc_deliver *d)
{
	d->done = NULL;
	d->done_tail = &d->done;
	d->events = false;
}

/* Free a queued event. */
void semc_evq_free(struct semc_evq *e)
{
	free(e->name);
	free(e->message);
	semc_watch_event_free(e->watch);
	free(e);
}

/* Run gathered events and completion callbacks (lock not held). The events
 * of the handle go out in order, one thread at a time: a thread that queued
 * some waits for the one delivering (unless that is itself, in a callback),
 * so that a call returns only once the events it caused were delivered. */
void semc_deliver_run(struct semc *c, struct semc_deliver *d)
{
	struct semc_evq *e;
	struct semc_req *r, *rn;
	semc_event_fn fn;
	void *arg;

	if (d->events) {
		pthread_mutex_lock(&c->lock);
		if (c->ev_running && pthread_equal(c->ev_runner, pthread_self()))
			goto events_done;	/* a callback's call: the outer loop delivers */
		while (c->ev_running)
			pthread_cond_wait(&c->cond, &c->lock);
		c->ev_running = true;
		c->ev_runner = pthread_self();
		while ((e = c->evq) != NULL) {
			c->evq = e->next;
			if (c->evq == NULL)
				c->evq_tail = &c->evq;
			fn = c->ev_fn;
			arg = c->ev_arg;
			pthread_mutex_unlock(&c->lock);
			if (e->watch != NULL)
				semc_watch_deliver(c, e->watch);	/* to its watch's fn */
			else if (fn != NULL)
				fn(c, &e->ev, arg);
			semc_evq_free(e);
			pthread_mutex_lock(&c->lock);
		}
		c->ev_running = false;
		pthread_cond_broadcast(&c->cond);
events_done:
		pthread_mutex_unlock(&c->lock);
	}
	for (r = d->done; r != NULL; r = rn) {
		rn = r->next;
		semc_result_deliver(c, r);
		semc_req_free(r);
	}
	semc_deliver_init(d);
}

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

/* Add a session-bound hold to the bookkeeping. */
static void hold_add_locked(struct semc *c, const char *name, const Semd__Grant *g)
{
	struct semc_hold *h = calloc(1, sizeof *h);
	unsigned i;

	for (i = 0; i < 64; i++)	/* a new daemon may reuse the id */
		if (c->lost_ids[i] == g->permit_id)
			c->lost_ids[i] = 0;
	if (h == NULL || (h->name = strdup(name)) == NULL) {
		free(h);
		return;
	}
	h->permit_id = g->permit_id;
	h->token = g->token;
	h->n = g->n ? g->n : 1;
	h->next = c->holds;
	c->holds = h;
}

/* Remove holds given back by an up (one permit id, or n permits of name). */
static void hold_drop_locked(struct semc *c, const char *name, uint64_t permit_id, uint32_t n)
{
	struct semc_hold **pp = &c->holds, *h;

	if (permit_id == 0 && name == NULL)
		return;
	while ((h = *pp) != NULL && (permit_id != 0 || n > 0)) {
		bool match = permit_id ? h->permit_id == permit_id : strcmp(h->name, name) == 0;

		if (!match) {
			pp = &h->next;
			continue;
		}
		if (permit_id == 0 && h->n > n) {
			h->n -= n;
			return;
		}
		if (permit_id == 0)
			n -= h->n;
		*pp = h->next;
		free(h->name);
		free(h);
		if (permit_id != 0)
			return;
	}
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

/* Whether the session holds a permit of its own (an owned one: a grant of
 * permit id 0 was consumed, signal mode or a rate, and is nobody's). */
static bool owns_permits(const struct semc *c)
{
	const struct semc_hold *h;

	for (h = c->holds; h != NULL; h = h->next)
		if (h->permit_id != 0)
			return true;
	return false;
}

/* How long after lease_base the session is trusted (ms; 0: not counted):
 * its lease; without one, in a cluster, the guard while it owns permits,
 * or for a grant that arrives (grant). */
static int64_t trust_span(const struct semc *c, bool grant)
{
	if (c->granted_lease > 0)
		return c->granted_lease;
	return c->guard_ms > 0 && (grant || owns_permits(c)) ? c->guard_ms : 0;
}

/* lease_base + span, less the drift D and the margin M. */
static int64_t trust_end(const struct semc *c, int64_t span)
{
	int64_t margin = span / 20 > SEMC_LEASE_MARGIN_MIN ? span / 20 : SEMC_LEASE_MARGIN_MIN;

	return c->lease_base + span - span * SEMC_LEASE_DRIFT_PPM / 1000000 - margin;
}

/* When the client-side lease of the session ends (monotonic ms; -1: no
 * lease). The daemon counts lease_ms from the last frame it received, which
 * left here no earlier than lease_base; under a clock-rate difference below
 * D, lease * (1 - D) here is at most lease there, and M covers the wake-up
 * of whoever acts on the end (a thread, an event loop, semctl's SIGKILL)
 * and the daemon's clock read before the read that brought the frame. */
int64_t semc_lease_end_locked(const struct semc *c)
{
	if (c->session == 0 || c->granted_lease == 0 || c->lease_base == 0)
		return -1;
	return trust_end(c, c->granted_lease);
}

/* When the session is trusted no more (monotonic ms; -1: not counted): the
 * end of its client-side lease or, without a lease, in a cluster, of the
 * guard while it owns permits (client-int.h: the voters that heard from the
 * leader after lease_base elect no other leader sooner). */
static int64_t trust_end_locked(const struct semc *c)
{
	int64_t span = trust_span(c, false);

	if (c->session == 0 || span == 0 || c->lease_base == 0)
		return -1;
	return trust_end(c, span);
}

/* Whether an answer to r shows that a majority of the cluster's voters
 * heard from the leader after r was sent, for the guard: a Ping (a read
 * barrier) and the downs and ups (entries) answered OK. Other answers may
 * come from the node alone (a refusal, a redirect, a cluster status): a
 * leader cut off from the others gives them for an election timeout. */
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

/* Whether a session-bound grant arriving now is void: it came after the end
 * of the client-side lease (or guard), counted from the latest request
 * answered, itself included - from a leader paused, or cut off, since. A
 * grant of permit id 0 (signal mode, a rate) is consumed, nobody's: never
 * void (voiding it would lose it). */
static bool grant_void_locked(const struct semc *c, const struct semc_req *r,
			      const Semd__Reply *rp)
{
	int64_t span = trust_span(c, true);

	if (r->lease_ms != 0)
		return false;	/* a detached hold has a lease of its own */
	if (!(rp->body_case == SEMD__REPLY__BODY_MULTI_GRANT ||
	      (rp->body_case == SEMD__REPLY__BODY_GRANT && rp->grant->permit_id != 0 &&
	       r->op == SEMD__REQUEST__OP_DOWN)))
		return false;
	return c->session != 0 && span > 0 && c->lease_base != 0 &&
	       semc_now_ms() >= trust_end(c, span);
}

/* The session is trusted no more: every session-bound hold is lost
 * (SEMC_E_HOLD_LOST) before the daemon can grant it again. A connection
 * still open is cut, so that nothing more is said on the session; the next
 * call starts a new one (with several daemons, on the next first: the
 * silent one is likely the one stopped or cut off). */
static void trust_over_locked(struct semc *c, const char *why, struct semc_deliver *d)
{
	struct semc_conn *k = c->conn;

	if (k != NULL) {
		if (c->naddrs > 1)
			semc_addr_use_locked(c, (c->cur + 1) % c->naddrs);
		c->conn = NULL;
		shutdown(k->fd, SHUT_RDWR);
		semc_conn_put_locked(k);
		semc_event_push_locked(c, d, SEMC_EV_DISCONNECTED, SEMC_E_HOLD_LOST, why, NULL);
		semc_session_lost_locked(c, SEMC_E_HOLD_LOST, why, d);
	} else {
		semc_session_lost_locked(c, SEMC_E_HOLD_LOST,
					 "the session's lease ran out while disconnected", d);
	}
}

/* Finish a request with a reply or a client-side error. */
void semc_req_complete_locked(struct semc *c, struct semc_req *r, Semd__Reply *rp, int err,
			      struct semc_deliver *d)
{
	bool voided = false;

	semc_pending_unlink_locked(c, r);
	/* any answer: the daemon heard us; for the guard, the voters did */
	if (rp != NULL && r->sent_at > c->lease_base &&
	    (c->granted_lease > 0 || c->guard_ms == 0 || answer_heard_by_voters(r, rp)))
		c->lease_base = r->sent_at;
	if (r->keepalive)
		c->ka_out = false;
	if (rp != NULL && rp->code == SEMD__CODE__OK && grant_void_locked(c, r, rp)) {
		/* too late to be trusted: neither handed out nor given back
		 * (the session is given up below) */
		semd__reply__free_unpacked(rp, NULL);
		rp = NULL;
		err = SEMC_E_HOLD_LOST;
		voided = true;
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
				hold_add_locked(c, ng->name, &g);
		}
	} else if (rp != NULL && rp->code == SEMD__CODE__OK && r->op == SEMD__REQUEST__OP_UP) {
		/* the caller's, or one it stopped waiting for */
		hold_drop_locked(c, r->name, r->permit_id,
				 rp->body_case == SEMD__REPLY__BODY_RELEASED &&
				 rp->released->n ? rp->released->n : r->n);
	} else if (rp != NULL && rp->code == SEMD__CODE__OK && !r->internal) {
		if (r->op == SEMD__REQUEST__OP_DOWN && r->lease_ms == 0 &&
		    rp->body_case == SEMD__REPLY__BODY_GRANT)
			hold_add_locked(c, r->name, rp->grant);
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
	if (voided)
		trust_over_locked(c, "a grant arrived after the session's lease (or the "
				  "cluster's election timeout) since its request was sent", d);
	pthread_cond_broadcast(&c->cond);
}

/* The session is gone: report every session-bound hold as lost and fail
 * the requests that were sent on it. */
void semc_session_lost_locked(struct semc *c, int err, const char *why,
			      struct semc_deliver *d)
{
	struct semc_hold *h, *hn;
	struct semc_req *r, *rn;

	for (h = c->holds; h != NULL; h = hn) {
		hn = h->next;
		semc_event_push_locked(c, d, SEMC_EV_HOLD_LOST, err, why, h);
		c->lost_ids[c->lost_next++ % 64] = h->permit_id;
		free(h->name);
		free(h);
	}
	c->holds = NULL;
	/* what was sent, and the library's own requests (keepalives, cancels
	 * and give-backs of the session's downs), go with the session */
	for (r = c->pending; r != NULL; r = rn) {
		rn = r->next;
		if (r->sent_gen != 0 || r->internal)
			semc_req_complete_locked(c, r, NULL, SEMC_E_DISCONNECTED, d);
	}
	c->session = 0;
	c->secret_len = 0;
	c->lease_base = 0;
	pthread_cond_broadcast(&c->cond);
}

/* Whether permit_id was one of the recently lost session holds. */
bool semc_permit_lost(struct semc *c, uint64_t permit_id)
{
	bool lost = false;
	unsigned i;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < 64 && permit_id != 0; i++)
		if (c->lost_ids[i] == permit_id)
			lost = true;
	pthread_mutex_unlock(&c->lock);
	return lost;
}

/* Forget connection k after an error; keep the session if it can resume. */
void semc_conn_broken_locked(struct semc *c, struct semc_conn *k, const char *why,
			     struct semc_deliver *d)
{
	if (c->conn != k || k == NULL)
		return;
	c->conn = NULL;
	shutdown(k->fd, SHUT_RDWR);
	semc_conn_put_locked(k);
	if (!c->closing)
		semc_event_push_locked(c, d, SEMC_EV_DISCONNECTED, SEMC_E_DISCONNECTED, why, NULL);
	/* Over a UNIX socket only the daemon can have closed it: worth a
	 * resume when it keeps its state across a restart (or we detached);
	 * otherwise whatever we held went with it. */
	if (c->reconnect && !c->closing && c->session != 0 && c->granted_lease > 0 &&
	    (c->addr.kind != SEMC_ADDR_UNIX || c->detach || c->server_durable)) {
		c->next_retry = semc_now_ms();
		c->backoff = 0;
	} else if (c->addr.kind == SEMC_ADDR_UNIX && c->granted_lease > 0 && !c->detach) {
		/* a UNIX connection that closes without a Detach ends its
		 * session at once, lease or not: nothing to resume */
		semc_session_lost_locked(c, SEMC_E_DISCONNECTED, "the connection closed (over a "
					 "UNIX socket that ends the session)", d);
	} else {
		semc_session_lost_locked(c, SEMC_E_DISCONNECTED, why, d);
	}
	pthread_cond_broadcast(&c->cond);
}

/* Give the session up once its client-side lease has ended. */
void semc_lease_check_locked(struct semc *c, int64_t now, struct semc_deliver *d)
{
	int64_t end = trust_end_locked(c);

	if (end < 0 || now < end)
		return;
	trust_over_locked(c, c->granted_lease > 0 ?
			  "no answer from the server within the session's lease" :
			  "no answer from the cluster's leader within its election timeout", d);
}

/* A Ping of the library's own, to keep the session alive. */
static void keepalive_push_locked(struct semc *c, int64_t now)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Ping op = SEMD__PING__INIT;
	struct semc_req *r;

	rq.op_case = SEMD__REQUEST__OP_PING;
	rq.ping = &op;
	if ((r = semc_internal_push_locked(c, &rq)) == NULL)
		return;
	r->keepalive = true;
	c->ka_out = true;
	c->ka_sent = now;
}

/* How long a keepalive ping may go unanswered before its connection is
 * taken for dead (a stopped or cut-off server keeps it open): a quarter of
 * the lease, so that the session is resumed elsewhere (another node of a
 * cluster, or a new connection) well before its client-side lease ends. */
static int64_t keepalive_dead_ms(const struct semc *c)
{
	int64_t ms = c->granted_lease / 4;

	return ms > SEMC_LEASE_MARGIN_MIN ? ms : SEMC_LEASE_MARGIN_MIN;
}

/* Whether a new connection can resume the session: over a UNIX socket only
 * with a daemon that keeps its state (or after a Detach); there a close
 * ends the session (semc_conn_broken_locked()). */
static bool resumable_locked(const struct semc *c)
{
	return c->reconnect && !c->closing && c->session != 0 && c->granted_lease > 0 &&
	       (c->addr.kind != SEMC_ADDR_UNIX || c->detach || c->server_durable);
}

/* When the connection is taken for dead if the keepalive ping in flight is
 * not answered (-1: none is in flight, or nothing could be resumed). */
static int64_t keepalive_dead_at_locked(const struct semc *c)
{
	if (c->conn == NULL || !c->ka_out || !resumable_locked(c))
		return -1;
	return c->ka_sent + keepalive_dead_ms(c);
}

/* The keepalive ping went unanswered for a quarter of the lease: give the
 * connection up and resume the session on a new one (with several daemons,
 * on the next first: the silent one is likely the one stopped or cut off),
 * its requests sent again there. The ping in flight is dropped with it. */
static void keepalive_dead_locked(struct semc *c, struct semc_deliver *d)
{
	char why[96];
	struct semc_req *r, *rn;

	for (r = c->pending; r != NULL; r = rn) {
		rn = r->next;
		if (r->keepalive)
			semc_req_complete_locked(c, r, NULL, SEMC_E_NO_REPLY, d);
	}
	c->ka_out = false;
	snprintf(why, sizeof why, "no answer to a keepalive ping within %lld ms",
		 (long long)keepalive_dead_ms(c));
	if (c->naddrs > 1)
		semc_addr_use_locked(c, (c->cur + 1) % c->naddrs);
	semc_conn_broken_locked(c, c->conn, why, d);
}

/* When the next keepalive ping is due: a third of the lease after the
 * latest answered request or the latest ping; without a lease, in a
 * cluster, a third of the guard after those and after a down still
 * waiting was sent, while the session holds something or such a down
 * waits (-1: none is due). */
static int64_t keepalive_due_locked(const struct semc *c)
{
	int64_t base = c->lease_base > c->ka_sent ? c->lease_base : c->ka_sent;
	const struct semc_req *r;
	bool waits = false;

	if (c->conn == NULL || c->session == 0 || c->ka_out)
		return -1;
	if (c->granted_lease > 0)
		return base + c->granted_lease / 3;
	if (c->guard_ms == 0)
		return -1;
	for (r = c->pending; r != NULL; r = r->next) {
		if (r->internal || r->sent_gen != c->conn->gen || r->lease_ms != 0 ||
		    (r->op != SEMD__REQUEST__OP_DOWN && r->op != SEMD__REQUEST__OP_DOWN_MULTI))
			continue;
		waits = true;
		if (r->sent_at > base)
			base = r->sent_at;
	}
	if (!waits && !owns_permits(c))
		return -1;
	return base + c->guard_ms / 3;
}

/* Whether a disconnected handle should try to connect again now: there is
 * a session to resume or a request to send. */
bool semc_reconnect_due_locked(const struct semc *c, int64_t now)
{
	return c->conn == NULL && c->reconnect && c->ever_connected && !c->closing &&
	       !c->connecting && now >= c->next_retry && (c->session != 0 || c->pending != NULL);
}

/* The session's periodic duties: end it when its client-side lease is
 * over, queue a keepalive ping when one is due. Returns whether something
 * was queued: the caller flushes (and delivers d) after the lock. */
bool semc_duties_locked(struct semc *c, int64_t now, struct semc_deliver *d)
{
	int64_t due;

	semc_lease_check_locked(c, now, d);
	if ((due = keepalive_dead_at_locked(c)) >= 0 && now >= due) {
		keepalive_dead_locked(c, d);
		return false;
	}
	due = keepalive_due_locked(c);
	if (due < 0 || now < due)
		return false;
	keepalive_push_locked(c, now);
	return true;
}

/* Milliseconds until the library has something to do (-1: nothing). */
int semc_timeout_locked(struct semc *c, int64_t now)
{
	int64_t t = -1, due;

	if (c->closing)
		return -1;
	if ((due = keepalive_due_locked(c)) >= 0)
		t = due;
	if ((due = keepalive_dead_at_locked(c)) >= 0 && (t < 0 || due < t))
		t = due;
	if ((due = trust_end_locked(c)) >= 0 && (t < 0 || due < t))
		t = due;
	if (c->conn == NULL && c->reconnect && c->ever_connected && !c->connecting &&
	    (c->session != 0 || c->pending != NULL) && (t < 0 || c->next_retry < t))
		t = c->next_retry;
	if (t < 0)
		return -1;
	if (t <= now)
		return 0;
	return t - now > INT32_MAX ? INT32_MAX : (int)(t - now);
}
