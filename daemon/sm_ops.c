/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/sm_ops.c - the operations a request can ask for, their dispatch, and
 * time (deadlines, shutdown).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sm-int.h"

/* --- operations ---------------------------------------------------------- */

/* Hello: start or resume a session. */
static int op_hello(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Hello *h, uint64_t now)
{
	Semd__Reply r = SEMD__REPLY__INIT;
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
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_HELLO;
	r.hello = &hr;
	reply_send(sm, c, &r);
	if (back)
		session_park(s, false);	/* grants now go to c, after HelloReply */
	return SM_OK;
}

/* Check a name field of len bytes; answers INVALID_ARGUMENT when bad. */
static bool check_name_len(struct sm *sm, struct sm_client *c, uint64_t id,
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
	return check_name_len(sm, c, id, name, strlen(name));
}

/* Find a semaphore or answer NOT_FOUND. */
struct sm_sem *sem_need(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name)
{
	size_t len = strlen(name);
	struct sm_sem *sem;

	if ((sem = client_sem(sm, c, name, len)) != NULL)
		return sem;
	if (!check_name_len(sm, c, id, name, len))
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

/*
 * Would nobody but pr be left out if pr took sem over: is every holder and
 * waiter of it pr's?
 */
static bool sem_used_only_by(const struct sm_sem *sem,
    const struct sm_principal *pr)
{
	const struct list_head *pos;

	list_for_each(pos, &sem->holders)
		if (list_entry(pos, struct sm_hold, sem_entry)->ident->pr != pr)
			return false;
	list_for_each(pos, &sem->waiters)
		if (list_entry(pos, struct sm_member, sem_entry)->wait->session->ident->pr != pr)
			return false;
	return true;
}

/* Create: a named semaphore with a limit and a mode. */
static void op_create(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	const Semd__Create *cr = req->create;
	uint64_t id = req->id;
	struct sm_principal *pr = c->pr;
	struct sm_sem *sem;
	uint32_t period = cr->rate_period_ms, burst = cr->burst;
	int mode = cr->mode;

	if (!sem_name_ok(sm, c, id, cr->name))
		return;
	/* A rate without a limit: a rate-only name. */
	if (cr->rate != 0 && cr->limit == 0 && mode == SEMD__MODE__OWNED)
		mode = SEMD__MODE__RATE;
	if (mode != SEMD__MODE__OWNED && mode != SEMD__MODE__SIGNAL &&
	    mode != SEMD__MODE__RATE) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "unknown mode %d", mode);
		return;
	}
	if (mode == SEMD__MODE__RATE ? (cr->rate == 0 || cr->limit != 0) :
	    !limit_ok(sm, c, id, cr->limit)) {
		if (mode == SEMD__MODE__RATE)
			reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
			    cr->rate == 0 ? "a rate-only semaphore needs a rate" :
			    "a rate-only semaphore has no limit (a limit and a rate make an owned one)");
		return;
	}
	if (cr->rate != 0 && mode == SEMD__MODE__SIGNAL) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "a signal-mode semaphore cannot have a rate");
		return;
	}
	if (cr->rate != 0 && !rate_args_ok(sm, c, id, cr->rate, &period, &burst))
		return;
	if (cr->initial_set && (cr->mode != SEMD__MODE__SIGNAL ||
	    cr->initial > cr->limit)) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    cr->mode != SEMD__MODE__SIGNAL ?
		    "initial is for signal-mode semaphores (an owned one starts with every permit free)" :
		    "initial %u is more than the limit %u", cr->initial, cr->limit);
		return;
	}
	sem = sem_find(sm, cr->name);
	if (sem != NULL) {
		if (!cr->if_not_exists) {
			reply_err(sm, c, id, SEMD__CODE__EXISTS,
			    "semaphore %s exists (limit %u)", sem->name,
			    sem->limit);
			return;
		}
		/*
		 * Explicitly wanted now: an auto-created name stays, owned and
		 * counted - by the caller only if it is an administrator or
		 * nobody else uses the name (no one takes over a name others
		 * hold); otherwise it stays as it is and the answer is OK.
		 */
		if (sem->auto_created && (sem_manager(sm, c, sem) ||
		    sem_used_only_by(sem, pr))) {
			if (!principal_room(sm, c, id, pr, SM_LIMIT_SEMAPHORES, 1))
				return;
			sem->auto_created = false;
			sem_set_owner(sem, pr);
		}
		reply_ok(sm, c, id);
		return;
	}
	if (sm->ctr.semaphores >= sm->cfg.max_semaphores) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "too many semaphores (max-semaphores %u)",
		    sm->cfg.max_semaphores);
		return;
	}
	if (!principal_room(sm, c, id, pr, SM_LIMIT_SEMAPHORES, 1))
		return;
	if ((sem = sem_new(sm, cr->name, cr->limit, mode, false, now)) == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		return;
	}
	if (cr->rate != 0 && !rate_attach(sm, sem, cr->rate, period, burst)) {
		sem_free(sm, sem);
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		return;
	}
	if (cr->initial_set)
		sema_adjust(&sem->sem, (long)cr->initial - (long)cr->limit);
	sem_set_owner(sem, pr);
	watch_limit(sm, sem, SEMD__EVENT_KIND__EVENT_CREATE, c);
	reply_ok(sm, c, id);
}

