/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/durable_apply.c - the state machine's side of the log: committed
 * entries applied under the state lock (their replies routed to this node's
 * connections), snapshots taken and restored, the node's figures.
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

#include "daemon/log/durable.h"
#include "daemon/log/raftguard.h"
#include "daemon/logging.h"
#include "daemon/log/durable-int.h"

/* --- the state machine's side --------------------------------------------------- */

/*
 * A SEED entry (semd --restore: a new log's first): the state becomes its
 * snapshot's, as a restore from raft's snapshot does (locked). 0, or
 * -EINVAL with why in err.
 */
static int d_apply_seed(struct durable *d, const uint8_t *snap, size_t len,
    char *err, size_t errlen)
{
	struct sm_config cfg = d->host.sm_config(d->host.arg);
	struct sm_out out = d->host.sm_out(d->host.arg);
	struct sm *sm, *old;

	sm = sm_restore(&cfg, &out, snap, len, err, errlen);
	if (sm == NULL)
		return -EINVAL;
	old = d_sm(d);
	sm_take_hooks(sm, old);
	*d->host.sm = sm;
	sm_free(old);
	log_notice("log: the state restored from a backup (%zu bytes)", len);
	return 0;
}

/* raft_fsm.apply: one committed entry. */
int d_fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf,
    void **result)
{
	struct durable *d = fsm->data;
	/* The host finds its connections itself: no hop through here. */
	struct sm_apply_hooks hooks = { d->host.conn, d->host.applied,
	    d->host.arg };
	const uint8_t *snap;
	size_t snap_len;
	char err[160];
	uint64_t next;
	int r, seed;

	*result = NULL;
	seed = sm_entry_seed(buf->base, buf->len, &snap, &snap_len);
	d_lock(d);
	if (seed < 0) {
		snprintf(err, sizeof err, "a malformed SEED entry");
		r = -EINVAL;
	} else if (seed == 1) {
		r = d_apply_seed(d, snap, snap_len, err, sizeof err);
	} else {
		r = sm_apply(d_sm(d), buf->base, buf->len, &hooks, err,
		    sizeof err);
	}
	next = sm_next_deadline(d_sm(d));
	d_unlock(d);
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
	if (seed == 1)
		d_seeded(d);
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
int d_fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
    unsigned int *n)
{
	struct durable *d = fsm->data;
	uint64_t t0 = d_now_ms();
	uint8_t *p;
	size_t len;
	int r;

	*bufs = raft_malloc(sizeof **bufs);
	if (*bufs == NULL)
		return RAFT_NOMEM;
	d_lock(d);
	r = sm_snapshot(d_sm(d), &p, &len);
	d_unlock(d);
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
	    d_now_ms() - t0);
	return 0;
}

/* raft_fsm.snapshot_finalize: raft is done with the snapshot's bytes. */
int d_fsm_snapshot_finalize(struct raft_fsm *fsm,
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
int d_fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct durable *d = fsm->data;
	struct sm_config cfg;
	struct sm_out out;
	struct sm *sm, *old;
	char err[200];

	d_lock(d);
	cfg = d->host.sm_config(d->host.arg);
	out = d->host.sm_out(d->host.arg);
	sm = sm_restore(&cfg, &out, buf->base, buf->len, err, sizeof err);
	if (sm != NULL) {
		d->snap_len = buf->len;
		d->applied_bytes = 0;
		d->applied_entries = 0;
		old = d_sm(d);
		sm_take_hooks(sm, old);
		*d->host.sm = sm;
		sm_free(old);
	}
	d_unlock(d);
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

/* The node's cluster figures for Stats (any thread; under the state lock). */
void durable_counters(struct durable *d, struct sm_local_counters *out)
{
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
	LC("cluster_reads", atomic_load(&d->reads_done));
	LC("cluster_read_rounds", atomic_load(&d->read_rounds));
#undef LC
	pthread_mutex_unlock(&d->slock);
}
