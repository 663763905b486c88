/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * arch/x86_64.h - the arch/ API in x86-64 inline assembly.
 *
 * x86 is TSO: ordinary loads already have acquire and ordinary stores
 * release semantics, so those only need a compiler barrier. The locked
 * instructions (and xchg, which is implicitly locked) are full barriers.
 */
#ifndef SEMD_ARCH_X86_64_H
#define SEMD_ARCH_X86_64_H

#include <stdint.h>

#define SEMD_ARCH_NAME "x86_64"

typedef volatile uint32_t arch_atomic32_t;
typedef volatile uint64_t arch_atomic64_t;

#define arch_barrier_() __asm__ __volatile__("" ::: "memory")

/* Store new at p if it holds old; return what p held. */
static inline uint32_t arch_cmpxchg32(arch_atomic32_t *p, uint32_t old, uint32_t new)
{
	uint32_t prev;

	__asm__ __volatile__("lock; cmpxchgl %2, %1"
	    : "=a"(prev), "+m"(*p)
	    : "r"(new), "0"(old)
	    : "memory", "cc");
	return prev;
}

/* Store new at p if it holds old; return what p held. */
static inline uint64_t arch_cmpxchg64(arch_atomic64_t *p, uint64_t old, uint64_t new)
{
	uint64_t prev;

	__asm__ __volatile__("lock; cmpxchgq %2, %1"
	    : "=a"(prev), "+m"(*p)
	    : "r"(new), "0"(old)
	    : "memory", "cc");
	return prev;
}

/* Store v at p, return the previous value. */
static inline uint32_t arch_xchg32(arch_atomic32_t *p, uint32_t v)
{
	__asm__ __volatile__("xchgl %0, %1"
	    : "+r"(v), "+m"(*p)
	    :
	    : "memory");
	return v;
}

/* Store v at p, return the previous value. */
static inline uint64_t arch_xchg64(arch_atomic64_t *p, uint64_t v)
{
	__asm__ __volatile__("xchgq %0, %1"
	    : "+r"(v), "+m"(*p)
	    :
	    : "memory");
	return v;
}

/* Add v to *p, return the previous value. */
static inline uint32_t arch_fetch_add32(arch_atomic32_t *p, uint32_t v)
{
	__asm__ __volatile__("lock; xaddl %0, %1"
	    : "+r"(v), "+m"(*p)
	    :
	    : "memory", "cc");
	return v;
}

/* Add v to *p, return the previous value. */
static inline uint64_t arch_fetch_add64(arch_atomic64_t *p, uint64_t v)
{
	__asm__ __volatile__("lock; xaddq %0, %1"
	    : "+r"(v), "+m"(*p)
	    :
	    : "memory", "cc");
	return v;
}

/* Load with acquire order (a plain load on TSO, then a compiler barrier). */
static inline uint32_t arch_load_acquire32(arch_atomic32_t *p)
{
	uint32_t v = *p;

	arch_barrier_();
	return v;
}

/* Load with acquire order. */
static inline uint64_t arch_load_acquire64(arch_atomic64_t *p)
{
	uint64_t v = *p;

	arch_barrier_();
	return v;
}

/* Store with release order (a compiler barrier, then a plain store). */
static inline void arch_store_release32(arch_atomic32_t *p, uint32_t v)
{
	arch_barrier_();
	*p = v;
}

/* Store with release order. */
static inline void arch_store_release64(arch_atomic64_t *p, uint64_t v)
{
	arch_barrier_();
	*p = v;
}

/* Load without ordering (aligned 32-bit loads are single-copy atomic). */
static inline uint32_t arch_load_relaxed32(arch_atomic32_t *p)
{
	return *p;
}

/* Load without ordering. */
static inline uint64_t arch_load_relaxed64(arch_atomic64_t *p)
{
	return *p;
}

/* Store without ordering. */
static inline void arch_store_relaxed32(arch_atomic32_t *p, uint32_t v)
{
	*p = v;
}

/* Store without ordering. */
static inline void arch_store_relaxed64(arch_atomic64_t *p, uint64_t v)
{
	*p = v;
}

/* Full memory barrier: a locked no-op on the stack, cheaper than mfence. */
static inline void arch_mb(void)
{
	__asm__ __volatile__("lock; addl $0, -4(%%rsp)" ::: "memory", "cc");
}

/* Spin-wait hint. */
static inline void cpu_relax(void)
{
	__asm__ __volatile__("pause" ::: "memory");
}

#endif
