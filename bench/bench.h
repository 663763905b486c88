/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/bench.h - semd-benchmark's engine: worker threads, each with its own
 * epoll set and its own connections, driving a closed loop (every connection
 * keeps `pipeline` operations in flight) for one test at a time.
 */
#ifndef SEMD_BENCH_BENCH_H
#define SEMD_BENCH_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "bench/hist.h"
#include "bench/wire.h"

#define BENCH_PIPELINE_MAX	4096
#define BENCH_HELLO_CHAIN	0xffffu		/* churn: the Hello's id */
#define BENCH_NAMES_CAP_S	600		/* names: give up after this */
#define ECHO_SIZE		32		/* the reference server's frame */

enum bench_test {
	T_PING,
	T_DOWN_UP,
	T_TRYDOWN_UP,
	T_CONTENDED,
	T_HANDOFF,
	T_CHURN,
	T_NAMES,
	T_ECHO,
	T_RATE,		/* a down on a rate-only name (tokens never short) */
	T_MULTI,	/* a down of 3 names at once, then their 3 ups */
	T_DOWN3,	/* the same with 3 downs one after the other */
	T_INFO,		/* an Info of the connection's name (a read) */
	T_COUNT
};

#define BENCH_MULTI	3	/* names of T_MULTI and T_DOWN3 */
#define BENCH_GROUPS_MAX 100000	/* handoff --groups */

/* What a chain (one op in flight) waits for. */
enum chain_step {
	S_IDLE,
	S_PING,
	S_DOWN,
	S_UP,
	S_CREATE,
	S_DELETE,
	S_ECHO1,
	S_ECHO2,
	S_MULTI,	/* DownMulti of the connection's 3 names */
	S_DOWNK,	/* down of name k of the 3 */
	S_UPK,		/* up (by count) of name k */
	S_INFO,		/* Info of the connection's name */
};

struct bench_opts {
	struct wire_addr	addr;
	struct wire_addr	ctl_addr;	/* --control: names and Stats */
	int			has_ctl;
	unsigned		conns;
	int			conns_set;
	unsigned		pipeline;
	unsigned		threads;
	double			duration;
	double			warmup;
	unsigned		limit;		/* 1 to UINT32_MAX */
	uint64_t		names;
	int			keep_names;	/* names: leave them in place */
	unsigned		groups;		/* handoff: fair shares, N groups (0: none) */
	int			priority;	/* handoff: downs of the 16 classes */
	int64_t			timeout_ms;
	int			json;
	struct wire_tls		tls;
	SSL_CTX			*tls_ctx;	/* tls: addresses */
	int			tls_resume;	/* churn: resume from the last ticket */
	int			tests[T_COUNT];
};

struct chain {
	uint64_t	id;	/* outstanding request, 0 when none */
	uint64_t	t_op;	/* when this op's first request went out */
	uint64_t	t_req;	/* when the outstanding request went out */
	uint64_t	permit;	/* the grant's permit id, released by the up */
	int		step;
	unsigned	k;	/* T_MULTI, T_DOWN3: which of the 3 names */
};

struct conn {
	struct worker	*w;
	int		 fd;
	SSL		*ssl;		/* tls: only */
	SSL_SESSION	*sess;		/* --tls-resume: the newest ticket */
	int		 handshaking;	/* churn: TLS handshake under way */
	unsigned	 idx;		/* 0..conns-1 over all workers */
	int		 want_out;
	int		 reconnect;	/* churn: op done, open a new session */
	struct wbuf	 out;
	struct wbuf	 in;
	struct chain	*chains;
	unsigned	 nchains;
	unsigned	*hq;		/* http: the chains asked, in order */
	unsigned	 hq_head;
	unsigned	 hq_len;
	uint64_t	 seq;
	uint64_t	 hello_id;
	uint64_t	 grants;	/* grants inside the window */
	int		 prio;		/* handoff --priority: its downs' class */
	char		 group[16];	/* handoff --groups: its downs' group */
	char		 name[64];
};

/* What a worker counts, and a run once the workers' counts are merged. */
struct bench_tally {
	struct hist		 lat;
	struct hist		 wait;
	struct hist		 acq;		/* a granted down's round trip */
	uint64_t		 ops;
	uint64_t		 rts;
	uint64_t		 refused;
	uint64_t		 timeouts;
	uint64_t		 direct;	/* handoff: grants that were not hand-offs */
	uint64_t		 grants_all;	/* every grant, window or not */
	uint64_t		 hs_full;	/* TLS handshakes done in the window: full, */
	uint64_t		 hs_resumed;	/* ... and resumed */
};

struct worker {
	struct run		*run;
	pthread_t		 tid;
	int			 ep;
	struct conn		**conns;
	unsigned		 nconns;
	struct wire_arena	 arena;
	struct bench_tally	 t;
	uint64_t		 outstanding;
	uint64_t		 next;		/* names: next index to create/delete */
	uint64_t		 end;
	int			 failed;
	char			 err[256];
};

/* One measured run of one test. */
struct run {
	const struct bench_opts	*o;
	int			 test;
	int			 step;		/* names: S_CREATE or S_DELETE */
	unsigned		 conns;
	unsigned		 pipeline;
	unsigned		 nworkers;
	uint32_t		 limit;
	char			 prefix[48];	/* per-process name prefix */
	struct worker		*workers;
	uint64_t		 t0;
	uint64_t		 t_meas;
	uint64_t		 t_end;
	uint64_t		 t_stop;
	_Atomic uint64_t	 last_up;	/* handoff: when the last up went out */
	atomic_int		 stop;
	pthread_barrier_t	 barrier;
	double			 cpu_s;		/* this process, whole run */
	struct bench_tally	 t;		/* the workers' tallies, merged */
	uint64_t		 grants_min;
	uint64_t		 grants_max;
	double			 elapsed_s;	/* measured window actually run */
};

/* Monotonic clock in nanoseconds. */
uint64_t bench_now(void);

/* Name of connection i's semaphore in run r. */
void bench_conn_name(const struct run *r, unsigned i, char *buf, size_t len);
/* T_MULTI, T_DOWN3: connection i's name k (0..BENCH_MULTI-1). */
void bench_conn_name_k(const struct run *r, unsigned i, unsigned k, char *buf, size_t len);
/* The 32-byte name number i of the names test. */
void bench_names_name(const struct run *r, uint64_t i, char *buf, size_t len);

/*
 * Open the run's connections, run the workers for the window, merge the
 * results into r. Returns 0, or -1 with a message printed.
 */
int bench_run(struct run *r);

/* engine.c, for run.c: a worker's connections and their closed loop. */
void worker_fail(struct worker *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int conn_open(struct conn *c, int hello);
void conn_start(struct conn *c, uint64_t now);
void conn_handshake(struct conn *c);
void conn_read(struct conn *c);
void conn_flush(struct conn *c);
void conn_close(struct conn *c);

#endif
