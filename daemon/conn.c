/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/conn.c - one client connection's life: start, events, timers,
 * close.
 *
 * A connection is started on the loop that serves it (conn_accept.c hands
 * it there), with its identity worked out by its transport before the
 * state lock is taken; under the lock it is only counted and opened in the
 * state. Its read event reads what the transport has and hands it to
 * conn_input.c. Nothing may free a connection from inside the state
 * machine: closes are deferred to the kill event. Also the hooks server.c's
 * loops call (conn_loop_ops). How a client is opened in the state, and
 * closed, is the feed's (feed.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "daemon/backup.h"
#include "daemon/conn-int.h"
#include "daemon/feed.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "daemon/xprt.h"

/* Arm the handshake or idle timer. */
void conn_arm_timer(struct conn *c)
{
	uint32_t ms;

	ms = c->hello ? SRV_LIVE(c->srv, idle_timeout_ms) :
	    SRV_LIVE(c->srv, handshake_timeout_ms);
	if (ms == 0)
		evtimer_del(c->timer);
	else
		conn_timer_add_ms(c->timer, ms);
}

/* Under the lock, on c's thread: its Hello was taken; idle time counts now. */
void conn_hello_locked(struct conn *c)
{
	if (c->hello)
		return;
	c->hello = true;
	conn_arm_timer(c);
}

/* Handshake or idle time ran out. */
static void conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	uint64_t idle;
	uint32_t idle_ms, handshake_ms;

	server_lock(c->w);
	idle_ms = SRV_LIVE(c->srv, idle_timeout_ms);
	handshake_ms = SRV_LIVE(c->srv, handshake_timeout_ms);
	if (!c->closing && !c->hello)
		conn_protocol_error_locked(c, "no hello within the handshake timeout");
	server_unlock(c->w);
	if (c->closing) {
		log_info("%s: replies not read within 5 s of closing, dropped",
		    c->peer);
		conn_free(c);
		return;
	}
	if (!c->hello) {
		log_info("%s: no hello within %u ms, closing", c->peer,
		    handshake_ms);
		conn_close_later(c);
		return;
	}
	idle = server_now() - c->last_input_ms;
	if (idle < idle_ms) {
		conn_timer_add_ms(c->timer, idle_ms - idle);
		return;
	}
	log_info("%s: idle for %" PRIu64 " ms, closing", c->peer, idle);
	conn_close_later(c);
}

/* Deferred close (from inside the state machine, or after a drop). */
static void conn_kill_cb(evutil_socket_t fd, short what, void *arg)
{
	conn_free(arg);
}

/* One read(2), or the records one read-ahead took in, land here. */
#define CONN_RBUF	65536

static _Thread_local uint8_t conn_rbuf[CONN_RBUF];

/*
 * The socket is readable: read what the transport has (TLS: while
 * read-ahead holds whole records) into the shared buffer, then run it.
 * What did not fit is read at the next turn: the socket will not announce
 * it again.
 */
static void conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	enum xprt_more more = XPRT_MORE;
	size_t len = 0, n;

	if (c->closing || c->dead)
		return;
	if (c->wwant_r) {
		c->wwant_r = false;
		conn_drain(c);
		if (c->dead)
			return;
	}
	while (more == XPRT_MORE && len < sizeof conn_rbuf) {
		n = c->xprt->read(c, conn_rbuf + len, sizeof conn_rbuf - len, &more);
		if (n == 0 && more == XPRT_MORE)
			break;		/* no room for what is there */
		len += n;
	}
	if (c->rwant_w)
		conn_want_write(c);
	if (len > 0 || c->rerun) {
		c->rerun = false;	/* frames held in c->in, run now */
		conn_input(c, conn_rbuf, len);
	}
	if (more == XPRT_GONE) {
		conn_free(c);
		return;
	}
	if (more == XPRT_MORE && !c->paused && !c->closing && !c->dead)
		event_active(c->rev, EV_READ, 0);
}
/* The events of a new connection: 0, or -ENOMEM (freed by conn_free_io()). */
static int conn_make_io(struct conn *c)
{
	struct event_base *base = c->w->base;

	c->timer = evtimer_new(base, conn_timer_cb, c);
	c->ftimer = evtimer_new(base, conn_ftimer_cb, c);
	c->kill = event_new(base, -1, 0, conn_kill_cb, c);
	c->rev = event_new(base, c->fd, EV_READ | EV_PERSIST, conn_read_cb, c);
	c->wev = event_new(base, c->fd, EV_WRITE, conn_write_cb, c);
	return c->timer == NULL || c->ftimer == NULL || c->kill == NULL ||
	    c->rev == NULL || c->wev == NULL ? -ENOMEM : 0;
}

