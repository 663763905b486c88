/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_timer.c - the deadline heap: one min-heap of every timer
 * (waiter deadlines, hold leases, session leases), ties in arming order.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* --- the deadline heap ------------------------------------------------------ */

/* Does timer a fire before timer b? */
bool timer_before(const struct sm_timer *a, const struct sm_timer *b)
{
	return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

/* Put heap slot i's timer in place, moving it up or down. */
static void heap_fix(struct sm *sm, size_t i)
{
	struct sm_timer **h = sm->heap, *t = h[i];
	size_t p, c;

	while (i > 0 && timer_before(t, h[p = (i - 1) / 2])) {
		h[i] = h[p];
		h[i]->idx = i;
		i = p;
	}
	for (;;) {
		c = 2 * i + 1;
		if (c >= sm->heap_n)
			break;
		if (c + 1 < sm->heap_n && timer_before(h[c + 1], h[c]))
			c++;
		if (!timer_before(h[c], t))
			break;
		h[i] = h[c];
		h[i]->idx = i;
		i = c;
	}
	h[i] = t;
	t->idx = i;
}

/* Arm a timer with a given tie-breaking sequence; -ENOMEM if the heap cannot grow. */
int timer_arm_seq(struct sm *sm, struct sm_timer *t, int kind, uint64_t when,
    uint64_t seq)
{
	struct sm_timer **h;
	size_t cap;

	if (sm->heap_n == sm->heap_cap) {
		cap = sm->heap_cap ? sm->heap_cap * 2 : 64;
		h = ptr_array_grow(sm->heap, cap);
		if (h == NULL)
			return -ENOMEM;
		sm->heap = h;
		sm->heap_cap = cap;
	}
	t->kind = kind;
	t->when = when;
	t->seq = seq;
	sm->heap[sm->heap_n] = t;
	t->idx = sm->heap_n++;
	heap_fix(sm, t->idx);
	return 0;
}

/* Arm a timer; -ENOMEM if the heap cannot grow. */
int timer_arm(struct sm *sm, struct sm_timer *t, int kind, uint64_t when)
{
	int r = timer_arm_seq(sm, t, kind, when, sm->timer_seq);

	if (r == 0)
		sm->timer_seq++;
	return r;
}

/* Disarm a timer (no-op when not armed). */
void timer_disarm(struct sm *sm, struct sm_timer *t)
{
	size_t i = t->idx;

	if (i == SIZE_MAX)
		return;
	t->idx = SIZE_MAX;
	if (i == --sm->heap_n)
		return;
	sm->heap[i] = sm->heap[sm->heap_n];
	sm->heap[i]->idx = i;
	heap_fix(sm, i);
}
