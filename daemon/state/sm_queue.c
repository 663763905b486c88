/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_queue.c - queue policies of a name: a bound on its
 * waiters (max_waiters, set by Create or SetQueue) and replace keys (a
 * Down's replace: "latest wins", GitHub Actions' concurrency groups).
 *
 * A bound: a down that would wait on a name whose queue holds max_waiters
 * downs already (parked ones too: they keep their places) is answered
 * QUEUE_FULL at once; a trydown is not concerned (it never waits), and a
 * down granted at once neither. Lowering the bound below the waiters there
 * are cancels nobody: only new waiters are refused until the queue is
 * shorter.
 *
 * A replace key: a down with a key, once it is granted or queued, cancels
 * the waiting down of the same principal with the same key on the same
 * name, answered REPLACED (the newer one takes no place of the older: it
 * queues at the tail like any arrival, which keeps the one arrival order
 * sm_wait.c's no-deadlock rule needs). Keys are the principal's own: no
 * one else can cancel its waiters by naming its key. A down that replaces
 * one is not refused by the bound (the queue does not grow). There is at
 * most one waiter per (name, principal, key), so the search stops at the
 * first; it looks at the name's waiters in queue order, O(waiters), and
 * only for a down with a key.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* Is key a replace key: 1 to SM_RKEY_MAX printable ASCII bytes, no space? */
bool queue_rkey_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *key)
{
	size_t i, len = strlen(key);

	for (i = 0; i < len && i <= SM_RKEY_MAX; i++)
		if (key[i] <= ' ' || key[i] > '~')
			break;
	if (len >= 1 && len <= SM_RKEY_MAX && i == len)
		return true;
	reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
	    "a replace key is 1 to %d printable characters without spaces",
	    SM_RKEY_MAX);
	return false;
}

/* The waiter of s's principal with replace key key on sem, or NULL. */
struct sm_wait *queue_replaced(const struct sm_sem *sem,
    const struct sm_session *s, const char *key)
{
	const struct list_head *pos;
	struct sm_wait *w;

	list_for_each(pos, &sem->waiters) {
		w = list_entry(pos, struct sm_member, sem_entry)->wait;
		if (w->rkey != NULL && w->session->ident->pr == s->ident->pr &&
		    strcmp(w->rkey, key) == 0)
			return w;
	}
	return NULL;
}

/*
 * May one more down wait on sem (old: the waiter it replaces, or NULL)?
 * Answers QUEUE_FULL when not.
 */
bool queue_room(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_sem *sem, const struct sm_wait *old)
{
	uint32_t n = sem->nwaiters;

	if (old != NULL && old->m[0].sem == sem)
		n--;
	if (sem->max_waiters == 0 || n < sem->max_waiters)
		return true;
	reply_err(sm, c, id, SEMD__CODE__QUEUE_FULL,
	    "%s: %u downs wait, its queue holds at most %u", sem->name,
	    sem->nwaiters, sem->max_waiters);
	return false;
}

/* Give waiter w the replace key key; false when out of memory. */
bool queue_set_rkey(struct sm *sm, struct sm_wait *w, const char *key)
{
	size_t len = strlen(key);

	SM_ASSERT(w->rkey == NULL);
	if ((w->rkey = sm_alloc(sm, len + 1)) == NULL)
		return false;
	memcpy(w->rkey, key, len + 1);
	return true;
}

/* Cancel old, replaced by request by: answered REPLACED. */
void queue_replace(struct sm *sm, struct sm_wait *old, uint64_t by,
    struct sm_sem *keep)
{
	char why[80];

	snprintf(why, sizeof why, "replaced by request %" PRIu64
	    " with the same key", by);
	wait_cancel(sm, old, SEMD__CODE__REPLACED, why, keep);
}

/* SetQueue: a name's queue policies (the same owners as SetLimit). */
void op_set_queue(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__SetQueue *sq = req->set_queue;
	struct sm_sem *sem;

	if ((sem = sem_need_manager(sm, c, req->id, sq->name,
	    "change the queue of")) == NULL)
		return;
	if (sq->max_waiters > SM_LIMIT_MAX) {
		reply_err(sm, c, req->id, SEMD__CODE__INVALID_ARGUMENT,
		    "max-waiters %u is out of range (0 to %u)", sq->max_waiters,
		    SM_LIMIT_MAX);
		return;
	}
	sem->max_waiters = sq->max_waiters;
	sem->auto_created = false;
	watch_limit(sm, sem, SEMD__EVENT_KIND__EVENT_QUEUE, c);
	reply_ok(sm, c, req->id);
}

/* --- the snapshot's section (tag 11) ------------------------------------ */

