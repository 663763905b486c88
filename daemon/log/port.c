/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/port.c - the peer port between a raft_io and libraft (port.h):
 * the io's calls wrapped, what the log holds followed, the read barrier.
 *
 * The io's callbacks get only the io: a port is found by it in a small
 * table (ports are made before raft starts and freed after it closed).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log/peer_wire.h"
#include "daemon/log/port.h"
#include "daemon/logging.h"

/* A configuration of the log and the index of its entry. */
struct port_conf {
	raft_index			index;
	struct raft_configuration	conf;
};

/* The last round a voter answered (in the port's term). */
struct port_ack {
	raft_id		id;
	uint64_t	round;
};

struct semlog_port {
	struct raft_io	*io;
	raft_id		self;
	/* The io's own calls (a copy of it made first), and raft's callbacks
	 * the port stands in front of. */
	struct raft_io	inner;
	raft_io_tick_cb	tick;
	raft_io_recv_cb	recv;
	void		(*step)(void *arg);
	void		*step_arg;
	uint64_t	(*now_us)(void *arg);
	void		*clock_arg;
	/* The appends on their way to the disk, oldest first (port_append). */
	struct port_append *aw_head, *aw_tail;
	/* What the log holds: its configurations, oldest first; its end. */
	struct port_conf *confs;
	size_t		nconfs, capconfs;
	uint64_t	conf_gen;	/* changes of the latest, counted */
	raft_index	last_index;
	raft_index	snap_index;	/* the last snapshot stored (0: none) */
	raft_term	snap_term;
	unsigned long	trimmed;	/* messages trimmed (port_trim) */
	/* The checks of messages in (semlog_port_check). */
	int		(*entry_ok)(void *arg, const void *buf, size_t len,
			    char *why, size_t whylen);
	void		*entry_arg;
	_Atomic unsigned long refused;
	unsigned int	puts;		/* snapshot writes under way */
	unsigned long	installs_dropped;	/* port_admit */
	struct raft_configuration none;	/* before anything is loaded */
	/* Heard from a leader, and the disk's work: read by any thread. */
	_Atomic uint64_t leader_commit;
	_Atomic uint64_t snapshot_index;
	_Atomic uint64_t append_bucket[SEMLOG_APPEND_BUCKETS];
	_Atomic uint64_t append_sum_us;
	_Atomic uint64_t snapshots;
	_Atomic uint64_t snapshot_failures;
	/* A leadership transfer's TimeoutNow, to send again (port_transfer). */
	struct raft_message tn;
	char		tn_address[256];
	bool		tn_again;
	/* Read barriers. */
	raft_term	probe_term;	/* the term of the rounds counted */
	uint64_t	first_round;	/* the term's first */
	uint64_t	round;		/* the last sent */
	uint64_t	confirmed;	/* the last a majority answered */
	struct port_ack	*acks;
	uint64_t	*scratch;
	size_t		nacks, capacks;
};

/* The upper bounds of the append buckets, in microseconds (then +Inf). */
const uint32_t semlog_append_le_us[SEMLOG_APPEND_BUCKETS - 1] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
	250000, 500000, 1000000, 2500000, 5000000,
};

static struct semlog_port *ports[SEMLOG_PORT_MAX];
static pthread_mutex_t ports_lock = PTHREAD_MUTEX_INITIALIZER;

/* The port of io (it is one: the io's calls are the port's). */
static struct semlog_port *port_of(const struct raft_io *io)
{
	struct semlog_port *p = NULL;

	pthread_mutex_lock(&ports_lock);
	for (size_t i = 0; i < SEMLOG_PORT_MAX && p == NULL; i++)
		if (ports[i] != NULL && ports[i]->io == io)
			p = ports[i];
	pthread_mutex_unlock(&ports_lock);
	return p;
}

/* The struct raft on the io (raft_init sets io->data). */
static struct raft *port_raft(const struct semlog_port *p)
{
	return p->io->data;
}

/* Tell the owner that raft moved. */
static void port_stepped(const struct semlog_port *p)
{
	if (p->step != NULL)
		p->step(p->step_arg);
}

/* --- what the log holds -------------------------------------------------- */

/* Copy conf into out (initialized here); false without memory. */
static bool port_conf_copy(const struct raft_configuration *conf,
    struct raft_configuration *out)
{
	raft_configuration_init(out);
	for (unsigned i = 0; i < conf->n; i++)
		if (raft_configuration_add(out, conf->servers[i].id,
		    conf->servers[i].address, conf->servers[i].role) != 0) {
			raft_configuration_close(out);
			return false;
		}
	return true;
}

/* Forget the configurations of entries from index on. */
static void port_confs_cut(struct semlog_port *p, raft_index index)
{
	while (p->nconfs > 0 && p->confs[p->nconfs - 1].index >= index) {
		raft_configuration_close(&p->confs[--p->nconfs].conf);
		p->conf_gen++;
	}
}

