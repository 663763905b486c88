/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/engine/read.c - requests out and replies in: writing queued requests
 * (flush), the reader role that decodes frames and hands each reply to its
 * request (or reports a notice), and the calls that queue a request and
 * wait for its reply (semc_call()) or do not (semc_call_async()).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "client/client-int.h"
#include "proto/frame.h"

#define SEMC_RBUF_MAX	(FRAME_HDR + FRAME_MAX_LIMIT)

/* Write every queued request not yet sent on the current connection.
 * block false (the keepalive thread): if another thread is writing, leave
 * it the work and return false; `flush_wanted`, set before trying, makes
 * that writer look again after it lets go of wlock, so nothing queued is
 * left behind. The keepalive thread never waits behind a slow write: it
 * must end the client-side lease on time. */
static bool flush_run(struct semc *c, bool block)
{
	struct semc_deliver d;
	struct semc_conn *k;
	struct semc_req *r;
	uint8_t *frame;
	size_t len;
	int rc;

	semc_deliver_init(&d);
	pthread_mutex_lock(&c->lock);
	c->flush_wanted = true;
	pthread_mutex_unlock(&c->lock);
again:
	if (block)
		pthread_mutex_lock(&c->wlock);
	else if (pthread_mutex_trylock(&c->wlock) != 0)
		return false;
	pthread_mutex_lock(&c->lock);
	c->flush_wanted = false;
	pthread_mutex_unlock(&c->lock);
	for (;;) {
		pthread_mutex_lock(&c->lock);
		k = c->conn;
		for (r = c->pending; k != NULL && r != NULL; r = r->next)
			if (r->sent_gen != k->gen)
				break;
		if (k == NULL || r == NULL) {
			pthread_mutex_unlock(&c->lock);
			break;
		}
		if (r->sent_gen != 0 && r->op == SEMD__REQUEST__OP_UP && r->permit_id == 0 &&
		    !r->not_run) {
			/* Ups are not idempotent: sent again, an up by count
			 * could give back a second permit. The outcome of the
			 * first is unknown, and the caller is told so. */
			semc_req_complete_locked(c, r, NULL, SEMC_E_DISCONNECTED, &d);
			pthread_mutex_unlock(&c->lock);
			continue;
		}
		if (r->sent_gen != 0)
			r->resent = true;
		r->not_run = false;
		r->sent_gen = k->gen;
		r->sent_at = semc_now_ms();
		len = r->frame_len;
		frame = malloc(len);
		if (frame == NULL) {
			semc_req_complete_locked(c, r, NULL, SEMC_E_NOMEM, &d);
			pthread_mutex_unlock(&c->lock);
			continue;
		}
		memcpy(frame, r->frame, len);
		k->refs++;
		pthread_mutex_unlock(&c->lock);
		rc = semc_conn_write_all(k, frame, len,
					 semc_now_ms() + atomic_load(&c->timeout_ms));
		free(frame);
		pthread_mutex_lock(&c->lock);
		if (rc != 0)
			semc_conn_broken_locked(c, k, rc == -ETIMEDOUT ? "write timed out" :
						"write failed", &d);
		/* our reference (refs++ above) kept k alive; the analyzer loses
		 * the count: NOLINTNEXTLINE(clang-analyzer-unix.Malloc) */
		semc_conn_put_locked(k);
		pthread_mutex_unlock(&c->lock);
		if (rc != 0)
			break;
	}
	pthread_mutex_unlock(&c->wlock);
	pthread_mutex_lock(&c->lock);
	if (c->flush_wanted) {
		/* queued while we wrote, by a thread that did not wait */
		pthread_mutex_unlock(&c->lock);
		block = true;
		goto again;
	}
	pthread_mutex_unlock(&c->lock);
	semc_deliver_run(c, &d);
	return true;
}

/* Write every queued request not yet sent on the current connection. */
void semc_flush(struct semc *c)
{
	flush_run(c, true);
}

/* The same, unless another thread is writing (then it sends ours). */
void semc_flush_try(struct semc *c)
{
	flush_run(c, false);
}

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
 * wake_fd (-1: none) ends the wait early. */
int semc_reader_turn_locked(struct semc *c, int timeout_ms, int wake_fd)
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
	if (wake_fd >= 0)
		semc_flush_try(c);	/* the keepalive thread */
	else
		semc_flush(c);
	pthread_mutex_lock(&c->lock);
	return n;
}

/* Queue r and write it if connected. */
int semc_submit(struct semc *c, struct semc_req *r)
{
	if (semc_forked(c)) {
		/* a constant, as below: the analyzer must see r was not queued */
		semc_fail(SEMC_E_NOT_SUPPORTED, "the handle belongs to process %d; a forked "
			  "child needs a handle of its own", (int)c->pid);
		return SEMC_E_NOT_SUPPORTED;
	}
	pthread_mutex_lock(&c->lock);
	if (c->closing || (c->conn == NULL && (!c->reconnect || !c->ever_connected))) {
		pthread_mutex_unlock(&c->lock);
		/* semc_fail() returns its argument, but the analyzer cannot see
		 * that from here and would take a 0 to mean r was queued */
		semc_fail(SEMC_E_DISCONNECTED, "not connected to %s",
			  c->addr.canon[0] ? c->addr.canon : "a server");
		return SEMC_E_DISCONNECTED;
	}
	semc_req_queue_locked(c, r);
	pthread_mutex_unlock(&c->lock);
	semc_flush(c);
	return 0;
}

