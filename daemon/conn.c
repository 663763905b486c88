/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/conn.c - one client connection: frames in, replies out.
 *
 * The read callback drains every complete frame in the input buffer (a batch
 * of pipelined requests costs one read and one write), decodes each into a
 * Request and hands it to the state machine. Replies, including grants to
 * this client caused by another one, are packed straight into the output
 * buffer by conn_reply(). Nothing here may free a connection from inside the
 * state machine: closes are deferred to the kill event.
 *
 * Threads: a connection belongs to one worker (one event loop and thread)
 * and only that thread touches it. Every call into the state machine runs
 * under the server lock; a reply the state machine makes for a client of
 * another worker goes to that worker's mailbox (conn_mbox_put), which the
 * owner empties into its connections under the lock (conn_mbox_deliver).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <openssl/err.h>

#include "daemon/access.h"
#include "daemon/durable.h"
#include "daemon/fastpb.h"
#include "daemon/log.h"
#include "daemon/server.h"
#include "proto/frame.h"
#include "proto/semd.pb-c.h"
#include "security/tls_hs.h"

/* One read(2), or the records one read-ahead took in, land here. */
#define CONN_RBUF	65536
/* The most plaintext one TLS record carries. */
#define TLS_RECORD_MAX	16384
/* A TLS client idle this long gives OpenSSL's buffers back. */
#define TLS_IDLE_MS	1000

static _Thread_local uint8_t conn_rbuf[CONN_RBUF];

static void conn_kill_cb(evutil_socket_t fd, short what, void *arg);
static void conn_resume(struct conn *c);

/*
 * With a log on a node that does not lead: answer UNAVAILABLE, with the
 * leader when it is known (a Redirect), for request id (0: a notice).
 */
static void conn_redirect(struct conn *c, uint64_t id)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__Redirect rd = SEMD__REDIRECT__INIT;
	char addr[256], msg[320];

	rd.leader_id = durable_leader(c->srv, addr, sizeof addr);
	rd.leader = addr;
	if (addr[0] != '\0')
		snprintf(msg, sizeof msg, "not the leader: node %llu at %s is",
		    (unsigned long long)rd.leader_id, addr);
	else
		snprintf(msg, sizeof msg, "not the leader, and no leader known yet");
	r.id = id;
	r.code = SEMD__CODE__UNAVAILABLE;
	r.message = msg;
	r.body_case = SEMD__REPLY__BODY_REDIRECT;
	r.redirect = &rd;
	conn_reply(NULL, c, &r);
}

/* With a log: open c's client in the log (its loop's batch). */
static void conn_log_open(struct conn *c, const char *principal)
{
	sm_batch_open(&c->w->batch, c->cid, principal, c->secret,
	    c->local ? SM_CLIENT_LOCAL : 0);
	c->logged = true;
}

/* This node stopped leading: tell every client of w where to go, close it. */
void conn_drop_all(struct worker *w)
{
	struct list_head *pos, *tmp;
	struct conn *c;

	server_lock(w);
	list_for_each(pos, &w->conns) {
		c = list_entry(pos, struct conn, entry);
		if (!c->closing && !c->dead)
			conn_redirect(c, 0);
	}
	server_unlock(w);
	list_for_each_safe(pos, tmp, &w->conns)
		conn_close_later(list_entry(pos, struct conn, entry));
}

/*
 * A cluster request: STATUS answered here from the node's own view, a
 * change handed to the log's thread (answered from there).
 */
static void conn_cluster(struct conn *c, const Semd__Request *req)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	uint8_t *buf = NULL;

	r.id = req->id;
	if (c->srv->durable == NULL) {
		r.code = SEMD__CODE__INVALID_ARGUMENT;
		r.message = (char *)"this semd keeps its state in memory: no cluster";
		conn_reply(NULL, c, &r);
		return;
	}
	if (req->cluster->action == SEMD__CLUSTER__ACTION__STATUS) {
		if (durable_status(c->srv, &r, &buf) != 0) {
			r.code = SEMD__CODE__RESOURCE_EXHAUSTED;
			r.message = (char *)"out of memory";
			conn_reply(NULL, c, &r);
			return;
		}
		conn_reply(NULL, c, &r);
		semd__cluster_status__free_unpacked(r.cluster, NULL);
		return;
	}
	if (!durable_serving(c->srv)) {
		conn_redirect(c, req->id);
		return;
	}
	if (durable_cluster_change(c->srv, c->cid, req->id, req->cluster) != 0) {
		r.code = SEMD__CODE__RESOURCE_EXHAUSTED;
		r.message = (char *)"out of memory";
		conn_reply(NULL, c, &r);
	}
}

/*
 * Answer PROTOCOL_ERROR (id 0) to what could not be decoded: through the
 * state machine in memory (it counts it); with a log, straight back, since
 * nothing of the state changes.
 */
static void conn_protocol_error(struct conn *c, const char *why)
{
	Semd__Reply r = SEMD__REPLY__INIT;

	if (c->srv->durable == NULL) {
		sm_protocol_error(c->srv->sm, c->client, why);
		return;
	}
	r.code = SEMD__CODE__PROTOCOL_ERROR;
	r.message = (char *)why;
	conn_reply(NULL, c, &r);
}

/* Arm the handshake or idle timer. */
static void conn_arm_timer(struct conn *c)
{
	struct timeval tv;
	uint32_t ms;

	ms = c->hello ? SRV_LIVE(c->srv, idle_timeout_ms) : SRV_LIVE(c->srv, handshake_timeout_ms);
	if (ms == 0) {
		evtimer_del(c->timer);
		return;
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(c->timer, &tv);
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
		conn_protocol_error(c, "no hello within the handshake timeout");
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
		struct timeval tv;
		uint64_t left = idle_ms - idle;

		tv.tv_sec = (time_t)(left / 1000);
		tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
		evtimer_add(c->timer, &tv);
		return;
	}
	log_info("%s: idle for %" PRIu64 " ms, closing", c->peer, idle);
	conn_close_later(c);
}

/*
 * Requests are unpacked into this arena: a bump allocator reset after each
 * request, so decoding a small request never touches the heap. A request
 * that does not fit (a big Ping payload) spills to malloc for the rest.
 * The state machine copies what it keeps. One arena per thread.
 */
#define ARENA_SIZE	4096

static _Thread_local struct {
	_Alignas(16) uint8_t	buf[ARENA_SIZE];
	size_t			used;
	unsigned int		spilled;	/* heap blocks handed out */
} conn_arena;

