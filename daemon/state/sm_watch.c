/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_watch.c - watches: what happens to a name, or to the names
 * with a prefix, streamed to the connections that asked (Watch).
 *
 * A watch is part of the state (the choice the protocol comment explains):
 * registered by a Watch request through the log like any operation, kept
 * with its client, written in snapshots. Every replica therefore makes the
 * same events for the same entries, and the one node the client is bound
 * to sends them (Reply id 0, body watch_event); elsewhere nothing is built.
 * Because only the bound node sends, the notices are counted in this
 * node's figures (Stats' watch_notices, with stats_local), not in the
 * replicated reply counters.
 *
 * An event is produced where the state changes (a wait queued, a grant, a
 * release, a timeout or cancel, a limit or rate change, a create or
 * delete), after the change, with the name's counts as they are then; a
 * release is told before its permits go on to the next waiter, so a
 * watcher reads the release before the grant it causes.
 *
 * Every event has a revision, one more than the event before it (counted
 * whether anyone watches or not: the same on every replica), and the
 * latest are kept in the watch history (sm_evring.c, watch-history bytes)
 * with their identities whole, so that a Watch with from_revision replays
 * what a watcher missed - identities as it may see them - before the live
 * ones, or is told COMPACTED when some are gone.
 *
 * Cost: O(watches) a state change when any watch exists (a compare of the
 * name or prefix each), nothing otherwise; and a notice to every watch that
 * covers the name. So that one principal cannot make every change cost
 * thousands of notices (1,000 connections with 16 watches of the prefix ""
 * each), its watches on all its connections count against its watches cap
 * (SM_LIMIT_WATCHES, the quota of that name). A watcher that does not read
 * is cut off by its node's output limit: the daemon never waits for one.
 * Identities (principal, client, host, pid) are shown to a watcher that may
 * manage the name or is the same principal; the rest see counts only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* Does watch x cover the name of len bytes? */
static bool watch_covers_name(const struct sm_watch *x, const char *name, size_t len)
{
	if (x->prefix)
		return x->len <= len && memcmp(x->name, name, x->len) == 0;
	return x->len == len && memcmp(x->name, name, x->len) == 0;
}

/* Does watch x cover the name of sem? */
static bool watch_covers(const struct sm_watch *x, const struct sm_sem *sem)
{
	return watch_covers_name(x, sem->name, sem->len);
}

/*
 * Nobody watches and no history is kept: the k events of this change are
 * only counted (every event has its revision, kept or not). True: done.
 */
static bool watch_idle(struct sm *sm, unsigned int k)
{
	if (!list_empty(&sm->watches) || sm->evring.size > 0)
		return false;
	sm->ev_rev += k;
	return true;
}

/* May watch x see who did something as ident on sem? */
static bool watch_sees(const struct sm_watch *x, const struct sm_sem *sem,
    const struct sm_ident *ident)
{
	const struct sm_principal *pr = x->client->pr;

	return x->admin || (sem->owner != NULL && sem->owner == pr) ||
	    (ident != NULL && ident->pr == pr);
}

/* Set who did ev as a watcher sees it: ident, or nobody (NULL). */
static void watch_who(Semd__WatchEvent *ev, const struct sm_ident *ident)
{
	if (ident != NULL) {
		ev->principal = ident->pr->name;
		ev->client_name = ident->client_name;
		ev->host = ident->host;
		ev->pid = ident->pid;
	} else {
		ev->principal = (char *)"";
		ev->client_name = (char *)"";
		ev->host = (char *)"";
		ev->pid = 0;
	}
}

/* An event packed once for the watchers that see it alike (sm_out.notice). */
struct watch_packed {
	int	state;		/* 0: not yet, 1: packed, -1: too big: reply() */
	size_t	len;
	uint8_t	buf[4096];	
};

/*
 * Send ev, packed once into *pk (without its watch id, identities as
 * ident), to watch x through sm_out.notice; false when it must go through
 * reply() (no notice sink, or an event too big for the buffer).
 */
static bool watch_notice(struct sm *sm, const struct sm_watch *x,
    Semd__WatchEvent *ev, const struct sm_ident *ident,
    struct watch_packed *pk)
{
	if (sm->out.notice == NULL || pk->state < 0)
		return false;
	if (pk->state == 0) {
		ev->watch = 0;
		watch_who(ev, ident);
		pk->len = semd__watch_event__get_packed_size(ev);
		pk->state = pk->len <= sizeof pk->buf ? 1 : -1;
		if (pk->state < 0)
			return false;
		semd__watch_event__pack(ev, pk->buf);
	}
	sm->out.notice(sm->out.ctx, x->client->conn, x->id, pk->buf, pk->len);
	return true;
}

