/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_memo.c - memos: the answer to a down that leaves nothing
 * behind to find a retry by (a signal-mode or rate grant, a waiting down's
 * failure), kept by its session under the request's id for a down retried
 * after a resume; the newest max-waiters-per-session of them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* Forget a memo. */
void memo_free(struct sm *sm, struct sm_session *s, struct sm_memo *m)
{
	req_unindex(sm, &m->req);
	list_del_init(&m->entry);
	s->nmemos--;
	sm_dealloc(sm, m, sizeof *m);
}

/*
 * Keep the answer to a down for its retry (indexed like its waiter was);
 * the oldest goes when the session keeps max-waiters-per-session of them.
 */
void memo_add(struct sm *sm, struct sm_session *s, uint64_t request_id,
    int code, uint32_t n, uint64_t token)
{
	struct sm_memo *m;

	if (request_id == 0 || req_find(sm, s->id, request_id) != NULL)
		return;
	if (s->nmemos >= sm->cfg.max_waiters_per_session && s->nmemos > 0)
		memo_free(sm, s, list_first_entry(&s->memos, struct sm_memo,
		    entry));
	if ((m = sm_alloc(sm, sizeof *m)) == NULL)
		return;		/* a retry then counts as a new down */
	m->code = code;
	m->n = n;
	m->token = token;
	list_add_tail(&m->entry, &s->memos);
	s->nmemos++;
	req_index(sm, &m->req, s->id, request_id, REQ_MEMO);
}

/*
 * Answer a retried down from its memo, which is kept: the answer may be lost
 * again (the client gone before it came), and the next retry must hear the
 * same, not run as a new down (one answered REPLACED or TIMEOUT would then
 * wait again, and could be granted).
 */
void memo_answer(struct sm *sm, struct sm_client *c, const struct sm_memo *m)
{
	uint64_t id = m->req.request_id;

	if (m->code == SEMD__CODE__OK)
		reply_grant(sm, c, id, 0, m->token, m->n, 0);
	else
		reply_err(sm, c, id, m->code, "%s (answered before this retry)",
		    protobuf_c_enum_descriptor_get_value(&semd__code__descriptor,
		    m->code) != NULL ? protobuf_c_enum_descriptor_get_value(
		    &semd__code__descriptor, m->code)->name : "error");
}