/* ProtobufCAllocator.alloc: bump, or malloc when the arena is full. */
static void *conn_arena_alloc(void *data, size_t size)
{
	size_t sz = (size + 15) & ~(size_t)15;
	void *p;

	if (sz >= size && ARENA_SIZE - conn_arena.used >= sz) {
		p = conn_arena.buf + conn_arena.used;
		conn_arena.used += sz;
		return p;
	}
	p = malloc(size);
	if (p != NULL)
		conn_arena.spilled++;
	return p;
}

/* ProtobufCAllocator.free: only spilled blocks go back to the heap. */
static void conn_arena_free(void *data, void *p)
{
	uint8_t *b = p;

	if (b >= conn_arena.buf && b < conn_arena.buf + ARENA_SIZE)
		return;
	free(p);
}

static ProtobufCAllocator conn_allocator = {
	.alloc = conn_arena_alloc,
	.free = conn_arena_free,
	.allocator_data = NULL,
};

/* Let go of an unpacked request and reset the arena. */
static void conn_arena_reset(Semd__Request *req)
{
	if (req != NULL && conn_arena.spilled > 0)
		semd__request__free_unpacked(req, &conn_allocator);
	conn_arena.used = 0;
	conn_arena.spilled = 0;
}

/* Make room for len more staged bytes. */
static int conn_wbuf_grow(struct conn *c, size_t len)
{
	size_t cap = c->wcap ? c->wcap : 512;
	uint8_t *p;

	while (cap - c->wlen < len) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	p = realloc(c->wbuf, cap);
	if (p == NULL)
		return -ENOMEM;
	c->wbuf = p;
	c->wcap = cap;
	return 0;
}

/* Take a connection off the flush queue (if it is on it). */
static void conn_unqueue(struct conn *c)
{
	if (c->flush_entry.next != NULL)
		list_del_init(&c->flush_entry);
}

/* Cut a client off: nothing more is written, it is freed soon. */
static void conn_drop(struct conn *c)
{
	c->dead = true;
	c->wlen = 0;
	conn_unqueue(c);
	atomic_fetch_add_explicit(&c->w->dropped, 1, memory_order_relaxed);
	event_active(c->kill, EV_TIMEOUT, 0);
}

/* Queue c for the one write at the end of this loop turn. */
static void conn_queue_flush(struct conn *c)
{
	struct worker *w = c->w;

	if (c->flush_entry.next == NULL || list_empty(&c->flush_entry)) {
		list_add_tail(&c->flush_entry, &w->flushq);
		if (!w->in_read)
			event_active(w->flush_ev, EV_TIMEOUT, 0);
	}
}

/* Bytes written out of turn, still waiting for the socket to drain. */
static size_t conn_backlog_len(struct conn *c)
{
	if (c->ssl != NULL)
		return c->tlen - c->toff;
	return c->backlog ? evbuffer_get_length(bufferevent_get_output(c->bev)) : 0;
}

/* After staging: cut off a client whose unread replies pass max-output. */
static void conn_check_output(struct conn *c)
{
	size_t queued;

	queued = c->wlen + conn_backlog_len(c);
	if (queued > SRV_LIVE(c->srv, max_output)) {
		log_warn("%s: does not read its replies (%zu bytes queued, max-output %u), dropped",
		    c->peer, queued, SRV_LIVE(c->srv, max_output));
		conn_drop(c);
		return;
	}
	conn_queue_flush(c);
}

/*
 * A frame in a worker's mailbox: for whom, how long; or, with len
 * MBOX_DROP, cut c off, with MBOX_CLOSE, close c once its replies are out.
 */
struct mbox_rec {
	struct conn	*c;
	uint32_t	len;
};
#define MBOX_DROP	UINT32_MAX
#define MBOX_CLOSE	(UINT32_MAX - 1)
#define MBOX_RESUME	(UINT32_MAX - 2)

/*
 * With a log, a connection stops being read while it has more than
 * CONN_PROPOSED_MAX bytes of requests on their way through the log, and is
 * read again below half of it: a client that sends faster than the log
 * commits is slowed down (its socket fills), not buffered without bound.
 */
#define CONN_PROPOSED_MAX	(1u << 20)

/* Append a record header to w's mailbox (room is known to be there). */
static uint8_t *conn_mbox_rec(struct worker *w, struct conn *c, uint32_t len)
{
	struct mbox_rec rec = { c, len };
	uint8_t *p = w->mbox + w->mlen;

	if (w->mlen == 0)
		server_wake_later(w);
	memcpy(p, &rec, sizeof rec);
	w->mlen += sizeof rec + (len >= MBOX_RESUME ? 0 : len);
	return p + sizeof rec;
}

/*
 * A reply for a client of another worker: pack it into that worker's
 * mailbox as a record and a frame, and have the worker woken.
 */
static void conn_mbox_put(struct conn *c, const Semd__Reply *r)
{
	struct worker *w = c->w;
	size_t len, need, cap;
	uint8_t *p;
	bool fast;

	fast = fastpb_reply_bound(r, &len);
	if (!fast)
		len = semd__reply__get_packed_size(r);
	/* Keep room for one drop record after it. */
	need = 2 * sizeof(struct mbox_rec) + FRAME_HDR + len;
	if (w->mcap - w->mlen < need) {
		cap = w->mcap ? w->mcap : 4096;
		while (cap - w->mlen < need && cap <= SIZE_MAX / 2)
			cap *= 2;
		p = cap - w->mlen >= need ? realloc(w->mbox, cap) : NULL;
		if (p == NULL) {
			/* The client would miss a reply: its worker drops it. */
			log_warn("%s: out of memory for a reply, dropping the client",
			    c->peer);
			if (w->mcap - w->mlen < sizeof(struct mbox_rec)) {
				/* Not even the reserve: never lose a grant. */
				log_err("out of memory: cannot deliver a reply, exiting");
				abort();
			}
			conn_mbox_rec(w, c, MBOX_DROP);
			return;
		}
		w->mbox = p;
		w->mcap = cap;
	}
	/* Pack past the header, then write the header with the real size. */
	p = w->mbox + w->mlen + sizeof(struct mbox_rec);
	if (fast)
		len = fastpb_reply_pack(r, p + FRAME_HDR);
	else
		semd__reply__pack(r, p + FRAME_HDR);
	frame_put_header(p, (uint32_t)len);
	conn_mbox_rec(w, c, (uint32_t)(FRAME_HDR + len));
}

