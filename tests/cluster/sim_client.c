/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/sim_client.c - the simulated clients' moves: attach to the
 * leader, take and give back permits of three names, keep their sessions
 * alive, resume them on the next leader, retry a down whose answer they
 * missed.
 */
#include "tests/cluster/sim.h"

/* --- the clients' moves ----------------------------------------------------------- */

static const char *const principals[NGROUPS] = { "uid:0", "uid:1", "uid:2" };
static const char *const groups[NGROUPS] = { "g0", "g1", "g2" };
static const char *const rkeys[NRKEYS] = { "k0", "k1" };

static void remember(struct client *c, uint64_t id, int name, bool retry)
{
	struct sent *s = &c->ring[c->nring++ % RING];

	s->client = (int)(c - cl);
	s->retry = retry;
	s->conn = c->conn;
	s->id = id;
	s->at = now();
	s->name = name;
	s->waits = false;
	s->rkey = -1;
	s->prio = 0;
	c->last_sent = now();
}

/* Add request rq of connection conn to batch b (an admin's). */
static void batch_req(struct sm_batch *b, uint64_t conn,
    const Semd__Request *rq)
{
	struct sm_caller who = { 0 };
	uint8_t buf[1024];
	size_t len = semd__request__get_packed_size(rq);

	if (len > sizeof buf)
		fail("a request of %zu bytes", len);
	who.privs = SM_PRIV_ADMIN;
	semd__request__pack(rq, buf);
	sm_batch_request(b, conn, &who, buf, len);
}

/* Send one request (and before it, what else the batch carries). */
static void send_req(struct client *c, struct sm_batch *b, Semd__Request *rq,
    int name, bool retry)
{
	batch_req(b, c->conn, rq);
	remember(c, rq->id, name, retry);
}

/*
 * What the client sends goes to its node's log core (a node that does not
 * serve drops it, and its clients; a stopped one hangs).
 */
static void transmit(struct client *c, struct sm_batch *b)
{
	submit(&nodes[c->node], b);
}

/* A node that serves clients, or -1. */
static int serving_node(void)
{
	for (unsigned int i = 0; i < nn; i++)
		if (serving(&nodes[i]))
			return (int)i;
	return -1;
}

/*
 * The Hello *rq of id (on *h) from client_name, asking a lease of lease_ms;
 * it resumes session (with its secret) if session is not 0.
 */
void hello_make(Semd__Request *rq, Semd__Hello *h, uint64_t id,
    const char *client_name, uint32_t lease_ms, uint64_t session,
    uint8_t *secret)
{
	semd__request__init(rq);
	semd__hello__init(h);
	h->version = 1;
	h->client_name = (char *)client_name;
	h->lease_ms = lease_ms;
	if (session != 0) {
		h->resume_session = session;
		h->resume_secret.data = secret;
		h->resume_secret.len = SM_SECRET_LEN;
	}
	rq->id = id;
	rq->op_case = SEMD__REQUEST__OP_HELLO;
	rq->hello = h;
}

static void attach(struct client *c, int node)
{
	Semd__Request rq;
	Semd__Hello h;
	struct sm_batch b;
	uint8_t secret[SM_SECRET_LEN];

	for (int k = 0; k < SM_SECRET_LEN; k++)
		secret[k] = (uint8_t)rnd();
	c->node = node;
	c->conn = next_conn++;
	c->hello_out = true;
	c->down_sent = 0;
	c->last_heard = now();
	if (c->session == 0 || now() >= trust_end(c)) {
		c->session = 0;		/* a new one, holding and asking nothing */
		c->nholds = 0;
		c->down_id = 0;
	}
	sm_batch_init(&b);
	/* Clients k, k + NGROUPS, ... are one principal: shares, keys. */
	sm_batch_open(&b, c->conn, principals[(c - cl) % NGROUPS], secret, 0);
	hello_make(&rq, &h, c->next_id++, "sim", 1000 + rnd_below(3000),
	    c->session, c->secret);
	send_req(c, &b, &rq, -1, false);
	transmit(c, &b);
	sm_batch_free(&b);
	trace("client %d attaches to node %d (conn %" PRIu64 ", resume %"
	    PRIu64 ")", (int)(c - cl), node + 1, c->conn, h.resume_session);
}

