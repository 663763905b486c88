/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/sim_idle.c - thousands of idle sessions with leases: they
 * say hello once (an entry), then only ping, answered by the leader without
 * an entry (their session heard, then a read of the log core, as
 * daemon/feed_log.c does), and resume on the
 * next leader while they trust their lease. Some go away, silent or hung up.
 * Checked:
 *  - none is told its session expired, nor finds it gone at a resume, while
 *    it trusts its lease (libsemclient's rule, trust_end);
 *  - none that went away is still in a serving leader's state once that
 *    state's time is past its lease (the longest a Hello it sent may have
 *    set: a resume whose answer it missed) and grace (LINGER_SLACK for the sweep
 *    and the commit) from when it went, from the last leader's start (a new
 *    leader starts every lease afresh) or from when the leader came back
 *    from a pause (its sweep was paused as long), whichever is later.
 */
#include "tests/cluster/sim.h"

struct idle {
	int		node;		/* attached to (-1: none) */
	bool		hello_out;
	bool		gone;		/* went away: sends nothing more */
	uint64_t	session;
	uint8_t		secret[SM_SECRET_LEN];
	uint32_t	lease;
	uint32_t	lease_asked;	/* the most a Hello unanswered may have set */
	uint64_t	trust_base;	/* send time of the last answer */
	uint64_t	hello_sent;
	uint64_t	ping_id;	/* the Ping on its way (0: none) */
	uint64_t	ping_sent;
	uint64_t	next_ping;
	uint64_t	gone_st;	/* state time it went, as the leader saw it */
	uint64_t	next_id;
	uint64_t	conn;		/* its connection's client id (0: none) */
	unsigned int	attached;	/* attachments so far */
};

unsigned int nidle;
static struct idle *idl;
static uint64_t next_round;

/* Until when an idle client trusts its session (trust_end's rule). */
static uint64_t idle_trust_end(const struct idle *x)
{
	struct client c;

	memset(&c, 0, sizeof c);
	c.session = x->session;
	c.lease = x->lease;
	c.trust_base = x->trust_base;
	return trust_end(&c);
}

/* The idle client of connection conn on node n (NULL: none now). */
static struct idle *idle_of(const struct node *n, uint64_t conn)
{
	uint64_t k = (conn - IDLE_BASE) & IDLE_MASK;

	if (conn < IDLE_BASE || k >= nidle || idl == NULL ||
	    idl[k].conn != conn || idl[k].node != (int)n->i)
		return NULL;
	return &idl[k];
}

/* Its connection id on its current attachment. */
static uint64_t idle_conn(const struct idle *x)
{
	return x->conn;
}

void idle_start(unsigned int n)
{
	free(idl);
	idl = n > 0 ? calloc(n, sizeof *idl) : NULL;
	if (n > 0 && idl == NULL)
		fail("out of memory");
	nidle = n;
	for (unsigned int k = 0; k < n; k++) {
		idl[k].node = -1;
		idl[k].next_id = 1;
	}
	next_round = 0;
}

void idle_end(void)
{
	free(idl);
	idl = NULL;
	nidle = 0;
}

/* Every node binds every client: the idle ones of a restored state again. */
void idle_rebind(struct sm *sm)
{
	struct sm_client *c;
	uint64_t id;

	for (unsigned int k = 0; k < nidle; k++)
		for (uint64_t a = 1; a <= idl[k].attached; a++) {
			id = IDLE_BASE + (a << IDLE_SHIFT) + k;
			if ((c = sm_client_find(sm, id)) != NULL)
				sm_client_bind(c, (void *)(uintptr_t)id);
		}
}

/* A reply to an idle client (from the node it is attached to). */
void idle_hear(const struct node *n, uint64_t conn, const Semd__Reply *r)
{
	struct idle *x = idle_of(n, conn);

	if (x == NULL || x->gone)
		return;
	if (r->code == SEMD__CODE__SESSION_EXPIRED && x->session != 0 &&
	    now() < idle_trust_end(x))
		fail("idle %u: session %" PRIu64 " expired (%s) while its client "
		    "trusts its lease until %" PRIu64, (unsigned)(x - idl),
		    x->session, r->message, idle_trust_end(x));
	if (r->body_case == SEMD__REPLY__BODY_PONG && r->id == x->ping_id) {
		x->ping_id = 0;
		x->trust_base = x->ping_sent;
		return;
	}
	if (r->body_case != SEMD__REPLY__BODY_HELLO || !x->hello_out)
		return;
	x->hello_out = false;
	if (r->code != SEMD__CODE__OK) {
		x->session = 0;
		return;
	}
	if (x->session != 0 && !r->hello->resumed && now() < idle_trust_end(x))
		fail("idle %u: session %" PRIu64 " gone at its resume while its "
		    "client trusts it until %" PRIu64, (unsigned)(x - idl),
		    x->session, idle_trust_end(x));
	x->session = r->hello->session;
	x->lease = r->hello->lease_ms;
	x->lease_asked = x->lease;
	x->trust_base = x->hello_sent;
	if (r->hello->secret.len == SM_SECRET_LEN)
		memcpy(x->secret, r->hello->secret.data, SM_SECRET_LEN);
}

/* The state closed an idle client's connection (its session expired). */
void idle_closed(const struct node *n, uint64_t conn)
{
	struct idle *x = idle_of(n, conn);

	if (x != NULL) {
		x->node = -1;
		x->hello_out = false;
	}
}

