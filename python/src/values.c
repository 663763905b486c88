/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * python/src/values.c - semclient._semclient: errors, argument converters, and
 * the library's results as Python values
 * (pysc.h).
 */
#include "pysc.h"

PyObject *error_factory;

/* --- errors ------------------------------------------------------------ */

/* A str from bytes the daemon sent: never fails on invalid UTF-8. */
PyObject *str_from(const char *s)
{
	if (s == NULL)
		s = "";
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* The exception of code with message (semclient._errors.from_code). */
PyObject *error_make(int code, const char *message, const char *op, const char *name)
{
	PyObject *m, *o, *n, *e;

	if (error_factory == NULL) {
		PyErr_Format(PyExc_RuntimeError, "semclient: %s: %s", op, semc_strerror(code));
		return NULL;
	}
	m = str_from(message != NULL && *message != '\0' ? message : semc_strerror(code));
	o = PyUnicode_FromString(op);
	n = name != NULL ? str_from(name) : Py_NewRef(Py_None);
	if (m == NULL || o == NULL || n == NULL) {
		Py_XDECREF(m);
		Py_XDECREF(o);
		Py_XDECREF(n);
		return NULL;
	}
	e = PyObject_CallFunction(error_factory, "iOOO", code, m, o, n);
	Py_DECREF(m);
	Py_DECREF(o);
	Py_DECREF(n);
	return e;
}

/* Raise the exception of code; returns NULL. */
PyObject *error_raise(int code, const char *message, const char *op, const char *name)
{
	PyObject *e = error_make(code, message, op, name);

	if (e != NULL) {
		PyErr_SetObject((PyObject *)Py_TYPE(e), e);
		Py_DECREF(e);
	}
	return NULL;
}

/* Raise the exception of a failed call, with the calling thread's
 * semc_last_message() (read in the thread that made the call). */
PyObject *error_last(int code, const char *op, const char *name)
{
	return error_raise(code, semc_last_message(), op, name);
}

/* --- argument converters (PyArg "O&") ------------------------------------ */

/* An int in [lo, hi] (bools are ints), as unsigned (uout) or signed (sout). */
int int_range(PyObject *o, long long lo, unsigned long long hi, unsigned long long *uout,
		     long long *sout)
{
	unsigned long long u;
	int overflow = 0;
	PyObject *i;
	long long v;

	if ((i = PyNumber_Index(o)) == NULL)
		return 0;
	v = PyLong_AsLongLongAndOverflow(i, &overflow);
	if (overflow == 0 && v == -1 && PyErr_Occurred()) {
		Py_DECREF(i);
		return 0;
	}
	if (overflow > 0) {
		u = PyLong_AsUnsignedLongLong(i);
		Py_DECREF(i);
		if (PyErr_Occurred()) {
			PyErr_Clear();
			goto range;
		}
		if (u > hi || uout == NULL)
			goto range;
		*uout = u;
		return 1;
	}
	Py_DECREF(i);
	if (overflow < 0 || v < lo || (v > 0 && (unsigned long long)v > hi))
		goto range;
	if (uout != NULL)
		*uout = (unsigned long long)v;
	if (sout != NULL)
		*sout = v;
	return 1;
range:
	PyErr_Format(PyExc_OverflowError, "integer %R out of range [%lld, %llu]", o, lo, hi);
	return 0;
}

int conv_u32(PyObject *o, void *out)
{
	unsigned long long v;

	if (!int_range(o, 0, UINT32_MAX, &v, NULL))
		return 0;
	*(uint32_t *)out = (uint32_t)v;
	return 1;
}

int conv_u64(PyObject *o, void *out)
{
	unsigned long long v;

	if (!int_range(o, 0, UINT64_MAX, &v, NULL))
		return 0;
	*(uint64_t *)out = (uint64_t)v;
	return 1;
}

int conv_i64(PyObject *o, void *out)
{
	long long v;

	if (!int_range(o, INT64_MIN, INT64_MAX, NULL, &v))
		return 0;
	*(int64_t *)out = (int64_t)v;
	return 1;
}

int conv_int(PyObject *o, void *out)
{
	long long v;

	if (!int_range(o, INT32_MIN, INT32_MAX, NULL, &v))
		return 0;
	*(int *)out = (int)v;
	return 1;
}

/* A str as UTF-8, borrowed from the object (alive for the call). */
int conv_str(PyObject *o, void *out)
{
	Py_ssize_t len;
	const char *s;

	if (!PyUnicode_Check(o)) {
		PyErr_Format(PyExc_TypeError, "a str is required, not %.100s", Py_TYPE(o)->tp_name);
		return 0;
	}
	if ((s = PyUnicode_AsUTF8AndSize(o, &len)) == NULL)
		return 0;
	if ((Py_ssize_t)strlen(s) != len) {
		PyErr_SetString(PyExc_ValueError, "embedded NUL character in a str");
		return 0;
	}
	*(const char **)out = s;
	return 1;
}

/* A str or None (NULL). */
int conv_ostr(PyObject *o, void *out)
{
	if (o == Py_None) {
		*(const char **)out = NULL;
		return 1;
	}
	return conv_str(o, out);
}

/* A callable. */
int conv_callable(PyObject *o, void *out)
{
	if (!PyCallable_Check(o)) {
		PyErr_Format(PyExc_TypeError, "a callable is required, not %.100s",
			     Py_TYPE(o)->tp_name);
		return 0;
	}
	*(PyObject **)out = o;
	return 1;
}

/* A callable or None (NULL). */
int conv_ocallable(PyObject *o, void *out)
{
	if (o == Py_None) {
		*(PyObject **)out = NULL;
		return 1;
	}
	return conv_callable(o, out);
}

/* Parse fast-call arguments with converters: exactly n of them. */
int args_fast(const char *fname, PyObject *const *args, Py_ssize_t nargs, int n,
		     const conv_fn *convs, void *const *outs)
{
	int i;

	if (nargs != n) {
		PyErr_Format(PyExc_TypeError, "%s() takes %d arguments (%zd given)", fname, n, nargs);
		return 0;
	}
	for (i = 0; i < n; i++)
		if (!convs[i](args[i], outs[i]))
			return 0;
	return 1;
}


/* --- results as Python values -------------------------------------------- */

PyObject *grant_to_py(const struct semc_grant *g)
{
	return Py_BuildValue("(KKkK)", (unsigned long long)g->permit_id,
			     (unsigned long long)g->token, (unsigned long)g->n,
			     (unsigned long long)g->waited_us);
}

PyObject *mode_name(enum semc_mode m)
{
	return PyUnicode_FromString(m == SEMC_MODE_SIGNAL ? "signal" :
				    m == SEMC_MODE_RATE ? "rate" : "owned");
}

/* Set d[key] = v, stealing v; false on error. */
bool dset(PyObject *d, const char *key, PyObject *v)
{
	int r;

	if (v == NULL)
		return false;
	r = PyDict_SetItemString(d, key, v);
	Py_DECREF(v);
	return r == 0;
}

PyObject *holder_to_py(const struct semc_holder *h)
{
	PyObject *d = PyDict_New();

	if (d == NULL)
		return NULL;
	if (!dset(d, "permit_id", PyLong_FromUnsignedLongLong(h->permit_id)) ||
	    !dset(d, "token", PyLong_FromUnsignedLongLong(h->token)) ||
	    !dset(d, "n", PyLong_FromUnsignedLong(h->n)) ||
	    !dset(d, "client_name", str_from(h->client_name)) ||
	    !dset(d, "host", str_from(h->host)) ||
	    !dset(d, "pid", PyLong_FromUnsignedLong(h->pid)) ||
	    !dset(d, "principal", str_from(h->principal)) ||
	    !dset(d, "since_ms", PyLong_FromUnsignedLongLong(h->since_ms)) ||
	    !dset(d, "detached", PyBool_FromLong(h->detached)) ||
	    !dset(d, "expires_ms", PyLong_FromUnsignedLongLong(h->expires_ms))) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

PyObject *waiter_to_py(const struct semc_waiter *w)
{
	PyObject *d = PyDict_New();

	if (d == NULL)
		return NULL;
	if (!dset(d, "request_id", PyLong_FromUnsignedLongLong(w->request_id)) ||
	    !dset(d, "n", PyLong_FromUnsignedLong(w->n)) ||
	    !dset(d, "client_name", str_from(w->client_name)) ||
	    !dset(d, "host", str_from(w->host)) ||
	    !dset(d, "pid", PyLong_FromUnsignedLong(w->pid)) ||
	    !dset(d, "principal", str_from(w->principal)) ||
	    !dset(d, "since_ms", PyLong_FromUnsignedLongLong(w->since_ms)) ||
	    !dset(d, "deadline_ms", PyLong_FromUnsignedLongLong(w->deadline_ms)) ||
	    !dset(d, "seq", PyLong_FromUnsignedLongLong(w->seq)) ||
	    !dset(d, "detached", PyBool_FromLong(w->detached))) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

/* A list of n elements made by one function each. */
PyObject *list_of(const void *arr, size_t n, size_t size, PyObject *(*one)(const void *))
{
	PyObject *l = PyList_New((Py_ssize_t)n);
	size_t i;

	if (l == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		PyObject *v = one((const char *)arr + i * size);

		if (v == NULL) {
			Py_DECREF(l);
			return NULL;
		}
		PyList_SET_ITEM(l, (Py_ssize_t)i, v);
	}
	return l;
}

PyObject *holder_one(const void *p) { return holder_to_py(p); }
PyObject *waiter_one(const void *p) { return waiter_to_py(p); }

PyObject *info_to_py(const struct semc_info *in)
{
	PyObject *d = PyDict_New();

	if (d == NULL)
		return NULL;
	if (!dset(d, "name", str_from(in->name)) ||
	    !dset(d, "limit", PyLong_FromUnsignedLong(in->limit)) ||
	    !dset(d, "available", PyLong_FromLongLong(in->available)) ||
	    !dset(d, "mode", mode_name(in->mode)) ||
	    !dset(d, "auto_created", PyBool_FromLong(in->auto_created)) ||
	    !dset(d, "last_token", PyLong_FromUnsignedLongLong(in->last_token)) ||
	    !dset(d, "holders", list_of(in->holders, in->n_holders, sizeof *in->holders,
					holder_one)) ||
	    !dset(d, "waiters", list_of(in->waiters, in->n_waiters, sizeof *in->waiters,
					waiter_one)) ||
	    !dset(d, "holders_total", PyLong_FromSize_t(in->holders_total)) ||
	    !dset(d, "waiters_total", PyLong_FromSize_t(in->waiters_total)) ||
	    !dset(d, "rate", PyLong_FromUnsignedLong(in->rate)) ||
	    !dset(d, "rate_period_ms", PyLong_FromUnsignedLong(in->rate_period_ms)) ||
	    !dset(d, "burst", PyLong_FromUnsignedLong(in->burst)) ||
	    !dset(d, "tokens_nano", PyLong_FromUnsignedLongLong(in->tokens_nano)) ||
	    !dset(d, "next_token_ms", PyLong_FromUnsignedLongLong(in->next_token_ms))) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

PyObject *summary_one(const void *p)
{
	const struct semc_summary *s = p;

	return Py_BuildValue("(NkLNkk)", str_from(s->name), (unsigned long)s->limit,
			     (long long)s->available, mode_name(s->mode),
			     (unsigned long)s->holders, (unsigned long)s->waiters);
}

PyObject *named_grant_one(const void *p)
{
	const struct semc_named_grant *g = p;

	return Py_BuildValue("(NKKk)", str_from(g->name), (unsigned long long)g->permit_id,
			     (unsigned long long)g->token, (unsigned long)g->n);
}

PyObject *multi_to_py(const struct semc_multi_grant *m)
{
	return Py_BuildValue("(NK)", list_of(m->grants, m->n, sizeof *m->grants, named_grant_one),
			     (unsigned long long)m->waited_us);
}

PyObject *hold_one(const void *p)
{
	const struct semc_hold_entry *e = p;

	return Py_BuildValue("(NN)", str_from(e->name), holder_to_py(&e->holder));
}

PyObject *place_one(const void *p)
{
	const struct semc_place *pl = p;

	return Py_BuildValue("{s:N,s:k,s:k,s:K,s:k,s:L,s:k,s:K,s:K}",
			     "name", str_from(pl->name), "position", (unsigned long)pl->position,
			     "waiters", (unsigned long)pl->waiters,
			     "held", (unsigned long long)pl->held, "limit", (unsigned long)pl->limit,
			     "available", (long long)pl->available, "n", (unsigned long)pl->n,
			     "tokens_nano", (unsigned long long)pl->tokens_nano,
			     "next_token_ms", (unsigned long long)pl->next_token_ms);
}

PyObject *node_one(const void *p)
{
	const struct semc_cluster_node *n = p;

	return Py_BuildValue("{s:K,s:N,s:N,s:K,s:K}", "id", (unsigned long long)n->id,
			     "address", str_from(n->address), "role", str_from(n->role),
			     "match_index", (unsigned long long)n->match_index,
			     "lag", (unsigned long long)n->lag);
}

PyObject *cluster_to_py(const struct semc_cluster *cl)
{
	return Py_BuildValue("{s:K,s:N,s:K,s:K,s:K,s:K,s:K,s:N,s:N}",
			     "node_id", (unsigned long long)cl->node_id, "state", str_from(cl->state),
			     "term", (unsigned long long)cl->term,
			     "commit_index", (unsigned long long)cl->commit_index,
			     "applied_index", (unsigned long long)cl->applied_index,
			     "last_index", (unsigned long long)cl->last_index,
			     "leader_id", (unsigned long long)cl->leader_id,
			     "leader", str_from(cl->leader),
			     "nodes", list_of(cl->nodes, cl->n_nodes, sizeof *cl->nodes, node_one));
}

/* The value an asynchronous result carries, by the kind of call. */
PyObject *result_value(const struct semc_result *r, int kind)
{
	if (r->error != 0)
		Py_RETURN_NONE;
	switch (kind) {
	case CALL_DOWN:
		if (r->grant != NULL)
			return grant_to_py(r->grant);
		break;
	case CALL_UP:
		return PyLong_FromUnsignedLong(r->released);
	case CALL_MULTI:
		if (r->multi != NULL)
			return multi_to_py(r->multi);
		break;
	case CALL_INFO:
		if (r->info != NULL)
			return info_to_py(r->info);
		break;
	case CALL_VALID:
		return PyBool_FromLong(r->valid);
	default:
		break;
	}
	Py_RETURN_NONE;
}
