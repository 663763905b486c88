/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * python/src/ops.c - semclient._semclient: the Handle's blocking
 * operations
 * (pysc.h).
 */
#include "pysc.h"

/* --- Handle: blocking operations --------------------------------------------
 * Each: parse, enter, call with the GIL released, raise on error, leave. */


PyObject *h_down(HandleObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	static const conv_fn convs[] = { conv_str, conv_u32, conv_i64, conv_u32, conv_u32 };
	struct semc_down_opts o = { 0 };
	const char *name;
	void *const outs[] = { &name, &o.n, &o.timeout_ms, &o.lease_ms, &o.create_limit };
	struct semc_grant g;
	struct hctx *ctx;
	int r;

	if ((ctx = handle_enter_fast(self, "down", args, nargs, 5, convs, outs)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_down_ex(ctx->c, name, &o, &g));
	if (!call_end(ctx, r, "acquire", name))
		return NULL;
	return grant_to_py(&g);
}

PyObject *h_up(HandleObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	static const conv_fn convs[] = { conv_str, conv_u32, conv_u64 };
	const char *name;
	uint32_t n, released = 0;
	uint64_t permit_id;
	void *const outs[] = { &name, &n, &permit_id };
	struct hctx *ctx;
	int r;

	if ((ctx = handle_enter_fast(self, "up", args, nargs, 3, convs, outs)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_up(ctx->c, name, n, permit_id, &released));
	if (!call_end(ctx, r, "release", name))
		return NULL;
	return PyLong_FromUnsignedLong(released);
}

/* A semaphore's mode (an int). */
static int conv_mode(PyObject *o, void *out)
{
	int m;

	if (!conv_int(o, &m))
		return 0;
	if (m < SEMC_MODE_OWNED || m > SEMC_MODE_RATE) {
		PyErr_SetString(PyExc_ValueError, "unknown mode");
		return 0;
	}
	*(enum semc_mode *)out = (enum semc_mode)m;
	return 1;
}

/* o as a tuple of lo to hi rows, each a tuple of one item per column,
 * converted by convs[k] into the row at rows + i * size + offs[k] ("what"
 * names a row in errors); *n gets their number. The strings are borrowed
 * from the items, which the tuple keeps (the call's arguments keep it). */
static int conv_rows(PyObject *o, Py_ssize_t lo, Py_ssize_t hi, const char *what,
		     const conv_fn *convs, const size_t *offs, Py_ssize_t cols, void *rows,
		     size_t size, size_t *n)
{
	Py_ssize_t i, k, len;

	if (!PyTuple_Check(o)) {
		PyErr_Format(PyExc_TypeError, "a tuple of %ss is required, not %.100s", what,
			     Py_TYPE(o)->tp_name);
		return 0;
	}
	len = PyTuple_GET_SIZE(o);
	if (len < lo || len > hi) {
		PyErr_Format(PyExc_ValueError, "%zd to %zd %ss, not %zd", lo, hi, what, len);
		return 0;
	}
	for (i = 0; i < len; i++) {
		PyObject *t = PyTuple_GET_ITEM(o, i);

		if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != cols) {
			PyErr_Format(PyExc_TypeError, "each %s must be a tuple of %zd items", what,
				     cols);
			return 0;
		}
		for (k = 0; k < cols; k++)
			if (!convs[k](PyTuple_GET_ITEM(t, k), (char *)rows + (size_t)i * size + offs[k]))
				return 0;
	}
	*n = (size_t)len;
	return 1;
}

/* A name's fair-share weights: a tuple of (group, weight) pairs, at most 64. */
static int conv_weights(PyObject *o, void *out)
{
	static const conv_fn convs[] = { conv_str, conv_u32 };
	static const size_t offs[] = { offsetof(struct semc_weight, group),
				       offsetof(struct semc_weight, weight) };
	struct weights *w = out;

	return conv_rows(o, 0, 64, "weight", convs, offs, 2, w->v, sizeof *w->v, &w->n);
}

PyObject *h_create(HandleObject *self, PyObject *args)
{
	struct semc_create_opts o = { 0 };
	struct semc_rate rt = { 0 };
	struct semc_queue q = { 0 };
	struct weights w = { 0 };
	const char *name;
	uint32_t share = SEMC_SHARE_NONE;
	int if_not_exists = 0, initial_set = 0, has_rate = 0;
	struct hctx *ctx;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&O&O&pO&pO&O&O&p|O&O&O&:create", conv_str,
				     &name, conv_u32, &o.limit, conv_mode, &o.mode, &if_not_exists,
				     conv_u32, &o.initial, &initial_set, conv_u32, &rt.rate,
				     conv_u32, &rt.period_ms, conv_u32, &rt.burst, &has_rate,
				     conv_u32, &q.max_waiters, conv_u32, &share,
				     conv_weights, &w)) == NULL)
		return NULL;
	if (share > SEMC_SHARE_KEY) {
		handle_leave(ctx);
		PyErr_SetString(PyExc_ValueError, "unknown share");
		return NULL;
	}
	q.share = (enum semc_share_by)share;
	o.if_not_exists = if_not_exists;
	o.initial_set = initial_set;
	q.weights = w.v;
	q.n_weights = w.n;
	if (q.max_waiters != 0 || q.share != SEMC_SHARE_NONE || w.n != 0)
		BLOCKING(ctx, r = semc_create_queue(ctx->c, name, &o, has_rate ? &rt : NULL, &q));
	else if (has_rate)
		BLOCKING(ctx, r = semc_create_rate(ctx->c, name, &o, &rt));
	else
		BLOCKING(ctx, r = semc_create_ex(ctx->c, name, &o));
	return call_none(ctx, r, "create", name);
}

