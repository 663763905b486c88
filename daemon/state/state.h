/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/state.h - the semaphore table and the sessions: all of semd's
 * logic, with no I/O and no clock reads.
 *
 * Not thread-safe by itself: the caller runs one call at a time (semd's
 * event loops take one lock around every call), which also gives the
 * calls the single order a replicated log needs.
 *
 * Time comes in as now_ms (a monotonic clock in milliseconds) on every call;
 * effects go out as values through struct sm_out (a reply for a connection).
 * Ids come from counters and random bytes (session secrets, the hash key) are
 * passed in, so a log of calls replays to the same replies: that is what a
 * replicated log will feed on every node.
 *
 * Objects:
 *  - struct sm_client: one per connection, opened by the I/O layer;
 *  - a session, made by Hello, owns the holds and waiters of its client; with
 *    a lease it outlives its connection for lease_ms and can be resumed;
 *  - a named semaphore wraps the core's struct semaphore with a limit, a mode,
 *    its holders and (through the core) its FIFO wait list.
 * Deadlines (down timeouts, detached-hold leases, session leases) live in one
 * min-heap: the event loop arms a single timer for sm_next_deadline() and
 * calls sm_tick() when it fires.
 *
 * Fencing tokens: each new semaphore starts its token counter at the wall
 * clock in microseconds (cfg.wall_ms * 1000 plus the time elapsed since
 * sm_new), or at the highest token of any semaphore freed before (so a name
 * freed and created again never goes back), and every grant takes the next
 * value. A restarted daemon therefore
 * starts above every token it issued before, unless a semaphore averaged more
 * than one grant per microsecond over its whole life.
 */
#ifndef SEMD_STATE_H
#define SEMD_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/semd.pb-c.h"

#define SM_SECRET_LEN	16
#define SM_NAME_MAX	255
#define SM_LIST_DEFAULT	100
#define SM_LIST_MAX	1000
#define SM_INFO_PAGE	100	/* holders and waiters an Info page lists */
#define SM_INFO_PAGE_MAX 1000	/* ... at most, whatever the client asks */
#define SM_PROTO_VERSION 1

/* Figures of the node (not the state) a Stats reply may carry. */
#define SM_STATS_LOCAL_MAX	12
struct sm_local_counters {
	size_t		n;
	const char	*name[SM_STATS_LOCAL_MAX];	/* static strings */
	uint64_t	value[SM_STATS_LOCAL_MAX];
};

/* The watch history's default size: 1 MiB of the latest events. */
#define SM_WATCH_HISTORY	(1u << 20)
#define SM_WATCH_HISTORY_MAX	(64u << 20)	/* its buffer is twice that */

struct sm_config {
	uint32_t	default_limit;		/* limit of auto-created names */
	uint32_t	max_semaphores;
	uint32_t	max_sessions;		/* live and lingering sessions */
	uint32_t	max_waiters_per_session;
	uint32_t	max_holds_per_session;
	uint32_t	max_lease_ms;		/* cap on session and hold leases */
	uint32_t	max_reply;		/* bytes of holders and waiters an Info lists */
	uint32_t	watch_history;		/* bytes of events kept for resumes */
	uint64_t	wall_ms;		/* unix time in ms at sm_new() */
	uint8_t		hash_key[16];		/* random: SipHash key */
	const char	*server;		/* "semd 0.2.0" for HelloReply */
	/* Test builds: heap allocations so far, reported by Stats; or NULL. */
	uint64_t	(*alloc_count)(void);
	/*
	 * Stats replies carry this node's memory and allocation figures too
	 * (they differ between replicas of the same log).
	 */
	bool		stats_local;
	/* The state is kept across restarts (a log): told in HelloReply. */
	bool		durable;
	/*
	 * HelloReply.instance: the history the revisions count. In memory the
	 * shell's random number; with a log 0 here (the state's comes through
	 * the log: sm_batch_instance), and what a leader proposes when the
	 * state has none.
	 */
	uint64_t	instance;
	/* More of the node's figures for Stats (its cluster view), or NULL. */
	void		(*local_counters)(void *arg, struct sm_local_counters *out);
	void		*local_arg;
};

/*
 * Effects of the state machine. conn is the client's bound connection.
 * reply: send r to the client. close (optional): close the client's
 * connection once the replies sent so far are out (its session ended).
 * note (optional): something an operator wants in the log was done - a
 * hold released or a name deleted by force, by conn's client (conn may
 * be NULL: not bound on this node) - said in msg.
 */
