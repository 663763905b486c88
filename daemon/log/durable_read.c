/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/durable_read.c - reads the leader answers without an entry:
 * raft's ReadIndex (Ongaro's thesis, 6.4), on libraft 0.15 which has none.
 *
 * A read that comes (durable_read, an event loop) is queued; the raft
 * thread notes the index committed then and the first barrier round it
 * will send after (raftguard_probe: an AppendEntries every voter of the
 * leader's term answers, kept from raft). The read runs once that round
 * is confirmed by a majority of the voters in the term it was sent in and
 * the state has applied the noted index: whatever a later leader could
 * have committed, it cannot have before the round's answers, so the state
 * read holds every write acknowledged before the read came, and nothing
 * that was not committed. Reads run in the order they came.
 *
 * Rounds are shared: one in flight at a time, the reads that came meanwhile
 * wait for the next, sent when it is answered (or REPROBE_MS later, a
 * message lost). A leader that loses its term answers nothing more: the
 * reads waiting are handed back unrun (the host redirects them).
 *
 * A log of one voter without peers needs none of it: no other leader can
 * be, and a change is answered only once applied, so the state as it
 * stands holds every change acknowledged; its reads are answered at once,
 * on the loop they came to.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/log/durable-int.h"
#include "daemon/log/raftguard.h"

/* Hand every waiting read back unrun (the node does not lead). */
static void d_reads_refuse(struct durable *d)
{
	struct dread *r;

	if (d->rq == NULL)
		return;
	d_lock(d);
	while ((r = d->rq) != NULL) {
		d->rq = r->next;
		d->host.read(d->host.arg, r->cid, &r->who, r->data, r->len,
		    false);
		free(r);
	}
	d_unlock(d);
	d->rq_tail = &d->rq;
}

/*
 * Send a round when a read waits for one not sent yet and none is in
 * flight, or when the one in flight is REPROBE_MS old (lost, or a voter
 * slow): every read waiting is covered by it. False: not the leader.
 */
static bool d_probe_maybe(struct durable *d, uint64_t confirmed)
{
	uint64_t now = d_now_ms(), round;

	if (d->probe_need <= confirmed)
		return true;
	if (d->probe_sent > confirmed && now - d->probe_ms < REPROBE_MS)
		return true;
	if ((round = raftguard_probe(&d->io)) == 0)
		return false;
	d->probe_sent = round;
	d->probe_ms = now;
	atomic_fetch_add_explicit(&d->read_rounds, 1, memory_order_relaxed);
	return true;
}

/* Run the reads at the head of the queue that may go; probe for the rest. */
static void d_reads_run(struct durable *d)
{
	uint64_t confirmed = raftguard_confirmed(&d->io);
	raft_index applied = raft_last_applied(&d->raft);
	struct dread *r;

	if (!d->serving) {
		d_reads_refuse(d);
	} else if (d->rq != NULL && d->rq->round <= confirmed &&
	    d->rq->index <= applied) {
		d_lock(d);
		while ((r = d->rq) != NULL && r->round <= confirmed &&
		    r->index <= applied) {
			d->rq = r->next;
			d->host.read(d->host.arg, r->cid, &r->who, r->data,
			    r->len, true);
			free(r);
			atomic_fetch_add_explicit(&d->reads_done, 1,
			    memory_order_relaxed);
		}
		d_unlock(d);
		if (d->rq == NULL)
			d->rq_tail = &d->rq;
	}
	if (d->rq != NULL && !d_probe_maybe(d, raftguard_confirmed(&d->io)))
		d_reads_refuse(d);
	if (d->rq == NULL) {
		uv_check_stop(&d->rcheck);
		uv_timer_stop(&d->rtimer);
	}
}

/*
 * After every turn of the loop while reads wait (a round answered, an entry
 * applied: both in its I/O callbacks), and every REPROBE_MS.
 */
static void d_rcheck_cb(uv_check_t *h)
{
	d_reads_run(h->data);
}

static void d_rtimer_cb(uv_timer_t *t)
{
	d_reads_run(t->data);
}

/* The reads the loops queued (d_wake_cb): noted, and a round asked for. */
void d_reads_take(struct durable *d)
{
	struct dread *in, *r, *rev = NULL;

	pthread_mutex_lock(&d->qlock);
	in = d->rq_in;
	d->rq_in = NULL;
	pthread_mutex_unlock(&d->qlock);
	if (in == NULL)
		return;
	while ((r = in) != NULL) {	/* oldest first */
		in = r->next;
		r->next = rev;
		rev = r;
	}
	while ((r = rev) != NULL) {
		rev = r->next;
		r->next = NULL;
		r->index = d->raft.commit_index;
		r->round = d->probe_sent + 1;
		*d->rq_tail = r;
		d->rq_tail = &r->next;
		d->probe_need = r->round;
	}
	uv_check_start(&d->rcheck, d_rcheck_cb);
	uv_timer_start(&d->rtimer, d_rtimer_cb, REPROBE_MS, REPROBE_MS);
	d_reads_run(d);
}

enum durable_read durable_read(struct durable *d, uint64_t cid,
    const struct sm_caller *who, const uint8_t *data, size_t len)
{
	struct dread *r;

	if (!atomic_load(&d->serving_pub))
		return DURABLE_READ_NO;
	if (!d->cluster) {
		atomic_fetch_add_explicit(&d->reads_done, 1, memory_order_relaxed);
		return DURABLE_READ_NOW;
	}
	if ((r = malloc(sizeof *r + len)) == NULL)
		return DURABLE_READ_NO;
	r->cid = cid;
	r->who = *who;
	r->len = len;
	memcpy(r->data, data, len);
	pthread_mutex_lock(&d->qlock);
	r->next = d->rq_in;
	d->rq_in = r;
	pthread_mutex_unlock(&d->qlock);
	uv_async_send(&d->wake);
	return DURABLE_READ_QUEUED;
}

/* Free the reads never run (the log stopped: no client is answered). */
void d_reads_free(struct durable *d)
{
	struct dread *r;

	while ((r = d->rq) != NULL) {
		d->rq = r->next;
		free(r);
	}
	while ((r = d->rq_in) != NULL) {
		d->rq_in = r->next;
		free(r);
	}
	d->rq_tail = &d->rq;
}