/*
 * Event rev of sem, what happened w (with ident: who did it) at time_ms
 * with available permits free, sent to every watch that covers sem, on the
 * node its client is bound to. The event is packed once for the watchers that may see
 * who did it and once for the others (a thousand watchers cost a thousand
 * copies, not a thousand packs).
 */
static __attribute__((noinline)) void watch_send_all(struct sm *sm,
    const struct sm_sem *sem, const struct evrec_what *w,
    const struct sm_ident *ident, uint64_t rev, uint64_t time_ms,
    int64_t available)
{
	Semd__WatchEvent ev = SEMD__WATCH_EVENT__INIT;
	Semd__Reply r = SEMD__REPLY__INIT;
	struct watch_packed pk[2];
	struct list_head *pos;
	struct sm_watch *x;
	size_t skip;
	bool sees;

	ev.kind = w->kind;
	ev.n = w->n;
	ev.permit_id = w->permit_id;
	ev.token = w->token;
	ev.request_id = w->request_id;
	ev.reason = (char *)(w->reason != NULL ? w->reason : "");
	ev.name = (char *)sem->name;
	ev.time_ms = time_ms;
	ev.holders = sem->nholders;
	ev.waiters = sem->nwaiters;
	ev.available = available;
	ev.limit = sem->limit;
	ev.max_waiters = sem->max_waiters;
	if (sem->rate != NULL) {
		ev.rate = sem->rate->rate;
		ev.rate_period_ms = sem->rate->period_ms;
		ev.burst = sem->rate->burst;
	}
	ev.revision = rev;
	r.body_case = SEMD__REPLY__BODY_WATCH_EVENT;
	r.watch_event = &ev;
	pk[0].state = pk[1].state = 0;
	list_for_each(pos, &sm->watches) {
		x = list_entry(pos, struct sm_watch, entry);
		if (x->client->conn == NULL || sm->out.reply == NULL ||
		    !watch_covers(x, sem))
			continue;
		skip = 0;
		if (x->prefix && sm->visible != NULL &&
		    !sm->visible(sm->visible_arg, x->client->conn, sem->name,
		    sem->len, &skip))
			continue;
		sees = ident != NULL && watch_sees(x, sem, ident);
		sm->watch_sent++;
		if (watch_notice(sm, x, &ev, sees ? ident : NULL, &pk[sees]))
			continue;
		ev.watch = x->id;
		watch_who(&ev, sees ? ident : NULL);
		sm->out.reply(sm->out.ctx, x->client->conn, &r);
	}
}

/*
 * An event of sem, what happened w (with ident: who did it), kept in the
 * history and sent to its watches (watch_send_all: its two 4 KiB packing
 * buffers stay out of the frame of every change of the state). The free
 * permits are sem's now plus freed (given back, not yet handed on).
 */
static void watch_send(struct sm *sm, const struct sm_sem *sem,
    const struct evrec_what *w, const struct sm_ident *ident, long freed)
{
	uint64_t rev = ++sm->ev_rev, time_ms = sm_wall(sm, sm->now);
	int64_t available = sem->sem.count + freed;

	if (sm->evring.size > 0)
		evrec_keep_event(sm, sem, ident, w, rev, time_ms, available);
	if (!list_empty(&sm->watches))
		watch_send_all(sm, sem, w, ident, rev, time_ms, available);
}

/*
 * The cluster changed (a new leader, term or membership): an event with
 * no name, kept in the history and sent to the watches of every name
 * (prefix ""): no name's right hides it, no identity is in it.
 */
