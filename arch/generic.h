/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * arch/generic.h - the arch/ API on portable C11 <stdatomic.h>, written
 * once for both widths.
 */
#ifndef SEMD_ARCH_GENERIC_H
#define SEMD_ARCH_GENERIC_H

#include <stdatomic.h>
#include <stdint.h>

#define SEMD_ARCH_NAME "generic"

typedef _Atomic uint32_t arch_atomic32_t;
typedef _Atomic uint64_t arch_atomic64_t;

/* arch_NAMEbits(p, v): the value before, from C11's OP (sequentially consistent). */
#define GENERIC_RMW(name, bits, op)					\
static inline uint##bits##_t arch_##name##bits(arch_atomic##bits##_t *p, \
    uint##bits##_t v)							\
{									\
	return op(p, v);						\
}

/*
 * arch_load_LOADbits(p) and arch_store_STOREbits(p, v), each with the memory
 * order it is named after.
 */
#define GENERIC_LOAD_STORE(load, store, bits)				\
static inline uint##bits##_t arch_load_##load##bits(arch_atomic##bits##_t *p) \
{									\
	return atomic_load_explicit(p, memory_order_##load);		\
}									\
static inline void arch_store_##store##bits(arch_atomic##bits##_t *p,	\
    uint##bits##_t v)							\
{									\
	atomic_store_explicit(p, v, memory_order_##store);		\
}

#define GENERIC_OPS(bits)						\
/* Store new at p if it holds old; return what p held. */		\
static inline uint##bits##_t arch_cmpxchg##bits(arch_atomic##bits##_t *p, \
    uint##bits##_t old, uint##bits##_t new)				\
{									\
	atomic_compare_exchange_strong(p, &old, new);			\
	return old;							\
}									\
GENERIC_RMW(xchg, bits, atomic_exchange)				\
GENERIC_RMW(fetch_add, bits, atomic_fetch_add)				\
GENERIC_LOAD_STORE(acquire, release, bits)				\
GENERIC_LOAD_STORE(relaxed, relaxed, bits)

GENERIC_OPS(32)
GENERIC_OPS(64)

/* Full memory barrier. */
static inline void arch_mb(void)
{
	atomic_thread_fence(memory_order_seq_cst);
}

/*
 * Spin-wait hint. C11 has none; use the CPU's where the compiler offers it
 * (GCC and clang builtins) and a compiler barrier otherwise.
 */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

#endif
