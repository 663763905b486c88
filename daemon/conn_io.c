/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/conn_io.c - a connection's output, and its reading switched off
 * and on.
 *
 * The replies staged during a batch go out in one write at its end; what
 * the socket cannot take at once waits in c->tbuf for the write event. A
 * connection closes once its output is written (conn_close_later), or at
 * once, writing nothing more (conn_kill, conn_drop). What it offers its
 * feed (feed.h): its reading paused, a frame held, and both undone.
 */
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/conn-int.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "daemon/xprt.h"

/* Arm ev to fire in ms milliseconds. */
void conn_timer_add_ms(struct event *ev, uint64_t ms)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	evtimer_add(ev, &tv);
}

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
void conn_want_write(struct conn *c)
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
void conn_drain(struct conn *c)
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

/* Close once the replies queued so far are written. */
void conn_close_later(struct conn *c)
{
	struct timeval tv = { 5, 0 };

	if (c->closing)
		return;
	c->closing = true;
	evtimer_del(c->ftimer);
	c->ftimer_on = false;
	conn_flush(c);
	event_del(c->rev);
	evtimer_add(c->timer, &tv);
	if (conn_backlog_len(c) == 0)
		event_active(c->kill, EV_TIMEOUT, 0);
}

/* Under the lock, on c's thread: stop reading c (its feed's wish). */
void conn_pause_locked(struct conn *c)
{
	if (c->paused)
		return;
	c->paused = true;
	event_del(c->rev);
}

/*
 * Under the lock, on c's thread: hold c's frames from the one being run
 * (conn_handle_locked returns false for it): they stay in c->in, and c is
 * not read, until its feed resumes it.
 */
void conn_hold_locked(struct conn *c)
{
	c->held = true;
	conn_pause_locked(c);
}

/*
 * Under the lock, on c's thread: read c again; the frames it held, if
 * any, run first (at once: its read event is made active).
 */
void conn_resume_locked(struct conn *c)
{
	if (!c->paused || c->closing)
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