struct sm_out {
	void	(*reply)(void *ctx, void *conn, const Semd__Reply *r);
	void	*ctx;
	void	(*close)(void *ctx, void *conn);
	void	(*note)(void *ctx, void *conn, const char *msg);
	/*
	 * A Backup's copy of the state (sm_snapshot()'s bytes, malloc'ed:
	 * the shell frees them) for conn's request id, taken at the state's
	 * wall time wall_ms; the shell answers it. NULL: no backups here.
	 */
	void	(*backup)(void *ctx, void *conn, uint64_t id, uint8_t *snap,
		    size_t len, uint64_t wall_ms);
	/*
	 * A watch event for watch of conn's client, as the bytes of its
	 * WatchEvent packed with watch 0 (so without that field): the shell
	 * sends what reply() would for { watch_event: { watch, ... } }. An
	 * event is packed once for all its watchers that see it alike, not
	 * once each. NULL: watch events go through reply().
	 */
	void	(*notice)(void *ctx, void *conn, uint64_t watch,
		    const uint8_t *ev, size_t len);
};

/* Return values of sm_request(). */
#define SM_OK		0
#define SM_CLOSE	1	/* flush the replies, then close the connection */

struct sm;
struct sm_client;

/*
 * A duration histogram with fixed log-spaced buckets: bucket i counts the
 * values of at most 2^i ms (1 ms .. 1048.576 s), the last bucket the longer
 * ones. Not cumulative; recording is a shift and an add, no allocation.
 */
#define SM_HIST_BUCKETS	22
#define SM_NCODES	19		/* Semd__Code values */
/*
 * The op cases, 0 included (Cluster, 30, is the node's: the state never
 * runs it, its counters stay 0 and are not shown).
 */
#define SM_NOPS		(SEMD__REQUEST__OP_SESSIONS + 1)
struct sm_hist {
	uint64_t	bucket[SM_HIST_BUCKETS];
	uint64_t	sum_ms;
	uint64_t	count;
};

/* Counters reported by Stats. */
struct sm_counters {
	uint64_t	semaphores;
	uint64_t	holders;
	uint64_t	waiters;
	uint64_t	sessions;
	uint64_t	clients;
	uint64_t	grants;
	uint64_t	timeouts;
	uint64_t	cancels;
	uint64_t	cancels_disconnect;
	uint64_t	leases_expired;
	uint64_t	sessions_expired;
	uint64_t	errors;
	uint64_t	multi_grants;		/* DownMulti requests granted */
	uint64_t	deadlocks;		/* downs answered DEADLOCK */
	uint64_t	deadlock_checks;	/* wait-for graph searches */
	uint64_t	deadlock_steps;		/* holds they looked at */
	uint64_t	deadlock_cut;		/* searches cut at the budget */
	uint64_t	memory_bytes;
	uint64_t	watch_notices;		/* this node's watch events sent */
	uint64_t	ops[SM_NOPS];		/* by Semd__Request__OpCase */
	/* Replies by the op they answer and their code (op 0: no request). */
	uint64_t	replies[SM_NOPS][SM_NCODES];
	struct sm_hist	wait;			/* enqueue (or down) to grant */
	struct sm_hist	hold;			/* grant to release */
};

/*
 * The operations, described once (the state machine's table): the name used
 * in Stats, metrics and logs, and what the access layer checks before a
 * request reaches the state machine, as the Redis command table is read by
 * its ACL - the right the request needs, on which name (the field of its
 * message that holds it), and the verb that says it in a refusal
 * ("uid:1000 may not VERB NAME").
 *
 * Rights. USE: down, up, validate, down_multi (each name), renew; INSPECT:
 * info, list, stats, watch, holds; CREATE: create; MANAGE: delete,
 * set-limit, set-rate, release (the access layer asks for the create right
 * on the name; the state machine then lets only the name's creator or an
 * administrator through); NONE: hello, ping, cancel of one's own request,
 * detach, where (of one's own down).
 */
enum sm_right {
	SM_RIGHT_NONE,
	SM_RIGHT_INSPECT,
	SM_RIGHT_USE,
	SM_RIGHT_CREATE,
	SM_RIGHT_MANAGE,
};

