/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/durable-int.h - the raft log's insides, shared by its files
 * (the interface is durable.h):
 *   durable.c          raft's set-up, its thread and loop, the transports,
 *                      the data directory; start and stop
 *   durable_propose.c  entries stamped with the state clock, the queue of
 *                      commands from the event loops and its group commit
 *                      into entries, deadlines
 *   durable_apply.c    applying committed entries (replies routed to the
 *                      connections), snapshots and restores
 *   durable_cluster.c  leadership, cluster changes and the published status
 *   durable_read.c     reads the leader answers without an entry, after a
 *                      read barrier (raftguard_probe)
 *
 * Threads: everything raft is done on the raft thread's libuv loop. The
 * queue of commands from the event loops is under qlock; the state machine
 * under the server's state lock, taken to apply an entry, snapshot or
 * restore.
 */
#ifndef SEMD_DURABLE_INT_H
#define SEMD_DURABLE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "daemon/log/durable.h"

#define META_NAME	"semd.meta"
/* There while a --restore's seed is not in the log yet. */
#define SEED_MARK	"restore.pending"
#define META_FORMAT	"semd-data 1"
#define NODE_ID		1		/* one voter: its id */
#define POLL_MS		20		/* leadership is polled (no callback in 0.15) */
#define MAX_NODES	16		/* in a published status */
#define MAX_INFLIGHT	16		/* entries proposed and not applied */
#define MAX_ENTRY	(256u << 10)	/* bytes of commands in one entry, about */
#define READY_WAIT_S	120		/* replaying a long log takes time */
#define SNAP_BYTES	(8u << 20)	/* log bytes kept in memory before a snapshot */
#define SNAP_NEVER	UINT32_MAX	/* raft's own threshold: we say when */
#define SNAP_TRAILING	4		/* entries kept after a snapshot (one voter) */
#define SEGMENT_SIZE	(8u << 20)	/* raft_uv's open segments, made whole */
#define SWEEP_MS	200		/* the leader looks for leases run out */
#define SWEEP_MAX	4096		/* sessions ended by one sweep, at most */
#define SWEEP_RETRY_MS	2000		/* an EXPIRE not applied is asked again */
#define REPROBE_MS	50		/* a read barrier not confirmed: sent again */

struct durable {
	struct durable_host	host;		/* the server */
	pthread_t		thread;
	uv_loop_t		loop;
	uv_async_t		wake;		/* commands queued, or stop */
	uv_timer_t		deadline;	/* the state's earliest deadline */
	uv_timer_t		poll;		/* leadership and status */
	struct raft_io		io;
	struct raft_fsm		fsm;
	struct raft		raft;
	struct raft_uv_transport transport;
	raft_id			id;		/* this node */
	raft_term		lead_term;	/* the term we lead in */
	struct sm_config	smcfg;		/* the settings proposed at start */
	unsigned int		term_leader;	/* leaderships taken so far */
	uint32_t		grace_ms;
	uint32_t		snapshot_every;
	uint32_t		election_ms;	/* a cluster's election timeout */
	char			*bootstrap;	/* --bootstrap, or NULL */
	bool			thread_started;
	bool			cluster;	/* peers over TCP (node-id given) */
	bool			peer_tls;	/* ... in TLS (peer_tls.h) */
	bool			leader;		/* as of the last poll */
	bool			fresh;		/* a new data directory */
	char			peer[256];	/* HOST:PORT, raft's address for us */
	char			advertise[256];	/* where clients reach us */

	/* Under qlock: commands from the event loops, oldest first. */
	pthread_mutex_t		qlock;
	struct qchunk		*qhead;
	struct qchunk		**qtail;
	struct ctl		*ctlq;		/* cluster changes asked for */
	struct dread		*rq_in;		/* reads, newest first */
	bool			stop;

	/* Read by any thread: the leader serves; the status, under slock. */
	_Atomic bool		serving_pub;
	_Atomic uint64_t	reads_done;	/* reads answered off the log */
	_Atomic uint64_t	read_rounds;	/* barrier rounds sent */
	pthread_mutex_t		slock;
	Semd__ClusterStatus	st;
	Semd__ClusterNode	st_nodes[MAX_NODES];
	Semd__ClusterNode	*st_nodep[MAX_NODES];
	char			st_addr[MAX_NODES][256];
	char			st_leader[256];

