/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * core/semaphore.c - the generic counting semaphore.
 *
 * The Linux kernel's kernel/locking/semaphore.c, in userspace: a spinlock
 * guards count and a FIFO wait_list. A waiter lives with whoever waits (on
 * the sleeping thread's stack, or in the daemon's request). A hand-off takes
 * the head waiter off the list, marks it granted with a fresh fencing token
 * and puts it on a wake queue; count never rises while a waiter could use
 * the permits, so nobody barges past the queue. The wake queue is run after
 * the lock is dropped, as the kernel's wake_q does.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>

#include "arch/arch.h"
#include "arch/futex.h"
#include "core/semaphore.h"

/* Task "signal" bits in sema_task.pending. */
#define TASK_SIGNAL	0x1u
#define TASK_FATAL	0x2u

/* How a blocking waiter reacts to its task's signals. */
enum sema_sleep {
	SLEEP_UNINTERRUPTIBLE,
	SLEEP_INTERRUPTIBLE,
	SLEEP_KILLABLE,
};

/*
 * A thread's signal state. The thread sleeps on futex, a wake-up counter
 * that both a grant and a signal increment, so a sleeper never misses
 * either: it reads futex, checks its conditions, and sleeps only while
 * futex still holds what it read. refs counts wakers still touching the
 * task; a thread does not exit (freeing its thread-local task) until it is
 * 0, see sema_task_exit().
 */
struct sema_task {
	arch_atomic32_t		pending;	/* TASK_SIGNAL | TASK_FATAL */
	arch_atomic32_t		futex;		/* wake-up counter */
	arch_atomic32_t		refs;		/* wakers in sema_thread_wake */
	int			registered;	/* exit hook installed */
};

/* Bits of struct sema_thread_waiter's word. */
#define TW_SLEEPING	0x1u	/* the sleeper is (about to be) in futex_wait */
#define TW_DONE		0x2u	/* granted, and the waker is done with tw */

/*
 * A sleeping thread's waiter, on its stack. word is the hand-over: the
 * waker's exchange of TW_DONE is its last access to the waiter, after which
 * the sleeper may return and its stack vanish. Whether the waker must issue
 * a futex wake-up is decided by the same atomic exchange (TW_SLEEPING), so
 * a waiter that is still spinning costs no system call.
 */
struct sema_thread_waiter {
	struct sema_waiter	w;
	struct sema_task	*task;
	arch_atomic32_t		word;		/* TW_SLEEPING | TW_DONE */
};

/*
 * How long the head waiter spins on its word before it sleeps. Not in the
 * kernel's semaphore (its waiters always sleep); it is the kernel mutex's
 * optimistic spinning, bounded: a hand-off to a waiter that is still
 * running then costs a cache-line transfer instead of a futex wake-up and a
 * context switch. FIFO order and the hand-off rule are unchanged.
 */
#define SEMA_SPIN_LOOPS 200

/* Granted waiters whose callbacks are due once the lock is dropped. */
struct sema_wakeq {
	struct sema_waiter	*first;
	struct sema_waiter	**tail;
};

static _Thread_local struct sema_task sema_current_task;

/* Initialise an empty wake queue. */
static void sema_wakeq_init(struct sema_wakeq *q)
{
	q->first = NULL;
	q->tail = &q->first;
}

/* Hand w its permits: off the list, granted, a new token, onto q. */
static void do_grant_locked(struct semaphore *sem, struct sema_waiter *w,
    struct sema_wakeq *q)
{
	list_del_init(&w->list);
	w->state = SEMA_GRANTED;
	w->token = ++sem->token;
	w->wake_next = NULL;
	*q->tail = w;
	q->tail = &w->wake_next;
}

/* Offer a gated waiter: onto q without a grant (its state stays WAITING). */
static void do_offer_locked(struct sema_waiter *w, struct sema_wakeq *q)
{
	w->wake_next = NULL;
	*q->tail = w;
	q->tail = &w->wake_next;
}

/*
 * Grant waiters from the head of the list while the free count covers the
 * head's request. Strict FIFO: a head that needs more than is free blocks
 * everyone behind it, even those that would fit. Parked waiters (only the
 * async API parks) are stepped over, as if not queued. A gated head that
 * fits is offered, and blocks everyone behind it until its owner grants it.
 */
