/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/conn.c - libsemclient's connection: sockets, frames, request
 * multiplexing by id, the reader role, reconnection and session resume.
 *
 * Lock order: wlock before lock. Nobody holding `lock` takes `wlock`.
 * Callbacks and events are gathered in a struct semc_deliver while the lock
 * is held and delivered after it is dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"
#include "client/client-int.h"
#include "proto/frame.h"

#define SEMC_RBUF_MAX	(FRAME_HDR + FRAME_MAX_LIMIT)
#define SEMC_BACKOFF_MIN	50
#define SEMC_BACKOFF_MAX	1000
#define SEMC_BACKOFF_CLUSTER_MAX 200	/* every daemon of a list failed */

/* Allocate an unconnected handle. */
struct semc *semc_new(void)
{
	struct semc *c;
	pthread_condattr_t ca;

	c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	c->evq_tail = &c->evq;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->wlock, NULL);
	pthread_mutex_init(&c->tls_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	c->pid = getpid();
	atomic_init(&c->timeout_ms, 10000);
	atomic_init(&c->lease_ms, 0);
	c->reconnect = true;
	c->ka_want = true;
	c->ka_wake[0] = c->ka_wake[1] = -1;
	c->next_id = 1;
	return c;
}

/* Set the daemon's address, or a cluster's: a comma-separated list. */
int semc_set_address(struct semc *c, const char *address)
{
	struct semc_addr a[SEMC_MAX_ADDRS];
	char buf[4096], *item, *save = NULL;
	unsigned n = 0;

	if (semc_forked(c))
		return semc_fail(SEMC_E_NOT_SUPPORTED, "handle of another process");
	if (address == NULL || snprintf(buf, sizeof buf, "%s", address) >= (int)sizeof buf)
		return semc_fail(SEMC_E_ADDRESS, "bad server address '%s'", address ? address : "");
	for (item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
		if (n == SEMC_MAX_ADDRS)
			return semc_fail(SEMC_E_ADDRESS, "more than %d addresses in '%s'",
					 SEMC_MAX_ADDRS, address);
		if (semc_addr_parse(item, &a[n]) != 0)
			return semc_fail(SEMC_E_ADDRESS, "bad server address '%s'", item);
		n++;
	}
	if (n == 0)
		return semc_fail(SEMC_E_ADDRESS, "bad server address '%s'", address);
	pthread_mutex_lock(&c->lock);
	memcpy(c->addrs, a, n * sizeof a[0]);
	c->naddrs = n;
	c->cur = 0;
	c->addr = a[0];
	c->addr_set = true;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* Use addrs[i] from the next attempt on (lock held). */
static void addr_use_locked(struct semc *c, unsigned i)
{
	if (c->naddrs == 0 || i >= c->naddrs)
		return;
	c->cur = i;
	c->addr = c->addrs[i];
}

/* A Redirect names the leader: use it next if it is one of ours. */
static void addr_redirect_locked(struct semc *c, const Semd__Redirect *rd)
{
	struct semc_addr a;
	unsigned i;

	if (rd == NULL || rd->leader == NULL || rd->leader[0] == '\0' ||
	    semc_addr_parse(rd->leader, &a) != 0)
		return;
	for (i = 0; i < c->naddrs; i++) {
		if (strcmp(c->addrs[i].canon, a.canon) == 0) {
			addr_use_locked(c, i);
			return;
		}
	}
}

/* Replace *dst by a copy of s (NULL clears). */
static int str_set(char **dst, const char *s)
{
	char *d = NULL;

	if (s != NULL && (d = strdup(s)) == NULL)
		return SEMC_E_NOMEM;
	free(*dst);
	*dst = d;
	return 0;
}

/* Set the client name sent in Hello. */
int semc_set_client_name(struct semc *c, const char *name)
{
	int r;

	if (semc_forked(c))
		return SEMC_E_NOT_SUPPORTED;
	pthread_mutex_lock(&c->lock);
	r = str_set(&c->client_name, name);
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Ask for a session lease (0: none), from the next Hello on. */
void semc_set_lease(struct semc *c, uint32_t lease_ms)
{
	atomic_store(&c->lease_ms, lease_ms);
}

/* Set the reply timeout of ordinary requests. */
void semc_set_timeout(struct semc *c, int timeout_ms)
{
	atomic_store(&c->timeout_ms, timeout_ms > 0 ? timeout_ms : 10000);
}

/* Turn automatic reconnection on or off. */
void semc_set_reconnect(struct semc *c, bool on)
{
	if (semc_forked(c))
		return;
	pthread_mutex_lock(&c->lock);
	c->reconnect = on;
	pthread_mutex_unlock(&c->lock);
}

/* Whether sessions with a lease get the keepalive thread (default yes). */
void semc_set_keepalive_thread(struct semc *c, bool on)
{
	if (semc_forked(c))
		return;
	pthread_mutex_lock(&c->lock);
	c->ka_want = on;
	pthread_mutex_unlock(&c->lock);
	if (!on)
		semc_keepalive_stop(c);
}

/* Set the TLS files. */
int semc_set_tls(struct semc *c, const char *ca_file, const char *cert_file, const char *key_file)
{
	int r;

	if (semc_forked(c))
		return SEMC_E_NOT_SUPPORTED;
	if ((r = str_set(&c->tls_ca, ca_file)) != 0 ||
	    (r = str_set(&c->tls_cert, cert_file)) != 0 ||
	    (r = str_set(&c->tls_key, key_file)) != 0)
		return r;
	/* Sessions made with other files are not offered again. */
	semc_tls_sess_free(c);
	return 0;
}

/* Set the event callback. */
void semc_set_event_callback(struct semc *c, semc_event_fn fn, void *arg)
{
	if (semc_forked(c))
		return;
	pthread_mutex_lock(&c->lock);
	c->ev_fn = fn;
	c->ev_arg = arg;
	pthread_mutex_unlock(&c->lock);
}

/* The address in use. */
const char *semc_address(const struct semc *c)
{
	return c->addr.canon;
}

/* Drop a reference to a connection; the last one closes it. */
static void conn_put_locked(struct semc_conn *k)
{
	if (k == NULL || --k->refs > 0)
		return;
	if (k->ssl != NULL)
		SSL_free(k->ssl);
	if (k->fd >= 0)
		close(k->fd);
	pthread_mutex_destroy(&k->iolock);
	free(k);
}

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
static void event_push(struct semc *c, struct semc_deliver *d, enum semc_event_type type, int error,
		       const char *message, const struct semc_hold *h)
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
	d->events = false;
}

/* Free a queued event. */
static void evq_free(struct semc_evq *e)
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
			evq_free(e);
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
static struct semc_req *internal_push_locked(struct semc *c, Semd__Request *rq)
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

/* Queue giving back a permit nobody waits for any more. */
static void give_back_locked(struct semc *c, const char *name, uint64_t permit_id)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Up up = SEMD__UP__INIT;

	up.name = (char *)name;
	up.permit_id = permit_id;
	rq.op_case = SEMD__REQUEST__OP_UP;
	rq.up = &up;
	internal_push_locked(c, &rq);
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
static void pending_unlink_locked(struct semc *c, struct semc_req *r)
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

/* Finish a request with a reply or a client-side error. */
static void req_complete_locked(struct semc *c, struct semc_req *r, Semd__Reply *rp, int err,
				struct semc_deliver *d)
{
	pending_unlink_locked(c, r);
	if (rp != NULL && r->sent_at > c->lease_base)
		c->lease_base = r->sent_at;	/* any answer: the daemon heard us */
	if (r->keepalive)
		c->ka_out = false;
	if (rp != NULL && r->resent && resend_succeeded(r, rp->code))
		rp->code = SEMD__CODE__OK;	/* error replies carry no body */
	r->done = true;
	r->reply = rp;
	r->error = rp ? semc_code_error(rp->code) : err;
	if (r->internal && rp != NULL && rp->code == SEMD__CODE__OK &&
	    r->op == SEMD__REQUEST__OP_DOWN && rp->body_case == SEMD__REPLY__BODY_GRANT) {
		/* a grant for a down its caller gave up on: return it at once */
		give_back_locked(c, r->name, rp->grant->permit_id);
	} else if (rp != NULL && rp->code == SEMD__CODE__OK &&
		   rp->body_case == SEMD__REPLY__BODY_MULTI_GRANT) {
		/* a multi-name down: every name's hold, given back or kept */
		size_t i;

		for (i = 0; i < rp->multi_grant->n_grants; i++) {
			Semd__NamedGrant *ng = rp->multi_grant->grants[i];
			Semd__Grant g = SEMD__GRANT__INIT;

			if (r->internal) {
				give_back_locked(c, ng->name, ng->permit_id);
				continue;
			}
			g.permit_id = ng->permit_id;
			g.token = ng->token;
			g.n = ng->n;
			if (r->lease_ms == 0)
				hold_add_locked(c, ng->name, &g);
		}
	} else if (rp != NULL && rp->code == SEMD__CODE__OK && !r->internal) {
		if (r->op == SEMD__REQUEST__OP_DOWN && r->lease_ms == 0 &&
		    rp->body_case == SEMD__REPLY__BODY_GRANT)
			hold_add_locked(c, r->name, rp->grant);
		else if (r->op == SEMD__REQUEST__OP_UP)
			hold_drop_locked(c, r->name, r->permit_id,
					 rp->body_case == SEMD__REPLY__BODY_RELEASED &&
					 rp->released->n ? rp->released->n : r->n);
	}
	if (r->internal) {
		semc_req_free(r);
	} else if (r->async) {
		r->next = d->done;
		d->done = r;
	}
	pthread_cond_broadcast(&c->cond);
}

/* The session is gone: report every session-bound hold as lost and fail
 * the requests that were sent on it. */
static void session_lost_locked(struct semc *c, int err, const char *why, struct semc_deliver *d)
{
	struct semc_hold *h, *hn;
	struct semc_req *r, *rn;

	for (h = c->holds; h != NULL; h = hn) {
		hn = h->next;
		event_push(c, d, SEMC_EV_HOLD_LOST, err, why, h);
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
			req_complete_locked(c, r, NULL, SEMC_E_DISCONNECTED, d);
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
static void conn_broken_locked(struct semc *c, struct semc_conn *k, const char *why,
			       struct semc_deliver *d)
{
	if (c->conn != k || k == NULL)
		return;
	c->conn = NULL;
	shutdown(k->fd, SHUT_RDWR);
	conn_put_locked(k);
	if (!c->closing)
		event_push(c, d, SEMC_EV_DISCONNECTED, SEMC_E_DISCONNECTED, why, NULL);
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
		session_lost_locked(c, SEMC_E_DISCONNECTED, "the connection closed (over a UNIX "
				    "socket that ends the session)", d);
	} else {
		session_lost_locked(c, SEMC_E_DISCONNECTED, why, d);
	}
	pthread_cond_broadcast(&c->cond);
}

/* When the client-side lease of the session ends (monotonic ms; -1: no
 * lease). The daemon counts lease_ms from the last frame it received, which
 * left here no earlier than lease_base; under a clock-rate difference below
 * D, lease * (1 - D) here is at most lease there, and M covers the wake-up
 * of whoever acts on the end (a thread, an event loop, semctl's SIGKILL)
 * and the daemon's clock read before the read that brought the frame. */
int64_t semc_lease_end_locked(const struct semc *c)
{
	int64_t lease = c->granted_lease, margin;

	if (c->session == 0 || lease == 0 || c->lease_base == 0)
		return -1;
	margin = lease / 20 > SEMC_LEASE_MARGIN_MIN ? lease / 20 : SEMC_LEASE_MARGIN_MIN;
	return c->lease_base + lease - lease * SEMC_LEASE_DRIFT_PPM / 1000000 - margin;
}

/* Give the session up once its client-side lease has ended: every
 * session-bound hold is lost (SEMC_E_HOLD_LOST) before the daemon can
 * grant it again. A connection still open is cut, so that nothing more is
 * said on the session; the next call starts a new one. */
static void lease_check_locked(struct semc *c, int64_t now, struct semc_deliver *d)
{
	int64_t end = semc_lease_end_locked(c);
	struct semc_conn *k = c->conn;

	if (end < 0 || now < end)
		return;
	if (k != NULL) {
		c->conn = NULL;
		shutdown(k->fd, SHUT_RDWR);
		conn_put_locked(k);
		event_push(c, d, SEMC_EV_DISCONNECTED, SEMC_E_HOLD_LOST,
			   "no answer from the server within the session's lease", NULL);
		session_lost_locked(c, SEMC_E_HOLD_LOST,
				    "no answer from the server within the session's lease", d);
	} else {
		session_lost_locked(c, SEMC_E_HOLD_LOST,
				    "the session's lease ran out while disconnected", d);
	}
}

/* A Ping of the library's own, to keep the session alive. */
static void keepalive_push_locked(struct semc *c, int64_t now)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Ping op = SEMD__PING__INIT;
	struct semc_req *r;

	rq.op_case = SEMD__REQUEST__OP_PING;
	rq.ping = &op;
	if ((r = internal_push_locked(c, &rq)) == NULL)
		return;
	r->keepalive = true;
	c->ka_out = true;
	c->ka_sent = now;
}

/* When the next keepalive ping is due: a third of the lease after the
 * latest answered request or the latest ping (-1: none is due). */
static int64_t keepalive_due_locked(const struct semc *c)
{
	int64_t base = c->lease_base > c->ka_sent ? c->lease_base : c->ka_sent;

	if (c->conn == NULL || c->session == 0 || c->granted_lease == 0 || c->ka_out)
		return -1;
	return base + c->granted_lease / 3;
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

	lease_check_locked(c, now, d);
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
	if ((due = semc_lease_end_locked(c)) >= 0 && (t < 0 || due < t))
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

/* Wait for fd to become ready for events until deadline (-1: forever). */
static int fd_wait(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int64_t left;
	int r;

	for (;;) {
		left = deadline < 0 ? -1 : deadline - semc_now_ms();
		if (deadline >= 0 && left < 0)
			left = 0;
		r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r == 0 && deadline >= 0 && semc_now_ms() >= deadline)
			return -ETIMEDOUT;
	}
}

/* Read what the socket has (never blocks): n, 0 at EOF, -1 with errno. */
static ssize_t io_read(struct semc_conn *k, void *buf, size_t len)
{
	if (k->ssl != NULL)
		return semc_tls_read(k, buf, len);
	return recv(k->fd, buf, len, MSG_DONTWAIT);
}

/* Write all of buf before deadline. */
static int io_write_all(struct semc_conn *k, const uint8_t *buf, size_t len, int64_t deadline)
{
	ssize_t n;
	int want;

	while (len > 0) {
		want = POLLOUT;
		if (k->ssl != NULL)
			n = semc_tls_write(k, buf, len, &want);
		else
			n = send(k->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (fd_wait(k->fd, (short)want, deadline) != 0)
				return -ETIMEDOUT;
			continue;
		}
		return n < 0 ? -errno : -EPIPE;
	}
	return 0;
}

/* Read exactly len bytes before deadline (handshake only). */
static int io_read_exact(struct semc_conn *k, uint8_t *buf, size_t len, int64_t deadline)
{
	ssize_t n;

	while (len > 0) {
		n = io_read(k, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (fd_wait(k->fd, POLLIN, deadline) != 0)
			return -ETIMEDOUT;
	}
	return 0;
}

/* Finish a non-blocking connect() before deadline. */
static int sock_finish_connect(int fd, int64_t deadline)
{
	int err = 0;
	socklen_t el = sizeof err;
	int r;

	if ((r = fd_wait(fd, POLLOUT, deadline)) != 0)
		return r;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
		return -errno;
	return -err;
}

/* Open a socket to the configured address; returns the fd or an error. */
static int sock_connect(struct semc *c, int64_t deadline)
{
	struct addrinfo hints = { 0 }, *res = NULL, *ai;
	char port[16];
	int fd = -1, r, one = 1;

	if (c->addr.kind == SEMC_ADDR_UNIX) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		memcpy(sun.sun_path, c->addr.path, strlen(c->addr.path) + 1);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return semc_fail(SEMC_E_SYSTEM, "socket: %s", strerror(errno));
		r = connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0 ? 0 : -errno;
		if (r == -EINPROGRESS || r == -EAGAIN)
			r = sock_finish_connect(fd, deadline);
		if (r != 0) {
			close(fd);
			return semc_fail(SEMC_E_CONNECT, "cannot connect to %s: %s",
					 c->addr.canon, strerror(-r));
		}
		return fd;
	}
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_family = AF_UNSPEC;
	snprintf(port, sizeof port, "%u", c->addr.port);
	if ((r = getaddrinfo(c->addr.host, port, &hints, &res)) != 0)
		return semc_fail(SEMC_E_CONNECT, "cannot resolve %s: %s", c->addr.host,
				 gai_strerror(r));
	r = -ECONNREFUSED;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		r = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : -errno;
		if (r == -EINPROGRESS)
			r = sock_finish_connect(fd, deadline);
		if (r == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return semc_fail(SEMC_E_CONNECT, "cannot connect to %s: %s", c->addr.canon,
				 strerror(-r));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
	return fd;
}

/* Send one request on a fresh connection and read the one reply to it. */
static int frame_exchange(struct semc *c, struct semc_conn *k, int64_t deadline,
			  Semd__Request *rq, Semd__Reply **out, int64_t *sent_at,
			  const char *what)
{
	uint8_t hdr[FRAME_HDR], *buf = NULL;
	size_t len;
	int r;

	*out = NULL;
	len = semd__request__get_packed_size(rq);
	if ((buf = malloc(FRAME_HDR + len)) == NULL)
		return semc_fail(SEMC_E_NOMEM, NULL);
	frame_put_header(buf, (uint32_t)len);
	semd__request__pack(rq, buf + FRAME_HDR);
	*sent_at = semc_now_ms();
	r = io_write_all(k, buf, FRAME_HDR + len, deadline);
	free(buf);
	buf = NULL;
	if (r != 0)
		goto fail;
	if ((r = io_read_exact(k, hdr, FRAME_HDR, deadline)) != 0)
		goto fail;
	len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
	if (len == 0 || len > FRAME_MAX_LIMIT)
		return semc_fail(SEMC_E_PROTOCOL, "bad frame from %s", c->addr.canon);
	if ((buf = malloc(len)) == NULL)
		return semc_fail(SEMC_E_NOMEM, NULL);
	if ((r = io_read_exact(k, buf, len, deadline)) != 0)
		goto fail;
	*out = semd__reply__unpack(NULL, len, buf);
	free(buf);
	if (*out == NULL)
		return semc_fail(SEMC_E_PROTOCOL, "undecodable reply from %s", c->addr.canon);
	return 0;
fail:
	free(buf);
	if (r == -ETIMEDOUT)
		return semc_fail(SEMC_E_NO_REPLY, "no answer to %s from %s", what,
				 c->addr.canon);
	return semc_fail(SEMC_E_CONNECT, "%s with %s failed: %s", what, c->addr.canon,
			 strerror(-r));
}

/* Send Hello on a fresh connection and read its reply. */
static int hello_exchange(struct semc *c, struct semc_conn *k, int64_t deadline,
			  uint64_t resume, const uint8_t *secret, size_t secret_len,
			  Semd__Reply **out, int64_t *sent_at)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Hello h = SEMD__HELLO__INIT;
	char host[256] = "", name[256];

	gethostname(host, sizeof host - 1);
	h.version = 1;
	h.host = host;
	h.pid = (uint32_t)getpid();
	h.lease_ms = atomic_load(&c->lease_ms);
	h.resume_session = resume;
	h.resume_secret.data = (uint8_t *)secret;
	h.resume_secret.len = secret_len;
	rq.op_case = SEMD__REQUEST__OP_HELLO;
	rq.hello = &h;
	pthread_mutex_lock(&c->lock);
	rq.id = c->next_id++;
	snprintf(name, sizeof name, "%s", c->client_name ? c->client_name : "libsemclient");
	pthread_mutex_unlock(&c->lock);
	h.client_name = name;
	return frame_exchange(c, k, deadline, &rq, out, sent_at, "the handshake");
}

/*
 * A cluster's status from the first daemon of the list that answers,
 * without a session (a node that does not lead answers it too).
 */
static int addr_default(struct semc *c);

int semc_cluster_status_raw(struct semc *c, Semd__Reply **out, int timeout_ms)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Cluster cl = SEMD__CLUSTER__INIT;
	struct semc_conn *k;
	int64_t deadline, sent_at;
	unsigned i, n;
	int fd, r = SEMC_E_CONNECT;

	*out = NULL;
	if ((r = addr_default(c)) != 0)
		return r;
	for (i = 0; i < c->naddrs; i++)
		if (c->addrs[i].kind == SEMC_ADDR_TLS && (r = semc_tls_setup(c)) != 0)
			return r;
	r = SEMC_E_CONNECT;
	cl.action = SEMD__CLUSTER__ACTION__STATUS;
	rq.op_case = SEMD__REQUEST__OP_CLUSTER;
	rq.cluster = &cl;
	rq.id = 1;
	n = c->naddrs > 0 ? c->naddrs : 1;
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&c->lock);
		addr_use_locked(c, (c->cur + (i > 0)) % (c->naddrs ? c->naddrs : 1));
		pthread_mutex_unlock(&c->lock);
		deadline = semc_now_ms() + (timeout_ms > 0 ? timeout_ms : 5000);
		if ((fd = sock_connect(c, deadline)) < 0) {
			r = fd;
			continue;
		}
		k = calloc(1, sizeof *k);
		if (k == NULL) {
			close(fd);
			return semc_fail(SEMC_E_NOMEM, NULL);
		}
		k->fd = fd;
		k->refs = 1;
		pthread_mutex_init(&k->iolock, NULL);
		r = 0;
		if (c->addr.kind == SEMC_ADDR_TLS)
			r = semc_tls_handshake(c, k, deadline);
		if (r == 0)
			r = frame_exchange(c, k, deadline, &rq, out, &sent_at,
					   "the cluster status");
		pthread_mutex_lock(&c->lock);
		conn_put_locked(k);
		pthread_mutex_unlock(&c->lock);
		if (r == 0)
			return 0;
	}
	return r;
}