/* Under the lock: stage the frames other workers left for our clients. */
void conn_mbox_deliver(struct worker *w)
{
	struct mbox_rec rec;
	size_t off = 0;
	struct conn *c;

	while (off < w->mlen) {
		memcpy(&rec, w->mbox + off, sizeof rec);
		off += sizeof rec;
		c = rec.c;
		if (rec.len == MBOX_DROP) {
			if (!c->dead)
				conn_drop(c);
			continue;
		}
		if (rec.len == MBOX_CLOSE) {
			if (!c->dead)
				conn_close_later(c);
			continue;
		}
		if (rec.len == MBOX_RESUME) {
			if (!c->dead)
				conn_resume(c);
			continue;
		}
		if (!c->dead && c->wcap - c->wlen < rec.len &&
		    conn_wbuf_grow(c, rec.len) != 0) {
			log_warn("%s: out of memory for a reply, dropping the client",
			    c->peer);
			conn_drop(c);
		}
		if (!c->dead) {
			memcpy(c->wbuf + c->wlen, w->mbox + off, rec.len);
			c->wlen += rec.len;
			conn_check_output(c);
		}
		off += rec.len;
	}
	w->mlen = 0;
	/* A burst's memory is not kept (the reserve of one record stays). */
	if (w->mcap > 65536) {
		uint8_t *p = realloc(w->mbox, 4096);

		if (p != NULL) {
			w->mbox = p;
			w->mcap = 4096;
		}
	}
}

/*
 * The sm_out sink, under the lock. Pack one reply as a frame into the
 * connection's staging buffer; the staged replies go out in one write at
 * the end of the loop turn. A client of another worker gets it through
 * that worker's mailbox.
 */
void conn_reply(void *ctx, void *conn, const Semd__Reply *r)
{
	struct conn *c = conn;
	size_t len;
	bool fast;

	/* Abnormal events get a log line: limits hit, internal errors. */
	if (r->code == SEMD__CODE__RESOURCE_EXHAUSTED || r->code == SEMD__CODE__INTERNAL)
		log_notice("%s: request %" PRIu64 ": %s", c->peer, r->id, r->message);
	/* Only c's own thread reads its state: dead is checked at delivery. */
	if (c->w != worker_self) {
		conn_mbox_put(c, r);
		return;
	}
	if (c->dead)
		return;
	/* The hot replies by hand into room for their largest size. */
	fast = fastpb_reply_bound(r, &len);
	if (!fast)
		len = semd__reply__get_packed_size(r);
	if (c->wcap - c->wlen < FRAME_HDR + len &&
	    conn_wbuf_grow(c, FRAME_HDR + len) != 0) {
		log_warn("%s: out of memory for a reply, dropping the client",
		    c->peer);
		conn_drop(c);
		return;
	}
	if (fast)
		len = fastpb_reply_pack(r, c->wbuf + c->wlen + FRAME_HDR);
	else
		semd__reply__pack(r, c->wbuf + c->wlen + FRAME_HDR);
	frame_put_header(c->wbuf + c->wlen, (uint32_t)len);
	c->wlen += FRAME_HDR + len;
	conn_check_output(c);
}

/* Stop reading c (its requests wait in the log). */
static void conn_pause(struct conn *c)
{
	c->paused = true;
	if (c->rev != NULL)
		event_del(c->rev);
	else
		bufferevent_disable(c->bev, EV_READ);
}

/* Under the lock: stop reading c while too much of it waits in the log. */
static void conn_maybe_pause(struct conn *c)
{
	if (c->srv->durable != NULL && !c->paused && !c->closing && !c->dead &&
	    c->proposed > CONN_PROPOSED_MAX)
		conn_pause(c);
}

/* Read c again (on its own thread, under the lock). */
static void conn_resume(struct conn *c)
{
	c->resuming = false;
	if (!c->paused || c->closing)
		return;
	c->paused = false;
	if (c->rev != NULL)
		event_add(c->rev, NULL);
	else
		bufferevent_enable(c->bev, EV_READ);
	/* Read-ahead may hold records the socket will not announce again. */
	if (c->ssl != NULL && SSL_has_pending(c->ssl))
		event_active(c->rev, EV_READ, 0);
}

/*
 * With a log, under the lock (the log's thread): len bytes of c's requests
 * were applied; a paused connection below half its allowance is read again
 * (by its own loop: a resume record in its mailbox).
 */
void conn_applied_locked(struct conn *c, size_t len)
{
	struct worker *w = c->w;

	c->proposed = c->proposed > len ? c->proposed - len : 0;
	if (!c->paused || c->proposed > CONN_PROPOSED_MAX / 2 || c->resuming)
		return;
	if (w->mcap - w->mlen < 2 * sizeof(struct mbox_rec)) {
		uint8_t *p = realloc(w->mbox, w->mcap * 2);

		if (p == NULL)
			return;		/* read again at the next one applied */
		w->mbox = p;
		w->mcap *= 2;
	}
	c->resuming = true;
	conn_mbox_rec(w, c, MBOX_RESUME);
}

/*
 * The sm_out close effect, under the lock: the client's session ended
 * (its lease ran out while it was silent); close the connection once the
 * notices staged for it are written. Another worker's client gets a close
 * record in its mailbox, behind the frames already there.
 */
void conn_close_effect(void *ctx, void *conn)
{
	struct conn *c = conn;
	struct worker *w = c->w;

	log_info("%s: session expired, closing", c->peer);
	if (w == worker_self) {
		if (!c->dead)
			conn_close_later(c);
		return;
	}
	if (w->mcap - w->mlen < 2 * sizeof(struct mbox_rec)) {
		uint8_t *p = realloc(w->mbox, w->mcap * 2);

		if (p == NULL)
			return;	/* it closes when its next request is refused */
		w->mbox = p;
		w->mcap *= 2;
	}
	conn_mbox_rec(w, c, MBOX_CLOSE);
}

/* The sm_out note effect: an operator's line, with the peer when known. */
void conn_note(void *ctx, void *conn, const char *msg)
{
	const struct conn *c = conn;

	(void)ctx;
	log_notice("%s: %s", c != NULL ? c->peer : "(not on this node)", msg);
}

/*
 * TLS: the client is gone (or spoke nonsense): nothing more is written, it
 * is freed from the loop. The reason goes to the debug log.
 */
static void conn_tls_lost(struct conn *c, const char *what, int sslerr)
{
	unsigned long e = ERR_peek_error();
	char why[256];

	if (e != 0)
		ERR_error_string_n(e, why, sizeof why);
	else if (sslerr == SSL_ERROR_SYSCALL && errno != 0)
		snprintf(why, sizeof why, "%s", strerror(errno));
	else
		snprintf(why, sizeof why, "connection closed by peer");
	ERR_clear_error();
	log_debug("%s: TLS %s: %s", c->peer, what, why);
	c->dead = true;
	c->wlen = 0;
	conn_unqueue(c);
	event_active(c->kill, EV_TIMEOUT, 0);
}

