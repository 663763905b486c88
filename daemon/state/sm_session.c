/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_session.c - sessions: their leases (the state's timers, or
 * the leader's once the log says so: sm_entry.c's EXPIRE and the leader's
 * sweep, sm_leases_due), the hold-lost notices, the parking
 * of an absent session's waiters, and a session's end (its waiters
 * cancelled, its holds given back, its memos forgotten). Clients and the
 * state machine's life are sm_client.c's, memos sm_memo.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/*
 * Tell a session at once that it lost a hold (a notice, id 0, with the
 * hold): code says why (CANCELLED, SESSION_EXPIRED, UNAVAILABLE).
 */
void notice_lost(struct sm *sm, const struct sm_hold *h, int code,
    const char *why)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__HoldLost hl = SEMD__HOLD_LOST__INIT;
	char msg[384];
	int op = sm->cur_op;

	if (h->session == NULL || h->session->client == NULL)
		return;
	snprintf(msg, sizeof msg, "hold on %s (permit %" PRIu64 ") lost: %s",
	    h->sem->name, h->permit_id, why);
	hl.name = (char *)h->sem->name;
	hl.permit_id = h->permit_id;
	hl.token = h->token;
	hl.n = h->n;
	r.code = code;
	r.message = msg;
	r.body_case = SEMD__REPLY__BODY_HOLD_LOST;
	r.hold_lost = &hl;
	sm->cur_op = 0;
	reply_send(sm, h->session->client, &r);
	sm->cur_op = op;
}

/*
 * Park (away) or unpark (back) the session's waiters whose grant would
 * reach nobody while it is away (wait_parks_away).
 */
void session_park(struct sm *sm, struct sm_session *s, bool away)
{
	struct list_head *pos, *prev;
	struct sm_wait *w;
	unsigned int i;

	/*
	 * Newest first: changing one may grant waiters queued after it, and
	 * this session's later waiters have been done by then (parked, so
	 * passed over; unparked, so their grant frees only entries already
	 * visited), so the walk never meets a freed entry.
	 */
	for (pos = s->waiters.prev; pos != &s->waiters; pos = prev) {
		prev = pos->prev;
		w = list_entry(pos, struct sm_wait, session_entry);
		for (i = 0; i < w->nm; i++) {
			if (!wait_parks_away(w, w->m[i].sem))
				continue;
			sema_park(&w->m[i].sem->sem, &w->m[i].w, away);
			/* Its bucket may wait for another head now. */
			effect_rate(sm, w->m[i].sem);
		}
	}
}

/* Free a session: it has no client; its waiters go, its holds go back. */
void session_free(struct sm *sm, struct sm_session *s)
{
	struct sm_hold *h;
	struct sm_wait *w;
	struct sm_sem *sem;
	struct sm_memo *m;

	/* Cancelling may grant later waiters of this session: loop on head. */
	while (!list_empty(&s->waiters)) {
		w = list_first_entry(&s->waiters, struct sm_wait, session_entry);
		wait_cancel(sm, w, SEMD__CODE__OK, NULL, NULL);
		sm->ctr.cancels_disconnect++;
	}
	while (!list_empty(&s->holds)) {
		h = list_first_entry(&s->holds, struct sm_hold, owner_entry);
		sem = h->sem;
		hold_release(sm, h, true, "its session ended");
		sem_maybe_free(sm, sem);
	}
	while (!list_empty(&s->memos)) {
		m = list_first_entry(&s->memos, struct sm_memo, entry);
		memo_free(sm, s, m);
	}
	timer_disarm(sm, &s->expiry);
	family_leave(s);
	hmap_remove(&sm->sessions, &s->node);
	principal_count(s->ident->pr, SM_LIMIT_SESSIONS, -1);
	ident_put(sm, s->ident);
	sm_dealloc(sm, s, sizeof *s);
	sm->ctr.sessions--;
}

/*
 * (Re)arm a session's lease for lease_ms after the last request heard; a
 * lease that is the leader's has no timer (EXPIRE entries end it).
 */
void session_arm(struct sm *sm, struct sm_session *s)
{
	timer_disarm(sm, &s->expiry);
	if (s->lease_ms > 0 && !sm->leader_leases &&
	    timer_arm(sm, &s->expiry, T_SESSION, s->heard + s->lease_ms) != 0)
		s->lease_ms = 0;	/* out of memory: a lease it cannot have */
}

/*
 * The session's lease ran out (nothing heard for lease_ms). A client still
 * connected (silent: a partition) is told what it lost and its connection
 * is closed; then the session ends.
 */
void session_expire(struct sm *sm, struct sm_session *s, uint64_t now)
{
	struct sm_client *c = s->client;
	struct list_head *pos;
	struct sm_wait *w;
	char why[128];

	sm->ctr.sessions_expired++;
	if (c != NULL) {
		snprintf(why, sizeof why, "session %" PRIu64 " expired: nothing "
		    "heard for %" PRIu64 " ms", s->id, now - s->heard);
		list_for_each(pos, &s->holds)
			notice_lost(sm, list_entry(pos, struct sm_hold,
			    owner_entry), SEMD__CODE__SESSION_EXPIRED, why);
		while (!list_empty(&s->waiters)) {
			w = list_first_entry(&s->waiters, struct sm_wait,
			    session_entry);
			wait_cancel(sm, w, SEMD__CODE__SESSION_EXPIRED, why, NULL);
		}
		reply_err(sm, c, 0, SEMD__CODE__SESSION_EXPIRED, "%s", why);
		s->client = NULL;
		c->session = NULL;
		if (c->conn != NULL && sm->out.close != NULL)
			sm->out.close(sm->out.ctx, c->conn);
	}
	session_free(sm, s);
}

/*
 * The connection of a session closed. Death (down_killable's fatal signal)
 * when nothing can be in between: no lease, a local client that did not
 * Detach, or a shutdown; its waiters are cancelled and its holds go back.
 * Otherwise the session lingers until its lease runs out, counted from
 * the last request heard, with its waiters in their places.
 */
void session_detach(struct sm *sm, struct sm_session *s, bool death,
    uint64_t now)
{
	s->client = NULL;
	if (death || s->lease_ms == 0 || sm->shutting_down ||
	    (!sm->leader_leases && s->heard + s->lease_ms <= now)) {
		session_free(sm, s);
		return;
	}
	session_park(sm, s, true);
}

/*
 * Leases: from here on the leader's (sm_batch_leases). Each session's timer
 * goes; the leader's sweep (sm_leases_due) and EXPIRE entries take over.
 */
void session_leases_start(struct sm *sm, uint32_t floor_ms)
{
	struct hmap_iter it;
	struct hnode *n;

	sm->leader_leases = true;
	sm->lease_floor_ms = floor_ms;
	hmap_iter_init(&it, &sm->sessions);
	while ((n = hmap_iter_next(&it)) != NULL)
		timer_disarm(sm, &container_of(n, struct sm_session, node)->expiry);
}

/* Whether session id is in the state (tests). */
bool sm_session_exists(const struct sm *sm, uint64_t id)
{
	return session_find(sm, id) != NULL;
}
