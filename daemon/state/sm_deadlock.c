/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_deadlock.c - the wait-for graph: a down that would close a
 * cycle of sessions, each waiting for a hold of the next, is answered
 * DEADLOCK.
 *
 * The graph: a session that waits for n permits of an owned-mode name has
 * an edge to every session holding permits of it that it cannot do without
 * - one whose permits it needs even if every other holder gave theirs back
 * (held_T > free + held - n). For a name of limit 1 that is its holder, as in
 * the textbook graph; for larger limits it leaves out holders that need not
 * give anything back, so a cycle is always a real deadlock (for sessions
 * that give their holds back only once they are served), never a false
 * alarm; a circle through several holders that could each be done without
 * is not found. A session waiting for its own holds has no edge to itself:
 * a handle shared by threads (libsemclient's are) is one session, and one
 * of its threads waits for another's up as any client would. Detached
 * holds (Down.lease_ms) belong to no session and wait for nothing: no edge.
 * A session started under another one's hold (sm_family.c: semctl run's
 * command) is waited for by it: an edge from the parent to each child.
 *
 * When. Edges appear when a session starts waiting (edges from it) and when
 * a session is granted a hold while others wait for that name (edges to
 * it). So a search runs (1) when a session that holds permits starts
 * waiting - the new down is answered DEADLOCK at once instead of queued -
 * and (2) after a grant to a session that still waits for something else:
 * then the newest waiter on the cycle found is answered DEADLOCK (the
 * usual victim, the one that has waited least). A session that holds
 * nothing and has no parent has no edge into it, so (1) is skipped for it;
 * a session with no other down pending and no child has no edge out of
 * it, so (2) is skipped: a client that waits for one thing at a time never
 * pays for (2).
 *
 * Cost. A search is a breadth-first walk from the session, visiting each
 * session at most once and, for each of its waiting members, the holders of
 * that name twice (a sum, then the edges): O(waiting members + holds) of
 * what is reachable, nothing else - with 100,000 waiters on unrelated names
 * a search still costs only its own names' holders. It is cut at
 * SM_DEADLOCK_BUDGET holds looked at (counted in deadlock_cut; the down
 * then waits as if no cycle were found). Measured in doc/features.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

struct dl_search {
	struct sm_session	*target;	/* the cycle closes at it */
	struct sm_session	*found;		/* the session whose edge closes it */
	struct sm_wait		*found_via;
	struct sm_sem		*found_sem;
	size_t			head, tail;	/* sm->dl_queue */
	uint64_t		steps;
	bool			cut;
	bool			oom;
};

/* Queue a session reached for the first time. */
static void dl_push(struct sm *sm, struct dl_search *d, struct sm_session *t)
{
	struct sm_session **q;
	size_t cap;

	if (d->tail == sm->dl_cap) {
		cap = sm->dl_cap ? sm->dl_cap * 2 : 64;
		if ((q = ptr_array_grow(sm->dl_queue, cap)) == NULL) {
			d->oom = true;
			return;
		}
		sm->dl_queue = q;
		sm->dl_cap = cap;
	}
	sm->dl_queue[d->tail++] = t;
}

/*
 * An edge from a to t: a waits (through w, for sem) for a hold of t, or
 * (sem NULL) for its child t. True when it closes the cycle; else t is
 * queued, if no edge reached it before.
 */
static bool dl_edge(struct sm *sm, struct dl_search *d, struct sm_session *a,
    struct sm_wait *w, struct sm_sem *sem, struct sm_session *t)
{
	if (t == d->target) {
		d->found = a;
		d->found_via = w;
		d->found_sem = sem;
		return true;
	}
	if (t->dl_seen == sm->dl_search)
		return false;
	t->dl_seen = sm->dl_search;
	t->dl_parent = a;
	t->dl_via = w;
	t->dl_sem = sem;
	dl_push(sm, d, t);
	return false;
}

/*
 * The edges of a, waiting (through w; NULL: the down being checked) for n
 * permits of sem: every holder it cannot do without. Stops at the target.
 */
