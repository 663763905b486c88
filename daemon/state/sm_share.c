/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_share.c - fair shares of a name between groups (by
 * principal, or by a down's group key): weighted fair queueing at hand-off.
 *
 * Start-time fair queueing (Goyal, Vin and Cheng, 1996) over the one
 * ordered queue the name already has (sm_wait.c: (key, seq) order). Each
 * group g has a finish tag F_g and a weight w_g; the name has a virtual
 * time V, the tag of the last grant. A down of group g gets the tag
 * S = max(V, F_g), its key in the queue, and F_g becomes S + n / w_g (in
 * 1/SHARE_ONE parts of a permit, rounded up: integers, so every replica
 * computes the same). The queue is served in tag order by the usual
 * hand-off - the first in line blocks everyone behind it - so:
 *  - while several groups wait, each is granted permits in proportion to
 *    its weight (a group's tags advance by n / w_g per request);
 *  - FIFO inside a group (its tags only grow);
 *  - work-conserving: a group that does not ask lends its share to the
 *    others; asking again, it gets the tag V - the next hand-off - and its
 *    share back from then on (nothing is revoked; a group that went idle
 *    starts again from V, its past neither credited nor charged).
 * Tags are fixed when a down arrives, so the order never changes while it
 * waits and a hand-off costs what it costs on any name.
 *
 * Groups are created when first used and freed when they hold and wait for
 * nothing, unless the name lists their weight. Held and waiting are counts
 * kept with the holds and waiters (sm_sem.c, sm_wait.c call in).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* A group: its name and weight, tag and counts. */
struct sm_group {
	struct list_head	entry;		/* share->groups, by name */
	uint64_t		finish;		/* F_g: its last request's finish tag */
	uint32_t		weight;		/* 1..SHARE_WEIGHT_MAX */
	uint32_t		held;		/* permits held */
	uint32_t		waiting;	/* downs waiting */
	bool			listed;		/* a weight of the name's */
	uint16_t		len;		/* a key's, or a principal's */
	char			name[];
};

/* The shares of a name. */
struct sm_share {
	uint64_t		vtime;		/* V: the tag of the last grant */
	struct list_head	groups;		/* struct sm_group, by name */
	uint32_t		ngroups;
	uint8_t			by;		/* Semd__ShareBy */
};

/* A group's name: its key, or its principal's. */
const char *share_group_label(const struct sm_group *g)
{
	return g->name;
}

/* How sem's shares are given (Semd__ShareBy): SHARE_NONE without any. */
int share_by(const struct sm_sem *sem)
{
	return sem->share != NULL ? sem->share->by : SEMD__SHARE_BY__SHARE_NONE;
}

/* Is s a group name (1..SM_RKEY_MAX printable characters, no space)? */
bool share_group_name_ok(const char *s)
{
	size_t i, len = strlen(s);

	for (i = 0; i < len && i <= SM_RKEY_MAX; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	return len >= 1 && len <= SM_RKEY_MAX;
}

/* The group named name of sh, or NULL; *after: the group it goes after. */
static struct sm_group *group_find(const struct sm_share *sh, const char *name,
    struct list_head **after)
{
	struct list_head *pos;
	struct sm_group *g;
	int c;

	*after = (struct list_head *)&sh->groups;
	list_for_each(pos, &sh->groups) {
		g = list_entry(pos, struct sm_group, entry);
		c = strcmp(g->name, name);
		if (c == 0)
			return g;
		if (c > 0)
			break;
		*after = pos;
	}
	return NULL;
}

/* A new group of sh after after; NULL when out of memory. */
static struct sm_group *group_new(struct sm *sm, struct sm_share *sh,
    const char *name, struct list_head *after)
{
	size_t len = strlen(name);
	struct sm_group *g = sm_alloc(sm, sizeof *g + len + 1);

	if (g == NULL)
		return NULL;
	memset(g, 0, sizeof *g);
	g->weight = 1;
	g->len = (uint16_t)len;
	memcpy(g->name, name, len + 1);
	list_add(&g->entry, after);
	sh->ngroups++;
	return g;
}

static void group_free(struct sm *sm, struct sm_share *sh, struct sm_group *g)
{
	list_del_init(&g->entry);
	sh->ngroups--;
	sm_dealloc(sm, g, sizeof *g + g->len + 1);
}

/*
 * Give sem shares by by (SHARE_PRINCIPAL, SHARE_KEY) with the weights
 * listed; false when out of memory (nothing changed). The weights were
 * checked (share_args_ok).
 */
bool share_attach(struct sm *sm, struct sm_sem *sem, int by,
    Semd__GroupWeight *const *w, size_t n)
{
	struct sm_share *sh = sm_alloc(sm, sizeof *sh);
	struct list_head *after;
	struct sm_group *g;
	size_t i;

	if (sh == NULL)
		return false;
	memset(sh, 0, sizeof *sh);
	sh->by = (uint8_t)by;
	INIT_LIST_HEAD(&sh->groups);
	sem->share = sh;
	for (i = 0; i < n; i++) {
		if (group_find(sh, w[i]->group, &after) != NULL)
			continue;	/* refused by share_args_ok */
		if ((g = group_new(sm, sh, w[i]->group, after)) == NULL) {
			share_detach(sm, sem);
			return false;
		}
		g->weight = w[i]->weight;
		g->listed = true;
	}
	return true;
}

/* Free sem's shares (its holds and waiters are gone, or going with it). */
void share_detach(struct sm *sm, struct sm_sem *sem)
{
	struct sm_share *sh = sem->share;

	if (sh == NULL)
		return;
	while (!list_empty(&sh->groups))
		group_free(sm, sh, list_first_entry(&sh->groups,
		    struct sm_group, entry));
	sm_dealloc(sm, sh, sizeof *sh);
	sem->share = NULL;
}

/*
 * The group of a down of principal pr with group key key ("" for none) on
 * sem, created if new; NULL when out of memory.
 */
struct sm_group *share_group(struct sm *sm, struct sm_sem *sem,
    const char *pr, const char *key)
{
	struct sm_share *sh = sem->share;
	const char *name = sh->by == SEMD__SHARE_BY__SHARE_KEY && key[0] != '\0' ?
	    key : pr;
	struct list_head *after;
	struct sm_group *g;

	if ((g = group_find(sh, name, &after)) != NULL)
		return g;
	return group_new(sm, sh, name, after);
}

/* Free g if it holds and waits for nothing and is not listed. */
void share_group_put(struct sm *sm, struct sm_sem *sem, struct sm_group *g)
{
	if (g != NULL && sem->share != NULL && g->held == 0 &&
	    g->waiting == 0 && !g->listed)
		group_free(sm, sem->share, g);
}

/* The tag of a new down of g: max(V, F_g). */
uint64_t share_tag(const struct sm_sem *sem, const struct sm_group *g)
{
	return g->finish > sem->share->vtime ? g->finish : sem->share->vtime;
}

/* A down of g of n permits, tag tag, was granted or queued: F_g moves on. */
void share_charge(struct sm_group *g, uint64_t tag, uint32_t n)
{
	g->finish = tag + (((uint64_t)n << SHARE_SHIFT) + g->weight - 1) /
	    g->weight;
}

/* g was granted n permits of sem at tag tag (now held). */
void share_granted(struct sm_sem *sem, struct sm_group *g, uint64_t tag,
    uint32_t n)
{
	if (tag > sem->share->vtime)
		sem->share->vtime = tag;
	g->held += n;
}

/* Count a waiter of g in (1) or out (-1). */
void share_waiting(struct sm_group *g, int delta)
{
	g->waiting = (uint32_t)((int64_t)g->waiting + delta);
}

/* n permits of g are given back. */
void share_released(struct sm_group *g, uint32_t n)
{
	g->held -= n;
}

/*
 * Are the share arguments of a Create right: a mode that shares, for an
 * owned name, weights 1..SHARE_WEIGHT_MAX of distinct groups? Answered
 * INVALID_ARGUMENT when not.
 */
bool share_args_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const Semd__Create *cr, int mode)
{
	const char *why = NULL;
	size_t i, j;

	if (cr->share == SEMD__SHARE_BY__SHARE_NONE) {
		if (cr->n_weights != 0)
			why = "weights need --share";
	} else if (cr->share != SEMD__SHARE_BY__SHARE_PRINCIPAL &&
	    cr->share != SEMD__SHARE_BY__SHARE_KEY) {
		why = "unknown share mode";
	} else if (mode != SEMD__MODE__OWNED) {
		why = "only an owned semaphore has fair shares";
	} else if (cr->n_weights > SHARE_GROUPS_LISTED) {
		why = "too many weights";
	}
	for (i = 0; why == NULL && i < cr->n_weights; i++) {
		if (!share_group_name_ok(cr->weights[i]->group))
			why = "a group is 1 to 64 printable characters without spaces";
		else if (cr->weights[i]->weight == 0 ||
		    cr->weights[i]->weight > SHARE_WEIGHT_MAX)
			why = "a weight is 1 to 1000";
		for (j = 0; why == NULL && j < i; j++)
			if (strcmp(cr->weights[i]->group, cr->weights[j]->group) == 0)
				why = "a group is weighted twice";
	}
	if (why == NULL)
		return true;
	reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT, "%s", why);
	return false;
}

/* Info's groups: listed and active, by name; NULL when out of memory. */
Semd__GroupInfo **share_info(struct sm *sm, const struct sm_sem *sem,
    size_t *n)
{
	const struct sm_share *sh = sem->share;
	const struct list_head *pos;
	const struct sm_group *g;
	Semd__GroupInfo **gp, *gv;
	uint64_t active = 0, w;
	size_t i = 0;

	(void)sm;
	*n = 0;
	/* One block: the pointers, then the messages they point at. */
	if ((gp = calloc(sh->ngroups + 1, sizeof(void *) + sizeof(Semd__GroupInfo))) == NULL)
		return NULL;
	gv = (Semd__GroupInfo *)(void *)(gp + sh->ngroups + 1);
	list_for_each(pos, &sh->groups) {
		g = list_entry(pos, struct sm_group, entry);
		if (g->held > 0 || g->waiting > 0)
			active += g->weight;
	}
	list_for_each(pos, &sh->groups) {
		g = list_entry(pos, struct sm_group, entry);
		semd__group_info__init(&gv[i]);
		gv[i].group = (char *)g->name;
		gv[i].weight = g->weight;
		w = active + (g->held > 0 || g->waiting > 0 ? 0 : g->weight);
		gv[i].share = w != 0 ? (uint32_t)((uint64_t)sem->limit * g->weight / w) : 0;
		gv[i].held = g->held;
		gv[i].waiting = g->waiting;
		gp[i] = &gv[i];
		i++;
	}
	*n = i;
	return gp;
}

/* --- the snapshot's section (tag 13) ------------------------------------ */

/* The index of g in its name's list. */
static uint32_t group_index(const struct sm_sem *sem, const struct sm_group *g)
{
	const struct list_head *pos;
	uint32_t i = 0;

	list_for_each(pos, &sem->share->groups) {
		if (list_entry(pos, struct sm_group, entry) == g)
			return i;
		i++;
	}
	return UINT32_MAX;
}

/*
 * The shares: the names with shares (count; then each name, its mode, V,
 * its groups - name, weight, listed, F_g - and the holds and waiters of
 * its groups: permit id or arrival number, group, and a waiter's tag).
 * Held and waiting are counted again from them on restore.
 */
bool share_snap_write(struct sm_batch *b, const struct sm *sm)
{
	struct ordidx_iter it;
	const struct list_head *pos;
	const struct sm_sem *sem;
	const struct sm_group *g;
	const struct sm_hold *h;
	const struct sm_wait *w;
	uint64_t n = 0;

	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL)
		n += sem->share != NULL;
	bytes_int(b, n, 4);
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL) {
		if (sem->share == NULL)
			continue;
		bytes_int(b, sem->len, 1);
		bytes_put(b, sem->name, sem->len);
		bytes_int(b, sem->share->by, 1);
		bytes_int(b, sem->share->vtime, 8);
		bytes_int(b, sem->share->ngroups, 4);
		list_for_each(pos, &sem->share->groups) {
			g = list_entry(pos, struct sm_group, entry);
			bytes_int(b, g->len, 2);
			bytes_put(b, g->name, g->len);
			bytes_int(b, g->weight, 4);
			bytes_int(b, g->listed, 1);
			bytes_int(b, g->finish, 8);
		}
		bytes_int(b, sem->nholders, 4);
		list_for_each(pos, &sem->holders) {
			h = list_entry(pos, struct sm_hold, sem_entry);
			bytes_int(b, h->permit_id, 8);
			bytes_int(b, h->grp != NULL ? group_index(sem, h->grp) :
			    UINT32_MAX, 4);
		}
		bytes_int(b, sem->nwaiters, 4);
		list_for_each(pos, &sem->waiters) {
			w = list_entry(pos, struct sm_member, sem_entry)->wait;
			bytes_int(b, w->seq, 8);
			bytes_int(b, w->grp != NULL ? group_index(sem, w->grp) :
			    UINT32_MAX, 4);
			bytes_int(b, w->key, 8);
		}
	}
	return true;
}