/* Free the I/O of a connection (bye: tell a TLS peer), and c. */
static void conn_free_io(struct conn *c, bool bye)
{
	struct event *evs[] = { c->timer, c->ftimer, c->kill, c->rev, c->wev };
	size_t i;

	for (i = 0; i < sizeof evs / sizeof evs[0]; i++)
		if (evs[i] != NULL)
			event_free(evs[i]);
	if (c->in != NULL)
		evbuffer_free(c->in);
	if (c->xprt != NULL)
		c->xprt->close(c, bye);
	conn_trim_later(c->w, c->tcap + c->wcap);
	free(c->tbuf);
	free(c->wbuf);
	backup_free(c->backup);
	free(c);
}

/*
 * Under the lock: count c against its quota (its identity who, worked out
 * before the lock) and open its client through the feed. 0, -EDQUOT (why
 * filled), or -ENOMEM.
 */
static int conn_open_locked(struct conn *c, struct acl_subject *who,
    bool pending, const uint8_t *secret, char *why, size_t len)
{
	struct server *srv = c->srv;
	const char *principal;
	int r;

	r = srv->policy->open_locked(srv, who, pending, &c->id, why, len);
	if (r != 0)
		return r;
	principal = srv->policy->principal(c->id);
	if ((r = srv->feed->open_locked(c, principal, secret)) != 0) {
		srv->policy->close_locked(c->id);
		c->id = NULL;
		return r;
	}
	list_add_tail(&c->entry, &c->w->conns);
	conn_arm_timer(c);
	c->open = true;
	return 0;
}

/*
 * Count a new client of worker w (counted: conn_accept() already counted
 * it in srv->nconns; -1: take the count back). 0, or why not: -ESHUTDOWN,
 * -EMFILE (logged).
 */
static int conn_count(struct worker *w, int counted, uint32_t *keepalive)
{
	struct server *srv = w->srv;
	uint32_t max_conns;
	int r = 0;

	server_lock(w);
	if (counted < 0) {
		srv->nconns--;
		w->nconns--;
		if (srv->stopping && w->nconns == 0)
			event_base_loopexit(w->base, NULL);
	} else {
		r = srv->stopping ? -ESHUTDOWN : counted ? 0 :
		    srv->nconns >= srv->cfg.max_connections ? -EMFILE : 0;
		if (r == 0) {
			/* Count it now: the limit holds across workers. */
			srv->nconns += !counted;
			w->nconns++;
		} else if (counted) {
			srv->nconns--;
		}
		*keepalive = srv->cfg.keepalive_s;
	}
	max_conns = srv->cfg.max_connections;
	server_unlock(w);
	if (r == -EMFILE)
		log_warn("max-connections %u reached, refusing a client",
		    max_conns);
	return r;
}

/*
 * Serve a new client of worker w: a plain socket fd, or a TLS one whose
 * handshake is done (ssl). counted: conn_accept() already counted it in
 * srv->nconns. Its identity is worked out here, before the lock.
 */