/* Queue a Detach (semc_detach(), sent again on every resume). */
static void detach_push_locked(struct semc *c)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Detach op = SEMD__DETACH__INIT;

	rq.op_case = SEMD__REQUEST__OP_DETACH;
	rq.detach = &op;
	internal_push_locked(c, &rq);
}

/* Make the connection and session live (after a successful Hello sent at
 * sent_at). */
static void conn_publish_locked(struct semc *c, struct semc_conn *k, const Semd__HelloReply *hr,
				int64_t sent_at, struct semc_deliver *d)
{
	bool again = c->ever_connected;

	if (!hr->resumed && c->session != 0)
		session_lost_locked(c, SEMC_E_SESSION_EXPIRED, "the session could not be resumed", d);
	k->gen = ++c->gen;
	c->conn = k;
	c->session = hr->session;
	c->secret_len = hr->secret.len <= sizeof c->secret ? hr->secret.len : 0;
	memcpy(c->secret, hr->secret.data, c->secret_len);
	c->granted_lease = hr->lease_ms;
	c->resumed = hr->resumed;
	c->server_durable = hr->durable;
	str_set(&c->principal, hr->principal);
	str_set(&c->server, hr->server);
	c->lease_base = sent_at;
	c->ka_sent = 0;
	c->backoff = 0;
	c->ever_connected = true;
	if (c->detach && hr->resumed)
		detach_push_locked(c);
	if (hr->lease_ms > 0 && c->ka_want && !c->ka_running)
		semc_keepalive_start_locked(c);
	if (again)
		event_push(c, d, hr->resumed ? SEMC_EV_RESUMED : SEMC_EV_RECONNECTED, 0,
			   hr->resumed ? "session resumed" : "new session", NULL);
	pthread_cond_broadcast(&c->cond);
}