	/* The raft thread's own. */
	struct dread		*rq;		/* reads waiting, oldest first */
	struct dread		**rq_tail;
	uv_check_t		rcheck;		/* runs the reads that may go */
	uv_timer_t		rtimer;		/* ... and sends a lost barrier again */
	uint64_t		probe_sent;	/* the last barrier round sent */
	uint64_t		probe_ms;	/* when (d_now_ms) */
	uint64_t		probe_need;	/* the last round a read waits for */
	unsigned int		inflight;
	uint32_t		applied_entries; /* since the last snapshot */
	bool			tick_out;	/* an empty entry is on its way */
	bool			serving;	/* the restart entry is applied */
	bool			taking_over;	/* a barrier or the LEADER entry is out */
	bool			stopping;	/* stop seen; a hand-over may be under way */
	struct raft_transfer	handover;	/* leadership, before stopping */
	struct sm_clock		clock;		/* the state time we stamp */
	uint64_t		next_client;	/* under the state lock */
	size_t			applied_bytes;	/* since the last snapshot */
	size_t			snap_len;	/* the last snapshot's bytes */
	uint64_t		next_sweep;	/* d_now_ms() of the next lease sweep */
	uint8_t			*seed;		/* --restore: the seed, until applied */
	size_t			seed_len;
	uint64_t		seed_now;
	char			seed_mark[4096]; /* SEED_MARK's path */

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

/* A cluster change asked for by a client (ADD, REMOVE, TRANSFER). */
struct ctl {
	struct ctl		*next;
	struct durable		*d;
	uint64_t		cid;		/* the client to answer */
	uint64_t		req_id;
	int			action;		/* SEMD__CLUSTER__ACTION__* */
	raft_id			node;
	char			address[256];
	struct raft_change	change;
	struct raft_transfer	transfer;
};

/* A read answered without an entry (durable_read). */
struct dread {
	struct dread		*next;
	uint64_t		cid;
	struct sm_caller	who;
	raft_index		index;	/* committed when it came: applied first */
	uint64_t		round;	/* the first barrier sent after it came */
	size_t			len;
	uint8_t			data[];
};

/* A proposed entry. */
struct proposal {
	struct raft_apply	req;
	struct durable		*d;
	bool			startup;	/* the BOOT/CONFIG/RESTART entry */
};

/* The host's state lock, and its state (lock held). */
static inline void d_lock(struct durable *d)
{
	d->host.lock(d->host.arg);
}

static inline void d_unlock(struct durable *d)
{
	d->host.unlock(d->host.arg);
}

static inline struct sm *d_sm(struct durable *d)
{
	return *d->host.sm;
}

/* durable.c */
uint64_t d_wall_ms(void);
uint64_t d_now_ms(void);
void d_started(struct durable *d, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* durable_propose.c */
bool d_propose(struct durable *d, struct qchunk *first,
    struct qchunk *end, uint64_t at_least, bool startup);
struct qchunk *qchunk_new(const uint8_t *data, size_t len);
void d_arm_deadline(struct durable *d, uint64_t next);
void d_wake_cb(uv_async_t *a);
void d_sweep_leases(struct durable *d);

/* durable.c: the seed is in the state: forget it and its mark. */
void d_seeded(struct durable *d);

/* durable_apply.c */
int d_fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf,
    void **result);
int d_fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
    unsigned int *n);
int d_fsm_snapshot_finalize(struct raft_fsm *fsm,
    struct raft_buffer *bufs[], unsigned int *n);
int d_fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf);

/* durable_read.c: the reads the loops queued, noted and a barrier asked
 * for; the reads never answered, freed (durable_stop). */
void d_reads_take(struct durable *d);
void d_reads_free(struct durable *d);

/* durable_cluster.c */
void d_ctl_start(struct durable *d, struct ctl *c);
bool d_hand_over(struct durable *d);
void d_poll_cb(uv_timer_t *t);

#endif
