/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_need.c - what the operations need of a request before
 * they act, shared by them: a valid name, a valid limit, the semaphore
 * named (found, or made), one the caller may manage, one of the right mode
 * - each check answering the request itself when it fails.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* Check a name field of len bytes; answers INVALID_ARGUMENT when bad. */
bool sem_name_len_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, size_t len)
{
	if (len == 0) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "a semaphore name is required");
		return false;
	}
	if (len > SM_NAME_MAX) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "semaphore name is %zu bytes long (max %d)", len, SM_NAME_MAX);
		return false;
	}
	if (!sm_name_valid(name, len)) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "semaphore name is not valid UTF-8, or has control, bidirectional or zero-width characters");
		return false;
	}
	return true;
}

/* Check a name field; answers INVALID_ARGUMENT when bad. */
bool sem_name_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name)
{
	return sem_name_len_ok(sm, c, id, name, strlen(name));
}

/* Find a semaphore or answer NOT_FOUND. */
struct sm_sem *sem_need(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name)
{
	size_t len = strlen(name);
	struct sm_sem *sem;

	if ((sem = client_sem(sm, c, name, len)) != NULL)
		return sem;
	if (!sem_name_len_ok(sm, c, id, name, len))
		return NULL;
	sem = sem_find_len(sm, name, len);
	if (sem == NULL)
		reply_err(sm, c, id, SEMD__CODE__NOT_FOUND,
		    "no semaphore named %s", name);
	else
		client_sem_set(sm, c, sem);
	return sem;
}

/*
 * Find a semaphore c may manage (its creator, administrators), to do what
 * to it; or answer NOT_FOUND or PERMISSION_DENIED.
 */
struct sm_sem *sem_need_manager(struct sm *sm, struct sm_client *c,
    uint64_t id, const char *name, const char *what)
{
	struct sm_sem *sem = sem_need(sm, c, id, name);

	if (sem != NULL && !sem_manager(sm, c, sem)) {
		reply_err(sm, c, id, SEMD__CODE__PERMISSION_DENIED,
		    "%s may not %s %s (only its creator and administrators may)",
		    c->pr->name, what, sem->name);
		return NULL;
	}
	return sem;
}

/* How messages name a mode: "a rate-only semaphore". */
const char *sem_mode_name(int mode)
{
	return mode == SEMD__MODE__SIGNAL ? "signal-mode" :
	    mode == SEMD__MODE__RATE ? "rate-only" : "owned";
}

/*
 * Refuse a request that does not apply to a semaphore of mode: when sem is
 * one, answer code with "NAME is a MODE semaphore: why" and return true.
 */
bool sem_mode_refused(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_sem *sem, int mode, int code, const char *why)
{
	if (sem->mode != mode)
		return false;
	reply_err(sm, c, id, code, "%s is a %s semaphore: %s", sem->name,
	    sem_mode_name(mode), why);
	return true;
}

/*
 * Make a name: created explicitly, owned by and counted against pr, or
 * auto-created by a down (pr NULL). NULL, answered RESOURCE_EXHAUSTED, when
 * max-semaphores is reached, pr is at its quota or memory runs out.
 */
struct sm_sem *sem_create(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t limit, int mode,
    const struct sm_principal *pr)
{
	struct sm_sem *sem;

	if (sm->ctr.semaphores >= sm->cfg.max_semaphores) {
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "too many semaphores (max-semaphores %u)",
		    sm->cfg.max_semaphores);
		return NULL;
	}
	if (pr != NULL && !principal_room(sm, c, id, pr, SM_LIMIT_SEMAPHORES, 1))
		return NULL;
	if ((sem = sem_new(sm, name, limit, mode, pr == NULL, sm->now)) == NULL)
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
	return sem;
}

/*
 * Auto-create a name for a down: owned, with the limit the down asked for
 * (0: the default limit). NULL when answered.
 */
struct sm_sem *sem_auto_create(struct sm *sm, struct sm_client *c,
    uint64_t id, const char *name, uint32_t limit)
{
	if (limit != 0 && !limit_ok(sm, c, id, limit))
		return NULL;
	return sem_create(sm, c, id, name, limit ? limit :
	    sm->cfg.default_limit, SEMD__MODE__OWNED, NULL);
}

/* Check a limit; answers INVALID_ARGUMENT when bad. */
bool limit_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    uint32_t limit)
{
	if (limit >= 1 && limit <= SM_LIMIT_MAX)
		return true;
	reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
	    "limit %u is out of range (1..%u)", limit, SM_LIMIT_MAX);
	return false;
}