/* Attach to node n: OPEN and Hello (a resume while it trusts its lease). */
static void idle_attach(struct idle *x, struct node *n, struct sm_batch *b)
{
	Semd__Request rq;
	Semd__Hello h;
	struct sm_caller who = { 0 };
	uint8_t secret[SM_SECRET_LEN], buf[256];

	for (int k = 0; k < SM_SECRET_LEN; k++)
		secret[k] = (uint8_t)rnd();
	x->node = (int)n->i;
	x->conn = IDLE_BASE + ((uint64_t)++x->attached << IDLE_SHIFT) +
	    (uint64_t)(x - idl);
	x->hello_out = true;
	x->hello_sent = now();
	x->ping_id = 0;
	if (x->session != 0 && now() >= idle_trust_end(x))
		x->session = 0;		/* not trusted: a new one */
	sm_batch_open(b, idle_conn(x), "uid:1", secret, 0);
	hello_make(&rq, &h, x->next_id++, "idle", 2000 + rnd_below(4000),
	    x->session, x->secret);
	/* A resume whose answer is lost may still set its lease. */
	if (h.lease_ms > x->lease_asked)
		x->lease_asked = h.lease_ms;
	who.privs = SM_PRIV_ADMIN;
	if (semd__request__get_packed_size(&rq) > sizeof buf)
		fail("hello too big");
	sm_batch_request(b, idle_conn(x), &who, buf, semd__request__pack(&rq, buf));
}

/* The state time now, as the serving leader (or the latest state) says. */
static uint64_t state_now(void)
{
	uint64_t t = 0;

	for (unsigned int i = 0; i < nn; i++) {
		uint64_t v = serving(&nodes[i]) ? state_now_of(&nodes[i]) :
		    sm_now(nodes[i].sm);

		if (v > t)
			t = v;
	}
	return t;
}

/* A gone client's session must not outlive its lease and grace. */
static void idle_check_gone(struct idle *x)
{
	uint32_t lease = x->lease_asked > x->lease ? x->lease_asked : x->lease;
	uint64_t from, bound, g;

	for (unsigned int i = 0; i < nn; i++) {
		struct node *n = &nodes[i];

		/* A serving leader's: a node stopped while it led and back
		 * keeps its flags until it is seen not to lead. */
		if (!serving(n) || raft_state(n->raft) != RAFT_LEADER ||
		    !sm_session_exists(n->sm, x->session))
			continue;
		from = x->gone_st > last_leader_st ? x->gone_st : last_leader_st;
		if (n->back_st > from)
			from = n->back_st;
		g = grace < lease ? grace : lease;
		bound = from + lease + (g > LEASE_FLOOR ? g : LEASE_FLOOR) +
		    LINGER_SLACK;
		if (sm_now(n->sm) > bound)
			fail("idle %u: session %" PRIu64 " (lease %u) still on "
			    "node %u at state time %" PRIu64 ", gone at %" PRIu64
			    " (last leader from %" PRIu64 ")", (unsigned)(x - idl),
			    x->session, lease, i + 1, sm_now(n->sm), x->gone_st,
			    last_leader_st);
	}
}

/*
 * x pings node n: a read of the leader when its session is heard there now
 * (feed_log.c), answered after a read barrier; its lease counts from now
 * once the Pong comes. None while one is on its way.
 */
static void idle_ping(struct idle *x, struct node *n)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Ping p = SEMD__PING__INIT;

	if (x->ping_id != 0 && now() - x->ping_sent < REQ_TIMEOUT)
		return;
	if (!semlog_core_heard_locked(n->core, idle_conn(x)))
		return;
	rq.id = x->next_id++;
	rq.op_case = SEMD__REQUEST__OP_PING;
	rq.ping = &p;
	if (read_begin(n, idle_conn(x), &rq)) {
		x->ping_id = rq.id;
		x->ping_sent = now();
	}
}

/* Every IDLE_ROUND ms: each idle client's move. */
void idle_round(void)
{
	struct sm_batch b[MAXNODES];
	unsigned int i, k;
	struct idle *x;
	struct node *n;
	int serve = -1;

	if (nidle == 0 || now() < next_round)
		return;
	next_round = now() + IDLE_ROUND;
	for (i = 0; i < nn; i++) {
		sm_batch_init(&b[i]);
		if (serving(&nodes[i]))
			serve = (int)i;
	}
	for (k = 0; k < nidle; k++) {
		x = &idl[k];
		if (x->gone) {
			if (x->session != 0)
				idle_check_gone(x);
			continue;
		}
		/* A quarter go away in the first half, silent or hung up. */
		if (x->session != 0 && !x->hello_out && rnd_below(4 * 600) == 0 &&
		    now() < 30000) {
			x->gone = true;
			x->gone_st = state_now();
			if (x->node >= 0 && rnd_below(2) == 0)
				sm_batch_close(&b[x->node], idle_conn(x));
			continue;
		}
		if (x->node >= 0) {
			n = &nodes[x->node];
			if (!serving(n)) {
				x->node = -1;	/* dropped: to the next leader */
				x->hello_out = false;
			} else if (x->hello_out && now() - x->hello_sent > REQ_TIMEOUT) {
				sm_batch_close(&b[x->node], idle_conn(x));
				x->node = -1;
				x->hello_out = false;
			}
		}
		if (x->node < 0) {
			if (serve >= 0)
				idle_attach(x, &nodes[serve], &b[serve]);
			continue;
		}
		if (x->hello_out || x->session == 0 || now() < x->next_ping)
			continue;
		/* A Ping, answered by the leader without an entry (a read). */
		n = &nodes[x->node];
		x->next_ping = now() + x->lease / 3;
		idle_ping(x, n);
	}
	for (i = 0; i < nn; i++) {
		submit(&nodes[i], &b[i]);
		sm_batch_free(&b[i]);
	}
}
