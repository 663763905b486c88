/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/core/test_sema_threads.c - unit tests of the semaphore's blocking operations, threads
 * sleeping in down, down_interruptible, down_killable and down_timeout,
 * signals, and the races the core must get right (a timeout or a signal
 * against an up, a cancel against a grant, a thread that exits right after
 * its grant).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include "core/semaphore.h"
#include "tests/core/rec.h"
#include "tests/core/test.h"

/* --- blocking threads ------------------------------------------------------ */

enum op { OP_DOWN, OP_INTR, OP_KILL, OP_TIMEOUT, OP_DOWN_N, OP_DOWN_N_TIMEOUT };

struct thr {
	pthread_t		tid;
	struct semaphore	*sem;
	enum op			op;
	long			arg;		/* timeout ns or n */
	int			id;
	int			result;
	struct sema_task	*task;
	arch_atomic32_t		started;
	arch_atomic32_t		finished;
};

static arch_atomic32_t order_len;
static int order[16];

/* Thread body: run one down-family call, record result and finishing order. */
static void *thr_main(void *arg)
{
	struct thr *t = arg;

	t->task = sema_current();
	arch_store_release32(&t->started, 1);
	switch (t->op) {
	case OP_DOWN:
		sema_down(t->sem);
		t->result = 0;
		break;
	case OP_INTR:
		t->result = sema_down_interruptible(t->sem);
		break;
	case OP_KILL:
		t->result = sema_down_killable(t->sem);
		break;
	case OP_TIMEOUT:
		t->result = sema_down_timeout(t->sem, t->arg);
		break;
	case OP_DOWN_N:
		t->result = sema_down_n(t->sem, (unsigned int)t->arg, -1);
		break;
	case OP_DOWN_N_TIMEOUT:
		t->result = sema_down_n(t->sem, 2, t->arg);
		break;
	}
	order[arch_fetch_add32(&order_len, 1) % 16] = t->id;
	arch_store_release32(&t->finished, 1);
	return NULL;
}

/* Start a thread running op on s and wait until it has its task. */
static void thr_start(struct thr *t, struct semaphore *s, enum op op, long arg, int id)
{
	t->sem = s;
	t->op = op;
	t->arg = arg;
	t->id = id;
	t->result = -12345;
	arch_store_relaxed32(&t->started, 0);
	arch_store_relaxed32(&t->finished, 0);
	T_OK(pthread_create(&t->tid, NULL, thr_main, t));
	while (arch_load_acquire32(&t->started) == 0)
		sched_yield();
}

/* Wait (at most 5 s) until s has n waiters. */
static void wait_waiters(struct semaphore *s, unsigned long n)
{
	long long end = t_now_ns() + 5000000000LL;

	while (sema_waiters(s) != n && t_now_ns() < end)
		t_sleep_ms(1);
	T_EQ(sema_waiters(s), n);
}

/* Join t, failing if it does not finish within 5 s. */
static void thr_join(struct thr *t)
{
	long long end = t_now_ns() + 5000000000LL;

	while (arch_load_acquire32(&t->finished) == 0 && t_now_ns() < end)
		t_sleep_ms(1);
	T_EQ(arch_load_acquire32(&t->finished), 1);
	T_OK(pthread_join(t->tid, NULL));
}

/* --- tests ------------------------------------------------------------------ */

/* Blocking down sleeps until up; several sleepers wake in FIFO order. */
static void test_blocking_fifo(void)
{
	struct semaphore s;
	struct thr t[4];
	int i;

	TEST_START("blocking down sleeps until up, sleepers wake in FIFO order");
	sema_init(&s, 0);
	arch_store_relaxed32(&order_len, 0);
	for (i = 0; i < 4; i++) {
		thr_start(&t[i], &s, OP_DOWN, 0, i);
		wait_waiters(&s, (unsigned long)i + 1);
	}
	for (i = 0; i < 4; i++) {
		sema_up(&s);
		thr_join(&t[i]);
		T_EQ(order[i], i);
		T_EQ(sema_count(&s), 0);
	}
	T_EQ(sema_waiters(&s), 0);

	TEST_START("blocking down of n permits waits for all n");
	thr_start(&t[0], &s, OP_DOWN_N, 3, 0);
	wait_waiters(&s, 1);
	sema_up(&s);
	sema_up(&s);
	t_sleep_ms(20);
	T_EQ(arch_load_acquire32(&t[0].finished), 0);
	T_EQ(sema_count(&s), 2);
	sema_up(&s);
	thr_join(&t[0]);
	T_EQ(t[0].result, 0);
	T_EQ(sema_count(&s), 0);
}

