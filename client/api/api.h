/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/api.h - what the API files share: the generic call (op.c)
 * that every operation makes, and the checks of their arguments.
 */
#ifndef SEMC_API_H
#define SEMC_API_H

#include <string.h>

#include "client/engine/engine.h"

/*
 * The generic call. Every operation fills its own request message (a
 * Semd__Create, a Semd__Down, ...) and names what its success replies with
 * in a struct semc_op_reply; semc_op_call() does the rest: it puts the
 * message into a Request (semc_op_request()), sends it and waits
 * (semc_call()), checks the reply's body and copies the result to the
 * caller's out-parameter (semc_op_finish()). A new operation is its
 * message and, when its reply carries something new, one semc_op_reply.
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
int semc_lease_check(struct semc *c, uint32_t lease_ms);
void semc_op_request(Semd__Request *rq, ProtobufCMessage *op);
int semc_op_finish(int r, Semd__Reply *rp, const struct semc_op_reply *how, void *out);

/* Reject names the daemon would reject anyway, before a round trip. */
static inline int semc_name_check(const char *name)
{
	size_t len;

	if (name == NULL)
		return semc_fail(SEMC_E_ARG, "no semaphore name");
	len = strlen(name);
	if (len == 0 || len > 255)
		return semc_fail(SEMC_E_INVALID, "a name is 1 to 255 bytes long");
	return 0;
}

/* Check a name and an operation's options (NULL: what says so). */
static inline int semc_args_check(const char *name, const void *opts, const char *what)
{
	int r;

	if ((r = semc_name_check(name)) != 0)
		return r;
	if (opts == NULL) {
		/* a constant: the analyzer must see that opts is not used */
		semc_fail(SEMC_E_ARG, "%s", what);
		return SEMC_E_ARG;
	}
	return 0;
}

/* Clear an out-parameter before a call (NULL out: none). */
static inline void semc_op_clear(const struct semc_op_reply *how, void *out)
{
	void *none = NULL;

	if (out == NULL)
		return;
	if (how->convert != NULL)
		memcpy(out, &none, sizeof none);	/* out points to a result pointer */
	else if (how->copy != NULL)
		how->copy(NULL, out);
}

/* Send an operation's message, wait extra_ms (< 0: forever) more than the
 * handle's timeout for the reply and copy its result to out. */
static inline int semc_op_call(struct semc *c, ProtobufCMessage *op, int64_t extra_ms,
			       const struct semc_op_reply *how, void *out)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Reply *rp;
	int r;

	semc_op_clear(how, out);
	semc_op_request(&rq, op);
	r = semc_call(c, &rq, extra_ms, &rp);
	return semc_op_finish(r, rp, how, out);
}

/* The same for an operation on a semaphore: its name is checked first. */
static inline int semc_op_call_named(struct semc *c, const char *name, ProtobufCMessage *op,
				     const struct semc_op_reply *how, void *out)
{
	int r;

	semc_op_clear(how, out);
	if ((r = semc_name_check(name)) != 0)
		return r;
	return semc_op_call(c, op, 0, how, out);
}

/* Send an operation's message; fn gets the outcome. Returns the request id. */
static inline int64_t semc_op_async(struct semc *c, ProtobufCMessage *op, semc_done_fn fn,
				    void *arg)
{
	Semd__Request rq = SEMD__REQUEST__INIT;

	semc_op_request(&rq, op);
	return semc_call_async(c, &rq, fn, arg);
}

/* The same for an operation on a semaphore. */
static inline int64_t semc_op_async_named(struct semc *c, const char *name, ProtobufCMessage *op,
					  semc_done_fn fn, void *arg)
{
	int r;

	if ((r = semc_name_check(name)) != 0)
		return r;
	return semc_op_async(c, op, fn, arg);
}

#endif
