/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/test_raftguard.c - raftguard_trim: AppendEntries that reach
 * below a follower's snapshot start at the snapshot; others are untouched;
 * the memory of what is dropped is freed (run it under ASan or valgrind).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log/raftguard.h"

static int failures;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
		failures++;						\
	}								\
} while (0)

/*
 * A message of n entries after prev (terms from terms[]), in batches of
 * per_batch entries each (the transports use one).
 */
static void message(struct raft_message *m, raft_index prev, raft_term prev_term,
    const raft_term *terms, unsigned n, unsigned per_batch)
{
	struct raft_append_entries *a = &m->append_entries;
	void *batch = NULL;

	memset(m, 0, sizeof *m);
	m->type = RAFT_IO_APPEND_ENTRIES;
	a->term = 9;
	a->prev_log_index = prev;
	a->prev_log_term = prev_term;
	a->n_entries = n;
	a->entries = n ? raft_calloc(n, sizeof *a->entries) : NULL;
	for (unsigned i = 0; i < n; i++) {
		if (i % per_batch == 0)
			batch = raft_malloc(64 * per_batch);
		a->entries[i].term = terms[i];
		a->entries[i].type = RAFT_COMMAND;
		a->entries[i].buf.base = (char *)batch + 64 * (i % per_batch);
		a->entries[i].buf.len = 64;
		a->entries[i].batch = batch;
	}
}

/* What raft does with the message when done (entryBatchesDestroy). */
static void destroy(struct raft_message *m)
{
	struct raft_append_entries *a = &m->append_entries;
	void *last = NULL;

	for (unsigned i = 0; i < a->n_entries; i++)
		if (a->entries[i].batch != last) {
			last = a->entries[i].batch;
			raft_free(last);
		}
	raft_free(a->entries);
}

int main(void)
{
	static const raft_term terms[8] = { 1, 1, 2, 2, 2, 3, 3, 3 };
	struct raft r;
	struct raft_message m;

	memset(&r, 0, sizeof r);

	/* No snapshot: nothing to do. */
	message(&m, 0, 0, terms, 8, 8);
	CHECK(raftguard_trim(&r, &m) == 0);
	CHECK(m.append_entries.n_entries == 8 && m.append_entries.prev_log_index == 0);
	destroy(&m);

	/* Snapshot at 5 (term 2): entries 1..8 from prev 0 keep 6..8. */
	r.log.snapshot.last_index = 5;
	r.log.snapshot.last_term = 2;
	message(&m, 0, 0, terms, 8, 8);
	CHECK(raftguard_trim(&r, &m) == 5);
	CHECK(m.append_entries.n_entries == 3);
	CHECK(m.append_entries.prev_log_index == 5 && m.append_entries.prev_log_term == 2);
	CHECK(m.append_entries.entries[0].term == 3);
	destroy(&m);

	/* Batches of 2 entries: those wholly dropped are freed. */
	message(&m, 0, 0, terms, 8, 2);
	CHECK(raftguard_trim(&r, &m) == 5);
	CHECK(m.append_entries.n_entries == 3);
	destroy(&m);

	/* Every entry at or below the snapshot: a heartbeat at the snapshot. */
	message(&m, 1, 1, terms, 3, 2);
	CHECK(raftguard_trim(&r, &m) == 3);
	CHECK(m.append_entries.n_entries == 0 && m.append_entries.entries == NULL);
	CHECK(m.append_entries.prev_log_index == 5);
	destroy(&m);

	/* From the snapshot's index on: untouched. */
	message(&m, 5, 2, terms + 5, 3, 3);
	CHECK(raftguard_trim(&r, &m) == 0);
	CHECK(m.append_entries.n_entries == 3 && m.append_entries.prev_log_index == 5);
	destroy(&m);

	/* The entry at the snapshot's index of another term: left to raft. */
	r.log.snapshot.last_term = 7;
	message(&m, 0, 0, terms, 8, 8);
	CHECK(raftguard_trim(&r, &m) == 0);
	CHECK(m.append_entries.n_entries == 8);
	destroy(&m);

	/* Other messages are not looked at. */
	memset(&m, 0, sizeof m);
	m.type = RAFT_IO_REQUEST_VOTE;
	CHECK(raftguard_trim(&r, &m) == 0);

	if (failures == 0)
		printf("test_raftguard: ok\n");
	return failures != 0;
}
