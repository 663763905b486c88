/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/durable.h - --data-dir: every change of the state is an entry of
 * a raft log (canonical raft on libuv, one voter) and is applied only once
 * committed; the reply goes out after.
 *
 * Raft lives on a thread of its own (no raft call is thread-safe). The
 * event loops hand it commands (struct sm_batch: opens, requests with the
 * access decision, closes) through durable_submit(); it stamps them with
 * the state time and proposes them, all that came in meanwhile as one
 * entry (group commit), and applies committed entries to the state machine
 * under the state lock. Replies then reach the connections through their
 * loops' mailboxes, as a grant across loops does. Deadlines fire through
 * an empty entry proposed when the earliest one is due.
 *
 * State time is log time: it continues from the last entry after a restart
 * (the downtime does not count against any lease), and a restart adds a
 * grace to every lease on top (RESTART entry).
 */
#ifndef SEMD_DURABLE_H
#define SEMD_DURABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/state/state.h"

struct semd_config;
struct durable;

/*
 * What the log needs of its host (the server), so that it depends on no
 * part of it: the state lock, the state machine, this node's clients. The
 * raft thread calls them; those marked "locked" with the lock held.
 */
struct durable_host {
	void		*arg;			/* passed to each call */
	struct sm	**sm;			/* the state; a restore replaces it (locked) */
	void		(*lock)(void *arg);
	void		(*unlock)(void *arg);
	struct sm_config (*sm_config)(void *arg);	/* locked: the settings */
	struct sm_out	(*sm_out)(void *arg);		/* locked: its outputs */
	/*
	 * Locked: this node's connection of client cid, or NULL (sm_apply()'s
	 * bind hook); len bytes of cid's requests were applied (its done
	 * hook); answer a connection (a cluster change).
	 */
	void		*(*conn)(void *arg, uint64_t cid);
	void		(*applied)(void *arg, uint64_t cid, size_t len);
	/*
	 * semd --restore: a backup's snapshot (checked by the host: it
	 * restores) and its state time, which a new log starts from instead
	 * of an empty state; NULL: none. Only an empty data directory is
	 * seeded; the log copies the bytes.
	 */
	const uint8_t	*seed;
	size_t		seed_len;
	uint64_t	seed_now;
	void		(*reply)(void *arg, void *conn, const Semd__Reply *r);
	void		(*drop_clients)(void *arg);	/* leadership lost */
	/*
	 * Locked: answer client cid's read (durable_read), its barrier
	 * passed; lead false: this node no longer leads, it is not run.
	 */
	void		(*read)(void *arg, uint64_t cid,
	    const struct sm_caller *who, const uint8_t *data, size_t len,
	    bool lead);
};

/*
 * Check (or make) cfg's data directory and start the raft thread: replay the
 * log, take the state over, append the restart entry. *dp is set at once
 * (durable_stop() frees it, whatever the outcome). Returns 0 once the state
 * is ready to serve, or a sysexits code with the reason in err: EX_CONFIG
 * for a damaged or foreign data directory, EX_CANTCREAT or EX_IOERR when it
 * cannot be used. advertise: where clients reach this node.
 */
int durable_start(struct durable **dp, const struct semd_config *cfg,
    const struct durable_host *host, const char *advertise, char *err,
    size_t errlen);
/* Stop the raft thread (entries not committed yet are dropped); free d. */
void durable_stop(struct durable *d);
/* Hand a batch of commands to the log (any thread); the batch is emptied. */
void durable_submit(struct durable *d, struct sm_batch *b);
/*
 * A read the leader answers without an entry (raft's ReadIndex; under the
 * state lock): the index committed now is noted; once a probe round sent
 * after this call is answered by a majority of the voters in this node's
 * term (raftguard_probe: no other leader can have committed anything
 * since) and the state has applied that index, host->read runs it on the
 * log's thread, reads in the order they came (the request is copied):
 * DURABLE_READ_QUEUED. A log of one voter and no peers (no node id) has no
 * other leader, and every change it acknowledged is applied already:
 * DURABLE_READ_NOW, the caller answers it at once. DURABLE_READ_NO when
 * this node does not serve (or no memory).
 */
enum durable_read { DURABLE_READ_NO, DURABLE_READ_QUEUED, DURABLE_READ_NOW };
enum durable_read durable_read(struct durable *d, uint64_t cid,
    const struct sm_caller *who, const uint8_t *data, size_t len);
/* Propose the settings that decide answers (after a reload). */
void durable_config(struct durable *d, const struct sm_config *cfg);
/*
 * A client id unique in this log: the node id in the top 16 bits and a
 * counter (ids start again after a restart, which closes every client).
 */
uint64_t durable_client_id(struct durable *d);
/* The leader answers client id without an entry: true, its session heard. */
bool durable_heard_locked(struct durable *d, uint64_t id);
/* The node's cluster figures for Stats (sm_config.local_counters). */
void durable_counters(struct durable *d, struct sm_local_counters *out);
/* Is this node the leader, serving clients? (any thread) */
bool durable_serving(struct durable *d);
/* The leader as this node knows it: its id (0: none), its client address. */
uint64_t durable_leader(struct durable *d, char *addr, size_t len);

/* What readiness (/readyz) needs of the log: this node's view. */
struct durable_health {
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
};
/* Fill h (any thread; does not take the state lock). */
void durable_health(struct durable *d, struct durable_health *h);
struct raftguard_stats;
/* The log's disk work: appends timed, snapshots written (any thread). */
void durable_io_stats(struct durable *d, struct raftguard_stats *out);
/*
 * The cluster status as a Reply body (r->cluster, freed with
 * semd__cluster_status__free_unpacked); -ENOMEM.
 */
int durable_status(struct durable *d, Semd__Reply *r, uint8_t **buf);
/* Start ADD, REMOVE or TRANSFER; client cid's request req_id is answered later. */
int durable_cluster_change(struct durable *d, uint64_t cid, uint64_t req_id,
    const Semd__Cluster *cl);
struct raft_configuration;
/*
 * Parse --bootstrap "ID=HOST:PORT,..." (HOST a name or IPv6 only with tls:
 * peer_addr.h). 0, or -1 with err filled.
 */
int durable_parse_bootstrap(const char *spec, bool tls,
    struct raft_configuration *conf, char *err, size_t errlen);

#endif
