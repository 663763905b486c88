/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * python/src/ctx.c - semclient._semclient: the context of a Handle, its
 * lifetime, and the callbacks the library calls
 * (pysc.h).
 */
#include "pysc.h"

Py_ssize_t live_ctx;
Py_ssize_t live_calls;
_Thread_local int cb_depth;

/* --- the context: lifetime ----------------------------------------------- */

/* Drop a reference to the context (GIL held, unless gil is false: the
 * interpreter is going away and Python references are left alone). */
void ctx_put(struct hctx *ctx, bool gil)
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
void ctx_release(struct hctx *ctx)
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
struct hctx *handle_enter(HandleObject *h)
{
	struct hctx *ctx = h->ctx;

	if (ctx == NULL || ctx->closed) {
		error_raise(PYSEMC_E_CLOSED, "the client is closed", "call", NULL);
		return NULL;
	}
	ctx->calls++;
	return ctx;
}

/* Parse the arguments of a call as PyArg_ParseTuple(args, fmt, ...), then
 * enter: the context, or NULL with the exception raised. */
struct hctx *handle_enter_args(HandleObject *h, PyObject *args, const char *fmt, ...)
{
	va_list ap;
	int ok;

	va_start(ap, fmt);
	ok = PyArg_VaParse(args, fmt, ap);
	va_end(ap);
	return ok ? handle_enter(h) : NULL;
}

/* The same for a fast call's n arguments (args_fast). */
struct hctx *handle_enter_fast(HandleObject *h, const char *fname, PyObject *const *args,
			       Py_ssize_t nargs, int n, const conv_fn *convs, void *const *outs)
{
	return args_fast(fname, args, nargs, n, convs, outs) ? handle_enter(h) : NULL;
}

/* Leave it (GIL held): the last one out of a closed handle frees it. */
void handle_leave(struct hctx *ctx)
{
	if (--ctx->calls == 0 && ctx->closed)
		ctx_release(ctx);
}

/* Close: no new call; threads inside are woken; freed when they are out. */
void handle_close(struct hctx *ctx)
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
bool call_end(struct hctx *ctx, int r, const char *op, const char *name)
{
	if (r != 0)
		error_last(r, op, name);
	handle_leave(ctx);
	return r == 0;
}

/* The same, for a call that returns nothing: None or NULL. */
PyObject *call_none(struct hctx *ctx, int r, const char *op, const char *name)
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

/* Call fn(*args) from a callback of the library, stealing args (NULL:
 * making them failed); what it raises cannot propagate: reported. */
static void cb_call(PyObject *fn, PyObject *args)
{
	PyObject *res = args != NULL ? PyObject_CallObject(fn, args) : NULL;

	if (res == NULL && PyErr_Occurred())
		PyErr_WriteUnraisable(fn);
	Py_XDECREF(res);
	Py_XDECREF(args);
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
void done_cb(struct semc *c, const struct semc_result *r, void *arg)
{
	struct pycall *pc = arg;
	struct hctx *ctx = pc->ctx;
	PyGILState_STATE st;

	(void)c;
	if (!cb_enter(ctx, &st))
		return;
	pycall_unlink(pc);
	cb_call(pc->fn, Py_BuildValue("(iNN)", r->error, str_from(r->message),
				      result_value(r, pc->kind)));
	Py_DECREF(pc->fn);
	PyMem_RawFree(pc);
	cb_leave(ctx, st);
}

/* Deliver an event of the library to the Python callback at *slot, if it
 * is still set once the GIL is held: fn(*make(ev)). */
static void cb_deliver(struct hctx *ctx, PyObject *const *slot,
		       PyObject *(*make)(const void *ev), const void *ev)
{
	PyGILState_STATE st;
	PyObject *fn;

	if (!cb_enter(ctx, &st))
		return;
	if ((fn = *slot) != NULL) {
		Py_INCREF(fn);	/* the call may drop the handle's reference */
		cb_call(fn, make(ev));
		Py_DECREF(fn);
	}
	cb_leave(ctx, st);
}

/* A connection event's arguments: (type, error, message, name, permit_id, token, n). */
static PyObject *event_args(const void *p)
{
	const struct semc_event *ev = p;

	return Py_BuildValue("(iiNNKKk)", (int)ev->type, ev->error, str_from(ev->message),
			     ev->name != NULL ? str_from(ev->name) : Py_NewRef(Py_None),
			     (unsigned long long)ev->permit_id, (unsigned long long)ev->token,
			     (unsigned long)ev->n);
}

/* A connection event: on_event(type, error, message, name, permit_id, token, n). */
void event_cb(struct semc *c, const struct semc_event *ev, void *arg)
{
	struct hctx *ctx = arg;

	(void)c;
	cb_deliver(ctx, &ctx->on_event, event_args, ev);
}

/* A watch event's arguments: (tuple of its fields,). */
static PyObject *watch_args(const void *p)
{
	const struct semc_watch_event *ev = p;

	return Py_BuildValue("((KNisKkKKKNNNkkkLkkkkNK))",
		(unsigned long long)ev->watch, str_from(ev->name), (int)ev->kind,
		ev->kind_name != NULL ? ev->kind_name : "unknown",
		(unsigned long long)ev->time_ms, (unsigned long)ev->n,
		(unsigned long long)ev->permit_id, (unsigned long long)ev->token,
		(unsigned long long)ev->request_id, str_from(ev->principal),
		str_from(ev->client_name), str_from(ev->host), (unsigned long)ev->pid,
		(unsigned long)ev->holders, (unsigned long)ev->waiters,
		(long long)ev->available, (unsigned long)ev->limit, (unsigned long)ev->rate,
		(unsigned long)ev->rate_period_ms, (unsigned long)ev->burst,
		str_from(ev->reason), (unsigned long long)ev->revision);
}

/* A watch's event: fn(tuple of its fields). */
void watch_cb(struct semc *c, const struct semc_watch_event *ev, void *arg)
{
	struct pywatch *w = arg;

	(void)c;
	cb_deliver(w->ctx, &w->fn, watch_args, ev);
}

/* A new pycall for fn, on the context's list (GIL held). */
struct pycall *pycall_new(struct hctx *ctx, PyObject *fn, int kind)
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
void pycall_drop(struct pycall *pc)
{
	pycall_unlink(pc);
	Py_DECREF(pc->fn);
	PyMem_RawFree(pc);
}
