/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/core-int.h - the log core's insides, shared by its files (the
 * interface is core.h). The files call one way: core.c -> core_lead.c ->
 * core_read.c, core_propose.c; core_apply.c is only called by raft.
 */
#ifndef SEMD_LOG_CORE_INT_H
#define SEMD_LOG_CORE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <raft.h>

#include "daemon/log/core.h"

#define NODE_ID		1		/* one voter: its id */
#define POLL_MS		20		/* leadership followed at least this often */
#define MAX_INFLIGHT	16		/* entries proposed and not applied */
#define RAFT_INFLIGHT	32		/* raft's own bound: see core.c */
#define MAX_ENTRY	(256u << 10)	/* bytes of commands in one entry, about */
#define SNAP_BYTES	(8u << 20)	/* log bytes kept in memory before a snapshot */
#define SNAP_NEVER	UINT32_MAX	/* raft's own threshold: we say when */
#define SWEEP_MS	200		/* the leader looks for leases run out */
#define SWEEP_MAX	4096		/* sessions ended by one sweep, at most */
#define SWEEP_RETRY_MS	2000		/* an EXPIRE not applied is asked again */
#define REPROBE_MS	50		/* a read barrier not confirmed: sent again */
#define NEVER		UINT64_MAX

struct semlog_core {
	struct semlog_core_config cfg;
	struct semlog_host	host;		/* the server, or the simulation */
	struct semlog_env	env;
	struct raft_fsm		fsm;
	struct raft		*raft;
	struct semlog_port	*port;
	struct sm_config	smcfg;		/* the settings proposed at a take-over */
	struct sm_clock		clock;		/* the state time we stamp */
	uint8_t			*seed;		/* --restore: until applied */

	/* Leadership (core_lead.c). */
	bool			leader;		/* as last followed */
	raft_term		lead_term;	/* the term we lead in */
	unsigned int		term_leader;	/* leaderships taken so far */
	uint64_t		lead_start;	/* the state time of the last */
	uint64_t		takeovers;	/* take-overs begun (barrier passed) */
	bool			taking_over;	/* a barrier or the LEADER entry is out */
	bool			serving;	/* the LEADER entry is applied */
	bool			stopping;	/* a stop; a hand-over may be under way */
	struct raft_transfer	handover;
	uint64_t		handover_until;	/* now_ms it is given up at (0: none) */
	uint64_t		next_sweep;	/* now_ms of the next lease sweep */
	uint64_t		expired;	/* sessions its sweeps asked to end */
	uint64_t		deadline;	/* the state's earliest deadline (state time) */
	bool			tick_out;	/* an empty entry is on its way */
	bool			stalled;	/* nothing commits: the disk */

	/* Proposing (core_propose.c): commands waiting, oldest first. */
	struct semlog_chunk	*qhead;
	struct semlog_chunk	**qtail;
	unsigned int		inflight;
	int			refused;	/* raft's last refusal (0: none) */

	/* Applying (core_apply.c). */
	uint32_t		applied_entries; /* since the last snapshot */
	size_t			applied_bytes;
	size_t			snap_len;	/* the last snapshot's bytes */

	/* Reads (core_read.c): waiting, oldest first. */
	struct semlog_rreq	*rq;
	struct semlog_rreq	**rq_tail;
	uint64_t		probe_sent;	/* the last barrier round sent */
	uint64_t		probe_ms;	/* when */
	uint64_t		probe_need;	/* the last round a read waits for */
	uint64_t		reads_done;
	uint64_t		read_rounds;
};

/* A proposal's own completion (the leader's first entry): status 0 applied. */
typedef void (*core_done_fn)(struct semlog_core *c, int status);

/* The host's state lock, and its state (lock held). */
static inline void core_lock(struct semlog_core *c)
{
	c->host.lock(c->host.arg);
}

static inline void core_unlock(struct semlog_core *c)
{
	c->host.unlock(c->host.arg);
}

static inline struct sm *core_sm(struct semlog_core *c)
{
	return *c->host.sm;
}

/* The environment's clock. */
static inline uint64_t core_now(const struct semlog_core *c)
{
	return c->env.now_ms(c->env.arg);
}

/* core_propose.c */
bool core_propose(struct semlog_core *c, struct semlog_chunk *first,
    struct semlog_chunk *end, uint64_t at_least, core_done_fn done);
void core_propose_queued(struct semlog_core *c);
void core_queue(struct semlog_core *c, struct semlog_chunk *list);
void core_queue_drop(struct semlog_core *c);

/* core_apply.c: raft's state machine */
int core_fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf,
    void **result);
int core_fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
    unsigned int *n);
int core_fsm_snapshot_finalize(struct raft_fsm *fsm,
    struct raft_buffer *bufs[], unsigned int *n);
int core_fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf);

/* core_read.c */
void core_reads_take(struct semlog_core *c, struct semlog_rreq *list);
void core_reads_run(struct semlog_core *c);
void core_reads_refuse(struct semlog_core *c);
void core_reads_free(struct semlog_core *c);
uint64_t core_reads_due(const struct semlog_core *c);

/* core_lead.c */
void core_follow(struct semlog_core *c);
void core_lead_check(struct semlog_core *c);
void core_timers(struct semlog_core *c);
uint64_t core_timers_due(struct semlog_core *c);
void core_change_start(struct semlog_core *c, struct semlog_change *ch);
bool core_hand_over(struct semlog_core *c);
void core_hand_over_late(struct semlog_core *c);

#endif
