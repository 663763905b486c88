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
#include <event2/bufferevent_ssl.h>

#include "daemon/access.h"
#include "daemon/durable.h"
#include "daemon/fastpb.h"
#include "daemon/log.h"
#include "daemon/server.h"
#include "proto/frame.h"
#include "proto/semd.pb-c.h"

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

	ms = c->hello ? c->srv->cfg.idle_timeout_ms : c->srv->cfg.handshake_timeout_ms;
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
	idle_ms = c->srv->cfg.idle_timeout_ms;
	handshake_ms = c->srv->cfg.handshake_timeout_ms;
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

/* After staging: cut off a client whose unread replies pass max-output. */
static void conn_check_output(struct conn *c)
{
	size_t queued;

	queued = c->wlen;
	if (c->backlog)
		queued += evbuffer_get_length(bufferevent_get_output(c->bev));
	if (queued > c->srv->cfg.max_output) {
		log_warn("%s: does not read its replies (%zu bytes queued, max-output %u), dropped",
		    c->peer, queued, c->srv->cfg.max_output);
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
 * Send the staged replies: straight to the socket when nothing is queued
 * before them (one write(2), as a plain request/reply server does), the
 * rest through the bufferevent, which writes it when the socket drains.
 */
static void conn_flush(struct conn *c)
{
	struct evbuffer *out;
	size_t off = 0;
	ssize_t n;

	conn_unqueue(c);
	if (c->wlen == 0 || c->dead)
		return;
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
	/* A big reply's buffer is not kept for an idle connection. */
	if (c->wcap > 16384) {
		free(c->wbuf);
		c->wbuf = NULL;
		c->wcap = 0;
	}
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
	uint32_t ms = c->srv->cfg.frame_timeout_ms;
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
	    c->peer, c->srv->cfg.frame_timeout_ms);
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
	    plen, c->srv->cfg.max_frame);
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
		if (plen > c->srv->cfg.max_frame) {
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
		if (plen > c->srv->cfg.max_frame) {
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
 * Input of a plain socket: one read(2) into a shared buffer, the whole
 * frames run from there, only a partial frame is kept (in c->in, made
 * when first needed, where the following reads append).
 */
static void conn_raw_read_cb(evutil_socket_t fd, short what, void *arg)
{
	static _Thread_local uint8_t buf[65536];
	struct conn *c = arg;
	struct worker *w = c->w;
	uint64_t frames = c->frames;
	size_t off = 0;
	ssize_t n;
	bool was, go = true;

	if (c->closing || c->dead)
		return;
	n = read(fd, buf, sizeof buf);
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
	was = conn_begin_read(c);
	server_lock(w);
	if (c->in != NULL && evbuffer_get_length(c->in) > 0) {
		if (evbuffer_add(c->in, buf, (size_t)n) != 0) {
			log_warn("%s: out of memory reading a frame", c->peer);
			conn_close_later(c);
		} else {
			conn_run_input(c, c->in);
		}
	} else {
		off = conn_run_frames(c, buf, (size_t)n, &go);
		if (go && !c->closing && !c->dead && off < (size_t)n &&
		    ((c->in == NULL && (c->in = evbuffer_new()) == NULL) ||
		    evbuffer_add(c->in, buf + off, (size_t)n - off) != 0)) {
			log_warn("%s: out of memory reading a frame", c->peer);
			conn_close_later(c);
		}
	}
	conn_maybe_pause(c);
	server_unlock(w);
	conn_frame_deadline(c, frames);
	conn_end_read(w, was);
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

	if (c->closing)
		return;
	c->closing = true;
	evtimer_del(c->ftimer);
	conn_flush(c);
	bufferevent_disable(c->bev, EV_READ);
	if (c->rev != NULL)
		event_del(c->rev);
	evtimer_add(c->timer, &tv);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
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

/* Close a client we will not serve (a TLS one through its bufferevent). */
static void conn_refuse_fd(int fd, struct bufferevent *tlsbev)
{
	if (tlsbev != NULL)
		bufferevent_free(tlsbev);
	else
		close(fd);
}

/*
 * Serve a new client of worker w: a plain socket fd, or a TLS bufferevent.
 * counted: conn_accept() already counted it in srv->nconns.
 */
static void conn_start(struct worker *w, int fd, struct bufferevent *tlsbev,
    struct sockaddr *sa, bool is_unix, bool counted)
{
	struct server *srv = w->srv;
	uint8_t secret[SM_SECRET_LEN];
	char principal[64];
	uint32_t keepalive, max_frame, max_conns;
	bool tls = tlsbev != NULL;
	struct conn *c;
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
	keepalive = srv->cfg.keepalive_s;
	max_frame = srv->cfg.max_frame;
	max_conns = srv->cfg.max_connections;
	server_unlock(w);
	if (r == -EMFILE)
		log_warn("max-connections %u reached, refusing a client",
		    max_conns);
	if (r != 0) {
		conn_refuse_fd(fd, tlsbev);
		return;
	}
	if (getrandom(secret, sizeof secret, 0) != (ssize_t)sizeof secret) {
		log_warn_errno(errno, "getrandom");
		goto refuse;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL)
		goto nomem;
	c->srv = srv;
	c->w = w;
	INIT_LIST_HEAD(&c->flush_entry);
	c->direct = tlsbev == NULL;	/* a plain socket bufferevent, made below */
	if (!is_unix)
		conn_tune_tcp(c, fd, keepalive);
	conn_principal(c, fd, sa, is_unix, principal, sizeof principal);
	c->bev = tlsbev != NULL ? tlsbev :
	    bufferevent_socket_new(w->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		free(c);
		goto nomem;
	}
	c->fd = bufferevent_getfd(c->bev);
	c->backlog = tls;	/* TLS output always goes through the bufferevent */
	c->timer = evtimer_new(w->base, conn_timer_cb, c);
	c->ftimer = evtimer_new(w->base, conn_ftimer_cb, c);
	c->kill = event_new(w->base, -1, 0, conn_kill_cb, c);
	if (c->direct) {
		/* We read the socket ourselves; the bufferevent only writes. */
		c->rev = event_new(w->base, bufferevent_getfd(c->bev),
		    EV_READ | EV_PERSIST, conn_raw_read_cb, c);
		if (c->rev == NULL)
			c->direct = false;
	}
	if (c->timer == NULL || c->ftimer == NULL || c->kill == NULL)
		goto free_conn;
	server_lock(w);
	r = access_open(srv, bufferevent_getfd(c->bev), is_unix, tls ?
	    bufferevent_openssl_get_ssl(c->bev) : NULL, &c->id, principal,
	    sizeof principal);
	if (r == 0 && srv->durable != NULL) {
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
		list_add_tail(&c->entry, &w->conns);
		conn_arm_timer(c);
		c->open = true;
	} else if (r == 0) {
		c->cid = ++srv->next_client;
		c->client = sm_client_open(srv->sm, c->cid, c, principal, secret,
		    is_unix ? SM_CLIENT_LOCAL : 0, server_now());
		if (c->client == NULL) {
			access_close(c->id);
			c->id = NULL;
		} else {
			list_add_tail(&c->entry, &w->conns);
			conn_arm_timer(c);
			c->open = true;
		}
	}
	server_unlock(w);
	if (w->batch.len > 0)
		durable_submit(srv, &w->batch);
	if (r != 0)
		goto free_quiet;
	if (!c->open)
		goto free_conn;
	c->last_input_ms = server_now();
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
	log_debug("%s: connected as %s", c->peer, principal);
	return;
free_conn:
	log_warn("out of memory accepting a client");
free_quiet:
	if (c->timer)
		event_free(c->timer);
	if (c->ftimer)
		event_free(c->ftimer);
	if (c->kill)
		event_free(c->kill);
	if (c->rev)
		event_free(c->rev);
	bufferevent_free(c->bev);
	free(c);
	goto uncount;
nomem:
	log_warn("out of memory accepting a client");
refuse:
	conn_refuse_fd(fd, tlsbev);
uncount:
	server_lock(w);
	srv->nconns--;
	w->nconns--;
	if (srv->stopping && w->nconns == 0)
		event_base_loopexit(w->base, NULL);
	server_unlock(w);
}

/*
 * A new client socket from a listener (on worker 0): served by the next
 * worker in turn; another worker gets it through its accept queue.
 */
void conn_accept(struct server *srv, int fd, struct sockaddr *sa, int salen,
    bool is_unix)
{
	struct worker *w = &srv->workers[srv->next_worker];
	struct conn_pending *p;

	srv->next_worker = (srv->next_worker + 1) % srv->nworkers;
	if (w == worker_self) {
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
	p->salen = salen;
	memcpy(&p->ss, sa, (size_t)salen);
	/*
	 * Counted at once, so that the listener's max-connections check sees
	 * the clients still on their way to their worker.
	 */
	server_lock(worker_self);
	srv->nconns++;
	list_add_tail(&p->entry, &w->acceptq);
	server_wake_later(w);
	server_unlock(worker_self);
}

/* A client handed over by worker 0's listener. */
void conn_start_pending(struct worker *w, struct conn_pending *p)
{
	conn_start(w, p->fd, NULL, (struct sockaddr *)&p->ss, p->is_unix, true);
}

/*
 * A TLS client whose handshake is done (listen.c, security/tls_bev): its
 * bufferevent lives on worker 0's base, so worker 0 serves it.
 */
void conn_accept_tls(struct server *srv, struct bufferevent *bev,
    struct sockaddr *sa, int salen)
{
	conn_start(&srv->workers[0], bufferevent_getfd(bev), bev, sa, false,
	    false);
}

/* Close and free a connection; its session lets go (or lingers). */
void conn_free(struct conn *c)
{
	struct sm_batch close;
	struct server *srv;
	struct worker *w;

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
	event_free(c->timer);
	event_free(c->ftimer);
	event_free(c->kill);
	if (c->rev != NULL)
		event_free(c->rev);
	if (c->in != NULL)
		evbuffer_free(c->in);
	bufferevent_free(c->bev);
	free(c->wbuf);
	free(c);
}
