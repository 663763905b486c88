/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/test_port.c - the peer port (daemon/log/port.h) between a
 * raft_io and libraft 0.22.
 *
 * On a stand-in io that completes requests when the test says: messages
 * reach raft, the highest leader commit and snapshot heard are kept;
 * appends are timed (and how long one waits is told) and reach raft's
 * callback with raft's request;
 * snapshot writes count as written, failed, or (cancelled) neither; the
 * log's configuration is followed through load, append, truncate and
 * snapshots; AppendEntries reaching below the last snapshot start at it
 * (the memory of what is dropped is freed: run it under ASan or valgrind).
 *
 * On libraft's fixture (three real raft 0.22 servers): a read barrier's
 * round is confirmed by the followers, and not by a leader cut off from
 * them; a follower whose log was compacted, handed entries from index 1 by
 * its leader, is not harmed (libraft alone appends them after its last
 * entry and corrupts its memory); a leadership transfer asked for while the
 * follower is still writing the leader's last entry happens (libraft alone
 * sends its TimeoutNow too early, once, and gives up).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <raft/fixture.h>

#include "daemon/log/port.h"

static int failures;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
		failures++;						\
	}								\
} while (0)

/* --- a stand-in io ------------------------------------------------------- */

static raft_io_recv_cb io_recv;
static struct raft_io_append *io_append_req;
static struct raft_io_snapshot_put *io_put_req;
static int io_put_rv;
static int io_sent;
static struct raft_snapshot *io_load_snap;	/* what load returns */
static struct raft_entry *io_load_entries;
static size_t io_load_n;
static raft_index io_load_start;

static int io_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick,
    raft_io_recv_cb recv)
{
	(void)io;
	(void)msecs;
	(void)tick;
	io_recv = recv;
	return 0;
}

