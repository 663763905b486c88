/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * semclient.h - the C client library of semd, the networked counting
 * semaphore service.
 *
 * One struct semc is one connection (one daemon session). It is safe to
 * share between threads: requests are multiplexed by id over the one
 * socket. Every operation exists in a blocking form (with a timeout) and
 * most in an asynchronous form (a completion callback) for event loops,
 * which poll semc_fd() and call semc_process() within semc_timeout() ms.
 * Permits are taken by four downs (semc_down2() and its asynchronous and
 * multi-name forms) with one options struct; the older downs stay, for
 * compatibility, as wrappers of them.
 *
 * A session with a lease is kept alive by a library thread (pings every
 * third of the lease) unless semc_set_keepalive_thread(c, false); its
 * client-side lease ends before the daemon's can (semclient(3)), and every
 * hold lost is reported (SEMC_EV_HOLD_LOST).
 *
 * Errors are negative enum semc_error values; semc_strerror() names them
 * and semc_last_message() gives the server's (or the library's) text for
 * the calling thread's last failed call. See semclient(3).
 *
 * ABI: only semc_* symbols are exported; the SONAME is libsemclient.so.1.
 * struct semc is opaque; result structs only ever grow at their end and
 * are allocated by the library (free them with their *_free function).
 */
#ifndef SEMCLIENT_H
#define SEMCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SEMC_DEFAULT_UNIX	"/run/semd/semd.sock"
#define SEMC_DEFAULT_PORT	7385

/* Results: 0 or a negative code. -1..-13 mirror the protocol's codes. */
enum semc_error {
	SEMC_OK = 0,
	SEMC_E_TIMEOUT = -1,		/* the down's deadline passed */
	SEMC_E_WOULD_BLOCK = -2,	/* trydown could not be granted now */
	SEMC_E_NOT_FOUND = -3,
	SEMC_E_EXISTS = -4,
	SEMC_E_NOT_HOLDER = -5,
	SEMC_E_PERMISSION = -6,
	SEMC_E_INVALID = -7,
	SEMC_E_EXHAUSTED = -8,
	SEMC_E_CANCELLED = -9,
	SEMC_E_UNAVAILABLE = -10,	/* daemon shutting down, or refusing
					 * writes (its data disk full) */
	SEMC_E_PROTOCOL = -11,
	SEMC_E_INTERNAL = -12,
	SEMC_E_SESSION_EXPIRED = -13,
	SEMC_E_DEADLOCK = -14,		/* the down would close a cycle of waiting
					 * sessions (the message names it) */
	SEMC_E_QUEUE_FULL = -15,	/* the name's queue is at its max-waiters (0.4.0) */
	SEMC_E_REPLACED = -16,		/* the waiting down was replaced by a newer one
					 * with its replace key (0.4.0) */
	SEMC_E_COMPACTED = -18,		/* semc_watch_from(): the revision is no
					 * longer kept (the message says the oldest) */
	/* client side */
	SEMC_E_CONNECT = -100,		/* cannot connect to the daemon */
	SEMC_E_DISCONNECTED = -101,	/* connection lost, request not answered */
	SEMC_E_HOLD_LOST = -102,	/* a session-bound hold was lost */
	SEMC_E_NO_REPLY = -103,		/* the daemon did not answer in time */
	SEMC_E_NOMEM = -104,
	SEMC_E_ADDRESS = -105,		/* malformed address */
	SEMC_E_NOT_SUPPORTED = -106,
	SEMC_E_TLS = -107,		/* TLS setup, handshake or verification */
	SEMC_E_SYSTEM = -108,		/* a system call failed (see message) */
	SEMC_E_ARG = -109,		/* invalid argument to a library call */
};

enum semc_mode {
	SEMC_MODE_OWNED = 0,	/* only a holder can up, only what it holds */
	SEMC_MODE_SIGNAL = 1,	/* any client may up, bounded by the limit */
	SEMC_MODE_RATE = 2,	/* a token bucket without a limit: a down takes
				 * tokens for good, nothing is held, no up */
};

struct semc;

/* A granted permit. */
struct semc_grant {
	uint64_t permit_id;
	uint64_t token;		/* fencing token, strictly increasing per name */
	uint32_t n;
	uint64_t waited_us;
};

struct semc_holder {
	uint64_t permit_id;
	uint64_t token;
	uint32_t n;
	char *client_name;
	char *host;
	uint32_t pid;
	char *principal;
	uint64_t since_ms;	/* unix time, ms */
	bool detached;
	uint64_t expires_ms;	/* 0: tied to a live connection */
};

struct semc_waiter {
	uint64_t request_id;
	uint32_t n;
	char *client_name;
	char *host;
	uint32_t pid;
	char *principal;
	uint64_t since_ms;
	uint64_t deadline_ms;	/* 0: none */
	uint64_t seq;		/* arrival order, unique: semc_info_page()'s after_waiter */
	bool detached;		/* its session is disconnected, inside its lease */
};

