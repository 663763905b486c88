/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/ops.c - libsemclient's operations: each fills its request message
 * and makes one generic call (op_call(), op_async()) that sends it, checks
 * the reply's body and copies the result out (result.c converts it).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/client-int.h"

/* Reject names the daemon would reject anyway, before a round trip. */
static int name_check(const char *name)
{
	size_t len;

	if (name == NULL)
		return semc_fail(SEMC_E_ARG, "no semaphore name");
	len = strlen(name);
	if (len == 0 || len > 255)
		return semc_fail(SEMC_E_INVALID, "a name is 1 to 255 bytes long");
	return 0;
}

/* Refuse a detached lease longer than the daemon grants, before it is sent:
 * the daemon would cut it to its max-lease, and the hold would end before
 * its holder expects (semc_max_lease()). */
static int lease_check(struct semc *c, uint32_t lease_ms)
{
	uint32_t max = lease_ms > 0 ? semc_max_lease(c) : 0;

	if (max == 0 || lease_ms <= max)
		return 0;
	semc_fail(SEMC_E_INVALID, "a lease of %" PRIu32 " ms is more than the server's "
		  "max-lease (%" PRIu32 " ms)", lease_ms, max);
	return SEMC_E_INVALID;
}

/* Check a name and an operation's options (NULL: what says so). */
static int args_check(const char *name, const void *opts, const char *what)
{
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	if (opts == NULL) {
		/* a constant: the analyzer must see that opts is not used */
		semc_fail(SEMC_E_ARG, "%s", what);
		return SEMC_E_ARG;
	}
	return 0;
}

/*
 * The generic call. Every operation fills its own request message (a
 * Semd__Create, a Semd__Down, ...) and names what its success replies with
 * an op_reply; op_call() does the rest: it puts the message into a Request
 * (request_set()), sends it and waits (semc_call()), checks the reply's body
 * and copies the result to the caller's out-parameter (op_finish()). A new
 * operation is its message and, when its reply carries something new, one
 * op_reply.
 */
struct op_reply {
	Semd__Reply__BodyCase body;	/* a success's body (NOT_SET: not checked) */
	/* A result the caller frees, made by semc_convert(): out is a pointer
	 * to its pointer, set to NULL first; a NULL result is SEMC_E_NOMEM. */
	const struct semc_conv *convert;
	/* A plain value: copy(NULL, out) clears out first, copy(rp, out) fills
	 * it from a successful reply. */
	void (*copy)(const Semd__Reply *rp, void *out);
};

/* Copy a Grant out (an unsuccessful call leaves the caller's as it was). */
static void grant_out(const Semd__Reply *rp, void *out)
{
	if (rp != NULL)
		semc_grant_copy(out, rp->grant);
}

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
static const struct op_reply
	reply_none = { SEMD__REPLY__BODY__NOT_SET, NULL, NULL },
	reply_grant = { SEMD__REPLY__BODY_GRANT, NULL, grant_out },
	reply_released = { SEMD__REPLY__BODY__NOT_SET, NULL, released_out },
	reply_valid = { SEMD__REPLY__BODY_VALIDATE, NULL, valid_out },
	reply_renewed = { SEMD__REPLY__BODY_RENEWED, NULL, renewed_out },
	reply_info = { SEMD__REPLY__BODY_INFO, &semc_info_conv, NULL },
	reply_list = { SEMD__REPLY__BODY_LIST, &semc_list_conv, NULL },
	reply_stats = { SEMD__REPLY__BODY_STATS, &semc_stats_conv, NULL },
	reply_multi = { SEMD__REPLY__BODY_MULTI_GRANT, &semc_multi_conv, NULL },
	reply_holds = { SEMD__REPLY__BODY_HOLDS, &semc_holds_conv, NULL },
	reply_where = { SEMD__REPLY__BODY_WHERE, &semc_where_conv, NULL },
	reply_cluster = { SEMD__REPLY__BODY_CLUSTER, &semc_cluster_conv, NULL };

/* Put an operation's message into rq: the member of Request's oneof whose
 * type is the message's (each operation has a message type of its own). */
