/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/conn_reply.c - replies to clients, packed as frames.
 *
 * Owns the state machine's effects on connections (struct sm_out: replies,
 * closes, notes), the staging buffer a connection's replies are packed
 * into, and the mailboxes that carry replies to a client of another loop.
 * Everything here runs under the state lock, on any loop's thread.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "daemon/conn-int.h"
#include "daemon/fastpb.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "proto/frame.h"

/*
 * A frame in a worker's mailbox: for whom, how long; or, with len
 * MBOX_DROP, cut c off, with MBOX_CLOSE, close c once its replies are out,
 * with MBOX_RESUME, read c again.
 */
struct mbox_rec {
	struct conn	*c;
	uint32_t	len;
};
#define MBOX_DROP	UINT32_MAX
#define MBOX_CLOSE	(UINT32_MAX - 1)
#define MBOX_RESUME	(UINT32_MAX - 2)

/*
 * The most a reply's frame can take: the hot replies by hand into room for
 * their largest size (fastpb), the others through protobuf-c. *fast says
 * which reply_pack() will use.
 */
static size_t reply_bound(const Semd__Reply *r, bool *fast)
{
	size_t len;

	*fast = fastpb_reply_bound(r, &len);
	if (!*fast)
		len = semd__reply__get_packed_size(r);
	return FRAME_HDR + len;
}

/* Pack r as a frame at p (room for reply_bound()); its length. */
static size_t reply_pack(const Semd__Reply *r, bool fast, uint8_t *p)
{
	size_t len;

	if (fast)
		len = fastpb_reply_pack(r, p + FRAME_HDR);
	else
		len = semd__reply__pack(r, p + FRAME_HDR);
	frame_put_header(p, (uint32_t)len);
	return FRAME_HDR + len;
}

/*
 * What is staged for a client: a reply to pack, or a watch event packed
 * already by the state machine for all its watchers (sm_out.notice).
 */
struct out_frame {
	const Semd__Reply	*r;		/* NULL: the notice below */
	bool			fast;
	uint64_t		watch;
	const uint8_t		*ev;
	size_t			evlen;
};

/* The most f's frame can take (reply_bound(), or the notice's). */
static size_t out_bound(struct out_frame *f)
{
	if (f->r != NULL)
		return reply_bound(f->r, &f->fast);
	return FRAME_HDR + FASTPB_NOTICE_EXTRA + f->evlen;
}

/* Pack f as a frame at p (room for out_bound()); its length. */
static size_t out_pack(const struct out_frame *f, uint8_t *p)
{
	size_t len;

	if (f->r != NULL)
		return reply_pack(f->r, f->fast, p);
	len = fastpb_notice_pack(f->watch, f->ev, f->evlen, p + FRAME_HDR);
	frame_put_header(p, (uint32_t)len);
	return FRAME_HDR + len;
}

/* Tell a client we will not serve why, without waiting for the socket. */
void conn_tell_fd(int fd, Semd__Code code, const char *why)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	uint8_t buf[256];
	bool fast;
	ssize_t n;

	r.code = code;
	r.message = (char *)why;
	if (reply_bound(&r, &fast) > sizeof buf)
		return;
	n = send(fd, buf, reply_pack(&r, fast, buf), MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)n;
}

/* Make room for len more staged bytes. */
static int conn_wbuf_grow(struct conn *c, size_t len)
{
	return conn_buf_reserve(&c->wbuf, &c->wcap, c->wlen, len, 512);
}

/*
 * After staging: cut off a client whose unread replies pass max-output, or
 * that has replies its socket did not take while its principal's are over
 * its output quota (so that 1,000 connections cannot pin max-output each).
 */