/* A waiter's place in its queue's policies (0.4.0; struct semc_waiter is
 * left as 0.2.0 had it, an array callers index). */
struct semc_waiter_class {
	int32_t priority;	/* its down's class, -8..7 (0: the default) */
	char *replace;		/* its down's replace key ("": none) */
};

/* Fair shares of a name (0.4.0): split between groups by principal, or
 * by a down's group key (the principal when it gives none). */
enum semc_share_by {
	SEMC_SHARE_NONE = 0,
	SEMC_SHARE_PRINCIPAL = 1,
	SEMC_SHARE_KEY = 2,
};

/* A group of a name with fair shares, as semc_info() shows it. */
struct semc_group_info {
	char *group;
	uint32_t weight;
	uint32_t share;		/* permits: limit x weight / the weights of the
				 * groups holding or waiting (with it) */
	uint32_t held;		/* permits held */
	uint32_t waiting;	/* downs waiting */
};

struct semc_info {
	char *name;
	uint32_t limit;
	int64_t available;	/* negative after a shrinking set-limit */
	enum semc_mode mode;
	bool auto_created;
	uint64_t last_token;
	size_t n_holders;
	struct semc_holder *holders;
	size_t n_waiters;
	struct semc_waiter *waiters;	/* queue order */
	size_t holders_total;	/* all holders (semc_info() lists at most 10,000) */
	size_t waiters_total;	/* all waiters (semc_info() lists the first 10,000) */
	uint64_t next_permit;	/* non-zero: more holders, pass as after_permit */
	uint64_t next_waiter;	/* non-zero: more waiters, pass as after_waiter */
	/* 0.4.0: the token bucket (rate 0: none) */
	uint32_t rate;		/* tokens per rate_period_ms */
	uint32_t rate_period_ms;
	uint32_t burst;
	uint64_t tokens_nano;	/* tokens in the bucket now, in billionths */
	uint64_t next_token_ms;	/* unix ms of the next whole token (0: full) */
	/* 0.4.0: queue policies and fair shares */
	uint32_t max_waiters;	/* 0: no bound */
	enum semc_share_by share;
	size_t n_groups;
	struct semc_group_info *groups;	/* with shares: listed and active, by name */
	/* 0.4.0: each of waiters' class, in the same order (n_waiter_classes
	 * is n_waiters) */
	size_t n_waiter_classes;
	struct semc_waiter_class *waiter_classes;
};

struct semc_summary {
	char *name;
	uint32_t limit;
	int64_t available;
	enum semc_mode mode;
	uint32_t holders;
	uint32_t waiters;
};

struct semc_list {
	size_t n;
	struct semc_summary *entries;
	char *next;		/* non-empty: pass as `after` for the next page */
};

struct semc_counter {
	char *name;
	uint64_t value;
};

struct semc_stats {
	size_t n;
	struct semc_counter *counters;
};

/* What the daemon said in the handshake. */
struct semc_session {
	uint64_t session;	/* 0: none (the daemon's data disk was full) */
	uint32_t lease_ms;	/* granted session lease (0: none) */
	const char *principal;
	const char *server;	/* "semd 0.2.0" */
	bool resumed;
};

/* Connection events, reported through the event callback. */
enum semc_event_type {
	SEMC_EV_DISCONNECTED = 1,	/* the connection broke */
	SEMC_EV_RECONNECTED,		/* a new session (nothing was held) */
	SEMC_EV_RESUMED,		/* the session and its holds survived */
	SEMC_EV_HOLD_LOST,		/* one session-bound hold is gone */
	SEMC_EV_NOTICE,			/* unsolicited message from the daemon */
};

/* What a watch reports (semc_watch's callback). */
enum semc_watch_kind {
	SEMC_WATCH_WAIT = 1,	/* a down queued */
	SEMC_WATCH_GRANT,	/* permits (tokens) granted */
	SEMC_WATCH_RELEASE,	/* permits given back (reason: unless an up) */
	SEMC_WATCH_TIMEOUT,	/* a queued down's deadline passed */
	SEMC_WATCH_CANCEL,	/* a queued down left without a grant */
	SEMC_WATCH_LIMIT,	/* set-limit */
	SEMC_WATCH_RATE,	/* set-rate */
	SEMC_WATCH_CREATE,
	SEMC_WATCH_DELETE,
	SEMC_WATCH_DEADLOCK,	/* a down answered DEADLOCK (reason: the cycle) */
	SEMC_WATCH_QUEUE,	/* set-queue (0.4.0) */
	SEMC_WATCH_REPLACED,	/* a queued down replaced by a newer one (0.4.0) */
};

