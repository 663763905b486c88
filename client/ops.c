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
static struct semc_info *info_convert(const Semd__InfoReply *p)
{
	struct semc_info *in = calloc(1, sizeof *in);
	size_t i;

	if (in == NULL)
		return NULL;
	in->name = dup0(p->name);
	in->limit = p->limit;
	in->available = p->available;
	in->mode = p->mode == SEMD__MODE__SIGNAL ? SEMC_MODE_SIGNAL :
		   p->mode == SEMD__MODE__RATE ? SEMC_MODE_RATE : SEMC_MODE_OWNED;
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
		const Semd__Holder *ph = p->holders[i];
		struct semc_holder *h = &in->holders[i];

		in->n_holders++;
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
		if (!h->client_name || !h->host || !h->principal)
			goto fail;
	}
	for (i = 0; i < p->n_waiters; i++) {
		const Semd__Waiter *pw = p->waiters[i];
		struct semc_waiter *w = &in->waiters[i];

		in->n_waiters++;
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
		if (!w->client_name || !w->host || !w->principal)
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
static struct semc_list *list_convert(const Semd__ListReply *p)
{
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
		s->mode = ps->mode == SEMD__MODE__SIGNAL ? SEMC_MODE_SIGNAL :
			  ps->mode == SEMD__MODE__RATE ? SEMC_MODE_RATE : SEMC_MODE_OWNED;
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
static struct semc_stats *stats_convert(const Semd__StatsReply *p)
{
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
			res.info = info = info_convert(rp->info);
			break;
		case SEMD__REPLY__BODY_LIST:
			res.list = list = list_convert(rp->list);
			break;
		case SEMD__REPLY__BODY_STATS:
			res.stats = stats = stats_convert(rp->stats);
			break;
		case SEMD__REPLY__BODY_VALIDATE:
			res.valid = rp->validate->valid;
			break;
		case SEMD__REPLY__BODY_RELEASED:
			res.released = rp->released->n;
			break;
		case SEMD__REPLY__BODY_MULTI_GRANT:
			res.multi = multi = semc_multi_convert(rp->multi_grant);
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

/* Check a reply's body kind. */
static int body_expect(Semd__Reply *rp, Semd__Reply__BodyCase want)
{
	if (rp->body_case != want)
		return semc_fail(SEMC_E_PROTOCOL, "reply without the expected body");
	return 0;
}

/* Create a semaphore. */
int semc_create(struct semc *c, const char *name, uint32_t limit, enum semc_mode mode,
		bool if_not_exists)
{
	struct semc_create_opts o = { .limit = limit, .mode = mode, .if_not_exists = if_not_exists };

	return semc_create_ex(c, name, &o);
}

/* Create a semaphore with every option. */
int semc_create_ex(struct semc *c, const char *name, const struct semc_create_opts *o)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Create op = SEMD__CREATE__INIT;
	Semd__Reply *rp;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	if (o == NULL)
		return semc_fail(SEMC_E_ARG, "no create options");
	op.name = (char *)name;
	op.limit = o->limit;
	op.mode = o->mode == SEMC_MODE_SIGNAL ? SEMD__MODE__SIGNAL : SEMD__MODE__OWNED;
	op.if_not_exists = o->if_not_exists;
	op.initial = o->initial;
	op.initial_set = o->initial_set;
	rq.op_case = SEMD__REQUEST__OP_CREATE;
	rq.create = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* Fill a Down request. */
static void down_fill(Semd__Request *rq, Semd__Down *op, const char *name,
		      const struct semc_down_opts *o)
{
	op->name = (char *)name;
	op->n = o->n;
	op->timeout_ms = o->timeout_ms;
	op->lease_ms = o->lease_ms;
	op->limit = o->create_limit;
	rq->op_case = SEMD__REQUEST__OP_DOWN;
	rq->down = op;
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
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Down op = SEMD__DOWN__INIT;
	Semd__Reply *rp;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	if (o == NULL)
		return semc_fail(SEMC_E_ARG, "no down options");
	down_fill(&rq, &op, name, o);
	r = semc_call(c, &rq, o->timeout_ms < 0 ? -1 : o->timeout_ms, &rp);
	if (r == 0 && (r = body_expect(rp, SEMD__REPLY__BODY_GRANT)) == 0 && out != NULL)
		grant_copy(out, rp->grant);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
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
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Up op = SEMD__UP__INIT;
	Semd__Reply *rp;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	op.name = (char *)name;
	op.n = n;
	op.permit_id = permit_id;
	rq.op_case = SEMD__REQUEST__OP_UP;
	rq.up = &op;
	r = semc_call(c, &rq, 0, &rp);
	if ((r == SEMC_E_NOT_HOLDER || r == SEMC_E_NOT_FOUND) && semc_permit_lost(c, permit_id))
		r = semc_fail(SEMC_E_HOLD_LOST, "permit %llu of %s was lost with the session",
			      (unsigned long long)permit_id, name);
	if (released != NULL)
		*released = r == 0 && rp->body_case == SEMD__REPLY__BODY_RELEASED ?
			    rp->released->n : 0;
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* Cancel a pending down of this session. */
int semc_cancel(struct semc *c, uint64_t request_id)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Cancel op = SEMD__CANCEL__INIT;
	Semd__Reply *rp;
	int r;

	op.request_id = request_id;
	rq.op_case = SEMD__REQUEST__OP_CANCEL;
	rq.cancel = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
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
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Info op = SEMD__INFO__INIT;
	Semd__Reply *rp;
	int r;

	*out = NULL;
	if ((r = name_check(name)) != 0)
		return r;
	op.name = (char *)name;
	op.max = max;
	op.after_permit = after_permit;
	op.after_waiter = after_waiter;
	rq.op_case = SEMD__REQUEST__OP_INFO;
	rq.info = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (r == 0 && (r = body_expect(rp, SEMD__REPLY__BODY_INFO)) == 0 &&
	    (*out = info_convert(rp->info)) == NULL)
		r = semc_fail(SEMC_E_NOMEM, NULL);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* One page of names. */
int semc_list(struct semc *c, const char *prefix, const char *after, uint32_t max,
	      struct semc_list **out)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__List op = SEMD__LIST__INIT;
	Semd__Reply *rp;
	int r;

	*out = NULL;
	op.prefix = (char *)(prefix ? prefix : "");
	op.after = (char *)(after ? after : "");
	op.max = max;
	rq.op_case = SEMD__REQUEST__OP_LIST;
	rq.list = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (r == 0 && (r = body_expect(rp, SEMD__REPLY__BODY_LIST)) == 0 &&
	    (*out = list_convert(rp->list)) == NULL)
		r = semc_fail(SEMC_E_NOMEM, NULL);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* Delete a semaphore. */
int semc_delete(struct semc *c, const char *name, bool force)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Delete op = SEMD__DELETE__INIT;
	Semd__Reply *rp;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	op.name = (char *)name;
	op.force = force;
	rq.op_case = SEMD__REQUEST__OP_DELETE;
	rq.delete_ = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* Change a semaphore's limit. */
int semc_set_limit(struct semc *c, const char *name, uint32_t limit)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__SetLimit op = SEMD__SET_LIMIT__INIT;
	Semd__Reply *rp;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	op.name = (char *)name;
	op.limit = limit;
	rq.op_case = SEMD__REQUEST__OP_SET_LIMIT;
	rq.set_limit = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* Ask whether a fencing token still holds a permit. */
int semc_validate(struct semc *c, const char *name, uint64_t token, bool *valid)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Validate op = SEMD__VALIDATE__INIT;
	Semd__Reply *rp;
	int r;

	*valid = false;
	if ((r = name_check(name)) != 0)
		return r;
	op.name = (char *)name;
	op.token = token;
	rq.op_case = SEMD__REQUEST__OP_VALIDATE;
	rq.validate = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (r == 0 && (r = body_expect(rp, SEMD__REPLY__BODY_VALIDATE)) == 0)
		*valid = rp->validate->valid;
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* The daemon's counters. */
int semc_stats(struct semc *c, struct semc_stats **out)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Stats op = SEMD__STATS__INIT;
	Semd__Reply *rp;
	int r;

	*out = NULL;
	rq.op_case = SEMD__REQUEST__OP_STATS;
	rq.stats = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (r == 0 && (r = body_expect(rp, SEMD__REPLY__BODY_STATS)) == 0 &&
	    (*out = stats_convert(rp->stats)) == NULL)
		r = semc_fail(SEMC_E_NOMEM, NULL);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* A round trip. */
int semc_ping(struct semc *c, uint64_t *rtt_us)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Ping op = SEMD__PING__INIT;
	Semd__Reply *rp;
	struct timespec t0, t1;
	int r;

	rq.op_case = SEMD__REQUEST__OP_PING;
	rq.ping = &op;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = semc_call(c, &rq, 0, &rp);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rtt_us != NULL)
		*rtt_us = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000LL +
				     (t1.tv_nsec - t0.tv_nsec) / 1000);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* Keep the session for its lease when a UNIX connection closes. */
int semc_detach(struct semc *c)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Detach op = SEMD__DETACH__INIT;
	Semd__Reply *rp;
	int r;

	rq.op_case = SEMD__REQUEST__OP_DETACH;
	rq.detach = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	if (r == 0)
		semc_detach_mark(c);
	return r;
}

/* Force-release someone's permit (admin). */
int semc_release(struct semc *c, const char *name, uint64_t permit_id, uint32_t *released)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Release op = SEMD__RELEASE__INIT;
	Semd__Reply *rp;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	op.name = (char *)name;
	op.permit_id = permit_id;
	rq.op_case = SEMD__REQUEST__OP_RELEASE;
	rq.release = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (released != NULL)
		*released = r == 0 && rp->body_case == SEMD__REPLY__BODY_RELEASED ?
			    rp->released->n : 0;
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
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
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Down op = SEMD__DOWN__INIT;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	if (o == NULL)
		return semc_fail(SEMC_E_ARG, "no down options");
	down_fill(&rq, &op, name, o);
	return semc_call_async(c, &rq, fn, arg);
}