/*
 * Per-principal caps of a down: n more held permits (owned mode), and one
 * more waiter if it may wait. Answers RESOURCE_EXHAUSTED when over.
 */
static bool down_room(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_sem *sem, uint32_t n, bool may_wait)
{
	struct sm_principal *pr = c->session->ident->pr;

	return (sem->mode != SEMD__MODE__OWNED ||
	    principal_room(sm, c, id, pr, SM_LIMIT_PERMITS, n)) &&
	    (!may_wait || principal_room(sm, c, id, pr, SM_LIMIT_WAITERS, 1));
}

/* Down: take n permits now, or wait for them until a deadline. */
static void op_down(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	const Semd__Down *d = req->down;
	uint64_t id = req->id;
	struct sm_session *s = c->session;
	struct sm_reqkey *prev;
	struct sm_want want;
	struct sm_hold *h;
	struct sm_sem *sem;
	struct sm_wait *w;
	uint32_t n = d->n ? d->n : 1;
	size_t len = strlen(d->name);

	sem = client_sem(sm, c, d->name, len);
	if (sem == NULL && !check_name_len(sm, c, id, d->name, len))
		return;
	if (n > SM_LIMIT_MAX) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "n = %u is out of range", n);
		return;
	}
	if (id != 0 && (prev = req_find(sm, s->id, id)) != NULL) {
		/* A retried down: answer what the first one got. */
		if (prev->kind == REQ_MEMO) {
			memo_answer(sm, c, container_of(prev, struct sm_memo,
			    req));
			return;
		}
		if (prev->kind == REQ_HOLD) {
			h = container_of(prev, struct sm_hold, req);
			if (h->group_key == 0 && strcmp(h->sem->name, d->name) == 0) {
				reply_grant(sm, c, id, h->permit_id, h->token,
				    h->n, 0);
				return;
			}
		} else {
			w = container_of(prev, struct sm_wait, req);
			if (!w->multi && strcmp(w->m[0].sem->name, d->name) == 0)
				return;	/* the pending waiter will answer */
		}
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "request id %" PRIu64 " is in use by a down on another name", id);
		return;
	}

	if (s->nholds + s->nwaiters >= sm->cfg.max_holds_per_session) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "session holds or waits for too many permits (max-holds-per-session %u)",
		    sm->cfg.max_holds_per_session);
		return;
	}
	if (sem == NULL)
		sem = sem_find_len(sm, d->name, len);
	if (sem != NULL && d->limit != 0 && d->limit != sem->limit) {
		reply_err(sm, c, id, SEMD__CODE__EXISTS,
		    "%s exists with limit %u, not %u", sem->name, sem->limit,
		    d->limit);
		return;
	}
	if (sem == NULL) {
		/* Auto-created, with the default limit or the one asked for. */
		if (d->limit != 0 && !limit_ok(sm, c, id, d->limit))
			return;
		if (sm->ctr.semaphores >= sm->cfg.max_semaphores) {
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "too many semaphores (max-semaphores %u)",
			    sm->cfg.max_semaphores);
			return;
		}
		sem = sem_new(sm, d->name, d->limit ? d->limit :
		    sm->cfg.default_limit, SEMD__MODE__OWNED, true, now);
		if (sem == NULL) {
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "out of memory");
			return;
		}
	}
	client_sem_set(sm, c, sem);
	if (sem->mode != SEMD__MODE__RATE && n > sem->limit) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "n = %u is more than the limit of %s (%u)", n, sem->name,
		    sem->limit);
		goto out;
	}
	if (sem->rate != NULL && n > sem->rate->burst) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "n = %u is more than the burst of %s (%u tokens)", n,
		    sem->name, sem->rate->burst);
		goto out;
	}
	if (!down_room(sm, c, id, sem, n, d->timeout_ms != 0))
		goto out;
	want.sem = sem;
	want.n = n;
	down_wants(sm, c, id, &want, 1, d->timeout_ms, d->lease_ms, false, now);