/* Connect, handshake (resuming the session if there is one) and publish. */
static int conn_open(struct semc *c, int64_t deadline, struct semc_deliver *d)
{
	struct semc_conn *k = NULL;
	Semd__Reply *rp = NULL;
	uint8_t secret[sizeof c->secret];
	size_t secret_len;
	uint64_t resume;
	int64_t sent_at = 0;
	int fd, r;

again:
	pthread_mutex_lock(&c->lock);
	resume = c->granted_lease > 0 ? c->session : 0;
	secret_len = c->secret_len;
	memcpy(secret, c->secret, secret_len);
	pthread_mutex_unlock(&c->lock);

	if ((fd = sock_connect(c, deadline)) < 0)
		return fd;
	k = calloc(1, sizeof *k);
	if (k == NULL) {
		close(fd);
		return semc_fail(SEMC_E_NOMEM, NULL);
	}
	k->fd = fd;
	k->refs = 1;
	pthread_mutex_init(&k->iolock, NULL);
	if (c->addr.kind == SEMC_ADDR_TLS && (r = semc_tls_handshake(c, k, deadline)) != 0)
		goto fail;
	if ((r = hello_exchange(c, k, deadline, resume, secret, secret_len, &rp, &sent_at)) != 0)
		goto fail;
	/* 0 comes with rp set; errors are semc_fail()'s non-zero first argument:
	 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
	if (rp->code == SEMD__CODE__UNAVAILABLE) {
		/* Not the leader (a Redirect may say which is): another one next. */
		pthread_mutex_lock(&c->lock);
		if (rp->body_case == SEMD__REPLY__BODY_REDIRECT)
			addr_redirect_locked(c, rp->redirect);
		pthread_mutex_unlock(&c->lock);
		r = semc_fail(SEMC_E_UNAVAILABLE, "%s: %s", c->addr.canon,
			      *rp->message ? rp->message : "unavailable");
		goto fail;
	}
	if (rp->code != SEMD__CODE__OK && resume != 0) {
		/* The daemon forgot us (restart, lease over): start afresh. */
		pthread_mutex_lock(&c->lock);
		session_lost_locked(c, semc_code_error(rp->code),
				    *rp->message ? rp->message : "session could not be resumed", d);
		pthread_mutex_unlock(&c->lock);
		semd__reply__free_unpacked(rp, NULL);
		rp = NULL;
		pthread_mutex_lock(&c->lock);
		conn_put_locked(k);
		pthread_mutex_unlock(&c->lock);
		goto again;
	}
	if (rp->code != SEMD__CODE__OK) {
		r = semc_fail(semc_code_error(rp->code), "%s refused the handshake: %s",
			      c->addr.canon, *rp->message ? rp->message :
			      semc_strerror(semc_code_error(rp->code)));
		goto fail;
	}
	if (rp->body_case != SEMD__REPLY__BODY_HELLO) {
		r = semc_fail(SEMC_E_PROTOCOL, "%s answered Hello without a HelloReply",
			      c->addr.canon);
		goto fail;
	}
	pthread_mutex_lock(&c->lock);
	if (c->closing) {
		pthread_mutex_unlock(&c->lock);
		r = semc_fail(SEMC_E_DISCONNECTED, "handle is closing");
		goto fail;
	}
	lease_check_locked(c, semc_now_ms(), d);
	if (rp->hello->resumed && c->session != resume) {
		/* The client-side lease ended during the handshake and the holds
		 * were reported lost: the daemon must not keep them for us. Close
		 * this connection; the next attempt starts a new session. */
		pthread_mutex_unlock(&c->lock);
		r = semc_fail(SEMC_E_SESSION_EXPIRED, "the session's lease ran out while resuming");
		goto fail;
	}
	conn_publish_locked(c, k, rp->hello, sent_at, d);
	pthread_mutex_unlock(&c->lock);
	semd__reply__free_unpacked(rp, NULL);
	return 0;
