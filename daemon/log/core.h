/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/core.h - the log's core: everything the log decides, on one
 * struct raft, with no thread, no libuv and no clock of its own. Two hosts
 * run it alike: the log thread (thread.c: raft_uv, the peer transports, a
 * libuv loop) and the cluster simulation (tests/cluster/sim: libraft's
 * in-memory fixture, simulated time).
 *
 * What it does:
 *   core_propose.c  commands (chunks of sm_batch) stamped with the state
 *                   clock and proposed, all that waits as one entry of up
 *                   to MAX_ENTRY bytes, at most MAX_INFLIGHT in flight
 *                   (group commit);
 *   core_apply.c    committed entries applied to the state machine under
 *                   the host's lock, snapshots taken and restored;
 *   core_read.c     reads answered without an entry, after a read barrier
 *                   (semlog_port_probe);
 *   core_lead.c     leadership: the take-over (a barrier, then the
 *                   leader's first entry), its loss, deadline ticks, the
 *                   lease sweep, membership changes and transfers, the
 *                   hand-over before a stop;
 *   core.c          its making and its entry points (below).
 *
 * Its inputs are calls: semlog_core_step() whenever raft moved (the port
 * says so after every tick, message and completion), semlog_core_tick()
 * when the time it asked for comes, and the commands, reads and changes
 * its host hands it. Its outputs are raft calls, the host's callbacks
 * (struct semlog_host: the state, this node's clients) and the
 * environment's (struct semlog_env: time, and what the log thread does
 * about a start, a stop or a fatal error). Everything runs on the one
 * thread that runs raft.
 */
#ifndef SEMD_LOG_CORE_H
#define SEMD_LOG_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>

#include "daemon/log/port.h"
#include "daemon/log/semlog.h"
#include "daemon/state/state.h"

struct semlog_core;

/* Commands an event loop queued (one read batch), proposed in an entry. */
struct semlog_chunk {
	struct semlog_chunk	*next;
	size_t			len;
	uint8_t			data[];
};
/* A chunk of len bytes (NULL: no memory); a list of them freed. */
struct semlog_chunk *semlog_chunk_new(const uint8_t *data, size_t len);
void semlog_chunks_free(struct semlog_chunk *list);

/* A read answered without an entry (semlog_read), as queued. */
struct semlog_rreq {
	struct semlog_rreq	*next;
	uint64_t		cid;
	struct sm_caller	who;
	raft_index		index;	/* committed when it came: applied first */
	uint64_t		round;	/* the first barrier sent after it came */
	size_t			len;
	uint8_t			data[];
};
/* A read of client cid (the request copied; NULL: no memory). */
struct semlog_rreq *semlog_rreq_new(uint64_t cid, const struct sm_caller *who,
    const uint8_t *data, size_t len);

/* A cluster change asked for by a client (ADD, REMOVE, TRANSFER). */
struct semlog_change {
	struct semlog_change	*next;
	struct semlog_core	*core;
	uint64_t		cid;		/* the client to answer */
	uint64_t		req_id;
	int			action;		/* SEMD__CLUSTER__ACTION__* */
	raft_id			node;
	char			address[256];
	struct raft_change	change;
	struct raft_transfer	transfer;
};

/*
 * What the core's surroundings give it: time, and the outcomes it reports
 * (those but the clocks and fatal may be NULL: nothing is done).
 */
struct semlog_env {
	void		*arg;
	uint64_t	(*now_ms)(void *arg);	/* a monotonic clock */
	uint64_t	(*wall_ms)(void *arg);	/* unix time */
	/* The node starts (true) or stops serving clients. */
	void		(*serving)(void *arg, bool on);
	/*
	 * How the start of a log of one voter went: 1 serving, else an exit
	 * code (sysexits.h) with why.
	 */
	void		(*started)(void *arg, int status, const char *why);
	/* A committed entry or a snapshot cannot be applied: stop the process. */
	void		(*fatal)(void *arg, const char *why);
	/* The --restore seed is in the state (its mark may go). */
	void		(*seeded)(void *arg);
	/* The hand-over of a stop ended (semlog_core_stop): stop now. */
	void		(*stopped)(void *arg);
};

/* The core's settings. */
struct semlog_core_config {
	raft_id		id;
	bool		cluster;	/* peers: elections, reads after a barrier */
	bool		peer_tls;	/* peer addresses may be names (ADD) */
	uint32_t	grace_ms;	/* restart-grace */
	uint32_t	snapshot_every;	/* entries between snapshots, at most */
	uint32_t	snapshot_trailing; /* entries kept after a snapshot */
	uint32_t	election_ms;	/* a cluster's election timeout */
	const char	*advertise;	/* where clients reach this node */
	const uint8_t	*seed;		/* --restore (copied), or NULL */
	size_t		seed_len;
	uint64_t	seed_now;
};

/*
 * A core for host and env (the host's settings are read now, under its
 * lock). NULL without memory.
 */
struct semlog_core *semlog_core_new(const struct semlog_core_config *cfg,
    const struct semlog_host *host, const struct semlog_env *env);
/* The state machine raft applies to (raft_init's fsm; version 2). */
struct raft_fsm *semlog_core_fsm(struct semlog_core *c);
/*
 * The raft the core drives (made with semlog_core_fsm()) and the port on
 * its io; raft's settings are made here. Before raft_start().
 */
void semlog_core_attach(struct semlog_core *c, struct raft *raft,
    struct semlog_port *port);
/* Free c once raft is closed: what it still held goes unanswered. */
void semlog_core_free(struct semlog_core *c);

/* Raft moved (a tick, a message, a completion): follow it. */
void semlog_core_step(struct semlog_core *c);
/*
 * The core's timers (deadline ticks, the lease sweep, a read barrier sent
 * again): run what is due. Returns when it is next due (env's now_ms).
 */
uint64_t semlog_core_tick(struct semlog_core *c);
/* When semlog_core_tick() is next due (it runs nothing). */
uint64_t semlog_core_due(struct semlog_core *c);
/* Commands to propose (the list is the core's; dropped when not serving). */
void semlog_core_submit(struct semlog_core *c, struct semlog_chunk *list);
/* Reads to answer, oldest first (the list is the core's). */
void semlog_core_reads(struct semlog_core *c, struct semlog_rreq *list);
/* A cluster change to start (ch is the core's; its client is answered). */
void semlog_core_change(struct semlog_core *c, struct semlog_change *ch);
/*
 * A stop: a leader of several voters hands leadership over first; true
 * when that is under way (env->stopped says when it ended).
 */
bool semlog_core_stop(struct semlog_core *c);

/* Does the node serve clients (its leader's first entry applied)? */
bool semlog_core_serving(const struct semlog_core *c);
/*
 * Nothing commits while the disk takes no writes (the host saw it: writes
 * are refused): the leader's lease sweep waits meanwhile, rather than
 * queueing an EXPIRE for the same sessions every retry.
 */
void semlog_core_set_stalled(struct semlog_core *c, bool stalled);
/*
 * The leader answers client id without an entry (under the host's lock, on
 * the core's thread; the log thread does the same with what it published
 * for the event loops): true when it serves and the client's session was
 * heard now (sm_heard_local).
 */
bool semlog_core_heard_locked(struct semlog_core *c, uint64_t id);
/*
 * What the core counted, and where its leadership stands: reads answered,
 * barrier rounds sent, sessions its lease sweeps ended (EXPIRE commands),
 * leaderships taken, take-overs begun (the barrier
 * passed, the leader's first entry proposed) and the state time the last
 * one started from, the state time now by its clock (the state's own when
 * it does not serve).
 */
struct semlog_core_figures {
	uint64_t	reads_done;
	uint64_t	read_rounds;
	uint64_t	expired;
	uint64_t	leaderships;
	uint64_t	takeovers;
	uint64_t	lead_start;
	uint64_t	state_now;
};
void semlog_core_figures(struct semlog_core *c,
    struct semlog_core_figures *out);

#endif
