/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/ops.c - libsemclient's operations (but the downs: down.c; a
 * cluster's: cluster.c; watches: watch.c; backups: backup.c): each fills
 * its request message and makes the generic call (op.c) that sends it,
 * checks the reply's body and copies the result out (base/result.c
 * converts it).
 */
#include <stdlib.h>
#include <string.h>

#include "client/api/api.h"

/* How many permits a reply released (a reply without the count: 0). */
static void released_out(const Semd__Reply *rp, void *out)
{
	uint32_t *released = out;

	*released = rp != NULL && rp->body_case == SEMD__REPLY__BODY_RELEASED ?
		    rp->released->n : 0;
}

/* Whether a token is still valid. */
static void valid_out(const Semd__Reply *rp, void *out)
{
	bool *valid = out;

	*valid = rp != NULL && rp->validate->valid;
}

/* semc_renew()'s two out-parameters, either may be NULL. */
struct renew_out {
	uint32_t *renewed;
	uint64_t *expires_ms;
};

/* Copy a Renewed out. */
static void renewed_out(const Semd__Reply *rp, void *out)
{
	const struct renew_out *o = out;

	if (o->renewed != NULL)
		*o->renewed = rp != NULL ? rp->renewed->holds : 0;
	if (o->expires_ms != NULL)
		*o->expires_ms = rp != NULL ? rp->renewed->expires_ms : 0;
}

/* What each kind of reply brings back. */
static const struct semc_op_reply
	reply_released = { SEMD__REPLY__BODY__NOT_SET, NULL, released_out },
	reply_valid = { SEMD__REPLY__BODY_VALIDATE, NULL, valid_out },
	reply_renewed = { SEMD__REPLY__BODY_RENEWED, NULL, renewed_out },
	reply_info = { SEMD__REPLY__BODY_INFO, &semc_info_conv, NULL },
	reply_list = { SEMD__REPLY__BODY_LIST, &semc_list_conv, NULL },
	reply_stats = { SEMD__REPLY__BODY_STATS, &semc_stats_conv, NULL },
	reply_holds = { SEMD__REPLY__BODY_HOLDS, &semc_holds_conv, NULL },
	reply_where = { SEMD__REPLY__BODY_WHERE, &semc_where_conv, NULL };

/* Create a semaphore. */
int semc_create(struct semc *c, const char *name, uint32_t limit, enum semc_mode mode,
		bool if_not_exists)
{
	struct semc_create_opts o = { .limit = limit, .mode = mode, .if_not_exists = if_not_exists };

	return semc_create_ex(c, name, &o);
}

/* Fill a Create request (rate: NULL for none). */
static void create_fill(Semd__Create *op, const char *name, const struct semc_create_opts *o,
			const struct semc_rate *rate)
{
	op->name = (char *)name;
	op->limit = o->limit;
	op->mode = o->mode == SEMC_MODE_SIGNAL ? SEMD__MODE__SIGNAL :
		   o->mode == SEMC_MODE_RATE && rate != NULL ? SEMD__MODE__RATE : SEMD__MODE__OWNED;
	op->if_not_exists = o->if_not_exists;
	op->initial = o->initial;
	op->initial_set = o->initial_set;
	if (rate != NULL) {
		op->rate = rate->rate;
		op->rate_period_ms = rate->period_ms;
		op->burst = rate->burst;
	}
}

/* A create's queue policies when none are asked for: no bound, no shares. */
static const struct semc_queue queue_none;

/* Create a semaphore with every option (every create is semc_create_queue()'s). */
int semc_create_ex(struct semc *c, const char *name, const struct semc_create_opts *o)
{
	int r;

	if ((r = semc_args_check(name, o, "no create options")) != 0)
		return r;
	return semc_create_queue(c, name, o, NULL, &queue_none);
}

/* Create a semaphore with a token bucket. */
int semc_create_rate(struct semc *c, const char *name, const struct semc_create_opts *o,
		     const struct semc_rate *rate)
{
	int r;

	if ((r = semc_args_check(name, o != NULL ? rate : NULL, "no create options or rate")) != 0)
		return r;
	return semc_create_queue(c, name, o, rate, &queue_none);
}

