/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/thread.c - the log thread (semlog.h): the core (core.h) on a
 * thread of its own with a libuv loop, raft_uv's disk and network I/O
 * through the peer port (port.h), the transports (none for one voter,
 * libraft's TCP without Nagle or ours in TLS for a cluster), the data
 * directory (datadir.h), start and stop, and what other threads may read.
 *
 * Threads: everything raft is done on the log thread's loop. The inbox the
 * event loops fill (commands, reads, cluster changes, the stop) is under
 * qlock and wakes the loop; the status published for other threads is
 * under slock; the state machine under the host's state lock, which the
 * core takes to apply an entry, snapshot or restore.
 */
#include <config.h>	/* autoconf's */

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "daemon/log/core.h"
#include "daemon/log/datadir.h"
#include "daemon/log/peer_addr.h"
#include "daemon/log/peer_net.h"
#include "daemon/log/port.h"
#include "daemon/log/semlog.h"
#include "daemon/logging.h"

#define READY_WAIT_S	120		/* replaying a long log takes time */
#define PUBLISH_MS	20		/* the status published this often */
#define MAX_NODES	16		/* in a published status */
#define DISK_RETRY_MS	1000		/* raft_uv retries a failed write */
#define TRAILING_ONE	4		/* entries kept after a snapshot (one voter) */
#define TRAILING_PEERS	1024		/* ... in a cluster: followers catch up */
#define STALL_WARN_MS	5000		/* a write waiting this long is said */
#define FULL_WAIT_MS	1000		/* ... this long, and no room: full */

struct semlog {
	struct semlog_host	host;		/* the server */
	struct semlog_core	*core;
	struct semlog_port	*port;
	pthread_t		thread;
	uv_loop_t		loop;
	uv_async_t		wake;		/* the inbox has something, or stop */
	uv_timer_t		timer;		/* the core's timers, and publishing */
	struct raft_io		io;
	struct raft		raft;
	struct raft_uv_transport transport;
	raft_id			id;		/* this node */
	char			*bootstrap;	/* --bootstrap, or NULL */
	bool			loop_ok;	/* the loop is made, */
	bool			handles_ok;	/* ... its handles, */
	bool			transport_ok;	/* ... the transport, */
	bool			io_ok;		/* ... raft_uv's io and the port */
	bool			thread_started;
	bool			cluster;	/* peers over TCP (node-id given) */
	bool			peer_tls;	/* ... in TLS (peer_net.h) */
	bool			fresh;		/* a new data directory */
	bool			stopping;	/* the stop was seen */
	uint64_t		next_publish;	/* now_ms of the next publish */
	uint64_t		conf_gen;	/* the port's, as last published */
	enum semlog_disk	disk;		/* as last said in the log */
	bool			refusing;	/* ... writes refused */
	raft_index		commit_seen;	/* the commit index last looked at */
	uint64_t		commit_ms;	/* ... moving (or all committed) then */
	char			*data_dir;
	char			peer[256];	/* HOST:PORT, raft's address for us */
	char			seed_mark[4096];
	uint64_t		next_client;	/* under the state lock */

	/* The inbox, under qlock. */
	pthread_mutex_t		qlock;
	struct semlog_chunk	*qhead;
	struct semlog_chunk	**qtail;
	struct semlog_rreq	*rq_in;		/* newest first */
	struct semlog_change	*ctlq;
	bool			stop;

	/* Read by any thread: the leader serves; the status, under slock. */
	_Atomic bool		serving_pub;
	_Atomic int		disk_pub;	/* enum semlog_disk */
	_Atomic bool		refuse_pub;	/* writes refused (the disk) */
	_Atomic uint64_t	wait_pub;	/* the oldest write's wait, ms */
	_Atomic uint64_t	reads_now;	/* one voter's reads, answered at once */
	pthread_mutex_t		slock;
	Semd__ClusterStatus	st;
	Semd__ClusterNode	st_nodes[MAX_NODES];
	Semd__ClusterNode	*st_nodep[MAX_NODES];
	char			st_addr[MAX_NODES][256];
	char			st_leader[256];
	uint64_t		st_reads, st_rounds;

	/* Start-up, for the main thread. */
	pthread_mutex_t		rlock;
	pthread_cond_t		rcond;
	int			status;		/* 0 starting, 1 ready, else exit code */
	char			err[256];
};

/* Milliseconds of clock id. */
static uint64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The core's monotonic clock (the server's too), in milliseconds. */
static uint64_t thread_now_ms(void *arg)
{
	(void)arg;
	return clock_ms(CLOCK_MONOTONIC);
}

/* Unix time in milliseconds. */
static uint64_t thread_wall_ms(void *arg)
{
	(void)arg;
	return clock_ms(CLOCK_REALTIME);
}

