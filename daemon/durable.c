/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/durable.c - the raft log under the state machine (see durable.h).
 *
 * The data directory holds raft's files (segments, metadata, snapshots,
 * written by raft_uv) and semd.meta, which says whose they are: a format
 * line and the node id. A directory with files but no semd.meta, or another
 * node's, is refused (EX_CONFIG), as is one raft cannot load.
 *
 * Threads: everything raft is done on the raft thread's libuv loop. The
 * queue of commands from the event loops is under qlock; the state machine
 * under the server's state lock, taken here to apply an entry, snapshot or
 * restore.
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

#include "daemon/conn.h"
#include "daemon/durable.h"
#include "daemon/raftguard.h"
#include "daemon/log.h"
#include "daemon/server.h"

#define META_NAME	"semd.meta"
#define META_FORMAT	"semd-data 1"
#define NODE_ID		1		/* one voter: its id */
#define POLL_MS		20		/* leadership is polled (no callback in 0.15) */
#define MAX_NODES	16		/* in a published status */
#define MAX_INFLIGHT	16		/* entries proposed and not applied */
#define MAX_ENTRY	(256u << 10)	/* bytes of commands in one entry, about */
#define READY_WAIT_S	120		/* replaying a long log takes time */
#define SNAP_BYTES	(8u << 20)	/* log bytes kept in memory before a snapshot */
#define SNAP_NEVER	UINT32_MAX	/* raft's own threshold: we say when */
#define SNAP_TRAILING	4		/* entries kept after a snapshot (one voter) */
#define SEGMENT_SIZE	(8u << 20)	/* raft_uv's open segments, made whole */

struct durable {
	struct server		*srv;
	pthread_t		thread;
	uv_loop_t		loop;
	uv_async_t		wake;		/* commands queued, or stop */
	uv_timer_t		deadline;	/* the state's earliest deadline */
	uv_timer_t		poll;		/* leadership and status */
	struct raft_io		io;
	struct raft_fsm		fsm;
	struct raft		raft;
	struct raft_uv_transport transport;
	raft_id			id;		/* this node */
	raft_term		lead_term;	/* the term we lead in */
	struct sm_config	smcfg;		/* the settings proposed at start */
	unsigned int		term_leader;	/* leaderships taken so far */
	uint32_t		grace_ms;
	uint32_t		snapshot_every;
	bool			thread_started;
	bool			cluster;	/* peers over TCP (node-id given) */
	bool			leader;		/* as of the last poll */
	bool			fresh;		/* a new data directory */
	char			peer[256];	/* HOST:PORT, raft's address for us */
	char			advertise[256];	/* where clients reach us */

	/* Under qlock: commands from the event loops, oldest first. */
	pthread_mutex_t		qlock;
	struct qchunk		*qhead;
	struct qchunk		**qtail;
	struct ctl		*ctlq;		/* cluster changes asked for */
	bool			stop;

	/* Read by any thread: the leader serves; the status, under slock. */
	_Atomic bool		serving_pub;
	pthread_mutex_t		slock;
	Semd__ClusterStatus	st;
	Semd__ClusterNode	st_nodes[MAX_NODES];
	Semd__ClusterNode	*st_nodep[MAX_NODES];
	char			st_addr[MAX_NODES][256];
	char			st_leader[256];

	/* The raft thread's own. */
	unsigned int		inflight;
	uint32_t		applied_entries; /* since the last snapshot */
	bool			tick_out;	/* an empty entry is on its way */
	bool			serving;	/* the restart entry is applied */
	uint64_t		time_base;	/* state time at mono_base */
	uint64_t		mono_base;
	uint64_t		last_time;	/* the last time stamped */
	struct raft_barrier	barrier;
	uint64_t		next_client;	/* under the state lock */
	size_t			applied_bytes;	/* since the last snapshot */
	size_t			snap_len;	/* the last snapshot's bytes */

	/* Start-up, for the main thread. */
	pthread_mutex_t		rlock;
	pthread_cond_t		rcond;
	int			status;		/* 0 starting, 1 ready, else exit code */
	char			err[256];
};

/* Commands queued by an event loop (one read batch). */
struct qchunk {
	struct qchunk	*next;
	size_t		len;
	uint8_t		data[];
};

/* A cluster change asked for by a client (ADD, REMOVE, TRANSFER). */
struct ctl {
	struct ctl		*next;
	struct durable		*d;
	uint64_t		cid;		/* the client to answer */
	uint64_t		req_id;
	int			action;		/* SEMD__CLUSTER__ACTION__* */
	raft_id			node;
	char			address[256];
	struct raft_change	change;
	struct raft_transfer	transfer;
};

/* A proposed entry. */
struct proposal {
	struct raft_apply	req;
	struct durable		*d;
	bool			startup;	/* the BOOT/CONFIG/RESTART entry */
};

/* Monotonic and wall milliseconds. */
static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Tell the main thread how the start went (status 1: ready, else an exit code). */
static void d_started(struct durable *d, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void d_started(struct durable *d, int status, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&d->rlock);
	if (d->status == 0) {
		d->status = status;
		if (fmt != NULL) {
			va_start(ap, fmt);
			vsnprintf(d->err, sizeof d->err, fmt, ap);
			va_end(ap);
		}
		pthread_cond_broadcast(&d->rcond);
	}
	pthread_mutex_unlock(&d->rlock);
}

/* --- the state time --------------------------------------------------------------- */

/*
 * The time to stamp on a new entry: where the log left off, plus the time
 * this leader has run, never going backwards, and at least at_least.
 */