static void dl_edges(struct sm *sm, struct dl_search *d, struct sm_session *a,
    struct sm_wait *w, struct sm_sem *sem, uint32_t n)
{
	struct list_head *pos;
	struct sm_hold *h;
	struct sm_session *t;
	uint64_t visit = ++sm->dl_visit;
	int64_t slack;

	if (sem->mode != SEMD__MODE__OWNED || sem->nholders == 0)
		return;
	if (d->steps + 2 * (uint64_t)sem->nholders > SM_DEADLOCK_BUDGET) {
		d->cut = true;
		return;
	}
	d->steps += 2 * (uint64_t)sem->nholders;
	/* What each session holds of sem... */
	list_for_each(pos, &sem->holders) {
		h = list_entry(pos, struct sm_hold, sem_entry);
		if ((t = h->session) == NULL)
			continue;
		if (t->dl_sum_at != visit) {
			t->dl_sum_at = visit;
			t->dl_held = 0;
		}
		t->dl_held += h->n;
	}
	/* ... and those without whose permits n cannot be had. */
	slack = (int64_t)sema_count(&sem->sem) + (int64_t)sem->held - (int64_t)n;
	list_for_each(pos, &sem->holders) {
		h = list_entry(pos, struct sm_hold, sem_entry);
		if ((t = h->session) == NULL || t == a || t->dl_edge_at == visit)
			continue;
		t->dl_edge_at = visit;
		if ((int64_t)t->dl_held > slack && dl_edge(sm, d, a, w, sem, t))
			return;
	}
}

/* The edges from a, a parent, to its children, which it waits for. */
static void dl_children(struct sm *sm, struct dl_search *d,
    struct sm_session *a)
{
	struct list_head *pos;
	struct sm_session *t;

	list_for_each(pos, &a->children) {
		t = list_entry(pos, struct sm_session, child_entry);
		if (++d->steps > SM_DEADLOCK_BUDGET) {
			d->cut = true;
			return;
		}
		if ((t == d->target || family_waits(t)) &&
		    dl_edge(sm, d, a, NULL, NULL, t))
			return;
	}
}

/* The edges out of a through all of its waiting downs and its children. */
static void dl_expand(struct sm *sm, struct dl_search *d, struct sm_session *a)
{
	struct list_head *pos;
	struct sm_wait *w;
	unsigned int i;

	list_for_each(pos, &a->waiters) {
		w = list_entry(pos, struct sm_wait, session_entry);
		for (i = 0; i < w->nm && d->found == NULL && !d->cut; i++)
			dl_edges(sm, d, a, w, w->m[i].sem, w->m[i].n);
		if (d->found != NULL || d->cut)
			return;
	}
	dl_children(sm, d, a);
}

/* Walk on from the sessions queued until the cycle closes or nothing is left. */
static void dl_walk(struct sm *sm, struct dl_search *d)
{
	while (d->found == NULL && !d->cut && !d->oom && d->head < d->tail)
		dl_expand(sm, d, sm->dl_queue[d->head++]);
	sm->ctr.deadlock_steps += d->steps;
	if (d->cut || d->oom)
		sm->ctr.deadlock_cut++;
}

/* Append to a message, cut with "..." when full. */
static void __attribute__((format(printf, 3, 4)))
dl_say(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;
	int r;

	if (used + 4 >= len)
		return;
	va_start(ap, fmt);
	r = vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= len - used)
		memcpy(buf + len - 4, "...", 4);
}

/* "session 7 (uid:2, name@host pid 42)" */
static void dl_who(char *buf, size_t len, const struct sm_session *s,
    const struct sm_session *you)
{
	if (s == you)
		dl_say(buf, len, "session %" PRIu64 " (you)", s->id);
	else
		dl_say(buf, len, "session %" PRIu64 " (%s, %s@%s pid %u)", s->id,
		    s->ident->pr->name, s->ident->client_name, s->ident->host,
		    s->ident->pid);
}

/* One hop of a cycle: a wait for a name's holder, or for a child. */
static void dl_hop(char *buf, size_t len, bool first, const struct sm_sem *sem)
{
	if (sem != NULL)
		dl_say(buf, len, "%s waits for %s, held by ",
		    first ? "" : ", which", sem->name);
	else
		dl_say(buf, len, "%s waits for the command it runs, ",
		    first ? "" : ", which");
}

