/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/engine/write.c - requests out: every queued request not yet sent
 * on the current connection is written to it, whole frames under `wlock`
 * (a request that cannot be sent again is failed instead: an up by count
 * whose first sending's outcome is unknown).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/engine/engine.h"

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