out:
	sem_maybe_free(sm, sem);
}

/*
 * Release hold h (why: what its holder is told, NULL: it asked) and answer
 * Released; its name goes if that leaves it idle and auto-created.
 */
static void release_answer(struct sm *sm, struct sm_client *c, uint64_t id,
    struct sm_hold *h, const char *why)
{
	struct sm_sem *sem = h->sem;
	uint32_t n = h->n;

	hold_release(sm, h, true, why);
	reply_released(sm, c, id, n);
	sem_maybe_free(sm, sem);
}

/* Up in signal mode: anyone adds permits, up to the limit. */
static void up_signal(struct sm *sm, struct sm_client *c, uint64_t id,
    struct sm_sem *sem, uint32_t n)
{
	if (sema_up_max(&sem->sem, n, sem->limit) != 0) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "%s: up %u would exceed the limit %u (%ld free)", sem->name,
		    n, sem->limit, sema_count(&sem->sem));
		return;
	}
	watch_up(sm, sem, c, n);
	reply_released(sm, c, id, n);
}

/* Up: give back permits the caller holds (owned) or add permits (signal). */
static void op_up(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	const Semd__Up *u = req->up;
	uint64_t id = req->id;
	struct sm_session *s = c->session;
	struct list_head *pos, *tmp;
	struct sm_hold *h;
	struct sm_sem *sem;
	uint32_t n = u->n ? u->n : 1, take;
	uint64_t have = 0, left;

	if ((sem = sem_need(sm, c, id, u->name)) == NULL)
		return;
	if (sem->mode == SEMD__MODE__RATE) {
		reply_err(sm, c, id, SEMD__CODE__NOT_HOLDER,
		    "%s is a rate-only semaphore: a down takes its tokens for good, nothing is held",
		    sem->name);
		return;
	}
	if (sem->mode == SEMD__MODE__SIGNAL && u->permit_id == 0) {
		if (n > SM_LIMIT_MAX) {
			reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
			    "n = %u is out of range", n);
			return;
		}
		up_signal(sm, c, id, sem, n);
		return;
	}
	if (u->permit_id != 0) {
		h = permit_find(sm, u->permit_id);
		if (h == NULL || h->sem != sem || !hold_owned_by(h, s)) {
			reply_err(sm, c, id, SEMD__CODE__NOT_HOLDER,
			    "permit %" PRIu64 " of %s is not held by you",
			    u->permit_id, sem->name);
			return;
		}
		release_answer(sm, c, id, h, NULL);
		return;
	}
	/* Count what the caller holds: session holds, then detached ones. */
	list_for_each(pos, &s->holds) {
		h = list_entry(pos, struct sm_hold, owner_entry);
		if (h->sem == sem)
			have += h->n;
	}
	if (have < n) {
		list_for_each(pos, &sem->holders) {
			h = list_entry(pos, struct sm_hold, sem_entry);
			if (h->session == NULL && hold_owned_by(h, s))
				have += h->n;
		}
	}
	if (have < n) {
		reply_err(sm, c, id, SEMD__CODE__NOT_HOLDER,
		    "you hold %" PRIu64 " permit(s) of %s, cannot up %u", have,
		    sem->name, n);
		return;
	}
	/*
	 * Shrink the records first (newest first), then hand all n back to
	 * the core in one go, so the grants it makes see consistent counts.
	 */
	left = n;
	for (pos = s->holds.prev, tmp = pos->prev; left > 0 && pos != &s->holds;
	    pos = tmp, tmp = pos->prev) {
		h = list_entry(pos, struct sm_hold, owner_entry);
		if (h->sem != sem)
			continue;
		take = h->n < left ? h->n : (uint32_t)left;
		left -= take;
		if (take == h->n)
			hold_release(sm, h, false, NULL);
		else
			hold_shrink(sm, h, take);
	}
	for (pos = sem->holders.prev, tmp = pos->prev;
	    left > 0 && pos != &sem->holders; pos = tmp, tmp = pos->prev) {
		h = list_entry(pos, struct sm_hold, sem_entry);
		if (h->session != NULL || !hold_owned_by(h, s))
			continue;
		take = h->n < left ? h->n : (uint32_t)left;
		left -= take;
		if (take == h->n)
			hold_release(sm, h, false, NULL);
		else
			hold_shrink(sm, h, take);
	}
	sema_up_n(&sem->sem, n);
	reply_released(sm, c, id, n);
	sem_maybe_free(sm, sem);
}

