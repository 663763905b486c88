/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/session/holds.c - the holds the session keeps (session-bound
 * permits: a detached hold is the principal's, not the session's), given
 * back by an up, lost with the session or by a HoldLost notice; and the
 * permit ids lost lately, so that an up of one says why it fails.
 */
#include <stdlib.h>
#include <string.h>

#include "client/session/session.h"

/* Free a hold. */
void semc_hold_free(struct semc_hold *h)
{
	free(h->name);
	free(h);
}

/* Remember a lost permit id (a ring of the latest 64). */
static void lost_mark_locked(struct semc *c, uint64_t permit_id)
{
	c->lost_ids[c->lost_next++ % 64] = permit_id;
}

/* Add a session-bound hold to the bookkeeping. */
void semc_hold_add_locked(struct semc *c, const char *name, const Semd__Grant *g)
{
	struct semc_hold *h = calloc(1, sizeof *h);
	unsigned i;

	/* a new daemon may reuse a lost id (none lost yet: nothing to look at) */
	for (i = 0; c->lost_next != 0 && i < 64; i++)
		if (c->lost_ids[i] == g->permit_id)
			c->lost_ids[i] = 0;
	if (h == NULL || (h->name = strdup(name)) == NULL) {
		free(h);
		return;
	}
	h->permit_id = g->permit_id;
	h->token = g->token;
	h->n = g->n ? g->n : 1;
	h->next = c->holds;
	c->holds = h;
}

/* Remove holds given back by an up (one permit id, or n permits of name). */
void semc_hold_drop_locked(struct semc *c, const char *name, uint64_t permit_id, uint32_t n)
{
	struct semc_hold **pp = &c->holds, *h;

	if (permit_id == 0 && name == NULL)
		return;
	while ((h = *pp) != NULL && (permit_id != 0 || n > 0)) {
		bool match = permit_id ? h->permit_id == permit_id : strcmp(h->name, name) == 0;

		if (!match) {
			pp = &h->next;
			continue;
		}
		if (permit_id == 0 && h->n > n) {
			h->n -= n;
			return;
		}
		if (permit_id == 0)
			n -= h->n;
		*pp = h->next;
		semc_hold_free(h);
		if (permit_id != 0)
			return;
	}
}

/* Take the hold of permit_id out of the bookkeeping as lost (NULL: the
 * session keeps none such: given back meanwhile, or never its caller's). */
struct semc_hold *semc_hold_take_locked(struct semc *c, uint64_t permit_id)
{
	struct semc_hold **pp, *h;

	for (pp = &c->holds; (h = *pp) != NULL; pp = &h->next)
		if (h->permit_id == permit_id)
			break;
	if (h == NULL)
		return NULL;
	*pp = h->next;
	lost_mark_locked(c, h->permit_id);
	return h;
}

/* Take every hold out of the bookkeeping as lost: the list, for the caller
 * to report and free. */
struct semc_hold *semc_holds_take_all_locked(struct semc *c)
{
	struct semc_hold *all = c->holds, *h;

	for (h = all; h != NULL; h = h->next)
		lost_mark_locked(c, h->permit_id);
	c->holds = NULL;
	return all;
}

/* Whether permit_id was one of the recently lost session holds. */
bool semc_permit_lost(struct semc *c, uint64_t permit_id)
{
	bool lost = false;
	unsigned i;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < 64 && permit_id != 0; i++)
		if (c->lost_ids[i] == permit_id)
			lost = true;
	pthread_mutex_unlock(&c->lock);
	return lost;
}
