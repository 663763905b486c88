/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/raftguard.c - entries a follower compacted away are not handed to
 * libraft 0.15 again, raft's close callback runs once, and a leader's read
 * barrier (see raftguard.h).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/log/raftguard.h"

struct guard {
	struct raft_io	*io;
	int		(*start)(struct raft_io *io, unsigned msecs,
	    raft_io_tick_cb tick, raft_io_recv_cb recv);
	raft_io_recv_cb	recv;
	/* The io's close, and raft's callback for it, called once only. */
	void		(*close)(struct raft_io *io, raft_io_close_cb cb);
	raft_io_close_cb close_cb;
	bool		closed;
	/* The io's send (messages to no known server are not sent). */
	int		(*send)(struct raft_io *io, struct raft_io_send *req,
	    const struct raft_message *m, raft_io_send_cb cb);
	/* Heard from a leader (raftguard_heard), read by any thread. */
	_Atomic uint64_t leader_commit;
	_Atomic uint64_t snapshot_index;
	/* Measured (raftguard_measure): the io's own calls, and what it did. */
	int		(*append)(struct raft_io *io, struct raft_io_append *req,
	    const struct raft_entry entries[], unsigned n, raft_io_append_cb cb);
	int		(*snapshot_put)(struct raft_io *io, unsigned trailing,
	    struct raft_io_snapshot_put *req, const struct raft_snapshot *snapshot,
	    raft_io_snapshot_put_cb cb);
	_Atomic uint64_t append_bucket[RAFTGUARD_APPEND_BUCKETS];
	_Atomic uint64_t append_sum_us;
	_Atomic uint64_t snapshots;
	_Atomic uint64_t snapshot_failures;
	/* Read barriers (raftguard_probe), on raft's loop only. */
	raft_term	probe_term;	/* the term of the rounds counted */
	uint64_t	first_round;	/* the term's first */
	uint64_t	round;		/* the last sent */
	uint64_t	confirmed;	/* the last a majority answered */
	struct guard_ack {
		raft_id		id;
		uint64_t	round;	/* the last it answered */
	}		*acks;
	uint64_t	*scratch;
	size_t		nacks;
	size_t		cap;
};

/* The upper bounds of the append buckets, in microseconds (then +Inf). */
const uint32_t raftguard_append_le_us[RAFTGUARD_APPEND_BUCKETS - 1] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
	250000, 500000, 1000000, 2500000, 5000000,
};

static struct guard guards[RAFTGUARD_MAX];
static pthread_mutex_t guards_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned long trimmed;

static struct guard *guard_of(const struct raft_io *io)
{
	struct guard *g = NULL;

	pthread_mutex_lock(&guards_lock);
	for (size_t i = 0; i < RAFTGUARD_MAX && g == NULL; i++)
		if (guards[i].io == io)
			g = &guards[i];
	pthread_mutex_unlock(&guards_lock);
	return g;
}

unsigned int raftguard_trim(const struct raft *r, struct raft_message *m)
{
	struct raft_append_entries *a = &m->append_entries;
	raft_index snap = r->log.snapshot.last_index;
	struct raft_entry *e = a->entries;
	void *freed = NULL;
	size_t k, i;

	if (m->type != RAFT_IO_APPEND_ENTRIES || snap == 0 ||
	    a->prev_log_index >= snap || a->n_entries == 0)
		return 0;
	/* Entries 1..k of the message are at or below the snapshot. */
	k = snap - a->prev_log_index;
	if (k > a->n_entries)
		k = a->n_entries;
	/*
	 * The entry at the snapshot's index must be the snapshot's (committed
	 * entries never differ); if not, leave the message to raft.
	 */
	if (a->prev_log_index + k == snap && e[k - 1].term != r->log.snapshot.last_term)
		return 0;
	for (i = 0; i < k; i++) {
		void *b = e[i].batch;

		if (b != NULL && b != freed &&
		    (k == a->n_entries || b != e[k].batch)) {
			raft_free(b);
			freed = b;
		}
	}
	if (k == a->n_entries) {
		raft_free(e);
		a->entries = NULL;
		a->n_entries = 0;
	} else {
		memmove(e, e + k, (a->n_entries - k) * sizeof *e);
		a->n_entries -= (unsigned)k;
	}
	a->prev_log_index = snap;
	a->prev_log_term = r->log.snapshot.last_term;
	return (unsigned int)k;
}

