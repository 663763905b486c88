/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_reply.c - building replies: errors, grants, releases,
 * histograms of the waits and holds they end.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* --- replies --------------------------------------------------------------- */

/* Count a duration in a histogram: bucket ceil(log2(ms)), capped. */
void hist_add(struct sm_hist *h, uint64_t ms)
{
	unsigned int i = ms <= 1 ? 0 : 64 - (unsigned int)__builtin_clzll(ms - 1);

	h->bucket[i < SM_HIST_BUCKETS - 1 ? i : SM_HIST_BUCKETS - 1]++;
	h->sum_ms += ms;
	h->count++;
}

/*
 * Hand a reply to the I/O layer if the client is still connected. It is
 * counted (errors, replies by op and code: in the snapshot), but for a read
 * off the log (sm_read), which one node answers alone.
 */
void reply_send(struct sm *sm, struct sm_client *c, Semd__Reply *r)
{
	if (r->code != SEMD__CODE__OK && !sm->reading)
		sm->ctr.errors++;
	if ((unsigned int)r->code < SM_NCODES && !sm->reading)
		sm->ctr.replies[sm->cur_op][r->code]++;
	if (c != NULL && c->conn != NULL && sm->out.reply != NULL)
		sm->out.reply(sm->out.ctx, c->conn, r);
}

/* Tell the operator's log what c's request did (the note effect). */
void sm_note(struct sm *sm, struct sm_client *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (sm->out.note == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	sm->out.note(sm->out.ctx, c != NULL ? c->conn : NULL, msg);
}

/* Send an error reply with a formatted message. */
void
reply_err(struct sm *sm, struct sm_client *c, uint64_t id, int code,
    const char *fmt, ...)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	r.id = id;
	r.code = code;
	r.message = msg;
	reply_send(sm, c, &r);
}

/* Send a bare OK. */
void reply_ok(struct sm *sm, struct sm_client *c, uint64_t id)
{
	Semd__Reply r = SEMD__REPLY__INIT;

	r.id = id;
	reply_send(sm, c, &r);
}

/* Send a Grant. */
void reply_grant(struct sm *sm, struct sm_client *c, uint64_t id,
    uint64_t permit_id, uint64_t token, uint32_t n, uint64_t waited_ms)
{
	Semd__Grant g = SEMD__GRANT__INIT;

	g.permit_id = permit_id;
	g.token = token;
	g.n = n;
	g.waited_us = waited_ms * 1000;
	REPLY_BODY(sm, c, id, GRANT, grant, &g);
}

/* Send Released{n}. */
void reply_released(struct sm *sm, struct sm_client *c, uint64_t id,
    uint32_t n)
{
	Semd__Released rel = SEMD__RELEASED__INIT;

	rel.n = n;
	REPLY_BODY(sm, c, id, RELEASED, released, &rel);
}

/*
 * A Holder of a reply: h as clients see it, but for its name (Info's is
 * the name asked about). It expires with its lease when detached, with its
 * session's while that lingers, else not (0).
 */
void reply_holder(const struct sm *sm, Semd__Holder *e,
    const struct sm_hold *h)
{
	semd__holder__init(e);
	e->permit_id = h->permit_id;
	e->token = h->token;
	e->n = h->n;
	e->client_name = h->ident->client_name;
	e->host = h->ident->host;
	e->pid = h->ident->pid;
	e->principal = h->ident->pr->name;
	e->since_ms = h->since_wall;
	e->detached = h->session == NULL;
	/* A leader's lease has no timer: it ends a lease after heard. */
	if (h->session == NULL)
		e->expires_ms = sm_wall(sm, h->expiry.when);
	else if (h->session->client != NULL)
		e->expires_ms = 0;
	else if (sm->leader_leases)
		e->expires_ms = sm_wall(sm, h->session->heard +
		    h->session->lease_ms);
	else
		e->expires_ms = sm_wall(sm, h->session->expiry.when);
}

/* The entries a reply page lists: as many as asked (0: dflt), at most cap. */
size_t page_max(size_t asked, size_t dflt, size_t cap)
{
	if (asked == 0)
		asked = dflt;
	return asked < cap ? asked : cap;
}

/*
 * The entries of a reply page (Info, List, Holds): an array of n pointers
 * (n >= 1, as page_max() gives), each to its own zeroed entry of size
 * bytes, all in one block that one free() releases; NULL, answered
 * RESOURCE_EXHAUSTED, when out of memory.
 */
void *reply_page(struct sm *sm, struct sm_client *c, uint64_t id, size_t n,
    size_t size)
{
	size_t align = _Alignof(max_align_t);
	size_t head = (n * sizeof(void *) + align - 1) / align * align, i;
	void **v = NULL;

	if (n > 0 && size <= (SIZE_MAX - head) / n)
		v = calloc(1, head + n * size);
	if (v == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		return NULL;
	}
	for (i = 0; i < n; i++)
		v[i] = (char *)v + head + i * size;
	return v;
}