static uint64_t d_stamp(struct durable *d, uint64_t at_least)
{
	uint64_t t = d->time_base + (mono_ms() - d->mono_base);

	if (t < d->last_time)
		t = d->last_time;
	if (t < at_least)
		t = at_least;
	d->last_time = t;
	return t;
}

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
static bool d_propose(struct durable *d, struct qchunk *first,
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
	sm_entry_header(buf.base, d_stamp(d, at_least), wall_ms());
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
static struct qchunk *qchunk_new(const uint8_t *data, size_t len)
{
	struct qchunk *q = malloc(sizeof *q + len);

	if (q != NULL) {
		q->next = NULL;
		q->len = len;
		memcpy(q->data, data, len);
	}
	return q;
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

	server_lock_any(d->srv);
	next = sm_next_deadline(d->srv->sm);
	server_unlock_any(d->srv);
	if (!d->serving || d->tick_out || next == UINT64_MAX)
		return;
	if (d_propose(d, NULL, NULL, next, false))
		d->tick_out = true;
}

/* Keep the deadline timer on the state's earliest deadline (raft thread). */
static void d_arm_deadline(struct durable *d, uint64_t next)
{
	uint64_t now;

	if (next == UINT64_MAX || !d->serving) {
		uv_timer_stop(&d->deadline);
		return;
	}
	now = d->time_base + (mono_ms() - d->mono_base);
	uv_timer_start(&d->deadline, d_deadline_cb, next > now ? next - now : 0, 0);
}

static void d_ctl_start(struct durable *d, struct ctl *c);

/* The event loops queued commands or cluster changes, or it is time to stop. */
static void d_wake_cb(uv_async_t *a)
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
		uv_stop(&d->loop);
		return;
	}
	d_propose_queued(d);
}

/* --- the state machine's side --------------------------------------------------- */

/* sm_apply's bind hook: this node's connection of a client id. */
static void *d_bind(void *arg, uint64_t id)
{
	return conn_by_id_locked(arg, id);
}

/* sm_apply's done hook: a request of this node's connection is applied. */
static void d_done(void *arg, uint64_t id, size_t len)
{
	struct conn *c = conn_by_id_locked(arg, id);

	if (c != NULL)
		conn_applied_locked(c, len);
}

/* raft_fsm.apply: one committed entry. */
static int d_fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf,
    void **result)
{
	struct durable *d = fsm->data;
	struct server *srv = d->srv;
	struct sm_apply_hooks hooks = { d_bind, d_done, srv };
	char err[160];
	uint64_t next;
	int r;

	*result = NULL;
	server_lock_any(srv);
	r = sm_apply(srv->sm, buf->base, buf->len, &hooks, err, sizeof err);
	next = sm_next_deadline(srv->sm);
	server_unlock_any(srv);
	if (r != 0) {
		/*
		 * Written by us and checksummed: damage, or a bug. Nothing
		 * after it can be applied right; stop rather than serve a state
		 * that is not the log's.
		 */
		log_err("log: a committed entry cannot be applied: %s; the data "
		    "directory is damaged", err);
		if (d->serving || d->cluster)
			_exit(EX_CONFIG);
		d_started(d, EX_CONFIG, "a committed entry cannot be applied: %s",
		    err);
		return RAFT_MALFORMED;
	}
	d->tick_out = false;
	d_arm_deadline(d, next);
	/*
	 * A snapshot after snapshot-every entries or SNAP_BYTES of them (raft
	 * keeps every entry since the last snapshot in memory; big entries
	 * come with group commit under load) - but not before the log has
	 * grown by the last snapshot's size: a snapshot locks the state for
	 * about 0.35 ms per thousand names (0.35 s for a million, 70 MB), and
	 * a big state taken every 8 MB of log would stall the clients a
	 * quarter of the time (measured: see bench/snapshot.sh). So the cost
	 * of snapshots stays at most that of writing the log once more, and
	 * the log kept at most the size of the state (Redis' rule for its
	 * AOF rewrites, at 100%). The threshold, lowered, makes raft take one
	 * now.
	 */
	d->applied_bytes += buf->len;
	d->applied_entries++;
	if ((d->applied_entries >= d->snapshot_every ||
	    d->applied_bytes >= SNAP_BYTES) && d->applied_bytes >= d->snap_len)
		raft_set_snapshot_threshold(&d->raft, 1);
	return 0;
}

/* raft_fsm.snapshot: the whole state, under the lock. */
static int d_fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
    unsigned int *n)
{
	struct durable *d = fsm->data;
	uint64_t t0 = mono_ms();
	uint8_t *p;
	size_t len;
	int r;

	*bufs = raft_malloc(sizeof **bufs);
	if (*bufs == NULL)
		return RAFT_NOMEM;
	server_lock_any(d->srv);
	r = sm_snapshot(d->srv->sm, &p, &len);
	server_unlock_any(d->srv);
	if (r != 0) {
		raft_free(*bufs);
		*bufs = NULL;
		return RAFT_NOMEM;
	}
	(*bufs)[0].base = p;
	(*bufs)[0].len = len;
	*n = 1;
	d->applied_bytes = 0;
	d->applied_entries = 0;
	d->snap_len = len;
	raft_set_snapshot_threshold(&d->raft, SNAP_NEVER);
	log_info("log: snapshot of %zu bytes taken in %" PRIu64 " ms", len,
	    mono_ms() - t0);
	return 0;
}

/* raft_fsm.snapshot_finalize: raft is done with the snapshot's bytes. */
static int d_fsm_snapshot_finalize(struct raft_fsm *fsm,
    struct raft_buffer *bufs[], unsigned int *n)
{
	unsigned int i;