struct semc_watch_event {
	uint64_t watch;		/* the watch: semc_watch()'s result */
	const char *name;
	enum semc_watch_kind kind;
	const char *kind_name;	/* "wait", "grant", ... (semc_watch_kind_name) */
	uint64_t time_ms;	/* unix ms, the daemon's clock */
	uint32_t n;
	uint64_t permit_id;
	uint64_t token;
	uint64_t request_id;
	const char *principal;	/* "" when the watcher may not see who */
	const char *client_name;
	const char *host;
	uint32_t pid;
	uint32_t holders;	/* after the event */
	uint32_t waiters;
	int64_t available;
	uint32_t limit;
	uint32_t rate;
	uint32_t rate_period_ms;
	uint32_t burst;
	const char *reason;
	/* 0.4.0: its revision, one more than the event before it, the same on
	 * every node: semc_watch_from() resumes from the one after */
	uint64_t revision;
};

/* HOLD_LOST's error says why: SEMC_E_CANCELLED (force-released, or its
 * semaphore deleted with force), SEMC_E_SESSION_EXPIRED (the daemon ended
 * the session), SEMC_E_UNAVAILABLE (the daemon shut down), SEMC_E_HOLD_LOST
 * (the client-side lease ended: no answer in time), SEMC_E_DISCONNECTED
 * (the connection of a session without a lease broke). */
struct semc_event {
	enum semc_event_type type;
	int error;		/* HOLD_LOST/NOTICE/DISCONNECTED: why */
	const char *message;
	const char *name;	/* HOLD_LOST: the semaphore */
	uint64_t permit_id;	/* HOLD_LOST */
	uint64_t token;		/* HOLD_LOST */
	uint32_t n;		/* HOLD_LOST */
};

typedef void (*semc_event_fn)(struct semc *c, const struct semc_event *ev, void *arg);

/* The outcome of an asynchronous request, valid only during the callback. */
struct semc_result {
	uint64_t request_id;
	int error;			/* 0 or enum semc_error */
	const char *message;		/* never NULL */
	const struct semc_grant *grant;	/* down/trydown */
	const struct semc_info *info;	/* info */
	const struct semc_list *list;	/* list */
	const struct semc_stats *stats;	/* stats */
	bool valid;			/* validate */
	uint32_t released;		/* up/release: permits given back */
	const struct semc_multi_grant *multi;	/* down_multi (0.4.0) */
};

typedef void (*semc_done_fn)(struct semc *c, const struct semc_result *r, void *arg);

/* --- connection ------------------------------------------------------- */

/* Allocate an unconnected handle; NULL when out of memory. */
struct semc *semc_new(void);
/* Close the connection and free everything; pending requests fail. */
void semc_free(struct semc *c);

/* Options, set before semc_connect(). address NULL: $SEMD_SERVER, else
 * unix:/run/semd/semd.sock. Forms: unix:PATH, tcp:HOST[:PORT],
 * tls:HOST[:PORT] (HOST may be [IPv6]), /PATH, HOST[:PORT]. */
int semc_set_address(struct semc *c, const char *address);
int semc_set_client_name(struct semc *c, const char *name);
/* Session lease: holds survive a cut this long and are resumed. 0: none
 * (the session ends with its connection). */
void semc_set_lease(struct semc *c, uint32_t lease_ms);
/* A library thread keeps sessions with a lease alive (default on). Off:
 * the program calls semc_process() within semc_timeout() ms instead. */
void semc_set_keepalive_thread(struct semc *c, bool on);
/* Reply timeout of ordinary requests (default 10 s). */
void semc_set_timeout(struct semc *c, int timeout_ms);
/* Automatic reconnection (default on). */
void semc_set_reconnect(struct semc *c, bool on);
/* TLS files (PEM); NULL keeps $SEMD_TLS_CA / $SEMD_TLS_CERT / $SEMD_TLS_KEY. */
int semc_set_tls(struct semc *c, const char *ca_file, const char *cert_file, const char *key_file);
void semc_set_event_callback(struct semc *c, semc_event_fn fn, void *arg);

/* Connect and say Hello, waiting at most timeout_ms (< 0: default). */
int semc_connect(struct semc *c, int timeout_ms);
/* The handshake's result; valid until the next reconnect or semc_free(). */
int semc_session(struct semc *c, struct semc_session *out);
/* The address in use, canonical form ("unix:/run/semd/semd.sock"). */
const char *semc_address(const struct semc *c);

/* --- blocking operations -------------------------------------------------
 * Each waits for the reply at most the handle's timeout (semc_set_timeout);
 * down waits its own timeout_ms plus that. */

int semc_create(struct semc *c, const char *name, uint32_t limit, enum semc_mode mode,
		bool if_not_exists);

