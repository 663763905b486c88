/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/core_propose.c - proposing: entries stamped with the leader's
 * state clock (sm_clock), the commands waiting and their group commit into
 * entries of up to MAX_ENTRY bytes, at most MAX_INFLIGHT in flight.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/log/core-int.h"
#include "daemon/logging.h"

/* A proposed entry. */
struct proposal {
	struct raft_apply	req;
	struct semlog_core	*c;
	core_done_fn		done;	/* its own completion, or NULL */
};

/* A chunk holding a copy of len bytes. */
struct semlog_chunk *semlog_chunk_new(const uint8_t *data, size_t len)
{
	struct semlog_chunk *q = malloc(sizeof *q + len);

	if (q != NULL) {
		q->next = NULL;
		q->len = len;
		memcpy(q->data, data, len);
	}
	return q;
}

/* Free a list of chunks. */
void semlog_chunks_free(struct semlog_chunk *list)
{
	struct semlog_chunk *next;

	for (; list != NULL; list = next) {
		next = list->next;
		free(list);
	}
}

/*
 * An entry was applied (status 0) or dropped. Raft fails the entries in
 * flight when it steps down (RAFT_LEADERSHIPLOST), and refuses them on a
 * stop (RAFT_SHUTDOWN); core_follow() sees the step-down itself.
 */
static void core_applied(struct raft_apply *req, int status, void *result)
{
	struct proposal *p = req->data;
	struct semlog_core *c = p->c;
	core_done_fn done = p->done;

	(void)result;
	c->inflight--;
	if (status != 0 && status != RAFT_LEADERSHIPLOST &&
	    status != RAFT_SHUTDOWN)
		log_warn("log: an entry was not applied: %s", raft_strerror(status));
	free(p);
	if (done != NULL)
		done(c, status);
	core_propose_queued(c);
}

/*
 * Propose chunks (up to end; none: a tick) as one entry stamped now (at
 * least at_least); their memory goes. false when raft refused it: the
 * commands are lost (below).
 */
bool core_propose(struct semlog_core *c, struct semlog_chunk *first,
    struct semlog_chunk *end, uint64_t at_least, core_done_fn done)
{
	size_t hl = sm_entry_header_size(), len = 0, off;
	struct raft_buffer buf;
	struct proposal *p;
	struct semlog_chunk *q, *next;
	int rv;

	for (q = first; q != end; q = q->next)
		len += q->len;
	p = calloc(1, sizeof *p);
	/* raft_uv stores entries in 8-byte units: pad with zeros. */
	buf.len = (hl + len + 7) & ~(size_t)7;
	buf.base = raft_calloc(1, buf.len);
	if (p == NULL || buf.base == NULL) {
		free(p);
		raft_free(buf.base);
		log_err("log: out of memory proposing an entry");
		rv = RAFT_NOMEM;
		goto out;
	}
	sm_entry_header(buf.base, sm_clock_stamp(&c->clock, core_now(c),
	    at_least), c->env.wall_ms(c->env.arg));
	for (q = first, off = hl; q != end; q = q->next) {
		memcpy((uint8_t *)buf.base + off, q->data, q->len);
		off += q->len;
	}
	p->c = c;
	p->done = done;
	p->req.data = p;
	rv = raft_apply(c->raft, &p->req, &buf, 1, core_applied);
	if (rv != 0) {
		raft_free(buf.base);
		free(p);
	} else {
		c->inflight++;
	}
out:
	for (q = first; q != end; q = next) {
		next = q->next;
		free(q);
	}
	/* Said once a run of refusals (every entry may be refused for long). */
	if (rv != 0 && rv != RAFT_NOTLEADER && rv != c->refused)
		log_err("log: an entry was refused: %s", raft_strerror(rv));
	c->refused = rv;
	/*
	 * Refused while leading (out of memory, or RAFT_NOSPACE should a
	 * capacity threshold be set: core.c): its commands' connections would
	 * wait for answers that will not come (their requests count as on
	 * their way). The clients are dropped, told to come back; they resume
	 * their sessions and try again.
	 */
	if (rv != 0 && rv != RAFT_NOTLEADER && c->serving && first != end)
		c->host.drop_clients(c->host.arg);
	return rv == 0;
}

/* Queue list (oldest first) behind what waits. */
void core_queue(struct semlog_core *c, struct semlog_chunk *list)
{
	struct semlog_chunk *q;

	if (list == NULL)
		return;
	*c->qtail = list;
	for (q = list; q->next != NULL; q = q->next)
		;
	c->qtail = &q->next;
}

/* What waits belongs to clients about to be dropped: it goes. */
void core_queue_drop(struct semlog_core *c)
{
	semlog_chunks_free(c->qhead);
	c->qhead = NULL;
	c->qtail = &c->qhead;
}

/*
 * Propose what waits, while entries may be in flight: as many chunks as
 * make about MAX_ENTRY bytes per entry (entries stay small: raft keeps them
 * in memory until a snapshot). Not while raft transfers leadership: it
 * refuses entries then (RAFT_NOTLEADER), and what waits goes either to no
 * one (the transfer worked: the clients are dropped) or into the log once
 * it is over (semlog_core_step).
 */
void core_propose_queued(struct semlog_core *c)
{
	struct semlog_chunk *first, *q;
	size_t len;

	if (c->qhead == NULL || raft_transferee(c->raft) != 0)
		return;
	while (c->serving && c->inflight < MAX_INFLIGHT && c->qhead != NULL) {
		first = c->qhead;
		len = first->len;
		for (q = first->next; q != NULL && len + q->len <= MAX_ENTRY;
		    q = q->next)
			len += q->len;
		c->qhead = q;
		if (q == NULL)
			c->qtail = &c->qhead;
		if (!core_propose(c, first, q, 0, NULL))
			break;
	}
}
