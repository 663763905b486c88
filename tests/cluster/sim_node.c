/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/sim_node.c - the simulated nodes as their log core sees
 * them: its host (this node's state machine, its clients' replies, reads
 * answered), the state machine raft applies to watched around the core's
 * own (every entry's replies recorded in the ledger and sm_check after it),
 * the replies checked against what the clients trusted, and a watch kept
 * on the fixture's disk. Proposing, the leader's first entry, ticks,
 * sweeps, reads and snapshots are the core's: daemon/log/core*.c.
 */
#include "tests/cluster/sim.h"

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

struct answer *replaced;
size_t nreplaced, capreplaced;
unsigned long grants_high, grants_normal, grants_low, grants_shared;
unsigned long replaced_answered, full_answered, bounds_set;

/* Was the down s answered REPLACED? */
static bool was_replaced(const struct sent *s)
{
	for (size_t k = 0; k < nreplaced; k++)
		if (replaced[k].client == s->client && replaced[k].id == s->id)
			return true;
	return false;
}

/* Did the down s get a token? */
static bool was_granted(int name, const struct sent *s)
{
	for (size_t k = 0; k < ntokens[name]; k++)
		if (tokens[name][k].client == s->client &&
		    tokens[name][k].id == s->id)
			return true;
	return false;
}

/*
 * Another down of s's principal (clients k mod NGROUPS are one) with its
 * key on its name, remembered by its client.
 */
static bool replacer(const struct sent *s)
{
	for (int k = s->client % NGROUPS; k < NCL; k += NGROUPS)
		for (unsigned int j = 0; j < RING && j < cl[k].nring; j++) {
			const struct sent *t = &cl[k].ring[j];

			if (t->name == s->name && t->rkey == s->rkey &&
			    (t->client != s->client || t->id != s->id))
				return true;
		}
	return false;
}

/*
 * A down answered REPLACED had a replace key, and is never granted: not
 * before (its token would be in the ledger), not after (check_token). When
 * it is answered as the replacing down applies (not a retry answered from
 * memory), that down is one of the same principal, key and name.
 */
static void check_replaced(int name, const struct sent *s)
{
	if (s->rkey < 0)
		fail("%s: client %d's down %" PRIu64 " without a replace key is "
		    "answered REPLACED", names[name], s->client, s->id);
	if (!s->retry && !replacer(s))
		fail("%s: client %d's down %" PRIu64 " is answered REPLACED, and "
		    "no other down of its principal has its key", names[name],
		    s->client, s->id);
	if (was_granted(name, s))
		fail("%s: client %d's down %" PRIu64 " is answered REPLACED after "
		    "it was granted", names[name], s->client, s->id);
	if (was_replaced(s))
		return;		/* a retry answered again */
	if (nreplaced == capreplaced) {
		capreplaced = capreplaced ? capreplaced * 2 : 64;
		replaced = realloc(replaced, capreplaced * sizeof *replaced);
		if (replaced == NULL)
			fail("out of memory");
	}
	replaced[nreplaced++] = (struct answer){ s->client, s->id };
	replaced_answered++;
}

static void count_waiters(void *arg, const struct sm_sem_gauges *g)
{
	struct sm_sem_gauges *want = arg;

	if (g->len == want->len && memcmp(g->name, want->name, g->len) == 0)
		want->waiters = g->waiters;
}

/*
 * A down answered QUEUE_FULL (by node n, as it applies the entry) would
 * have waited on a name with a bound, which has that many waiters now (at
 * least the least bound it was given, as the clients change it).
 */
static void check_full(struct node *n, int name, const struct sent *s)
{
	struct sm_sem_gauges g = { 0 };

	g.name = names[name];
	g.len = strlen(names[name]);
	if (ncfg[name].min_bound == 0 || !s->waits)
		fail("%s: client %d's down %" PRIu64 " is answered QUEUE_FULL "
		    "(%s, timeout %s)", names[name], s->client, s->id,
		    ncfg[name].min_bound ? "a bound" : "never a bound",
		    s->waits ? "set" : "0");
	sm_sem_each_prefix(n->sm, names[name], count_waiters, &g);
	if (g.waiters < ncfg[name].min_bound)
		fail("node %u: %s: client %d's down %" PRIu64 " is answered "
		    "QUEUE_FULL with %u waiters (max-waiters %u at the least)",
		    n->i + 1, names[name], s->client, s->id, g.waiters,
		    ncfg[name].min_bound);
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
	if (was_replaced(s))
		fail("%s: client %d's down %" PRIu64 " is granted token %" PRIu64
		    " after it was answered REPLACED", names[name], s->client,
		    s->id, token);
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
	if (ncfg[name].share != SEMD__SHARE_BY__SHARE_NONE)
		grants_shared++;
	else if (s->prio > 0)
		grants_high++;
	else if (s->prio < 0)
		grants_low++;
	else
		grants_normal++;
}

/* A client hears a reply from the node it is attached to. */
void deliver(struct client *c, const Semd__Reply *r)
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

/* Node n answers the down s with r. */
static void check_down(struct node *n, const struct sent *s,
    const Semd__Reply *r)
{
	bool first = ledger[raft_last_applied(n->raft) + 1] == 0;

	switch (r->code) {
	case SEMD__CODE__OK:
		/* The first node to apply an entry checks its grants' tokens. */
		if (r->body_case != SEMD__REPLY__BODY_GRANT || !first)
			break;
		trace("entry %llu: conn %" PRIu64 " request %" PRIu64 " granted %s "
		    "token %" PRIu64, (unsigned long long)raft_last_applied(n->raft) + 1,
		    s->conn, r->id, names[s->name], r->grant->token);
		check_token(s->name, s, r->grant->token);
		break;
	case SEMD__CODE__REPLACED:
		if (!first)
			break;
		trace("entry %llu: conn %" PRIu64 " request %" PRIu64 " on %s "
		    "replaced", (unsigned long long)raft_last_applied(n->raft) + 1,
		    s->conn, r->id, names[s->name]);
		check_replaced(s->name, s);
		break;
	case SEMD__CODE__QUEUE_FULL:
		check_full(n, s->name, s);
		full_answered += first;
		break;
	case SEMD__CODE__INVALID_ARGUMENT:
		fail("node %u: %s: client %d's down %" PRIu64 " is refused: %s",
		    n->i + 1, names[s->name], s->client, s->id,
		    r->message != NULL ? r->message : "");
	default:
		break;
	}
}

/* sm_out.reply: hash everything; deliver what goes to a client here. */
void on_reply(void *ctx, void *conn, const Semd__Reply *r)
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
	if (id == SETUP_CONN && r->code != SEMD__CODE__OK)
		fail("node %u: the names' setup request %" PRIu64 " is answered "
		    "%d: %s", n->i + 1, r->id, r->code,
		    r->message != NULL ? r->message : "");
	if (id == SETUP_CONN)
		names_made = true;
	s = find_sent(id, r->id);
	if (s != NULL && s->name >= 0)
		check_down(n, s, r);
	c = client_of(id);
	if (c != NULL && c->node == (int)n->i)
		deliver(c, r);
	else if (id >= IDLE_BASE)
		idle_hear(n, id, r);
}