/* Remember the highest index a leader said in a message of type. */
static void guard_heard(_Atomic uint64_t *at, uint64_t index)
{
	uint64_t cur = atomic_load_explicit(at, memory_order_relaxed);

	while (index > cur && !atomic_compare_exchange_weak_explicit(at, &cur,
	    index, memory_order_relaxed, memory_order_relaxed))
		;
}

static bool guard_probe_answer(struct guard *g, struct raft *r,
    const struct raft_message *m);

static void guard_recv(struct raft_io *io, struct raft_message *m)
{
	struct guard *g = guard_of(io);

	if (m->type == RAFT_IO_APPEND_ENTRIES_RESULT &&
	    m->append_entries_result.rejected >= RAFTGUARD_PROBE_BASE &&
	    io->data != NULL && guard_probe_answer(g, io->data, m))
		return;
	if (m->type == RAFT_IO_APPEND_ENTRIES)
		guard_heard(&g->leader_commit, m->append_entries.leader_commit);
	else if (m->type == RAFT_IO_INSTALL_SNAPSHOT)
		guard_heard(&g->snapshot_index, m->install_snapshot.last_index);
	if (io->data != NULL && raftguard_trim(io->data, m) > 0)
		trimmed++;
	g->recv(io, m);
}

static int guard_start(struct raft_io *io, unsigned msecs,
    raft_io_tick_cb tick, raft_io_recv_cb recv)
{
	struct guard *g = guard_of(io);

	g->recv = recv;
	return g->start(io, msecs, tick, guard_recv);
}

/*
 * libraft 0.15 answers an append it wrote as a follower to the leader it
 * knows, and a node that stepped down to a new term while the write was
 * under way knows none: the answer goes to a NULL address, and the uv io
 * crashes in strlen (ASan, a leader deposed while it appended, faults.sh).
 * Later libraft versions skip it; the guard refuses such a send (raft frees
 * its request), as a send to a peer that cannot be reached.
 */
static int guard_send(struct raft_io *io, struct raft_io_send *req,
    const struct raft_message *m, raft_io_send_cb cb)
{
	struct guard *g = guard_of(io);

	if (m->server_id == 0 || m->server_address == NULL)
		return RAFT_NOCONNECTION;
	return g->send(io, req, m, cb);
}

/*
 * libraft 0.15's uv io calls its close callback from every completion that
 * finds nothing left open, and does not forget the callback once called:
 * when a snapshot write ends after raft_close(), raft's callback runs twice
 * and frees the node's address and log twice (ASan, SIGTERM of a durable
 * semd under load while it takes snapshots). The guard lets it run once.
 */
static void guard_close_cb(struct raft_io *io)
{
	struct guard *g = guard_of(io);

	if (g->closed)
		return;
	g->closed = true;
	g->close_cb(io);
}

static void guard_close(struct raft_io *io, raft_io_close_cb cb)
{
	struct guard *g = guard_of(io);

	g->close_cb = cb;
	g->closed = false;
	g->close(io, guard_close_cb);
}

