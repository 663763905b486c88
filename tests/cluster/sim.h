/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/sim.h - what the files of the cluster simulation share
 * (sim.c: the harness, the nodes and the checks; sim_node.c: what the nodes'
 * log core hands the simulation - replies, reads, entries applied - and
 * their disks; sim_client.c: the simulated clients' moves; sim_idle.c: idle
 * sessions; sim_read.c: reads off the log). Each node runs the daemon's own
 * log core (daemon/log/core.h) and peer port (daemon/log/port.h) on
 * libraft's in-memory fixture.
 */
#ifndef SEMD_TESTS_CLUSTER_SIM_H
#define SEMD_TESTS_CLUSTER_SIM_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <raft.h>
#include <raft/fixture.h>

#include "daemon/log/core.h"
#include "daemon/log/port.h"
#include "daemon/state/state.h"
#include "tests/common/opts.h"
/*
 * One sequence of random numbers for the whole simulation, wherever they
 * are drawn: a seed replays exactly.
 */
extern uint64_t sim_rng;
#define RNG_STATE sim_rng
#include "tests/common/rng.h"

#define MAXNODES	5
#define NCL		8		/* clients */
#define NNAMES		3
#define RING		64		/* requests a client remembers */
#define REQ_TIMEOUT	2000		/* a client gives up on a node (ms) */
#define DRIFT_PPM	10000		/* client-side lease: as libsemclient */
#define MARGIN_MIN	50

struct node {
	unsigned int	i;
	struct raft	*raft;
	struct semlog_core *core;	/* the daemon's log core */
	struct semlog_port *port;	/* ... and its peer port, on the fixture's io */
	struct semlog_host host;	/* what the core calls: this node's state */
	struct raft_fsm	fsm;		/* the core's, watched (sim_node.c) */
	struct sm	*sm;
	struct sm_config cfg;
	uint64_t	due;		/* when its core's timers are next due */
	uint64_t	takeovers;	/* its core's, as last seen */
	uint64_t	setup_at;	/* the take-over it was handed the setup in */
	uint64_t	hash;		/* of what the entry being applied said */
	uint64_t	back_st;	/* log time it came back from a pause as
					 * a leader (its sweep was paused too) */
	/* The fixture's disk, watched (see fix_truncate). */
	int		(*append)(struct raft_io *io, struct raft_io_append *req,
	    const struct raft_entry entries[], unsigned n, raft_io_append_cb cb);
	int		(*truncate)(struct raft_io *io, raft_index index);
	size_t		stored;		/* entries the fixture's disk holds */
	struct pending {
		struct raft_io_append *req;
		raft_io_append_cb cb;
		unsigned n;
	}		*pend;
	size_t		npend, cappend;
};

struct hold {
	uint64_t	permit;
	uint64_t	token;
	int		name;
};

struct sent {
	uint64_t	conn;
	uint64_t	id;
	uint64_t	at;		/* sim time it was sent */
	int		name;		/* a down's name, or -1 */
	int		client;
	bool		retry;		/* sent again after a resume */
	bool		waits;		/* a down that may wait (timeout != 0) */
	int		rkey;		/* a down's replace key (-1: none) */
	int		prio;		/* a down's priority */
};

struct client {
	int		node;		/* attached to (-1: none) */
	uint64_t	conn;		/* its connection's client id */
	bool		hello_out;	/* the Hello is unanswered */
	uint64_t	session;
	uint8_t		secret[SM_SECRET_LEN];
	uint32_t	lease;		/* granted */
	uint64_t	trust_base;	/* send time of the last answered request */
	uint64_t	next_id;
	/* The outstanding down (kept across a resume: retried). */
	uint64_t	down_id;
	int		down_name;
	int64_t		down_timeout;
	int		down_rkey;	/* its replace key (-1: none) */
	int		down_group;	/* its group (-1: none) */
	uint64_t	down_sent;	/* 0: not sent on this connection */
	uint64_t	last_sent;	/* anything, on this connection */
	uint64_t	last_heard;
	uint64_t	next_ping;
	uint64_t	next_act;
	uint64_t	answered;	/* answers heard */
	struct hold	holds[8];
	int		nholds;
	struct sent	ring[RING];
	unsigned int	nring;
};

/* Tokens granted per name, ascending, with the down that got each. */
struct token {
	uint64_t	token;
	int		client;
	uint64_t	id;
};

extern const char *const names[NNAMES];
extern const unsigned int limits[NNAMES];

/*
 * The queue features of each name, drawn for every seed: fair shares (by
 * principal or by a down's group, with weights), a bound on its waiters,
 * priorities of its downs, replace keys. A name with any of them is
 * created by the first entry a new leader is handed (setup_names, before
 * any client's); the others are created by their first down.
 */
