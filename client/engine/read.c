/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/engine/read.c - replies in: the reader role, taken by one thread
 * at a time (c->reading), polls the connection, decodes its frames and
 * hands each reply to the bookkeeping (semc_dispatch_locked()); a read that
 * fails, or a frame that cannot be decoded, breaks the connection.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "client/engine/engine.h"
#include "proto/frame.h"

#define SEMC_RBUF_MAX	(FRAME_HDR + FRAME_MAX_LIMIT)

/* As the reader: wait up to timeout_ms for input on k (or for wake_fd),
 * decode and dispatch every whole frame. Returns replies dispatched or a
 * negative error. */
static int reader_run(struct semc *c, struct semc_conn *k, int timeout_ms, int wake_fd,
		      struct semc_deliver *d)
{
	const char *why = NULL;
	Semd__Reply *rp;
	size_t plen;
	ssize_t n;
	int count = 0, r;

	if (c->rbuf_gen != k->gen) {
		c->rlen = 0;
		c->rbuf_gen = k->gen;
	}
	if (timeout_ms != 0 && (k->xprt->buffered == NULL || !k->xprt->buffered(k))) {
		struct pollfd p[2] = { { .fd = k->fd, .events = POLLIN },
				       { .fd = wake_fd, .events = POLLIN } };

		if (poll(p, wake_fd >= 0 ? 2 : 1, timeout_ms) <= 0 || p[0].revents == 0)
			return 0;
	}
	for (;;) {
		size_t room;

		if (c->rcap - c->rlen < 4096) {
			size_t ncap = c->rcap ? c->rcap * 2 : 16384;
			uint8_t *nb;

			if (ncap > SEMC_RBUF_MAX + 4096)
				ncap = SEMC_RBUF_MAX + 4096;
			if (ncap <= c->rcap || (nb = realloc(c->rbuf, ncap)) == NULL) {
				why = "out of memory for a reply";
				break;
			}
			c->rbuf = nb;
			c->rcap = ncap;
		}
		room = c->rcap - c->rlen;
		n = k->xprt->read(k, c->rbuf + c->rlen, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			why = n == 0 ? "the server closed the connection" : "read failed";
			break;
		}
		c->rlen += (size_t)n;
		while ((r = frame_peek(c->rbuf, c->rlen, FRAME_MAX_LIMIT, &plen)) == 1) {
			rp = semd__reply__unpack(NULL, plen, c->rbuf + FRAME_HDR);
			memmove(c->rbuf, c->rbuf + FRAME_HDR + plen, c->rlen - FRAME_HDR - plen);
			c->rlen -= FRAME_HDR + plen;
			if (rp == NULL) {
				why = "undecodable reply";
				break;
			}
			pthread_mutex_lock(&c->lock);
			semc_dispatch_locked(c, rp, d);
			pthread_mutex_unlock(&c->lock);
			count++;
		}
		if (r < 0)
			why = "oversized reply frame";
		if (why != NULL)
			break;
		/* A short read of a socket took all it had: no read more to
		 * learn EAGAIN (the next turn polls). A transport that keeps
		 * bytes of its own (TLS records) is read until it says so. */
		if ((size_t)n < room && k->xprt->buffered == NULL)
			break;
	}
	if (why == NULL)
		return count;
	pthread_mutex_lock(&c->lock);
	semc_conn_broken_locked(c, k, why, d);
	pthread_mutex_unlock(&c->lock);
	return SEMC_E_DISCONNECTED;
}

/* Take the reader role for one turn (called and returns with lock held);
 * wake_fd (-1: none) ends the wait early. The keepalive thread
 * (background) then sends what waits only if nobody else is writing. */
int semc_reader_turn_locked(struct semc *c, int timeout_ms, int wake_fd, bool background)
{
	struct semc_deliver d;
	struct semc_conn *k = c->conn;
	int n;

	semc_deliver_init(&d);
	k->refs++;
	c->reading = true;
	pthread_mutex_unlock(&c->lock);
	n = reader_run(c, k, timeout_ms, wake_fd, &d);
	pthread_mutex_lock(&c->lock);
	c->reading = false;
	/* our reference (refs++ above) kept k alive; the analyzer loses
	 * the count: NOLINTNEXTLINE(clang-analyzer-unix.Malloc) */
	semc_conn_put_locked(k);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	semc_deliver_run(c, &d);
	if (background)
		semc_flush_try(c);
	else
		semc_flush(c);
	pthread_mutex_lock(&c->lock);
	return n;
}
