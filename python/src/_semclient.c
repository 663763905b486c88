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
#include "pysc.h"

static PyTypeObject Handle_Type;

/* --- Handle: construction and settings ------------------------------------ */

static PyObject *Handle_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "address", "client_name", "lease_ms", "timeout_ms", "reconnect",
				  "keepalive_thread", "tls", "tls_ca", "tls_cert", "tls_key",
				  "on_event", "parent_session", "parent_link", NULL };
	const char *address = NULL, *name = NULL, *ca = NULL, *cert = NULL, *key = NULL;
	uint32_t lease_ms = 0;
	uint64_t parent = 0, link = 0;
	PyObject *parent_obj = NULL;
	int timeout_ms = 10000, reconnect = 1, keepalive = 1, tls = 0;
	PyObject *on_event = NULL;
	struct hctx *ctx;
	HandleObject *h;
	int r = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O&O&O&O&pppO&O&O&O&OO&:Handle", kwlist,
					 conv_ostr, &address, conv_ostr, &name, conv_u32, &lease_ms,
					 conv_int, &timeout_ms, &reconnect, &keepalive, &tls,
					 conv_ostr, &ca, conv_ostr, &cert, conv_ostr, &key,
					 conv_ocallable, &on_event, &parent_obj, conv_u64, &link))
		return NULL;
	/* parent_session None (the default) keeps $SEMD_SESSION's */
	if (parent_obj == Py_None)
		parent_obj = NULL;
	if (parent_obj != NULL && !conv_u64(parent_obj, &parent))
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
	if (parent_obj != NULL)
		semc_set_parent(ctx->c, parent, link);
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

	if ((ctx = handle_enter_args(self, args, "|O&:connect", conv_int, &ms)) == NULL)
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
	uint64_t link;
	PyObject *v;
	int r;

	(void)unused;
	if ((ctx = handle_enter(self)) == NULL)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	r = semc_session(ctx->c, &s);
	link = semc_session_link(ctx->c);
	Py_END_ALLOW_THREADS
	/* strings valid until the next reconnect: copied under the GIL,
	 * before anything else runs on the handle from this thread */
	v = Py_BuildValue("(KkNNNiK)", (unsigned long long)s.session, (unsigned long)s.lease_ms,
			  str_from(s.principal), str_from(s.server), PyBool_FromLong(s.resumed), r,
			  (unsigned long long)link);
	handle_leave(ctx);
	return v;
}

/* The struct semc of a quick getter, which needs no call slot: NULL
 * once freed. */
static struct semc *handle_semc(HandleObject *self)
{
	return self->ctx == NULL || self->ctx->released ? NULL : self->ctx->c;
}

static PyObject *h_address(HandleObject *self, PyObject *unused)
{
	struct semc *c = handle_semc(self);

	(void)unused;
	if (c == NULL)
		return error_raise(PYSEMC_E_CLOSED, "the client is closed", "address", NULL);
	return str_from(semc_address(c));
}

static PyObject *h_get_closed(HandleObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(self->ctx == NULL || self->ctx->closed);
}

/* --- Handle: asynchronous operations and the event loop --------------------
 * Each returns the request id; fn(error, message, value) runs once, from
 * process() or a thread blocked in a call on the handle. */

/* The pycall of an asynchronous request's callback fn (none when NULL)
 * through ctx, entered: false with the exception raised, and ctx left. */
static bool async_call(struct hctx *ctx, PyObject *fn, int kind, struct pycall **pc)
{
	*pc = NULL;
	if (fn != NULL && (*pc = pycall_new(ctx, fn, kind)) == NULL) {
		handle_leave(ctx);
		return false;
	}
	return true;
}

