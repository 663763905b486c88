/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_ops_name.c - the operations on names: Create, Info, List,
 * Delete, SetLimit and SetRate (dispatched by sm_ops.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/*
 * Would nobody but pr be left out if pr took sem over: is every holder and
 * waiter of it pr's?
 */
static bool sem_used_only_by(const struct sm_sem *sem,
    const struct sm_principal *pr)
{
	const struct list_head *pos;

	list_for_each(pos, &sem->holders)
		if (list_entry(pos, struct sm_hold, sem_entry)->ident->pr != pr)
			return false;
	list_for_each(pos, &sem->waiters)
		if (list_entry(pos, struct sm_member, sem_entry)->wait->session->ident->pr != pr)
			return false;
	return true;
}

/* Create: a named semaphore with a limit and a mode. */
void op_create(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Create *cr = req->create;
	uint64_t id = req->id;
	struct sm_principal *pr = c->pr;
	struct sm_sem *sem;
	uint32_t period = cr->rate_period_ms, burst = cr->burst;
	int mode = cr->mode;

	if (!sem_name_ok(sm, c, id, cr->name))
		return;
	/* A rate without a limit: a rate-only name. */
	if (cr->rate != 0 && cr->limit == 0 && mode == SEMD__MODE__OWNED)
		mode = SEMD__MODE__RATE;
	if (mode != SEMD__MODE__OWNED && mode != SEMD__MODE__SIGNAL &&
	    mode != SEMD__MODE__RATE) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "unknown mode %d", mode);
		return;
	}
	if (mode == SEMD__MODE__RATE ? (cr->rate == 0 || cr->limit != 0) :
	    !limit_ok(sm, c, id, cr->limit)) {
		if (mode == SEMD__MODE__RATE)
			reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
			    cr->rate == 0 ? "a rate-only semaphore needs a rate" :
			    "a rate-only semaphore has no limit (a limit and a rate make an owned one)");
		return;
	}
	if (cr->rate != 0 && mode == SEMD__MODE__SIGNAL) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "a signal-mode semaphore cannot have a rate");
		return;
	}
	if (cr->rate != 0 && !rate_args_ok(sm, c, id, cr->rate, &period, &burst))
		return;
	if (!share_args_ok(sm, c, id, cr, mode))
		return;
	if (cr->max_waiters > SM_LIMIT_MAX) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "max-waiters %u is out of range (0 to %u)", cr->max_waiters,
		    SM_LIMIT_MAX);
		return;
	}
	if (cr->initial_set && (cr->mode != SEMD__MODE__SIGNAL ||
	    cr->initial > cr->limit)) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    cr->mode != SEMD__MODE__SIGNAL ?
		    "initial is for signal-mode semaphores (an owned one starts with every permit free)" :
		    "initial %u is more than the limit %u", cr->initial, cr->limit);
		return;
	}
	sem = sem_find(sm, cr->name);
	if (sem != NULL) {
		if (!cr->if_not_exists) {
			reply_err(sm, c, id, SEMD__CODE__EXISTS,
			    "semaphore %s exists (limit %u)", sem->name,
			    sem->limit);
			return;
		}
		/*
		 * Explicitly wanted now: an auto-created name stays, owned and
		 * counted - by the caller only if it is an administrator or
		 * nobody else uses the name (no one takes over a name others
		 * hold); otherwise it stays as it is and the answer is OK.
		 */
		if (sem->auto_created && (sem_manager(sm, c, sem) ||
		    sem_used_only_by(sem, pr))) {
			if (!principal_room(sm, c, id, pr, SM_LIMIT_SEMAPHORES, 1))
				return;
			sem->auto_created = false;
			sem_set_owner(sem, pr);
		}
		reply_ok(sm, c, id);
		return;
	}
	if ((sem = sem_create(sm, c, id, cr->name, cr->limit, mode, pr)) == NULL)
		return;
	if ((cr->rate != 0 && !rate_attach(sm, sem, cr->rate, period, burst)) ||
	    (cr->share != SEMD__SHARE_BY__SHARE_NONE &&
	    !share_attach(sm, sem, cr->share, cr->weights, cr->n_weights))) {
		sem_free(sm, sem);
		reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory");
		return;
	}
	if (cr->initial_set)
		sema_adjust(&sem->sem, (long)cr->initial - (long)cr->limit);
	sem->max_waiters = cr->max_waiters;
	sem_set_owner(sem, pr);
	watch_limit(sm, sem, SEMD__EVENT_KIND__EVENT_CREATE, c);
	reply_ok(sm, c, id);
}

/* Is the waiter with arrival number seq in sem's line? */
static bool waiter_queued(const struct sm_sem *sem, uint64_t seq)
{
	const struct list_head *pos;

	list_for_each(pos, &sem->waiters)
		if (list_entry(pos, struct sm_member, sem_entry)->wait->seq == seq)
			return true;
	return false;
}

/* A histogram for a reply (its buckets are h's, not copied). */
static void info_hist(Semd__Histogram *out, struct sm_hist *h)
{
	semd__histogram__init(out);
	out->sum_ms = h->sum_ms;
	out->count = h->count;
	if (h->count > 0) {
		out->n_buckets = SM_HIST_BUCKETS;
		out->buckets = h->bucket;
	}
}

/* Bytes a Holder or Waiter of ident takes in a reply, at most. */
static size_t info_entry_size(const struct sm_ident *id)
{
	/*
	 * Eight varint fields of at most 11 bytes, three strings with theirs,
	 * a replace key and a group (64 bytes, or a principal's name).
	 */
	return 8 * 11 + 5 * 5 + strlen(id->client_name) + strlen(id->host) +
	    2 * id->pr->len + SM_RKEY_MAX + 64 + 10;
}

/*
 * Info: a semaphore's limit and counts, and one page of its holders (grant
 * order) and waiters (queue order): at most max of each, after the cursors,
 * and no more than cfg.max_reply bytes of them, so no reply ever outgrows a
 * client's output limit however long the queue. The caller sees every holder
 * and waiter if it may manage the name, else only its own (the counts stay
 * whole). next_permit / next_waiter are set when more follow.
 */
void op_info(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Info *in = req->info;
	uint64_t id = req->id;
	Semd__InfoReply ir = SEMD__INFO_REPLY__INIT;
	Semd__Histogram hw, hh;
	Semd__Holder **hp = NULL;
	Semd__Waiter **wp = NULL, *e;
	struct list_head *pos;
	struct sm_member *m;
	struct sm_sem *sem;
	struct sm_hold *h;
	struct sm_wait *w;
	size_t max = page_max(in->max, SM_INFO_PAGE, SM_INFO_PAGE_MAX);
	size_t nh = 0, nw = 0, budget;
	bool all, skip, by_place;

	if ((sem = sem_need(sm, c, id, in->name)) == NULL)
		return;
	rate_refill(sm, sem);	/* may grant (tokens due): before the lists */
	all = sem_manager(sm, c, sem);
	budget = sm->cfg.max_reply / 2;		/* each list gets half */
	if ((hp = reply_page(sm, c, id, max, sizeof **hp)) == NULL ||
	    (wp = reply_page(sm, c, id, max, sizeof **wp)) == NULL)
		goto out;
	list_for_each(pos, &sem->holders) {
		h = list_entry(pos, struct sm_hold, sem_entry);
		if (h->permit_id <= in->after_permit ||
		    (!all && h->ident->pr != c->pr))
			continue;
		if (nh == max || (nh > 0 && info_entry_size(h->ident) > budget)) {
			ir.next_permit = hp[nh - 1]->permit_id;
			break;
		}
		budget -= info_entry_size(h->ident) < budget ?
		    info_entry_size(h->ident) : budget;
		reply_holder(sm, hp[nh++], h);
	}
	budget = sm->cfg.max_reply / 2;
	/*
	 * The waiters after the cursor's in line (with priorities the line is
	 * not in arrival order); when the cursor's has left, those that came
	 * after it.
	 */
	skip = by_place = in->after_waiter != 0 &&
	    waiter_queued(sem, in->after_waiter);
	list_for_each(pos, &sem->waiters) {
		m = list_entry(pos, struct sm_member, sem_entry);
		w = m->wait;
		if (skip) {
			skip = w->seq != in->after_waiter;
			continue;
		}
		if ((!by_place && w->seq <= in->after_waiter) ||
		    (!all && w->session->ident->pr != c->pr))
			continue;
		if (nw == max || (nw > 0 && info_entry_size(w->session->ident) > budget)) {
			ir.next_waiter = wp[nw - 1]->seq;
			break;
		}
		budget -= info_entry_size(w->session->ident) < budget ?
		    info_entry_size(w->session->ident) : budget;
		e = wp[nw++];
		semd__waiter__init(e);
		e->request_id = w->req.request_id;
		e->n = m->n;
		e->client_name = w->session->ident->client_name;
		e->host = w->session->ident->host;
		e->pid = w->session->ident->pid;
		e->principal = w->session->ident->pr->name;
		e->since_ms = w->since_wall;
		e->deadline_ms = w->deadline.idx != SIZE_MAX ?
		    sm_wall(sm, w->deadline.when) : 0;
		e->seq = w->seq;
		e->detached = w->session->client == NULL;
		if (w->rkey != NULL)
			e->replace = w->rkey;
		e->priority = w->prio;
		if (w->grp != NULL)
			e->group = (char *)share_group_label(w->grp);
	}
	ir.name = sem->name;
	ir.limit = sem->limit;
	ir.available = rate_available(sm, sem);
	ir.mode = sem->mode;
	ir.auto_created = sem->auto_created;
	ir.n_holders = nh;
	ir.holders = hp;
	ir.n_waiters = nw;
	ir.waiters = wp;
	ir.holders_total = sem->nholders;
	ir.waiters_total = sem->nwaiters;
	ir.last_token = sem->sem.token;
	ir.max_waiters = sem->max_waiters;
	if (sem->hists != NULL) {
		info_hist(&hw, &sem->hists->wait);
		info_hist(&hh, &sem->hists->hold);
		ir.wait = &hw;
		ir.hold = &hh;
	}
	if (sem->share != NULL) {
		ir.share = share_by(sem);
		if ((ir.groups = share_info(sm, sem, &ir.n_groups)) == NULL) {
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "out of memory");
			goto out;
		}
	}
	if (sem->rate != NULL) {
		ir.rate = sem->rate->rate;
		ir.rate_period_ms = sem->rate->period_ms;
		ir.burst = sem->rate->burst;
		ir.tokens_nano = rate_nano(sm, sem);
		ir.next_token_ms = rate_next_ms(sm, sem);
	}
	REPLY_BODY_REV(sm, c, id, INFO, info, &ir);
out:
	free(hp);
	free(wp);
	free(ir.groups);
}

/*
 * The first key greater than every name beginning with name[0..len), in
 * key (len + 1 bytes); false when there is none (all bytes 0xff).
 */
static bool list_past_prefix(const char *name, size_t len, char *key)
{
	while (len > 0 && (unsigned char)name[len - 1] == 0xff)
		len--;
	if (len == 0)
		return false;
	memcpy(key, name, len);
	key[len - 1] = (char)((unsigned char)name[len - 1] + 1);
	key[len] = '\0';
	return true;
}

/*
 * List: names with a prefix, in byte order, strictly after a cursor. Besides
 * the hash table the names live in an ordered index (daemon/state/ordidx.h, a
 * B+tree of about 10 bytes a name), and the names with a prefix are one run
 * of it: a page seeks to the later of prefix and after, then walks forward
 * while the names keep the prefix: O(log N + max) per page, however many
 * other names there are (a page of 100 at a million names: about 30 us,
 * round trip included, where scanning the table took about 90 ms). One name
 * found past a full page sets next (to the last name listed).
 *
 * With a visibility hook (the daemon's ACL) only the names the caller may
 * inspect are listed, and next is always one of them. A hidden name whose
 * hook answer covers a whole subtree (a protected prefix) is stepped over
 * with one seek past that subtree; others one by one. A page visits at most
 * SM_LIST_HIDDEN_MAX hidden names: past that it ends at its last entry (next
 * set, the usual cursor), or with no entry yet is answered
 * RESOURCE_EXHAUSTED, so no client makes the loop scan without bound.
 */
