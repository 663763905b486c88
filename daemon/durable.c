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

#include "daemon/durable.h"
#include "daemon/log.h"
#include "daemon/server.h"

#define META_NAME	"semd.meta"
#define META_FORMAT	"semd-data 1"
#define NODE_ID		1		/* one voter */
#define MAX_INFLIGHT	4		/* entries proposed and not applied */
#define MAX_ENTRY	(256u << 10)	/* bytes of commands in one entry, about */
#define READY_WAIT_S	120		/* replaying a long log takes time */
#define SNAP_BYTES	(8u << 20)	/* log bytes kept in memory before a snapshot */
#define SNAP_NEVER	UINT32_MAX	/* raft's own threshold: we say when */
#define SNAP_TRAILING	4		/* entries kept after a snapshot (one voter) */
#define SEGMENT_SIZE	(8u << 20)	/* raft_uv's open segments, made whole */

struct durable {
	struct server		*srv;
	pthread_t		thread;
	bool			thread_started;
	uv_loop_t		loop;
	uv_async_t		wake;		/* commands queued, or stop */
	uv_timer_t		deadline;	/* the state's earliest deadline */
	struct raft_io		io;
	struct raft_fsm		fsm;
	struct raft		raft;
	struct raft_uv_transport transport;
	bool			fresh;		/* a new data directory */
	uint32_t		grace_ms;
	uint32_t		snapshot_every;
	struct sm_config	smcfg;		/* the settings proposed at start */

	/* Under qlock: commands from the event loops, oldest first. */
	pthread_mutex_t		qlock;
	struct qchunk		*qhead;
	struct qchunk		**qtail;
	bool			stop;