/* Asynchronous up. */
int64_t semc_up_async(struct semc *c, const char *name, uint32_t n, uint64_t permit_id,
		      semc_done_fn fn, void *arg)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Up op = SEMD__UP__INIT;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	op.name = (char *)name;
	op.n = n;
	op.permit_id = permit_id;
	rq.op_case = SEMD__REQUEST__OP_UP;
	rq.up = &op;
	return semc_call_async(c, &rq, fn, arg);
}

/* Asynchronous info. */
int64_t semc_info_async(struct semc *c, const char *name, semc_done_fn fn, void *arg)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Info op = SEMD__INFO__INIT;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	op.name = (char *)name;
	rq.op_case = SEMD__REQUEST__OP_INFO;
	rq.info = &op;
	return semc_call_async(c, &rq, fn, arg);
}

/* Asynchronous validate. */
int64_t semc_validate_async(struct semc *c, const char *name, uint64_t token,
			    semc_done_fn fn, void *arg)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Validate op = SEMD__VALIDATE__INIT;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	op.name = (char *)name;
	op.token = token;
	rq.op_case = SEMD__REQUEST__OP_VALIDATE;
	rq.validate = &op;
	return semc_call_async(c, &rq, fn, arg);
}

/* Asynchronous ping. */
int64_t semc_ping_async(struct semc *c, semc_done_fn fn, void *arg)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Ping op = SEMD__PING__INIT;

	rq.op_case = SEMD__REQUEST__OP_PING;
	rq.ping = &op;
	return semc_call_async(c, &rq, fn, arg);
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

