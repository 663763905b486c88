/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * python/src/_semclient.c - semclient._semclient, the CPython extension
 * under the Python package: one Handle type over one struct semc of
 * libsemclient, and nothing of the protocol (sessions, leases, resume,
 * redirects and failover are the library's). The pure-Python layer
 * (semclient/) builds the idioms on it.
 *
 * Every call into the library runs with the GIL released: a thread may
 * block in it (a down), and the library runs callbacks in whichever thread
 * reads, which take the GIL themselves (PyGILState_Ensure). Holding the GIL
 * while the library waits for a callback to finish would deadlock.
 *
 * Lifetime. The library's callbacks get a struct hctx, not the Python
 * object: it outlives the Handle until the struct semc is freed. `calls`
 * counts the threads inside the library through this handle (or running
 * one of its callbacks); it and `closed` change only under the GIL. A
 * close with threads inside calls semc_shutdown(), which makes them return;
 * the last one out frees. A free asked for inside a callback (the
 * library's keepalive thread, which semc_free() joins) is done by a
 * detached thread of its own.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <semclient.h>

#if PY_VERSION_HEX >= 0x030D0000
#define py_finalizing() Py_IsFinalizing()
#else
#define py_finalizing() _Py_IsFinalizing()
#endif

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o) { Py_INCREF(o); return o; }
static inline PyObject *Py_XNewRef(PyObject *o) { Py_XINCREF(o); return o; }
static int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *v)
{
	Py_INCREF(v);
	if (PyModule_AddObject(m, name, v) < 0) {
		Py_DECREF(v);
		return -1;
	}
	return 0;
}
#endif

/* Not a libsemclient code: a call on a closed Handle. */
#define PYSEMC_E_CLOSED	(-1000)

struct hctx;

/* An asynchronous request's Python callback, until the library calls it. */
struct pycall {
	struct pycall *prev, *next;
	struct hctx *ctx;
	PyObject *fn;		/* fn(error, message, value) */
	int kind;		/* what the value is made of: enum call_kind */
};

enum call_kind { CALL_DOWN, CALL_UP, CALL_MULTI, CALL_INFO, CALL_VALID, CALL_NONE };

/* A watch's Python callback; kept until the handle is freed, since the
 * library may still be delivering an event when semc_unwatch() returns. */
struct pywatch {
	struct pywatch *next;
	struct hctx *ctx;
	PyObject *fn;		/* NULL once unwatched */
	uint64_t id;
};

struct hctx {
	struct semc *c;
	PyObject *on_event;	/* on_event(type, error, message, name, permit_id, token, n) */
	int calls;		/* threads inside the library through the handle (GIL) */
	bool closed;		/* no new call (GIL) */
	bool shut;		/* semc_shutdown() done */
	bool released;		/* ctx_release() done: c is being or was freed */
	int refs;		/* the Handle's and the struct semc's (GIL) */
	struct pycall pending;	/* sentinel of the list of pycalls (GIL) */
	Py_ssize_t npending;
	struct pywatch *watches;
};

typedef struct {
	PyObject_HEAD
	struct hctx *ctx;
	PyObject *weakrefs;
} HandleObject;

static PyTypeObject Handle_Type;
static PyObject *error_factory;	/* semclient._errors.from_code */
static Py_ssize_t live_ctx;	/* contexts not freed yet (GIL), for the leak tests */
static Py_ssize_t live_calls;	/* pycalls not completed (GIL) */
static _Thread_local int cb_depth;	/* inside a callback of the library */

/* --- errors ------------------------------------------------------------ */

/* A str from bytes the daemon sent: never fails on invalid UTF-8. */
static PyObject *str_from(const char *s)
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
static PyObject *error_raise(int code, const char *message, const char *op, const char *name)
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
static PyObject *error_last(int code, const char *op, const char *name)
{
	return error_raise(code, semc_last_message(), op, name);
}

/* --- argument converters (PyArg "O&") ------------------------------------ */

