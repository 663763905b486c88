/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/down.c - the downs: four calls, blocking or asynchronous, of
 * one name or of several at once, every option in one struct
 * semc_down_options (semc_down2() and its forms). The older downs, kept
 * for compatibility (LIBSEMCLIENT_1 to 1.4), check what they checked
 * before and hand their arguments on as options.
 */
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

/* The options of a down that gives none. */
static const struct semc_down_options options_default = SEMC_DOWN_OPTIONS_INIT;

/* Check a down's options (multi: of a multi-name down): 0, or SEMC_E_ARG. */
static int options_check(const struct semc_down_options *o, bool multi)
{
	const char *why = NULL;

	if (o->version == 0 || o->version > SEMC_DOWN_OPTIONS_VERSION)
		why = "down options of an unknown version (SEMC_DOWN_OPTIONS_INIT sets it)";
	else if (multi && (o->replace != NULL || o->group != NULL))
		why = "a multi-name down has no replace key or group";
	else if (multi && (o->n != 0 || o->create_limit != 0))
		why = "a multi-name down takes n and create_limit from each want";
	else if (o->priority < SEMC_PRIO_MIN || o->priority > SEMC_PRIO_MAX)
		why = "priority out of range";
	if (why == NULL)
		return 0;
	semc_fail(SEMC_E_ARG, "%s", why);
	return SEMC_E_ARG;
}

/* Check a one-name down and fill its request: 0, or the error. */
static int down_fill(struct semc *c, Semd__Down *op, const char *name,
		     const struct semc_down_options *o)
{
	int r;

	if ((r = semc_name_check(name)) != 0 || (r = options_check(o, false)) != 0 ||
	    (r = semc_lease_check(c, o->lease_ms)) != 0)
		return r;
	op->name = (char *)name;
	op->n = o->n;
	op->timeout_ms = o->timeout_ms;
	op->lease_ms = o->lease_ms;
	op->limit = o->create_limit;
	op->priority = o->priority;
	op->replace = (char *)o->replace;
	op->group = (char *)o->group;
	return 0;
}

/* A one-name down with options o, waited for (every blocking one-name down
 * is this, the older ones too). */
static int down_wait(struct semc *c, const char *name, const struct semc_down_options *o,
		     struct semc_grant *out)
{
	Semd__Down op = SEMD__DOWN__INIT;
	int r;

	if ((r = down_fill(c, &op, name, o)) != 0)
		return r;
	return semc_op_call(c, &op.base, o->timeout_ms < 0 ? -1 : o->timeout_ms, &reply_grant, out);
}

/* A one-name down with options o, not waited for: the request id. */
static int64_t down_queue(struct semc *c, const char *name, const struct semc_down_options *o,
			  semc_done_fn fn, void *arg)
{
	Semd__Down op = SEMD__DOWN__INIT;
	int r;

	if ((r = down_fill(c, &op, name, o)) != 0)
		return r;
	return semc_op_async(c, &op.base, fn, arg);
}

/* Take permits of name. */
int semc_down2(struct semc *c, const char *name, const struct semc_down_options *opts,
	       struct semc_grant *out)
{
	return down_wait(c, name, opts != NULL ? opts : &options_default, out);
}

/* Take permits of name without waiting: the request id. */
int64_t semc_down2_async(struct semc *c, const char *name, const struct semc_down_options *opts,
			 semc_done_fn fn, void *arg)
{
	return down_queue(c, name, opts != NULL ? opts : &options_default, fn, arg);
}

/* Check a multi-name down and fill its request (wv, wp: 16 entries each):
 * 0, or the error. */
static int multi_fill(struct semc *c, Semd__DownMulti *op, Semd__Want *wv, Semd__Want **wp,
		      const struct semc_want *wants, size_t n, const struct semc_down_options *o)
{
	size_t i;
	int r;

	if ((r = options_check(o, true)) != 0)
		return r;
	if (wants == NULL || n == 0 || n > 16)
		return semc_fail(SEMC_E_ARG, "a multi-name down takes 1 to 16 names");
	if ((r = semc_lease_check(c, o->lease_ms)) != 0)
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
	op->timeout_ms = o->timeout_ms;
	op->lease_ms = o->lease_ms;
	op->priority = o->priority;
	return 0;
}

