/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/durable.c - the raft log under the state machine (see durable.h):
 * raft's set-up, its thread and libuv loop, the transports (none for one
 * voter, libraft's TCP without Nagle or ours in TLS for a cluster), the data
 * directory, start and stop. Its other parts: durable-int.h; peer TLS:
 * peer_tls.h.
 *
 * The data directory holds raft's files (segments, metadata, snapshots,
 * written by raft_uv) and semd.meta, which says whose they are: a format
 * line and the node id. A directory with files but no semd.meta, or another
 * node's, is refused (EX_CONFIG), as is one raft cannot load.
 *
 * Threads: everything raft is done on the raft thread's libuv loop. The
 * queue of commands from the event loops is under qlock; the state machine
 * under the server's state lock, taken to apply an entry, snapshot or
 * restore (durable_apply.c).
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

#include "daemon/config.h"
#include "daemon/log/durable.h"
#include "daemon/log/raftguard.h"
#include "daemon/logging.h"
#include "daemon/log/peer_tls.h"
#include "daemon/log/durable-int.h"

static uint64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Unix time in milliseconds. */
uint64_t d_wall_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

/* Monotonic time in milliseconds (the server's clock too). */
uint64_t d_now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* Tell the main thread how the start went (status 1: ready, else an exit code). */
void d_started(struct durable *d, int status, const char *fmt, ...)
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

/*
 * The peer transport: none for one voter; for a cluster, ours in TLS
 * (peer_tls.h) with peer-tls-*, else libraft's TCP without Nagle.
 */
static int d_transport(struct durable *d, const struct semd_config *cfg,
    char *err, size_t errlen)
{
	const char *bind = cfg->peer_bind != NULL ? cfg->peer_bind + 4 : NULL;
	struct peer_tls_config pc = { cfg->peer_tls_cert, cfg->peer_tls_key,
	    cfg->peer_tls_ca, bind };
	int r;

	if (!d->cluster) {
		d->transport.init = nt_init;
		d->transport.listen = nt_listen;
		d->transport.connect = nt_connect;
		d->transport.close = nt_close;
		return 0;
	}
	if (cfg->peer_tls_cert != NULL) {
		if (peer_tls_init(&d->transport, &d->loop, &pc, err, errlen) != 0)
			return EX_CONFIG;
		d->peer_tls = true;
		log_info("log: peer traffic in TLS 1.3, certificate %s, peers "
		    "proved by %s", cfg->peer_tls_cert, cfg->peer_tls_ca);
		return 0;
	}
	r = raft_uv_tcp_init(&d->transport, &d->loop);
	if (r == 0 && bind != NULL)
		r = raft_uv_tcp_set_bind_address(&d->transport, bind);
	if (r != 0) {
		snprintf(err, errlen, "raft TCP transport: %s", raft_strerror(r));
		return EX_OSERR;
	}
	tcp_listen = d->transport.listen;
	tcp_connect = d->transport.connect;
	d->transport.listen = nd_listen;
	d->transport.connect = nd_connect;
	return 0;
}

/* Close the loop's own handles (its uv_run then runs them out). */
static void d_close_handles(struct durable *d)
{
	uv_close((uv_handle_t *)&d->wake, NULL);
	uv_close((uv_handle_t *)&d->deadline, NULL);
	uv_close((uv_handle_t *)&d->poll, NULL);
	uv_close((uv_handle_t *)&d->rcheck, NULL);
	uv_close((uv_handle_t *)&d->rtimer, NULL);
}