int raftguard_install(struct raft_io *io)
{
	int rv = -1;

	pthread_mutex_lock(&guards_lock);
	for (size_t i = 0; i < RAFTGUARD_MAX; i++)
		if (guards[i].io == NULL) {
			guards[i].io = io;
			guards[i].start = io->start;
			guards[i].recv = NULL;
			guards[i].close = io->close;
			guards[i].close_cb = NULL;
			guards[i].closed = false;
			guards[i].send = io->send;
			atomic_store(&guards[i].leader_commit, 0);
			atomic_store(&guards[i].snapshot_index, 0);
			guards[i].append = NULL;
			guards[i].snapshot_put = NULL;
			for (size_t k = 0; k < RAFTGUARD_APPEND_BUCKETS; k++)
				atomic_store(&guards[i].append_bucket[k], 0);
			atomic_store(&guards[i].append_sum_us, 0);
			atomic_store(&guards[i].snapshots, 0);
			atomic_store(&guards[i].snapshot_failures, 0);
			guards[i].probe_term = 0;
			guards[i].first_round = guards[i].round = 0;
			guards[i].confirmed = 0;
			guards[i].acks = NULL;
			guards[i].scratch = NULL;
			guards[i].nacks = guards[i].cap = 0;
			io->start = guard_start;
			io->close = guard_close;
			io->send = guard_send;
			rv = 0;
			break;
		}
	pthread_mutex_unlock(&guards_lock);
	return rv;
}

void raftguard_remove(struct raft_io *io)
{
	pthread_mutex_lock(&guards_lock);
	for (size_t i = 0; i < RAFTGUARD_MAX; i++)
		if (guards[i].io == io) {
			io->start = guards[i].start;
			io->close = guards[i].close;
			io->send = guards[i].send;
			if (guards[i].append != NULL)
				io->append = guards[i].append;
			if (guards[i].snapshot_put != NULL)
				io->snapshot_put = guards[i].snapshot_put;
			free(guards[i].acks);
			free(guards[i].scratch);
			memset(&guards[i], 0, sizeof guards[i]);
		}
	pthread_mutex_unlock(&guards_lock);
}

unsigned long raftguard_trimmed(void)
{
	return trimmed;
}

void raftguard_heard(const struct raft_io *io, uint64_t *leader_commit,
    uint64_t *snapshot_index)
{
	struct guard *g = guard_of(io);

	*leader_commit = g != NULL ? atomic_load(&g->leader_commit) : 0;
	*snapshot_index = g != NULL ? atomic_load(&g->snapshot_index) : 0;
}

/* Microseconds of the monotonic clock. */
static uint64_t guard_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/*
 * An append on its way to the disk: the request the io sees is ours, so
 * that its completion comes here first; raft's own is completed after.
 */
struct guard_append {
	struct raft_io_append	req;
	struct raft_io_append	*orig;
	raft_io_append_cb	cb;
	struct guard		*g;
	uint64_t		t0_us;
};

static void guard_append_cb(struct raft_io_append *req, int status)
{
	struct guard_append *a = (struct guard_append *)(void *)
	    ((char *)req - offsetof(struct guard_append, req));
	struct raft_io_append *orig = a->orig;
	raft_io_append_cb cb = a->cb;
	uint64_t us = guard_now_us() - a->t0_us;
	size_t i = 0;

	if (status == 0) {
		while (i < RAFTGUARD_APPEND_BUCKETS - 1 &&
		    us > raftguard_append_le_us[i])
			i++;
		atomic_fetch_add(&a->g->append_bucket[i], 1);
		atomic_fetch_add(&a->g->append_sum_us, us);
	}
	free(a);
	cb(orig, status);
}

/* io->append, timed from the call to the completion (out of memory: not). */
static int guard_append(struct raft_io *io, struct raft_io_append *req,
    const struct raft_entry entries[], unsigned n, raft_io_append_cb cb)
{
	struct guard *g = guard_of(io);
	struct guard_append *a = malloc(sizeof *a);
	int rv;

	if (a == NULL)
		return g->append(io, req, entries, n, cb);
	a->req.data = req->data;
	a->orig = req;
	a->cb = cb;
	a->g = g;
	a->t0_us = guard_now_us();
	rv = g->append(io, &a->req, entries, n, guard_append_cb);
	if (rv != 0)
		free(a);
	return rv;
}

