/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/sim.c - a semd cluster in simulated time.
 *
 * Three or five raft nodes of libraft's deterministic fixture (its own
 * network, disks and clock), each applying the log to its own state machine
 * the way daemon/log/durable.c does: a new leader's barrier, then its LEADER
 * entry (every client of before gone, leases given the grace), entries
 * stamped with log time that goes on from the last one applied, ticks
 * proposed when a deadline is due, snapshots every few dozen entries sent to
 * nodes that fell behind, state machines restarted from their snapshot. Simulated clients attach to the
 * leader, hold and give back permits of three names, keep their sessions
 * alive, resume them on the next leader and retry a down whose answer they
 * missed. Faults: nodes stopped and revived, links cut one way or both,
 * leaders cut off, latencies changed.
 *
 * Checked at every step, for every seed:
 *  - each entry index is applied by every node with byte-identical replies,
 *    and sm_check holds after every entry on every node;
 *  - nodes that applied the same index have byte-identical snapshots;
 *  - when a client hears of a grant, the clients that trust their own holds
 *    of that name (their client-side lease not over, the hold not given
 *    back nor reported lost) are at most its limit;
 *  - no fencing token is granted to two downs, and a down sent once gets
 *    a token greater than every one heard before on its name (a down sent
 *    again after a resume may get one granted to its session unheard);
 *  - a session is never gone while its client still trusts its lease;
 *  - once every fault is healed, every client is answered again.
 * libraft's fixture checks election safety and the leader's append-only log.
 *
 * Usage: sim [-s seed] [-n seeds] [-t sim-seconds] [-N nodes] [-v]
 *   1000 seeds of 60 simulated seconds from a seed drawn from the clock by
 *   default ($SIM_SEEDS: another count); nodes alternate 3 and 5. A failure
 *   prints its seed; -s SEED -n 1 replays it exactly (-v: what happened).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <raft.h>
#include <raft/fixture.h>

#include "daemon/log/raftguard.h"
#include "daemon/state/state.h"
#include "tests/common/opts.h"
#include "tests/common/rng.h"

#define MAXNODES	5
#define NCL		8		/* clients */
#define NNAMES		3
#define RING		64		/* requests a client remembers */
#define REQ_TIMEOUT	2000		/* a client gives up on a node (ms) */
#define DRIFT_PPM	10000		/* client-side lease: as libsemclient */
#define MARGIN_MIN	50

static const char *const names[NNAMES] = { "licence", "db", "quota" };
static const unsigned int limits[NNAMES] = { 1, 2, 3 };

static uint64_t seed;
static bool verbose;

static struct raft_fixture f;

