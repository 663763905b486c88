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
 * use ldar/stlr. Each operation is written once for both widths: r is the
 * register prefix of the width ("w" for 32 bits, "x" for 64).
 */
#ifndef SEMD_ARCH_AARCH64_H
#define SEMD_ARCH_AARCH64_H

#include <stdint.h>

typedef volatile uint32_t arch_atomic32_t;
typedef volatile uint64_t arch_atomic64_t;

#if defined(__ARM_FEATURE_ATOMICS)

#define SEMD_ARCH_NAME "aarch64-lse"

/* arch_cmpxchgN: store new at p if it holds old; return what p held. */
#define A64_CMPXCHG(bits, r)						\
static inline uint##bits##_t arch_cmpxchg##bits(arch_atomic##bits##_t *p, \
    uint##bits##_t old, uint##bits##_t new)				\
{									\
	__asm__ __volatile__("casal %" r "0, %" r "2, %1"		\
	    : "+r"(old), "+Q"(*p)					\
	    : "r"(new)							\
	    : "memory");						\
	return old;							\
}

/* arch_xchgN (swpal), arch_fetch_addN (ldaddal): the value before. */
#define A64_RMW(name, bits, r, insn)					\
static inline uint##bits##_t name(arch_atomic##bits##_t *p, uint##bits##_t v) \
{									\
	uint##bits##_t prev;						\
									\
	__asm__ __volatile__(insn " %" r "2, %" r "0, %1"		\
	    : "=r"(prev), "+Q"(*p)					\
	    : "r"(v)							\
	    : "memory");						\
	return prev;							\
}

A64_RMW(arch_xchg32, 32, "w", "swpal")
A64_RMW(arch_xchg64, 64, "x", "swpal")
A64_RMW(arch_fetch_add32, 32, "w", "ldaddal")
A64_RMW(arch_fetch_add64, 64, "x", "ldaddal")

#else /* !__ARM_FEATURE_ATOMICS: exclusive-monitor loops */

#define SEMD_ARCH_NAME "aarch64-llsc"

/* arch_cmpxchgN: store new at p if it holds old; return what p held. */
#define A64_CMPXCHG(bits, r)						\
static inline uint##bits##_t arch_cmpxchg##bits(arch_atomic##bits##_t *p, \
    uint##bits##_t old, uint##bits##_t new)				\
{									\
	uint##bits##_t prev;						\
	uint32_t fail;							\
									\
	__asm__ __volatile__(						\
	    "1:	ldaxr	%" r "0, %2\n"					\
	    "	cmp	%" r "0, %" r "3\n"				\
	    "	b.ne	2f\n"						\
	    "	stlxr	%w1, %" r "4, %2\n"				\
	    "	cbnz	%w1, 1b\n"					\
	    "2:"							\
	    : "=&r"(prev), "=&r"(fail), "+Q"(*p)			\
	    : "r"(old), "r"(new)					\
	    : "memory", "cc");						\
	return prev;							\
}

/*
 * arch_xchgN and arch_fetch_addN: load-exclusive, compute the value to
 * store (op, from the value before in %0 and v in %4, into %1), store it
 * exclusive, again until the store held; the value before.
 */
#define A64_RMW(name, bits, r, op)					\
static inline uint##bits##_t name(arch_atomic##bits##_t *p, uint##bits##_t v) \
{									\
	uint##bits##_t prev, next;					\
	uint32_t fail;							\
									\
	__asm__ __volatile__(						\
	    "1:	ldaxr	%" r "0, %3\n"					\
	    op "\n"							\
	    "	stlxr	%w2, %" r "1, %3\n"				\
	    "	cbnz	%w2, 1b"					\
	    : "=&r"(prev), "=&r"(next), "=&r"(fail), "+Q"(*p)		\
	    : "r"(v)							\
	    : "memory");						\
	return prev;							\
}

A64_RMW(arch_xchg32, 32, "w", "	mov	%w1, %w4")
A64_RMW(arch_xchg64, 64, "x", "	mov	%x1, %x4")
A64_RMW(arch_fetch_add32, 32, "w", "	add	%w1, %w0, %w4")
A64_RMW(arch_fetch_add64, 64, "x", "	add	%x1, %x0, %x4")

#endif /* __ARM_FEATURE_ATOMICS */

A64_CMPXCHG(32, "w")
A64_CMPXCHG(64, "x")

/* Acquire loads (ldar) and release stores (stlr). Relaxed ones: arch.h. */
#define A64_LOADS_STORES(bits, r)					\
static inline uint##bits##_t arch_load_acquire##bits(arch_atomic##bits##_t *p) \
{									\
	uint##bits##_t v;						\
									\
	__asm__ __volatile__("ldar %" r "0, %1" : "=r"(v) : "Q"(*p) : "memory"); \
	return v;							\
}									\
static inline void arch_store_release##bits(arch_atomic##bits##_t *p,	\
    uint##bits##_t v)							\
{									\
	__asm__ __volatile__("stlr %" r "1, %0" : "=Q"(*p) : "r"(v) : "memory"); \
}

A64_LOADS_STORES(32, "w")
A64_LOADS_STORES(64, "x")

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
