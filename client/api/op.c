/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/op.c - the generic call every operation makes (api.h says
 * how): the operation's message put into a Request, sent and waited for
 * (or left to its callback), the reply's body checked and its result
 * copied out; and the checks of names and leases made before a request
 * goes.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client/api/api.h"

const struct semc_op_reply semc_reply_none = { SEMD__REPLY__BODY__NOT_SET, NULL, NULL };

/* Reject names the daemon would reject anyway, before a round trip. */
int semc_name_check(const char *name)
{
	size_t len;

	if (name == NULL)
		return semc_fail(SEMC_E_ARG, "no semaphore name");
	len = strlen(name);
	if (len == 0 || len > 255)
		return semc_fail(SEMC_E_INVALID, "a name is 1 to 255 bytes long");
	return 0;
}

/* Refuse a detached lease longer than the daemon grants, before it is sent:
 * the daemon would cut it to its max-lease, and the hold would end before
 * its holder expects (semc_max_lease()). */
int semc_lease_check(struct semc *c, uint32_t lease_ms)
{
	uint32_t max = lease_ms > 0 ? semc_max_lease(c) : 0;

	if (max == 0 || lease_ms <= max)
		return 0;
	semc_fail(SEMC_E_INVALID, "a lease of %" PRIu32 " ms is more than the server's "
		  "max-lease (%" PRIu32 " ms)", lease_ms, max);
	return SEMC_E_INVALID;
}

/* Check a name and an operation's options (NULL: what says so). */
int semc_args_check(const char *name, const void *opts, const char *what)
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

/* Put an operation's message into rq: the member of Request's oneof whose
 * type is the message's (each operation has a message type of its own). */
static void request_set(Semd__Request *rq, ProtobufCMessage *op)
{
	const ProtobufCMessageDescriptor *d = &semd__request__descriptor;
	unsigned i;

	for (i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];

		if (f->type == PROTOBUF_C_TYPE_MESSAGE && f->descriptor == op->descriptor &&
		    (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0) {
			void *member = op;

			rq->op_case = (Semd__Request__OpCase)f->id;
			/* the member is a pointer to op's type: protobuf-c's
			 * own layout, as its packer reads it */
			memcpy((char *)rq + f->offset, &member, sizeof member);
			return;
		}
	}
	abort();	/* cannot happen: every operation's message is in the oneof */
}

/* Clear an out-parameter before a call (NULL out: none). */
void semc_op_clear(const struct semc_op_reply *how, void *out)
{
	void *none = NULL;

	if (out == NULL)
		return;
	if (how->convert != NULL)
		memcpy(out, &none, sizeof none);	/* out points to a result pointer */
	else if (how->copy != NULL)
		how->copy(NULL, out);
}

/* Finish a call that returned r with reply rp: check the body, copy the
 * result to out, free rp. */
int semc_op_finish(int r, Semd__Reply *rp, const struct semc_op_reply *how, void *out)
{
	void *res;

	if (r == 0 && how->body != SEMD__REPLY__BODY__NOT_SET && rp->body_case != how->body)
		r = semc_fail(SEMC_E_PROTOCOL, "reply without the expected body");
	if (r == 0 && out != NULL && how->copy != NULL)
		how->copy(rp, out);
	if (r == 0 && out != NULL && how->convert != NULL) {
		if ((res = semc_convert(how->convert, rp)) == NULL)
			r = semc_fail(SEMC_E_NOMEM, NULL);
		else
			memcpy(out, &res, sizeof res);
	}
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	return r;
}

/* Send an operation's message, wait extra_ms (< 0: forever) more than the
 * handle's timeout for the reply and copy its result to out. */
int semc_op_call(struct semc *c, ProtobufCMessage *op, int64_t extra_ms,
		   const struct semc_op_reply *how, void *out)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Reply *rp;
	int r;

	semc_op_clear(how, out);
	request_set(&rq, op);
	r = semc_call(c, &rq, extra_ms, &rp);
	return semc_op_finish(r, rp, how, out);
}

/* The same for an operation on a semaphore: its name is checked first. */
int semc_op_call_named(struct semc *c, const char *name, ProtobufCMessage *op,
			 const struct semc_op_reply *how, void *out)
{
	int r;

	semc_op_clear(how, out);
	if ((r = semc_name_check(name)) != 0)
		return r;
	return semc_op_call(c, op, 0, how, out);
}

/* Send an operation's message; fn gets the outcome. Returns the request id. */
int64_t semc_op_async(struct semc *c, ProtobufCMessage *op, semc_done_fn fn, void *arg)
{
	Semd__Request rq = SEMD__REQUEST__INIT;

	request_set(&rq, op);
	return semc_call_async(c, &rq, fn, arg);
}

/* The same for an operation on a semaphore. */
int64_t semc_op_async_named(struct semc *c, const char *name, ProtobufCMessage *op,
			      semc_done_fn fn, void *arg)
{
	int r;

	if ((r = semc_name_check(name)) != 0)
		return r;
	return semc_op_async(c, op, fn, arg);
}
