/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/conn_io.c - a connection's bytes: frames in, staged replies out.
 *
 * One read path for every transport (xprt.h): the read event reads what
 * arrived into a per-thread buffer and runs every whole frame where it
 * lies (a batch of pipelined requests costs one read, one lock and one
 * write); only a partial frame is copied, into c->in. The replies staged
 * during the batch go out in one write at its end; what the socket cannot
 * take at once waits in c->tbuf for the write event. A frame must be
 * completed within frame-timeout.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include <event2/buffer.h>

#include "daemon/conn-int.h"
#include "daemon/feed.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "daemon/xprt.h"
#include "proto/frame.h"

/* One read(2), or the records one read-ahead took in, land here. */
#define CONN_RBUF	65536

static _Thread_local uint8_t conn_rbuf[CONN_RBUF];

/* Take a connection off the flush or notice queue (if it is on one). */
void conn_unqueue(struct conn *c)
{
	if (c->flush_entry.next != NULL)
		list_del_init(&c->flush_entry);
	c->noticed = false;
}

/* Nothing more is written to c; it is freed from its loop. */
void conn_kill(struct conn *c)
{
	c->dead = true;
	c->wlen = 0;
	conn_unqueue(c);
	event_active(c->kill, EV_TIMEOUT, 0);
}

/* Cut a client off: nothing more is written, it is freed soon. */
void conn_drop(struct conn *c)
{
	atomic_fetch_add_explicit(&c->w->dropped, 1, memory_order_relaxed);
	conn_kill(c);
}

/* Queue c for the one write at the end of this loop turn. */
void conn_queue_flush(struct conn *c)
{
	struct worker *w = c->w;

	if (c->noticed)
		conn_unqueue(c);	/* its notices go with the reply */
	if (c->flush_entry.next == NULL || list_empty(&c->flush_entry)) {
		list_add_tail(&c->flush_entry, &w->flushq);
		if (!w->in_read)
			event_active(w->flush_ev, EV_TIMEOUT, 0);
	}
}

/*
 * The notice timer: write the connections that have only notices,
 * CONN_NOTICE_BATCH at a time (a client's request that came meanwhile is
 * read between two batches). The next round waits a millisecond for every
 * CONN_NOTICE_BATCH of them written in this one (at most
 * CONN_NOTICE_MAX_MS), none for fewer: one principal's thousand watchers
 * then cost the loop a write each per so many milliseconds, not one per
 * event, and the clients' own replies never wait behind them.
 */
#define CONN_NOTICE_BATCH	16
#define CONN_NOTICE_MAX_MS	50
static void conn_notice_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	uint32_t i, n;

	(void)fd;
	(void)what;
	for (i = 0; i < CONN_NOTICE_BATCH && !list_empty(&w->noticeq); i++)
		conn_flush(list_first_entry(&w->noticeq, struct conn,
		    flush_entry));
	w->notice_n += i;
	if (!list_empty(&w->noticeq)) {
		conn_timer_add_ms(w->notice_ev, 0);
		return;
	}
	n = w->notice_n / CONN_NOTICE_BATCH;
	w->notice_ms = n < CONN_NOTICE_MAX_MS ? n : CONN_NOTICE_MAX_MS;
	w->notice_n = 0;
}

/*
 * Queue c, which has only notices (watch events) staged, for the notice
 * timer (unless it is queued already: a reply takes them along).
 */
void conn_queue_notice(struct conn *c)
{
	struct worker *w = c->w;

	if (c->flush_entry.next != NULL && !list_empty(&c->flush_entry))
		return;
	if (w->notice_ev == NULL &&
	    (w->notice_ev = evtimer_new(w->base, conn_notice_cb, w)) == NULL) {
		conn_queue_flush(c);
		return;
	}
	list_add_tail(&c->flush_entry, &w->noticeq);
	c->noticed = true;
	if (!evtimer_pending(w->notice_ev, NULL))
		conn_timer_add_ms(w->notice_ev, w->notice_ms);
}

/* Bytes written out of turn, still waiting for the socket to drain. */
size_t conn_backlog_len(const struct conn *c)
{
	return c->tlen - c->toff;
}

/*
 * Count c's backlog (none once gone) in its principal's output quota. Only
 * a connection whose socket did not take its replies has one, so a client
 * that reads costs nothing here.
 */
