/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/down.c - the downs: one name or several at once, blocking or
 * asynchronous, with their options and policies.
 */
#include <string.h>

#include "client/api/api.h"

/* Copy a Grant out (an unsuccessful call leaves the caller's as it was). */
static void grant_out(const Semd__Reply *rp, void *out)
{
	if (rp != NULL)
		semc_grant_copy(out, rp->grant);
}

/* What a down's and a multi-name down's success bring back. */
static const struct semc_op_reply
	reply_grant = { SEMD__REPLY__BODY_GRANT, NULL, grant_out },
	reply_multi = { SEMD__REPLY__BODY_MULTI_GRANT, &semc_multi_conv, NULL };

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

	if ((r = semc_args_check(name, o, "no down options")) != 0 ||
	    (r = semc_lease_check(c, o->lease_ms)) != 0)
		return r;
	down_fill(&op, name, o);
	return semc_op_call(c, &op.base, o->timeout_ms < 0 ? -1 : o->timeout_ms, &reply_grant, out);
}

/* Take n permits only if that is possible now. */
int semc_trydown(struct semc *c, const char *name, uint32_t n, struct semc_grant *out)
{
	return semc_down(c, name, n, 0, 0, out);
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

	if ((r = semc_args_check(name, o, "no down options")) != 0 ||
	    (r = semc_lease_check(c, o->lease_ms)) != 0)
		return r;
	down_fill(&op, name, o);
	return semc_op_async(c, &op.base, fn, arg);
}

/* Fill a DownMulti request (wv, wp: n entries each); 0 or the error. */
static int multi_fill(struct semc *c, Semd__DownMulti *op, Semd__Want *wv, Semd__Want **wp,
		      const struct semc_want *wants, size_t n, int64_t timeout_ms, uint32_t lease_ms)
{
	size_t i;
	int r;

	if (wants == NULL || n == 0 || n > 16)
		return semc_fail(SEMC_E_ARG, "a multi-name down takes 1 to 16 names");
	if ((r = semc_lease_check(c, lease_ms)) != 0)
		return r;
	for (i = 0; i < n; i++) {
		if ((r = semc_name_check(wants[i].name)) != 0)
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

	semc_op_clear(&reply_multi, out);
	if ((r = multi_fill(c, &op, wv, wp, wants, n, timeout_ms, lease_ms)) != 0)
		return r;
	return semc_op_call(c, &op.base, timeout_ms < 0 ? -1 : timeout_ms, &reply_multi, out);
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
	return semc_op_async(c, &op.base, fn, arg);
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

	if ((r = semc_args_check(name, o, "no down options")) != 0 ||
	    (r = policy_check(p, false)) != 0 || (r = semc_lease_check(c, o->lease_ms)) != 0)
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
	return semc_op_call(c, &op.base, o->timeout_ms < 0 ? -1 : o->timeout_ms, &reply_grant, out);
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
	return semc_op_async(c, &op.base, fn, arg);
}

/* A multi-name down with a policy. */
int semc_down_multi_policy(struct semc *c, const struct semc_want *wants, size_t n,
			   int64_t timeout_ms, uint32_t lease_ms,
			   const struct semc_down_policy *p, struct semc_multi_grant **out)
{
	Semd__DownMulti op = SEMD__DOWN_MULTI__INIT;
	Semd__Want wv[16], *wp[16];
	int r;

	semc_op_clear(&reply_multi, out);
	if ((r = policy_check(p, true)) != 0 ||
	    (r = multi_fill(c, &op, wv, wp, wants, n, timeout_ms, lease_ms)) != 0)
		return r;
	op.priority = p->priority;
	return semc_op_call(c, &op.base, timeout_ms < 0 ? -1 : timeout_ms, &reply_multi, out);
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
	return semc_op_async(c, &op.base, fn, arg);
}