/* An int in [lo, hi] (bools are ints), as unsigned (uout) or signed (sout). */
static int int_range(PyObject *o, long long lo, unsigned long long hi, unsigned long long *uout,
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

static int conv_u32(PyObject *o, void *out)
{
	unsigned long long v;

	if (!int_range(o, 0, UINT32_MAX, &v, NULL))
		return 0;
	*(uint32_t *)out = (uint32_t)v;
	return 1;
}

static int conv_u64(PyObject *o, void *out)
{
	unsigned long long v;

	if (!int_range(o, 0, UINT64_MAX, &v, NULL))
		return 0;
	*(uint64_t *)out = (uint64_t)v;
	return 1;
}

static int conv_i64(PyObject *o, void *out)
{
	long long v;

	if (!int_range(o, INT64_MIN, INT64_MAX, NULL, &v))
		return 0;
	*(int64_t *)out = (int64_t)v;
	return 1;
}

static int conv_int(PyObject *o, void *out)
{
	long long v;

	if (!int_range(o, INT32_MIN, INT32_MAX, NULL, &v))
		return 0;
	*(int *)out = (int)v;
	return 1;
}

/* A str as UTF-8, borrowed from the object (alive for the call). */
static int conv_str(PyObject *o, void *out)
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
static int conv_ostr(PyObject *o, void *out)
{
	if (o == Py_None) {
		*(const char **)out = NULL;
		return 1;
	}
	return conv_str(o, out);
}

/* A callable. */
static int conv_callable(PyObject *o, void *out)
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
static int conv_ocallable(PyObject *o, void *out)
{
	if (o == Py_None) {
		*(PyObject **)out = NULL;
		return 1;
	}
	return conv_callable(o, out);
}

/* Parse fast-call arguments with converters: exactly n of them. */
typedef int (*conv_fn)(PyObject *, void *);
static int args_fast(const char *fname, PyObject *const *args, Py_ssize_t nargs, int n,
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

/* --- the context: lifetime ----------------------------------------------- */

/* Drop a reference to the context (GIL held, unless gil is false: the
 * interpreter is going away and Python references are left alone). */
static void ctx_put(struct hctx *ctx, bool gil)
{
	struct pywatch *w, *wn;
	struct pycall *pc, *pn;

	if (--ctx->refs > 0)
		return;
	for (w = ctx->watches; w != NULL; w = wn) {
		wn = w->next;
		if (gil)
			Py_XDECREF(w->fn);
		PyMem_RawFree(w);
	}
	/* semc_shutdown() completed every request: nothing should be left */
	for (pc = ctx->pending.next; pc != &ctx->pending; pc = pn) {
		pn = pc->next;
		if (gil) {
			Py_DECREF(pc->fn);
			live_calls--;
		}
		PyMem_RawFree(pc);
	}
	if (gil)
		live_ctx--;
	PyMem_RawFree(ctx);
}

/* The reaper: frees a handle whose free was asked for inside a callback. */
static void *reaper_main(void *arg)
{
	struct hctx *ctx = arg;
	PyGILState_STATE st;

	semc_shutdown(ctx->c);
	semc_free(ctx->c);
	if (py_finalizing())
		return NULL;	/* the process ends: leave the memory */
	st = PyGILState_Ensure();
	ctx->c = NULL;
	ctx_put(ctx, true);
	PyGILState_Release(st);
	return NULL;
}

/* Free the struct semc (GIL held; no thread inside): at once, or from a
 * thread of its own when called inside one of its callbacks. */
static void ctx_release(struct hctx *ctx)
{
	struct pywatch *w;
	struct semc *c = ctx->c;
	pthread_attr_t at;
	pthread_t th;
	int r;

	if (ctx->released)
		return;
	ctx->released = true;
	ctx->closed = true;
	Py_CLEAR(ctx->on_event);
	for (w = ctx->watches; w != NULL; w = w->next)
		Py_CLEAR(w->fn);
	if (cb_depth > 0) {
		/* semc_free() is not for a callback of its handle */
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		r = pthread_create(&th, &at, reaper_main, ctx);
		pthread_attr_destroy(&at);
		if (r != 0)
			semc_shutdown(c);	/* out of threads: leave it, shut */
		return;
	}
	Py_BEGIN_ALLOW_THREADS
	semc_shutdown(c);
	semc_free(c);
	Py_END_ALLOW_THREADS
	ctx->c = NULL;
	ctx_put(ctx, true);
}

/* Enter the library through h: the context, or NULL with Closed raised. */
static struct hctx *handle_enter(HandleObject *h)
{
	struct hctx *ctx = h->ctx;

	if (ctx == NULL || ctx->closed) {
		error_raise(PYSEMC_E_CLOSED, "the client is closed", "call", NULL);
		return NULL;
	}
	ctx->calls++;
	return ctx;
}

/* Leave it (GIL held): the last one out of a closed handle frees it. */
static void handle_leave(struct hctx *ctx)
{
	if (--ctx->calls == 0 && ctx->closed)
		ctx_release(ctx);
}

/* Close: no new call; threads inside are woken; freed when they are out. */
static void handle_close(struct hctx *ctx)
{
	if (ctx->closed && (ctx->shut || ctx->released))
		return;
	ctx->closed = true;
	if (ctx->calls == 0) {
		ctx_release(ctx);
		return;
	}
	if (!ctx->shut) {
		ctx->shut = true;
		ctx->calls++;	/* the shutdown may run callbacks that close too */
		Py_BEGIN_ALLOW_THREADS
		semc_shutdown(ctx->c);
		Py_END_ALLOW_THREADS
		handle_leave(ctx);
	}
}

/* Finish a blocking call that returned r (the GIL back): raise op's
 * exception when it failed (semc_last_message() is still this thread's),
 * leave the library. Whether it succeeded. */
static bool call_end(struct hctx *ctx, int r, const char *op, const char *name)
{
	if (r != 0)
		error_last(r, op, name);
	handle_leave(ctx);
	return r == 0;
}

/* The same, for a call that returns nothing: None or NULL. */
static PyObject *call_none(struct hctx *ctx, int r, const char *op, const char *name)
{
	if (!call_end(ctx, r, op, name))
		return NULL;
	Py_RETURN_NONE;
}

/* A callback starts: the GIL, and the context kept. false: the
 * interpreter is going away, do nothing. */
static bool cb_enter(struct hctx *ctx, PyGILState_STATE *st)
{
	if (py_finalizing())
		return false;
	*st = PyGILState_Ensure();
	cb_depth++;
	ctx->calls++;
	return true;
}

static void cb_leave(struct hctx *ctx, PyGILState_STATE st)
{
	handle_leave(ctx);
	cb_depth--;
	PyGILState_Release(st);
}

/* Report an exception raised by a Python callback (it cannot propagate). */
static void cb_unraisable(PyObject *fn)
{
	if (PyErr_Occurred())
		PyErr_WriteUnraisable(fn);
}

/* --- results as Python values -------------------------------------------- */

static PyObject *grant_to_py(const struct semc_grant *g)
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

static PyObject *holder_to_py(const struct semc_holder *h)
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

static PyObject *waiter_to_py(const struct semc_waiter *w)
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
static PyObject *list_of(const void *arr, size_t n, size_t size, PyObject *(*one)(const void *))
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

static PyObject *holder_one(const void *p) { return holder_to_py(p); }
static PyObject *waiter_one(const void *p) { return waiter_to_py(p); }

static PyObject *info_to_py(const struct semc_info *in)
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

static PyObject *summary_one(const void *p)
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

static PyObject *multi_to_py(const struct semc_multi_grant *m)
{
	return Py_BuildValue("(NK)", list_of(m->grants, m->n, sizeof *m->grants, named_grant_one),
			     (unsigned long long)m->waited_us);
}

static PyObject *hold_one(const void *p)
{
	const struct semc_hold_entry *e = p;

	return Py_BuildValue("(NN)", str_from(e->name), holder_to_py(&e->holder));
}

static PyObject *place_one(const void *p)
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

static PyObject *node_one(const void *p)
{
	const struct semc_cluster_node *n = p;

	return Py_BuildValue("{s:K,s:N,s:N,s:K,s:K}", "id", (unsigned long long)n->id,
			     "address", str_from(n->address), "role", str_from(n->role),
			     "match_index", (unsigned long long)n->match_index,
			     "lag", (unsigned long long)n->lag);
}

static PyObject *cluster_to_py(const struct semc_cluster *cl)
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
static PyObject *result_value(const struct semc_result *r, int kind)
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

/* --- callbacks from the library ------------------------------------------ */

static void pycall_unlink(struct pycall *pc)
{
	pc->prev->next = pc->next;
	pc->next->prev = pc->prev;
	pc->ctx->npending--;
	live_calls--;
}

/* An asynchronous request completed: fn(error, message, value). */
static void done_cb(struct semc *c, const struct semc_result *r, void *arg)
{
	struct pycall *pc = arg;
	struct hctx *ctx = pc->ctx;
	PyObject *a[3], *res;
	PyGILState_STATE st;

	(void)c;
	if (!cb_enter(ctx, &st))
		return;
	pycall_unlink(pc);
	a[0] = PyLong_FromLong(r->error);
	a[1] = str_from(r->message);
	a[2] = result_value(r, pc->kind);
	if (a[0] != NULL && a[1] != NULL && a[2] != NULL) {
		res = PyObject_Vectorcall(pc->fn, a, 3, NULL);
		if (res == NULL)
			cb_unraisable(pc->fn);
		Py_XDECREF(res);
	} else {
		cb_unraisable(pc->fn);
	}
	Py_XDECREF(a[0]);
	Py_XDECREF(a[1]);
	Py_XDECREF(a[2]);
	Py_DECREF(pc->fn);
	PyMem_RawFree(pc);
	cb_leave(ctx, st);
}

/* A connection event: on_event(type, error, message, name, permit_id, token, n). */
static void event_cb(struct semc *c, const struct semc_event *ev, void *arg)
{
	struct hctx *ctx = arg;
	PyGILState_STATE st;
	PyObject *fn, *res;

	(void)c;
	if (!cb_enter(ctx, &st))
		return;
	if ((fn = ctx->on_event) != NULL) {
		Py_INCREF(fn);
		res = PyObject_CallFunction(fn, "iiNNKKk", (int)ev->type, ev->error,
					    str_from(ev->message),
					    ev->name != NULL ? str_from(ev->name) : Py_NewRef(Py_None),
					    (unsigned long long)ev->permit_id,
					    (unsigned long long)ev->token, (unsigned long)ev->n);
		if (res == NULL)
			cb_unraisable(fn);
		Py_XDECREF(res);
		Py_DECREF(fn);
	}
	cb_leave(ctx, st);
}

/* A watch's event: fn(tuple of its fields). */
static void watch_cb(struct semc *c, const struct semc_watch_event *ev, void *arg)
{
	struct pywatch *w = arg;
	struct hctx *ctx = w->ctx;
	PyGILState_STATE st;
	PyObject *fn, *res;

	(void)c;
	if (!cb_enter(ctx, &st))
		return;
	if ((fn = w->fn) != NULL) {
		Py_INCREF(fn);
		res = PyObject_CallFunction(fn, "((KNisKkKKKNNNkkkLkkkkN))",
			(unsigned long long)ev->watch, str_from(ev->name), (int)ev->kind,
			ev->kind_name != NULL ? ev->kind_name : "unknown",
			(unsigned long long)ev->time_ms, (unsigned long)ev->n,
			(unsigned long long)ev->permit_id, (unsigned long long)ev->token,
			(unsigned long long)ev->request_id, str_from(ev->principal),
			str_from(ev->client_name), str_from(ev->host), (unsigned long)ev->pid,
			(unsigned long)ev->holders, (unsigned long)ev->waiters,
			(long long)ev->available, (unsigned long)ev->limit, (unsigned long)ev->rate,
			(unsigned long)ev->rate_period_ms, (unsigned long)ev->burst,
			str_from(ev->reason));
		if (res == NULL)
			cb_unraisable(fn);
		Py_XDECREF(res);
		Py_DECREF(fn);
	}
	cb_leave(ctx, st);
}

/* A new pycall for fn, on the context's list (GIL held). */
static struct pycall *pycall_new(struct hctx *ctx, PyObject *fn, int kind)
{
	struct pycall *pc = PyMem_RawMalloc(sizeof *pc);

	if (pc == NULL) {
		PyErr_NoMemory();
		return NULL;
	}
	pc->ctx = ctx;
	pc->fn = Py_NewRef(fn);
	pc->kind = kind;
	pc->next = &ctx->pending;
	pc->prev = ctx->pending.prev;
	ctx->pending.prev->next = pc;
	ctx->pending.prev = pc;
	ctx->npending++;
	live_calls++;
	return pc;
}

/* Take back a pycall whose request was not sent. */
static void pycall_drop(struct pycall *pc)
{
	pycall_unlink(pc);
	Py_DECREF(pc->fn);
	PyMem_RawFree(pc);
}

/* --- Handle: construction and settings ------------------------------------ */

static PyObject *Handle_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "address", "client_name", "lease_ms", "timeout_ms", "reconnect",
				  "keepalive_thread", "tls", "tls_ca", "tls_cert", "tls_key",
				  "on_event", NULL };
	const char *address = NULL, *name = NULL, *ca = NULL, *cert = NULL, *key = NULL;
	uint32_t lease_ms = 0;
	int timeout_ms = 10000, reconnect = 1, keepalive = 1, tls = 0;
	PyObject *on_event = NULL;
	struct hctx *ctx;
	HandleObject *h;
	int r = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O&O&O&O&pppO&O&O&O&:Handle", kwlist,
					 conv_ostr, &address, conv_ostr, &name, conv_u32, &lease_ms,
					 conv_int, &timeout_ms, &reconnect, &keepalive, &tls,
					 conv_ostr, &ca, conv_ostr, &cert, conv_ostr, &key,
					 conv_ocallable, &on_event))
		return NULL;
	if ((h = (HandleObject *)type->tp_alloc(type, 0)) == NULL)
		return NULL;
	if ((ctx = PyMem_RawCalloc(1, sizeof *ctx)) == NULL) {
		Py_DECREF(h);
		return PyErr_NoMemory();
	}
	ctx->pending.next = ctx->pending.prev = &ctx->pending;
	ctx->refs = 2;		/* the Handle's, the struct semc's */
	if ((ctx->c = semc_new()) == NULL) {
		PyMem_RawFree(ctx);
		Py_DECREF(h);
		return PyErr_NoMemory();
	}
	live_ctx++;
	h->ctx = ctx;
	ctx->on_event = Py_XNewRef(on_event);
	if (address != NULL && (r = semc_set_address(ctx->c, address)) != 0)
		goto fail;
	if (name != NULL && (r = semc_set_client_name(ctx->c, name)) != 0)
		goto fail;
	if (tls && (r = semc_set_tls(ctx->c, ca, cert, key)) != 0)
		goto fail;
	semc_set_lease(ctx->c, lease_ms);
	semc_set_timeout(ctx->c, timeout_ms);
	semc_set_reconnect(ctx->c, reconnect);
	semc_set_keepalive_thread(ctx->c, keepalive);
	semc_set_event_callback(ctx->c, event_cb, ctx);
	return (PyObject *)h;