/* Create with queue policies and fair shares (and a rate, or NULL). */
int semc_create_queue(struct semc *c, const char *name, const struct semc_create_opts *o,
		      const struct semc_rate *rate, const struct semc_queue *q)
{
	Semd__Create op = SEMD__CREATE__INIT;
	Semd__GroupWeight wv[64], *wp[64];
	size_t i;
	int r;

	if ((r = semc_args_check(name, o != NULL ? q : NULL, "no create options or queue")) != 0)
		return r;
	if (q->n_weights > 64 || (q->n_weights > 0 && q->weights == NULL)) {
		semc_fail(SEMC_E_ARG, "%s", "at most 64 weights");
		return SEMC_E_ARG;
	}
	create_fill(&op, name, o, rate);
	op.max_waiters = q->max_waiters;
	op.share = (Semd__ShareBy)q->share;
	for (i = 0; i < q->n_weights; i++) {
		semd__group_weight__init(&wv[i]);
		wv[i].group = (char *)(q->weights[i].group != NULL ? q->weights[i].group : "");
		wv[i].weight = q->weights[i].weight;
		wp[i] = &wv[i];
	}
	op.n_weights = q->n_weights;
	op.weights = wp;
	return semc_op_call(c, &op.base, 0, &semc_reply_none, NULL);
}

/* Give permits back. */
int semc_up(struct semc *c, const char *name, uint32_t n, uint64_t permit_id,
	    uint32_t *released)
{
	Semd__Up op = SEMD__UP__INIT;
	int r;

	op.name = (char *)name;
	op.n = n;
	op.permit_id = permit_id;
	r = semc_op_call_named(c, name, &op.base, &reply_released, released);
	if ((r == SEMC_E_NOT_HOLDER || r == SEMC_E_NOT_FOUND) && semc_permit_lost(c, permit_id))
		r = semc_fail(SEMC_E_HOLD_LOST, "permit %llu of %s was lost with the session",
			      (unsigned long long)permit_id, name);
	return r;
}

/* Cancel a pending down of this session. */
int semc_cancel(struct semc *c, uint64_t request_id)
{
	Semd__Cancel op = SEMD__CANCEL__INIT;

	op.request_id = request_id;
	return semc_op_call(c, &op.base, 0, &semc_reply_none, NULL);
}

/* Cancel a pending down without waiting for the answer. */
int64_t semc_cancel_async(struct semc *c, uint64_t request_id, semc_done_fn fn, void *arg)
{
	Semd__Cancel op = SEMD__CANCEL__INIT;

	op.request_id = request_id;
	return semc_op_async(c, &op.base, fn, arg);
}

/* Append page's holders and waiters to in (page keeps nothing it owned). */
static int info_append(struct semc_info *in, struct semc_info *page)
{
	struct semc_holder *h;
	struct semc_waiter *w;

	h = realloc(in->holders, (in->n_holders + page->n_holders + 1) * sizeof *h);
	if (h == NULL)
		return SEMC_E_NOMEM;
	in->holders = h;
	w = realloc(in->waiters, (in->n_waiters + page->n_waiters + 1) * sizeof *w);
	if (w == NULL)
		return SEMC_E_NOMEM;
	in->waiters = w;
	memcpy(in->holders + in->n_holders, page->holders, page->n_holders * sizeof *h);
	memcpy(in->waiters + in->n_waiters, page->waiters, page->n_waiters * sizeof *w);
	in->n_holders += page->n_holders;
	in->n_waiters += page->n_waiters;
	page->n_holders = page->n_waiters = 0;
	in->next_permit = page->next_permit;
	in->next_waiter = page->next_waiter;
	return 0;
}

/* Describe a semaphore: pages of up to 1000 holders and waiters, until
 * 10,000 of each (what the daemon listed before it paged). */