/* Options of semc_create_ex(); zero-initialise. (These structs are fixed:
 * new options come with new functions.) */
struct semc_create_opts {
	uint32_t limit;		/* >= 1 */
	enum semc_mode mode;
	bool if_not_exists;	/* 0 instead of SEMC_E_EXISTS when it exists */
	bool initial_set;	/* signal mode: start with `initial` free permits */
	uint32_t initial;	/* 0..limit (sema_init(&s, 0) is initial 0) */
};
int semc_create_ex(struct semc *c, const char *name, const struct semc_create_opts *opts);
/* Kept for compatibility (semc_down2() is the down): timeout_ms: < 0
 * forever, 0 trydown, > 0 deadline. lease_ms > 0: a detached hold owned by
 * the principal, kept lease_ms after we go. semc_trydown() is timeout 0. */
int semc_down(struct semc *c, const char *name, uint32_t n, int64_t timeout_ms,
	      uint32_t lease_ms, struct semc_grant *out);
int semc_trydown(struct semc *c, const char *name, uint32_t n, struct semc_grant *out);

/* Options of semc_down_ex(); zero-initialise. Kept for compatibility:
 * struct semc_down_options has these and the policy's. */
struct semc_down_opts {
	uint32_t n;		/* permits; 0 means 1 */
	int64_t timeout_ms;	/* < 0 forever, 0 trydown, > 0 deadline */
	uint32_t lease_ms;	/* > 0: a detached hold, as in semc_down() */
	uint32_t create_limit;	/* > 0: create a missing name with this limit;
				 * SEMC_E_EXISTS if it exists with another */
};
int semc_down_ex(struct semc *c, const char *name, const struct semc_down_opts *opts,
		 struct semc_grant *out);
/* Give back n permits of name, or exactly permit_id when it is non-zero. */
int semc_up(struct semc *c, const char *name, uint32_t n, uint64_t permit_id,
	    uint32_t *released);
/* Cancel a pending asynchronous down by its request id. */
int semc_cancel(struct semc *c, uint64_t request_id);
/* Describe a semaphore: up to 10,000 holders and waiters, fetched in pages. */
int semc_info(struct semc *c, const char *name, struct semc_info **out);
/* One page: at most max (0: the daemon's 100, capped at 1000) holders
 * granted after after_permit and max waiters queued after after_waiter
 * (0: from the start). Go on with the result's next_permit/next_waiter. */
int semc_info_page(struct semc *c, const char *name, uint32_t max, uint64_t after_permit,
		   uint64_t after_waiter, struct semc_info **out);
/* One page of names starting with prefix and greater than after. */
int semc_list(struct semc *c, const char *prefix, const char *after, uint32_t max,
	      struct semc_list **out);
int semc_delete(struct semc *c, const char *name, bool force);
int semc_set_limit(struct semc *c, const char *name, uint32_t limit);
/* *valid: whether token still holds a permit of name. */
int semc_validate(struct semc *c, const char *name, uint64_t token, bool *valid);
int semc_stats(struct semc *c, struct semc_stats **out);
/* Round trip; *rtt_us (may be NULL) gets its duration. */
int semc_ping(struct semc *c, uint64_t *rtt_us);
/* Admin: force-release someone else's permit. */
int semc_release(struct semc *c, const char *name, uint64_t permit_id, uint32_t *released);
/* Keep this session (for its lease) when its connection closes: over a
 * UNIX socket a close ends the session at once otherwise. Sent again on
 * every resume. */
int semc_detach(struct semc *c);

void semc_info_free(struct semc_info *info);
void semc_list_free(struct semc_list *list);
void semc_stats_free(struct semc_stats *stats);

/* --- asynchronous form ----------------------------------------------------
 * Each returns the request id (> 0) or a negative error; fn is called once,
 * from semc_process() (or from a thread blocked in a blocking call on the
 * same handle), never with the library's lock held. fn may start new
 * requests, including blocking ones. */

/* Kept for compatibility: semc_down2_async() is the asynchronous down. */
int64_t semc_down_async(struct semc *c, const char *name, uint32_t n, int64_t timeout_ms,
			uint32_t lease_ms, semc_done_fn fn, void *arg);
int64_t semc_down_ex_async(struct semc *c, const char *name, const struct semc_down_opts *opts,
			   semc_done_fn fn, void *arg);
int64_t semc_up_async(struct semc *c, const char *name, uint32_t n, uint64_t permit_id,
		      semc_done_fn fn, void *arg);
int64_t semc_info_async(struct semc *c, const char *name, semc_done_fn fn, void *arg);
int64_t semc_validate_async(struct semc *c, const char *name, uint64_t token,
			    semc_done_fn fn, void *arg);
int64_t semc_ping_async(struct semc *c, semc_done_fn fn, void *arg);

