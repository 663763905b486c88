/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * core/semaphore.h - the generic counting semaphore.
 *
 * A userspace port of the Linux kernel's generic semaphore (Matthew Wilcox,
 * 2008): a spinlock guarding a count and a strict FIFO wait list. up() with
 * waiters present hands the permits straight to the first waiter (count is
 * not incremented), so there is no barging and no thundering herd.
 *
 * Two faces over one struct semaphore:
 *  - blocking, for threads: sema_down*() sleep on a futex-backed waiter that
 *    lives on the sleeping thread's stack;
 *  - asynchronous, for an event loop: the caller owns a struct sema_waiter
 *    with a wake callback; sema_down_async() grants at once or queues it, and
 *    up/cancel/adjust call the callbacks of granted waiters in FIFO order,
 *    after the lock has been dropped.
 *
 * Extensions over the kernel: n permits at a time with the same FIFO rule (a
 * head waiter that needs 3 blocks a later one that needs 1, so large requests
 * cannot starve), a fencing token per grant, sema_adjust() for changing
 * the limit of a live semaphore, and gated waiters (below) for a caller that
 * grants one request across several semaphores at once.
 *
 * Gated waiters. A waiter that needs more than this semaphore's permits (the
 * daemon's multi-name downs, and downs that also need a token bucket's
 * tokens) is queued gated: it keeps its place and blocks everyone behind it
 * like any waiter, but the core never grants it by itself. When it is the
 * first unparked waiter and its n permits are free, the core *offers* it: its
 * wake callback runs (after the lock is dropped, in FIFO order with the
 * grants) with the state still SEMA_WAITING. The owner then looks at the rest
 * of what the request needs and, when everything is there, takes the permits
 * with sema_grant(), on every semaphore of the request in turn. Nothing is
 * held while a gated waiter waits, so two requests can only wait for each
 * other through the order of the queues - and an owner that queues every
 * request in one global arrival order (the daemon does) makes the oldest one
 * first in line wherever it waits: it is granted as soon as its permits are
 * free. sema_grant() only ever grants the first unparked waiter, so FIFO
 * holds on every semaphore. The owner's checks and grants must not be
 * interleaved with other changes to the semaphores concerned: the daemon
 * makes them from its one state-machine thread.
 */
#ifndef SEMD_SEMAPHORE_H
#define SEMD_SEMAPHORE_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/arch.h"
#include "core/list.h"

#if defined(__GNUC__)
#define __must_check __attribute__((warn_unused_result))
#else
#define __must_check
#endif

struct semaphore {
	struct spinlock		lock;
	long			count;		/* free permits; < 0 after a shrink */
	struct list_head	wait_list;	/* struct sema_waiter, FIFO */
	uint64_t		token;		/* last fencing token granted */
};

enum sema_state {
	SEMA_WAITING = 0,	/* on wait_list */
	SEMA_GRANTED,		/* permits handed over; token valid */
	SEMA_CANCELLED,		/* taken off the list without permits */
};

/*
 * An asynchronous waiter. It lives with whoever waits (a request in the
 * daemon) and must stay valid while state == SEMA_WAITING. The callback runs
 * after the semaphore lock is dropped, at most once, only on a grant - or,
 * for a gated waiter, on each offer (state still SEMA_WAITING); it may free
 * the waiter and may call back into the semaphore.
 */
struct sema_waiter {
	struct list_head	list;
	unsigned int		n;		/* permits wanted */
	int			state;		/* enum sema_state, under sem->lock */
	bool			parked;		/* passed over, keeps its place */
	bool			gated;		/* offered, granted by sema_grant() */
	uint64_t		token;		/* fencing token, once granted */
	void			(*wake)(struct sema_waiter *w);
	struct sema_waiter	*wake_next;	/* private: wake queue */
};

/* Initialise sem with count free permits. */
void sema_init(struct semaphore *sem, long count);

/* --- blocking API, for threads ------------------------------------------ */