/* TLS: wake up when the socket drains. */
static void conn_tls_want_write(struct conn *c)
{
	if (!c->tls_wwait) {
		c->tls_wwait = true;
		event_add(c->wev, NULL);
	}
}

/*
 * TLS: hand p[0..len) to SSL_write() until it is all taken or the socket
 * is full. With partial writes each call seals and sends one record (16
 * KiB of plaintext at most): a turn's replies, staged together, are one
 * record and one write(2). Returns the bytes taken, or -1 when the
 * connection is lost.
 */
static ssize_t conn_tls_write(struct conn *c, const uint8_t *p, size_t len)
{
	size_t off = 0;
	int n, e;

	c->tls_bufs = true;
	while (off < len) {
		ERR_clear_error();
		errno = 0;
		n = SSL_write(c->ssl, p + off, len - off > INT_MAX ? INT_MAX :
		    (int)(len - off));
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		e = SSL_get_error(c->ssl, n);
		if (e == SSL_ERROR_WANT_WRITE) {
			conn_tls_want_write(c);
			break;
		}
		if (e == SSL_ERROR_WANT_READ) {
			c->tls_wwant_r = true;	/* the read callback retries */
			break;
		}
		conn_tls_lost(c, "write", e);
		return -1;
	}
	return (ssize_t)off;
}

/*
 * TLS: keep p[0..len) for later, behind what is kept already. The next
 * SSL_write() starts with the same bytes and is at least as long, as
 * OpenSSL wants of a retry (the buffer may move).
 */
static int conn_tls_keep(struct conn *c, const uint8_t *p, size_t len)
{
	size_t cap;
	uint8_t *nb;

	if (c->toff > 0 && c->tcap - c->tlen < len) {
		memmove(c->tbuf, c->tbuf + c->toff, c->tlen - c->toff);
		c->tlen -= c->toff;
		c->toff = 0;
	}
	if (c->tcap - c->tlen < len) {
		cap = c->tcap ? c->tcap : 4096;
		while (cap - c->tlen < len) {
			if (cap > SIZE_MAX / 2)
				return -ENOMEM;
			cap *= 2;
		}
		if ((nb = realloc(c->tbuf, cap)) == NULL)
			return -ENOMEM;
		c->tbuf = nb;
		c->tcap = cap;
	}
	memcpy(c->tbuf + c->tlen, p, len);
	c->tlen += len;
	return 0;
}

/* TLS: write what was kept back; finish a pending close once it is out. */
static void conn_tls_drain(struct conn *c)
{
	ssize_t n;

	if (c->dead || c->tlen == c->toff)
		return;
	if ((n = conn_tls_write(c, c->tbuf + c->toff, c->tlen - c->toff)) < 0)
		return;
	c->toff += (size_t)n;
	if (c->toff < c->tlen)
		return;
	c->toff = c->tlen = 0;
	if (c->tcap > 16384) {
		free(c->tbuf);
		c->tbuf = NULL;
		c->tcap = 0;
	}
	if (c->closing)
		event_active(c->kill, EV_TIMEOUT, 0);
}

/* TLS: the staged replies in one SSL_write(), or behind the backlog. */
static void conn_tls_flush(struct conn *c)
{
	ssize_t n = 0;

	if (c->tlen == c->toff && (n = conn_tls_write(c, c->wbuf, c->wlen)) < 0)
		return;
	if ((size_t)n < c->wlen &&
	    conn_tls_keep(c, c->wbuf + n, c->wlen - (size_t)n) != 0) {
		log_warn("%s: out of memory for replies, dropping the client",
		    c->peer);
		conn_drop(c);
		return;
	}
	c->wlen = 0;
}

/* TLS: the socket drained (or an SSL_read() waited for it to). */
static void conn_tls_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	c->tls_wwait = false;
	if (c->dead)
		return;
	if (c->tls_rwant_w) {
		c->tls_rwant_w = false;
		event_active(c->rev, EV_READ, 0);
	}
	if (!c->tls_wwant_r)
		conn_tls_drain(c);
}

/* A big reply's buffer is not kept for an idle connection. */
static void conn_wbuf_trim(struct conn *c)
{
	if (c->wcap > 16384) {
		free(c->wbuf);
		c->wbuf = NULL;
		c->wcap = 0;
	}
}

/*
 * Send the staged replies: straight to the socket when nothing is queued
 * before them (one write(2), as a plain request/reply server does), the
 * rest through the bufferevent, which writes it when the socket drains.
 * TLS the same way, through SSL_write() and our own backlog.
 */
static void conn_flush(struct conn *c)
{
	struct evbuffer *out;
	size_t off = 0;
	ssize_t n;

	conn_unqueue(c);
	if (c->wlen == 0 || c->dead)
		return;
	if (c->ssl != NULL) {
		conn_tls_flush(c);
		conn_wbuf_trim(c);
		return;
	}
	if (c->direct && !c->backlog) {
		do
			n = write(c->fd, c->wbuf, c->wlen);
		while (n < 0 && errno == EINTR);
		if (n > 0)
			off = (size_t)n;
		/* On an error the bufferevent's own write reports it. */
	}
	if (off < c->wlen) {
		out = bufferevent_get_output(c->bev);
		if (evbuffer_add(out, c->wbuf + off, c->wlen - off) != 0) {
			log_warn("%s: out of memory for replies, dropping the client",
			    c->peer);
			conn_drop(c);
			return;
		}
		c->backlog = true;
	}
	c->wlen = 0;
	conn_wbuf_trim(c);
}

/* Write every connection's staged replies (one write each). */
void conn_flush_all(struct worker *w)
{
	while (!list_empty(&w->flushq))
		conn_flush(list_first_entry(&w->flushq, struct conn,
		    flush_entry));
}

/* A string field with a NUL byte: INVALID_ARGUMENT, the request not run. */
static int conn_refuse_nul(struct conn *c, uint64_t id)
{
	Semd__Reply r = SEMD__REPLY__INIT;

	r.id = id;
	r.code = SEMD__CODE__INVALID_ARGUMENT;
	r.message = "a string field holds a NUL byte";
	conn_reply(NULL, c, &r);
	return SM_OK;
}

