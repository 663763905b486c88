/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_ops.c - the way in for a request: sm_request() checks
 * that its client has a session (Hello makes it), dispatches through the op
 * table (sm_optab.c) and settles (sm_settle.c); sm_read() answers a read
 * the same way, changing nothing (a leader's read off the log). Beside them
 * the small operations: Hello, Ping, Detach, Watch. The others live by
 * family: sm_ops_name.c (names), sm_down.c (Down), sm_multi.c (DownMulti),
 * sm_ops_permit.c (Up, Release, Cancel, Validate), sm_holds.c (Renew,
 * Holds, Where), sm_stats.c (Stats).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* What a HelloReply says of the daemon, session or not. */
static void hello_daemon(const struct sm *sm, Semd__HelloReply *hr)
{
	hr->version = SM_PROTO_VERSION;
	hr->server = (char *)(sm->cfg.server ? sm->cfg.server : "semd");
	hr->durable = sm->cfg.durable;
	hr->max_lease_ms = sm->cfg.max_lease_ms;
	hr->instance = sm->instance;
	/* The leases' floor is twice a cluster's election timeout. */
	hr->guard_ms = sm->leader_leases ? sm->lease_floor_ms / 2 : 0;
}

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
		family_init(s);
		family_adopt(sm, s, h->parent_session, h->parent_link);
		session_arm(sm, s);
		hmap_insert(&sm->sessions, &s->node, pair_hash(sm, s->id, 0));
		principal_count(c->pr, SM_LIMIT_SESSIONS, 1);
		sm->ctr.sessions++;
	}
	c->session = s;
	c->hello = true;
	hello_daemon(sm, &hr);
	hr.session = s->id;
	hr.secret.data = s->secret;
	hr.secret.len = SM_SECRET_LEN;
	hr.lease_ms = s->lease_ms;
	hr.principal = s->ident->pr->name;
	hr.link = family_link(s);
	REPLY_BODY(sm, c, id, HELLO, hello, &hr);
	if (back)
		session_park(sm, s, false);	/* grants now go to c, after HelloReply */
	return SM_OK;
}

/* Ping: echo the payload. */
void op_ping(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	Semd__Pong pong = SEMD__PONG__INIT;

	pong.payload = req->ping->payload;
	REPLY_BODY(sm, c, req->id, PONG, pong, &pong);
}

/* Detach: this session outlives the connection's close by its lease. */
void op_detach(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	c->detach = true;
	reply_ok(sm, c, req->id);
}

/*
 * Has c said Hello, and has it a session still? Else answer id so and say
 * false: the connection is to be closed.
 */
static bool client_in_session(struct sm *sm, struct sm_client *c, uint64_t id)
{
	if (!c->hello) {
		reply_err(sm, c, id, SEMD__CODE__PROTOCOL_ERROR,
		    "the first request must be hello");
		return false;
	}
	if (c->session == NULL) {
		reply_err(sm, c, id, SEMD__CODE__SESSION_EXPIRED,
		    "this connection's session ended (expired, or resumed by another connection)");
		return false;
	}
	return true;
}

/* Dispatch one request. */
int sm_request(struct sm *sm, struct sm_client *c, const Semd__Request *req,
    const struct sm_caller *who, uint64_t now)
{
	uint64_t id = req->id;
	sm_op_fn *fn;
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
	if (!client_in_session(sm, c, id))
		return SM_CLOSE;
	c->session->heard = now;	/* the lease counts from here */
	if ((fn = sm_op_handler(req->op_case)) != NULL)
		fn(sm, c, req);
	else
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "unknown or missing operation");
	sm_settle(sm);
	sm->who = NULL;
	return r;
}

/*
 * Run a read of c (sm_read, sm_guest_read): the handlers of reads change
 * nothing but the client's cache of the name it named last (not state);
 * with sm->reading set a bucket is not refilled (its level is told as of
 * sm->now all the same, rate_nano) and no reply is counted. Nothing is
 * queued for settling: a read that left an effect would be a bug. A guest
 * has no session: it has no downs for Where to name.
 */
static int read_run(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, const struct sm_caller *who, bool guest)
{
	int r = SM_OK;

	sm->reading = true;
	sm->who = who;
	sm->cur_op = (unsigned)req->op_case < SM_NOPS ? (int)req->op_case : 0;
	if (!sm_op_is_read(req->op_case))
		reply_err(sm, c, req->id, SEMD__CODE__INVALID_ARGUMENT,
		    "%s is not a read: it goes through the log",
		    sm_op(req->op_case) != NULL ? sm_op(req->op_case)->name :
		    "an unknown operation");
	else if (guest && req->op_case == SEMD__REQUEST__OP_WHERE)
		reply_err(sm, c, req->id, SEMD__CODE__NOT_FOUND, "this "
		    "connection has no session (it began while the data "
		    "directory's disk was full): no down of it waits");
	else if (!guest && !client_in_session(sm, c, req->id))
		r = SM_CLOSE;
	else
		sm_op_handler(req->op_case)(sm, c, req);
	SM_ASSERT(list_empty(&sm->offers) && list_empty(&sm->rate_touched) &&
	    sm->dl_ncheck == 0);
	sm->who = NULL;
	sm->reading = false;
	return r;
}

/* Answer a read off the log (state.h). */
int sm_read(struct sm *sm, struct sm_client *c, const Semd__Request *req,
    const struct sm_caller *who)
{
	return read_run(sm, c, req, who, false);
}