/* The socket to poll for reading; -1 while disconnected. It may change
 * after semc_process(): fetch it again before each poll. */
int semc_fd(struct semc *c);
/* Read what is available without blocking, dispatch replies and events.
 * While disconnected, retry the connection (with back-off). Returns the
 * number of requests completed, or a negative error. */
int semc_process(struct semc *c);
/* Milliseconds until semc_process() must run again (a keepalive ping, the
 * end of the client-side lease, a reconnection): -1 when nothing is due.
 * Use it as the poll timeout. */
int semc_timeout(struct semc *c);
/* Milliseconds left before the client-side lease of the session ends and
 * its holds are reported lost (0: ending now; -1: no lease or session). */
int64_t semc_lease_left(struct semc *c);
/* Requests sent and not answered yet. */
size_t semc_pending(struct semc *c);

/* --- rates, multi-name downs, watches, renew, holds, where (0.4.0) -----
 * Symbol version LIBSEMCLIENT_1.2. */

/* A token bucket: rate tokens every period_ms (0: 1000), at most burst (0:
 * rate). */
struct semc_rate {
	uint32_t rate;
	uint32_t period_ms;
	uint32_t burst;
};
/* Create with a bucket: opts->limit 0 makes a rate-only name (mode
 * SEMC_MODE_RATE: a down takes tokens, nothing is held); a limit makes an
 * owned name whose permits need a token each too. */
int semc_create_rate(struct semc *c, const char *name, const struct semc_create_opts *opts,
		     const struct semc_rate *rate);
/* Change a name's bucket live (rate->rate 0: take it away). */
int semc_set_rate(struct semc *c, const char *name, const struct semc_rate *rate);
/* Parse "5000/h", "10/s", "3/min", "1/250ms" or "7" (a second). */
int semc_parse_rate(const char *s, uint32_t *rate, uint32_t *period_ms);

/* One name of a multi-name down. */
struct semc_want {
	const char *name;
	uint32_t n;		/* 0 means 1 */
	uint32_t create_limit;	/* as semc_down_opts' */
};
struct semc_named_grant {
	char *name;
	uint64_t permit_id;
	uint64_t token;		/* this name's fencing token */
	uint32_t n;
};
struct semc_multi_grant {
	size_t n;
	struct semc_named_grant *grants;	/* in the order of the wants */
	uint64_t waited_us;
};
/* Take every want at once, or none (SysV semop): nothing is held while
 * waiting, one deadline (timeout_ms as semc_down's), lease_ms as
 * semc_down's for every hold. Owned-mode names only. *out: free with
 * semc_multi_grant_free(). SEMC_E_DEADLOCK when waiting would close a
 * cycle of sessions. Kept for compatibility: semc_down2_multi() and
 * semc_down2_multi_async() are the multi-name downs. */
int semc_down_multi(struct semc *c, const struct semc_want *wants, size_t n,
		    int64_t timeout_ms, uint32_t lease_ms, struct semc_multi_grant **out);
int64_t semc_down_multi_async(struct semc *c, const struct semc_want *wants, size_t n,
			      int64_t timeout_ms, uint32_t lease_ms, semc_done_fn fn, void *arg);
void semc_multi_grant_free(struct semc_multi_grant *g);

/* Watch a name, or with prefix every name that begins with name ("" and
 * prefix: all): returns the watch's id (> 0) or an error. Each event is
 * given to fn (called as completion callbacks are: from semc_process() or
 * a thread blocked in a call, never with the library's lock held; ev is
 * valid during the call) until semc_unwatch() or the connection's end: a
 * watch belongs to its connection, so after SEMC_EV_RECONNECTED or
 * SEMC_EV_RESUMED watch again (the events in between are lost). At most 16
 * watches a connection. */
typedef void (*semc_watch_fn)(struct semc *c, const struct semc_watch_event *ev, void *arg);
int64_t semc_watch(struct semc *c, const char *name, bool prefix, semc_watch_fn fn, void *arg);
int semc_unwatch(struct semc *c, uint64_t watch);
/* semc_watch() that first replays the events from revision from_revision
 * on (> 0) that the daemon still keeps (its watch-history), then goes on
 * live: pass the revision after the last event read to resume after a
 * reconnection or a failover without losing or repeating one.
 * SEMC_E_COMPACTED when some are no longer kept (the message says the
 * oldest kept). Symbol version LIBSEMCLIENT_1.4. */
int64_t semc_watch_from(struct semc *c, const char *name, bool prefix, uint64_t from_revision,
			semc_watch_fn fn, void *arg);
/* Where a resume of watch starts: the revision after its last event given
 * to the callback, or after the daemon's last one when the watch began
 * (so a watch that saw no event resumes without a gap); 0 for an unknown
 * watch. Symbol version LIBSEMCLIENT_1.4. */