static bool has_rkey(const struct sm_wait *w) { return w->rkey != NULL; }
static bool is_single(const struct sm_wait *w) { return !w->multi; }
static bool has_prio(const struct sm_wait *w) { return w->prio != 0; }

/*
 * The waiting downs keep says yes to (NULL: all), each once (a DownMulti at
 * its first name), in arrival order, *n of them; NULL when out of memory.
 */
static struct sm_wait **waits_sorted(const struct sm *sm,
    bool (*keep)(const struct sm_wait *), size_t *n)
{
	struct ordidx_iter it;
	const struct list_head *pos;
	const struct sm_sem *sem;
	struct sm_wait **wv, *w;

	*n = 0;
	if ((wv = ptr_array(sm->ctr.waiters + 1)) == NULL)
		return NULL;
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL)
		list_for_each(pos, &sem->waiters) {
			w = list_entry(pos, struct sm_member, sem_entry)->wait;
			if (w->m[0].sem == sem && (keep == NULL || keep(w)) &&
			    *n <= sm->ctr.waiters)
				wv[(*n)++] = w;
		}
	ptr_sort(wv, *n, sm_wait_cmp);
	return wv;
}

/*
 * The queue policies: the names with a bound (count, then name and bound
 * each, in name order), then the waiters with a key (count, then arrival
 * number and key each, in arrival order).
 */
bool queue_snap_write(struct sm_batch *b, const struct sm *sm)
{
	struct ordidx_iter it;
	const struct sm_sem *sem;
	struct sm_wait **wv;
	uint64_t n = 0;
	size_t i, nw = 0;
	size_t len;

	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL)
		n += sem->max_waiters != 0;
	bytes_int(b, n, 4);
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL) {
		if (sem->max_waiters == 0)
			continue;
		bytes_int(b, sem->len, 1);
		bytes_put(b, sem->name, sem->len);
		bytes_int(b, sem->max_waiters, 4);
	}
	if ((wv = waits_sorted(sm, has_rkey, &nw)) == NULL)
		return false;
	bytes_int(b, nw, 4);
	for (i = 0; i < nw; i++) {
		len = strlen(wv[i]->rkey);
		bytes_int(b, wv[i]->seq, 8);
		bytes_int(b, len, 1);
		bytes_put(b, wv[i]->rkey, len);
	}
	free(wv);
	return true;
}

/* Read the policies back onto the names and waiters restored. */
bool queue_snap_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen)
{
	char name[SM_NAME_MAX + 1], key[SM_RKEY_MAX + 1];
	struct sm_sem *sem;
	struct sm_wait **wv;
	const uint8_t *p;
	uint64_t i, n, seq, prev = 0;
	size_t j = 0, nw = 0, len;
	bool ok = false;

	n = rbuf_int(r, 4);
	for (i = 0; i < n && !r->bad; i++) {
		rbuf_str(r, 1, name, SM_NAME_MAX);
		if (r->bad)
			return false;
		sem = sem_find(sm, name);
		seq = rbuf_int(r, 4);
		if (sem == NULL || seq == 0 || seq > SM_LIMIT_MAX) {
			snprintf(err, errlen, "queue policy of %s: no such name or a bad bound",
			    name);
			return false;
		}
		sem->max_waiters = (uint32_t)seq;
	}
	if (r->bad || (wv = waits_sorted(sm, is_single, &nw)) == NULL)
		return false;
	n = rbuf_int(r, 4);
	for (i = 0; i < n && !r->bad; i++) {
		seq = rbuf_int(r, 8);
		len = (size_t)rbuf_int(r, 1);
		if ((p = rbuf_take(r, len)) == NULL)
			goto out;
		memcpy(key, p, len < sizeof key ? len : sizeof key - 1);
		key[len < sizeof key ? len : sizeof key - 1] = '\0';
		while (j < nw && wv[j]->seq < seq)
			j++;
		if (seq <= prev || j == nw || wv[j]->seq != seq ||
		    len == 0 || len > SM_RKEY_MAX || strlen(key) != len ||
		    queue_replaced(wv[j]->m[0].sem, wv[j]->session, key) != NULL) {
			snprintf(err, errlen, "replace key of waiter %" PRIu64 ": no such waiter or a bad key",
			    seq);
			goto out;
		}
		if (!queue_set_rkey(sm, wv[j], key)) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		prev = seq;
	}
	ok = !r->bad;
out:
	free(wv);
	return ok;
}

/* --- the snapshot's section (tag 13) ------------------------------------ */

/*
 * The fair shares (sm_share.c reads them), then the lines of the names
 * with shares in tag order: their waiters were queued again in arrival
 * order.
 */