	(void)fsm;
	for (i = 0; *bufs != NULL && i < *n; i++)
		free((*bufs)[i].base);
	raft_free(*bufs);
	*bufs = NULL;
	*n = 0;
	return 0;
}

/*
 * raft_fsm.restore: the state from a snapshot. Its buffer is ours to free
 * when we succeed; on a failure raft frees it (snapshotRestore()).
 */
static int d_fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct durable *d = fsm->data;
	struct server *srv = d->srv;
	struct sm_config cfg;
	struct sm_out out;
	struct sm *sm, *old;
	char err[200];

	server_lock_any(srv);
	cfg = server_sm_config_of(srv);
	out = server_sm_out(srv);
	sm = sm_restore(&cfg, &out, buf->base, buf->len, err, sizeof err);
	if (sm != NULL) {
		d->snap_len = buf->len;
		d->applied_bytes = 0;
		d->applied_entries = 0;
		old = srv->sm;
		sm_take_hooks(sm, old);
		srv->sm = sm;
		sm_free(old);
	}
	server_unlock_any(srv);
	if (sm == NULL) {
		if (d->serving)
			log_err("log: the snapshot cannot be restored: %s", err);
		d_started(d, EX_CONFIG, "the snapshot cannot be restored (the "
		    "data directory is damaged): %s", err);
		return RAFT_MALFORMED;
	}
	raft_free(buf->base);
	return 0;
}

/* --- a transport for a log of one voter: nobody to talk to ------------------------ */

static int nt_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
	(void)t;
	(void)id;
	(void)address;
	return 0;
}

static int nt_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	(void)t;
	(void)cb;
	return 0;
}

static int nt_connect(struct raft_uv_transport *t, struct raft_uv_connect *req,
    raft_id id, const char *address, raft_uv_connect_cb cb)
{
	(void)t;
	(void)req;
	(void)id;
	(void)address;
	(void)cb;
	return RAFT_NOCONNECTION;
}

static void nt_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
	if (cb != NULL)
		cb(t);
}

/* --- the peer transport: libraft's TCP, without Nagle ----------------------------- */

/*
 * raft_uv_tcp leaves Nagle's algorithm on: a small AppendEntries or its
 * answer waits for the ACK of the one before, which the peer delays (40 ms
 * on Linux) - commits of a few milliseconds and a p99 near 80 ms under
 * load. Every peer stream gets TCP_NODELAY on its way to raft. One
 * transport a process: the callbacks raft gave are kept here.
 */
static int (*tcp_listen)(struct raft_uv_transport *t, raft_uv_accept_cb cb);
static int (*tcp_connect)(struct raft_uv_transport *t,
    struct raft_uv_connect *req, raft_id id, const char *address,
    raft_uv_connect_cb cb);
static raft_uv_accept_cb raft_accept_cb;
static raft_uv_connect_cb raft_connect_cb;

static void nd_set(struct uv_stream_s *stream)
{
	if (stream != NULL && stream->type == UV_TCP &&
	    uv_tcp_nodelay((uv_tcp_t *)stream, 1) != 0)
		log_warn("log: TCP_NODELAY on a peer connection failed");
}

static void nd_accept(struct raft_uv_transport *t, raft_id id,
    const char *address, struct uv_stream_s *stream)
{
	nd_set(stream);
	raft_accept_cb(t, id, address, stream);
}

static int nd_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	raft_accept_cb = cb;
	return tcp_listen(t, nd_accept);
}

static void nd_connected(struct raft_uv_connect *req, struct uv_stream_s *stream,
    int status)
{
	if (status == 0)
		nd_set(stream);
	raft_connect_cb(req, stream, status);
}

static int nd_connect(struct raft_uv_transport *t, struct raft_uv_connect *req,
    raft_id id, const char *address, raft_uv_connect_cb cb)
{
	raft_connect_cb = cb;
	return tcp_connect(t, req, id, address, nd_connected);
}

/* --- leadership ------------------------------------------------------------------ */

/* Leadership is ours and everything before is applied: take over. */
static void d_barrier_cb(struct raft_barrier *req, int status)
{
	struct durable *d = req->data;
	struct sm_batch b;
	struct qchunk *q;
	uint64_t now;

	if (status != 0) {
		log_warn("log: the barrier of a new leadership failed: %s",
		    raft_strerror(status));
		if (!d->cluster)
			d_started(d, EX_IOERR, "the log could not be replayed: %s",
			    raft_strerror(status));
		return;
	}
	if (!d->leader)
		return;		/* lost it again meanwhile */
	server_lock_any(d->srv);
	now = sm_now(d->srv->sm);
	server_unlock_any(d->srv);
	/*
	 * Log time goes on from the last entry applied (the time no leader
	 * ran counts against no lease); a new log starts at the wall clock.
	 */
	d->time_base = now == 0 ? wall_ms() : now;
	d->mono_base = mono_ms();
	d->last_time = d->time_base;
	sm_batch_init(&b);
	if (now == 0)
		sm_batch_boot(&b);
	sm_batch_config(&b, &d->smcfg);
	/*
	 * Every client of before is gone (they were another process's, or
	 * another node's), and every lease gets the grace (Chubby's rule).
	 */
	sm_batch_leader(&b, d->id, now == 0 ? 0 : d->grace_ms, d->advertise);
	q = b.failed ? NULL : qchunk_new(b.p, b.len);
	if (q == NULL || !d_propose(d, q, NULL, 0, true)) {
		log_err("log: the leader's first entry could not be proposed");
		if (!d->cluster)
			d_started(d, EX_IOERR,
			    "the restart entry could not be proposed");
	}
	sm_batch_free(&b);
}