static raft_time now(void)
{
	return raft_fixture_time(&f);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2),
    noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sim: seed %" PRIu64 ", t=%llu ms: ", seed,
	    (unsigned long long)now());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(replay: sim -s %" PRIu64 " -n 1)\n", seed);
	exit(1);
}

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void trace(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	fprintf(stderr, "%8llu ", (unsigned long long)now());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* --- the nodes -------------------------------------------------------------------- */

struct node {
	unsigned int	i;
	struct raft	*raft;
	struct raft_fsm	fsm;
	struct sm	*sm;
	struct sm_config cfg;
	bool		leader;		/* the harness saw it lead */
	bool		serving;	/* its LEADER entry is applied */
	bool		ticking;	/* a tick entry is in flight */
	struct sm_clock	clock;		/* log time, while leader */
	uint64_t	hash;		/* of what the entry being applied said */
	struct raft_barrier barrier;
	/* The fixture's disk, watched (see fix_truncate). */
	int		(*append)(struct raft_io *io, struct raft_io_append *req,
	    const struct raft_entry entries[], unsigned n, raft_io_append_cb cb);
	int		(*truncate)(struct raft_io *io, raft_index index);
	size_t		stored;		/* entries the fixture's disk holds */
	struct pending {
		struct raft_io_append *req;
		raft_io_append_cb cb;
		unsigned n;
	}		*pend;
	size_t		npend, cappend;
};

static struct node nodes[MAXNODES];
static unsigned int nn;
static uint32_t grace;		/* restart-grace */

/* The ledger: what index i said (hash | 1; 0: not applied yet). */
static uint64_t *ledger;
static size_t ledger_cap;

/* --- the clients ------------------------------------------------------------------ */

struct hold {
	uint64_t	permit;
	uint64_t	token;
	int		name;
};

struct sent {
	uint64_t	conn;
	uint64_t	id;
	uint64_t	at;		/* sim time it was sent */
	int		name;		/* a down's name, or -1 */
	int		client;
	bool		retry;		/* sent again after a resume */
};

struct client {
	int		node;		/* attached to (-1: none) */
	uint64_t	conn;		/* its connection's client id */
	bool		hello_out;	/* the Hello is unanswered */
	uint64_t	session;
	uint8_t		secret[SM_SECRET_LEN];
	uint32_t	lease;		/* granted */
	uint64_t	trust_base;	/* send time of the last answered request */
	uint64_t	next_id;
	/* The outstanding down (kept across a resume: retried). */
	uint64_t	down_id;
	int		down_name;
	int64_t		down_timeout;
	uint64_t	down_sent;	/* 0: not sent on this connection */
	uint64_t	last_sent;	/* anything, on this connection */
	uint64_t	last_heard;
	uint64_t	next_ping;
	uint64_t	next_act;
	uint64_t	answered;	/* answers heard */
	struct hold	holds[8];
	int		nholds;
	struct sent	ring[RING];
	unsigned int	nring;
};

static struct client cl[NCL];
static uint64_t next_conn = 1;
static uint64_t next_draw;	/* of election timeouts */

/* Tokens granted per name, ascending, with the down that got each. */
struct token {
	uint64_t	token;
	int		client;
	uint64_t	id;
};
static struct token *tokens[NNAMES];
static size_t ntokens[NNAMES], captokens[NNAMES];

static unsigned long grants, entries, faults, snaps_compared, installs;

/* Until when a client trusts its session (libsemclient's rule). */
static uint64_t trust_end(const struct client *c)
{
	uint64_t margin = c->lease / 20 > MARGIN_MIN ? c->lease / 20 : MARGIN_MIN;

	if (c->session == 0 || c->lease == 0)
		return 0;
	return c->trust_base + c->lease - (uint64_t)c->lease * DRIFT_PPM / 1000000 -
	    margin;
}

/* The request of this connection and id (NULL: not one of ours). */
static struct sent *find_sent(uint64_t conn, uint64_t id)
{
	for (int k = 0; k < NCL; k++)
		for (unsigned int j = 0; j < RING && j < cl[k].nring; j++)
			if (cl[k].ring[j].conn == conn && cl[k].ring[j].id == id)
				return &cl[k].ring[j];
	return NULL;
}

static struct client *client_of(uint64_t conn)
{
	for (int k = 0; k < NCL; k++)
		if (cl[k].conn == conn && conn != 0)
			return &cl[k];
	return NULL;
}

/* --- proposing --------------------------------------------------------------------- */

struct prop {
	struct raft_apply req;
	struct node	*n;
	bool		startup;
	bool		tick;
};

static void applied_cb(struct raft_apply *req, int status, void *result)
{
	struct prop *p = req->data;

	(void)result;
	if (p->startup && status == 0 && p->n->leader) {
		p->n->serving = true;
		trace("node %u serves", p->n->i + 1);
	}
	if (p->tick)
		p->n->ticking = false;
	free(p);
}

/* Propose a batch (NULL: a tick) on node n as one entry. */
static bool propose(struct node *n, const struct sm_batch *b, uint64_t at_least,
    bool startup)
{
	size_t hl = sm_entry_header_size(), len = b != NULL ? b->len : 0;
	struct raft_buffer buf;
	struct prop *p = calloc(1, sizeof *p);

	buf.len = (hl + len + 7) & ~(size_t)7;
	buf.base = raft_calloc(1, buf.len);
	if (p == NULL || buf.base == NULL)
		fail("out of memory");
	sm_entry_header(buf.base, sm_clock_stamp(&n->clock, now(), at_least),
	    1700000000000ULL + now());
	if (len > 0)
		memcpy((uint8_t *)buf.base + hl, b->p, len);
	p->n = n;
	p->startup = startup;
	p->tick = b == NULL;
	p->req.data = p;
	if (raft_apply(n->raft, &p->req, &buf, 1, applied_cb) != 0) {
		raft_free(buf.base);
		free(p);
		return false;
	}
	if (p->tick)
		n->ticking = true;
	return true;
}

static void barrier_cb(struct raft_barrier *req, int status)
{
	struct node *n = req->data;
	struct sm_batch b;
	uint64_t t;

	if (status != 0 || !n->leader)
		return;
	t = sm_now(n->sm);
	sm_clock_start(&n->clock, t, 1000, now());
	sm_batch_init(&b);
	if (t == 0)
		sm_batch_boot(&b);
	sm_batch_config(&b, &n->cfg);
	sm_batch_leader(&b, n->i + 1, t == 0 ? 0 : grace,
	    "127.0.0.1:7000");
	if (b.failed)
		fail("out of memory");
	if (!propose(n, &b, 0, true))
		trace("node %u: its LEADER entry was refused", n->i + 1);
	sm_batch_free(&b);
}

/* --- applying ---------------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

static void lose_hold(struct client *c, uint64_t permit)
{
	for (int k = 0; k < c->nholds; k++)
		if (c->holds[k].permit == permit) {
			c->holds[k] = c->holds[--c->nholds];
			return;
		}
}

/* How many clients trust a hold of this name now. */
static unsigned int believers(int name)
{
	unsigned int count = 0;

	for (int k = 0; k < NCL; k++) {
		if (now() >= trust_end(&cl[k]))
			continue;
		for (int j = 0; j < cl[k].nholds; j++)
			count += cl[k].holds[j].name == name;
	}
	return count;
}

/*
 * A grant's token: new grants' tokens grow; a down heard again gets its
 * token again; a down sent again after a resume may get a token lower than
 * the last one heard (granted to its session while no connection was
 * there to hear it), never one another down got.
 */
static void check_token(int name, const struct sent *s, uint64_t token)
{
	struct token *t = tokens[name];
	size_t lo = 0, hi = ntokens[name], n = ntokens[name];

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t[mid].token < token)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && t[lo].token == token) {
		if (t[lo].client != s->client || t[lo].id != s->id)
			fail("%s: token %" PRIu64 " granted twice (client %d's "
			    "down %" PRIu64 ", client %d's down %" PRIu64 ")",
			    names[name], token, t[lo].client, t[lo].id, s->client,
			    s->id);
		return;
	}
	if (lo < n && !s->retry)
		fail("%s: token %" PRIu64 " granted after token %" PRIu64,
		    names[name], token, t[n - 1].token);
	if (n == captokens[name]) {
		captokens[name] = captokens[name] ? captokens[name] * 2 : 256;
		tokens[name] = realloc(tokens[name], captokens[name] * sizeof *t);
		if (tokens[name] == NULL)
			fail("out of memory");
		t = tokens[name];
	}
	memmove(&t[lo + 1], &t[lo], (n - lo) * sizeof *t);
	t[lo] = (struct token){ token, s->client, s->id };
	ntokens[name]++;
	grants++;
}

