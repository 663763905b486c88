/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/test_raftguard.c - raftguard_trim: AppendEntries that reach
 * below a follower's snapshot start at the snapshot; others are untouched;
 * the memory of what is dropped is freed (run it under ASan or valgrind).
 * And the guard on an io (a stand-in for raft_uv that completes requests
 * when the test says): messages reach raft, the highest leader commit and
 * snapshot heard are kept; appends are timed and reach raft's callback with
 * raft's request; snapshot writes count as written, failed, or (cancelled)
 * neither; the io's calls are given back on removal.
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

/* The stand-in io: what the guard passed down, completed by the test. */
static raft_io_recv_cb io_recv;
static struct raft_io_append *io_append_req;
static struct raft_io_snapshot_put *io_put_req;
static int io_put_rv;

static int io_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick,
    raft_io_recv_cb recv)
{
	(void)io;
	(void)msecs;
	(void)tick;
	io_recv = recv;
	return 0;
}

static int io_append(struct raft_io *io, struct raft_io_append *req,
    const struct raft_entry entries[], unsigned n, raft_io_append_cb cb)
{
	(void)io;
	(void)entries;
	(void)n;
	req->cb = cb;		/* as raft_uv does */
	io_append_req = req;
	return 0;
}

static int io_snapshot_put(struct raft_io *io, unsigned trailing,
    struct raft_io_snapshot_put *req, const struct raft_snapshot *snapshot,
    raft_io_snapshot_put_cb cb)
{
	(void)io;
	(void)trailing;
	(void)snapshot;
	if (io_put_rv != 0)
		return io_put_rv;
	req->cb = cb;
	io_put_req = req;
	return 0;
}

static int io_sent;

static int io_send(struct raft_io *io, struct raft_io_send *req,
    const struct raft_message *m, raft_io_send_cb cb)
{
	(void)io;
	(void)req;
	(void)m;
	(void)cb;
	io_sent++;
	return 0;
}

/* What raft saw: messages, completions and their requests and statuses. */
static int raft_msgs, raft_appended, raft_put;
static int raft_status;
static void *raft_req;

static void raft_recv_cb(struct raft_io *io, struct raft_message *m)
{
	(void)io;
	(void)m;
	raft_msgs++;
}

static void raft_append_cb(struct raft_io_append *req, int status)
{
	raft_appended++;
	raft_req = req;
	raft_status = status;
}

static void raft_put_cb(struct raft_io_snapshot_put *req, int status)
{
	raft_put++;
	raft_req = req;
	raft_status = status;
}