/*
 * Forget those a snapshot at index made useless: all but the last one at
 * or below it (a truncation never reaches below a snapshot, which holds
 * only committed entries).
 */
static void port_confs_compact(struct semlog_port *p, raft_index index)
{
	size_t keep = 0, i;

	for (i = 0; i < p->nconfs; i++)
		if (p->confs[i].index <= index)
			keep = i;
	for (i = 0; i < keep; i++)
		raft_configuration_close(&p->confs[i].conf);
	memmove(p->confs, p->confs + keep, (p->nconfs - keep) * sizeof *p->confs);
	p->nconfs -= keep;
}

/*
 * The configuration of entry index is conf (taken over: the port closes it).
 * false without memory (conf is closed).
 */
static bool port_confs_add(struct semlog_port *p, raft_index index,
    struct raft_configuration *conf)
{
	struct port_conf *c;

	port_confs_cut(p, index);
	if (p->nconfs == p->capconfs) {
		size_t cap = p->capconfs ? 2 * p->capconfs : 4;

		if ((c = realloc(p->confs, cap * sizeof *c)) == NULL) {
			raft_configuration_close(conf);
			return false;
		}
		p->confs = c;
		p->capconfs = cap;
	}
	p->confs[p->nconfs].index = index;
	p->confs[p->nconfs++].conf = *conf;
	p->conf_gen++;
	return true;
}

/* Note the configurations among n entries from index on. */
static void port_note_entries(struct semlog_port *p, raft_index index,
    const struct raft_entry *entries, size_t n)
{
	struct raft_configuration conf;

	for (size_t i = 0; i < n; i++) {
		if (entries[i].type != RAFT_CHANGE)
			continue;
		/* Written by raft itself; a failure leaves the one before. */
		if (raft_configuration_decode(&entries[i].buf, &conf) == 0)
			(void)port_confs_add(p, index + i, &conf);
	}
}

/* Forget everything the log held. */
static void port_confs_clear(struct semlog_port *p)
{
	port_confs_cut(p, 0);
	p->last_index = 0;
	p->snap_index = 0;
	p->snap_term = 0;
}

/* io->load: what raft starts from. */
static int port_load(struct raft_io *io, raft_term *term, raft_id *voted_for,
    struct raft_snapshot **snapshot, raft_index *start_index,
    struct raft_entry *entries[], size_t *n_entries)
{
	struct semlog_port *p = port_of(io);
	struct raft_configuration conf;
	int rv;

	rv = p->inner.load(io, term, voted_for, snapshot, start_index, entries,
	    n_entries);
	if (rv != 0)
		return rv;
	port_confs_clear(p);
	if (*snapshot != NULL) {
		if (port_conf_copy(&(*snapshot)->configuration, &conf))
			(void)port_confs_add(p, (*snapshot)->configuration_index,
			    &conf);
		p->last_index = (*snapshot)->index;
		p->snap_index = (*snapshot)->index;
		p->snap_term = (*snapshot)->term;
	}
	port_note_entries(p, *start_index, *entries, *n_entries);
	if (*n_entries > 0)
		p->last_index = *start_index + *n_entries - 1;
	return 0;
}

/* io->bootstrap: a new log whose first entry is conf. */
static int port_bootstrap(struct raft_io *io,
    const struct raft_configuration *conf)
{
	struct semlog_port *p = port_of(io);
	struct raft_configuration copy;
	int rv;

	if ((rv = p->inner.bootstrap(io, conf)) != 0)
		return rv;
	port_confs_clear(p);
	if (port_conf_copy(conf, &copy))
		(void)port_confs_add(p, 1, &copy);
	p->last_index = 1;
	return 0;
}

/* io->truncate: the entries from index on go (raft calls it before appending). */
static int port_truncate(struct raft_io *io, raft_index index)
{
	struct semlog_port *p = port_of(io);
	int rv;

	if ((rv = p->inner.truncate(io, index)) != 0)
		return rv;
	port_confs_cut(p, index);
	if (index > 0 && p->last_index >= index)
		p->last_index = index - 1;
	return 0;
}

/* Microseconds by the port's clock (0 without one). */
static uint64_t port_now_us(const struct semlog_port *p)
{
	return p->now_us != NULL ? p->now_us(p->clock_arg) : 0;
}

/*
 * An append on its way to the disk: the request the io sees is the port's,
 * so that its completion comes here first; raft's own is completed after.
 */
struct port_append {
	struct raft_io_append	req;
	struct raft_io_append	*orig;
	raft_io_append_cb	cb;
	struct semlog_port	*p;
	uint64_t		t0_us;
	struct port_append	*prev, *next;	/* on the way, oldest first */
};

