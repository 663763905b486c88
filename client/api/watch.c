/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/watch.c - watches: a Watch request, its events (notices with a
 * watch_event body, id 0) handed to the watch's callback in the order they
 * came, and the end of one (a Cancel of its id).
 *
 * The daemon keeps a watch with the connection it came on; the library
 * does not make it again after a reconnection (a program that wants the
 * stream on watches again after SEMC_EV_RECONNECTED or SEMC_EV_RESUMED, as
 * semctl watch does), so what a watcher reads is always what the daemon
 * said on one connection, in order.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client-int.h"
#include "client/base/conv.h"

/* A watch of the handle: its id and callback (c->watchers, under c->lock). */
struct semc_watcher {
	struct semc_watcher *next;
	uint64_t id;
	semc_watch_fn fn;
	void *arg;
	uint64_t next_rev;	/* where a resume starts (0: not known yet) */
};

static const char *const kind_names[] = {
	[SEMC_WATCH_WAIT] = "wait",
	[SEMC_WATCH_GRANT] = "grant",
	[SEMC_WATCH_RELEASE] = "release",
	[SEMC_WATCH_TIMEOUT] = "timeout",
	[SEMC_WATCH_CANCEL] = "cancel",
	[SEMC_WATCH_LIMIT] = "limit",
	[SEMC_WATCH_RATE] = "rate",
	[SEMC_WATCH_CREATE] = "create",
	[SEMC_WATCH_DELETE] = "delete",
	[SEMC_WATCH_DEADLOCK] = "deadlock",
	[SEMC_WATCH_QUEUE] = "queue",
	[SEMC_WATCH_REPLACED] = "replaced",
};

/* The name of a kind of event ("grant"), "unknown" for others. */
const char *semc_watch_kind_name(enum semc_watch_kind kind)
{
	if ((int)kind <= 0 || (size_t)kind >= sizeof kind_names / sizeof kind_names[0])
		return "unknown";
	return kind_names[kind];
}

/* Forget the watch id (under c->lock). */
static void watcher_drop_locked(struct semc *c, uint64_t id)
{
	struct semc_watcher **pp, *w;

	for (pp = &c->watchers; (w = *pp) != NULL; pp = &w->next) {
		if (w->id == id) {
			*pp = w->next;
			free(w);
			return;
		}
	}
}

/* Free every watch's registration (semc_free). */
void semc_watchers_free(struct semc *c)
{
	struct semc_watcher *w, *wn;

	for (w = c->watchers; w != NULL; w = wn) {
		wn = w->next;
		free(w);
	}
	c->watchers = NULL;
}

/*
 * Watch name, or the names with prefix name: the watch's id. Registered
 * under its request id before the request goes, so that no event that
 * follows the answer can come before it.
 */
int64_t semc_watch(struct semc *c, const char *name, bool prefix, semc_watch_fn fn, void *arg)
{
	return semc_watch_from(c, name, prefix, 0, fn, arg);
}

/* The same, replaying the kept events from revision from_revision on. */
int64_t semc_watch_from(struct semc *c, const char *name, bool prefix, uint64_t from_revision,
			semc_watch_fn fn, void *arg)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Watch op = SEMD__WATCH__INIT;
	struct semc_watcher *w;
	struct semc_req *r;
	uint64_t id, start;
	bool ghost;
	int err;

	semc_clear_message();
	if (name == NULL || fn == NULL)
		return semc_fail(SEMC_E_ARG, "no name to watch, or no callback");
	if (strlen(name) > 255 || (!prefix && *name == '\0'))
		return semc_fail(SEMC_E_INVALID, "a name is 1 to 255 bytes long");
	op.name = (char *)name;
	op.prefix = prefix;
	op.from_revision = from_revision;
	rq.op_case = SEMD__REQUEST__OP_WATCH;
	rq.watch = &op;
	if ((w = calloc(1, sizeof *w)) == NULL ||
	    (r = semc_req_new(c, &rq)) == NULL) {
		free(w);
		return semc_fail(SEMC_E_NOMEM, NULL);
	}
	id = r->id;
	w->id = id;
	w->fn = fn;
	w->arg = arg;
	pthread_mutex_lock(&c->lock);
	w->next = c->watchers;
	c->watchers = w;
	pthread_mutex_unlock(&c->lock);
	if ((err = semc_submit(c, r)) != 0) {
		semc_req_free(r);
	} else {
		err = semc_wait(c, r, semc_now_ms() + atomic_load(&c->timeout_ms), &ghost);
		if (err == 0 && r->reply != NULL)
			err = semc_reply_error(r->reply);
		if (err == 0 && r->reply != NULL) {
			pthread_mutex_lock(&c->lock);
			for (w = c->watchers; w != NULL && w->id != id; w = w->next)
				;
			/*
			 * The OK comes before the replay of from_revision on:
			 * until those events are given, a resume starts at
			 * the first of them; a live watch after the daemon's
			 * last revision.
			 */
			start = from_revision != 0 ? from_revision :
			    r->reply->revision + 1;
			if (w != NULL && w->next_rev < start)
				w->next_rev = start;
			pthread_mutex_unlock(&c->lock);
		}
		if (!ghost)
			semc_req_free(r);
	}
	if (err != 0) {
		pthread_mutex_lock(&c->lock);
		watcher_drop_locked(c, id);
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	return (int64_t)id;
}

