/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * python/src/pysc.h - what the files of semclient._semclient share: the
 * handle's context (struct hctx), the asynchronous calls' and watches'
 * Python callbacks, and the functions of each file (_semclient.c: the
 * Handle type, its settings, its asynchronous calls and the module;
 * values.c: errors, argument converters and results as Python values;
 * ctx.c: the context's lifetime and the library's callbacks; ops.c: the
 * blocking operations). Hidden: the extension exports only its init.
 */
#ifndef SEMD_PYSC_H
#define SEMD_PYSC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdarg.h>
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
static inline int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *v)
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

#pragma GCC visibility push(hidden)

extern PyObject *error_factory;	/* semclient._errors.from_code */
extern Py_ssize_t live_ctx;	/* contexts not freed yet (GIL), for the leak tests */
extern Py_ssize_t live_calls;	/* pycalls not completed (GIL) */
extern _Thread_local int cb_depth;	/* inside a callback of the library */

/* Run the blocking call `expr` (assigning r) through ctx. */
#define BLOCKING(ctx, expr) do {		\
	Py_BEGIN_ALLOW_THREADS			\
	expr;					\
	Py_END_ALLOW_THREADS			\
} while (0)

typedef int (*conv_fn)(PyObject *, void *);

/* A multi-name acquire's wants (conv_wants). */
struct wants {
	size_t n;
	struct semc_want v[16];
};

/* A name's fair-share weights (conv_weights). */
struct weights {
	size_t n;
	struct semc_weight v[64];
};

/* values.c */
PyObject *str_from(const char *s);
PyObject *error_raise(int code, const char *message, const char *op, const char *name);
PyObject *error_last(int code, const char *op, const char *name);
int conv_u32(PyObject *o, void *out);
int conv_u64(PyObject *o, void *out);
int conv_i64(PyObject *o, void *out);
int conv_int(PyObject *o, void *out);
int conv_str(PyObject *o, void *out);
int conv_ostr(PyObject *o, void *out);
int conv_callable(PyObject *o, void *out);
int conv_ocallable(PyObject *o, void *out);
int args_fast(const char *fname, PyObject *const *args, Py_ssize_t nargs, int n,
		     const conv_fn *convs, void *const *outs);
PyObject *grant_to_py(const struct semc_grant *g);
PyObject *list_of(const void *arr, size_t n, size_t size, PyObject *(*one)(const void *));
PyObject *info_to_py(const struct semc_info *in);
PyObject *summary_one(const void *p);
PyObject *multi_to_py(const struct semc_multi_grant *m);
PyObject *hold_one(const void *p);
PyObject *place_one(const void *p);
PyObject *cluster_to_py(const struct semc_cluster *cl);
PyObject *result_value(const struct semc_result *r, int kind);

/* ctx.c */
void ctx_put(struct hctx *ctx, bool gil);
void ctx_release(struct hctx *ctx);
struct hctx *handle_enter(HandleObject *h);
struct hctx *handle_enter_args(HandleObject *h, PyObject *args, const char *fmt, ...);
struct hctx *handle_enter_fast(HandleObject *h, const char *fname, PyObject *const *args,
			       Py_ssize_t nargs, int n, const conv_fn *convs, void *const *outs);
void handle_leave(struct hctx *ctx);
void handle_close(struct hctx *ctx);
bool call_end(struct hctx *ctx, int r, const char *op, const char *name);
PyObject *call_none(struct hctx *ctx, int r, const char *op, const char *name);
void done_cb(struct semc *c, const struct semc_result *r, void *arg);
void event_cb(struct semc *c, const struct semc_event *ev, void *arg);
void watch_cb(struct semc *c, const struct semc_watch_event *ev, void *arg);
struct pycall *pycall_new(struct hctx *ctx, PyObject *fn, int kind);
void pycall_drop(struct pycall *pc);

/* ops.c: the Handle's blocking operations, by their calling convention
 * (METH_FASTCALL, METH_VARARGS, METH_NOARGS) */
typedef PyObject *meth_fast(HandleObject *self, PyObject *const *args, Py_ssize_t nargs);
typedef PyObject *meth_args(HandleObject *self, PyObject *args);
typedef PyObject *meth_none(HandleObject *self, PyObject *unused);
meth_fast h_down, h_up;
meth_args h_create, h_delete, h_set_limit, h_set_rate, h_cancel, h_info, h_list, h_validate,
	h_release, h_down_multi, h_renew, h_holds, h_where, h_watch, h_unwatch, h_set_queue,
	h_down_policy, h_backup;
meth_none h_stats, h_ping, h_detach, h_cluster_status;
int conv_wants(PyObject *o, void *out);

#pragma GCC visibility pop

#endif
