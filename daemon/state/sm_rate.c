/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_rate.c - token buckets: a name's rate, its refills, the
 * moment its first waiter's tokens are due (SetRate is sm_ops_name.c's).
 *
 * A bucket holds whole tokens and a fraction of one, frac, counted in
 * 1/period_ms of a token, so that dt ms add exactly rate * dt units: the
 * level after any number of refills is exactly min(burst, level before +
 * rate * time / period_ms), with nothing rounded (no drift, however many
 * refills: tests/daemon/test_state_rate runs a billion). Time is the state's
 * clock, so every replica fills its buckets alike; a refill is done lazily
 * whenever a name with a rate is looked at, and at the moment the first
 * waiter's tokens are due, by a T_RATE timer in the deadline heap (with a
 * log, durable.c proposes an entry at sm_next_deadline(), so the tokens come
 * on time on every node). Splitting a refill in two never changes the
 * outcome (min(burst, min(burst, L + a) + b) == min(burst, L + a + b)), so
 * when the lazy refills happen does not matter.
 *
 * A rate-only name (mode RATE) keeps its whole tokens as the core
 * semaphore's free count: a refill is an up, and the core hands the tokens
 * to its waiters in FIFO order as they come. A name with a limit keeps them
 * here, and its waiters are gated (sm_wait.c): a grant needs a free permit
 * and the tokens.
 *
 * Bounds: rate, burst <= 2^30 and period_ms <= 86,400,000, so a full bucket
 * is at most 2^30 * 86,400,000 < 2^63 units and no product overflows.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* Add dt ms to a bucket's level (whole tokens, frac units), up to burst. */
uint64_t sm_rate_accrue(uint64_t *whole, uint64_t *frac, uint32_t rate,
    uint32_t period_ms, uint32_t burst, uint64_t dt)
{
	uint64_t room, acc, add;

	if (*whole >= burst) {
		*frac = 0;
		return 0;
	}
	room = (burst - *whole) * (uint64_t)period_ms - *frac;	/* units to full */
	if (dt >= (room + rate - 1) / rate) {
		add = burst - *whole;
		*whole = burst;
		*frac = 0;
		return add;
	}
	acc = *frac + (uint64_t)rate * dt;	/* < room + rate: no overflow */
	add = acc / period_ms;
	*frac = acc % period_ms;
	*whole += add;
	return add;
}

/* ms until a bucket holds need whole tokens (0: it does). */
uint64_t sm_rate_wait_ms(uint64_t whole, uint64_t frac, uint32_t rate,
    uint32_t period_ms, uint64_t need)
{
	uint64_t units;

	if (whole >= need)
		return 0;
	units = (need - whole) * (uint64_t)period_ms - frac;
	return (units + rate - 1) / rate;
}

/* Check a rate's settings; answers INVALID_ARGUMENT when bad. */
bool rate_args_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    uint32_t rate, uint32_t *period_ms, uint32_t *burst)
{
	if (*period_ms == 0)
		*period_ms = 1000;
	if (*burst == 0)
		*burst = rate < SM_LIMIT_MAX ? rate : SM_LIMIT_MAX;
	if (rate == 0 || rate > SM_LIMIT_MAX) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "rate %u is out of range (1..%u tokens a period)", rate,
		    SM_LIMIT_MAX);
		return false;
	}
	if (*period_ms > SM_RATE_PERIOD_MAX) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "rate period %u ms is out of range (1..%u)", *period_ms,
		    SM_RATE_PERIOD_MAX);
		return false;
	}
	if (*burst > SM_LIMIT_MAX) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "burst %u is out of range (1..%u)", *burst, SM_LIMIT_MAX);
		return false;
	}
	return true;
}

/* Give sem a bucket, full; false when out of memory. */
bool rate_attach(struct sm *sm, struct sm_sem *sem, uint32_t rate,
    uint32_t period_ms, uint32_t burst)
{
	bool rate_only = sem->mode == SEMD__MODE__RATE;

	/* A rate-only name keeps its tokens as the core's free count. */
	if (!rate_restore(sm, sem, rate, period_ms, burst, 0,
	    rate_only ? 0 : burst, sm->now))
		return false;
	if (rate_only)
		sema_adjust(&sem->sem, (long)burst - sema_count(&sem->sem));
	return true;
}

/* A saved bucket, as it was (sm_restore); false when out of memory. */
bool rate_restore(struct sm *sm, struct sm_sem *sem, uint32_t rate,
    uint32_t period_ms, uint32_t burst, uint64_t frac, uint64_t tokens,
    uint64_t last)
{
	struct sm_rate *r = sm_alloc(sm, sizeof *r);

	if (r == NULL)
		return false;
	*r = (struct sm_rate){ .rate = rate, .period_ms = period_ms,
	    .burst = burst, .frac = frac, .tokens = tokens, .last = last,
	    .due = { .idx = SIZE_MAX }, .sem = sem };
	INIT_LIST_HEAD(&r->touch_entry);
	sem->rate = r;
	return true;
}

/* Take a name's bucket away (its waiters no longer wait for tokens). */
void rate_detach(struct sm *sm, struct sm_sem *sem)
{
	struct sm_rate *r = sem->rate;

	if (r == NULL)
		return;
	timer_disarm(sm, &r->due);
	list_del_init(&r->touch_entry);
	sem->rate = NULL;
	sm_dealloc(sm, r, sizeof *r);
}