static void do_wake_locked(struct semaphore *sem, struct sema_wakeq *q)
{
	struct list_head *pos, *next;
	struct sema_waiter *w;

	for (pos = sem->wait_list.next; pos != &sem->wait_list; pos = next) {
		next = pos->next;
		w = list_entry(pos, struct sema_waiter, list);
		if (w->parked)
			continue;	/* keeps its place, blocks nobody */
		if (sem->count < (long)w->n)
			break;
		if (w->gated) {
			do_offer_locked(w, q);
			break;
		}
		sem->count -= (long)w->n;
		do_grant_locked(sem, w, q);
	}
}

/* The first waiter that is not parked, or NULL. */
static struct sema_waiter *do_first_locked(const struct semaphore *sem)
{
	struct list_head *pos;
	struct sema_waiter *w;

	for (pos = sem->wait_list.next; pos != &sem->wait_list; pos = pos->next) {
		w = list_entry(pos, struct sema_waiter, list);
		if (!w->parked)
			return w;
	}
	return NULL;
}

/*
 * Run the callbacks of q, lock not held. A callback may free its waiter,
 * so the next pointer is read first.
 */
static void sema_wakeq_run(struct sema_wakeq *q)
{
	struct sema_waiter *w, *next;

	for (w = q->first; w != NULL; w = next) {
		next = w->wake_next;
		w->wake(w);
	}
}

/* count + delta, saturated at LONG_MIN and LONG_MAX. */
static long sema_add_sat(long count, long delta)
{
	if (delta > 0 && count > LONG_MAX - delta)
		return LONG_MAX;
	if (delta < 0 && count < LONG_MIN - delta)
		return LONG_MIN;
	return count + delta;
}

/* Initialise sem with count free permits. */
void sema_init(struct semaphore *sem, long count)
{
	spin_lock_init(&sem->lock);
	sem->count = count;
	INIT_LIST_HEAD(&sem->wait_list);
	sem->token = 0;
}

/* Take n permits now if free and nobody queues; true when taken. */
static bool do_trydown_locked(struct semaphore *sem, unsigned int n,
    uint64_t *token)
{
	if (sem->count < (long)n || do_first_locked(sem) != NULL)
		return false;
	sem->count -= (long)n;
	++sem->token;
	if (token != NULL)
		*token = sem->token;
	return true;
}

/* --- tasks --------------------------------------------------------------- */

static pthread_once_t sema_task_once = PTHREAD_ONCE_INIT;
static pthread_key_t sema_task_key;
static bool sema_task_key_ok;

/*
 * Thread exit hook: wait until no waker touches the task any more (a few
 * instructions and at most one futex_wake), as the thread-local task is
 * freed with the thread.
 */
static void sema_task_exit(void *arg)
{
	struct sema_task *t = arg;

	while (arch_load_acquire32(&t->refs) != 0)
		sched_yield();
}

/* Create the key whose destructor runs sema_task_exit(). */
static void sema_task_key_init(void)
{
	sema_task_key_ok = pthread_key_create(&sema_task_key, sema_task_exit) == 0;
}

/* The calling thread's task. */
struct sema_task *sema_current(void)
{
	struct sema_task *t = &sema_current_task;

	if (!t->registered) {
		pthread_once(&sema_task_once, sema_task_key_init);
		if (sema_task_key_ok)
			pthread_setspecific(sema_task_key, t);
		t->registered = 1;
	}
	return t;
}

/* Or bits into *p (an atomic read-modify-write). */
static void sema_atomic_or(arch_atomic32_t *p, uint32_t bits)
{
	uint32_t old, seen;

	old = arch_load_relaxed32(p);
	while ((seen = arch_cmpxchg32(p, old, old | bits)) != old)
		old = seen;
}

/* Send t a signal (fatal or not) and wake it; async-signal-safe. */
void sema_task_signal(struct sema_task *t, bool fatal)
{
	int saved = errno;

	sema_atomic_or(&t->pending, fatal ? TASK_SIGNAL | TASK_FATAL : TASK_SIGNAL);
	arch_fetch_add32(&t->futex, 1);
	futex_wake(&t->futex, 1);
	errno = saved;
}

/* Forget t's pending signals. */
void sema_task_clear(struct sema_task *t)
{
	arch_store_release32(&t->pending, 0);
}

/* Does a signal pending on t end a sleep of this kind? */
static bool sema_task_interrupted(struct sema_task *t, enum sema_sleep how)
{
	uint32_t p = arch_load_acquire32(&t->pending);

	switch (how) {
	case SLEEP_INTERRUPTIBLE:
		return p != 0;
	case SLEEP_KILLABLE:
		return (p & TASK_FATAL) != 0;
	default:
		return false;
	}
}