/* Answer a cluster change's client (raft thread; the reply goes by mailbox). */
static void d_ctl_reply(struct ctl *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void d_ctl_reply(struct ctl *c, int code, const char *fmt, ...)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	char msg[256] = "";
	struct conn *conn;
	va_list ap;

	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
	}
	r.id = c->req_id;
	r.code = code;
	r.message = msg;
	server_lock_any(c->d->srv);
	conn = conn_by_id_locked(c->d->srv, c->cid);
	if (conn != NULL)
		conn_reply_locked(NULL, conn, &r);
	server_unlock_any(c->d->srv);
	if (code == SEMD__CODE__OK)
		log_notice("log: cluster: %s", msg);
	free(c);
}

/* A change of the configuration is done (or failed). */
static void d_change_cb(struct raft_change *req, int status)
{
	struct ctl *c = req->data;
	int rv;

	if (status != 0) {
		d_ctl_reply(c, SEMD__CODE__UNAVAILABLE, "%s",
		    raft_strerror(status));
		return;
	}
	if (c->action == SEMD__CLUSTER__ACTION__ADD) {
		/* Added as a spare; now a voter (it catches up first). */
		c->action = -1;
		rv = raft_assign(&c->d->raft, &c->change, c->node, RAFT_VOTER,
		    d_change_cb);
		if (rv != 0)
			d_ctl_reply(c, SEMD__CODE__UNAVAILABLE, "%s",
			    raft_errmsg(&c->d->raft));
		return;
	}
	d_ctl_reply(c, SEMD__CODE__OK, c->action == -1 ?
	    "node %llu is a voter" : "node %llu removed",
	    (unsigned long long)c->node);
}

/* A leadership transfer ended (it worked if the leader is now c->node). */
static void d_transfer_cb(struct raft_transfer *req)
{
	struct ctl *c = req->data;
	raft_id id = 0;
	const char *addr = NULL;

	raft_leader(&c->d->raft, &id, &addr);
	if (c->node == 0 ? id != c->d->id && id != 0 : id == c->node)
		d_ctl_reply(c, SEMD__CODE__OK, "leadership went to node %llu",
		    (unsigned long long)id);
	else
		d_ctl_reply(c, SEMD__CODE__UNAVAILABLE,
		    "the transfer did not happen in time (leader: node %llu)",
		    (unsigned long long)id);
}

/* Start a cluster change asked for by a client. */
static void d_ctl_start(struct durable *d, struct ctl *c)
{
	int rv;

	if (!d->leader) {
		d_ctl_reply(c, SEMD__CODE__UNAVAILABLE, "this node is not the leader");
		return;
	}
	c->d = d;
	c->change.data = c;
	c->transfer.data = c;
	switch (c->action) {
	case SEMD__CLUSTER__ACTION__ADD:
		rv = raft_add(&d->raft, &c->change, c->node, c->address,
		    d_change_cb);
		break;
	case SEMD__CLUSTER__ACTION__REMOVE:
		rv = raft_remove(&d->raft, &c->change, c->node, d_change_cb);
		break;
	default:
		rv = raft_transfer(&d->raft, &c->transfer, c->node, d_transfer_cb);
		break;
	}
	if (rv != 0)
		d_ctl_reply(c, rv == RAFT_BADID || rv == RAFT_NOTFOUND ||
		    rv == RAFT_DUPLICATEID || rv == RAFT_DUPLICATEADDRESS ||
		    rv == RAFT_BADROLE ? SEMD__CODE__INVALID_ARGUMENT :
		    SEMD__CODE__UNAVAILABLE, "%s", raft_errmsg(&d->raft));
}

/* Leadership went: stop serving; the clients go and find the new leader. */
static void d_leadership_lost(struct durable *d)
{
	struct qchunk *q, *next;

	atomic_store(&d->serving_pub, false);
	d->serving = false;
	uv_timer_stop(&d->deadline);
	/* What the loops queued belongs to clients about to be dropped. */
	pthread_mutex_lock(&d->qlock);
	q = d->qhead;
	d->qhead = NULL;
	d->qtail = &d->qhead;
	pthread_mutex_unlock(&d->qlock);
	for (; q != NULL; q = next) {
		next = q->next;
		free(q);
	}
	log_notice("log: node %llu is no longer the leader",
	    (unsigned long long)d->id);
	server_drop_clients(d->srv);
}

/* The state name of raft_state(). */
static const char *d_state_name(int st)
{
	switch (st) {
	case RAFT_LEADER:
		return "leader";
	case RAFT_FOLLOWER:
		return "follower";
	case RAFT_CANDIDATE:
		return "candidate";
	default:
		return "unavailable";
	}
}