/* down_timeout: -ETIME after the timeout, 0 when a permit comes in time. */
static void test_timeout(void)
{
	struct semaphore s;
	struct thr t;
	long long t0, el;

	TEST_START("down_timeout returns -ETIME after the timeout");
	sema_init(&s, 0);
	t0 = t_now_ns();
	T_EQ(sema_down_timeout(&s, 30 * 1000000L), -ETIME);
	el = t_now_ns() - t0;
	T_GE(el, 30 * 1000000LL);
	T_EQ(sema_waiters(&s), 0);
	T_EQ(sema_down_timeout(&s, 0), -ETIME);
	T_EQ(sema_down_n(&s, 2, 1000000L), -ETIME);

	TEST_START("down_timeout with a free permit returns 0 at once");
	sema_up(&s);
	T_EQ(sema_down_timeout(&s, 0), 0);
	T_EQ(sema_count(&s), 0);

	TEST_START("down_timeout woken by up before the timeout returns 0");
	thr_start(&t, &s, OP_TIMEOUT, 5000000000L, 0);
	wait_waiters(&s, 1);
	sema_up(&s);
	thr_join(&t);
	T_EQ(t.result, 0);
	T_EQ(sema_count(&s), 0);

	TEST_START("a timed-out head lets the waiter behind it proceed");
	{
		struct rec r;

		sema_init(&s, 1);
		log_len = 0;
		thr_start(&t, &s, OP_DOWN_N_TIMEOUT, 300 * 1000000L, 0);
		wait_waiters(&s, 1);		/* needs 2, 1 free: queued */
		rec_queue(&s, &r, 9, 1);	/* would fit, but FIFO: queued */
		T_EQ(sema_waiters(&s), 2);	/* (log_len is the thread's now) */
		thr_join(&t);
		T_EQ(t.result, -ETIME);
		T_LOG(9);		/* granted by the timing-out thread */
		T_EQ(sema_count(&s), 0);
		T_EQ(sema_waiters(&s), 0);
	}
}

#define RACE_ROUNDS 2000

/*
 * A partner thread that, for each round, waits for the go signal, spins a
 * round-dependent number of times and calls sema_up(): the main thread does
 * its side (cancel, signal) with its own jitter, so both orders happen.
 */
struct race {
	pthread_t		tid;
	struct semaphore	*sem;
	arch_atomic32_t		go;	/* round number to play */
	arch_atomic32_t		done;	/* last round played */
	arch_atomic32_t		quit;
};

/* Spin n times. */
static void spin_n(unsigned int n)
{
	while (n-- > 0)
		cpu_relax();
}

/* Partner body: one up per round. */
static void *race_partner(void *arg)
{
	struct race *rc = arg;
	uint32_t round, last = 0;

	for (;;) {
		while ((round = arch_load_acquire32(&rc->go)) == last &&
		    arch_load_acquire32(&rc->quit) == 0)
			cpu_relax();
		if (arch_load_acquire32(&rc->quit) != 0)
			return NULL;
		spin_n((round * 7u) % 64u);
		sema_up(rc->sem);
		last = round;
		arch_store_release32(&rc->done, round);
	}
}

/* Start the partner. */
static void race_start(struct race *rc, struct semaphore *s)
{
	rc->sem = s;
	arch_store_relaxed32(&rc->go, 0);
	arch_store_relaxed32(&rc->done, 0);
	arch_store_relaxed32(&rc->quit, 0);
	T_OK(pthread_create(&rc->tid, NULL, race_partner, rc));
}