/* --- blocking API ---------------------------------------------------------- */

/*
 * Wake callback of a sleeping thread. The exchange of TW_DONE is the last
 * access to the waiter; if it finds the thread asleep (or about to be), the
 * counter is bumped and the thread woken. The task outlives that: refs
 * holds back the thread's exit until we are done with it.
 */
static void sema_thread_wake(struct sema_waiter *w)
{
	struct sema_thread_waiter *tw = container_of(w, struct sema_thread_waiter, w);
	struct sema_task *task = tw->task;

	arch_fetch_add32(&task->refs, 1);
	if (arch_xchg32(&tw->word, TW_DONE) & TW_SLEEPING) {
		arch_fetch_add32(&task->futex, 1);
		futex_wake(&task->futex, 1);
	}
	arch_fetch_add32(&task->refs, (uint32_t)-1);
}

/*
 * Sleep on the task's counter while it holds seq (read before the caller
 * checked its conditions) or until deadline. Returns true if the waiter
 * turned out to be done instead. Marking TW_SLEEPING with a
 * compare-and-swap from 0 orders us against the waker's exchange: either
 * the waker sees the mark and bumps the counter after our read of seq (so
 * futex_wait returns), or the swap fails on TW_DONE.
 */
static bool sema_thread_sleep(struct sema_thread_waiter *tw, uint32_t seq,
    const struct timespec *deadline)
{
	if (arch_cmpxchg32(&tw->word, 0, TW_SLEEPING) != 0)
		return true;
	futex_wait(&tw->task->futex, seq, deadline);
	return arch_cmpxchg32(&tw->word, TW_SLEEPING, 0) != TW_SLEEPING;
}

/* Spin a while for TW_DONE or a change of the task's counter; true if done. */
static bool sema_thread_spin(struct sema_thread_waiter *tw, uint32_t seq)
{
	int i;

	for (i = 0; i < SEMA_SPIN_LOOPS; i++) {
		if (arch_load_acquire32(&tw->word) & TW_DONE)
			return true;
		if (arch_load_relaxed32(&tw->task->futex) != seq)
			return false;
		cpu_relax();
	}
	return false;
}

/* Wait, lock not held, until a granted waiter's waker is done with it. */
static void sema_thread_wait_done(struct sema_thread_waiter *tw)
{
	uint32_t seq;

	for (;;) {
		seq = arch_load_acquire32(&tw->task->futex);
		if (arch_load_acquire32(&tw->word) & TW_DONE)
			return;
		if (sema_thread_spin(tw, seq) || sema_thread_sleep(tw, seq, NULL))
			return;
	}
}

/*
 * The slow path, entered with the lock held and the fast path failed:
 * queue a waiter on this stack and sleep until granted, signalled (as how
 * allows) or past deadline (NULL: none). task is the caller's
 * sema_current(). Returns with the lock dropped.
 */
static int do_down_common_locked(struct semaphore *sem, unsigned int n,
    enum sema_sleep how, const struct timespec *deadline,
    struct sema_task *task)
{
	struct sema_thread_waiter tw;
	struct sema_wakeq q;
	uint32_t seq;
	bool head;
	int r;

	tw.w.n = n;
	tw.w.parked = false;
	tw.w.gated = false;
	tw.w.state = SEMA_WAITING;
	tw.w.token = 0;
	tw.w.wake = sema_thread_wake;
	tw.w.wake_next = NULL;
	tw.task = task;
	arch_store_relaxed32(&tw.word, 0);
	list_add_tail(&tw.w.list, &sem->wait_list);

	for (;;) {
		if (tw.w.state == SEMA_GRANTED) {
			spin_unlock(&sem->lock);
			sema_thread_wait_done(&tw);
			return 0;
		}
		/* Read the counter before the conditions: see struct sema_task. */
		seq = arch_load_acquire32(&task->futex);
		if (sema_task_interrupted(task, how)) {
			r = -EINTR;
			break;
		}
		if (deadline != NULL && futex_deadline_passed(deadline)) {
			r = -ETIME;
			break;
		}
		head = do_first_locked(sem) == &tw.w;
		spin_unlock(&sem->lock);
		if ((head && sema_thread_spin(&tw, seq)) ||
		    sema_thread_sleep(&tw, seq, deadline))
			return 0;	/* granted, and the waker is done */
		spin_lock(&sem->lock);
	}

