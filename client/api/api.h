/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/api.h - what the API files share: the generic call (op.c)
 * that every operation makes, and the checks of their arguments.
 */
#ifndef SEMC_API_H
#define SEMC_API_H

#include "client/engine/engine.h"

/*
 * The generic call. Every operation fills its own request message (a
 * Semd__Create, a Semd__Down, ...) and names what its success replies with
 * an semc_op_reply; semc_op_call() does the rest: it puts the message into a Request
 * (request_set()), sends it and waits (semc_call()), checks the reply's body
 * and copies the result to the caller's out-parameter (semc_op_finish()). A new
 * operation is its message and, when its reply carries something new, one
 * semc_op_reply.
 */
struct semc_op_reply {
	Semd__Reply__BodyCase body;	/* a success's body (NOT_SET: not checked) */
	/* A result the caller frees, made by semc_convert(): out is a pointer
	 * to its pointer, set to NULL first; a NULL result is SEMC_E_NOMEM. */
	const struct semc_conv *convert;
	/* A plain value: copy(NULL, out) clears out first, copy(rp, out) fills
	 * it from a successful reply. */
	void (*copy)(const Semd__Reply *rp, void *out);
};

/* A success that brings nothing back. */
extern const struct semc_op_reply semc_reply_none;

/* op.c */
int semc_name_check(const char *name);
int semc_lease_check(struct semc *c, uint32_t lease_ms);
int semc_args_check(const char *name, const void *opts, const char *what);
void semc_op_clear(const struct semc_op_reply *how, void *out);
int semc_op_finish(int r, Semd__Reply *rp, const struct semc_op_reply *how, void *out);
int semc_op_call(struct semc *c, ProtobufCMessage *op, int64_t extra_ms,
		 const struct semc_op_reply *how, void *out);
int semc_op_call_named(struct semc *c, const char *name, ProtobufCMessage *op,
		       const struct semc_op_reply *how, void *out);
int64_t semc_op_async(struct semc *c, ProtobufCMessage *op, semc_done_fn fn, void *arg);
int64_t semc_op_async_named(struct semc *c, const char *name, ProtobufCMessage *op,
			    semc_done_fn fn, void *arg);

#endif