fail:
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	pthread_mutex_lock(&c->lock);
	conn_put_locked(k);
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Write every queued request not yet sent on the current connection.
 * block false (the keepalive thread): if another thread is writing, leave
 * it the work and return false; `flush_wanted`, set before trying, makes
 * that writer look again after it lets go of wlock, so nothing queued is
 * left behind. The keepalive thread never waits behind a slow write: it
 * must end the client-side lease on time. */
static bool flush_run(struct semc *c, bool block)
{
	struct semc_deliver d;
	struct semc_conn *k;
	struct semc_req *r;
	uint8_t *frame;
	size_t len;
	int rc;

	semc_deliver_init(&d);
	pthread_mutex_lock(&c->lock);
	c->flush_wanted = true;
	pthread_mutex_unlock(&c->lock);
again:
	if (block)
		pthread_mutex_lock(&c->wlock);
	else if (pthread_mutex_trylock(&c->wlock) != 0)
		return false;
	pthread_mutex_lock(&c->lock);
	c->flush_wanted = false;
	pthread_mutex_unlock(&c->lock);
	for (;;) {
		pthread_mutex_lock(&c->lock);
		k = c->conn;
		for (r = c->pending; k != NULL && r != NULL; r = r->next)
			if (r->sent_gen != k->gen)
				break;
		if (k == NULL || r == NULL) {
			pthread_mutex_unlock(&c->lock);
			break;
		}
		if (r->sent_gen != 0 && r->op == SEMD__REQUEST__OP_UP && r->permit_id == 0) {
			/* Ups are not idempotent: sent again, an up by count
			 * could give back a second permit. The outcome of the
			 * first is unknown, and the caller is told so. */
			req_complete_locked(c, r, NULL, SEMC_E_DISCONNECTED, &d);
			pthread_mutex_unlock(&c->lock);
			continue;
		}
		if (r->sent_gen != 0)
			r->resent = true;
		r->sent_gen = k->gen;
		r->sent_at = semc_now_ms();
		len = r->frame_len;
		frame = malloc(len);
		if (frame == NULL) {
			req_complete_locked(c, r, NULL, SEMC_E_NOMEM, &d);
			pthread_mutex_unlock(&c->lock);
			continue;
		}
		memcpy(frame, r->frame, len);
		k->refs++;
		pthread_mutex_unlock(&c->lock);
		rc = io_write_all(k, frame, len, semc_now_ms() + atomic_load(&c->timeout_ms));
		free(frame);
		pthread_mutex_lock(&c->lock);
		if (rc != 0)
			conn_broken_locked(c, k, rc == -ETIMEDOUT ? "write timed out" :
					   "write failed", &d);
		/* our reference (refs++ above) kept k alive; the analyzer loses
		 * the count: NOLINTNEXTLINE(clang-analyzer-unix.Malloc) */
		conn_put_locked(k);
		pthread_mutex_unlock(&c->lock);
		if (rc != 0)
			break;
	}
	pthread_mutex_unlock(&c->wlock);
	pthread_mutex_lock(&c->lock);
	if (c->flush_wanted) {
		/* queued while we wrote, by a thread that did not wait */
		pthread_mutex_unlock(&c->lock);
		block = true;
		goto again;
	}
	pthread_mutex_unlock(&c->lock);
	semc_deliver_run(c, &d);
	return true;
}

/* Write every queued request not yet sent on the current connection. */
void semc_flush(struct semc *c)
{
	flush_run(c, true);
}

/* The same, unless another thread is writing (then it sends ours). */
void semc_flush_try(struct semc *c)
{
	flush_run(c, false);
}

/* A hold of the session is gone (a HoldLost notice): take it out of the
 * bookkeeping and report it, saying why. Holds the library does not track
 * (given back meanwhile, or never the caller's) are not reported. */
static void hold_lost_locked(struct semc *c, const Semd__Reply *rp, struct semc_deliver *d)
{
	const Semd__HoldLost *hl = rp->hold_lost;
	struct semc_hold **pp, *h, ev;
	const char *why;
	int err;

	for (pp = &c->holds; (h = *pp) != NULL; pp = &h->next)
		if (h->permit_id == hl->permit_id)
			break;
	if (h == NULL)
		return;
	*pp = h->next;
	c->lost_ids[c->lost_next++ % 64] = h->permit_id;
	switch (rp->code) {
	case SEMD__CODE__CANCELLED:
		err = SEMC_E_CANCELLED;
		why = "the hold was force-released or its semaphore deleted";
		break;
	case SEMD__CODE__SESSION_EXPIRED:
		err = SEMC_E_SESSION_EXPIRED;
		why = "the session's lease ran out on the server";
		break;
	case SEMD__CODE__UNAVAILABLE:
		err = SEMC_E_UNAVAILABLE;
		why = "the server is shutting down";
		break;
	default:
		err = rp->code == SEMD__CODE__OK ? SEMC_E_HOLD_LOST : semc_code_error(rp->code);
		why = "the server took the hold back";
		break;
	}
	ev = *h;
	ev.name = hl->name != NULL && *hl->name != '\0' ? hl->name : h->name;
	if (hl->token != 0)
		ev.token = hl->token;
	if (hl->n != 0)
		ev.n = hl->n;
	event_push(c, d, SEMC_EV_HOLD_LOST, err, rp->message != NULL && *rp->message != '\0' ?
		   rp->message : why, &ev);
	free(h->name);
	free(h);
}

/* Hand a decoded reply to its request (or report a notice). */
static void dispatch_locked(struct semc *c, Semd__Reply *rp, struct semc_deliver *d)
{
	struct semc_req *r;

	if (rp->id == 0 && rp->body_case == SEMD__REPLY__BODY_HOLD_LOST) {
		hold_lost_locked(c, rp, d);
		semd__reply__free_unpacked(rp, NULL);
		return;
	}
	if (rp->id == 0 && rp->body_case == SEMD__REPLY__BODY_WATCH_EVENT) {
		semc_watch_push_locked(c, rp, d);	/* watch.c: takes rp */
		return;
	}
	if (rp->id == 0) {
		/* A node that stopped leading says which one leads now. */
		if (rp->body_case == SEMD__REPLY__BODY_REDIRECT)
			addr_redirect_locked(c, rp->redirect);
		event_push(c, d, SEMC_EV_NOTICE, semc_code_error(rp->code), rp->message, NULL);
		semd__reply__free_unpacked(rp, NULL);
		return;
	}
	for (r = c->pending; r != NULL; r = r->next)
		if (r->id == rp->id)
			break;
	if (r == NULL) {
		/* a late answer to a request given up on: nothing holds it */
		semd__reply__free_unpacked(rp, NULL);
		return;
	}
	req_complete_locked(c, r, rp, 0, d);
}

/* As the reader: wait up to timeout_ms for input on k (or for wake_fd),
 * decode and dispatch every whole frame. Returns replies dispatched or a
 * negative error. */
static int reader_run(struct semc *c, struct semc_conn *k, int timeout_ms, int wake_fd,
		      struct semc_deliver *d)
{
	const char *why = NULL;
	Semd__Reply *rp;
	size_t plen;
	ssize_t n;
	int count = 0, r;

	if (c->rbuf_gen != k->gen) {
		c->rlen = 0;
		c->rbuf_gen = k->gen;
	}
	if (timeout_ms != 0 && (k->ssl == NULL || SSL_pending(k->ssl) == 0)) {
		struct pollfd p[2] = { { .fd = k->fd, .events = POLLIN },
				       { .fd = wake_fd, .events = POLLIN } };

		if (poll(p, wake_fd >= 0 ? 2 : 1, timeout_ms) <= 0 || p[0].revents == 0)
			return 0;
	}
	for (;;) {
		if (c->rcap - c->rlen < 4096) {
			size_t ncap = c->rcap ? c->rcap * 2 : 16384;
			uint8_t *nb;

			if (ncap > SEMC_RBUF_MAX + 4096)
				ncap = SEMC_RBUF_MAX + 4096;
			if (ncap <= c->rcap || (nb = realloc(c->rbuf, ncap)) == NULL) {
				why = "out of memory for a reply";
				break;
			}
			c->rbuf = nb;
			c->rcap = ncap;
		}
		n = io_read(k, c->rbuf + c->rlen, c->rcap - c->rlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			why = n == 0 ? "the server closed the connection" : "read failed";
			break;
		}
		c->rlen += (size_t)n;
		while ((r = frame_peek(c->rbuf, c->rlen, FRAME_MAX_LIMIT, &plen)) == 1) {
			rp = semd__reply__unpack(NULL, plen, c->rbuf + FRAME_HDR);
			memmove(c->rbuf, c->rbuf + FRAME_HDR + plen, c->rlen - FRAME_HDR - plen);
			c->rlen -= FRAME_HDR + plen;
			if (rp == NULL) {
				why = "undecodable reply";
				break;
			}
			pthread_mutex_lock(&c->lock);
			dispatch_locked(c, rp, d);
			pthread_mutex_unlock(&c->lock);
			count++;
		}
		if (r < 0)
			why = "oversized reply frame";
		if (why != NULL)
			break;
	}
	if (why == NULL)
		return count;
	pthread_mutex_lock(&c->lock);
	conn_broken_locked(c, k, why, d);
	pthread_mutex_unlock(&c->lock);
	return SEMC_E_DISCONNECTED;
}

/* Take the reader role for one turn (called and returns with lock held);
 * wake_fd (-1: none) ends the wait early. */
int semc_reader_turn_locked(struct semc *c, int timeout_ms, int wake_fd)
{
	struct semc_deliver d;
	struct semc_conn *k = c->conn;
	int n;

	semc_deliver_init(&d);
	k->refs++;
	c->reading = true;
	pthread_mutex_unlock(&c->lock);
	n = reader_run(c, k, timeout_ms, wake_fd, &d);
	pthread_mutex_lock(&c->lock);
	c->reading = false;
	/* our reference (refs++ above) kept k alive; the analyzer loses
	 * the count: NOLINTNEXTLINE(clang-analyzer-unix.Malloc) */
	conn_put_locked(k);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	semc_deliver_run(c, &d);
	if (wake_fd >= 0)
		semc_flush_try(c);	/* the keepalive thread */
	else
		semc_flush(c);
	pthread_mutex_lock(&c->lock);
	return n;
}

/*
 * An attempt failed: with several daemons, the next one at once (a Redirect
 * may have chosen it), backing off only once every one failed in a row
 * (and less: a cluster electing a leader is back within a second);
 * with one daemon, back off.
 */
static void addr_failed_locked(struct semc *c, unsigned prev)
{
	int64_t now = semc_now_ms();

	c->round_fails++;
	if (c->naddrs > 1) {
		if (c->cur == prev)	/* no Redirect chose one */
			addr_use_locked(c, (c->cur + 1) % c->naddrs);
		if (c->round_fails < c->naddrs) {
			c->next_retry = now;
			return;
		}
		c->round_fails = 0;
		c->backoff = c->backoff ? c->backoff * 2 : SEMC_BACKOFF_MIN;
		if (c->backoff > SEMC_BACKOFF_CLUSTER_MAX)
			c->backoff = SEMC_BACKOFF_CLUSTER_MAX;
		c->next_retry = now + c->backoff;
		return;
	}
	c->backoff = c->backoff ? c->backoff * 2 : SEMC_BACKOFF_MIN;
	if (c->backoff > SEMC_BACKOFF_MAX)
		c->backoff = SEMC_BACKOFF_MAX;
	c->next_retry = now + c->backoff;
}