int semc_info(struct semc *c, const char *name, struct semc_info **out)
{
	struct semc_info *in = NULL, *page = NULL;
	int r, pages;

	*out = NULL;
	if ((r = semc_info_page(c, name, 1000, 0, 0, &in)) != 0)
		return r;
	/* bounded: 10 pages of 1000 */
	for (pages = 1; pages < 10 && (in->next_permit != 0 || in->next_waiter != 0); pages++) {
		/* a list already complete is skipped: nothing follows UINT64_MAX */
		r = semc_info_page(c, name, 1000, in->next_permit ? in->next_permit : UINT64_MAX,
				   in->next_waiter ? in->next_waiter : UINT64_MAX, &page);
		if (r == 0)
			r = info_append(in, page);
		semc_info_free(page);
		page = NULL;
		if (r != 0) {
			semc_info_free(in);
			return r == SEMC_E_NOMEM ? semc_fail(r, NULL) : r;
		}
	}
	*out = in;
	return 0;
}

/* One page of a semaphore's holders and waiters. */
int semc_info_page(struct semc *c, const char *name, uint32_t max, uint64_t after_permit,
		   uint64_t after_waiter, struct semc_info **out)
{
	Semd__Info op = SEMD__INFO__INIT;

	op.name = (char *)name;
	op.max = max;
	op.after_permit = after_permit;
	op.after_waiter = after_waiter;
	return semc_op_call_named(c, name, &op.base, &reply_info, out);
}

/* One page of names. */
int semc_list(struct semc *c, const char *prefix, const char *after, uint32_t max,
	      struct semc_list **out)
{
	Semd__List op = SEMD__LIST__INIT;

	op.prefix = (char *)(prefix ? prefix : "");
	op.after = (char *)(after ? after : "");
	op.max = max;
	return semc_op_call(c, &op.base, 0, &reply_list, out);
}

/* Delete a semaphore. */
int semc_delete(struct semc *c, const char *name, bool force)
{
	Semd__Delete op = SEMD__DELETE__INIT;

	op.name = (char *)name;
	op.force = force;
	return semc_op_call_named(c, name, &op.base, &semc_reply_none, NULL);
}

/* Change a semaphore's limit. */
int semc_set_limit(struct semc *c, const char *name, uint32_t limit)
{
	Semd__SetLimit op = SEMD__SET_LIMIT__INIT;

	op.name = (char *)name;
	op.limit = limit;
	return semc_op_call_named(c, name, &op.base, &semc_reply_none, NULL);
}

/* Change a semaphore's bucket. */
int semc_set_rate(struct semc *c, const char *name, const struct semc_rate *rate)
{
	Semd__SetRate op = SEMD__SET_RATE__INIT;
	int r;

	if ((r = semc_args_check(name, rate, "no rate")) != 0)
		return r;
	op.name = (char *)name;
	op.rate = rate->rate;
	op.rate_period_ms = rate->period_ms;
	op.burst = rate->burst;
	return semc_op_call(c, &op.base, 0, &semc_reply_none, NULL);
}

/* Change a name's queue policies. */
int semc_set_queue(struct semc *c, const char *name, const struct semc_queue *q)
{
	Semd__SetQueue op = SEMD__SET_QUEUE__INIT;
	int r;

	if ((r = semc_args_check(name, q, "no queue")) != 0)
		return r;
	if (q->share != SEMC_SHARE_NONE || q->n_weights != 0) {
		semc_fail(SEMC_E_ARG, "%s", "fair shares are set at creation");
		return SEMC_E_ARG;
	}
	op.name = (char *)name;
	op.max_waiters = q->max_waiters;
	return semc_op_call(c, &op.base, 0, &semc_reply_none, NULL);
}

/* Ask whether a fencing token still holds a permit. */
int semc_validate(struct semc *c, const char *name, uint64_t token, bool *valid)
{
	Semd__Validate op = SEMD__VALIDATE__INIT;

	op.name = (char *)name;
	op.token = token;
	return semc_op_call_named(c, name, &op.base, &reply_valid, valid);
}