/* A client hears a reply from the node it is attached to. */
static void deliver(struct client *c, const Semd__Reply *r)
{
	struct sent *s = r->id != 0 ? find_sent(c->conn, r->id) : NULL;

	c->last_heard = now();
	if (r->body_case == SEMD__REPLY__BODY_HOLD_LOST) {
		lose_hold(c, r->hold_lost->permit_id);
		return;
	}
	if (s == NULL)
		return;		/* a notice, or the answer of a dropped request */
	c->answered++;
	if (s->at > c->trust_base)
		c->trust_base = s->at;
	if (r->body_case == SEMD__REPLY__BODY_HELLO) {
		c->hello_out = false;
		if (c->session != 0 && !r->hello->resumed) {
			if (c->nholds > 0 && now() < trust_end(c))
				fail("client %d: session %" PRIu64 " is gone while "
				    "its client trusts its lease until %" PRIu64,
				    (int)(c - cl), c->session, trust_end(c));
			c->nholds = 0;
			c->down_id = 0;
		}
		c->session = r->hello->session;
		c->lease = r->hello->lease_ms;
		c->trust_base = s->at;
		if (r->hello->secret.len == SM_SECRET_LEN)
			memcpy(c->secret, r->hello->secret.data, SM_SECRET_LEN);
		return;
	}
	if (r->id != c->down_id)
		return;
	c->down_id = 0;
	if (r->code != SEMD__CODE__OK || r->body_case != SEMD__REPLY__BODY_GRANT)
		return;
	for (int k = 0; k < c->nholds; k++)
		if (c->holds[k].permit == r->grant->permit_id)
			return;		/* heard again */
	if (c->nholds == (int)(sizeof c->holds / sizeof c->holds[0]))
		fail("client %d holds too much", (int)(c - cl));
	c->holds[c->nholds].permit = r->grant->permit_id;
	c->holds[c->nholds].token = r->grant->token;
	c->holds[c->nholds].name = s->name;
	c->nholds++;
	if (believers(s->name) > limits[s->name])
		fail("%s: %u clients trust a hold of it (limit %u)",
		    names[s->name], believers(s->name), limits[s->name]);
}

/* sm_out.reply: hash everything; deliver what goes to a client here. */
static void on_reply(void *ctx, void *conn, const Semd__Reply *r)
{
	struct node *n = ctx;
	uint64_t id = (uint64_t)(uintptr_t)conn;
	uint8_t buf[8192];
	size_t len = semd__reply__get_packed_size(r);
	struct client *c;
	struct sent *s;

	if (len > sizeof buf)
		fail("a reply of %zu bytes", len);
	semd__reply__pack(r, buf);
	n->hash = fnv(fnv(n->hash, &id, sizeof id), buf, len);
	/* The first node to apply an entry checks its grants' tokens. */
	s = r->body_case == SEMD__REPLY__BODY_GRANT && r->code == SEMD__CODE__OK ?
	    find_sent(id, r->id) : NULL;
	if (s != NULL && s->name >= 0 &&
	    ledger[raft_last_applied(n->raft) + 1] == 0) {
		trace("entry %llu: conn %" PRIu64 " request %" PRIu64 " granted %s "
		    "token %" PRIu64, (unsigned long long)raft_last_applied(n->raft) + 1,
		    id, r->id, names[s->name], r->grant->token);
		check_token(s->name, s, r->grant->token);
	}
	c = client_of(id);
	if (c != NULL && c->node == (int)n->i)
		deliver(c, r);
}