/*
 * After a read: a frame left incomplete must be completed within
 * frame-timeout (nginx's client_header_timeout), or a client that sends
 * most of a frame and stops would hold its buffer for ever. The timer runs
 * from the read that began the frame: it is re-armed when a frame was
 * completed by this read, and left running while the same frame trickles.
 */
static void conn_frame_deadline(struct conn *c, uint64_t frames_before)
{
	struct evbuffer *in = c->direct ? c->in : bufferevent_get_input(c->bev);
	uint32_t ms = SRV_LIVE(c->srv, frame_timeout_ms);
	struct timeval tv;

	if (c->closing || c->dead || c->ftimer == NULL)
		return;
	if (ms == 0 || in == NULL || evbuffer_get_length(in) == 0) {
		evtimer_del(c->ftimer);
		return;
	}
	if (evtimer_pending(c->ftimer, NULL) && c->frames == frames_before)
		return;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(c->ftimer, &tv);
}

/* A frame was not completed within frame-timeout: PROTOCOL_ERROR, close. */
static void conn_ftimer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	if (c->closing || c->dead)
		return;
	log_notice("%s: a frame not completed within frame-timeout %u ms, closing",
	    c->peer, SRV_LIVE(c->srv, frame_timeout_ms));
	server_lock(c->w);
	conn_protocol_error(c, "frame not completed within the frame timeout");
	server_unlock(c->w);
	conn_close_later(c);
}

/* Decode one frame's payload and run it. Returns false to stop reading. */
static bool conn_handle(struct conn *c, const uint8_t *data, size_t plen)
{
	struct server *srv = c->srv;
	struct fastpb_req f;
	struct sm_caller who;
	Semd__Request *req;
	bool fast;
	int r;

	/* Down, Up and Ping by hand (strings into the arena), or protobuf-c. */
	fast = fastpb_request(&f, data, plen, (char *)conn_arena.buf, ARENA_SIZE);
	req = fast ? &f.req : semd__request__unpack(&conn_allocator, plen, data);
	if (req == NULL) {
		conn_arena_reset(NULL);
		log_notice("%s: undecodable request of %zu bytes, closing",
		    c->peer, plen);
		conn_protocol_error(c, "undecodable request (not a semd.Request)");
		conn_close_later(c);
		return false;
	}
	c->frames++;
	/* A string with a NUL byte would reach the state cut short. */
	if (!fast && !fastpb_strings_clean(&semd__request__descriptor, data, plen)) {
		conn_refuse_nul(c, req->id);
		conn_arena_reset(req);
		return !c->closing && !c->dead;
	}
	if (srv->durable != NULL) {
		/*
		 * With a log the request goes into this loop's batch, as it came
		 * and with the access decision; it is answered once applied.
		 * Hello is taken as seen from here on, so the requests behind
		 * it are checked against the ACL (a failed Hello closes).
		 */
		if (!access_check(c, req, &who)) {
			/* denied and answered */
		} else if (req->op_case == SEMD__REQUEST__OP_CLUSTER) {
			conn_cluster(c, req);
		} else if (!durable_serving(srv)) {
			/* Not the leader: where to go, then close. */
			conn_redirect(c, req->id);
			conn_arena_reset(fast ? NULL : req);
			conn_close_later(c);
			return false;
		} else {
			if (!c->logged)
				conn_log_open(c, access_principal(c->id));
			sm_batch_request(&c->w->batch, c->cid, &who, data, plen);
			c->proposed += plen;
		}
		if (req->op_case == SEMD__REQUEST__OP_HELLO && !c->hello) {
			c->hello = true;
			conn_arm_timer(c);
		}
		conn_arena_reset(fast ? NULL : req);
		return !c->closing && !c->dead;
	}
	/* The time the batch was read: one clock read per batch. */
	r = access_check(c, req, &who) ?
	    sm_request(srv->sm, c->client, req, &who, c->last_input_ms) : SM_OK;
	conn_arena_reset(fast ? NULL : req);
	if (!c->hello && sm_client_session(c->client) != 0) {
		c->hello = true;
		conn_arm_timer(c);
	}
	if (r == SM_CLOSE) {
		log_info("%s: protocol error, closing", c->peer);
		conn_close_later(c);
		return false;
	}
	return !c->closing && !c->dead;
}

/* A frame over max-frame: answer PROTOCOL_ERROR and close. */
static void conn_too_big(struct conn *c, size_t plen)
{
	char why[128];

	snprintf(why, sizeof why, "frame of %zu bytes is over max-frame %u",
	    plen, SRV_LIVE(c->srv, max_frame));
	log_notice("%s: %s, closing", c->peer, why);
	conn_protocol_error(c, why);
	conn_close_later(c);
}

/*
 * Run the whole frames at the start of p[0..len); returns the bytes they
 * took. *go turns false when the connection must not read on.
 */
static size_t conn_run_frames(struct conn *c, const uint8_t *p, size_t len,
    bool *go)
{
	size_t off = 0, plen;

	while (*go && len - off >= FRAME_HDR) {
		plen = (size_t)p[off] << 24 | (size_t)p[off + 1] << 16 |
		    (size_t)p[off + 2] << 8 | p[off + 3];
		if (plen > SRV_LIVE(c->srv, max_frame)) {
			conn_too_big(c, plen);
			*go = false;
			break;
		}
		if (len - off - FRAME_HDR < plen)
			break;
		*go = conn_handle(c, p + off + FRAME_HDR, plen);
		off += FRAME_HDR + plen;
	}
	return off;
}

/*
 * Decode and run every whole frame in the input buffer: the frames inside
 * its first chunk in place (the usual case), a frame that straddles chunks
 * after a pullup.
 */
static void conn_run_input(struct conn *c, struct evbuffer *in)
{
	struct evbuffer_iovec v;
	uint8_t hdr[FRAME_HDR], *data;
	size_t plen, avail, off;
	bool go = true;

	while (go && !c->closing && !c->dead) {
		avail = evbuffer_get_length(in);
		if (avail < FRAME_HDR)
			break;
		off = 0;
		if (evbuffer_peek(in, -1, NULL, &v, 1) >= 1)
			off = conn_run_frames(c, v.iov_base, v.iov_len, &go);
		if (off > 0) {
			evbuffer_drain(in, off);
			continue;
		}
		if (!go)
			break;
		/* The next frame (or its header) straddles chunks. */
		evbuffer_copyout(in, hdr, FRAME_HDR);
		plen = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 |
		    (size_t)hdr[2] << 8 | hdr[3];
		if (plen > SRV_LIVE(c->srv, max_frame)) {
			conn_too_big(c, plen);
			break;
		}
		if (avail < FRAME_HDR + plen)
			break;
		data = evbuffer_pullup(in, (ev_ssize_t)(FRAME_HDR + plen));
		if (data == NULL) {
			log_warn("%s: out of memory reading a frame", c->peer);
			conn_close_later(c);
			break;
		}
		go = conn_handle(c, data + FRAME_HDR, plen);
		evbuffer_drain(in, FRAME_HDR + plen);
	}
}

