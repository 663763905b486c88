/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/alloccount.c - count heap allocations in --enable-alloc-count test
 * builds: malloc, calloc and realloc are defined here and forward to glibc's
 * (__libc_*), so every call made through the PLT counts: semd's own and
 * libevent's and protobuf-c's. Stats reports the total as "allocations".
 * Calls glibc makes internally (strdup, fopen) do not go through these.
 * Without SEMD_ALLOC_COUNT (or under a sanitizer) nothing is replaced and
 * alloc_count_get() is NULL.
 */
#include <config.h>	/* autoconf's */

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/server.h"

#if defined(SEMD_ALLOC_COUNT) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__) && defined(__GLIBC__)

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);

static atomic_uint_fast64_t alloc_count;

/* Counted malloc. */
void *malloc(size_t size)
{
	atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed);
	return __libc_malloc(size);
}

/* Counted calloc. */
void *calloc(size_t n, size_t size)
{
	atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed);
	return __libc_calloc(n, size);
}

/* Counted realloc. */
void *realloc(void *p, size_t size)
{
	atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed);
	return __libc_realloc(p, size);
}

/* Allocations so far. */
static uint64_t alloc_count_read(void)
{
	return atomic_load_explicit(&alloc_count, memory_order_relaxed);
}

/* The counter for sm_config.alloc_count. */
uint64_t (*alloc_count_get(void))(void)
{
	return alloc_count_read;
}

#else

/* Not counted in this build. */
uint64_t (*alloc_count_get(void))(void)
{
	return NULL;
}

#endif