/* An append completed: timed, then raft's callback, then the owner told. */
static void port_append_cb(struct raft_io_append *req, int status)
{
	struct port_append *a = (struct port_append *)(void *)
	    ((char *)req - offsetof(struct port_append, req));
	struct semlog_port *p = a->p;
	struct raft_io_append *orig = a->orig;
	raft_io_append_cb cb = a->cb;
	uint64_t us = port_now_us(p) - a->t0_us;
	size_t i = 0;

	if (a->prev != NULL)
		a->prev->next = a->next;
	else
		p->aw_head = a->next;
	if (a->next != NULL)
		a->next->prev = a->prev;
	else
		p->aw_tail = a->prev;
	if (status == 0 && p->now_us != NULL) {
		while (i < SEMLOG_APPEND_BUCKETS - 1 && us > semlog_append_le_us[i])
			i++;
		atomic_fetch_add(&p->append_bucket[i], 1);
		atomic_fetch_add(&p->append_sum_us, us);
	}
	free(a);
	cb(orig, status);
	port_stepped(p);
}

/* io->append: n entries after the log's last; timed, configurations noted. */
static int port_append(struct raft_io *io, struct raft_io_append *req,
    const struct raft_entry entries[], unsigned n, raft_io_append_cb cb)
{
	struct semlog_port *p = port_of(io);
	struct port_append *a = malloc(sizeof *a);
	raft_index first = p->last_index + 1;
	int rv;

	if (a == NULL)
		return RAFT_NOMEM;
	a->req.data = req->data;
	a->orig = req;
	a->cb = cb;
	a->p = p;
	a->t0_us = port_now_us(p);
	a->next = NULL;
	a->prev = p->aw_tail;
	rv = p->inner.append(io, &a->req, entries, n, port_append_cb);
	if (rv != 0) {
		free(a);
		return rv;
	}
	if (p->aw_tail != NULL)
		p->aw_tail->next = a;
	else
		p->aw_head = a;
	p->aw_tail = a;
	port_note_entries(p, first, entries, n);
	p->last_index += n;
	return 0;
}

/* A snapshot being written (one taken here, or one a leader sent). */
struct port_put {
	struct raft_io_snapshot_put	req;
	struct raft_io_snapshot_put	*orig;
	raft_io_snapshot_put_cb		cb;
	struct semlog_port		*p;
	bool				install;	/* it replaces the log */
	raft_index			index;
	raft_term			term;
	raft_index			conf_index;
	struct raft_configuration	conf;		/* installs only */
};

/* A snapshot write ended: counted, the log as it now is; raft told. */
static void port_put_cb(struct raft_io_snapshot_put *req, int status)
{
	struct port_put *w = (struct port_put *)(void *)
	    ((char *)req - offsetof(struct port_put, req));
	struct semlog_port *p = w->p;
	struct raft_io_snapshot_put *orig = w->orig;
	raft_io_snapshot_put_cb cb = w->cb;

	/* Cancelled (the io closing) is no failure of the disk's. */
	if (status == 0)
		atomic_fetch_add(&p->snapshots, 1);
	else if (status != RAFT_CANCELED)
		atomic_fetch_add(&p->snapshot_failures, 1);
	if (status == 0 && w->install) {
		/* The log is the snapshot now; what raft appends comes after. */
		port_confs_clear(p);
		(void)port_confs_add(p, w->conf_index, &w->conf);
		p->last_index = w->index;
	} else {
		if (w->install)
			raft_configuration_close(&w->conf);
		if (status == 0)
			port_confs_compact(p, w->index);
	}
	if (status == 0 && w->index > p->snap_index) {
		p->snap_index = w->index;
		p->snap_term = w->term;
	}
	free(w);
	p->puts--;
	cb(orig, status);
	port_stepped(p);
}

/* io->snapshot_put: counted, and followed (trailing 0: an install). */
static int port_snapshot_put(struct raft_io *io, unsigned trailing,
    struct raft_io_snapshot_put *req, const struct raft_snapshot *snapshot,
    raft_io_snapshot_put_cb cb)
{
	struct semlog_port *p = port_of(io);
	struct port_put *w = calloc(1, sizeof *w);
	int rv;

	if (w == NULL)
		return RAFT_NOMEM;
	w->req.data = req->data;
	w->orig = req;
	w->cb = cb;
	w->p = p;
	w->index = snapshot->index;
	w->term = snapshot->term;
	w->conf_index = snapshot->configuration_index;
	w->install = trailing == 0;
	if (w->install && !port_conf_copy(&snapshot->configuration, &w->conf)) {
		free(w);
		return RAFT_NOMEM;
	}
	p->puts++;
	rv = p->inner.snapshot_put(io, trailing, &w->req, snapshot, port_put_cb);
	if (rv != 0) {
		p->puts--;
		atomic_fetch_add(&p->snapshot_failures, 1);
		if (w->install)
			raft_configuration_close(&w->conf);
		free(w);
	}
	return rv;
}

/* --- messages out -------------------------------------------------------- */

/* A message the port sent itself went: its request goes. */
static void port_sent(struct raft_io_send *req, int status)
{
	(void)status;
	free(req);
}