void drop_client(struct client *c, const char *why)
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
void on_close(void *ctx, void *conn)
{
	struct node *n = ctx;
	struct client *c = client_of((uint64_t)(uintptr_t)conn);

	if (c != NULL && c->node == (int)n->i)
		drop_client(c, "closed by the state");
	else if ((uint64_t)(uintptr_t)conn >= IDLE_BASE)
		idle_closed(n, (uint64_t)(uintptr_t)conn);
}

static void *bind_id(void *arg, uint64_t id)
{
	(void)arg;
	return (void *)(uintptr_t)id;
}

/*
 * raft_fsm.apply, around the core's: the ledger says what each index said
 * (the replies of every node must be the same bytes), sm_check after it.
 */
static int sim_fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf,
    void **result)
{
	struct node *n = fsm->data;
	struct raft_fsm *core = semlog_core_fsm(n->core);
	raft_index index = raft_last_applied(n->raft) + 1;
	char err[256];

	if (index >= ledger_cap) {
		size_t cap = ledger_cap * 2 > index + 1 ? ledger_cap * 2 : index + 1024;

		ledger = realloc(ledger, cap * sizeof *ledger);
		if (ledger == NULL)
			fail("out of memory");
		memset(ledger + ledger_cap, 0, (cap - ledger_cap) * sizeof *ledger);
		ledger_cap = cap;
	}
	n->hash = 14695981039346656037ULL;
	if (core->apply(core, buf, result) != 0)
		fail("node %u cannot apply entry %llu", n->i + 1,
		    (unsigned long long)index);
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

/* raft_fsm.snapshot: the core's. */
static int sim_fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
    unsigned int *n_bufs)
{
	struct node *n = fsm->data;
	struct raft_fsm *core = semlog_core_fsm(n->core);

	return core->snapshot(core, bufs, n_bufs);
}