/* Start a batch of input: replies are staged until conn_end_read(). */
static bool conn_begin_read(struct conn *c)
{
	bool was = c->w->in_read;

	c->w->in_read = true;
	c->last_input_ms = server_now();
	return was;
}

/* End a batch: one write per connection with staged replies. */
static void conn_end_read(struct worker *w, bool was_in_read)
{
	w->in_read = was_in_read;
	if (!was_in_read)
		conn_flush_all(w);
	/* The batch's requests go to the log as one (group commit). */
	if (w->batch.len > 0)
		durable_submit(w->srv, &w->batch);
	if (w->batch.cap > 65536)
		sm_batch_free(&w->batch);	/* a burst's memory is not kept */
}

/* Input through the bufferevent (connections that are not direct). */
static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct worker *w = c->w;
	bool was = conn_begin_read(c);
	uint64_t frames = c->frames;

	server_lock(w);
	conn_run_input(c, bufferevent_get_input(bev));
	conn_maybe_pause(c);
	server_unlock(w);
	conn_frame_deadline(c, frames);
	conn_end_read(w, was);
}

/*
 * Run n bytes of input: the whole frames from buf where they lie, only a
 * partial frame is kept (in c->in, made when first needed, where the
 * following reads append).
 */
static void conn_input(struct conn *c, const uint8_t *buf, size_t n)
{
	struct worker *w = c->w;
	uint64_t frames = c->frames;
	size_t off = 0;
	bool was, go = true;

	was = conn_begin_read(c);
	server_lock(w);
	if (c->in != NULL && evbuffer_get_length(c->in) > 0) {
		if (evbuffer_add(c->in, buf, n) != 0) {
			log_warn("%s: out of memory reading a frame", c->peer);
			conn_close_later(c);
		} else {
			conn_run_input(c, c->in);
		}
	} else {
		off = conn_run_frames(c, buf, n, &go);
		if (go && !c->closing && !c->dead && off < n &&
		    ((c->in == NULL && (c->in = evbuffer_new()) == NULL) ||
		    evbuffer_add(c->in, buf + off, n - off) != 0)) {
			log_warn("%s: out of memory reading a frame", c->peer);
			conn_close_later(c);
		}
	}
	conn_maybe_pause(c);
	server_unlock(w);
	conn_frame_deadline(c, frames);
	conn_end_read(w, was);
}

/* Input of a plain socket: one read(2) into a shared buffer, then run. */
static void conn_raw_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	ssize_t n;

	if (c->closing || c->dead)
		return;
	n = read(fd, conn_rbuf, sizeof conn_rbuf);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		if (n < 0)
			log_debug("%s: %s", c->peer, strerror(errno));
		else
			log_debug("%s: closed by peer", c->peer);
		conn_free(c);
		return;
	}
	conn_input(c, conn_rbuf, (size_t)n);
}

/*
 * TLS input: SSL_read() while read-ahead holds whole records (the first
 * call reads the socket once, taking in all that arrived), into the shared
 * buffer, then run as a plain read. Records that did not fit are read at
 * the next turn: the socket will not announce them again.
 */
static void conn_tls_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	size_t len = 0;
	bool full = false, gone = false;
	int n, e;

	if (c->closing || c->dead)
		return;
	c->tls_bufs = true;
	if (c->tls_wwant_r) {
		c->tls_wwant_r = false;
		conn_tls_drain(c);
		if (c->dead)
			return;
	}
	for (;;) {
		if (sizeof conn_rbuf - len < TLS_RECORD_MAX) {
			full = SSL_has_pending(c->ssl) != 0;
			break;
		}
		ERR_clear_error();
		errno = 0;
		n = SSL_read(c->ssl, conn_rbuf + len, (int)(sizeof conn_rbuf - len));
		if (n > 0) {
			len += (size_t)n;
			if (!SSL_has_pending(c->ssl))
				break;
			continue;
		}
		e = SSL_get_error(c->ssl, n);
		if (e == SSL_ERROR_WANT_READ)
			break;
		if (e == SSL_ERROR_WANT_WRITE) {
			c->tls_rwant_w = true;
			conn_tls_want_write(c);
			break;
		}
		if (e == SSL_ERROR_ZERO_RETURN) {
			ERR_clear_error();
			log_debug("%s: closed by peer", c->peer);
		} else {
			conn_tls_lost(c, "read", e);
		}
		gone = true;
		break;
	}
	if (len > 0)
		conn_input(c, conn_rbuf, len);
	if (gone) {
		conn_free(c);
		return;
	}
	if (full && !c->paused && !c->closing && !c->dead)
		event_active(c->rev, EV_READ, 0);
}

/* Output drained: finish a pending close. */
static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	c->backlog = evbuffer_get_length(bufferevent_get_output(bev)) > 0;
	if (c->closing)
		conn_free(c);
}

/* EOF or error on the socket: the client is gone. */
static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	if (what & BEV_EVENT_ERROR)
		log_debug("%s: %s", c->peer,
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	else
		log_debug("%s: closed by peer", c->peer);
	conn_free(c);
}

/* Deferred close (from inside the state machine, or after a drop). */
static void conn_kill_cb(evutil_socket_t fd, short what, void *arg)
{
	conn_free(arg);
}

/* Close once the replies queued so far are written. */
void conn_close_later(struct conn *c)
{
	struct timeval tv = { 5, 0 };
	bool empty;

	if (c->closing)
		return;
	c->closing = true;
	evtimer_del(c->ftimer);
	conn_flush(c);
	if (c->bev != NULL)
		bufferevent_disable(c->bev, EV_READ);
	if (c->rev != NULL)
		event_del(c->rev);
	evtimer_add(c->timer, &tv);
	if (c->ssl != NULL)
		empty = c->tlen == c->toff;
	else
		empty = evbuffer_get_length(bufferevent_get_output(c->bev)) == 0;
	if (empty)
		event_active(c->kill, EV_TIMEOUT, 0);
}