/* Send m on the port's own request (a peer not reached: it is lost). */
static void port_send_own(struct semlog_port *p, const struct raft_message *m)
{
	struct raft_io_send *req = malloc(sizeof *req);

	if (req == NULL)
		return;
	req->data = NULL;
	if (p->inner.send(p->io, req, m, port_sent) != 0)
		free(req);
}

/*
 * io->send: every message raft sends. A TimeoutNow (a leadership transfer)
 * is kept, to be sent again once the follower has stored the leader's log
 * (port_transfer).
 */
static int port_send(struct raft_io *io, struct raft_io_send *req,
    const struct raft_message *m, raft_io_send_cb cb)
{
	struct semlog_port *p = port_of(io);

	if (m->type == RAFT_TIMEOUT_NOW && m->server_address != NULL &&
	    snprintf(p->tn_address, sizeof p->tn_address, "%s",
	    m->server_address) < (int)sizeof p->tn_address) {
		p->tn = *m;
		p->tn.server_address = p->tn_address;
		p->tn_again = true;
	}
	return p->inner.send(io, req, m, cb);
}

/*
 * A leadership transfer, made to work: libraft 0.22 sends the TimeoutNow as
 * soon as the follower acknowledges any entry (replicationUpdate() compares
 * its match index with the index it just reported, not with the leader's
 * last), and the follower ignores one that comes before it has stored the
 * leader's whole log (recvTimeoutNow()); the leader sends it once and gives
 * up after an election timeout. So the port sends the same TimeoutNow again,
 * once, when that follower reports it has stored up to the index the
 * message names, while raft still transfers to it in that term (a leader
 * takes no new entry meanwhile, so the follower's log is then the
 * leader's). A TimeoutNow twice is harmless: a follower that already
 * started the election has a newer term and ignores the second.
 */
static void port_transfer(struct semlog_port *p, const struct raft_message *m)
{
	const struct raft_append_entries_result *a = &m->append_entries_result;
	struct raft *r = port_raft(p);

	if (!p->tn_again || m->type != RAFT_APPEND_ENTRIES_RESULT ||
	    m->server_id != p->tn.server_id || a->rejected != 0 ||
	    a->last_log_index < p->tn.timeout_now.last_log_index)
		return;
	p->tn_again = false;
	if (r != NULL && raft_state(r) == RAFT_LEADER &&
	    raft_current_term(r) == p->tn.timeout_now.term &&
	    raft_transferee(r) == p->tn.server_id)
		port_send_own(p, &p->tn);
}

/* --- messages in --------------------------------------------------------- */

/* Remember the highest index a leader said. */
static void port_heard_max(_Atomic uint64_t *at, uint64_t index)
{
	uint64_t cur = atomic_load_explicit(at, memory_order_relaxed);

	while (index > cur && !atomic_compare_exchange_weak_explicit(at, &cur,
	    index, memory_order_relaxed, memory_order_relaxed))
		;
}

static bool port_probe_answer(struct semlog_port *p,
    const struct raft_message *m);

/*
 * An AppendEntries that starts below the last snapshot the io stored is cut
 * to start at it: the entries up to it are committed, in the snapshot, and
 * no longer in the log. A leader sends such entries after it lost track of
 * a follower (its next index falls back to the match index + 1, 1 for a
 * follower not heard yet in its term) while its own log still holds them;
 * libraft 0.22, like 0.15, then appends them after its last entry as if
 * they were the entries at their index, and corrupts its memory (met by
 * tests/cluster/sim, seed 38026, on 0.15; shown on 0.22 by
 * tests/cluster/test_port). The entry at the snapshot's index must be the
 * snapshot's (committed entries never differ), else the message is left
 * to raft. True when entries were dropped.
 */
static bool port_trim(struct semlog_port *p, struct raft_message *m)
{
	struct raft_append_entries *a = &m->append_entries;
	struct raft_entry *e = a->entries;
	raft_index snap = p->snap_index;
	void *freed = NULL;
	size_t k, i;

	if (snap == 0 || a->prev_log_index >= snap || a->n_entries == 0)
		return false;
	/* Entries 1..k of the message are at or below the snapshot. */
	k = snap - a->prev_log_index;
	if (k > a->n_entries)
		k = a->n_entries;
	if (a->prev_log_index + k == snap && e[k - 1].term != p->snap_term)
		return false;
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
	a->prev_log_term = p->snap_term;
	p->trimmed++;
	return true;
}

/*
 * Free what a message from a peer holds, as raft would have (a message
 * kept from raft): an AppendEntries' entries and their batches, an
 * InstallSnapshot's configuration and data.
 */
