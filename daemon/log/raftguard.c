/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/raftguard.c - entries a follower compacted away are not handed to
 * libraft 0.15 again (see raftguard.h).
 */
#include <pthread.h>
#include <string.h>

#include "daemon/log/raftguard.h"

struct guard {
	struct raft_io	*io;
	int		(*start)(struct raft_io *io, unsigned msecs,
	    raft_io_tick_cb tick, raft_io_recv_cb recv);
	raft_io_recv_cb	recv;
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

static void guard_recv(struct raft_io *io, struct raft_message *m)
{
	struct guard *g = guard_of(io);

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

int raftguard_install(struct raft_io *io)
{
	int rv = -1;

	pthread_mutex_lock(&guards_lock);
	for (size_t i = 0; i < RAFTGUARD_MAX; i++)
		if (guards[i].io == NULL) {
			guards[i].io = io;
			guards[i].start = io->start;
			guards[i].recv = NULL;
			io->start = guard_start;
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
			memset(&guards[i], 0, sizeof guards[i]);
		}
	pthread_mutex_unlock(&guards_lock);
}

unsigned long raftguard_trimmed(void)
{
	return trimmed;
}
