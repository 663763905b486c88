/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/feed.h - how requests reach the state machine: the one place where
 * the two modes differ, chosen once when the server is made.
 *
 *   feed_memory (daemon/feed_memory.c): without --data-dir. Each request
 *	runs in the state machine at once, under the state lock; its time is
 *	the loops' monotonic clock, and the loops' timers fire its deadlines.
 *	The state goes with the process.
 *   feed_log (daemon/feed_log.c): with --data-dir. Each request is a
 *	command of the replicated log (daemon/log/), applied on every node
 *	once committed; time is the log's. The state outlives the process.
 *
 * As canonical raft's struct raft_io has a real and an in-memory
 * implementation, the shell (server.c, conn*.c, metrics.c) calls srv->feed
 * and never asks which one it has. What is the mode's own stays in the
 * feed: per server (srv->feed_state), per connection (c->feed_ctx, the
 * connection's one opaque slot); a connection offers the feed only to
 * pause its reading, to hold a frame and to resume (conn-int.h). Every call
 * named _locked runs under the state lock.
 */
#ifndef SEMD_FEED_H
#define SEMD_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/state/state.h"

struct conn;
struct semlog_health;
struct semlog_io_stats;
struct server;
struct worker;

struct feed {
	const char	*name;		/* "memory", "log" */
	bool		durable;	/* the state outlives the process */
	/* The state's clock when it is made: state time and unix time, ms. */
	void		(*clock)(uint64_t *now_ms, uint64_t *wall_ms);
	/* Once the listeners are open: take the state up. 0 or an exit code. */
	int		(*start)(struct server *srv);
	/* Stop what start() began and free it (the loops have ended). */
	void		(*stop)(struct server *srv);
	/* When a loop must tick the state next, UINT64_MAX: never. */
	uint64_t	(*deadline_locked)(const struct server *srv);
	/* That time came (a loop's timer): the deadlines due fire. */
	void		(*tick_locked)(struct server *srv);
	/* A new connection's client in the state: 0, or -ENOMEM. */
	int		(*open_locked)(struct conn *c, const char *principal,
			    const uint8_t secret[SM_SECRET_LEN]);
	/* c goes: its client lets go (c->feed_ctx is freed). */
	void		(*close_locked)(struct conn *c);
	/*
	 * May c's next frame, req, run now? False: the feed held it
	 * (conn_hold_locked), it runs again when the feed resumes c.
	 */
	bool		(*admit_locked)(struct conn *c, const Semd__Request *req);
	/*
	 * One request of c that the policy let through (who: its decision)
	 * and that is the state's (the op table: no Cluster); data/len: its
	 * bytes. False: stop reading c.
	 */
	bool		(*request_locked)(struct conn *c, const Semd__Request *req,
			    const struct sm_caller *who, const uint8_t *data,
			    size_t len);
	/* A Cluster request the policy let through: the node answers it. */
	void		(*cluster_locked)(struct conn *c, const Semd__Request *req);
	/* PROTOCOL_ERROR (id 0) to what c sent that could not be decoded. */
	void		(*protocol_error_locked)(struct conn *c, const char *why);
	/*
	 * Off the lock, on w's thread: hand over what w's loop gathered for
	 * the state (after a read, an open, a close).
	 */
	void		(*submit)(struct worker *w);
	/* A stop: tell the clients, and what the state does about it. */
	void		(*stopping_locked)(struct server *srv);
	/* New settings for the state (a reload). */
	void		(*reconfigure_locked)(struct server *srv,
			    const struct sm_config *sc);
	/* This node's own figures for Stats and metrics (any thread). */
	void		(*counters)(struct server *srv,
			    struct sm_local_counters *out);
	/* The leader as this node knows it (0: none), where clients reach it. */
	uint64_t	(*leader)(struct server *srv, char *addr, size_t len);
	/* The log's view for readiness (any thread); false: there is no log. */
	bool		(*health)(struct server *srv, struct semlog_health *out);
	/* The log's disk work (any thread); false: there is no log. */
	bool		(*io_stats)(struct server *srv, struct semlog_io_stats *out);
};

/*
 * A feed whose operations are named PREFIX_OP (memory_start, ...): every
 * one of them, in the order of struct feed.
 */
#define FEED_OF(NAME, DURABLE, P) {					\
	.name = (NAME), .durable = (DURABLE),				\
	.clock = P##_clock, .start = P##_start, .stop = P##_stop,	\
	.deadline_locked = P##_deadline_locked,				\
	.tick_locked = P##_tick_locked,					\
	.open_locked = P##_open_locked, .close_locked = P##_close_locked, \
	.admit_locked = P##_admit_locked,				\
	.request_locked = P##_request_locked,				\
	.cluster_locked = P##_cluster_locked,				\
	.protocol_error_locked = P##_protocol_error_locked,		\
	.submit = P##_submit, .stopping_locked = P##_stopping_locked,	\
	.reconfigure_locked = P##_reconfigure_locked,			\
	.counters = P##_counters, .leader = P##_leader,			\
	.health = P##_health, .io_stats = P##_io_stats,			\
}

/* The two; server_new() takes feed_log when there is a data directory. */
extern const struct feed feed_memory;
extern const struct feed feed_log;

#endif
