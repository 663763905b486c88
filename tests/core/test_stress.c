/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/core/test_stress.c - in the spirit of the kernel's synchro-test
 * module: T threads for S seconds take and release permits of a semaphore
 * of count K, mixing plain downs, trylocks, timeouts, n-permit downs,
 * interruptible and killable waits that other threads signal, and async
 * waiters cancelled at random. It asserts that holders never exceed K,
 * that every thread made progress, and at the end that the count is back to
 * K, the wait list is empty and permits granted == permits returned.
 *
 * Usage: test_stress [-t threads] [-s seconds] [-k count]  (default 4, 2, 3)
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "arch/futex.h"
#include "core/semaphore.h"
#include "tests/core/test.h"

#define MAX_THREADS 64

enum { ST_ACQ, ST_TRYFAIL, ST_TIMEOUT, ST_INTR, ST_KILLED, ST_CANCEL, ST_LATE, ST_N };
static const char *st_names[ST_N] = {
	"acquired", "try-fail", "timed-out", "interrupted", "killed",
	"cancelled", "cancel-lost",
};

struct worker {
	pthread_t		tid;
	int			id;
	uint64_t		rng;
	arch_atomic64_t		task_ptr;	/* struct sema_task *, published */
	unsigned long		st[ST_N];
};

static struct semaphore sem;
static long K = 3;
static int T = 4;
static struct worker workers[MAX_THREADS];
static arch_atomic32_t stop;
static arch_atomic32_t started;
static arch_atomic32_t finished;
static arch_atomic32_t holders;
static arch_atomic32_t max_holders;
static arch_atomic32_t violations;
static arch_atomic64_t grants;
static arch_atomic64_t ups;
static arch_atomic32_t signals_sent;

/* xorshift64*: the next pseudo-random number of w. */
static uint64_t w_rnd(struct worker *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 2685821657736338717ULL;
}

/* Hold n permits for a short critical section, then give them back. */
static void hold(struct worker *w, unsigned int n)
{
	uint32_t h, m;
	unsigned int i;

	arch_fetch_add64(&grants, n);
	h = arch_fetch_add32(&holders, n) + n;
	if ((long)h > K)
		arch_fetch_add32(&violations, 1);
	m = arch_load_relaxed32(&max_holders);
	while (h > m && arch_cmpxchg32(&max_holders, m, h) != m)
		m = arch_load_relaxed32(&max_holders);
	for (i = 0; i < 20 + (unsigned int)(w_rnd(w) % 50); i++)
		cpu_relax();
	if (w_rnd(w) % 64 == 0)
		sched_yield();
	arch_fetch_add32(&holders, (uint32_t)-(int32_t)n);
	arch_fetch_add64(&ups, n);
	sema_up_n(&sem, n);
	w->st[ST_ACQ]++;
}

/*
 * What a down of n permits returned, r: hold them on 0, count stat on the
 * failure it may have (fail, e.g. -ETIME), fail the test on any other.
 */
static void took(struct worker *w, unsigned int n, int r, int fail, int stat, const char *what)
{
	if (r == 0)
		hold(w, n);
	else if (r == fail)
		w->st[stat]++;
	else
		TEST_FAIL_("worker %d: %s returned %d", w->id, what, r);
}

struct async_waiter {
	struct sema_waiter	w;
	arch_atomic32_t		fired;
};

/* Async wake callback: flag it and wake the owner. */
static void async_wake(struct sema_waiter *sw)
{
	struct async_waiter *aw = container_of(sw, struct async_waiter, w);

	arch_store_release32(&aw->fired, 1);
	futex_wake(&aw->fired, 1);
}

/* Wait for aw's callback until deadline (NULL: 10 s, then fail). */
static bool async_wait(struct async_waiter *aw, const struct timespec *deadline)
{
	struct timespec dl;

	if (deadline == NULL) {
		futex_deadline(&dl, 10000000000L);
		deadline = &dl;
	}
	while (arch_load_acquire32(&aw->fired) == 0) {
		if (futex_wait(&aw->fired, 0, deadline) == -ETIMEDOUT)
			break;
	}
	return arch_load_acquire32(&aw->fired) != 0;
}

/* Queue an async waiter, wait a little, cancel it if not granted yet. */
static void do_async(struct worker *w)
{
	struct async_waiter aw;
	struct timespec dl;
	unsigned int n = K >= 2 && w_rnd(w) % 2 ? 2 : 1;
	int r;

	arch_store_relaxed32(&aw.fired, 0);
	r = sema_down_async(&sem, &aw.w, n, async_wake);
	if (r == 0) {
		hold(w, n);
		return;
	}
	T_EQ(r, 1);
	futex_deadline(&dl, (long)(w_rnd(w) % 300000));
	if (async_wait(&aw, &dl)) {
		hold(w, n);
		return;
	}
	if (sema_cancel(&sem, &aw.w)) {
		w->st[ST_CANCEL]++;
		return;
	}
	/* Granted as we cancelled: the callback may still be running. */
	w->st[ST_LATE]++;
	if (!async_wait(&aw, NULL))
		TEST_FAIL_("worker %d: granted async waiter never called back", w->id);
	hold(w, n);
}

