/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/sim_read.c - reads off the log in the simulation: the log
 * core's read barrier (daemon/log/core_read.c, semlog_port_probe) through
 * the same faults as the clients.
 *
 * A read begins on a node that leads and serves (the clients' Pings and
 * the idle sessions', and now and then an Info of a connection of its
 * own, reads_step): it is handed to the node's core as semlog_read hands
 * it from an event loop, and the highest index committed on any node at
 * that moment is noted. The core answers it (host->read) once its barrier
 * passed, or hands it back when the node no longer leads. Checked at the
 * answer: the node has applied every entry that any node knew committed
 * when the read began - a read never misses a write acknowledged before it
 * (a deposed leader that still thinks it leads, cut off, must never
 * confirm a round). A client's read is then run on the state as it stands
 * (sm_read), as feed_log.c does, and its answer goes to the client.
 */
#include "tests/cluster/sim.h"

#define READS_MAX	4096		/* reads on their way, at most */

struct sim_read {
	unsigned int	node;
	uint64_t	conn;
	uint64_t	id;		/* the request's */
	raft_index	want;		/* the highest any node knew committed */
	raft_time	t0;
};

static struct sim_read rd[READS_MAX];
static size_t nrd;
static uint64_t next_read_id = 1;
unsigned long reads_answered, reads_dropped;

/* The highest commit index of any node now (the ground truth). */
static raft_index committed_anywhere(void)
{
	raft_index m = 0;

	for (unsigned int i = 0; i < nn; i++)
		if (raft_commit_index(nodes[i].raft) > m)
			m = raft_commit_index(nodes[i].raft);
	return m;
}

/* Hand node n's core a read of connection conn. false: none begun. */
bool read_begin(struct node *n, uint64_t conn, const Semd__Request *rq)
{
	struct sm_caller who = { 0 };
	struct semlog_rreq *r;
	uint8_t buf[512];
	size_t len = semd__request__get_packed_size(rq);

	if (nrd == READS_MAX || len > sizeof buf)
		return false;
	who.privs = SM_PRIV_ADMIN;
	semd__request__pack(rq, buf);
	if ((r = semlog_rreq_new(conn, &who, buf, len)) == NULL)
		fail("out of memory");
	rd[nrd] = (struct sim_read){ n->i, conn, rq->id, committed_anywhere(),
	    now() };
	nrd++;
	trace("node %u: read %" PRIu64 "/%" PRIu64 " begins, %llu committed "
	    "somewhere", n->i + 1, conn, rq->id,
	    (unsigned long long)rd[nrd - 1].want);
	semlog_core_reads(n->core, r);
	return true;
}

/* host->read: the core answers a read (lead) or hands it back. */
void read_answer(void *arg, uint64_t cid, const struct sm_caller *who,
    const uint8_t *data, size_t len, bool lead)
{
	struct node *n = arg;
	Semd__Request *req = semd__request__unpack(NULL, len, data);
	struct sm_client *c;
	size_t k;

	if (req == NULL)
		fail("node %u: a read's request cannot be decoded", n->i + 1);
	for (k = 0; k < nrd; k++)
		if (rd[k].conn == cid && rd[k].id == req->id &&
		    rd[k].node == n->i)
			break;
	if (k == nrd)
		fail("node %u answers a read nobody began (%" PRIu64 "/%" PRIu64
		    ")", n->i + 1, cid, req->id);
	if (!lead) {
		reads_dropped++;
	} else {
		if (raft_last_applied(n->raft) < rd[k].want)
			fail("node %u answered a read begun at t=%llu having "
			    "applied index %llu, but index %llu was committed "
			    "then", n->i + 1, (unsigned long long)rd[k].t0,
			    (unsigned long long)raft_last_applied(n->raft),
			    (unsigned long long)rd[k].want);
		reads_answered++;
		pings_local += req->op_case == SEMD__REQUEST__OP_PING;
		if ((c = sm_client_find(n->sm, cid)) != NULL)
			(void)sm_read(n->sm, c, req, who);
	}
	rd[k] = rd[--nrd];
	semd__request__free_unpacked(req, NULL);
}

/* Now and then, an Info of a connection of the simulation's own. */
void reads_step(void)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Info info = SEMD__INFO__INIT;
	unsigned int i;

	if (rnd_below(8) != 0)
		return;
	i = (unsigned int)rnd_below(nn);
	if (!serving(&nodes[i]))
		return;
	info.name = (char *)names[0];
	rq.id = next_read_id++;
	rq.op_case = SEMD__REQUEST__OP_INFO;
	rq.info = &info;
	(void)read_begin(&nodes[i], READ_CONN, &rq);
}

/* Forget the reads of a seed (their cores are freed with them). */
void reads_end(void)
{
	nrd = 0;
}
