/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * arch/aarch64.h - the arch/ API in AArch64 inline assembly.
 *
 * With the ARMv8.1 Large System Extensions (__ARM_FEATURE_ATOMICS, e.g.
 * -march=armv8.1-a) the read-modify-write operations are single
 * instructions with acquire+release semantics (casal, swpal, ldaddal).
 * Without them (plain armv8-a, Debian's default) they are
 * load-acquire-exclusive / store-release-exclusive loops, the sequence
 * compilers emit for C11 seq_cst operations. Loads and stores with ordering
 * use ldar/stlr.
 */
#ifndef SEMD_ARCH_AARCH64_H
#define SEMD_ARCH_AARCH64_H

#include <stdint.h>

typedef volatile uint32_t arch_atomic32_t;
typedef volatile uint64_t arch_atomic64_t;

#if defined(__ARM_FEATURE_ATOMICS)

#define SEMD_ARCH_NAME "aarch64-lse"

/* Store new at p if it holds old; return what p held. */
static inline uint32_t arch_cmpxchg32(arch_atomic32_t *p, uint32_t old, uint32_t new)
{
	__asm__ __volatile__("casal %w0, %w2, %1"
	    : "+r"(old), "+Q"(*p)
	    : "r"(new)
	    : "memory");
	return old;
}

/* Store new at p if it holds old; return what p held. */
static inline uint64_t arch_cmpxchg64(arch_atomic64_t *p, uint64_t old, uint64_t new)
{
	__asm__ __volatile__("casal %x0, %x2, %1"
	    : "+r"(old), "+Q"(*p)
	    : "r"(new)
	    : "memory");
	return old;
}

/* Store v at p, return the previous value. */
static inline uint32_t arch_xchg32(arch_atomic32_t *p, uint32_t v)
{
	uint32_t prev;

	__asm__ __volatile__("swpal %w2, %w0, %1"
	    : "=r"(prev), "+Q"(*p)
	    : "r"(v)
	    : "memory");
	return prev;
}

/* Store v at p, return the previous value. */
static inline uint64_t arch_xchg64(arch_atomic64_t *p, uint64_t v)
{
	uint64_t prev;

	__asm__ __volatile__("swpal %x2, %x0, %1"
	    : "=r"(prev), "+Q"(*p)
	    : "r"(v)
	    : "memory");
	return prev;
}

/* Add v to *p, return the previous value. */
static inline uint32_t arch_fetch_add32(arch_atomic32_t *p, uint32_t v)
{
	uint32_t prev;

	__asm__ __volatile__("ldaddal %w2, %w0, %1"
	    : "=r"(prev), "+Q"(*p)
	    : "r"(v)
	    : "memory");
	return prev;
}

/* Add v to *p, return the previous value. */
static inline uint64_t arch_fetch_add64(arch_atomic64_t *p, uint64_t v)
{
	uint64_t prev;

	__asm__ __volatile__("ldaddal %x2, %x0, %1"
	    : "=r"(prev), "+Q"(*p)
	    : "r"(v)
	    : "memory");
	return prev;
}

#else /* !__ARM_FEATURE_ATOMICS: exclusive-monitor loops */

#define SEMD_ARCH_NAME "aarch64-llsc"

/* Store new at p if it holds old; return what p held. */
static inline uint32_t arch_cmpxchg32(arch_atomic32_t *p, uint32_t old, uint32_t new)
{
	uint32_t prev, fail;

	__asm__ __volatile__(
	    "1:	ldaxr	%w0, %2\n"
	    "	cmp	%w0, %w3\n"
	    "	b.ne	2f\n"
	    "	stlxr	%w1, %w4, %2\n"
	    "	cbnz	%w1, 1b\n"
	    "2:"
	    : "=&r"(prev), "=&r"(fail), "+Q"(*p)
	    : "r"(old), "r"(new)
	    : "memory", "cc");
	return prev;
}

/* Store new at p if it holds old; return what p held. */
static inline uint64_t arch_cmpxchg64(arch_atomic64_t *p, uint64_t old, uint64_t new)
{
	uint64_t prev;
	uint32_t fail;

	__asm__ __volatile__(
	    "1:	ldaxr	%x0, %2\n"
	    "	cmp	%x0, %x3\n"
	    "	b.ne	2f\n"
	    "	stlxr	%w1, %x4, %2\n"
	    "	cbnz	%w1, 1b\n"
	    "2:"
	    : "=&r"(prev), "=&r"(fail), "+Q"(*p)
	    : "r"(old), "r"(new)
	    : "memory", "cc");
	return prev;
}

/* Store v at p, return the previous value. */
static inline uint32_t arch_xchg32(arch_atomic32_t *p, uint32_t v)
{
	uint32_t prev, fail;

	__asm__ __volatile__(
	    "1:	ldaxr	%w0, %2\n"
	    "	stlxr	%w1, %w3, %2\n"
	    "	cbnz	%w1, 1b"
	    : "=&r"(prev), "=&r"(fail), "+Q"(*p)
	    : "r"(v)
	    : "memory");
	return prev;
}

/* Store v at p, return the previous value. */
static inline uint64_t arch_xchg64(arch_atomic64_t *p, uint64_t v)
{
	uint64_t prev;
	uint32_t fail;

	__asm__ __volatile__(
	    "1:	ldaxr	%x0, %2\n"
	    "	stlxr	%w1, %x3, %2\n"
	    "	cbnz	%w1, 1b"
	    : "=&r"(prev), "=&r"(fail), "+Q"(*p)
	    : "r"(v)
	    : "memory");
	return prev;
}

/* Add v to *p, return the previous value. */
static inline uint32_t arch_fetch_add32(arch_atomic32_t *p, uint32_t v)
{
	uint32_t prev, sum, fail;

	__asm__ __volatile__(
	    "1:	ldaxr	%w0, %3\n"
	    "	add	%w1, %w0, %w4\n"
	    "	stlxr	%w2, %w1, %3\n"
	    "	cbnz	%w2, 1b"
	    : "=&r"(prev), "=&r"(sum), "=&r"(fail), "+Q"(*p)
	    : "r"(v)
	    : "memory");
	return prev;
}

/* Add v to *p, return the previous value. */
static inline uint64_t arch_fetch_add64(arch_atomic64_t *p, uint64_t v)
{
	uint64_t prev, sum;
	uint32_t fail;

	__asm__ __volatile__(
	    "1:	ldaxr	%x0, %3\n"
	    "	add	%x1, %x0, %x4\n"
	    "	stlxr	%w2, %x1, %3\n"
	    "	cbnz	%w2, 1b"
	    : "=&r"(prev), "=&r"(sum), "=&r"(fail), "+Q"(*p)
	    : "r"(v)
	    : "memory");
	return prev;
}

#endif /* __ARM_FEATURE_ATOMICS */

/* Load with acquire order. */
static inline uint32_t arch_load_acquire32(arch_atomic32_t *p)
{
	uint32_t v;

	__asm__ __volatile__("ldar %w0, %1" : "=r"(v) : "Q"(*p) : "memory");
	return v;
}

/* Load with acquire order. */
static inline uint64_t arch_load_acquire64(arch_atomic64_t *p)
{
	uint64_t v;

	__asm__ __volatile__("ldar %x0, %1" : "=r"(v) : "Q"(*p) : "memory");
	return v;
}

/* Store with release order. */
static inline void arch_store_release32(arch_atomic32_t *p, uint32_t v)
{
	__asm__ __volatile__("stlr %w1, %0" : "=Q"(*p) : "r"(v) : "memory");
}

/* Store with release order. */
static inline void arch_store_release64(arch_atomic64_t *p, uint64_t v)
{
	__asm__ __volatile__("stlr %x1, %0" : "=Q"(*p) : "r"(v) : "memory");
}

/* Load without ordering (aligned accesses are single-copy atomic). */
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

/* Full memory barrier (inner shareable domain). */
static inline void arch_mb(void)
{
	__asm__ __volatile__("dmb ish" ::: "memory");
}

/* Spin-wait hint. */
static inline void cpu_relax(void)
{
	__asm__ __volatile__("yield" ::: "memory");
}

#endif