void conn_count_backlog(struct conn *c, bool gone)
{
	size_t now = gone ? 0 : conn_backlog_len(c);

	if (now == c->tcounted || c->id == NULL)
		return;
	c->srv->policy->output(c->id, (int64_t)now - (int64_t)c->tcounted);
	c->tcounted = now;
}

/* Wake up when the socket drains. */
static void conn_want_write(struct conn *c)
{
	if (!c->wwait) {
		c->wwait = true;
		event_add(c->wev, NULL);
	}
}

/*
 * Hand p[0..len) to the transport: the bytes it took, or -1 when the
 * connection is lost (it is then freed from the loop).
 */
static ssize_t conn_write(struct conn *c, const uint8_t *p, size_t len)
{
	ssize_t n = c->xprt->write(c, p, len);

	if (n < 0) {
		conn_kill(c);
		return -1;
	}
	if ((size_t)n < len && !c->wwant_r)
		conn_want_write(c);
	return n;
}

/* Make room for need bytes behind used in a buffer that doubles. */
int conn_buf_reserve(uint8_t **buf, size_t *cap, size_t used, size_t need,
    size_t first)
{
	size_t n = *cap ? *cap : first;
	uint8_t *p;

	if (*cap - used >= need)
		return 0;
	while (n - used < need) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if ((p = realloc(*buf, n)) == NULL)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

/*
 * Keep p[0..len) for later, behind what is kept already. The next write
 * starts with the same bytes and is at least as long, as OpenSSL wants of
 * a retry (the buffer may move).
 */
static int conn_keep(struct conn *c, const uint8_t *p, size_t len)
{
	if (c->toff > 0 && c->tcap - c->tlen < len) {
		memmove(c->tbuf, c->tbuf + c->toff, c->tlen - c->toff);
		c->tlen -= c->toff;
		c->toff = 0;
	}
	if (conn_buf_reserve(&c->tbuf, &c->tcap, c->tlen, len, 4096) != 0)
		return -ENOMEM;
	memcpy(c->tbuf + c->tlen, p, len);
	c->tlen += len;
	return 0;
}

/*
 * A MiB or more of buffers was freed (in all, since the last time): a
 * second later (once for a whole flood's worth) this loop has glibc give
 * the free pages of its heaps back (malloc_trim). The biggest buffers are
 * mappings of their own (main.c), but those under the mmap threshold that
 * a flood goes through leave holes in the heaps, which the process would
 * otherwise keep for good.
 */
#define CONN_TRIM_AFTER	(1u << 20)
static void conn_trim_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
#ifdef __GLIBC__
	(void)malloc_trim(0);
#endif
}

/* freed bytes of buffers were freed: give the heaps' free pages back soon. */
void conn_trim_later(struct worker *w, size_t freed)
{
	struct timeval tv = { 1, 0 };

	w->trim_freed += freed;
	if (w->trim_freed < CONN_TRIM_AFTER || (w->trim_ev == NULL &&
	    (w->trim_ev = evtimer_new(w->base, conn_trim_cb, w)) == NULL))
		return;
	w->trim_freed = 0;
	if (!evtimer_pending(w->trim_ev, NULL))
		evtimer_add(w->trim_ev, &tv);
}

/* A big buffer is not kept for an idle connection. */
static void conn_buf_trim(struct worker *w, uint8_t **buf, size_t *cap)
{
	if (*cap > 16384) {
		conn_trim_later(w, *cap);
		free(*buf);
		*buf = NULL;
		*cap = 0;
	}
}

/* Write what was kept back; finish a pending close once it is out. */
static void conn_drain(struct conn *c)
{
	ssize_t n;

	if (c->dead || c->tlen == c->toff)
		return;
	if ((n = conn_write(c, c->tbuf + c->toff, c->tlen - c->toff)) < 0)
		return;
	c->toff += (size_t)n;
	if (c->toff < c->tlen) {
		conn_count_backlog(c, false);
		return;
	}
	c->toff = c->tlen = 0;
	conn_count_backlog(c, false);
	conn_buf_trim(c->w, &c->tbuf, &c->tcap);
	if (c->closing)
		event_active(c->kill, EV_TIMEOUT, 0);
}

/*
 * Send the staged replies: straight to the socket when nothing is queued
 * before them (one write, as a plain request/reply server does), the rest
 * behind the backlog, written when the socket drains.
 */
