/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_ops.c - the operations a request can ask for: their table and
 * dispatch, Hello, the checks of names and limits they share, the small
 * ones (Ping, Detach, Stats); and time (deadlines, shutdown). The others
 * live by family: sm_ops_name.c, sm_ops_permit.c, sm_multi.c, sm_rate.c,
 * sm_watch.c, sm_holds.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* --- operations ---------------------------------------------------------- */

/* Hello: start or resume a session. */
static int op_hello(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Hello *h, uint64_t now)
{
	Semd__HelloReply hr = SEMD__HELLO_REPLY__INIT;
	struct sm_session *s;
	uint32_t lease;
	bool back = false;

	if (h->version != SM_PROTO_VERSION) {
		reply_err(sm, c, id, SEMD__CODE__PROTOCOL_ERROR,
		    "unsupported protocol version %u (this daemon speaks %u)",
		    h->version, SM_PROTO_VERSION);
		return SM_CLOSE;
	}
	if (c->hello) {
		reply_err(sm, c, id, SEMD__CODE__PROTOCOL_ERROR,
		    "hello was already received on this connection");
		return SM_OK;
	}
	lease = h->lease_ms;
	if (lease > sm->cfg.max_lease_ms)
		lease = sm->cfg.max_lease_ms;
	if (h->resume_session != 0) {
		s = session_find(sm, h->resume_session);
		if (s == NULL || h->resume_secret.len != SM_SECRET_LEN ||
		    memcmp(h->resume_secret.data, s->secret, SM_SECRET_LEN) != 0) {
			reply_err(sm, c, id, SEMD__CODE__SESSION_EXPIRED,
			    "session %" PRIu64 " does not exist (expired, or a wrong secret)",
			    h->resume_session);
			return SM_OK;
		}
		if (s->ident->pr != c->pr) {
			reply_err(sm, c, id, SEMD__CODE__PERMISSION_DENIED,
			    "session %" PRIu64 " belongs to %s, not %s", s->id,
			    s->ident->pr->name, c->pr->name);
			return SM_OK;
		}
		if (s->client != NULL) {
			/* Taken over: the old connection loses the session. */
			s->client->session = NULL;
		} else {
			back = true;	/* its parked waiters, after the reply */
		}
		s->client = c;
		s->lease_ms = lease;
		s->heard = now;
		session_arm(sm, s);
		hr.resumed = true;
	} else {
		if (sm->ctr.sessions >= sm->cfg.max_sessions) {
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "too many sessions (max-sessions %u)",
			    sm->cfg.max_sessions);
			return SM_CLOSE;
		}
		if (!principal_room(sm, c, id, c->pr, SM_LIMIT_SESSIONS, 1))
			return SM_CLOSE;
		s = sm_alloc(sm, sizeof *s);
		if (s == NULL || (s->ident = ident_new(sm, c->pr, h)) == NULL) {
			sm_dealloc(sm, s, sizeof *s);
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "out of memory");
			return SM_CLOSE;
		}
		s->id = ++sm->next_session;
		memcpy(s->secret, c->secret, SM_SECRET_LEN);
		s->client = c;
		s->lease_ms = lease;
		s->heard = now;
		s->expiry.idx = SIZE_MAX;
		INIT_LIST_HEAD(&s->holds);
		INIT_LIST_HEAD(&s->waiters);
		INIT_LIST_HEAD(&s->memos);
		session_arm(sm, s);
		hmap_insert(&sm->sessions, &s->node, pair_hash(sm, s->id, 0));
		principal_count(c->pr, SM_LIMIT_SESSIONS, 1);
		sm->ctr.sessions++;
	}
	c->session = s;
	c->hello = true;
	hr.version = SM_PROTO_VERSION;
	hr.session = s->id;
	hr.secret.data = s->secret;
	hr.secret.len = SM_SECRET_LEN;
	hr.lease_ms = s->lease_ms;
	hr.principal = s->ident->pr->name;
	hr.server = (char *)(sm->cfg.server ? sm->cfg.server : "semd");
	hr.durable = sm->cfg.durable;
	REPLY_BODY(sm, c, id, HELLO, hello, &hr);
	if (back)
		session_park(s, false);	/* grants now go to c, after HelloReply */
	return SM_OK;
}

/* Check a name field of len bytes; answers INVALID_ARGUMENT when bad. */
bool sem_name_len_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, size_t len)
{
	if (len == 0) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "a semaphore name is required");
		return false;
	}
	if (len > SM_NAME_MAX) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "semaphore name is %zu bytes long (max %d)", len, SM_NAME_MAX);
		return false;
	}
	if (!sm_name_valid(name, len)) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "semaphore name is not valid UTF-8, or has control, bidirectional or zero-width characters");
		return false;
	}
	return true;
}

/* Check a name field; answers INVALID_ARGUMENT when bad. */
bool sem_name_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name)
{
	return sem_name_len_ok(sm, c, id, name, strlen(name));
}

