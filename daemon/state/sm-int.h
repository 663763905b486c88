/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm-int.h - the state machine's insides, shared by its files
 * (not by anyone else: the interface is daemon/state/state.h).
 *
 * Plain logic: no I/O, no clock, no randomness (see state.h). Every permit a
 * client holds is a struct sm_hold, owned by its session or, for a detached
 * hold, by the principal until its lease runs out. Every down that waits is a
 * struct sm_wait with one struct sm_member per name it waits for (a Down has
 * one, a DownMulti one per name), each around a core struct sema_waiter in
 * that name's queue; the core decides who gets permits (strict FIFO, direct
 * hand-off) and calls wait_wake() on a grant. A member that needs more than
 * its semaphore's permits (a DownMulti's, and any on a name with a rate and
 * a limit, which also needs tokens) is gated: the core only offers it, and
 * sm_wait.c grants the whole request at once when every member is first in
 * line with what it needs (see the design there).
 *
 * For an OWNED semaphore, held + count == limit at all times: permits only
 * move between the core's free count and hold records, and a limit change
 * moves the free count by the same delta (so after a shrink count may be
 * negative while the holders drain). A SIGNAL semaphore has no holds: a down
 * consumes permits, any up adds them back, and count never exceeds limit.
 *
 * The files, each owning one part, in layers: a file calls only files of
 * the layers below its own (tests/callgraph.py checks that no two files
 * call each other, directly or round a circle). What a lower part finds
 * must happen above it - a waiting request to look at again, a bucket's
 * timer to set, a cycle to search for after a grant - it queues as an
 * effect (sm_effect.c), and sm_settle() delivers the effects when the call
 * into the state machine is over.
 *
 *   the base
 *   sm_mem.c        allocation with accounting, record caches, wall time,
 *                   SM_ASSERT's report
 *   sm_bytes.c      the byte strings of log entries and snapshots
 *   sm_index.c      name checks, hashing, the indexes (names, sessions,
 *                   permits, tokens, requests)
 *   sm_timer.c      the deadline heap
 *   sm_reply.c      building replies
 *   sm_principal.c  principals (counts for the caps) and identities
 *   sm_effect.c     the queues of effects
 *   the parts
 *   sm_memo.c       the answers kept for a retried down
 *   sm_idem.c       idempotency keys, kept with the hold or waiter their
 *                   down made
 *   sm_watch.c      watches and their events
 *   sm_rate.c       token buckets: refills, due times
 *   sm_sem.c        semaphores and holds; grants recorded and answered
 *   sm_wait.c       waiting downs: queued, granted (the hand-off; a gated
 *                   request all at once), cancelled
 *   sm_deadlock.c   the wait-for graph: DEADLOCK
 *   sm_queue.c      queue policies: max-waiters, replace keys; SetQueue
 *   sm_session.c    sessions: leases, parking, hold-lost notices, the end
 *   the operations
 *   sm_need.c       what they check and look up first, shared
 *   sm_down.c       Down (and the steps DownMulti shares)
 *   sm_multi.c      DownMulti
 *   sm_ops_permit.c Up, Release, Cancel, Validate
 *   sm_ops_name.c   Create, Info, List, Delete, SetLimit, SetRate
 *   sm_holds.c      Renew, Holds and Where
 *   sm_stats.c      Stats, counters and per-name gauges
 *   sm_optab.c      the table: every operation once (state.h)
 *   the ways in (state.h), each settled by sm_settle.c
 *   sm_ops.c        a request: dispatch; Hello, Ping, Detach, Watch
 *   sm_time.c       deadlines (sm_tick), shutdown
 *   sm_client.c     clients opened and closed; making and freeing the state
 *   sm_entry.c      log entries: commands applied (sm_apply), batches made
 *   sm_snap_write.c the snapshot: the state as bytes (its layout)
 *   sm_snap_read.c  the state from a snapshot, validated
 *   sm_check.c      the invariants (sm_check), for tests and restores
 */
#ifndef SEMD_SM_INT_H
#define SEMD_SM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/semaphore.h"
#include "daemon/state/hmap.h"
#include "daemon/state/ordidx.h"
#include "daemon/state/state.h"

/*
 * SM_ASSERT(expr): a state that cannot happen, whatever clients send - a bug
 * in semd. Reports file, line, function and the expression on stderr and
 * aborts (Redis' serverAssert): every replica applies the same log, so going
 * on would only carry a corrupt state forward. Always compiled, NDEBUG or
 * not. Never for anything a request, a log entry or a snapshot's bytes can
 * cause: those are answered with an error or refused. A bug the state can
 * survive without losing a permit is counted instead (multi_bugs,
 * overgrants, ...) and reported by sm_check().
 */