static void drop_client(struct client *c, const char *why)
{
	if (c->node >= 0)
		trace("client %d leaves node %d: %s", (int)(c - cl), c->node + 1,
		    why);
	c->node = -1;
	c->conn = 0;
	c->hello_out = false;
	c->down_sent = 0;
}

/* sm_out.close: the state machine closes a connection. */
static void on_close(void *ctx, void *conn)
{
	struct node *n = ctx;
	struct client *c = client_of((uint64_t)(uintptr_t)conn);

	if (c != NULL && c->node == (int)n->i)
		drop_client(c, "closed by the state");
}

static void *bind_id(void *arg, uint64_t id)
{
	(void)arg;
	return (void *)(uintptr_t)id;
}

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf,
    void **result)
{
	static const struct sm_apply_hooks hooks = { bind_id, NULL, NULL };
	struct node *n = fsm->data;
	raft_index index = raft_last_applied(n->raft) + 1;
	char err[256];

	*result = NULL;
	if (index >= ledger_cap) {
		size_t cap = ledger_cap * 2 > index + 1 ? ledger_cap * 2 : index + 1024;

		ledger = realloc(ledger, cap * sizeof *ledger);
		if (ledger == NULL)
			fail("out of memory");
		memset(ledger + ledger_cap, 0, (cap - ledger_cap) * sizeof *ledger);
		ledger_cap = cap;
	}
	n->hash = 14695981039346656037ULL;
	if (sm_apply(n->sm, buf->base, buf->len, &hooks, err, sizeof err) != 0)
		fail("node %u cannot apply entry %llu: %s", n->i + 1,
		    (unsigned long long)index, err);
	if (sm_check(n->sm, err, sizeof err) != 0)
		fail("node %u after entry %llu: %s", n->i + 1,
		    (unsigned long long)index, err);
	if (ledger[index] == 0) {
		ledger[index] = n->hash | 1;
		entries++;
	} else if (ledger[index] != (n->hash | 1)) {
		fail("node %u said something else at entry %llu", n->i + 1,
		    (unsigned long long)index);
	}
	return 0;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
    unsigned int *n_bufs)
{
	struct node *n = fsm->data;
	uint8_t *p;
	size_t len;

	*bufs = raft_malloc(sizeof **bufs);
	if (*bufs == NULL || sm_snapshot(n->sm, &p, &len) != 0)
		fail("out of memory");
	/* raft frees it with raft_free: copy into its memory. */
	(*bufs)[0].base = raft_malloc(len);
	if ((*bufs)[0].base == NULL)
		fail("out of memory");
	memcpy((*bufs)[0].base, p, len);
	(*bufs)[0].len = len;
	free(p);
	*n_bufs = 1;
	return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct node *n = fsm->data;
	struct sm_out out = { on_reply, n, on_close, NULL };
	struct sm_client *c;
	char err[256];
	struct sm *sm;

	for (int k = 0; k < 16; k++)
		n->cfg.hash_key[k] = (uint8_t)rnd();
	sm = sm_restore(&n->cfg, &out, buf->base, buf->len, err, sizeof err);
	if (sm == NULL)
		fail("node %u cannot restore a %zu-byte snapshot: %s", n->i + 1,
		    buf->len, err);
	if (sm_check(sm, err, sizeof err) != 0)
		fail("node %u, restored: %s", n->i + 1, err);
	/* Every node binds every client: bind the restored ones again. */
	for (uint64_t id = 1; id < next_conn; id++)
		if ((c = sm_client_find(sm, id)) != NULL)
			sm_client_bind(c, (void *)(uintptr_t)id);
	sm_free(n->sm);
	n->sm = sm;
	raft_free(buf->base);
	installs++;
	return 0;
}

/* --- the fixture's disk ----------------------------------------------------------- */

/*
 * libraft 0.15's fixture truncates its disk at once, copying index - 1
 * entries as if they all were written, while appends may still be on their
 * way (raft truncates conflicting entries it has not stored yet): a heap
 * overflow. raft_uv queues the truncation behind the writes. Here each
 * node's disk is watched: appends are counted when written, a truncation
 * never reaches past what is written. The disk's contents are only read
 * when a node starts, which the simulation does once.
 */
