/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/conn_accept.c - new clients on their way to the loop that serves
 * them: dealt out by worker 0's listeners in turn, through the worker's
 * accept queue, and for TLS through a handshake run on that loop, bounded
 * by handshake-timeout and counted for tls-max-startups. At the end, the
 * clients and the handshakes left are freed here (conn_free_all).
 */
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/conn-int.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "security/tls_hs.h"

/* A TLS handshake ended, either way: it no longer counts (any thread). */
static void conn_hs_done(struct server *srv, struct conn_pending *p)
{
	pthread_mutex_lock(&srv->hs_lock);
	list_del_init(&p->hs_entry);
	srv->handshakes--;
	pthread_mutex_unlock(&srv->hs_lock);
	free(p);
}

/* The TLS handshake of a client of this loop is done: serve it. */
static void conn_tls_ready(SSL *ssl, evutil_socket_t fd, void *arg)
{
	struct conn_pending *p = arg;
	struct worker *w = p->w;
	struct sockaddr_storage ss = p->ss;

	atomic_fetch_add_explicit(SSL_session_reused(ssl) ? &w->tls_resumed :
	    &w->tls_full, 1, memory_order_relaxed);
	p->hs = NULL;
	conn_hs_done(w->srv, p);
	conn_start(w, fd, ssl, (struct sockaddr *)&ss, false, false);
}

/* The TLS handshake failed or timed out (all freed by tls_hs). */
static void conn_tls_failed(const char *why, void *arg)
{
	struct conn_pending *p = arg;

	log_info("TLS handshake: %s", why);
	p->hs = NULL;
	conn_hs_done(p->w->srv, p);
}

/* Run the TLS handshake of p on w's loop, bounded by handshake-timeout. */
static void conn_tls_begin(struct worker *w, struct conn_pending *p)
{
	struct server *srv = w->srv;
	uint32_t timeout;
	char err[256];
	int one = 1;

	server_lock(w);
	timeout = SRV_LIVE(srv, handshake_timeout_ms);
	server_unlock(w);
	p->w = w;
	/* The handshake's flights and the ticket after it: no Nagle delays. */
	(void)setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	p->hs = tls_hs_start(w->base, srv->tls, p->fd, timeout > INT_MAX ?
	    INT_MAX : (int)timeout, conn_tls_ready, conn_tls_failed, p, err,
	    sizeof err);
	if (p->hs == NULL) {
		log_warn("TLS accept: %s", err);
		conn_hs_done(srv, p);
	}
}

/* Register a TLS client's handshake as under way (tls-max-startups). */
static void conn_hs_add(struct server *srv, struct conn_pending *p)
{
	pthread_mutex_lock(&srv->hs_lock);
	list_add_tail(&p->hs_entry, &srv->hs_list);
	srv->handshakes++;
	pthread_mutex_unlock(&srv->hs_lock);
}

/*
 * A new client socket from a listener (on worker 0): served by the next
 * worker in turn; another worker gets it through its accept queue. A TLS
 * client's handshake runs on the loop that will serve it.
 */
void conn_accept(struct server *srv, int fd, struct sockaddr *sa, int salen,
    bool is_unix, bool tls)
{
	struct worker *w = &srv->workers[srv->next_worker];
	struct conn_pending *p;

	srv->next_worker = (srv->next_worker + 1) % srv->nworkers;
	if (w == worker_self && !tls) {
		conn_start(w, fd, NULL, sa, is_unix, false);
		return;
	}
	p = calloc(1, sizeof *p);
	if (p == NULL || salen < 0 || (size_t)salen > sizeof p->ss) {
		free(p);
		close(fd);
		return;
	}
	p->fd = fd;
	p->is_unix = is_unix;
	p->tls = tls;
	p->salen = salen;
	memcpy(&p->ss, sa, (size_t)salen);
	INIT_LIST_HEAD(&p->entry);
	INIT_LIST_HEAD(&p->hs_entry);
	if (tls)
		conn_hs_add(srv, p);
	if (w == worker_self) {
		conn_tls_begin(w, p);
		return;
	}
	/*
	 * Counted at once, so that the listener's max-connections check sees
	 * the clients still on their way to their worker (TLS ones count as
	 * handshakes until theirs is done).
	 */
	server_lock(worker_self);
	if (!tls)
		srv->nconns++;
	list_add_tail(&p->entry, &w->acceptq);
	server_wake_later(w);
	server_unlock(worker_self);
}

/* A client handed over by worker 0's listener (stop: closed instead). */
void conn_start_pending(struct worker *w, struct conn_pending *p, bool stop)
{
	if (stop) {
		close(p->fd);
		if (p->tls)
			conn_hs_done(w->srv, p);
		else
			free(p);
		return;
	}
	if (p->tls) {
		conn_tls_begin(w, p);
		return;
	}
	conn_start(w, p->fd, NULL, (struct sockaddr *)&p->ss, p->is_unix, true);
	free(p);
}

/* After the loops ended: drop the TLS handshakes still under way. */
static void conn_handshakes_free(struct server *srv)
{
	struct list_head *pos, *tmp;
	struct conn_pending *p;

	/* Freed one by one (the next one read first), then the list reset. */
	list_for_each_safe(pos, tmp, &srv->hs_list) {
		p = list_entry(pos, struct conn_pending, hs_entry);
		list_del_init(&p->entry);	/* still in an accept queue? */
		if (p->hs != NULL)
			tls_hs_abort(p->hs);
		else
			close(p->fd);
		free(p);
	}
	INIT_LIST_HEAD(&srv->hs_list);
	srv->handshakes = 0;
}

/* After the loops ended: free every client of every loop, and handshakes. */
void conn_free_all(struct server *srv)
{
	struct worker *w;
	unsigned int i;

	for (i = 0; srv->workers != NULL && i < srv->nworkers; i++) {
		w = &srv->workers[i];
		worker_self = w;
		while (w->srv != NULL && !list_empty(&w->conns))
			conn_free(list_first_entry(&w->conns, struct conn,
			    entry));
	}
	worker_self = srv->workers != NULL ? &srv->workers[0] : NULL;
	conn_handshakes_free(srv);
}