fail:
	error_last(r, "connect", NULL);
	Py_DECREF(h);
	return NULL;
}

static int Handle_traverse(HandleObject *h, visitproc visit, void *arg)
{
	struct pywatch *w;

	Py_VISIT(Py_TYPE(h));
	if (h->ctx != NULL && !h->ctx->released) {
		Py_VISIT(h->ctx->on_event);
		for (w = h->ctx->watches; w != NULL; w = w->next)
			Py_VISIT(w->fn);
	}
	return 0;
}

static int Handle_clear(HandleObject *h)
{
	struct pywatch *w;

	if (h->ctx != NULL && !h->ctx->released) {
		Py_CLEAR(h->ctx->on_event);
		for (w = h->ctx->watches; w != NULL; w = w->next)
			Py_CLEAR(w->fn);
	}
	return 0;
}

static void Handle_dealloc(HandleObject *h)
{
	struct hctx *ctx = h->ctx;

	PyObject_GC_UnTrack(h);
	if (h->weakrefs != NULL)
		PyObject_ClearWeakRefs((PyObject *)h);
	h->ctx = NULL;
	if (ctx != NULL) {
		ctx->closed = true;
		if (ctx->calls == 0)
			ctx_release(ctx);
		/* else: a callback runs; its end frees */
		ctx_put(ctx, true);
	}
	Py_TYPE(h)->tp_free((PyObject *)h);
}

/* --- Handle: connection ---------------------------------------------------- */

static PyObject *h_connect(HandleObject *self, PyObject *args)
{
	struct hctx *ctx;
	int ms = -1, r;

	if (!PyArg_ParseTuple(args, "|O&:connect", conv_int, &ms))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	r = semc_connect(ctx->c, ms);
	Py_END_ALLOW_THREADS
	return call_none(ctx, r, "connect", NULL);
}

