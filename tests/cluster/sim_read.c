/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/sim_read.c - reads off the log in the simulation (issue 23):
 * the read barrier of daemon/log/durable_read.c (raftguard_probe) through
 * the same faults as the clients.
 *
 * Now and then a node that leads and serves begins a read, as durable_read
 * does: it notes its commit index and sends a probe round. The read is
 * answered once the round is confirmed in the node's term and the node has
 * applied the noted index; it is dropped if the node stops leading, changes
 * term or stays cut off for REACH_MS. Checked at the answer: the node has
 * applied every entry that any node knew committed when the read began -
 * a read never misses a write acknowledged before it (a deposed leader
 * that still thinks it leads, cut off, must never confirm a round).
 */
#include "tests/cluster/sim.h"

#define READS_MAX	64
#define REACH_MS	5000		/* a read not answered by then is dropped */
#define REPROBE		50		/* ms: a round not confirmed is sent again */

struct sim_read {
	unsigned int	node;
	raft_term	term;
	raft_index	index;		/* the node's commit index at the start */
	raft_index	want;		/* the highest any node knew committed */
	uint64_t	round;
	raft_time	t0, sent;
};

static struct sim_read rd[READS_MAX];
static size_t nrd;
unsigned long reads_answered, reads_dropped;

/* The highest commit index of any node now (the ground truth). */
static raft_index committed_anywhere(void)
{
	raft_index m = 0;

	for (unsigned int i = 0; i < nn; i++)
		if (nodes[i].raft->commit_index > m)
			m = nodes[i].raft->commit_index;
	return m;
}

/* Begin a read on node i (leading and serving). */
static void read_begin(unsigned int i)
{
	struct raft *r = nodes[i].raft;
	struct sim_read *q = &rd[nrd];
	uint64_t round = raftguard_probe(r->io);

	if (round == 0)
		return;
	q->node = i;
	q->term = r->current_term;
	q->index = r->commit_index;
	q->want = committed_anywhere();
	q->round = round;
	q->t0 = q->sent = now();
	nrd++;
	trace("node %u: read begins at commit %llu, round %llu", i + 1,
	    (unsigned long long)q->index, (unsigned long long)round);
}

/* Answer the reads whose barrier passed; drop those that cannot be. */
void reads_step(void)
{
	size_t k = 0;

	while (k < nrd) {
		struct sim_read *q = &rd[k];
		struct node *n = &nodes[q->node];
		struct raft *r = n->raft;
		bool alive = raft_fixture_alive(&f, q->node);

		if ((alive && (raft_state(r) != RAFT_LEADER ||
		    r->current_term != q->term || !n->serving)) ||
		    now() - q->t0 >= REACH_MS) {
			reads_dropped++;
			rd[k] = rd[--nrd];
			continue;
		}
		if (alive && raftguard_confirmed(r->io) >= q->round &&
		    raft_last_applied(r) >= q->index) {
			if (raft_last_applied(r) < q->want)
				fail("node %u answered a read begun at t=%llu having "
				    "applied index %llu, but index %llu was committed "
				    "then", q->node + 1, (unsigned long long)q->t0,
				    (unsigned long long)raft_last_applied(r),
				    (unsigned long long)q->want);
			reads_answered++;
			rd[k] = rd[--nrd];
			continue;
		}
		if (alive && now() - q->sent >= REPROBE &&
		    raftguard_probe(r->io) != 0)
			q->sent = now();
		k++;
	}
	if (nrd < READS_MAX && rnd_below(8) == 0) {
		unsigned int i = (unsigned int)rnd_below(nn);

		if (raft_fixture_alive(&f, i) && nodes[i].serving &&
		    raft_state(nodes[i].raft) == RAFT_LEADER)
			read_begin(i);
	}
}

/* Forget the reads of a seed. */
void reads_end(void)
{
	nrd = 0;
}