void watch_cluster(struct sm *sm, uint64_t term, const char *members)
{
	uint64_t rev, time_ms = sm_wall(sm, sm->now);
	Semd__WatchEvent ev = SEMD__WATCH_EVENT__INIT;
	Semd__Reply r = SEMD__REPLY__INIT;
	struct list_head *pos;
	struct sm_watch *x;

	if (watch_idle(sm, 1))
		return;
	rev = ++sm->ev_rev;
	if (sm->evring.size > 0)
		evrec_keep_cluster(sm, rev, time_ms, sm->leader_id, term,
		    sm->leader_addr, members);
	ev.kind = SEMD__EVENT_KIND__EVENT_CLUSTER;
	ev.name = (char *)"";
	ev.time_ms = time_ms;
	ev.leader_id = sm->leader_id;
	ev.term = term;
	ev.leader = sm->leader_addr;
	ev.members = (char *)members;
	ev.revision = rev;
	r.body_case = SEMD__REPLY__BODY_WATCH_EVENT;
	r.watch_event = &ev;
	list_for_each(pos, &sm->watches) {
		x = list_entry(pos, struct sm_watch, entry);
		if (x->client->conn == NULL || sm->out.reply == NULL ||
		    !x->prefix || x->len != 0)
			continue;
		ev.watch = x->id;
		sm->watch_sent++;
		sm->out.reply(sm->out.ctx, x->client->conn, &r);
	}
}

/* A hold's n permits were given back (why: NULL for an up), freed or not. */
void watch_hold(struct sm *sm, const struct sm_hold *h, uint32_t n,
    bool freed, const char *why)
{
	const struct evrec_what w = { SEMD__EVENT_KIND__EVENT_RELEASE, n,
	    h->permit_id, h->token, 0, why };

	if (watch_idle(sm, 1))
		return;
	watch_send(sm, h->sem, &w, h->ident, freed ? (long)n : 0);
}

/* c added n permits to signal-mode sem (an up). */
void watch_up(struct sm *sm, const struct sm_sem *sem,
    const struct sm_client *c, uint32_t n)
{
	const struct evrec_what w = { SEMD__EVENT_KIND__EVENT_RELEASE, n, 0, 0, 0,
	    NULL };

	if (watch_idle(sm, 1))
		return;
	watch_send(sm, sem, &w, c->session != NULL ? c->session->ident : NULL, 0);
}

/*
 * An event of kind about s's down id, for n of sem: a grant (its permit id
 * and fencing token), a wait, or a refusal (why).
 */
static void watch_down(struct sm *sm, Semd__EventKind kind,
    const struct sm_sem *sem, const struct sm_session *s, uint64_t id,
    uint32_t n, uint64_t permit_id, uint64_t token, const char *why)
{
	const struct evrec_what w = { kind, n, permit_id, token, id, why };

	if (watch_idle(sm, 1))
		return;
	watch_send(sm, sem, &w, s->ident, 0);
}

/* Permits or tokens of sem were granted to s's down id. */
void watch_grant(struct sm *sm, const struct sm_sem *sem,
    const struct sm_session *s, uint64_t id, uint64_t permit_id,
    uint64_t token, uint32_t n)
{
	watch_down(sm, SEMD__EVENT_KIND__EVENT_GRANT, sem, s, id, n, permit_id,
	    token, NULL);
}

/* A down queued: member m of w. */
void watch_wait(struct sm *sm, const struct sm_wait *w,
    const struct sm_member *m)
{
	watch_down(sm, SEMD__EVENT_KIND__EVENT_WAIT, m->sem, w->session,
	    w->req.request_id, m->n, 0, 0, NULL);
}

/* A queued down left without a grant, answered code (OK: silently). */
void watch_wait_end(struct sm *sm, const struct sm_wait *w, int code,
    const char *why)
{
	struct evrec_what e = { SEMD__EVENT_KIND__EVENT_CANCEL, 0, 0, 0,
	    w->req.request_id, code == SEMD__CODE__OK ? "its session ended" : why };
	unsigned int i;

	if (watch_idle(sm, w->nm))
		return;
	e.kind = code == SEMD__CODE__TIMEOUT ? SEMD__EVENT_KIND__EVENT_TIMEOUT :
	    code == SEMD__CODE__DEADLOCK ? SEMD__EVENT_KIND__EVENT_DEADLOCK :
	    code == SEMD__CODE__REPLACED ? SEMD__EVENT_KIND__EVENT_REPLACED :
	    SEMD__EVENT_KIND__EVENT_CANCEL;
	for (i = 0; i < w->nm; i++) {
		e.n = w->m[i].n;
		watch_send(sm, w->m[i].sem, &e, w->session->ident, 0);
	}
}

/* A down of s was refused DEADLOCK before it queued. */
void watch_deadlock(struct sm *sm, const struct sm_sem *sem,
    const struct sm_session *s, uint64_t id, uint32_t n, const char *why)
{
	watch_down(sm, SEMD__EVENT_KIND__EVENT_DEADLOCK, sem, s, id, n, 0, 0,
	    why);
}