void conn_flush(struct conn *c)
{
	ssize_t n = 0;

	conn_unqueue(c);
	if (c->wlen == 0 || c->dead)
		return;
	if (c->tlen == c->toff && (n = conn_write(c, c->wbuf, c->wlen)) < 0)
		return;
	if ((size_t)n < c->wlen &&
	    conn_keep(c, c->wbuf + n, c->wlen - (size_t)n) != 0) {
		log_warn("%s: out of memory for replies, dropping the client",
		    c->peer);
		conn_drop(c);
		return;
	}
	c->wlen = 0;
	conn_count_backlog(c, false);
	conn_buf_trim(c->w, &c->wbuf, &c->wcap);
}

/* Write every connection's staged replies (one write each). */
void conn_flush_all(struct worker *w)
{
	while (!list_empty(&w->flushq))
		conn_flush(list_first_entry(&w->flushq, struct conn,
		    flush_entry));
}

/* The socket drained (or a read waited for it to). */
void conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	c->wwait = false;
	if (c->dead)
		return;
	if (c->rwant_w) {
		c->rwant_w = false;
		event_active(c->rev, EV_READ, 0);
	}
	if (!c->wwant_r)
		conn_drain(c);
}

/* Stop reading c (its requests wait in the log). */
static void conn_pause(struct conn *c)
{
	c->paused = true;
	event_del(c->rev);
}

/*
 * Under the lock: stop reading c while too much of it waits in the log
 * (only the log's feed counts c->proposed: in memory it stays 0).
 */
static void conn_maybe_pause_locked(struct conn *c)
{
	if (!c->paused && !c->closing && !c->dead &&
	    c->proposed > CONN_PROPOSED_MAX)
		conn_pause(c);
}

/*
 * Under the lock: hold c's frames from the one being run, behind reads
 * answered off the log (conn_handle_locked); they stay in c->in, and c is
 * not read until the reads are answered (conn_read_done_locked).
 */
void conn_hold_locked(struct conn *c)
{
	c->held = true;
	if (!c->paused)
		conn_pause(c);
}

/*
 * Read c again (on its own thread, under the lock), and run the frames it
 * held, if any, once its reads off the log are answered.
 */
void conn_resume_locked(struct conn *c)
{
	c->resuming = false;
	if (!c->paused || c->closing || c->reads > 0)
		return;
	if (c->held) {
		c->held = false;
		c->rerun = true;
	}
	c->paused = false;
	event_add(c->rev, NULL);
	if (c->rerun || c->xprt->pending(c))
		event_active(c->rev, EV_READ, 0);
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
	uint32_t ms = SRV_LIVE(c->srv, frame_timeout_ms);

	if (c->closing || c->dead)
		return;
	if (ms == 0 || c->in == NULL || evbuffer_get_length(c->in) == 0 ||
	    c->held) {
		/* the usual case, each read: no call into libevent */
		if (c->ftimer_on) {
			evtimer_del(c->ftimer);
			c->ftimer_on = false;
		}
		return;
	}
	if (c->ftimer_on && c->frames == frames_before)
		return;
	conn_timer_add_ms(c->ftimer, ms);
	c->ftimer_on = true;
}

/* A frame was not completed within frame-timeout: PROTOCOL_ERROR, close. */
void conn_ftimer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	c->ftimer_on = false;
	if (c->closing || c->dead)
		return;
	log_notice("%s: a frame not completed within frame-timeout %u ms, closing",
	    c->peer, SRV_LIVE(c->srv, frame_timeout_ms));
	server_lock(c->w);
	conn_protocol_error_locked(c, "frame not completed within the frame timeout");
	server_unlock(c->w);
	conn_close_later(c);
}

/* A frame over max-frame: answer PROTOCOL_ERROR and close. */
static void conn_too_big_locked(struct conn *c, const uint8_t *hdr)
{
	uint32_t plen;
	char why[128];

	memcpy(&plen, hdr, sizeof plen);	/* the size it announced */
	snprintf(why, sizeof why, "frame of %" PRIu32 " bytes is over max-frame %u",
	    ntohl(plen), SRV_LIVE(c->srv, max_frame));
	log_notice("%s: %s, closing", c->peer, why);
	conn_protocol_error_locked(c, why);
	conn_close_later(c);
}

/*
 * Under the lock: run the whole frames at the start of p[0..len); returns
 * the bytes they took. *go turns false when the connection must not read
 * on.
 */