/*
 * A thread's "signals", the userspace stand-in for the kernel's
 * signal_pending(): every thread has one struct sema_task (sema_current()).
 * sema_task_signal() is async-signal-safe and may be called from a signal
 * handler or another thread: it marks the task and wakes it if it sleeps in
 * the down family. sema_down_interruptible() gives up on any signal,
 * sema_down_killable() only on a fatal one, sema_down() and
 * sema_down_timeout() on none. Pending signals stay pending until
 * sema_task_clear().
 *
 * What that means for a thread:
 *  - "interruptible": the thread asked to be woken for any reason to stop,
 *    e.g. a SIGINT/SIGTERM handler that calls sema_task_signal(t, false), or
 *    a supervising thread cancelling a request;
 *  - "killable": the thread only gives up for a reason it cannot ignore, e.g.
 *    shutdown or the owner (client session) gone: sema_task_signal(t, true);
 *  - like the kernel, a free permit is taken even with a signal pending (the
 *    check happens before sleeping), and a permit handed over while the
 *    signal arrives is kept: the call then returns 0.
 * A thread sleeps on one futex word in its task, which both a grant and a
 * signal bump, so neither wake-up can be lost. Call sema_current() once in
 * the thread before handing its task to a signal handler (the first touch of
 * thread-local storage in a shared library may allocate).
 */
struct sema_task;
struct sema_task *sema_current(void);
void sema_task_signal(struct sema_task *t, bool fatal);
void sema_task_clear(struct sema_task *t);

void sema_down(struct semaphore *sem);
int sema_down_interruptible(struct semaphore *sem) __must_check;	/* 0, -EINTR */
int sema_down_killable(struct semaphore *sem) __must_check;		/* 0, -EINTR */
/* Waits up to timeout_ns on CLOCK_MONOTONIC (<= 0: only a free permit). */
int sema_down_timeout(struct semaphore *sem, long timeout_ns) __must_check; /* 0, -ETIME */
/*
 * Take one permit if free, without waiting. Returns true when acquired: note
 * this is the inverse of the kernel's down_trylock(), which returns 0 on
 * success.
 */
bool sema_down_trylock(struct semaphore *sem) __must_check;
void sema_up(struct semaphore *sem);

/*
 * n-permit forms; timeout_ns < 0 waits forever. sema_down_n() returns 0,
 * -ETIME, or -EINVAL for n == 0; it ignores task signals. sema_trydown_n()
 * never takes permits past a queued waiter (strict FIFO) and sets *token
 * (may be NULL) to the grant's fencing token. sema_up_n(sem, 0) does nothing.
 */
int sema_down_n(struct semaphore *sem, unsigned int n, long timeout_ns) __must_check;
bool sema_trydown_n(struct semaphore *sem, unsigned int n, uint64_t *token) __must_check;
void sema_up_n(struct semaphore *sem, unsigned int n);

/* --- asynchronous API, for an event loop --------------------------------- */

/*
 * Take w->n = n permits. Returns 0 when granted at once (w->state ==
 * SEMA_GRANTED, w->token set, wake is NOT called), or 1 when queued (wake is
 * called later, on grant). A trydown is sema_trydown_n(). -EINVAL for
 * n == 0 or a NULL wake.
 */
int sema_down_async(struct semaphore *sem, struct sema_waiter *w,
    unsigned int n, void (*wake)(struct sema_waiter *)) __must_check;

/*
 * Take a queued waiter off the list (deadline passed, owner gone). Returns
 * true if it was removed without permits (state SEMA_CANCELLED), false if it
 * had already been granted: then the caller owns w->n permits and must give
 * them back with sema_up_n() or keep them. Removing a waiter can let the ones
 * behind it proceed; their callbacks run before this returns. Cancelling a
 * cancelled waiter again returns true and does nothing. If another thread
 * may be running up(), "false" can come before w's callback has run (it is
 * on that thread's wake queue): do not free w until the callback has run.
 * On a single event-loop thread the callback has always run by then.
 */
bool sema_cancel(struct semaphore *sem, struct sema_waiter *w) __must_check;

/*
 * Put w at the tail of the wait list as waiting without trying to grant it,
 * with flags SEMA_Q_PARKED (sema_park) and SEMA_Q_GATED (see "Gated
 * waiters"): for rebuilding a saved queue whose free count and order are
 * already right (the first unparked waiter does not fit, or is gated), and
 * for queueing a gated waiter. -EINVAL for n == 0 or a NULL wake.
 */