/* A snapshot being written (one taken here, or one a leader sent). */
struct guard_put {
	struct raft_io_snapshot_put	req;
	struct raft_io_snapshot_put	*orig;
	raft_io_snapshot_put_cb		cb;
	struct guard			*g;
};

static void guard_put_cb(struct raft_io_snapshot_put *req, int status)
{
	struct guard_put *p = (struct guard_put *)(void *)
	    ((char *)req - offsetof(struct guard_put, req));
	struct raft_io_snapshot_put *orig = p->orig;
	raft_io_snapshot_put_cb cb = p->cb;

	/* Cancelled (the io closing) is no failure of the disk's. */
	if (status == 0)
		atomic_fetch_add(&p->g->snapshots, 1);
	else if (status != RAFT_CANCELED)
		atomic_fetch_add(&p->g->snapshot_failures, 1);
	free(p);
	cb(orig, status);
}

/* io->snapshot_put, counted. */
static int guard_snapshot_put(struct raft_io *io, unsigned trailing,
    struct raft_io_snapshot_put *req, const struct raft_snapshot *snapshot,
    raft_io_snapshot_put_cb cb)
{
	struct guard *g = guard_of(io);
	struct guard_put *p = malloc(sizeof *p);
	int rv;

	if (p == NULL)		/* not counted, not changed */
		return g->snapshot_put(io, trailing, req, snapshot, cb);
	p->req.data = req->data;
	p->orig = req;
	p->cb = cb;
	p->g = g;
	rv = g->snapshot_put(io, trailing, &p->req, snapshot, guard_put_cb);
	if (rv != 0) {
		atomic_fetch_add(&g->snapshot_failures, 1);
		free(p);
	}
	return rv;
}

int raftguard_measure(struct raft_io *io)
{
	struct guard *g = guard_of(io);

	if (g == NULL)
		return -1;
	g->append = io->append;
	g->snapshot_put = io->snapshot_put;
	io->append = guard_append;
	io->snapshot_put = guard_snapshot_put;
	return 0;
}

void raftguard_stats(const struct raft_io *io, struct raftguard_stats *out)
{
	struct guard *g = guard_of(io);
	size_t i;

	memset(out, 0, sizeof *out);
	if (g == NULL)
		return;
	for (i = 0; i < RAFTGUARD_APPEND_BUCKETS; i++)
		out->append_bucket[i] = atomic_load(&g->append_bucket[i]);
	out->append_sum_us = atomic_load(&g->append_sum_us);
	out->snapshots = atomic_load(&g->snapshots);
	out->snapshot_failures = atomic_load(&g->snapshot_failures);
}

/* --- read barriers ------------------------------------------------------- */

uint64_t raftguard_confirmed(const struct raft_io *io)
{
	const struct guard *g = guard_of(io);
	const struct raft *r = io->data;

	if (g == NULL || r == NULL || r->state != RAFT_LEADER ||
	    g->probe_term != r->current_term)
		return 0;
	return g->confirmed;
}

/* Room for an answer of each of n servers; false without memory. */
static bool guard_acks_room(struct guard *g, size_t n)
{
	struct guard_ack *a;
	uint64_t *s;

	if (n <= g->cap)
		return true;
	if ((a = realloc(g->acks, n * sizeof *a)) == NULL)
		return false;
	g->acks = a;
	if ((s = realloc(g->scratch, n * sizeof *s)) == NULL)
		return false;
	g->scratch = s;
	g->cap = n;
	return true;
}

/* Is id another voter of conf than self? */
static bool guard_voter(const struct raft_configuration *conf,
    raft_id id, raft_id self)
{
	for (size_t i = 0; i < conf->n; i++)
		if (conf->servers[i].id == id)
			return id != self && conf->servers[i].role == RAFT_VOTER;
	return false;
}

/* The last round voter id answered in the guard's term (0: none). */
static uint64_t guard_acked(const struct guard *g, raft_id id)
{
	for (size_t i = 0; i < g->nacks; i++)
		if (g->acks[i].id == id)
			return g->acks[i].round;
	return 0;
}