/* Play round (the partner ups) and return at once. */
static void race_go(struct race *rc, uint32_t round)
{
	arch_store_release32(&rc->go, round);
}

/* Wait (at most 5 s) for the partner to finish round. */
static void race_wait(struct race *rc, uint32_t round)
{
	long long end = t_now_ns() + 5000000000LL;

	while (arch_load_acquire32(&rc->done) != round && t_now_ns() < end)
		sched_yield();
	T_EQ(arch_load_acquire32(&rc->done), round);
}

/* Stop the partner. */
static void race_stop(struct race *rc)
{
	arch_store_release32(&rc->quit, 1);
	T_OK(pthread_join(rc->tid, NULL));
}

/*
 * A race of the partner's up with this thread taking the waiter away: each
 * round, queue() puts a waiter on s (at 0), the partner ups while this
 * thread spins a little, then act() tries to take the waiter away (cancel,
 * signal); once the up is done, settle() checks that the permit has exactly
 * one owner and returns true for the outcome counted first.
 */
struct race_case {
	const char	*name;
	uint32_t	rounds;
	void		(*queue)(struct semaphore *s, uint32_t round);
	bool		(*act)(struct semaphore *s);
	bool		(*settle)(struct semaphore *s, bool acted);
	const char	*first, *second;	/* the outcomes, for the summary */
};

/* Play the rounds of rcase against the partner; print how they ended. */
static void race_run(const struct race_case *rcase)
{
	struct semaphore s;
	struct race rc;
	uint32_t i;
	int first = 0, second = 0;
	bool acted;

	TEST_START(rcase->name);
	sema_init(&s, 0);
	race_start(&rc, &s);
	for (i = 1; i <= rcase->rounds; i++) {
		rcase->queue(&s, i);
		race_go(&rc, i);
		spin_n((i * 13u) % 64u);
		acted = rcase->act(&s);
		race_wait(&rc, i);		/* the up and any callback are done */
		if (rcase->settle(&s, acted))
			first++;
		else
			second++;
	}
	race_stop(&rc);
	printf("  %d %s, %d %s\n", first, rcase->first, second, rcase->second);
	T_EQ(first + second, rcase->rounds);
}

/* cancel racing with up: the permit is never lost nor duplicated. */
static struct rec race_rec;

static void cancel_queue(struct semaphore *s, uint32_t round)
{
	rec_queue(s, &race_rec, (int)round, 1);
}

static bool cancel_act(struct semaphore *s)
{
	return sema_cancel(s, &race_rec.w);
}

/* Cancelled first: the up stayed free; else granted, with one callback. */
static bool cancel_settle(struct semaphore *s, bool cancelled)
{
	if (cancelled) {
		T_EQ(race_rec.w.state, SEMA_CANCELLED);
		T_EQ(race_rec.woken, 0);
		T_EQ(sema_count(s), 1);		/* the up stayed free */
		T_TRUE(sema_down_trylock(s));
	} else {
		T_EQ(race_rec.w.state, SEMA_GRANTED);
		T_EQ(race_rec.woken, 1);	/* exactly one callback */
		T_EQ(sema_count(s), 0);		/* we own the permit */
	}
	T_EQ(sema_waiters(s), 0);
	T_EQ(sema_count(s), 0);
	return cancelled;
}

static const struct race_case race_cancel = {
	"cancel racing with hand-off never loses or duplicates a permit",
	RACE_ROUNDS, cancel_queue, cancel_act, cancel_settle,
	"cancelled first", "granted first",
};

/* Wait, spinning, until t has started its call. */
static void thr_wait_started(struct thr *t)
{
	while (arch_load_acquire32(&t->started) == 0)
		sched_yield();
}

/*
 * Join t, whose down raced with one up on s (count 0 before): either t took
 * the permit, or it failed with err and the permit is free (taken back here).
 * True when t took it.
 */