static struct node *node_of_io(struct raft_io *io)
{
	for (unsigned int i = 0; i < nn; i++)
		if ((void *)nodes[i].raft == io->data)
			return &nodes[i];
	fail("an unknown raft_io");
}

static void fix_append_cb(struct raft_io_append *req, int status)
{
	raft_io_append_cb cb = NULL;

	for (unsigned int i = 0; i < nn && cb == NULL; i++) {
		struct node *n = &nodes[i];

		for (size_t k = 0; k < n->npend; k++)
			if (n->pend[k].req == req) {
				cb = n->pend[k].cb;
				if (status == 0)
					n->stored += n->pend[k].n;
				n->pend[k] = n->pend[--n->npend];
				break;
			}
	}
	if (cb == NULL)
		fail("an append nobody asked for");
	cb(req, status);
}

static int fix_append(struct raft_io *io, struct raft_io_append *req,
    const struct raft_entry ents[], unsigned cnt, raft_io_append_cb cb)
{
	struct node *n = node_of_io(io);
	int rv;

	if (n->npend == n->cappend) {
		n->cappend = n->cappend ? n->cappend * 2 : 16;
		n->pend = realloc(n->pend, n->cappend * sizeof *n->pend);
		if (n->pend == NULL)
			fail("out of memory");
	}
	rv = n->append(io, req, ents, cnt, fix_append_cb);
	if (rv == 0)
		n->pend[n->npend++] = (struct pending){ req, cb, cnt };
	return rv;
}

static int fix_truncate(struct raft_io *io, raft_index index)
{
	struct node *n = node_of_io(io);
	int rv;

	if (index > n->stored + 1)
		index = n->stored + 1;
	rv = n->truncate(io, index);
	if (rv == 0)
		n->stored = index - 1;
	return rv;
}

/* --- the clients' moves ----------------------------------------------------------- */

static void remember(struct client *c, uint64_t id, int name, bool retry)
{
	struct sent *s = &c->ring[c->nring++ % RING];

	s->client = (int)(c - cl);
	s->retry = retry;
	s->conn = c->conn;
	s->id = id;
	s->at = now();
	s->name = name;
	c->last_sent = now();
}

/* Send one request (and before it, what else the batch carries). */
static void send_req(struct client *c, struct sm_batch *b, Semd__Request *rq,
    int name, bool retry)
{
	struct sm_caller who = { 0 };
	uint8_t buf[1024];
	size_t len = semd__request__get_packed_size(rq);

	who.privs = SM_PRIV_ADMIN;
	semd__request__pack(rq, buf);
	sm_batch_request(b, c->conn, &who, buf, len);
	remember(c, rq->id, name, retry);
}

/* Propose what the client sends, on its node (dropped when it cannot). */
static void transmit(struct client *c, struct sm_batch *b)
{
	struct node *n = &nodes[c->node];

	if (b->failed)
		fail("out of memory");
	/* A node that is not serving drops its clients; a stopped one hangs. */
	if (raft_fixture_alive(&f, n->i) && n->serving)
		propose(n, b, 0, false);
}

static int serving_node(void)
{
	for (unsigned int i = 0; i < nn; i++)
		if (nodes[i].serving && raft_fixture_alive(&f, i))
			return (int)i;
	return -1;
}

static void attach(struct client *c, int node)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Hello h = SEMD__HELLO__INIT;
	struct sm_batch b;
	uint8_t secret[SM_SECRET_LEN];

	for (int k = 0; k < SM_SECRET_LEN; k++)
		secret[k] = (uint8_t)rnd();
	c->node = node;
	c->conn = next_conn++;
	c->hello_out = true;
	c->down_sent = 0;
	c->last_heard = now();
	sm_batch_init(&b);
	sm_batch_open(&b, c->conn, "uid:0", secret, 0);
	h.version = 1;
	h.client_name = "sim";
	h.lease_ms = 1000 + rnd_below(3000);
	if (c->session != 0 && now() < trust_end(c)) {
		h.resume_session = c->session;
		h.resume_secret.data = c->secret;
		h.resume_secret.len = SM_SECRET_LEN;
	} else {
		c->session = 0;
		c->nholds = 0;
		c->down_id = 0;
	}
	rq.id = c->next_id++;
	rq.op_case = SEMD__REQUEST__OP_HELLO;
	rq.hello = &h;
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

	d.name = (char *)names[c->down_name];
	d.n = 1;
	d.timeout_ms = c->down_timeout;
	d.limit = limits[c->down_name];
	rq.id = c->down_id;
	rq.op_case = SEMD__REQUEST__OP_DOWN;
	rq.down = &d;
	sm_batch_init(&b);
	send_req(c, &b, &rq, c->down_name, retry);
	transmit(c, &b);
	sm_batch_free(&b);
	c->down_sent = now();
}

