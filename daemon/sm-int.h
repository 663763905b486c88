/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/sm-int.h - the state machine's insides, shared by its files (not
 * by anyone else: the interface is daemon/state.h).
 *
 * Plain logic: no I/O, no clock, no randomness (see state.h). Every permit a
 * client holds is a struct sm_hold, owned by its session or, for a detached
 * hold, by the principal until its lease runs out. Every down that waits is a
 * struct sm_wait around a core struct sema_waiter; the core decides who gets
 * permits (strict FIFO, direct hand-off) and calls wait_wake() on a grant.
 *
 * For an OWNED semaphore, held + count == limit at all times: permits only
 * move between the core's free count and hold records, and a limit change
 * moves the free count by the same delta (so after a shrink count may be
 * negative while the holders drain). A SIGNAL semaphore has no holds: a down
 * consumes permits, any up adds them back, and count never exceeds limit.
 *
 * The files, each owning one part:
 *   sm_mem.c        allocation with accounting, record caches, labels
 *   sm_index.c      name checks, hashing, the indexes (names, sessions,
 *                   permits, tokens, requests)
 *   sm_timer.c      the deadline heap
 *   sm_reply.c      building replies
 *   sm_principal.c  principals (counts for the caps) and identities
 *   sm_sem.c        semaphores, holds, waiters, grants
 *   sm_session.c    sessions, memos, notices, clients; making and freeing
 *                   the state machine
 *   sm_ops.c        the operations, their table and dispatch; time
 *   sm_stats.c      Stats, counters and per-name gauges
 *   sm_check.c      the invariants (sm_check)
 */
#ifndef SEMD_SM_INT_H
#define SEMD_SM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/semaphore.h"
#include "daemon/hmap.h"
#include "daemon/ordidx.h"
#include "daemon/state.h"

#define SM_LIMIT_MAX	(1u << 30)
#define SM_STR_MAX	255	/* client name, host: longer is cut */
#define SM_PRINCIPAL_MAX 1024	/* the longest principal a snapshot holds */

enum { T_WAIT = 1, T_HOLD, T_SESSION };

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
	struct hnode	node;		/* sm->principals */
	unsigned int	refs;
	uint64_t	count[SM_NLIMITS];
	size_t		len;
	char		name[];
};

/* Who a session is; shared by the session and its detached holds. */
struct sm_ident {
	unsigned int		refs;
	uint32_t		pid;
	struct sm_principal	*pr;
	char			*client_name;
	char			*host;
};

/* Laid out without holes: an idle name costs this plus its bytes. */
struct sm_sem {
	struct hnode		node;		/* sm->names */
	struct semaphore	sem;
	uint64_t		held;		/* permits in hold records */
	struct list_head	holders;	/* sm_hold.sem_entry, grant order */
	struct list_head	waiters;	/* sm_wait.sem_entry, queue order */
	struct sm_principal	*owner;		/* explicit creator; NULL: nobody */
	uint32_t		limit;
	uint32_t		nholders;
	uint32_t		nwaiters;
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

struct sm_hold {
	struct hnode		permit_node;	/* sm->permits */
	struct hnode		token_node;	/* sm->tokens */
	struct sm_reqkey	req;		/* sm->requests */
	uint64_t		permit_id;
	uint64_t		token;
	uint32_t		n;
	struct sm_sem		*sem;
	struct sm_session	*session;	/* NULL: detached */
	struct sm_ident		*ident;
	struct list_head	sem_entry;
	struct list_head	owner_entry;	/* session->holds or sm->detached */
	uint64_t		since_wall;
	struct sm_timer		expiry;		/* detached only */
};

struct sm_wait {
	struct sema_waiter	w;
	struct sm_reqkey	req;
	struct sm		*sm;
	uint64_t		seq;		/* arrival order, unique */
	uint32_t		n;
	uint32_t		lease_ms;
	struct sm_sem		*sem;
	struct sm_session	*session;
	struct list_head	sem_entry;
	struct list_head	session_entry;
	uint64_t		since_ms;
	uint64_t		since_wall;
	struct sm_timer		deadline;
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
	struct sm_timer		expiry;
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
	struct sm_out		out;
	uint64_t		start_ms;
	uint64_t		token_base;
	int64_t			wall_off;	/* wall time minus state time */
	uint64_t		leader_id;	/* the last LEADER entry's node */
	char			leader_addr[256]; /* ... and where clients reach it */
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
	sm_visible_fn		visible;	/* what List shows, or NULL: all */
	void			*visible_arg;
	uint64_t		now;		/* of the call in progress */
	bool			req_memo_valid;	/* req_hash()'s last result */
	uint64_t		req_memo_sid;
	uint64_t		req_memo_rid;
	uint64_t		req_memo;
	int			cur_op;		/* op the replies answer: set by
						   every entry point */
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

/* sm_mem.c */
void *sm_alloc(struct sm *sm, size_t size);
void sm_dealloc(struct sm *sm, void *p, size_t size);
void *sm_cache_get(struct sm *sm, struct sm_cache *c, size_t size);
void sm_cache_put_max(struct sm *sm, struct sm_cache *c, void *p,
    size_t size, size_t max);
void sm_cache_put(struct sm *sm, struct sm_cache *c, void *p, size_t size);
void sm_cache_drain(struct sm_cache *c);
void sm_strfree(struct sm *sm, char *s);
uint64_t sm_wall(const struct sm *sm, uint64_t now);

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
struct sm_session *session_find(const struct sm *sm, uint64_t id);
int sm_session_cmp(const void *a, const void *b);
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

/* sm_principal.c */
extern const char *const limit_names[SM_NLIMITS];
struct sm_principal *principal_get(struct sm *sm, const char *name);
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

/* sm_sem.c */
struct sm_sem *sem_new(struct sm *sm, const char *name, uint32_t limit,
    int mode, bool auto_created, uint64_t now);
void sem_set_owner(struct sm_sem *sem, struct sm_principal *pr);
bool sem_manager(const struct sm *sm, const struct sm_client *c,
    const struct sm_sem *sem);
void sem_free(struct sm *sm, struct sm_sem *sem);
void sem_maybe_free(struct sm *sm, struct sm_sem *sem);
void hold_release(struct sm *sm, struct sm_hold *h, bool up);
void hold_shrink(struct sm_hold *h, uint32_t take);
bool hold_owned_by(const struct sm_hold *h, const struct sm_session *s);
void grant_deliver(struct sm *sm, struct sm_sem *sem, struct sm_session *s,
    uint64_t request_id, uint32_t n, uint64_t token, uint32_t lease_ms,
    uint64_t since, uint64_t now);
void wait_unlink(struct sm *sm, struct sm_wait *w);
void wait_wake(struct sema_waiter *sw);
void wait_cancel(struct sm *sm, struct sm_wait *w, int code,
    const char *why);

/* sm_session.c */
void memo_add(struct sm *sm, struct sm_session *s, uint64_t request_id,
    int code, uint32_t n, uint64_t token);
void memo_answer(struct sm *sm, struct sm_client *c, struct sm_memo *m);
void notice_lost(struct sm *sm, const struct sm_hold *h, int code,
    const char *why);
void session_park(struct sm_session *s, bool away);
void session_arm(struct sm *sm, struct sm_session *s);
void session_expire(struct sm *sm, struct sm_session *s, uint64_t now);

/* sm_stats.c */
void op_stats(struct sm *sm, struct sm_client *c, uint64_t id);

#endif