/* Only max_waiters: fair shares are set at creation. */
PyObject *h_set_queue(HandleObject *self, PyObject *args)
{
	struct semc_queue q = { 0 };
	const char *name;
	struct hctx *ctx = handle_enter_args(self, args, "O&O&:set_queue", conv_str, &name,
					     conv_u32, &q.max_waiters);
	int r;

	if (ctx == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_set_queue(ctx->c, name, &q));
	return call_none(ctx, r, "set_queue", name);
}

/* down() with a priority, a group and a replace key (semc_down_policy). */
PyObject *h_down_policy(HandleObject *self, PyObject *args)
{
	struct semc_down_opts o = { 0 };
	struct semc_down_policy p = { 0 };
	const char *name;
	struct semc_grant g;
	struct hctx *ctx;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&O&O&O&O&O&O&O&:down_policy", conv_str, &name,
				     conv_u32, &o.n, conv_i64, &o.timeout_ms, conv_u32,
				     &o.lease_ms, conv_u32, &o.create_limit, conv_int,
				     &p.priority, conv_ostr, &p.group, conv_ostr,
				     &p.replace)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_down_policy(ctx->c, name, &o, &p, &g));
	if (!call_end(ctx, r, "acquire", name))
		return NULL;
	return grant_to_py(&g);
}

/* An online backup written to fd: (bytes, wall_ms, sha256). */
PyObject *h_backup(HandleObject *self, PyObject *args)
{
	struct semc_backup_info bi = { 0 };
	struct hctx *ctx;
	int fd, r;

	if ((ctx = handle_enter_args(self, args, "O&:backup", conv_int, &fd)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_backup(ctx->c, fd, &bi));
	if (!call_end(ctx, r, "backup", NULL))
		return NULL;
	return Py_BuildValue("(KKy#)", (unsigned long long)bi.bytes,
			     (unsigned long long)bi.wall_ms, (const char *)bi.sha256,
			     (Py_ssize_t)sizeof bi.sha256);
}

PyObject *h_delete(HandleObject *self, PyObject *args)
{
	const char *name;
	int force = 0, r;
	struct hctx *ctx;

	if ((ctx = handle_enter_args(self, args, "O&p:delete", conv_str, &name, &force)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_delete(ctx->c, name, force));
	return call_none(ctx, r, "delete", name);
}

PyObject *h_set_limit(HandleObject *self, PyObject *args)
{
	const char *name;
	uint32_t limit;
	struct hctx *ctx;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&O&:set_limit", conv_str, &name,
				     conv_u32, &limit)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_set_limit(ctx->c, name, limit));
	return call_none(ctx, r, "set_limit", name);
}

PyObject *h_set_rate(HandleObject *self, PyObject *args)
{
	struct semc_rate rt = { 0 };
	const char *name;
	struct hctx *ctx;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&O&O&O&:set_rate", conv_str, &name,
				     conv_u32, &rt.rate, conv_u32, &rt.period_ms,
				     conv_u32, &rt.burst)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_set_rate(ctx->c, name, &rt));
	return call_none(ctx, r, "set_rate", name);
}

PyObject *h_cancel(HandleObject *self, PyObject *args)
{
	uint64_t id;
	struct hctx *ctx;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&:cancel", conv_u64, &id)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_cancel(ctx->c, id));
	return call_none(ctx, r, "cancel", NULL);
}