static void send_down(struct client *c, bool retry)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Down d = SEMD__DOWN__INIT;
	struct sm_batch b;
	struct sent *s;

	d.name = (char *)names[c->down_name];
	d.n = 1;
	d.timeout_ms = c->down_timeout;
	d.limit = limits[c->down_name];
	/* Classes (-8..7), from the request's id: the same on a retry. */
	if (ncfg[c->down_name].prio)
		d.priority = (int)(c->down_id % 16) - 8;
	if (c->down_rkey >= 0)
		d.replace = (char *)rkeys[c->down_rkey];
	if (c->down_group >= 0)
		d.group = (char *)groups[c->down_group];
	rq.id = c->down_id;
	rq.op_case = SEMD__REQUEST__OP_DOWN;
	rq.down = &d;
	sm_batch_init(&b);
	send_req(c, &b, &rq, c->down_name, retry);
	s = &c->ring[(c->nring - 1) % RING];
	s->waits = d.timeout_ms != 0;
	s->rkey = c->down_rkey;
	s->prio = d.priority;
	transmit(c, &b);
	sm_batch_free(&b);
	c->down_sent = now();
}

/*
 * The names with queue features, created by a connection of its own
 * (uid:0) in the first entry a leader is handed, before any client can
 * auto-create them. One handed again (its first leader was deposed before
 * it reached the log... or after) finds them there: if_not_exists.
 */
void setup_names(struct sm_batch *b)
{
	Semd__Request rq;
	Semd__Hello h;
	Semd__Create cr;
	Semd__GroupWeight gw[NGROUPS], *gwp[NGROUPS];
	uint8_t secret[SM_SECRET_LEN] = { 0 };

	sm_batch_open(b, SETUP_CONN, "uid:0", secret, 0);
	hello_make(&rq, &h, 1, "sim-setup", 0, 0, NULL);
	batch_req(b, SETUP_CONN, &rq);
	for (int k = 0; k < NNAMES; k++) {
		const struct namecfg *nc = &ncfg[k];

		if (nc->share == SEMD__SHARE_BY__SHARE_NONE &&
		    nc->max_waiters == 0 && !nc->prio && !nc->rkeys)
			continue;
		semd__request__init(&rq);
		semd__create__init(&cr);
		cr.name = (char *)names[k];
		cr.limit = limits[k];
		cr.if_not_exists = true;
		cr.max_waiters = nc->max_waiters;
		cr.share = nc->share;
		for (int g = 0; g < NGROUPS && nc->share != 0; g++) {
			semd__group_weight__init(&gw[g]);
			gw[g].group = (char *)(nc->share ==
			    SEMD__SHARE_BY__SHARE_KEY ? groups[g] : principals[g]);
			gw[g].weight = nc->weights[g];
			gwp[g] = &gw[g];
			cr.n_weights++;
		}
		cr.weights = gwp;
		rq.id = (uint64_t)k + 2;
		rq.op_case = SEMD__REQUEST__OP_CREATE;
		rq.create = &cr;
		batch_req(b, SETUP_CONN, &rq);
	}
	sm_batch_close(b, SETUP_CONN);
}

