/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * arch/x86_64.h - the arch/ API in x86-64 inline assembly.
 *
 * x86 is TSO: ordinary loads already have acquire and ordinary stores
 * release semantics, so those only need a compiler barrier. The locked
 * instructions (and xchg, which is implicitly locked) are full barriers.
 * Each operation is written once for both widths: sfx is the instruction
 * suffix (l, q).
 */
#ifndef SEMD_ARCH_X86_64_H
#define SEMD_ARCH_X86_64_H

#include <stdint.h>

#define SEMD_ARCH_NAME "x86_64"

typedef volatile uint32_t arch_atomic32_t;
typedef volatile uint64_t arch_atomic64_t;

#define arch_barrier_() __asm__ __volatile__("" ::: "memory")

/* arch_cmpxchgN: store new at p if it holds old; return what p held. */
#define X86_CMPXCHG(bits, sfx)						\
static inline uint##bits##_t arch_cmpxchg##bits(arch_atomic##bits##_t *p, \
    uint##bits##_t old, uint##bits##_t new)				\
{									\
	uint##bits##_t prev;						\
									\
	__asm__ __volatile__("lock; cmpxchg" sfx " %2, %1"		\
	    : "=a"(prev), "+m"(*p)					\
	    : "r"(new), "0"(old)					\
	    : "memory", "cc");						\
	return prev;							\
}

/*
 * arch_xchgN (store v, return the value before) and arch_fetch_addN (add
 * v, return the value before): one instruction swapping through v.
 */
#define X86_SWAP_OP(name, bits, insn)					\
static inline uint##bits##_t name(arch_atomic##bits##_t *p, uint##bits##_t v) \
{									\
	__asm__ __volatile__(insn " %0, %1"				\
	    : "+r"(v), "+m"(*p)						\
	    :								\
	    : "memory", "cc");						\
	return v;							\
}

/*
 * Acquire is a plain load then a compiler barrier, release a compiler
 * barrier then a plain store (TSO). Relaxed ones: arch.h.
 */
#define X86_LOADS_STORES(bits)						\
static inline uint##bits##_t arch_load_acquire##bits(arch_atomic##bits##_t *p) \
{									\
	uint##bits##_t v = *p;						\
									\
	arch_barrier_();						\
	return v;							\
}									\
static inline void arch_store_release##bits(arch_atomic##bits##_t *p,	\
    uint##bits##_t v)							\
{									\
	arch_barrier_();						\
	*p = v;								\
}

X86_CMPXCHG(32, "l")
X86_CMPXCHG(64, "q")
X86_SWAP_OP(arch_xchg32, 32, "xchgl")
X86_SWAP_OP(arch_xchg64, 64, "xchgq")
X86_SWAP_OP(arch_fetch_add32, 32, "lock; xaddl")
X86_SWAP_OP(arch_fetch_add64, 64, "lock; xaddq")
X86_LOADS_STORES(32)
X86_LOADS_STORES(64)

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
