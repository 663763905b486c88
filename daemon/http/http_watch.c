/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_watch.c - GET /v1/watch: a Watch of the binary protocol
 * as Server-Sent Events (doc/http.md, Watching). Each stream has a gate of
 * its own, whose watch it is: its events come as notices and go out as
 * one event each, id: the revision, event: the kind, data: the event as
 * JSON. Last-Event-ID (or ?from=) resumes after that revision; events no
 * longer kept are said with an event "compacted", then the live ones go
 * on. The stream's "ready" says the revision it is at: a fresh stream's
 * at once, a resumed one's once the kept events it missed were sent (the
 * state answers the Watch, then replays them in the same call: they are
 * all in the gate's input when its answer is delivered), so that its id
 * is never ahead of what was delivered. A comment every 15 s keeps the
 * stream alive through proxies; a client that does not read is cut off
 * at max-output.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "daemon/http/http-int.h"
#include "daemon/server.h"

#define HWATCH_KEEPALIVE_S	15

struct hwatch {
	struct http_front	*f;
	struct hreq		*r;
	struct gate		*g;
	struct event		*ka;
	struct event		*rdy;		/* a resumed stream's ready, due */
	bool			started;
	bool			prefix;
	bool			ready_due;	/* said once the replay is out */
	uint64_t		from;
	uint64_t		ready_rev;
	char			*name;
};

/* End a stream: its gate (and watch) goes, its request is let go. */
static void hwatch_end(struct hwatch *s)
{
	struct hreq *r = s->r;

	if (s->ka != NULL)
		event_free(s->ka);
	if (s->rdy != NULL)
		event_free(s->rdy);
	gate_release(s->g, false);
	if (s->started)
		http_stream_end(r);
	else
		http_problem(r, SEMD__CODE__UNAVAILABLE, "the watch ended");
	r->priv = NULL;
	r->gone = NULL;
	http_req_put(r);
	free(s->name);
	free(s);
}

/* Send one event of the stream (id: 0 for none). False: it ended. */
static bool hwatch_send(struct hwatch *s, uint64_t id, const char *event,
    json_t *data)
{
	char *json = data != NULL ? json_dumps(data, JSON_COMPACT) : NULL;
	char head[96];
	size_t max = SRV_LIVE(s->f->srv, max_output);
	bool ok;

	json_decref(data);
	if (json == NULL)
		return false;
	if (id != 0)
		snprintf(head, sizeof head, "id: %" PRIu64 "\nevent: %s\ndata: ",
		    id, event);
	else
		snprintf(head, sizeof head, "event: %s\ndata: ", event);
	ok = http_stream_chunk(s->r, head, strlen(head)) &&
	    http_stream_chunk(s->r, json, strlen(json)) &&
	    http_stream_chunk(s->r, "\n\n", 2);
	free(json);
	if (ok && http_backlog(s->r) > max) {
		/* A watcher that does not read is cut off, as any client. */
		http_cut(s->r);
		return false;
	}
	return ok;
}

static void hwatch_ask(struct hwatch *s);

/* Say ready: the revision the stream is at (its id too). False: it ended. */
static bool hwatch_ready(struct hwatch *s, uint64_t rev)
{
	char r[32];

	s->ready_due = false;
	snprintf(r, sizeof r, "%" PRIu64, rev);
	return hwatch_send(s, rev, "ready", json_pack("{s:s}", "revision", r));
}

/* A resumed stream's replay is out: ready. */
static void hwatch_rdy_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hwatch *s = arg;

	(void)fd;
	(void)what;
	if (s->ready_due && !hwatch_ready(s, s->ready_rev))
		hwatch_end(s);
}

/* The Watch's answer: the stream starts, or the request fails. */
static void hwatch_ok(void *arg, const Semd__Reply *rep)
{
	struct hwatch *s = arg;

	if (rep == NULL)
		return;		/* the gate closed: hwatch_closed */
	if (rep->code == SEMD__CODE__COMPACTED && s->from != 0) {
		if (!s->started && !(s->started = http_stream_start(s->r,
		    "text/event-stream"))) {
			hwatch_end(s);
			return;
		}
		if (!hwatch_send(s, 0, "compacted", json_pack("{s:o,s:o}",
		    "from", hj_id(s->from), "oldest_revision",
		    hj_id(rep->oldest_revision)))) {
			hwatch_end(s);
			return;
		}
		s->from = 0;
		hwatch_ask(s);	/* the live events from here */
		return;
	}
	if (rep->code != SEMD__CODE__OK) {
		if (!s->started)
			http_problem_reply(s->r, rep);
		hwatch_end(s);
		return;
	}
	if (!s->started) {
		if (!http_stream_start(s->r, "text/event-stream")) {
			hwatch_end(s);
			return;
		}
		s->started = true;
		if (!http_stream_chunk(s->r, "retry: 2000\n\n", 13)) {
			hwatch_end(s);
			return;
		}
	}
	/*
	 * Ready: the revision so far, after which the live events come. A
	 * fresh watch says it now; a resumed one once the kept events it
	 * missed, which come next, are out (hwatch_rdy_cb, or the first live
	 * event): its id is never ahead of what the client was sent.
	 */
	if (s->from == 0) {
		if (!hwatch_ready(s, rep->revision))
			hwatch_end(s);
		return;
	}
	s->ready_due = true;
	s->ready_rev = rep->revision;
	event_active(s->rdy, EV_TIMEOUT, 0);
}

