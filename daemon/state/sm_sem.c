/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_sem.c - semaphores and holds: names made and freed, grants
 * recorded as holds and answered (a Down's, a DownMulti's all at once),
 * holds given back. Waiting is sm_wait.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* --- semaphores ---------------------------------------------------------- */

/* Create a semaphore; NULL when out of memory. */
struct sm_sem *sem_new(struct sm *sm, const char *name, uint32_t limit,
    int mode, bool auto_created, uint64_t now)
{
	size_t len = strlen(name), k = SEM_CLASS(len);
	struct sm_sem *sem = sm_cache_get(sm, &sm->sem_cache[k],
	    SEM_CLASS_SIZE(k));

	if (sem == NULL)
		return NULL;
	memcpy(sem->name, name, len);
	sem->len = (uint8_t)len;
	if (ordidx_insert(&sm->byname, sem) != 0) {
		sm_cache_put_max(sm, &sm->sem_cache[k], sem, SEM_CLASS_SIZE(k),
		    SM_SEM_CACHE_MAX);
		return NULL;
	}
	sema_init(&sem->sem, limit);
	sem->sem.token = sm->token_base + (now - sm->start_ms) * 1000;
	if (sem->sem.token < sm->token_hwm)
		sem->sem.token = sm->token_hwm;
	sem->limit = limit;
	sem->mode = (uint8_t)mode;
	sem->auto_created = auto_created;
	sem->owner = NULL;
	sem->hists = NULL;
	INIT_LIST_HEAD(&sem->holders);
	INIT_LIST_HEAD(&sem->waiters);
	hmap_insert(&sm->names, &sem->node, name_hash(sm, name, len));
	sm->ctr.semaphores++;
	return sem;
}

/* Make pr the owner of an explicitly created sem: it counts against pr's cap. */
void sem_set_owner(struct sm_sem *sem, struct sm_principal *pr)
{
	if (sem->owner != NULL)
		return;
	principal_count(pr, SM_LIMIT_SEMAPHORES, 1);
	sem->owner = principal_ref(pr);
}

/* Give the owner's count back (the semaphore goes away). */
static void sem_unown(struct sm *sm, struct sm_sem *sem)
{
	if (sem->owner == NULL)
		return;
	principal_count(sem->owner, SM_LIMIT_SEMAPHORES, -1);
	principal_put(sm, sem->owner);
	sem->owner = NULL;
}

/*
 * May the caller manage sem (delete, set-limit, release others' holds, see
 * every holder)? Administrators may; otherwise only the principal that
 * created it explicitly (nobody owns an auto-created name).
 */
bool sem_manager(const struct sm *sm, const struct sm_client *c,
    const struct sm_sem *sem)
{
	return sm->who == NULL || (sm->who->privs & SM_PRIV_ADMIN) != 0 ||
	    (sem->owner != NULL && sem->owner == c->pr);
}

/* Remove a semaphore that has no holders and no waiters. */
void sem_free(struct sm *sm, struct sm_sem *sem)
{
	/* A name created again later must not reuse its tokens. */
	if (sem->sem.token > sm->token_hwm)
		sm->token_hwm = sem->sem.token;
	rate_detach(sm, sem);
	share_detach(sm, sem);
	hmap_remove(&sm->names, &sem->node);
	sm->sem_gen++;
	/* Fails only in sm_free(), which drops the whole index first. */
	if (ordidx_remove(&sm->byname, sem) != 0)
		sm->byname_lost++;
	sm->ctr.semaphores--;
	sem_unown(sm, sem);
	/* kept for the next name (an auto-created one comes and goes with
	 * each down and up: no heap call for either) */
	sm_cache_put_max(sm, &sm->hists_cache, sem->hists, sizeof *sem->hists,
	    SM_SEM_CACHE_MAX);
	sem->hists = NULL;
	sm_cache_put_max(sm, &sm->sem_cache[SEM_CLASS(sem->len)], sem,
	    SEM_CLASS_SIZE(SEM_CLASS(sem->len)), SM_SEM_CACHE_MAX);
}

