/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/core/core-bench.c - the core semaphore next to glibc's sem_t and
 * pthread_mutex_t, in the same run:
 *   uncontended: one thread, down+up (sem_wait+sem_post, lock+unlock), ns/op
 *   contended:   T threads hammering one permit (count 1), each doing
 *                acquire / short critical section / release for D seconds;
 *                throughput in operations per second, and fairness as the
 *                fewest ops of a thread divided by the most.
 * The core hands the permit to the first waiter (no barging), so under
 * contention every release wakes a sleeper: expect lower throughput than
 * glibc's, which lets a running thread take the lock back, and better
 * fairness.
 *
 * Usage: core-bench [-d seconds per contended run] [-n uncontended iterations]
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

#include "core/semaphore.h"
#include "tests/core/test.h"

static struct semaphore core_sem;
static sem_t posix_sem;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

static arch_atomic32_t stop;
static arch_atomic32_t ready;
static volatile unsigned long shared_counter;

/* The core: down and up. */
static void sema_acquire(void)
{
	sema_down(&core_sem);
}

static void sema_release(void)
{
	sema_up(&core_sem);
}

/* glibc's sem_t: sem_wait (again after a signal) and sem_post. */
static void semt_acquire(void)
{
	while (sem_wait(&posix_sem) != 0)
		;
}

static void semt_release(void)
{
	sem_post(&posix_sem);
}

/* A pthread mutex: lock and unlock. */
static void mutex_acquire(void)
{
	pthread_mutex_lock(&mutex);
}

static void mutex_release(void)
{
	pthread_mutex_unlock(&mutex);
}

/* The implementations compared, in the order of the tables printed. */
static const struct impl {
	const char	*name;
	void		(*acquire)(void);
	void		(*release)(void);
} impls[] = {
	{ "semd core", sema_acquire, sema_release },
	{ "glibc sem_t", semt_acquire, semt_release },
	{ "pthread mutex", mutex_acquire, mutex_release },
};
#define IMPL_N ((int)(sizeof(impls) / sizeof(impls[0])))

/* ns per acquire+release in one thread; best of three runs. */
static double bench_uncontended(const struct impl *im, long iters)
{
	double best = 1e30, ns;
	long long t0;
	long i;
	int run;

	for (run = 0; run < 3; run++) {
		t0 = t_now_ns();
		for (i = 0; i < iters; i++) {
			im->acquire();
			im->release();
		}
		ns = (double)(t_now_ns() - t0) / (double)iters;
		if (ns < best)
			best = ns;
	}
	return best;
}

struct runner {
	pthread_t		tid;
	const struct impl	*im;
	unsigned long		ops;
};

/* Contended loop: acquire, touch shared state, release, until stop. */
static void *runner_main(void *arg)
{
	struct runner *r = arg;
	unsigned long ops = 0;
	int i;

	arch_fetch_add32(&ready, 1);
	while (arch_load_acquire32(&stop) == 0) {
		r->im->acquire();
		shared_counter++;
		for (i = 0; i < 10; i++)
			cpu_relax();
		r->im->release();
		ops++;
	}
	r->ops = ops;
	return NULL;
}

/* Throughput (ops/s) of n threads on one permit, and min/max fairness. */
static double bench_contended(const struct impl *im, int n, double seconds, double *fair)
{
	struct runner r[16];
	unsigned long total = 0, mn = ~0UL, mx = 0;
	long long t0, el;
	int i;

	arch_store_relaxed32(&stop, 0);
	arch_store_relaxed32(&ready, 0);
	for (i = 0; i < n; i++) {
		r[i].im = im;
		r[i].ops = 0;
		T_OK(pthread_create(&r[i].tid, NULL, runner_main, &r[i]));
	}
	while (arch_load_acquire32(&ready) < (uint32_t)n)
		sched_yield();
	t0 = t_now_ns();
	t_sleep_ms((long)(seconds * 1000));
	arch_store_release32(&stop, 1);
	for (i = 0; i < n; i++) {
		T_OK(pthread_join(r[i].tid, NULL));
		total += r[i].ops;
		if (r[i].ops < mn)
			mn = r[i].ops;
		if (r[i].ops > mx)
			mx = r[i].ops;
	}
	el = t_now_ns() - t0;
	*fair = mx ? (double)mn / (double)mx : 0;
	return (double)total * 1e9 / (double)el;
}

/* A thread that does nothing. */
static void *noop_main(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	static const int threads[] = { 2, 4, 8 };
	double seconds = 0.5, fair, ops;
	long iters = 2000000;
	int c, i, im;

	while ((c = getopt(argc, argv, "d:n:")) != -1) {
		switch (c) {
		case 'd': seconds = atof(optarg); break;
		case 'n': iters = atol(optarg); break;
		default:
			fprintf(stderr, "usage: core-bench [-d seconds] [-n iterations]\n");
			return 2;
		}
	}
	if (seconds <= 0 || iters <= 0)
		return 2;
	sema_init(&core_sem, 1);
	T_OK(sem_init(&posix_sem, 0, 1));
	/*
	 * glibc skips atomic instructions in its locks while a process has
	 * only ever had one thread; start (and end) one so that the
	 * uncontended figures compare like with like.
	 */
	{
		pthread_t t;

		T_OK(pthread_create(&t, NULL, noop_main, NULL));
		T_OK(pthread_join(t, NULL));
	}

	printf("core-bench: arch %s, %ld CPUs online, %.2f s per contended run\n\n",
	    SEMD_ARCH_NAME, sysconf(_SC_NPROCESSORS_ONLN), seconds);
	printf("uncontended acquire+release (ns/op, best of 3 x %ld)\n", iters);
	for (im = 0; im < IMPL_N; im++)
		printf("  %-14s %8.1f\n", impls[im].name, bench_uncontended(&impls[im], iters));

	printf("\ncontended, one permit: throughput in ops/s (fairness = min/max ops per thread)\n");
	printf("  %-8s", "threads");
	for (im = 0; im < IMPL_N; im++)
		printf("  %22s", impls[im].name);
	printf("\n");
	for (i = 0; i < (int)(sizeof(threads) / sizeof(threads[0])); i++) {
		printf("  %-8d", threads[i]);
		for (im = 0; im < IMPL_N; im++) {
			ops = bench_contended(&impls[im], threads[i], seconds, &fair);
			printf("  %12.0f (f %5.2f)", ops, fair);
			fflush(stdout);
		}
		printf("\n");
	}
	T_EQ(sema_count(&core_sem), 1);
	T_EQ(sema_waiters(&core_sem), 0);
	sem_destroy(&posix_sem);
	return 0;
}