/* Publish the node's view of the cluster for the other threads. */
static void d_publish(struct durable *d)
{
	struct raft *r = &d->raft;
	Semd__ClusterStatus *st = &d->st;
	const char *laddr = NULL;
	raft_index last = raft_last_index(r);
	raft_id lid = 0;
	unsigned int i, n;
	char sm_addr[256];
	uint64_t sm_lid;

	server_lock_any(d->srv);
	sm_lid = sm_leader(d->srv->sm, sm_addr, sizeof sm_addr);
	server_unlock_any(d->srv);
	raft_leader(r, &lid, &laddr);
	pthread_mutex_lock(&d->slock);
	semd__cluster_status__init(st);
	st->node_id = d->id;
	st->state = (char *)d_state_name(raft_state(r));
	st->term = r->current_term;
	st->commit_index = r->commit_index;
	st->applied_index = raft_last_applied(r);
	st->last_index = last;
	st->leader_id = lid;
	/* Where clients reach the leader: what its LEADER entry said. */
	snprintf(d->st_leader, sizeof d->st_leader, "%s",
	    lid != 0 && lid == sm_lid ? sm_addr : "");
	st->leader = d->st_leader;
	n = r->configuration.n < MAX_NODES ? r->configuration.n : MAX_NODES;
	for (i = 0; i < n; i++) {
		const struct raft_server *sv = &r->configuration.servers[i];
		Semd__ClusterNode *nd = &d->st_nodes[i];

		semd__cluster_node__init(nd);
		nd->id = sv->id;
		snprintf(d->st_addr[i], sizeof d->st_addr[i], "%s", sv->address);
		nd->address = d->st_addr[i];
		nd->role = (char *)(sv->role == RAFT_VOTER ? "voter" :
		    sv->role == RAFT_STANDBY ? "standby" : "spare");
		if (raft_state(r) == RAFT_LEADER &&
		    r->leader_state.progress != NULL) {
			nd->match_index = sv->id == d->id ? last :
			    r->leader_state.progress[i].match_index;
			nd->lag = last - nd->match_index;
		}
		d->st_nodep[i] = nd;
	}
	st->n_nodes = n;
	st->nodes = d->st_nodep;
	pthread_mutex_unlock(&d->slock);
}

/* Every POLL_MS: follow leadership (raft 0.15 has no callback for it). */
static void d_poll_cb(uv_timer_t *t)
{
	struct durable *d = t->data;
	bool leader = raft_state(&d->raft) == RAFT_LEADER;
	int rv;

	/* Lost and won again between two polls: a new leadership all the same. */
	if (leader && d->leader && d->raft.current_term != d->lead_term) {
		d->leader = false;
		d_leadership_lost(d);
	}
	if (leader && !d->leader) {
		d->leader = true;
		d->lead_term = d->raft.current_term;
		d->term_leader++;
		log_notice("log: node %llu is the leader (term %llu)",
		    (unsigned long long)d->id,
		    (unsigned long long)d->raft.current_term);
		d->barrier.data = d;
		rv = raft_barrier(&d->raft, &d->barrier, d_barrier_cb);
		if (rv != 0)
			log_warn("log: barrier: %s", raft_errmsg(&d->raft));
	} else if (!leader && d->leader) {
		d->leader = false;
		d_leadership_lost(d);
	}
	d_publish(d);
}

/* The raft thread: load, then follow or lead until stopped. */
static void *d_main(void *arg)
{
	struct durable *d = arg;
	struct raft_configuration conf;
	int rv;

	d->raft.data = d;
	rv = raft_init(&d->raft, &d->io, &d->fsm, d->id, d->peer);
	if (rv != 0) {
		d_started(d, EX_CONFIG, "raft: %s", raft_errmsg(&d->raft));
		return NULL;
	}
	raft_set_snapshot_threshold(&d->raft, SNAP_NEVER);
	raft_set_snapshot_trailing(&d->raft, d->cluster ? 1024 : SNAP_TRAILING);
	if (d->cluster) {
		/*
		 * A leader that cannot reach a majority for an election timeout
		 * steps down (raft does that check); pre-vote keeps a node cut
		 * off from disturbing the others when it comes back.
		 */
		raft_set_election_timeout(&d->raft, d->srv->cfg.election_timeout_ms);
		raft_set_heartbeat_timeout(&d->raft,
		    d->srv->cfg.election_timeout_ms / 10 > 10 ?
		    d->srv->cfg.election_timeout_ms / 10 : 10);
		raft_set_pre_vote(&d->raft, true);
	}
	if (d->fresh && (!d->cluster || d->srv->cfg.bootstrap != NULL)) {
		raft_configuration_init(&conf);
		rv = d->cluster ? durable_parse_bootstrap(d->srv->cfg.bootstrap,
		    &conf, d->err, sizeof d->err) :
		    raft_configuration_add(&conf, NODE_ID, "local", RAFT_VOTER);
		if (rv == 0)
			rv = raft_bootstrap(&d->raft, &conf);
		raft_configuration_close(&conf);
		if (rv != 0) {
			d_started(d, EX_CONFIG, "raft bootstrap: %s", d->err[0] ?
			    d->err : raft_errmsg(&d->raft));
			goto close;
		}
	}
	rv = raft_start(&d->raft);
	if (rv != 0) {
		d_started(d, EX_CONFIG, "the data directory cannot be loaded "
		    "(damaged?): %s", raft_errmsg(&d->raft));
		goto close;
	}
	if (!d->cluster && raft_state(&d->raft) != RAFT_LEADER) {
		d_started(d, EX_CONFIG, "this node is not the log's only voter");
		goto close;
	}
	d->poll.data = d;
	uv_timer_start(&d->poll, d_poll_cb, 0, POLL_MS);
	/* A cluster node is ready once loaded: the leader is found later. */
	if (d->cluster)
		d_started(d, 1, NULL);
	uv_run(&d->loop, UV_RUN_DEFAULT);
close:
	d->serving = false;
	atomic_store(&d->serving_pub, false);
	raft_close(&d->raft, NULL);
	uv_close((uv_handle_t *)&d->wake, NULL);
	uv_close((uv_handle_t *)&d->deadline, NULL);
	uv_close((uv_handle_t *)&d->poll, NULL);
	/* Let raft and the handles finish closing. */
	uv_run(&d->loop, UV_RUN_DEFAULT);
	raft_uv_close(&d->io);
	raftguard_remove(&d->io);
	if (d->cluster)
		raft_uv_tcp_close(&d->transport);
	return NULL;
}