/*
 * sem's histograms, made at its first use; NULL when out of memory (that
 * grant or hold is then not counted in them).
 */
struct sm_hists *sem_hists(struct sm *sm, struct sm_sem *sem)
{
	if (sem->hists == NULL)
		sem->hists = sm_cache_get(sm, &sm->hists_cache, sizeof *sem->hists);
	return sem->hists;
}

/* Count a wait of ms on sem, in its histogram and everyone's. */
static void sem_waited(struct sm *sm, struct sm_sem *sem, uint64_t ms)
{
	struct sm_hists *hs = sem_hists(sm, sem);

	hist_add(&sm->ctr.wait, ms);
	if (hs != NULL)
		hist_add(&hs->wait, ms);
}

/* Free an auto-created semaphore nobody uses any more. */
void sem_maybe_free(struct sm *sm, struct sm_sem *sem)
{
	if (sem->auto_created && sem->nholders == 0 && sem->nwaiters == 0)
		sem_free(sm, sem);
}

/* --- holds -------------------------------------------------------------- */

/*
 * Record a grant of n permits as a hold; NULL when out of memory. group_key
 * is the first hold's permit id for the holds of one DownMulti (0: none):
 * the caller links them.
 */
struct sm_hold *hold_new(struct sm *sm, struct sm_sem *sem,
    struct sm_session *s, uint64_t request_id, uint32_t n, uint64_t token,
    uint32_t lease_ms, uint64_t now, uint64_t group_key)
{
	struct sm_hold *h = sm_cache_get(sm, &sm->hold_cache, sizeof *h);

	if (h == NULL)
		return NULL;
	h->permit_id = ++sm->next_permit;
	h->token = token;
	h->n = n;
	h->sem = sem;
	h->ident = ident_get(s->ident);
	h->since_wall = sm_wall(sm, now);
	h->expiry.idx = SIZE_MAX;
	h->group_key = group_key;
	INIT_LIST_HEAD(&h->group);
	if (lease_ms > 0) {
		if (lease_ms > sm->cfg.max_lease_ms)
			lease_ms = sm->cfg.max_lease_ms;
		if (timer_arm(sm, &h->expiry, T_HOLD, now + lease_ms) != 0) {
			ident_put(sm, h->ident);
			sm_cache_put(sm, &sm->hold_cache, h, sizeof *h);
			return NULL;
		}
		h->lease_ms = lease_ms;
		list_add_tail(&h->owner_entry, &sm->detached);
	} else {
		h->session = s;
		list_add_tail(&h->owner_entry, &s->holds);
		s->nholds++;
	}
	list_add_tail(&h->sem_entry, &sem->holders);
	list_add_tail(&h->pr_entry, &h->ident->pr->holds);
	h->ident->pr->nholds++;
	sem->nholders++;
	sem->held += n;
	hmap_insert(&sm->permits, &h->permit_node, id_hash(sm, h->permit_id, 1));
	hmap_insert(&sm->tokens, &h->token_node,
	    id_hash(sm, sem->node.hash, token));
	req_index(sm, &h->req, s->id, request_id, REQ_HOLD);
	sm->ctr.holders++;
	principal_count(h->ident->pr, SM_LIMIT_PERMITS, n);
	idem_hold(sm, h);	/* the key of the down it is for, if any */
	return h;
}

/*
 * Forget a hold; with up, its permits go back to the semaphore. why says
 * what took it, for watchers (NULL: its holder gave it back).
 */
