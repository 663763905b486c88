/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * arch/arch.h - atomics, the spin-wait hint, a spinlock and futex wrappers.
 *
 * One small API, three implementations picked at build time:
 *   arch/x86_64.h   inline assembly (lock cmpxchg, xchg, lock xadd, pause)
 *   arch/aarch64.h  inline assembly (LSE casal/swpal/ldaddal when the target
 *                   has them, else ldaxr/stlxr loops; yield)
 *   arch/generic.h  portable C11 <stdatomic.h>
 * configure --with-arch=generic defines SEMD_ARCH_GENERIC; otherwise the
 * host's header is used, with the generic one as the fallback.
 *
 * ThreadSanitizer cannot see inside inline assembly: it would report every
 * lock built on it as a data race, and miss real races. A -fsanitize=thread
 * build therefore always uses the C11 header, whose operations TSan
 * understands. The native code is still tested by the normal, ASan/UBSan and
 * aarch64 (qemu) builds.
 *
 * Every header provides, for 32 and 64 bits (arch_atomic32_t, arch_atomic64_t):
 *   arch_cmpxchg{32,64}(p, old, new)  -> value before; stored new if it was old
 *   arch_xchg{32,64}(p, v)            -> value before
 *   arch_fetch_add{32,64}(p, v)       -> value before
 *   arch_load_acquire, arch_store_release, arch_load_relaxed, arch_store_relaxed
 *   arch_mb() (full barrier), cpu_relax() (spin-wait hint)
 * The read-modify-write operations are sequentially consistent (full
 * barriers), like the kernel's value-returning atomics. SEMD_ARCH_NAME names
 * the implementation.
 */
#ifndef SEMD_ARCH_H
#define SEMD_ARCH_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdbool.h>
#include <stdint.h>

#if defined(__SANITIZE_THREAD__)
#define SEMD_ARCH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SEMD_ARCH_TSAN 1
#endif
#endif

#if defined(SEMD_ARCH_GENERIC) || defined(SEMD_ARCH_TSAN) || \
    !(defined(__x86_64__) || defined(__aarch64__))
#include "arch/generic.h"
#else
#if defined(__x86_64__)
#include "arch/x86_64.h"
#else
#include "arch/aarch64.h"
#endif
/*
 * Relaxed loads and stores of the native headers' volatile words: plain
 * accesses (aligned ones are single-copy atomic on both).
 */
#define ARCH_PLAIN_RELAXED(bits)					\
static inline uint##bits##_t arch_load_relaxed##bits(arch_atomic##bits##_t *p) \
{									\
	return *p;							\
}									\
static inline void arch_store_relaxed##bits(arch_atomic##bits##_t *p,	\
    uint##bits##_t v)							\
{									\
	*p = v;								\
}
ARCH_PLAIN_RELAXED(32)
ARCH_PLAIN_RELAXED(64)
#endif

#include "arch/spinlock.h"

#endif
