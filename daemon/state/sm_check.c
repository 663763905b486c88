/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_check.c - every invariant of the state, checked by tests
 * after every step (sm_check).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* --- invariants, for tests ---------------------------------------------------- */

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		snprintf(err, errlen, __VA_ARGS__);			\
		return -1;						\
	}								\
} while (0)

/* Whole tokens of sem's bucket as of its last refill. */
static uint64_t check_whole(const struct sm_sem *sem)
{
	return sem->mode == SEMD__MODE__RATE ?
	    (sem->sem.count > 0 ? (uint64_t)sem->sem.count : 0) :
	    sem->rate->tokens;
}

/*
 * Is every member of w first in line with what it needs, as of the last
 * refill of each bucket? (sm_check's const twin of wait_ready.)
 */
static bool check_ready(const struct sm_wait *w)
{
	const struct sm_member *m;
	const struct list_head *pos;
	unsigned int i;

	for (i = 0; i < w->nm; i++) {
		m = &w->m[i];
		/* first unparked member of its queue */
		list_for_each(pos, &m->sem->waiters)
			if (!list_entry(pos, struct sm_member, sem_entry)->w.parked)
				break;
		if (pos != &m->sem_entry || m->sem->sem.count < (long)m->n)
			return false;
		if (sem_gates(m->sem) && m->sem->rate->tokens < m->n)
			return false;
	}
	return true;
}

/*
 * A bucket: its level in range, filled no later than the state's clock, and
 * its timer set for exactly when the first waiter's tokens are due (armed
 * if and only if they are not there yet).
 */
static int check_rate(const struct sm *sm, const struct sm_sem *sem, char *err,
    size_t errlen)
{
	const struct sm_rate *r = sem->rate;
	const struct sm_member *head = NULL;
	uint64_t whole = check_whole(sem), wait;

	CHECK(r->sem == sem, "%s: bucket of another semaphore", sem->name);
	CHECK(r->rate >= 1 && r->rate <= SM_LIMIT_MAX && r->period_ms >= 1 &&
	    r->period_ms <= SM_RATE_PERIOD_MAX && r->burst >= 1 &&
	    r->burst <= SM_LIMIT_MAX, "%s: bucket settings out of range",
	    sem->name);
	CHECK(r->frac < r->period_ms, "%s: fraction %" PRIu64 " of a token >= %u",
	    sem->name, r->frac, r->period_ms);
	CHECK(whole <= r->burst, "%s: %" PRIu64 " tokens over the burst %u",
	    sem->name, whole, r->burst);
	CHECK(whole < r->burst || r->frac == 0, "%s: a full bucket with a fraction",
	    sem->name);
	CHECK(r->last <= sm->now, "%s: bucket filled past the clock", sem->name);
	CHECK(list_empty(&r->touch_entry), "%s: bucket left unsettled", sem->name);
	if (sem->mode == SEMD__MODE__RATE)
		CHECK(sem->sem.count >= 0 && sem->held == 0 && sem->limit == 0,
		    "%s: rate-only semaphore with holds, a limit or a debt", sem->name);
	head = sem_first_in_line(sem);
	if (head == NULL || whole >= head->n) {
		CHECK(r->due.idx == SIZE_MAX, "%s: token timer armed with %s",
		    sem->name, head ? "the tokens there" : "nobody waiting");
		return 0;
	}
	wait = sm_rate_wait_ms(whole, r->frac, r->rate, r->period_ms, head->n);
	CHECK(r->due.idx != SIZE_MAX && r->due.when == r->last + wait,
	    "%s: first waiter's %u tokens due at %" PRIu64 ", timer %s %" PRIu64,
	    sem->name, head->n, r->last + wait,
	    r->due.idx != SIZE_MAX ? "at" : "not armed", r->due.when);
	return 0;
}