uint64_t semc_watch_next_revision(struct semc *c, uint64_t watch);
/* "wait", "grant", "release", ... */
const char *semc_watch_kind_name(enum semc_watch_kind kind);

/* Renew the lease of detached holds of our principal on name: permit_id >
 * 0 that one, 0 all; lease_ms 0: their own lease again. *renewed and
 * *expires_ms (unix ms; both may be NULL) say what was done. */
int semc_renew(struct semc *c, const char *name, uint64_t permit_id, uint32_t lease_ms,
	       uint32_t *renewed, uint64_t *expires_ms);

/* A principal's holds across all names: ours (principal NULL or ""), or
 * another's (administrators). One page after after_permit, at most max (0:
 * 100, capped at 1000). */
struct semc_hold_entry {
	char *name;
	struct semc_holder holder;
};
struct semc_holds {
	size_t n;
	struct semc_hold_entry *entries;	/* by permit id */
	size_t total;		/* all the principal's holds */
	uint64_t next_permit;	/* non-zero: more, pass as after_permit */
};
int semc_holds(struct semc *c, const char *principal, uint64_t after_permit, uint32_t max,
	       struct semc_holds **out);
void semc_holds_free(struct semc_holds *h);

/* Where a pending asynchronous down (or multi-name down) of this handle
 * stands: one place per name. */
struct semc_place {
	char *name;
	uint32_t position;	/* 1: first in line; 0: further than 100,000 */
	uint32_t waiters;	/* in line, all */
	uint64_t held;		/* permits held now */
	uint32_t limit;
	int64_t available;
	uint32_t n;		/* wanted */
	uint64_t tokens_nano;	/* a bucket's tokens now, in billionths */
	uint64_t next_token_ms;	/* unix ms of its next token (0: full or none) */
};
struct semc_where {
	size_t n;
	struct semc_place *places;
	uint64_t since_ms;	/* unix ms when the down queued */
};
int semc_where(struct semc *c, uint64_t request_id, struct semc_where **out);
void semc_where_free(struct semc_where *w);

/* --- a program run under another session's hold ------------------------
 * Symbol version LIBSEMCLIENT_1.4.
 *
 * `semctl run NAME -- CMD` waits for CMD while it holds NAME. When CMD (or a
 * program it starts) waits for a name too, the daemon can see a deadlock
 * across the processes only if it knows that the run's session waits for
 * CMD's: a new session names its parent in its Hello. semctl run exports
 * SEMD_SESSION=ID:LINK (the session id, decimal, and its link, 16 hex
 * digits) to CMD, and semc_new() takes the parent from it; the daemon
 * ignores a parent that does not exist, belongs to another principal or
 * does not match the link. */

/* The parent for the sessions this handle starts (0, 0: none; this
 * overrides $SEMD_SESSION). Set before semc_connect(). */
void semc_set_parent(struct semc *c, uint64_t session, uint64_t link);
/* The link of the handle's current session, for a child's parent (0 while
 * disconnected, or from a daemon older than 0.4). */
uint64_t semc_session_link(struct semc *c);

/* --- for bindings: cancel without waiting, shut down before freeing ------
 * Symbol version LIBSEMCLIENT_1.3. */

/* semc_cancel() without waiting for the answer: the Cancel is queued (and
 * sent, if connected) before it returns, so a request made after it is
 * answered after it. fn (may be NULL) gets the Cancel's outcome; the
 * cancelled down's own callback still runs once, with SEMC_E_CANCELLED, or
 * with the grant when it crossed the Cancel (give that back). Returns the
 * Cancel's request id or a negative error. */
int64_t semc_cancel_async(struct semc *c, uint64_t request_id, semc_done_fn fn, void *arg);
/* Close the connection and stop the keepalive thread without freeing the
 * handle: every pending request fails with SEMC_E_DISCONNECTED (threads
 * blocked in calls on the handle return it, callbacks run with it) and
 * later calls fail at once. Holds are not reported lost. For a program
 * (a language binding) that must wake the threads blocked in calls before
 * it can semc_free() the handle; it may be called from a callback. */
void semc_shutdown(struct semc *c);

/* --- backups (symbol version LIBSEMCLIENT_1.4) --------------------------- */

struct semc_backup_info {
	uint64_t bytes;		/* of state */
	uint64_t wall_ms;	/* the daemon's unix ms when it was taken */
	uint8_t sha256[32];	/* of the state */
};
/* A consistent copy of the daemon's whole state (an administrator's right:
 * in memory, durable or a cluster's leader), written to fd as a backup file
 * that semd --restore reads: a 64-byte header ("SEMDBKUP", the length, the
 * time, the SHA-256), then the state. Read in chunks on this connection;
 * the checksum is verified before 0 is returned. On a failure fd has part
 * of a backup: discard it. info (may be NULL) gets its figures. */