#define SM_ASSERT(expr)							\
	((expr) ? (void)0 : sm_assert_fail(#expr, __FILE__, __LINE__, __func__))
_Noreturn void sm_assert_fail(const char *expr, const char *file, int line,
    const char *func);

#define SM_LIMIT_MAX	(1u << 30)
#define SM_STR_MAX	255	/* client name, host: longer is cut */
#define SM_PRINCIPAL_MAX 1024	/* the longest principal a snapshot holds */

enum { T_WAIT = 1, T_HOLD, T_SESSION, T_RATE };

struct sm_timer {
	uint64_t	when;
	uint64_t	seq;		/* ties broken in arming order */
	size_t		idx;		/* in the heap, or SIZE_MAX */
	int		kind;
};

/*
 * A principal: who sessions, holds and names belong to, with its counts for
 * the per-principal caps (struct sm_caller). Referenced by its clients,
 * identities and the names it created; freed with the last reference (every
 * counted object holds one, so the counts are then zero).
 */
struct sm_principal {
	struct hnode		node;		/* sm->principals */
	unsigned int		refs;
	uint64_t		count[SM_NLIMITS];
	struct list_head	holds;		/* sm_hold.pr_entry, permit order */
	uint32_t		nholds;
	size_t			len;
	char			name[];
};

/* Who a session is; shared by the session and its detached holds. */
struct sm_ident {
	unsigned int		refs;
	uint32_t		pid;
	struct sm_principal	*pr;
	char			*client_name;
	char			*host;
	uint16_t		client_name_len;	/* strlen(): for events */
	uint16_t		host_len;
	uint16_t		ev_len;
	uint8_t			*ev;	/* its part of a history record (evrec_ident()) */
};
_Static_assert(SM_STR_MAX <= UINT16_MAX, "sm_ident's lengths hold a label's");

/*
 * A token bucket (sm_rate.c): rate tokens every period_ms, up to burst.
 * Exact: the level is whole tokens plus frac, a fraction of a token counted
 * in 1/period_ms units (0 <= frac < period_ms), so dt ms of refill adds
 * exactly rate * dt units and nothing is ever rounded. A rate-only name
 * (mode RATE) keeps its whole tokens as the core semaphore's free count (its
 * waiters are served by the core as tokens come); a name with a limit keeps
 * them in tokens, and its waiters are gated on them.
 */
struct sm_rate {
	uint32_t		rate;		/* tokens per period_ms, >= 1 */
	uint32_t		period_ms;
	uint32_t		burst;
	uint64_t		frac;		/* < period_ms */
	uint64_t		tokens;		/* whole, free: names with a limit */
	uint64_t		last;		/* state time the bucket is filled to */
	struct sm_timer		due;		/* when the first waiter's tokens are */
	struct sm_sem		*sem;
	struct list_head	touch_entry;	/* sm->rate_touched */
};

#define SM_RATE_PERIOD_MAX	86400000u	/* a day */

/*
 * A name's own wait and hold histograms (Info), made at its first grant:
 * a name's memory stays bounded (the buckets are fixed), and a name freed
 * frees them.
 */
struct sm_hists {
	struct sm_hist		wait;
	struct sm_hist		hold;
};

/* Laid out without holes: an idle name costs this plus its bytes. */
struct sm_sem {
	struct hnode		node;		/* sm->names */
	struct semaphore	sem;
	uint64_t		held;		/* permits in hold records */
	struct list_head	holders;	/* sm_hold.sem_entry, grant order */
	struct list_head	waiters;	/* sm_member.sem_entry, queue order */
	struct sm_principal	*owner;		/* explicit creator; NULL: nobody */
	struct sm_rate		*rate;		/* token bucket, or NULL */
	struct sm_share		*share;		/* fair shares (sm_share.c), or NULL */
	struct sm_hists		*hists;		/* its histograms, or NULL */
	uint32_t		limit;
	uint32_t		nholders;
	uint32_t		nwaiters;
	uint32_t		max_waiters;	/* queue bound (sm_queue.c); 0: none */
	uint8_t			mode;		/* Semd__Mode */
	bool			auto_created;
	uint8_t			len;		/* <= SM_NAME_MAX */
	char			name[];
};

_Static_assert(SM_NAME_MAX <= UINT8_MAX, "sm_sem.len holds a name length");

/*
 * Key of the idempotency index: (session id, request id) of a down, and
 * what it led to: a waiter, a hold, or a memo of its answer.
 */
enum { REQ_WAIT, REQ_HOLD, REQ_MEMO };
struct sm_reqkey {
	struct hnode	node;
	uint64_t	session_id;
	uint64_t	request_id;
	uint8_t		kind;		/* REQ_* */
	bool		indexed;
};

/*
 * A hold. The holds of one DownMulti grant are linked in group, in the
 * order of its names (group_key: the first one's permit id, 0 for a hold
 * of its own); only one of them, the first still held, is indexed under
 * the request's id (req), for a retry.
 */
struct sm_hold {
	struct hnode		permit_node;	/* sm->permits */
	struct hnode		token_node;	/* sm->tokens */
	struct sm_reqkey	req;		/* sm->requests */
	uint64_t		permit_id;
	uint64_t		token;
	uint64_t		group_key;
	uint32_t		n;
	uint32_t		lease_ms;	/* detached: its lease, for Renew */
	struct sm_sem		*sem;
	struct sm_session	*session;	/* NULL: detached */
	struct sm_ident		*ident;
	struct sm_group		*grp;		/* its fair-share group, or NULL */
	struct sm_idem		*idem;		/* its down's key (sm_idem.c), or NULL */
	struct list_head	sem_entry;
	struct list_head	owner_entry;	/* session->holds or sm->detached */
	struct list_head	pr_entry;	/* ident->pr->holds */
	struct list_head	group;		/* the other holds of its DownMulti */
	uint64_t		since_wall;
	struct sm_timer		expiry;		/* detached only */
};

struct sm_wait;
struct sm_group;
struct sm_share;
struct sm_idem;

/* One name a waiting down waits for: its place in that name's queue. */
struct sm_member {
	struct sema_waiter	w;		/* in sem->sem's queue */
	struct sm_wait		*wait;
	struct sm_sem		*sem;
	struct list_head	sem_entry;	/* sem->waiters, queue order */
	uint32_t		n;
};

/* A waiting Down (one member) or DownMulti (one member per name). */
struct sm_wait {
	struct sm_reqkey	req;
	struct sm		*sm;
	uint64_t		seq;		/* arrival order, unique */
	uint64_t		key;		/* queue order: wait_key(), then seq */
	uint32_t		lease_ms;
	uint8_t			nm;		/* members */
	bool			multi;		/* a DownMulti: answered MultiGrant */
	int16_t			prio;		/* SM_PRIO_MIN..SM_PRIO_MAX */
	struct sm_session	*session;
	struct list_head	session_entry;
	struct list_head	offer_entry;	/* sm->offers while offered */
	uint64_t		since_ms;
	uint64_t		since_wall;
	char			*rkey;		/* Down.replace (sm_queue.c), or NULL */
	struct sm_group		*grp;		/* its fair-share group, or NULL */
	struct sm_idem		*idem;		/* its key (sm_idem.c), or NULL */
	struct sm_timer		deadline;
	struct sm_member	m[];
};

#define SM_MULTI_MAX	16		/* names of a DownMulti */

/*
 * Priorities (proto/semd.proto): every queue is ordered by (key, seq),
 * key = arrival time + (SM_PRIO_MAX - priority) x SM_AGING_MS, so that a
 * class is worth SM_AGING_MS of waiting (aging) and the order never
 * changes while the waiters wait. A down of the default class arriving now
 * has the greatest key there is, and goes at the tail.
 */
#define SM_PRIO_MIN	(-8)
#define SM_PRIO_MAX	7
#define SM_AGING_MS	10000u

static inline uint64_t wait_key(uint64_t since_ms, int prio)
{
	return since_ms + (uint64_t)(SM_PRIO_MAX - prio) * SM_AGING_MS;
}

/* Does a come before b in every line both are in? */
static inline bool wait_before(const struct sm_wait *a, const struct sm_wait *b)
{
	return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}
#define WAIT_SIZE(nm)	(sizeof(struct sm_wait) + (size_t)(nm) * sizeof(struct sm_member))

/* A watch of a client (sm_watch.c): a name, or names with a prefix. */
struct sm_watch {
	struct list_head	entry;		/* sm->watches, registration order */
	struct list_head	client_entry;	/* client->watches */
	struct sm_client	*client;
	uint64_t		id;		/* the Watch request's */
	bool			prefix;
	bool			admin;		/* sees who on every name */
	uint8_t			len;
	char			name[SM_NAME_MAX + 1];
};

#define SM_WATCH_MAX	16		/* watches per connection */

/* The watch history (sm_evring.c): the latest events, in bytes. */
struct sm_evring {
	uint8_t		*buf;		/* size bytes, made at the first event */
	uint32_t	size;		/* watch-history; 0: none kept */
	uint32_t	head;		/* the oldest record */
	uint32_t	tail;		/* where the next goes */
	uint32_t	end;		/* the skipped end ahead of head; none: UINT32_MAX */
	uint32_t	lim;		/* evring_put()'s room after tail; 0: none */
	uint32_t	used;		/* the records' bytes (with those no longer kept) */
};
struct evring_it {
	uint32_t	off;
	uint32_t	left;		/* bytes */
};

/*
 * A session. With a lease it ends lease_ms after the last request heard on
 * it (heard), connected or not: while connected its expiry timer is re-armed
 * lazily when it fires early (a request only stores heard). While its
 * client is away (lingering) its waiters keep their places; those of
 * signal-mode semaphores are parked, since a grant there would be consumed
 * by nobody. Answers that leave nothing behind to find a retry by (a
 * signal-mode grant, a waiting down's failure) are kept as memos for a
 * down retried after a resume, the newest max-waiters-per-session of them.
 */
struct sm_session {
	struct hnode		node;		/* sm->sessions */
	uint64_t		id;
	uint8_t			secret[SM_SECRET_LEN];
	struct sm_client	*client;	/* NULL while lingering */
	struct sm_ident		*ident;
	uint32_t		lease_ms;
	uint32_t		nholds;
	uint32_t		nwaiters;
	uint32_t		nmemos;
	uint64_t		heard;		/* time of its last request */
	struct list_head	holds;
	struct list_head	waiters;
	struct list_head	memos;		/* struct sm_memo, oldest first */
	struct sm_timer		expiry;		/* unarmed: leader_leases */
	/* Linked at Hello to the session it runs under (sm_family.c). */
	struct sm_session	*parent;
	struct list_head	children;	/* struct sm_session, child_entry */
	struct list_head	child_entry;	/* parent->children */
	/* The leader's memory (sm_heard_local, sm_leases_due), not state. */
	uint64_t		seen_mono;	/* last heard without an entry */
	uint64_t		asked_mono;	/* its EXPIRE last proposed */
	/* Scratch of the deadlock search (sm_deadlock.c), not state. */
	uint64_t		dl_seen;	/* search number that reached it */
	uint64_t		dl_sum_at;	/* member visit its dl_held is of */
	uint64_t		dl_held;	/* its permits of that member's name */
	uint64_t		dl_edge_at;	/* member visit that gave it an edge */
	struct sm_session	*dl_parent;	/* reached from, through ... */
	struct sm_wait		*dl_via;	/* ... this waiter of parent's */
	struct sm_sem		*dl_sem;	/* ... for this name (NULL: as
						 * dl_parent's child) */
};

/*
 * An idempotency key of a principal (sm_idem.c) and what its down made:
 * a hold (a DownMulti's first still held) or a waiter, never both.
 */
#define SM_IDEM_KEY_MAX		255
#define SM_IDEM_HASH_MAX	32
struct sm_idem {
	struct hnode		node;		/* sm->idems */
	struct sm_principal	*pr;		/* a reference */
	struct sm_hold		*hold;
	struct sm_wait		*wait;
	uint8_t			hlen;
	uint8_t			hash[SM_IDEM_HASH_MAX];
	uint16_t		len;
	char			key[];
};

/* The answer to a down, for its retry (see struct sm_session). */
struct sm_memo {
	struct sm_reqkey	req;		/* sm->requests, kind REQ_MEMO */
	struct list_head	entry;		/* session->memos */
	int			code;
	uint32_t		n;		/* a grant's */
	uint64_t		token;
};

/*
 * A client: one connection, known to the state by its id (given by whoever
 * opened it, stable across replicas). conn is the node's own binding of it
 * to a connection (sm_client_bind), not part of the state: replies go to it
 * when it is bound.
 */
struct sm_client {
	struct hnode		node;		/* sm->clients_by_id */
	uint64_t		id;
	void			*conn;
	struct sm_principal	*pr;
	bool			local;		/* SM_CLIENT_LOCAL: a close is death */
	bool			detach;		/* Detach: the lease outlives a close */
	uint8_t			secret[SM_SECRET_LEN];
	bool			hello;
	struct sm_session	*session;
	struct list_head	entry;
	/* The last semaphore it named, valid while sm->sem_gen is last_gen. */
	struct sm_sem		*last_sem;
	uint64_t		last_gen;
	struct list_head	watches;	/* struct sm_watch.client_entry */
	uint32_t		nwatches;
};

/* A freed hold or waiter kept for the next one (see sm_cache_get). */
struct sm_cached {
	struct sm_cached	*next;
};

struct sm_cache {
	struct sm_cached	*head;
	size_t			n;
};

#define SM_CACHE_MAX	4096	/* freed records kept per kind */
#define SM_SEM_CACHE_MAX 256	/* freed semaphores kept per size class */
/*
 * Semaphore records come in size classes 16 bytes apart, each the usable
 * size of a malloc chunk (8 bytes of header), so a freed auto-created name
 * is reused by the next one of about its length without going to the heap.
 */
#define SEM_CLASS(len)	((sizeof(struct sm_sem) + (len) + 1 + 8 + 15) / 16)
#define SEM_CLASS_SIZE(k) ((k) * 16 - 8)
#define SM_SEM_CLASSES	(SEM_CLASS(SM_NAME_MAX) + 1)

struct sm {
	struct sm_config	cfg;
	struct sm_cache		hold_cache;
	struct sm_cache		wait_cache;
	struct sm_cache		sem_cache[SM_SEM_CLASSES];
	struct sm_cache		hists_cache;	/* a name's histograms */
	struct sm_out		out;
	uint64_t		start_ms;
	uint64_t		token_base;
	int64_t			wall_off;	/* wall time minus state time */
	uint64_t		leader_id;	/* the last LEADER entry's node */
	char			leader_addr[256]; /* ... and where clients reach it */
	bool			leader_leases;	/* sessions end by EXPIRE entries */
	uint32_t		lease_floor_ms;	/* ... with at least this grace */
	struct hmap		clients_by_id;
	uint64_t		token_hwm;	/* highest token of freed semaphores */
	struct hmap		names;
	struct ordidx		byname;		/* the same names, in order */
	uint64_t		sem_gen;	/* semaphores freed so far */
	uint64_t		byname_lost;	/* frees missing from it: a bug */
	struct hmap		sessions;
	struct hmap		permits;
	struct hmap		tokens;
	struct hmap		requests;
	struct hmap		idems;		/* struct sm_idem by principal, key */
	struct sm_idem		*idem_next;	/* the key of the down running */
	uint64_t		instance;	/* HelloReply.instance */
	struct sm_timer		**heap;
	size_t			heap_n;
	size_t			heap_cap;
	uint64_t		timer_seq;
	uint64_t		next_session;
	uint64_t		next_permit;
	uint64_t		next_wait_seq;
	struct list_head	clients;
	struct list_head	detached;
	struct sm_counters	ctr;
	uint64_t		mem;
	bool			shutting_down;
	uint64_t		overgrants;	/* grants that left held > limit: a bug */
	struct hmap		principals;
	const struct sm_caller	*who;		/* of the request in progress */
	struct list_head	offers;		/* struct sm_wait.offer_entry */
	bool			settling;	/* in sm_settle() */
	bool			freeing;	/* in sm_free(): nothing is granted */
	struct list_head	watches;	/* struct sm_watch.entry */
	uint64_t		ev_rev;		/* the last event's revision */
	struct sm_evring	evring;		/* the events kept for resumes */
	uint64_t		watch_sent;	/* notices sent (this node's) */
	uint64_t		multi_bugs;	/* a ready request not granted: a bug */
	struct list_head	rate_touched;	/* struct sm_rate.touch_entry */
	uint64_t		rate_bugs;	/* a due timer not armed */
	/* Deadlock search scratch (sm_deadlock.c). */
	struct sm_session	**dl_queue;
	size_t			dl_cap;
	uint64_t		dl_search;
	uint64_t		dl_visit;
	uint64_t		*dl_check;	/* sessions to check once settled */
	size_t			dl_ncheck;
	size_t			dl_check_cap;
	sm_visible_fn		visible;	/* what List shows, or NULL: all */
	void			*visible_arg;
	uint64_t		now;		/* of the call in progress */
	bool			req_memo_valid;	/* req_hash()'s last result */
	uint64_t		req_memo_sid;
	uint64_t		req_memo_rid;
	uint64_t		req_memo;
	int			cur_op;		/* op the replies answer: set by
						   every entry point */
	bool			reading;	/* in sm_read(): nothing changes,
						   no reply is counted */
};




/*
 * Arrays of pointers (to records): allocated, grown and sorted by the size
 * of a pointer - not sizeof *v, which the analyser takes for a mistaken
 * sizeof of a pointer.
 */
static inline void *ptr_array(size_t n)
{
	return calloc(n, sizeof(void *));
}

static inline void *ptr_array_grow(void *v, size_t n)
{
	return realloc(v, n * sizeof(void *));
}

static inline void ptr_sort(void *v, size_t n,
    int (*cmp)(const void *, const void *))
{
	qsort(v, n, sizeof(void *), cmp);
}

/* A name of len bytes, as a hash table key. */
struct name_key {
	const char	*name;
	size_t		len;
};

/*
 * An operation's handler (sm_optab.c's table): the request of client c,
 * answered through reply_*(); its time is sm->now.
 */
typedef void sm_op_fn(struct sm *sm, struct sm_client *c,
    const Semd__Request *req);
sm_op_fn op_ping, op_detach, op_watch;				/* sm_ops.c */
sm_op_fn op_create, op_info, op_list, op_delete, op_set_limit;	/* sm_ops_name.c */
sm_op_fn op_set_rate;						/* sm_ops_name.c */
sm_op_fn op_down;						/* sm_down.c */
sm_op_fn op_down_multi;						/* sm_multi.c */
sm_op_fn op_up, op_release, op_cancel, op_validate;		/* sm_ops_permit.c */
sm_op_fn op_renew, op_holds, op_where, op_sessions;		/* sm_holds.c */
sm_op_fn op_stats;						/* sm_stats.c */
sm_op_fn op_set_queue;						/* sm_queue.c */
sm_op_fn op_backup;						/* sm_snap_write.c */

/*
 * The parts below, each under the heading of its file, bottom up: a file
 * calls the ones above it in this list, never one below (tests/callgraph.py
 * checks it).
 */

/* sm_mem.c (and sm_assert_fail, above) */
void *sm_alloc(struct sm *sm, size_t size);
void sm_dealloc(struct sm *sm, void *p, size_t size);
void *sm_cache_get(struct sm *sm, struct sm_cache *c, size_t size);
void sm_cache_put_max(struct sm *sm, struct sm_cache *c, void *p,
    size_t size, size_t max);
void sm_cache_put(struct sm *sm, struct sm_cache *c, void *p, size_t size);
void sm_cache_drain(struct sm_cache *c);
void sm_strfree(struct sm *sm, char *s);
uint64_t sm_wall(const struct sm *sm, uint64_t now);

#include "daemon/state/sm-snap.h"

/* sm_index.c */
char *sm_label(struct sm *sm, const char *s);
uint64_t name_hash(const struct sm *sm, const char *name, size_t len);
uint64_t pair_hash(const struct sm *sm, uint64_t a, uint64_t b);
uint64_t id_hash(const struct sm *sm, uint64_t a, uint64_t b);
struct sm_sem *sem_find_len(const struct sm *sm, const char *name,
    size_t len);
struct sm_sem *sem_find(const struct sm *sm, const char *name);
struct sm_sem *client_sem(const struct sm *sm,
    const struct sm_client *c, const char *name, size_t len);
void client_sem_set(const struct sm *sm, struct sm_client *c,
    struct sm_sem *sem);
void *id_lookup(const struct hmap *m, uint64_t hash, size_t node_off,
    size_t id_off, uint64_t id);
/*
 * The record of type with the u64 id v in table m (hashed to hash), or
 * NULL: its struct hnode is member node, its id (a uint64_t) member field.
 */
#define ID_LOOKUP(m, hash, type, node, field, v)			\
	((type *)id_lookup((m), (hash), offsetof(type, node),		\
	    offsetof(type, field), (v)))
struct sm_session *session_find(const struct sm *sm, uint64_t id);
int sm_session_cmp(const void *a, const void *b);
int sm_wait_cmp(const void *a, const void *b);
struct sm_hold *permit_find(const struct sm *sm, uint64_t id);
struct sm_hold *token_find(const struct sm *sm, const struct sm_sem *sem,
    uint64_t token);
struct sm_reqkey *req_find(struct sm *sm, uint64_t session_id,
    uint64_t request_id);
void req_index(struct sm *sm, struct sm_reqkey *r, uint64_t session_id,
    uint64_t request_id, int kind);
void req_unindex(struct sm *sm, struct sm_reqkey *r);

/* sm_timer.c */
bool timer_before(const struct sm_timer *a, const struct sm_timer *b);
int timer_arm(struct sm *sm, struct sm_timer *t, int kind, uint64_t when);
int timer_arm_seq(struct sm *sm, struct sm_timer *t, int kind, uint64_t when,
    uint64_t seq);
void timer_disarm(struct sm *sm, struct sm_timer *t);

/* sm_reply.c */
void sm_note(struct sm *sm, struct sm_client *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void reply_err(struct sm *sm, struct sm_client *c, uint64_t id, int code,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void hist_add(struct sm_hist *h, uint64_t ms);
void reply_send(struct sm *sm, struct sm_client *c, Semd__Reply *r);
void reply_ok(struct sm *sm, struct sm_client *c, uint64_t id);
void reply_grant(struct sm *sm, struct sm_client *c, uint64_t id,
    uint64_t permit_id, uint64_t token, uint32_t n, uint64_t waited_ms);
void reply_released(struct sm *sm, struct sm_client *c, uint64_t id,
    uint32_t n);
void reply_holder(const struct sm *sm, Semd__Holder *e,
    const struct sm_hold *h);
size_t page_max(size_t asked, size_t dflt, size_t cap);
void *reply_page(struct sm *sm, struct sm_client *c, uint64_t id, size_t n,
    size_t size);

/*
 * Send the reply to request rid with one body: the oneof's case
 * SEMD__REPLY__BODY_<CASE> and its member field pointing at body. A macro
 * because a function cannot name the union's member.
 */
#define REPLY_BODY(sm, c, rid, CASE, field, body) do {			\
	Semd__Reply reply_ = SEMD__REPLY__INIT;				\
									\
	reply_.id = (rid);						\
	reply_.body_case = SEMD__REPLY__BODY_##CASE;			\
	reply_.field = (body);						\
	reply_send((sm), (c), &reply_);					\
} while (0)

/*
 * The same for a read whose answer a watch brings up to date: with the
 * revision of the last event so far (Reply.revision).
 */
#define REPLY_BODY_REV(sm, c, rid, CASE, field, body) do {		\
	Semd__Reply reply_ = SEMD__REPLY__INIT;				\
									\
	reply_.id = (rid);						\
	reply_.revision = (sm)->ev_rev;					\
	reply_.body_case = SEMD__REPLY__BODY_##CASE;			\
	reply_.field = (body);						\
	reply_send((sm), (c), &reply_);					\
} while (0)

/* sm_principal.c */
extern const char *const limit_names[SM_NLIMITS];
struct sm_principal *principal_get(struct sm *sm, const char *name);
struct sm_principal *principal_find(const struct sm *sm, const char *name);
struct sm_principal *principal_ref(struct sm_principal *pr);
void principal_put(struct sm *sm, struct sm_principal *pr);
bool principal_room(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_principal *pr, enum sm_limit_kind kind, uint64_t n);
void principal_count(struct sm_principal *pr, enum sm_limit_kind kind,
    int64_t delta);
struct sm_ident *ident_get(struct sm_ident *id);
void ident_put(struct sm *sm, struct sm_ident *id);
struct sm_ident *ident_new(struct sm *sm, struct sm_principal *pr,
    const Semd__Hello *h);

/* sm_effect.c: what a part queues for sm_settle() to deliver */
void effect_offer(struct sm *sm, struct sm_wait *w);
void effect_rate(struct sm *sm, struct sm_sem *sem);
void effect_deadlock(struct sm *sm, struct sm_session *s);
struct sm_wait *effect_next_offer(struct sm *sm);
struct sm_sem *effect_next_rate(struct sm *sm);
bool effect_next_deadlock(struct sm *sm, uint64_t *session_id);

/* sm_memo.c */
void memo_add(struct sm *sm, struct sm_session *s, uint64_t request_id,
    int code, uint32_t n, uint64_t token);
void memo_answer(struct sm *sm, struct sm_client *c, const struct sm_memo *m);
void memo_free(struct sm *sm, struct sm_session *s, struct sm_memo *m);

/* sm_idem.c */
bool idem_args_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *key, const ProtobufCBinaryData *hash);
struct sm_idem *idem_find(const struct sm *sm, const struct sm_principal *pr,
    const char *key);
bool idem_same(const struct sm_idem *k, const ProtobufCBinaryData *hash);
struct sm_idem *idem_new(struct sm *sm, struct sm_principal *pr,
    const char *key, const ProtobufCBinaryData *hash);
void idem_free(struct sm *sm, struct sm_idem *k);
void idem_free_all(struct sm *sm);
void idem_hold(struct sm *sm, struct sm_hold *h);
void idem_wait(struct sm *sm, struct sm_wait *w);
void idem_unbound(struct sm *sm);
struct sm_idem *idem_grant_begin(struct sm *sm, struct sm_wait *w);
void idem_grant_end(struct sm *sm, struct sm_idem *outer);
void idem_hold_gone(struct sm *sm, struct sm_hold *h, struct sm_hold *next);
void idem_reply_reused(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_idem *k);
void idem_reply_pending(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_wait *w);
bool idem_snap_write(struct sm_batch *b, const struct sm *sm);
bool idem_snap_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen);
const char *idem_check(const struct sm *sm);

