/* SPDX-License-Identifier: BSD-2-Clause */
/* client/ops.c - libsemclient's operations: requests in, results out. */
#include <stdlib.h>
#include <string.h>

#include "client/client-int.h"

/* The error of a reply, recording its message for the calling thread. */
int semc_reply_error(const Semd__Reply *rp)
{
	int err = semc_code_error(rp->code);

	if (err == 0)
		return 0;
	if (rp->message != NULL && *rp->message != '\0')
		return semc_fail(err, "%s", rp->message);
	return semc_fail(err, NULL);
}

/* strdup that maps NULL to "". */
static char *dup0(const char *s)
{
	return strdup(s ? s : "");
}

/* Copy a Grant. */
static void grant_copy(struct semc_grant *g, const Semd__Grant *pg)
{
	g->permit_id = pg->permit_id;
	g->token = pg->token;
	g->n = pg->n;
	g->waited_us = pg->waited_us;
}

/* Copy a holder (its strings are the caller's to free); 0 or -1. */
static int holder_copy(struct semc_holder *h, const Semd__Holder *ph)
{
	h->permit_id = ph->permit_id;
	h->token = ph->token;
	h->n = ph->n;
	h->pid = ph->pid;
	h->since_ms = ph->since_ms;
	h->detached = ph->detached;
	h->expires_ms = ph->expires_ms;
	h->client_name = dup0(ph->client_name);
	h->host = dup0(ph->host);
	h->principal = dup0(ph->principal);
	return h->client_name && h->host && h->principal ? 0 : -1;
}

/* Copy a waiter (its strings are the caller's to free); 0 or -1. */
static int waiter_copy(struct semc_waiter *w, const Semd__Waiter *pw)
{
	w->request_id = pw->request_id;
	w->n = pw->n;
	w->pid = pw->pid;
	w->since_ms = pw->since_ms;
	w->deadline_ms = pw->deadline_ms;
	w->seq = pw->seq;
	w->detached = pw->detached;
	w->client_name = dup0(pw->client_name);
	w->host = dup0(pw->host);
	w->principal = dup0(pw->principal);
	return w->client_name && w->host && w->principal ? 0 : -1;
}

/* A semaphore's mode as the API names it. */
static enum semc_mode mode_of(Semd__Mode m)
{
	return m == SEMD__MODE__SIGNAL ? SEMC_MODE_SIGNAL :
	       m == SEMD__MODE__RATE ? SEMC_MODE_RATE : SEMC_MODE_OWNED;
}

/* Free an info result. */
void semc_info_free(struct semc_info *info)
{
	size_t i;

	if (info == NULL)
		return;
	for (i = 0; i < info->n_holders; i++) {
		free(info->holders[i].client_name);
		free(info->holders[i].host);
		free(info->holders[i].principal);
	}
	for (i = 0; i < info->n_waiters; i++) {
		free(info->waiters[i].client_name);
		free(info->waiters[i].host);
		free(info->waiters[i].principal);
	}
	free(info->holders);
	free(info->waiters);
	free(info->name);
	free(info);
}

/* Convert an InfoReply. */
static void *info_convert(const Semd__Reply *rp)
{
	const Semd__InfoReply *p = rp->info;
	struct semc_info *in = calloc(1, sizeof *in);
	size_t i;

	if (in == NULL)
		return NULL;
	in->name = dup0(p->name);
	in->limit = p->limit;
	in->available = p->available;
	in->mode = mode_of(p->mode);
	in->auto_created = p->auto_created;
	in->last_token = p->last_token;
	/* a daemon older than these fields sends 0: the lists are complete */
	in->holders_total = p->holders_total > p->n_holders ? p->holders_total : p->n_holders;
	in->waiters_total = p->waiters_total > p->n_waiters ? p->waiters_total : p->n_waiters;
	in->next_permit = p->next_permit;
	in->next_waiter = p->next_waiter;
	in->rate = p->rate;
	in->rate_period_ms = p->rate_period_ms;
	in->burst = p->burst;
	in->tokens_nano = p->tokens_nano;
	in->next_token_ms = p->next_token_ms;
	in->holders = calloc(p->n_holders + 1, sizeof *in->holders);
	in->waiters = calloc(p->n_waiters + 1, sizeof *in->waiters);
	if (in->name == NULL || in->holders == NULL || in->waiters == NULL)
		goto fail;
	for (i = 0; i < p->n_holders; i++) {
		in->n_holders++;
		if (holder_copy(&in->holders[i], p->holders[i]) != 0)
			goto fail;
	}
	for (i = 0; i < p->n_waiters; i++) {
		in->n_waiters++;
		if (waiter_copy(&in->waiters[i], p->waiters[i]) != 0)
			goto fail;
	}
	return in;
fail:
	semc_info_free(in);
	return NULL;
}

