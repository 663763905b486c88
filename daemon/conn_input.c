/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/conn_input.c - a connection's input: what its read brought, run.
 *
 * One read path for every transport (xprt.h): the read event (conn.c)
 * reads what arrived into a per-thread buffer and every whole frame is run
 * where it lies (a batch of pipelined requests costs one read, one lock
 * and one write); only a partial frame is copied, into c->in. A frame must
 * be completed within frame-timeout.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include <event2/buffer.h>

#include "daemon/conn-int.h"
#include "daemon/feed.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "proto/frame.h"

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
 * (one write per connection), and what the feed gathered is handed on (the
 * log's: the read's requests as one, a group commit).
 */
void conn_input(struct conn *c, const uint8_t *buf, size_t n)
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
	server_unlock(w);
	conn_frame_deadline(c, frames);
	w->in_read = was;
	if (!was)
		conn_flush_all(w);
	w->srv->feed->submit(w);
}

/* Requests of a client inside the daemon: whole frames, run as input. */
void conn_inner_input(struct conn *c, const uint8_t *buf, size_t n)
{
	if (!c->closing && !c->dead)
		conn_input(c, buf, n);
}