/* Release: force-release anyone's hold by permit id (admin). */
static void op_release(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	const Semd__Release *rl = req->release;
	uint64_t id = req->id;
	struct sm_sem *sem;
	struct sm_hold *h;
	char why[SM_NAME_MAX + 64];

	if ((sem = sem_need(sm, c, id, rl->name)) == NULL)
		return;
	h = permit_find(sm, rl->permit_id);
	if (h == NULL || h->sem != sem) {
		reply_err(sm, c, id, SEMD__CODE__NOT_FOUND,
		    "%s has no permit %" PRIu64, sem->name, rl->permit_id);
		return;
	}
	if (h->ident->pr != c->pr && !sem_manager(sm, c, sem)) {
		reply_err(sm, c, id, SEMD__CODE__PERMISSION_DENIED,
		    "%s may not release %s's permit of %s (only its creator and administrators may)",
		    c->pr->name, h->ident->pr->name, sem->name);
		return;
	}
	snprintf(why, sizeof why, "released by %s", c->pr->name);
	notice_lost(sm, h, SEMD__CODE__CANCELLED, why);
	sm_note(sm, c, "%s force-released permit %" PRIu64 " of %s (%u, "
	    "held by %s)", c->pr->name, h->permit_id, sem->name, h->n,
	    h->ident->pr->name);
	release_answer(sm, c, id, h, why);
}

/* Cancel a pending down of this session. */
static void op_cancel(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	const Semd__Cancel *cn = req->cancel;
	uint64_t id = req->id;
	struct sm_reqkey *k = req_find(sm, c->session->id, cn->request_id);
	struct sm_wait *w;
	char why[96];

	if (k == NULL || k->kind != REQ_WAIT) {
		if (cn->request_id != 0 && watch_cancel(sm, c, cn->request_id)) {
			reply_ok(sm, c, id);	/* a watch of this connection */
			return;
		}
		reply_err(sm, c, id, SEMD__CODE__NOT_FOUND,
		    "no pending down with id %" PRIu64, cn->request_id);
		return;
	}
	w = container_of(k, struct sm_wait, req);
	snprintf(why, sizeof why, "cancelled by request %" PRIu64, id);
	wait_cancel(sm, w, SEMD__CODE__CANCELLED, why, NULL);
	sm->ctr.cancels++;
	reply_ok(sm, c, id);
}

/* Bytes a Holder or Waiter of ident takes in a reply, at most. */
static size_t info_entry_size(const struct sm_ident *id)
{
	/* Eight varint fields of at most 11 bytes, three strings with theirs. */
	return 8 * 11 + 3 * 5 + strlen(id->client_name) + strlen(id->host) +
	    id->pr->len + 8;
}