/*
 * The cycle found, told in why: from the target through each session
 * reached back to it (the first SM_DEADLOCK_SHOWN hops). *newest gets the
 * waiter on it that came last (NULL for the down being checked, which is
 * newer than any). The search queue is done with: it holds the path.
 */
static void dl_cycle(struct sm *sm, const struct dl_search *d, char *why,
    size_t len, struct sm_wait **newest)
{
	struct sm_session **path = sm->dl_queue, *s;
	size_t n = 0, i;
	bool fresh;

	/* A child edge is no waiter's: the newest is of the wait edges. */
	*newest = d->found_via;
	fresh = d->found_sem != NULL && d->found_via == NULL;
	/* Back from the session that closes it to the target (all were queued). */
	for (s = d->found; s != d->target && n < d->tail; s = s->dl_parent) {
		path[n++] = s;
		if (s->dl_sem == NULL)
			continue;
		if (s->dl_via == NULL)
			fresh = true;
		else if (*newest == NULL || s->dl_via->seq > (*newest)->seq)
			*newest = s->dl_via;
	}
	if (fresh)
		*newest = NULL;
	why[0] = '\0';
	dl_say(why, len, "deadlock: ");
	dl_who(why, len, d->target, d->target);
	/* Forwards: target -> path[n-1] -> ... -> path[0] -> target. */
	for (i = n; i > 0 && n - i < SM_DEADLOCK_SHOWN; i--) {
		s = path[i - 1];
		dl_hop(why, len, i == n, s->dl_sem);
		dl_who(why, len, s, d->target);
	}
	if (i > 0)
		dl_say(why, len, ", ... (%zu more)", i);
	dl_hop(why, len, n == 0, d->found_sem);
	dl_who(why, len, d->target, d->target);
}

/* Start a search at s (marked, so it is never queued as reached). */
static void dl_start(struct sm *sm, struct dl_search *d, struct sm_session *s)
{
	memset(d, 0, sizeof *d);
	d->target = s;
	sm->dl_search++;
	s->dl_seen = sm->dl_search;
	sm->ctr.deadlock_checks++;
}

/*
 * Would s, starting to wait for wants, close a cycle? True with the cycle
 * told in why (the down is then answered DEADLOCK, not queued).
 */
bool deadlock_new(struct sm *sm, struct sm_session *s,
    const struct sm_want *wants, unsigned int k, char *why, size_t len)
{
	struct dl_search d;
	struct sm_wait *newest;
	unsigned int i;

	if (s->nholds == 0 && s->parent == NULL)
		return false;	/* nobody can be waiting for s */
	dl_start(sm, &d, s);
	for (i = 0; i < k && d.found == NULL && !d.cut; i++)
		dl_edges(sm, &d, s, NULL, wants[i].sem, wants[i].n);
	dl_walk(sm, &d);
	if (d.found == NULL)
		return false;
	dl_cycle(sm, &d, why, len, &newest);
	sm->ctr.deadlocks++;
	return true;
}

/*
 * Settling: search from a session granted a hold while it waits for
 * something else (effect_deadlock); on a cycle, the newest waiter of it is
 * answered DEADLOCK.
 */
void deadlock_check(struct sm *sm, uint64_t session_id)
{
	struct dl_search d;
	struct sm_session *s = session_find(sm, session_id);
	struct sm_wait *newest;
	char why[SM_DEADLOCK_MSG];
	unsigned int i;

	if (s == NULL || !family_waits(s) || s->nholds == 0)
		return;
	dl_start(sm, &d, s);
	dl_expand(sm, &d, s);
	dl_walk(sm, &d);
	if (d.found == NULL)
		return;
	dl_cycle(sm, &d, why, sizeof why, &newest);
	SM_ASSERT(newest != NULL);	/* every edge here is a waiter's */
	sm->ctr.deadlocks++;
	for (i = 0; i < newest->nm; i++)
		watch_deadlock(sm, newest->m[i].sem, newest->session,
		    newest->req.request_id, newest->m[i].n, why);
	wait_cancel(sm, newest, SEMD__CODE__DEADLOCK, why, NULL);
}
