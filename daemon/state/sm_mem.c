/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_mem.c - memory with accounting: counted allocations, caches
 * of freed records, labels copied from clients.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* --- memory, with accounting --------------------------------------------- */

/* Zeroed allocation counted in the memory figure. */
void *sm_alloc(struct sm *sm, size_t size)
{
	void *p = calloc(1, size);

	if (p != NULL)
		sm->mem += size;
	return p;
}

/* Free what sm_alloc() gave. */
void sm_dealloc(struct sm *sm, void *p, size_t size)
{
	if (p == NULL)
		return;
	sm->mem -= size;
	free(p);
}

/*
 * Zeroed record from a cache of freed ones, so a down/up on an existing
 * name does not go to the heap; counted like sm_alloc().
 */
void *sm_cache_get(struct sm *sm, struct sm_cache *c, size_t size)
{
	struct sm_cached *p = c->head;

	if (p == NULL)
		return sm_alloc(sm, size);
	c->head = p->next;
	c->n--;
	memset(p, 0, size);
	sm->mem += size;
	return p;
}

/* Give a record back to its cache (or the heap when max are kept). */
void sm_cache_put_max(struct sm *sm, struct sm_cache *c, void *p,
    size_t size, size_t max)
{
	struct sm_cached *e = p;

	if (p == NULL)
		return;
	if (c->n >= max) {
		sm_dealloc(sm, p, size);
		return;
	}
	sm->mem -= size;
	e->next = c->head;
	c->head = e;
	c->n++;
}

/* Give a hold or waiter record back. */
void sm_cache_put(struct sm *sm, struct sm_cache *c, void *p, size_t size)
{
	sm_cache_put_max(sm, c, p, size, SM_CACHE_MAX);
}

/* Free a cache's records. */
void sm_cache_drain(struct sm_cache *c)
{
	struct sm_cached *p;

	while ((p = c->head) != NULL) {
		c->head = p->next;
		free(p);
	}
	c->n = 0;
}

/* Free a string from sm_label(). */
void sm_strfree(struct sm *sm, char *s)
{
	if (s != NULL)
		sm_dealloc(sm, s, strlen(s) + 1);
}

/* Unix time in ms for a monotonic now. */
uint64_t sm_wall(const struct sm *sm, uint64_t now)
{
	return now + (uint64_t)sm->wall_off;
}

/* --- a broken invariant ------------------------------------------------------ */

/* SM_ASSERT failed: say where and what, then abort. */
_Noreturn void sm_assert_fail(const char *expr, const char *file, int line,
    const char *func)
{
	fprintf(stderr, "semd: %s:%d: %s: assertion failed: %s\n", file, line,
	    func, expr);
	fflush(stderr);
	abort();
}