/* Does the directory have any entry but . and ..? */
static int dir_empty(const char *dir)
{
	struct dirent *e;
	DIR *dp = opendir(dir);
	int empty = 1;

	if (dp == NULL)
		return -errno;
	while ((e = readdir(dp)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			empty = 0;
			break;
		}
	}
	closedir(dp);
	return empty;
}

/* Write semd.meta for a new directory (atomically, synced). */
static int meta_write(const char *dir, raft_id id, char *err, size_t errlen)
{
	char path[4096], tmp[4096], text[128];
	int fd, dfd, n;

	snprintf(path, sizeof path, "%s/%s", dir, META_NAME);
	snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, META_NAME);
	n = snprintf(text, sizeof text, "%s\nnode %llu\n", META_FORMAT,
	    (unsigned long long)id);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, (size_t)n) != n || fsync(fd) != 0 ||
	    close(fd) != 0 || rename(tmp, path) != 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return EX_CANTCREAT;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
	return 0;
}

/* Check semd.meta: ours, this node's. */
static int meta_check(const char *dir, raft_id id, char *err, size_t errlen)
{
	char path[4096], text[256], want[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, META_NAME);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s is not a semd data directory (no %s; "
		    "it has other files): give an empty or a semd directory",
		    dir, META_NAME);
		return EX_CONFIG;
	}
	n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return EX_IOERR;
	}
	text[n] = '\0';
	snprintf(want, sizeof want, "%s\nnode %llu\n", META_FORMAT,
	    (unsigned long long)id);
	if (strcmp(text, want) != 0) {
		snprintf(err, errlen, "%s belongs to another node or format "
		    "(%s says \"%.60s\")", dir, META_NAME, text);
		return EX_CONFIG;
	}
	return 0;
}

/*
 * raft_uv makes every open segment whole (SEGMENT_SIZE, preallocated), so a
 * crash leaves zeros after the last write, which it reads as the end. A
 * shorter file was cut by something else - and libraft 0.15 frees twice on
 * the way out of reading one (it crashes): refuse it with a message.
 */
static int segments_check(const char *dir, char *err, size_t errlen)
{
	char path[4096];
	struct dirent *e;
	struct stat st;
	DIR *dp = opendir(dir);
	int r = 0;

	if (dp == NULL)
		return 0;
	while ((e = readdir(dp)) != NULL && r == 0) {
		if (strncmp(e->d_name, "open-", 5) != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0 && st.st_size > 0 &&
		    ((size_t)st.st_size < SEGMENT_SIZE || st.st_size % 4096 != 0)) {
			snprintf(err, errlen, "%s is %lld bytes, not a whole "
			    "segment: the data directory was cut off (damaged); "
			    "restore it from a copy", path, (long long)st.st_size);
			r = EX_CONFIG;
		}
	}
	closedir(dp);
	return r;
}

/*
 * raft_uv keeps the term and vote in metadata1 and metadata2 (32 bytes,
 * written whole with O_SYNC; it ignores a short one as a write torn by a
 * crash and takes the other). With neither whole, it takes the directory
 * for a new server while its log is there: libraft 0.15 then hangs on the
 * barrier (appending to the log meanwhile). Refuse that. A directory with
 * nothing but semd.meta is one whose first start stopped before raft wrote
 * anything: *fresh, it is bootstrapped.
 */
static int metadata_check(const char *dir, bool *fresh, char *err,
    size_t errlen)
{
	char path[4096];
	struct dirent *e;
	struct stat st;
	DIR *dp = opendir(dir);
	int whole = 0, others = 0;

	*fresh = false;
	if (dp == NULL)
		return 0;
	while ((e = readdir(dp)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, META_NAME) == 0)
			continue;
		others++;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if ((strcmp(e->d_name, "metadata1") == 0 ||
		    strcmp(e->d_name, "metadata2") == 0) &&
		    stat(path, &st) == 0 && st.st_size == 32)
			whole++;
	}
	closedir(dp);
	if (others == 0) {
		*fresh = true;
		return 0;
	}
	if (whole == 0) {
		snprintf(err, errlen, "%s has a log but no whole metadata1 or "
		    "metadata2 (the term and vote): the data directory is "
		    "damaged; restore it from a copy", dir);
		return EX_CONFIG;
	}
	return 0;
}