PyObject *h_info(HandleObject *self, PyObject *args)
{
	struct semc_info *in = NULL;
	const char *name;
	struct hctx *ctx;
	PyObject *v = NULL;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&:info", conv_str, &name)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_info(ctx->c, name, &in));
	if (call_end(ctx, r, "info", name))
		v = info_to_py(in);
	semc_info_free(in);
	return v;
}

PyObject *h_list(HandleObject *self, PyObject *args)
{
	const char *prefix, *after;
	struct semc_list *l = NULL;
	uint32_t max;
	struct hctx *ctx;
	PyObject *v = NULL;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&O&O&:list", conv_str, &prefix,
				     conv_str, &after, conv_u32, &max)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_list(ctx->c, prefix, after, max, &l));
	if (call_end(ctx, r, "list", prefix))
		v = Py_BuildValue("(NN)", list_of(l->entries, l->n, sizeof *l->entries, summary_one),
				  str_from(l->next));
	semc_list_free(l);
	return v;
}

PyObject *h_validate(HandleObject *self, PyObject *args)
{
	const char *name;
	uint64_t token;
	bool valid = false;
	struct hctx *ctx;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&O&:validate", conv_str, &name,
				     conv_u64, &token)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_validate(ctx->c, name, token, &valid));
	if (!call_end(ctx, r, "validate", name))
		return NULL;
	return PyBool_FromLong(valid);
}

static PyObject *stats_to_py(const struct semc_stats *st)
{
	PyObject *d = PyDict_New();
	size_t i;

	for (i = 0; d != NULL && i < st->n; i++) {
		PyObject *k = str_from(st->counters[i].name);
		PyObject *v = PyLong_FromUnsignedLongLong(st->counters[i].value);

		if (k == NULL || v == NULL || PyDict_SetItem(d, k, v) != 0)
			Py_CLEAR(d);
		Py_XDECREF(k);
		Py_XDECREF(v);
	}
	return d;
}

PyObject *h_stats(HandleObject *self, PyObject *unused)
{
	struct semc_stats *st = NULL;
	struct hctx *ctx;
	PyObject *d = NULL;
	int r;

	(void)unused;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_stats(ctx->c, &st));
	if (call_end(ctx, r, "stats", NULL))
		d = stats_to_py(st);
	semc_stats_free(st);
	return d;
}

PyObject *h_ping(HandleObject *self, PyObject *unused)
{
	uint64_t rtt = 0;
	struct hctx *ctx;
	int r;

	(void)unused;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_ping(ctx->c, &rtt));
	if (!call_end(ctx, r, "ping", NULL))
		return NULL;
	return PyLong_FromUnsignedLongLong(rtt);
}

PyObject *h_release(HandleObject *self, PyObject *args)
{
	const char *name;
	uint64_t permit_id;
	uint32_t released = 0;
	struct hctx *ctx;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&O&:release", conv_str, &name,
				     conv_u64, &permit_id)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_release(ctx->c, name, permit_id, &released));
	if (!call_end(ctx, r, "force_release", name))
		return NULL;
	return PyLong_FromUnsignedLong(released);
}

PyObject *h_detach(HandleObject *self, PyObject *unused)
{
	struct hctx *ctx;
	int r;

	(void)unused;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_detach(ctx->c));
	return call_none(ctx, r, "detach", NULL);
}

/* A multi-name acquire's wants, a tuple of (name, n, create_limit), 1 to
 * 16, as semc_wants. */
int conv_wants(PyObject *o, void *out)
{
	static const size_t cols[] = { offsetof(struct semc_want, name),
				       offsetof(struct semc_want, n),
				       offsetof(struct semc_want, create_limit) };
	static const conv_fn convs[] = { conv_str, conv_u32, conv_u32 };

	return conv_rows(o, 1, 16, "want", convs, cols, 3, ((struct wants *)out)->v,
			 sizeof(struct semc_want), &((struct wants *)out)->n);
}

PyObject *h_down_multi(HandleObject *self, PyObject *args)
{
	struct semc_down_policy p = { 0 };
	struct wants w;
	struct semc_multi_grant *m = NULL;
	PyObject *v = NULL;
	int64_t timeout_ms;
	uint32_t lease_ms;
	struct hctx *ctx;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&O&O&|O&:down_multi", conv_wants, &w,
				     conv_i64, &timeout_ms, conv_u32, &lease_ms,
				     conv_int, &p.priority)) == NULL)
		return NULL;
	if (p.priority != 0)
		BLOCKING(ctx, r = semc_down_multi_policy(ctx->c, w.v, w.n, timeout_ms, lease_ms, &p,
							 &m));
	else
		BLOCKING(ctx, r = semc_down_multi(ctx->c, w.v, w.n, timeout_ms, lease_ms, &m));
	if (call_end(ctx, r, "acquire", w.v[0].name))
		v = multi_to_py(m);
	semc_multi_grant_free(m);
	return v;
}

