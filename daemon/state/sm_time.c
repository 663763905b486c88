/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_time.c - time, the other way into the state: deadlines
 * (a down's timeout, a detached hold's lease, a session's lease, a bucket's
 * next token) fire in time order, each at its own moment and settled
 * before the next; and a shutdown answers every waiter.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* Earliest deadline. */
uint64_t sm_next_deadline(const struct sm *sm)
{
	return sm->heap_n ? sm->heap[0]->when : UINT64_MAX;
}

/* Fire every timer due at or before now. */
void sm_tick(struct sm *sm, uint64_t now)
{
	sm_tick_from(sm, sm->now, now);
}

/*
 * Fire every timer due at or before now, each at its own time (the state's
 * clock is moved to it, never below base, the clock of the last call): a
 * token due at 1003 is taken at 1003 even when the tick comes at 2000, and
 * what it lets through is settled then, before the next timer.
 */
void sm_tick_from(struct sm *sm, uint64_t base, uint64_t now)
{
	struct sm_timer *t;
	struct sm_wait *w;
	struct sm_hold *h;
	struct sm_sem *sem;
	struct sm_session *ss;
	unsigned int nm;
	char why[320];

	sm->cur_op = 0;		/* what fires answers no request */
	while (sm->heap_n > 0 && sm->heap[0]->when <= now) {
		t = sm->heap[0];
		sm->now = t->when > base ? t->when : base;
		timer_disarm(sm, t);
		switch (t->kind) {
		case T_WAIT:
			w = container_of(t, struct sm_wait, deadline);
			nm = w->nm;
			if (nm == 1)
				snprintf(why, sizeof why,
				    "no permit of %s within %" PRIu64 " ms",
				    w->m[0].sem->name, now - w->since_ms);
			else
				snprintf(why, sizeof why,
				    "not all of %u names (%s, ...) within %" PRIu64 " ms",
				    nm, w->m[0].sem->name, now - w->since_ms);
			sm->ctr.timeouts++;
			wait_cancel(sm, w, SEMD__CODE__TIMEOUT, why, NULL);
			break;
		case T_HOLD:
			h = container_of(t, struct sm_hold, expiry);
			sem = h->sem;
			sm->ctr.leases_expired++;
			hold_release(sm, h, true, "its lease ran out");
			sem_maybe_free(sm, sem);
			break;
		case T_RATE:
			rate_due(sm, t);
			break;
		case T_SESSION:
			ss = container_of(t, struct sm_session, expiry);
			if (ss->heard + ss->lease_ms > now)
				session_arm(sm, ss);	/* heard since it was armed */
			else
				session_expire(sm, ss, now);
			break;
		}
		sm_settle(sm);	/* what the timer let through, in time order */
	}
	sm->now = now;
	sm_settle(sm);
}

/*
 * Shutting down: waiters hear UNAVAILABLE, new waits are refused, and every
 * connected session is told that its holds are lost (the state goes with
 * the process) and that the daemon stops.
 */
void sm_shutdown(struct sm *sm, uint64_t now)
{
	char key[SM_NAME_MAX + 1];
	struct ordidx_iter it;
	struct sm_sem *sem;
	struct sm_member *m;
	struct sm_client *c;
	struct list_head *pos, *hpos;

	sm->now = now;
	sm->shutting_down = true;
	sm->cur_op = 0;
	list_for_each(pos, &sm->clients) {
		c = list_entry(pos, struct sm_client, entry);
		if (c->session != NULL)
			list_for_each(hpos, &c->session->holds)
				notice_lost(sm, list_entry(hpos, struct sm_hold,
				    owner_entry), SEMD__CODE__UNAVAILABLE,
				    "semd is shutting down");
		reply_err(sm, c, 0, SEMD__CODE__UNAVAILABLE, "semd is shutting down");
	}
	/* In name order (not hash order): the same on every replica. */
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL) {
		if (list_empty(&sem->waiters))
			continue;
		memcpy(key, sem->name, (size_t)sem->len + 1);
		while (!list_empty(&sem->waiters)) {
			m = list_entry(sem->waiters.prev, struct sm_member,
			    sem_entry);
			wait_cancel(sm, m->wait, SEMD__CODE__UNAVAILABLE,
			    "semd is shutting down", sem);
		}
		sem_maybe_free(sm, sem);	/* the walk resumes after key */
		ordidx_seek(&sm->byname, &it, key, false);
	}
}
