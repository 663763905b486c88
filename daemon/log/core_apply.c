/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/core_apply.c - the state machine's side of the log (raft's
 * struct raft_fsm): committed entries applied under the host's lock, their
 * replies routed by the host to this node's connections; snapshots taken,
 * restored, and when to take one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/log/core-int.h"
#include "daemon/logging.h"

/*
 * A SEED entry (semd --restore: a new log's first): the state becomes its
 * snapshot's, as a restore from raft's snapshot does (locked). 0, or
 * -EINVAL with why in err.
 */
static int core_apply_seed(struct semlog_core *c, const uint8_t *snap,
    size_t len, char *err, size_t errlen)
{
	struct sm_config cfg = c->host.sm_config(c->host.arg);
	struct sm_out out = c->host.sm_out(c->host.arg);
	struct sm *sm, *old;

	sm = sm_restore(&cfg, &out, snap, len, err, errlen);
	if (sm == NULL)
		return -EINVAL;
	old = core_sm(c);
	sm_take_hooks(sm, old);
	*c->host.sm = sm;
	sm_free(old);
	log_notice("log: the state restored from a backup (%zu bytes)", len);
	return 0;
}

/*
 * The seed is in the state: forget it (a follower applies the SEED entry
 * too, with no seed of its own).
 */
static void core_seeded(struct semlog_core *c)
{
	free(c->seed);
	c->seed = NULL;
	c->cfg.seed = NULL;
	c->cfg.seed_len = 0;
	if (c->env.seeded != NULL)
		c->env.seeded(c->env.arg);
}

/*
 * A snapshot after snapshot-every entries or SNAP_BYTES of them (raft keeps
 * every entry since the last snapshot in memory; big entries come with group
 * commit under load) - but not before the log has grown by the last
 * snapshot's size: a snapshot locks the state for about 0.35 ms per thousand
 * names (0.35 s for a million, 70 MB), and a big state taken every 8 MB of
 * log would stall the clients a quarter of the time (measured: see
 * bench/snapshot.sh). So the cost of snapshots stays at most that of writing
 * the log once more, and the log kept at most the size of the state (Redis'
 * rule for its AOF rewrites, at 100%). The threshold, lowered, makes raft
 * take one at its next step.
 */
static void core_snapshot_maybe(struct semlog_core *c, size_t len)
{
	c->applied_bytes += len;
	c->applied_entries++;
	if ((c->applied_entries >= c->cfg.snapshot_every ||
	    c->applied_bytes >= SNAP_BYTES) && c->applied_bytes >= c->snap_len)
		raft_set_snapshot_threshold(c->raft, 1);
}

/*
 * raft_fsm.apply: one committed entry. Written by a leader and checksummed,
 * an entry that cannot be applied is damage or a bug: nothing after it can
 * be applied right, and the process stops rather than serve a state that
 * is not the log's (env->fatal; libraft 0.22 has no way back from an apply
 * that fails).
 */
int core_fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf,
    void **result)
{
	struct semlog_core *c = fsm->data;
	/* The host finds its connections itself: no hop through here. */
	struct sm_apply_hooks hooks = { c->host.bind != NULL ? c->host.bind :
	    c->host.conn, c->host.applied, c->host.arg };
	const uint8_t *snap;
	size_t snap_len;
	char err[160], why[256];
	int r, seed;

	*result = NULL;
	core_lead_check(c);
	seed = sm_entry_seed(buf->base, buf->len, &snap, &snap_len);
	core_lock(c);
	if (seed < 0) {
		snprintf(err, sizeof err, "a malformed SEED entry");
		r = -EINVAL;
	} else if (seed == 1) {
		r = core_apply_seed(c, snap, snap_len, err, sizeof err);
	} else {
		r = sm_apply(core_sm(c), buf->base, buf->len, &hooks, err,
		    sizeof err);
	}
	c->deadline = sm_next_deadline(core_sm(c));
	core_unlock(c);
	if (r != 0) {
		snprintf(why, sizeof why, "a committed entry cannot be applied "
		    "(the data directory is damaged): %s", err);
		c->env.fatal(c->env.arg, why);
		return RAFT_MALFORMED;
	}
	if (seed == 1)
		core_seeded(c);
	c->tick_out = false;
	core_snapshot_maybe(c, buf->len);
	return 0;
}

/* raft_fsm.snapshot: the whole state, under the lock. */
int core_fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
    unsigned int *n)
{
	struct semlog_core *c = fsm->data;
	uint64_t t0 = core_now(c);
	uint8_t *p;
	size_t len;
	int r;

	*bufs = raft_malloc(sizeof **bufs);
	if (*bufs == NULL)
		return RAFT_NOMEM;
	core_lock(c);
	r = sm_snapshot(core_sm(c), &p, &len);
	core_unlock(c);
	if (r != 0) {
		raft_free(*bufs);
		*bufs = NULL;
		return RAFT_NOMEM;
	}
	(*bufs)[0].base = p;
	(*bufs)[0].len = len;
	*n = 1;
	c->applied_bytes = 0;
	c->applied_entries = 0;
	c->snap_len = len;
	raft_set_snapshot_threshold(c->raft, SNAP_NEVER);
	log_info("log: snapshot of %zu bytes taken in %" PRIu64 " ms", len,
	    core_now(c) - t0);
	return 0;
}

/* raft_fsm.snapshot_finalize: raft is done with the snapshot's bytes. */
int core_fsm_snapshot_finalize(struct raft_fsm *fsm,
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
 * raft_fsm.restore: the state from a snapshot (one this node took, at a
 * start, or one a leader sent). Its buffer is ours to free when we succeed.
 * One that cannot be restored stops the process, as an entry does.
 */
int core_fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct semlog_core *c = fsm->data;
	struct sm_config cfg;
	struct sm_out out;
	struct sm *sm, *old;
	char err[200], why[320];

	core_lock(c);
	cfg = c->host.sm_config(c->host.arg);
	out = c->host.sm_out(c->host.arg);
	sm = sm_restore(&cfg, &out, buf->base, buf->len, err, sizeof err);
	if (sm != NULL) {
		c->snap_len = buf->len;
		c->applied_bytes = 0;
		c->applied_entries = 0;
		old = core_sm(c);
		sm_take_hooks(sm, old);
		*c->host.sm = sm;
		sm_free(old);
		c->deadline = sm_next_deadline(sm);
	}
	core_unlock(c);
	if (sm == NULL) {
		snprintf(why, sizeof why, "the snapshot cannot be restored (the "
		    "data directory is damaged): %s", err);
		c->env.fatal(c->env.arg, why);
		return RAFT_MALFORMED;
	}
	raft_free(buf->base);
	return 0;
}
