/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_session.c - sessions (leases, memos, hold-lost notices, parking of
 * absent waiters), clients, and making and freeing the state machine.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* --- sessions ------------------------------------------------------------ */

/* Forget a memo. */
static void memo_free(struct sm *sm, struct sm_session *s, struct sm_memo *m)
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

/* Answer a retried down from its memo, which is then forgotten. */
void memo_answer(struct sm *sm, struct sm_client *c, struct sm_memo *m)
{
	uint64_t id = m->req.request_id;

	if (m->code == SEMD__CODE__OK)
		reply_grant(sm, c, id, 0, m->token, m->n, 0);
	else
		reply_err(sm, c, id, m->code, "%s (answered before this retry)",
		    protobuf_c_enum_descriptor_get_value(&semd__code__descriptor,
		    m->code) != NULL ? protobuf_c_enum_descriptor_get_value(
		    &semd__code__descriptor, m->code)->name : "error");
	memo_free(sm, c->session, m);
}

/*
 * Tell a session at once that it lost a hold (a notice, id 0, with the
 * hold): code says why (CANCELLED, SESSION_EXPIRED, UNAVAILABLE).
 */
void notice_lost(struct sm *sm, const struct sm_hold *h, int code,
    const char *why)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__HoldLost hl = SEMD__HOLD_LOST__INIT;
	char msg[384];
	int op = sm->cur_op;

	if (h->session == NULL || h->session->client == NULL)
		return;
	snprintf(msg, sizeof msg, "hold on %s (permit %" PRIu64 ") lost: %s",
	    h->sem->name, h->permit_id, why);
	hl.name = (char *)h->sem->name;
	hl.permit_id = h->permit_id;
	hl.token = h->token;
	hl.n = h->n;
	r.code = code;
	r.message = msg;
	r.body_case = SEMD__REPLY__BODY_HOLD_LOST;
	r.hold_lost = &hl;
	sm->cur_op = 0;
	reply_send(sm, h->session->client, &r);
	sm->cur_op = op;
}

/*
 * Park (away) or unpark (back) the session's waiters whose grant would
 * reach nobody while it is away (wait_parks_away).
 */
void session_park(struct sm_session *s, bool away)
{
	struct list_head *pos, *prev;
	struct sm_wait *w;
	unsigned int i;

	/*
	 * Newest first: changing one may grant waiters queued after it, and
	 * this session's later waiters have been done by then (parked, so
	 * passed over; unparked, so their grant frees only entries already
	 * visited), so the walk never meets a freed entry.
	 */
	for (pos = s->waiters.prev; pos != &s->waiters; pos = prev) {
		prev = pos->prev;
		w = list_entry(pos, struct sm_wait, session_entry);
		for (i = 0; i < w->nm; i++)
			if (wait_parks_away(w, w->m[i].sem))
				sema_park(&w->m[i].sem->sem, &w->m[i].w, away);
	}
}

/* Free a session: it has no client; its waiters go, its holds go back. */
static void session_free(struct sm *sm, struct sm_session *s)
{
	struct sm_hold *h;
	struct sm_wait *w;
	struct sm_sem *sem;
	struct sm_memo *m;

	/* Cancelling may grant later waiters of this session: loop on head. */
	while (!list_empty(&s->waiters)) {
		w = list_first_entry(&s->waiters, struct sm_wait, session_entry);
		wait_cancel(sm, w, SEMD__CODE__OK, NULL, NULL);
		sm->ctr.cancels_disconnect++;
	}
	while (!list_empty(&s->holds)) {
		h = list_first_entry(&s->holds, struct sm_hold, owner_entry);
		sem = h->sem;
		hold_release(sm, h, true, "its session ended");
		sem_maybe_free(sm, sem);
	}
	while (!list_empty(&s->memos)) {
		m = list_first_entry(&s->memos, struct sm_memo, entry);
		memo_free(sm, s, m);
	}
	timer_disarm(sm, &s->expiry);
	hmap_remove(&sm->sessions, &s->node);
	principal_count(s->ident->pr, SM_LIMIT_SESSIONS, -1);
	ident_put(sm, s->ident);
	sm_dealloc(sm, s, sizeof *s);
	sm->ctr.sessions--;
}

/* (Re)arm a session's lease for lease_ms after the last request heard. */
void session_arm(struct sm *sm, struct sm_session *s)
{
	timer_disarm(sm, &s->expiry);
	if (s->lease_ms > 0 &&
	    timer_arm(sm, &s->expiry, T_SESSION, s->heard + s->lease_ms) != 0)
		s->lease_ms = 0;	/* out of memory: a lease it cannot have */
}

/*
 * The session's lease ran out (nothing heard for lease_ms). A client still
 * connected (silent: a partition) is told what it lost and its connection
 * is closed; then the session ends.
 */
