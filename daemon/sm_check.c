/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/sm_check.c - every invariant of the state, checked by tests after every
 * step (sm_check).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sm-int.h"

/* --- invariants, for tests ---------------------------------------------------- */

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		snprintf(err, errlen, __VA_ARGS__);			\
		return -1;						\
	}								\
} while (0)

/* Check one semaphore's invariants. */
static int check_sem(const struct sm *sm, const struct sm_sem *sem, char *err,
    size_t errlen, uint64_t *nholds, uint64_t *nwaits)
{
	struct list_head *pos, *cpos;
	const struct sm_hold *h;
	const struct sm_wait *w;
	uint64_t held = 0, nh = 0, nw = 0, seq = 0;
	long count = sem->sem.count;
	bool head_seen = false;

	list_for_each(pos, &sem->holders) {
		h = list_entry(pos, struct sm_hold, sem_entry);
		CHECK(h->sem == sem, "%s: holder of another semaphore", sem->name);
		CHECK(h->n > 0, "%s: empty hold", sem->name);
		CHECK(h->token <= sem->sem.token, "%s: token %" PRIu64
		    " above last %" PRIu64, sem->name, h->token, sem->sem.token);
		CHECK(token_find(sm, sem, h->token) == h,
		    "%s: token %" PRIu64 " not indexed", sem->name, h->token);
		CHECK(permit_find(sm, h->permit_id) == h,
		    "%s: permit %" PRIu64 " not indexed", sem->name, h->permit_id);
		held += h->n;
		nh++;
	}
	CHECK(held == sem->held, "%s: held %" PRIu64 " != records %" PRIu64,
	    sem->name, sem->held, held);
	CHECK(nh == sem->nholders, "%s: nholders", sem->name);
	if (sem->mode == SEMD__MODE__OWNED)
		CHECK((long)held + count == (long)sem->limit,
		    "%s: held %" PRIu64 " + free %ld != limit %u", sem->name,
		    held, count, sem->limit);
	else
		CHECK(held == 0 && count <= (long)sem->limit,
		    "%s: signal semaphore over its limit", sem->name);
	/*
	 * Our waiter list mirrors the core's FIFO list exactly, in arrival
	 * order; only signal-mode waiters of absent sessions are parked, and
	 * the first one not parked waits for more than is free.
	 */
	cpos = sem->sem.wait_list.next;
	list_for_each(pos, &sem->waiters) {
		w = list_entry(pos, struct sm_wait, sem_entry);
		CHECK(cpos != &sem->sem.wait_list && cpos == &w->w.list,
		    "%s: waiter order differs from the core", sem->name);
		CHECK(w->w.state == SEMA_WAITING, "%s: queued waiter not waiting",
		    sem->name);
		CHECK(w->seq > seq, "%s: waiters out of arrival order", sem->name);
		seq = w->seq;
		CHECK(w->w.parked == (sem->mode == SEMD__MODE__SIGNAL &&
		    w->session->client == NULL),
		    "%s: waiter %" PRIu64 " parked %d wrongly", sem->name, w->seq,
		    (int)w->w.parked);
		if (!head_seen && !w->w.parked) {
			CHECK(count < (long)w->n,
			    "%s: head waiter wants %u while %ld are free",
			    sem->name, w->n, count);
			head_seen = true;
		}
		cpos = cpos->next;
		nw++;
	}
	CHECK(cpos == &sem->sem.wait_list, "%s: core has extra waiters", sem->name);
	CHECK(nw == sem->nwaiters, "%s: nwaiters", sem->name);
	CHECK(!(sem->auto_created && nh == 0 && nw == 0),
	    "%s: idle auto-created semaphore not freed", sem->name);
	*nholds += nh;
	*nwaits += nw;
	return 0;
}

/*
 * The ordered name index holds exactly the table's names: as many, each
 * one found in the table, in strictly increasing order (ordidx_check).
 */
static int check_byname(const struct sm *sm, char *err, size_t errlen)
{
	struct ordidx_iter it;
	const struct sm_sem *sem;
	char why[200];

	CHECK(sm->byname_lost == 0, "%" PRIu64 " freed name(s) were not in the "
	    "ordered index", sm->byname_lost);
	CHECK(ordidx_check(&sm->byname, why, sizeof why) == 0, "name index: %s",
	    why);
	CHECK(ordidx_count(&sm->byname) == hmap_count(&sm->names),
	    "name index has %zu names, the table %zu",
	    ordidx_count(&sm->byname), hmap_count(&sm->names));
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL)
		CHECK(sem_find(sm, sem->name) == sem,
		    "%s: in the name index, not in the table", sem->name);
	return 0;
}

/* Add n of kind to principal pr's entry in the recount of check_principals(). */
static int recount(const struct sm_principal **prs, uint64_t (*cnt)[SM_NLIMITS],
    size_t np, const struct sm_principal *pr, enum sm_limit_kind kind,
    uint64_t n)
{
	size_t i;

	for (i = 0; i < np; i++) {
		if (prs[i] == pr) {
			cnt[i][kind] += n;
			return 0;
		}
	}
	return -1;
}

/*
 * Every principal's counts equal a recount of the sessions, holds, waiters
 * and owned names that are its, and every principal referred to is in the
 * table. O(objects x principals): a test check, with few principals.
 */