/* A multi-name down with options o, waited for. */
static int multi_wait(struct semc *c, const struct semc_want *wants, size_t n,
		      const struct semc_down_options *o, struct semc_multi_grant **out)
{
	Semd__DownMulti op = SEMD__DOWN_MULTI__INIT;
	Semd__Want wv[16], *wp[16];
	int r;

	semc_op_clear(&reply_multi, out);
	if ((r = multi_fill(c, &op, wv, wp, wants, n, o)) != 0)
		return r;
	return semc_op_call(c, &op.base, o->timeout_ms < 0 ? -1 : o->timeout_ms, &reply_multi, out);
}

/* A multi-name down with options o, not waited for: the request id. */
static int64_t multi_queue(struct semc *c, const struct semc_want *wants, size_t n,
			   const struct semc_down_options *o, semc_done_fn fn, void *arg)
{
	Semd__DownMulti op = SEMD__DOWN_MULTI__INIT;
	Semd__Want wv[16], *wp[16];
	int r;

	if ((r = multi_fill(c, &op, wv, wp, wants, n, o)) != 0)
		return r;
	return semc_op_async(c, &op.base, fn, arg);
}

/* Take every want at once, or none. */
int semc_down2_multi(struct semc *c, const struct semc_want *wants, size_t n,
		     const struct semc_down_options *opts, struct semc_multi_grant **out)
{
	return multi_wait(c, wants, n, opts != NULL ? opts : &options_default, out);
}

/* Take every want at once, or none, without waiting: the request id. */
int64_t semc_down2_multi_async(struct semc *c, const struct semc_want *wants, size_t n,
			       const struct semc_down_options *opts, semc_done_fn fn, void *arg)
{
	return multi_queue(c, wants, n, opts != NULL ? opts : &options_default, fn, arg);
}

/* --- the older downs, kept for compatibility ----------------------------- */

/* The options of an older down: its struct semc_down_opts (or n, timeout
 * and lease) and its policy (NULL: none). */
static struct semc_down_options options_of(uint32_t n, int64_t timeout_ms, uint32_t lease_ms,
					   uint32_t create_limit,
					   const struct semc_down_policy *p)
{
	struct semc_down_options o = SEMC_DOWN_OPTIONS_INIT;

	o.n = n;
	o.timeout_ms = timeout_ms;
	o.lease_ms = lease_ms;
	o.create_limit = create_limit;
	if (p != NULL) {
		o.priority = p->priority;
		o.replace = p->replace;
		o.group = p->group;
	}
	return o;
}

/* A policy asked for and not given: SEMC_E_ARG (the older downs' check). */
static int no_policy(void)
{
	semc_fail(SEMC_E_ARG, "%s", "no policy");
	return SEMC_E_ARG;
}

/* The options of a struct semc_down_opts down (with_policy: and of its
 * policy p), checked as the older downs checked them: 0, or the error. */
static int opts_options(const char *name, const struct semc_down_opts *o, bool with_policy,
			const struct semc_down_policy *p, struct semc_down_options *out)
{
	int r;

	if ((r = semc_args_check(name, o, "no down options")) != 0)
		return r;
	if (with_policy && p == NULL)
		return no_policy();
	*out = options_of(o->n, o->timeout_ms, o->lease_ms, o->create_limit, p);
	return 0;
}

/* Take n permits, waiting up to timeout_ms. */
int semc_down(struct semc *c, const char *name, uint32_t n, int64_t timeout_ms,
	      uint32_t lease_ms, struct semc_grant *out)
{
	struct semc_down_options o = options_of(n, timeout_ms, lease_ms, 0, NULL);

	return down_wait(c, name, &o, out);
}

