/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_settle.c - the settle step: after every call into the
 * state machine (a request, a tick, a close), the effects the parts queued
 * (sm_effect.c) are delivered, until there are none: requests that are
 * ready are granted (sm_wait.c), the timers of the buckets that changed are
 * set again (sm_rate.c), and the sessions granted a hold while they wait
 * are searched for a cycle (sm_deadlock.c). Each of these may queue more:
 * a grant frees places, a bucket offers its first waiter, a DEADLOCK
 * answer cancels a waiter. Each round delivers one effect and every
 * delivery ends (a grant or a dropped offer, a timer set, one search), so
 * settling ends. The order - offers first, then buckets, then searches -
 * is part of the state machine's determinism: every replica settles alike.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/*
 * After a call into the state machine (sm_settle()): grant the offered
 * requests that are ready, set the timers of the token buckets that
 * changed, and look for deadlocks closed by the grants made, until there
 * is nothing left to do.
 */
void sm_settle_all(struct sm *sm)
{
	struct sm_wait *w;
	struct sm_sem *sem;
	uint64_t sid;

	if (sm->settling || sm->freeing)
		return;
	sm->settling = true;
	for (;;) {
		if ((w = effect_next_offer(sm)) != NULL) {
			if (wait_ready(sm, w))
				wait_grant(sm, w);
		} else if ((sem = effect_next_rate(sm)) != NULL) {
			rate_arm(sm, sem);
		} else if (effect_next_deadlock(sm, &sid)) {
			deadlock_check(sm, sid);
		} else {
			break;
		}
	}
	sm->settling = false;
}