static void request_set(Semd__Request *rq, ProtobufCMessage *op)
{
	const ProtobufCMessageDescriptor *d = &semd__request__descriptor;
	unsigned i;

	for (i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];

		if (f->type == PROTOBUF_C_TYPE_MESSAGE && f->descriptor == op->descriptor &&
		    (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0) {
			void *member = op;

			rq->op_case = (Semd__Request__OpCase)f->id;
			/* the member is a pointer to op's type: protobuf-c's
			 * own layout, as its packer reads it */
			memcpy((char *)rq + f->offset, &member, sizeof member);
			return;
		}
	}
	abort();	/* cannot happen: every operation's message is in the oneof */
}

/* Clear an out-parameter before a call (NULL out: none). */
static void op_clear(const struct op_reply *how, void *out)
{
	void *none = NULL;

	if (out == NULL)
		return;
	if (how->convert != NULL)
		memcpy(out, &none, sizeof none);	/* out points to a result pointer */
	else if (how->copy != NULL)
		how->copy(NULL, out);
}

/* Finish a call that returned r with reply rp: check the body, copy the
 * result to out, free rp. */
static int op_finish(int r, Semd__Reply *rp, const struct op_reply *how, void *out)
{
	void *res;

	if (r == 0 && how->body != SEMD__REPLY__BODY__NOT_SET && rp->body_case != how->body)
		r = semc_fail(SEMC_E_PROTOCOL, "reply without the expected body");
	if (r == 0 && out != NULL && how->copy != NULL)
		how->copy(rp, out);
	if (r == 0 && out != NULL && how->convert != NULL) {
		if ((res = semc_convert(how->convert, rp)) == NULL)
			r = semc_fail(SEMC_E_NOMEM, NULL);
		else
			memcpy(out, &res, sizeof res);
	}
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* Send an operation's message, wait extra_ms (< 0: forever) more than the
 * handle's timeout for the reply and copy its result to out. */
static int op_call(struct semc *c, ProtobufCMessage *op, int64_t extra_ms,
		   const struct op_reply *how, void *out)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Reply *rp;
	int r;

	op_clear(how, out);
	request_set(&rq, op);
	r = semc_call(c, &rq, extra_ms, &rp);
	return op_finish(r, rp, how, out);
}

/* The same for an operation on a semaphore: its name is checked first. */
static int op_call_named(struct semc *c, const char *name, ProtobufCMessage *op,
			 const struct op_reply *how, void *out)
{
	int r;

	op_clear(how, out);
	if ((r = name_check(name)) != 0)
		return r;
	return op_call(c, op, 0, how, out);
}

/* Send an operation's message; fn gets the outcome. Returns the request id. */
static int64_t op_async(struct semc *c, ProtobufCMessage *op, semc_done_fn fn, void *arg)
{
	Semd__Request rq = SEMD__REQUEST__INIT;

	request_set(&rq, op);
	return semc_call_async(c, &rq, fn, arg);
}

/* The same for an operation on a semaphore. */
static int64_t op_async_named(struct semc *c, const char *name, ProtobufCMessage *op,
			      semc_done_fn fn, void *arg)
{
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	return op_async(c, op, fn, arg);
}

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

	if ((r = args_check(name, o, "no create options")) != 0)
		return r;
	return semc_create_queue(c, name, o, NULL, &queue_none);
}

/* Fill a Down request. */
static void down_fill(Semd__Down *op, const char *name, const struct semc_down_opts *o)
{
	op->name = (char *)name;
	op->n = o->n;
	op->timeout_ms = o->timeout_ms;
	op->lease_ms = o->lease_ms;
	op->limit = o->create_limit;
}

/* Take n permits, waiting up to timeout_ms. */
int semc_down(struct semc *c, const char *name, uint32_t n, int64_t timeout_ms,
	      uint32_t lease_ms, struct semc_grant *out)
{
	struct semc_down_opts o = { .n = n, .timeout_ms = timeout_ms, .lease_ms = lease_ms };

	return semc_down_ex(c, name, &o, out);
}

/* Take permits with every option. */
int semc_down_ex(struct semc *c, const char *name, const struct semc_down_opts *o,
		 struct semc_grant *out)
{
	Semd__Down op = SEMD__DOWN__INIT;
	int r;

	if ((r = args_check(name, o, "no down options")) != 0 ||
	    (r = lease_check(c, o->lease_ms)) != 0)
		return r;
	down_fill(&op, name, o);
	return op_call(c, &op.base, o->timeout_ms < 0 ? -1 : o->timeout_ms, &reply_grant, out);
}