int semc_backup(struct semc *c, int fd, struct semc_backup_info *info);

/* --- clusters ----------------------------------------------------------
 * semd --node-id N ...: the address may be a list, "tcp:a:7385,tcp:b:7385",
 * tried in turn; only the leader serves, and the library follows it
 * (a Redirect, a failover) and resumes the session there. */

struct semc_cluster_node {
	uint64_t id;
	char *address;		/* its peer address */
	char *role;		/* voter, standby, spare */
	uint64_t match_index;	/* the leader's view, 0 elsewhere */
	uint64_t lag;		/* entries behind the leader */
};

struct semc_cluster {
	uint64_t node_id;	/* the node that answered */
	char *state;		/* leader, follower, candidate, unavailable */
	uint64_t term;
	uint64_t commit_index;
	uint64_t applied_index;
	uint64_t last_index;
	uint64_t leader_id;	/* 0: none known */
	char *leader;		/* where clients reach the leader ("" unknown) */
	size_t n_nodes;
	struct semc_cluster_node *nodes;
};

/* The status as the first daemon of the list that answers sees it (any
 * node answers, leader or not; no session is made). */
int semc_cluster_status(struct semc *c, struct semc_cluster **out);
void semc_cluster_free(struct semc_cluster *cl);
/* Changes, made by the leader: a node joins as a voter (its peer address
 * HOST:PORT), leaves, or takes the leadership (0: any voter). */
int semc_cluster_add(struct semc *c, uint64_t node_id, const char *address);
int semc_cluster_remove(struct semc *c, uint64_t node_id);
int semc_cluster_transfer(struct semc *c, uint64_t node_id);

/* --- helpers ---------------------------------------------------------- */

const char *semc_strerror(int error);
/* The message of the calling thread's last failed call ("" if none). */
const char *semc_last_message(void);
/* Parse "250ms", "5s", "2m" or "2min", "1h", "1d", "1.5s" or a bare number of
 * seconds. */
int semc_parse_duration(const char *s, int64_t *ms);
/* The library's version, "0.2.0". */
const char *semc_version(void);

/* --- queue policies and priorities (0.4.0) ------------------------------
 * Symbol version LIBSEMCLIENT_1.4. */

/* A group's weight (1 to 1000; a group not listed weighs 1). */
struct semc_weight {
	const char *group;	/* 1 to 64 printable characters, no space */
	uint32_t weight;
};
struct semc_queue {
	uint32_t max_waiters;	/* > 0: a down that would wait while this many
				 * wait is refused SEMC_E_QUEUE_FULL; 0: no bound */
	/* Fair shares, at creation only (semc_set_queue() refuses them):
	 * while several groups wait, each is granted permits in proportion
	 * to its weight, FIFO inside a group; a group's unused share is lent
	 * and returned at the next hand-off. Owned names; such a name takes
	 * no multi-name downs and no priorities. */
	enum semc_share_by share;
	const struct semc_weight *weights;
	size_t n_weights;	/* at most 64 */
};
/* Create with queue policies (rate: NULL for none, as semc_create_rate()). */
int semc_create_queue(struct semc *c, const char *name, const struct semc_create_opts *opts,
		      const struct semc_rate *rate, const struct semc_queue *queue);
/* Change a name's queue policies (the same right as semc_set_limit()). */
int semc_set_queue(struct semc *c, const char *name, const struct semc_queue *queue);
/* Where a down goes in line; zero-initialise. */
struct semc_down_policy {
	/* A replace key (1 to 64 printable characters, no space) or NULL: once
	 * granted or queued, the down cancels the waiting down of the same
	 * principal with that key on the name, which fails SEMC_E_REPLACED
	 * ("latest wins"). One name only. */
	const char *replace;
	/* SEMC_PRIO_MIN..SEMC_PRIO_MAX, 0 by default: a higher class is served
	 * first, FIFO within a class, and a class is worth 10 s of waiting
	 * (aging: a down of class -8 waits at most 150 s for newer ones). */
	int priority;
	/* A name with SEMC_SHARE_KEY: the down's group (NULL: the principal). */
	const char *group;
};
#define SEMC_PRIO_MIN	(-8)
#define SEMC_PRIO_MAX	7
int semc_down_policy(struct semc *c, const char *name, const struct semc_down_opts *opts,
		     const struct semc_down_policy *policy, struct semc_grant *out);
int64_t semc_down_policy_async(struct semc *c, const char *name,
			       const struct semc_down_opts *opts,
			       const struct semc_down_policy *policy, semc_done_fn fn, void *arg);
/* A multi-name down with a priority (policy->replace must be NULL). Kept,
 * with semc_down_policy() and their _async forms, for compatibility: the
 * policy is in struct semc_down_options. */