/* A name with a limit and a rate: its waiters need tokens too (gated). */
static inline bool sem_gates(const struct sm_sem *sem)
{
	return sem->rate != NULL && sem->mode == SEMD__MODE__OWNED;
}

/*
 * Is w's member on sem passed over (parked) while w's session is away? Yes
 * where a grant would reach nobody: on a signal-mode name (the permits are
 * consumed), and for a down of a detached hold (Down.lease_ms > 0: the
 * hold would outlive the session, owned by the principal for its own
 * lease, and nobody would have its token). It keeps its place and is
 * served in it again when the session is back.
 */
static inline bool wait_parks_away(const struct sm_wait *w,
    const struct sm_sem *sem)
{
	return sem->mode == SEMD__MODE__SIGNAL || w->lease_ms > 0;
}

/*
 * The first member in sem's line that is not parked, or NULL: the one the
 * core serves next. Parked members keep their places but block nobody.
 */
static inline struct sm_member *sem_first_in_line(const struct sm_sem *sem)
{
	struct list_head *pos;
	struct sm_member *m;

	list_for_each(pos, &sem->waiters) {
		m = list_entry(pos, struct sm_member, sem_entry);
		if (!m->w.parked)
			return m;
	}
	return NULL;
}

/* What a down wants of one name. */
struct sm_want {
	struct sm_sem	*sem;
	uint32_t	n;
};