/* Take n permits only if that is possible now. */
int semc_trydown(struct semc *c, const char *name, uint32_t n, struct semc_grant *out)
{
	return semc_down(c, name, n, 0, 0, out);
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
	r = op_call_named(c, name, &op.base, &reply_released, released);
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
	return op_call(c, &op.base, 0, &reply_none, NULL);
}

/* Cancel a pending down without waiting for the answer. */
int64_t semc_cancel_async(struct semc *c, uint64_t request_id, semc_done_fn fn, void *arg)
{
	Semd__Cancel op = SEMD__CANCEL__INIT;

	op.request_id = request_id;
	return op_async(c, &op.base, fn, arg);
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
	return op_call_named(c, name, &op.base, &reply_info, out);
}

/* One page of names. */
int semc_list(struct semc *c, const char *prefix, const char *after, uint32_t max,
	      struct semc_list **out)
{
	Semd__List op = SEMD__LIST__INIT;

	op.prefix = (char *)(prefix ? prefix : "");
	op.after = (char *)(after ? after : "");
	op.max = max;
	return op_call(c, &op.base, 0, &reply_list, out);
}

/* Delete a semaphore. */
int semc_delete(struct semc *c, const char *name, bool force)
{
	Semd__Delete op = SEMD__DELETE__INIT;

	op.name = (char *)name;
	op.force = force;
	return op_call_named(c, name, &op.base, &reply_none, NULL);
}

/* Change a semaphore's limit. */
int semc_set_limit(struct semc *c, const char *name, uint32_t limit)
{
	Semd__SetLimit op = SEMD__SET_LIMIT__INIT;

	op.name = (char *)name;
	op.limit = limit;
	return op_call_named(c, name, &op.base, &reply_none, NULL);
}

/* Ask whether a fencing token still holds a permit. */
int semc_validate(struct semc *c, const char *name, uint64_t token, bool *valid)
{
	Semd__Validate op = SEMD__VALIDATE__INIT;

	op.name = (char *)name;
	op.token = token;
	return op_call_named(c, name, &op.base, &reply_valid, valid);
}

/* The daemon's counters. */
int semc_stats(struct semc *c, struct semc_stats **out)
{
	Semd__Stats op = SEMD__STATS__INIT;

	return op_call(c, &op.base, 0, &reply_stats, out);
}

/* A round trip. */
int semc_ping(struct semc *c, uint64_t *rtt_us)
{
	Semd__Ping op = SEMD__PING__INIT;
	struct timespec t0, t1;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = op_call(c, &op.base, 0, &reply_none, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rtt_us != NULL)
		*rtt_us = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000LL +
				     (t1.tv_nsec - t0.tv_nsec) / 1000);
	return r;
}

/* Keep the session for its lease when a UNIX connection closes. */
int semc_detach(struct semc *c)
{
	Semd__Detach op = SEMD__DETACH__INIT;
	int r;

	if ((r = op_call(c, &op.base, 0, &reply_none, NULL)) == 0)
		semc_detach_mark(c);
	return r;
}

/* Force-release someone's permit (admin). */
int semc_release(struct semc *c, const char *name, uint64_t permit_id, uint32_t *released)
{
	Semd__Release op = SEMD__RELEASE__INIT;

	op.name = (char *)name;
	op.permit_id = permit_id;
	return op_call_named(c, name, &op.base, &reply_released, released);
}

/* Asynchronous down. */
int64_t semc_down_async(struct semc *c, const char *name, uint32_t n, int64_t timeout_ms,
			uint32_t lease_ms, semc_done_fn fn, void *arg)
{
	struct semc_down_opts o = { .n = n, .timeout_ms = timeout_ms, .lease_ms = lease_ms };

	return semc_down_ex_async(c, name, &o, fn, arg);
}

/* Asynchronous down with every option. */
int64_t semc_down_ex_async(struct semc *c, const char *name, const struct semc_down_opts *o,
			   semc_done_fn fn, void *arg)
{
	Semd__Down op = SEMD__DOWN__INIT;
	int r;

	if ((r = args_check(name, o, "no down options")) != 0 ||
	    (r = lease_check(c, o->lease_ms)) != 0)
		return r;
	down_fill(&op, name, o);
	return op_async(c, &op.base, fn, arg);
}

