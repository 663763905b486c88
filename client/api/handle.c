/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/handle.c - the handle (client/handle.h): making it, its
 * settings, connecting it, what an event loop calls (semc_fd(),
 * semc_process(), semc_timeout()), what it says of its session, and
 * shutting it down and freeing it. Its connection and session are the
 * floors' below: the engine (client/engine/) and the session's bookkeeping
 * (client/session/).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "client/api/api.h"
#include "proto/frame.h"

/* $SEMD_SESSION, "ID:LINK" (decimal, 16 hex digits), as semctl run sets it. */
static void parent_from_env(struct semc *c)
{
	const char *e = getenv("SEMD_SESSION");
	unsigned long long id, link;
	int end = 0;

	if (e != NULL && sscanf(e, "%llu:%16llx%n", &id, &link, &end) == 2 &&
	    e[end] == '\0') {
		c->parent_session = id;
		c->parent_link = link;
	}
}

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
	c->fork_gen = semc_fork_gen();
	atomic_init(&c->timeout_ms, 10000);
	atomic_init(&c->lease_ms, 0);
	c->reconnect = true;
	parent_from_env(c);
	c->ka_want = true;
	c->ka_wake[0] = c->ka_wake[1] = -1;
	c->next_id = 1;
	return c;
}

/* Set the daemon's address, or a cluster's: a comma-separated list. */
int semc_set_address(struct semc *c, const char *address)
{
	if (semc_forked(c))
		return semc_fail(SEMC_E_NOT_SUPPORTED, "handle of another process");
	return semc_addrs_set(c, address);
}

/* Take c->lock, unless this is a forked child, which must not touch its
 * parent's handle: whether it was taken. */
static bool lock_own(struct semc *c)
{
	if (semc_forked(c))
		return false;
	pthread_mutex_lock(&c->lock);
	return true;
}