/* Find a semaphore or answer NOT_FOUND. */
struct sm_sem *sem_need(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name)
{
	size_t len = strlen(name);
	struct sm_sem *sem;

	if ((sem = client_sem(sm, c, name, len)) != NULL)
		return sem;
	if (!sem_name_len_ok(sm, c, id, name, len))
		return NULL;
	sem = sem_find_len(sm, name, len);
	if (sem == NULL)
		reply_err(sm, c, id, SEMD__CODE__NOT_FOUND,
		    "no semaphore named %s", name);
	else
		client_sem_set(sm, c, sem);
	return sem;
}

/*
 * Find a semaphore c may manage (its creator, administrators), to do what
 * to it; or answer NOT_FOUND or PERMISSION_DENIED.
 */
struct sm_sem *sem_need_manager(struct sm *sm, struct sm_client *c,
    uint64_t id, const char *name, const char *what)
{
	struct sm_sem *sem = sem_need(sm, c, id, name);

	if (sem != NULL && !sem_manager(sm, c, sem)) {
		reply_err(sm, c, id, SEMD__CODE__PERMISSION_DENIED,
		    "%s may not %s %s (only its creator and administrators may)",
		    c->pr->name, what, sem->name);
		return NULL;
	}
	return sem;
}

/* How messages name a mode: "a rate-only semaphore". */
const char *sem_mode_name(int mode)
{
	return mode == SEMD__MODE__SIGNAL ? "signal-mode" :
	    mode == SEMD__MODE__RATE ? "rate-only" : "owned";
}

/*
 * Refuse a request that does not apply to a semaphore of mode: when sem is
 * one, answer code with "NAME is a MODE semaphore: why" and return true.
 */
bool sem_mode_refused(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_sem *sem, int mode, int code, const char *why)
{
	if (sem->mode != mode)
		return false;
	reply_err(sm, c, id, code, "%s is a %s semaphore: %s", sem->name,
	    sem_mode_name(mode), why);
	return true;
}

/*
 * Make a name: created explicitly, owned by and counted against pr, or
 * auto-created by a down (pr NULL). NULL, answered RESOURCE_EXHAUSTED, when
 * max-semaphores is reached, pr is at its quota or memory runs out.
 */
struct sm_sem *sem_create(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t limit, int mode,
    const struct sm_principal *pr)
{
	struct sm_sem *sem;

	if (sm->ctr.semaphores >= sm->cfg.max_semaphores) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "too many semaphores (max-semaphores %u)",
		    sm->cfg.max_semaphores);
		return NULL;
	}
	if (pr != NULL && !principal_room(sm, c, id, pr, SM_LIMIT_SEMAPHORES, 1))
		return NULL;
	if ((sem = sem_new(sm, name, limit, mode, pr == NULL, sm->now)) == NULL)
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
	return sem;
}

/*
 * Auto-create a name for a down: owned, with the limit the down asked for
 * (0: the default limit). NULL when answered.
 */
struct sm_sem *sem_auto_create(struct sm *sm, struct sm_client *c,
    uint64_t id, const char *name, uint32_t limit)
{
	if (limit != 0 && !limit_ok(sm, c, id, limit))
		return NULL;
	return sem_create(sm, c, id, name, limit ? limit :
	    sm->cfg.default_limit, SEMD__MODE__OWNED, NULL);
}

/* Check a limit; answers INVALID_ARGUMENT when bad. */
bool limit_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    uint32_t limit)
{
	if (limit >= 1 && limit <= SM_LIMIT_MAX)
		return true;
	reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
	    "limit %u is out of range (1..%u)", limit, SM_LIMIT_MAX);
	return false;
}

/* Ping: echo the payload. */
static void op_ping(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	const Semd__Ping *p = req->ping;
	uint64_t id = req->id;
	Semd__Pong pong = SEMD__PONG__INIT;

	pong.payload = p->payload;
	REPLY_BODY(sm, c, id, PONG, pong, &pong);
}

/* Detach: this session outlives the connection's close by its lease. */
static void op_detach(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	c->detach = true;
	reply_ok(sm, c, req->id);
}

/* Stats: the counters by name (sm_stats.c). */
static void op_stats_req(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	op_stats(sm, c, req->id);
}

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
	    "inspect", "" }, op_stats_req },
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