/* Wait on the handle's condition for at most ms (lock held). */
void semc_cond_wait_ms_locked(struct semc *c, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&c->cond, &c->lock, &ts);
}

/* Wait for r's reply until deadline (-1: forever), reading or reconnecting
 * when it is this thread's turn. r is off the pending list on return. */
int semc_wait(struct semc *c, struct semc_req *r, int64_t deadline, bool *ghost)
{
	struct semc_deliver d;
	int64_t now;
	int slice;

	semc_deliver_init(&d);
	*ghost = false;
	pthread_mutex_lock(&c->lock);
	while (!r->done) {
		int due;

		now = semc_now_ms();
		if (semc_duties_locked(c, now, &d) || d.events || d.done != NULL) {
			/* deliver and send what the duties queued */
			pthread_mutex_unlock(&c->lock);
			semc_deliver_run(c, &d);
			semc_flush(c);
			pthread_mutex_lock(&c->lock);
		}
		if (r->done)
			break;
		if (deadline >= 0 && now >= deadline) {
			*ghost = semc_req_abandon_locked(c, r);
			pthread_mutex_unlock(&c->lock);
			semc_flush(c);
			return semc_fail(SEMC_E_NO_REPLY, "no reply from %s in time", c->addr.canon);
		}
		slice = 1000;
		if (deadline >= 0 && deadline - now < slice)
			slice = (int)(deadline - now);
		if ((due = semc_timeout_locked(c, now)) >= 0 && due < slice)
			slice = due;
		if (c->conn != NULL && !c->reading) {
			semc_reader_turn_locked(c, slice, -1);
			continue;
		}
		if (c->conn == NULL) {
			if (r->done)
				break;
			if (!c->reconnect || c->closing) {
				semc_req_complete_locked(c, r, NULL, SEMC_E_DISCONNECTED, &d);
				break;
			}
			if (!c->connecting && now >= c->next_retry) {
				int rc;

				pthread_mutex_unlock(&c->lock);
				semc_deliver_run(c, &d);
				rc = semc_conn_try(c, deadline);
				pthread_mutex_lock(&c->lock);
				/* nothing to resume: no point waiting for a
				 * server that is not there; say why at once */
				if (rc < 0 && c->conn == NULL && c->session == 0 && !r->done)
					semc_req_complete_locked(c, r, NULL, rc, &d);
				continue;
			}
			if (!c->connecting && c->next_retry - now < slice)
				slice = (int)(c->next_retry - now);
		}
		if (slice < 1)
			slice = 1;
		semc_cond_wait_ms_locked(c, slice);
	}
	pthread_mutex_unlock(&c->lock);
	semc_deliver_run(c, &d);
	if (r->reply == NULL) {
		if (r->error == SEMC_E_DISCONNECTED)
			return semc_fail(r->error, "connection to %s lost", c->addr.canon);
		if (semc_last_message()[0] != '\0')
			return r->error;	/* the reconnect attempt said why */
		return semc_fail(r->error, NULL);
	}
	return semc_reply_error(r->reply);
}

/* Send rq and wait for its reply; extra_ms (< 0: forever) is added to the
 * handle's timeout. On success *out owns the reply. */
int semc_call(struct semc *c, Semd__Request *rq, int64_t extra_ms, Semd__Reply **out)
{
	struct semc_req *r;
	int64_t deadline;
	bool ghost;
	int err;

	*out = NULL;
	semc_clear_message();
	if ((r = semc_req_new(c, rq)) == NULL)
		return semc_fail(SEMC_E_NOMEM, NULL);
	if ((err = semc_submit(c, r)) != 0) {
		semc_req_free(r);
		return err;
	}
	deadline = extra_ms < 0 ? -1 : semc_now_ms() + atomic_load(&c->timeout_ms) + extra_ms;
	err = semc_wait(c, r, deadline, &ghost);
	if (ghost)
		return err;	/* an abandoned down or up: the queue owns it now */
	*out = r->reply;
	r->reply = NULL;
	semc_req_free(r);
	return err;
}

/* Send rq; fn gets the outcome later. Returns the request id. */
int64_t semc_call_async(struct semc *c, Semd__Request *rq, semc_done_fn fn, void *arg)
{
	struct semc_req *r;
	int err;

	semc_clear_message();
	if ((r = semc_req_new(c, rq)) == NULL)
		return semc_fail(SEMC_E_NOMEM, NULL);
	r->fn = fn;
	r->arg = arg;
	r->async = true;
	if ((err = semc_submit(c, r)) != 0) {
		semc_req_free(r);
		return err;
	}
	return (int64_t)rq->id;
}