/* What: a ping (0), an up (1), a Detach (2), a SetQueue (3). */
static void send_simple(struct client *c, int what)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Up u = SEMD__UP__INIT;
	Semd__Ping p = SEMD__PING__INIT;
	Semd__Detach dt = SEMD__DETACH__INIT;
	Semd__SetQueue sq = SEMD__SET_QUEUE__INIT;
	struct sm_batch b;
	int k;

	rq.id = c->next_id++;
	sm_batch_init(&b);
	if (what == 0) {
		rq.op_case = SEMD__REQUEST__OP_PING;
		rq.ping = &p;
		/*
		 * The leader answers it without an entry, after a read barrier
		 * (feed_log.c: the session heard, then the log core's read).
		 */
		if (serving(&nodes[c->node]) &&
		    semlog_core_heard_locked(nodes[c->node].core, c->conn) &&
		    read_begin(&nodes[c->node], c->conn, &rq)) {
			remember(c, rq.id, -1, false);
			sm_batch_free(&b);
			return;
		}
	} else if (what == 1) {
		/* Give one back: it stops trusting it before it says so. */
		k = (int)rnd_below((unsigned int)c->nholds);
		u.name = (char *)names[c->holds[k].name];
		u.permit_id = c->holds[k].permit;
		u.n = 1;
		rq.op_case = SEMD__REQUEST__OP_UP;
		rq.up = &u;
		c->holds[k] = c->holds[--c->nholds];
	} else if (what == 2) {
		rq.op_case = SEMD__REQUEST__OP_DETACH;
		rq.detach = &dt;
	} else {
		/* A name's bound changed (0: none), its least one kept. */
		k = (int)rnd_below(NNAMES);
		sq.name = (char *)names[k];
		sq.max_waiters = rnd_below(5);
		if (sq.max_waiters != 0 && (ncfg[k].min_bound == 0 ||
		    sq.max_waiters < ncfg[k].min_bound))
			ncfg[k].min_bound = sq.max_waiters;
		rq.op_case = SEMD__REQUEST__OP_SET_QUEUE;
		rq.set_queue = &sq;
		bounds_set++;
	}
	send_req(c, &b, &rq, -1, false);
	transmit(c, &b);
	sm_batch_free(&b);
}

/* Close the connection (the node hears it when it serves). */
static void hang_up(struct client *c, const char *why)
{
	struct sm_batch b;

	sm_batch_init(&b);
	sm_batch_close(&b, c->conn);
	submit(&nodes[c->node], &b);
	sm_batch_free(&b);
	drop_client(c, why);
}

void client_step(struct client *c)
{
	uint64_t t = now();
	int node;

	/* Its lease over, the client gives up the session and its holds. */
	if (c->session != 0 && t >= trust_end(c) && !c->hello_out) {
		trace("client %d: lease of session %" PRIu64 " over", (int)(c - cl),
		    c->session);
		c->session = 0;
		c->nholds = 0;
		c->down_id = 0;
		if (c->node >= 0)
			hang_up(c, "lease over");
	}
	if (c->node < 0) {
		if (t < c->next_act || (node = serving_node()) < 0)
			return;
		attach(c, node);
		c->next_ping = t + 300;
		return;
	}
	/* No answer for a while: try another node. */
	if (t - c->last_heard > REQ_TIMEOUT && c->last_sent > c->last_heard) {
		hang_up(c, "no answer");
		c->next_act = t + rnd_below(300);
		return;
	}
	if (c->hello_out)
		return;
	if (c->lease > 0 && t >= c->next_ping) {
		send_simple(c, 0);
		c->next_ping = t + c->lease / 3;
	}
	if (c->down_id != 0) {
		if (c->down_sent == 0)
			send_down(c, true);	/* resumed: ask again, same id */
		return;
	}
	if (t < c->next_act)
		return;
	c->next_act = t + rnd_below(400);
	switch (rnd_below(10)) {
	case 0: case 1: case 2: case 3:
		if (c->nholds >= 3)
			break;
		c->down_id = c->next_id++;
		c->down_name = (int)rnd_below(NNAMES);
		c->down_timeout = rnd_below(4) == 0 ? 0 : rnd_below(5) == 0 ? -1 :
		    (int64_t)(100 + rnd_below(1500));
		c->down_rkey = ncfg[c->down_name].rkeys && rnd_below(2) == 0 ?
		    (int)rnd_below(NRKEYS) : -1;
		c->down_group = ncfg[c->down_name].share ==
		    SEMD__SHARE_BY__SHARE_KEY && rnd_below(4) != 0 ?
		    (int)rnd_below(NGROUPS) : -1;
		send_down(c, false);
		break;
	case 4: case 5: case 6:
		if (c->nholds > 0)
			send_simple(c, 1);
		break;
	case 7:
		if (rnd_below(6) == 0) {
			send_simple(c, 2);
			hang_up(c, "detached");
		}
		break;
	case 8:
		if (rnd_below(8) == 0)
			hang_up(c, "hung up");
		break;
	case 9:
		if (rnd_below(20) == 0)
			send_simple(c, 3);
		break;
	default:
		break;
	}
}