	/* Give up: off the list; if we were the head, others may fit now. */
	head = do_first_locked(sem) == &tw.w;
	sema_wakeq_init(&q);
	list_del_init(&tw.w.list);
	tw.w.state = SEMA_CANCELLED;
	if (head)
		do_wake_locked(sem, &q);
	spin_unlock(&sem->lock);
	sema_wakeq_run(&q);
	return r;
}

/* Take n permits, sleeping as how says, until deadline (NULL: none). */
static int sema_down_common(struct semaphore *sem, unsigned int n,
    enum sema_sleep how, const struct timespec *deadline)
{
	struct sema_task *task;

	spin_lock(&sem->lock);
	if (do_trydown_locked(sem, n, NULL)) {
		spin_unlock(&sem->lock);
		return 0;
	}
	/* About to sleep: find our task (may register it) outside the lock. */
	spin_unlock(&sem->lock);
	task = sema_current();
	spin_lock(&sem->lock);
	if (do_trydown_locked(sem, n, NULL)) {
		spin_unlock(&sem->lock);
		return 0;
	}
	return do_down_common_locked(sem, n, how, deadline, task);
}

/* Take one permit, sleeping as long as it takes; signals are ignored. */
void sema_down(struct semaphore *sem)
{
	(void)sema_down_common(sem, 1, SLEEP_UNINTERRUPTIBLE, NULL);
}

/* Take one permit; give up with -EINTR on any pending signal. */
int sema_down_interruptible(struct semaphore *sem)
{
	return sema_down_common(sem, 1, SLEEP_INTERRUPTIBLE, NULL);
}

/* Take one permit; give up with -EINTR on a pending fatal signal. */
int sema_down_killable(struct semaphore *sem)
{
	return sema_down_common(sem, 1, SLEEP_KILLABLE, NULL);
}

/* Take one permit within timeout_ns; -ETIME when it passes. */
int sema_down_timeout(struct semaphore *sem, long timeout_ns)
{
	return sema_down_n(sem, 1, timeout_ns < 0 ? 0 : timeout_ns);
}

/* Take one permit if one is free and nobody waits; true when taken. */
bool sema_down_trylock(struct semaphore *sem)
{
	return sema_trydown_n(sem, 1, NULL);
}

/* Give back one permit, handing it to the first waiter if any. */
void sema_up(struct semaphore *sem)
{
	sema_up_n(sem, 1);
}

/* Take n permits, waiting up to timeout_ns (< 0: forever). */
int sema_down_n(struct semaphore *sem, unsigned int n, long timeout_ns)
{
	struct timespec deadline;

	if (n == 0)
		return -EINVAL;
	if (timeout_ns < 0)
		return sema_down_common(sem, n, SLEEP_UNINTERRUPTIBLE, NULL);
	futex_deadline(&deadline, timeout_ns);
	return sema_down_common(sem, n, SLEEP_UNINTERRUPTIBLE, &deadline);
}

/* Take n permits now if free and nobody waits; token gets the grant's. */
bool sema_trydown_n(struct semaphore *sem, unsigned int n, uint64_t *token)
{
	bool ok;

	if (n == 0)
		return false;
	spin_lock(&sem->lock);
	ok = do_trydown_locked(sem, n, token);
	spin_unlock(&sem->lock);
	return ok;
}

/* Give back n permits; hand them to waiters in FIFO order. */
void sema_up_n(struct semaphore *sem, unsigned int n)
{
	struct sema_wakeq q;

	if (n == 0)
		return;
	sema_wakeq_init(&q);
	spin_lock(&sem->lock);
	sem->count = sema_add_sat(sem->count, (long)n);
	do_wake_locked(sem, &q);
	spin_unlock(&sem->lock);
	sema_wakeq_run(&q);
}

/* sema_up_n() of a semaphore its owner serializes: sem's lock not taken. */
void sema_up_n_owned(struct semaphore *sem, unsigned int n)
{
	struct sema_wakeq q;

	if (n == 0)
		return;
	sema_wakeq_init(&q);
	sem->count = sema_add_sat(sem->count, (long)n);
	do_wake_locked(sem, &q);
	sema_wakeq_run(&q);
}

/* --- asynchronous API ------------------------------------------------------- */

/*
 * Ready w to wait for n permits, woken through wake, with its SEMA_Q_*
 * flags; -EINVAL for nothing to wait for or no one to wake.
 */