/* Which name a request's right is checked on. */
enum sm_target {
	SM_TARGET_NONE,		/* none: nothing is checked */
	SM_TARGET_FIELD,	/* the string at name_off in the op's message */
	SM_TARGET_ALL,		/* every name, checked as "" (Stats, Holds) */
	SM_TARGET_EACH,		/* each name a DownMulti wants */
};

struct sm_op {
	const char	*name;		/* "down" */
	enum sm_right	right;
	const char	*verb;		/* "set the limit of" */
	enum sm_target	target;
	size_t		name_off;	/* SM_TARGET_FIELD: offsetof() the name */
	const char	*after;		/* said after the name in a refusal, or "" */
};

/* The table entry of an op case (Semd__Request__OpCase), or NULL. */
const struct sm_op *sm_op(int op_case);
/* The label of replies[op_case][code]: the op's name, or for op case 0,
 * replies to no request, "notice" (a hold lost, the shutdown) or
 * "invalid_request" (undecodable, or without a known op); NULL: none. */
const char *sm_reply_op(int op_case, int code);
/*
 * The name req's right is checked on: its op's field, "" for every name, or
 * NULL when there is none to check (SM_TARGET_NONE, SM_TARGET_EACH).
 */
const char *sm_op_target(const struct sm_op *op, const Semd__Request *req);

/* One semaphore's gauges, for sm_sem_each(). */
struct sm_sem_gauges {
	const char	*name;
	size_t		len;
	uint32_t	limit;
	uint32_t	holders;
	uint32_t	waiters;
	long		available;
};

void sm_config_defaults(struct sm_config *cfg);
struct sm *sm_new(const struct sm_config *cfg, const struct sm_out *out,
    uint64_t now_ms);
void sm_free(struct sm *sm);
/* Apply new limits (default limit, maxima) to a running state. */
void sm_reconfigure(struct sm *sm, const struct sm_config *cfg);

/*
 * A connection came: principal is who the peer is ("uid:1000"). Flags:
 * SM_CLIENT_LOCAL for a peer on this host (a UNIX socket), whose close is
 * its death unless it sent Detach.
 */
#define SM_CLIENT_LOCAL	0x1u
/*
 * A connection came. id: non-zero, unique among the open clients, chosen by
 * whoever opens it (the same on every replica); conn: this node's binding
 * (may be NULL, see sm_client_bind). NULL when the id is taken or out of
 * memory.
 */
struct sm_client *sm_client_open(struct sm *sm, uint64_t id, void *conn,
    const char *principal, const uint8_t secret[SM_SECRET_LEN],
    unsigned int flags, uint64_t now_ms);
/* The open client with this id, or NULL. */
struct sm_client *sm_client_find(const struct sm *sm, uint64_t id);
/*
 * Bind a client to this node's connection, or unbind it (NULL): replies
 * go to the bound connection, none while unbound. Not part of the state.
 */
void sm_client_bind(struct sm_client *c, void *conn);
uint64_t sm_client_id(const struct sm_client *c);
/*
 * The wall clock (unix ms) at the time of the call in progress: times shown
 * to clients (since, expires) are state times moved by this offset. Set by
 * whoever feeds the state (a log entry carries it).
 */
void sm_set_wall(struct sm *sm, uint64_t wall_ms);
/* The connection went away: the client is freed. */
void sm_client_close(struct sm *sm, struct sm_client *c, uint64_t now_ms);
/*
 * What the access layer decided about a request before it reaches the state
 * machine (the ACL lives outside it; in a replicated log this travels with
 * the request, so every replica decides the same).
 *
 * privs: SM_PRIV_ADMIN when the caller may manage the name whoever created
 * it (delete, set-limit, release another's hold, see every holder's host and
 * pid). Without it only the principal that created a name manages it, and
 * auto-created names are managed by administrators alone.
 *
 * limit: per-principal caps on what outlives a request, counted by the state
 * machine for the caller's principal across all its sessions; 0 means no cap.
 * A request over one is answered RESOURCE_EXHAUSTED naming the limit.
 */
#define SM_PRIV_ADMIN	0x1u

enum sm_limit_kind {
	SM_LIMIT_SESSIONS,	/* sessions, live or lingering in their lease */
	SM_LIMIT_PERMITS,	/* permits held, detached and leased ones included */
	SM_LIMIT_WAITERS,	/* downs queued */
	SM_LIMIT_SEMAPHORES,	/* names created explicitly that still exist */
	SM_LIMIT_WATCHES,	/* watches, on all its connections */
	SM_NLIMITS
};