/* Finish an async submission that returned id for pycall pc (or none). */
static PyObject *async_done(struct hctx *ctx, struct pycall *pc, int64_t id, const char *op,
			    const char *name)
{
	if (id < 0) {
		error_last((int)id, op, name);
		if (pc != NULL)
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

	if ((ctx = handle_enter_fast(self, "down_async", args, nargs, 6, convs, outs)) == NULL ||
	    !async_call(ctx, fn, CALL_DOWN, &pc))
		return NULL;
	BLOCKING(ctx, id = semc_down_ex_async(ctx->c, name, &o, done_cb, pc));
	return async_done(ctx, pc, id, "acquire", name);
}

static PyObject *h_down_policy_async(HandleObject *self, PyObject *args)
{
	struct semc_down_opts o = { 0 };
	struct semc_down_policy p = { 0 };
	const char *name;
	PyObject *fn;
	struct pycall *pc;
	struct hctx *ctx;
	int64_t id;

	if ((ctx = handle_enter_args(self, args, "O&O&O&O&O&O&O&O&O&:down_policy_async", conv_str,
				     &name, conv_u32, &o.n, conv_i64, &o.timeout_ms, conv_u32,
				     &o.lease_ms, conv_u32, &o.create_limit, conv_int, &p.priority,
				     conv_ostr, &p.group, conv_ostr, &p.replace, conv_callable,
				     &fn)) == NULL ||
	    !async_call(ctx, fn, CALL_DOWN, &pc))
		return NULL;
	BLOCKING(ctx, id = semc_down_policy_async(ctx->c, name, &o, &p, done_cb, pc));
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

	if ((ctx = handle_enter_fast(self, "up_async", args, nargs, 4, convs, outs)) == NULL ||
	    !async_call(ctx, fn, CALL_UP, &pc))
		return NULL;
	BLOCKING(ctx, id = semc_up_async(ctx->c, name, n, permit_id, done_cb, pc));
	return async_done(ctx, pc, id, "release", name);
}

static PyObject *h_down_multi_async(HandleObject *self, PyObject *args)
{
	struct semc_down_policy p = { 0 };
	struct wants w;
	int64_t timeout_ms, id;
	uint32_t lease_ms;
	struct pycall *pc;
	struct hctx *ctx;
	PyObject *fn;

	if ((ctx = handle_enter_args(self, args, "O&O&O&O&|O&:down_multi_async", conv_wants, &w,
				     conv_i64, &timeout_ms, conv_u32, &lease_ms,
				     conv_callable, &fn, conv_int, &p.priority)) == NULL ||
	    !async_call(ctx, fn, CALL_MULTI, &pc))
		return NULL;
	if (p.priority != 0)
		BLOCKING(ctx, id = semc_down_multi_policy_async(ctx->c, w.v, w.n, timeout_ms,
								lease_ms, &p, done_cb, pc));
	else
		BLOCKING(ctx, id = semc_down_multi_async(ctx->c, w.v, w.n, timeout_ms, lease_ms,
							 done_cb, pc));
	return async_done(ctx, pc, id, "acquire", w.v[0].name);
}

static PyObject *h_info_async(HandleObject *self, PyObject *args)
{
	const char *name;
	PyObject *fn;
	struct pycall *pc;
	struct hctx *ctx;
	int64_t id;

	if ((ctx = handle_enter_args(self, args, "O&O&:info_async", conv_str, &name,
				     conv_callable, &fn)) == NULL ||
	    !async_call(ctx, fn, CALL_INFO, &pc))
		return NULL;
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

	if ((ctx = handle_enter_args(self, args, "O&O&O&:validate_async", conv_str, &name,
				     conv_u64, &token, conv_callable, &fn)) == NULL ||
	    !async_call(ctx, fn, CALL_VALID, &pc))
		return NULL;
	BLOCKING(ctx, id = semc_validate_async(ctx->c, name, token, done_cb, pc));
	return async_done(ctx, pc, id, "validate", name);
}

static PyObject *h_ping_async(HandleObject *self, PyObject *args)
{
	PyObject *fn;
	struct pycall *pc;
	struct hctx *ctx;
	int64_t id;

	if ((ctx = handle_enter_args(self, args, "O&:ping_async", conv_callable, &fn)) == NULL ||
	    !async_call(ctx, fn, CALL_NONE, &pc))
		return NULL;
	BLOCKING(ctx, id = semc_ping_async(ctx->c, done_cb, pc));
	return async_done(ctx, pc, id, "ping", NULL);
}

/* Cancel a pending down without waiting; fn (or None) gets the answer. */
static PyObject *h_cancel_async(HandleObject *self, PyObject *args)
{
	PyObject *fn = NULL;
	struct pycall *pc;
	struct hctx *ctx;
	uint64_t rid;
	int64_t id;

	if ((ctx = handle_enter_args(self, args, "O&|O&:cancel_async", conv_u64, &rid,
				     conv_ocallable, &fn)) == NULL ||
	    !async_call(ctx, fn, CALL_NONE, &pc))
		return NULL;
	BLOCKING(ctx, id = semc_cancel_async(ctx->c, rid, pc != NULL ? done_cb : NULL, pc));
	return async_done(ctx, pc, id, "cancel", NULL);
}

/* Wait up to ms (> 0) for the socket, or less until the library's next duty. */
static void wait_for_work(struct semc *c, int ms)
{
	struct pollfd p = { .fd = semc_fd(c), .events = POLLIN };
	int t = semc_timeout(c);

	if (t < 0 || t > ms)
		t = ms;
	if (p.fd < 0 && t > 100)
		t = 100;	/* disconnected: semc_process() retries */
	if (p.fd >= 0) {
		poll(&p, 1, t);
	} else if (t > 0) {
		struct timespec ts = { t / 1000, (long)(t % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
}

/* semc_process() through ctx (entered), after waiting up to ms for work
 * when ms > 0; leaves ctx. */
static PyObject *process_after(struct hctx *ctx, int ms)
{
	int n;

	Py_BEGIN_ALLOW_THREADS
	if (ms > 0)
		wait_for_work(ctx->c, ms);
	n = semc_process(ctx->c);
	Py_END_ALLOW_THREADS
	handle_leave(ctx);
	return PyLong_FromLong(n);
}

/* Read and dispatch what is there, without blocking: semc_process(). */
static PyObject *h_process(HandleObject *self, PyObject *unused)
{
	struct hctx *ctx = handle_enter(self);

	(void)unused;
	return ctx != NULL ? process_after(ctx, 0) : NULL;
}

/* Wait up to timeout_ms for the socket (or the library's next duty), then
 * semc_process(): a thread's own loop, for a client without the library's
 * keepalive thread. */
static PyObject *h_poll(HandleObject *self, PyObject *args)
{
	struct hctx *ctx;
	int ms;

	if ((ctx = handle_enter_args(self, args, "O&:poll", conv_int, &ms)) == NULL)
		return NULL;
	return process_after(ctx, ms);
}

/* The quick getters take the library's lock only briefly, which no thread
 * holds while it waits for the GIL: no need to release it. */
static PyObject *h_fd(HandleObject *self, PyObject *unused)
{
	struct semc *c = handle_semc(self);

	(void)unused;
	return PyLong_FromLong(c != NULL ? semc_fd(c) : -1);
}

static PyObject *h_timeout(HandleObject *self, PyObject *unused)
{
	struct semc *c = handle_semc(self);

	(void)unused;
	return PyLong_FromLong(c != NULL ? semc_timeout(c) : -1);
}

static PyObject *h_lease_left(HandleObject *self, PyObject *unused)
{
	struct semc *c = handle_semc(self);

	(void)unused;
	return PyLong_FromLongLong(c != NULL ? semc_lease_left(c) : -1);
}

static PyObject *h_pending(HandleObject *self, PyObject *unused)
{
	struct semc *c = handle_semc(self);

	(void)unused;
	return PyLong_FromSize_t(c != NULL ? semc_pending(c) : 0);
}

/* Where a resume of the watch id starts: the revision after its last
 * event given to its callback, or after the daemon's last one when it
 * began (0: no such watch). */
static PyObject *h_watch_next_revision(HandleObject *self, PyObject *args)
{
	struct semc *c;
	uint64_t id;

	if (!PyArg_ParseTuple(args, "O&:watch_next_revision", conv_u64, &id))
		return NULL;
	c = handle_semc(self);
	return PyLong_FromUnsignedLongLong(c != NULL ? semc_watch_next_revision(c, id) : 0);
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
	  "session() -> (id, lease_ms, principal, server, resumed, error, link)." },
	{ "address", (PyCFunction)h_address, METH_NOARGS, "address() -> the address in use." },
	{ "down", (PyCFunction)(void (*)(void))h_down, METH_FASTCALL,
	  "down(name, n, timeout_ms, lease_ms, create_limit) -> (permit_id, token, n, waited_us)." },
	{ "down_policy", (PyCFunction)h_down_policy, METH_VARARGS,
	  "down_policy(name, n, timeout_ms, lease_ms, create_limit, priority, group, replace) "
	  "-> (permit_id, token, n, waited_us)." },
	{ "up", (PyCFunction)(void (*)(void))h_up, METH_FASTCALL,
	  "up(name, n, permit_id) -> permits released." },
	{ "create", (PyCFunction)h_create, METH_VARARGS,
	  "create(name, limit, mode, if_not_exists, initial, initial_set, rate, period_ms, "
	  "burst, has_rate[, max_waiters, share, ((group, weight), ...)])." },
	{ "set_queue", (PyCFunction)h_set_queue, METH_VARARGS, "set_queue(name, max_waiters)." },
	{ "backup", (PyCFunction)h_backup, METH_VARARGS,
	  "backup(fd) -> (bytes, wall_ms, sha256): an online backup written to fd." },
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
	  "down_multi(((name, n, limit), ...), timeout_ms, lease_ms[, priority]) -> "
	  "([(name, permit_id, token, n)], waited_us)." },
	{ "renew", (PyCFunction)h_renew, METH_VARARGS,
	  "renew(name, permit_id, lease_ms) -> (renewed, expires_ms)." },
	{ "holds", (PyCFunction)h_holds, METH_VARARGS,
	  "holds(principal, after_permit, max) -> ([(name, holder)], total, next_permit)." },
	{ "where", (PyCFunction)h_where, METH_VARARGS,
	  "where(request_id) -> ([place], since_ms)." },
	{ "cluster_status", (PyCFunction)h_cluster_status, METH_NOARGS,
	  "cluster_status() -> dict." },
	{ "watch", (PyCFunction)h_watch, METH_VARARGS, "watch(name, prefix, fn[, from_revision]) -> watch id." },
	{ "unwatch", (PyCFunction)h_unwatch, METH_VARARGS, "unwatch(id)." },
	{ "watch_next_revision", (PyCFunction)h_watch_next_revision, METH_VARARGS,
	  "watch_next_revision(id) -> the revision a resume of the watch starts at (0: none)." },
	{ "down_async", (PyCFunction)(void (*)(void))h_down_async, METH_FASTCALL,
	  "down_async(name, n, timeout_ms, lease_ms, create_limit, fn) -> request id." },
	{ "down_policy_async", (PyCFunction)h_down_policy_async, METH_VARARGS,
	  "down_policy_async(name, n, timeout_ms, lease_ms, create_limit, priority, group, "
	  "replace, fn) -> request id." },
	{ "up_async", (PyCFunction)(void (*)(void))h_up_async, METH_FASTCALL,
	  "up_async(name, n, permit_id, fn) -> request id." },
	{ "down_multi_async", (PyCFunction)h_down_multi_async, METH_VARARGS,
	  "down_multi_async(wants, timeout_ms, lease_ms, fn[, priority]) -> request id." },
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
		  "tls_key=None, on_event=None, parent_session=None, parent_link=0): one libsemclient connection (struct semc). "
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
		{ "E_QUEUE_FULL", SEMC_E_QUEUE_FULL }, { "E_REPLACED", SEMC_E_REPLACED },
		{ "E_COMPACTED", SEMC_E_COMPACTED },
		{ "E_CONNECT", SEMC_E_CONNECT }, { "E_DISCONNECTED", SEMC_E_DISCONNECTED },
		{ "E_HOLD_LOST", SEMC_E_HOLD_LOST }, { "E_NO_REPLY", SEMC_E_NO_REPLY },
		{ "E_NOMEM", SEMC_E_NOMEM }, { "E_ADDRESS", SEMC_E_ADDRESS },
		{ "E_NOT_SUPPORTED", SEMC_E_NOT_SUPPORTED }, { "E_TLS", SEMC_E_TLS },
		{ "E_SYSTEM", SEMC_E_SYSTEM }, { "E_ARG", SEMC_E_ARG },
		{ "E_CLOSED", PYSEMC_E_CLOSED },
		{ "MODE_OWNED", SEMC_MODE_OWNED }, { "MODE_SIGNAL", SEMC_MODE_SIGNAL },
		{ "MODE_RATE", SEMC_MODE_RATE },
		{ "SHARE_NONE", SEMC_SHARE_NONE }, { "SHARE_PRINCIPAL", SEMC_SHARE_PRINCIPAL },
		{ "SHARE_KEY", SEMC_SHARE_KEY },
		{ "PRIO_MIN", SEMC_PRIO_MIN }, { "PRIO_MAX", SEMC_PRIO_MAX },
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