/* The revision a resume of watch starts at (0: no such watch). */
uint64_t semc_watch_next_revision(struct semc *c, uint64_t watch)
{
	struct semc_watcher *w;
	uint64_t rev = 0;

	pthread_mutex_lock(&c->lock);
	for (w = c->watchers; w != NULL; w = w->next)
		if (w->id == watch)
			rev = w->next_rev;
	pthread_mutex_unlock(&c->lock);
	return rev;
}

/* End a watch: the daemon stops it, and its callback is forgotten. */
int semc_unwatch(struct semc *c, uint64_t watch)
{
	int r = semc_cancel(c, watch);

	pthread_mutex_lock(&c->lock);
	watcher_drop_locked(c, watch);
	pthread_mutex_unlock(&c->lock);
	return r == SEMC_E_NOT_FOUND ? 0 : r;	/* gone with its connection */
}

/* Hand a watch's event to its callback (lock not held). */
void semc_watch_deliver(struct semc *c, struct semc_watch_event *ev)
{
	struct semc_watcher *w;
	semc_watch_fn fn = NULL;
	void *arg = NULL;

	pthread_mutex_lock(&c->lock);
	for (w = c->watchers; w != NULL; w = w->next) {
		if (w->id == ev->watch) {
			fn = w->fn;
			arg = w->arg;
			if (w->next_rev < ev->revision + 1)
				w->next_rev = ev->revision + 1;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (fn != NULL)
		fn(c, ev, arg);
}

/* Free a watch event made by semc_watch_push_locked(). */
void semc_watch_event_free(struct semc_watch_event *ev)
{
	free(ev);
}

/* Append s to the event's block at *at; returns the copy. */
static const char *copy_str(char **at, const char *s)
{
	char *p = *at;
	size_t n = strlen(s != NULL ? s : "") + 1;

	memcpy(p, s != NULL ? s : "", n);
	*at += n;
	return p;
}

/* The numbers of a watch event, as the WatchEvent has them (its strings
 * are copied into one block with it, its kind is the API's). */
#define EVENT(kind, ...)	kind(struct semc_watch_event, Semd__WatchEvent, __VA_ARGS__)
static const struct semc_conv event_conv = CONV(struct semc_watch_event,
	EVENT(F_COPY, watch), EVENT(F_COPY, time_ms), EVENT(F_COPY, n), EVENT(F_COPY, permit_id),
	EVENT(F_COPY, token), EVENT(F_COPY, request_id), EVENT(F_COPY, pid),
	EVENT(F_COPY, holders), EVENT(F_COPY, waiters), EVENT(F_COPY, available),
	EVENT(F_COPY, limit), EVENT(F_COPY, rate), EVENT(F_COPY, rate_period_ms),
	EVENT(F_COPY, burst), EVENT(F_COPY, revision));

/*
 * A watch_event notice (rp, whose ownership passes here): queue it as a
 * SEMC_EV_WATCH event, its strings copied into one block with it. Nothing
 * is queued when out of memory (the stream then misses that event).
 */
void semc_watch_push_locked(struct semc *c, Semd__Reply *rp, struct semc_deliver *d)
{
	const Semd__WatchEvent *w = rp->watch_event;
	struct semc_watch_event *ev;
	struct semc_evq *e;
	size_t len;
	char *at;

	(void)c;
	len = sizeof *ev + strlen(w->name) + strlen(w->principal) +
	      strlen(w->client_name) + strlen(w->host) + strlen(w->reason) + 5;
	ev = calloc(1, len);
	e = calloc(1, sizeof *e);
	if (ev == NULL || e == NULL) {
		free(ev);
		free(e);
		semd__reply__free_unpacked(rp, NULL);
		return;
	}
	(void)semc_conv_fill(&event_conv, ev, w);	/* numbers only: cannot fail */
	ev->kind = (enum semc_watch_kind)w->kind;
	ev->kind_name = semc_watch_kind_name(ev->kind);
	at = (char *)(ev + 1);
	ev->name = copy_str(&at, w->name);
	ev->principal = copy_str(&at, w->principal);
	ev->client_name = copy_str(&at, w->client_name);
	ev->host = copy_str(&at, w->host);
	ev->reason = copy_str(&at, w->reason);
	semd__reply__free_unpacked(rp, NULL);
	e->watch = ev;
	e->ev.message = "";
	semc_event_queue_locked(c, d, e);
}