struct sm_caller {
	unsigned int	privs;			/* SM_PRIV_* */
	uint64_t	limit[SM_NLIMITS];	/* 0: no cap */
};

/*
 * One decoded request. who: the access layer's decision, or NULL for an
 * administrator without caps (tests). Returns SM_OK or SM_CLOSE.
 */
int sm_request(struct sm *sm, struct sm_client *c, const Semd__Request *req,
    const struct sm_caller *who, uint64_t now_ms);
/* Is op_case a read (Info, List, Stats, Holds, Where, Validate, Ping, Sessions)? */
bool sm_op_is_read(int op_case);
/*
 * Is op_case the node's (Cluster)? Its row says what the access layer
 * checks; the node that gets it answers it (daemon/feed.h), never the
 * state machine: it is no log entry, and the state counts it nowhere.
 */
bool sm_op_is_node(int op_case);
/*
 * Answer a read of client c as the state stands, changing nothing of it (a
 * leader's read off the log, after its read barrier): the state's clock
 * stays at its last entry (a rate's tokens are those of that time), no
 * session is marked heard, nothing settles, and no counter of the state
 * moves (the replies by op and code are in its snapshot): the node counts
 * the reads it answers itself. who as for sm_request(). SM_OK; SM_CLOSE
 * as sm_request() (no Hello, or no session); a request that is no read is
 * answered INVALID_ARGUMENT.
 */
int sm_read(struct sm *sm, struct sm_client *c, const Semd__Request *req,
    const struct sm_caller *who);
/*
 * A guest: a connection the state has no client of, while the log takes no
 * writes (a full disk: no session can be made). sm_guest_hello() answers
 * its Hello (req) with a HelloReply that makes nothing: session 0, no
 * lease, no secret; sm_guest_read() answers its reads (req, with who) as
 * those of a client of principal without a session, the way sm_read()
 * does - Where, which names its session's own downs, is NOT_FOUND. Both
 * answer through conn and change nothing. SM_OK; SM_CLOSE for a Hello of
 * another protocol version.
 */
int sm_guest_hello(struct sm *sm, void *conn, const char *principal,
    const Semd__Request *req);
int sm_guest_read(struct sm *sm, void *conn, const char *principal,
    const Semd__Request *req, const struct sm_caller *who);
/* Answer a frame the I/O layer could not decode: PROTOCOL_ERROR, id 0. */
void sm_protocol_error(struct sm *sm, struct sm_client *c, const char *why);

/*
 * Send r to every client bound on this node: the node's own word (a stop
 * with a log), not the state's - nothing is counted or changed.
 */
void sm_tell_all(struct sm *sm, const Semd__Reply *r);
/* The last leader the log named (0: none) and its client address. */
uint64_t sm_leader(const struct sm *sm, char *addr, size_t len);
/* HelloReply.instance: the history the revisions count (0: none yet). */
uint64_t sm_instance(const struct sm *sm);
/* The time of the last call (the state's clock). */
uint64_t sm_now(const struct sm *sm);
/* Give to the node's hooks (List visibility) what from had. */
void sm_take_hooks(struct sm *to, const struct sm *from);

/* Earliest deadline in the heap, or UINT64_MAX. */
uint64_t sm_next_deadline(const struct sm *sm);
/* Expire everything due at or before now_ms. */
void sm_tick(struct sm *sm, uint64_t now_ms);
/* Shutting down: every waiter is answered UNAVAILABLE. */
void sm_shutdown(struct sm *sm, uint64_t now_ms);

/*
 * Which names List shows (optional; the daemon's access.c asks the ACL).
 * conn is what sm_client_open() was given. Return false to leave name out
 * of the reply; then *skip_len (set to 0 before the call) may be the length
 * L (1..len) of a beginning of name under which every name is hidden for
 * this conn, and List seeks past them all at once. A page visits at most
 * SM_LIST_HIDDEN_MAX hidden names: then it ends at its last entry, or when
 * it has none is answered RESOURCE_EXHAUSTED. With no hook every name is
 * shown. The hook must not call back into the state machine.
 */
#define SM_LIST_HIDDEN_MAX	10000
typedef bool (*sm_visible_fn)(void *arg, void *conn, const char *name,
    size_t len, size_t *skip_len);