/* Asynchronous up. */
int64_t semc_up_async(struct semc *c, const char *name, uint32_t n, uint64_t permit_id,
		      semc_done_fn fn, void *arg)
{
	Semd__Up op = SEMD__UP__INIT;

	op.name = (char *)name;
	op.n = n;
	op.permit_id = permit_id;
	return op_async_named(c, name, &op.base, fn, arg);
}

/* Asynchronous info. */
int64_t semc_info_async(struct semc *c, const char *name, semc_done_fn fn, void *arg)
{
	Semd__Info op = SEMD__INFO__INIT;

	op.name = (char *)name;
	return op_async_named(c, name, &op.base, fn, arg);
}

/* Asynchronous validate. */
int64_t semc_validate_async(struct semc *c, const char *name, uint64_t token,
			    semc_done_fn fn, void *arg)
{
	Semd__Validate op = SEMD__VALIDATE__INIT;

	op.name = (char *)name;
	op.token = token;
	return op_async_named(c, name, &op.base, fn, arg);
}

/* Asynchronous ping. */
int64_t semc_ping_async(struct semc *c, semc_done_fn fn, void *arg)
{
	Semd__Ping op = SEMD__PING__INIT;

	return op_async(c, &op.base, fn, arg);
}

/* --- clusters ---------------------------------------------------------- */

/* The status the first daemon that answers gives. */
int semc_cluster_status(struct semc *c, struct semc_cluster **out)
{
	Semd__Reply *rp = NULL;
	int r;

	*out = NULL;
	semc_clear_message();
	if ((r = semc_cluster_status_raw(c, &rp, 0)) != 0)
		return r;
	return op_finish(semc_reply_error(rp), rp, &reply_cluster, out);
}

/* A change of the cluster, made by the leader. */
static int cluster_change(struct semc *c, int action, uint64_t node_id,
			  const char *address)
{
	Semd__Cluster op = SEMD__CLUSTER__INIT;

	op.action = action;
	op.node_id = node_id;
	op.address = (char *)(address ? address : "");
	/* A configuration change waits for the new node to catch up. */
	return op_call(c, &op.base, 30000, &reply_none, NULL);
}

int semc_cluster_add(struct semc *c, uint64_t node_id, const char *address)
{
	if (node_id == 0 || address == NULL || *address == '\0')
		return semc_fail(SEMC_E_ARG, "a node id and its peer address are needed");
	return cluster_change(c, SEMD__CLUSTER__ACTION__ADD, node_id, address);
}

int semc_cluster_remove(struct semc *c, uint64_t node_id)
{
	if (node_id == 0)
		return semc_fail(SEMC_E_ARG, "a node id is needed");
	return cluster_change(c, SEMD__CLUSTER__ACTION__REMOVE, node_id, NULL);
}

/* The leader's id as the cluster says (0: none known or no answer). */
static uint64_t cluster_leader(struct semc *c)
{
	struct semc_cluster *cl = NULL;
	uint64_t id = 0;

	if (semc_cluster_status(c, &cl) == 0)
		id = cl->leader_id;
	semc_cluster_free(cl);
	return id;
}

/*
 * The old leader steps down as the transfer ends, and may drop its clients
 * before its answer goes out: a lost answer is a success if the leadership
 * went where it was asked (any other voter for 0) within a few seconds.
 */
int semc_cluster_transfer(struct semc *c, uint64_t node_id)
{
	uint64_t before = cluster_leader(c), now;
	char msg[256];
	int r, i;

	r = cluster_change(c, SEMD__CLUSTER__ACTION__TRANSFER, node_id, NULL);
	if (r != SEMC_E_DISCONNECTED && r != SEMC_E_UNAVAILABLE && r != SEMC_E_NO_REPLY)
		return r;
	snprintf(msg, sizeof msg, "%s", semc_last_message());
	for (i = 0; i < 30; i++) {
		now = cluster_leader(c);
		if (now != 0 && (node_id != 0 ? now == node_id : now != before)) {
			semc_clear_message();
			return 0;
		}
		usleep(100000);
	}
	return semc_fail(r, "%s", msg);
}

/* --- rates, multi-name downs, renew, holds, where (0.4.0) ------------------ */

/* Create a semaphore with a token bucket. */
int semc_create_rate(struct semc *c, const char *name, const struct semc_create_opts *o,
		     const struct semc_rate *rate)
{
	int r;

	if ((r = args_check(name, o != NULL ? rate : NULL, "no create options or rate")) != 0)
		return r;
	return semc_create_queue(c, name, o, rate, &queue_none);
}