/* Take n permits only if that is possible now. */
int semc_trydown(struct semc *c, const char *name, uint32_t n, struct semc_grant *out)
{
	return semc_down(c, name, n, 0, 0, out);
}

/* Take permits with every option of struct semc_down_opts. */
int semc_down_ex(struct semc *c, const char *name, const struct semc_down_opts *o,
		 struct semc_grant *out)
{
	struct semc_down_options opts;
	int r;

	if ((r = opts_options(name, o, false, NULL, &opts)) != 0)
		return r;
	return down_wait(c, name, &opts, out);
}

/* A down with a policy. */
int semc_down_policy(struct semc *c, const char *name, const struct semc_down_opts *o,
		     const struct semc_down_policy *p, struct semc_grant *out)
{
	struct semc_down_options opts;
	int r;

	if ((r = opts_options(name, o, true, p, &opts)) != 0)
		return r;
	return down_wait(c, name, &opts, out);
}

/* Asynchronous down. */
int64_t semc_down_async(struct semc *c, const char *name, uint32_t n, int64_t timeout_ms,
			uint32_t lease_ms, semc_done_fn fn, void *arg)
{
	struct semc_down_options o = options_of(n, timeout_ms, lease_ms, 0, NULL);

	return down_queue(c, name, &o, fn, arg);
}

/* Asynchronous down with every option of struct semc_down_opts. */
int64_t semc_down_ex_async(struct semc *c, const char *name, const struct semc_down_opts *o,
			   semc_done_fn fn, void *arg)
{
	struct semc_down_options opts;
	int r;

	if ((r = opts_options(name, o, false, NULL, &opts)) != 0)
		return r;
	return down_queue(c, name, &opts, fn, arg);
}

/* Asynchronous down with a policy. */
int64_t semc_down_policy_async(struct semc *c, const char *name,
			       const struct semc_down_opts *o,
			       const struct semc_down_policy *p, semc_done_fn fn, void *arg)
{
	struct semc_down_options opts;
	int r;

	if ((r = opts_options(name, o, true, p, &opts)) != 0)
		return r;
	return down_queue(c, name, &opts, fn, arg);
}

/* Take several names at once, or none. */
int semc_down_multi(struct semc *c, const struct semc_want *wants, size_t n,
		    int64_t timeout_ms, uint32_t lease_ms, struct semc_multi_grant **out)
{
	struct semc_down_options o = options_of(0, timeout_ms, lease_ms, 0, NULL);

	return multi_wait(c, wants, n, &o, out);
}

/* Asynchronous multi-name down. */
int64_t semc_down_multi_async(struct semc *c, const struct semc_want *wants, size_t n,
			      int64_t timeout_ms, uint32_t lease_ms, semc_done_fn fn, void *arg)
{
	struct semc_down_options o = options_of(0, timeout_ms, lease_ms, 0, NULL);

	return multi_queue(c, wants, n, &o, fn, arg);
}

/* A multi-name down with a policy (no replace key, no group). */
int semc_down_multi_policy(struct semc *c, const struct semc_want *wants, size_t n,
			   int64_t timeout_ms, uint32_t lease_ms,
			   const struct semc_down_policy *p, struct semc_multi_grant **out)
{
	struct semc_down_options o = options_of(0, timeout_ms, lease_ms, 0, p);

	if (p == NULL) {
		semc_op_clear(&reply_multi, out);
		return no_policy();
	}
	return multi_wait(c, wants, n, &o, out);
}

/* Asynchronous multi-name down with a policy. */
int64_t semc_down_multi_policy_async(struct semc *c, const struct semc_want *wants, size_t n,
				     int64_t timeout_ms, uint32_t lease_ms,
				     const struct semc_down_policy *p, semc_done_fn fn,
				     void *arg)
{
	struct semc_down_options o = options_of(0, timeout_ms, lease_ms, 0, p);

	if (p == NULL)
		return no_policy();
	return multi_queue(c, wants, n, &o, fn, arg);
}