void op_list(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__List *l = req->list;
	uint64_t id = req->id;
	Semd__ListReply lr = SEMD__LIST_REPLY__INIT;
	Semd__Summary **sp, *e;
	size_t max = page_max(l->max, SM_LIST_DEFAULT, SM_LIST_MAX), i = 0;
	size_t plen = strlen(l->prefix), hidden = 0, skip;
	char key[SM_NAME_MAX + 1];
	struct ordidx_iter it;
	struct sm_sem *sem;

	if ((sp = reply_page(sm, c, id, max, sizeof **sp)) == NULL)
		return;
	/* Every name with the prefix is >= prefix. */
	if (strcmp(l->after, l->prefix) >= 0)
		ordidx_seek(&sm->byname, &it, l->after, false);
	else
		ordidx_seek(&sm->byname, &it, l->prefix, true);
	while ((sem = ordidx_next(&it)) != NULL &&
	    strncmp(sem->name, l->prefix, plen) == 0) {
		skip = 0;
		if (sm->visible != NULL && !sm->visible(sm->visible_arg,
		    c->conn, sem->name, sem->len, &skip)) {
			if (++hidden > SM_LIST_HIDDEN_MAX)
				break;
			if (skip == 0 || skip > sem->len)
				continue;
			if (!list_past_prefix(sem->name, skip, key))
				break;
			ordidx_seek(&sm->byname, &it, key, true);
			continue;
		}
		if (i == max) {
			lr.next = sp[max - 1]->name;
			break;
		}
		e = sp[i++];
		semd__summary__init(e);
		e->name = sem->name;
		e->limit = sem->limit;
		e->available = sema_count(&sem->sem);
		e->mode = sem->mode;
		e->holders = sem->nholders;
		e->waiters = sem->nwaiters;
		if (sem->rate != NULL) {
			e->rate = sem->rate->rate;
			e->rate_period_ms = sem->rate->period_ms;
		}
	}
	if (hidden > SM_LIST_HIDDEN_MAX) {
		if (i == 0) {
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "more than %d names you may not inspect under this "
			    "prefix; list a narrower prefix",
			    SM_LIST_HIDDEN_MAX);
			goto out;
		}
		lr.next = sp[i - 1]->name;
	}
	lr.n_entries = i;
	lr.entries = sp;
	REPLY_BODY_REV(sm, c, id, LIST, list, &lr);
out:
	free(sp);
}

/* Delete: remove a semaphore; busy ones only with force. */
void op_delete(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__Delete *dl = req->delete_;
	uint64_t id = req->id;
	struct sm_sem *sem;
	struct sm_member *m;
	struct sm_hold *h;

	if ((sem = sem_need_manager(sm, c, id, dl->name, "delete")) == NULL)
		return;
	if ((sem->nholders > 0 || sem->nwaiters > 0) && !dl->force) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "%s is in use (%u holders, %u waiters): delete it with force "
		    "(semctl delete --force)",
		    sem->name, sem->nholders, sem->nwaiters);
		return;
	}
	if (sem->nholders > 0 || sem->nwaiters > 0)
		sm_note(sm, c, "%s deleted %s by force (%u holders, %u waiters)",
		    c->pr->name, sem->name, sem->nholders, sem->nwaiters);
	/*
	 * Cancel from the tail: taking the last waiter off never lets anyone
	 * in front of it through, so nobody is granted a dying semaphore.
	 */
	while (!list_empty(&sem->waiters)) {
		m = list_entry(sem->waiters.prev, struct sm_member, sem_entry);
		wait_cancel(sm, m->wait, SEMD__CODE__CANCELLED,
		    "semaphore deleted", sem);
	}
	while (!list_empty(&sem->holders)) {
		h = list_first_entry(&sem->holders, struct sm_hold, sem_entry);
		notice_lost(sm, h, SEMD__CODE__CANCELLED, "semaphore deleted");
		hold_release(sm, h, false, "semaphore deleted");
	}
	watch_limit(sm, sem, SEMD__EVENT_KIND__EVENT_DELETE, c);
	sem_free(sm, sem);
	reply_ok(sm, c, id);
}

/* The first waiter of sem asking for more than its limit, or NULL. */
static struct sm_member *waiter_over_limit(const struct sm_sem *sem)
{
	struct list_head *pos;
	struct sm_member *m;

	list_for_each(pos, &sem->waiters) {
		m = list_entry(pos, struct sm_member, sem_entry);
		if (m->n > sem->limit)
			return m;
	}
	return NULL;
}

/* SetLimit: grow or shrink live; shrinking revokes nobody. */
void op_set_limit(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__SetLimit *sl = req->set_limit;
	uint64_t id = req->id;
	struct sm_sem *sem;
	struct sm_member *m;
	long delta;

	if ((sem = sem_need_manager(sm, c, id, sl->name,
	    "change the limit of")) == NULL)
		return;
	if (sem_mode_refused(sm, c, id, sem, SEMD__MODE__RATE,
	    SEMD__CODE__INVALID_ARGUMENT,
	    "it has no limit (set-rate changes its rate)") ||
	    !limit_ok(sm, c, id, sl->limit))
		return;
	delta = (long)sl->limit - (long)sem->limit;
	sem->limit = sl->limit;
	sem->auto_created = false;
	/*
	 * The new count first: cancelling a head waiter below lets the ones
	 * behind it proceed, and they must be measured against the new limit,
	 * not the old one. (Growing cancels nobody: no waiter asks for more
	 * than the old limit.)
	 */
	sema_adjust(&sem->sem, delta);
	/*
	 * A waiter wanting more than the new limit would block the queue.
	 * Cancelling one may grant (and free) those behind it: each search
	 * starts again from the head, holding no pointer across the cancel.
	 */
	while ((m = waiter_over_limit(sem)) != NULL)
		wait_cancel(sm, m->wait, SEMD__CODE__INVALID_ARGUMENT,
		    "the limit shrank below the permits asked for", sem);
	watch_limit(sm, sem, SEMD__EVENT_KIND__EVENT_LIMIT, c);
	reply_ok(sm, c, id);
}