static bool thr_join_one_owner(struct thr *t, struct semaphore *s, int err)
{
	thr_join(t);
	T_EQ(sema_waiters(s), 0);
	if (t->result == 0) {
		T_EQ(sema_count(s), 0);
		return true;
	}
	T_EQ(t->result, err);
	T_EQ(sema_count(s), 1);
	T_TRUE(sema_down_trylock(s));
	return false;
}

/* A timeout expiring just as up comes in: one owner of the permit. */
static void test_race_timeout_vs_up(void)
{
	struct semaphore s;
	struct thr t;
	long long t0;
	int i, got = 0, timed = 0;

	TEST_START("timeout at the moment of up never loses or duplicates a permit");
	sema_init(&s, 0);
	for (i = 0; i < 300; i++) {
		t.sem = &s;
		t.op = OP_TIMEOUT;
		t.arg = 1000000L;		/* 1 ms */
		t.id = 0;
		arch_store_relaxed32(&t.started, 0);
		arch_store_relaxed32(&t.finished, 0);
		T_OK(pthread_create(&t.tid, NULL, thr_main, &t));
		thr_wait_started(&t);
		t0 = t_now_ns();
		while (t_now_ns() < t0 + 600000LL + (i % 9) * 100000LL)
			cpu_relax();
		sema_up(&s);
		if (thr_join_one_owner(&t, &s, -ETIME))
			got++;
		else
			timed++;
	}
	printf("  %d granted, %d timed out\n", got, timed);
}

/* A signal arriving with a grant: either outcome, one owner. */
static struct thr race_thr;

/* race_thr sleeps in an interruptible down. */
static void signal_queue(struct semaphore *s, uint32_t round)
{
	thr_start(&race_thr, s, OP_INTR, 0, 0);
	wait_waiters(s, 1);
}

static bool signal_act(struct semaphore *s)
{
	sema_task_signal(race_thr.task, false);
	return true;
}

/* True when race_thr took the permit, false when it was interrupted. */
static bool signal_settle(struct semaphore *s, bool acted)
{
	return thr_join_one_owner(&race_thr, s, -EINTR);
}

static const struct race_case race_signal = {
	"a signal racing with hand-off never loses or duplicates a permit",
	300, signal_queue, signal_act, signal_settle,
	"granted", "interrupted",
};

/* How a test signals t: through the core, as another thread would. */
static void signal_task(struct thr *t, bool fatal)
{
	sema_task_signal(t->task, fatal);
}

/* Handler: SIGUSR1 is an ordinary signal, SIGUSR2 a fatal one. */
static void on_signal(int sig)
{
	sema_task_signal(sema_current(), sig == SIGUSR2);
}

/* Or with real signals delivered by pthread_kill to that handler. */
static void signal_thread(struct thr *t, bool fatal)
{
	T_OK(pthread_kill(t->tid, fatal ? SIGUSR2 : SIGUSR1));
}

/* Start t on s with op; once it waits, send it a signal: 30 ms later it still waits. */
static void thr_sleeps_through(struct thr *t, struct semaphore *s, enum op op,
    void (*send)(struct thr *, bool), bool fatal)
{
	thr_start(t, s, op, 0, 0);
	wait_waiters(s, 1);
	send(t, fatal);
	t_sleep_ms(30);
	T_EQ(arch_load_acquire32(&t->finished), 0);
	T_EQ(sema_waiters(s), 1);
}

/*
 * Interruptible gives up on any signal, killable only on a fatal one, the
 * signals sent by send; the two tests' names say how.
 */
static void check_intr_and_kill(void (*send)(struct thr *, bool), const char *intr_name,
    const char *kill_name)
{
	struct semaphore s;
	struct thr t;

	TEST_START(intr_name);
	sema_init(&s, 0);
	thr_start(&t, &s, OP_INTR, 0, 0);
	wait_waiters(&s, 1);
	send(&t, false);
	thr_join(&t);
	T_EQ(t.result, -EINTR);
	T_EQ(sema_waiters(&s), 0);
	T_EQ(sema_count(&s), 0);

	TEST_START(kill_name);
	thr_sleeps_through(&t, &s, OP_KILL, send, false);
	send(&t, true);
	thr_join(&t);
	T_EQ(t.result, -EINTR);
	T_EQ(sema_waiters(&s), 0);
	T_EQ(sema_count(&s), 0);
}

