/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/semlog.h - the log (--data-dir), as the shell sees it: every
 * change of the state is an entry of a raft log (libraft on libuv; one voter,
 * or a cluster) and is applied only once committed; the reply goes out after.
 *
 * The room daemon/log/ (libsemlog.a) has two floors:
 *   core.h    the log's core: proposals and their group commit, the leader's
 *             first entry, deadline ticks and lease sweeps, reads after a
 *             read barrier, snapshots, applying - no thread, no libuv and no
 *             clock of its own; the simulation (tests/cluster/sim) runs it
 *             on libraft's in-memory fixture;
 *   thread.c  the log thread around it (this interface): its libuv loop, the
 *             inbox the event loops fill, raft's disk and network I/O, the
 *             peer transports (peer_tls.h), the data directory (datadir.h);
 *   port.h    between either I/O and libraft: every peer message passes it.
 *
 * Raft lives on the log thread (no raft call is thread-safe). The event loops
 * hand it commands (struct sm_batch: opens, requests with the access
 * decision, closes) through semlog_submit(); it stamps them with the state
 * time and proposes them, all that came in meanwhile as one entry (group
 * commit), and applies committed entries to the state machine under the
 * state lock. Replies then reach the connections through their loops'
 * mailboxes, as a grant across loops does. Deadlines fire through an empty
 * entry proposed when the earliest one is due.
 *
 * State time is log time: it continues from the last entry after a restart
 * (the downtime does not count against any lease), and a restart adds a
 * grace to every lease on top (the leader's first entry).
 */
#ifndef SEMD_LOG_SEMLOG_H
#define SEMD_LOG_SEMLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/state/state.h"

struct semlog;

/*
 * What the log needs of its host (the server), so that it depends on no
 * part of it: the state lock, the state machine, this node's clients. The
 * log thread calls them; those marked "locked" with the lock held.
 */
struct semlog_host {
	void		*arg;			/* passed to each call */
	struct sm	**sm;			/* the state; a restore replaces it (locked) */
	void		(*lock)(void *arg);
	void		(*unlock)(void *arg);
	struct sm_config (*sm_config)(void *arg);	/* locked: the settings */
	struct sm_out	(*sm_out)(void *arg);		/* locked: its outputs */
	/*
	 * Locked: this node's connection of client cid, or NULL; len bytes
	 * of cid's requests were applied (sm_apply()'s done hook); answer a
	 * connection (a cluster change).
	 */
	void		*(*conn)(void *arg, uint64_t cid);
	/*
	 * Locked: the connection an opened client is bound to (sm_apply()'s
	 * bind hook; NULL: conn's).
	 */
	void		*(*bind)(void *arg, uint64_t cid);
	void		(*applied)(void *arg, uint64_t cid, size_t len);
	void		(*reply)(void *arg, void *conn, const Semd__Reply *r);
	/*
	 * Leadership lost: nothing applied from now on reaches a client of
	 * this node (at once); they are told where to go and closed.
	 */
	void		(*drop_clients)(void *arg);
	/*
	 * Locked: answer client cid's read (semlog_read), its barrier
	 * passed; lead false: this node no longer leads, it is not run.
	 */
	void		(*read)(void *arg, uint64_t cid,
	    const struct sm_caller *who, const uint8_t *data, size_t len,
	    bool lead);
};

/* The log's settings (from semd.conf and the command line). */
struct semlog_config {
	const char	*data_dir;
	uint32_t	node_id;		/* 0: one voter, no peers */
	const char	*peer_listen;		/* HOST:PORT raft's peers reach */
	const char	*peer_bind;		/* ... bound here instead, or NULL */
	const char	*bootstrap;		/* "ID=HOST:PORT,...", or NULL */
	const char	*peer_tls_cert;		/* peer TLS (all three), or NULL */
	const char	*peer_tls_key;
	const char	*peer_tls_ca;
	const char	*peer_key;		/* plain peers' shared secret, or NULL
						 * (then unauthenticated: the
						 * configuration allowed it) */
	const char	*advertise;		/* where clients reach this node */
	uint32_t	restart_grace_ms;
	uint32_t	snapshot_every;		/* entries between snapshots */
	uint32_t	election_timeout_ms;	/* a cluster's */
	/*
	 * semd --restore: a backup's snapshot (checked by the host: it
	 * restores) and its state time, which a new log starts from instead
	 * of an empty state; NULL: none. Only an empty data directory is
	 * seeded; the log copies the bytes.
	 */
	const uint8_t	*seed;
	size_t		seed_len;
	uint64_t	seed_now;
};

/*
 * Check (or make) the data directory and start the log thread: replay the
 * log, take the state over, append the leader's first entry. *lp is set at
 * once (semlog_stop() frees it, whatever the outcome). Returns 0 once the
 * state is ready to serve, or a sysexits code with the reason in err:
 * EX_CONFIG for a damaged or foreign data directory, EX_CANTCREAT or EX_IOERR
 * when it cannot be used.
 */
int semlog_start(struct semlog **lp, const struct semlog_config *cfg,
    const struct semlog_host *host, char *err, size_t errlen);
/* Stop the log thread (entries not committed yet are dropped); free l. */
void semlog_stop(struct semlog *l);
/* Hand a batch of commands to the log (any thread); the batch is emptied. */
void semlog_submit(struct semlog *l, struct sm_batch *b);
/*
 * A read the leader answers without an entry (raft's ReadIndex; under the
 * state lock): the index committed now is noted; once a probe round sent
 * after this call is answered by a majority of the voters in this node's
 * term (semlog_port_probe: no other leader can have committed anything
 * since) and the state has applied that index, host->read runs it on the
 * log thread, reads in the order they came (the request is copied):
 * SEMLOG_READ_QUEUED. A log of one voter and no peers (no node id) has no
 * other leader, and every change it acknowledged is applied already:
 * SEMLOG_READ_NOW, the caller answers it at once. SEMLOG_READ_NO when this
 * node does not serve (or no memory).
 */
enum semlog_read { SEMLOG_READ_NO, SEMLOG_READ_QUEUED, SEMLOG_READ_NOW };
enum semlog_read semlog_read(struct semlog *l, uint64_t cid,
    const struct sm_caller *who, const uint8_t *data, size_t len);
/* Propose the settings that decide answers (after a reload). */
void semlog_reconfigure(struct semlog *l, const struct sm_config *cfg);
/*
 * A client id unique in this log: the node id in the top 16 bits and a
 * counter (ids start again after a restart, which closes every client).
 * Under the state lock.
 */
uint64_t semlog_client_id(struct semlog *l);
/* The leader answers client id without an entry: true, its session heard. */
bool semlog_heard_locked(struct semlog *l, uint64_t id);
/* The node's cluster figures for Stats (sm_config.local_counters). */
void semlog_counters(struct semlog *l, struct sm_local_counters *out);
/* Is this node the leader, serving clients? (any thread) */
bool semlog_serving(struct semlog *l);
/* The leader as this node knows it: its id (0: none), its client address. */
uint64_t semlog_leader(struct semlog *l, char *addr, size_t len);

/*
 * This node's data directory's disk, as the log thread sees it every 20
 * ms: a write of the log has waited a second and the file system has no
 * room for another segment of it (full), or a write has waited 5 seconds
 * (stalled: full for a quota, failing, or very slow). Either ends with the
 * next write that goes through (raft_uv tries again every second).
 */
enum semlog_disk { SEMLOG_DISK_OK, SEMLOG_DISK_FULL, SEMLOG_DISK_STALLED };

/*
 * Writes refused (any thread): while this node serves, its disk is full or
 * stalled, and nothing it proposed has committed for a second (a log of
 * one voter, or a cluster without a majority of other voters that take
 * writes), what would go into the log - requests, new sessions and resumed
 * ones - is answered UNAVAILABLE with this message at once instead of
 * waiting behind the write that cannot be made; reads and Pings are still
 * answered (they need no entry). NULL when writes are taken.
 */
const char *semlog_refusal(struct semlog *l);

/* What readiness (/readyz) needs of the log: this node's view. */
struct semlog_health {
	bool		cluster;	/* peers (node-id given), or one voter */
	bool		serving;	/* the leader, serving clients */
	bool		leader;		/* raft's state is leader (serving or not yet) */
	uint64_t	node_id;
	uint64_t	leader_id;	/* 0: no leader known */
	bool		leader_addr;	/* its client address is known */
	uint64_t	term;
	uint64_t	applied;	/* the last entry applied here */
	uint64_t	commit;		/* the highest commit index heard of */
	uint64_t	snapshot;	/* the last snapshot a leader sent (0: none) */
	enum semlog_disk disk;		/* its data directory's disk */
	bool		refusing;	/* writes refused (semlog_refusal) */
};
/* Fill h (any thread; does not take the state lock). */
void semlog_health(struct semlog *l, struct semlog_health *h);

/*
 * The log's disk work, for the metrics. Appends by duration: bucket i holds
 * those that took at most semlog_append_le_us[i] (and more than the bound
 * before), the last bucket those above every bound; from libraft's append
 * call to its completion, the wait behind earlier writes included.
 * Snapshots written (taken here, or installed from a leader), and those
 * whose write failed (not counting a write cancelled by a close).
 */
#define SEMLOG_APPEND_BUCKETS	16
extern const uint32_t semlog_append_le_us[SEMLOG_APPEND_BUCKETS - 1];
struct semlog_io_stats {
	uint64_t	append_bucket[SEMLOG_APPEND_BUCKETS];
	uint64_t	append_sum_us;
	uint64_t	snapshots;
	uint64_t	snapshot_failures;
	enum semlog_disk disk;		/* the disk as last seen (semlog_refusal) */
	bool		refusing;	/* writes refused */
	uint64_t	write_wait_ms;	/* the oldest write not done has waited */
};
/* What the log's disk did so far (any thread). */
void semlog_io_stats(struct semlog *l, struct semlog_io_stats *out);
/*
 * The cluster status as a Reply body (r->cluster, freed with
 * semd__cluster_status__free_unpacked); -ENOMEM.
 */
int semlog_status(struct semlog *l, Semd__Reply *r);
/* Start ADD, REMOVE or TRANSFER; client cid's request req_id is answered later. */
int semlog_cluster_change(struct semlog *l, uint64_t cid, uint64_t req_id,
    const Semd__Cluster *cl);

#endif
