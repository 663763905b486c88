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
static PyObject *error_make(int code, const char *message, const char *op, const char *name)
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
static int int_range(PyObject *o, long long lo, unsigned long long hi,
		     unsigned long long *uout, long long *sout)
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

static PyObject *mode_name(enum semc_mode m)
{
	return PyUnicode_FromString(m == SEMC_MODE_SIGNAL ? "signal" :
				    m == SEMC_MODE_RATE ? "rate" : "owned");
}

/* Set d[key] = v, stealing v; false on error. */
static bool dset(PyObject *d, const char *key, PyObject *v)
{
	int r;

	if (v == NULL)
		return false;
	r = PyDict_SetItemString(d, key, v);
	Py_DECREF(v);
	return r == 0;
}

/* A member of a library struct, as a dict item: its key, C type, offset. */
enum ftype { F_I32, F_U32, F_U64, F_I64, F_SIZE, F_BOOL, F_STR, F_MODE, F_SHARE };
struct field {
	const char *key;
	enum ftype type;
	size_t off;
};

static PyObject *field_value(const void *base, const struct field *f)
{
	const char *p = (const char *)base + f->off;

	switch (f->type) {
	case F_I32:
		return PyLong_FromLong(*(const int32_t *)p);
	case F_U32:
		return PyLong_FromUnsignedLong(*(const uint32_t *)p);
	case F_U64:
		return PyLong_FromUnsignedLongLong(*(const uint64_t *)p);
	case F_I64:
		return PyLong_FromLongLong(*(const int64_t *)p);
	case F_SIZE:
		return PyLong_FromSize_t(*(const size_t *)p);
	case F_BOOL:
		return PyBool_FromLong(*(const bool *)p);
	case F_STR:
		return str_from(*(char *const *)p);
	case F_MODE:
		return mode_name(*(const enum semc_mode *)p);
	case F_SHARE:
		switch (*(const enum semc_share_by *)p) {
		case SEMC_SHARE_PRINCIPAL:
			return PyUnicode_FromString("principal");
		case SEMC_SHARE_KEY:
			return PyUnicode_FromString("key");
		default:
			return PyUnicode_FromString("none");
		}
	}
	PyErr_SetString(PyExc_SystemError, "semclient: unknown field type");
	return NULL;
}

/* Add to d the fields of the struct at base, one item a field (fs ends
 * with a NULL key): false on error. */
static bool fields_into(PyObject *d, const void *base, const struct field *fs)
{
	for (; fs->key != NULL; fs++)
		if (!dset(d, fs->key, field_value(base, fs)))
			return false;
	return true;
}

/* A dict of the struct at base, one item a field. */
static PyObject *dict_of(const void *base, const struct field *fs)
{
	PyObject *d = PyDict_New();

	if (d != NULL && !fields_into(d, base, fs))
		Py_CLEAR(d);
	return d;
}

static const struct field holder_fields[] = {
	{ "permit_id", F_U64, offsetof(struct semc_holder, permit_id) },
	{ "token", F_U64, offsetof(struct semc_holder, token) },
	{ "n", F_U32, offsetof(struct semc_holder, n) },
	{ "client_name", F_STR, offsetof(struct semc_holder, client_name) },
	{ "host", F_STR, offsetof(struct semc_holder, host) },
	{ "pid", F_U32, offsetof(struct semc_holder, pid) },
	{ "principal", F_STR, offsetof(struct semc_holder, principal) },
	{ "since_ms", F_U64, offsetof(struct semc_holder, since_ms) },
	{ "detached", F_BOOL, offsetof(struct semc_holder, detached) },
	{ "expires_ms", F_U64, offsetof(struct semc_holder, expires_ms) },
	{ NULL, 0, 0 }
};

static const struct field waiter_fields[] = {
	{ "request_id", F_U64, offsetof(struct semc_waiter, request_id) },
	{ "n", F_U32, offsetof(struct semc_waiter, n) },
	{ "client_name", F_STR, offsetof(struct semc_waiter, client_name) },
	{ "host", F_STR, offsetof(struct semc_waiter, host) },
	{ "pid", F_U32, offsetof(struct semc_waiter, pid) },
	{ "principal", F_STR, offsetof(struct semc_waiter, principal) },
	{ "since_ms", F_U64, offsetof(struct semc_waiter, since_ms) },
	{ "deadline_ms", F_U64, offsetof(struct semc_waiter, deadline_ms) },
	{ "seq", F_U64, offsetof(struct semc_waiter, seq) },
	{ "detached", F_BOOL, offsetof(struct semc_waiter, detached) },
	{ NULL, 0, 0 }
};

/* A waiter's class (info's waiter_classes, in the waiters' order). */
static const struct field waiter_class_fields[] = {
	{ "priority", F_I32, offsetof(struct semc_waiter_class, priority) },
	{ "replace", F_STR, offsetof(struct semc_waiter_class, replace) },
	{ NULL, 0, 0 }
};