int semc_down_multi_policy(struct semc *c, const struct semc_want *wants, size_t n,
			   int64_t timeout_ms, uint32_t lease_ms,
			   const struct semc_down_policy *policy, struct semc_multi_grant **out);
int64_t semc_down_multi_policy_async(struct semc *c, const struct semc_want *wants, size_t n,
				     int64_t timeout_ms, uint32_t lease_ms,
				     const struct semc_down_policy *policy, semc_done_fn fn,
				     void *arg);

/* --- the daemon's max-lease (symbol version LIBSEMCLIENT_1.5) ------------- */

/* The daemon's max-lease, as its last handshake said: the longest lease it
 * grants a session or a detached hold (0: unknown, before the first
 * connection or from a daemon older than 0.4). A down, multi-name down or
 * renew asking for a longer detached lease fails SEMC_E_INVALID before it
 * is sent (it would be cut to max-lease, the hold ending before its holder
 * expects); a session lease is granted up to it (semc_session()). */
uint32_t semc_max_lease(struct semc *c);

/* --- the downs: four calls, one options struct (LIBSEMCLIENT_1.6) --------
 * A down takes permits: blocking or asynchronous, of one name or of several
 * at once (SysV semop: every want, or none), every option of it in one
 * struct semc_down_options. These four are the downs; the older ones
 * (semc_down, semc_trydown, semc_down_ex, semc_down_policy,
 * semc_down_multi, semc_down_multi_policy and their _async forms) are
 * kept for compatibility, as wrappers of these. */

/* The layout of struct semc_down_options this header declares. A newer
 * library reads the fields of every older version and no more: new
 * options come as new fields at the end, with a higher version. */
#define SEMC_DOWN_OPTIONS_VERSION	1

/* Every option of a down. Start from SEMC_DOWN_OPTIONS_INIT and set what
 * differs (a zeroed struct has version 0, which is refused):
 *	struct semc_down_options o = SEMC_DOWN_OPTIONS_INIT;
 *	o.timeout_ms = 30000;
 * NULL options are SEMC_DOWN_OPTIONS_INIT's: one permit, waiting forever. */
struct semc_down_options {
	uint32_t version;	/* SEMC_DOWN_OPTIONS_VERSION */
	uint32_t n;		/* one name: permits (0 means 1); several: 0, each
				 * want says its own */
	int64_t timeout_ms;	/* < 0 forever (the default), 0 now or never (a
				 * trydown: SEMC_E_WOULD_BLOCK), > 0 a deadline */
	uint32_t lease_ms;	/* > 0: detached holds owned by the principal, kept
				 * this long after we go; at most semc_max_lease() */
	uint32_t create_limit;	/* one name: > 0 creates a missing name with this
				 * limit (SEMC_E_EXISTS if it exists with another);
				 * several: 0, each want says its own */
	int priority;		/* SEMC_PRIO_MIN..SEMC_PRIO_MAX (0): a higher class
				 * is served first (struct semc_down_policy) */
	const char *replace;	/* one name: a replace key, or NULL (as
				 * struct semc_down_policy's) */
	const char *group;	/* one name of SEMC_SHARE_KEY: the down's group
				 * (NULL: the principal) */
};
#define SEMC_DOWN_OPTIONS_INIT	{ .version = SEMC_DOWN_OPTIONS_VERSION, .timeout_ms = -1 }

/* Take permits of name: 0 and *out (may be NULL) the grant, or an error
 * (SEMC_E_TIMEOUT, SEMC_E_WOULD_BLOCK, ...; SEMC_E_ARG for options of an
 * unknown version, a priority out of range). The reply is waited for
 * timeout_ms (forever when < 0) plus the handle's timeout. */
int semc_down2(struct semc *c, const char *name, const struct semc_down_options *opts,
	       struct semc_grant *out);
/* The same without waiting: the request id, or an error; fn gets the grant
 * (struct semc_result's grant). */
int64_t semc_down2_async(struct semc *c, const char *name, const struct semc_down_options *opts,
			 semc_done_fn fn, void *arg);
/* Take every want at once, or none (1 to 16 names, owned mode; opts' n,
 * create_limit, replace and group must be left unset: each want says its n
 * and create_limit): *out, freed with semc_multi_grant_free(), or an error
 * (SEMC_E_DEADLOCK when waiting would close a cycle of sessions). */
int semc_down2_multi(struct semc *c, const struct semc_want *wants, size_t n,
		     const struct semc_down_options *opts, struct semc_multi_grant **out);
/* The same without waiting; fn gets struct semc_result's multi. */
int64_t semc_down2_multi_async(struct semc *c, const struct semc_want *wants, size_t n,
			       const struct semc_down_options *opts, semc_done_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif
