/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_family.c - a session started under another one's hold.
 *
 * `semctl run A -- CMD` holds A while CMD runs, and waits for CMD: when CMD
 * waits for a name (a nested semctl, a job using libsemclient), the run's
 * session waits too, though in another process. Such a program says so in
 * its Hello (parent_session, parent_link: libsemclient takes them from
 * $SEMD_SESSION, which semctl run exports), and the new session becomes a
 * child of the run's. The wait-for graph then has an edge from the parent
 * to each child (sm_deadlock.c): `semctl run A -- semctl down B` against
 * its mirror image is a cycle, answered DEADLOCK, not a timeout.
 *
 * The link is given only to whoever could read the parent's HelloReply: it
 * is a keyed hash of the parent's secret (family_link; the secret stays
 * secret), and the parent must belong to the same principal. A Hello whose
 * parent does not exist (ended, or another daemon's), or whose link does
 * not match, starts an ordinary session: a link is a hint for the graph,
 * never a reason to refuse a client. A parent is always older than its
 * children (ids grow), so the links are a forest, never a circle. When a
 * parent ends, its children stay, without a parent.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/state/sm-int.h"

/* What family_link() hashes with the secret as the key. */
#define FAMILY_LINK_SALT	0x6b6e696c2d646d65ULL	/* "emd-link" */

void family_init(struct sm_session *s)
{
	s->parent = NULL;
	INIT_LIST_HEAD(&s->children);
	INIT_LIST_HEAD(&s->child_entry);
}

uint64_t family_link(const struct sm_session *s)
{
	return hmap_siphash_u64x2(s->secret, s->id, FAMILY_LINK_SALT);
}

static void family_join(struct sm_session *s, struct sm_session *p)
{
	s->parent = p;
	list_add_tail(&s->child_entry, &p->children);
}

/* Make s, a new session, the child of parent_id if link proves it may be. */
void family_adopt(struct sm *sm, struct sm_session *s, uint64_t parent_id,
    uint64_t link)
{
	struct sm_session *p;

	if (parent_id == 0 || parent_id >= s->id)
		return;
	p = session_find(sm, parent_id);
	if (p == NULL || p->ident->pr != s->ident->pr || family_link(p) != link)
		return;
	family_join(s, p);
}

/* s ends: it leaves its parent, and its children have none any more. */
void family_leave(struct sm_session *s)
{
	struct sm_session *c;

	if (s->parent != NULL)
		list_del_init(&s->child_entry);
	s->parent = NULL;
	while (!list_empty(&s->children)) {
		c = list_first_entry(&s->children, struct sm_session,
		    child_entry);
		list_del_init(&c->child_entry);
		c->parent = NULL;
	}
}

/* Has s an edge out of it in the wait-for graph (a wait, or a child)? */
bool family_waits(const struct sm_session *s)
{
	return s->nwaiters > 0 || !list_empty(&s->children);
}

/*
 * The snapshot's section: the number of children, then each child's id and
 * its parent's, by child id.
 */
bool snap_families_write(struct sm_batch *b, const struct sm *sm)
{
	struct sm_session **ss;
	struct hmap_iter it;
	struct hnode *n;
	struct sm_session *s;
	size_t i, k = 0;

	if ((ss = ptr_array(hmap_count(&sm->sessions) + 1)) == NULL)
		return false;
	hmap_iter_init(&it, &sm->sessions);
	while ((n = hmap_iter_next(&it)) != NULL) {
		s = container_of(n, struct sm_session, node);
		if (s->parent != NULL)
			ss[k++] = s;
	}
	ptr_sort(ss, k, sm_session_cmp);
	bytes_int(b, k, 4);
	for (i = 0; i < k; i++) {
		bytes_int(b, ss[i]->id, 8);
		bytes_int(b, ss[i]->parent->id, 8);
	}
	free(ss);
	return true;
}

bool snap_families_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen)
{
	struct sm_session *s, *p;
	uint64_t id, pid, last = 0;
	uint32_t i, k = (uint32_t)rbuf_int(r, 4);

	for (i = 0; i < k && !r->bad; i++) {
		id = rbuf_int(r, 8);
		pid = rbuf_int(r, 8);
		if (r->bad)
			break;
		s = session_find(sm, id);
		p = session_find(sm, pid);
		if (id <= last || s == NULL || p == NULL || pid >= id ||
		    p->ident->pr != s->ident->pr) {
			snprintf(err, errlen, "bad parent link %u (session %"
			    PRIu64 " of %" PRIu64 ")", i, id, pid);
			return false;
		}
		family_join(s, p);
		last = id;
	}
	return !r->bad;
}