/* The port's clock for timing appends, in microseconds. */
static uint64_t thread_now_us(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Tell the main thread how the start went (1: ready, else an exit code). */
static void thread_started(void *arg, int status, const char *why)
{
	struct semlog *l = arg;

	pthread_mutex_lock(&l->rlock);
	if (l->status == 0) {
		l->status = status;
		if (why != NULL)	/* cut to fit */
			snprintf(l->err, sizeof l->err, "%.*s",
			    (int)sizeof l->err - 1, why);
		pthread_cond_broadcast(&l->rcond);
	}
	pthread_mutex_unlock(&l->rlock);
}

/* The core serves clients, or not: published for the event loops. */
static void thread_serving(void *arg, bool on)
{
	struct semlog *l = arg;

	atomic_store(&l->serving_pub, on);
}

/*
 * A committed entry or a snapshot cannot be applied: the state would not be
 * the log's. The process stops at once with EX_CONFIG (damage, or a bug).
 */
static void thread_fatal(void *arg, const char *why)
{
	(void)arg;
	log_err("log: %s", why);
	_exit(EX_CONFIG);
}

/* The seed is in the log: its mark goes. */
static void thread_seeded(void *arg)
{
	struct semlog *l = arg;

	semlog_dir_seeded(l->seed_mark);
}

/* The hand-over of a stop ended: the loop ends. */
static void thread_stopped(void *arg)
{
	struct semlog *l = arg;

	uv_stop(&l->loop);
}

/* --- a transport for a log of one voter: nobody to talk to ------------------------ */

/* Nothing to set up. */
static int nt_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
	(void)t;
	(void)id;
	(void)address;
	return 0;
}

/* Nobody will connect. */
static int nt_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	(void)t;
	(void)cb;
	return 0;
}

/* Nobody to connect to. */
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

/* Closed at once. */
static void nt_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
	if (cb != NULL)
		cb(t);
}

/*
 * The peer transport: none for one voter; for a cluster, ours (peer_net.h):
 * in TLS with the peer TLS files, else plain with the peer key, or (the
 * configuration allowed it) plain and unauthenticated.
 */
static int thread_transport(struct semlog *l, const struct semlog_config *cfg,
    char *err, size_t errlen)
{
	struct peer_net_config pc = {
		.auth = cfg->peer_tls_cert != NULL ? PEER_AUTH_TLS :
		    cfg->peer_key != NULL ? PEER_AUTH_KEY : PEER_AUTH_NONE,
		.cert_file = cfg->peer_tls_cert, .key_file = cfg->peer_tls_key,
		.ca_file = cfg->peer_tls_ca, .secret_file = cfg->peer_key,
		.bind = cfg->peer_bind,
	};

	l->transport.version = 1;
	if (!l->cluster) {
		l->transport.init = nt_init;
		l->transport.listen = nt_listen;
		l->transport.connect = nt_connect;
		l->transport.close = nt_close;
		return 0;
	}
	if (peer_net_init(&l->transport, &l->loop, &pc, err, errlen) != 0)
		return EX_CONFIG;
	l->peer_tls = pc.auth == PEER_AUTH_TLS;
	if (pc.auth == PEER_AUTH_TLS)
		log_info("log: peer traffic in TLS 1.3, certificate %s, peers "
		    "proved by %s", cfg->peer_tls_cert, cfg->peer_tls_ca);
	else if (pc.auth == PEER_AUTH_KEY)
		log_info("log: peers prove the peer key %s", cfg->peer_key);
	else
		log_warn("log: peers prove nothing (allow-insecure-peers): "
		    "whoever reaches the peer port takes part in the log");
	return 0;
}

/*
 * Parse --bootstrap "ID=HOST:PORT,ID=HOST:PORT,...": every node a voter,
 * HOST an IPv4 literal for plain peers (tls false), or also [IPv6] or a
 * name for TLS peers. 0, or -1 with the reason in err.
 */