/* Free a list result. */
void semc_list_free(struct semc_list *list)
{
	size_t i;

	if (list == NULL)
		return;
	for (i = 0; i < list->n; i++)
		free(list->entries[i].name);
	free(list->entries);
	free(list->next);
	free(list);
}

/* Convert a ListReply. */
static void *list_convert(const Semd__Reply *rp)
{
	const Semd__ListReply *p = rp->list;
	struct semc_list *l = calloc(1, sizeof *l);
	size_t i;

	if (l == NULL)
		return NULL;
	l->entries = calloc(p->n_entries + 1, sizeof *l->entries);
	l->next = dup0(p->next);
	if (l->entries == NULL || l->next == NULL)
		goto fail;
	for (i = 0; i < p->n_entries; i++) {
		const Semd__Summary *ps = p->entries[i];
		struct semc_summary *s = &l->entries[i];

		l->n++;
		s->limit = ps->limit;
		s->available = ps->available;
		s->mode = mode_of(ps->mode);
		s->holders = ps->holders;
		s->waiters = ps->waiters;
		if ((s->name = dup0(ps->name)) == NULL)
			goto fail;
	}
	return l;
fail:
	semc_list_free(l);
	return NULL;
}

/* Free a stats result. */
void semc_stats_free(struct semc_stats *stats)
{
	size_t i;

	if (stats == NULL)
		return;
	for (i = 0; i < stats->n; i++)
		free(stats->counters[i].name);
	free(stats->counters);
	free(stats);
}

/* Convert a StatsReply. */
static void *stats_convert(const Semd__Reply *rp)
{
	const Semd__StatsReply *p = rp->stats;
	struct semc_stats *st = calloc(1, sizeof *st);
	size_t i;

	if (st == NULL)
		return NULL;
	if ((st->counters = calloc(p->n_counters + 1, sizeof *st->counters)) == NULL)
		goto fail;
	for (i = 0; i < p->n_counters; i++) {
		st->n++;
		st->counters[i].value = p->counters[i]->value;
		if ((st->counters[i].name = dup0(p->counters[i]->name)) == NULL)
			goto fail;
	}
	return st;
fail:
	semc_stats_free(st);
	return NULL;
}

static void *multi_convert(const Semd__Reply *rp);

