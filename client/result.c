/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/result.c - libsemclient's results: the structs of semclient.h made
 * from the daemon's replies (each semc_*_convert() takes a reply with the
 * body it converts and returns NULL when out of memory), their free
 * functions, and the outcome handed to an asynchronous call's callback.
 *
 * A result is a struct with an array (holders, entries, counters, ...) of
 * elements copied one by one from a repeated field of the reply: the array
 * and its freeing are made once here (array_copy(), array_free()), each
 * kind of element has a copy and a fini function.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client-int.h"

/* strdup that maps NULL to "". */
static char *dup0(const char *s)
{
	return strdup(s ? s : "");
}

/*
 * Copy the n elements of a reply's repeated field into a new array of
 * elements of size bytes (and one zeroed element more, as semclient.h
 * promises): copy(dst, msg, i) fills dst from msg's element i, 0 or -1 when
 * out of memory. *count counts the elements begun, whole or not, so that
 * the result's free function frees what each holds. 0, or -1 with *out
 * holding what was made.
 */
static int array_copy(void **out, size_t *count, size_t n, size_t size, const void *msg,
		      int (*copy)(void *dst, const void *msg, size_t i))
{
	char *a = calloc(n + 1, size);
	size_t i;

	*out = a;
	*count = 0;
	if (a == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		(*count)++;
		if (copy(a + i * size, msg, i) != 0)
			return -1;
	}
	return 0;
}

/* Free an array of n elements, each through fini (its strings). */
static void array_free(void *arr, size_t n, size_t size, void (*fini)(void *elem))
{
	size_t i;

	for (i = 0; arr != NULL && i < n; i++)
		fini((char *)arr + i * size);
	free(arr);
}

/* Copy a Grant. */
void semc_grant_copy(struct semc_grant *g, const Semd__Grant *pg)
{
	g->permit_id = pg->permit_id;
	g->token = pg->token;
	g->n = pg->n;
	g->waited_us = pg->waited_us;
}

/* A semaphore's mode as the API names it. */
static enum semc_mode mode_of(Semd__Mode m)
{
	return m == SEMD__MODE__SIGNAL ? SEMC_MODE_SIGNAL :
	       m == SEMD__MODE__RATE ? SEMC_MODE_RATE : SEMC_MODE_OWNED;
}

/* Copy a holder (its strings are the caller's to free); 0 or -1. */
static int holder_fill(struct semc_holder *h, const Semd__Holder *ph)
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

/* Free a holder's strings. */
static void holder_fini(void *elem)
{
	struct semc_holder *h = elem;

	free(h->client_name);
	free(h->host);
	free(h->principal);
}

/* Copy an InfoReply's holder i. */
static int info_holder_copy(void *dst, const void *msg, size_t i)
{
	const Semd__InfoReply *p = msg;

	return holder_fill(dst, p->holders[i]);
}