/*
 * Info: a semaphore's limit and counts, and one page of its holders (grant
 * order) and waiters (queue order): at most max of each, after the cursors,
 * and no more than cfg.max_reply bytes of them, so no reply ever outgrows a
 * client's output limit however long the queue. The caller sees every holder
 * and waiter if it may manage the name, else only its own (the counts stay
 * whole). next_permit / next_waiter are set when more follow.
 */
static void op_info(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	const Semd__Info *in = req->info;
	uint64_t id = req->id;
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__InfoReply ir = SEMD__INFO_REPLY__INIT;
	Semd__Holder *hv = NULL, **hp = NULL;
	Semd__Waiter *wv = NULL, **wp = NULL;
	struct list_head *pos;
	struct sm_member *m;
	struct sm_sem *sem;
	struct sm_hold *h;
	struct sm_wait *w;
	size_t max = in->max ? in->max : SM_INFO_PAGE, nh = 0, nw = 0, budget;
	bool all;

	if ((sem = sem_need(sm, c, id, in->name)) == NULL)
		return;
	rate_refill(sm, sem);	/* may grant (tokens due): before the lists */
	if (max > SM_INFO_PAGE_MAX)
		max = SM_INFO_PAGE_MAX;
	all = sem_manager(sm, c, sem);
	budget = sm->cfg.max_reply / 2;		/* each list gets half */
	hv = calloc(max, sizeof *hv);
	hp = ptr_array(max);
	wv = calloc(max, sizeof *wv);
	wp = ptr_array(max);
	if (hv == NULL || hp == NULL || wv == NULL || wp == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		goto out;
	}
	list_for_each(pos, &sem->holders) {
		h = list_entry(pos, struct sm_hold, sem_entry);
		if (h->permit_id <= in->after_permit ||
		    (!all && h->ident->pr != c->pr))
			continue;
		if (nh == max || (nh > 0 && info_entry_size(h->ident) > budget)) {
			ir.next_permit = hv[nh - 1].permit_id;
			break;
		}
		budget -= info_entry_size(h->ident) < budget ?
		    info_entry_size(h->ident) : budget;
		reply_holder(sm, &hv[nh], h);
		hp[nh] = &hv[nh];
		nh++;
	}
	budget = sm->cfg.max_reply / 2;
	list_for_each(pos, &sem->waiters) {
		m = list_entry(pos, struct sm_member, sem_entry);
		w = m->wait;
		if (w->seq <= in->after_waiter ||
		    (!all && w->session->ident->pr != c->pr))
			continue;
		if (nw == max || (nw > 0 && info_entry_size(w->session->ident) > budget)) {
			ir.next_waiter = wv[nw - 1].seq;
			break;
		}
		budget -= info_entry_size(w->session->ident) < budget ?
		    info_entry_size(w->session->ident) : budget;
		semd__waiter__init(&wv[nw]);
		wv[nw].request_id = w->req.request_id;
		wv[nw].n = m->n;
		wv[nw].client_name = w->session->ident->client_name;
		wv[nw].host = w->session->ident->host;
		wv[nw].pid = w->session->ident->pid;
		wv[nw].principal = w->session->ident->pr->name;
		wv[nw].since_ms = w->since_wall;
		wv[nw].deadline_ms = w->deadline.idx != SIZE_MAX ?
		    sm_wall(sm, w->deadline.when) : 0;
		wv[nw].seq = w->seq;
		wv[nw].detached = w->session->client == NULL;
		wp[nw] = &wv[nw];
		nw++;
	}
	ir.name = sem->name;
	ir.limit = sem->limit;
	ir.available = sema_count(&sem->sem);
	ir.mode = sem->mode;
	ir.auto_created = sem->auto_created;
	ir.n_holders = nh;
	ir.holders = hp;
	ir.n_waiters = nw;
	ir.waiters = wp;
	ir.holders_total = sem->nholders;
	ir.waiters_total = sem->nwaiters;
	ir.last_token = sem->sem.token;
	if (sem->rate != NULL) {
		ir.rate = sem->rate->rate;
		ir.rate_period_ms = sem->rate->period_ms;
		ir.burst = sem->rate->burst;
		ir.tokens_nano = rate_nano(sm, sem);
		ir.next_token_ms = rate_next_ms(sm, sem);
	}
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_INFO;
	r.info = &ir;
	reply_send(sm, c, &r);
out:
	free(hv);
	free(hp);
	free(wv);
	free(wp);
}

