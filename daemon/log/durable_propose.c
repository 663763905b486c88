/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/durable_propose.c - proposing: entries stamped with the leader's
 * state clock (sm_clock), the queue of commands from the event loops
 * (durable_submit) and its group commit into entries of up to MAX_ENTRY bytes,
 * at most MAX_INFLIGHT in flight, the state's deadlines as empty entries,
 * and the leader's sweep of the sessions' leases (EXPIRE commands).
 */
#include <config.h>	/* autoconf's */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "daemon/log/durable.h"
#include "daemon/log/raftguard.h"
#include "daemon/logging.h"
#include "daemon/log/durable-int.h"

/* --- proposing ------------------------------------------------------------------- */

static void d_propose_queued(struct durable *d);

/* An entry was applied (status 0) or dropped. */
static void d_applied(struct raft_apply *req, int status, void *result)
{
	struct proposal *p = req->data;
	struct durable *d = p->d;

	(void)result;
	d->inflight--;
	if (status != 0) {
		log_warn("log: an entry was not applied: %s", raft_strerror(status));
		/*
		 * Raft fails the entries in flight while it steps down, from
		 * inside raft, its leader state half gone: nothing more may be
		 * proposed from here (raft_apply would crash); the poll drops
		 * the clients.
		 */
		if (status == RAFT_LEADERSHIPLOST || status == RAFT_SHUTDOWN) {
			d->serving = false;
			atomic_store(&d->serving_pub, false);
		}
	}
	if (p->startup) {
		d->taking_over = false;
		if (status == 0 && d->leader) {
			d->serving = true;
			atomic_store(&d->serving_pub, true);
			log_notice("log: node %llu serves", (unsigned long long)d->id);
			d_started(d, 1, NULL);
		} else if (!d->cluster) {
			d_started(d, EX_IOERR, "the restart entry was not committed: %s",
			    raft_strerror(status));
		}
	}
	free(p);
	d_propose_queued(d);
}

/*
 * Propose chunks (up to end; none: a tick) as one entry stamped now (at
 * least at_least); their memory goes. false when raft refused it (the
 * commands are lost: their clients hear nothing and time out).
 */
bool d_propose(struct durable *d, struct qchunk *first,
    struct qchunk *end, uint64_t at_least, bool startup)
{
	size_t hl = sm_entry_header_size(), len = 0, off;
	struct raft_buffer buf;
	struct proposal *p;
	struct qchunk *q, *next;
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
		rv = -1;
		goto out;
	}
	sm_entry_header(buf.base, sm_clock_stamp(&d->clock, d_now_ms(),
	    at_least), d_wall_ms());
	for (q = first, off = hl; q != end; q = q->next) {
		memcpy((uint8_t *)buf.base + off, q->data, q->len);
		off += q->len;
	}
	p->d = d;
	p->startup = startup;
	p->req.data = p;
	rv = raft_apply(&d->raft, &p->req, &buf, 1, d_applied);
	if (rv != 0) {
		log_warn("log: entry refused: %s", raft_errmsg(&d->raft));
		raft_free(buf.base);
		free(p);
	} else {
		d->inflight++;
	}
out:
	for (q = first; q != end; q = next) {
		next = q->next;
		free(q);
	}
	return rv == 0;
}

/* A chunk of len bytes. */
struct qchunk *qchunk_new(const uint8_t *data, size_t len)
{
	struct qchunk *q = malloc(sizeof *q + len);

	if (q != NULL) {
		q->next = NULL;
		q->len = len;
		memcpy(q->data, data, len);
	}
	return q;
}

/* Queue q for proposing, behind what is queued (any thread). */
static void d_queue(struct durable *d, struct qchunk *q)
{
	pthread_mutex_lock(&d->qlock);
	*d->qtail = q;
	d->qtail = &q->next;
	pthread_mutex_unlock(&d->qlock);
}

/*
 * Propose what the event loops queued, while entries may be in flight:
 * as many chunks as make about MAX_ENTRY bytes per entry (entries stay
 * small: raft keeps them in memory until a snapshot).
 */
static void d_propose_queued(struct durable *d)
{
	struct qchunk *first, *q;
	size_t len;

	while (d->serving && d->inflight < MAX_INFLIGHT) {
		pthread_mutex_lock(&d->qlock);
		first = d->qhead;
		if (first == NULL) {
			pthread_mutex_unlock(&d->qlock);
			return;
		}
		len = first->len;
		for (q = first->next; q != NULL && len + q->len <= MAX_ENTRY;
		    q = q->next)
			len += q->len;
		d->qhead = q;
		if (q == NULL)
			d->qtail = &d->qhead;
		pthread_mutex_unlock(&d->qlock);
		d_propose(d, first, q, 0, false);
	}
}