static void port_message_free(struct raft_message *m)
{
	void *freed = NULL;

	if (m->type == RAFT_APPEND_ENTRIES) {
		struct raft_append_entries *a = &m->append_entries;

		for (unsigned i = 0; i < a->n_entries; i++) {
			void *b = a->entries[i].batch;

			if (b != NULL && b != freed) {
				raft_free(b);
				freed = b;
			}
		}
		raft_free(a->entries);
		a->entries = NULL;
		a->n_entries = 0;
	} else if (m->type == RAFT_INSTALL_SNAPSHOT) {
		raft_configuration_close(&m->install_snapshot.conf);
		raft_free(m->install_snapshot.data.base);
		m->install_snapshot.data.base = NULL;
	}
}

/* Server id of conf, or NULL when it is no member. */
static const struct raft_server *port_server(
    const struct raft_configuration *conf, raft_id id)
{
	for (unsigned i = 0; i < conf->n; i++)
		if (conf->servers[i].id == id)
			return &conf->servers[i];
	return NULL;
}

/* Refuse: why says, with the message's type and sender. */
static bool port_refuse(const struct raft_message *m, char *why,
    size_t whylen, const char *what)
{
	static const char *const names[] = { "?", "AppendEntries",
	    "AppendEntries result", "RequestVote", "RequestVote result",
	    "InstallSnapshot", "TimeoutNow" };
	unsigned t = m->type <= RAFT_TIMEOUT_NOW ? (unsigned)m->type : 0;

	snprintf(why, whylen, "%s from node %llu: %s", names[t],
	    (unsigned long long)m->server_id, what);
	return false;
}

/* A term the node may take: below the cap, no absurd jump from its own. */
static bool port_term_ok(const struct semlog_port_rules *r, raft_term t)
{
	return t < SEMLOG_TERM_MAX && t <= r->term + SEMLOG_TERM_JUMP;
}

/*
 * The entries of an AppendEntries: in term order, none above the message's
 * term or below the previous entry's, each one semd and libraft can apply.
 */
static bool port_entries_ok(const struct semlog_port_rules *r,
    const struct raft_message *m, char *why, size_t whylen)
{
	const struct raft_append_entries *a = &m->append_entries;
	raft_term last = a->prev_log_index > 0 ? a->prev_log_term : 0;
	char what[200];

	for (unsigned i = 0; i < a->n_entries; i++) {
		const struct raft_entry *e = &a->entries[i];

		if (e->term < last || e->term > a->term) {
			snprintf(what, sizeof what, "entry %u of term %llu after "
			    "term %llu, in a message of term %llu", i,
			    (unsigned long long)e->term, (unsigned long long)last,
			    (unsigned long long)a->term);
			return port_refuse(m, why, whylen, what);
		}
		last = e->term;
		if (e->type == RAFT_CHANGE &&
		    !peer_wire_conf_ok(e->buf.base, e->buf.len)) {
			snprintf(what, sizeof what, "entry %u is a configuration "
			    "libraft cannot read", i);
			return port_refuse(m, why, whylen, what);
		}
		if (e->type == RAFT_COMMAND && r->entry_ok != NULL &&
		    r->entry_ok(r->arg, e->buf.base, e->buf.len, what,
		    sizeof what) != 0) {
			char w2[260];

			snprintf(w2, sizeof w2, "entry %u cannot be applied: %s",
			    i, what);
			return port_refuse(m, why, whylen, w2);
		}
	}
	return true;
}

/* The terms and indexes of m, by its type. */
static bool port_numbers_ok(const struct semlog_port_rules *r,
    const struct raft_message *m, raft_term *term)
{
	const uint64_t big = (uint64_t)1 << 63;

	switch (m->type) {
	case RAFT_APPEND_ENTRIES:
		*term = m->append_entries.term;
		return m->append_entries.prev_log_term <= *term &&
		    m->append_entries.prev_log_index < big &&
		    m->append_entries.leader_commit < big;
	case RAFT_APPEND_ENTRIES_RESULT:
		*term = m->append_entries_result.term;
		return m->append_entries_result.rejected < big &&
		    m->append_entries_result.last_log_index < big;
	case RAFT_REQUEST_VOTE:
		*term = m->request_vote.term;
		return m->request_vote.last_log_term <= *term &&
		    m->request_vote.last_log_index < big;
	case RAFT_REQUEST_VOTE_RESULT:
		*term = m->request_vote_result.term;
		return true;
	case RAFT_INSTALL_SNAPSHOT:
		*term = m->install_snapshot.term;
		return m->install_snapshot.last_term <= *term &&
		    m->install_snapshot.last_index < big &&
		    m->install_snapshot.conf_index <= m->install_snapshot.last_index;
	case RAFT_TIMEOUT_NOW:
		*term = m->timeout_now.term;
		return m->timeout_now.last_log_term <= *term &&
		    m->timeout_now.last_log_index < big;
	default:
		*term = 0;
		return false;
	}
}