/* Change a semaphore's bucket. */
int semc_set_rate(struct semc *c, const char *name, const struct semc_rate *rate)
{
	Semd__SetRate op = SEMD__SET_RATE__INIT;
	int r;

	if ((r = args_check(name, rate, "no rate")) != 0)
		return r;
	op.name = (char *)name;
	op.rate = rate->rate;
	op.rate_period_ms = rate->period_ms;
	op.burst = rate->burst;
	return op_call(c, &op.base, 0, &reply_none, NULL);
}

/* Fill a DownMulti request (wv, wp: n entries each); 0 or the error. */
static int multi_fill(struct semc *c, Semd__DownMulti *op, Semd__Want *wv, Semd__Want **wp,
		      const struct semc_want *wants, size_t n, int64_t timeout_ms, uint32_t lease_ms)
{
	size_t i;
	int r;

	if (wants == NULL || n == 0 || n > 16)
		return semc_fail(SEMC_E_ARG, "a multi-name down takes 1 to 16 names");
	if ((r = lease_check(c, lease_ms)) != 0)
		return r;
	for (i = 0; i < n; i++) {
		if ((r = name_check(wants[i].name)) != 0)
			return r;
		semd__want__init(&wv[i]);
		wv[i].name = (char *)wants[i].name;
		wv[i].n = wants[i].n;
		wv[i].limit = wants[i].create_limit;
		wp[i] = &wv[i];
	}
	op->n_wants = n;
	op->wants = wp;
	op->timeout_ms = timeout_ms;
	op->lease_ms = lease_ms;
	return 0;
}

/* Take several names at once, or none. */
int semc_down_multi(struct semc *c, const struct semc_want *wants, size_t n,
		    int64_t timeout_ms, uint32_t lease_ms, struct semc_multi_grant **out)
{
	Semd__DownMulti op = SEMD__DOWN_MULTI__INIT;
	Semd__Want wv[16], *wp[16];
	int r;

	op_clear(&reply_multi, out);
	if ((r = multi_fill(c, &op, wv, wp, wants, n, timeout_ms, lease_ms)) != 0)
		return r;
	return op_call(c, &op.base, timeout_ms < 0 ? -1 : timeout_ms, &reply_multi, out);
}

/* Asynchronous multi-name down. */
int64_t semc_down_multi_async(struct semc *c, const struct semc_want *wants, size_t n,
			      int64_t timeout_ms, uint32_t lease_ms, semc_done_fn fn, void *arg)
{
	Semd__DownMulti op = SEMD__DOWN_MULTI__INIT;
	Semd__Want wv[16], *wp[16];
	int r;

	if ((r = multi_fill(c, &op, wv, wp, wants, n, timeout_ms, lease_ms)) != 0)
		return r;
	return op_async(c, &op.base, fn, arg);
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
	if ((r = lease_check(c, lease_ms)) != 0) {
		renewed_out(NULL, &out);
		return r;
	}
	return op_call_named(c, name, &op.base, &reply_renewed, &out);
}

/* A principal's holds across all names. */
int semc_holds(struct semc *c, const char *principal, uint64_t after_permit, uint32_t max,
	       struct semc_holds **out)
{
	Semd__Holds op = SEMD__HOLDS__INIT;

	op.principal = (char *)(principal ? principal : "");
	op.after_permit = after_permit;
	op.max = max;
	return op_call(c, &op.base, 0, &reply_holds, out);
}

/* Where a pending down stands. */
int semc_where(struct semc *c, uint64_t request_id, struct semc_where **out)
{
	Semd__Where op = SEMD__WHERE__INIT;

	op.request_id = request_id;
	return op_call(c, &op.base, 0, &reply_where, out);
}


/* --- queue policies (0.4.0) ---------------------------------------------- */

/* Create with queue policies and fair shares (and a rate, or NULL). */
int semc_create_queue(struct semc *c, const char *name, const struct semc_create_opts *o,
		      const struct semc_rate *rate, const struct semc_queue *q)
{
	Semd__Create op = SEMD__CREATE__INIT;
	Semd__GroupWeight wv[64], *wp[64];
	size_t i;
	int r;

	if ((r = args_check(name, o != NULL ? q : NULL, "no create options or queue")) != 0)
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
	return op_call(c, &op.base, 0, &reply_none, NULL);
}