static void send_simple(struct client *c, int what)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Up u = SEMD__UP__INIT;
	Semd__Ping p = SEMD__PING__INIT;
	Semd__Detach dt = SEMD__DETACH__INIT;
	struct sm_batch b;
	int k;

	rq.id = c->next_id++;
	sm_batch_init(&b);
	if (what == 0) {
		rq.op_case = SEMD__REQUEST__OP_PING;
		rq.ping = &p;
	} else if (what == 1) {
		/* Give one back: it stops trusting it before it says so. */
		k = (int)rnd_below((unsigned int)c->nholds);
		u.name = (char *)names[c->holds[k].name];
		u.permit_id = c->holds[k].permit;
		u.n = 1;
		rq.op_case = SEMD__REQUEST__OP_UP;
		rq.up = &u;
		c->holds[k] = c->holds[--c->nholds];
	} else {
		rq.op_case = SEMD__REQUEST__OP_DETACH;
		rq.detach = &dt;
	}
	send_req(c, &b, &rq, -1, false);
	transmit(c, &b);
	sm_batch_free(&b);
}

/* Close the connection (the node hears it when it serves). */
static void hang_up(struct client *c, const char *why)
{
	struct node *n = &nodes[c->node];
	struct sm_batch b;

	if (raft_fixture_alive(&f, n->i) && n->serving) {
		sm_batch_init(&b);
		sm_batch_close(&b, c->conn);
		propose(n, &b, 0, false);
		sm_batch_free(&b);
	}
	drop_client(c, why);
}

static void client_step(struct client *c)
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
	default:
		break;
	}
}

/* --- the harness -------------------------------------------------------------------- */

/* Follow leadership as durable.c's poll does. */
static void follow(void)
{
	/*
	 * The fixture draws each node's election timeout once: nodes whose
	 * elections keep colliding would collide forever. raft_uv draws it
	 * for every election; so does this, every 100 ms.
	 */
	if (now() >= next_draw) {
		for (unsigned int i = 0; i < nn; i++)
			raft_fixture_set_randomized_election_timeout(&f, i,
			    500 + rnd_below(500));
		next_draw = now() + 100;
	}
	for (unsigned int i = 0; i < nn; i++) {
		struct node *n = &nodes[i];
		bool lead = raft_fixture_alive(&f, i) &&
		    raft_state(n->raft) == RAFT_LEADER;

		if (lead && !n->leader) {
			n->leader = true;
			n->serving = false;
			trace("node %u leads (term %llu)", i + 1,
			    (unsigned long long)n->raft->current_term);
			n->barrier.data = n;
			if (raft_barrier(n->raft, &n->barrier, barrier_cb) != 0)
				trace("node %u: barrier refused", i + 1);
		} else if (!lead && n->leader && raft_fixture_alive(&f, i)) {
			n->leader = false;
			n->serving = false;
			for (int k = 0; k < NCL; k++)
				if (cl[k].node == (int)i)
					drop_client(&cl[k], "not the leader");
		}
		/* Deadlines due: a tick entry. */
		if (n->serving && !n->ticking && raft_fixture_alive(&f, i)) {
			uint64_t next = sm_next_deadline(n->sm);

			if (next != UINT64_MAX &&
			    next <= sm_clock_now(&n->clock, now()))
				propose(n, NULL, next, false);
		}
	}
}

/*
 * A node's state machine restarts from its own snapshot, as a restarted
 * semd does before it replays the rest of its log: from here on its replies
 * and snapshots must go on matching the others'.
 */
static void restore_one(void)
{
	struct node *n = &nodes[rnd_below(nn)];
	struct raft_buffer buf;
	uint8_t *p;
	size_t len;

	if (sm_snapshot(n->sm, &p, &len) != 0)
		fail("out of memory");
	buf.base = raft_malloc(len);
	if (buf.base == NULL)
		fail("out of memory");
	memcpy(buf.base, p, len);
	buf.len = len;
	free(p);
	fsm_restore(&n->fsm, &buf);
}

/* Nodes that applied the same index hold the same bytes. */
static void compare_snapshots(void)
{
	uint8_t *p[MAXNODES] = { NULL };
	size_t len[MAXNODES] = { 0 };

	for (unsigned int i = 0; i < nn; i++)
		if (sm_snapshot(nodes[i].sm, &p[i], &len[i]) != 0)
			fail("out of memory");
	for (unsigned int i = 0; i < nn; i++)
		for (unsigned int j = i + 1; j < nn; j++) {
			if (raft_last_applied(nodes[i].raft) !=
			    raft_last_applied(nodes[j].raft))
				continue;
			snaps_compared++;
			if (len[i] != len[j] || memcmp(p[i], p[j], len[i]) != 0)
				fail("nodes %u and %u applied up to %llu and differ",
				    i + 1, j + 1, (unsigned long long)
				    raft_last_applied(nodes[i].raft));
		}
	for (unsigned int i = 0; i < nn; i++)
		free(p[i]);
}