static PyObject *h_close(HandleObject *self, PyObject *unused)
{
	(void)unused;
	if (self->ctx != NULL)
		handle_close(self->ctx);
	Py_RETURN_NONE;
}

static PyObject *h_session(HandleObject *self, PyObject *unused)
{
	struct semc_session s;
	struct hctx *ctx;
	PyObject *v;
	int r;

	(void)unused;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	r = semc_session(ctx->c, &s);
	Py_END_ALLOW_THREADS
	/* strings valid until the next reconnect: copied under the GIL,
	 * before anything else runs on the handle from this thread */
	v = Py_BuildValue("(KkNNNi)", (unsigned long long)s.session, (unsigned long)s.lease_ms,
			  str_from(s.principal), str_from(s.server), PyBool_FromLong(s.resumed), r);
	handle_leave(ctx);
	return v;
}

static PyObject *h_address(HandleObject *self, PyObject *unused)
{
	(void)unused;
	if (self->ctx == NULL || self->ctx->released)
		return error_raise(PYSEMC_E_CLOSED, "the client is closed", "address", NULL);
	return str_from(semc_address(self->ctx->c));
}

static PyObject *h_get_closed(HandleObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(self->ctx == NULL || self->ctx->closed);
}

/* --- Handle: blocking operations --------------------------------------------
 * Each: parse, enter, call with the GIL released, raise on error, leave. */

/* Run the blocking call `expr` (assigning r) through ctx. */
#define BLOCKING(ctx, expr) do {		\
	Py_BEGIN_ALLOW_THREADS			\
	expr;					\
	Py_END_ALLOW_THREADS			\
} while (0)

static PyObject *h_down(HandleObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	static const conv_fn convs[] = { conv_str, conv_u32, conv_i64, conv_u32, conv_u32 };
	struct semc_down_opts o = { 0 };
	const char *name;
	void *const outs[] = { &name, &o.n, &o.timeout_ms, &o.lease_ms, &o.create_limit };
	struct semc_grant g;
	struct hctx *ctx;
	int r;

	if (!args_fast("down", args, nargs, 5, convs, outs))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_down_ex(ctx->c, name, &o, &g));
	if (!call_end(ctx, r, "acquire", name))
		return NULL;
	return grant_to_py(&g);
}

static PyObject *h_up(HandleObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	static const conv_fn convs[] = { conv_str, conv_u32, conv_u64 };
	const char *name;
	uint32_t n, released = 0;
	uint64_t permit_id;
	void *const outs[] = { &name, &n, &permit_id };
	struct hctx *ctx;
	int r;

	if (!args_fast("up", args, nargs, 3, convs, outs))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_up(ctx->c, name, n, permit_id, &released));
	if (!call_end(ctx, r, "release", name))
		return NULL;
	return PyLong_FromUnsignedLong(released);
}

static PyObject *h_create(HandleObject *self, PyObject *args)
{
	struct semc_create_opts o = { 0 };
	struct semc_rate rt = { 0 };
	const char *name;
	int mode = 0, if_not_exists = 0, initial_set = 0, has_rate = 0;
	struct hctx *ctx;
	int r;

	if (!PyArg_ParseTuple(args, "O&O&ipO&pO&O&O&p:create", conv_str, &name, conv_u32, &o.limit,
			      &mode, &if_not_exists, conv_u32, &o.initial, &initial_set,
			      conv_u32, &rt.rate, conv_u32, &rt.period_ms, conv_u32, &rt.burst,
			      &has_rate))
		return NULL;
	if (mode < SEMC_MODE_OWNED || mode > SEMC_MODE_RATE) {
		PyErr_SetString(PyExc_ValueError, "unknown mode");
		return NULL;
	}
	o.mode = (enum semc_mode)mode;
	o.if_not_exists = if_not_exists;
	o.initial_set = initial_set;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	if (has_rate)
		BLOCKING(ctx, r = semc_create_rate(ctx->c, name, &o, &rt));
	else
		BLOCKING(ctx, r = semc_create_ex(ctx->c, name, &o));
	return call_none(ctx, r, "create", name);
}

static PyObject *h_delete(HandleObject *self, PyObject *args)
{
	const char *name;
	int force = 0, r;
	struct hctx *ctx;

	if (!PyArg_ParseTuple(args, "O&p:delete", conv_str, &name, &force))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_delete(ctx->c, name, force));
	return call_none(ctx, r, "delete", name);
}

static PyObject *h_set_limit(HandleObject *self, PyObject *args)
{
	const char *name;
	uint32_t limit;
	struct hctx *ctx;
	int r;

	if (!PyArg_ParseTuple(args, "O&O&:set_limit", conv_str, &name, conv_u32, &limit))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_set_limit(ctx->c, name, limit));
	return call_none(ctx, r, "set_limit", name);
}

static PyObject *h_set_rate(HandleObject *self, PyObject *args)
{
	struct semc_rate rt = { 0 };
	const char *name;
	struct hctx *ctx;
	int r;

	if (!PyArg_ParseTuple(args, "O&O&O&O&:set_rate", conv_str, &name, conv_u32, &rt.rate,
			      conv_u32, &rt.period_ms, conv_u32, &rt.burst))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_set_rate(ctx->c, name, &rt));
	return call_none(ctx, r, "set_rate", name);
}

static PyObject *h_cancel(HandleObject *self, PyObject *args)
{
	uint64_t id;
	struct hctx *ctx;
	int r;

	if (!PyArg_ParseTuple(args, "O&:cancel", conv_u64, &id))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_cancel(ctx->c, id));
	return call_none(ctx, r, "cancel", NULL);
}

static PyObject *h_info(HandleObject *self, PyObject *args)
{
	struct semc_info *in = NULL;
	const char *name;
	struct hctx *ctx;
	PyObject *v = NULL;
	int r;

	if (!PyArg_ParseTuple(args, "O&:info", conv_str, &name))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_info(ctx->c, name, &in));
	if (call_end(ctx, r, "info", name))
		v = info_to_py(in);
	semc_info_free(in);
	return v;
}

static PyObject *h_list(HandleObject *self, PyObject *args)
{
	const char *prefix, *after;
	struct semc_list *l = NULL;
	uint32_t max;
	struct hctx *ctx;
	PyObject *v = NULL;
	int r;

	if (!PyArg_ParseTuple(args, "O&O&O&:list", conv_str, &prefix, conv_str, &after,
			      conv_u32, &max))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_list(ctx->c, prefix, after, max, &l));
	if (call_end(ctx, r, "list", prefix))
		v = Py_BuildValue("(NN)", list_of(l->entries, l->n, sizeof *l->entries, summary_one),
				  str_from(l->next));
	semc_list_free(l);
	return v;
}

