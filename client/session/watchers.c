/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/session/watchers.c - the watches of the handle: each one's id and
 * callback (registered before its Watch request goes, so that no event that
 * follows the answer can come before it), where a resume of it starts, and
 * its events, made from the daemon's notices (watch_event bodies, id 0)
 * and handed to its callback in the order they came (events.c).
 *
 * The daemon keeps a watch with the connection it came on; the library
 * does not make it again after a reconnection (a program that wants the
 * stream on watches again after SEMC_EV_RECONNECTED or SEMC_EV_RESUMED, as
 * semctl watch does), so what a watcher reads is always what the daemon
 * said on one connection, in order.
 */
#include <stdlib.h>
#include <string.h>

#include "client/session/session.h"
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
void semc_watcher_drop_locked(struct semc *c, uint64_t id)
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

/* Register a watch's callback under its id (lock held): 0, or
 * SEMC_E_NOMEM. */
int semc_watcher_add_locked(struct semc *c, uint64_t id, semc_watch_fn fn, void *arg)
{
	struct semc_watcher *w = calloc(1, sizeof *w);

	if (w == NULL)
		return SEMC_E_NOMEM;
	w->id = id;
	w->fn = fn;
	w->arg = arg;
	w->next = c->watchers;
	c->watchers = w;
	return 0;
}

/* The daemon accepted watch id: a resume starts at start at the earliest
 * (lock held). */
void semc_watcher_start_locked(struct semc *c, uint64_t id, uint64_t start)
{
	struct semc_watcher *w;

	for (w = c->watchers; w != NULL && w->id != id; w = w->next)
		;
	if (w != NULL && w->next_rev < start)
		w->next_rev = start;
}

/* The revision a resume of watch id starts at (0: no such watch; lock held). */
uint64_t semc_watcher_next_rev_locked(struct semc *c, uint64_t id)
{
	struct semc_watcher *w;

	for (w = c->watchers; w != NULL; w = w->next)
		if (w->id == id)
			return w->next_rev;
	return 0;
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

/* Free a watch event made by semc_watch_event_new(). */
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

/* A watch's event made from a WatchEvent notice, its strings copied into
 * one block with it (NULL: out of memory). */
struct semc_watch_event *semc_watch_event_new(const Semd__WatchEvent *w)
{
	struct semc_watch_event *ev;
	size_t len;
	char *at;

	len = sizeof *ev + strlen(w->name) + strlen(w->principal) +
	      strlen(w->client_name) + strlen(w->host) + strlen(w->reason) + 5;
	if ((ev = calloc(1, len)) == NULL)
		return NULL;
	(void)semc_conv_fill(&event_conv, ev, w);	/* numbers only: cannot fail */
	ev->kind = (enum semc_watch_kind)w->kind;
	ev->kind_name = semc_watch_kind_name(ev->kind);
	at = (char *)(ev + 1);
	ev->name = copy_str(&at, w->name);
	ev->principal = copy_str(&at, w->principal);
	ev->client_name = copy_str(&at, w->client_name);
	ev->host = copy_str(&at, w->host);
	ev->reason = copy_str(&at, w->reason);
	return ev;
}