/* The guard and the measures on the stand-in io. */
static void test_io(void)
{
	struct raft_io io;
	struct raft_message m;
	struct raft_io_append ar;
	struct raft_io_snapshot_put pr;
	struct raftguard_stats st;
	uint64_t commit, snap, n;
	int before;

	memset(&io, 0, sizeof io);
	io.start = io_start;
	io.append = io_append;
	io.snapshot_put = io_snapshot_put;
	io.send = io_send;
	CHECK(raftguard_install(&io) == 0);
	CHECK(raftguard_measure(&io) == 0);
	CHECK(io.append != io_append && io.snapshot_put != io_snapshot_put);
	CHECK(io.start(&io, 100, NULL, raft_recv_cb) == 0);

	/* Heard: the highest leader commit, the last snapshot sent. */
	raftguard_heard(&io, &commit, &snap);
	CHECK(commit == 0 && snap == 0);
	memset(&m, 0, sizeof m);
	m.type = RAFT_IO_APPEND_ENTRIES;
	m.append_entries.leader_commit = 42;
	io_recv(&io, &m);
	m.append_entries.leader_commit = 40;	/* an older leader's, late */
	io_recv(&io, &m);
	memset(&m, 0, sizeof m);
	m.type = RAFT_IO_INSTALL_SNAPSHOT;
	m.install_snapshot.last_index = 77;
	io_recv(&io, &m);
	CHECK(raft_msgs == 3);
	raftguard_heard(&io, &commit, &snap);
	CHECK(commit == 42 && snap == 77);

	/* A send to a known server goes; one to nobody (a follower answering
	 * the leader it no longer knows) is refused, not sent. */
	{
		struct raft_io_send sr;

		memset(&m, 0, sizeof m);
		m.type = RAFT_IO_APPEND_ENTRIES_RESULT;
		m.server_id = 2;
		m.server_address = "127.0.0.1:9";
		CHECK(io.send(&io, &sr, &m, NULL) == 0 && io_sent == 1);
		m.server_id = 0;
		m.server_address = NULL;
		CHECK(io.send(&io, &sr, &m, NULL) == RAFT_NOCONNECTION);
		m.server_id = 2;
		CHECK(io.send(&io, &sr, &m, NULL) == RAFT_NOCONNECTION);
		CHECK(io_sent == 1);
	}

	/* An append: raft's callback gets raft's request, once, timed. */
	memset(&ar, 0, sizeof ar);
	ar.data = &ar;
	CHECK(io.append(&io, &ar, NULL, 0, raft_append_cb) == 0);
	CHECK(io_append_req != NULL && io_append_req != &ar);
	CHECK(io_append_req->data == &ar);
	CHECK(raft_appended == 0);
	io_append_req->cb(io_append_req, 0);
	CHECK(raft_appended == 1 && raft_req == &ar && raft_status == 0);
	raftguard_stats(&io, &st);
	n = 0;
	for (int i = 0; i < RAFTGUARD_APPEND_BUCKETS; i++)
		n += st.append_bucket[i];
	CHECK(n == 1);
	/* A failed append is passed on, not timed. */
	CHECK(io.append(&io, &ar, NULL, 0, raft_append_cb) == 0);
	io_append_req->cb(io_append_req, RAFT_IOERR);
	CHECK(raft_appended == 2 && raft_status == RAFT_IOERR);
	raftguard_stats(&io, &st);
	n = 0;
	for (int i = 0; i < RAFTGUARD_APPEND_BUCKETS; i++)
		n += st.append_bucket[i];
	CHECK(n == 1);

	/* Snapshot writes: written, failed, cancelled, refused at once. */
	memset(&pr, 0, sizeof pr);
	CHECK(io.snapshot_put(&io, 4, &pr, NULL, raft_put_cb) == 0);
	io_put_req->cb(io_put_req, 0);
	CHECK(raft_put == 1 && raft_req == &pr && raft_status == 0);
	CHECK(io.snapshot_put(&io, 4, &pr, NULL, raft_put_cb) == 0);
	io_put_req->cb(io_put_req, RAFT_IOERR);
	CHECK(raft_put == 2 && raft_status == RAFT_IOERR);
	CHECK(io.snapshot_put(&io, 4, &pr, NULL, raft_put_cb) == 0);
	io_put_req->cb(io_put_req, RAFT_CANCELED);
	CHECK(raft_put == 3 && raft_status == RAFT_CANCELED);
	io_put_rv = RAFT_NOSPACE;
	before = raft_put;
	CHECK(io.snapshot_put(&io, 0, &pr, NULL, raft_put_cb) == RAFT_NOSPACE);
	CHECK(raft_put == before);
	io_put_rv = 0;
	raftguard_stats(&io, &st);
	CHECK(st.snapshots == 1 && st.snapshot_failures == 2);

	raftguard_remove(&io);
	CHECK(io.start == io_start && io.append == io_append &&
	    io.snapshot_put == io_snapshot_put && io.send == io_send);
	raftguard_stats(&io, &st);
	CHECK(st.snapshots == 0 && st.append_sum_us == 0);
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

	test_io();

	if (failures == 0)
		printf("test_raftguard: ok\n");
	return failures != 0;
}
