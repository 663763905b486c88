/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/engine/call.c - the calls the API makes: a request queued and
 * written (semc_submit()), then waited for, turns of the duty loop until
 * its reply comes or its deadline passes (semc_wait(), semc_call()), or
 * left to complete through its callback (semc_call_async()).
 */
#include <stdlib.h>

#include "client/engine/engine.h"

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

/* Wait for r's reply until deadline (-1: forever): turns of the duty loop,
 * reading or reconnecting when it is this thread's turn. r is off the
 * pending list on return, unless *ghost: abandoned at its deadline, the
 * queue owns it (semc_req_abandon_locked()). */
int semc_wait(struct semc *c, struct semc_req *r, int64_t deadline, bool *ghost)
{
	struct semc_turn t = { .deadline = deadline, .wake_fd = -1, .req = r };
	int64_t now;

	*ghost = false;
	pthread_mutex_lock(&c->lock);
	while (!r->done) {
		now = semc_now_ms();
		if (deadline >= 0 && now >= deadline) {
			*ghost = semc_req_abandon_locked(c, r);
			pthread_mutex_unlock(&c->lock);
			semc_flush(c);
			return semc_fail(SEMC_E_NO_REPLY, "no reply from %s in time", c->addr.canon);
		}
		t.wait_ms = deadline >= 0 && deadline - now < 1000 ? (int)(deadline - now) : 1000;
		semc_turn_locked(c, &t, now);
	}
	pthread_mutex_unlock(&c->lock);
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