/* The daemon's counters. */
int semc_stats(struct semc *c, struct semc_stats **out)
{
	Semd__Stats op = SEMD__STATS__INIT;

	return semc_op_call(c, &op.base, 0, &reply_stats, out);
}

/* A round trip. */
int semc_ping(struct semc *c, uint64_t *rtt_us)
{
	Semd__Ping op = SEMD__PING__INIT;
	struct timespec t0, t1;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = semc_op_call(c, &op.base, 0, &semc_reply_none, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rtt_us != NULL)
		*rtt_us = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000LL +
				     (t1.tv_nsec - t0.tv_nsec) / 1000);
	return r;
}

/* Keep the session for its lease when a UNIX connection closes: the mark
 * makes every resume send the Detach again. */
int semc_detach(struct semc *c)
{
	Semd__Detach op = SEMD__DETACH__INIT;
	int r;

	if ((r = semc_op_call(c, &op.base, 0, &semc_reply_none, NULL)) == 0) {
		pthread_mutex_lock(&c->lock);
		c->detach = true;
		pthread_mutex_unlock(&c->lock);
	}
	return r;
}
/* Force-release someone's permit (admin). */
int semc_release(struct semc *c, const char *name, uint64_t permit_id, uint32_t *released)
{
	Semd__Release op = SEMD__RELEASE__INIT;

	op.name = (char *)name;
	op.permit_id = permit_id;
	return semc_op_call_named(c, name, &op.base, &reply_released, released);
}

/* Renew detached holds' leases. */
int semc_renew(struct semc *c, const char *name, uint64_t permit_id, uint32_t lease_ms,
	       uint32_t *renewed, uint64_t *expires_ms)
{
	Semd__Renew op = SEMD__RENEW__INIT;
	struct renew_out out = { renewed, expires_ms };
	int r;

	op.name = (char *)name;
	op.permit_id = permit_id;
	op.lease_ms = lease_ms;
	if ((r = semc_lease_check(c, lease_ms)) != 0) {
		renewed_out(NULL, &out);
		return r;
	}
	return semc_op_call_named(c, name, &op.base, &reply_renewed, &out);
}

/* A principal's holds across all names. */
int semc_holds(struct semc *c, const char *principal, uint64_t after_permit, uint32_t max,
	       struct semc_holds **out)
{
	Semd__Holds op = SEMD__HOLDS__INIT;

	op.principal = (char *)(principal ? principal : "");
	op.after_permit = after_permit;
	op.max = max;
	return semc_op_call(c, &op.base, 0, &reply_holds, out);
}

/* Where a pending down stands. */
int semc_where(struct semc *c, uint64_t request_id, struct semc_where **out)
{
	Semd__Where op = SEMD__WHERE__INIT;

	op.request_id = request_id;
	return semc_op_call(c, &op.base, 0, &reply_where, out);
}

/* Asynchronous up. */
int64_t semc_up_async(struct semc *c, const char *name, uint32_t n, uint64_t permit_id,
		      semc_done_fn fn, void *arg)
{
	Semd__Up op = SEMD__UP__INIT;

	op.name = (char *)name;
	op.n = n;
	op.permit_id = permit_id;
	return semc_op_async_named(c, name, &op.base, fn, arg);
}

/* Asynchronous info. */
int64_t semc_info_async(struct semc *c, const char *name, semc_done_fn fn, void *arg)
{
	Semd__Info op = SEMD__INFO__INIT;

	op.name = (char *)name;
	return semc_op_async_named(c, name, &op.base, fn, arg);
}

/* Asynchronous validate. */
int64_t semc_validate_async(struct semc *c, const char *name, uint64_t token,
			    semc_done_fn fn, void *arg)
{
	Semd__Validate op = SEMD__VALIDATE__INIT;

	op.name = (char *)name;
	op.token = token;
	return semc_op_async_named(c, name, &op.base, fn, arg);
}

/* Asynchronous ping. */
int64_t semc_ping_async(struct semc *c, semc_done_fn fn, void *arg)
{
	Semd__Ping op = SEMD__PING__INIT;

	return semc_op_async(c, &op.base, fn, arg);
}
