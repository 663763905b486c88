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
		if (n->serving && lead)
			sweep(n);
		/* Deadlines due: a tick entry. */
		if (n->serving && !n->ticking && raft_fixture_alive(&f, i)) {
			uint64_t next = sm_next_deadline(n->sm);

			if (next != UINT64_MAX &&
			    next <= sm_clock_now(&n->clock, now()))
				propose(n, NULL, next, false);
		}
	}
}

/* One step of the cluster, then of everyone around it. */
static void step_all(void)
{
	raft_fixture_step(&f);
	follow();
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
	if (n->leader)
		return;
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

/* Node i back from a stop: a leader's sweep and clock were paused as long. */
static void revive(unsigned int i)
{
	raft_fixture_revive(&f, i);
	if (nodes[i].leader)
		nodes[i].back_st = sm_clock_now(&nodes[i].clock, now());
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
	for (i = 0; i < nn; i++) {
		struct node *n = &nodes[i];
		struct sm_out out = { on_reply, n, on_close, NULL, NULL, NULL };

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
	last_leader_st = 0;
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
	    "%lu messages trimmed by raftguard, %lu pings answered without an "
	    "entry, %lu sessions expired by a leader's clock, %lu reads answered "
	    "after a read barrier (%lu dropped: leadership lost, cut off); "
	    "grants by class "
	    "%lu high / %lu 0 / %lu low, %lu on names with shares, %lu downs "
	    "answered REPLACED, %lu QUEUE_FULL, %lu SetQueue sent\n",
	    count + idle_seeds, entries,
	    grants, faults, snaps_compared, installs, raftguard_trimmed(),
	    pings_local, expired_asked, reads_answered, reads_dropped, grants_high, grants_normal, grants_low,
	    grants_shared, replaced_answered, full_answered, bounds_set);
	return 0;
}
