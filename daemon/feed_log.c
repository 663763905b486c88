/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/feed_log.c - the state machine fed through the replicated log
 * (see feed.h; the log is daemon/log/semlog.h): --data-dir. A request
 * goes into its loop's batch (the feed's, one a loop) as it came, with the
 * access decision, and is proposed at the end of the read; it is applied on
 * every node once committed, and answered then. A client is known to the
 * log by a client id; this node keeps a record of each of its connections
 * (struct log_conn, the connection's feed_ctx) in a map by those ids,
 * which the log's thread reads (under the state lock) to bind an opened
 * client and to route the replies of what it applies. The record holds
 * the connection's flow control: the bytes on their way through the log
 * (past LOG_PROPOSED_MAX it is no longer read), the reads off the log (the
 * frames behind them are held). Cluster requests are answered here; reads
 * (Pings among them) by the leader without an entry, after a read barrier
 * (a lease is the leader's, which hears them). The log is
 * given what it needs of the server as a struct semlog_host, so that it
 * calls nothing of the shell by name, and its settings as a struct
 * semlog_config (it does not read the shell's daemon/config.h).
 */
#include <config.h>	/* autoconf's, not daemon/config.h */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "daemon/backup.h"
#include "daemon/conn-int.h"
#include "daemon/feed.h"
#include "daemon/log/semlog.h"
#include "daemon/logging.h"
#include "daemon/server.h"

/*
 * A connection stops being read while it has more than LOG_PROPOSED_MAX
 * bytes of requests on their way through the log, and is read again below
 * half of it: a client that sends faster than the log commits is slowed
 * down (its socket fills), not buffered without bound.
 */
#define LOG_PROPOSED_MAX	(1u << 20)
/* At most this many reads of one connection wait off the log at once. */
#define LOG_READS_MAX		256

/* What the log feed keeps of a connection (c->feed_ctx). */
struct log_conn {
	struct conn	*c;
	struct hnode	node;		/* feed_state's conns, by client id */
	size_t		proposed;	/* request bytes not applied yet */
	unsigned int	reads;		/* reads queued off the log */
	bool		stopped;	/* paused or held by us, not resumed */
	bool		logged;		/* its OPEN is in the log */
	bool		guest;		/* its Hello made no session (a full disk) */
	uint8_t		secret[SM_SECRET_LEN];	/* for its OPEN */
};

/* A loop's commands for the log, sent at the end of its read (its own line). */
struct log_batch {
	_Alignas(64) struct sm_batch	b;
};

/* The log feed's own (srv->feed_state). */
struct feed_state {
	struct semlog		*d;
	struct hmap		conns;		/* client id -> struct log_conn */
	struct log_batch	*batch;		/* one a loop, by its index */
	unsigned int		nbatch;
};

/* The hash of a client id (ids are ours: no client aims them). */
static uint64_t log_cid_hash(const struct server *srv, uint64_t id)
{
	return hmap_siphash_u64x2(srv->hash_key, id, 0);
}

/* Does a connection's record carry this client id? */
static bool log_cid_eq(const struct hnode *n, const void *key)
{
	return container_of(n, struct log_conn, node)->c->cid ==
	    *(const uint64_t *)key;
}

/* This node's record of client id's connection, or NULL (under the lock). */
static struct log_conn *log_conn_find(struct server *srv, uint64_t id)
{
	struct hnode *n = hmap_find(&srv->feed_state->conns,
	    log_cid_hash(srv, id), log_cid_eq, &id);

	return n ? container_of(n, struct log_conn, node) : NULL;
}

/* The batch of c's loop. */
static struct sm_batch *log_batch(const struct conn *c)
{
	return &c->srv->feed_state->batch[c->w->idx].b;
}

/*
 * Under the lock (the log's thread): once nothing holds lc's connection
 * back - no read of it waits, no more than half its allowance is on its
 * way - its own loop reads it again, the frames it held first. Without
 * memory for that, the next request applied or read answered asks again.
 */
static void log_resume_locked(struct log_conn *lc)
{
	if (lc->stopped && lc->reads == 0 &&
	    lc->proposed <= LOG_PROPOSED_MAX / 2 &&
	    conn_resume_later_locked(lc->c))
		lc->stopped = false;
}

/* The principal of c's connection. */
static const char *log_principal(const struct conn *c)
{
	return c->srv->policy->principal(c->id);
}

/* --- the log's host (struct semlog_host): called on the log's thread -------- */

/* The state lock, for the log thread. */
static void log_lock(void *arg)
{
	server_lock_any(arg);
}

/* The state lock let go. */
static void log_unlock(void *arg)
{
	server_unlock_any(arg);
}

/* The state's settings (locked). */
static struct sm_config log_sm_config(void *arg)
{
	return server_sm_config_of(arg);
}

/* The state's outputs (locked). */
static struct sm_out log_sm_out(void *arg)
{
	return server_sm_out(arg);
}

/* This node's connection of client id, or NULL (under the lock). */
static void *log_conn(void *arg, uint64_t id)
{
	struct log_conn *lc = log_conn_find(arg, id);

	return lc != NULL ? lc->c : NULL;
}

/* len bytes of client id's requests were applied (under the lock). */
static void log_applied(void *arg, uint64_t id, size_t len)
{
	struct log_conn *lc = log_conn_find(arg, id);

	if (lc == NULL)
		return;
	lc->proposed = lc->proposed > len ? lc->proposed - len : 0;
	log_resume_locked(lc);
}

/* Answer a connection (a cluster change; locked). */
static void log_reply(void *arg, void *conn, const Semd__Reply *r)
{
	(void)arg;
	conn_reply_locked(NULL, conn, r);
}

/*
 * An opened client's connection, for sm_apply's bind hook (under the lock):
 * none while this node does not serve. A client whose OPEN a node applies
 * after its leadership ended (the next leader committed it) belongs to a
 * session that the next leader's first entry ends: nothing of it may be
 * answered from here.
 */
static void *log_bind(void *arg, uint64_t id)
{
	struct server *srv = arg;

	return semlog_serving(srv->feed_state->d) ? log_conn(arg, id) : NULL;
}

/*
 * Leadership lost: from now on nothing the state applies reaches a client
 * of this node (every session is unbound from its connection, at once,
 * under the lock); then every client is told where to go and closed, by its
 * own loop. The closing alone would come too late: the loops write the
 * replies already in their mailboxes first, and the log thread goes on
 * applying the next leader's entries meanwhile.
 */
static void log_drop_clients(void *arg)
{
	struct server *srv = arg;
	struct hmap_iter it;
	struct hnode *n;
	struct sm_client *cl;

	server_lock_any(srv);
	hmap_iter_init(&it, &srv->feed_state->conns);
	while ((n = hmap_iter_next(&it)) != NULL) {
		cl = sm_client_find(srv->sm,
		    container_of(n, struct log_conn, node)->c->cid);
		if (cl != NULL)
			sm_client_bind(cl, NULL);
	}
	server_unlock_any(srv);
	server_drop_clients(srv);
}

/*
 * A read whose barrier passed (the log's thread, locked): run in the state
 * as it stands (sm_read changes nothing) and answered; or, when the node
 * no longer leads, redirected. Its connection then runs the frames it held.
 */
static void log_read(void *arg, uint64_t cid, const struct sm_caller *who,
    const uint8_t *data, size_t len, bool lead)
{
	struct server *srv = arg;
	struct log_conn *lc = log_conn_find(srv, cid);
	struct sm_client *cl = sm_client_find(srv->sm, cid);
	Semd__Request *req;

	if (lc == NULL)
		return;		/* closed: nobody to answer */
	req = semd__request__unpack(NULL, len, data);
	if (req != NULL && lead && lc->guest)
		(void)sm_guest_read(srv->sm, lc->c, log_principal(lc->c), req,
		    who);
	else if (req != NULL && lead && cl != NULL)
		(void)sm_read(srv->sm, cl, req, who);
	else if (req != NULL)
		conn_redirect_locked(lc->c, req->id);
	if (req != NULL)
		semd__request__free_unpacked(req, NULL);
	if (lc->reads > 0)
		lc->reads--;
	log_resume_locked(lc);
}

/* --- the feed -------------------------------------------------------------- */

/* A log's state starts at the log's time: its first entry sets the clock. */
static void log_clock(uint64_t *now_ms, uint64_t *wall_ms)
{
	*now_ms = 0;
	*wall_ms = 0;
}

/*
 * --restore FILE: the backup read and checked whole - its checksum, then
 * the state in it restored (every invariant checked) - before anything is
 * written to the data directory: *seed (malloc'ed) and its state time.
 * 0, or an exit code (EX_DATAERR: damaged, or no backup of semd's).
 */
static int log_seed_load(struct server *srv, uint8_t **seed, size_t *len,
    uint64_t *now)
{
	const char *path = srv->cfg.restore;
	struct sm_config cfg = server_sm_config_of(srv);
	struct sm_out none = { 0 };
	struct sm *sm;
	char err[512];
	int r;

	if ((r = backup_file_load(path, seed, len, err, sizeof err)) != 0) {
		log_err("restore: %s", err);
		return r;
	}
	sm = sm_restore(&cfg, &none, *seed, *len, err, sizeof err);
	if (sm == NULL) {
		log_err("restore: %s holds no state this semd can load: %s",
		    path, err);
		free(*seed);
		*seed = NULL;
		return EX_DATAERR;
	}
	*now = sm_now(sm);
	sm_free(sm);
	log_notice("restore: %s is a whole backup (%zu bytes of state)", path,
	    *len);
	return 0;
}

/* The log's settings, from the server's (addresses without "tcp:"). */
static struct semlog_config log_config(const struct server *srv)
{
	const struct semd_config *cfg = &srv->cfg;
	struct semlog_config lc = {
		.data_dir = cfg->data_dir,
		.node_id = cfg->node_id,
		.peer_listen = cfg->peer_listen != NULL ? cfg->peer_listen + 4 : NULL,
		.peer_bind = cfg->peer_bind != NULL ? cfg->peer_bind + 4 : NULL,
		.bootstrap = cfg->bootstrap,
		.peer_tls_cert = cfg->peer_tls_cert,
		.peer_tls_key = cfg->peer_tls_key,
		.peer_tls_ca = cfg->peer_tls_ca,
		.peer_key = cfg->peer_key,
		.advertise = cfg->advertise != NULL ? cfg->advertise :
		    srv->client_addr,
		.restart_grace_ms = cfg->restart_grace_ms,
		.snapshot_every = cfg->snapshot_every,
		.election_timeout_ms = cfg->election_timeout_ms,
	};

	return lc;
}

/* Open the data directory, replay the log into the state. */
static int log_start(struct server *srv)
{
	struct semlog_config lc = log_config(srv);
	struct semlog_host host = {
		.arg = srv,
		.sm = &srv->sm,
		.lock = log_lock,
		.unlock = log_unlock,
		.sm_config = log_sm_config,
		.sm_out = log_sm_out,
		.conn = log_conn,
		.bind = log_bind,
		.applied = log_applied,
		.reply = log_reply,
		.drop_clients = log_drop_clients,
		.read = log_read,
	};
	struct feed_state *fs;
	uint8_t *seed = NULL;
	unsigned int i;
	char err[512];
	int r;

	if ((fs = calloc(1, sizeof *fs)) == NULL)
		goto nomem;
	srv->feed_state = fs;
	fs->batch = aligned_alloc(_Alignof(struct log_batch),
	    srv->nworkers * sizeof *fs->batch);
	if (fs->batch == NULL || hmap_init(&fs->conns, 64) != 0)
		goto nomem;
	fs->nbatch = srv->nworkers;
	for (i = 0; i < fs->nbatch; i++)
		sm_batch_init(&fs->batch[i].b);
	if (srv->cfg.restore != NULL && (r = log_seed_load(srv, &seed,
	    &lc.seed_len, &lc.seed_now)) != 0)
		return r;
	lc.seed = seed;
	log_notice("log: opening %s", srv->cfg.data_dir);
	r = semlog_start(&fs->d, &lc, &host, err, sizeof err);
	free(seed);
	if (r != 0) {
		log_err("log: %s", err);
		return r;
	}
	log_notice("log: state restored from %s", srv->cfg.data_dir);
	return 0;
nomem:
	log_err("log: out of memory");
	return EX_OSERR;
}

/* Stop the log's thread; forget the map (its connections are gone). */
static void log_stop(struct server *srv)
{
	struct feed_state *fs = srv->feed_state;
	unsigned int i;

	if (fs == NULL)
		return;
	semlog_stop(fs->d);
	hmap_destroy(&fs->conns);
	for (i = 0; i < fs->nbatch; i++)
		sm_batch_free(&fs->batch[i].b);
	free(fs->batch);
	free(fs);
	srv->feed_state = NULL;
}

/* Time passes through the log (an entry when a deadline is due), not a loop. */
static uint64_t log_deadline_locked(const struct server *srv)
{
	(void)srv;
	return UINT64_MAX;
}

/* Time passes through the log: no loop's timer ever fires for it. */
static void log_tick_locked(struct server *srv)
{
	(void)srv;
}

/* Open c's client in the log (its loop's batch). */
static void log_open_client_locked(struct conn *c, struct log_conn *lc,
    const char *principal)
{
	sm_batch_open(log_batch(c), c->cid, principal, lc->secret,
	    c->local ? SM_CLIENT_LOCAL : 0);
	lc->logged = true;
}

/*
 * A client id of the log for c, and the feed's record of it. Opened in the
 * state when the log gets there, and bound then; on a node that does not
 * lead, opened in the log only if it leads by the client's first request.
 */
static int log_open_locked(struct conn *c, const char *principal,
    const uint8_t secret[SM_SECRET_LEN])
{
	struct server *srv = c->srv;
	struct feed_state *fs = srv->feed_state;
	struct log_conn *lc;

	if ((lc = calloc(1, sizeof *lc)) == NULL)
		return -ENOMEM;
	lc->c = c;
	memcpy(lc->secret, secret, sizeof lc->secret);
	c->cid = semlog_client_id(fs->d);
	c->feed_ctx = lc;
	hmap_insert(&fs->conns, &lc->node, log_cid_hash(srv, c->cid));
	if (semlog_serving(fs->d) && semlog_refusal(fs->d) == NULL)
		log_open_client_locked(c, lc, principal);
	return 0;
}

/*
 * Nothing more reaches c's client; the state hears of its close through
 * the log. A stop is no client's death: the restart entry says what goes.
 */
static void log_close_locked(struct conn *c)
{
	struct server *srv = c->srv;
	struct sm_client *cl = sm_client_find(srv->sm, c->cid);
	struct log_conn *lc = c->feed_ctx;

	hmap_remove(&srv->feed_state->conns, &lc->node);
	if (cl != NULL)
		sm_client_bind(cl, NULL);
	if (!srv->stopping && lc->logged)
		sm_batch_close(log_batch(c), c->cid);
	free(lc);
	c->feed_ctx = NULL;
}

/*
 * Behind reads answered off the log, only reads go on (LOG_READS_MAX at
 * most): a frame that is none is held, and runs again once they are
 * answered, so that no read sees a later request of its connection.
 */
static bool log_admit_locked(struct conn *c, const Semd__Request *req)
{
	struct log_conn *lc = c->feed_ctx;

	if (lc->reads == 0 || (lc->reads < LOG_READS_MAX &&
	    sm_op_is_read(req->op_case)))
		return true;
	lc->stopped = true;
	conn_hold_locked(c);
	return false;
}

/*
 * A Ping behind writes of its connection still on their way waits for them
 * (it is answered in order), except while the disk takes no writes: then
 * they wait for space, and the Ping, which says nothing of them, keeps the
 * session heard (a holder's keepalive) rather than wait or be refused.
 */
static bool log_ping_now(struct semlog *d, const Semd__Request *req)
{
	return req->op_case == SEMD__REQUEST__OP_PING &&
	    semlog_refusal(d) != NULL;
}

/*
 * A read (sm_op_is_read: Info, List, Stats, Holds, Where, Validate, Ping)
 * changes nothing: the leader answers it without an entry, after a read
 * barrier (semlog_read), when the client has a session and nothing of it
 * is on the way through the log (its reads then see its writes); a log
 * of one voter answers it at once (semlog_read says). Its
 * session is heard now, by the leader's clock (its lease is the leader's:
 * sm_leases_due). Until the read is answered the connection holds the
 * frames after it that are no reads (log_admit_locked). True: queued.
 */
static bool log_read_locked(struct conn *c, struct log_conn *lc,
    const Semd__Request *req, const struct sm_caller *who,
    const uint8_t *data, size_t len)
{
	struct server *srv = c->srv;
	struct semlog *d = srv->feed_state->d;

	if (!sm_op_is_read(req->op_case) || !lc->logged ||
	    (lc->proposed > 0 && !log_ping_now(d, req)) ||
	    !semlog_heard_locked(d, c->cid))
		return false;
	switch (semlog_read(d, c->cid, who, data, len)) {
	case SEMLOG_READ_QUEUED:
		lc->reads++;
		return true;
	case SEMLOG_READ_NOW:		/* one voter: the state as it stands */
		(void)sm_read(srv->sm, sm_client_find(srv->sm, c->cid), req, who);
		return true;
	default:
		return false;
	}
}

/*
 * The disk takes no writes (semlog_refusal): a request that would go into
 * the log is answered now, not at the client's deadline, and nothing of it
 * reaches the state. A new session's Hello makes a guest: answered without
 * a session (sm_guest_hello), so that its reads are answered; a resume
 * (a write: the session is taken over) is refused like the rest, and the
 * connection, without a Hello, may try again. False: stop reading.
 */
static __attribute__((noinline, cold)) bool log_refuse_locked(
    struct conn *c, struct log_conn *lc, const Semd__Request *req,
    const char *why)
{
	if (req->op_case != SEMD__REQUEST__OP_HELLO ||
	    req->hello->resume_session != 0) {
		conn_reply_code_locked(c, req->id, SEMD__CODE__UNAVAILABLE, why);
		return !c->closing && !c->dead;
	}
	if (sm_guest_hello(c->srv->sm, c, log_principal(c), req) != SM_OK) {
		conn_close_later(c);
		return false;
	}
	lc->guest = true;
	conn_hello_locked(c);
	return !c->closing && !c->dead;
}

/*
 * A guest's request: a read is answered as the guest's (sm_guest_read),
 * after a read barrier in a cluster. Anything else is refused: while the
 * disk takes no writes, saying so; after, the connection has no session
 * to run it in, so the client is told to connect again, and closed.
 */
static __attribute__((noinline, cold)) bool log_guest_locked(
    struct conn *c, struct log_conn *lc, const Semd__Request *req,
    const struct sm_caller *who, const uint8_t *data, size_t len)
{
	struct server *srv = c->srv;
	struct semlog *d = srv->feed_state->d;
	const char *why;

	if (sm_op_is_read(req->op_case)) {
		switch (semlog_read(d, c->cid, who, data, len)) {
		case SEMLOG_READ_QUEUED:
			lc->reads++;
			return true;
		case SEMLOG_READ_NOW:
			(void)sm_guest_read(srv->sm, c, log_principal(c), req,
			    who);
			return true;
		default:
			break;
		}
	}
	if (!semlog_serving(d)) {
		conn_redirect_locked(c, req->id);
		conn_close_later(c);
		return false;
	}
	if ((why = semlog_refusal(d)) != NULL) {
		conn_reply_code_locked(c, req->id, SEMD__CODE__UNAVAILABLE, why);
		return !c->closing && !c->dead;
	}
	conn_reply_code_locked(c, req->id, SEMD__CODE__UNAVAILABLE, "this "
	    "connection has no session (it began while the data directory's "
	    "disk was full): connect again");
	conn_close_later(c);
	return false;
}

/*
 * The request goes into this loop's batch, as it came and with the access
 * decision; it is answered once applied. Past LOG_PROPOSED_MAX bytes on
 * their way, c is no longer read (log_applied resumes it). Hello is taken
 * as seen from here on, so the requests behind it are checked against the
 * ACL (a failed Hello closes). False: stop reading.
 */
static bool log_request_locked(struct conn *c, const Semd__Request *req,
    const struct sm_caller *who, const uint8_t *data, size_t len)
{
	struct server *srv = c->srv;
	struct log_conn *lc = c->feed_ctx;
	const char *why;

	if (lc->guest)
		return log_guest_locked(c, lc, req, who, data, len);
	if (log_read_locked(c, lc, req, who, data, len)) {
		/* a read, answered without an entry */
	} else if (!semlog_serving(srv->feed_state->d)) {
		/* Not the leader: where to go, then close. */
		conn_redirect_locked(c, req->id);
		conn_close_later(c);
		return false;
	} else if ((why = semlog_refusal(srv->feed_state->d)) != NULL) {
		return log_refuse_locked(c, lc, req, why);
	} else {
		if (!lc->logged)
			log_open_client_locked(c, lc, log_principal(c));
		sm_batch_request(log_batch(c), c->cid, who, data, len);
		lc->proposed += len;
		if (lc->proposed > LOG_PROPOSED_MAX && !lc->stopped) {
			lc->stopped = true;
			conn_pause_locked(c);
		}
	}
	if (req->op_case == SEMD__REQUEST__OP_HELLO)
		conn_hello_locked(c);
	return !c->closing && !c->dead;
}

/*
 * A cluster request: STATUS answered here from the node's own view, a
 * change handed to the log's thread (answered from there).
 */
static void log_cluster_locked(struct conn *c, const Semd__Request *req)
{
	struct semlog *d = c->srv->feed_state->d;
	Semd__Reply r = SEMD__REPLY__INIT;

	if (req->cluster->action == SEMD__CLUSTER__ACTION__STATUS) {
		r.id = req->id;
		if (semlog_status(d, &r) != 0) {
			conn_reply_code_locked(c, req->id,
			    SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
			return;
		}
		conn_reply_locked(NULL, c, &r);
		semd__cluster_status__free_unpacked(r.cluster, NULL);
		return;
	}
	if (!semlog_serving(d))
		conn_redirect_locked(c, req->id);
	else if (semlog_cluster_change(d, c->cid, req->id, req->cluster) != 0)
		conn_reply_code_locked(c, req->id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
}

/* Straight back: nothing of the state changes. */
static void log_protocol_error_locked(struct conn *c, const char *why)
{
	conn_reply_code_locked(c, 0, SEMD__CODE__PROTOCOL_ERROR, why);
}

/*
 * Queue what w's loop gathered for the log's next entry (the batch is
 * emptied); a burst's memory is not kept.
 */
static void log_submit(struct worker *w)
{
	struct feed_state *fs = w->srv->feed_state;
	struct sm_batch *b = &fs->batch[w->idx].b;

	if (b->len > 0)
		semlog_submit(fs->d, b);
	if (b->cap > 65536)
		sm_batch_free(b);
}

/* The log keeps the state: the clients hear that they may come back. */
static void log_stopping_locked(struct server *srv)
{
	Semd__Reply r = SEMD__REPLY__INIT;

	r.code = SEMD__CODE__UNAVAILABLE;
	r.message = (char *)"semd is stopping; the state is kept: a "
	    "session with a lease resumes when it is back";
	sm_tell_all(srv->sm, &r);
}

/* The settings go through the log, to every node. */
static void log_reconfigure_locked(struct server *srv,
    const struct sm_config *sc)
{
	semlog_reconfigure(srv->feed_state->d, sc);
}

/* The node's view of its log (a log of one voter is a cluster of one). */
static void log_counters(struct server *srv, struct sm_local_counters *out)
{
	if (srv->feed_state != NULL)
		semlog_counters(srv->feed_state->d, out);
}

/* The leader as the log knows it. */
static uint64_t log_leader(struct server *srv, char *addr, size_t len)
{
	return semlog_leader(srv->feed_state->d, addr, len);
}

/* The log's view for readiness (health.c decides). */
static bool log_health(struct server *srv, struct semlog_health *out)
{
	semlog_health(srv->feed_state->d, out);
	return true;
}

/* The log's disk work: appends timed, snapshots written. */
static bool log_io_stats(struct server *srv, struct semlog_io_stats *out)
{
	semlog_io_stats(srv->feed_state->d, out);
	return true;
}

const struct feed feed_log = FEED_OF("log", true, log);