/* Without its lists of holders and waiters. */
static const struct field info_fields[] = {
	{ "name", F_STR, offsetof(struct semc_info, name) },
	{ "limit", F_U32, offsetof(struct semc_info, limit) },
	{ "available", F_I64, offsetof(struct semc_info, available) },
	{ "mode", F_MODE, offsetof(struct semc_info, mode) },
	{ "auto_created", F_BOOL, offsetof(struct semc_info, auto_created) },
	{ "last_token", F_U64, offsetof(struct semc_info, last_token) },
	{ "holders_total", F_SIZE, offsetof(struct semc_info, holders_total) },
	{ "waiters_total", F_SIZE, offsetof(struct semc_info, waiters_total) },
	{ "rate", F_U32, offsetof(struct semc_info, rate) },
	{ "rate_period_ms", F_U32, offsetof(struct semc_info, rate_period_ms) },
	{ "burst", F_U32, offsetof(struct semc_info, burst) },
	{ "tokens_nano", F_U64, offsetof(struct semc_info, tokens_nano) },
	{ "next_token_ms", F_U64, offsetof(struct semc_info, next_token_ms) },
	{ "max_waiters", F_U32, offsetof(struct semc_info, max_waiters) },
	{ "share", F_SHARE, offsetof(struct semc_info, share) },
	{ NULL, 0, 0 }
};

static const struct field place_fields[] = {
	{ "name", F_STR, offsetof(struct semc_place, name) },
	{ "position", F_U32, offsetof(struct semc_place, position) },
	{ "waiters", F_U32, offsetof(struct semc_place, waiters) },
	{ "held", F_U64, offsetof(struct semc_place, held) },
	{ "limit", F_U32, offsetof(struct semc_place, limit) },
	{ "available", F_I64, offsetof(struct semc_place, available) },
	{ "n", F_U32, offsetof(struct semc_place, n) },
	{ "tokens_nano", F_U64, offsetof(struct semc_place, tokens_nano) },
	{ "next_token_ms", F_U64, offsetof(struct semc_place, next_token_ms) },
	{ NULL, 0, 0 }
};

static const struct field node_fields[] = {
	{ "id", F_U64, offsetof(struct semc_cluster_node, id) },
	{ "address", F_STR, offsetof(struct semc_cluster_node, address) },
	{ "role", F_STR, offsetof(struct semc_cluster_node, role) },
	{ "match_index", F_U64, offsetof(struct semc_cluster_node, match_index) },
	{ "lag", F_U64, offsetof(struct semc_cluster_node, lag) },
	{ NULL, 0, 0 }
};

/* Without its list of nodes. */
static const struct field cluster_fields[] = {
	{ "node_id", F_U64, offsetof(struct semc_cluster, node_id) },
	{ "state", F_STR, offsetof(struct semc_cluster, state) },
	{ "term", F_U64, offsetof(struct semc_cluster, term) },
	{ "commit_index", F_U64, offsetof(struct semc_cluster, commit_index) },
	{ "applied_index", F_U64, offsetof(struct semc_cluster, applied_index) },
	{ "last_index", F_U64, offsetof(struct semc_cluster, last_index) },
	{ "leader_id", F_U64, offsetof(struct semc_cluster, leader_id) },
	{ "leader", F_STR, offsetof(struct semc_cluster, leader) },
	{ NULL, 0, 0 }
};

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

static PyObject *holder_one(const void *p) { return dict_of(p, holder_fields); }
static PyObject *waiter_one(const void *p) { return dict_of(p, waiter_fields); }
static PyObject *node_one(const void *p) { return dict_of(p, node_fields); }

static PyObject *group_one(const void *p)
{
	const struct semc_group_info *g = p;

	return Py_BuildValue("{sNsksksksk}", "group", str_from(g->group),
			     "weight", (unsigned long)g->weight, "share", (unsigned long)g->share,
			     "held", (unsigned long)g->held, "waiting", (unsigned long)g->waiting);
}
PyObject *place_one(const void *p) { return dict_of(p, place_fields); }

/* Info's waiters, each with its class: priority and replace key (a
 * daemon before 0.4.0 sends no classes: each is then 0 with no key). */
static PyObject *waiters_of(const struct semc_info *in)
{
	static const struct semc_waiter_class none = { 0, NULL };
	PyObject *l = list_of(in->waiters, in->n_waiters, sizeof *in->waiters, waiter_one);
	bool classes = in->n_waiter_classes == in->n_waiters;
	size_t i;

	for (i = 0; l != NULL && i < in->n_waiters; i++)
		if (!fields_into(PyList_GET_ITEM(l, (Py_ssize_t)i),
				 classes ? &in->waiter_classes[i] : &none, waiter_class_fields))
			Py_CLEAR(l);
	return l;
}

PyObject *info_to_py(const struct semc_info *in)
{
	PyObject *d = dict_of(in, info_fields);

	if (d != NULL &&
	    (!dset(d, "holders", list_of(in->holders, in->n_holders, sizeof *in->holders,
					 holder_one)) ||
	     !dset(d, "waiters", waiters_of(in)) ||
	     !dset(d, "groups", list_of(in->groups, in->n_groups, sizeof *in->groups,
					group_one))))
		Py_CLEAR(d);
	return d;
}

PyObject *summary_one(const void *p)
{
	const struct semc_summary *s = p;

	return Py_BuildValue("(NkLNkk)", str_from(s->name), (unsigned long)s->limit,
			     (long long)s->available, mode_name(s->mode),
			     (unsigned long)s->holders, (unsigned long)s->waiters);
}

static PyObject *named_grant_one(const void *p)
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

	return Py_BuildValue("(NN)", str_from(e->name), holder_one(&e->holder));
}

PyObject *cluster_to_py(const struct semc_cluster *cl)
{
	PyObject *d = dict_of(cl, cluster_fields);

	if (d != NULL &&
	    !dset(d, "nodes", list_of(cl->nodes, cl->n_nodes, sizeof *cl->nodes, node_one)))
		Py_CLEAR(d);
	return d;
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