#define SEMA_Q_PARKED	0x1u
#define SEMA_Q_GATED	0x2u
int sema_enqueue(struct semaphore *sem, struct sema_waiter *w, unsigned int n,
    void (*wake)(struct sema_waiter *), unsigned int flags);

/*
 * For an owner that orders its queues by more than arrival (the daemon's
 * priorities): sema_enqueue_before() queues w like sema_enqueue() but just
 * before the queued waiter before (NULL: at the tail); sema_requeue_tail()
 * moves a queued waiter to the tail (rebuilding a saved queue); neither
 * grants anyone. sema_take_n() takes n free permits whoever waits (the
 * owner decided that the request comes before every unparked waiter).
 * The owner keeps the rule that makes the hand-off fair: the first unparked
 * waiter blocks everyone behind it.
 */
int sema_enqueue_before(struct semaphore *sem, struct sema_waiter *w,
    unsigned int n, void (*wake)(struct sema_waiter *), unsigned int flags,
    struct sema_waiter *before);
void sema_requeue_tail(struct semaphore *sem, struct sema_waiter *w);
bool sema_take_n(struct semaphore *sem, unsigned int n, uint64_t *token) __must_check;

/*
 * For an owner that serializes every use of sem itself (one thread, or all
 * of them under one lock of its own: the daemon's state): sema_take_n() and
 * sema_up_n() without sem's spinlock. Its lock is a locked instruction,
 * which after the stores of a change of the owner's state waits for all of
 * them to drain; these are the calls of every acquire and release. The
 * other calls may still be made (their lock is then simply never contended).
 */
bool sema_take_n_owned(struct semaphore *sem, unsigned int n, uint64_t *token) __must_check;
void sema_up_n_owned(struct semaphore *sem, unsigned int n);

/*
 * Is w the first unparked waiter, with its n permits free? (For a gated
 * waiter: would sema_grant() take them now.)
 */
bool sema_fits(struct semaphore *sem, const struct sema_waiter *w);

/*
 * Grant a gated (or any) queued waiter its permits now, if it is the first
 * unparked waiter and they are free: w->state becomes SEMA_GRANTED with a
 * fresh token, and w's callback is NOT called (the caller asked). The
 * waiters behind it are then served as after an up; their callbacks run
 * before this returns. false, and nothing changes, otherwise.
 */
bool sema_grant(struct semaphore *sem, struct sema_waiter *w) __must_check;

/*
 * Make a queued waiter gated or not. Ungated, it is granted at once if it
 * is the first unparked waiter and its permits are free (its callback runs
 * before this returns); gated, it is offered instead. No-op unless w is
 * SEMA_WAITING.
 */
void sema_gate(struct semaphore *sem, struct sema_waiter *w, bool gated);

/*
 * Park or unpark a queued (async) waiter. A parked waiter keeps its place in
 * the FIFO list but is passed over: grants go to the first unparked waiter
 * that fits, as if the parked ones were not there, and a parked waiter does
 * not block those behind it. Unparked, it is served in its old place again
 * (granted at once if it is the first unparked waiter and its permits are
 * free). The daemon parks the waiters of a client that is away when a grant
 * could not be delivered to it. Callbacks of waiters granted by the change
 * run before this returns. No-op unless w is SEMA_WAITING.
 */
void sema_park(struct semaphore *sem, struct sema_waiter *w, bool parked);

/*
 * Give back n permits beyond what is free, but never above max free permits
 * when nobody waits (signal-mode semaphores). Returns 0, or -EOVERFLOW and
 * changes nothing.
 */
int sema_up_max(struct semaphore *sem, unsigned int n, long max) __must_check;

/*
 * Add delta (may be negative) to the free count: a live limit change. The
 * count may go below zero (more held than the new limit); then ups refill it
 * before anyone is served. Growing hands permits to waiters. The count
 * saturates at LONG_MIN/LONG_MAX (as does sema_up_n()).
 */
void sema_adjust(struct semaphore *sem, long delta);

/* Snapshot readers (take the lock). */
long sema_count(struct semaphore *sem);
unsigned long sema_waiters(struct semaphore *sem);

#endif