/* A guest's principal when the state has no record of it: a stand-in. */
union guest_pr {
	struct sm_principal	pr;
	unsigned char		bytes[sizeof(struct sm_principal) +
				    SM_PRINCIPAL_MAX + 1];
};

/*
 * A guest client of principal answering through conn (state.h): in no
 * table, said Hello, no session. Its principal is the state's record (so
 * that what it holds is its own), or an empty stand-in in gp.
 */
static void guest_make(struct sm *sm, struct sm_client *g, union guest_pr *gp,
    void *conn, const char *principal)
{
	size_t len = strnlen(principal, SM_PRINCIPAL_MAX);

	memset(g, 0, sizeof *g);
	g->conn = conn;
	g->hello = true;
	INIT_LIST_HEAD(&g->entry);
	INIT_LIST_HEAD(&g->watches);
	if ((g->pr = principal_find(sm, principal)) != NULL)
		return;
	memset(gp, 0, sizeof *gp);
	INIT_LIST_HEAD(&gp->pr.holds);
	memcpy(gp->pr.name, principal, len);
	gp->pr.name[len] = '\0';
	gp->pr.len = len;
	g->pr = &gp->pr;
}

/* A guest's Hello: a HelloReply without a session (state.h). */
int sm_guest_hello(struct sm *sm, void *conn, const char *principal,
    const Semd__Request *req)
{
	Semd__HelloReply hr = SEMD__HELLO_REPLY__INIT;
	union guest_pr gp;
	struct sm_client g;
	int r = SM_OK;

	guest_make(sm, &g, &gp, conn, principal);
	sm->reading = true;
	sm->cur_op = SEMD__REQUEST__OP_HELLO;
	if (req->hello->version != SM_PROTO_VERSION) {
		reply_err(sm, &g, req->id, SEMD__CODE__PROTOCOL_ERROR,
		    "unsupported protocol version %u (this daemon speaks %u)",
		    req->hello->version, SM_PROTO_VERSION);
		r = SM_CLOSE;
	} else {
		hello_daemon(sm, &hr);
		hr.principal = g.pr->name;
		REPLY_BODY(sm, &g, req->id, HELLO, hello, &hr);
	}
	sm->reading = false;
	return r;
}

/* A guest's read (state.h). */
int sm_guest_read(struct sm *sm, void *conn, const char *principal,
    const Semd__Request *req, const struct sm_caller *who)
{
	union guest_pr gp;
	struct sm_client g;

	guest_make(sm, &g, &gp, conn, principal);
	return read_run(sm, &g, req, who, true);
}

/* Watch: stream the events of a name, or of the names with a prefix. */
/* A resume from revision from, no longer kept: COMPACTED, the oldest said. */
static void watch_compacted(struct sm *sm, struct sm_client *c, uint64_t id,
    uint64_t from, uint64_t oldest)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	char msg[256];

	if (oldest != 0)
		snprintf(msg, sizeof msg, "revision %" PRIu64 " is compacted: the "
		    "oldest event kept is %" PRIu64 " (watch-history %u bytes)",
		    from, oldest, sm->evring.size);
	else
		snprintf(msg, sizeof msg, "revision %" PRIu64 " is compacted: no "
		    "event is kept from before %" PRIu64 " (watch-history %u bytes)",
		    from, sm->ev_rev + 1, sm->evring.size);
	r.id = id;
	r.code = SEMD__CODE__COMPACTED;
	r.message = msg;
	r.oldest_revision = oldest != 0 ? oldest : sm->ev_rev + 1;
	reply_send(sm, c, &r);
}

void op_watch(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Watch *wt = req->watch;
	Semd__Reply r = SEMD__REPLY__INIT;
	struct sm_watch *x;
	uint64_t id = req->id, oldest;
	size_t len = strlen(wt->name);
	struct list_head *pos;

	if (!wt->prefix && !sem_name_ok(sm, c, id, wt->name))
		return;
	if (wt->prefix && len > 0 && (len > SM_NAME_MAX ||
	    !sm_name_valid(wt->name, len))) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "the prefix is not the beginning of a valid name");
		return;
	}
	if (id == 0) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "a watch needs a request id (its events carry it)");
		return;
	}
	list_for_each(pos, &c->watches) {
		if (list_entry(pos, struct sm_watch, client_entry)->id == id) {
			reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
			    "request id %" PRIu64 " is a watch already", id);
			return;
		}
	}
	if (c->nwatches >= SM_WATCH_MAX) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "too many watches on this connection (%d)", SM_WATCH_MAX);
		return;
	}
	if (!principal_room(sm, c, id, c->pr, SM_LIMIT_WATCHES, 1))
		return;
	if (wt->from_revision > sm->ev_rev + 1) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "revision %" PRIu64 " is yet to come: the last is %" PRIu64,
		    wt->from_revision, sm->ev_rev);
		return;
	}
	if (wt->from_revision != 0 && wt->from_revision <= sm->ev_rev &&
	    (oldest = evring_oldest(&sm->evring)) != wt->from_revision &&
	    (oldest == 0 || oldest > wt->from_revision)) {
		watch_compacted(sm, c, id, wt->from_revision, oldest);
		return;
	}
	if ((x = watch_add(sm, c, id, wt->name, len, wt->prefix, sm->who == NULL ||
	    (sm->who->privs & SM_PRIV_ADMIN) != 0)) == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		return;
	}
	/* The last revision so far: its client resumes after it even when no
	 * event came before its connection was lost. */
	r.id = id;
	r.revision = sm->ev_rev;
	reply_send(sm, c, &r);
	if (wt->from_revision != 0)
		watch_replay(sm, x, wt->from_revision);
}