/* Change a name's queue policies. */
int semc_set_queue(struct semc *c, const char *name, const struct semc_queue *q)
{
	Semd__SetQueue op = SEMD__SET_QUEUE__INIT;
	int r;

	if ((r = args_check(name, q, "no queue")) != 0)
		return r;
	if (q->share != SEMC_SHARE_NONE || q->n_weights != 0) {
		semc_fail(SEMC_E_ARG, "%s", "fair shares are set at creation");
		return SEMC_E_ARG;
	}
	op.name = (char *)name;
	op.max_waiters = q->max_waiters;
	return op_call(c, &op.base, 0, &reply_none, NULL);
}

/* Check a down's policy (multi: no replace key); fill op's fields. */
static int policy_check(const struct semc_down_policy *p, bool multi)
{
	if (p == NULL || (multi && (p->replace != NULL || p->group != NULL)) ||
	    p->priority < SEMC_PRIO_MIN || p->priority > SEMC_PRIO_MAX) {
		semc_fail(SEMC_E_ARG, "%s", p == NULL ? "no policy" :
			  multi && (p->replace != NULL || p->group != NULL) ?
			  "a multi-name down has no replace key or group" :
			  "priority out of range");
		return SEMC_E_ARG;
	}
	return 0;
}

/* Check a down's options and policy, and fill its request: 0, or the error. */
static int down_policy_fill(struct semc *c, Semd__Down *op, const char *name,
			    const struct semc_down_opts *o, const struct semc_down_policy *p)
{
	int r;

	if ((r = args_check(name, o, "no down options")) != 0 ||
	    (r = policy_check(p, false)) != 0 || (r = lease_check(c, o->lease_ms)) != 0)
		return r;
	down_fill(op, name, o);
	op->replace = (char *)p->replace;
	op->priority = p->priority;
	op->group = (char *)p->group;
	return 0;
}

/* A down with a policy. */
int semc_down_policy(struct semc *c, const char *name, const struct semc_down_opts *o,
		     const struct semc_down_policy *p, struct semc_grant *out)
{
	Semd__Down op = SEMD__DOWN__INIT;
	int r;

	if ((r = down_policy_fill(c, &op, name, o, p)) != 0)
		return r;
	return op_call(c, &op.base, o->timeout_ms < 0 ? -1 : o->timeout_ms, &reply_grant, out);
}

/* Asynchronous down with a policy. */
int64_t semc_down_policy_async(struct semc *c, const char *name,
			       const struct semc_down_opts *o,
			       const struct semc_down_policy *p, semc_done_fn fn, void *arg)
{
	Semd__Down op = SEMD__DOWN__INIT;
	int r;

	if ((r = down_policy_fill(c, &op, name, o, p)) != 0)
		return r;
	return op_async(c, &op.base, fn, arg);
}

/* A multi-name down with a policy. */
int semc_down_multi_policy(struct semc *c, const struct semc_want *wants, size_t n,
			   int64_t timeout_ms, uint32_t lease_ms,
			   const struct semc_down_policy *p, struct semc_multi_grant **out)
{
	Semd__DownMulti op = SEMD__DOWN_MULTI__INIT;
	Semd__Want wv[16], *wp[16];
	int r;

	op_clear(&reply_multi, out);
	if ((r = policy_check(p, true)) != 0 ||
	    (r = multi_fill(c, &op, wv, wp, wants, n, timeout_ms, lease_ms)) != 0)
		return r;
	op.priority = p->priority;
	return op_call(c, &op.base, timeout_ms < 0 ? -1 : timeout_ms, &reply_multi, out);
}

/* Asynchronous multi-name down with a policy. */
int64_t semc_down_multi_policy_async(struct semc *c, const struct semc_want *wants, size_t n,
				     int64_t timeout_ms, uint32_t lease_ms,
				     const struct semc_down_policy *p, semc_done_fn fn,
				     void *arg)
{
	Semd__DownMulti op = SEMD__DOWN_MULTI__INIT;
	Semd__Want wv[16], *wp[16];
	int r;

	if ((r = policy_check(p, true)) != 0 ||
	    (r = multi_fill(c, &op, wv, wp, wants, n, timeout_ms, lease_ms)) != 0)
		return r;
	op.priority = p->priority;
	return op_async(c, &op.base, fn, arg);
}
