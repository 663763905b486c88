/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/sim.c - a semd cluster in simulated time.
 *
 * Three or five raft nodes of libraft's deterministic fixture (its own
 * network, disks and clock), each running the daemon's own log core
 * (daemon/log/core.h) and peer port (daemon/log/port.h) over the fixture's
 * io, driven as the log thread drives them (a step after every move of
 * raft, the core's timers when due, commands and reads handed over): a new
 * leader's barrier, then its LEADER entry (every client of before gone,
 * leases given the grace), entries stamped with log time that goes on from
 * the last one applied, ticks proposed when a deadline is due, lease
 * sweeps, reads after a read barrier, snapshots every few dozen entries
 * sent to nodes that fell behind; and state machines restarted from their
 * snapshot. Simulated clients attach to the leader, hold and give back permits of three names, keep their sessions
 * alive, resume them on the next leader and retry a down whose answer they
 * missed. Each seed draws the names' queue features: fair shares by
 * principal or by group with weights, a bound on the waiters, priorities,
 * replace keys (the clients are three principals). Faults: nodes stopped
 * and revived, links cut one way or both, leaders cut off, latencies
 * changed.
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
 *  - a down answered REPLACED had a replace key, was replaced by a down of
 *    its principal with that key on that name, and is never granted; one
 *    answered QUEUE_FULL would have waited on a name with a bound that
 *    many downs wait on; no down is refused as invalid;
 *  - once every fault is healed, every client is answered again;
 *  - a read answered off the log after the read barrier (sim_read.c)
 *    holds every entry committed anywhere when it began.
 * libraft's fixture checks election safety and the leader's append-only log.
 *
 * Then seeds with thousands of idle sessions (sim_idle.c): leases kept by
 * pings the leader answers without an entry, ended by its sweep's EXPIRE
 * entries, through the same faults; none expires while its client trusts
 * it, none that went away outlives its lease and grace.
 *
 * Usage: sim [-s seed] [-n seeds] [-t sim-seconds] [-N nodes] [-I idle-seeds]
 *     [-i idle-sessions] [-v]
 *   1000 seeds of 60 simulated seconds from a seed drawn from the clock by
 *   default ($SIM_SEEDS: another count), then 10 ($SIM_IDLE_SEEDS) with
 *   2000 idle sessions; nodes alternate 3 and 5. A failure prints its seed
 *   and how to replay it exactly (-v: what happened).
 */
#include "tests/cluster/sim.h"
#include "daemon/logging.h"

const char *const names[NNAMES] = { "licence", "db", "quota" };
const unsigned int limits[NNAMES] = { 1, 2, 3 };
struct namecfg ncfg[NNAMES];

static uint64_t seed;
static unsigned int idle_count;
uint64_t sim_rng;
static bool verbose;

struct raft_fixture f;

raft_time now(void)
{
	return raft_fixture_time(&f);
}

void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sim: seed %" PRIu64 ", t=%llu ms: ", seed,
	    (unsigned long long)now());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (idle_count > 0)
		fprintf(stderr, "\n(replay: sim -s %" PRIu64 " -n 0 -I 1 -i %u)\n",
		    seed, idle_count);
	else
		fprintf(stderr, "\n(replay: sim -s %" PRIu64 " -n 1)\n", seed);
	exit(1);
}

void trace(const char *fmt, ...)
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


struct node nodes[MAXNODES];
unsigned int nn;
uint32_t grace;		/* restart-grace */

/* The ledger: what index i said (hash | 1; 0: not applied yet). */
uint64_t *ledger;
size_t ledger_cap;

/* --- the clients ------------------------------------------------------------------ */




struct client cl[NCL];
uint64_t next_conn = 1;
static uint64_t next_draw;	/* of election timeouts */

struct token *tokens[NNAMES];
size_t ntokens[NNAMES], captokens[NNAMES];

unsigned long grants, entries, faults, snaps_compared, installs;
unsigned long pings_local, expired_asked;
uint64_t last_leader_st;
bool names_made;
static unsigned long trimmed, installs_dropped;

/* Until when a client trusts its session (libsemclient's rule). */
uint64_t trust_end(const struct client *c)
{
	uint64_t margin = c->lease / 20 > MARGIN_MIN ? c->lease / 20 : MARGIN_MIN;

	if (c->session == 0 || c->lease == 0)
		return 0;
	return c->trust_base + c->lease - (uint64_t)c->lease * DRIFT_PPM / 1000000 -
	    margin;
}