/*
 * The highest round a majority of r's voters answered (r itself: the last
 * sent): the majority-th highest of their answers.
 */
static uint64_t guard_majority(const struct guard *g, const struct raft *r)
{
	const struct raft_configuration *conf = &r->configuration;
	uint64_t *v = g->scratch, t;
	size_t n = 0, i, k;

	for (i = 0; i < conf->n; i++) {
		if (conf->servers[i].role != RAFT_VOTER)
			continue;
		t = conf->servers[i].id == r->id ? g->round :
		    guard_acked(g, conf->servers[i].id);
		/* Insert, highest first (a handful of voters). */
		for (k = n++; k > 0 && v[k - 1] < t; k--)
			v[k] = v[k - 1];
		v[k] = t;
	}
	return n == 0 ? 0 : v[n / 2];
}

static void guard_probe_sent(struct raft_io_send *req, int status)
{
	(void)status;
	free(req);
}

uint64_t raftguard_probe(struct raft_io *io)
{
	struct guard *g = guard_of(io);
	struct raft *r = io->data;
	const struct raft_configuration *conf;
	struct raft_message m;
	struct raft_io_send *req;
	uint64_t maj;
	size_t i;

	if (g == NULL || r == NULL || r->state != RAFT_LEADER)
		return 0;
	conf = &r->configuration;
	if (!guard_acks_room(g, conf->n))
		return 0;
	if (g->probe_term != r->current_term) {
		/* A new term: no answer of before counts. */
		g->probe_term = r->current_term;
		g->first_round = g->round + 1;
		g->confirmed = 0;
		g->nacks = 0;
	}
	/* Only the voters of now are counted (a removed one is forgotten). */
	for (i = 0; i < g->nacks; )
		if (guard_voter(conf, g->acks[i].id, r->id))
			i++;
		else
			g->acks[i] = g->acks[--g->nacks];
	g->round++;
	for (i = 0; i < conf->n; i++) {
		const struct raft_server *s = &conf->servers[i];

		if (s->role != RAFT_VOTER || s->id == r->id)
			continue;
		memset(&m, 0, sizeof m);
		m.type = RAFT_IO_APPEND_ENTRIES;
		m.server_id = s->id;
		m.server_address = s->address;
		m.append_entries.term = r->current_term;
		m.append_entries.prev_log_index = RAFTGUARD_PROBE_BASE + g->round;
		m.append_entries.prev_log_term = r->current_term;
		if ((req = malloc(sizeof *req)) == NULL)
			return 0;
		req->data = NULL;
		/* A peer not reached answers nothing: the round waits for others. */
		if (g->send(io, req, &m, guard_probe_sent) != 0)
			free(req);
	}
	maj = guard_majority(g, r);
	if (maj > g->confirmed)
		g->confirmed = maj;
	return g->round;
}

/*
 * An AppendEntries result whose rejected index is a probe's: counted when
 * it is of the node's term, as its leader. True: kept from raft (a newer
 * term goes to raft, which steps down).
 */
static bool guard_probe_answer(struct guard *g, struct raft *r,
    const struct raft_message *m)
{
	const struct raft_append_entries_result *a = &m->append_entries_result;
	uint64_t round = a->rejected - RAFTGUARD_PROBE_BASE, maj;
	size_t i;

	if (a->term > r->current_term)
		return false;
	if (r->state != RAFT_LEADER || a->term != r->current_term ||
	    g->probe_term != r->current_term || round < g->first_round ||
	    round > g->round)
		return true;
	for (i = 0; i < g->nacks && g->acks[i].id != m->server_id; i++)
		;
	if (i == g->nacks) {
		if (i == g->cap)
			return true;	/* a server not in the configuration */
		g->acks[g->nacks++] = (struct guard_ack){ m->server_id, 0 };
	}
	if (round > g->acks[i].round)
		g->acks[i].round = round;
	maj = guard_majority(g, r);
	if (maj > g->confirmed)
		g->confirmed = maj;
	return true;
}