/* May raft have m? (port.h has the rules) */
bool semlog_port_check(const struct semlog_port_rules *r,
    const struct raft_message *m, char *why, size_t whylen)
{
	const struct raft_server *s = port_server(r->conf, m->server_id);
	int role = s != NULL ? s->role : -1;
	bool joining = r->conf->n == 0;
	char what[400];
	raft_term term;

	if (m->server_id == 0 || m->server_id == r->self)
		return port_refuse(m, why, whylen, "not another node's id");
	/* A member is where the configuration says (TLS: what its
	 * certificate names). */
	if (s != NULL && m->server_address != NULL &&
	    strcmp(s->address, m->server_address) != 0) {
		snprintf(what, sizeof what, "it says it is at %.200s, and the "
		    "node is at %.150s", m->server_address, s->address);
		return port_refuse(m, why, whylen, what);
	}
	if (!port_numbers_ok(r, m, &term))
		return port_refuse(m, why, whylen, "an index or term out of "
		    "order or out of range");
	if (!port_term_ok(r, term)) {
		snprintf(what, sizeof what, "term %llu, and ours is %llu (at most "
		    "%llu more, below 2^48)", (unsigned long long)term,
		    (unsigned long long)r->term,
		    (unsigned long long)SEMLOG_TERM_JUMP);
		return port_refuse(m, why, whylen, what);
	}
	switch (m->type) {
	case RAFT_REQUEST_VOTE:
		if (m->request_vote.candidate_id != m->server_id)
			return port_refuse(m, why, whylen, "it names another "
			    "node the candidate");
		/* fall through */
	case RAFT_TIMEOUT_NOW:
		if (!joining && role != RAFT_VOTER)
			return port_refuse(m, why, whylen, "not a voter of this "
			    "node's configuration");
		break;
	case RAFT_APPEND_ENTRIES:
	case RAFT_INSTALL_SNAPSHOT:
		if (!joining && role < 0 && term < r->term)
			return port_refuse(m, why, whylen, "no member of this "
			    "node's configuration, and of an older term");
		if (m->type == RAFT_APPEND_ENTRIES &&
		    !port_entries_ok(r, m, why, whylen))
			return false;
		break;
	default:
		if (!joining && role < 0)
			return port_refuse(m, why, whylen, "no member of this "
			    "node's configuration");
		break;
	}
	return true;
}

/*
 * A message from a peer that fails the checks: dropped (raft would have
 * answered nothing it could trust). Said in the log for the first and then
 * every 2^k-th refusal, so that a flood does not flood the log.
 */
static void port_refused(struct semlog_port *p, const char *why)
{
	unsigned long n = atomic_fetch_add(&p->refused, 1) + 1;

	if ((n & (n - 1)) == 0)
		log_warn("log: a peer's message refused (%lu so far): %s", n, why);
}

/*
 * Every message from a peer, before libraft: true when raft is to have it.
 * It is checked (semlog_port_check); the answers to read probes are the
 * port's (raft never sent those probes); what a leader says of its commit
 * index and snapshots is noted; entries below the last snapshot are cut off
 * (port_trim).
 */
static bool port_admit(struct semlog_port *p, struct raft_message *m)
{
	struct raft *r = port_raft(p);
	struct semlog_port_rules rules = {
		.conf = semlog_port_configuration(p), .self = p->self,
		.term = r != NULL ? raft_current_term(r) : 0,
		.entry_ok = p->entry_ok, .arg = p->entry_arg,
	};
	char why[400];

	if (!semlog_port_check(&rules, m, why, sizeof why)) {
		port_refused(p, why);
		return false;
	}
	switch (m->type) {
	case RAFT_APPEND_ENTRIES_RESULT:
		if (m->append_entries_result.rejected >= SEMLOG_PROBE_BASE &&
		    port_probe_answer(p, m))
			return false;
		break;
	case RAFT_APPEND_ENTRIES:
		port_heard_max(&p->leader_commit, m->append_entries.leader_commit);
		(void)port_trim(p, m);
		break;
	case RAFT_INSTALL_SNAPSHOT:
		if (p->puts > 0) {
			/*
			 * A snapshot is being written. libraft 0.22.1 would
			 * keep this one for good (an install under way:
			 * "ignored" but never freed), or park it behind the
			 * snapshot it takes and then start a NULL one once
			 * that is written (legacy.c). The leader sends it
			 * again; a lost message is all raft sees (port_recv
			 * frees it).
			 */
			p->installs_dropped++;
			return false;
		}
		port_heard_max(&p->snapshot_index, m->install_snapshot.last_index);
		break;
	default:
		break;
	}
	return true;
}

/* A message from a peer: through the port to raft. */
static void port_recv(struct raft_io *io, struct raft_message *m)
{
	struct semlog_port *p = port_of(io);

	if (!port_admit(p, m)) {
		port_message_free(m);
		return;
	}
	p->recv(io, m);
	port_transfer(p, m);
	port_stepped(p);
}

/* raft's tick, then the owner told. */
static void port_tick(struct raft_io *io)
{
	struct semlog_port *p = port_of(io);

	p->tick(io);
	port_stepped(p);
}