/*
 * The first key greater than every name beginning with name[0..len), in
 * key (len + 1 bytes); false when there is none (all bytes 0xff).
 */
static bool list_past_prefix(const char *name, size_t len, char *key)
{
	while (len > 0 && (unsigned char)name[len - 1] == 0xff)
		len--;
	if (len == 0)
		return false;
	memcpy(key, name, len);
	key[len - 1] = (char)((unsigned char)name[len - 1] + 1);
	key[len] = '\0';
	return true;
}

/*
 * List: names with a prefix, in byte order, strictly after a cursor. Besides
 * the hash table the names live in an ordered index (daemon/ordidx.h, a
 * B+tree of about 10 bytes a name), and the names with a prefix are one run
 * of it: a page seeks to the later of prefix and after, then walks forward
 * while the names keep the prefix: O(log N + max) per page, however many
 * other names there are (a page of 100 at a million names: about 30 us,
 * round trip included, where scanning the table took about 90 ms). One name
 * found past a full page sets next (to the last name listed).
 *
 * With a visibility hook (the daemon's ACL) only the names the caller may
 * inspect are listed, and next is always one of them. A hidden name whose
 * hook answer covers a whole subtree (a protected prefix) is stepped over
 * with one seek past that subtree; others one by one. A page visits at most
 * SM_LIST_HIDDEN_MAX hidden names: past that it ends at its last entry (next
 * set, the usual cursor), or with no entry yet is answered
 * RESOURCE_EXHAUSTED, so no client makes the loop scan without bound.
 */
static void op_list(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	const Semd__List *l = req->list;
	uint64_t id = req->id;
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__ListReply lr = SEMD__LIST_REPLY__INIT;
	Semd__Summary *sv = NULL, **sp = NULL;
	size_t max = l->max ? l->max : SM_LIST_DEFAULT, i = 0;
	size_t plen = strlen(l->prefix), hidden = 0, skip;
	char key[SM_NAME_MAX + 1];
	struct ordidx_iter it;
	struct sm_sem *sem;

	if (max > SM_LIST_MAX)
		max = SM_LIST_MAX;
	sv = calloc(max, sizeof *sv);
	sp = ptr_array(max);
	if (sv == NULL || sp == NULL) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		goto out;
	}
	/* Every name with the prefix is >= prefix. */
	if (strcmp(l->after, l->prefix) >= 0)
		ordidx_seek(&sm->byname, &it, l->after, false);
	else
		ordidx_seek(&sm->byname, &it, l->prefix, true);
	while ((sem = ordidx_next(&it)) != NULL &&
	    strncmp(sem->name, l->prefix, plen) == 0) {
		skip = 0;
		if (sm->visible != NULL && !sm->visible(sm->visible_arg,
		    c->conn, sem->name, sem->len, &skip)) {
			if (++hidden > SM_LIST_HIDDEN_MAX)
				break;
			if (skip == 0 || skip > sem->len)
				continue;
			if (!list_past_prefix(sem->name, skip, key))
				break;
			ordidx_seek(&sm->byname, &it, key, true);
			continue;
		}
		if (i == max) {
			lr.next = sv[max - 1].name;
			break;
		}
		semd__summary__init(&sv[i]);
		sv[i].name = sem->name;
		sv[i].limit = sem->limit;
		sv[i].available = sema_count(&sem->sem);
		sv[i].mode = sem->mode;
		sv[i].holders = sem->nholders;
		sv[i].waiters = sem->nwaiters;
		if (sem->rate != NULL) {
			sv[i].rate = sem->rate->rate;
			sv[i].rate_period_ms = sem->rate->period_ms;
		}
		sp[i] = &sv[i];
		i++;
	}
	if (hidden > SM_LIST_HIDDEN_MAX) {
		if (i == 0) {
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "more than %d names you may not inspect under this "
			    "prefix; list a narrower prefix",
			    SM_LIST_HIDDEN_MAX);
			goto out;
		}
		lr.next = sv[i - 1].name;
	}
	lr.n_entries = i;
	lr.entries = sp;
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_LIST;
	r.list = &lr;
	reply_send(sm, c, &r);