static void heal(void)
{
	for (unsigned int i = 0; i < nn; i++) {
		if (!raft_fixture_alive(&f, i))
			raft_fixture_revive(&f, i);
		for (unsigned int j = 0; j < nn; j++)
			if (i != j) {
				raft_fixture_reconnect(&f, i, j);
				raft_fixture_desaturate(&f, i, j);
			}
		raft_fixture_set_network_latency(&f, i, 5 + rnd_below(20));
	}
}

static void fault(void)
{
	unsigned int i = rnd_below(nn), j = rnd_below(nn), dead = 0;

	for (unsigned int k = 0; k < nn; k++)
		dead += !raft_fixture_alive(&f, k);
	faults++;
	switch (rnd_below(8)) {
	case 0:		/* stop a node (its clients hang) */
		if (raft_fixture_alive(&f, i) && dead < nn / 2 + 1) {
			trace("fault: node %u stops", i + 1);
			raft_fixture_kill(&f, i);
		}
		break;
	case 1:
		if (!raft_fixture_alive(&f, i)) {
			trace("fault: node %u comes back", i + 1);
			raft_fixture_revive(&f, i);
		}
		break;
	case 2:		/* cut a link both ways */
		if (i != j && raft_fixture_alive(&f, i) && raft_fixture_alive(&f, j)) {
			trace("fault: link %u-%u cut", i + 1, j + 1);
			raft_fixture_disconnect(&f, i, j);
			raft_fixture_disconnect(&f, j, i);
		}
		break;
	case 3:		/* one way */
		if (i != j && raft_fixture_alive(&f, i) && raft_fixture_alive(&f, j)) {
			trace("fault: %u cannot hear %u", j + 1, i + 1);
			raft_fixture_saturate(&f, i, j);
		}
		break;
	case 4:		/* cut the leader off */
		i = raft_fixture_leader_index(&f);
		if (i < nn) {
			trace("fault: leader %u cut off", i + 1);
			for (j = 0; j < nn; j++)
				if (j != i && raft_fixture_alive(&f, j)) {
					raft_fixture_disconnect(&f, i, j);
					raft_fixture_disconnect(&f, j, i);
				}
		}
		break;
	case 5:
		raft_fixture_set_network_latency(&f, i, 1 + rnd_below(60));
		raft_fixture_set_disk_latency(&f, i, 1 + rnd_below(30));
		break;
	default:
		trace("fault: healed");
		heal();
		break;
	}
}