static int thread_parse_bootstrap(const char *spec, bool tls,
    struct raft_configuration *conf, char *err, size_t errlen)
{
	char buf[4096], *item, *save = NULL, *eq, *end;
	const char *why;
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
		if ((why = peer_addr_check(eq + 1, tls)) != NULL) {
			snprintf(err, errlen, "bootstrap: node %llu: %s %s", id,
			    eq + 1, why);
			return -1;
		}
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

/* --- the loop -------------------------------------------------------------------- */

/* The state name of raft_state(). */
static const char *thread_state_name(int st)
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

/* The role name of a server. */
static const char *thread_role_name(int role)
{
	return role == RAFT_VOTER ? "voter" : role == RAFT_STANDBY ? "standby" :
	    "spare";
}

/*
 * Publish the node's view of the cluster for the other threads: raft's
 * public view, the configuration the port saw stored, each follower's match
 * index on the leader (raft_match_index), the leader's client address as
 * its LEADER entry said it.
 */
static void thread_publish(struct semlog *l)
{
	struct raft *r = &l->raft;
	const struct raft_configuration *conf = semlog_port_configuration(l->port);
	Semd__ClusterStatus *st = &l->st;
	struct semlog_core_figures fig;
	raft_index last = raft_last_index(r), match;
	const char *laddr = NULL;
	bool leader = raft_state(r) == RAFT_LEADER;
	raft_id lid = 0;
	unsigned int i, n;
	char sm_addr[256];
	uint64_t sm_lid;

	l->host.lock(l->host.arg);
	sm_lid = sm_leader(*l->host.sm, sm_addr, sizeof sm_addr);
	l->host.unlock(l->host.arg);
	semlog_core_figures(l->core, &fig);
	raft_leader(r, &lid, &laddr);
	pthread_mutex_lock(&l->slock);
	semd__cluster_status__init(st);
	st->node_id = l->id;
	st->state = (char *)thread_state_name(raft_state(r));
	st->term = raft_current_term(r);
	st->commit_index = raft_commit_index(r);
	st->applied_index = raft_last_applied(r);
	st->last_index = last;
	st->leader_id = lid;
	snprintf(l->st_leader, sizeof l->st_leader, "%s",
	    lid != 0 && lid == sm_lid ? sm_addr : "");
	st->leader = l->st_leader;
	n = conf->n < MAX_NODES ? conf->n : MAX_NODES;
	for (i = 0; i < n; i++) {
		const struct raft_server *sv = &conf->servers[i];
		Semd__ClusterNode *nd = &l->st_nodes[i];

		semd__cluster_node__init(nd);
		nd->id = sv->id;
		snprintf(l->st_addr[i], sizeof l->st_addr[i], "%s", sv->address);
		nd->address = l->st_addr[i];
		nd->role = (char *)thread_role_name(sv->role);
		if (leader && (sv->id == l->id ||
		    raft_match_index(r, sv->id, &match) == 0)) {
			nd->match_index = sv->id == l->id ? last : match;
			nd->lag = last > nd->match_index ? last - nd->match_index : 0;
		}
		l->st_nodep[i] = nd;
	}
	st->n_nodes = n;
	st->nodes = l->st_nodep;
	l->st_reads = fig.reads_done;
	l->st_rounds = fig.read_rounds;
	pthread_mutex_unlock(&l->slock);
}

/*
 * The indexes and term, after every step of raft: what a status tells of
 * the log is never older than the last step (the rest follows within
 * PUBLISH_MS).
 */
static void thread_publish_indexes(struct semlog *l)
{
	struct raft *r = &l->raft;

	pthread_mutex_lock(&l->slock);
	l->st.term = raft_current_term(r);
	l->st.commit_index = raft_commit_index(r);
	l->st.applied_index = raft_last_applied(r);
	l->st.last_index = raft_last_index(r);
	pthread_mutex_unlock(&l->slock);
}

static void thread_timer_cb(uv_timer_t *t);

/* Arm the timer for the core's next due time (and the next publish). */
static void thread_arm(struct semlog *l, uint64_t due)
{
	uint64_t now = thread_now_ms(l);

	if (l->next_publish < due)
		due = l->next_publish;
	uv_timer_start(&l->timer, thread_timer_cb, due > now ? due - now : 0, 0);
}

/*
 * Has the data directory's file system room for another segment of the
 * log (raft_uv makes each whole before writing to it), and a file for it?
 * avail: the bytes this process may still use there. Unknown: room.
 */
static bool thread_disk_room(const struct semlog *l, uint64_t *avail)
{
	struct statvfs sv;
	bool root = geteuid() == 0;	/* the blocks and inodes kept for root */

	*avail = UINT64_MAX;
	if (statvfs(l->data_dir, &sv) != 0)
		return true;
	*avail = (uint64_t)(root ? sv.f_bfree : sv.f_bavail) * sv.f_frsize;
	return *avail >= SEMLOG_SEGMENT_SIZE &&
	    (sv.f_files == 0 || (root ? sv.f_ffree : sv.f_favail) > 0);
}

/*
 * The disk as the log sees it (every PUBLISH_MS): raft_uv retries a write
 * that fails (no room for the next segment, say) every second without a
 * word, and the appends wait behind it. A write that has waited
 * FULL_WAIT_MS where the file system has no room for a segment is a full
 * disk; one that has waited STALL_WARN_MS a disk that takes no writes
 * (full for a quota, failing, or very slow). Either is said in the log,
 * and its end; a start whose first entry so waits fails, saying why.
 * While the node serves and nothing it proposed commits meanwhile (a log
 * of one voter; a cluster whose other voters do not make a majority
 * either), new writes are refused (semlog_refusal): they would only wait
 * behind the stuck one. A cluster whose other nodes commit goes on: a
 * full disk on one node is a minority failure (core.c).
 */
static void thread_disk_check(struct semlog *l)
{
	uint64_t waited = semlog_port_append_wait_us(l->port) / 1000, avail = 0;
	uint64_t now = thread_now_ms(l);
	raft_index commit = raft_commit_index(&l->raft);
	enum semlog_disk disk = SEMLOG_DISK_OK;
	bool refuse;

	/* Full stays full until the write goes through (no second word). */
	if (waited >= FULL_WAIT_MS && (l->disk == SEMLOG_DISK_FULL ||
	    !thread_disk_room(l, &avail)))
		disk = SEMLOG_DISK_FULL;
	else if (waited >= STALL_WARN_MS)
		disk = SEMLOG_DISK_STALLED;
	if (commit != l->commit_seen || commit >= raft_last_index(&l->raft)) {
		l->commit_seen = commit;
		l->commit_ms = now;
	}
	refuse = disk != SEMLOG_DISK_OK && atomic_load(&l->serving_pub) &&
	    now - l->commit_ms >= FULL_WAIT_MS;
	atomic_store(&l->wait_pub, waited);
	atomic_store(&l->disk_pub, (int)disk);
	atomic_store(&l->refuse_pub, refuse);
	semlog_core_set_stalled(l->core, refuse);
	if (disk != l->disk && disk == SEMLOG_DISK_FULL) {
		thread_started(l, EX_IOERR, "the data directory's disk is full "
		    "(no room for the log's next segment): free some space "
		    "there and start again");
		log_warn("log: the data directory's disk is full (%llu kB free "
		    "in %s, a segment of the log takes %u kB): a write has "
		    "waited %llu ms, and is tried again every second",
		    (unsigned long long)avail / 1024, l->data_dir,
		    SEMLOG_SEGMENT_SIZE / 1024, (unsigned long long)waited);
	} else if (disk != l->disk && disk == SEMLOG_DISK_STALLED) {
		thread_started(l, EX_IOERR, "the data directory's disk takes "
		    "no writes (is it full?): free some space there and start "
		    "again");
		log_warn("log: a write to the disk has waited %llu s (is it "
		    "full, or slow?); a failed write is tried again every second",
		    (unsigned long long)waited / 1000);
	} else if (disk != l->disk) {
		log_notice("log: the disk takes writes again");
	}
	if (refuse && !l->refusing)
		log_warn("log: writes are refused: nothing commits while the "
		    "disk takes no writes (reads and keepalives are answered)");
	else if (!refuse && l->refusing)
		log_notice("log: writes are taken again");
	l->disk = disk;
	l->refusing = refuse;
}

/* Due: the core's timers; the status published, the disk looked at. */
static void thread_timer_cb(uv_timer_t *t)
{
	struct semlog *l = t->data;
	uint64_t due = semlog_core_tick(l->core), now = thread_now_ms(l);

	if (now >= l->next_publish) {
		thread_publish(l);
		thread_disk_check(l);
		l->next_publish = now + PUBLISH_MS;
	}
	thread_arm(l, due);
}

/*
 * Raft moved (the port says so): the core follows; its timers re-armed.
 * Not once the loop is ending (raft's close completes what it had).
 */
static void thread_step(void *arg)
{
	struct semlog *l = arg;

	if (l->stopping)
		return;
	semlog_core_step(l->core);
	if (semlog_port_configuration_gen(l->port) != l->conf_gen) {
		/* The members changed: the whole status now. */
		l->conf_gen = semlog_port_configuration_gen(l->port);
		thread_publish(l);
	} else {
		thread_publish_indexes(l);
	}
	thread_arm(l, semlog_core_due(l->core));
}

/* The inbox's reads, oldest first. */
static struct semlog_rreq *thread_reads_reverse(struct semlog_rreq *in)
{
	struct semlog_rreq *r, *rev = NULL;