/* Call r's completion callback with the converted outcome. */
void semc_result_deliver(struct semc *c, struct semc_req *r)
{
	const Semd__Reply *rp = r->reply;
	struct semc_result res = { .request_id = r->id, .error = r->error, .message = "" };
	struct semc_grant g;
	struct semc_info *info = NULL;
	struct semc_list *list = NULL;
	struct semc_stats *stats = NULL;
	struct semc_multi_grant *multi = NULL;

	if (rp != NULL) {
		res.error = semc_code_error(rp->code);
		if (rp->message != NULL)
			res.message = rp->message;
		switch (rp->body_case) {
		case SEMD__REPLY__BODY_GRANT:
			grant_copy(&g, rp->grant);
			res.grant = &g;
			break;
		case SEMD__REPLY__BODY_INFO:
			res.info = info = info_convert(rp);
			break;
		case SEMD__REPLY__BODY_LIST:
			res.list = list = list_convert(rp);
			break;
		case SEMD__REPLY__BODY_STATS:
			res.stats = stats = stats_convert(rp);
			break;
		case SEMD__REPLY__BODY_VALIDATE:
			res.valid = rp->validate->valid;
			break;
		case SEMD__REPLY__BODY_RELEASED:
			res.released = rp->released->n;
			break;
		case SEMD__REPLY__BODY_MULTI_GRANT:
			res.multi = multi = multi_convert(rp);
			break;
		default:
			break;
		}
		if (res.error == 0 && ((rp->body_case == SEMD__REPLY__BODY_INFO && !info) ||
				       (rp->body_case == SEMD__REPLY__BODY_LIST && !list) ||
				       (rp->body_case == SEMD__REPLY__BODY_STATS && !stats) ||
				       (rp->body_case == SEMD__REPLY__BODY_MULTI_GRANT && !multi)))
			res.error = SEMC_E_NOMEM;
	} else {
		res.message = semc_strerror(r->error);
	}
	if (r->fn != NULL)
		r->fn(c, &res, r->arg);
	semc_info_free(info);
	semc_list_free(list);
	semc_stats_free(stats);
	semc_multi_grant_free(multi);
}

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
	/* A result the caller frees: out is a pointer to its pointer, set to
	 * NULL first; a NULL result is SEMC_E_NOMEM. */
	void *(*convert)(const Semd__Reply *rp);
	/* A plain value: copy(NULL, out) clears out first, copy(rp, out) fills
	 * it from a successful reply. */
	void (*copy)(const Semd__Reply *rp, void *out);
};