/* sm_watch.c */
void watch_hold(struct sm *sm, const struct sm_hold *h, uint32_t n,
    bool freed, const char *why);
void watch_grant(struct sm *sm, const struct sm_sem *sem,
    const struct sm_session *s, uint64_t id, uint64_t permit_id,
    uint64_t token, uint32_t n);
void watch_wait(struct sm *sm, const struct sm_wait *w,
    const struct sm_member *m);
void watch_wait_end(struct sm *sm, const struct sm_wait *w, int code,
    const char *why);
void watch_deadlock(struct sm *sm, const struct sm_sem *sem,
    const struct sm_session *s, uint64_t id, uint32_t n, const char *why);
void watch_limit(struct sm *sm, const struct sm_sem *sem,
    Semd__EventKind kind, const struct sm_client *c);
void watch_up(struct sm *sm, const struct sm_sem *sem,
    const struct sm_client *c, uint32_t n);
void watch_cluster(struct sm *sm, uint64_t term, const char *members);
struct sm_watch *watch_add(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, size_t len, bool prefix, bool admin);
bool watch_cancel(struct sm *sm, struct sm_client *c, uint64_t id);
void watch_replay(struct sm *sm, const struct sm_watch *x, uint64_t from);
void watch_client_gone(struct sm *sm, struct sm_client *c);

