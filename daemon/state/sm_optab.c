/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_optab.c - the operations, described once: for each, its
 * name (Stats, metrics, logs), what the access layer checks before the
 * request reaches the state machine (state.h: the right, on which name,
 * the verb of a refusal), its handler and whether it is a read - or the
 * node's (Cluster), which the state never runs. The table calls nothing:
 * the dispatch (sm_ops.c) calls through it, Stats and the shell read it.
 */
#include <stddef.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/*
 * Every operation once: its name (Stats, metrics, logs), what the access
 * layer checks for it (state.h: the right, on which name, the verb of a
 * refusal) and its handler (after Hello; Hello itself is dispatched apart,
 * as it makes the session the others need).
 *
 * A row: the op case, its name, the right it needs, the verb of a refusal,
 * which name the right is checked on (NO_NAME, ALL_NAMES, EACH_NAME, or
 * FIELD(message, field), FIELD_SAID(..., what is said after the name)),
 * its handler, and its kind: a read is answered from the state without
 * changing any of it, so that a leader may answer it off the log (sm_read);
 * a node op is answered by the node that gets it (the shell's feed), never
 * by the state, and counted nowhere here (its case is past SM_NOPS).
 */
/* What an op is: a change of the state, a read of it, or the node's. */
enum optab_kind { OPTAB_WRITES, OPTAB_READS, OPTAB_NODE };

#define OP(CASE, NAME, RIGHT, VERB, ON, FN, KIND) \
	[SEMD__REQUEST__OP_##CASE] = { { NAME, SM_RIGHT_##RIGHT, VERB, ON }, FN, \
	    KIND }
#define FIELD(M, F)		SM_TARGET_FIELD, offsetof(Semd__##M, F), ""
#define FIELD_SAID(M, F, AFTER)	SM_TARGET_FIELD, offsetof(Semd__##M, F), AFTER
#define NO_NAME			SM_TARGET_NONE, 0, ""
#define ALL_NAMES		SM_TARGET_ALL, 0, ""
#define EACH_NAME		SM_TARGET_EACH, 0, ""
#define WRITES			OPTAB_WRITES
#define READS			OPTAB_READS
#define NODE			OPTAB_NODE
#define SM_OPTAB_ROWS		(SEMD__REQUEST__OP_CLUSTER + 1)
static const struct {
	struct sm_op	op;
	sm_op_fn	*fn;
	unsigned char	kind;
} sm_ops[SM_OPTAB_ROWS] = {
	OP(HELLO, "hello", NONE, "", NO_NAME, NULL, WRITES),
	OP(CREATE, "create", CREATE, "create", FIELD(Create, name), op_create,
	    WRITES),
	OP(DOWN, "down", USE, "use", FIELD(Down, name), op_down, WRITES),
	OP(UP, "up", USE, "use", FIELD(Up, name), op_up, WRITES),
	OP(CANCEL, "cancel", NONE, "", NO_NAME, op_cancel, WRITES),
	OP(INFO, "info", INSPECT, "inspect", FIELD(Info, name), op_info,
	    READS),
	/*
	 * Checked on its prefix (a protected prefix is refused outright); the
	 * names listed are then filtered one by one (sm_set_visible).
	 */
	OP(LIST, "list", INSPECT, "inspect", FIELD_SAID(List, prefix, " (list)"),
	    op_list, READS),
	OP(DELETE, "delete", MANAGE, "delete", FIELD(Delete, name), op_delete,
	    WRITES),
	OP(SET_LIMIT, "set_limit", MANAGE, "set the limit of",
	    FIELD(SetLimit, name), op_set_limit, WRITES),
	OP(PING, "ping", NONE, "", NO_NAME, op_ping, READS),
	OP(STATS, "stats", INSPECT, "inspect", ALL_NAMES, op_stats, READS),
	OP(VALIDATE, "validate", USE, "use", FIELD(Validate, name), op_validate,
	    READS),
	OP(RELEASE, "release", MANAGE, "release holds on",
	    FIELD(Release, name), op_release, WRITES),
	OP(DETACH, "detach", NONE, "", NO_NAME, op_detach, WRITES),
	OP(SET_RATE, "set_rate", MANAGE, "set the rate of",
	    FIELD(SetRate, name), op_set_rate, WRITES),
	OP(DOWN_MULTI, "down_multi", USE, "use", EACH_NAME, op_down_multi,
	    WRITES),
	/* A name, or a prefix checked like List's and filtered the same way. */
	OP(WATCH, "watch", INSPECT, "watch", FIELD(Watch, name), op_watch,
	    WRITES),
	OP(RENEW, "renew", USE, "use", FIELD(Renew, name), op_renew, WRITES),
	/* Another principal's: the state machine wants admin on every name. */
	OP(HOLDS, "holds", INSPECT, "inspect", ALL_NAMES, op_holds, READS),
	OP(WHERE, "where", NONE, "", NO_NAME, op_where, READS),
	OP(SET_QUEUE, "set_queue", MANAGE, "set the queue of",
	    FIELD(SetQueue, name), op_set_queue, WRITES),
	/* The whole state: the state machine wants admin on every name. */
	OP(BACKUP, "backup", MANAGE, "back up", ALL_NAMES, op_backup, WRITES),
	/*
	 * The cluster's status needs inspect on every name (a change of it,
	 * admin: the access layer asks for more), before Hello too.
	 */
	OP(CLUSTER, "cluster", INSPECT, "inspect the cluster", ALL_NAMES, NULL,
	    NODE),
};
#undef OP
#undef FIELD
#undef FIELD_SAID
#undef NO_NAME
#undef ALL_NAMES
#undef EACH_NAME
#undef WRITES
#undef READS
#undef NODE

/* The table entry of an op case, or NULL for an unknown one. */
const struct sm_op *sm_op(int op_case)
{
	if (op_case <= 0 || op_case >= SM_OPTAB_ROWS ||
	    sm_ops[op_case].op.name == NULL)
		return NULL;
	return &sm_ops[op_case].op;
}

/* The label of the replies counted under op_case with code (state.h). */
const char *sm_reply_op(int op_case, int code)
{
	if (op_case != 0)
		return sm_op(op_case) != NULL ? sm_op(op_case)->name : NULL;
	return code == SEMD__CODE__PROTOCOL_ERROR || code == SEMD__CODE__INVALID_ARGUMENT ?
	    "invalid_request" : "notice";
}

/*
 * protoc-c puts the members of a oneof in one union: whatever the case, the
 * op's message is the pointer at the place of the first (on every request:
 * protobuf-c's field lookup by number cost more than the rest of the check).
 */
_Static_assert(SM_NOPS <= SM_OPTAB_ROWS, "every op the state runs has a row");
_Static_assert(offsetof(Semd__Request, down) == offsetof(Semd__Request, hello) &&
    offsetof(Semd__Request, backup) == offsetof(Semd__Request, hello),
    "Request's ops share one union");

/* The name req's right is checked on (its op's field, "", or NULL). */
const char *sm_op_target(const struct sm_op *op, const Semd__Request *req)
{
	const char *msg;

	if (op->target == SM_TARGET_ALL)
		return "";
	if (op->target != SM_TARGET_FIELD || req->op_case == SEMD__REQUEST__OP__NOT_SET)
		return NULL;
	/* The op's message: the oneof member of req for its case. */
	memcpy(&msg, (const char *)req + offsetof(Semd__Request, hello), sizeof msg);
	if (msg == NULL)
		return NULL;
	return *(const char *const *)(const void *)(msg + op->name_off);
}

/* Is op_case a read (state.h)? */
bool sm_op_is_read(int op_case)
{
	return sm_op(op_case) != NULL && sm_ops[op_case].kind == OPTAB_READS;
}

/* Is op_case the node's (state.h)? Asked of every request: no sm_op(). */
bool sm_op_is_node(int op_case)
{
	return op_case > 0 && op_case < SM_OPTAB_ROWS &&
	    sm_ops[op_case].kind == OPTAB_NODE;
}

/* The handler of an op case (NULL: Hello's, or a row without one). */
sm_op_fn *sm_op_handler(int op_case)
{
	return op_case > 0 && op_case < SM_OPTAB_ROWS ? sm_ops[op_case].fn : NULL;
}