/* Copy a Grant out (an unsuccessful call leaves the caller's as it was). */
static void grant_out(const Semd__Reply *rp, void *out)
{
	if (rp != NULL)
		grant_copy(out, rp->grant);
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

static void *holds_convert(const Semd__Reply *rp);
static void *where_convert(const Semd__Reply *rp);
static void *cluster_convert(const Semd__Reply *rp);

/* What each kind of reply brings back. */
static const struct op_reply reply_none = { SEMD__REPLY__BODY__NOT_SET, NULL, NULL };
static const struct op_reply reply_grant = { SEMD__REPLY__BODY_GRANT, NULL, grant_out };
static const struct op_reply reply_released = { SEMD__REPLY__BODY__NOT_SET, NULL, released_out };
static const struct op_reply reply_valid = { SEMD__REPLY__BODY_VALIDATE, NULL, valid_out };
static const struct op_reply reply_renewed = { SEMD__REPLY__BODY_RENEWED, NULL, renewed_out };
static const struct op_reply reply_info = { SEMD__REPLY__BODY_INFO, info_convert, NULL };
static const struct op_reply reply_list = { SEMD__REPLY__BODY_LIST, list_convert, NULL };
static const struct op_reply reply_stats = { SEMD__REPLY__BODY_STATS, stats_convert, NULL };
static const struct op_reply reply_multi = { SEMD__REPLY__BODY_MULTI_GRANT, multi_convert, NULL };
static const struct op_reply reply_holds = { SEMD__REPLY__BODY_HOLDS, holds_convert, NULL };
static const struct op_reply reply_where = { SEMD__REPLY__BODY_WHERE, where_convert, NULL };
static const struct op_reply reply_cluster = { SEMD__REPLY__BODY_CLUSTER, cluster_convert, NULL };

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
			rq->op_case = (Semd__Request__OpCase)f->id;
			/* the member is a pointer to op's type: protobuf-c's
			 * own layout, as its packer reads it */
			memcpy((char *)rq + f->offset, &op, sizeof op);
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
		if ((res = how->convert(rp)) == NULL)
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

/* Create a semaphore with every option. */
int semc_create_ex(struct semc *c, const char *name, const struct semc_create_opts *o)
{
	Semd__Create op = SEMD__CREATE__INIT;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	if (o == NULL)
		return semc_fail(SEMC_E_ARG, "no create options");
	create_fill(&op, name, o, NULL);
	return op_call(c, &op.base, 0, &reply_none, NULL);
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

	if ((r = name_check(name)) != 0)
		return r;
	if (o == NULL)
		return semc_fail(SEMC_E_ARG, "no down options");
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

	if ((r = name_check(name)) != 0)
		return r;
	if (o == NULL)
		return semc_fail(SEMC_E_ARG, "no down options");
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

/* Free a cluster status. */
void semc_cluster_free(struct semc_cluster *cl)
{
	size_t i;

	if (cl == NULL)
		return;
	for (i = 0; i < cl->n_nodes; i++) {
		free(cl->nodes[i].address);
		free(cl->nodes[i].role);
	}
	free(cl->nodes);
	free(cl->state);
	free(cl->leader);
	free(cl);
}

/* Convert a ClusterStatus. */
static void *cluster_convert(const Semd__Reply *rp)
{
	const Semd__ClusterStatus *st = rp->cluster;
	struct semc_cluster *cl = calloc(1, sizeof *cl);
	size_t i;

	if (cl == NULL)
		return NULL;
	cl->node_id = st->node_id;
	cl->term = st->term;
	cl->commit_index = st->commit_index;
	cl->applied_index = st->applied_index;
	cl->last_index = st->last_index;
	cl->leader_id = st->leader_id;
	cl->state = strdup(st->state);
	cl->leader = strdup(st->leader);
	cl->nodes = calloc(st->n_nodes + 1, sizeof *cl->nodes);
	if (cl->state == NULL || cl->leader == NULL || cl->nodes == NULL)
		goto fail;
	for (i = 0; i < st->n_nodes; i++) {
		struct semc_cluster_node *n = &cl->nodes[i];

		cl->n_nodes++;
		n->id = st->nodes[i]->id;
		n->match_index = st->nodes[i]->match_index;
		n->lag = st->nodes[i]->lag;
		n->address = strdup(st->nodes[i]->address);
		n->role = strdup(st->nodes[i]->role);
		if (n->address == NULL || n->role == NULL)
			goto fail;
	}
	return cl;
fail:
	semc_cluster_free(cl);
	return NULL;
}

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

int semc_cluster_transfer(struct semc *c, uint64_t node_id)
{
	return cluster_change(c, SEMD__CLUSTER__ACTION__TRANSFER, node_id, NULL);
}

/* --- rates, multi-name downs, renew, holds, where (0.3.0) ------------------ */

/* Create a semaphore with a token bucket. */
int semc_create_rate(struct semc *c, const char *name, const struct semc_create_opts *o,
		     const struct semc_rate *rate)
{
	Semd__Create op = SEMD__CREATE__INIT;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	if (o == NULL || rate == NULL)
		return semc_fail(SEMC_E_ARG, "no create options or rate");
	create_fill(&op, name, o, rate);
	return op_call(c, &op.base, 0, &reply_none, NULL);
}

/* Change a semaphore's bucket. */
int semc_set_rate(struct semc *c, const char *name, const struct semc_rate *rate)
{
	Semd__SetRate op = SEMD__SET_RATE__INIT;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	if (rate == NULL)
		return semc_fail(SEMC_E_ARG, "no rate");
	op.name = (char *)name;
	op.rate = rate->rate;
	op.rate_period_ms = rate->period_ms;
	op.burst = rate->burst;
	return op_call(c, &op.base, 0, &reply_none, NULL);
}

/* Free a multi-name grant. */
void semc_multi_grant_free(struct semc_multi_grant *g)
{
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->n; i++)
		free(g->grants[i].name);
	free(g->grants);
	free(g);
}

/* Convert a MultiGrant. */
static void *multi_convert(const Semd__Reply *rp)
{
	const Semd__MultiGrant *p = rp->multi_grant;
	struct semc_multi_grant *g = calloc(1, sizeof *g);
	size_t i;

	if (g == NULL)
		return NULL;
	g->waited_us = p->waited_us;
	if ((g->grants = calloc(p->n_grants + 1, sizeof *g->grants)) == NULL)
		goto fail;
	for (i = 0; i < p->n_grants; i++) {
		g->n++;
		g->grants[i].permit_id = p->grants[i]->permit_id;
		g->grants[i].token = p->grants[i]->token;
		g->grants[i].n = p->grants[i]->n;
		if ((g->grants[i].name = dup0(p->grants[i]->name)) == NULL)
			goto fail;
	}
	return g;
fail:
	semc_multi_grant_free(g);
	return NULL;
}

/* Fill a DownMulti request (wv, wp: n entries each); SEMC_E_ARG or 0. */
static int multi_fill(Semd__DownMulti *op, Semd__Want *wv, Semd__Want **wp,
		      const struct semc_want *wants, size_t n, int64_t timeout_ms, uint32_t lease_ms)
{
	size_t i;
	int r;

	if (wants == NULL || n == 0 || n > 16)
		return semc_fail(SEMC_E_ARG, "a multi-name down takes 1 to 16 names");
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
	if ((r = multi_fill(&op, wv, wp, wants, n, timeout_ms, lease_ms)) != 0)
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

	if ((r = multi_fill(&op, wv, wp, wants, n, timeout_ms, lease_ms)) != 0)
		return r;
	return op_async(c, &op.base, fn, arg);
}

/* Renew detached holds' leases. */
int semc_renew(struct semc *c, const char *name, uint64_t permit_id, uint32_t lease_ms,
	       uint32_t *renewed, uint64_t *expires_ms)
{
	Semd__Renew op = SEMD__RENEW__INIT;
	struct renew_out out = { renewed, expires_ms };

	op.name = (char *)name;
	op.permit_id = permit_id;
	op.lease_ms = lease_ms;
	return op_call_named(c, name, &op.base, &reply_renewed, &out);
}

/* Free a holds result. */
void semc_holds_free(struct semc_holds *h)
{
	size_t i;

	if (h == NULL)
		return;
	for (i = 0; i < h->n; i++) {
		free(h->entries[i].name);
		free(h->entries[i].holder.client_name);
		free(h->entries[i].holder.host);
		free(h->entries[i].holder.principal);
	}
	free(h->entries);
	free(h);
}

/* Convert a HoldsReply. */
static void *holds_convert(const Semd__Reply *rp)
{
	const Semd__HoldsReply *p = rp->holds;
	struct semc_holds *h = calloc(1, sizeof *h);
	size_t i;

	if (h == NULL)
		return NULL;
	h->total = p->total;
	h->next_permit = p->next_permit;
	if ((h->entries = calloc(p->n_holds + 1, sizeof *h->entries)) == NULL)
		goto fail;
	for (i = 0; i < p->n_holds; i++) {
		struct semc_hold_entry *e = &h->entries[i];

		h->n++;
		if ((e->name = dup0(p->holds[i]->name)) == NULL ||
		    holder_copy(&e->holder, p->holds[i]) != 0)
			goto fail;
	}
	return h;
fail:
	semc_holds_free(h);
	return NULL;
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

/* Free a where result. */
void semc_where_free(struct semc_where *w)
{
	size_t i;

	if (w == NULL)
		return;
	for (i = 0; i < w->n; i++)
		free(w->places[i].name);
	free(w->places);
	free(w);
}

/* Convert a WhereReply. */
static void *where_convert(const Semd__Reply *rp)
{
	const Semd__WhereReply *p = rp->where;
	struct semc_where *w = calloc(1, sizeof *w);
	size_t i;

	if (w == NULL)
		return NULL;
	w->since_ms = p->since_ms;
	if ((w->places = calloc(p->n_places + 1, sizeof *w->places)) == NULL)
		goto fail;
	for (i = 0; i < p->n_places; i++) {
		const Semd__Place *pp = p->places[i];
		struct semc_place *pl = &w->places[i];

		w->n++;
		pl->position = pp->position;
		pl->waiters = pp->waiters;
		pl->held = pp->held;
		pl->limit = pp->limit;
		pl->available = pp->available;
		pl->n = pp->n;
		pl->tokens_nano = pp->tokens_nano;
		pl->next_token_ms = pp->next_token_ms;
		if ((pl->name = dup0(pp->name)) == NULL)
			goto fail;
	}
	return w;
fail:
	semc_where_free(w);
	return NULL;
}

/* Where a pending down stands. */
int semc_where(struct semc *c, uint64_t request_id, struct semc_where **out)
{
	Semd__Where op = SEMD__WHERE__INIT;

	op.request_id = request_id;
	return op_call(c, &op.base, 0, &reply_where, out);
}