/* Dispatch one request. */
int sm_request(struct sm *sm, struct sm_client *c, const Semd__Request *req,
    const struct sm_caller *who, uint64_t now)
{
	uint64_t id = req->id;
	int r = SM_OK;

	sm->now = now;
	sm->who = who;
	sm->cur_op = (unsigned)req->op_case < SM_NOPS ? (int)req->op_case : 0;
	sm->ctr.ops[sm->cur_op]++;
	if (req->op_case == SEMD__REQUEST__OP_HELLO) {
		r = op_hello(sm, c, id, req->hello, now);
		sm_settle(sm);
		sm->who = NULL;
		return r;
	}
	if (!c->hello) {
		reply_err(sm, c, id, SEMD__CODE__PROTOCOL_ERROR,
		    "the first request must be hello");
		return SM_CLOSE;
	}
	if (c->session == NULL) {
		reply_err(sm, c, id, SEMD__CODE__SESSION_EXPIRED,
		    "this connection's session ended (expired, or resumed by another connection)");
		return SM_CLOSE;
	}
	c->session->heard = now;	/* the lease counts from here */
	if (sm_op(req->op_case) != NULL)
		sm_ops[req->op_case].fn(sm, c, req, now);
	else
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "unknown or missing operation");
	sm_settle(sm);
	sm->who = NULL;
	return r;
}

/* --- time ------------------------------------------------------------------- */

/* Earliest deadline. */
uint64_t sm_next_deadline(const struct sm *sm)
{
	return sm->heap_n ? sm->heap[0]->when : UINT64_MAX;
}

/* Fire every timer due at or before now. */
void sm_tick(struct sm *sm, uint64_t now)
{
	sm_tick_from(sm, sm->now, now);
}

/*
 * Fire every timer due at or before now, each at its own time (the state's
 * clock is moved to it, never below base, the clock of the last call): a
 * token due at 1003 is taken at 1003 even when the tick comes at 2000, and
 * what it lets through is settled then, before the next timer.
 */
void sm_tick_from(struct sm *sm, uint64_t base, uint64_t now)
{
	struct sm_timer *t;
	struct sm_wait *w;
	struct sm_hold *h;
	struct sm_sem *sem;
	struct sm_session *ss;
	unsigned int nm;
	char why[320];

	sm->cur_op = 0;		/* what fires answers no request */
	while (sm->heap_n > 0 && sm->heap[0]->when <= now) {
		t = sm->heap[0];
		sm->now = t->when > base ? t->when : base;
		timer_disarm(sm, t);
		switch (t->kind) {
		case T_WAIT:
			w = container_of(t, struct sm_wait, deadline);
			nm = w->nm;
			if (nm == 1)
				snprintf(why, sizeof why,
				    "no permit of %s within %" PRIu64 " ms",
				    w->m[0].sem->name, now - w->since_ms);
			else
				snprintf(why, sizeof why,
				    "not all of %u names (%s, ...) within %" PRIu64 " ms",
				    nm, w->m[0].sem->name, now - w->since_ms);
			sm->ctr.timeouts++;
			wait_cancel(sm, w, SEMD__CODE__TIMEOUT, why, NULL);
			break;
		case T_HOLD:
			h = container_of(t, struct sm_hold, expiry);
			sem = h->sem;
			sm->ctr.leases_expired++;
			hold_release(sm, h, true, "its lease ran out");
			sem_maybe_free(sm, sem);
			break;
		case T_RATE:
			rate_due(sm, t);
			break;
		case T_SESSION:
			ss = container_of(t, struct sm_session, expiry);
			if (ss->heard + ss->lease_ms > now)
				session_arm(sm, ss);	/* heard since it was armed */
			else
				session_expire(sm, ss, now);
			break;
		}
		sm_settle(sm);	/* what the timer let through, in time order */
	}
	sm->now = now;
	sm_settle(sm);
}

/*
 * Shutting down: waiters hear UNAVAILABLE, new waits are refused, and every
 * connected session is told that its holds are lost (the state goes with
 * the process) and that the daemon stops.
 */
void sm_shutdown(struct sm *sm, uint64_t now)
{
	char key[SM_NAME_MAX + 1];
	struct ordidx_iter it;
	struct sm_sem *sem;
	struct sm_member *m;
	struct sm_client *c;
	struct list_head *pos, *hpos;

	sm->now = now;
	sm->shutting_down = true;
	sm->cur_op = 0;
	list_for_each(pos, &sm->clients) {
		c = list_entry(pos, struct sm_client, entry);
		if (c->session != NULL)
			list_for_each(hpos, &c->session->holds)
				notice_lost(sm, list_entry(hpos, struct sm_hold,
				    owner_entry), SEMD__CODE__UNAVAILABLE,
				    "semd is shutting down");
		reply_err(sm, c, 0, SEMD__CODE__UNAVAILABLE, "semd is shutting down");
	}
	/* In name order (not hash order): the same on every replica. */
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL) {
		if (list_empty(&sem->waiters))
			continue;
		memcpy(key, sem->name, (size_t)sem->len + 1);
		while (!list_empty(&sem->waiters)) {
			m = list_entry(sem->waiters.prev, struct sm_member,
			    sem_entry);
			wait_cancel(sm, m->wait, SEMD__CODE__UNAVAILABLE,
			    "semd is shutting down", sem);
		}
		sem_maybe_free(sm, sem);	/* the walk resumes after key */
		ordidx_seek(&sm->byname, &it, key, false);
	}
}