/* io->start: raft's tick and message callbacks go through the port. */
static int port_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick,
    raft_io_recv_cb recv)
{
	struct semlog_port *p = port_of(io);

	p->tick = tick;
	p->recv = recv;
	return p->inner.start(io, msecs, port_tick, port_recv);
}

/* --- the port ------------------------------------------------------------ */

/* Wrap io's calls for node self; the port found by io. */
struct semlog_port *semlog_port_new(struct raft_io *io, raft_id self)
{
	struct semlog_port *p = calloc(1, sizeof *p);
	size_t i;

	if (p == NULL)
		return NULL;
	p->io = io;
	p->self = self;
	raft_configuration_init(&p->none);
	pthread_mutex_lock(&ports_lock);
	for (i = 0; i < SEMLOG_PORT_MAX && ports[i] != NULL; i++)
		;
	if (i < SEMLOG_PORT_MAX)
		ports[i] = p;
	pthread_mutex_unlock(&ports_lock);
	if (i == SEMLOG_PORT_MAX) {
		free(p);
		return NULL;
	}
	p->inner = *io;
	io->start = port_start;
	io->load = port_load;
	io->bootstrap = port_bootstrap;
	io->append = port_append;
	io->truncate = port_truncate;
	io->snapshot_put = port_snapshot_put;
	io->send = port_send;
	return p;
}

/* Forget p (the io is left as it is). */
void semlog_port_free(struct semlog_port *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&ports_lock);
	for (size_t i = 0; i < SEMLOG_PORT_MAX; i++)
		if (ports[i] == p)
			ports[i] = NULL;
	pthread_mutex_unlock(&ports_lock);
	port_confs_clear(p);
	free(p->confs);
	free(p->acks);
	free(p->scratch);
	free(p);
}

/* Who is told that raft moved. */
void semlog_port_set_step(struct semlog_port *p, void (*fn)(void *arg),
    void *arg)
{
	p->step = fn;
	p->step_arg = arg;
}

/* The clock appends are timed by. */
void semlog_port_set_clock(struct semlog_port *p,
    uint64_t (*now_us)(void *arg), void *arg)
{
	p->now_us = now_us;
	p->clock_arg = arg;
}

/* The check of RAFT_COMMAND entries. */
void semlog_port_set_entry_check(struct semlog_port *p,
    int (*entry_ok)(void *arg, const void *buf, size_t len, char *why,
    size_t whylen), void *arg)
{
	p->entry_ok = entry_ok;
	p->entry_arg = arg;
}

/* Messages the checks dropped. */
unsigned long semlog_port_refused(const struct semlog_port *p)
{
	return p != NULL ? atomic_load(&p->refused) : 0;
}

/* The log's latest configuration. */
const struct raft_configuration *semlog_port_configuration(
    const struct semlog_port *p)
{
	return p->nconfs > 0 ? &p->confs[p->nconfs - 1].conf : &p->none;
}

/* How often the configuration changed. */
uint64_t semlog_port_configuration_gen(const struct semlog_port *p)
{
	return p->conf_gen;
}

/* Messages cut to start at the snapshot. */
/* How long the oldest append on its way has waited (0: none waits). */
uint64_t semlog_port_append_wait_us(const struct semlog_port *p)
{
	return p->aw_head != NULL ? port_now_us(p) - p->aw_head->t0_us : 0;
}

unsigned long semlog_port_trimmed(const struct semlog_port *p)
{
	return p->trimmed;
}

/* InstallSnapshot messages dropped while a snapshot was written. */
unsigned long semlog_port_installs_dropped(const struct semlog_port *p)
{
	return p->installs_dropped;
}

/* What leaders said of their commit index and snapshots. */
void semlog_port_heard(const struct semlog_port *p, uint64_t *leader_commit,
    uint64_t *snapshot_index)
{
	*leader_commit = atomic_load(&p->leader_commit);
	*snapshot_index = atomic_load(&p->snapshot_index);
}

/* The disk's work, counted. */
void semlog_port_stats(const struct semlog_port *p, struct semlog_io_stats *out)
{
	size_t i;

	memset(out, 0, sizeof *out);
	if (p == NULL)
		return;
	for (i = 0; i < SEMLOG_APPEND_BUCKETS; i++)
		out->append_bucket[i] = atomic_load(&p->append_bucket[i]);
	out->append_sum_us = atomic_load(&p->append_sum_us);
	out->snapshots = atomic_load(&p->snapshots);
	out->snapshot_failures = atomic_load(&p->snapshot_failures);
}

/* --- read barriers ------------------------------------------------------- */

/* Does the node lead, in the term its rounds are counted in? */
static bool port_leads(const struct semlog_port *p)
{
	struct raft *r = port_raft(p);

	return r != NULL && raft_state(r) == RAFT_LEADER &&
	    p->probe_term == raft_current_term(r);
}

/* The last round confirmed in the node's term (0: none). */
uint64_t semlog_port_confirmed(const struct semlog_port *p)
{
	return port_leads(p) ? p->confirmed : 0;
}

