/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/base/result.c - libsemclient's results: the structs of semclient.h made
 * from the daemon's replies (semc_convert() takes a reply with the body it
 * converts and returns NULL when out of memory), their free functions, and
 * the outcome handed to an asynchronous call's callback.
 *
 * A result is made by a table, not by code of its own (client/base/conv.h):
 * each of its fields is a struct conv_field that says what kind of field it
 * is (a number, a string, an array of elements, ...) and where it is in the
 * result and in the reply's message. An array's elements are made by a
 * table of their own, and freeing walks the same tables. A new result is
 * its struct semc_conv (and its elements'), one line of RESULT_FREE, and a
 * line in delivered[] when asynchronous calls return it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "client/base/base.h"
#include "client/base/conv.h"

/* strdup that maps NULL to "". */
static char *dup0(const char *s)
{
	return strdup(s ? s : "");
}

/* A semaphore's mode as the API names it. */
static enum semc_mode mode_of(Semd__Mode m)
{
	return m == SEMD__MODE__SIGNAL ? SEMC_MODE_SIGNAL :
	       m == SEMD__MODE__RATE ? SEMC_MODE_RATE : SEMC_MODE_OWNED;
}

/* The field at offset off of the struct at p. */
static void *at(const void *p, size_t off)
{
	return (char *)p + off;
}

/*
 * Copy a message's repeated field into a new array of elements (and one
 * zeroed element more, as semclient.h promises), each made by f->sub. The
 * count is set with the array, so that conv_fini() frees what each element
 * holds, whole or not (an element not begun is zeroes). 0 or -1.
 */
static int array_fill(const struct conv_field *f, void *dst, const void *src)
{
	const char *msgs;	/* the message's array of pointers to elements */
	const void *msg;
	size_t n, i;
	char *a;

	memcpy(&msgs, at(src, f->src), sizeof msgs);
	memcpy(&n, at(src, f->src_n), sizeof n);
	if ((a = calloc(n + 1, f->size)) == NULL)
		return -1;
	memcpy(at(dst, f->dst), &a, sizeof a);
	memcpy(at(dst, f->dst_n), &n, sizeof n);
	for (i = 0; i < n; i++) {
		memcpy(&msg, msgs + i * sizeof msg, sizeof msg);
		if (semc_conv_fill(f->sub, a + i * f->size, msg) != 0)
			return -1;
	}
	return 0;
}

/* Fill the struct at dst (zeroes) from the message at src as cv says; 0, or
 * -1 when out of memory (dst then holds what was made, for conv_fini()). */
int semc_conv_fill(const struct semc_conv *cv, void *dst, const void *src)
{
	const struct conv_field *f;
	size_t min;

	for (f = cv->fields; f->kind != CONV_END; f++) {
		void *d = at(dst, f->dst);
		const void *s = at(src, f->src);

		switch (f->kind) {
		case CONV_COPY:
			memcpy(d, s, f->size);
			break;
		case CONV_BOOL:
			*(bool *)d = *(const protobuf_c_boolean *)s != 0;
			break;
		case CONV_MODE:
			*(enum semc_mode *)d = mode_of(*(const Semd__Mode *)s);
			break;
		case CONV_STR:
			if ((*(char **)d = dup0(*(char *const *)s)) == NULL)
				return -1;
			break;
		case CONV_TOTAL:
			min = f->src_n != 0 ? *(const size_t *)at(src, f->src_n) : 0;
			*(size_t *)d = *(const uint32_t *)s > min ? *(const uint32_t *)s : min;
			break;
		case CONV_ARRAY:
			if (array_fill(f, dst, src) != 0)
				return -1;
			break;
		case CONV_SUB:
			if (semc_conv_fill(f->sub, d, src) != 0)
				return -1;
			break;
		case CONV_END:	/* not reached: the loop stops there */
			break;
		}
	}
	return 0;
}

/* Free what the struct at p holds (its strings and arrays), not p. */
static void conv_fini(const struct semc_conv *cv, void *p)
{
	const struct conv_field *f;
	size_t n, i;
	char *a;

	for (f = cv->fields; f->kind != CONV_END; f++) {
		switch (f->kind) {
		case CONV_STR:
			free(*(char **)at(p, f->dst));
			break;
		case CONV_ARRAY:
			memcpy(&a, at(p, f->dst), sizeof a);
			memcpy(&n, at(p, f->dst_n), sizeof n);
			for (i = 0; a != NULL && i < n; i++)
				conv_fini(f->sub, a + i * f->size);
			free(a);
			break;
		case CONV_SUB:
			conv_fini(f->sub, at(p, f->dst));
			break;
		default:
			break;
		}
	}
}

/* Free a result made by semc_convert() (NULL: nothing). */
static void conv_free(const struct semc_conv *cv, void *res)
{
	if (res == NULL)
		return;
	conv_fini(cv, res);
	free(res);
}

/* Make the result cv describes from reply rp (whose body is cv->body). */
void *semc_convert(const struct semc_conv *cv, const Semd__Reply *rp)
{
	const void *msg;
	void *res;

	memcpy(&msg, at(rp, cv->body_off), sizeof msg);
	if ((res = calloc(1, cv->size)) == NULL)
		return NULL;
	if (semc_conv_fill(cv, res, msg) != 0) {
		conv_free(cv, res);
		return NULL;
	}
	return res;
}

/* --- the results ---------------------------------------------------------- */

#define GRANT(kind, ...)	kind(struct semc_grant, Semd__Grant, __VA_ARGS__)
static const struct semc_conv grant_conv = CONV(struct semc_grant,
	GRANT(F_COPY, permit_id), GRANT(F_COPY, token), GRANT(F_COPY, n), GRANT(F_COPY, waited_us));

/* Copy a Grant. */
void semc_grant_copy(struct semc_grant *g, const Semd__Grant *pg)
{
	(void)semc_conv_fill(&grant_conv, g, pg);	/* no strings: cannot fail */
}

/* A holder: of an InfoReply, or in a hold of a HoldsReply. */
#define HOLDER(kind, ...)	kind(struct semc_holder, Semd__Holder, __VA_ARGS__)
static const struct semc_conv holder_conv = CONV(struct semc_holder,
	HOLDER(F_COPY, permit_id), HOLDER(F_COPY, token), HOLDER(F_COPY, n), HOLDER(F_COPY, pid),
	HOLDER(F_COPY, since_ms), HOLDER(F_BOOL, detached), HOLDER(F_COPY, expires_ms),
	HOLDER(F_STR, client_name), HOLDER(F_STR, host), HOLDER(F_STR, principal));

/* An InfoReply, its holders and waiters (a daemon older than holders_total
 * and waiters_total sends 0: the lists are complete). */
#define WAITER(kind, ...)	kind(struct semc_waiter, Semd__Waiter, __VA_ARGS__)
static const struct semc_conv waiter_conv = CONV(struct semc_waiter,
	WAITER(F_COPY, request_id), WAITER(F_COPY, n), WAITER(F_COPY, pid),
	WAITER(F_COPY, since_ms), WAITER(F_COPY, deadline_ms), WAITER(F_COPY, seq),
	WAITER(F_BOOL, detached),
	WAITER(F_STR, client_name), WAITER(F_STR, host), WAITER(F_STR, principal));
#define CLASS(kind, ...)	kind(struct semc_waiter_class, Semd__Waiter, __VA_ARGS__)
static const struct semc_conv class_conv = CONV(struct semc_waiter_class,
	CLASS(F_COPY, priority), CLASS(F_STR, replace));
#define GROUP(kind, ...)	kind(struct semc_group_info, Semd__GroupInfo, __VA_ARGS__)
static const struct semc_conv group_conv = CONV(struct semc_group_info,
	GROUP(F_STR, group), GROUP(F_COPY, weight), GROUP(F_COPY, share), GROUP(F_COPY, held),
	GROUP(F_COPY, waiting));
#define INFO(kind, ...)	kind(struct semc_info, Semd__InfoReply, __VA_ARGS__)
const struct semc_conv semc_info_conv = RESULT(struct semc_info, INFO, info,
	INFO(F_STR, name), INFO(F_COPY, limit), INFO(F_COPY, available), INFO(F_MODE, mode),
	INFO(F_BOOL, auto_created), INFO(F_COPY, last_token),
	INFO(F_TOTAL, holders_total, n_holders), INFO(F_TOTAL, waiters_total, n_waiters),
	INFO(F_COPY, next_permit), INFO(F_COPY, next_waiter),
	INFO(F_COPY, rate), INFO(F_COPY, rate_period_ms), INFO(F_COPY, burst),
	INFO(F_COPY, tokens_nano), INFO(F_COPY, next_token_ms), INFO(F_COPY, max_waiters),
	INFO(F_COPY, share), INFO(F_ARRAY, n_groups, groups, n_groups, groups, &group_conv),
	INFO(F_ARRAY, n_holders, holders, n_holders, holders, &holder_conv),
	INFO(F_ARRAY, n_waiters, waiters, n_waiters, waiters, &waiter_conv),
	INFO(F_ARRAY, n_waiter_classes, waiter_classes, n_waiters, waiters, &class_conv));

/* A ListReply, its summaries. */
#define SUMMARY(kind, ...)	kind(struct semc_summary, Semd__Summary, __VA_ARGS__)
static const struct semc_conv summary_conv = CONV(struct semc_summary,
	SUMMARY(F_STR, name), SUMMARY(F_COPY, limit), SUMMARY(F_COPY, available),
	SUMMARY(F_MODE, mode), SUMMARY(F_COPY, holders), SUMMARY(F_COPY, waiters));
#define LIST(kind, ...)	kind(struct semc_list, Semd__ListReply, __VA_ARGS__)
const struct semc_conv semc_list_conv = RESULT(struct semc_list, LIST, list,
	LIST(F_ARRAY, n, entries, n_entries, entries, &summary_conv), LIST(F_STR, next));

/* A StatsReply, its counters. */
#define COUNTER(kind, ...)	kind(struct semc_counter, Semd__Counter, __VA_ARGS__)
static const struct semc_conv counter_conv = CONV(struct semc_counter,
	COUNTER(F_STR, name), COUNTER(F_COPY, value));
#define STATS(kind, ...)	kind(struct semc_stats, Semd__StatsReply, __VA_ARGS__)
const struct semc_conv semc_stats_conv = RESULT(struct semc_stats, STATS, stats,
	STATS(F_ARRAY, n, counters, n_counters, counters, &counter_conv));

/* A ClusterStatus, its nodes. */
#define NODE(kind, ...)	kind(struct semc_cluster_node, Semd__ClusterNode, __VA_ARGS__)
static const struct semc_conv node_conv = CONV(struct semc_cluster_node,
	NODE(F_COPY, id), NODE(F_COPY, match_index), NODE(F_COPY, lag),
	NODE(F_STR, address), NODE(F_STR, role));
#define CLUSTER(kind, ...)	kind(struct semc_cluster, Semd__ClusterStatus, __VA_ARGS__)
const struct semc_conv semc_cluster_conv = RESULT(struct semc_cluster, CLUSTER, cluster,
	CLUSTER(F_COPY, node_id), CLUSTER(F_COPY, term), CLUSTER(F_COPY, commit_index),
	CLUSTER(F_COPY, applied_index), CLUSTER(F_COPY, last_index), CLUSTER(F_COPY, leader_id),
	CLUSTER(F_STR, state), CLUSTER(F_STR, leader),
	CLUSTER(F_ARRAY, n_nodes, nodes, n_nodes, nodes, &node_conv));

/* A MultiGrant, its named grants. */
#define NAMED(kind, ...)	kind(struct semc_named_grant, Semd__NamedGrant, __VA_ARGS__)
static const struct semc_conv named_grant_conv = CONV(struct semc_named_grant,
	NAMED(F_STR, name), NAMED(F_COPY, permit_id), NAMED(F_COPY, token), NAMED(F_COPY, n));
#define MULTI(kind, ...)	kind(struct semc_multi_grant, Semd__MultiGrant, __VA_ARGS__)
const struct semc_conv semc_multi_conv =
	RESULT(struct semc_multi_grant, MULTI_GRANT, multi_grant,
	MULTI(F_COPY, waited_us), MULTI(F_ARRAY, n, grants, n_grants, grants, &named_grant_conv));

/* A HoldsReply, its holds: a name and a holder, from one Holder. */
#define HOLD(kind, ...)	kind(struct semc_hold_entry, Semd__Holder, __VA_ARGS__)
static const struct semc_conv hold_conv = CONV(struct semc_hold_entry,
	HOLD(F_STR, name), HOLD(F_SUB, holder, &holder_conv));
#define HOLDS(kind, ...)	kind(struct semc_holds, Semd__HoldsReply, __VA_ARGS__)
const struct semc_conv semc_holds_conv = RESULT(struct semc_holds, HOLDS, holds,
	HOLDS(F_SIZE, total), HOLDS(F_COPY, next_permit),
	HOLDS(F_ARRAY, n, entries, n_holds, holds, &hold_conv));

/* A WhereReply, its places. */
#define PLACE(kind, ...)	kind(struct semc_place, Semd__Place, __VA_ARGS__)
static const struct semc_conv place_conv = CONV(struct semc_place,
	PLACE(F_STR, name), PLACE(F_COPY, position), PLACE(F_COPY, waiters), PLACE(F_COPY, held),
	PLACE(F_COPY, limit), PLACE(F_COPY, available), PLACE(F_COPY, n),
	PLACE(F_COPY, tokens_nano), PLACE(F_COPY, next_token_ms));
#define WHERE(kind, ...)	kind(struct semc_where, Semd__WhereReply, __VA_ARGS__)
const struct semc_conv semc_where_conv = RESULT(struct semc_where, WHERE, where,
	WHERE(F_COPY, since_ms), WHERE(F_ARRAY, n, places, n_places, places, &place_conv));

/* semclient.h's free functions: each frees a result and what it holds
 * (NULL: nothing). */
/* NOLINTNEXTLINE(bugprone-macro-parentheses): fn is a name and T a type */
#define RESULT_FREE(fn, T, cv)	void fn(T *res) { conv_free(&(cv), res); }
RESULT_FREE(semc_info_free, struct semc_info, semc_info_conv)
RESULT_FREE(semc_list_free, struct semc_list, semc_list_conv)
RESULT_FREE(semc_stats_free, struct semc_stats, semc_stats_conv)
RESULT_FREE(semc_cluster_free, struct semc_cluster, semc_cluster_conv)
RESULT_FREE(semc_multi_grant_free, struct semc_multi_grant, semc_multi_conv)
RESULT_FREE(semc_holds_free, struct semc_holds, semc_holds_conv)
RESULT_FREE(semc_where_free, struct semc_where, semc_where_conv)

/* The results an asynchronous call's callback gets, and where in struct
 * semc_result. */
static const struct {
	const struct semc_conv *cv;
	size_t off;
} delivered[] = {
	{ &semc_info_conv, offsetof(struct semc_result, info) },
	{ &semc_list_conv, offsetof(struct semc_result, list) },
	{ &semc_stats_conv, offsetof(struct semc_result, stats) },
	{ &semc_multi_conv, offsetof(struct semc_result, multi) },
};

/* Call an asynchronous request's callback fn with its outcome: the reply
 * rp converted, or (rp NULL) the client-side error. */
void semc_result_deliver(struct semc *c, uint64_t id, int error, const Semd__Reply *rp,
			 semc_done_fn fn, void *arg)
{
	struct semc_result res = { .request_id = id, .error = error, .message = "" };
	const struct semc_conv *cv = NULL;
	struct semc_grant g;
	void *made = NULL;
	size_t i;

	if (rp != NULL) {
		res.error = semc_code_error(rp->code);
		if (rp->message != NULL)
			res.message = rp->message;
		if (rp->body_case == SEMD__REPLY__BODY_GRANT) {
			semc_grant_copy(&g, rp->grant);
			res.grant = &g;
		} else if (rp->body_case == SEMD__REPLY__BODY_VALIDATE) {
			res.valid = rp->validate->valid;
		} else if (rp->body_case == SEMD__REPLY__BODY_RELEASED) {
			res.released = rp->released->n;
		}
		for (i = 0; i < sizeof delivered / sizeof delivered[0]; i++) {
			if (delivered[i].cv->body != rp->body_case)
				continue;
			cv = delivered[i].cv;
			made = semc_convert(cv, rp);
			memcpy(at(&res, delivered[i].off), &made, sizeof made);
			if (made == NULL && res.error == 0)
				res.error = SEMC_E_NOMEM;
		}
	} else {
		res.message = semc_strerror(error);
	}
	if (fn != NULL)
		fn(c, &res, arg);
	if (cv != NULL)
		conv_free(cv, made);
}
