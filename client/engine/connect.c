/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/engine/connect.c - connecting: the Hello handshake on a fresh
 * connection (resuming the session when there is one), publishing the
 * connection, trying the daemons of a cluster in turn with back-off, and a
 * cluster's status without a session. A reconnection is one attempt,
 * semc_conn_try(), which only the duty loop makes (loop.c).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "client/engine/engine.h"
#include "proto/frame.h"

#define SEMC_BACKOFF_MIN	50
#define SEMC_BACKOFF_MAX	1000
#define SEMC_BACKOFF_CLUSTER_MAX 200	/* every daemon of a list failed */
#define SEMC_ATTEMPT_MIN	200	/* ms an attempt of a resume may take, at least */

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
	if (resume == 0) {
		h.parent_session = c->parent_session;
		h.parent_link = c->parent_link;
	}
	rq.id = c->next_id++;
	snprintf(name, sizeof name, "%s", c->client_name ? c->client_name : "libsemclient");
	pthread_mutex_unlock(&c->lock);
	h.client_name = name;
	return semc_frame_exchange(c, k, deadline, &rq, out, sent_at, "the handshake");
}

/* A cluster's status from the first daemon of the list that answers, on
 * a connection of its own without a session: the reply (*out) or the error. */
int semc_cluster_status_raw(struct semc *c, Semd__Reply **out, int timeout_ms)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Cluster cl = SEMD__CLUSTER__INIT;
	struct semc_conn *k;
	int64_t deadline, sent_at;
	unsigned i, n;
	int r = SEMC_E_CONNECT;

	*out = NULL;
	if ((r = semc_addrs_default(c)) != 0)
		return r;
	if ((r = semc_xprt_setup(c)) != 0)
		return r;
	r = SEMC_E_CONNECT;
	cl.action = SEMD__CLUSTER__ACTION__STATUS;
	rq.op_case = SEMD__REQUEST__OP_CLUSTER;
	rq.cluster = &cl;
	rq.id = 1;
	n = c->naddrs > 0 ? c->naddrs : 1;
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&c->lock);
		semc_addr_use_locked(c, (c->cur + (i > 0)) % (c->naddrs ? c->naddrs : 1));
		pthread_mutex_unlock(&c->lock);
		deadline = semc_now_ms() + (timeout_ms > 0 ? timeout_ms : 5000);
		if ((r = semc_conn_open(c, deadline, &k)) != 0)
			continue;
		r = semc_frame_exchange(c, k, deadline, &rq, out, &sent_at, "the cluster status");
		pthread_mutex_lock(&c->lock);
		semc_conn_put_locked(k);
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
	semc_internal_push_locked(c, &rq);
}

/* Make the connection and session live (after a successful Hello sent at
 * sent_at). */