/* Room for an answer of each of n servers; false without memory. */
static bool port_acks_room(struct semlog_port *p, size_t n)
{
	struct port_ack *a;
	uint64_t *s;

	if (n <= p->capacks)
		return true;
	if ((a = realloc(p->acks, n * sizeof *a)) == NULL)
		return false;
	p->acks = a;
	if ((s = realloc(p->scratch, n * sizeof *s)) == NULL)
		return false;
	p->scratch = s;
	p->capacks = n;
	return true;
}

/* Is id a voter of conf, and not the node itself? */
static bool port_other_voter(const struct semlog_port *p,
    const struct raft_configuration *conf, raft_id id)
{
	for (unsigned i = 0; i < conf->n; i++)
		if (conf->servers[i].id == id)
			return id != p->self && conf->servers[i].role == RAFT_VOTER;
	return false;
}

/* The last round voter id answered in the port's term (0: none). */
static uint64_t port_acked(const struct semlog_port *p, raft_id id)
{
	for (size_t i = 0; i < p->nacks; i++)
		if (p->acks[i].id == id)
			return p->acks[i].round;
	return 0;
}

/*
 * The highest round a majority of the voters answered (the node itself:
 * the last sent): the majority-th highest of their answers.
 */
static uint64_t port_majority(const struct semlog_port *p)
{
	const struct raft_configuration *conf = semlog_port_configuration(p);
	uint64_t *v = p->scratch, t;
	size_t n = 0, k;

	for (unsigned i = 0; i < conf->n; i++) {
		if (conf->servers[i].role != RAFT_VOTER)
			continue;
		t = conf->servers[i].id == p->self ? p->round :
		    port_acked(p, conf->servers[i].id);
		/* Insert, highest first (a handful of voters). */
		for (k = n++; k > 0 && v[k - 1] < t; k--)
			v[k] = v[k - 1];
		v[k] = t;
	}
	return n == 0 ? 0 : v[n / 2];
}

/* Send a read barrier round to every other voter. */
uint64_t semlog_port_probe(struct semlog_port *p)
{
	struct raft *r = port_raft(p);
	const struct raft_configuration *conf = semlog_port_configuration(p);
	struct raft_message m;
	raft_term term;
	uint64_t maj;
	size_t i;

	if (r == NULL || raft_state(r) != RAFT_LEADER ||
	    !port_acks_room(p, conf->n))
		return 0;
	term = raft_current_term(r);
	if (p->probe_term != term) {
		/* A new term: no answer of before counts. */
		p->probe_term = term;
		p->first_round = p->round + 1;
		p->confirmed = 0;
		p->nacks = 0;
	}
	/* Only the voters of now are counted (a removed one is forgotten). */
	for (i = 0; i < p->nacks; )
		if (port_other_voter(p, conf, p->acks[i].id))
			i++;
		else
			p->acks[i] = p->acks[--p->nacks];
	p->round++;
	for (i = 0; i < conf->n; i++) {
		const struct raft_server *s = &conf->servers[i];

		if (s->role != RAFT_VOTER || s->id == p->self)
			continue;
		memset(&m, 0, sizeof m);
		m.type = RAFT_APPEND_ENTRIES;
		m.server_id = s->id;
		m.server_address = s->address;
		m.append_entries.term = term;
		m.append_entries.prev_log_index = SEMLOG_PROBE_BASE + p->round;
		m.append_entries.prev_log_term = term;
		/* A peer not reached answers nothing: the round waits for others. */
		port_send_own(p, &m);
	}
	maj = port_majority(p);
	if (maj > p->confirmed)
		p->confirmed = maj;
	return p->round;
}

/*
 * An AppendEntries result whose rejected index is a probe's: counted when it
 * is of the node's term, as its leader. True: kept from raft (one of a newer
 * term goes to raft, which steps down).
 */
static bool port_probe_answer(struct semlog_port *p,
    const struct raft_message *m)
{
	const struct raft_append_entries_result *a = &m->append_entries_result;
	const struct raft_configuration *conf = semlog_port_configuration(p);
	struct raft *r = port_raft(p);
	uint64_t round = a->rejected - SEMLOG_PROBE_BASE, maj;
	size_t i;

	if (r == NULL || a->term > raft_current_term(r))
		return false;
	if (!port_leads(p) || a->term != p->probe_term ||
	    round < p->first_round || round > p->round ||
	    !port_other_voter(p, conf, m->server_id) ||
	    !port_acks_room(p, conf->n))
		return true;
	for (i = 0; i < p->nacks && p->acks[i].id != m->server_id; i++)
		;
	if (i == p->nacks) {
		if (i == p->capacks)
			return true;
		p->acks[p->nacks++] = (struct port_ack){ m->server_id, 0 };
	}
	if (round > p->acks[i].round)
		p->acks[i].round = round;
	maj = port_majority(p);
	if (maj > p->confirmed)
		p->confirmed = maj;
	return true;
}
