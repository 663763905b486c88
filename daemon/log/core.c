/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/core.c - the log core's making and its entry points (core.h):
 * raft's settings, the steps and ticks its host drives it with, the
 * commands, reads and changes handed to it.
 *
 * Raft's settings, and why (libraft 0.22):
 *  - snapshots: raft's own threshold is never reached; the core lowers it
 *    when it wants one (core_apply.c), and keeps snapshot_trailing entries
 *    after it, so that a follower a little behind gets entries, not the
 *    whole state;
 *  - a cluster: the election timeout given, heartbeats ten times as often,
 *    pre-vote (a node cut off does not disturb the others when it comes
 *    back); a leader that hears from no majority for an election timeout
 *    steps down (raft's check);
 *  - RAFT_INFLIGHT entries in flight to a follower (0.22 sends at most that
 *    many unacknowledged, in one AppendEntries or several, and holds as many
 *    of the leader's own appends): set to 0.22's default on purpose. It
 *    never binds the leader's proposals (at most MAX_INFLIGHT, 16, are in
 *    flight); it paces a follower catching up on a long log (32 entries of
 *    up to MAX_ENTRY a round trip), after which snapshots take over;
 *  - no capacity threshold: libraft 0.22 (for a raft_io) refuses new
 *    entries with RAFT_NOSPACE unless more than half the voters reported
 *    4 MB of log space reserved - counting the followers' reports only, so
 *    that in a cluster of three one follower with a full disk stops every
 *    write. A follower's full disk is one more minority failure, which
 *    raft survives without that: the node retries its writes (raft_uv,
 *    every second: thread.c), the others commit. The core still answers a
 *    refused entry (core_propose.c).
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/log/core-int.h"
#include "daemon/logging.h"

/* A core for host and env, with its own copy of the seed. */
struct semlog_core *semlog_core_new(const struct semlog_core_config *cfg,
    const struct semlog_host *host, const struct semlog_env *env)
{
	struct semlog_core *c = calloc(1, sizeof *c);

	if (c == NULL)
		return NULL;
	c->cfg = *cfg;
	c->host = *host;
	c->env = *env;
	if (cfg->seed != NULL) {
		if ((c->seed = malloc(cfg->seed_len)) == NULL) {
			free(c);
			return NULL;
		}
		memcpy(c->seed, cfg->seed, cfg->seed_len);
	}
	c->cfg.seed = c->seed;
	c->qtail = &c->qhead;
	c->rq_tail = &c->rq;
	c->deadline = NEVER;
	core_lock(c);
	c->smcfg = c->host.sm_config(c->host.arg);
	core_unlock(c);
	c->fsm = (struct raft_fsm){
		.version = 2, .data = c, .apply = core_fsm_apply,
		.snapshot = core_fsm_snapshot,
		.snapshot_finalize = core_fsm_snapshot_finalize,
		.restore = core_fsm_restore,
	};
	return c;
}

/* The state machine to give raft_init(). */
struct raft_fsm *semlog_core_fsm(struct semlog_core *c)
{
	return &c->fsm;
}

/*
 * A leader's entry this node could not apply is refused before it is
 * stored (the peer port asks): else it would be committed and stop this
 * node for good (core_fsm_apply).
 */
static int core_entry_ok(void *arg, const void *buf, size_t len, char *why,
    size_t whylen)
{
	(void)arg;
	return sm_entry_check(buf, len, why, whylen);
}

/* Drive raft through port; raft's settings (above). */
void semlog_core_attach(struct semlog_core *c, struct raft *raft,
    struct semlog_port *port)
{
	c->raft = raft;
	c->port = port;
	semlog_port_set_entry_check(port, core_entry_ok, c);
	raft_set_snapshot_threshold(raft, SNAP_NEVER);
	raft_set_snapshot_trailing(raft, c->cfg.snapshot_trailing);
	raft_set_max_inflight_entries(raft, RAFT_INFLIGHT);
	raft_set_capacity_threshold(raft, 0);
	if (c->cfg.cluster) {
		raft_set_election_timeout(raft, c->cfg.election_ms);
		raft_set_heartbeat_timeout(raft, c->cfg.election_ms / 10 > 10 ?
		    c->cfg.election_ms / 10 : 10);
		raft_set_pre_vote(raft, true);
	}
}

/* Free what the core still holds: commands, reads, the seed. */
void semlog_core_free(struct semlog_core *c)
{
	if (c == NULL)
		return;
	core_queue_drop(c);
	core_reads_free(c);
	free(c->seed);
	free(c);
}

/* Raft moved: leadership followed, reads run, commands proposed. */
void semlog_core_step(struct semlog_core *c)
{
	core_follow(c);
	core_reads_run(c);
	core_propose_queued(c);	/* held while a transfer was under way */
}

/* When the core wants its tick: its timers, a read barrier, a poll. */
uint64_t semlog_core_due(struct semlog_core *c)
{
	uint64_t next = core_now(c) + POLL_MS, due;

	if ((due = core_timers_due(c)) < next)
		next = due;
	if ((due = core_reads_due(c)) < next)
		next = due;
	return next;
}

/* The timers that are due; when the next is. */
uint64_t semlog_core_tick(struct semlog_core *c)
{
	core_follow(c);
	core_timers(c);
	core_reads_run(c);
	core_hand_over_late(c);
	return semlog_core_due(c);
}

/* Commands from the event loops, queued and proposed. */
void semlog_core_submit(struct semlog_core *c, struct semlog_chunk *list)
{
	/* A node that does not serve proposes nothing: what it had goes. */
	if (!c->serving) {
		semlog_chunks_free(list);
		return;
	}
	core_queue(c, list);
	core_propose_queued(c);
}

/* Reads from the event loops, noted and a barrier asked for. */
void semlog_core_reads(struct semlog_core *c, struct semlog_rreq *list)
{
	core_reads_take(c, list);
}

/* A cluster change asked for by a client. */
void semlog_core_change(struct semlog_core *c, struct semlog_change *ch)
{
	core_change_start(c, ch);
}

/* A stop: what waits goes; a leader hands over. */
bool semlog_core_stop(struct semlog_core *c)
{
	core_queue_drop(c);
	core_reads_refuse(c);
	return core_hand_over(c);
}

/* Does the node serve clients? */
bool semlog_core_serving(const struct semlog_core *c)
{
	return c->serving;
}

/* The disk takes writes again, or not. */
void semlog_core_set_stalled(struct semlog_core *c, bool stalled)
{
	c->stalled = stalled;
}

/* Serving, and the session of client id heard now. */
bool semlog_core_heard_locked(struct semlog_core *c, uint64_t id)
{
	return c->serving && sm_heard_local(core_sm(c), id, core_now(c));
}

/* The core's counts and its leadership's times. */
void semlog_core_figures(struct semlog_core *c,
    struct semlog_core_figures *out)
{
	*out = (struct semlog_core_figures){
		.reads_done = c->reads_done, .read_rounds = c->read_rounds,
		.expired = c->expired, .leaderships = c->term_leader,
		.takeovers = c->takeovers, .lead_start = c->lead_start,
	};
	if (c->serving) {
		out->state_now = sm_clock_now(&c->clock, core_now(c));
	} else {
		core_lock(c);
		out->state_now = sm_now(core_sm(c));
		core_unlock(c);
	}
}
