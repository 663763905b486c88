/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/raftguard.h - a guard between a raft_io and libraft 0.15.
 *
 * A leader whose send to a follower fails sets that follower's next index
 * to its match index + 1: 1 for a follower it has not heard from yet. When
 * its own log still starts at 1 while the follower has taken a snapshot,
 * it sends entries the follower compacted away, and libraft 0.15 appends
 * them at the wrong place and crashes (a NULL dereference in refsDecr; met
 * by tests/cluster/sim, seed 38026). Later libraft versions skip such
 * entries; the guard does it before raft sees the message: the entries up
 * to the follower's snapshot, committed and in the snapshot already, are
 * dropped and the message starts at the snapshot's last index.
 *
 * Since every message from a leader passes through it, the guard also
 * remembers what a follower cannot ask libraft: the highest commit index a
 * leader has told it (raft's own commit index on a follower stops at what
 * the follower has stored), and the last snapshot a leader sent it, for
 * readiness (/readyz: how far behind the leader a follower is). It lets
 * raft's close callback run once (libraft 0.15 can call it twice when a
 * snapshot write ends after raft_close), and refuses a send to no known
 * server (0.15 answers a leader it no longer knows, at a NULL address, after
 * stepping down while it appended). And it can measure the io's disk
 * work for the metrics (raftguard_measure): how long appends take to be
 * written and fsynced, and how many snapshot writes succeed and fail.
 *
 * Last, it gives a leader the read barrier libraft 0.15 lacks (raft's
 * ReadIndex, raftguard_probe): an AppendEntries of its own to every voter,
 * whose previous index no log has (2^62 plus the round), so that a
 * follower in the leader's term takes it as from its leader (its election
 * timer starts again) and rejects it, echoing that index: the round. The
 * guard keeps those answers from raft and counts them; a round answered by
 * a majority of voters in the term it was sent in proves the node led when
 * every answer was given, so after the round was sent.
 */
#ifndef SEMD_RAFTGUARD_H
#define SEMD_RAFTGUARD_H

#include <stdint.h>

#include <raft.h>

/*
 * Wrap io->start, io->close and io->send of an io whose data will be its struct
 * raft (raft_init sets it). Call before raft_start(); 0, or -1 when too
 * many ios are guarded at once (RAFTGUARD_MAX).
 */
#define RAFTGUARD_MAX	8
int raftguard_install(struct raft_io *io);
/* Forget a guarded io (after raft_close). */
void raftguard_remove(struct raft_io *io);

/* Messages trimmed so far, in this process. */
unsigned long raftguard_trimmed(void);

/*
 * Time the io's appends and count its snapshot writes (raftguard_stats).
 * Call after raftguard_install(), before raft_start(); 0, or -1 when io is
 * not guarded.
 */
int raftguard_measure(struct raft_io *io);

/*
 * Appends by duration: bucket i holds those that took at most
 * raftguard_append_le_us[i] (and more than the bound before), the last
 * bucket those above every bound; from the io->append call to its
 * completion, the wait behind earlier writes included. Snapshots written
 * (taken here, or installed from a leader), and those whose write failed
 * (not counting a write cancelled by a close).
 */
#define RAFTGUARD_APPEND_BUCKETS	16
extern const uint32_t raftguard_append_le_us[RAFTGUARD_APPEND_BUCKETS - 1];
struct raftguard_stats {
	uint64_t	append_bucket[RAFTGUARD_APPEND_BUCKETS];
	uint64_t	append_sum_us;
	uint64_t	snapshots;
	uint64_t	snapshot_failures;
};
/* What a measured io did so far (zeros for another). Any thread. */
void raftguard_stats(const struct raft_io *io, struct raftguard_stats *out);

/*
 * The highest leader commit index heard in an AppendEntries message, and
 * the highest last index of an InstallSnapshot message, on a guarded io
 * (0 when none yet). Any thread.
 */
void raftguard_heard(const struct raft_io *io, uint64_t *leader_commit,
    uint64_t *snapshot_index);

/*
 * Read barriers (leader only, on raft's loop). A probe round goes to every
 * other voter of the node's configuration; it is confirmed once answered,
 * in the term it was sent in, by a majority of the voters (the node itself
 * counts, as a voter; with no other voter at once). raftguard_probe sends
 * a new round: its number (they only grow), or 0 when the node does not
 * lead or there is no memory.
 */
uint64_t raftguard_probe(struct raft_io *io);
/* The highest round confirmed in the node's current term (0: none). */
uint64_t raftguard_confirmed(const struct raft_io *io);
/* An index no log reaches: probes' previous indexes are above it. */
#define RAFTGUARD_PROBE_BASE	((uint64_t)1 << 62)

/*
 * Trim an AppendEntries message for raft r (exposed for tests): returns the
 * number of entries dropped.
 */
unsigned int raftguard_trim(const struct raft *r, struct raft_message *m);

#endif
