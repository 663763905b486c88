/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * arch/futex.h - sleeping on a 32-bit word: the Linux futex system call.
 *
 * Process-private futexes (FUTEX_PRIVATE_FLAG): the words live in one
 * process's memory. A wake-up can always be spurious; callers loop on their
 * own condition. Deadlines are absolute CLOCK_MONOTONIC times.
 */
#ifndef SEMD_ARCH_FUTEX_H
#define SEMD_ARCH_FUTEX_H

#include <errno.h>
#include <linux/futex.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arch/arch.h"

/*
 * Sleep while *word == val, until woken, a signal, or the absolute
 * CLOCK_MONOTONIC deadline (NULL: none). Returns 0 when woken (maybe
 * spuriously), -EAGAIN if *word != val already, -ETIMEDOUT, -EINTR.
 */
static inline int futex_wait(arch_atomic32_t *word, uint32_t val,
    const struct timespec *deadline)
{
	long r;

	/*
	 * FUTEX_WAIT_BITSET takes an absolute timeout on CLOCK_MONOTONIC
	 * (plain FUTEX_WAIT takes a relative one), so retries after a
	 * spurious wake-up do not stretch the deadline.
	 */
	r = syscall(SYS_futex, (void *)word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
	    val, deadline, NULL, FUTEX_BITSET_MATCH_ANY);
	if (r == -1)
		return -errno;
	return 0;
}

/*
 * Wake up to n threads sleeping on word. Returns how many were woken, or a
 * negative errno. The word need not be valid memory any more (the kernel
 * only hashes the address), which lets a waker drop the last reference
 * before it calls this.
 */
static inline int futex_wake(arch_atomic32_t *word, int n)
{
	long r;

	r = syscall(SYS_futex, (void *)word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG,
	    n, NULL, NULL, 0);
	if (r == -1)
		return -errno;
	return (int)r;
}

/* Absolute CLOCK_MONOTONIC time ns nanoseconds from now. */
static inline void futex_deadline(struct timespec *ts, long ns)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ns / 1000000000L;
	ts->tv_nsec += ns % 1000000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* True once the CLOCK_MONOTONIC time has reached ts. */
static inline bool futex_deadline_passed(const struct timespec *ts)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > ts->tv_sec ||
	    (now.tv_sec == ts->tv_sec && now.tv_nsec >= ts->tv_nsec);
}

#endif
