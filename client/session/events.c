/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/session/events.c - what the handle reports: events (a broken
 * connection, a resumed session, a lost hold, a notice, a watch's event)
 * queued under the lock in the order of the changes they report, and the
 * callbacks of completed asynchronous requests; both delivered after the
 * lock is dropped, the events by one thread at a time, in order.
 */
#include <stdlib.h>
#include <string.h>

#include "client/session/session.h"

/* Initialise an empty delivery list. */
void semc_deliver_init(struct semc_deliver *d)
{
	d->done = NULL;
	d->done_tail = &d->done;
	d->events = false;
}

/* Queue e on the handle (lock held), for delivery after the lock is
 * dropped: the order of the queue is the order of the changes. */
void semc_event_queue_locked(struct semc *c, struct semc_deliver *d, struct semc_evq *e)
{
	e->next = NULL;
	*c->evq_tail = e;
	c->evq_tail = &e->next;
	d->events = true;
}

/* Queue an event for delivery after the lock is dropped. */
void semc_event_push_locked(struct semc *c, struct semc_deliver *d, enum semc_event_type type,
			    int error, const char *message, const struct semc_hold *h)
{
	struct semc_evq *e = calloc(1, sizeof *e);

	if (e == NULL)
		return;
	e->ev.type = type;
	e->ev.error = error;
	if (message != NULL)
		e->message = strdup(message);
	e->ev.message = e->message ? e->message : "";
	if (h != NULL) {
		e->name = strdup(h->name);
		e->ev.name = e->name;
		e->ev.permit_id = h->permit_id;
		e->ev.token = h->token;
		e->ev.n = h->n;
	}
	semc_event_queue_locked(c, d, e);
}

/* Queue a watch's event ev (taken over) for its watch's callback: nothing
 * when out of memory (the stream then misses that event). */
void semc_event_watch_locked(struct semc *c, struct semc_deliver *d,
			     struct semc_watch_event *ev)
{
	struct semc_evq *e = calloc(1, sizeof *e);

	if (e == NULL) {
		semc_watch_event_free(ev);
		return;
	}
	e->watch = ev;
	e->ev.message = "";
	semc_event_queue_locked(c, d, e);
}

/* Free a queued event. */
void semc_evq_free(struct semc_evq *e)
{
	free(e->name);
	free(e->message);
	semc_watch_event_free(e->watch);
	free(e);
}

/* Run gathered events and completion callbacks (lock not held). The events
 * of the handle go out in order, one thread at a time: a thread that queued
 * some waits for the one delivering (unless that is itself, in a callback),
 * so that a call returns only once the events it caused were delivered. */
void semc_deliver_run(struct semc *c, struct semc_deliver *d)
{
	struct semc_evq *e;
	struct semc_req *r, *rn;
	semc_event_fn fn;
	void *arg;

	if (d->events) {
		pthread_mutex_lock(&c->lock);
		if (c->ev_running && pthread_equal(c->ev_runner, pthread_self()))
			goto events_done;	/* a callback's call: the outer loop delivers */
		while (c->ev_running)
			pthread_cond_wait(&c->cond, &c->lock);
		c->ev_running = true;
		c->ev_runner = pthread_self();
		while ((e = c->evq) != NULL) {
			c->evq = e->next;
			if (c->evq == NULL)
				c->evq_tail = &c->evq;
			fn = c->ev_fn;
			arg = c->ev_arg;
			pthread_mutex_unlock(&c->lock);
			if (e->watch != NULL)
				semc_watch_deliver(c, e->watch);	/* to its watch's fn */
			else if (fn != NULL)
				fn(c, &e->ev, arg);
			semc_evq_free(e);
			pthread_mutex_lock(&c->lock);
		}
		c->ev_running = false;
		pthread_cond_broadcast(&c->cond);
events_done:
		pthread_mutex_unlock(&c->lock);
	}
	for (r = d->done; r != NULL; r = rn) {
		rn = r->next;
		semc_result_deliver(c, r->id, r->error, r->reply, r->fn, r->arg);
		semc_req_free(r);
	}
	semc_deliver_init(d);
}