static void conn_check_output(struct conn *c, const uint8_t *frame,
    size_t len)
{
	size_t queued;

	queued = c->wlen + conn_backlog_len(c);
	if (queued > SRV_LIVE(c->srv, max_output) && c->inner == NULL) {
		log_warn("%s: does not read its replies (%zu bytes queued, max-output %u), dropped",
		    c->peer, queued, SRV_LIVE(c->srv, max_output));
		conn_drop(c);
		return;
	}
	if (conn_backlog_len(c) > 0 && c->srv->policy->output_over_locked(c->id)) {
		log_warn("%s: does not read its replies (%zu bytes queued) while %s "
		    "is over its output quota, dropped", c->peer, queued,
		    c->srv->policy->principal(c->id));
		conn_drop(c);
		return;
	}
	/*
	 * A reply that begins with field 14 (watch_event) has id 0 and code
	 * OK (protobuf-c writes fields in order): a notice, which may wait.
	 */
	if (len > FRAME_HDR && frame[FRAME_HDR] == 0x72)
		conn_queue_notice(c);
	else
		conn_queue_flush(c);
}

/* A protocol's output: room for n more bytes (NULL: c is cut off). */
uint8_t *conn_out_room(struct conn *c, size_t n)
{
	if (c->dead)
		return NULL;
	if (conn_wbuf_grow(c, n) != 0) {
		log_warn("%s: out of memory for an answer, dropping the client",
		    c->peer);
		conn_drop(c);
		return NULL;
	}
	return c->wbuf + c->wlen;
}

/*
 * n bytes written at conn_out_room(): staged for the end of the turn. What
 * waited before them is held against max-output (a whole answer bigger
 * than it still goes: a client is cut off for not reading, not for asking).
 */
void conn_out_done(struct conn *c, size_t n)
{
	size_t before = c->wlen + conn_backlog_len(c);

	c->wlen += n;
	if (before > SRV_LIVE(c->srv, max_output)) {
		log_warn("%s: does not read its answers (%zu bytes queued, "
		    "max-output %u), dropped", c->peer, before,
		    SRV_LIVE(c->srv, max_output));
		conn_drop(c);
		return;
	}
	conn_queue_flush(c);
}

/* Bytes of c's output not written to its socket yet. */
size_t conn_out_pending(const struct conn *c)
{
	return c->wlen + conn_backlog_len(c);
}

/* Cut c off. */
void conn_cut(struct conn *c)
{
	conn_drop(c);
}

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
 * A record without a frame (close, resume) for c's worker; false when
 * there is no memory for it.
 */
static bool conn_mbox_mark(struct conn *c, uint32_t what)
{
	struct worker *w = c->w;

	if (conn_buf_reserve(&w->mbox, &w->mcap, w->mlen,
	    2 * sizeof(struct mbox_rec), 4096) != 0)
		return false;
	conn_mbox_rec(w, c, what);
	return true;
}

/*
 * A reply for a client of another worker: pack it into that worker's
 * mailbox as a record and a frame, and have the worker woken.
 */