void conn_start(struct worker *w, int fd, SSL *ssl, struct sockaddr *sa,
    bool is_unix, bool counted)
{
	struct server *srv = w->srv;
	uint8_t secret[SM_SECRET_LEN];
	char why[ACL_PRINCIPAL_MAX + 96];
	struct acl_subject who;
	uint32_t keepalive = 0;
	struct conn *c = NULL;
	bool names, in = false;
	int r;

	acl_subject_init(&who);
	if ((r = conn_count(w, counted, &keepalive)) != 0)
		goto fail;
	in = true;
	if (getrandom(secret, sizeof secret, 0) != (ssize_t)sizeof secret) {
		r = -errno;
		log_warn_errno(errno, "getrandom");
		goto fail;
	}
	if ((c = calloc(1, sizeof *c)) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	c->srv = srv;
	c->w = w;
	c->fd = fd;
	c->ssl = ssl;
	c->local = is_unix;
	c->xprt = ssl != NULL ? &xprt_tls : is_unix ? &xprt_unix : &xprt_tcp;
	INIT_LIST_HEAD(&c->flush_entry);
	INIT_LIST_HEAD(&c->entry);
	/* Off the lock: a slow NSS look-up stalls this client alone. */
	names = SRV_LIVE(srv, acl_names);
	c->xprt->identify(c, sa, names, &who, c->peer, sizeof c->peer);
	/* From here on the transport owns fd and ssl (its close). */
	c->xprt->start(c, keepalive);
	if ((r = conn_make_io(c)) != 0)
		goto fail;
	server_lock(w);
	r = conn_open_locked(c, &who, is_unix && !names &&
	    who.kind == ACL_SUBJECT_UID, secret, why, sizeof why);
	server_unlock(w);
	srv->feed->submit(w);
	if (r != 0)
		goto fail;
	c->last_input_ms = server_now();
	log_debug("%s: connected as %s%s, on loop %u", c->peer,
	    srv->policy->principal(c->id), ssl == NULL ? "" :
	    SSL_session_reused(ssl) ? " (TLS, resumed)" : " (TLS)", w->idx);
	if (event_add(c->rev, NULL) != 0) {
		log_warn("%s: cannot watch a client socket, closing", c->peer);
		conn_free(c);
		return;
	}
	/* The Hello may have come with the TLS handshake's last flight. */
	if (c->xprt->pending(c))
		event_active(c->rev, EV_READ, 0);
	return;
fail:
	if (r == -ENOMEM)
		log_warn("out of memory accepting a client");
	if (r == -EDQUOT && ssl == NULL)
		conn_tell_fd(fd, SEMD__CODE__RESOURCE_EXHAUSTED, why);
	if (in)
		(void)conn_count(w, -1, NULL);
	acl_subject_clear(&who);
	if (c != NULL) {
		conn_free_io(c, false);
		return;
	}
	SSL_free(ssl);
	close(fd);
}

/*
 * A client inside the daemon (conn.h): counted, opened in the state as
 * who, with no socket to read (its requests come through
 * conn_inner_input()).
 */
struct conn *conn_start_inner(struct worker *w, const struct xprt_ops *xprt,
    void *inner, struct acl_subject *who, const char *peer, int *err,
    char *why, size_t len)
{
	struct server *srv = w->srv;
	uint8_t secret[SM_SECRET_LEN];
	uint32_t keepalive = 0;
	struct conn *c = NULL;
	int r;

	if ((r = conn_count(w, false, &keepalive)) != 0)
		goto fail;
	if (getrandom(secret, sizeof secret, 0) != (ssize_t)sizeof secret) {
		r = -EIO;
		goto uncount;
	}
	if ((c = calloc(1, sizeof *c)) == NULL) {
		r = -ENOMEM;
		goto uncount;
	}
	c->srv = srv;
	c->w = w;
	c->fd = -1;
	c->local = true;
	c->xprt = xprt;
	c->inner = inner;
	snprintf(c->peer, sizeof c->peer, "%s", peer);
	INIT_LIST_HEAD(&c->flush_entry);
	INIT_LIST_HEAD(&c->entry);
	if ((r = conn_make_io(c)) != 0)
		goto uncount;
	server_lock(w);
	r = conn_open_locked(c, who, false, secret, why, len);
	server_unlock(w);
	srv->feed->submit(w);
	if (r != 0)
		goto uncount;
	c->last_input_ms = server_now();
	return c;
uncount:
	(void)conn_count(w, -1, NULL);
fail:
	acl_subject_clear(who);
	if (c != NULL) {
		c->xprt = NULL;		/* nothing of the owner's to close */
		conn_free_io(c, false);
	}
	*err = r;
	return NULL;
}

/* Close and free a connection; its session lets go (or lingers). */
void conn_free(struct conn *c)
{
	struct server *srv;
	struct worker *w;
	bool bye;

	if (c == NULL)
		return;
	if (server_locked) {
		/* Called back from inside the lock: free it from the loop. */
		conn_kill(c);
		return;
	}
	srv = c->srv;
	w = c->w;
	/* Our own close with everything said: TLS tells the peer. */
	bye = c->closing && !c->dead && conn_backlog_len(c) == 0;
	c->dead = true;
	conn_unqueue(c);
	server_lock(w);
	list_del_init(&c->entry);
	srv->nconns--;
	w->nconns--;
	srv->feed->close_locked(c);
	conn_count_backlog(c, true);
	srv->policy->close_locked(c->id);
	if (srv->stopping && w->nconns == 0)
		event_base_loopexit(w->base, NULL);
	server_unlock(w);
	srv->feed->submit(w);
	conn_free_io(c, bye);
}

/* This node stopped leading: tell every client of w where to go, close it. */
static void conn_drop_all(struct worker *w)
{
	struct list_head *pos, *tmp;
	struct conn *c;

	server_lock(w);
	list_for_each(pos, &w->conns) {
		c = list_entry(pos, struct conn, entry);
		if (!c->closing && !c->dead)
			conn_redirect_locked(c, 0);
	}
	server_unlock(w);
	list_for_each_safe(pos, tmp, &w->conns)
		conn_close_later(list_entry(pos, struct conn, entry));
}

/* A stop: close every client of w once its replies are written. */
static void conn_close_all(struct worker *w)
{
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &w->conns)
		conn_close_later(list_entry(pos, struct conn, entry));
}

const struct server_ops conn_loop_ops = {
	.out = {
		.reply = conn_reply_locked,
		.close = conn_close_effect_locked,
		.note = conn_note_locked,
		.backup = backup_take_locked,
		.notice = conn_notice_locked,
	},
	.deliver_locked = conn_mbox_deliver_locked,
	.flush = conn_flush_all,
	.start = conn_start_pending,
	.drop_all = conn_drop_all,
	.close_all = conn_close_all,
	.free_all = conn_free_all,
};