/* sm_rate.c */
bool rate_args_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    uint32_t rate, uint32_t *period_ms, uint32_t *burst);
bool rate_attach(struct sm *sm, struct sm_sem *sem, uint32_t rate,
    uint32_t period_ms, uint32_t burst);
bool rate_restore(struct sm *sm, struct sm_sem *sem, uint32_t rate,
    uint32_t period_ms, uint32_t burst, uint64_t frac, uint64_t tokens,
    uint64_t last);
void rate_detach(struct sm *sm, struct sm_sem *sem);
uint64_t rate_whole(const struct sm_sem *sem);
void rate_refill(struct sm *sm, struct sm_sem *sem);
void rate_take(struct sm_sem *sem, uint32_t n);
bool rate_has(struct sm *sm, struct sm_sem *sem, uint32_t n);
void rate_arm(struct sm *sm, struct sm_sem *sem);
void rate_due(struct sm *sm, struct sm_timer *t);
uint64_t rate_nano(const struct sm *sm, const struct sm_sem *sem);
uint64_t rate_next_ms(const struct sm *sm, const struct sm_sem *sem);
long rate_available(const struct sm *sm, struct sm_sem *sem);

/* sm_sem.c */
struct sm_sem *sem_new(struct sm *sm, const char *name, uint32_t limit,
    int mode, bool auto_created, uint64_t now);
