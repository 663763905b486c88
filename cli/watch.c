/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli/watch.c - watch: a name's (or a prefix's) events as they
 * happen, a line each with its revision, made again after a reconnection
 * from the revision after the last one printed, so that none is lost or
 * repeated while the daemon keeps it.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/semctl.h"

/* --- watch -------------------------------------------------------------- */

struct watch_state {
	const char *name;
	bool prefix;
	bool rewatch;		/* the connection was made again */
	uint64_t events;
	uint64_t from;		/* the revision a watch made again starts at */
};

static volatile sig_atomic_t watch_stop;

/* SIGINT, SIGTERM, SIGHUP: end the stream. */
static void watch_on_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

/* One event: a line, or a JSON object on a line. */
static void watch_print(const struct semc_watch_event *e)
{
	char b1[64], b2[32];
	time_t t = (time_t)(e->time_ms / 1000);
	struct tm tm;

	if (g.json) {
		printf("{\"time_ms\":%" PRIu64 ",\"watch\":%" PRIu64 ",\"name\":", e->time_ms,
		       e->watch);
		json_str(e->name);
		printf(",\"event\":\"%s\",\"n\":%u,\"permit_id\":%" PRIu64 ",\"token\":%" PRIu64
		       ",\"request_id\":%" PRIu64 ",\"principal\":", e->kind_name, e->n,
		       e->permit_id, e->token, e->request_id);
		json_str(e->principal);
		printf(",\"client_name\":");
		json_str(e->client_name);
		printf(",\"host\":");
		json_str(e->host);
		printf(",\"pid\":%u,\"holders\":%u,\"waiters\":%u,\"available\":%" PRId64
		       ",\"limit\":%u", e->pid, e->holders, e->waiters, e->available, e->limit);
		if (e->rate != 0)
			printf(",\"rate\":%u,\"rate_period_ms\":%u,\"burst\":%u", e->rate,
			       e->rate_period_ms, e->burst);
		printf(",\"reason\":");
		json_str(e->reason);
		printf(",\"revision\":%" PRIu64 "}\n", e->revision);
		fflush(stdout);
		return;
	}
	if (localtime_r(&t, &tm) != NULL)
		strftime(b1, sizeof b1, "%Y-%m-%d %H:%M:%S", &tm);
	else
		snprintf(b1, sizeof b1, "-");
	printf("%s.%03u %-8s %s", b1, (unsigned)(e->time_ms % 1000), e->kind_name, esc(e->name));
	if (e->n != 0)
		printf(" n=%u", e->n);
	if (e->permit_id != 0)
		printf(" permit=%" PRIu64, e->permit_id);
	if (e->token != 0)
		printf(" token=%" PRIu64, e->token);
	if (e->request_id != 0)
		printf(" request=%" PRIu64, e->request_id);
	if (*e->principal != '\0')
		printf(" by %s (%s@%s pid %u)", esc(e->principal), esc(e->client_name),
		       esc(e->host), e->pid);
	if (e->kind == SEMC_WATCH_LIMIT || e->kind == SEMC_WATCH_CREATE)
		printf(" limit=%u", e->limit);
	if (e->rate != 0 && (e->kind == SEMC_WATCH_RATE || e->kind == SEMC_WATCH_CREATE))
		printf(" rate=%s burst=%u", rate_text(e->rate, e->rate_period_ms, b2, sizeof b2),
		       e->burst);
	printf(" holders=%u waiters=%u available=%" PRId64, e->holders, e->waiters, e->available);
	if (*e->reason != '\0')
		printf(" (%s)", esc(e->reason));
	printf(" rev=%" PRIu64 "\n", e->revision);
	fflush(stdout);
}

/* An event of the watch. */
static void watch_on_watch(struct semc *c, const struct semc_watch_event *ev, void *arg)
{
	struct watch_state *ws = arg;

	(void)c;
	ws->events++;
	if (ev->revision >= ws->from)
		ws->from = ev->revision + 1;	/* a resume starts after it */
	watch_print(ev);
}