out:
	free(sv);
	free(sp);
}

/* Delete: remove a semaphore; busy ones only with force. */
static void op_delete(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	const Semd__Delete *dl = req->delete_;
	uint64_t id = req->id;
	struct sm_sem *sem;
	struct sm_member *m;
	struct sm_hold *h;

	if ((sem = sem_need_manager(sm, c, id, dl->name, "delete")) == NULL)
		return;
	if ((sem->nholders > 0 || sem->nwaiters > 0) && !dl->force) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "%s is in use (%u holders, %u waiters): delete with force",
		    sem->name, sem->nholders, sem->nwaiters);
		return;
	}
	if (sem->nholders > 0 || sem->nwaiters > 0)
		sm_note(sm, c, "%s deleted %s by force (%u holders, %u waiters)",
		    c->pr->name, sem->name, sem->nholders, sem->nwaiters);
	/*
	 * Cancel from the tail: taking the last waiter off never lets anyone
	 * in front of it through, so nobody is granted a dying semaphore.
	 */
	while (!list_empty(&sem->waiters)) {
		m = list_entry(sem->waiters.prev, struct sm_member, sem_entry);
		wait_cancel(sm, m->wait, SEMD__CODE__CANCELLED,
		    "semaphore deleted", sem);
	}
	while (!list_empty(&sem->holders)) {
		h = list_first_entry(&sem->holders, struct sm_hold, sem_entry);
		notice_lost(sm, h, SEMD__CODE__CANCELLED, "semaphore deleted");
		hold_release(sm, h, false, "semaphore deleted");
	}
	watch_limit(sm, sem, SEMD__EVENT_KIND__EVENT_DELETE, c);
	sem_free(sm, sem);
	reply_ok(sm, c, id);
}

/* The first waiter of sem asking for more than its limit, or NULL. */
static struct sm_member *waiter_over_limit(const struct sm_sem *sem)
{
	struct list_head *pos;
	struct sm_member *m;

	list_for_each(pos, &sem->waiters) {
		m = list_entry(pos, struct sm_member, sem_entry);
		if (m->n > sem->limit)
			return m;
	}
	return NULL;
}

/* SetLimit: grow or shrink live; shrinking revokes nobody. */
static void op_set_limit(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	const Semd__SetLimit *sl = req->set_limit;
	uint64_t id = req->id;
	struct sm_sem *sem;
	struct sm_member *m;
	long delta;

	if ((sem = sem_need_manager(sm, c, id, sl->name,
	    "change the limit of")) == NULL)
		return;
	if (sem->mode == SEMD__MODE__RATE) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "%s is a rate-only semaphore: it has no limit (set-rate changes its rate)",
		    sem->name);
		return;
	}
	if (!limit_ok(sm, c, id, sl->limit))
		return;
	delta = (long)sl->limit - (long)sem->limit;
	sem->limit = sl->limit;
	sem->auto_created = false;
	/*
	 * The new count first: cancelling a head waiter below lets the ones
	 * behind it proceed, and they must be measured against the new limit,
	 * not the old one. (Growing cancels nobody: no waiter asks for more
	 * than the old limit.)
	 */
	sema_adjust(&sem->sem, delta);
	/*
	 * A waiter wanting more than the new limit would block the queue.
	 * Cancelling one may grant (and free) those behind it: each search
	 * starts again from the head, holding no pointer across the cancel.
	 */
	while ((m = waiter_over_limit(sem)) != NULL)
		wait_cancel(sm, m->wait, SEMD__CODE__INVALID_ARGUMENT,
		    "the limit shrank below the permits asked for", sem);
	watch_limit(sm, sem, SEMD__EVENT_KIND__EVENT_LIMIT, c);
	reply_ok(sm, c, id);
}