bool shares_section_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen)
{
	struct ordidx_iter it;
	struct sm_sem *sem;

	if (!share_snap_read(sm, r, err, errlen))
		return false;
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL)
		if (sem->share != NULL)
			wait_sort(sem);
	return true;
}

/* --- the snapshot's section (tag 10) ------------------------------------ */

/*
 * The replies of the ops and codes the fixed layout has no room for
 * (SNAP_V3_NOPS, SNAP_V3_NCODES): the numbers of ops and codes, then the
 * count of each op past the fixed ones, then the replies of every op and
 * code not in the fixed layout, op by op.
 */
bool counters_snap_write(struct sm_batch *b, const struct sm *sm)
{
	unsigned int i, j;

	bytes_int(b, SM_NOPS, 4);
	bytes_int(b, SM_NCODES, 4);
	for (i = SNAP_V3_NOPS; i < SM_NOPS; i++)
		bytes_int(b, sm->ctr.ops[i], 8);
	for (i = 0; i < SM_NOPS; i++)
		for (j = 0; j < SM_NCODES; j++)
			if (i >= SNAP_V3_NOPS || j >= SNAP_V3_NCODES)
				bytes_int(b, sm->ctr.replies[i][j], 8);
	return true;
}

/* Read them back: a snapshot of a semd with more ops or codes is refused. */
bool counters_snap_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen)
{
	uint64_t nops = rbuf_int(r, 4), ncodes = rbuf_int(r, 4);
	unsigned int i, j;

	if (r->bad || nops < SNAP_V3_NOPS || nops > SM_NOPS ||
	    ncodes < SNAP_V3_NCODES || ncodes > SM_NCODES) {
		snprintf(err, errlen, "counts of %" PRIu64 " ops and %" PRIu64
		    " codes (this semd has %d and %d)", nops, ncodes, SM_NOPS,
		    SM_NCODES);
		return false;
	}
	for (i = SNAP_V3_NOPS; i < nops; i++)
		sm->ctr.ops[i] = rbuf_int(r, 8);
	for (i = 0; i < nops; i++)
		for (j = 0; j < ncodes; j++)
			if (i >= SNAP_V3_NOPS || j >= SNAP_V3_NCODES)
				sm->ctr.replies[i][j] = rbuf_int(r, 8);
	return !r->bad;
}

/* --- the snapshot's section (tag 12) ------------------------------------ */

/*
 * Priorities: the waiters of a class other than the default (count, then
 * arrival number and priority each, in arrival order). Read back, their
 * keys are set and the lines they are in put in order again (the waiters
 * were queued in arrival order).
 */
bool prio_snap_write(struct sm_batch *b, const struct sm *sm)
{
	struct sm_wait **wv;
	size_t i, nw = 0;

	if ((wv = waits_sorted(sm, has_prio, &nw)) == NULL)
		return false;
	bytes_int(b, nw, 4);
	for (i = 0; i < nw; i++) {
		bytes_int(b, wv[i]->seq, 8);
		bytes_int(b, (uint64_t)wv[i]->prio & 0xff, 1);
	}
	free(wv);
	return true;
}

bool prio_snap_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen)
{
	struct ordidx_iter it;
	const struct list_head *pos;
	struct sm_sem *sem;
	struct sm_wait **wv, *w;
	uint64_t i, n, seq, prev = 0;
	size_t j = 0, k, nw = 0;
	int prio;
	bool ok = false;

	if ((wv = waits_sorted(sm, NULL, &nw)) == NULL)
		return false;
	n = rbuf_int(r, 4);
	for (i = 0; i < n && !r->bad; i++) {
		seq = rbuf_int(r, 8);
		prio = (int)rbuf_int(r, 1);
		if (prio > 127)
			prio -= 256;	/* a byte, two's complement */
		while (j < nw && wv[j]->seq < seq)
			j++;
		if (r->bad || seq <= prev || j == nw || wv[j]->seq != seq ||
		    prio == 0 || prio < SM_PRIO_MIN || prio > SM_PRIO_MAX) {
			snprintf(err, errlen, "priority of waiter %" PRIu64
			    ": no such waiter or out of range", seq);
			goto out;
		}
		w = wv[j];
		w->prio = (int16_t)prio;
		w->key = wait_key(w->since_ms, prio);
		prev = seq;
	}
	ok = !r->bad;
	/* The lines with a waiter of another class, in order again. */
	if (ok && n > 0) {
		ordidx_first(&sm->byname, &it);
		while ((sem = ordidx_next(&it)) != NULL) {
			k = 0;
			list_for_each(pos, &sem->waiters)
				k += list_entry(pos, struct sm_member,
				    sem_entry)->wait->prio != 0;
			if (k > 0)
				wait_sort(sem);
		}
	}
out:
	free(wv);
	return ok;
}