/* A watch is on: a resume starts after the daemon's last event, if later
 * than the last one printed (none may come before the connection goes). */
static void watch_started(struct semc *c, struct watch_state *ws, int64_t id)
{
	uint64_t next = semc_watch_next_revision(c, (uint64_t)id);

	if (next > ws->from)
		ws->from = next;
}

/* Events of the connection during watch. */
static void watch_on_event(struct semc *c, const struct semc_event *ev, void *arg)
{
	struct watch_state *ws = arg;

	(void)c;
	if (ev->type == SEMC_EV_RECONNECTED || ev->type == SEMC_EV_RESUMED) {
		ws->rewatch = true;
	} else if (ev->type == SEMC_EV_DISCONNECTED) {
		if (ws->from != 0)
			fprintf(stderr, "semctl: watch: %s; connecting again, to resume from "
				"revision %" PRIu64 "\n", esc(ev->message), ws->from);
		else
			fprintf(stderr, "semctl: watch: %s; connecting again (no event came "
				"yet: those in between are missed)\n", esc(ev->message));
	}
}

/*
 * watch NAME|PREFIX/ [--prefix] [--all]: stream a name's events (a name
 * ending in '/' or --prefix: every name it begins; --all: every name)
 * until interrupted (exit 0). After a reconnection the watch is made again.
 */
int cmd_watch(struct cmd_args *a)
{
	struct watch_state ws = { 0 };
	struct sigaction sa = { 0 };
	struct semc *c;
	int64_t id, wait;
	size_t len;
	int r;

	if (a->all && a->argc > 0)
		usage_forms("watch: --all takes no NAME");
	if (!a->all && a->argc == 0)
		usage_forms("watch: NAME, PREFIX/ or --all is required");
	ws.name = a->all ? "" : a->argv[0];
	len = strlen(ws.name);
	ws.prefix = a->all || a->prefix || (len > 0 && ws.name[len - 1] == '/');
	ws.from = a->from_rev;
	if ((r = client_open(&c, 0, "semctl watch")) != 0)
		return r;
	semc_set_event_callback(c, watch_on_event, &ws);
	if ((id = semc_watch_from(c, ws.name, ws.prefix, ws.from, watch_on_watch, &ws)) < 0) {
		semc_free(c);
		return fail((int)id, "watch");
	}
	watch_started(c, &ws, id);
	sa.sa_handler = watch_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (!g.json)
		fprintf(stderr, "semctl: watching %s%s (^C to stop)\n",
			a->all ? "every name" : esc(ws.name), ws.prefix && !a->all ? "*" : "");
	/* bounded by the user: until a signal (or stdout closes) */
	while (!watch_stop) {
		struct pollfd p = { .fd = semc_fd(c), .events = POLLIN };

		wait = semc_timeout(c);
		if (wait < 0 || wait > 1000)
			wait = 1000;
		if (p.fd < 0 && wait > 100)
			wait = 100;
		if (poll(&p, p.fd >= 0 ? 1 : 0, (int)wait) < 0 && errno != EINTR)
			break;
		semc_process(c);
		if (ferror(stdout))
			break;		/* the reader went away */
		if (ws.rewatch && !watch_stop) {
			ws.rewatch = false;
			id = semc_watch_from(c, ws.name, ws.prefix, ws.from, watch_on_watch, &ws);
			if (id == SEMC_E_COMPACTED) {
				/* a gap: said, not hidden */
				semc_free(c);
				return fail((int)id, "watch: events were lost");
			}
			if (id < 0)
				ws.rewatch = true;	/* again at the next turn */
			else
				watch_started(c, &ws, id);
		}
	}
	semc_free(c);
	return ferror(stdout) ? EX_ERROR_ : EX_OK_;
}
