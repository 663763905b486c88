/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * arch/spinlock.h - a test-and-test-and-set spinlock on the arch/ atomics.
 *
 * Why TTAS and not a ticket lock: this lock runs in userspace, where the
 * scheduler preempts lock holders and waiters at will, and the machines we
 * run on often have more runnable threads than CPUs. A ticket lock hands the
 * lock to one particular waiter; if that thread is descheduled, every other
 * waiter spins behind it until it runs again (the convoy the kernel avoids
 * by disabling preemption, which we cannot do). With TTAS whichever thread
 * is running takes a free lock. Its unfairness does not matter here: the
 * semaphore keeps its own strict FIFO order in wait_list. Waiters spin on a
 * plain load (no cache-line ping-pong from repeated exchanges), with the
 * CPU's spin-wait hint, and yield the CPU every SPIN_YIELD_AFTER spins so a
 * preempted holder can finish.
 *
 * Who holds it how long: a core semaphore's lock, a few list operations;
 * semd's state lock (daemon/server.c), a batch of requests of one event
 * loop (tens of microseconds) or an applied log entry - and, rarely, a whole
 * snapshot of the state (a third of a second for a million names), when
 * the waiting loops mostly yield.
 */
#ifndef SEMD_ARCH_SPINLOCK_H
#define SEMD_ARCH_SPINLOCK_H

#include <sched.h>
#include <stdbool.h>

struct spinlock {
	arch_atomic32_t	locked;		/* 0 free, 1 held */
};

#define SPINLOCK_INIT { 0 }

/* Spins with cpu_relax() before one sched_yield(). */
#define SPIN_YIELD_AFTER 128

/* Make l a free lock. */
static inline void spin_lock_init(struct spinlock *l)
{
	arch_store_relaxed32(&l->locked, 0);
}

/* Take l if it is free; true when taken. */
static inline bool spin_trylock(struct spinlock *l)
{
	return arch_load_relaxed32(&l->locked) == 0 &&
	    arch_xchg32(&l->locked, 1) == 0;
}

/* Take l, spinning (then yielding) while another thread holds it. */
static inline void spin_lock(struct spinlock *l)
{
	unsigned int spins = 0;

	while (arch_xchg32(&l->locked, 1) != 0) {
		do {
			if (++spins < SPIN_YIELD_AFTER)
				cpu_relax();
			else {
				sched_yield();
				spins = 0;
			}
		} while (arch_load_relaxed32(&l->locked) != 0);
	}
}

/* Release l. */
static inline void spin_unlock(struct spinlock *l)
{
	arch_store_release32(&l->locked, 0);
}

/* True while some thread holds l (a snapshot, for assertions). */
static inline bool spin_is_locked(struct spinlock *l)
{
	return arch_load_relaxed32(&l->locked) != 0;
}

#endif