static size_t conn_run_frames_locked(struct conn *c, const uint8_t *p,
    size_t len, bool *go)
{
	size_t off = 0, plen = 0;
	int r;

	while (*go) {
		r = frame_peek(p + off, len - off, SRV_LIVE(c->srv, max_frame),
		    &plen);
		if (r == 0)
			break;
		if (r < 0) {
			conn_too_big_locked(c, p + off);
			*go = false;
			break;
		}
		*go = conn_handle_locked(c, p + off + FRAME_HDR, plen);
		if (c->held)
			break;		/* the frame is run again later */
		off += FRAME_HDR + plen;
	}
	return off;
}

/*
 * Under the lock: decode and run every whole frame in c->in: the frames
 * inside its first chunk in place (the usual case), a frame that straddles
 * chunks after a pullup.
 */
static void conn_run_input_locked(struct conn *c, struct evbuffer *in)
{
	struct evbuffer_iovec v;
	uint8_t hdr[FRAME_HDR], *data;
	size_t plen = 0, off;
	bool go = true;
	int r;

	while (go && !c->closing && !c->dead) {
		off = 0;
		if (evbuffer_peek(in, -1, NULL, &v, 1) >= 1)
			off = conn_run_frames_locked(c, v.iov_base, v.iov_len, &go);
		if (off > 0) {
			evbuffer_drain(in, off);
			continue;
		}
		if (!go || evbuffer_copyout(in, hdr, FRAME_HDR) != FRAME_HDR)
			break;
		/*
		 * The next frame (or its header) straddles chunks: its header,
		 * copied out, against all the buffer holds (frame_peek() reads
		 * the header alone).
		 */
		r = frame_peek(hdr, evbuffer_get_length(in),
		    SRV_LIVE(c->srv, max_frame), &plen);
		if (r < 0)
			conn_too_big_locked(c, hdr);
		if (r <= 0)
			break;
		data = evbuffer_pullup(in, (ev_ssize_t)(FRAME_HDR + plen));
		if (data == NULL) {
			log_warn("%s: out of memory reading a frame", c->peer);
			conn_close_later(c);
			break;
		}
		go = conn_handle_locked(c, data + FRAME_HDR, plen);
		if (!c->held)
			evbuffer_drain(in, FRAME_HDR + plen);
	}
}

/*
 * Run n bytes of input: the whole frames from buf where they lie, only a
 * partial frame is kept (in c->in, made when first needed, where the
 * following reads append). Replies are staged until the end, then written
 * (one write per connection) and the batch's requests go to the log as
 * one (group commit).
 */
static void conn_input(struct conn *c, const uint8_t *buf, size_t n)
{
	struct worker *w = c->w;
	uint64_t frames = c->frames;
	size_t off = 0;
	bool was, go = true;

	c->srv->policy->prepare(c);	/* the slow part of a check: no lock */
	was = w->in_read;
	w->in_read = true;
	c->last_input_ms = server_now();	/* one clock read per batch */
	server_lock(w);
	if (c->in != NULL && evbuffer_get_length(c->in) > 0) {
		if (evbuffer_add(c->in, buf, n) != 0) {
			log_warn("%s: out of memory reading a frame", c->peer);
			conn_close_later(c);
		} else {
			conn_run_input_locked(c, c->in);
		}
	} else {
		off = conn_run_frames_locked(c, buf, n, &go);
		if ((go || c->held) && !c->closing && !c->dead && off < n &&
		    ((c->in == NULL && (c->in = evbuffer_new()) == NULL) ||
		    evbuffer_add(c->in, buf + off, n - off) != 0)) {
			log_warn("%s: out of memory reading a frame", c->peer);
			conn_close_later(c);
		}
	}
	conn_maybe_pause_locked(c);
	server_unlock(w);
	conn_frame_deadline(c, frames);
	w->in_read = was;
	if (!was)
		conn_flush_all(w);
	if (w->batch.len > 0)
		w->srv->feed->submit(w->srv, &w->batch);
	if (w->batch.cap > 65536)
		sm_batch_free(&w->batch);	/* a burst's memory is not kept */
}

/*
 * The socket is readable: read what the transport has (TLS: while
 * read-ahead holds whole records) into the shared buffer, then run it.
 * What did not fit is read at the next turn: the socket will not announce
 * it again.
 */
void conn_read_cb(evutil_socket_t fd, short what, void *arg)
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

/* Requests of a client inside the daemon: whole frames, run as input. */
void conn_inner_input(struct conn *c, const uint8_t *buf, size_t n)
{
	if (!c->closing && !c->dead)
		conn_input(c, buf, n);
}