void session_expire(struct sm *sm, struct sm_session *s, uint64_t now)
{
	struct sm_client *c = s->client;
	struct list_head *pos;
	struct sm_wait *w;
	char why[128];

	sm->ctr.sessions_expired++;
	if (c != NULL) {
		snprintf(why, sizeof why, "session %" PRIu64 " expired: nothing "
		    "heard for %" PRIu64 " ms", s->id, now - s->heard);
		list_for_each(pos, &s->holds)
			notice_lost(sm, list_entry(pos, struct sm_hold,
			    owner_entry), SEMD__CODE__SESSION_EXPIRED, why);
		while (!list_empty(&s->waiters)) {
			w = list_first_entry(&s->waiters, struct sm_wait,
			    session_entry);
			wait_cancel(sm, w, SEMD__CODE__SESSION_EXPIRED, why, NULL);
		}
		reply_err(sm, c, 0, SEMD__CODE__SESSION_EXPIRED, "%s", why);
		s->client = NULL;
		c->session = NULL;
		if (c->conn != NULL && sm->out.close != NULL)
			sm->out.close(sm->out.ctx, c->conn);
	}
	session_free(sm, s);
}

/*
 * The connection of a session closed. Death (down_killable's fatal signal)
 * when nothing can be in between: no lease, a local client that did not
 * Detach, or a shutdown; its waiters are cancelled and its holds go back.
 * Otherwise the session lingers until its lease runs out, counted from
 * the last request heard, with its waiters in their places.
 */
static void session_detach(struct sm *sm, struct sm_session *s, bool death,
    uint64_t now)
{
	s->client = NULL;
	if (death || s->lease_ms == 0 || sm->shutting_down ||
	    s->heard + s->lease_ms <= now) {
		session_free(sm, s);
		return;
	}
	session_park(s, true);
}

/* --- lifecycle --------------------------------------------------------- */

/* Default configuration. */
void sm_config_defaults(struct sm_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->default_limit = 1;
	cfg->max_semaphores = 1000000;
	cfg->max_sessions = 100000;
	cfg->max_waiters_per_session = 1024;
	cfg->max_holds_per_session = 4096;
	cfg->max_lease_ms = 24u * 3600u * 1000u;
	cfg->max_reply = 1u << 20;
	cfg->server = "semd";
}


/* Make a state machine. */
struct sm *sm_new(const struct sm_config *cfg, const struct sm_out *out,
    uint64_t now_ms)
{
	struct sm *sm = calloc(1, sizeof *sm);

	if (sm == NULL)
		return NULL;
	sm->cfg = *cfg;
	if (out != NULL)
		sm->out = *out;
	sm->start_ms = now_ms;
	sm->token_base = cfg->wall_ms * 1000;
	sm->wall_off = (int64_t)(cfg->wall_ms - now_ms);
	INIT_LIST_HEAD(&sm->clients);
	INIT_LIST_HEAD(&sm->detached);
	INIT_LIST_HEAD(&sm->offers);
	INIT_LIST_HEAD(&sm->watches);
	INIT_LIST_HEAD(&sm->rate_touched);
	ordidx_init(&sm->byname, offsetof(struct sm_sem, name));
	if (hmap_init(&sm->names, 64) != 0 || hmap_init(&sm->sessions, 64) != 0 ||
	    hmap_init(&sm->permits, 64) != 0 || hmap_init(&sm->tokens, 64) != 0 ||
	    hmap_init(&sm->requests, 64) != 0 || hmap_init(&sm->principals, 64) != 0 ||
	    hmap_init(&sm->clients_by_id, 64) != 0)
		goto fail;
	return sm;
fail:
	sm_free(sm);
	return NULL;
}

/* Free everything, answering nobody. */
void sm_free(struct sm *sm)
{
	struct sm_client *c;
	struct hmap_iter it;
	struct hnode *n;
	struct sm_sem *sem;
	struct sm_session *s;

	if (sm == NULL)
		return;
	sm->out.reply = NULL;
	sm->shutting_down = true;
	sm->freeing = true;
	while (!list_empty(&sm->clients)) {
		c = list_first_entry(&sm->clients, struct sm_client, entry);
		sm_client_close(sm, c, sm->start_ms);
	}
	if (sm->sessions.tab[0] != NULL) {
		hmap_iter_init(&it, &sm->sessions);
		while ((n = hmap_iter_next(&it)) != NULL) {
			s = container_of(n, struct sm_session, node);
			session_free(sm, s);
		}
	}
	while (!list_empty(&sm->detached))
		hold_release(sm, list_first_entry(&sm->detached, struct sm_hold,
		    owner_entry), false, NULL);
	/* All at once rather than one name at a time in sem_free(). */
	ordidx_destroy(&sm->byname);
	if (sm->names.tab[0] != NULL) {
		hmap_iter_init(&it, &sm->names);
		while ((n = hmap_iter_next(&it)) != NULL) {
			sem = container_of(n, struct sm_sem, node);
			sem_free(sm, sem);
		}
	}
	hmap_destroy(&sm->names);
	hmap_destroy(&sm->sessions);
	hmap_destroy(&sm->permits);
	hmap_destroy(&sm->tokens);
	hmap_destroy(&sm->requests);
	hmap_destroy(&sm->principals);
	hmap_destroy(&sm->clients_by_id);
	sm_cache_drain(&sm->hold_cache);
	sm_cache_drain(&sm->wait_cache);
	for (size_t k = 0; k < SM_SEM_CLASSES; k++)
		sm_cache_drain(&sm->sem_cache[k]);
	free(sm->heap);
	free(sm->dl_queue);
	free(sm->dl_check);
	free(sm);
}