/* The status the first daemon that answers gives. */
int semc_cluster_status(struct semc *c, struct semc_cluster **out)
{
	const Semd__ClusterStatus *st;
	struct semc_cluster *cl;
	Semd__Reply *rp = NULL;
	size_t i;
	int r;

	*out = NULL;
	semc_clear_message();
	if ((r = semc_cluster_status_raw(c, &rp, 0)) != 0)
		return r;
	if ((r = semc_reply_error(rp)) != 0 ||
	    (r = body_expect(rp, SEMD__REPLY__BODY_CLUSTER)) != 0) {
		semd__reply__free_unpacked(rp, NULL);
		return r;
	}
	st = rp->cluster;
	cl = calloc(1, sizeof *cl);
	if (cl == NULL)
		goto nomem;
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
		goto nomem;
	for (i = 0; i < st->n_nodes; i++) {
		struct semc_cluster_node *n = &cl->nodes[i];

		cl->n_nodes++;
		n->id = st->nodes[i]->id;
		n->match_index = st->nodes[i]->match_index;
		n->lag = st->nodes[i]->lag;
		n->address = strdup(st->nodes[i]->address);
		n->role = strdup(st->nodes[i]->role);
		if (n->address == NULL || n->role == NULL)
			goto nomem;
	}
	semd__reply__free_unpacked(rp, NULL);
	*out = cl;
	return 0;
nomem:
	semd__reply__free_unpacked(rp, NULL);
	semc_cluster_free(cl);
	return semc_fail(SEMC_E_NOMEM, NULL);
}