void hold_release(struct sm *sm, struct sm_hold *h, bool up, const char *why)
{
	struct sm_sem *sem = h->sem;
	struct sm_hold *next;
	uint32_t n = h->n;
	uint64_t held;

	timer_disarm(sm, &h->expiry);
	list_del_init(&h->owner_entry);
	if (h->session != NULL)
		h->session->nholds--;
	list_del_init(&h->sem_entry);
	list_del_init(&h->pr_entry);
	h->ident->pr->nholds--;
	sem->nholders--;
	sem->held -= n;
	if (h->grp != NULL) {
		share_released(h->grp, n);
		share_group_put(sm, sem, h->grp);
	}
	hmap_remove(&sm->permits, &h->permit_node);
	hmap_remove(&sm->tokens, &h->token_node);
	/* The next hold of its DownMulti answers a retry from now on. */
	next = list_empty(&h->group) ? NULL :
	    list_first_entry(&h->group, struct sm_hold, group);
	if (h->req.indexed && next != NULL) {
		req_unindex(sm, &h->req);
		req_index(sm, &next->req, h->req.session_id, h->req.request_id,
		    REQ_HOLD);
	}
	idem_hold_gone(sm, h, next);
	list_del_init(&h->group);
	req_unindex(sm, &h->req);
	principal_count(h->ident->pr, SM_LIMIT_PERMITS, -(int64_t)n);
	held = sm_wall(sm, sm->now) > h->since_wall ?
	    sm_wall(sm, sm->now) - h->since_wall : 0;
	hist_add(&sm->ctr.hold, held);
	if (sem_hists(sm, sem) != NULL)
		hist_add(&sem->hists->hold, held);
	sm->ctr.holders--;
	/*
	 * Told before the permits go on to a waiter (its grant follows); an up
	 * (why NULL) gives them back here or in one go by its caller.
	 */
	watch_hold(sm, h, n, up || why == NULL, why);
	if (up)
		sema_up_n_owned(&sem->sem, n);
	ident_put(sm, h->ident);
	sm_cache_put(sm, &sm->hold_cache, h, sizeof *h);
}

/* Give back take of h's permits (fewer than it has) to its principal's count. */
void hold_shrink(struct sm *sm, struct sm_hold *h, uint32_t take)
{
	h->n -= take;
	h->sem->held -= take;
	if (h->grp != NULL)
		share_released(h->grp, take);
	principal_count(h->ident->pr, SM_LIMIT_PERMITS, -(int64_t)take);
	watch_hold(sm, h, take, true, NULL);
}

/* Does the session (or its principal, for detached holds) own h? */
bool hold_owned_by(const struct sm_hold *h, const struct sm_session *s)
{
	if (h->session != NULL)
		return h->session == s;
	return h->ident->pr == s->ident->pr;
}

/*
 * Turn a grant into a hold and answer it (owned), or just answer (signal
 * mode, a rate-only name: the permits or tokens are consumed). grp: the
 * fair-share group it is charged to (tag its tag), or NULL.
 */