/* The whole tokens free in sem's bucket (as of its last refill). */
uint64_t rate_whole(const struct sm_sem *sem)
{
	long count;

	if (sem->mode != SEMD__MODE__RATE)
		return sem->rate->tokens;
	count = sem->sem.count;
	return count > 0 ? (uint64_t)count : 0;
}

/*
 * Fill sem's bucket up to now. A rate-only name's new tokens go to the core,
 * which hands them to waiters (their grants are answered before this
 * returns). Not for a read off the log (sm_read), which changes nothing: it
 * tells the level as of now without filling (rate_level).
 */
void rate_refill(struct sm *sm, struct sm_sem *sem)
{
	struct sm_rate *r = sem->rate;
	uint64_t whole, add;

	if (r == NULL || sm->reading || sm->now <= r->last)
		return;
	whole = rate_whole(sem);
	add = sm_rate_accrue(&whole, &r->frac, r->rate, r->period_ms,
	    r->burst, sm->now - r->last);
	r->last = sm->now;
	if (sem->mode != SEMD__MODE__RATE) {
		r->tokens = whole;
		/* The first waiter may have its tokens now: look (settling). */
		if (add > 0 && !list_empty(&sem->waiters))
			effect_rate(sm, sem);
	} else if (add > 0) {
		sema_up_n_owned(&sem->sem, (unsigned int)add);
	}
}

/* Take n tokens of a name with a limit (a grant of it). */
void rate_take(struct sm_sem *sem, uint32_t n)
{
	sem->rate->tokens -= n;
}

/* Has a name with a limit and a rate n tokens now (refilled first)? */
bool rate_has(struct sm *sm, struct sm_sem *sem, uint32_t n)
{
	if (sem->rate == NULL || sem->mode == SEMD__MODE__RATE)
		return true;
	rate_refill(sm, sem);
	return rate_whole(sem) >= n;
}

/*
 * The member whose tokens the bucket waits for: the first in line that is
 * not parked (a detached-hold down of a session that is away is passed over).
 */
static struct sm_member *rate_head(const struct sm_sem *sem)
{
	return sem_first_in_line(sem);
}

/*
 * Set sem's timer for the moment its first waiter's tokens are due, and
 * offer the first waiter of a name with a limit whose tokens are there.
 */
void rate_arm(struct sm *sm, struct sm_sem *sem)
{
	struct sm_rate *r = sem->rate;
	struct sm_member *head;
	uint64_t whole, wait;

	rate_refill(sm, sem);
	timer_disarm(sm, &r->due);
	if ((head = rate_head(sem)) == NULL)
		return;
	whole = rate_whole(sem);
	wait = sm_rate_wait_ms(whole, r->frac, r->rate, r->period_ms, head->n);
	if (wait == 0) {
		if (sem->mode != SEMD__MODE__RATE)
			effect_offer(sm, head->wait);
		return;
	}
	if (timer_arm(sm, &r->due, T_RATE, r->last + wait) != 0)
		sm->rate_bugs++;	/* out of memory: served at the next refill */
}

/* A T_RATE timer fired: the first waiter's tokens are due. */
void rate_due(struct sm *sm, struct sm_timer *t)
{
	struct sm_rate *r = container_of(t, struct sm_rate, due);

	effect_rate(sm, r->sem);		/* refilled, offered, re-armed on settling */
}

/*
 * The level sem's bucket has now, whole tokens and frac, as a refill would
 * leave it but without one (nothing changes): the state time it is of.
 */
static uint64_t rate_level(const struct sm *sm, const struct sm_sem *sem,
    uint64_t *whole, uint64_t *frac)
{
	const struct sm_rate *r = sem->rate;

	*whole = rate_whole(sem);
	*frac = r->frac;
	if (sm->now <= r->last)
		return r->last;
	sm_rate_accrue(whole, frac, r->rate, r->period_ms, r->burst,
	    sm->now - r->last);
	return sm->now;
}

/* Tokens in sem's bucket now, in billionths. */
uint64_t rate_nano(const struct sm *sm, const struct sm_sem *sem)
{
	uint64_t whole, frac;

	rate_level(sm, sem, &whole, &frac);
	return whole * 1000000000u + frac * 1000000000u / sem->rate->period_ms;
}

/*
 * The permits sem has free now: a rate-only name's are its tokens, the
 * core's count and those a refill would add to it.
 */
long rate_available(const struct sm *sm, struct sm_sem *sem)
{
	long count = sema_count(&sem->sem);
	uint64_t whole, frac;

	if (sem->rate == NULL || sem->mode != SEMD__MODE__RATE)
		return count;
	rate_level(sm, sem, &whole, &frac);
	return count + (long)(whole - rate_whole(sem));
}

/* Unix ms of sem's next whole token, 0 when its bucket is full. */
uint64_t rate_next_ms(const struct sm *sm, const struct sm_sem *sem)
{
	const struct sm_rate *r = sem->rate;
	uint64_t whole, frac, at = rate_level(sm, sem, &whole, &frac);

	if (whole >= r->burst)
		return 0;
	return sm_wall(sm, at + sm_rate_wait_ms(whole, frac, r->rate,
	    r->period_ms, whole + 1));
}