/* A change of the cluster, made by the leader. */
static int cluster_change(struct semc *c, int action, uint64_t node_id,
			  const char *address)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Cluster op = SEMD__CLUSTER__INIT;
	Semd__Reply *rp;
	int r;

	op.action = action;
	op.node_id = node_id;
	op.address = (char *)(address ? address : "");
	rq.op_case = SEMD__REQUEST__OP_CLUSTER;
	rq.cluster = &op;
	/* A configuration change waits for the new node to catch up. */
	r = semc_call(c, &rq, 30000, &rp);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
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
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Create op = SEMD__CREATE__INIT;
	Semd__Reply *rp;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	if (o == NULL || rate == NULL)
		return semc_fail(SEMC_E_ARG, "no create options or rate");
	op.name = (char *)name;
	op.limit = o->limit;
	op.mode = o->mode == SEMC_MODE_SIGNAL ? SEMD__MODE__SIGNAL :
		  o->mode == SEMC_MODE_RATE ? SEMD__MODE__RATE : SEMD__MODE__OWNED;
	op.if_not_exists = o->if_not_exists;
	op.initial = o->initial;
	op.initial_set = o->initial_set;
	op.rate = rate->rate;
	op.rate_period_ms = rate->period_ms;
	op.burst = rate->burst;
	rq.op_case = SEMD__REQUEST__OP_CREATE;
	rq.create = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* Change a semaphore's bucket. */
int semc_set_rate(struct semc *c, const char *name, const struct semc_rate *rate)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__SetRate op = SEMD__SET_RATE__INIT;
	Semd__Reply *rp;
	int r;

	if ((r = name_check(name)) != 0)
		return r;
	if (rate == NULL)
		return semc_fail(SEMC_E_ARG, "no rate");
	op.name = (char *)name;
	op.rate = rate->rate;
	op.rate_period_ms = rate->period_ms;
	op.burst = rate->burst;
	rq.op_case = SEMD__REQUEST__OP_SET_RATE;
	rq.set_rate = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
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
struct semc_multi_grant *semc_multi_convert(const Semd__MultiGrant *p)
{
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
static int multi_fill(Semd__Request *rq, Semd__DownMulti *op, Semd__Want *wv, Semd__Want **wp,
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
	rq->op_case = SEMD__REQUEST__OP_DOWN_MULTI;
	rq->down_multi = op;
	return 0;
}

/* Take several names at once, or none. */
int semc_down_multi(struct semc *c, const struct semc_want *wants, size_t n,
		    int64_t timeout_ms, uint32_t lease_ms, struct semc_multi_grant **out)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__DownMulti op = SEMD__DOWN_MULTI__INIT;
	Semd__Want wv[16], *wp[16];
	Semd__Reply *rp;
	int r;

	if (out != NULL)
		*out = NULL;
	if ((r = multi_fill(&rq, &op, wv, wp, wants, n, timeout_ms, lease_ms)) != 0)
		return r;
	r = semc_call(c, &rq, timeout_ms < 0 ? -1 : timeout_ms, &rp);
	if (r == 0 && (r = body_expect(rp, SEMD__REPLY__BODY_MULTI_GRANT)) == 0 && out != NULL &&
	    (*out = semc_multi_convert(rp->multi_grant)) == NULL)
		r = semc_fail(SEMC_E_NOMEM, NULL);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* Asynchronous multi-name down. */
int64_t semc_down_multi_async(struct semc *c, const struct semc_want *wants, size_t n,
			      int64_t timeout_ms, uint32_t lease_ms, semc_done_fn fn, void *arg)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__DownMulti op = SEMD__DOWN_MULTI__INIT;
	Semd__Want wv[16], *wp[16];
	int r;

	if ((r = multi_fill(&rq, &op, wv, wp, wants, n, timeout_ms, lease_ms)) != 0)
		return r;
	return semc_call_async(c, &rq, fn, arg);
}