PyObject *h_renew(HandleObject *self, PyObject *args)
{
	const char *name;
	uint64_t permit_id, expires = 0;
	uint32_t lease_ms, renewed = 0;
	struct hctx *ctx;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&O&O&:renew", conv_str, &name,
				     conv_u64, &permit_id, conv_u32, &lease_ms)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_renew(ctx->c, name, permit_id, lease_ms, &renewed, &expires));
	if (!call_end(ctx, r, "renew", name))
		return NULL;
	return Py_BuildValue("(kK)", (unsigned long)renewed, (unsigned long long)expires);
}

PyObject *h_holds(HandleObject *self, PyObject *args)
{
	const char *principal;
	uint64_t after;
	uint32_t max;
	struct semc_holds *hs = NULL;
	struct hctx *ctx;
	PyObject *v = NULL;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&O&O&:holds", conv_ostr, &principal,
				     conv_u64, &after, conv_u32, &max)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_holds(ctx->c, principal, after, max, &hs));
	if (call_end(ctx, r, "holds", NULL))
		v = Py_BuildValue("(NnK)", list_of(hs->entries, hs->n, sizeof *hs->entries, hold_one),
				  (Py_ssize_t)hs->total, (unsigned long long)hs->next_permit);
	semc_holds_free(hs);
	return v;
}

PyObject *h_where(HandleObject *self, PyObject *args)
{
	struct semc_where *w = NULL;
	uint64_t id;
	struct hctx *ctx;
	PyObject *v = NULL;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&:where", conv_u64, &id)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_where(ctx->c, id, &w));
	if (call_end(ctx, r, "where", NULL))
		v = Py_BuildValue("(NK)", list_of(w->places, w->n, sizeof *w->places, place_one),
				  (unsigned long long)w->since_ms);
	semc_where_free(w);
	return v;
}

PyObject *h_cluster_status(HandleObject *self, PyObject *unused)
{
	struct semc_cluster *cl = NULL;
	struct hctx *ctx;
	PyObject *v = NULL;
	int r;

	(void)unused;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_cluster_status(ctx->c, &cl));
	if (call_end(ctx, r, "cluster_status", NULL))
		v = cluster_to_py(cl);
	semc_cluster_free(cl);
	return v;
}

/* Watch: the id; fn(event tuple) for each event until unwatch. A
 * from_revision > 0 replays the kept events from it first. */
PyObject *h_watch(HandleObject *self, PyObject *args)
{
	const char *name;
	uint64_t from = 0;
	int prefix = 0;
	PyObject *fn;
	struct pywatch *w;
	struct hctx *ctx;
	int64_t id;

	if ((ctx = handle_enter_args(self, args, "O&pO&|O&:watch", conv_str, &name, &prefix,
				     conv_callable, &fn, conv_u64, &from)) == NULL)
		return NULL;
	if ((w = PyMem_RawCalloc(1, sizeof *w)) == NULL) {
		handle_leave(ctx);
		return PyErr_NoMemory();
	}
	w->ctx = ctx;
	w->fn = Py_NewRef(fn);
	w->next = ctx->watches;
	ctx->watches = w;
	if (from != 0)
		BLOCKING(ctx, id = semc_watch_from(ctx->c, name, prefix, from, watch_cb, w));
	else
		BLOCKING(ctx, id = semc_watch(ctx->c, name, prefix, watch_cb, w));
	if (id < 0) {
		error_last((int)id, "watch", name);
		Py_CLEAR(w->fn);	/* the struct stays on the list until the free */
	} else {
		w->id = (uint64_t)id;
	}
	handle_leave(ctx);
	if (id < 0)
		return NULL;
	return PyLong_FromLongLong(id);
}

PyObject *h_unwatch(HandleObject *self, PyObject *args)
{
	struct pywatch *w;
	uint64_t id;
	struct hctx *ctx;
	int r;

	if ((ctx = handle_enter_args(self, args, "O&:unwatch", conv_u64, &id)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_unwatch(ctx->c, id));
	for (w = ctx->watches; w != NULL; w = w->next)
		if (w->id == id)
			Py_CLEAR(w->fn);
	return call_none(ctx, r, "unwatch", NULL);
}