static void conn_publish_locked(struct semc *c, struct semc_conn *k, const Semd__HelloReply *hr,
				int64_t sent_at, struct semc_deliver *d)
{
	bool again = c->ever_connected;

	if (!hr->resumed && c->session != 0)
		semc_session_lost_locked(c, SEMC_E_SESSION_EXPIRED,
					 "the session could not be resumed", d);
	k->gen = ++c->gen;
	c->conn = k;
	c->session = hr->session;
	c->link = hr->link;
	c->secret_len = hr->secret.len <= sizeof c->secret ? hr->secret.len : 0;
	/* none without a session (a daemon whose disk is full): data is NULL */
	if (c->secret_len > 0)
		memcpy(c->secret, hr->secret.data, c->secret_len);
	c->granted_lease = hr->lease_ms;
	c->max_lease = hr->max_lease_ms;
	c->guard_ms = hr->guard_ms;
	c->resumed = hr->resumed;
	c->server_durable = hr->durable;
	semc_str_set(&c->principal, hr->principal);
	semc_str_set(&c->server, hr->server);
	c->lease_base = sent_at;
	c->ka_sent = 0;
	c->backoff = 0;
	c->ever_connected = true;
	if (c->detach && hr->resumed)
		detach_push_locked(c);
	if (again)
		semc_event_push_locked(c, d, hr->resumed ? SEMC_EV_RESUMED : SEMC_EV_RECONNECTED,
				       0, hr->resumed ? "session resumed" : "new session", NULL);
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
	int r;

again:
	pthread_mutex_lock(&c->lock);
	resume = c->granted_lease > 0 ? c->session : 0;
	secret_len = c->secret_len;
	memcpy(secret, c->secret, secret_len);
	pthread_mutex_unlock(&c->lock);

	if ((r = semc_conn_open(c, deadline, &k)) != 0)
		return r;
	if ((r = hello_exchange(c, k, deadline, resume, secret, secret_len, &rp, &sent_at)) != 0)
		goto fail;
	/* 0 comes with rp set; errors are semc_fail()'s non-zero first argument:
	 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
	if (rp->code == SEMD__CODE__UNAVAILABLE) {
		/* Not the leader (a Redirect may say which is): another one next. */
		pthread_mutex_lock(&c->lock);
		if (rp->body_case == SEMD__REPLY__BODY_REDIRECT)
			semc_addr_redirect_locked(c, rp->redirect);
		pthread_mutex_unlock(&c->lock);
		r = semc_fail(SEMC_E_UNAVAILABLE, "%s: %s", c->addr.canon,
			      *rp->message ? rp->message : "unavailable");
		goto fail;
	}
	if (rp->code != SEMD__CODE__OK && resume != 0) {
		/* The daemon forgot us (restart, lease over): start afresh. */
		pthread_mutex_lock(&c->lock);
		semc_session_lost_locked(c, semc_code_error(rp->code), *rp->message ? rp->message :
					 "session could not be resumed", d);
		pthread_mutex_unlock(&c->lock);
		semd__reply__free_unpacked(rp, NULL);
		rp = NULL;
		pthread_mutex_lock(&c->lock);
		semc_conn_put_locked(k);
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
	semc_lease_check_locked(c, semc_now_ms(), d);
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
	semc_conn_put_locked(k);
	pthread_mutex_unlock(&c->lock);
	return r;
}

/*
 * When an attempt on one daemon of several must give up (deadline: the
 * caller's): a session with a lease (granted, or asked for) gives each a
 * sixth of the lease, at least SEMC_ATTEMPT_MIN, so that one that does not
 * answer (stopped, or a leader cut off from the others: the connection is
 * accepted, the Hello never answered) leaves time for the others before
 * the lease ends. Lock held.
 */
static int64_t attempt_deadline_locked(const struct semc *c, int64_t now, int64_t deadline)
{
	int64_t lease = c->granted_lease ? c->granted_lease : atomic_load(&c->lease_ms), each;

	if (c->naddrs <= 1 || lease == 0)
		return deadline;
	each = lease / 6 > SEMC_ATTEMPT_MIN ? lease / 6 : SEMC_ATTEMPT_MIN;
	return deadline >= 0 && deadline < now + each ? deadline : now + each;
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
			semc_addr_use_locked(c, (c->cur + 1) % c->naddrs);
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

/* End a connection attempt that returned r (called with the lock, returns
 * without it): wake the waiters, deliver d, send what waits. */
static int connect_done_locked(struct semc *c, int r, struct semc_deliver *d)
{
	c->connecting = false;
	if (r == 0)
		c->round_fails = 0;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	semc_deliver_run(c, d);
	if (r == 0)
		semc_flush(c);
	return r;
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
	semc_lease_check_locked(c, now, &d);
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
	dl = attempt_deadline_locked(c, now, dl);
	if (dl < now + 100)
		dl = now + 100;
	tried = c->cur;
	pthread_mutex_unlock(&c->lock);
	r = conn_open(c, dl, &d);
	pthread_mutex_lock(&c->lock);
	if (r != 0) {
		addr_failed_locked(c, tried);
		semc_lease_check_locked(c, semc_now_ms(), &d);
	}
	return connect_done_locked(c, r, &d);
}

/* Connect the first time (semc_connect()): each daemon of the list in
 * turn (a Redirect goes to the leader), until one serves or deadline. */
int semc_connect_first(struct semc *c, int64_t deadline)
{
	struct semc_deliver d;
	int64_t wait, each;
	unsigned tried;
	int r;

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
		each = attempt_deadline_locked(c, semc_now_ms(), deadline);
		pthread_mutex_unlock(&c->lock);
		r = conn_open(c, each, &d);
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
	return connect_done_locked(c, r, &d);
}