static PyObject *h_validate(HandleObject *self, PyObject *args)
{
	const char *name;
	uint64_t token;
	bool valid = false;
	struct hctx *ctx;
	int r;

	if (!PyArg_ParseTuple(args, "O&O&:validate", conv_str, &name, conv_u64, &token))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
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

static PyObject *h_stats(HandleObject *self, PyObject *unused)
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

static PyObject *h_ping(HandleObject *self, PyObject *unused)
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

static PyObject *h_release(HandleObject *self, PyObject *args)
{
	const char *name;
	uint64_t permit_id;
	uint32_t released = 0;
	struct hctx *ctx;
	int r;

	if (!PyArg_ParseTuple(args, "O&O&:release", conv_str, &name, conv_u64, &permit_id))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_release(ctx->c, name, permit_id, &released));
	if (!call_end(ctx, r, "force_release", name))
		return NULL;
	return PyLong_FromUnsignedLong(released);
}

static PyObject *h_detach(HandleObject *self, PyObject *unused)
{
	struct hctx *ctx;
	int r;

	(void)unused;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_detach(ctx->c));
	return call_none(ctx, r, "detach", NULL);
}

/* A tuple of (name, n, create_limit) as semc_wants, in wv (16 at most);
 * the names are borrowed from the items, which the tuple keeps. */
static int wants_parse(PyObject *seq, struct semc_want *wv, size_t *n)
{
	Py_ssize_t i, len;

	len = PyTuple_GET_SIZE(seq);
	if (len < 1 || len > 16) {
		PyErr_SetString(PyExc_ValueError, "a multi-name acquire takes 1 to 16 names");
		return 0;
	}
	for (i = 0; i < len; i++) {
		PyObject *t = PyTuple_GET_ITEM(seq, i);

		if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3) {
			PyErr_SetString(PyExc_TypeError, "each want must be a (name, n, limit) tuple");
			return 0;
		}
		if (!conv_str(PyTuple_GET_ITEM(t, 0), &wv[i].name) ||
		    !conv_u32(PyTuple_GET_ITEM(t, 1), &wv[i].n) ||
		    !conv_u32(PyTuple_GET_ITEM(t, 2), &wv[i].create_limit))
			return 0;
	}
	*n = (size_t)len;
	return 1;
}

static PyObject *h_down_multi(HandleObject *self, PyObject *args)
{
	struct semc_want wv[16];
	struct semc_multi_grant *m = NULL;
	PyObject *seq, *v = NULL;
	int64_t timeout_ms;
	uint32_t lease_ms;
	struct hctx *ctx;
	size_t n = 0;
	int r;

	if (!PyArg_ParseTuple(args, "O!O&O&:down_multi", &PyTuple_Type, &seq, conv_i64, &timeout_ms,
			      conv_u32, &lease_ms))
		return NULL;
	if (!wants_parse(seq, wv, &n))
		return NULL;
	Py_INCREF(seq);
	if ((ctx = handle_enter(self)) == NULL) {
		Py_DECREF(seq);
		return NULL;
	}
	BLOCKING(ctx, r = semc_down_multi(ctx->c, wv, n, timeout_ms, lease_ms, &m));
	if (call_end(ctx, r, "acquire", wv[0].name))
		v = multi_to_py(m);
	Py_DECREF(seq);
	semc_multi_grant_free(m);
	return v;
}

static PyObject *h_renew(HandleObject *self, PyObject *args)
{
	const char *name;
	uint64_t permit_id, expires = 0;
	uint32_t lease_ms, renewed = 0;
	struct hctx *ctx;
	int r;

	if (!PyArg_ParseTuple(args, "O&O&O&:renew", conv_str, &name, conv_u64, &permit_id,
			      conv_u32, &lease_ms))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_renew(ctx->c, name, permit_id, lease_ms, &renewed, &expires));
	if (!call_end(ctx, r, "renew", name))
		return NULL;
	return Py_BuildValue("(kK)", (unsigned long)renewed, (unsigned long long)expires);
}

static PyObject *h_holds(HandleObject *self, PyObject *args)
{
	const char *principal;
	uint64_t after;
	uint32_t max;
	struct semc_holds *hs = NULL;
	struct hctx *ctx;
	PyObject *v = NULL;
	int r;

	if (!PyArg_ParseTuple(args, "O&O&O&:holds", conv_ostr, &principal, conv_u64, &after,
			      conv_u32, &max))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_holds(ctx->c, principal, after, max, &hs));
	if (call_end(ctx, r, "holds", NULL))
		v = Py_BuildValue("(NnK)", list_of(hs->entries, hs->n, sizeof *hs->entries, hold_one),
				  (Py_ssize_t)hs->total, (unsigned long long)hs->next_permit);
	semc_holds_free(hs);
	return v;
}

static PyObject *h_where(HandleObject *self, PyObject *args)
{
	struct semc_where *w = NULL;
	uint64_t id;
	struct hctx *ctx;
	PyObject *v = NULL;
	int r;

	if (!PyArg_ParseTuple(args, "O&:where", conv_u64, &id))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_where(ctx->c, id, &w));
	if (call_end(ctx, r, "where", NULL))
		v = Py_BuildValue("(NK)", list_of(w->places, w->n, sizeof *w->places, place_one),
				  (unsigned long long)w->since_ms);
	semc_where_free(w);
	return v;
}

static PyObject *h_cluster_status(HandleObject *self, PyObject *unused)
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

/* Watch: the id; fn(event tuple) for each event until unwatch. */
static PyObject *h_watch(HandleObject *self, PyObject *args)
{
	const char *name;
	int prefix = 0;
	PyObject *fn;
	struct pywatch *w;
	struct hctx *ctx;
	int64_t id;

	if (!PyArg_ParseTuple(args, "O&pO&:watch", conv_str, &name, &prefix, conv_callable, &fn))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	if ((w = PyMem_RawCalloc(1, sizeof *w)) == NULL) {
		handle_leave(ctx);
		return PyErr_NoMemory();
	}
	w->ctx = ctx;
	w->fn = Py_NewRef(fn);
	w->next = ctx->watches;
	ctx->watches = w;
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

static PyObject *h_unwatch(HandleObject *self, PyObject *args)
{
	struct pywatch *w;
	uint64_t id;
	struct hctx *ctx;
	int r;

	if (!PyArg_ParseTuple(args, "O&:unwatch", conv_u64, &id))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, r = semc_unwatch(ctx->c, id));
	for (w = ctx->watches; w != NULL; w = w->next)
		if (w->id == id)
			Py_CLEAR(w->fn);
	return call_none(ctx, r, "unwatch", NULL);
}

/* --- Handle: asynchronous operations and the event loop --------------------
 * Each returns the request id; fn(error, message, value) runs once, from
 * process() or a thread blocked in a call on the handle. */

/* Finish an async submission that returned id for pycall pc. */
static PyObject *async_done(struct hctx *ctx, struct pycall *pc, int64_t id, const char *op,
			    const char *name)
{
	if (id < 0) {
		error_last((int)id, op, name);
		pycall_drop(pc);
	}
	handle_leave(ctx);
	if (id < 0)
		return NULL;
	return PyLong_FromLongLong(id);
}