void sm_set_visible(struct sm *sm, sm_visible_fn fn, void *arg);

void sm_get_counters(const struct sm *sm, struct sm_counters *out);
/* Call fn for every semaphore, in name order (metrics). */
void sm_sem_each(struct sm *sm,
    void (*fn)(void *arg, const struct sm_sem_gauges *g), void *arg);
/* The same for the names that start with prefix: O(log n + their number). */
void sm_sem_each_prefix(struct sm *sm, const char *prefix,
    void (*fn)(void *arg, const struct sm_sem_gauges *g), void *arg);
/* Session id of a client after Hello, 0 before. */
uint64_t sm_client_session(const struct sm_client *c);

/*
 * The log (daemon/state/sm_entry.c): every change of the state as an entry of
 * commands that any replica applies alike. A batch collects commands; an
 * entry is a header (sm_entry_header: state time, stamped by the leader and
 * never going backwards, and its wall clock) followed by batches.
 */
struct sm_batch {
	uint8_t		*p;
	size_t		len;
	size_t		cap;
	uint32_t	ncmds;
	bool		failed;		/* out of memory: the batch is lost */
};

void sm_batch_init(struct sm_batch *b);
void sm_batch_reset(struct sm_batch *b);
void sm_batch_free(struct sm_batch *b);
/* The first entry of a log: the state's clock and tokens start. */
void sm_batch_boot(struct sm_batch *b);
/* The settings that decide answers, replicated (the rest of cfg is local). */
void sm_batch_config(struct sm_batch *b, const struct sm_config *cfg);
void sm_batch_open(struct sm_batch *b, uint64_t id, const char *principal,
    const uint8_t secret[SM_SECRET_LEN], unsigned int flags);
void sm_batch_close(struct sm_batch *b, uint64_t id);
/* A request of client id as its protobuf bytes, with the access decision. */
void sm_batch_request(struct sm_batch *b, uint64_t id,
    const struct sm_caller *who, const uint8_t *req, size_t len);
/* The service came back: every client is gone, leases get grace_ms more. */
void sm_batch_restart(struct sm_batch *b, uint32_t grace_ms);
/* A leader took over: the same, and who it is and where clients reach it. */
void sm_batch_leader(struct sm_batch *b, uint64_t node, uint32_t grace_ms,
    const char *address);
/*
 * From here on sessions' leases are the leader's (sm_session.c): a session
 * ends by an EXPIRE entry, proposed by the leader when it heard nothing of
 * it for its lease by its own clock (sm_leases_due), never by the state's
 * timers; a new leader starts every lease afresh with the grace, and with
 * at least floor_ms (what a deposed leader may still have answered without
 * an entry: twice the election timeout). A HelloReply's guard_ms is half of
 * it: how long a client without a lease trusts what the leader answered.
 */
void sm_batch_leases(struct sm_batch *b, uint32_t floor_ms);
/* The leader heard nothing of session id for its lease: it ends. */
void sm_batch_expire(struct sm_batch *b, uint64_t session);
/*
 * The history the state's revisions count is instance from here on (a
 * new leader's first entry when the state has none, or after a --restore
 * seed: HelloReply.instance).
 */
void sm_batch_instance(struct sm_batch *b, uint64_t instance);
/*
 * The cluster as the leader has it: its term and members ("ID ROLE",
 * comma-separated, by id), with the leader the last LEADER command named;
 * the state tells its watchers (EVENT_CLUSTER). At most SM_MEMBERS_MAX
 * bytes of members.
 */
#define SM_MEMBERS_MAX	1024
void sm_batch_cluster(struct sm_batch *b, uint64_t term, const char *members);
size_t sm_entry_header_size(void);
void sm_entry_header(uint8_t *p, uint64_t time, uint64_t wall);
/*
 * A leader's state clock (sm_entry.c): the log's time goes on from the last
 * entry applied, at the pace of the leader's own monotonic clock, and never
 * backwards. Times in ms; mono is the leader's monotonic clock.
 */
struct sm_clock {
	uint64_t	base;		/* state time at mono_base */
	uint64_t	mono_base;
	uint64_t	last;		/* the last time stamped */
};
/* Take over at state time t (the last entry's; 0: a new log, from start). */
void sm_clock_start(struct sm_clock *k, uint64_t t, uint64_t start,
    uint64_t mono);