/* Try to (re)connect if nobody else is and the back-off allows. */
int semc_conn_try(struct semc *c, int64_t deadline)
{
	struct semc_deliver d;
	int64_t now = semc_now_ms(), dl, end;
	unsigned tried;
	int r;

	semc_deliver_init(&d);
	pthread_mutex_lock(&c->lock);
	lease_check_locked(c, now, &d);
	if (c->conn != NULL || c->connecting || c->closing || now < c->next_retry) {
		pthread_mutex_unlock(&c->lock);
		semc_deliver_run(c, &d);
		return 0;
	}
	c->connecting = true;
	dl = now + atomic_load(&c->timeout_ms);
	if (deadline >= 0 && deadline < dl)
		dl = deadline;
	/* a resume that cannot finish before the client-side lease ends is
	 * of no use: the holds are reported lost then */
	if ((end = semc_lease_end_locked(c)) >= 0 && end < dl)
		dl = end;
	if (dl < now + 100)
		dl = now + 100;
	tried = c->cur;
	pthread_mutex_unlock(&c->lock);
	r = conn_open(c, dl, &d);
	pthread_mutex_lock(&c->lock);
	c->connecting = false;
	if (r != 0) {
		now = semc_now_ms();
		addr_failed_locked(c, tried);
		lease_check_locked(c, now, &d);
	} else {
		c->round_fails = 0;
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	semc_deliver_run(c, &d);
	if (r == 0)
		semc_flush(c);
	return r;
}

/* Resolve the address (SEMD_SERVER or the default) if none was set. */
static int addr_default(struct semc *c)
{
	const char *env = getenv("SEMD_SERVER");

	if (c->addr_set)
		return 0;
	if (env != NULL && *env != '\0')
		return semc_set_address(c, env);
	return semc_set_address(c, "unix:" SEMC_DEFAULT_UNIX);
}

/* Connect and say Hello. */
int semc_connect(struct semc *c, int timeout_ms)
{
	struct semc_deliver d;
	int64_t deadline, wait;
	unsigned i, tried;
	bool tls;
	int r;

	if (c == NULL)
		return SEMC_E_ARG;
	semc_clear_message();
	if (semc_forked(c))
		return semc_fail(SEMC_E_NOT_SUPPORTED, "the handle belongs to process %d", (int)c->pid);
	if ((r = addr_default(c)) != 0)
		return r;
	for (i = 0, tls = false; i < c->naddrs; i++)
		tls = tls || c->addrs[i].kind == SEMC_ADDR_TLS;
	if (tls && (r = semc_tls_setup(c)) != 0)
		return r;
	deadline = semc_now_ms() + (timeout_ms >= 0 ? timeout_ms : atomic_load(&c->timeout_ms));
	semc_deliver_init(&d);
	pthread_mutex_lock(&c->lock);
	if (c->conn != NULL || c->connecting) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	c->connecting = true;
	pthread_mutex_unlock(&c->lock);
	/* A cluster: each daemon in turn (a Redirect goes to the leader), until one serves. */
	for (;;) {
		pthread_mutex_lock(&c->lock);
		tried = c->cur;
		pthread_mutex_unlock(&c->lock);
		r = conn_open(c, deadline, &d);
		if (r == 0 || c->naddrs <= 1)
			break;
		pthread_mutex_lock(&c->lock);
		addr_failed_locked(c, tried);
		wait = c->next_retry - semc_now_ms();
		pthread_mutex_unlock(&c->lock);
		if (semc_now_ms() + (wait > 0 ? wait : 0) >= deadline)
			break;
		if (wait > 0)
			usleep((useconds_t)wait * 1000);
	}
	pthread_mutex_lock(&c->lock);
	c->connecting = false;
	if (r == 0)
		c->round_fails = 0;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	semc_deliver_run(c, &d);
	if (r == 0)
		semc_flush(c);
	return r;
}

/* The handshake's result. */
int semc_session(struct semc *c, struct semc_session *out)
{
	int r;

	memset(out, 0, sizeof *out);
	out->principal = "";
	out->server = "";
	if (semc_forked(c))
		return SEMC_E_NOT_SUPPORTED;
	pthread_mutex_lock(&c->lock);
	out->session = c->session;
	out->lease_ms = c->granted_lease;
	out->principal = c->principal ? c->principal : "";
	out->server = c->server ? c->server : "";
	out->resumed = c->resumed;
	r = c->conn != NULL ? 0 : SEMC_E_DISCONNECTED;
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Queue r and write it if connected. */
int semc_submit(struct semc *c, struct semc_req *r)
{
	struct semc_req **pp;

	if (semc_forked(c)) {
		/* a constant, as below: the analyzer must see r was not queued */
		semc_fail(SEMC_E_NOT_SUPPORTED, "the handle belongs to process %d; a forked "
			  "child needs a handle of its own", (int)c->pid);
		return SEMC_E_NOT_SUPPORTED;
	}
	pthread_mutex_lock(&c->lock);
	if (c->closing || (c->conn == NULL && (!c->reconnect || !c->ever_connected))) {
		pthread_mutex_unlock(&c->lock);
		/* semc_fail() returns its argument, but the analyzer cannot see
		 * that from here and would take a 0 to mean r was queued */
		semc_fail(SEMC_E_DISCONNECTED, "not connected to %s",
			  c->addr.canon[0] ? c->addr.canon : "a server");
		return SEMC_E_DISCONNECTED;
	}
	for (pp = &c->pending; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = r;
	r->next = NULL;
	pthread_mutex_unlock(&c->lock);
	semc_flush(c);
	return 0;
}

/* Wait for r's reply until deadline (-1: forever), reading or reconnecting
 * when it is this thread's turn. r is off the pending list on return. */
int semc_wait(struct semc *c, struct semc_req *r, int64_t deadline, bool *ghost)
{
	struct semc_deliver d;
	struct timespec ts;
	int64_t now;
	int slice;

	semc_deliver_init(&d);
	*ghost = false;
	pthread_mutex_lock(&c->lock);
	while (!r->done) {
		int due;

		now = semc_now_ms();
		if (semc_duties_locked(c, now, &d) || d.events || d.done != NULL) {
			/* deliver and send what the duties queued */
			pthread_mutex_unlock(&c->lock);
			semc_deliver_run(c, &d);
			semc_flush(c);
			pthread_mutex_lock(&c->lock);
		}
		if (r->done)
			break;
		if (deadline >= 0 && now >= deadline) {
			if ((r->op == SEMD__REQUEST__OP_DOWN ||
			     r->op == SEMD__REQUEST__OP_DOWN_MULTI) && r->sent_gen != 0) {
				/* Keep it queued as the library's own: a late grant is
				 * given back, and the daemon is asked to cancel. */
				Semd__Request rq = SEMD__REQUEST__INIT;
				Semd__Cancel cn = SEMD__CANCEL__INIT;

				r->internal = true;
				*ghost = true;
				cn.request_id = r->id;
				rq.op_case = SEMD__REQUEST__OP_CANCEL;
				rq.cancel = &cn;
				internal_push_locked(c, &rq);
			} else {
				pending_unlink_locked(c, r);
				r->done = true;
			}
			r->error = SEMC_E_NO_REPLY;
			pthread_mutex_unlock(&c->lock);
			semc_flush(c);
			return semc_fail(SEMC_E_NO_REPLY, "no reply from %s in time", c->addr.canon);
		}
		slice = 1000;
		if (deadline >= 0 && deadline - now < slice)
			slice = (int)(deadline - now);
		if ((due = semc_timeout_locked(c, now)) >= 0 && due < slice)
			slice = due;
		if (c->conn != NULL && !c->reading) {
			semc_reader_turn_locked(c, slice, -1);
			continue;
		}
		if (c->conn == NULL) {
			if (r->done)
				break;
			if (!c->reconnect || c->closing) {
				req_complete_locked(c, r, NULL, SEMC_E_DISCONNECTED, &d);
				break;
			}
			if (!c->connecting && now >= c->next_retry) {
				int rc;

				pthread_mutex_unlock(&c->lock);
				semc_deliver_run(c, &d);
				rc = semc_conn_try(c, deadline);
				pthread_mutex_lock(&c->lock);
				/* nothing to resume: no point waiting for a
				 * server that is not there; say why at once */
				if (rc < 0 && c->conn == NULL && c->session == 0 && !r->done)
					req_complete_locked(c, r, NULL, rc, &d);
				continue;
			}
			if (!c->connecting && c->next_retry - now < slice)
				slice = (int)(c->next_retry - now);
		}
		if (slice < 1)
			slice = 1;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += slice / 1000;
		ts.tv_nsec += (long)(slice % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	}
	pthread_mutex_unlock(&c->lock);
	semc_deliver_run(c, &d);
	if (r->reply == NULL) {
		if (r->error == SEMC_E_DISCONNECTED)
			return semc_fail(r->error, "connection to %s lost", c->addr.canon);
		if (semc_last_message()[0] != '\0')
			return r->error;	/* the reconnect attempt said why */
		return semc_fail(r->error, NULL);
	}
	return semc_reply_error(r->reply);
}

/* Send rq and wait for its reply; extra_ms (< 0: forever) is added to the
 * handle's timeout. On success *out owns the reply. */
int semc_call(struct semc *c, Semd__Request *rq, int64_t extra_ms, Semd__Reply **out)
{
	struct semc_req *r;
	int64_t deadline;
	bool ghost;
	int err;

	*out = NULL;
	semc_clear_message();
	if ((r = semc_req_new(c, rq)) == NULL)
		return semc_fail(SEMC_E_NOMEM, NULL);
	if ((err = semc_submit(c, r)) != 0) {
		semc_req_free(r);
		return err;
	}
	deadline = extra_ms < 0 ? -1 : semc_now_ms() + atomic_load(&c->timeout_ms) + extra_ms;
	err = semc_wait(c, r, deadline, &ghost);
	if (ghost)
		return err;	/* abandoned down: the queue owns it now */
	*out = r->reply;
	r->reply = NULL;
	semc_req_free(r);
	return err;
}

/* Send rq; fn gets the outcome later. Returns the request id. */
int64_t semc_call_async(struct semc *c, Semd__Request *rq, semc_done_fn fn, void *arg)
{
	struct semc_req *r;
	int err;

	semc_clear_message();
	if ((r = semc_req_new(c, rq)) == NULL)
		return semc_fail(SEMC_E_NOMEM, NULL);
	r->fn = fn;
	r->arg = arg;
	r->async = true;
	if ((err = semc_submit(c, r)) != 0) {
		semc_req_free(r);
		return err;
	}
	return (int64_t)rq->id;
}

/* The socket to poll. */
int semc_fd(struct semc *c)
{
	int fd;

	if (semc_forked(c))
		return -1;
	pthread_mutex_lock(&c->lock);
	fd = c->conn ? c->conn->fd : -1;
	pthread_mutex_unlock(&c->lock);
	return fd;
}

/* Non-blocking: read and dispatch what is there; reconnect if due. */
int semc_process(struct semc *c)
{
	struct semc_deliver d;
	bool queued;
	int n = 0;

	if (semc_forked(c))
		return SEMC_E_NOT_SUPPORTED;
	semc_deliver_init(&d);
	pthread_mutex_lock(&c->lock);
	if (c->conn == NULL && c->reconnect && c->ever_connected && !c->closing) {
		pthread_mutex_unlock(&c->lock);
		semc_conn_try(c, semc_now_ms() + 1000);	/* an event loop must not stall */
		pthread_mutex_lock(&c->lock);
	}
	if (c->conn != NULL && !c->reading)
		n = semc_reader_turn_locked(c, 0, -1);
	else if (c->conn == NULL)
		n = SEMC_E_DISCONNECTED;
	/* after reading: an answer that came in time keeps the session */
	queued = semc_duties_locked(c, semc_now_ms(), &d);
	pthread_mutex_unlock(&c->lock);
	semc_deliver_run(c, &d);
	if (queued)
		semc_flush(c);
	return n;
}

/* Milliseconds until semc_process() has something to do (-1: nothing). */
int semc_timeout(struct semc *c)
{
	int t;

	if (semc_forked(c))
		return -1;
	pthread_mutex_lock(&c->lock);
	t = semc_timeout_locked(c, semc_now_ms());
	pthread_mutex_unlock(&c->lock);
	return t;
}

/* Milliseconds left of the session's client-side lease (-1: no lease). */
int64_t semc_lease_left(struct semc *c)
{
	int64_t end, now;

	if (semc_forked(c))
		return -1;
	pthread_mutex_lock(&c->lock);
	end = semc_lease_end_locked(c);
	now = semc_now_ms();
	pthread_mutex_unlock(&c->lock);
	if (end < 0)
		return -1;
	return end > now ? end - now : 0;
}

/* Mark the session to outlive the connection's close (sent again on every
 * resume); the Detach itself is sent by the caller. */
void semc_detach_mark(struct semc *c)
{
	pthread_mutex_lock(&c->lock);
	c->detach = true;
	pthread_mutex_unlock(&c->lock);
}

/* Requests sent and not answered. */
size_t semc_pending(struct semc *c)
{
	struct semc_req *r;
	size_t n = 0;

	if (semc_forked(c))
		return 0;
	pthread_mutex_lock(&c->lock);
	for (r = c->pending; r != NULL; r = r->next)
		if (!r->internal)
			n++;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* Free the handle's memory (its locks and connection are done with). */
static void handle_free_memory(struct semc *c)
{
	struct semc_req *r, *rn;
	struct semc_hold *h, *hn;
	struct semc_evq *e;

	for (r = c->pending; r != NULL; r = rn) {
		rn = r->next;
		semc_req_free(r);
	}
	c->pending = NULL;
	for (h = c->holds; h != NULL; h = hn) {
		hn = h->next;
		free(h->name);
		free(h);
	}
	c->holds = NULL;
	while ((e = c->evq) != NULL) {
		c->evq = e->next;
		evq_free(e);
	}
	free(c->client_name);
	free(c->tls_ca);
	free(c->tls_cert);
	free(c->tls_key);
	free(c->tls_dir);
	free(c->principal);
	free(c->server);
	free(c->rbuf);
	semc_watchers_free(c);
	free(c);
}

/* Free a handle inherited across fork(): the parent's threads are not
 * here and its locks may be held forever, so nothing is locked, joined or
 * said on the socket (shutdown() would end the parent's connection too):
 * the descriptors are closed, so the child does not keep the parent's
 * session alive, and the memory is freed. OpenSSL's state is left alone. */
static void handle_free_forked(struct semc *c)
{
	if (c->conn != NULL && c->conn->fd >= 0)
		close(c->conn->fd);
	if (c->ka_wake[0] >= 0) {
		close(c->ka_wake[0]);
		close(c->ka_wake[1]);
	}
	handle_free_memory(c);
}

/* Close and free everything. Pending asynchronous requests are dropped
 * without their callbacks. Not from a callback of the same handle. */
void semc_free(struct semc *c)
{
	struct semc_conn *k;

	if (c == NULL)
		return;
	if (semc_forked(c)) {
		handle_free_forked(c);
		return;
	}
	pthread_mutex_lock(&c->lock);
	c->closing = true;
	k = c->conn;
	c->conn = NULL;
	if (k != NULL)
		shutdown(k->fd, SHUT_RDWR);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	semc_keepalive_stop(c);
	pthread_mutex_lock(&c->lock);
	while (c->reading || c->connecting)
		pthread_cond_wait(&c->cond, &c->lock);
	conn_put_locked(k);
	pthread_mutex_unlock(&c->lock);
	semc_tls_free(c);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->wlock);
	pthread_mutex_destroy(&c->tls_lock);
	pthread_cond_destroy(&c->cond);
	handle_free_memory(c);
}
