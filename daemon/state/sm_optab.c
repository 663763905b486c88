/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_optab.c - the operations, described once: for each, its
 * name (Stats, metrics, logs), what the access layer checks before the
 * request reaches the state machine (state.h: the right, on which name,
 * the verb of a refusal) and its handler. The table calls nothing: the
 * dispatch (sm_ops.c) calls through it, Stats and the shell read it.
 */
#include <stddef.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/*
 * Every operation once: its name (Stats, metrics, logs), what the access
 * layer checks for it (state.h: the right, on which name, the verb of a
 * refusal) and its handler (after Hello; Hello itself is dispatched apart,
 * as it makes the session the others need).
 */
#define ON(type, field)	SM_TARGET_FIELD, offsetof(type, field)
#define ON_ALL		SM_TARGET_ALL, 0
#define ON_EACH		SM_TARGET_EACH, 0
#define ON_NONE		SM_TARGET_NONE, 0, "", ""
static const struct {
	struct sm_op	op;
	sm_op_fn	*fn;
} sm_ops[SM_NOPS] = {
	[SEMD__REQUEST__OP_HELLO] = { { "hello", SM_RIGHT_NONE, ON_NONE },
	    NULL },
	[SEMD__REQUEST__OP_CREATE] = { { "create", SM_RIGHT_CREATE,
	    ON(Semd__Create, name), "create", "" }, op_create },
	[SEMD__REQUEST__OP_DOWN] = { { "down", SM_RIGHT_USE,
	    ON(Semd__Down, name), "use", "" }, op_down },
	[SEMD__REQUEST__OP_UP] = { { "up", SM_RIGHT_USE,
	    ON(Semd__Up, name), "use", "" }, op_up },
	[SEMD__REQUEST__OP_CANCEL] = { { "cancel", SM_RIGHT_NONE, ON_NONE },
	    op_cancel },
	[SEMD__REQUEST__OP_INFO] = { { "info", SM_RIGHT_INSPECT,
	    ON(Semd__Info, name), "inspect", "" }, op_info },
	/*
	 * Checked on its prefix (a protected prefix is refused outright); the
	 * names listed are then filtered one by one (sm_set_visible).
	 */
	[SEMD__REQUEST__OP_LIST] = { { "list", SM_RIGHT_INSPECT,
	    ON(Semd__List, prefix), "inspect", " (list)" }, op_list },
	[SEMD__REQUEST__OP_DELETE] = { { "delete", SM_RIGHT_MANAGE,
	    ON(Semd__Delete, name), "delete", "" }, op_delete },
	[SEMD__REQUEST__OP_SET_LIMIT] = { { "set_limit", SM_RIGHT_MANAGE,
	    ON(Semd__SetLimit, name), "set the limit of", "" }, op_set_limit },
	[SEMD__REQUEST__OP_PING] = { { "ping", SM_RIGHT_NONE, ON_NONE },
	    op_ping },
	[SEMD__REQUEST__OP_STATS] = { { "stats", SM_RIGHT_INSPECT, ON_ALL,
	    "inspect", "" }, op_stats },
	[SEMD__REQUEST__OP_VALIDATE] = { { "validate", SM_RIGHT_USE,
	    ON(Semd__Validate, name), "use", "" }, op_validate },
	[SEMD__REQUEST__OP_RELEASE] = { { "release", SM_RIGHT_MANAGE,
	    ON(Semd__Release, name), "release holds on", "" }, op_release },
	[SEMD__REQUEST__OP_DETACH] = { { "detach", SM_RIGHT_NONE, ON_NONE },
	    op_detach },
	[SEMD__REQUEST__OP_SET_RATE] = { { "set_rate", SM_RIGHT_MANAGE,
	    ON(Semd__SetRate, name), "set the rate of", "" }, op_set_rate },
	[SEMD__REQUEST__OP_DOWN_MULTI] = { { "down_multi", SM_RIGHT_USE,
	    ON_EACH, "use", "" }, op_down_multi },
	/* A name, or a prefix checked like List's and filtered the same way. */
	[SEMD__REQUEST__OP_WATCH] = { { "watch", SM_RIGHT_INSPECT,
	    ON(Semd__Watch, name), "watch", "" }, op_watch },
	[SEMD__REQUEST__OP_RENEW] = { { "renew", SM_RIGHT_USE,
	    ON(Semd__Renew, name), "use", "" }, op_renew },
	/* Another principal's: the state machine wants admin on every name. */
	[SEMD__REQUEST__OP_HOLDS] = { { "holds", SM_RIGHT_INSPECT, ON_ALL,
	    "inspect", "" }, op_holds },
	[SEMD__REQUEST__OP_WHERE] = { { "where", SM_RIGHT_NONE, ON_NONE },
	    op_where },
};
#undef ON
#undef ON_ALL
#undef ON_EACH
#undef ON_NONE

/* The table entry of an op case, or NULL for an unknown one. */
const struct sm_op *sm_op(int op_case)
{
	if (op_case <= 0 || op_case >= SM_NOPS || sm_ops[op_case].op.name == NULL)
		return NULL;
	return &sm_ops[op_case].op;
}

/* The name req's right is checked on (its op's field, "", or NULL). */
const char *sm_op_target(const struct sm_op *op, const Semd__Request *req)
{
	const ProtobufCFieldDescriptor *f;
	const char *msg;

	if (op->target == SM_TARGET_ALL)
		return "";
	if (op->target != SM_TARGET_FIELD)
		return NULL;
	/* The op's message: the oneof member of req for its case. */
	f = protobuf_c_message_descriptor_get_field(&semd__request__descriptor,
	    (unsigned int)req->op_case);
	if (f == NULL)
		return NULL;
	memcpy(&msg, (const char *)req + f->offset, sizeof msg);
	if (msg == NULL)
		return NULL;
	return *(const char *const *)(const void *)(msg + op->name_off);
}

/* The handler of an op case (NULL: Hello's, or none). */
sm_op_fn *sm_op_handler(int op_case)
{
	return sm_op(op_case) != NULL ? sm_ops[op_case].fn : NULL;
}