/* Copy an InfoReply's waiter i. */
static int info_waiter_copy(void *dst, const void *msg, size_t i)
{
	const Semd__Waiter *pw = ((const Semd__InfoReply *)msg)->waiters[i];
	struct semc_waiter *w = dst;

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

/* Free a waiter's strings. */
static void waiter_fini(void *elem)
{
	struct semc_waiter *w = elem;

	free(w->client_name);
	free(w->host);
	free(w->principal);
}

/* Free an info result. */
void semc_info_free(struct semc_info *info)
{
	if (info == NULL)
		return;
	array_free(info->holders, info->n_holders, sizeof *info->holders, holder_fini);
	array_free(info->waiters, info->n_waiters, sizeof *info->waiters, waiter_fini);
	free(info->name);
	free(info);
}

/* Convert an InfoReply. */
void *semc_info_convert(const Semd__Reply *rp)
{
	const Semd__InfoReply *p = rp->info;
	struct semc_info *in = calloc(1, sizeof *in);
	void *holders, *waiters;
	int r;

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
	r = array_copy(&holders, &in->n_holders, p->n_holders, sizeof *in->holders, p,
		       info_holder_copy);
	in->holders = holders;
	if (r == 0) {
		r = array_copy(&waiters, &in->n_waiters, p->n_waiters, sizeof *in->waiters, p,
			       info_waiter_copy);
		in->waiters = waiters;
	}
	if (r != 0 || in->name == NULL) {
		semc_info_free(in);
		return NULL;
	}
	return in;
}

/* Copy a ListReply's summary i. */
static int summary_copy(void *dst, const void *msg, size_t i)
{
	const Semd__Summary *ps = ((const Semd__ListReply *)msg)->entries[i];
	struct semc_summary *s = dst;

	s->limit = ps->limit;
	s->available = ps->available;
	s->mode = mode_of(ps->mode);
	s->holders = ps->holders;
	s->waiters = ps->waiters;
	return (s->name = dup0(ps->name)) != NULL ? 0 : -1;
}

/* Free a summary's name. */
static void summary_fini(void *elem)
{
	free(((struct semc_summary *)elem)->name);
}

/* Free a list result. */
void semc_list_free(struct semc_list *list)
{
	if (list == NULL)
		return;
	array_free(list->entries, list->n, sizeof *list->entries, summary_fini);
	free(list->next);
	free(list);
}

/* Convert a ListReply. */
void *semc_list_convert(const Semd__Reply *rp)
{
	const Semd__ListReply *p = rp->list;
	struct semc_list *l = calloc(1, sizeof *l);
	void *entries;
	int r;

	if (l == NULL)
		return NULL;
	r = array_copy(&entries, &l->n, p->n_entries, sizeof *l->entries, p, summary_copy);
	l->entries = entries;
	l->next = dup0(p->next);
	if (r != 0 || l->next == NULL) {
		semc_list_free(l);
		return NULL;
	}
	return l;
}

/* Copy a StatsReply's counter i. */
static int counter_copy(void *dst, const void *msg, size_t i)
{
	const Semd__Counter *pc = ((const Semd__StatsReply *)msg)->counters[i];
	struct semc_counter *sc = dst;

	sc->value = pc->value;
	return (sc->name = dup0(pc->name)) != NULL ? 0 : -1;
}

/* Free a counter's name. */
static void counter_fini(void *elem)
{
	free(((struct semc_counter *)elem)->name);
}

/* Free a stats result. */
void semc_stats_free(struct semc_stats *stats)
{
	if (stats == NULL)
		return;
	array_free(stats->counters, stats->n, sizeof *stats->counters, counter_fini);
	free(stats);
}

/* Convert a StatsReply. */
void *semc_stats_convert(const Semd__Reply *rp)
{
	const Semd__StatsReply *p = rp->stats;
	struct semc_stats *st = calloc(1, sizeof *st);
	void *counters;
	int r;

	if (st == NULL)
		return NULL;
	r = array_copy(&counters, &st->n, p->n_counters, sizeof *st->counters, p, counter_copy);
	st->counters = counters;
	if (r != 0) {
		semc_stats_free(st);
		return NULL;
	}
	return st;
}

/* Copy a ClusterStatus's node i. */
static int node_copy(void *dst, const void *msg, size_t i)
{
	const Semd__ClusterNode *pn = ((const Semd__ClusterStatus *)msg)->nodes[i];
	struct semc_cluster_node *n = dst;

	n->id = pn->id;
	n->match_index = pn->match_index;
	n->lag = pn->lag;
	n->address = dup0(pn->address);
	n->role = dup0(pn->role);
	return n->address && n->role ? 0 : -1;
}

/* Free a node's strings. */
static void node_fini(void *elem)
{
	struct semc_cluster_node *n = elem;

	free(n->address);
	free(n->role);
}

/* Free a cluster status. */
void semc_cluster_free(struct semc_cluster *cl)
{
	if (cl == NULL)
		return;
	array_free(cl->nodes, cl->n_nodes, sizeof *cl->nodes, node_fini);
	free(cl->state);
	free(cl->leader);
	free(cl);
}

/* Convert a ClusterStatus. */
void *semc_cluster_convert(const Semd__Reply *rp)
{
	const Semd__ClusterStatus *st = rp->cluster;
	struct semc_cluster *cl = calloc(1, sizeof *cl);
	void *nodes;
	int r;

	if (cl == NULL)
		return NULL;
	cl->node_id = st->node_id;
	cl->term = st->term;
	cl->commit_index = st->commit_index;
	cl->applied_index = st->applied_index;
	cl->last_index = st->last_index;
	cl->leader_id = st->leader_id;
	cl->state = dup0(st->state);
	cl->leader = dup0(st->leader);
	r = array_copy(&nodes, &cl->n_nodes, st->n_nodes, sizeof *cl->nodes, st, node_copy);
	cl->nodes = nodes;
	if (r != 0 || cl->state == NULL || cl->leader == NULL) {
		semc_cluster_free(cl);
		return NULL;
	}
	return cl;
}

/* Copy a MultiGrant's grant i. */
static int named_grant_copy(void *dst, const void *msg, size_t i)
{
	const Semd__NamedGrant *pg = ((const Semd__MultiGrant *)msg)->grants[i];
	struct semc_named_grant *g = dst;

	g->permit_id = pg->permit_id;
	g->token = pg->token;
	g->n = pg->n;
	return (g->name = dup0(pg->name)) != NULL ? 0 : -1;
}

/* Free a named grant's name. */
static void named_grant_fini(void *elem)
{
	free(((struct semc_named_grant *)elem)->name);
}

/* Free a multi-name grant. */
void semc_multi_grant_free(struct semc_multi_grant *g)
{
	if (g == NULL)
		return;
	array_free(g->grants, g->n, sizeof *g->grants, named_grant_fini);
	free(g);
}

/* Convert a MultiGrant. */
void *semc_multi_convert(const Semd__Reply *rp)
{
	const Semd__MultiGrant *p = rp->multi_grant;
	struct semc_multi_grant *g = calloc(1, sizeof *g);
	void *grants;
	int r;

	if (g == NULL)
		return NULL;
	g->waited_us = p->waited_us;
	r = array_copy(&grants, &g->n, p->n_grants, sizeof *g->grants, p, named_grant_copy);
	g->grants = grants;
	if (r != 0) {
		semc_multi_grant_free(g);
		return NULL;
	}
	return g;
}

/* Copy a HoldsReply's hold i. */
static int hold_entry_copy(void *dst, const void *msg, size_t i)
{
	const Semd__Holder *ph = ((const Semd__HoldsReply *)msg)->holds[i];
	struct semc_hold_entry *e = dst;

	if ((e->name = dup0(ph->name)) == NULL)
		return -1;
	return holder_fill(&e->holder, ph);
}

/* Free a hold entry's strings. */
static void hold_entry_fini(void *elem)
{
	struct semc_hold_entry *e = elem;

	free(e->name);
	holder_fini(&e->holder);
}

/* Free a holds result. */
void semc_holds_free(struct semc_holds *h)
{
	if (h == NULL)
		return;
	array_free(h->entries, h->n, sizeof *h->entries, hold_entry_fini);
	free(h);
}

/* Convert a HoldsReply. */
void *semc_holds_convert(const Semd__Reply *rp)
{
	const Semd__HoldsReply *p = rp->holds;
	struct semc_holds *h = calloc(1, sizeof *h);
	void *entries;
	int r;

	if (h == NULL)
		return NULL;
	h->total = p->total;
	h->next_permit = p->next_permit;
	r = array_copy(&entries, &h->n, p->n_holds, sizeof *h->entries, p, hold_entry_copy);
	h->entries = entries;
	if (r != 0) {
		semc_holds_free(h);
		return NULL;
	}
	return h;
}

/* Copy a WhereReply's place i. */
static int place_copy(void *dst, const void *msg, size_t i)
{
	const Semd__Place *pp = ((const Semd__WhereReply *)msg)->places[i];
	struct semc_place *pl = dst;

	pl->position = pp->position;
	pl->waiters = pp->waiters;
	pl->held = pp->held;
	pl->limit = pp->limit;
	pl->available = pp->available;
	pl->n = pp->n;
	pl->tokens_nano = pp->tokens_nano;
	pl->next_token_ms = pp->next_token_ms;
	return (pl->name = dup0(pp->name)) != NULL ? 0 : -1;
}

/* Free a place's name. */
static void place_fini(void *elem)
{
	free(((struct semc_place *)elem)->name);
}

/* Free a where result. */
void semc_where_free(struct semc_where *w)
{
	if (w == NULL)
		return;
	array_free(w->places, w->n, sizeof *w->places, place_fini);
	free(w);
}

/* Convert a WhereReply. */
void *semc_where_convert(const Semd__Reply *rp)
{
	const Semd__WhereReply *p = rp->where;
	struct semc_where *w = calloc(1, sizeof *w);
	void *places;
	int r;

	if (w == NULL)
		return NULL;
	w->since_ms = p->since_ms;
	r = array_copy(&places, &w->n, p->n_places, sizeof *w->places, p, place_copy);
	w->places = places;
	if (r != 0) {
		semc_where_free(w);
		return NULL;
	}
	return w;
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
			semc_grant_copy(&g, rp->grant);
			res.grant = &g;
			break;
		case SEMD__REPLY__BODY_INFO:
			res.info = info = semc_info_convert(rp);
			break;
		case SEMD__REPLY__BODY_LIST:
			res.list = list = semc_list_convert(rp);
			break;
		case SEMD__REPLY__BODY_STATS:
			res.stats = stats = semc_stats_convert(rp);
			break;
		case SEMD__REPLY__BODY_VALIDATE:
			res.valid = rp->validate->valid;
			break;
		case SEMD__REPLY__BODY_RELEASED:
			res.released = rp->released->n;
			break;
		case SEMD__REPLY__BODY_MULTI_GRANT:
			res.multi = multi = semc_multi_convert(rp);
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