void grant_deliver(struct sm *sm, struct sm_sem *sem, struct sm_session *s,
    uint64_t request_id, uint32_t n, uint64_t token, uint32_t lease_ms,
    uint64_t since, uint64_t now, struct sm_group *grp, uint64_t tag)
{
	struct sm_hold *h;

	sm->ctr.grants++;
	sem_waited(sm, sem, now > since ? now - since : 0);
	if (sem->mode != SEMD__MODE__OWNED) {
		/* Nothing is left to find a retry by: keep the answer. */
		memo_add(sm, s, request_id, SEMD__CODE__OK, n, token);
		reply_grant(sm, s->client, request_id, 0, token, n, now - since);
		watch_grant(sm, sem, s, request_id, 0, token, n);
		return;
	}
	h = hold_new(sm, sem, s, request_id, n, token, lease_ms, now, 0);
	if (h == NULL) {
		/* Out of memory: the permits go back, the client hears why. */
		sema_up_n_owned(&sem->sem, n);
		reply_err(sm, s->client, request_id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory recording the grant on %s", sem->name);
		share_group_put(sm, sem, grp);
		return;
	}
	if (grp != NULL) {
		h->grp = grp;
		share_granted(sem, grp, tag, n);
	}
	/*
	 * A grant needs count >= n with count == limit - held, so it can never
	 * leave more held than the limit (a shrink leaves holders above it, but
	 * then nobody is granted). Counted, not asserted, for sm_check().
	 */
	if (sem->held > sem->limit)
		sm->overgrants++;
	reply_grant(sm, s->client, request_id, h->permit_id, token, n,
	    now - since);
	watch_grant(sm, sem, s, request_id, h->permit_id, token, n);
	effect_deadlock(sm, s);
}

/* Send a MultiGrant. */
void reply_multi(struct sm *sm, struct sm_client *c, uint64_t id,
    unsigned int k, struct sm_sem *const *sems, const uint64_t *permits,
    const uint64_t *tokens, const uint32_t *ns, uint64_t waited_ms)
{
	Semd__MultiGrant mg = SEMD__MULTI_GRANT__INIT;
	Semd__NamedGrant gv[SM_MULTI_MAX], *gp[SM_MULTI_MAX];
	unsigned int i;

	for (i = 0; i < k; i++) {
		semd__named_grant__init(&gv[i]);
		gv[i].name = sems[i]->name;
		gv[i].permit_id = permits[i];
		gv[i].token = tokens[i];
		gv[i].n = ns[i];
		gp[i] = &gv[i];
	}
	mg.n_grants = k;
	mg.grants = gp;
	mg.waited_us = waited_ms * 1000;
	REPLY_BODY(sm, c, id, MULTI_GRANT, multi_grant, &mg);
}

/*
 * Turn the grants of a DownMulti (permits taken, tokens[i] the fencing
 * tokens) into holds, linked as one group, and answer it.
 */
void multi_deliver(struct sm *sm, struct sm_session *s, uint64_t id,
    unsigned int k, struct sm_sem *const *sems, const uint32_t *ns,
    const uint64_t *tokens, uint32_t lease_ms, uint64_t since, uint64_t now)
{
	struct sm_hold *h[SM_MULTI_MAX];
	uint64_t permits[SM_MULTI_MAX] = { 0 }, key = 0;
	unsigned int i;
	int op = sm->cur_op;

	for (i = 0; i < k; i++) {
		h[i] = hold_new(sm, sems[i], s, i == 0 ? id : 0, ns[i], tokens[i],
		    lease_ms, now, key);
		if (h[i] == NULL)
			break;
		if (i == 0)
			key = h[i]->group_key = h[i]->permit_id;
		else
			list_add_tail(&h[i]->group, &h[0]->group);
		permits[i] = h[i]->permit_id;
	}
	sm->cur_op = SEMD__REQUEST__OP_DOWN_MULTI;
	if (i < k) {
		/* Out of memory: everything goes back, the client hears why. */
		while (i-- > 0)
			hold_release(sm, h[i], false, "out of memory");
		for (i = 0; i < k; i++)
			sema_up_n_owned(&sems[i]->sem, ns[i]);
		reply_err(sm, s->client, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory recording the grants");
		sm->cur_op = op;
		return;
	}
	sm->ctr.grants += k;
	sm->ctr.multi_grants++;
	hist_add(&sm->ctr.wait, now > since ? now - since : 0);
	for (i = 0; i < k; i++) {
		if (sem_hists(sm, sems[i]) != NULL)
			hist_add(&sems[i]->hists->wait, now > since ? now - since : 0);
		if (sems[i]->held > sems[i]->limit)
			sm->overgrants++;
	}
	reply_multi(sm, s->client, id, k, sems, permits, tokens, ns, now - since);
	for (i = 0; i < k; i++)
		watch_grant(sm, sems[i], s, id, permits[i], tokens[i], ns[i]);
	sm->cur_op = op;
	effect_deadlock(sm, s);
}