static int waiter_init(struct sema_waiter *w, unsigned int n,
    void (*wake)(struct sema_waiter *), unsigned int flags)
{
	if (n == 0 || wake == NULL)
		return -EINVAL;
	w->n = n;
	w->wake = wake;
	w->wake_next = NULL;
	w->token = 0;
	w->parked = (flags & SEMA_Q_PARKED) != 0;
	w->gated = (flags & SEMA_Q_GATED) != 0;
	return 0;
}

/* Take n permits for w now (0) or queue it for a later callback (1). */
int sema_down_async(struct semaphore *sem, struct sema_waiter *w,
    unsigned int n, void (*wake)(struct sema_waiter *))
{
	if (waiter_init(w, n, wake, 0) != 0)
		return -EINVAL;
	spin_lock(&sem->lock);
	if (do_trydown_locked(sem, n, &w->token)) {
		w->state = SEMA_GRANTED;
		spin_unlock(&sem->lock);
		return 0;
	}
	w->state = SEMA_WAITING;
	list_add_tail(&w->list, &sem->wait_list);
	spin_unlock(&sem->lock);
	return 1;
}

/* Take w off the queue without permits; false if it was already granted. */
bool sema_cancel(struct semaphore *sem, struct sema_waiter *w)
{
	struct sema_wakeq q;
	bool head;

	sema_wakeq_init(&q);
	spin_lock(&sem->lock);
	if (w->state == SEMA_GRANTED) {
		spin_unlock(&sem->lock);
		return false;
	}
	if (w->state == SEMA_WAITING) {
		/* Only the first unparked waiter can block the ones behind. */
		head = !w->parked && do_first_locked(sem) == w;
		list_del_init(&w->list);
		w->state = SEMA_CANCELLED;
		if (head)
			do_wake_locked(sem, &q);
	}
	spin_unlock(&sem->lock);
	sema_wakeq_run(&q);
	return true;
}

/*
 * Give back n permits unless that would leave more than max free once the
 * waiters that fit have been served; then -EOVERFLOW and nothing changes.
 * The walk over the queue is O(waiters served), the same as the hand-off.
 */
int sema_up_max(struct semaphore *sem, unsigned int n, long max)
{
	struct sema_wakeq q;
	struct list_head *pos;
	struct sema_waiter *w;
	long avail;

	sema_wakeq_init(&q);
	spin_lock(&sem->lock);
	if (sem->count > LONG_MAX - (long)n) {
		spin_unlock(&sem->lock);
		return -EOVERFLOW;
	}
	avail = sem->count + (long)n;
	list_for_each(pos, &sem->wait_list) {
		w = list_entry(pos, struct sema_waiter, list);
		if (w->parked)
			continue;
		if (avail < (long)w->n || w->gated)
			break;		/* a gated one is only offered */
		avail -= (long)w->n;
	}
	if (avail > max) {
		spin_unlock(&sem->lock);
		return -EOVERFLOW;
	}
	sem->count += (long)n;
	do_wake_locked(sem, &q);
	spin_unlock(&sem->lock);
	sema_wakeq_run(&q);
	return 0;
}

/* Queue w at the tail without granting (a saved queue, a gated waiter). */
int sema_enqueue(struct semaphore *sem, struct sema_waiter *w, unsigned int n,
    void (*wake)(struct sema_waiter *), unsigned int flags)
{
	if (waiter_init(w, n, wake, flags) != 0)
		return -EINVAL;
	w->state = SEMA_WAITING;
	spin_lock(&sem->lock);
	list_add_tail(&w->list, &sem->wait_list);
	spin_unlock(&sem->lock);
	return 0;
}

/*
 * Queue w just before the queued waiter before (NULL: at the tail), without
 * granting: for an owner that orders its queues by more than arrival (the
 * daemon's priorities), having decided that nobody it passes may be served
 * first.
 */
int sema_enqueue_before(struct semaphore *sem, struct sema_waiter *w,
    unsigned int n, void (*wake)(struct sema_waiter *), unsigned int flags,
    struct sema_waiter *before)
{
	if ((before != NULL && before->state != SEMA_WAITING) ||
	    waiter_init(w, n, wake, flags) != 0)
		return -EINVAL;
	w->state = SEMA_WAITING;
	spin_lock(&sem->lock);
	list_add_tail(&w->list, before != NULL ? &before->list : &sem->wait_list);
	spin_unlock(&sem->lock);
	return 0;
}