#define NGROUPS		3		/* groups g0.., principals uid:0.. */
#define NRKEYS		2		/* replace keys k0.. */
struct namecfg {
	int		share;		/* SEMD__SHARE_BY__* */
	uint32_t	weights[NGROUPS];
	uint32_t	max_waiters;	/* 0: none */
	uint32_t	min_bound;	/* the least bound it had (0: never one):
					 * clients change it (SetQueue) */
	bool		prio;		/* its downs have priorities */
	bool		rkeys;		/* its downs may have replace keys */
};
extern struct namecfg ncfg[NNAMES];
#define SETUP_CONN	(IDLE_BASE - 1)	/* the connection that creates them */
void setup_names(struct sm_batch *b);

/* What a down was answered besides grants (per seed: sim_node.c). */
struct answer {
	int		client;
	uint64_t	id;
};
extern struct answer *replaced;
extern size_t nreplaced, capreplaced;
extern unsigned long grants_high, grants_normal, grants_low, grants_shared;
extern unsigned long replaced_answered, full_answered, bounds_set;
extern struct raft_fixture f;
extern struct node nodes[MAXNODES];
extern unsigned int nn;
extern uint32_t grace;		/* restart-grace */
extern uint64_t *ledger;
extern size_t ledger_cap;
extern struct client cl[NCL];
extern uint64_t next_conn;
extern struct token *tokens[NNAMES];
extern size_t ntokens[NNAMES], captokens[NNAMES];
extern unsigned long grants, entries, faults, snaps_compared, installs;
extern unsigned long pings_local, expired_asked;
extern uint64_t last_leader_st;	/* state time the last leader took over at */
extern bool names_made;		/* setup_names' entry was applied */

/*
 * Idle clients (sim_idle.c): sessions with a lease that only ping, off the
 * log, through leader changes; some go away. Their connections' client ids
 * are IDLE_BASE + their index.
 */
#define IDLE_BASE	(1ULL << 40)
#define IDLE_SHIFT	20		/* + attachment << IDLE_SHIFT + index */
#define IDLE_MASK	((1ULL << IDLE_SHIFT) - 1)
#define IDLE_ROUND	50		/* ms between their rounds */
#define LINGER_SLACK	1000		/* state ms: sweep, commit, retry */
#define LEASE_FLOOR	1000		/* twice the election timeout */
extern unsigned int nidle;
void idle_start(unsigned int n);
void idle_round(void);
void idle_hear(const struct node *n, uint64_t conn, const Semd__Reply *r);
void idle_closed(const struct node *n, uint64_t conn);
void idle_end(void);
void idle_rebind(struct sm *sm);

/*
 * Reads off the log (sim_read.c): the core's read barrier under the faults.
 * A read of connection conn (request id) begun on node n; its answer (the
 * core's host->read): the check, then the state read for a client's.
 */
#define READ_CONN	(IDLE_BASE - 2)	/* the connection of reads_step's */
extern unsigned long reads_answered, reads_dropped;
bool read_begin(struct node *n, uint64_t conn, const Semd__Request *rq);
void read_answer(void *arg, uint64_t cid, const struct sm_caller *who,
    const uint8_t *data, size_t len, bool lead);
void reads_step(void);
void reads_end(void);

raft_time now(void);
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2),
    noreturn));
void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t trust_end(const struct client *c);
struct sent *find_sent(uint64_t conn, uint64_t id);
struct client *client_of(uint64_t conn);
/* Is node n alive and serving clients (its core says)? */
bool serving(const struct node *n);
/* Hand the batch's commands to node n's core (dropped when it does not serve). */
void submit(struct node *n, const struct sm_batch *b);
/* The state time now, by node n's leader clock or its state. */
uint64_t state_now_of(struct node *n);
void on_reply(void *ctx, void *conn, const Semd__Reply *r);
void drop_client(struct client *c, const char *why);
void on_close(void *ctx, void *conn);
/* The core's host for node n (sim_node.c); its state machine watched. */
void node_host(struct node *n);
void node_fsm(struct node *n);
int fix_append(struct raft_io *io, struct raft_io_append *req,
    const struct raft_entry ents[], unsigned cnt, raft_io_append_cb cb);
int fix_truncate(struct raft_io *io, raft_index index);
void hello_make(Semd__Request *rq, Semd__Hello *h, uint64_t id,
    const char *client_name, uint32_t lease_ms, uint64_t session,
    uint8_t *secret);
void client_step(struct client *c);
void deliver(struct client *c, const Semd__Reply *r);

#endif