/* The state's earliest deadline came: an empty entry makes time pass. */
static void d_deadline_cb(uv_timer_t *t)
{
	struct durable *d = t->data;
	uint64_t next;

	d_lock(d);
	next = sm_next_deadline(d_sm(d));
	d_unlock(d);
	if (!d->serving || d->tick_out || next == UINT64_MAX)
		return;
	if (d_propose(d, NULL, NULL, next, false))
		d->tick_out = true;
}

/* Keep the deadline timer on the state's earliest deadline (raft thread). */
void d_arm_deadline(struct durable *d, uint64_t next)
{
	uint64_t now;

	if (next == UINT64_MAX || !d->serving) {
		uv_timer_stop(&d->deadline);
		return;
	}
	now = sm_clock_now(&d->clock, d_now_ms());
	uv_timer_start(&d->deadline, d_deadline_cb, next > now ? next - now : 0, 0);
}

/*
 * The leader's sweep, every SWEEP_MS (raft thread, serving): the sessions
 * whose lease ran out by this leader's clock - nothing heard of them, by
 * entry or by a request answered without one, for their lease since the
 * later of their last entry and this leadership's start with its grace -
 * end by an EXPIRE command each, queued as the loops' commands are.
 */
void d_sweep_leases(struct durable *d)
{
	uint64_t ids[SWEEP_MAX], mono = d_now_ms();
	struct sm_batch b;
	struct qchunk *q;
	size_t n, i;

	if (mono < d->next_sweep)
		return;
	d->next_sweep = mono + SWEEP_MS;
	d_lock(d);
	n = sm_leases_due(d_sm(d), &d->clock, mono, SWEEP_RETRY_MS, ids,
	    SWEEP_MAX);
	d_unlock(d);
	if (n == 0)
		return;
	sm_batch_init(&b);
	for (i = 0; i < n; i++)
		sm_batch_expire(&b, ids[i]);
	q = b.failed ? NULL : qchunk_new(b.p, b.len);
	sm_batch_free(&b);
	if (q == NULL) {
		log_err("log: out of memory ending sessions; trying again");
		return;
	}
	d_queue(d, q);
	d_propose_queued(d);
}

/* The event loops queued commands or cluster changes, or it is time to stop. */
void d_wake_cb(uv_async_t *a)
{
	struct durable *d = a->data;
	struct ctl *c, *next;
	bool stop;

	pthread_mutex_lock(&d->qlock);
	stop = d->stop;
	c = d->ctlq;
	d->ctlq = NULL;
	pthread_mutex_unlock(&d->qlock);
	for (; c != NULL; c = next) {
		next = c->next;
		if (stop)
			free(c);
		else
			d_ctl_start(d, c);
	}
	if (stop) {
		if (!d->stopping) {
			d->stopping = true;
			if (d_hand_over(d))
				return;	/* d_handed_over() stops the loop */
			uv_stop(&d->loop);
		}
		return;
	}
	d_propose_queued(d);
	d_reads_take(d);
}

/* Queue a batch's commands for the next entry; wake the raft thread. */
void durable_submit(struct durable *d, struct sm_batch *b)
{
	struct qchunk *q;

	if (b->len == 0)
		return;
	/* A node that does not lead proposes nothing: what it had goes. */
	if (!atomic_load(&d->serving_pub)) {
		sm_batch_reset(b);
		return;
	}
	q = b->failed ? NULL : qchunk_new(b->p, b->len);
	sm_batch_reset(b);
	if (q == NULL) {
		log_err("log: out of memory queueing commands: some were lost");
		return;
	}
	d_queue(d, q);
	uv_async_send(&d->wake);
}

/* Propose new settings (a reload). */
void durable_config(struct durable *d, const struct sm_config *cfg)
{
	struct sm_batch b;

	sm_batch_init(&b);
	sm_batch_config(&b, cfg);
	durable_submit(d, &b);
	sm_batch_free(&b);
}

/*
 * The leader answers a request of client id without an entry (under the
 * state lock): true when it serves and the client has a session, which is
 * then heard now, by this leader's clock (sm_heard_local).
 */
bool durable_heard_locked(struct durable *d, uint64_t id)
{
	return atomic_load(&d->serving_pub) &&
	    sm_heard_local(d_sm(d), id, d_now_ms());
}

/* A new client id (under the state lock). */
uint64_t durable_client_id(struct durable *d)
{
	return (uint64_t)d->id << 48 | ++d->next_client;
}