/* A change of the name itself by c: created, deleted, its limit or rate. */
void watch_limit(struct sm *sm, const struct sm_sem *sem,
    Semd__EventKind kind, const struct sm_client *c)
{
	const struct evrec_what w = { kind, 0, 0, 0, 0, NULL };
	struct sm_ident who = { 0 };

	if (watch_idle(sm, 1))
		return;
	if (c != NULL && c->session != NULL) {
		watch_send(sm, sem, &w, c->session->ident, 0);
		return;
	}
	who.pr = c != NULL ? c->pr : NULL;
	who.client_name = (char *)"";
	who.host = (char *)"";
	watch_send(sm, sem, &w, who.pr != NULL ? &who : NULL, 0);
}

/* Free a watch. */
static void watch_free(struct sm *sm, struct sm_watch *x)
{
	list_del_init(&x->entry);
	list_del_init(&x->client_entry);
	x->client->nwatches--;
	principal_count(x->client->pr, SM_LIMIT_WATCHES, -1);
	sm_dealloc(sm, x, sizeof *x);
}

/* Add a watch for client c; NULL when out of memory. */
struct sm_watch *watch_add(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, size_t len, bool prefix, bool admin)
{
	struct sm_watch *x = sm_alloc(sm, sizeof *x);

	if (x == NULL)
		return NULL;
	x->client = c;
	x->id = id;
	x->prefix = prefix;
	x->admin = admin;
	x->len = (uint8_t)len;
	memcpy(x->name, name, len);
	x->name[len] = '\0';
	list_add_tail(&x->entry, &sm->watches);
	list_add_tail(&x->client_entry, &c->watches);
	c->nwatches++;
	principal_count(c->pr, SM_LIMIT_WATCHES, 1);
	return x;
}

/* End c's watch id; false when it has none. */
bool watch_cancel(struct sm *sm, struct sm_client *c, uint64_t id)
{
	struct list_head *pos;
	struct sm_watch *x;

	list_for_each(pos, &c->watches) {
		x = list_entry(pos, struct sm_watch, client_entry);
		if (x->id == id) {
			watch_free(sm, x);
			return true;
		}
	}
	return false;
}

/* The client goes: its watches end. */
void watch_client_gone(struct sm *sm, struct sm_client *c)
{
	while (!list_empty(&c->watches))
		watch_free(sm, list_first_entry(&c->watches, struct sm_watch,
		    client_entry));
}


/*
 * Send watch x the kept events from revision from on that it covers, as
 * they were sent (identities as it may see them), before the live ones.
 */
void watch_replay(struct sm *sm, const struct sm_watch *x, uint64_t from)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	const struct sm_principal *pr = x->client->pr;
	Semd__WatchEvent ev;
	struct evring_it it;
	const uint8_t *p, *owner;
	char strs[EVREC_MAX + 5];
	uint64_t rev;
	uint32_t len;
	size_t skip, olen;
	bool sees;

	if (x->client->conn == NULL || sm->out.reply == NULL)
		return;
	r.body_case = SEMD__REPLY__BODY_WATCH_EVENT;
	evring_first(&sm->evring, &it);
	while (evring_next(&sm->evring, &it, &rev, &p, &len)) {
		if (rev < from || len > EVREC_MAX ||
		    !evrec_get(p, len, rev, &ev, strs, &owner, &olen))
			continue;
		skip = 0;
		if (ev.kind == SEMD__EVENT_KIND__EVENT_CLUSTER &&
		    (!x->prefix || x->len != 0))
			continue;	/* to watches of every name */
		if (ev.kind != SEMD__EVENT_KIND__EVENT_CLUSTER &&
		    (!watch_covers_name(x, ev.name, strlen(ev.name)) ||
		    (x->prefix && sm->visible != NULL &&
		     !sm->visible(sm->visible_arg, x->client->conn, ev.name,
				  strlen(ev.name), &skip))))
			continue;
		sees = x->admin || (olen == pr->len && memcmp(owner, pr->name, olen) == 0) ||
		    strcmp(ev.principal, pr->name) == 0;
		if (!sees) {
			ev.principal = ev.client_name = ev.host = (char *)"";
			ev.pid = 0;
		}
		ev.watch = x->id;
		r.watch_event = &ev;
		sm->watch_sent++;
		sm->out.reply(sm->out.ctx, x->client->conn, &r);
	}
}