static void run_seed(unsigned int n_nodes, uint64_t sim_ms)
{
	struct raft_configuration conf;
	uint64_t next_fault, next_snap, end, answered0[NCL];
	unsigned int i;
	int k;

	rng = seed * 0x9E3779B97F4A7C15ULL + 1;
	memset(&f, 0, sizeof f);
	memset(nodes, 0, sizeof nodes);
	memset(cl, 0, sizeof cl);
	next_conn = 1;
	next_draw = 0;
	nn = n_nodes;
	if (raft_fixture_initialize(&f) != 0)
		fail("fixture");
	for (i = 0; i < nn; i++) {
		struct node *n = &nodes[i];
		struct sm_out out = { on_reply, n, on_close, NULL };

		n->i = i;
		sm_config_defaults(&n->cfg);
		for (k = 0; k < 16; k++)
			n->cfg.hash_key[k] = (uint8_t)rnd();
		n->sm = sm_new(&n->cfg, &out, 0);
		if (n->sm == NULL)
			fail("out of memory");
		n->fsm.version = 1;
		n->fsm.data = n;
		n->fsm.apply = fsm_apply;
		n->fsm.snapshot = fsm_snapshot;
		n->fsm.restore = fsm_restore;
		if (raft_fixture_grow(&f, &n->fsm) != 0)
			fail("fixture grow");
		n->raft = raft_fixture_get(&f, i);
		n->append = n->raft->io->append;
		n->truncate = n->raft->io->truncate;
		n->raft->io->append = fix_append;
		n->raft->io->truncate = fix_truncate;
		n->stored = 1;		/* the bootstrap's configuration */
		if (raftguard_install(n->raft->io) != 0)
			fail("raftguard");
		raft_set_election_timeout(n->raft, 500);
		raft_set_heartbeat_timeout(n->raft, 50);
		raft_set_pre_vote(n->raft, true);
		raft_set_snapshot_threshold(n->raft, 24 + rnd_below(64));
		raft_set_snapshot_trailing(n->raft, 4 + rnd_below(16));
		raft_fixture_set_randomized_election_timeout(&f, i, 500 + rnd_below(500));
		raft_fixture_set_network_latency(&f, i, 5 + rnd_below(20));
		raft_fixture_set_disk_latency(&f, i, 1 + rnd_below(15));
	}
	grace = 500 + rnd_below(3000);
	for (k = 0; k < NCL; k++) {
		cl[k].node = -1;
		cl[k].next_id = 1;
	}
	if (raft_fixture_configuration(&f, nn, &conf) != 0 ||
	    raft_fixture_bootstrap(&f, &conf) != 0 || raft_fixture_start(&f) != 0)
		fail("fixture start");
	raft_configuration_close(&conf);

	next_fault = 3000;
	next_snap = 1000;
	end = sim_ms;
	while (now() < end) {
		raft_fixture_step(&f);
		follow();
		for (k = 0; k < NCL; k++)
			client_step(&cl[k]);
		if (now() >= next_fault) {
			fault();
			next_fault = now() + 200 + rnd_below(2500);
		}
		if (now() >= next_snap) {
			compare_snapshots();
			if (rnd_below(4) == 0)
				restore_one();
			next_snap = now() + 500;
		}
	}
	/* Healed, every client must be answered again. */
	heal();
	for (k = 0; k < NCL; k++)
		answered0[k] = cl[k].answered;
	end = now() + 30000;
	for (;;) {
		bool all = true;

		for (k = 0; k < NCL; k++)
			all = all && cl[k].answered > answered0[k] + 1;
		if (all)
			break;
		if (now() >= end) {
			for (k = 0; k < NCL; k++)
				if (cl[k].answered <= answered0[k] + 1)
					fail("client %d is not answered 30 s after "
					    "every fault healed (node %d)", k,
					    cl[k].node + 1);
		}
		raft_fixture_step(&f);
		follow();
		for (k = 0; k < NCL; k++)
			client_step(&cl[k]);
	}
	/* Drain: everyone applies everything, then the states agree. */
	end = now() + 10000;
	while (now() < end) {
		raft_index ci = nodes[0].raft->commit_index;
		bool same = true;

		for (i = 0; i < nn; i++)
			same = same && raft_last_applied(nodes[i].raft) ==
			    raft_last_applied(nodes[0].raft) &&
			    nodes[i].raft->commit_index == ci;
		if (same && raft_fixture_leader_index(&f) < nn)
			break;
		raft_fixture_step(&f);
		follow();
	}
	compare_snapshots();
	for (i = 0; i < nn; i++)
		raftguard_remove(nodes[i].raft->io);
	raft_fixture_close(&f);
	for (i = 0; i < nn; i++) {
		sm_free(nodes[i].sm);
		free(nodes[i].pend);
	}
	for (k = 0; k < NNAMES; k++) {
		free(tokens[k]);
		tokens[k] = NULL;
		ntokens[k] = captokens[k] = 0;
	}
	free(ledger);
	ledger = NULL;
	ledger_cap = 0;
}

int main(int argc, char **argv)
{
	uint64_t first = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
	uint64_t count = 1000, s;
	uint64_t n_nodes = 0;
	uint64_t sim_s = 60;
	const struct t_opt opts[] = {
		{ 's', &first, NULL },
		{ 'n', &count, NULL },
		{ 't', &sim_s, NULL },
		{ 'N', &n_nodes, NULL },
		{ 'v', NULL, &verbose },
		{ 0, NULL, NULL },
	};

	if (getenv("SIM_SEEDS") != NULL)
		count = strtoull(getenv("SIM_SEEDS"), NULL, 0);
	if (t_opts_parse(argc, argv, opts,
	    "sim [-s seed] [-n seeds] [-t sim-seconds] [-N 3|5] [-v]") != 0)
		return 2;
	if (n_nodes != 0 && n_nodes != 3 && n_nodes != 5) {
		fprintf(stderr, "sim: -N is 3 or 5\n");
		return 2;
	}
	printf("sim: seeds %" PRIu64 "..%" PRIu64 ", %" PRIu64 " s each\n", first,
	    first + count - 1, sim_s);
	fflush(stdout);
	for (s = 0; s < count; s++) {
		seed = first + s;
		run_seed(n_nodes ? (unsigned int)n_nodes : seed % 2 ? 5 : 3, sim_s * 1000);
	}
	printf("sim: %" PRIu64 " seeds passed: %lu entries, %lu grants, %lu faults, "
	    "%lu snapshot pairs compared, %lu states restored from a snapshot, "
	    "%lu messages trimmed by raftguard\n", count, entries, grants, faults,
	    snaps_compared, installs, raftguard_trimmed());
	return 0;
}