/* The raft thread: load, then follow or lead until stopped. */
static void *d_main(void *arg)
{
	struct durable *d = arg;
	struct raft_configuration conf;
	char why[sizeof d->err] = "";	/* not d->err: d_started writes it */
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
		raft_set_election_timeout(&d->raft, d->election_ms);
		raft_set_heartbeat_timeout(&d->raft,
		    d->election_ms / 10 > 10 ? d->election_ms / 10 : 10);
		raft_set_pre_vote(&d->raft, true);
	}
	if (d->fresh && (!d->cluster || d->bootstrap != NULL)) {
		raft_configuration_init(&conf);
		rv = d->cluster ? durable_parse_bootstrap(d->bootstrap,
		    d->peer_tls, &conf, why, sizeof why) :
		    raft_configuration_add(&conf, NODE_ID, "local", RAFT_VOTER);
		if (rv == 0)
			rv = raft_bootstrap(&d->raft, &conf);
		raft_configuration_close(&conf);
		if (rv != 0) {
			d_started(d, EX_CONFIG, "raft bootstrap: %s", why[0] ?
			    why : raft_errmsg(&d->raft));
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
	d_close_handles(d);
	/* Let raft and the handles finish closing. */
	uv_run(&d->loop, UV_RUN_DEFAULT);
	raft_uv_close(&d->io);
	raftguard_remove(&d->io);
	if (d->peer_tls)
		peer_tls_free(&d->transport);
	else if (d->cluster)
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

/*
 * --restore seeds an empty directory only; a directory whose seed did not
 * reach its log (SEED_MARK is there: semd stopped first) has no state to
 * serve, and is refused until emptied and seeded again.
 */
static int seed_check(const char *dir, bool empty, bool seeding, char *err,
    size_t errlen)
{
	char path[4096];
	struct stat st;

	if (seeding && !empty) {
		snprintf(err, errlen, "--restore seeds an empty data directory "
		    "only, and %s is not empty: give a new one", dir);
		return EX_CANTCREAT;
	}
	snprintf(path, sizeof path, "%s/%s", dir, SEED_MARK);
	if (!seeding && lstat(path, &st) == 0) {
		snprintf(err, errlen, "the restore into %s did not finish (semd "
		    "stopped before the backup's state was in the log): empty "
		    "the directory and run semd --restore again", dir);
		return EX_CONFIG;
	}
	return 0;
}

/* Mark dir as seeded but not yet restored (SEED_MARK, made durable). */
static int seed_mark(const char *dir, char *err, size_t errlen)
{
	char path[4096];
	int fd, dfd;

	snprintf(path, sizeof path, "%s/%s", dir, SEED_MARK);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || fsync(fd) != 0) {
		snprintf(err, errlen, "cannot write %s: %s", path,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		return EX_CANTCREAT;
	}
	close(fd);
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
	return 0;
}

/* The seed is applied: forget it; the mark goes (raft thread). */
void d_seeded(struct durable *d)
{
	free(d->seed);
	d->seed = NULL;
	d->seed_len = 0;
	if (unlink(d->seed_mark) != 0 && errno != ENOENT)
		log_warn("log: cannot remove %s: %s", d->seed_mark,
		    strerror(errno));
}

/* Check or make the directory; start the raft thread; wait until it serves. */
int durable_start(struct durable **dp, const struct semd_config *cfg,
    const struct durable_host *host, const char *advertise, char *err,
    size_t errlen)
{
	const char *dir = cfg->data_dir;
	struct timespec ts;
	struct durable *d;
	struct stat st;
	bool bare = false;
	raft_id id;
	int r, empty;

	*dp = NULL;
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
	id = cfg->node_id != 0 ? cfg->node_id : NODE_ID;
	if ((r = seed_check(dir, empty, host->seed != NULL, err, errlen)) != 0)
		return r;
	if (empty && (r = meta_write(dir, id, err, errlen)) != 0)
		return r;
	if (host->seed != NULL && (r = seed_mark(dir, err, errlen)) != 0)
		return r;
	if (!empty && ((r = meta_check(dir, id, err, errlen)) != 0 ||
	    (r = metadata_check(dir, &bare, err, errlen)) != 0 ||
	    (r = segments_check(dir, err, errlen)) != 0))
		return r;
	d = calloc(1, sizeof *d);
	if (d == NULL || (cfg->bootstrap != NULL &&
	    (d->bootstrap = strdup(cfg->bootstrap)) == NULL)) {
		free(d);
		snprintf(err, errlen, "out of memory");
		return EX_OSERR;
	}
	d->host = *host;
	d->host.seed = NULL;	/* the host's bytes are not kept */
	if (host->seed != NULL) {
		if ((d->seed = malloc(host->seed_len)) == NULL) {
			free(d->bootstrap);
			free(d);
			snprintf(err, errlen, "out of memory");
			return EX_OSERR;
		}
		memcpy(d->seed, host->seed, host->seed_len);
		d->seed_len = host->seed_len;
		d->seed_now = host->seed_now;
	}
	snprintf(d->seed_mark, sizeof d->seed_mark, "%s/%s", dir, SEED_MARK);
	d->id = id;
	d->cluster = cfg->node_id != 0;
	snprintf(d->peer, sizeof d->peer, "%s", d->cluster ?
	    cfg->peer_listen + 4 : "local");
	snprintf(d->advertise, sizeof d->advertise, "%s", advertise);
	d->fresh = empty || bare;
	d->grace_ms = cfg->restart_grace_ms;
	d->snapshot_every = cfg->snapshot_every;
	d->election_ms = cfg->election_timeout_ms;
	host->lock(host->arg);
	d->smcfg = host->sm_config(host->arg);
	host->unlock(host->arg);
	pthread_mutex_init(&d->qlock, NULL);
	pthread_mutex_init(&d->slock, NULL);
	pthread_mutex_init(&d->rlock, NULL);
	semd__cluster_status__init(&d->st);
	d->st.state = (char *)"unavailable";
	d->st.leader = d->st_leader;
	pthread_cond_init(&d->rcond, NULL);
	d->qtail = &d->qhead;
	*dp = d;
	if (uv_loop_init(&d->loop) != 0 ||
	    uv_async_init(&d->loop, &d->wake, d_wake_cb) != 0 ||
	    uv_timer_init(&d->loop, &d->deadline) != 0 ||
	    uv_timer_init(&d->loop, &d->poll) != 0 ||
	    uv_check_init(&d->loop, &d->rcheck) != 0 ||
	    uv_timer_init(&d->loop, &d->rtimer) != 0) {
		snprintf(err, errlen, "cannot make the log's event loop");
		return EX_OSERR;
	}
	d->wake.data = d;
	d->deadline.data = d;
	d->rcheck.data = d;
	d->rtimer.data = d;
	d->rq_tail = &d->rq;
	if ((r = d_transport(d, cfg, err, errlen)) != 0)
		return r;
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
	/*
	 * libraft 0.15 crashes on entries it compacted away: see raftguard.h.
	 * The guard also times the appends and counts the snapshots (metrics).
	 */
	if (raftguard_install(&d->io) != 0 || raftguard_measure(&d->io) != 0) {
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
void durable_stop(struct durable *d)
{
	if (d == NULL)
		return;
	if (d->thread_started) {
		pthread_mutex_lock(&d->qlock);
		d->stop = true;
		pthread_mutex_unlock(&d->qlock);
		uv_async_send(&d->wake);
		pthread_join(d->thread, NULL);
	} else {
		d_close_handles(d);
		uv_run(&d->loop, UV_RUN_DEFAULT);
		if (d->peer_tls)
			peer_tls_free(&d->transport);	/* never listened */
	}
	uv_loop_close(&d->loop);
	d_reads_free(d);
	while (d->qhead != NULL) {
		struct qchunk *q = d->qhead;

		d->qhead = q->next;
		free(q);
	}
	pthread_mutex_destroy(&d->qlock);
	pthread_mutex_destroy(&d->slock);
	pthread_mutex_destroy(&d->rlock);
	pthread_cond_destroy(&d->rcond);
	free(d->bootstrap);
	free(d->seed);
	free(d);
}
