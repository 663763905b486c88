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
 */
#ifndef SEMD_RAFTGUARD_H
#define SEMD_RAFTGUARD_H

#include <raft.h>

/*
 * Wrap io->start of an io whose data will be its struct raft (raft_init
 * sets it). Call before raft_start(); 0, or -1 when too many ios are
 * guarded at once (RAFTGUARD_MAX).
 */
#define RAFTGUARD_MAX	8
int raftguard_install(struct raft_io *io);
/* Forget a guarded io (after raft_close). */
void raftguard_remove(struct raft_io *io);

/* Messages trimmed so far, in this process. */
unsigned long raftguard_trimmed(void);

/*
 * Trim an AppendEntries message for raft r (exposed for tests): returns the
 * number of entries dropped.
 */
unsigned int raftguard_trim(const struct raft *r, struct raft_message *m);

#endif