	/* The raft thread's own. */
	unsigned int		inflight;
	bool			tick_out;	/* an empty entry is on its way */
	bool			serving;	/* the restart entry is applied */
	uint64_t		time_base;	/* state time at mono_base */
	uint64_t		mono_base;
	uint64_t		last_time;	/* the last time stamped */
	struct raft_barrier	barrier;
	uint64_t		next_client;	/* under the state lock */
	size_t			applied_bytes;	/* since the last snapshot */
	uint32_t		applied_entries; /* since the last snapshot */
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
	if (status != 0)
		log_warn("log: an entry was not applied: %s", raft_strerror(status));
	if (p->startup) {
		if (status == 0) {
			d->serving = true;
			d_started(d, 1, NULL);
		} else {
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

/* The event loops queued commands, or it is time to stop. */
static void d_wake_cb(uv_async_t *a)
{
	struct durable *d = a->data;
	bool stop;

	pthread_mutex_lock(&d->qlock);
	stop = d->stop;
	pthread_mutex_unlock(&d->qlock);
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
	return server_conn_by_id(arg, id);
}

/* sm_apply's done hook: a request of this node's connection is applied. */
static void d_done(void *arg, uint64_t id, size_t len)
{
	struct conn *c = server_conn_by_id(arg, id);

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
		if (d->serving)
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
	out = server_sm_out();
	sm = sm_restore(&cfg, &out, buf->base, buf->len, err, sizeof err);
	if (sm != NULL) {
		d->snap_len = buf->len;
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

/* --- start-up --------------------------------------------------------------------- */

/* Leadership is ours: everything before is applied; start serving. */
static void d_barrier_cb(struct raft_barrier *req, int status)
{
	struct durable *d = req->data;
	struct sm_batch b;
	struct qchunk *q;
	uint64_t now;

	if (status != 0) {
		d_started(d, EX_IOERR, "the log could not be replayed: %s",
		    raft_strerror(status));
		return;
	}
	server_lock_any(d->srv);
	now = sm_now(d->srv->sm);
	server_unlock_any(d->srv);
	/* Log time goes on from the last entry; a new log starts at the wall. */
	d->time_base = d->fresh || now == 0 ? wall_ms() : now;
	d->mono_base = mono_ms();
	d->last_time = d->time_base;
	sm_batch_init(&b);
	if (d->fresh || now == 0)
		sm_batch_boot(&b);
	sm_batch_config(&b, &d->smcfg);
	if (!d->fresh && now != 0)
		sm_batch_restart(&b, d->grace_ms);
	q = b.failed ? NULL : qchunk_new(b.p, b.len);
	if (q == NULL || !d_propose(d, q, NULL, 0, true))
		d_started(d, EX_IOERR, "the restart entry could not be proposed");
	sm_batch_free(&b);
}

/* The raft thread: load, become leader, serve until stopped. */
static void *d_main(void *arg)
{
	struct durable *d = arg;
	struct raft_configuration conf;
	int rv;

	d->raft.data = d;
	rv = raft_init(&d->raft, &d->io, &d->fsm, NODE_ID, "local");
	if (rv != 0) {
		d_started(d, EX_CONFIG, "raft: %s", raft_errmsg(&d->raft));
		return NULL;
	}
	raft_set_snapshot_threshold(&d->raft, SNAP_NEVER);
	raft_set_snapshot_trailing(&d->raft, SNAP_TRAILING);
	if (d->fresh) {
		raft_configuration_init(&conf);
		rv = raft_configuration_add(&conf, NODE_ID, "local", RAFT_VOTER);
		if (rv == 0)
			rv = raft_bootstrap(&d->raft, &conf);
		raft_configuration_close(&conf);
		if (rv != 0) {
			d_started(d, EX_IOERR, "raft bootstrap: %s",
			    raft_errmsg(&d->raft));
			goto close;
		}
	}
	rv = raft_start(&d->raft);
	if (rv != 0) {
		d_started(d, EX_CONFIG, "the data directory cannot be loaded "
		    "(damaged?): %s", raft_errmsg(&d->raft));
		goto close;
	}
	if (raft_state(&d->raft) != RAFT_LEADER) {
		d_started(d, EX_CONFIG, "this node is not the log's only voter");
		goto close;
	}
	d->barrier.data = d;
	rv = raft_barrier(&d->raft, &d->barrier, d_barrier_cb);
	if (rv != 0) {
		d_started(d, EX_IOERR, "raft barrier: %s", raft_errmsg(&d->raft));
		goto close;
	}
	uv_run(&d->loop, UV_RUN_DEFAULT);
close:
	d->serving = false;
	raft_close(&d->raft, NULL);
	uv_close((uv_handle_t *)&d->wake, NULL);
	uv_close((uv_handle_t *)&d->deadline, NULL);
	/* Let raft and the handles finish closing. */
	uv_run(&d->loop, UV_RUN_DEFAULT);
	raft_uv_close(&d->io);
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
static int meta_write(const char *dir, char *err, size_t errlen)
{
	char path[4096], tmp[4096], text[128];
	int fd, dfd, n;

	snprintf(path, sizeof path, "%s/%s", dir, META_NAME);
	snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, META_NAME);
	n = snprintf(text, sizeof text, "%s\nnode %d\n", META_FORMAT, NODE_ID);
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
static int meta_check(const char *dir, char *err, size_t errlen)
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
	snprintf(want, sizeof want, "%s\nnode %d\n", META_FORMAT, NODE_ID);
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
	if (empty && (r = meta_write(dir, err, errlen)) != 0)
		return r;
	if (!empty && ((r = meta_check(dir, err, errlen)) != 0 ||
	    (r = metadata_check(dir, &bare, err, errlen)) != 0 ||
	    (r = segments_check(dir, err, errlen)) != 0))
		return r;
	d = calloc(1, sizeof *d);
	if (d == NULL) {
		snprintf(err, errlen, "out of memory");
		return EX_OSERR;
	}
	d->srv = srv;
	d->fresh = empty || bare;
	d->grace_ms = srv->cfg.restart_grace_ms;
	d->snapshot_every = srv->cfg.snapshot_every;
	d->smcfg = server_sm_config_of(srv);
	pthread_mutex_init(&d->qlock, NULL);
	pthread_mutex_init(&d->rlock, NULL);
	pthread_cond_init(&d->rcond, NULL);
	d->qtail = &d->qhead;
	srv->durable = d;
	if (uv_loop_init(&d->loop) != 0 ||
	    uv_async_init(&d->loop, &d->wake, d_wake_cb) != 0 ||
	    uv_timer_init(&d->loop, &d->deadline) != 0) {
		snprintf(err, errlen, "cannot make the log's event loop");
		return EX_OSERR;
	}
	d->wake.data = d;
	d->deadline.data = d;
	d->transport.init = nt_init;
	d->transport.listen = nt_listen;
	d->transport.connect = nt_connect;
	d->transport.close = nt_close;
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
		uv_run(&d->loop, UV_RUN_DEFAULT);
	}
	uv_loop_close(&d->loop);
	while (d->qhead != NULL) {
		struct qchunk *q = d->qhead;

		d->qhead = q->next;
		free(q);
	}
	pthread_mutex_destroy(&d->qlock);
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
	return (uint64_t)NODE_ID << 48 | ++srv->durable->next_client;
}