/* Send r to every bound client; a node's own word, nothing in the state changes. */
void sm_tell_all(struct sm *sm, const Semd__Reply *r)
{
	struct list_head *pos;
	struct sm_client *c;

	list_for_each(pos, &sm->clients) {
		c = list_entry(pos, struct sm_client, entry);
		if (c->conn != NULL && sm->out.reply != NULL)
			sm->out.reply(sm->out.ctx, c->conn, r);
	}
}

/* The last leader the log named, and where clients reach it. */
uint64_t sm_leader(const struct sm *sm, char *addr, size_t len)
{
	if (len > 0)
		snprintf(addr, len, "%s", sm->leader_addr);
	return sm->leader_id;
}

/* The state's clock: the time of the last call. */
uint64_t sm_now(const struct sm *sm)
{
	return sm->now;
}

/* The node's hooks of from, for to (a restored state replacing from). */
void sm_take_hooks(struct sm *to, const struct sm *from)
{
	to->visible = from->visible;
	to->visible_arg = from->visible_arg;
}

/* Install the List visibility hook (NULL: every name is shown). */
void sm_set_visible(struct sm *sm, sm_visible_fn fn, void *arg)
{
	sm->visible = fn;
	sm->visible_arg = arg;
}

/* Apply new limits; existing objects over a lowered limit stay. */
void sm_reconfigure(struct sm *sm, const struct sm_config *cfg)
{
	uint8_t key[16];
	uint64_t wall = sm->cfg.wall_ms;
	const char *server = sm->cfg.server;
	uint64_t (*alloc_count)(void) = sm->cfg.alloc_count;

	memcpy(key, sm->cfg.hash_key, sizeof key);
	sm->cfg = *cfg;
	memcpy(sm->cfg.hash_key, key, sizeof key);	/* tables depend on it */
	sm->cfg.wall_ms = wall;
	sm->cfg.server = server;
	sm->cfg.alloc_count = alloc_count;
}

/* The client with this id, or NULL. */
struct sm_client *sm_client_find(const struct sm *sm, uint64_t id)
{
	return ID_LOOKUP(&sm->clients_by_id, id_hash(sm, id, 2),
	    struct sm_client, node, id, id);
}

/* A new connection. */
struct sm_client *sm_client_open(struct sm *sm, uint64_t id, void *conn,
    const char *principal, const uint8_t secret[SM_SECRET_LEN],
    unsigned int flags, uint64_t now_ms)
{
	struct sm_client *c;

	if (id == 0 || sm_client_find(sm, id) != NULL)
		return NULL;
	if ((c = sm_alloc(sm, sizeof *c)) == NULL)
		return NULL;
	c->id = id;
	c->pr = principal_get(sm, principal);
	if (c->pr == NULL) {
		sm_dealloc(sm, c, sizeof *c);
		return NULL;
	}
	c->conn = conn;
	INIT_LIST_HEAD(&c->watches);
	c->local = (flags & SM_CLIENT_LOCAL) != 0;
	memcpy(c->secret, secret, SM_SECRET_LEN);
	list_add_tail(&c->entry, &sm->clients);
	hmap_insert(&sm->clients_by_id, &c->node, id_hash(sm, id, 2));
	sm->ctr.clients++;
	return c;
}

/* Bind a client to this node's connection (NULL: unbind). */
void sm_client_bind(struct sm_client *c, void *conn)
{
	c->conn = conn;
}

/* A client's id. */
uint64_t sm_client_id(const struct sm_client *c)
{
	return c->id;
}

/* State time as wall time from now on: wall_ms is the wall clock at sm->now. */
void sm_set_wall(struct sm *sm, uint64_t wall_ms)
{
	sm->wall_off = (int64_t)(wall_ms - sm->now);
}

/* The connection is gone. */
void sm_client_close(struct sm *sm, struct sm_client *c, uint64_t now_ms)
{
	if (c == NULL)
		return;
	sm->now = now_ms;
	sm->cur_op = 0;
	c->conn = NULL;
	watch_client_gone(sm, c);
	if (c->session != NULL)
		session_detach(sm, c->session, c->local && !c->detach, now_ms);
	c->session = NULL;
	list_del_init(&c->entry);
	hmap_remove(&sm->clients_by_id, &c->node);
	principal_put(sm, c->pr);
	sm_dealloc(sm, c, sizeof *c);
	sm->ctr.clients--;
	sm_settle(sm);
}

/* Session id of a client. */
uint64_t sm_client_session(const struct sm_client *c)
{
	return c->session ? c->session->id : 0;
}

/* Undecodable input from a client. */
void sm_protocol_error(struct sm *sm, struct sm_client *c, const char *why)
{
	sm->cur_op = 0;
	reply_err(sm, c, 0, SEMD__CODE__PROTOCOL_ERROR, "%s", why);
}
