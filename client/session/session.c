/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/session/session.c - the session itself, under the handle's lock:
 * its client-side lease, the keepalive pings that keep it (and find a
 * connection dead), a broken connection (the session kept to be resumed,
 * or lost) and a lost session (every hold reported, the requests sent on
 * it failed). No I/O here: the engine (client/engine/) reads, writes and
 * connects, and asks this floor what is due (semc_duties_locked(),
 * semc_duty_next_locked()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "client/session/session.h"

/* Whether a new connection can resume the session: over a UNIX socket only
 * with a daemon that keeps its state (or after a Detach); there a close
 * ends the session (semc_conn_broken_locked()). */
static bool resumable_locked(const struct semc *c)
{
	return c->reconnect && !c->closing && c->session != 0 && c->granted_lease > 0 &&
	       (c->addr.kind != SEMC_ADDR_UNIX || c->detach || c->server_durable);
}

/* The session is gone: report every session-bound hold as lost and fail
 * the requests that were sent on it. */
void semc_session_lost_locked(struct semc *c, int err, const char *why,
			      struct semc_deliver *d)
{
	struct semc_hold *h, *hn;
	struct semc_req *r, *rn;

	for (h = semc_holds_take_all_locked(c); h != NULL; h = hn) {
		hn = h->next;
		semc_event_push_locked(c, d, SEMC_EV_HOLD_LOST, err, why, h);
		semc_hold_free(h);
	}
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
	c->untrusted = false;
	pthread_cond_broadcast(&c->cond);
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
	if (resumable_locked(c)) {
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

/* Give the session up once it is trusted no more (session/trust.c): every
 * session-bound hold is lost (SEMC_E_HOLD_LOST) before the daemon can
 * grant it again. A connection still open is cut, so that nothing more is
 * said on the session; the next call starts a new one (with several
 * daemons, on the next first: a silent one is likely stopped or cut off). */
void semc_lease_check_locked(struct semc *c, int64_t now, struct semc_deliver *d)
{
	const char *why = c->untrusted ? "a grant came after the session's lease (or the "
			  "cluster's election timeout) since its request was sent" :
			  c->granted_lease > 0 ?
			  "no answer from the server within the session's lease" :
			  "no answer from the cluster's leader within its election timeout";
	int64_t end = semc_trust_end_locked(c);
	struct semc_conn *k = c->conn;

	if (end < 0 || now < end)
		return;
	if (k != NULL) {
		if (c->granted_lease == 0 && c->naddrs > 1)
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
 * waiting was sent, while the session owns permits or such a down waits
 * (-1: none is due). */
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
	if (!waits && !semc_guard_holds_locked(c))
		return -1;
	return base + c->guard_ms / 3;
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

/* When the session has a duty next (monotonic ms; -1: none): a keepalive
 * ping, a connection taken for dead, the end of the client-side lease. */
int64_t semc_duty_next_locked(const struct semc *c)
{
	int64_t t = -1, due;

	if ((due = keepalive_due_locked(c)) >= 0)
		t = due;
	if ((due = keepalive_dead_at_locked(c)) >= 0 && (t < 0 || due < t))
		t = due;
	if ((due = semc_trust_end_locked(c)) >= 0 && (t < 0 || due < t))
		t = due;
	return t;
}
