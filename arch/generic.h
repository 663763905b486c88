/* SPDX-License-Identifier: BSD-2-Clause */
/* arch/generic.h - the arch/ API on portable C11 <stdatomic.h>. */
#ifndef SEMD_ARCH_GENERIC_H
#define SEMD_ARCH_GENERIC_H

#include <stdatomic.h>
#include <stdint.h>

#define SEMD_ARCH_NAME "generic"

typedef _Atomic uint32_t arch_atomic32_t;
typedef _Atomic uint64_t arch_atomic64_t;

/* Store new at p if it holds old; return what p held. */
static inline uint32_t arch_cmpxchg32(arch_atomic32_t *p, uint32_t old, uint32_t new)
{
	atomic_compare_exchange_strong(p, &old, new);
	return old;
}

/* Store new at p if it holds old; return what p held. */
static inline uint64_t arch_cmpxchg64(arch_atomic64_t *p, uint64_t old, uint64_t new)
{
	atomic_compare_exchange_strong(p, &old, new);
	return old;
}

/* Store v at p, return the previous value. */
static inline uint32_t arch_xchg32(arch_atomic32_t *p, uint32_t v)
{
	return atomic_exchange(p, v);
}

/* Store v at p, return the previous value. */
static inline uint64_t arch_xchg64(arch_atomic64_t *p, uint64_t v)
{
	return atomic_exchange(p, v);
}

/* Add v to *p, return the previous value. */
static inline uint32_t arch_fetch_add32(arch_atomic32_t *p, uint32_t v)
{
	return atomic_fetch_add(p, v);
}

/* Add v to *p, return the previous value. */
static inline uint64_t arch_fetch_add64(arch_atomic64_t *p, uint64_t v)
{
	return atomic_fetch_add(p, v);
}

/* Load with acquire order. */
static inline uint32_t arch_load_acquire32(arch_atomic32_t *p)
{
	return atomic_load_explicit(p, memory_order_acquire);
}

/* Load with acquire order. */
static inline uint64_t arch_load_acquire64(arch_atomic64_t *p)
{
	return atomic_load_explicit(p, memory_order_acquire);
}

/* Store with release order. */
static inline void arch_store_release32(arch_atomic32_t *p, uint32_t v)
{
	atomic_store_explicit(p, v, memory_order_release);
}

/* Store with release order. */
static inline void arch_store_release64(arch_atomic64_t *p, uint64_t v)
{
	atomic_store_explicit(p, v, memory_order_release);
}

/* Load without ordering. */
static inline uint32_t arch_load_relaxed32(arch_atomic32_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

/* Load without ordering. */
static inline uint64_t arch_load_relaxed64(arch_atomic64_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

/* Store without ordering. */
static inline void arch_store_relaxed32(arch_atomic32_t *p, uint32_t v)
{
	atomic_store_explicit(p, v, memory_order_relaxed);
}

/* Store without ordering. */
static inline void arch_store_relaxed64(arch_atomic64_t *p, uint64_t v)
{
	atomic_store_explicit(p, v, memory_order_relaxed);
}

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