/* Validate: does this fencing token still hold a permit? */
static void op_validate(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	const Semd__Validate *v = req->validate;
	uint64_t id = req->id;
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__ValidateReply vr = SEMD__VALIDATE_REPLY__INIT;
	struct sm_sem *sem;

	if (!sem_name_ok(sm, c, id, v->name))
		return;
	sem = sem_find(sm, v->name);
	vr.valid = sem != NULL && token_find(sm, sem, v->token) != NULL;
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_VALIDATE;
	r.validate = &vr;
	reply_send(sm, c, &r);
}

/* Ping: echo the payload. */
static void op_ping(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now)
{
	const Semd__Ping *p = req->ping;
	uint64_t id = req->id;
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__Pong pong = SEMD__PONG__INIT;

	pong.payload = p->payload;
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_PONG;
	r.pong = &pong;
	reply_send(sm, c, &r);
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
 * Every operation once: its name (Stats, metrics, logs), the right the
 * access layer checks for it, and its handler (after Hello; Hello itself
 * is dispatched apart, as it makes the session the others need).
 */
typedef void (*sm_op_fn)(struct sm *sm, struct sm_client *c,
    const Semd__Request *req, uint64_t now);
static const struct {
	struct sm_op	op;
	sm_op_fn	fn;
} sm_ops[SM_NOPS] = {
	[SEMD__REQUEST__OP_HELLO] = { { "hello", SM_RIGHT_NONE }, NULL },
	[SEMD__REQUEST__OP_CREATE] = { { "create", SM_RIGHT_CREATE }, op_create },
	[SEMD__REQUEST__OP_DOWN] = { { "down", SM_RIGHT_USE }, op_down },
	[SEMD__REQUEST__OP_UP] = { { "up", SM_RIGHT_USE }, op_up },
	[SEMD__REQUEST__OP_CANCEL] = { { "cancel", SM_RIGHT_NONE }, op_cancel },
	[SEMD__REQUEST__OP_INFO] = { { "info", SM_RIGHT_INSPECT }, op_info },
	[SEMD__REQUEST__OP_LIST] = { { "list", SM_RIGHT_INSPECT }, op_list },
	[SEMD__REQUEST__OP_DELETE] = { { "delete", SM_RIGHT_MANAGE }, op_delete },
	[SEMD__REQUEST__OP_SET_LIMIT] = { { "set_limit", SM_RIGHT_MANAGE }, op_set_limit },
	[SEMD__REQUEST__OP_PING] = { { "ping", SM_RIGHT_NONE }, op_ping },
	[SEMD__REQUEST__OP_STATS] = { { "stats", SM_RIGHT_INSPECT }, op_stats_req },
	[SEMD__REQUEST__OP_VALIDATE] = { { "validate", SM_RIGHT_USE }, op_validate },
	[SEMD__REQUEST__OP_RELEASE] = { { "release", SM_RIGHT_MANAGE }, op_release },
	[SEMD__REQUEST__OP_DETACH] = { { "detach", SM_RIGHT_NONE }, op_detach },
	[SEMD__REQUEST__OP_SET_RATE] = { { "set_rate", SM_RIGHT_MANAGE }, op_set_rate },
	[SEMD__REQUEST__OP_DOWN_MULTI] = { { "down_multi", SM_RIGHT_USE }, op_down_multi },
	[SEMD__REQUEST__OP_WATCH] = { { "watch", SM_RIGHT_INSPECT }, op_watch },
	[SEMD__REQUEST__OP_RENEW] = { { "renew", SM_RIGHT_USE }, op_renew },
	[SEMD__REQUEST__OP_HOLDS] = { { "holds", SM_RIGHT_INSPECT }, op_holds },
	[SEMD__REQUEST__OP_WHERE] = { { "where", SM_RIGHT_NONE }, op_where },
};

/* The table entry of an op case, or NULL for an unknown one. */
const struct sm_op *sm_op(int op_case)
{
	if (op_case <= 0 || op_case >= SM_NOPS || sm_ops[op_case].op.name == NULL)
		return NULL;
	return &sm_ops[op_case].op;
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