/* Set the client name sent in Hello. */
int semc_set_client_name(struct semc *c, const char *name)
{
	int r;

	if (!lock_own(c))
		return SEMC_E_NOT_SUPPORTED;
	r = semc_str_set(&c->client_name, name);
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Ask for a session lease (0: none), from the next Hello on. */
void semc_set_lease(struct semc *c, uint32_t lease_ms)
{
	atomic_store(&c->lease_ms, lease_ms);
}

/* The parent session of the sessions the handle starts. */
void semc_set_parent(struct semc *c, uint64_t session, uint64_t link)
{
	if (!lock_own(c))
		return;
	c->parent_session = session;
	c->parent_link = link;
	pthread_mutex_unlock(&c->lock);
}

/* The link of the current session, for a child's parent (0: none). */
uint64_t semc_session_link(struct semc *c)
{
	uint64_t link;

	if (!lock_own(c))
		return 0;
	link = c->conn != NULL ? c->link : 0;
	pthread_mutex_unlock(&c->lock);
	return link;
}

/* Set the reply timeout of ordinary requests. */
void semc_set_timeout(struct semc *c, int timeout_ms)
{
	atomic_store(&c->timeout_ms, timeout_ms > 0 ? timeout_ms : 10000);
}

/* Set a flag of the handle under c->lock; a forked child, which must not
 * touch the parent's handle, sets nothing. Whether it was set. */
static bool flag_set(struct semc *c, bool *flag, bool on)
{
	if (!lock_own(c))
		return false;
	*flag = on;
	pthread_mutex_unlock(&c->lock);
	return true;
}

/* Turn automatic reconnection on or off. */
void semc_set_reconnect(struct semc *c, bool on)
{
	flag_set(c, &c->reconnect, on);
}

/* Whether sessions with a lease get the keepalive thread (default yes). */
void semc_set_keepalive_thread(struct semc *c, bool on)
{
	if (flag_set(c, &c->ka_want, on) && !on)
		semc_keepalive_stop(c);
}

/* Set the TLS files. */
int semc_set_tls(struct semc *c, const char *ca_file, const char *cert_file, const char *key_file)
{
	int r;

	if (semc_forked(c))
		return SEMC_E_NOT_SUPPORTED;
	if ((r = semc_str_set(&c->tls_ca, ca_file)) != 0 ||
	    (r = semc_str_set(&c->tls_cert, cert_file)) != 0 ||
	    (r = semc_str_set(&c->tls_key, key_file)) != 0)
		return r;
	/* Sessions made with other files are not offered again. */
	semc_tls_sess_free(c);
	return 0;
}

/* Set the event callback. */
void semc_set_event_callback(struct semc *c, semc_event_fn fn, void *arg)
{
	if (!lock_own(c))
		return;
	c->ev_fn = fn;
	c->ev_arg = arg;
	pthread_mutex_unlock(&c->lock);
}

/* Connect and say Hello. */
int semc_connect(struct semc *c, int timeout_ms)
{
	int r;

	if (c == NULL)
		return SEMC_E_ARG;
	semc_clear_message();
	if (semc_forked(c))
		return semc_fail(SEMC_E_NOT_SUPPORTED, "the handle belongs to process %d", (int)c->pid);
	if ((r = semc_addrs_default(c)) != 0)
		return r;
	if ((r = semc_xprt_setup(c)) != 0)
		return r;
	return semc_engine_connect(c, semc_now_ms() + (timeout_ms >= 0 ? timeout_ms :
						       atomic_load(&c->timeout_ms)));
}

/* The address in use. */
const char *semc_address(const struct semc *c)
{
	return c->addr.canon;
}

/* The handshake's result. */
int semc_session(struct semc *c, struct semc_session *out)
{
	int r;

	memset(out, 0, sizeof *out);
	out->principal = "";
	out->server = "";
	if (!lock_own(c))
		return SEMC_E_NOT_SUPPORTED;
	out->session = c->session;
	out->lease_ms = c->granted_lease;
	out->principal = c->principal ? c->principal : "";
	out->server = c->server ? c->server : "";
	out->resumed = c->resumed;
	r = c->conn != NULL ? 0 : SEMC_E_DISCONNECTED;
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* What get(c) says under c->lock; -1 in a forked child, which must not
 * touch the parent's connection (the event loop's getters). */
static int64_t locked_get(struct semc *c, int64_t (*get)(struct semc *c))
{
	int64_t v;

	if (!lock_own(c))
		return -1;
	v = get(c);
	pthread_mutex_unlock(&c->lock);
	return v;
}

/* The connection's socket (-1: none). */
static int64_t fd_locked(struct semc *c)
{
	return c->conn ? c->conn->fd : -1;
}

/* The socket to poll. */
int semc_fd(struct semc *c)
{
	return (int)locked_get(c, fd_locked);
}

/* Non-blocking: read and dispatch what is there; reconnect if due (one turn
 * of the duty loop that waits for nothing). */
int semc_process(struct semc *c)
{
	struct semc_turn t = { .wake_fd = -1, .eager = true };
	int64_t now;
	int n;

	if (semc_forked(c))
		return SEMC_E_NOT_SUPPORTED;
	now = semc_now_ms();
	t.deadline = now + 1000;	/* an event loop must not stall */
	pthread_mutex_lock(&c->lock);
	n = semc_turn_locked(c, &t, now);
	pthread_mutex_unlock(&c->lock);
	return n;
}/* semc_timeout_locked() now. */
static int64_t timeout_now_locked(struct semc *c)
{
	return semc_timeout_locked(c, semc_now_ms());
}

/* Milliseconds until semc_process() has something to do (-1: nothing). */
int semc_timeout(struct semc *c)
{
	return (int)locked_get(c, timeout_now_locked);
}

/* The daemon's max-lease. */
static int64_t max_lease_locked(struct semc *c)
{
	return c->max_lease;
}

/* The longest lease the daemon grants, as its last handshake said (0:
 * unknown: not connected yet, or a daemon older than 0.4). */
uint32_t semc_max_lease(struct semc *c)
{
	int64_t v = locked_get(c, max_lease_locked);

	return v > 0 ? (uint32_t)v : 0;
}

/* Milliseconds left of the lease (-1: no lease). */
static int64_t lease_left_locked(struct semc *c)
{
	int64_t end = semc_lease_end_locked(c), now = semc_now_ms();

	if (end < 0)
		return -1;
	return end > now ? end - now : 0;
}

/* Milliseconds left of the session's client-side lease (-1: no lease). */
int64_t semc_lease_left(struct semc *c)
{
	return locked_get(c, lease_left_locked);
}

/* Requests sent and not answered. */
size_t semc_pending(struct semc *c)
{
	struct semc_req *r;
	size_t n = 0;

	if (!lock_own(c))
		return 0;
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
		semc_evq_free(e);
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

/* Close the connection, fail every pending request and stop the keepalive
 * thread, leaving the handle to semc_free(). From a callback of the
 * keepalive thread, that thread ends on its own (it sees closing) and
 * semc_free() joins it. */
void semc_shutdown(struct semc *c)
{
	struct semc_deliver d;
	struct semc_conn *k;
	bool in_keepalive;

	if (c == NULL || semc_forked(c))
		return;
	semc_deliver_init(&d);
	pthread_mutex_lock(&c->lock);
	c->closing = true;
	if ((k = c->conn) != NULL) {
		c->conn = NULL;
		shutdown(k->fd, SHUT_RDWR);
		semc_conn_put_locked(k);	/* a reader or writer keeps its own reference */
	}
	while (c->pending != NULL)
		semc_req_complete_locked(c, c->pending, NULL, SEMC_E_DISCONNECTED, &d);
	in_keepalive = c->ka_running && pthread_equal(c->ka_thread, pthread_self());
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (!in_keepalive)
		semc_keepalive_stop(c);
	semc_deliver_run(c, &d);
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
	semc_conn_put_locked(k);
	pthread_mutex_unlock(&c->lock);
	semc_tls_free(c);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->wlock);
	pthread_mutex_destroy(&c->tls_lock);
	pthread_cond_destroy(&c->cond);
	handle_free_memory(c);
}