/* Socket options for a TCP client: no Nagle, keepalive probes. */
static void conn_tune_tcp(struct conn *c, int fd, uint32_t keepalive_s)
{
	int one = 1, idle = (int)keepalive_s, intvl, cnt = 3;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
		log_debug("%s: TCP_NODELAY: %s", c->peer, strerror(errno));
	if (idle == 0)
		return;
	intvl = idle / 3 > 0 ? idle / 3 : 1;
	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt) != 0)
		log_debug("%s: keepalive: %s", c->peer, strerror(errno));
}

/* Who is at the other end: uid:N over UNIX sockets, anonymous over TCP. */
static void conn_principal(struct conn *c, int fd, struct sockaddr *sa,
    bool is_unix, char *principal, size_t len)
{
	char host[INET6_ADDRSTRLEN];
	struct ucred cred;
	socklen_t clen = sizeof cred;

	if (is_unix) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
			snprintf(principal, len, "uid:%u", (unsigned)cred.uid);
			snprintf(c->peer, sizeof c->peer, "unix pid %d uid %u",
			    (int)cred.pid, (unsigned)cred.uid);
			return;
		}
		snprintf(principal, len, "anonymous");
		snprintf(c->peer, sizeof c->peer, "unix peer");
		return;
	}
	snprintf(principal, len, "anonymous");
	if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
		snprintf(c->peer, sizeof c->peer, "[%s]:%u", host,
		    ntohs(s6->sin6_port));
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
		snprintf(c->peer, sizeof c->peer, "%s:%u", host,
		    ntohs(s4->sin_port));
	}
}

/* Close a client we will not serve (a TLS one with its SSL). */
static void conn_refuse_fd(int fd, SSL *ssl)
{
	SSL_free(ssl);
	close(fd);
}

/* Free the I/O of a connection that never opened (or is done). */
static void conn_free_io(struct conn *c)
{
	if (c->timer != NULL)
		event_free(c->timer);
	if (c->ftimer != NULL)
		event_free(c->ftimer);
	if (c->kill != NULL)
		event_free(c->kill);
	if (c->rev != NULL)
		event_free(c->rev);
	if (c->wev != NULL)
		event_free(c->wev);
	if (c->in != NULL)
		evbuffer_free(c->in);
	if (c->bev != NULL)
		bufferevent_free(c->bev);	/* closes the socket */
	if (c->ssl != NULL) {
		SSL_free(c->ssl);
		close(c->fd);
	}
	free(c->tbuf);
	free(c->wbuf);
	free(c);
}

/*
 * The events of a new connection. A plain socket is read by us and
 * written by us, with a bufferevent for what the socket cannot take at
 * once; a TLS one is read and written by us through its SSL. Returns 0, or
 * -ENOMEM (what was made stays for conn_free_io()).
 */
static int conn_make_io(struct conn *c, int fd, SSL *ssl)
{
	struct event_base *base = c->w->base;

	c->timer = evtimer_new(base, conn_timer_cb, c);
	c->ftimer = evtimer_new(base, conn_ftimer_cb, c);
	c->kill = event_new(base, -1, 0, conn_kill_cb, c);
	c->direct = true;
	if (ssl != NULL) {
		c->ssl = ssl;
		c->fd = fd;
		c->rev = event_new(base, fd, EV_READ | EV_PERSIST,
		    conn_tls_read_cb, c);
		c->wev = event_new(base, fd, EV_WRITE, conn_tls_write_cb, c);
		if (c->rev == NULL || c->wev == NULL)
			return -ENOMEM;
	} else {
		c->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
		if (c->bev == NULL) {
			close(fd);
			return -ENOMEM;
		}
		c->fd = fd;
		c->rev = event_new(base, fd, EV_READ | EV_PERSIST,
		    conn_raw_read_cb, c);
		if (c->rev == NULL)
			c->direct = false;	/* read through the bufferevent */
	}
	return c->timer == NULL || c->ftimer == NULL || c->kill == NULL ?
	    -ENOMEM : 0;
}

/*
 * Under the lock: identify c, count it against its quota and open its
 * client in the state (or, with a log, in the log). 0, -EDQUOT (the client
 * was told), or -ENOMEM.
 */
static int conn_open_locked(struct conn *c, bool is_unix, const uint8_t *secret,
    char *principal, size_t plen)
{
	struct server *srv = c->srv;
	int r;

	r = access_open(srv, c->fd, is_unix, c->ssl, &c->id, principal, plen);
	if (r != 0)
		return r;
	if (srv->durable != NULL) {
		/*
		 * Opened in the state when the log gets there; bound then. On a
		 * node that does not lead, opened in the log only if it leads
		 * by the client's first request (conn_log_open).
		 */
		c->cid = durable_client_id(srv);
		memcpy(c->secret, secret, sizeof c->secret);
		c->local = is_unix;
		server_conn_add(srv, c);
		if (durable_serving(srv))
			conn_log_open(c, principal);
	} else {
		c->cid = ++srv->next_client;
		c->client = sm_client_open(srv->sm, c->cid, c, principal, secret,
		    is_unix ? SM_CLIENT_LOCAL : 0, server_now());
		if (c->client == NULL) {
			access_close(c->id);
			c->id = NULL;
			return -ENOMEM;
		}
	}
	list_add_tail(&c->entry, &c->w->conns);
	conn_arm_timer(c);
	c->open = true;
	return 0;
}

/* Give OpenSSL's buffers of this loop's idle TLS clients back. */
static void conn_tls_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = { 2, 0 };
	struct worker *w = arg;
	struct list_head *pos;
	uint64_t now = server_now();
	struct conn *c;

	list_for_each(pos, &w->conns) {
		c = list_entry(pos, struct conn, entry);
		if (c->ssl == NULL || !c->tls_bufs || c->dead || c->wlen > 0 ||
		    now - c->last_input_ms < TLS_IDLE_MS || c->tlen > c->toff ||
		    SSL_has_pending(c->ssl))
			continue;
		if (SSL_free_buffers(c->ssl) == 1)
			c->tls_bufs = false;
	}
	if (w->ntls > 0)
		evtimer_add(w->tls_sweep, &tv);
}

/* Start watching a TLS client: 0, or -1 when its loop cannot. */
static int conn_watch_tls(struct conn *c)
{
	struct timeval tv = { 2, 0 };
	struct worker *w = c->w;

	if (event_add(c->rev, NULL) != 0)
		return -1;
	w->ntls++;
	if (w->tls_sweep == NULL)
		w->tls_sweep = evtimer_new(w->base, conn_tls_sweep_cb, w);
	if (w->tls_sweep != NULL && !evtimer_pending(w->tls_sweep, NULL))
		evtimer_add(w->tls_sweep, &tv);
	/* The Hello may have come with the handshake's last flight. */
	if (SSL_has_pending(c->ssl))
		event_active(c->rev, EV_READ, 0);
	return 0;
}