/*
 * Cancel the waiters of sem wanting more than max tokens (the burst shrank),
 * restarting after each: a cancel can grant and free later ones.
 */
static void rate_cancel_over(struct sm *sm, struct sm_sem *sem, uint32_t max)
{
	struct list_head *pos;
	struct sm_member *m;
	bool again = true;

	while (again) {
		again = false;
		list_for_each(pos, &sem->waiters) {
			m = list_entry(pos, struct sm_member, sem_entry);
			if (m->n > max) {
				wait_cancel(sm, m->wait, SEMD__CODE__INVALID_ARGUMENT,
				    "the burst shrank below the tokens asked for", sem);
				again = true;
				break;
			}
		}
	}
}

/* SetRate: change a name's bucket live (its creator, administrators). */
void op_set_rate(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	const Semd__SetRate *sr = req->set_rate;
	uint64_t id = req->id;
	struct list_head *pos, *prev;
	struct sm_member *m;
	struct sm_sem *sem;
	struct sm_rate *r;
	uint32_t period = sr->rate_period_ms, burst = sr->burst;
	uint64_t whole;

	if ((sem = sem_need_manager(sm, c, id, sr->name,
	    "change the rate of")) == NULL)
		return;
	if (sem_mode_refused(sm, c, id, sem, SEMD__MODE__SIGNAL,
	    SEMD__CODE__INVALID_ARGUMENT, "it cannot have a rate") ||
	    (sr->rate == 0 && sem_mode_refused(sm, c, id, sem,
	    SEMD__MODE__RATE, SEMD__CODE__INVALID_ARGUMENT,
	    "it needs a rate (delete it instead)")) ||
	    (sr->rate != 0 &&
	    !rate_args_ok(sm, c, id, sr->rate, &period, &burst)))
		return;
	rate_refill(sm, sem);			/* at the old rate, up to now */
	sem->auto_created = false;
	if (sr->rate == 0) {
		if (sem->rate != NULL) {
			rate_detach(sm, sem);
			/* From the tail: only the first in line can be granted. */
			for (pos = sem->waiters.prev; pos != &sem->waiters; pos = prev) {
				prev = pos->prev;
				m = list_entry(pos, struct sm_member, sem_entry);
				if (!member_gated(m->wait, sem))
					sema_gate(&sem->sem, &m->w, false);
			}
			/* A multi-name waiter first in line may need no more. */
			if ((m = sem_first_in_line(sem)) != NULL)
				effect_offer(sm, m->wait);
		}
		watch_limit(sm, sem, SEMD__EVENT_KIND__EVENT_RATE, c);
		reply_ok(sm, c, id);
		return;
	}
	if (sem->rate == NULL) {
		if (!rate_attach(sm, sem, sr->rate, period, burst)) {
			reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
			    "out of memory");
			return;
		}
		list_for_each(pos, &sem->waiters) {
			m = list_entry(pos, struct sm_member, sem_entry);
			sema_gate(&sem->sem, &m->w, true);	/* grants nobody */
		}
	} else {
		r = sem->rate;
		/* The fraction of a token carries over, in the new units. */
		r->frac = r->frac * period / r->period_ms;
		r->rate = sr->rate;
		r->period_ms = period;
		r->burst = burst;
		whole = rate_whole(sem);
		if (whole > burst) {
			if (sem->mode == SEMD__MODE__RATE)
				sema_adjust(&sem->sem, (long)burst - (long)whole);
			else
				r->tokens = burst;
		}
		if (rate_whole(sem) >= burst)
			r->frac = 0;
	}
	rate_cancel_over(sm, sem, burst);
	effect_rate(sm, sem);
	watch_limit(sm, sem, SEMD__EVENT_KIND__EVENT_RATE, c);
	reply_ok(sm, c, id);
}