/* raft_fsm.snapshot_finalize: the core's. */
static int sim_fsm_finalize(struct raft_fsm *fsm, struct raft_buffer *bufs[],
    unsigned int *n_bufs)
{
	struct node *n = fsm->data;
	struct raft_fsm *core = semlog_core_fsm(n->core);

	return core->snapshot_finalize(core, bufs, n_bufs);
}

/*
 * raft_fsm.restore, around the core's: the state restored is checked, and
 * every client bound again (every node binds every client, so that the
 * replies of all hash alike). The state's hash key is drawn anew first:
 * nothing it answers may depend on it.
 */
static int sim_fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct node *n = fsm->data;
	struct raft_fsm *core = semlog_core_fsm(n->core);
	struct sm_client *c;
	char err[256];
	size_t len = buf->len;

	for (int k = 0; k < 16; k++)
		n->cfg.hash_key[k] = (uint8_t)rnd();
	if (core->restore(core, buf) != 0)
		fail("node %u cannot restore a %zu-byte snapshot", n->i + 1, len);
	if (sm_check(n->sm, err, sizeof err) != 0)
		fail("node %u, restored: %s", n->i + 1, err);
	for (uint64_t id = 1; id < next_conn; id++)
		if ((c = sm_client_find(n->sm, id)) != NULL)
			sm_client_bind(c, (void *)(uintptr_t)id);
	idle_rebind(n->sm);
	installs++;
	return 0;
}

/* The state machine raft applies to on node n: the core's, watched. */
void node_fsm(struct node *n)
{
	n->fsm = (struct raft_fsm){ .version = 2, .data = n,
	    .apply = sim_fsm_apply, .snapshot = sim_fsm_snapshot,
	    .snapshot_finalize = sim_fsm_finalize, .restore = sim_fsm_restore };
}

/* --- the core's host ------------------------------------------------------------ */

/* One thread: no lock. */
static void host_lock(void *arg)
{
	(void)arg;
}

/* The node's settings. */
static struct sm_config host_sm_config(void *arg)
{
	struct node *n = arg;

	return n->cfg;
}

/* The node's outputs: its replies checked and hashed (on_reply). */
static struct sm_out host_sm_out(void *arg)
{
	struct sm_out out = { on_reply, arg, on_close, NULL, NULL, NULL };

	return out;
}

/* A reply of the core's own (a cluster change: none here). */
static void host_reply(void *arg, void *conn, const Semd__Reply *r)
{
	on_reply(arg, conn, r);
}

/* The node no longer leads: its clients go (they find the next leader). */
static void host_drop_clients(void *arg)
{
	struct node *n = arg;

	for (int k = 0; k < NCL; k++)
		if (cl[k].node == (int)n->i)
			drop_client(&cl[k], "not the leader");
}

/* What node n's core calls: its state machine, its clients. */
void node_host(struct node *n)
{
	n->host = (struct semlog_host){ .arg = n, .sm = &n->sm,
	    .lock = host_lock, .unlock = host_lock,
	    .sm_config = host_sm_config, .sm_out = host_sm_out,
	    .conn = bind_id, .reply = host_reply,
	    .drop_clients = host_drop_clients, .read = read_answer };
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

int fix_append(struct raft_io *io, struct raft_io_append *req,
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

int fix_truncate(struct raft_io *io, raft_index index)
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

