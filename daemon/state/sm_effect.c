/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_effect.c - the effects: what a part of the state machine
 * finds must happen but may not do itself, since it would call back up
 * into what called it. Each is queued here, beside the record it is about,
 * and delivered by sm_settle() (sm_settle.c) once the call that made it is
 * over, in the order of the queues:
 *  - an offer: a waiting request that may be ready (the core offered a
 *    gated member, a bucket has the tokens): grant it if it is;
 *  - a bucket: a name's queue or tokens changed: set its timer again;
 *  - a deadlock check: a grant went to a session that still waits.
 * The kernel keeps a hand-off beside the waiter in the same way (the
 * wake_q, woken after the lock is dropped). A queue holds a record at most
 * once; the records leave it when they are freed (wait_unlink,
 * rate_detach) or delivered.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/*
 * Look at w once the current call is over: an offer (the core found a gated
 * member first in line with its permits free), or anything that may have
 * made the request ready.
 */
void effect_offer(struct sm *sm, struct sm_wait *w)
{
	if (list_empty(&w->offer_entry))
		list_add_tail(&w->offer_entry, &sm->offers);
}

/*
 * The queue or the tokens of sem changed: its bucket's timer is set again,
 * and its first waiter offered if its tokens are there.
 */
void effect_rate(struct sm *sm, struct sm_sem *sem)
{
	if (sem->rate != NULL && list_empty(&sem->rate->touch_entry))
		list_add_tail(&sem->rate->touch_entry, &sm->rate_touched);
}

/*
 * A grant to s: if s still waits for something (or has a child, which it
 * waits for), the grant may have closed a cycle of sessions; look from s
 * (by its id: s may be gone by then).
 */
void effect_deadlock(struct sm *sm, struct sm_session *s)
{
	uint64_t *v;
	size_t cap;

	if (!family_waits(s) || s->nholds == 0)
		return;
	if (sm->dl_ncheck == sm->dl_check_cap) {
		cap = sm->dl_check_cap ? sm->dl_check_cap * 2 : 16;
		if ((v = realloc(sm->dl_check, cap * sizeof *v)) == NULL) {
			sm->ctr.deadlock_cut++;
			return;
		}
		sm->dl_check = v;
		sm->dl_check_cap = cap;
	}
	sm->dl_check[sm->dl_ncheck++] = s->id;
}

/* Take the first entry off a queue; NULL when it is empty. */
static struct list_head *effect_pop(struct list_head *queue)
{
	struct list_head *e;

	if (list_empty(queue))
		return NULL;
	e = queue->next;
	list_del_init(e);
	return e;
}

/* The next request to look at, taken off its queue; NULL: none. */
struct sm_wait *effect_next_offer(struct sm *sm)
{
	struct list_head *e = effect_pop(&sm->offers);

	return e != NULL ? list_entry(e, struct sm_wait, offer_entry) : NULL;
}

/* The next name whose bucket's timer is to be set, off its queue; NULL: none. */
struct sm_sem *effect_next_rate(struct sm *sm)
{
	struct list_head *e = effect_pop(&sm->rate_touched);

	return e != NULL ? list_entry(e, struct sm_rate, touch_entry)->sem : NULL;
}

/* The next session to search a cycle from, off its queue; false: none. */
bool effect_next_deadlock(struct sm *sm, uint64_t *session_id)
{
	if (sm->dl_ncheck == 0)
		return false;
	*session_id = sm->dl_check[0];
	memmove(sm->dl_check, sm->dl_check + 1,
	    --sm->dl_ncheck * sizeof *sm->dl_check);
	return true;
}