/* Signals from another thread: also down and down_timeout ignore them. */
static void test_signals_from_thread(void)
{
	struct semaphore s;
	struct thr t;

	check_intr_and_kill(signal_task,
	    "down_interruptible returns -EINTR on a signal from another thread",
	    "down_killable ignores a non-fatal signal, stops on a fatal one");

	TEST_START("down ignores every signal and returns on up");
	sema_init(&s, 0);
	thr_sleeps_through(&t, &s, OP_DOWN, signal_task, true);
	sema_up(&s);
	thr_join(&t);
	T_EQ(sema_count(&s), 0);

	TEST_START("down_timeout ignores signals");
	thr_start(&t, &s, OP_TIMEOUT, 50 * 1000000L, 0);
	wait_waiters(&s, 1);
	signal_task(&t, true);
	thr_join(&t);
	T_EQ(t.result, -ETIME);
}

/* The same, with real signals delivered by pthread_kill to a handler. */
static void test_signals_from_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	T_OK(sigaction(SIGUSR1, &sa, NULL));
	T_OK(sigaction(SIGUSR2, &sa, NULL));

	check_intr_and_kill(signal_thread,
	    "down_interruptible returns -EINTR on SIGUSR1 via a handler",
	    "down_killable sleeps through SIGUSR1, stops on SIGUSR2 (fatal)");

	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
}

/* Signals stay pending until cleared; a free permit is still taken. */
static void test_pending_signal(void)
{
	struct semaphore s;
	struct sema_task *me = sema_current();

	TEST_START("a pending signal fails interruptible waits until cleared");
	sema_init(&s, 0);
	sema_task_signal(me, false);
	T_EQ(sema_down_interruptible(&s), -EINTR);
	T_EQ(sema_down_interruptible(&s), -EINTR);
	T_EQ(sema_waiters(&s), 0);
	sema_up(&s);
	T_EQ(sema_down_interruptible(&s), 0);	/* free permit: taken */
	sema_task_signal(me, true);
	T_EQ(sema_down_killable(&s), -EINTR);
	sema_task_clear(me);
	sema_up(&s);
	T_EQ(sema_down_killable(&s), 0);
	T_EQ(sema_count(&s), 0);
}

struct exiter {
	pthread_t		tid;
	struct semaphore	*sem;
};

/* Sleep for a permit and exit at once: the thread's task goes with it. */
static void *exiter_main(void *arg)
{
	struct exiter *e = arg;

	sema_down(e->sem);
	return NULL;
}

/*
 * A thread may exit the moment its down returns, while the thread that
 * handed it the permit may still be in its wake-up path.
 */
static void test_exit_after_grant(void)
{
	struct semaphore s;
	struct exiter e[4];
	int round, i;

	TEST_START("a thread may exit as soon as its down returns");
	sema_init(&s, 0);
	for (round = 0; round < 50; round++) {
		for (i = 0; i < 4; i++) {
			e[i].sem = &s;
			T_OK(pthread_create(&e[i].tid, NULL, exiter_main, &e[i]));
		}
		if (round % 2)
			wait_waiters(&s, 4);	/* all asleep first */
		sema_up_n(&s, 4);
		for (i = 0; i < 4; i++)
			T_OK(pthread_join(e[i].tid, NULL));
		T_EQ(sema_count(&s), 0);
		T_EQ(sema_waiters(&s), 0);
	}
}

int main(void)
{
	t_watchdog(300);
	test_blocking_fifo();
	test_timeout();
	test_signals_from_thread();
	test_signals_from_handler();
	test_pending_signal();
	race_run(&race_cancel);
	test_race_timeout_vs_up();
	race_run(&race_signal);
	test_exit_after_grant();
	printf("test_sema_threads: all passed\n");
	return 0;
}