/* The request of this connection and id (NULL: not one of ours). */
struct sent *find_sent(uint64_t conn, uint64_t id)
{
	for (int k = 0; k < NCL; k++)
		for (unsigned int j = 0; j < RING && j < cl[k].nring; j++)
			if (cl[k].ring[j].conn == conn && cl[k].ring[j].id == id)
				return &cl[k].ring[j];
	return NULL;
}

struct client *client_of(uint64_t conn)
{
	for (int k = 0; k < NCL; k++)
		if (cl[k].conn == conn && conn != 0)
			return &cl[k];
	return NULL;
}

/* --- the harness -------------------------------------------------------------------- */

/* Is node n alive and serving clients (its core says)? */
bool serving(const struct node *n)
{
	return raft_fixture_alive(&f, n->i) && semlog_core_serving(n->core);
}

/* Hand the batch's commands to node n's core, as the log thread does. */
void submit(struct node *n, const struct sm_batch *b)
{
	struct semlog_chunk *q;

	if (b->failed)
		fail("out of memory");
	if (b->len == 0 || !raft_fixture_alive(&f, n->i))
		return;		/* a stopped node hears nothing */
	if ((q = semlog_chunk_new(b->p, b->len)) == NULL)
		fail("out of memory");
	semlog_core_submit(n->core, q);
}

/* The state time now, by node n's leader clock or its state. */
uint64_t state_now_of(struct node *n)
{
	struct semlog_core_figures fig;

	semlog_core_figures(n->core, &fig);
	return fig.state_now;
}

/*
 * Each node's core runs its timers when they are due (the log thread's
 * timer); the last take-over's state time is noted for the idle sessions'
 * check. A node that starts to serve is first handed the names' setup,
 * until it is in the log, before any client can reach it.
 */
static void run_cores(void)
{
	struct semlog_core_figures fig;

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
		struct sm_batch b;

		if (!raft_fixture_alive(&f, i))
			continue;	/* a stopped process runs nothing */
		if (now() >= n->due)
			n->due = semlog_core_tick(n->core);
		semlog_core_figures(n->core, &fig);
		if (fig.takeovers != n->takeovers) {
			n->takeovers = fig.takeovers;
			last_leader_st = fig.lead_start;
			trace("node %u takes over at state time %" PRIu64, i + 1,
			    fig.lead_start);
		}
		if (!names_made && serving(n) && n->setup_at != fig.takeovers) {
			n->setup_at = fig.takeovers;
			sm_batch_init(&b);
			setup_names(&b);
			submit(n, &b);
			sm_batch_free(&b);
		}
	}
}

/* Raft moved on a node (its port says so): its core follows, as in semd. */
static void node_stepped(void *arg)
{
	struct node *n = arg;

	semlog_core_step(n->core);
	n->due = semlog_core_due(n->core);
}