/* Renew detached holds' leases. */
int semc_renew(struct semc *c, const char *name, uint64_t permit_id, uint32_t lease_ms,
	       uint32_t *renewed, uint64_t *expires_ms)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Renew op = SEMD__RENEW__INIT;
	Semd__Reply *rp;
	int r;

	if (renewed != NULL)
		*renewed = 0;
	if (expires_ms != NULL)
		*expires_ms = 0;
	if ((r = name_check(name)) != 0)
		return r;
	op.name = (char *)name;
	op.permit_id = permit_id;
	op.lease_ms = lease_ms;
	rq.op_case = SEMD__REQUEST__OP_RENEW;
	rq.renew = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (r == 0 && (r = body_expect(rp, SEMD__REPLY__BODY_RENEWED)) == 0) {
		if (renewed != NULL)
			*renewed = rp->renewed->holds;
		if (expires_ms != NULL)
			*expires_ms = rp->renewed->expires_ms;
	}
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
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
static struct semc_holds *holds_convert(const Semd__HoldsReply *p)
{
	struct semc_holds *h = calloc(1, sizeof *h);
	size_t i;

	if (h == NULL)
		return NULL;
	h->total = p->total;
	h->next_permit = p->next_permit;
	if ((h->entries = calloc(p->n_holds + 1, sizeof *h->entries)) == NULL)
		goto fail;
	for (i = 0; i < p->n_holds; i++) {
		const Semd__Holder *ph = p->holds[i];
		struct semc_hold_entry *e = &h->entries[i];

		h->n++;
		e->holder.permit_id = ph->permit_id;
		e->holder.token = ph->token;
		e->holder.n = ph->n;
		e->holder.pid = ph->pid;
		e->holder.since_ms = ph->since_ms;
		e->holder.detached = ph->detached;
		e->holder.expires_ms = ph->expires_ms;
		e->name = dup0(ph->name);
		e->holder.client_name = dup0(ph->client_name);
		e->holder.host = dup0(ph->host);
		e->holder.principal = dup0(ph->principal);
		if (!e->name || !e->holder.client_name || !e->holder.host || !e->holder.principal)
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
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Holds op = SEMD__HOLDS__INIT;
	Semd__Reply *rp;
	int r;

	*out = NULL;
	op.principal = (char *)(principal ? principal : "");
	op.after_permit = after_permit;
	op.max = max;
	rq.op_case = SEMD__REQUEST__OP_HOLDS;
	rq.holds = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (r == 0 && (r = body_expect(rp, SEMD__REPLY__BODY_HOLDS)) == 0 &&
	    (*out = holds_convert(rp->holds)) == NULL)
		r = semc_fail(SEMC_E_NOMEM, NULL);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
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

/* Where a pending down stands. */
int semc_where(struct semc *c, uint64_t request_id, struct semc_where **out)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Where op = SEMD__WHERE__INIT;
	Semd__Reply *rp;
	struct semc_where *w = NULL;
	size_t i;
	int r;

	*out = NULL;
	op.request_id = request_id;
	rq.op_case = SEMD__REQUEST__OP_WHERE;
	rq.where = &op;
	r = semc_call(c, &rq, 0, &rp);
	if (r == 0 && (r = body_expect(rp, SEMD__REPLY__BODY_WHERE)) == 0) {
		const Semd__WhereReply *p = rp->where;

		w = calloc(1, sizeof *w);
		if (w != NULL && (w->places = calloc(p->n_places + 1, sizeof *w->places)) != NULL) {
			w->since_ms = p->since_ms;
			for (i = 0; i < p->n_places; i++) {
				struct semc_place *pl = &w->places[i];

				w->n++;
				pl->position = p->places[i]->position;
				pl->waiters = p->places[i]->waiters;
				pl->held = p->places[i]->held;
				pl->limit = p->places[i]->limit;
				pl->available = p->places[i]->available;
				pl->n = p->places[i]->n;
				pl->tokens_nano = p->places[i]->tokens_nano;
				pl->next_token_ms = p->places[i]->next_token_ms;
				if ((pl->name = dup0(p->places[i]->name)) == NULL)
					break;
			}
		}
		if (w == NULL || w->places == NULL || w->n != p->n_places) {
			semc_where_free(w);
			w = NULL;
			r = semc_fail(SEMC_E_NOMEM, NULL);
		}
	}
	*out = w;
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}
