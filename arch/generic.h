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

#define GENERIC_OPS(bits)						\
/* Store new at p if it holds old; return what p held. */		\
static inline uint##bits##_t arch_cmpxchg##bits(arch_atomic##bits##_t *p, \
    uint##bits##_t old, uint##bits##_t new)				\
{									\
	atomic_compare_exchange_strong(p, &old, new);			\
	return old;							\
}									\
static inline uint##bits##_t arch_xchg##bits(arch_atomic##bits##_t *p,	\
    uint##bits##_t v)							\
{									\
	return atomic_exchange(p, v);					\
}									\
static inline uint##bits##_t arch_fetch_add##bits(arch_atomic##bits##_t *p, \
    uint##bits##_t v)							\
{									\
	return atomic_fetch_add(p, v);					\
}									\
static inline uint##bits##_t arch_load_acquire##bits(arch_atomic##bits##_t *p) \
{									\
	return atomic_load_explicit(p, memory_order_acquire);		\
}									\
static inline void arch_store_release##bits(arch_atomic##bits##_t *p,	\
    uint##bits##_t v)							\
{									\
	atomic_store_explicit(p, v, memory_order_release);		\
}									\
static inline uint##bits##_t arch_load_relaxed##bits(arch_atomic##bits##_t *p) \
{									\
	return atomic_load_explicit(p, memory_order_relaxed);		\
}									\
static inline void arch_store_relaxed##bits(arch_atomic##bits##_t *p,	\
    uint##bits##_t v)							\
{									\
	atomic_store_explicit(p, v, memory_order_relaxed);		\
}

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
