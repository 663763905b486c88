/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/core_read.c - reads the leader answers without an entry:
 * raft's ReadIndex (Ongaro's thesis, 6.4), which libraft has no call for.
 *
 * A read that comes (semlog_read, then semlog_core_reads) notes the index
 * committed then and the first barrier round the core will send after
 * (semlog_port_probe: an AppendEntries every voter of the leader's term
 * answers, kept from raft). The read runs once that round is confirmed by
 * a majority of the voters in the term it was sent in and the state has
 * applied the noted index: whatever a later leader could have committed, it
 * cannot have before the round's answers, so the state read holds every
 * write acknowledged before the read came, and nothing that was not
 * committed. Reads run in the order they came.
 *
 * Rounds are shared: one in flight at a time, the reads that came meanwhile
 * wait for the next, sent when it is answered (or REPROBE_MS later, a
 * message lost). A leader that loses its term answers nothing more: the
 * reads waiting are handed back unrun (the host redirects them).
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/log/core-int.h"

/* A read of client cid, its request copied. */
struct semlog_rreq *semlog_rreq_new(uint64_t cid, const struct sm_caller *who,
    const uint8_t *data, size_t len)
{
	struct semlog_rreq *r = malloc(sizeof *r + len);

	if (r != NULL) {
		r->next = NULL;
		r->cid = cid;
		r->who = *who;
		r->index = 0;
		r->round = 0;
		r->len = len;
		memcpy(r->data, data, len);
	}
	return r;
}

/* Hand every waiting read back unrun (the node does not lead). */
void core_reads_refuse(struct semlog_core *c)
{
	struct semlog_rreq *r;

	if (c->rq == NULL)
		return;
	core_lock(c);
	while ((r = c->rq) != NULL) {
		c->rq = r->next;
		c->host.read(c->host.arg, r->cid, &r->who, r->data, r->len,
		    false);
		free(r);
	}
	core_unlock(c);
	c->rq_tail = &c->rq;
}

/*
 * Send a round when a read waits for one not sent yet and none is in
 * flight, or when the one in flight is REPROBE_MS old (lost, or a voter
 * slow): every read waiting is covered by it. False: not the leader.
 */
static bool core_probe_maybe(struct semlog_core *c, uint64_t confirmed)
{
	uint64_t now = core_now(c), round;

	if (c->probe_need <= confirmed)
		return true;
	if (c->probe_sent > confirmed && now - c->probe_ms < REPROBE_MS)
		return true;
	if ((round = semlog_port_probe(c->port)) == 0)
		return false;
	c->probe_sent = round;
	c->probe_ms = now;
	c->read_rounds++;
	return true;
}

/* Run the reads at the head of the queue that may go; probe for the rest. */
void core_reads_run(struct semlog_core *c)
{
	uint64_t confirmed = semlog_port_confirmed(c->port);
	raft_index applied = raft_last_applied(c->raft);
	struct semlog_rreq *r;

	if (c->rq == NULL)
		return;
	if (!c->serving) {
		core_reads_refuse(c);
		return;
	}
	if (c->rq->round <= confirmed && c->rq->index <= applied) {
		core_lock(c);
		while ((r = c->rq) != NULL && r->round <= confirmed &&
		    r->index <= applied) {
			c->rq = r->next;
			c->host.read(c->host.arg, r->cid, &r->who, r->data,
			    r->len, true);
			free(r);
			c->reads_done++;
		}
		core_unlock(c);
		if (c->rq == NULL)
			c->rq_tail = &c->rq;
	}
	if (c->rq != NULL &&
	    !core_probe_maybe(c, semlog_port_confirmed(c->port)))
		core_reads_refuse(c);
}

/* When the reads waiting want a round sent again (NEVER: none wait). */
uint64_t core_reads_due(const struct semlog_core *c)
{
	return c->rq != NULL ? c->probe_ms + REPROBE_MS : NEVER;
}

/* Reads that came, oldest first: noted, and a round asked for. */
void core_reads_take(struct semlog_core *c, struct semlog_rreq *list)
{
	struct semlog_rreq *r;

	while ((r = list) != NULL) {
		list = r->next;
		r->next = NULL;
		r->index = raft_commit_index(c->raft);
		r->round = c->probe_sent + 1;
		*c->rq_tail = r;
		c->rq_tail = &r->next;
		c->probe_need = r->round;
	}
	core_reads_run(c);
}

/* Free the reads never run (the log stopped: no client is answered). */
void core_reads_free(struct semlog_core *c)
{
	struct semlog_rreq *r;

	while ((r = c->rq) != NULL) {
		c->rq = r->next;
		free(r);
	}
	c->rq_tail = &c->rq;
}
