/* SPDX-License-Identifier: BSD-2-Clause */
/* tests/core/test_arch.c - the arch/ atomics, spinlock and futex wrappers. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <pthread.h>

#include "arch/arch.h"
#include "arch/futex.h"
#include "tests/core/test.h"

#define THREADS 4
#define ITERS 100000

static arch_atomic32_t counter32;
static arch_atomic64_t counter64;
static arch_atomic32_t cas_counter;
static struct spinlock lock = SPINLOCK_INIT;
static unsigned long plain_counter;	/* guarded by lock */
static arch_atomic32_t in_section;

/* Single-threaded semantics of every operation, 32-bit. */
static void test_ops32(void)
{
	arch_atomic32_t x;

	TEST_START("32-bit operations return the old value and store the new");
	arch_store_relaxed32(&x, 5);
	T_EQ(arch_load_relaxed32(&x), 5);
	T_EQ(arch_cmpxchg32(&x, 4, 9), 5);	/* mismatch: unchanged */
	T_EQ(arch_load_acquire32(&x), 5);
	T_EQ(arch_cmpxchg32(&x, 5, 9), 5);	/* match: stored */
	T_EQ(arch_load_acquire32(&x), 9);
	T_EQ(arch_xchg32(&x, 0xffffffffu), 9);
	T_EQ(arch_fetch_add32(&x, 2), 0xffffffffu);	/* wraps */
	T_EQ(arch_load_relaxed32(&x), 1);
	arch_store_release32(&x, 0x80000000u);
	T_EQ(arch_fetch_add32(&x, (uint32_t)-1), 0x80000000u);
	T_EQ(arch_load_acquire32(&x), 0x7fffffffu);
}

/* Single-threaded semantics of every operation, 64-bit. */
static void test_ops64(void)
{
	arch_atomic64_t x;
	const uint64_t big = 0x123456789abcdef0ULL;

	TEST_START("64-bit operations use all 64 bits");
	arch_store_relaxed64(&x, big);
	T_U64_EQ(arch_load_relaxed64(&x), big);
	T_U64_EQ(arch_cmpxchg64(&x, big + 1, 1), big);
	T_U64_EQ(arch_load_acquire64(&x), big);
	T_U64_EQ(arch_cmpxchg64(&x, big, ~big), big);
	T_U64_EQ(arch_load_acquire64(&x), ~big);
	T_U64_EQ(arch_xchg64(&x, UINT64_MAX), ~big);
	T_U64_EQ(arch_fetch_add64(&x, 1), UINT64_MAX);
	T_U64_EQ(arch_load_relaxed64(&x), 0);
	arch_store_release64(&x, 0xffffffffULL);
	T_U64_EQ(arch_fetch_add64(&x, 1), 0xffffffffULL);	/* carries into the high half */
	T_U64_EQ(arch_load_acquire64(&x), 0x100000000ULL);
	arch_mb();
	cpu_relax();
}

/* Hammer the read-modify-write operations and the spinlock. */
static void *hammer(void *arg)
{
	uint32_t old, seen;
	int i;

	(void)arg;
	for (i = 0; i < ITERS; i++) {
		arch_fetch_add32(&counter32, 1);
		arch_fetch_add64(&counter64, 3);
		old = arch_load_relaxed32(&cas_counter);
		while ((seen = arch_cmpxchg32(&cas_counter, old, old + 1)) != old)
			old = seen;
		if (i % 2 == 0)
			spin_lock(&lock);
		else
			while (!spin_trylock(&lock))
				cpu_relax();
		if (arch_fetch_add32(&in_section, 1) != 0) {
			fprintf(stderr, "two threads inside the spinlock\n");
			exit(1);
		}
		plain_counter++;
		arch_fetch_add32(&in_section, (uint32_t)-1);
		spin_unlock(&lock);
	}
	return NULL;
}

/* Concurrent increments are never lost; the spinlock excludes. */
static void test_concurrent(void)
{
	pthread_t t[THREADS];
	int i;

	TEST_START("atomic increments and the spinlock from several threads");
	for (i = 0; i < THREADS; i++)
		T_OK(pthread_create(&t[i], NULL, hammer, NULL));
	for (i = 0; i < THREADS; i++)
		T_OK(pthread_join(t[i], NULL));
	T_EQ(arch_load_acquire32(&counter32), THREADS * ITERS);
	T_U64_EQ(arch_load_acquire64(&counter64), 3ULL * THREADS * ITERS);
	T_EQ(arch_load_acquire32(&cas_counter), THREADS * ITERS);
	spin_lock(&lock);
	T_EQ(plain_counter, THREADS * ITERS);
	spin_unlock(&lock);
}

/* spin_trylock fails on a held lock and succeeds on a free one. */
static void test_trylock(void)
{
	struct spinlock l;

	TEST_START("spin_trylock");
	spin_lock_init(&l);
	T_FALSE(spin_is_locked(&l));
	T_TRUE(spin_trylock(&l));
	T_TRUE(spin_is_locked(&l));
	T_FALSE(spin_trylock(&l));
	spin_unlock(&l);
	T_TRUE(spin_trylock(&l));
	spin_unlock(&l);
}

static arch_atomic32_t fword;
static arch_atomic32_t sleeper_ready;

/* Sleep on fword until it changes from 0. */
static void *futex_sleeper(void *arg)
{
	(void)arg;
	arch_store_release32(&sleeper_ready, 1);
	while (arch_load_acquire32(&fword) == 0)
		futex_wait(&fword, 0, NULL);
	return NULL;
}

/* futex_wait returns at once, on timeout, and when woken. */
static void test_futex(void)
{
	struct timespec dl;
	pthread_t t;
	long long t0, el;
	int r;

	TEST_START("futex_wait on a changed word returns -EAGAIN");
	arch_store_relaxed32(&fword, 1);
	T_EQ(futex_wait(&fword, 0, NULL), -EAGAIN);

	TEST_START("futex_wait times out at the absolute deadline");
	arch_store_relaxed32(&fword, 0);
	t0 = t_now_ns();
	futex_deadline(&dl, 20 * 1000000L);
	do
		r = futex_wait(&fword, 0, &dl);
	while (r == 0 || r == -EINTR);
	el = t_now_ns() - t0;
	T_EQ(r, -ETIMEDOUT);
	T_GE(el, 20 * 1000000LL);
	T_TRUE(futex_deadline_passed(&dl));
	futex_deadline(&dl, 1000000000L);
	T_FALSE(futex_deadline_passed(&dl));

	TEST_START("futex_wake wakes a sleeper");
	T_OK(pthread_create(&t, NULL, futex_sleeper, NULL));
	while (arch_load_acquire32(&sleeper_ready) == 0)
		t_sleep_ms(1);
	t_sleep_ms(10);
	arch_store_release32(&fword, 1);
	T_GE(futex_wake(&fword, 1), 0);
	T_OK(pthread_join(t, NULL));
	T_EQ(futex_wake(&fword, 1), 0);	/* nobody left */
}

int main(void)
{
	t_watchdog(120);
	printf("arch: %s\n", SEMD_ARCH_NAME);
	test_ops32();
	test_ops64();
	test_trylock();
	test_concurrent();
	test_futex();
	printf("test_arch: all passed\n");
	return 0;
}