/* Start reading c (and writing, where a bufferevent does). */
static void conn_watch(struct conn *c, uint32_t max_frame)
{
	if (c->ssl != NULL) {
		if (conn_watch_tls(c) != 0) {
			log_warn("%s: cannot watch a client socket, closing", c->peer);
			conn_free(c);
		}
		return;
	}
	/* Never buffer more than one whole frame of input. */
	bufferevent_setwatermark(c->bev, EV_READ, 0, max_frame + FRAME_HDR + 4096);
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	if (c->direct && event_add(c->rev, NULL) != 0) {
		log_warn("cannot watch a client socket; reading through a buffer");
		event_free(c->rev);
		c->rev = NULL;
		c->direct = false;
	}
	bufferevent_enable(c->bev, c->direct ? EV_WRITE : EV_READ | EV_WRITE);
}

/*
 * Count a new client of worker w (counted: conn_accept() already counted
 * it in srv->nconns). 0, or why not: -ESHUTDOWN, -EMFILE (logged).
 */
static int conn_count(struct worker *w, bool counted, uint32_t *keepalive,
    uint32_t *max_frame)
{
	struct server *srv = w->srv;
	uint32_t max_conns;
	int r;

	server_lock(w);
	r = srv->stopping ? -ESHUTDOWN : counted ? 0 :
	    srv->nconns >= srv->cfg.max_connections ? -EMFILE : 0;
	if (r == 0) {
		/* Count it now: the limit holds across workers. */
		if (!counted)
			srv->nconns++;
		w->nconns++;
	} else if (counted) {
		srv->nconns--;
	}
	*keepalive = srv->cfg.keepalive_s;
	*max_frame = SRV_LIVE(srv, max_frame);
	max_conns = srv->cfg.max_connections;
	server_unlock(w);
	if (r == -EMFILE)
		log_warn("max-connections %u reached, refusing a client",
		    max_conns);
	return r;
}

/* Take back the count of a client that will not be served. */
static void conn_uncount(struct worker *w)
{
	struct server *srv = w->srv;

	server_lock(w);
	srv->nconns--;
	w->nconns--;
	if (srv->stopping && w->nconns == 0)
		event_base_loopexit(w->base, NULL);
	server_unlock(w);
}

/*
 * Serve a new client of worker w: a plain socket fd, or a TLS one whose
 * handshake is done (ssl). counted: conn_accept() already counted it in
 * srv->nconns.
 */
static void conn_start(struct worker *w, int fd, SSL *ssl,
    struct sockaddr *sa, bool is_unix, bool counted)
{
	struct server *srv = w->srv;
	uint8_t secret[SM_SECRET_LEN];
	char principal[64];
	uint32_t keepalive, max_frame;
	struct conn *c;
	int r;

	if (conn_count(w, counted, &keepalive, &max_frame) != 0) {
		conn_refuse_fd(fd, ssl);
		return;
	}
	if (getrandom(secret, sizeof secret, 0) != (ssize_t)sizeof secret) {
		log_warn_errno(errno, "getrandom");
		conn_refuse_fd(fd, ssl);
		conn_uncount(w);
		return;
	}
	if ((c = calloc(1, sizeof *c)) == NULL) {
		log_warn("out of memory accepting a client");
		conn_refuse_fd(fd, ssl);
		conn_uncount(w);
		return;
	}
	c->srv = srv;
	c->w = w;
	INIT_LIST_HEAD(&c->flush_entry);
	if (!is_unix)
		conn_tune_tcp(c, fd, keepalive);
	conn_principal(c, fd, sa, is_unix, principal, sizeof principal);
	r = conn_make_io(c, fd, ssl);
	if (r == 0) {
		server_lock(w);
		r = conn_open_locked(c, is_unix, secret, principal, sizeof principal);
		server_unlock(w);
		if (w->batch.len > 0)
			durable_submit(srv, &w->batch);
	}
	if (r != 0) {
		if (r == -ENOMEM)
			log_warn("out of memory accepting a client");
		conn_free_io(c);
		conn_uncount(w);
		return;
	}
	c->last_input_ms = server_now();
	log_debug("%s: connected as %s%s, on loop %u", c->peer, principal,
	    ssl == NULL ? "" : SSL_session_reused(ssl) ? " (TLS, resumed)" : " (TLS)",
	    w->idx);
	conn_watch(c, max_frame);
}

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
void conn_handshakes_free(struct server *srv)
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

/* Close and free a connection; its session lets go (or lingers). */
void conn_free(struct conn *c)
{
	struct sm_batch close;
	struct server *srv;
	struct worker *w;
	bool bye;

	if (c == NULL)
		return;
	if (server_locked) {
		/* Called back from inside the lock: free it from the loop. */
		c->dead = true;
		c->wlen = 0;
		conn_unqueue(c);
		event_active(c->kill, EV_TIMEOUT, 0);
		return;
	}
	srv = c->srv;
	w = c->w;
	/* Our own close with everything said: TLS tells the peer. */
	bye = c->ssl != NULL && c->closing && !c->dead && c->tlen == c->toff;
	c->dead = true;
	conn_unqueue(c);
	sm_batch_init(&close);
	server_lock(w);
	list_del_init(&c->entry);
	srv->nconns--;
	w->nconns--;
	if (srv->durable != NULL) {
		struct sm_client *cl = sm_client_find(srv->sm, c->cid);

		/* Nothing more reaches it; the state hears of it through the log. */
		server_conn_remove(srv, c);
		if (cl != NULL)
			sm_client_bind(cl, NULL);
		/* A stop is no client's death: the restart entry says what goes. */
		if (!srv->stopping && c->logged)
			sm_batch_close(&close, c->cid);
	} else {
		sm_client_close(srv->sm, c->client, server_now());
	}
	access_close(c->id);
	if (srv->stopping && w->nconns == 0)
		event_base_loopexit(w->base, NULL);
	server_unlock(w);
	if (close.len > 0)
		durable_submit(srv, &close);
	sm_batch_free(&close);
	if (c->ssl != NULL)
		w->ntls--;
	if (bye) {
		/* A close_notify, best effort: it never waits. */
		ERR_clear_error();
		(void)SSL_shutdown(c->ssl);
		ERR_clear_error();
	}
	conn_free_io(c);
}