static PyObject *h_down_async(HandleObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	static const conv_fn convs[] = { conv_str, conv_u32, conv_i64, conv_u32, conv_u32,
					 conv_callable };
	struct semc_down_opts o = { 0 };
	const char *name;
	PyObject *fn;
	void *const outs[] = { &name, &o.n, &o.timeout_ms, &o.lease_ms, &o.create_limit, &fn };
	struct pycall *pc;
	struct hctx *ctx;
	int64_t id;

	if (!args_fast("down_async", args, nargs, 6, convs, outs))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	if ((pc = pycall_new(ctx, fn, CALL_DOWN)) == NULL) {
		handle_leave(ctx);
		return NULL;
	}
	BLOCKING(ctx, id = semc_down_ex_async(ctx->c, name, &o, done_cb, pc));
	return async_done(ctx, pc, id, "acquire", name);
}

static PyObject *h_up_async(HandleObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	static const conv_fn convs[] = { conv_str, conv_u32, conv_u64, conv_callable };
	const char *name;
	uint32_t n;
	uint64_t permit_id;
	PyObject *fn;
	void *const outs[] = { &name, &n, &permit_id, &fn };
	struct pycall *pc;
	struct hctx *ctx;
	int64_t id;

	if (!args_fast("up_async", args, nargs, 4, convs, outs))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	if ((pc = pycall_new(ctx, fn, CALL_UP)) == NULL) {
		handle_leave(ctx);
		return NULL;
	}
	BLOCKING(ctx, id = semc_up_async(ctx->c, name, n, permit_id, done_cb, pc));
	return async_done(ctx, pc, id, "release", name);
}

static PyObject *h_down_multi_async(HandleObject *self, PyObject *args)
{
	struct semc_want wv[16];
	PyObject *seq, *fn, *v;
	int64_t timeout_ms, id;
	uint32_t lease_ms;
	struct pycall *pc;
	struct hctx *ctx;
	size_t n = 0;

	if (!PyArg_ParseTuple(args, "O!O&O&O&:down_multi_async", &PyTuple_Type, &seq, conv_i64,
			      &timeout_ms, conv_u32, &lease_ms, conv_callable, &fn))
		return NULL;
	if (!wants_parse(seq, wv, &n))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	if ((pc = pycall_new(ctx, fn, CALL_MULTI)) == NULL) {
		handle_leave(ctx);
		return NULL;
	}
	Py_INCREF(seq);
	BLOCKING(ctx, id = semc_down_multi_async(ctx->c, wv, n, timeout_ms, lease_ms, done_cb, pc));
	v = async_done(ctx, pc, id, "acquire", wv[0].name);
	Py_DECREF(seq);
	return v;
}

static PyObject *h_info_async(HandleObject *self, PyObject *args)
{
	const char *name;
	PyObject *fn;
	struct pycall *pc;
	struct hctx *ctx;
	int64_t id;

	if (!PyArg_ParseTuple(args, "O&O&:info_async", conv_str, &name, conv_callable, &fn))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	if ((pc = pycall_new(ctx, fn, CALL_INFO)) == NULL) {
		handle_leave(ctx);
		return NULL;
	}
	BLOCKING(ctx, id = semc_info_async(ctx->c, name, done_cb, pc));
	return async_done(ctx, pc, id, "info", name);
}

static PyObject *h_validate_async(HandleObject *self, PyObject *args)
{
	const char *name;
	uint64_t token;
	PyObject *fn;
	struct pycall *pc;
	struct hctx *ctx;
	int64_t id;

	if (!PyArg_ParseTuple(args, "O&O&O&:validate_async", conv_str, &name, conv_u64, &token,
			      conv_callable, &fn))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	if ((pc = pycall_new(ctx, fn, CALL_VALID)) == NULL) {
		handle_leave(ctx);
		return NULL;
	}
	BLOCKING(ctx, id = semc_validate_async(ctx->c, name, token, done_cb, pc));
	return async_done(ctx, pc, id, "validate", name);
}

static PyObject *h_ping_async(HandleObject *self, PyObject *args)
{
	PyObject *fn;
	struct pycall *pc;
	struct hctx *ctx;
	int64_t id;

	if (!PyArg_ParseTuple(args, "O&:ping_async", conv_callable, &fn))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	if ((pc = pycall_new(ctx, fn, CALL_NONE)) == NULL) {
		handle_leave(ctx);
		return NULL;
	}
	BLOCKING(ctx, id = semc_ping_async(ctx->c, done_cb, pc));
	return async_done(ctx, pc, id, "ping", NULL);
}

/* Cancel a pending down without waiting; fn (or None) gets the answer. */
static PyObject *h_cancel_async(HandleObject *self, PyObject *args)
{
	PyObject *fn = NULL;
	struct pycall *pc = NULL;
	struct hctx *ctx;
	uint64_t rid;
	int64_t id;

	if (!PyArg_ParseTuple(args, "O&|O&:cancel_async", conv_u64, &rid, conv_ocallable, &fn))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	if (fn != NULL && (pc = pycall_new(ctx, fn, CALL_NONE)) == NULL) {
		handle_leave(ctx);
		return NULL;
	}
	BLOCKING(ctx, id = semc_cancel_async(ctx->c, rid, pc ? done_cb : NULL, pc));
	if (id < 0) {
		error_last((int)id, "cancel", NULL);
		if (pc != NULL)
			pycall_drop(pc);
	}
	handle_leave(ctx);
	if (id < 0)
		return NULL;
	return PyLong_FromLongLong(id);
}

/* Read and dispatch what is there, without blocking: semc_process(). */
static PyObject *h_process(HandleObject *self, PyObject *unused)
{
	struct hctx *ctx;
	int n;

	(void)unused;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	BLOCKING(ctx, n = semc_process(ctx->c));
	handle_leave(ctx);
	return PyLong_FromLong(n);
}

/* Wait up to timeout_ms for the socket (or the library's next duty), then
 * semc_process(): a thread's own loop, for a client without the library's
 * keepalive thread. */
