/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/op.c - the generic call every operation makes (api.h has its
 * short steps inline, so that an operation's constant struct semc_op_reply
 * folds into them): the operation's message put into a Request, the
 * reply's body checked and its result copied out; and the checks of names
 * and leases made before a request goes.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client/api/api.h"

const struct semc_op_reply semc_reply_none = { SEMD__REPLY__BODY__NOT_SET, NULL, NULL };

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

/* Put an operation's message into rq: the member of Request's oneof whose
 * type is the message's (each operation has a message type of its own). */
void semc_op_request(Semd__Request *rq, ProtobufCMessage *op)
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