/* Ask for the watch (from s->from; 0: live). */
static void hwatch_ask(struct hwatch *s)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Watch w = SEMD__WATCH__INIT;

	w.name = s->name;
	w.prefix = s->prefix;
	w.from_revision = s->from;
	req.op_case = SEMD__REQUEST__OP_WATCH;
	req.watch = &w;
	if (gate_call(s->g, &req, hwatch_ok, s) == 0) {
		hwatch_end(s);
		return;
	}
	gate_push(s->g);
}

/* An event of the watch (a notice). */
static void hwatch_notice(void *owner, const Semd__Reply *rep)
{
	struct hwatch *s = owner;

	if (rep->body_case != SEMD__REPLY__BODY_WATCH_EVENT || !s->started)
		return;
	if (s->ready_due && rep->watch_event->revision > s->ready_rev &&
	    !hwatch_ready(s, s->ready_rev)) {
		hwatch_end(s);
		return;
	}
	if (!hwatch_send(s, rep->watch_event->revision,
	    hj_event_kind(rep->watch_event->kind), hj_event(rep->watch_event)))
		hwatch_end(s);
}

/* The gate closed (a stop, this node stopped leading): the stream ends. */
static void hwatch_closed(void *owner)
{
	struct hwatch *s = owner;

	s->g = NULL;
	if (!s->started && http_live(s->r))
		http_problem_gone(s->r, NULL);
	hwatch_end(s);
}

/* A comment line, so that the quiet stream is not closed by a proxy. */
static void hwatch_ka_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hwatch *s = arg;

	(void)fd;
	(void)what;
	if (s->started && !http_stream_chunk(s->r, ": keepalive\n\n", 13))
		hwatch_end(s);
}

/* The client left. */
static void hwatch_gone(struct hreq *r)
{
	struct hwatch *s = r->priv;

	if (s != NULL)
		hwatch_end(s);
}

/* GET /v1/watch?name=&prefix=&from= (or Last-Event-ID). */
void http_route_watch(struct hreq *r)
{
	const char *name = http_query(r, "name"), *pfx = http_query(r, "prefix");
	const char *from = http_query(r, "from");
	const char *last = http_in_header(r, "Last-Event-ID");
	struct timeval tv = { HWATCH_KEEPALIVE_S, 0 };
	struct hwatch *s;
	uint64_t rev = 0;
	char why[256];
	int e;

	/*
	 * Both say the last revision the client has: it resumes after it.
	 * Last-Event-ID wins (a browser reconnecting to a URL with ?from=
	 * sends the last id it read since).
	 */
	if (last != NULL)
		from = last;
	if (from != NULL && (!hj_read_id(from, &rev) || rev == UINT64_MAX)) {
		http_problem(r, SEMD__CODE__INVALID_ARGUMENT, "%s: a revision "
		    "(a decimal number)", last != NULL ? "Last-Event-ID" : "from");
		return;
	}
	if (from != NULL)
		rev++;		/* the one after the last seen */
	if (pfx != NULL && strcmp(pfx, "true") != 0 && strcmp(pfx, "false") != 0) {
		http_problem(r, SEMD__CODE__INVALID_ARGUMENT, "prefix: true or false");
		return;
	}
	if ((s = calloc(1, sizeof *s)) == NULL ||
	    (s->name = strdup(name != NULL ? name : "")) == NULL) {
		free(s);
		http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	s->f = r->f;
	s->r = r;
	s->prefix = (pfx != NULL && strcmp(pfx, "true") == 0) || name == NULL;
	s->from = rev;
	s->g = gate_open(r->f, GATE_WATCH, r->who, NULL, 0, 0, NULL, &e, why,
	    sizeof why);
	if (s->g == NULL) {
		http_problem(r, e, "%s", why);
		free(s->name);
		free(s);
		return;
	}
	s->g->owner = s;
	s->g->notice = hwatch_notice;
	s->g->closed = hwatch_closed;
	http_req_hold(r);
	r->priv = s;
	http_req_watch(r, hwatch_gone);
	if ((s->ka = event_new(http_loop(r), -1, EV_PERSIST, hwatch_ka_cb, s)) != NULL)
		event_add(s->ka, &tv);
	if ((s->rdy = event_new(http_loop(r), -1, 0, hwatch_rdy_cb, s)) == NULL) {
		hwatch_end(s);
		return;
	}
	hwatch_ask(s);
}