static int io_load(struct raft_io *io, raft_term *term, raft_id *voted_for,
    struct raft_snapshot **snapshot, raft_index *start_index,
    struct raft_entry *entries[], size_t *n_entries)
{
	(void)io;
	*term = 2;
	*voted_for = 1;
	*snapshot = io_load_snap;
	*start_index = io_load_start;
	*entries = io_load_entries;
	*n_entries = io_load_n;
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

static int io_truncate(struct raft_io *io, raft_index index)
{
	(void)io;
	(void)index;
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
static struct raft_append_entries raft_ae;	/* the last AppendEntries */
static raft_term raft_first_term;		/* ... its first entry's term */

/* What raft does with a message when done with it (entryBatchesDestroy). */
static void destroy(struct raft_message *m)
{
	struct raft_append_entries *a = &m->append_entries;
	void *last = NULL;

	if (m->type != RAFT_APPEND_ENTRIES)
		return;
	for (unsigned i = 0; i < a->n_entries; i++)
		if (a->entries[i].batch != last) {
			last = a->entries[i].batch;
			raft_free(last);
		}
	raft_free(a->entries);
	a->entries = NULL;
}

static void raft_recv_cb(struct raft_io *io, struct raft_message *m)
{
	(void)io;
	raft_msgs++;
	if (m->type == RAFT_APPEND_ENTRIES) {
		raft_ae = m->append_entries;
		raft_ae.entries = NULL;
		raft_first_term = m->append_entries.n_entries > 0 ?
		    m->append_entries.entries[0].term : 0;
		destroy(m);
	}
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

static uint64_t fake_us;

static uint64_t fake_now_us(void *arg)
{
	(void)arg;
	return fake_us;
}

/* A configuration of servers 1..n, the last n_spare of them spares. */
static void conf_of(struct raft_configuration *c, unsigned n, unsigned spare)
{
	char addr[32];

	raft_configuration_init(c);
	for (unsigned i = 1; i <= n; i++) {
		snprintf(addr, sizeof addr, "127.0.0.1:%u", 9000 + i);
		if (raft_configuration_add(c, i, addr, i > n - spare ?
		    RAFT_SPARE : RAFT_VOTER) != 0)
			abort();
	}
}

/* An entry holding an encoded configuration. */
static struct raft_entry change_entry(raft_term term, unsigned n,
    unsigned spare)
{
	struct raft_configuration c;
	struct raft_entry e;

	memset(&e, 0, sizeof e);
	conf_of(&c, n, spare);
	if (raft_configuration_encode(&c, &e.buf) != 0)
		abort();
	raft_configuration_close(&c);
	e.term = term;
	e.type = RAFT_CHANGE;
	e.batch = e.buf.base;
	return e;
}

/* The role of server id in the port's configuration (-1: not in it). */
static int role_of(const struct semlog_port *p, raft_id id)
{
	const struct raft_configuration *c = semlog_port_configuration(p);

	for (unsigned i = 0; i < c->n; i++)
		if (c->servers[i].id == id)
			return c->servers[i].role;
	return -1;
}

/*
 * An AppendEntries of n entries after prev (terms from terms[]), in
 * batches of per_batch entries.
 */
static void message(struct raft_message *m, raft_index prev, raft_term prev_term,
    const raft_term *terms, unsigned n, unsigned per_batch)
{
	struct raft_append_entries *a = &m->append_entries;
	void *batch = NULL;

	memset(m, 0, sizeof *m);
	m->type = RAFT_APPEND_ENTRIES;
	m->server_id = 2;	/* a voter of the loaded configuration */
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

/* The port on the stand-in io. */
static void test_io(void)
{
	static const raft_term terms[8] = { 1, 1, 2, 2, 2, 3, 3, 3 };
	struct raft_io io;
	struct raft_message m;
	struct raft_io_append ar;
	struct raft_io_snapshot_put pr;
	struct raft_snapshot snap, *ls = NULL;
	struct raft_entry ents[3], one;
	struct semlog_io_stats st;
	struct semlog_port *p;
	uint64_t commit, sn, n;
	raft_term t;
	raft_id v;
	raft_index start;
	struct raft_entry *le;
	size_t ln;
	int before;

	io = (struct raft_io){ .start = io_start, .load = io_load,
	    .append = io_append, .truncate = io_truncate,
	    .snapshot_put = io_snapshot_put, .send = io_send };
	memset(&ar, 0, sizeof ar);
	CHECK((p = semlog_port_new(&io, 1)) != NULL);
	semlog_port_set_clock(p, fake_now_us, NULL);
	CHECK(io.append != io_append && io.snapshot_put != io_snapshot_put &&
	    io.send != io_send && io.load != io_load);	/* the port's now */
	CHECK(semlog_port_configuration(p)->n == 0);

	/* Loaded: a snapshot at 5 (servers 1-3), then 6..8 with a change. */
	memset(&snap, 0, sizeof snap);
	snap.index = 5;
	snap.term = 2;
	conf_of(&snap.configuration, 3, 0);
	snap.configuration_index = 1;
	memset(ents, 0, sizeof ents);
	ents[0].term = ents[2].term = 3;
	ents[0].type = ents[2].type = RAFT_COMMAND;
	ents[1] = change_entry(3, 4, 1);	/* 7: server 4 a spare */
	io_load_snap = &snap;
	io_load_entries = ents;
	io_load_n = 3;
	io_load_start = 6;
	CHECK(io.load(&io, &t, &v, &ls, &start, &le, &ln) == 0 && ls == &snap);
	CHECK(semlog_port_configuration(p)->n == 4 && role_of(p, 4) == RAFT_SPARE);
	/* Appended after 8: server 4 a voter; cut again: a spare. */
	one = change_entry(3, 4, 0);
	CHECK(io.truncate(&io, 9) == 0);
	CHECK(io.append(&io, &ar, &one, 1, raft_append_cb) == 0);
	CHECK(role_of(p, 4) == RAFT_VOTER);
	io_append_req->cb(io_append_req, 0);
	CHECK(io.truncate(&io, 9) == 0);
	CHECK(role_of(p, 4) == RAFT_SPARE);
	/* Truncated back to 7: the change at 7 goes, the snapshot's stays. */
	CHECK(io.truncate(&io, 7) == 0);
	CHECK(semlog_port_configuration(p)->n == 3 && role_of(p, 4) == -1);
	raft_free(ents[1].buf.base);
	raft_free(one.buf.base);

	CHECK(io.start(&io, 100, NULL, raft_recv_cb) == 0);
	/* Heard: the highest leader commit, the last snapshot sent. */
	semlog_port_heard(p, &commit, &sn);
	CHECK(commit == 0 && sn == 0);
	memset(&m, 0, sizeof m);
	m.type = RAFT_APPEND_ENTRIES;
	m.server_id = 2;
	m.append_entries.leader_commit = 42;
	m.append_entries.prev_log_index = 6;
	io_recv(&io, &m);
	m.append_entries.leader_commit = 40;	/* an older leader's, late */
	io_recv(&io, &m);
	memset(&m, 0, sizeof m);
	m.type = RAFT_INSTALL_SNAPSHOT;
	m.server_id = 2;
	m.install_snapshot.last_index = 77;
	io_recv(&io, &m);
	CHECK(raft_msgs == 3);
	semlog_port_heard(p, &commit, &sn);
	CHECK(commit == 42 && sn == 77);

	/* Below the snapshot at 5 (term 2): 1..8 from prev 0 keep 6..8. */
	message(&m, 0, 0, terms, 8, 8);
	io_recv(&io, &m);
	CHECK(raft_ae.n_entries == 3 && raft_ae.prev_log_index == 5);
	CHECK(raft_ae.prev_log_term == 2 && raft_first_term == 3);
	/* Batches of 2 entries: those wholly dropped are freed. */
	message(&m, 0, 0, terms, 8, 2);
	io_recv(&io, &m);
	CHECK(raft_ae.n_entries == 3 && raft_ae.prev_log_index == 5);
	/* Every entry at or below the snapshot: a heartbeat at it. */
	message(&m, 1, 1, terms, 3, 2);
	io_recv(&io, &m);
	CHECK(raft_ae.n_entries == 0 && raft_ae.prev_log_index == 5);
	/* From the snapshot on: untouched. */
	message(&m, 5, 2, terms + 5, 3, 3);
	io_recv(&io, &m);
	CHECK(raft_ae.n_entries == 3 && raft_ae.prev_log_index == 5);
	/* The entry at the snapshot's index of another term: left to raft. */
	{
		static const raft_term other[8] = { 1, 1, 2, 2, 7, 7, 7, 7 };

		message(&m, 0, 0, other, 8, 8);
		io_recv(&io, &m);
		CHECK(raft_ae.n_entries == 8 && raft_ae.prev_log_index == 0);
	}
	CHECK(semlog_port_trimmed(p) == 3);

	/* An append: raft's callback gets raft's request, once, timed. */
	memset(&ar, 0, sizeof ar);
	ar.data = &ar;
	fake_us = 1000;
	CHECK(semlog_port_append_wait_us(p) == 0);
	CHECK(io.append(&io, &ar, NULL, 0, raft_append_cb) == 0);
	CHECK(io_append_req != NULL && io_append_req != &ar);
	CHECK(io_append_req->data == &ar);
	before = raft_appended;
	fake_us = 1300;		/* 300 us: the 500 us bucket */
	CHECK(semlog_port_append_wait_us(p) == 300);	/* it waits */
	io_append_req->cb(io_append_req, 0);
	CHECK(semlog_port_append_wait_us(p) == 0);
	CHECK(raft_appended == before + 1 && raft_req == &ar && raft_status == 0);
	semlog_port_stats(p, &st);
	n = 0;
	for (int i = 0; i < SEMLOG_APPEND_BUCKETS; i++)
		n += st.append_bucket[i];
	CHECK(n == 2 && st.append_bucket[2] == 1 && st.append_sum_us == 300);
	/* A failed append is passed on, not timed. */
	CHECK(io.append(&io, &ar, NULL, 0, raft_append_cb) == 0);
	io_append_req->cb(io_append_req, RAFT_IOERR);
	CHECK(raft_appended == before + 2 && raft_status == RAFT_IOERR);
	semlog_port_stats(p, &st);
	CHECK(st.append_sum_us == 300);

	/* Snapshot writes: written, failed, cancelled, refused at once. */
	memset(&pr, 0, sizeof pr);
	CHECK(io.snapshot_put(&io, 4, &pr, &snap, raft_put_cb) == 0);
	io_put_req->cb(io_put_req, 0);
	CHECK(raft_put == 1 && raft_req == &pr && raft_status == 0);
	CHECK(io.snapshot_put(&io, 4, &pr, &snap, raft_put_cb) == 0);
	io_put_req->cb(io_put_req, RAFT_IOERR);
	CHECK(raft_put == 2 && raft_status == RAFT_IOERR);
	CHECK(io.snapshot_put(&io, 4, &pr, &snap, raft_put_cb) == 0);
	io_put_req->cb(io_put_req, RAFT_CANCELED);
	CHECK(raft_put == 3 && raft_status == RAFT_CANCELED);
	io_put_rv = RAFT_NOSPACE;
	before = raft_put;
	CHECK(io.snapshot_put(&io, 0, &pr, &snap, raft_put_cb) == RAFT_NOSPACE);
	CHECK(raft_put == before);
	io_put_rv = 0;
	semlog_port_stats(p, &st);
	CHECK(st.snapshots == 1 && st.snapshot_failures == 2);
	/* A leader's snapshot while one is written: dropped, its data freed
	 * here (ASan and valgrind check), never given to libraft 0.22.1,
	 * which would keep it for good or park it and later start a NULL
	 * one; once the write ends, the next goes to raft. */
	CHECK(io.snapshot_put(&io, 4, &pr, &snap, raft_put_cb) == 0);
	before = raft_msgs;
	memset(&m, 0, sizeof m);
	m.type = RAFT_INSTALL_SNAPSHOT;
	m.server_id = 2;	/* a voter (the checks refuse id 0) */
	m.install_snapshot.last_index = 88;
	conf_of(&m.install_snapshot.conf, 3, 0);
	m.install_snapshot.data.len = 64;
	m.install_snapshot.data.base = raft_malloc(64);
	io_recv(&io, &m);
	CHECK(raft_msgs == before && semlog_port_installs_dropped(p) == 1);
	io_put_req->cb(io_put_req, 0);
	memset(&m, 0, sizeof m);
	m.type = RAFT_INSTALL_SNAPSHOT;
	m.server_id = 2;
	m.install_snapshot.last_index = 89;
	io_recv(&io, &m);
	CHECK(raft_msgs == before + 1 && semlog_port_installs_dropped(p) == 1);
	semlog_port_stats(p, &st);
	CHECK(st.snapshots == 2);
	/* A snapshot a leader sent, installed: the log is it (servers 1-2). */
	raft_configuration_close(&snap.configuration);
	conf_of(&snap.configuration, 2, 0);
	snap.index = 90;
	snap.configuration_index = 60;
	CHECK(io.snapshot_put(&io, 0, &pr, &snap, raft_put_cb) == 0);
	CHECK(semlog_port_configuration(p)->n == 3);	/* not before it is */
	io_put_req->cb(io_put_req, 0);
	CHECK(semlog_port_configuration(p)->n == 2 && role_of(p, 3) == -1);
	/* ... and entries below it are cut off. */
	message(&m, 80, 1, terms, 8, 8);
	io_recv(&io, &m);
	CHECK(raft_ae.n_entries == 0 && raft_ae.prev_log_index == 90);
	raft_configuration_close(&snap.configuration);

	semlog_port_free(p);
	semlog_port_stats(NULL, &st);
	CHECK(st.snapshots == 0 && st.append_sum_us == 0);
}

/* --- the checks of messages in (semlog_port_check) ----------------------- */

/* Entries whose first byte is 1 are good, others not. */
static int entry_first_one(void *arg, const void *buf, size_t len, char *why,
    size_t whylen)
{
	(void)arg;
	if (len > 0 && *(const uint8_t *)buf == 1)
		return 0;
	snprintf(why, whylen, "not a 1");
	return -1;
}

/* m passes the rules r? */
static bool passes(const struct semlog_port_rules *r, struct raft_message *m)
{
	char why[400];

	return semlog_port_check(r, m, why, sizeof why);
}

/* A RequestVote of term from node id, naming itself. */
static void vote_of(struct raft_message *m, raft_id id, raft_term term)
{
	memset(m, 0, sizeof *m);
	m->type = RAFT_REQUEST_VOTE;
	m->server_id = id;
	m->request_vote.term = term;
	m->request_vote.candidate_id = id;
	m->request_vote.last_log_term = term > 0 ? term - 1 : 0;
}

/*
 * The rules: terms and indexes in range (the issue 35 messages: a term of
 * 2^64 - 2), senders of the configuration in the right role, entries that
 * can be applied (a 9-byte entry of an unknown format), in term order.
 */
static void test_checks(void)
{
	uint8_t good[8] = { 1 }, bad[8] = { 2 };
	struct raft_configuration conf, none;
	struct raft_entry ents[2], ch;
	struct semlog_port_rules r;
	struct raft_message m;

	conf_of(&conf, 4, 1);		/* 1-3 voters, 4 a spare */
	raft_configuration_init(&none);
	r = (struct semlog_port_rules){ .conf = &conf, .self = 1, .term = 5,
	    .entry_ok = entry_first_one };

	vote_of(&m, 2, 6);
	CHECK(passes(&r, &m));
	vote_of(&m, 2, UINT64_MAX - 1);
	CHECK(!passes(&r, &m));			/* 2^64 - 2 */
	vote_of(&m, 2, 5 + SEMLOG_TERM_JUMP);
	CHECK(passes(&r, &m));
	vote_of(&m, 2, 5 + SEMLOG_TERM_JUMP + 1);
	CHECK(!passes(&r, &m));			/* an absurd jump */
	r.term = SEMLOG_TERM_MAX - 1;
	vote_of(&m, 2, SEMLOG_TERM_MAX);
	CHECK(!passes(&r, &m));			/* at the cap */
	r.term = 5;
	vote_of(&m, 4, 6);
	CHECK(!passes(&r, &m));			/* a spare asks for votes */
	vote_of(&m, 9, 6);
	CHECK(!passes(&r, &m));			/* no member */
	vote_of(&m, 1, 6);
	CHECK(!passes(&r, &m));			/* this node's own id */
	vote_of(&m, 2, 6);
	m.server_address = "127.0.0.1:9002";
	CHECK(passes(&r, &m));			/* where the configuration says */
	m.server_address = "127.0.0.1:9999";
	CHECK(!passes(&r, &m));			/* node 2, somewhere else */
	vote_of(&m, 2, 6);
	m.request_vote.candidate_id = 3;
	CHECK(!passes(&r, &m));			/* for another candidate */
	vote_of(&m, 2, 6);
	m.request_vote.last_log_term = 7;
	CHECK(!passes(&r, &m));			/* a last entry of a later term */
	r.conf = &none;
	vote_of(&m, 9, 6);
	CHECK(passes(&r, &m));			/* a node not yet in a cluster */
	r.conf = &conf;

	/* AppendEntries: entries checked, in order, not above its term. */
	memset(ents, 0, sizeof ents);
	ents[0] = (struct raft_entry){ .term = 5, .type = RAFT_COMMAND,
	    .buf = { good, 8 } };
	ents[1] = (struct raft_entry){ .term = 6, .type = RAFT_BARRIER,
	    .buf = { bad, 8 } };
	memset(&m, 0, sizeof m);
	m.type = RAFT_APPEND_ENTRIES;
	m.server_id = 2;
	m.append_entries.term = 6;
	m.append_entries.prev_log_index = 10;
	m.append_entries.prev_log_term = 5;
	m.append_entries.entries = ents;
	m.append_entries.n_entries = 2;
	CHECK(passes(&r, &m));
	ents[0].buf.base = bad;
	CHECK(!passes(&r, &m));			/* an entry semd cannot apply */
	ents[0].buf.base = good;
	ents[1].term = 7;
	CHECK(!passes(&r, &m));			/* above the message's term */
	ents[1].term = 6;
	m.append_entries.prev_log_term = 6;
	CHECK(!passes(&r, &m));			/* below the previous entry's */
	m.append_entries.prev_log_term = 5;
	ch = change_entry(6, 3, 0);
	ents[1] = ch;
	CHECK(passes(&r, &m));			/* a configuration libraft reads */
	((uint8_t *)ch.buf.base)[0] = 2;	/* ... of another format */
	CHECK(!passes(&r, &m));
	((uint8_t *)ch.buf.base)[0] = 1;
	((uint8_t *)ch.buf.base)[1] = 200;	/* ... of 200 servers in its bytes */
	CHECK(!passes(&r, &m));
	raft_free(ch.buf.base);
	m.append_entries.n_entries = 1;
	m.append_entries.prev_log_index = (uint64_t)1 << 63;
	CHECK(!passes(&r, &m));			/* an index out of range */
	m.append_entries.prev_log_index = 10;
	m.server_id = 9;
	CHECK(passes(&r, &m));			/* a leader this node may not know */
	m.append_entries.term = 4;
	m.append_entries.prev_log_term = 4;
	ents[0].term = 4;
	CHECK(!passes(&r, &m));			/* ... but of an older term */
	m.server_id = 4;
	CHECK(passes(&r, &m));			/* a member: raft answers it */

	/* Answers from members only; TimeoutNow from a voter. */
	memset(&m, 0, sizeof m);
	m.type = RAFT_APPEND_ENTRIES_RESULT;
	m.server_id = 4;
	m.append_entries_result.term = 5;
	CHECK(passes(&r, &m));
	m.server_id = 9;
	CHECK(!passes(&r, &m));
	memset(&m, 0, sizeof m);
	m.type = RAFT_TIMEOUT_NOW;
	m.server_id = 4;
	m.timeout_now.term = 5;
	CHECK(!passes(&r, &m));
	m.server_id = 3;
	CHECK(passes(&r, &m));
	raft_configuration_close(&conf);
}

/* --- three real servers on the fixture ----------------------------------- */

#define N	3

static struct raft_fixture f;
static struct semlog_port *ports[N];
static raft_io_recv_cb port_recvs[N];	/* the port's recv, as raft_start set it */
static int (*fix_start[N])(struct raft_io *, unsigned, raft_io_tick_cb,
    raft_io_recv_cb);
static unsigned applied_n[N];

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf,
    void **result)
{
	(void)buf;
	applied_n[(unsigned)(uintptr_t)fsm->data]++;
	*result = NULL;
	return 0;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
    unsigned *n)
{
	(void)fsm;
	*bufs = raft_malloc(sizeof **bufs);
	(*bufs)[0].base = raft_calloc(1, 8);
	(*bufs)[0].len = 8;
	*n = 1;
	return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	(void)fsm;
	raft_free(buf->base);
	return 0;
}

/* The start of server i's io: what the port gives as raft's recv is kept. */
#define START_OF(I)							\
static int start_##I(struct raft_io *io, unsigned ms, raft_io_tick_cb tick, \
    raft_io_recv_cb recv)						\
{									\
	port_recvs[I] = recv;						\
	return fix_start[I](io, ms, tick, recv);			\
}
START_OF(0)
START_OF(1)
START_OF(2)
static int (*const starts[N])(struct raft_io *, unsigned, raft_io_tick_cb,
    raft_io_recv_cb) = { start_0, start_1, start_2 };

static void applied_cb(struct raft_apply *req, int status, void *result)
{
	(void)status;
	(void)result;
	free(req);
}

/* Propose an entry on server i. */
static int propose(unsigned i)
{
	struct raft_apply *req = calloc(1, sizeof *req);
	struct raft_buffer b = { raft_calloc(1, 8), 8 };
	int rv = raft_apply(raft_fixture_get(&f, i), req, &b, 1, applied_cb);

	if (rv != 0) {
		raft_free(b.base);
		free(req);
	}
	return rv;
}

/* Three servers, each raft's io behind a port; the first elected. */
static void cluster_up(struct raft_fsm fsm[N])
{
	struct raft_configuration conf;

	memset(&f, 0, sizeof f);
	CHECK(raft_fixture_initialize(&f) == 0);
	for (unsigned i = 0; i < N; i++) {
		struct raft *r;
		struct raft_io *io;

		memset(&fsm[i], 0, sizeof fsm[i]);
		fsm[i].version = 1;
		fsm[i].data = (void *)(uintptr_t)i;
		fsm[i].apply = fsm_apply;
		fsm[i].snapshot = fsm_snapshot;
		fsm[i].restore = fsm_restore;
		CHECK(raft_fixture_grow(&f, &fsm[i]) == 0);
		r = raft_fixture_get(&f, i);
		/* The fixture has no call for these (test only). */
		r->tracer = NULL;
		io = r->io;
		fix_start[i] = io->start;
		io->start = starts[i];
		CHECK((ports[i] = semlog_port_new(io, i + 1)) != NULL);
		raft_set_snapshot_threshold(r, 8);
		raft_set_snapshot_trailing(r, 2);
		applied_n[i] = 0;
	}
	CHECK(raft_fixture_configuration(&f, N, &conf) == 0);
	CHECK(raft_fixture_bootstrap(&f, &conf) == 0);
	raft_configuration_close(&conf);
	CHECK(raft_fixture_start(&f) == 0);
	CHECK(raft_fixture_step_until_has_leader(&f, 5000));
	for (unsigned i = 0; i < N; i++)
		CHECK(semlog_port_configuration(ports[i])->n == N);
}

/* The cluster's end. */
static void cluster_down(void)
{
	raft_fixture_close(&f);
	for (unsigned i = 0; i < N; i++)
		semlog_port_free(ports[i]);
}

/* Read barriers: confirmed by the followers; not by a leader cut off. */
static void test_probe(void)
{
	struct raft_fsm fsm[N];
	unsigned l, j;
	uint64_t round;

	cluster_up(fsm);
	l = raft_fixture_leader_index(&f);
	CHECK(l < N);
	for (j = 0; j < N; j++)
		if (j != l)
			CHECK(semlog_port_probe(ports[j]) == 0);	/* no leader */
	round = semlog_port_probe(ports[l]);
	CHECK(round > 0);
	CHECK(semlog_port_confirmed(ports[l]) < round);
	raft_fixture_step_until_elapsed(&f, 100);
	CHECK(semlog_port_confirmed(ports[l]) >= round);
	/* Cut off: a round sent now is never confirmed, nor does the old one
	 * count for it; once raft steps down, no round goes. */
	for (j = 0; j < N; j++)
		if (j != l) {
			raft_fixture_disconnect(&f, l, j);
			raft_fixture_disconnect(&f, j, l);
		}
	round = semlog_port_probe(ports[l]);
	raft_fixture_step_until_elapsed(&f, 300);
	CHECK(semlog_port_confirmed(ports[l]) < round);
	raft_fixture_step_until_elapsed(&f, 3000);
	CHECK(raft_state(raft_fixture_get(&f, l)) != RAFT_LEADER);
	CHECK(semlog_port_confirmed(ports[l]) == 0);
	CHECK(semlog_port_probe(ports[l]) == 0);
	cluster_down();
}

/*
 * A compacted follower handed entries from 1 (as a leader whose own log
 * still starts at 1 sends them after it lost track of the follower): cut
 * to its snapshot by its port, and harmless.
 */
static void test_compacted(void)
{
	struct raft_fsm fsm[N];
	struct raft_message m;
	struct raft *lr, *fr;
	raft_index last;
	unsigned long trimmed;
	unsigned l, fo, k;
	void *batch;

	cluster_up(fsm);
	l = raft_fixture_leader_index(&f);
	fo = (l + 1) % N;
	lr = raft_fixture_get(&f, l);
	fr = raft_fixture_get(&f, fo);
	for (k = 0; k < 40; k++) {
		CHECK(propose(l) == 0);
		raft_fixture_step_until_applied(&f, N, raft_last_index(lr), 2000);
	}
	raft_fixture_step_until_elapsed(&f, 300);
	last = raft_last_index(fr);
	trimmed = semlog_port_trimmed(ports[fo]);
	CHECK(last >= 41);
	memset(&m, 0, sizeof m);
	m.type = RAFT_APPEND_ENTRIES;
	m.server_id = l + 1;
	m.server_address = lr->address;
	m.append_entries.term = raft_current_term(lr);
	m.append_entries.leader_commit = raft_commit_index(lr);
	m.append_entries.n_entries = 5;
	m.append_entries.entries = raft_calloc(5, sizeof (struct raft_entry));
	batch = raft_calloc(5, 8);
	for (k = 0; k < 5; k++) {
		struct raft_entry *e = &m.append_entries.entries[k];

		e->term = k == 0 ? 1 : raft_current_term(lr);
		e->type = RAFT_COMMAND;
		e->buf.base = (char *)batch + 8 * k;
		e->buf.len = 8;
		e->batch = batch;
	}
	port_recvs[fo](fr->io, &m);
	CHECK(semlog_port_trimmed(ports[fo]) == trimmed + 1);
	CHECK(raft_last_index(fr) == last);
	/* The cluster goes on, the follower with it. */
	for (k = 0; k < 10; k++)
		CHECK(propose(l) == 0);
	CHECK(raft_fixture_step_until_applied(&f, N, raft_last_index(lr), 3000));
	cluster_down();
}

/*
 * A transfer asked for while the follower still writes the leader's last
 * entry (its disk slow): it happens.
 */
static void test_transfer(void)
{
	struct raft_fsm fsm[N];
	struct raft_transfer req;
	unsigned l, to;
	bool moved = false;

	cluster_up(fsm);
	l = raft_fixture_leader_index(&f);
	to = (l + 1) % N;
	/*
	 * The follower acknowledges the first entry while it still writes the
	 * second: libraft sends the TimeoutNow then, and the follower ignores
	 * it (it has not stored the leader's last entry).
	 */
	raft_fixture_set_disk_latency(&f, to, 60);
	CHECK(propose(l) == 0);
	raft_fixture_step_until_elapsed(&f, 50);
	CHECK(propose(l) == 0);
	memset(&req, 0, sizeof req);
	CHECK(raft_transfer(raft_fixture_get(&f, l), &req, to + 1, NULL) == 0);
	for (int k = 0; k < 400 && !moved; k++) {
		raft_fixture_step_until_elapsed(&f, 10);
		moved = raft_fixture_leader_index(&f) == to;
	}
	CHECK(moved);
	cluster_down();
}

int main(void)
{
	test_io();
	test_checks();
	test_probe();
	test_compacted();
	test_transfer();
	if (failures == 0)
		printf("test_port: ok\n");
	return failures != 0;
}