/* Move a queued waiter to the tail, without granting (a queue rebuilt). */
void sema_requeue_tail(struct semaphore *sem, struct sema_waiter *w)
{
	spin_lock(&sem->lock);
	if (w->state == SEMA_WAITING) {
		list_del_init(&w->list);
		list_add_tail(&w->list, &sem->wait_list);
	}
	spin_unlock(&sem->lock);
}

/* Take n permits if free, whoever waits (sem's lock held, or not needed). */
static bool do_take_locked(struct semaphore *sem, unsigned int n,
    uint64_t *token)
{
	if (n == 0 || sem->count < (long)n)
		return false;
	sem->count -= (long)n;
	++sem->token;
	if (token != NULL)
		*token = sem->token;
	return true;
}

/* Take n permits now if they are free, whoever waits; true when taken. */
bool sema_take_n(struct semaphore *sem, unsigned int n, uint64_t *token)
{
	bool took;

	spin_lock(&sem->lock);
	took = do_take_locked(sem, n, token);
	spin_unlock(&sem->lock);
	return took;
}

/* sema_take_n() of a semaphore its owner serializes: sem's lock not taken. */
bool sema_take_n_owned(struct semaphore *sem, unsigned int n, uint64_t *token)
{
	return do_take_locked(sem, n, token);
}

/* Is w first in line (unparked) with its permits free? */
bool sema_fits(struct semaphore *sem, const struct sema_waiter *w)
{
	bool fits;

	spin_lock(&sem->lock);
	fits = w->state == SEMA_WAITING && !w->parked &&
	    do_first_locked(sem) == w && sem->count >= (long)w->n;
	spin_unlock(&sem->lock);
	return fits;
}

/* Grant w, first in line with its permits free; serve those behind it. */
bool sema_grant(struct semaphore *sem, struct sema_waiter *w)
{
	struct sema_wakeq q;

	sema_wakeq_init(&q);
	spin_lock(&sem->lock);
	if (w->state != SEMA_WAITING || w->parked || do_first_locked(sem) != w ||
	    sem->count < (long)w->n) {
		spin_unlock(&sem->lock);
		return false;
	}
	sem->count -= (long)w->n;
	list_del_init(&w->list);
	w->state = SEMA_GRANTED;
	w->token = ++sem->token;
	do_wake_locked(sem, &q);
	spin_unlock(&sem->lock);
	sema_wakeq_run(&q);
	return true;
}

/*
 * Set flag, w->gated or w->parked, of a queued waiter to on, and serve the
 * queue when that may let someone through: any (un)parking, or ungating
 * the first unparked waiter.
 */
static void sema_set_flag(struct semaphore *sem, struct sema_waiter *w,
    bool *flag, bool on)
{
	struct sema_wakeq q;

	sema_wakeq_init(&q);
	spin_lock(&sem->lock);
	if (w->state == SEMA_WAITING && *flag != on) {
		*flag = on;
		if (flag == &w->parked ||
		    (!on && !w->parked && do_first_locked(sem) == w))
			do_wake_locked(sem, &q);
	}
	spin_unlock(&sem->lock);
	sema_wakeq_run(&q);
}

/* Gate a queued waiter, or let the core grant it again. */
void sema_gate(struct semaphore *sem, struct sema_waiter *w, bool gated)
{
	sema_set_flag(sem, w, &w->gated, gated);
}

/* Pass a queued waiter over (parked) or serve it in its place again. */
void sema_park(struct semaphore *sem, struct sema_waiter *w, bool parked)
{
	sema_set_flag(sem, w, &w->parked, parked);
}

/* Change the number of permits by delta; growing hands off to waiters. */
void sema_adjust(struct semaphore *sem, long delta)
{
	struct sema_wakeq q;

	sema_wakeq_init(&q);
	spin_lock(&sem->lock);
	sem->count = sema_add_sat(sem->count, delta);
	if (delta > 0)
		do_wake_locked(sem, &q);
	spin_unlock(&sem->lock);
	sema_wakeq_run(&q);
}

/* Free permits now (negative after a shrink below the held ones). */
long sema_count(struct semaphore *sem)
{
	long c;

	spin_lock(&sem->lock);
	c = sem->count;
	spin_unlock(&sem->lock);
	return c;
}

/* Number of queued waiters now. */
unsigned long sema_waiters(struct semaphore *sem)
{
	struct list_head *pos;
	unsigned long n = 0;

	spin_lock(&sem->lock);
	list_for_each(pos, &sem->wait_list)
		n++;
	spin_unlock(&sem->lock);
	return n;
}