/* Order members by arrival number. */
static int member_seq_cmp(const void *a, const void *b)
{
	const struct sm_member *x = *(const struct sm_member *const *)a;
	const struct sm_member *y = *(const struct sm_member *const *)b;

	return (x->wait->seq > y->wait->seq) - (x->wait->seq < y->wait->seq);
}

/* The member of mv (n, by arrival number) with arrival number seq, or NULL. */
static struct sm_member *member_by_seq(struct sm_member *const *mv, size_t n,
    uint64_t seq)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (mv[mid]->wait->seq == seq)
			return mv[mid];
		if (mv[mid]->wait->seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Read one name's shares back; false on nonsense (why in err). */
static bool share_read_one(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen)
{
	char name[SM_NAME_MAX + 1], gname[SM_PRINCIPAL_MAX + 1];
	struct sm_group **gv = NULL, *g;
	struct sm_member **mv = NULL;
	struct list_head *pos, *after;
	struct sm_member *m;
	struct sm_sem *sem;
	struct sm_share *sh;
	struct sm_hold *h;
	uint32_t i, k, ng, nh, nw, idx;
	uint64_t id, key;
	bool ok = false;

	rbuf_str(r, 1, name, SM_NAME_MAX);
	if (r->bad)
		return false;
	sem = sem_find(sm, name);
	k = (uint32_t)rbuf_int(r, 1);
	if (r->bad || sem == NULL || sem->share != NULL ||
	    sem->mode != SEMD__MODE__OWNED ||
	    (k != SEMD__SHARE_BY__SHARE_PRINCIPAL && k != SEMD__SHARE_BY__SHARE_KEY) ||
	    !share_attach(sm, sem, (int)k, NULL, 0)) {
		snprintf(err, errlen, "shares of %s: no such owned name, or a bad mode",
		    name);
		return false;
	}
	if ((sh = sem->share) == NULL)
		return false;	/* share_attach() made it */
	sh->vtime = rbuf_int(r, 8);
	ng = (uint32_t)rbuf_int(r, 4);
	/* Each group takes 16 bytes or more: no more than there are. */
	if (r->bad || ng > (r->len - r->off) / 16 ||
	    (gv = ptr_array(ng + 1)) == NULL)
		return false;
	for (i = 0; i < ng && !r->bad; i++) {
		/* A key, or a principal (any bytes but NUL). */
		if (rbuf_str(r, 2, gname, SM_PRINCIPAL_MAX) == 0 || r->bad ||
		    group_find(sh, gname, &after) != NULL ||
		    after != sh->groups.prev ||		/* by name */
		    (g = group_new(sm, sh, gname, after)) == NULL)
			goto out;
		g->weight = (uint32_t)rbuf_int(r, 4);
		g->listed = rbuf_int(r, 1) != 0;
		g->finish = rbuf_int(r, 8);
		if (g->weight == 0 || g->weight > SHARE_WEIGHT_MAX)
			goto out;
		gv[i] = g;
	}
	/* The holds by permit id, each of this name and given a group once. */
	nh = (uint32_t)rbuf_int(r, 4);
	if (r->bad || nh != sem->nholders)
		goto out;
	for (i = 0; i < nh && !r->bad; i++) {
		id = rbuf_int(r, 8);
		idx = (uint32_t)rbuf_int(r, 4);
		h = permit_find(sm, id);
		if (h == NULL || h->sem != sem || h->grp != NULL ||
		    (idx != UINT32_MAX && idx >= ng))
			goto out;
		if (idx != UINT32_MAX) {
			h->grp = gv[idx];
			gv[idx]->held += h->n;
		}
	}
	/*
	 * The waiters by arrival number (restored in arrival order: their
	 * tags put the line in order again below).
	 */
	nw = (uint32_t)rbuf_int(r, 4);
	if (r->bad || nw != sem->nwaiters ||
	    (mv = ptr_array(nw + 1)) == NULL)
		goto out;
	k = 0;
	list_for_each(pos, &sem->waiters)
		if (k < nw)
			mv[k++] = list_entry(pos, struct sm_member, sem_entry);
	ptr_sort(mv, k, member_seq_cmp);
	for (i = 0; i < nw && !r->bad; i++) {
		id = rbuf_int(r, 8);
		idx = (uint32_t)rbuf_int(r, 4);
		key = rbuf_int(r, 8);
		m = member_by_seq(mv, k, id);
		if (m == NULL || m->wait->multi || m->wait->grp != NULL ||
		    (idx != UINT32_MAX && idx >= ng))
			goto out;
		if (idx != UINT32_MAX) {
			m->wait->grp = gv[idx];
			m->wait->key = key;
			gv[idx]->waiting++;
		}
	}
	for (i = 0; i < ng && !r->bad; i++)
		if (gv[i] == NULL ||
		    (!gv[i]->listed && gv[i]->held == 0 && gv[i]->waiting == 0))
			goto out;	/* would have been freed */
	ok = !r->bad;	/* the line is put in tag order by the section's reader */
out:
	free(gv);
	free(mv);
	if (!ok && err[0] == '\0')
		snprintf(err, errlen, "shares of %s: bad groups, holds or waiters",
		    name);
	return ok;
}

bool share_snap_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen)
{
	uint64_t i, n = rbuf_int(r, 4);

	for (i = 0; i < n && !r->bad; i++)
		if (!share_read_one(sm, r, err, errlen))
			return false;
	return !r->bad;
}

/*
 * sm_check's part: the counts of sem's groups are those of its holds and
 * waiters, no group is idle and unlisted, and every waiter of a group is
 * one. Returns a reason, or NULL.
 */
const char *share_check(const struct sm_sem *sem)
{
	const struct list_head *pos, *q;
	const struct sm_group *g;
	uint64_t held, waiting;

	if (sem->share == NULL)
		return NULL;
	list_for_each(pos, &sem->share->groups) {
		g = list_entry(pos, struct sm_group, entry);
		held = waiting = 0;
		list_for_each(q, &sem->holders)
			if (list_entry(q, struct sm_hold, sem_entry)->grp == g)
				held += list_entry(q, struct sm_hold, sem_entry)->n;
		list_for_each(q, &sem->waiters)
			if (list_entry(q, struct sm_member, sem_entry)->wait->grp == g)
				waiting++;
		if (held != g->held || waiting != g->waiting)
			return "a group's held or waiting count is wrong";
		if (!g->listed && held == 0 && waiting == 0)
			return "an idle group was kept";
	}
	return NULL;
}