/* Check one semaphore's invariants. */
static int check_sem(const struct sm *sm, const struct sm_sem *sem, char *err,
    size_t errlen, uint64_t *nholds, uint64_t *nwaits)
{
	struct list_head *pos, *cpos;
	const struct sm_hold *h;
	const struct sm_member *m;
	const struct sm_wait *w, *prev = NULL;
	uint64_t held = 0, nh = 0, nw = 0;
	long count = sem->sem.count;
	bool head_seen = false;
	unsigned int i;

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
	else if (sem->mode == SEMD__MODE__SIGNAL)
		CHECK(held == 0 && count <= (long)sem->limit && sem->rate == NULL,
		    "%s: signal semaphore over its limit, or with a rate", sem->name);
	else
		CHECK(sem->rate != NULL, "%s: rate-only without a bucket", sem->name);
	if (sem->rate != NULL && check_rate(sm, sem, err, errlen) != 0)
		return -1;
	/*
	 * Our member list mirrors the core's FIFO list exactly, in the one
	 * arrival order of every queue; only the waiters of absent sessions
	 * whose grant would reach nobody (wait_parks_away) are parked; the members that need more than this name's
	 * permits are gated; and the first one not parked waits for more than
	 * is free - or is gated, and its request is not ready (an offer lost
	 * would leave it waiting for ever).
	 */
	cpos = sem->sem.wait_list.next;
	list_for_each(pos, &sem->waiters) {
		m = list_entry(pos, struct sm_member, sem_entry);
		w = m->wait;
		CHECK(cpos != &sem->sem.wait_list && cpos == &m->w.list,
		    "%s: waiter order differs from the core", sem->name);
		CHECK(m->sem == sem && w->nm >= 1 && w->nm <= SM_MULTI_MAX &&
		    m >= &w->m[0] && m < &w->m[w->nm],
		    "%s: member of another semaphore or waiter", sem->name);
		CHECK(m->w.state == SEMA_WAITING, "%s: queued waiter not waiting",
		    sem->name);
		CHECK(m->n == m->w.n && m->n > 0, "%s: member wants %u, core %u",
		    sem->name, m->n, m->w.n);
		CHECK(prev == NULL || wait_before(prev, w),
		    "%s: waiters out of order (priority, then arrival)", sem->name);
		CHECK((w->grp != NULL || w->key == wait_key(w->since_ms, w->prio)) &&
		    w->prio >= SM_PRIO_MIN && w->prio <= SM_PRIO_MAX,
		    "%s: waiter %" PRIu64 ": key %" PRIu64 " of priority %d",
		    sem->name, w->seq, w->key, w->prio);
		prev = w;
		CHECK(m->w.parked == (wait_parks_away(w, sem) &&
		    w->session->client == NULL),
		    "%s: waiter %" PRIu64 " parked %d wrongly", sem->name, w->seq,
		    (int)m->w.parked);
		CHECK(m->w.gated == member_gated(w, sem),
		    "%s: waiter %" PRIu64 " gated %d wrongly", sem->name, w->seq,
		    (int)m->w.gated);
		CHECK(list_empty(&w->offer_entry), "%s: waiter %" PRIu64
		    " left offered", sem->name, w->seq);
		if (!head_seen && !m->w.parked) {
			CHECK(count < (long)m->n || (m->w.gated && !check_ready(w)),
			    "%s: first waiter (%" PRIu64 ") wants %u while %ld are free%s",
			    sem->name, w->seq, m->n, count,
			    m->w.gated ? ", and its request is ready" : "");
			head_seen = true;
		}
		for (i = 0; i < w->nm; i++)
			CHECK(i == (unsigned int)(m - w->m) || w->m[i].sem != sem,
			    "%s: a waiter in its queue twice", sem->name);
		cpos = cpos->next;
		nw++;
	}
	CHECK(cpos == &sem->sem.wait_list, "%s: core has extra waiters", sem->name);
	CHECK(nw == sem->nwaiters, "%s: nwaiters", sem->name);
	CHECK(share_check(sem) == NULL, "%s: %s", sem->name, share_check(sem));
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
 * Every principal's counts equal a recount of the sessions, holds, waiters,
 * owned names and watches that are its, and every principal referred to is
 * in the table. O(objects x principals): a test check, with few principals.
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
	const struct sm_watch *x;
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
	list_for_each(pos, &sm->watches) {
		x = list_entry(pos, struct sm_watch, entry);
		if (recount(prs, cnt, np, x->client->pr, SM_LIMIT_WATCHES, 1) != 0) {
			snprintf(err, errlen, "watch %" PRIu64 ": principal not in "
			    "the table", x->id);
			goto out;
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

/*
 * A waiter of session s: its members, each in its name's queue at its
 * arrival place (check_sem walks the queues), in no name twice.
 */
static int check_wait(const struct sm_session *s, const struct sm_wait *w,
    char *err, size_t errlen)
{
	unsigned int i;

	CHECK(w->session == s, "waiter %" PRIu64 " of another session", w->seq);
	CHECK(w->nm >= 1 && w->nm <= SM_MULTI_MAX && (w->multi || w->nm == 1),
	    "waiter %" PRIu64 ": %u names", w->seq, w->nm);
	CHECK(!w->req.indexed || w->req.kind == REQ_WAIT,
	    "waiter %" PRIu64 ": indexed as something else", w->seq);
	for (i = 0; i < w->nm; i++) {
		CHECK(w->m[i].wait == w && w->m[i].sem != NULL &&
		    !list_empty(&w->m[i].sem_entry),
		    "waiter %" PRIu64 ": member %u not queued", w->seq, i);
		CHECK(!w->multi || w->m[i].sem->mode == SEMD__MODE__OWNED,
		    "waiter %" PRIu64 ": a multi-name down on %s", w->seq,
		    w->m[i].sem->name);
	}
	return 0;
}

/*
 * The holds seen from their principals (each list in permit order, the
 * count right) and the DownMulti groups (one key each, at most one of a
 * group indexed, all of one session or all detached).
 */
static int check_holds(const struct sm *sm, char *err, size_t errlen)
{
	struct hmap_iter it;
	struct hnode *n;
	const struct list_head *pos, *gpos;
	const struct sm_principal *pr;
	const struct sm_hold *h, *g;
	uint64_t last, total = 0;
	uint32_t k, indexed;

	hmap_iter_init(&it, &sm->principals);
	while ((n = hmap_iter_next(&it)) != NULL) {
		pr = container_of(n, struct sm_principal, node);
		k = 0;
		last = 0;
		list_for_each(pos, &pr->holds) {
			h = list_entry(pos, struct sm_hold, pr_entry);
			CHECK(h->ident->pr == pr, "principal %s: another's hold",
			    pr->name);
			CHECK(h->permit_id > last, "principal %s: holds out of permit order",
			    pr->name);
			last = h->permit_id;
			k++;
			indexed = h->req.indexed;
			CHECK(h->group_key != 0 || list_empty(&h->group),
			    "permit %" PRIu64 ": grouped without a key", h->permit_id);
			list_for_each(gpos, &h->group) {
				g = list_entry(gpos, struct sm_hold, group);
				CHECK(g->group_key == h->group_key && g != h &&
				    g->session == h->session,
				    "permit %" PRIu64 ": a group of unlike holds",
				    h->permit_id);
				indexed += g->req.indexed;
			}
			CHECK(indexed <= 1, "permit %" PRIu64 ": a group indexed twice",
			    h->permit_id);
		}
		CHECK(k == pr->nholds, "principal %s: %u holds listed, %u counted",
		    pr->name, k, pr->nholds);
		total += k;
	}
	CHECK(total == sm->ctr.holders, "holds by principal %" PRIu64 " != %" PRIu64,
	    total, sm->ctr.holders);
	return 0;
}

/* Every watch belongs to an open client, listed with it and counted. */
static int check_watches(const struct sm *sm, char *err, size_t errlen)
{
	const struct list_head *pos, *wpos;
	const struct sm_client *c;
	const struct sm_watch *x;
	uint64_t n = 0, m = 0;

	list_for_each(pos, &sm->clients) {
		c = list_entry(pos, struct sm_client, entry);
		CHECK(c->nwatches <= SM_WATCH_MAX, "client %" PRIu64 ": %u watches",
		    c->id, c->nwatches);
		list_for_each(wpos, &c->watches) {
			x = list_entry(wpos, struct sm_watch, client_entry);
			CHECK(x->client == c && x->id != 0 && strlen(x->name) == x->len &&
			    (x->prefix || x->len > 0), "client %" PRIu64 ": bad watch",
			    c->id);
			n++;
		}
		m += c->nwatches;
	}
	CHECK(n == m, "watches listed %" PRIu64 ", counted %" PRIu64, n, m);
	list_for_each(pos, &sm->watches)
		n--;
	CHECK(n == 0, "watch list and clients' watches differ");
	return 0;
}

/* Check everything. */
/*
 * A session's parent link (sm_family.c): an older session of the same
 * principal, in the table; each child of s names s. Counted: sessions with
 * a parent (*linked) and children in lists (*listed), equal at the end.
 */
static int check_family(const struct sm *sm, const struct sm_session *s,
    uint64_t *linked, uint64_t *listed, char *err, size_t errlen)
{
	const struct sm_session *p = s->parent, *c;
	const struct list_head *pos;

	if (p != NULL) {
		CHECK(p->id < s->id && session_find(sm, p->id) == p &&
		    p->ident->pr == s->ident->pr,
		    "session %" PRIu64 ": a bad parent", s->id);
		(*linked)++;
	} else {
		CHECK(list_empty(&s->child_entry), "session %" PRIu64
		    ": a child of no parent", s->id);
	}
	list_for_each(pos, &s->children) {
		c = list_entry(pos, struct sm_session, child_entry);
		CHECK(c->parent == s, "session %" PRIu64 ": a child that "
		    "names another parent", s->id);
		(*listed)++;
	}
	return 0;
}

int sm_check(const struct sm *sm, char *err, size_t errlen)
{
	struct hmap_iter it;
	struct hnode *n;
	struct list_head *pos;
	const struct sm_session *s;
	uint64_t nholds = 0, nwaits = 0, nsess = 0, k, sh;
	uint64_t linked = 0, listed = 0;
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
		list_for_each(pos, &s->waiters) {
			if (check_wait(s, list_entry(pos, struct sm_wait,
			    session_entry), err, errlen) != 0)
				return -1;
			sh++;
		}
		CHECK(sh == s->nwaiters, "session %" PRIu64 ": nwaiters", s->id);
		CHECK(s->client != NULL || s->lease_ms > 0,
		    "session %" PRIu64 ": lingering without a lease", s->id);
		CHECK(sm->leader_leases || s->lease_ms == 0 ||
		    s->expiry.idx != SIZE_MAX,
		    "session %" PRIu64 ": a lease without a timer", s->id);
		CHECK(!sm->leader_leases || s->expiry.idx == SIZE_MAX,
		    "session %" PRIu64 ": a timer on a leader's lease", s->id);
		CHECK(s->lease_ms == 0 || s->expiry.when <= s->heard + s->lease_ms,
		    "session %" PRIu64 ": lease timer past its lease", s->id);
		k = 0;
		list_for_each(pos, &s->memos)
			k++;
		CHECK(k == s->nmemos, "session %" PRIu64 ": nmemos", s->id);
		if (check_family(sm, s, &linked, &listed, err, errlen) != 0)
			return -1;
		nsess++;
	}
	CHECK(nsess == sm->ctr.sessions, "session count");
	CHECK(linked == listed, "%" PRIu64 " sessions with a parent, %" PRIu64
	    " in children lists", linked, listed);
	if (check_principals(sm, err, errlen) != 0 ||
	    check_holds(sm, err, errlen) != 0 ||
	    check_watches(sm, err, errlen) != 0)
		return -1;
	/* Settled: nothing left over from the last call. */
	CHECK(list_empty(&sm->offers), "an offered request left unsettled");
	CHECK(list_empty(&sm->rate_touched), "a token bucket left unsettled");
	CHECK(sm->dl_ncheck == 0, "a deadlock check left undone");
	CHECK(sm->multi_bugs == 0, "%" PRIu64 " ready request(s) could not be granted",
	    sm->multi_bugs);
	for (i = 0; i < sm->heap_n; i++) {
		CHECK(sm->heap[i]->idx == i, "heap index %zu", i);
		if (i > 0)
			CHECK(!timer_before(sm->heap[i], sm->heap[(i - 1) / 2]),
			    "heap order at %zu", i);
	}
	return 0;
}