	while ((r = in) != NULL) {
		in = r->next;
		r->next = rev;
		rev = r;
	}
	return rev;
}

/* The event loops filled the inbox, or it is time to stop. */
static void thread_wake_cb(uv_async_t *a)
{
	struct semlog *l = a->data;
	struct semlog_change *ch, *next;
	struct semlog_chunk *q;
	struct semlog_rreq *rq;
	bool stop;

	pthread_mutex_lock(&l->qlock);
	stop = l->stop;
	ch = l->ctlq;
	l->ctlq = NULL;
	q = l->qhead;
	l->qhead = NULL;
	l->qtail = &l->qhead;
	rq = l->rq_in;
	l->rq_in = NULL;
	pthread_mutex_unlock(&l->qlock);
	if (stop) {
		/* What came for a stopping node is answered by nobody. */
		for (; ch != NULL; ch = next) {
			next = ch->next;
			free(ch);
		}
		semlog_chunks_free(q);
		while (rq != NULL) {
			struct semlog_rreq *r = rq;

			rq = r->next;
			free(r);
		}
		if (!l->stopping) {
			l->stopping = true;
			if (!semlog_core_stop(l->core))
				uv_stop(&l->loop);
			/* else the hand-over ends it (thread_stopped) */
		}
		return;
	}
	for (; ch != NULL; ch = next) {
		next = ch->next;
		ch->next = NULL;
		semlog_core_change(l->core, ch);
	}
	semlog_core_submit(l->core, q);
	if (rq != NULL)
		semlog_core_reads(l->core, thread_reads_reverse(rq));
	thread_arm(l, semlog_core_tick(l->core));
}

/* Bootstrap a new log (one voter, or --bootstrap's cluster). */
static int thread_bootstrap(struct semlog *l)
{
	struct raft_configuration conf;
	char why[sizeof l->err] = "";	/* not l->err: thread_started writes it */
	char msg[sizeof l->err + 32];
	int rv;

	raft_configuration_init(&conf);
	rv = l->cluster ? thread_parse_bootstrap(l->bootstrap, l->peer_tls,
	    &conf, why, sizeof why) :
	    raft_configuration_add(&conf, 1, "local", RAFT_VOTER);
	if (rv == 0)
		rv = raft_bootstrap(&l->raft, &conf);
	raft_configuration_close(&conf);
	if (rv != 0) {
		snprintf(msg, sizeof msg, "raft bootstrap: %s", why[0] ? why :
		    raft_errmsg(&l->raft));
		thread_started(l, EX_CONFIG, msg);
	}
	return rv;
}

/* Did raft fail to start because io_setup(2) found no kernel AIO slot
 * (the host's fs.aio-max-nr taken: EAGAIN, or 0.22's writer's TOOMANY)? */
static bool thread_aio_refused(int rv, const char *errmsg)
{
	return rv == RAFT_TOOMANY || (strstr(errmsg, "io_setup") != NULL &&
	    strstr(errmsg, "temporarily unavailable") != NULL);
}

/* The log thread: load, then follow or lead until stopped. */
static void *thread_main(void *arg)
{
	struct semlog *l = arg;
	char msg[sizeof l->err + 64];
	int rv;

	rv = raft_init(&l->raft, &l->io, semlog_core_fsm(l->core), l->id,
	    l->peer);
	if (rv == RAFT_NOSPACE) {
		/* raft_uv prepares a segment of the log first: no room. */
		thread_started(l, EX_IOERR, "the data directory's disk is full "
		    "(no room for the log's next segment): free some space "
		    "there and start again");
		goto handles;
	}
	if (rv != 0 && thread_aio_refused(rv, raft_errmsg(&l->raft))) {
		/* libraft writes with kernel AIO, and has no other way */
		snprintf(msg, sizeof msg, "no kernel async I/O slot (%s): "
		    "raise the host's fs.aio-max-nr (sysctl -w "
		    "fs.aio-max-nr=1048576; /proc/sys/fs/aio-nr is what is "
		    "taken) or stop what holds them", raft_errmsg(&l->raft));
		thread_started(l, EX_TEMPFAIL, msg);
		goto handles;
	}
	if (rv != 0) {
		snprintf(msg, sizeof msg, "raft: %s (%s)", raft_strerror(rv),
		    raft_errmsg(&l->raft));
		thread_started(l, EX_CONFIG, msg);
		goto handles;
	}
	semlog_core_attach(l->core, &l->raft, l->port);
	if (l->fresh && (!l->cluster || l->bootstrap != NULL) &&
	    thread_bootstrap(l) != 0)
		goto close;
	rv = raft_start(&l->raft);
	if (rv != 0 && thread_aio_refused(rv, raft_errmsg(&l->raft))) {
		snprintf(msg, sizeof msg, "no kernel async I/O slot (%s): "
		    "raise the host's fs.aio-max-nr (sysctl) or stop what "
		    "holds them", raft_errmsg(&l->raft));
		thread_started(l, EX_TEMPFAIL, msg);
		goto close;
	}
	if (rv != 0) {
		snprintf(msg, sizeof msg, "the data directory cannot be loaded "
		    "(damaged?): %s", raft_errmsg(&l->raft));
		thread_started(l, EX_CONFIG, msg);
		goto close;
	}
	if (!l->cluster && raft_state(&l->raft) != RAFT_LEADER) {
		thread_started(l, EX_CONFIG, "this node is not the log's only "
		    "voter");
		goto close;
	}
	/* A cluster node is ready once loaded: the leader is found later. */
	if (l->cluster)
		thread_started(l, 1, NULL);
	semlog_core_step(l->core);
	thread_publish(l);
	thread_arm(l, semlog_core_tick(l->core));
	uv_run(&l->loop, UV_RUN_DEFAULT);
close:
	l->stopping = true;
	atomic_store(&l->serving_pub, false);
	raft_close(&l->raft, NULL);
handles:
	l->stopping = true;
	uv_close((uv_handle_t *)&l->wake, NULL);
	uv_close((uv_handle_t *)&l->timer, NULL);
	l->handles_ok = false;
	/* Let raft and the handles finish closing. */
	uv_run(&l->loop, UV_RUN_DEFAULT);
	return NULL;
}

/* --- the interface --------------------------------------------------------------- */

/* The log's own copy of what it keeps of cfg; false without memory. */
static bool thread_config(struct semlog *l, const struct semlog_config *cfg)
{
	l->id = cfg->node_id != 0 ? cfg->node_id : 1;
	l->cluster = cfg->node_id != 0;
	snprintf(l->peer, sizeof l->peer, "%s", l->cluster ? cfg->peer_listen :
	    "local");
	if ((l->data_dir = strdup(cfg->data_dir)) == NULL)
		return false;
	return cfg->bootstrap == NULL ||
	    (l->bootstrap = strdup(cfg->bootstrap)) != NULL;
}

/* Check the data directory, start the log thread, wait until it serves. */
int semlog_start(struct semlog **lp, const struct semlog_config *cfg,
    const struct semlog_host *host, char *err, size_t errlen)
{
	struct semlog_core_config cc;
	struct semlog_env env;
	struct timespec ts;
	struct semlog *l;
	bool fresh;
	int r;

	*lp = NULL;
	if ((l = calloc(1, sizeof *l)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return EX_OSERR;
	}
	pthread_mutex_init(&l->qlock, NULL);
	pthread_mutex_init(&l->slock, NULL);
	pthread_mutex_init(&l->rlock, NULL);
	pthread_cond_init(&l->rcond, NULL);
	l->host = *host;
	l->qtail = &l->qhead;
	semd__cluster_status__init(&l->st);
	l->st.state = (char *)"unavailable";
	l->st.leader = l->st_leader;
	*lp = l;
	if (!thread_config(l, cfg)) {
		snprintf(err, errlen, "out of memory");
		return EX_OSERR;
	}
	if ((r = semlog_dir_prepare(cfg->data_dir, l->id, cfg->seed != NULL,
	    &fresh, l->seed_mark, sizeof l->seed_mark, err, errlen)) != 0)
		return r;
	l->fresh = fresh;
	if (uv_loop_init(&l->loop) != 0) {
		snprintf(err, errlen, "cannot make the log's event loop");
		return EX_OSERR;
	}
	l->loop_ok = true;
	if (uv_async_init(&l->loop, &l->wake, thread_wake_cb) != 0) {
		snprintf(err, errlen, "cannot make the log's event loop");
		return EX_OSERR;
	}
	/* uv_timer_init cannot fail. */
	(void)uv_timer_init(&l->loop, &l->timer);
	l->handles_ok = true;
	l->wake.data = l;
	l->timer.data = l;
	if ((r = thread_transport(l, cfg, err, errlen)) != 0)
		return r;
	l->transport_ok = true;
	cc = (struct semlog_core_config){
		.id = l->id, .cluster = l->cluster, .peer_tls = l->peer_tls,
		.grace_ms = cfg->restart_grace_ms,
		.snapshot_every = cfg->snapshot_every,
		.snapshot_trailing = l->cluster ? TRAILING_PEERS : TRAILING_ONE,
		.election_ms = cfg->election_timeout_ms,
		.advertise = cfg->advertise, .seed = cfg->seed,
		.seed_len = cfg->seed_len, .seed_now = cfg->seed_now,
	};
	env = (struct semlog_env){
		.arg = l, .now_ms = thread_now_ms, .wall_ms = thread_wall_ms,
		.serving = thread_serving, .started = thread_started,
		.fatal = thread_fatal, .seeded = thread_seeded,
		.stopped = thread_stopped,
	};
	if ((l->core = semlog_core_new(&cc, host, &env)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return EX_OSERR;
	}
	r = raft_uv_init(&l->io, &l->loop, cfg->data_dir, &l->transport);
	if (r != 0) {
		snprintf(err, errlen, "raft I/O on %s: %s", cfg->data_dir,
		    l->io.errmsg);
		return EX_CANTCREAT;
	}
	if ((l->port = semlog_port_new(&l->io, l->id)) == NULL) {
		snprintf(err, errlen, "raft I/O: out of memory, or too many logs "
		    "in one process");
		raft_uv_close(&l->io);
		return EX_SOFTWARE;
	}
	l->io_ok = true;
	semlog_port_set_step(l->port, thread_step, l);
	semlog_port_set_clock(l->port, thread_now_us, l);
	/*
	 * raft_uv's "auto-recovery" answers a corrupt segment by deleting it
	 * and every later one: committed entries gone without a word. A
	 * damaged log stops semd instead (a torn write at the end of the open
	 * segment, what a crash leaves, is still read up to the torn entry).
	 */
	raft_uv_set_auto_recovery(&l->io, false);
	raft_uv_set_segment_size(&l->io, SEMLOG_SEGMENT_SIZE);
	/*
	 * A write that fails (the disk full) is retried by raft_uv, not
	 * failed: the log waits, retrying every second, until it goes
	 * through (a cluster's other nodes commit meanwhile: core.c).
	 */
	raft_uv_set_disk_retry(&l->io, DISK_RETRY_MS);
	if (pthread_create(&l->thread, NULL, thread_main, l) != 0) {
		snprintf(err, errlen, "cannot start the log's thread");
		return EX_OSERR;
	}
	l->thread_started = true;
	pthread_setname_np(l->thread, "semd/log");
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += READY_WAIT_S;
	pthread_mutex_lock(&l->rlock);
	while (l->status == 0 &&
	    pthread_cond_timedwait(&l->rcond, &l->rlock, &ts) == 0)
		;
	r = l->status;
	if (r != 1)
		snprintf(err, errlen, "%s", r == 0 ?
		    "the log did not come up in time" : l->err);
	pthread_mutex_unlock(&l->rlock);
	if (r == 0)
		return EX_SOFTWARE;
	return r == 1 ? 0 : r;
}

/* Stop the log thread and free the log. */
void semlog_stop(struct semlog *l)
{
	struct semlog_change *ch;
	struct semlog_rreq *r;

	if (l == NULL)
		return;
	if (l->thread_started) {
		pthread_mutex_lock(&l->qlock);
		l->stop = true;
		pthread_mutex_unlock(&l->qlock);
		uv_async_send(&l->wake);
		pthread_join(l->thread, NULL);
	} else if (l->handles_ok) {
		uv_close((uv_handle_t *)&l->wake, NULL);
		uv_close((uv_handle_t *)&l->timer, NULL);
		uv_run(&l->loop, UV_RUN_DEFAULT);
	}
	if (l->io_ok) {
		raft_uv_close(&l->io);
		semlog_port_free(l->port);
	}
	if (l->transport_ok && l->cluster)
		peer_net_free(&l->transport);
	if (l->loop_ok)
		uv_loop_close(&l->loop);
	semlog_core_free(l->core);
	semlog_chunks_free(l->qhead);
	while ((r = l->rq_in) != NULL) {
		l->rq_in = r->next;
		free(r);
	}
	while ((ch = l->ctlq) != NULL) {
		l->ctlq = ch->next;
		free(ch);
	}
	pthread_mutex_destroy(&l->qlock);
	pthread_mutex_destroy(&l->slock);
	pthread_mutex_destroy(&l->rlock);
	pthread_cond_destroy(&l->rcond);
	free(l->bootstrap);
	free(l->data_dir);
	free(l);
}

/* Queue a batch's commands in the inbox; wake the log thread. */
void semlog_submit(struct semlog *l, struct sm_batch *b)
{
	struct semlog_chunk *q;

	if (b->len == 0)
		return;
	/* A node that does not lead proposes nothing: what it had goes. */
	if (!atomic_load(&l->serving_pub)) {
		sm_batch_reset(b);
		return;
	}
	q = b->failed ? NULL : semlog_chunk_new(b->p, b->len);
	sm_batch_reset(b);
	if (q == NULL) {
		log_err("log: out of memory queueing commands: some were lost");
		return;
	}
	pthread_mutex_lock(&l->qlock);
	*l->qtail = q;
	l->qtail = &q->next;
	pthread_mutex_unlock(&l->qlock);
	uv_async_send(&l->wake);
}

/* A read without an entry: queued, answered at once, or not. */
enum semlog_read semlog_read(struct semlog *l, uint64_t cid,
    const struct sm_caller *who, const uint8_t *data, size_t len)
{
	struct semlog_rreq *r;

	if (!atomic_load(&l->serving_pub))
		return SEMLOG_READ_NO;
	/*
	 * A log of one voter without peers has no other leader, and answers
	 * a change only once applied: the state as it stands holds every
	 * change acknowledged. The loop the read came to answers it at once.
	 */
	if (!l->cluster) {
		atomic_fetch_add_explicit(&l->reads_now, 1, memory_order_relaxed);
		return SEMLOG_READ_NOW;
	}
	if ((r = semlog_rreq_new(cid, who, data, len)) == NULL)
		return SEMLOG_READ_NO;
	pthread_mutex_lock(&l->qlock);
	r->next = l->rq_in;
	l->rq_in = r;
	pthread_mutex_unlock(&l->qlock);
	uv_async_send(&l->wake);
	return SEMLOG_READ_QUEUED;
}

/* Propose new settings (a reload). */
void semlog_reconfigure(struct semlog *l, const struct sm_config *cfg)
{
	struct sm_batch b;

	sm_batch_init(&b);
	sm_batch_config(&b, cfg);
	semlog_submit(l, &b);
	sm_batch_free(&b);
}

/* A new client id (under the state lock). */
uint64_t semlog_client_id(struct semlog *l)
{
	return (uint64_t)l->id << 48 | ++l->next_client;
}

/*
 * The leader answers a request of client id without an entry (under the
 * state lock, on an event loop): true when it serves and the client has a
 * session, which is then heard now, by this leader's clock (the rule of
 * semlog_core_heard_locked, with what the log thread published).
 */
bool semlog_heard_locked(struct semlog *l, uint64_t id)
{
	return atomic_load(&l->serving_pub) &&
	    sm_heard_local(*l->host.sm, id, thread_now_ms(l));
}

/* The node's cluster figures for Stats (any thread). */
void semlog_counters(struct semlog *l, struct sm_local_counters *out)
{
	const char *st;

	if (l == NULL)
		return;
	pthread_mutex_lock(&l->slock);
	st = l->st.state != NULL ? l->st.state : "";
#define LC(nm, v) do {							\
	out->name[out->n] = (nm);					\
	out->value[out->n++] = (v);					\
} while (0)
	LC("cluster_node_id", l->id);
	LC("cluster_leader", strcmp(st, "leader") == 0);
	LC("cluster_term", l->st.term);
	LC("cluster_commit_index", l->st.commit_index);
	LC("cluster_applied_index", l->st.applied_index);
	LC("cluster_last_index", l->st.last_index);
	LC("cluster_leader_id", l->st.leader_id);
	LC("cluster_nodes", l->st.n_nodes);
	LC("cluster_reads", l->st_reads + atomic_load(&l->reads_now));
	LC("cluster_read_rounds", l->st_rounds);
#undef LC
	pthread_mutex_unlock(&l->slock);
}

/* Is this node the leader, serving clients? (any thread) */
bool semlog_serving(struct semlog *l)
{
	return atomic_load(&l->serving_pub);
}

/* The leader as this node knows it: its id and client address. */
uint64_t semlog_leader(struct semlog *l, char *addr, size_t len)
{
	uint64_t id;

	pthread_mutex_lock(&l->slock);
	id = l->st.leader_id;
	snprintf(addr, len, "%s", l->st_leader);
	pthread_mutex_unlock(&l->slock);
	return id;
}

/*
 * This node's view for readiness: the published status (PUBLISH_MS old at
 * most) and what the port heard from a leader.
 */
void semlog_health(struct semlog *l, struct semlog_health *h)
{
	uint64_t heard = 0, snap = 0;

	memset(h, 0, sizeof *h);
	if (l->port != NULL)
		semlog_port_heard(l->port, &heard, &snap);
	h->cluster = l->cluster;
	h->serving = semlog_serving(l);
	pthread_mutex_lock(&l->slock);
	h->leader = l->st.state != NULL && strcmp(l->st.state, "leader") == 0;
	h->node_id = l->id;
	h->leader_id = l->st.leader_id;
	h->leader_addr = l->st_leader[0] != '\0';
	h->term = l->st.term;
	h->applied = l->st.applied_index;
	h->commit = l->st.commit_index > heard ? l->st.commit_index : heard;
	pthread_mutex_unlock(&l->slock);
	h->snapshot = snap;
	h->disk = (enum semlog_disk)atomic_load(&l->disk_pub);
	h->refusing = atomic_load(&l->refuse_pub);
}

/* The log's disk work, as the port counted it; the disk as last seen. */
void semlog_io_stats(struct semlog *l, struct semlog_io_stats *out)
{
	semlog_port_stats(l->port, out);
	out->disk = (enum semlog_disk)atomic_load(&l->disk_pub);
	out->refusing = atomic_load(&l->refuse_pub);
	out->write_wait_ms = atomic_load(&l->wait_pub);
}

/* Why writes are refused now (thread_disk_check), or NULL (any thread). */
const char *semlog_refusal(struct semlog *l)
{
	if (!atomic_load_explicit(&l->refuse_pub, memory_order_relaxed))
		return NULL;
	return atomic_load(&l->disk_pub) == SEMLOG_DISK_FULL ?
	    "the data directory's disk is full: writes are refused until "
	    "space is freed there (reads are answered)" :
	    "the data directory's disk takes no writes (full, or failing): "
	    "writes are refused until it does (reads are answered)";
}

/* The published cluster status, copied as a Reply body. */
int semlog_status(struct semlog *l, Semd__Reply *r)
{
	Semd__ClusterStatus *copy;
	uint8_t *buf;
	size_t len;

	pthread_mutex_lock(&l->slock);
	len = semd__cluster_status__get_packed_size(&l->st);
	buf = malloc(len + 1);
	if (buf != NULL)
		semd__cluster_status__pack(&l->st, buf);
	pthread_mutex_unlock(&l->slock);
	if (buf == NULL)
		return -ENOMEM;
	copy = semd__cluster_status__unpack(NULL, len, buf);
	free(buf);
	if (copy == NULL)
		return -ENOMEM;
	r->body_case = SEMD__REPLY__BODY_CLUSTER;
	r->cluster = copy;
	return 0;
}

/* A cluster change for the log thread; answered from there. */
int semlog_cluster_change(struct semlog *l, uint64_t cid, uint64_t req_id,
    const Semd__Cluster *cl)
{
	struct semlog_change *ch = calloc(1, sizeof *ch);

	if (ch == NULL)
		return -ENOMEM;
	ch->cid = cid;
	ch->req_id = req_id;
	ch->action = cl->action;
	ch->node = cl->node_id;
	/* Too long: cut with "...", which no address ends with (refused). */
	if (snprintf(ch->address, sizeof ch->address, "%s", cl->address) >=
	    (int)sizeof ch->address)
		snprintf(ch->address, sizeof ch->address, "%.64s...",
		    cl->address);
	pthread_mutex_lock(&l->qlock);
	ch->next = l->ctlq;
	l->ctlq = ch;
	pthread_mutex_unlock(&l->qlock);
	uv_async_send(&l->wake);
	return 0;
}