static int check_principals(const struct sm *sm, char *err, size_t errlen)
{
	const struct sm_principal **prs;
	uint64_t (*cnt)[SM_NLIMITS];
	struct hmap_iter it;
	struct hnode *n;
	struct list_head *pos;
	const struct sm_session *s;
	const struct sm_sem *sem;
	const struct sm_hold *h;
	size_t np = hmap_count(&sm->principals), i = 0, k;
	int r = -1;

	prs = ptr_array(np + 1);
	cnt = calloc(np + 1, sizeof *cnt);
	if (prs == NULL || cnt == NULL) {
		snprintf(err, errlen, "out of memory checking principals");
		goto out;
	}
	hmap_iter_init(&it, &sm->principals);
	while (i < np && (n = hmap_iter_next(&it)) != NULL)
		prs[i++] = container_of(n, struct sm_principal, node);
	if (i != np) {
		snprintf(err, errlen, "principal table counts %zu, holds %zu", np, i);
		goto out;
	}
	hmap_iter_init(&it, &sm->sessions);
	while ((n = hmap_iter_next(&it)) != NULL) {
		s = container_of(n, struct sm_session, node);
		if (recount(prs, cnt, np, s->ident->pr, SM_LIMIT_SESSIONS, 1) != 0 ||
		    recount(prs, cnt, np, s->ident->pr, SM_LIMIT_WAITERS,
		    s->nwaiters) != 0) {
			snprintf(err, errlen, "session %" PRIu64 ": principal not in the table",
			    s->id);
			goto out;
		}
	}
	hmap_iter_init(&it, &sm->names);
	while ((n = hmap_iter_next(&it)) != NULL) {
		sem = container_of(n, struct sm_sem, node);
		if (sem->owner != NULL && recount(prs, cnt, np, sem->owner,
		    SM_LIMIT_SEMAPHORES, 1) != 0) {
			snprintf(err, errlen, "%s: owner not in the table", sem->name);
			goto out;
		}
		list_for_each(pos, &sem->holders) {
			h = list_entry(pos, struct sm_hold, sem_entry);
			if (recount(prs, cnt, np, h->ident->pr, SM_LIMIT_PERMITS,
			    h->n) != 0) {
				snprintf(err, errlen, "%s: holder's principal not in the table",
				    sem->name);
				goto out;
			}
		}
	}
	for (i = 0; i < np; i++) {
		for (k = 0; k < SM_NLIMITS; k++) {
			if (cnt[i][k] != prs[i]->count[k]) {
				snprintf(err, errlen, "principal %s: %s counted %" PRIu64
				    ", recounted %" PRIu64, prs[i]->name, limit_names[k],
				    prs[i]->count[k], cnt[i][k]);
				goto out;
			}
		}
		if (prs[i]->refs == 0) {
			snprintf(err, errlen, "principal %s has no references",
			    prs[i]->name);
			goto out;
		}
	}
	r = 0;
out:
	free(prs);
	free(cnt);
	return r;
}

/* Check everything. */
int sm_check(const struct sm *sm, char *err, size_t errlen)
{
	struct hmap_iter it;
	struct hnode *n;
	struct list_head *pos;
	const struct sm_session *s;
	uint64_t nholds = 0, nwaits = 0, nsess = 0, k, sh;
	size_t i;

	hmap_iter_init(&it, &sm->names);
	k = 0;
	while ((n = hmap_iter_next(&it)) != NULL) {
		if (check_sem(sm, container_of(n, struct sm_sem, node), err,
		    errlen, &nholds, &nwaits) != 0)
			return -1;
		k++;
	}
	CHECK(sm->overgrants == 0, "%" PRIu64 " grant(s) left a semaphore held above its limit",
	    sm->overgrants);
	if (check_byname(sm, err, errlen) != 0)
		return -1;
	CHECK(k == sm->ctr.semaphores, "semaphore count %" PRIu64 " != %" PRIu64,
	    sm->ctr.semaphores, k);
	CHECK(nholds == sm->ctr.holders, "holder count");
	CHECK(nwaits == sm->ctr.waiters, "waiter count");
	CHECK(hmap_count(&sm->permits) == nholds, "permit index size");
	CHECK(hmap_count(&sm->tokens) == nholds, "token index size");
	hmap_iter_init(&it, &sm->sessions);
	while ((n = hmap_iter_next(&it)) != NULL) {
		s = container_of(n, struct sm_session, node);
		k = 0;
		list_for_each(pos, &s->holds)
			k++;
		CHECK(k == s->nholds, "session %" PRIu64 ": nholds", s->id);
		sh = 0;
		list_for_each(pos, &s->waiters)
			sh++;
		CHECK(sh == s->nwaiters, "session %" PRIu64 ": nwaiters", s->id);
		CHECK(s->client != NULL || s->lease_ms > 0,
		    "session %" PRIu64 ": lingering without a lease", s->id);
		CHECK(s->lease_ms == 0 || s->expiry.idx != SIZE_MAX,
		    "session %" PRIu64 ": a lease without a timer", s->id);
		CHECK(s->lease_ms == 0 || s->expiry.when <= s->heard + s->lease_ms,
		    "session %" PRIu64 ": lease timer past its lease", s->id);
		k = 0;
		list_for_each(pos, &s->memos)
			k++;
		CHECK(k == s->nmemos, "session %" PRIu64 ": nmemos", s->id);
		nsess++;
	}
	CHECK(nsess == sm->ctr.sessions, "session count");
	if (check_principals(sm, err, errlen) != 0)
		return -1;
	for (i = 0; i < sm->heap_n; i++) {
		CHECK(sm->heap[i]->idx == i, "heap index %zu", i);
		if (i > 0)
			CHECK(!timer_before(sm->heap[i], sm->heap[(i - 1) / 2]),
			    "heap order at %zu", i);
	}
	return 0;
}