static PyObject *h_poll(HandleObject *self, PyObject *args)
{
	struct hctx *ctx;
	int ms, n;

	if (!PyArg_ParseTuple(args, "O&:poll", conv_int, &ms))
		return NULL;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	{
		struct pollfd p = { .fd = semc_fd(ctx->c), .events = POLLIN };
		int t = semc_timeout(ctx->c);

		if (t < 0 || t > ms)
			t = ms < 0 ? 0 : ms;
		if (p.fd < 0 && t > 100)
			t = 100;	/* disconnected: semc_process() retries */
		if (p.fd >= 0) {
			poll(&p, 1, t);
		} else if (t > 0) {
			struct timespec ts = { t / 1000, (long)(t % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		}
		n = semc_process(ctx->c);
	}
	Py_END_ALLOW_THREADS
	handle_leave(ctx);
	return PyLong_FromLong(n);
}

/* The quick getters take the library's lock only briefly, which no thread
 * holds while it waits for the GIL: no need to release it. */
static PyObject *h_fd(HandleObject *self, PyObject *unused)
{
	(void)unused;
	if (self->ctx == NULL || self->ctx->released)
		return PyLong_FromLong(-1);
	return PyLong_FromLong(semc_fd(self->ctx->c));
}

static PyObject *h_timeout(HandleObject *self, PyObject *unused)
{
	(void)unused;
	if (self->ctx == NULL || self->ctx->released)
		return PyLong_FromLong(-1);
	return PyLong_FromLong(semc_timeout(self->ctx->c));
}

static PyObject *h_lease_left(HandleObject *self, PyObject *unused)
{
	(void)unused;
	if (self->ctx == NULL || self->ctx->released)
		return PyLong_FromLong(-1);
	return PyLong_FromLongLong(semc_lease_left(self->ctx->c));
}

static PyObject *h_pending(HandleObject *self, PyObject *unused)
{
	(void)unused;
	if (self->ctx == NULL || self->ctx->released)
		return PyLong_FromLong(0);
	return PyLong_FromSize_t(semc_pending(self->ctx->c));
}

/* Python callbacks waiting for the library (this handle's). */
static PyObject *h_callbacks(HandleObject *self, PyObject *unused)
{
	(void)unused;
	return PyLong_FromSsize_t(self->ctx != NULL ? self->ctx->npending : 0);
}

static PyMethodDef Handle_methods[] = {
	{ "connect", (PyCFunction)h_connect, METH_VARARGS,
	  "connect([timeout_ms]): connect and say Hello (semc_connect)." },
	{ "close", (PyCFunction)h_close, METH_NOARGS,
	  "close(): end the connection; threads inside the library return; freed when out." },
	{ "session", (PyCFunction)h_session, METH_NOARGS,
	  "session() -> (id, lease_ms, principal, server, resumed, error)." },
	{ "address", (PyCFunction)h_address, METH_NOARGS, "address() -> the address in use." },
	{ "down", (PyCFunction)(void (*)(void))h_down, METH_FASTCALL,
	  "down(name, n, timeout_ms, lease_ms, create_limit) -> (permit_id, token, n, waited_us)." },
	{ "up", (PyCFunction)(void (*)(void))h_up, METH_FASTCALL,
	  "up(name, n, permit_id) -> permits released." },
	{ "create", (PyCFunction)h_create, METH_VARARGS,
	  "create(name, limit, mode, if_not_exists, initial, initial_set, rate, period_ms, "
	  "burst, has_rate)." },
	{ "delete", (PyCFunction)h_delete, METH_VARARGS, "delete(name, force)." },
	{ "set_limit", (PyCFunction)h_set_limit, METH_VARARGS, "set_limit(name, limit)." },
	{ "set_rate", (PyCFunction)h_set_rate, METH_VARARGS,
	  "set_rate(name, rate, period_ms, burst)." },
	{ "cancel", (PyCFunction)h_cancel, METH_VARARGS, "cancel(request_id): blocking." },
	{ "info", (PyCFunction)h_info, METH_VARARGS, "info(name) -> dict." },
	{ "list", (PyCFunction)h_list, METH_VARARGS,
	  "list(prefix, after, max) -> ([(name, limit, available, mode, holders, waiters)], next)." },
	{ "validate", (PyCFunction)h_validate, METH_VARARGS, "validate(name, token) -> bool." },
	{ "stats", (PyCFunction)h_stats, METH_NOARGS, "stats() -> {counter: value}." },
	{ "ping", (PyCFunction)h_ping, METH_NOARGS, "ping() -> round trip in microseconds." },
	{ "release", (PyCFunction)h_release, METH_VARARGS,
	  "release(name, permit_id) -> released (administrators: someone else's permit)." },
	{ "detach", (PyCFunction)h_detach, METH_NOARGS, "detach(): semc_detach." },
	{ "down_multi", (PyCFunction)h_down_multi, METH_VARARGS,
	  "down_multi(((name, n, limit), ...), timeout_ms, lease_ms) -> ([(name, permit_id, token, n)], "
	  "waited_us)." },
	{ "renew", (PyCFunction)h_renew, METH_VARARGS,
	  "renew(name, permit_id, lease_ms) -> (renewed, expires_ms)." },
	{ "holds", (PyCFunction)h_holds, METH_VARARGS,
	  "holds(principal, after_permit, max) -> ([(name, holder)], total, next_permit)." },
	{ "where", (PyCFunction)h_where, METH_VARARGS,
	  "where(request_id) -> ([place], since_ms)." },
	{ "cluster_status", (PyCFunction)h_cluster_status, METH_NOARGS,
	  "cluster_status() -> dict." },
	{ "watch", (PyCFunction)h_watch, METH_VARARGS, "watch(name, prefix, fn) -> watch id." },
	{ "unwatch", (PyCFunction)h_unwatch, METH_VARARGS, "unwatch(id)." },
	{ "down_async", (PyCFunction)(void (*)(void))h_down_async, METH_FASTCALL,
	  "down_async(name, n, timeout_ms, lease_ms, create_limit, fn) -> request id." },
	{ "up_async", (PyCFunction)(void (*)(void))h_up_async, METH_FASTCALL,
	  "up_async(name, n, permit_id, fn) -> request id." },
	{ "down_multi_async", (PyCFunction)h_down_multi_async, METH_VARARGS,
	  "down_multi_async(wants, timeout_ms, lease_ms, fn) -> request id." },
	{ "info_async", (PyCFunction)h_info_async, METH_VARARGS, "info_async(name, fn)." },
	{ "validate_async", (PyCFunction)h_validate_async, METH_VARARGS,
	  "validate_async(name, token, fn)." },
	{ "ping_async", (PyCFunction)h_ping_async, METH_VARARGS, "ping_async(fn)." },
	{ "cancel_async", (PyCFunction)h_cancel_async, METH_VARARGS,
	  "cancel_async(request_id[, fn]) -> the Cancel's request id." },
	{ "process", (PyCFunction)h_process, METH_NOARGS,
	  "process() -> requests completed, or a negative error (semc_process)." },
	{ "poll", (PyCFunction)h_poll, METH_VARARGS,
	  "poll(timeout_ms): wait for the socket at most timeout_ms, then process()." },
	{ "fd", (PyCFunction)h_fd, METH_NOARGS, "fd() -> the socket to watch, -1 if none." },
	{ "timeout", (PyCFunction)h_timeout, METH_NOARGS,
	  "timeout() -> ms until process() must run, -1 if nothing is due." },
	{ "lease_left", (PyCFunction)h_lease_left, METH_NOARGS,
	  "lease_left() -> ms of the client-side lease left, -1 if none." },
	{ "pending", (PyCFunction)h_pending, METH_NOARGS, "pending() -> requests unanswered." },
	{ "callbacks", (PyCFunction)h_callbacks, METH_NOARGS,
	  "callbacks() -> Python callbacks the library still owes." },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef Handle_getset[] = {
	{ "closed", (getter)h_get_closed, NULL, "whether close() was called", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyTypeObject Handle_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "semclient._semclient.Handle",
	.tp_doc = "Handle(address=None, client_name=None, lease_ms=0, timeout_ms=10000, "
		  "reconnect=True, keepalive_thread=True, tls=False, tls_ca=None, tls_cert=None, "
		  "tls_key=None, on_event=None): one libsemclient connection (struct semc). "
		  "The semclient package's Client and AsyncClient are built on it.",
	.tp_basicsize = sizeof(HandleObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_new = Handle_new,
	.tp_dealloc = (destructor)Handle_dealloc,
	.tp_traverse = (traverseproc)Handle_traverse,
	.tp_clear = (inquiry)Handle_clear,
	.tp_weaklistoffset = offsetof(HandleObject, weakrefs),
	.tp_methods = Handle_methods,
	.tp_getset = Handle_getset,
};

/* --- module functions ------------------------------------------------------ */

static PyObject *m_set_error_factory(PyObject *mod, PyObject *fn)
{
	(void)mod;
	if (!PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_TypeError, "a callable is required");
		return NULL;
	}
	Py_XSETREF(error_factory, Py_NewRef(fn));
	Py_RETURN_NONE;
}

static PyObject *m_strerror(PyObject *mod, PyObject *arg)
{
	int code;

	(void)mod;
	if (!conv_int(arg, &code))
		return NULL;
	if (code == PYSEMC_E_CLOSED)
		return PyUnicode_FromString("client closed");
	return PyUnicode_FromString(semc_strerror(code));
}

static PyObject *m_version(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return PyUnicode_FromString(semc_version());
}

static PyObject *m_parse_duration(PyObject *mod, PyObject *arg)
{
	const char *s;
	int64_t ms;

	(void)mod;
	if (!conv_str(arg, &s))
		return NULL;
	if (semc_parse_duration(s, &ms) != 0) {
		PyErr_Format(PyExc_ValueError, "bad duration %R (250ms, 5s, 2m, 1h, 1d)", arg);
		return NULL;
	}
	return PyLong_FromLongLong(ms);
}

static PyObject *m_parse_rate(PyObject *mod, PyObject *arg)
{
	const char *s;
	uint32_t rate, period;

	(void)mod;
	if (!conv_str(arg, &s))
		return NULL;
	if (semc_parse_rate(s, &rate, &period) != 0) {
		PyErr_Format(PyExc_ValueError, "bad rate %R (10/s, 5000/h, 3/min, 1/250ms)", arg);
		return NULL;
	}
	return Py_BuildValue("(kk)", (unsigned long)rate, (unsigned long)period);
}

/* (handles not freed, callbacks still owed): for the leak tests. */
static PyObject *m_live(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return Py_BuildValue("(nn)", live_ctx, live_calls);
}

static PyMethodDef module_methods[] = {
	{ "_set_error_factory", m_set_error_factory, METH_O,
	  "_set_error_factory(fn): fn(code, message, op, name) makes the exceptions." },
	{ "strerror", m_strerror, METH_O, "strerror(code) -> the code's name (semc_strerror)." },
	{ "version", m_version, METH_NOARGS, "version() -> libsemclient's version." },
	{ "parse_duration", m_parse_duration, METH_O,
	  "parse_duration(s) -> milliseconds (\"250ms\", \"5s\", \"2m\", \"1h\", \"1.5s\")." },
	{ "parse_rate", m_parse_rate, METH_O,
	  "parse_rate(s) -> (rate, period_ms) (\"10/s\", \"5000/h\", \"1/250ms\")." },
	{ "_live", m_live, METH_NOARGS, "_live() -> (handles alive, callbacks owed)." },
	{ NULL, NULL, 0, NULL }
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "semclient._semclient",
	.m_doc = "The C extension of the semclient package, over libsemclient (semclient(3)).",
	.m_size = -1,
	.m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__semclient(void);

PyMODINIT_FUNC PyInit__semclient(void)
{
	static const struct { const char *name; long value; } consts[] = {
		{ "E_TIMEOUT", SEMC_E_TIMEOUT }, { "E_WOULD_BLOCK", SEMC_E_WOULD_BLOCK },
		{ "E_NOT_FOUND", SEMC_E_NOT_FOUND }, { "E_EXISTS", SEMC_E_EXISTS },
		{ "E_NOT_HOLDER", SEMC_E_NOT_HOLDER }, { "E_PERMISSION", SEMC_E_PERMISSION },
		{ "E_INVALID", SEMC_E_INVALID }, { "E_EXHAUSTED", SEMC_E_EXHAUSTED },
		{ "E_CANCELLED", SEMC_E_CANCELLED }, { "E_UNAVAILABLE", SEMC_E_UNAVAILABLE },
		{ "E_PROTOCOL", SEMC_E_PROTOCOL }, { "E_INTERNAL", SEMC_E_INTERNAL },
		{ "E_SESSION_EXPIRED", SEMC_E_SESSION_EXPIRED }, { "E_DEADLOCK", SEMC_E_DEADLOCK },
		{ "E_CONNECT", SEMC_E_CONNECT }, { "E_DISCONNECTED", SEMC_E_DISCONNECTED },
		{ "E_HOLD_LOST", SEMC_E_HOLD_LOST }, { "E_NO_REPLY", SEMC_E_NO_REPLY },
		{ "E_NOMEM", SEMC_E_NOMEM }, { "E_ADDRESS", SEMC_E_ADDRESS },
		{ "E_NOT_SUPPORTED", SEMC_E_NOT_SUPPORTED }, { "E_TLS", SEMC_E_TLS },
		{ "E_SYSTEM", SEMC_E_SYSTEM }, { "E_ARG", SEMC_E_ARG },
		{ "E_CLOSED", PYSEMC_E_CLOSED },
		{ "MODE_OWNED", SEMC_MODE_OWNED }, { "MODE_SIGNAL", SEMC_MODE_SIGNAL },
		{ "MODE_RATE", SEMC_MODE_RATE },
		{ "EV_DISCONNECTED", SEMC_EV_DISCONNECTED }, { "EV_RECONNECTED", SEMC_EV_RECONNECTED },
		{ "EV_RESUMED", SEMC_EV_RESUMED }, { "EV_HOLD_LOST", SEMC_EV_HOLD_LOST },
		{ "EV_NOTICE", SEMC_EV_NOTICE },
	};
	PyObject *m;
	size_t i;

	if (PyType_Ready(&Handle_Type) < 0)
		return NULL;
	if ((m = PyModule_Create(&module_def)) == NULL)
		return NULL;
	if (PyModule_AddObjectRef(m, "Handle", (PyObject *)&Handle_Type) < 0)
		goto fail;
	for (i = 0; i < sizeof consts / sizeof consts[0]; i++)
		if (PyModule_AddIntConstant(m, consts[i].name, consts[i].value) < 0)
			goto fail;
	return m;
fail:
	Py_DECREF(m);
	return NULL;
}