/* Check or make the directory; start the raft thread; wait until it serves. */
int durable_start(struct server *srv, char *err, size_t errlen)
{
	const char *dir = srv->cfg.data_dir;
	struct timespec ts;
	struct durable *d;
	struct stat st;
	bool bare = false;
	raft_id id;
	int r, empty;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create the data directory %s: %s",
		    dir, strerror(errno));
		return EX_CANTCREAT;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is not a directory", dir);
		return EX_CONFIG;
	}
	if ((empty = dir_empty(dir)) < 0) {
		snprintf(err, errlen, "cannot read %s: %s", dir, strerror(-empty));
		return EX_CANTCREAT;
	}
	id = srv->cfg.node_id != 0 ? srv->cfg.node_id : NODE_ID;
	if (empty && (r = meta_write(dir, id, err, errlen)) != 0)
		return r;
	if (!empty && ((r = meta_check(dir, id, err, errlen)) != 0 ||
	    (r = metadata_check(dir, &bare, err, errlen)) != 0 ||
	    (r = segments_check(dir, err, errlen)) != 0))
		return r;
	d = calloc(1, sizeof *d);
	if (d == NULL) {
		snprintf(err, errlen, "out of memory");
		return EX_OSERR;
	}
	d->srv = srv;
	d->id = id;
	d->cluster = srv->cfg.node_id != 0;
	snprintf(d->peer, sizeof d->peer, "%s", d->cluster ?
	    srv->cfg.peer_listen + 4 : "local");
	if (srv->cfg.advertise != NULL)
		snprintf(d->advertise, sizeof d->advertise, "%s",
		    srv->cfg.advertise);
	else
		server_client_address(srv, d->advertise, sizeof d->advertise);
	d->fresh = empty || bare;
	d->grace_ms = srv->cfg.restart_grace_ms;
	d->snapshot_every = srv->cfg.snapshot_every;
	d->smcfg = server_sm_config_of(srv);
	pthread_mutex_init(&d->qlock, NULL);
	pthread_mutex_init(&d->slock, NULL);
	pthread_mutex_init(&d->rlock, NULL);
	semd__cluster_status__init(&d->st);
	d->st.state = (char *)"unavailable";
	d->st.leader = d->st_leader;
	pthread_cond_init(&d->rcond, NULL);
	d->qtail = &d->qhead;
	srv->durable = d;
	if (uv_loop_init(&d->loop) != 0 ||
	    uv_async_init(&d->loop, &d->wake, d_wake_cb) != 0 ||
	    uv_timer_init(&d->loop, &d->deadline) != 0 ||
	    uv_timer_init(&d->loop, &d->poll) != 0) {
		snprintf(err, errlen, "cannot make the log's event loop");
		return EX_OSERR;
	}
	d->wake.data = d;
	d->deadline.data = d;
	if (d->cluster) {
		r = raft_uv_tcp_init(&d->transport, &d->loop);
		if (r == 0 && srv->cfg.peer_bind != NULL)
			r = raft_uv_tcp_set_bind_address(&d->transport,
			    srv->cfg.peer_bind + 4);
		if (r != 0) {
			snprintf(err, errlen, "raft TCP transport: %s",
			    raft_strerror(r));
			return EX_OSERR;
		}
		tcp_listen = d->transport.listen;
		tcp_connect = d->transport.connect;
		d->transport.listen = nd_listen;
		d->transport.connect = nd_connect;
	} else {
		d->transport.init = nt_init;
		d->transport.listen = nt_listen;
		d->transport.connect = nt_connect;
		d->transport.close = nt_close;
	}
	d->fsm.version = 2;
	d->fsm.data = d;
	d->fsm.apply = d_fsm_apply;
	d->fsm.snapshot = d_fsm_snapshot;
	d->fsm.snapshot_finalize = d_fsm_snapshot_finalize;
	d->fsm.restore = d_fsm_restore;
	r = raft_uv_init(&d->io, &d->loop, dir, &d->transport);
	if (r != 0) {
		snprintf(err, errlen, "raft I/O on %s: %s", dir, d->io.errmsg);
		return EX_CANTCREAT;
	}
	/* libraft 0.15 crashes on entries it compacted away: see raftguard.h. */
	if (raftguard_install(&d->io) != 0) {
		snprintf(err, errlen, "raft I/O: too many logs in one process");
		raft_uv_close(&d->io);
		return EX_SOFTWARE;
	}
	/* Snapshots are written as they are (they are small per name). */
	raft_uv_set_snapshot_compression(&d->io, false);
	/*
	 * raft_uv's "auto-recovery" answers a corrupt segment by deleting it
	 * and every later one: committed entries gone without a word. A
	 * damaged log stops semd instead (a torn write at the end of the open
	 * segment, what a crash leaves, is still read up to the torn entry).
	 */
	raft_uv_set_auto_recovery(&d->io, false);
	raft_uv_set_segment_size(&d->io, SEGMENT_SIZE);
	if (pthread_create(&d->thread, NULL, d_main, d) != 0) {
		snprintf(err, errlen, "cannot start the log's thread");
		return EX_OSERR;
	}
	d->thread_started = true;
	pthread_setname_np(d->thread, "semd/raft");
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += READY_WAIT_S;
	pthread_mutex_lock(&d->rlock);
	while (d->status == 0 &&
	    pthread_cond_timedwait(&d->rcond, &d->rlock, &ts) == 0)
		;
	r = d->status;
	if (r != 1)
		snprintf(err, errlen, "%s", r == 0 ?
		    "the log did not come up in time" : d->err);
	pthread_mutex_unlock(&d->rlock);
	if (r == 0)
		return EX_SOFTWARE;
	return r == 1 ? 0 : r;
}

/* Stop the raft thread and free the log. */
void durable_stop(struct server *srv)
{
	struct durable *d = srv->durable;

	if (d == NULL)
		return;
	if (d->thread_started) {
		pthread_mutex_lock(&d->qlock);
		d->stop = true;
		pthread_mutex_unlock(&d->qlock);
		uv_async_send(&d->wake);
		pthread_join(d->thread, NULL);
	} else {
		uv_close((uv_handle_t *)&d->wake, NULL);
		uv_close((uv_handle_t *)&d->deadline, NULL);
		uv_close((uv_handle_t *)&d->poll, NULL);
		uv_run(&d->loop, UV_RUN_DEFAULT);
	}
	uv_loop_close(&d->loop);
	while (d->qhead != NULL) {
		struct qchunk *q = d->qhead;

		d->qhead = q->next;
		free(q);
	}
	pthread_mutex_destroy(&d->qlock);
	pthread_mutex_destroy(&d->slock);
	pthread_mutex_destroy(&d->rlock);
	pthread_cond_destroy(&d->rcond);
	free(d);
	srv->durable = NULL;
}