/* One step of the cluster, then of everyone around it. */
static void step_all(void)
{
	raft_fixture_step(&f);
	run_cores();
	for (int k = 0; k < NCL; k++)
		client_step(&cl[k]);
	idle_round();
	reads_step();
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

	/* Not a leader: raft never restores one (its memory of leases). */
	if (raft_state(n->raft) == RAFT_LEADER)
		return;
	if (sm_snapshot(n->sm, &p, &len) != 0)
		fail("out of memory");
	buf.base = raft_malloc(len);
	if (buf.base == NULL)
		fail("out of memory");
	memcpy(buf.base, p, len);
	buf.len = len;
	free(p);
	n->fsm.restore(&n->fsm, &buf);
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

/* Node i back from a stop: a leader's sweep and clock were paused as long. */
static void revive(unsigned int i)
{
	raft_fixture_revive(&f, i);
	if (semlog_core_serving(nodes[i].core))
		nodes[i].back_st = state_now_of(&nodes[i]);
}

static void heal(void)
{
	for (unsigned int i = 0; i < nn; i++) {
		if (!raft_fixture_alive(&f, i))
			revive(i);
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
			revive(i);
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

/*
 * Each name's queue features for this seed: shares by principal or by
 * group (half the time on one name in two), else priorities or not; a
 * bound on its waiters; replace keys.
 */
static void draw_names(void)
{
	for (int k = 0; k < NNAMES; k++) {
		struct namecfg *nc = &ncfg[k];

		memset(nc, 0, sizeof *nc);
		switch (rnd_below(6)) {
		case 0:
			nc->share = SEMD__SHARE_BY__SHARE_PRINCIPAL;
			break;
		case 1: case 2:
			nc->share = SEMD__SHARE_BY__SHARE_KEY;
			break;
		case 3:
			break;
		default:
			nc->prio = true;
			break;
		}
		for (int g = 0; g < NGROUPS; g++)
			nc->weights[g] = 1 + rnd_below(rnd_below(2) ? 4 : 1000);
		if (rnd_below(2) == 0)
			nc->max_waiters = 1 + rnd_below(4);
		nc->min_bound = nc->max_waiters;
		nc->rkeys = rnd_below(2) == 0;
		trace("%s: shares %d (weights %u %u %u), max-waiters %u, "
		    "priorities %d, replace keys %d", names[k], nc->share,
		    nc->weights[0], nc->weights[1], nc->weights[2],
		    nc->max_waiters, nc->prio, nc->rkeys);
	}
}

/* The time for node n's core: the fixture's; unix time from it. */
static uint64_t sim_now_ms(void *arg)
{
	(void)arg;
	return now();
}

/* Unix time, from the fixture's. */
static uint64_t sim_wall_ms(void *arg)
{
	(void)arg;
	return 1700000000000ULL + now();
}

/* A core of the simulation starts or stops serving. */
static void sim_serving(void *arg, bool on)
{
	struct node *n = arg;

	trace("node %u %s", n->i + 1, on ? "serves" : "no longer serves");
}

/* A committed entry the core cannot apply: semd would stop. */
static void sim_fatal(void *arg, const char *why)
{
	struct node *n = arg;

	fail("node %u: %s", n->i + 1, why);
}

/*
 * Node i: its state machine, the daemon's log core on a fixture server (its
 * io watched by the disk's watch, then wrapped by the daemon's port), set
 * as semd sets a cluster node (core.c: timeouts, pre-vote), with snapshots
 * every few dozen entries and few entries kept after them, so that nodes
 * behind get snapshots.
 *
 * libraft 0.22's fixture gives no call for a server's raft_io, nor a way
 * to quiet the tracer that prints every step of its servers: both are taken
 * from struct raft's public fields here, once, and nowhere else.
 */
static void node_make(struct node *n, unsigned int i)
{
	struct sm_out out = { on_reply, n, on_close, NULL, NULL, NULL };
	struct semlog_core_config cc;
	struct semlog_env env;
	struct raft_io *io;

	n->i = i;
	sm_config_defaults(&n->cfg);
	for (int k = 0; k < 16; k++)
		n->cfg.hash_key[k] = (uint8_t)rnd();
	n->sm = sm_new(&n->cfg, &out, 0);
	if (n->sm == NULL)
		fail("out of memory");
	cc = (struct semlog_core_config){
		.id = i + 1, .cluster = true, .grace_ms = grace,
		.snapshot_every = 24 + rnd_below(64),
		.snapshot_trailing = 4 + rnd_below(16), .election_ms = 500,
		.advertise = "127.0.0.1:7000",
	};
	env = (struct semlog_env){ .arg = n, .now_ms = sim_now_ms,
	    .wall_ms = sim_wall_ms, .serving = sim_serving, .fatal = sim_fatal };
	node_host(n);
	if ((n->core = semlog_core_new(&cc, &n->host, &env)) == NULL)
		fail("out of memory");
	node_fsm(n);
	if (raft_fixture_grow(&f, &n->fsm) != 0)
		fail("fixture grow");
	n->raft = raft_fixture_get(&f, i);
	if (!verbose)
		n->raft->tracer = NULL;
	io = n->raft->io;
	n->append = io->append;
	n->truncate = io->truncate;
	io->append = fix_append;
	io->truncate = fix_truncate;
	n->stored = 1;		/* the bootstrap's configuration */
	if ((n->port = semlog_port_new(io, i + 1)) == NULL)
		fail("port");
	semlog_port_set_step(n->port, node_stepped, n);
	semlog_core_attach(n->core, n->raft, n->port);
	raft_fixture_set_randomized_election_timeout(&f, i, 500 + rnd_below(500));
	raft_fixture_set_network_latency(&f, i, 5 + rnd_below(20));
	raft_fixture_set_disk_latency(&f, i, 1 + rnd_below(15));
}

static void run_seed(unsigned int n_nodes, uint64_t sim_ms)
{
	struct raft_configuration conf;
	uint64_t next_fault, next_snap, end, answered0[NCL];
	unsigned int i;
	int k;

	sim_rng = seed * 0x9E3779B97F4A7C15ULL + 1;
	memset(&f, 0, sizeof f);
	memset(nodes, 0, sizeof nodes);
	memset(cl, 0, sizeof cl);
	next_conn = 1;
	next_draw = 0;
	nn = n_nodes;
	if (raft_fixture_initialize(&f) != 0)
		fail("fixture");
	draw_names();
	grace = 500 + rnd_below(3000);
	last_leader_st = 0;
	names_made = false;
	for (i = 0; i < nn; i++)
		node_make(&nodes[i], i);
	idle_start(idle_count);
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
		step_all();
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
		step_all();
	}
	/* Drain: everyone applies everything, then the states agree. */
	end = now() + 10000;
	while (now() < end) {
		raft_index ci = raft_commit_index(nodes[0].raft);
		bool same = true;

		for (i = 0; i < nn; i++)
			same = same && raft_last_applied(nodes[i].raft) ==
			    raft_last_applied(nodes[0].raft) &&
			    raft_commit_index(nodes[i].raft) == ci;
		if (same && raft_fixture_leader_index(&f) < nn)
			break;
		raft_fixture_step(&f);
		run_cores();
	}
	compare_snapshots();
	for (i = 0; i < nn; i++) {
		struct semlog_core_figures fig;

		semlog_core_figures(nodes[i].core, &fig);
		expired_asked += fig.expired;
		trimmed += semlog_port_trimmed(nodes[i].port);
		installs_dropped += semlog_port_installs_dropped(nodes[i].port);
	}
	raft_fixture_close(&f);
	for (i = 0; i < nn; i++) {
		semlog_port_free(nodes[i].port);
		semlog_core_free(nodes[i].core);
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
	free(replaced);
	replaced = NULL;
	nreplaced = capreplaced = 0;
	idle_end();
	reads_end();
}

int main(int argc, char **argv)
{
	uint64_t first = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
	uint64_t count = 1000, s;
	uint64_t n_nodes = 0;
	uint64_t sim_s = 60;
	uint64_t idle = 2000, idle_seeds = 10;
	const struct t_opt opts[] = {
		{ 's', &first, NULL },
		{ 'n', &count, NULL },
		{ 't', &sim_s, NULL },
		{ 'N', &n_nodes, NULL },
		{ 'i', &idle, NULL },
		{ 'I', &idle_seeds, NULL },
		{ 'v', NULL, &verbose },
		{ 0, NULL, NULL },
	};

	if (getenv("SIM_SEEDS") != NULL)
		count = strtoull(getenv("SIM_SEEDS"), NULL, 0);
	if (getenv("SIM_IDLE_SEEDS") != NULL)
		idle_seeds = strtoull(getenv("SIM_IDLE_SEEDS"), NULL, 0);
	if (t_opts_parse(argc, argv, opts,
	    "sim [-s seed] [-n seeds] [-t sim-seconds] [-N 3|5] [-I idle-seeds] "
	    "[-i idle-sessions] [-v]") != 0)
		return 2;
	/* The core's log lines: errors only, or all with -v. */
	log_set_level(verbose ? LOG_DEBUG : LOG_ERR);
	if (idle > IDLE_MASK) {
		fprintf(stderr, "sim: -i is at most %llu\n", IDLE_MASK);
		return 2;
	}
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
	/* Then seeds with thousands of idle sessions (issue 23). */
	if (idle_seeds > 0) {
		printf("sim: seeds %" PRIu64 "..%" PRIu64 " with %" PRIu64 " idle "
		    "sessions\n", first + count, first + count + idle_seeds - 1, idle);
		fflush(stdout);
	}
	idle_count = (unsigned int)idle;
	for (s = 0; s < idle_seeds; s++) {
		seed = first + count + s;
		run_seed(n_nodes ? (unsigned int)n_nodes : seed % 2 ? 5 : 3, sim_s * 1000);
	}
	if (count + idle_seeds > 0 && reads_answered == 0) {
		fprintf(stderr, "sim: no read was answered: the read check saw nothing\n");
		return 1;
	}
	printf("sim: %" PRIu64 " seeds passed: %lu entries, %lu grants, %lu faults, "
	    "%lu snapshot pairs compared, %lu states restored from a snapshot, "
	    "%lu messages trimmed by the port, %lu snapshots dropped by it "
	    "(one was being written), %lu pings answered without an "
	    "entry, %lu sessions expired by a leader's clock, %lu reads answered "
	    "after a read barrier (%lu dropped: leadership lost, cut off); "
	    "grants by class "
	    "%lu high / %lu 0 / %lu low, %lu on names with shares, %lu downs "
	    "answered REPLACED, %lu QUEUE_FULL, %lu SetQueue sent\n",
	    count + idle_seeds, entries,
	    grants, faults, snaps_compared, installs, trimmed, installs_dropped,
	    pings_local, expired_asked, reads_answered, reads_dropped, grants_high, grants_normal, grants_low,
	    grants_shared, replaced_answered, full_answered, bounds_set);
	return 0;
}