void sem_set_owner(struct sm_sem *sem, struct sm_principal *pr);
bool sem_manager(const struct sm *sm, const struct sm_client *c,
    const struct sm_sem *sem);
void sem_free(struct sm *sm, struct sm_sem *sem);
struct sm_hists *sem_hists(struct sm *sm, struct sm_sem *sem);
void sem_maybe_free(struct sm *sm, struct sm_sem *sem);
struct sm_hold *hold_new(struct sm *sm, struct sm_sem *sem,
    struct sm_session *s, uint64_t request_id, uint32_t n, uint64_t token,
    uint32_t lease_ms, uint64_t now, uint64_t group_key);
void hold_release(struct sm *sm, struct sm_hold *h, bool up, const char *why);
void hold_shrink(struct sm *sm, struct sm_hold *h, uint32_t take);
bool hold_owned_by(const struct sm_hold *h, const struct sm_session *s);
void grant_deliver(struct sm *sm, struct sm_sem *sem, struct sm_session *s,
    uint64_t request_id, uint32_t n, uint64_t token, uint32_t lease_ms,
    uint64_t since, uint64_t now, struct sm_group *grp, uint64_t tag);
void reply_multi(struct sm *sm, struct sm_client *c, uint64_t id,
    unsigned int k, struct sm_sem *const *sems, const uint64_t *permits,
    const uint64_t *tokens, const uint32_t *ns, uint64_t waited_ms);
