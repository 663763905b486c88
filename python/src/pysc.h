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

/* values.c */
PyObject *str_from(const char *s);
PyObject *error_make(int code, const char *message, const char *op, const char *name);
PyObject *error_raise(int code, const char *message, const char *op, const char *name);
PyObject *error_last(int code, const char *op, const char *name);
int int_range(PyObject *o, long long lo, unsigned long long hi, unsigned long long *uout,
		     long long *sout);
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
PyObject *mode_name(enum semc_mode m);
bool dset(PyObject *d, const char *key, PyObject *v);
PyObject *holder_to_py(const struct semc_holder *h);
PyObject *waiter_to_py(const struct semc_waiter *w);
PyObject *list_of(const void *arr, size_t n, size_t size, PyObject *(*one)(const void *));
PyObject *holder_one(const void *p);
PyObject *waiter_one(const void *p);
PyObject *info_to_py(const struct semc_info *in);
PyObject *summary_one(const void *p);
PyObject *named_grant_one(const void *p);
PyObject *multi_to_py(const struct semc_multi_grant *m);
PyObject *hold_one(const void *p);
PyObject *place_one(const void *p);
PyObject *node_one(const void *p);
PyObject *cluster_to_py(const struct semc_cluster *cl);
PyObject *result_value(const struct semc_result *r, int kind);

/* ctx.c */
void ctx_put(struct hctx *ctx, bool gil);
void *reaper_main(void *arg);
void ctx_release(struct hctx *ctx);
struct hctx *handle_enter(HandleObject *h);
void handle_leave(struct hctx *ctx);
void handle_close(struct hctx *ctx);
bool call_end(struct hctx *ctx, int r, const char *op, const char *name);
PyObject *call_none(struct hctx *ctx, int r, const char *op, const char *name);
bool cb_enter(struct hctx *ctx, PyGILState_STATE *st);
void cb_leave(struct hctx *ctx, PyGILState_STATE st);
void cb_unraisable(PyObject *fn);
void pycall_unlink(struct pycall *pc);
void done_cb(struct semc *c, const struct semc_result *r, void *arg);
void event_cb(struct semc *c, const struct semc_event *ev, void *arg);
void watch_cb(struct semc *c, const struct semc_watch_event *ev, void *arg);
struct pycall *pycall_new(struct hctx *ctx, PyObject *fn, int kind);
void pycall_drop(struct pycall *pc);

/* ops.c */
PyObject *h_down(HandleObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *h_up(HandleObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *h_create(HandleObject *self, PyObject *args);
PyObject *h_delete(HandleObject *self, PyObject *args);
PyObject *h_set_limit(HandleObject *self, PyObject *args);
PyObject *h_set_rate(HandleObject *self, PyObject *args);
PyObject *h_cancel(HandleObject *self, PyObject *args);
PyObject *h_info(HandleObject *self, PyObject *args);
PyObject *h_list(HandleObject *self, PyObject *args);
PyObject *h_validate(HandleObject *self, PyObject *args);
PyObject *stats_to_py(const struct semc_stats *st);
PyObject *h_stats(HandleObject *self, PyObject *unused);
PyObject *h_ping(HandleObject *self, PyObject *unused);
PyObject *h_release(HandleObject *self, PyObject *args);
PyObject *h_detach(HandleObject *self, PyObject *unused);
int wants_parse(PyObject *seq, struct semc_want *wv, size_t *n);
PyObject *h_down_multi(HandleObject *self, PyObject *args);
PyObject *h_renew(HandleObject *self, PyObject *args);
PyObject *h_holds(HandleObject *self, PyObject *args);
PyObject *h_where(HandleObject *self, PyObject *args);
PyObject *h_cluster_status(HandleObject *self, PyObject *unused);
PyObject *h_watch(HandleObject *self, PyObject *args);
PyObject *h_unwatch(HandleObject *self, PyObject *args);

#pragma GCC visibility pop

#endif