/* The state time now. */
uint64_t sm_clock_now(const struct sm_clock *k, uint64_t mono);
/* The time to stamp on the next entry: now, never before the last one nor
 * before at_least. */
uint64_t sm_clock_stamp(struct sm_clock *k, uint64_t mono, uint64_t at_least);

/*
 * The leader's memory of its sessions (sm_session.c), none of it state:
 * sm_heard_local() marks client id's session heard at the leader's monotonic
 * time mono, for a request answered without an entry (a Ping), and says
 * whether the client has a session to answer for; sm_leases_due() puts into
 * ids (at most max) the sessions whose lease ran out by the leader's clock k
 * at mono - by their last entry or their last request heard, whichever is
 * later - and not asked about in the last retry_ms; 0 when the leases are not
 * the leader's (sm_batch_leases). sm_session_exists(): for the tests.
 */
bool sm_heard_local(struct sm *sm, uint64_t client_id, uint64_t mono);
size_t sm_leases_due(struct sm *sm, const struct sm_clock *k, uint64_t mono,
    uint64_t retry_ms, uint64_t *ids, size_t max);
bool sm_session_exists(const struct sm *sm, uint64_t id);

/*
 * What applying needs from the node: its connection for an opened client
 * (bind), and word of each request applied, with its size (done; may be
 * NULL), for the node's flow control.
 */
struct sm_apply_hooks {
	void	*(*bind)(void *arg, uint64_t client_id);
	void	(*done)(void *arg, uint64_t client_id, size_t len);
	void	*arg;
};

/*
 * A SEED entry (an entry of its own: a new log's state is this snapshot's,
 * semd --restore), and whether an entry is one: 1 and the snapshot's bytes
 * (inside buf), 0 not one, -EINVAL a malformed one. The log applies it
 * (sm_restore), not sm_apply.
 */
void sm_batch_seed(struct sm_batch *b, const uint8_t *snap, size_t len);
int sm_entry_seed(const uint8_t *buf, size_t len, const uint8_t **snap,
    size_t *snap_len);

/*
 * Would sm_apply (or, for a SEED entry, the log) take these bytes as an
 * entry? 0, or -EINVAL with why in err: what a follower checks of a
 * leader's entries before it stores them (the log's peer port). It reads
 * exactly as sm_apply does; a SEED's snapshot is checked when restored.
 */
int sm_entry_check(const uint8_t *buf, size_t len, char *err, size_t errlen);

/*
 * Apply one entry: deadlines due at its time fire, then its commands run.
 * 0, or -EINVAL for bytes that are not an entry (why in err).
 */
int sm_apply(struct sm *sm, const uint8_t *buf, size_t len,
    const struct sm_apply_hooks *hooks, char *err, size_t errlen);

/*
 * The whole state as bytes (*out malloc'ed, the caller frees it): the same
 * bytes on every replica that applied the same calls. -ENOMEM.
 */
int sm_snapshot(const struct sm *sm, uint8_t **out, size_t *len);
/*
 * A state machine from sm_snapshot()'s bytes, with this node's settings
 * (hash key, server name) and effects; the settings that come through the
 * log are the snapshot's. Clients come back unbound. NULL when the bytes
 * are not a consistent state (why in err) or out of memory.
 */
struct sm *sm_restore(const struct sm_config *cfg, const struct sm_out *out,
    const uint8_t *buf, size_t len, char *err, size_t errlen);

/*
 * Check every invariant (counts, lists, indexes, FIFO, tokens); returns 0 or
 * -1 with a description in err. For tests, and sm_restore's last word.
 */
int sm_check(const struct sm *sm, char *err, size_t errlen);

/* Is this a valid semaphore name: 1-255 bytes of UTF-8, no controls? */
bool sm_name_valid(const char *name, size_t len);

/*
 * The token bucket's arithmetic (daemon/state/sm_rate.c), for tests: add dt ms to
 * a level of *whole tokens and *frac units of 1/period_ms of a token (rate
 * tokens a period, at most burst); returns the whole tokens added. And the
 * ms until a level holds need whole tokens (0: it does).
 */
uint64_t sm_rate_accrue(uint64_t *whole, uint64_t *frac, uint32_t rate,
    uint32_t period_ms, uint32_t burst, uint64_t dt);
uint64_t sm_rate_wait_ms(uint64_t whole, uint64_t frac, uint32_t rate,
    uint32_t period_ms, uint64_t need);

#endif