void multi_deliver(struct sm *sm, struct sm_session *s, uint64_t id,
    unsigned int k, struct sm_sem *const *sems, const uint32_t *ns,
    const uint64_t *tokens, uint32_t lease_ms, uint64_t since, uint64_t now);

/* sm_wait.c */
struct sm_wait *wait_alloc(struct sm *sm, unsigned int nm);
void wait_dealloc(struct sm *sm, struct sm_wait *w);
bool member_gated(const struct sm_wait *w, const struct sm_sem *sem);
int wait_queue(struct sm_wait *w, unsigned int i, unsigned int flags);
void wait_sort(struct sm_sem *sem);
void wait_link(struct sm *sm, struct sm_wait *w);
void wait_unlink(struct sm *sm, struct sm_wait *w);
void wait_wake(struct sema_waiter *sw);
void wait_cancel(struct sm *sm, struct sm_wait *w, int code,
    const char *why, struct sm_sem *keep);
bool wait_ready(struct sm *sm, struct sm_wait *w);
void wait_grant(struct sm *sm, struct sm_wait *w);

/* sm_family.c: a session started under another one's hold */
void family_init(struct sm_session *s);
uint64_t family_link(const struct sm_session *s);
void family_adopt(struct sm *sm, struct sm_session *s, uint64_t parent_id,
    uint64_t link);