/* Signal a random other worker, fatally or not. */
static void signal_peer(struct worker *w)
{
	struct worker *p = &workers[w_rnd(w) % (uint64_t)T];
	struct sema_task *t;

	if (p == w)
		return;
	t = (struct sema_task *)(uintptr_t)arch_load_acquire64(&p->task_ptr);
	sema_task_signal(t, w_rnd(w) % 4 == 0);
	arch_fetch_add32(&signals_sent, 1);
}

/* Worker body: random operations until told to stop. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct sema_task *me = sema_current();
	long long end;

	arch_store_release64(&w->task_ptr, (uint64_t)(uintptr_t)me);
	arch_fetch_add32(&started, 1);
	while (arch_load_acquire32(&started) < (uint32_t)T)
		sched_yield();

	while (arch_load_acquire32(&stop) == 0) {
		if (w_rnd(w) % 8 == 0)
			signal_peer(w);
		switch (w_rnd(w) % 10) {
		case 0: case 1: case 2:
			sema_down(&sem);
			hold(w, 1);
			break;
		case 3:
			if (sema_down_trylock(&sem))
				hold(w, 1);
			else
				w->st[ST_TRYFAIL]++;
			break;
		case 4:
			took(w, 1, sema_down_timeout(&sem, (long)(w_rnd(w) % 200000)),
			    -ETIME, ST_TIMEOUT, "down_timeout");
			break;
		case 5:
			sema_task_clear(me);
			took(w, 1, sema_down_interruptible(&sem), -EINTR, ST_INTR,
			    "down_interruptible");
			break;
		case 6:
			sema_task_clear(me);
			took(w, 1, sema_down_killable(&sem), -EINTR, ST_KILLED, "down_killable");
			break;
		case 7:
			if (K >= 2)
				took(w, 2, sema_down_n(&sem, 2, 1000000L), -ETIME, ST_TIMEOUT,
				    "down_n");
			break;
		default:
			do_async(w);
			break;
		}
	}

	/* Nobody leaves (freeing its task) while others may still signal it. */
	arch_fetch_add32(&finished, 1);
	end = t_now_ns() + 30000000000LL;
	while (arch_load_acquire32(&finished) < (uint32_t)T) {
		if (t_now_ns() > end)
			TEST_FAIL_("worker %d: peers did not finish within 30 s", w->id);
		sched_yield();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = 2;
	uint64_t seed = (uint64_t)t_now_ns();
	int c, i, k;

	while ((c = getopt(argc, argv, "t:s:k:")) != -1) {
		switch (c) {
		case 't': T = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'k': K = atol(optarg); break;
		default:
			fprintf(stderr, "usage: test_stress [-t threads] [-s seconds] [-k count]\n");
			return 2;
		}
	}
	if (T < 2 || T > MAX_THREADS || K < 1 || seconds <= 0) {
		fprintf(stderr, "test_stress: need 2 <= threads <= %d, count >= 1, seconds > 0\n",
		    MAX_THREADS);
		return 2;
	}
	t_watchdog((unsigned int)seconds + 120);
	printf("test_stress: %d threads, %.1f s, count %ld, arch %s, seed %" PRIu64 "\n",
	    T, seconds, K, SEMD_ARCH_NAME, seed);
	fflush(stdout);
	TEST_START("holders never exceed the count; no permit lost; all progress");

	sema_init(&sem, K);
	for (i = 0; i < T; i++) {
		workers[i].id = i;
		workers[i].rng = seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
		T_OK(pthread_create(&workers[i].tid, NULL, worker_main, &workers[i]));
	}
	t_sleep_ms((long)(seconds * 1000));
	arch_store_release32(&stop, 1);
	for (i = 0; i < T; i++)
		T_OK(pthread_join(workers[i].tid, NULL));

	for (i = 0; i < T; i++) {
		printf("  thread %2d:", i);
		for (k = 0; k < ST_N; k++)
			printf(" %s %lu", st_names[k], workers[i].st[k]);
		printf("\n");
	}
	printf("  permits granted %" PRIu64 ", returned %" PRIu64 ", max holders %u, "
	    "signals %u\n", arch_load_acquire64(&grants), arch_load_acquire64(&ups),
	    arch_load_acquire32(&max_holders), arch_load_acquire32(&signals_sent));

	T_EQ(arch_load_acquire32(&violations), 0);
	T_LE(arch_load_acquire32(&max_holders), K);
	T_EQ(arch_load_acquire32(&holders), 0);
	T_U64_EQ(arch_load_acquire64(&grants), arch_load_acquire64(&ups));
	T_EQ(sema_count(&sem), K);
	T_EQ(sema_waiters(&sem), 0);
	for (i = 0; i < T; i++)
		if (workers[i].st[ST_ACQ] == 0)
			TEST_FAIL_("thread %d never acquired a permit", i);
	printf("test_stress: all passed\n");
	return 0;
}