/* Queue a batch's commands for the next entry; wake the raft thread. */
void durable_submit(struct server *srv, struct sm_batch *b)
{
	struct durable *d = srv->durable;
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
	pthread_mutex_lock(&d->qlock);
	*d->qtail = q;
	d->qtail = &q->next;
	pthread_mutex_unlock(&d->qlock);
	uv_async_send(&d->wake);
}

/* Propose new settings (a reload). */
void durable_config(struct server *srv, const struct sm_config *cfg)
{
	struct sm_batch b;

	sm_batch_init(&b);
	sm_batch_config(&b, cfg);
	durable_submit(srv, &b);
	sm_batch_free(&b);
}

/* A new client id (under the state lock). */
uint64_t durable_client_id(struct server *srv)
{
	return (uint64_t)srv->durable->id << 48 | ++srv->durable->next_client;
}

/* The node's cluster figures for Stats (any thread; under the state lock). */
void durable_counters(void *arg, struct sm_local_counters *out)
{
	struct durable *d = ((struct server *)arg)->durable;
	const char *st;

	if (d == NULL)
		return;
	pthread_mutex_lock(&d->slock);
	st = d->st.state != NULL ? d->st.state : "";
#define LC(nm, v) do {							\
	out->name[out->n] = (nm);					\
	out->value[out->n++] = (v);					\
} while (0)
	LC("cluster_node_id", d->id);
	LC("cluster_leader", strcmp(st, "leader") == 0);
	LC("cluster_term", d->st.term);
	LC("cluster_commit_index", d->st.commit_index);
	LC("cluster_applied_index", d->st.applied_index);
	LC("cluster_last_index", d->st.last_index);
	LC("cluster_leader_id", d->st.leader_id);
	LC("cluster_nodes", d->st.n_nodes);
#undef LC
	pthread_mutex_unlock(&d->slock);
}

/* Is this node the leader, serving clients? (any thread) */
bool durable_serving(struct server *srv)
{
	return atomic_load(&srv->durable->serving_pub);
}

/* The leader as this node knows it: its id (0: none) and client address. */
uint64_t durable_leader(struct server *srv, char *addr, size_t len)
{
	struct durable *d = srv->durable;
	uint64_t id;

	pthread_mutex_lock(&d->slock);
	id = d->st.leader_id;
	snprintf(addr, len, "%s", d->st_leader);
	pthread_mutex_unlock(&d->slock);
	return id;
}

/* Pack the cluster status into out (a Reply body); *buf holds it; free it. */
int durable_status(struct server *srv, Semd__Reply *r, uint8_t **buf)
{
	struct durable *d = srv->durable;
	Semd__ClusterStatus *copy;
	size_t len;

	*buf = NULL;
	pthread_mutex_lock(&d->slock);
	len = semd__cluster_status__get_packed_size(&d->st);
	*buf = malloc(len + 1);
	if (*buf != NULL)
		semd__cluster_status__pack(&d->st, *buf);
	pthread_mutex_unlock(&d->slock);
	if (*buf == NULL)
		return -ENOMEM;
	copy = semd__cluster_status__unpack(NULL, len, *buf);
	free(*buf);
	*buf = NULL;
	if (copy == NULL)
		return -ENOMEM;
	r->body_case = SEMD__REPLY__BODY_CLUSTER;
	r->cluster = copy;
	return 0;
}

/* A cluster change for the raft thread; the client is answered from there. */
int durable_cluster_change(struct server *srv, uint64_t cid, uint64_t req_id,
    const Semd__Cluster *cl)
{
	struct durable *d = srv->durable;
	struct ctl *c = calloc(1, sizeof *c);

	if (c == NULL)
		return -ENOMEM;
	c->cid = cid;
	c->req_id = req_id;
	c->action = cl->action;
	c->node = cl->node_id;
	snprintf(c->address, sizeof c->address, "%s", cl->address);
	pthread_mutex_lock(&d->qlock);
	c->next = d->ctlq;
	d->ctlq = c;
	pthread_mutex_unlock(&d->qlock);
	uv_async_send(&d->wake);
	return 0;
}

/*
 * Parse --bootstrap "ID=HOST:PORT,ID=HOST:PORT,...": every node a voter.
 * 0, or -1 with the reason in err.
 */
int durable_parse_bootstrap(const char *spec, struct raft_configuration *conf,
    char *err, size_t errlen)
{
	char buf[4096], *item, *save = NULL, *eq, *end;
	unsigned long long id;

	if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf) {
		snprintf(err, errlen, "bootstrap list too long");
		return -1;
	}
	for (item = strtok_r(buf, ",", &save); item != NULL;
	    item = strtok_r(NULL, ",", &save)) {
		eq = strchr(item, '=');
		errno = 0;
		id = eq != NULL ? strtoull(item, &end, 10) : 0;
		if (eq == NULL || end != eq || id == 0 || id > 65535 ||
		    eq[1] == '\0') {
			snprintf(err, errlen, "bootstrap: '%s' is not ID=HOST:PORT",
			    item);
			return -1;
		}
		if (strncmp(eq + 1, "tcp:", 4) == 0)
			eq += 4;
		if (raft_configuration_add(conf, id, eq + 1, RAFT_VOTER) != 0) {
			snprintf(err, errlen, "bootstrap: node %llu or %s twice",
			    id, eq + 1);
			return -1;
		}
	}
	if (conf->n == 0) {
		snprintf(err, errlen, "bootstrap: no node");
		return -1;
	}
	return 0;
}