void family_leave(struct sm_session *s);
bool family_waits(const struct sm_session *s);
bool snap_families_write(struct sm_batch *b, const struct sm *sm);
bool snap_families_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen);

/* sm_deadlock.c */
#define SM_DEADLOCK_MSG		512	/* a cycle told, at most (bytes) */
#define SM_DEADLOCK_SHOWN	4	/* hops of a cycle told */
#define SM_DEADLOCK_BUDGET	250000	/* holds looked at by one search */
bool deadlock_new(struct sm *sm, struct sm_session *s,
    const struct sm_want *wants, unsigned int k, char *why, size_t len);
void deadlock_check(struct sm *sm, uint64_t session_id);

/* sm_queue.c */
#define SM_RKEY_MAX	64	/* bytes of a replace key */
bool queue_rkey_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *key);
struct sm_wait *queue_replaced(const struct sm_sem *sem,
    const struct sm_session *s, const char *key);
bool queue_room(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_sem *sem, const struct sm_wait *old);
bool queue_set_rkey(struct sm *sm, struct sm_wait *w, const char *key);
void queue_replace(struct sm *sm, struct sm_wait *old, uint64_t by,
    struct sm_sem *keep);
bool queue_snap_write(struct sm_batch *b, const struct sm *sm);
bool queue_snap_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen);
bool prio_snap_write(struct sm_batch *b, const struct sm *sm);
bool prio_snap_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen);
bool shares_section_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen);
bool counters_snap_write(struct sm_batch *b, const struct sm *sm);
bool hists_snap_write(struct sm_batch *b, const struct sm *sm);
bool hists_snap_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen);
bool counters_snap_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen);

/* sm_share.c */
#define SHARE_SHIFT		16	/* tags in 1/65536 parts of a permit */
#define SHARE_WEIGHT_MAX	1000
#define SHARE_GROUPS_LISTED	64	/* weights a name lists */
int share_by(const struct sm_sem *sem);
bool share_group_name_ok(const char *s);
bool share_attach(struct sm *sm, struct sm_sem *sem, int by,
    Semd__GroupWeight *const *w, size_t n);
void share_detach(struct sm *sm, struct sm_sem *sem);
struct sm_group *share_group(struct sm *sm, struct sm_sem *sem,
    const char *pr, const char *key);
const char *share_group_label(const struct sm_group *g);
void share_group_put(struct sm *sm, struct sm_sem *sem, struct sm_group *g);
uint64_t share_tag(const struct sm_sem *sem, const struct sm_group *g);
void share_charge(struct sm_group *g, uint64_t tag, uint32_t n);
void share_granted(struct sm_sem *sem, struct sm_group *g, uint64_t tag,
    uint32_t n);
void share_waiting(struct sm_group *g, int delta);
void share_released(struct sm_group *g, uint32_t n);
bool share_args_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Create *cr, int mode);
Semd__GroupInfo **share_info(struct sm *sm, const struct sm_sem *sem,
    size_t *n);
bool share_snap_write(struct sm_batch *b, const struct sm *sm);
bool share_snap_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen);
const char *share_check(const struct sm_sem *sem);

/* sm_need.c */
bool sem_name_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name);
bool sem_name_len_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, size_t len);
bool limit_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    uint32_t limit);
struct sm_sem *sem_need(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name);
struct sm_sem *sem_need_manager(struct sm *sm, struct sm_client *c,
    uint64_t id, const char *name, const char *what);
bool sem_mode_refused(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_sem *sem, int mode, int code, const char *why);
const char *sem_mode_name(int mode);
struct sm_sem *sem_create(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t limit, int mode,
    const struct sm_principal *pr);
struct sm_sem *sem_auto_create(struct sm *sm, struct sm_client *c,
    uint64_t id, const char *name, uint32_t limit);

/* sm_session.c */
void notice_lost(struct sm *sm, const struct sm_hold *h, int code,
    const char *why);
void session_park(struct sm *sm, struct sm_session *s, bool away);
void session_arm(struct sm *sm, struct sm_session *s);
void session_expire(struct sm *sm, struct sm_session *s, uint64_t now);
void session_leases_start(struct sm *sm, uint32_t floor_ms);
void session_free(struct sm *sm, struct sm_session *s);
void session_detach(struct sm *sm, struct sm_session *s, bool death,
    uint64_t now);

/* sm_down.c: the steps of a down after its lookup, DownMulti's too */
bool down_take_all(struct sm *sm, const struct sm_want *wants, unsigned int k,
    uint64_t key, uint64_t *tokens);
bool down_prio_ok(struct sm *sm, struct sm_client *c, uint64_t id, int prio);
bool down_may_wait(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_want *wants, unsigned int k, int64_t timeout_ms,
    uint64_t key, const struct sm_wait *old);
struct sm_wait *down_wait_new(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_want *wants, unsigned int k, int64_t timeout_ms,
    uint32_t lease_ms, bool multi, int prio, uint64_t now);
void down_queued(struct sm *sm, struct sm_wait *w);

/* sm_settle.c */
void sm_settle_all(struct sm *sm);

/*
 * After every call into the state machine: sm_settle_all() when an effect
 * is queued (most requests queue none: then this is three loads).
 */
static inline void sm_settle(struct sm *sm)
{
	if (!list_empty(&sm->offers) || !list_empty(&sm->rate_touched) ||
	    sm->dl_ncheck != 0)
		sm_settle_all(sm);
}

/* sm_optab.c */
sm_op_fn *sm_op_handler(int op_case);

/* sm_time.c */
void sm_tick_from(struct sm *sm, uint64_t base, uint64_t now);

#endif