static void conn_mbox_put(struct conn *c, struct out_frame *f)
{
	struct worker *w = c->w;
	uint8_t *p;
	size_t need;

	/* Keep room for one drop record after it. */
	need = 2 * sizeof(struct mbox_rec) + out_bound(f);
	if (conn_buf_reserve(&w->mbox, &w->mcap, w->mlen, need, 4096) != 0) {
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
	/* Pack past the record, then write the record with the real size. */
	p = w->mbox + w->mlen + sizeof(struct mbox_rec);
	conn_mbox_rec(w, c, (uint32_t)out_pack(f, p));
}

/* Under the lock: stage the frames other workers left for our clients. */
void conn_mbox_deliver_locked(struct worker *w)
{
	struct mbox_rec rec;
	size_t off = 0;
	struct conn *c;

	while (off < w->mlen) {
		memcpy(&rec, w->mbox + off, sizeof rec);
		off += sizeof rec;
		c = rec.c;
		if (c->dead) {
			off += rec.len >= MBOX_RESUME ? 0 : rec.len;
			continue;
		}
		switch (rec.len) {
		case MBOX_DROP:
			conn_drop(c);
			continue;
		case MBOX_CLOSE:
			conn_close_later(c);
			continue;
		case MBOX_RESUME:
			conn_resume_locked(c);
			continue;
		}
		if (conn_wbuf_grow(c, rec.len) != 0) {
			log_warn("%s: out of memory for a reply, dropping the client",
			    c->peer);
			conn_drop(c);
		} else {
			memcpy(c->wbuf + c->wlen, w->mbox + off, rec.len);
			c->wlen += rec.len;
			conn_check_output(c, c->wbuf + c->wlen - rec.len,
			    rec.len);
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
 * Under the lock: pack f as a frame into the connection's staging buffer;
 * the staged replies go out in one write at the end of the loop turn. A
 * client of another worker gets it through that worker's mailbox.
 */
static void conn_stage_locked(struct conn *c, struct out_frame *f)
{
	size_t len;

	/* Only c's own thread reads its state: dead is checked at delivery. */
	if (c->w != worker_self) {
		conn_mbox_put(c, f);
		return;
	}
	if (c->dead)
		return;
	/* The usual reply, packed in place where there is room for it. */
	if (f->r != NULL && c->wcap - c->wlen >= FASTPB_FRAME_ROOM &&
	    (len = fastpb_reply_frame(f->r, c->wbuf + c->wlen)) != 0) {
		c->wlen += len;
		/*
		 * A reply (never a notice) to a client that reads, already in
		 * the flush queue: conn_check_output() would do nothing.
		 */
		if (conn_backlog_len(c) == 0 && !c->noticed &&
		    c->flush_entry.next != NULL && !list_empty(&c->flush_entry) &&
		    c->wlen <= SRV_LIVE(c->srv, max_output))
			return;
		conn_check_output(c, c->wbuf + c->wlen - len, len);
		return;
	}
	len = out_bound(f);
	if (conn_wbuf_grow(c, len) != 0) {
		log_warn("%s: out of memory for a reply, dropping the client",
		    c->peer);
		conn_drop(c);
		return;
	}
	len = out_pack(f, c->wbuf + c->wlen);
	c->wlen += len;
	conn_check_output(c, c->wbuf + c->wlen - len, len);
}

/* The sm_out sink, under the lock: stage one reply for the client. */
void conn_reply_locked(void *ctx, void *conn, const Semd__Reply *r)
{
	struct out_frame f = { r, false, 0, NULL, 0 };
	struct conn *c = conn;

	(void)ctx;
	/* Abnormal events get a log line: limits hit, internal errors. */
	if (r->code == SEMD__CODE__RESOURCE_EXHAUSTED || r->code == SEMD__CODE__INTERNAL)
		log_notice("%s: request %" PRIu64 ": %s", c->peer, r->id, r->message);
	conn_stage_locked(c, &f);
}

/*
 * The sm_out notice sink, under the lock: stage a watch event for watch,
 * packed once by the state machine for all the watchers alike.
 */
void conn_notice_locked(void *ctx, void *conn, uint64_t watch,
    const uint8_t *ev, size_t len)
{
	struct out_frame f = { NULL, false, watch, ev, len };

	(void)ctx;
	conn_stage_locked(conn, &f);
}

/* Under the lock: a reply with just a code and a message. */
void conn_reply_code_locked(struct conn *c, uint64_t id, Semd__Code code,
    const char *msg)
{
	Semd__Reply r = SEMD__REPLY__INIT;

	r.id = id;
	r.code = code;
	r.message = (char *)msg;
	conn_reply_locked(NULL, c, &r);
}

/* Under the lock, any thread: a resume record for c's own loop (conn-int.h). */
bool conn_resume_later_locked(struct conn *c)
{
	return conn_mbox_mark(c, MBOX_RESUME);
}

/*
 * The sm_out close effect, under the lock: the client's session ended
 * (its lease ran out while it was silent); close the connection once the
 * notices staged for it are written. Another worker's client gets a close
 * record in its mailbox, behind the frames already there (without memory
 * for it, it closes when its next request is refused).
 */
void conn_close_effect_locked(void *ctx, void *conn)
{
	struct conn *c = conn;

	(void)ctx;
	log_info("%s: session expired, closing", c->peer);
	if (c->w != worker_self)
		(void)conn_mbox_mark(c, MBOX_CLOSE);
	else if (!c->dead)
		conn_close_later(c);
}

/* The sm_out note effect: an operator's line, with the peer when known. */
void conn_note_locked(void *ctx, void *conn, const char *msg)
{
	const struct conn *c = conn;

	(void)ctx;
	log_notice("%s: %s", c != NULL ? c->peer : "(not on this node)", msg);
}
