/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_evring.c - the watch history: the latest events (their
 * revisions and bytes) in a ring of a fixed number of bytes, the setting
 * watch-history, so that a watch cut off (a reconnect, a failover) resumes
 * from the revision after the last it read (Watch.from_revision) without
 * losing or repeating an event. Part of the state: every replica keeps the
 * same events (they come from the same entries) and a snapshot carries
 * them (section "watch history", sm_snap_sections.c).
 *
 * Which are kept: the newest records (since the last event too big for the
 * history, which empties it) whose bytes, 12 each beside theirs, fit the
 * size - what dropping the oldest while the records pass the size at each
 * event keeps. It depends on the records' sizes only, not on where they
 * lie, so a history restored from a snapshot keeps the same records as the
 * one it was taken from, ever after.
 *
 * Where: a record is a u32 length, a u64 revision, then that many bytes;
 * records are never split at the end of the buffer: one that does not fit
 * there starts again at the beginning (end: where the records before that
 * skipped end stop, until the oldest has passed it). The buffer is twice
 * the size, allocated once, when the first event comes (no allocation per
 * event), and the oldest leave it in batches: while there is room in it for
 * the next record, an event only adds its record (evring_put(): a few
 * stores); when there is none, the ones that are no longer kept go all at
 * once, which always leaves room (evring_put_slow()). The records ahead of
 * the kept ones (head and used count them too) are skipped by
 * evring_first(). head is never at end (it goes to 0 as it reaches it).
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

#define EVR_NOEND	UINT32_MAX	/* end: no skipped end ahead of head */

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Forget every record; keep the buffer and the size. */
static void evring_clear(struct sm_evring *r)
{
	r->head = r->tail = 0;
	r->end = EVR_NOEND;
	r->lim = r->buf != NULL && r->size / 2 >= EVR_FAST ? 2 * r->size : 0;
	r->used = 0;
}

/* Set the ring's size in bytes (0: no history): the records go. */
void evring_resize(struct sm_evring *r, uint32_t size)
{
	if (size != r->size) {
		free(r->buf);
		r->buf = NULL;
		r->size = size;
	}
	evring_clear(r);
}

void evring_free(struct sm_evring *r)
{
	free(r->buf);
	memset(r, 0, sizeof *r);
	r->end = EVR_NOEND;
}

/*
 * Make room for event rev, len bytes where there is none at the tail (or
 * no buffer yet, or an event too big); returns where its bytes go, as
 * evring_put(). The records no longer kept go (the oldest while the records
 * and this one would pass the size): then the buffer, twice the size,
 * always has room for it, at the end or from the beginning. evring_put()
 * (sm-snap.h) is the common case, inline.
 */
uint8_t *evring_put_slow(struct sm_evring *r, uint64_t rev, uint32_t len)
{
	uint32_t need = EVR_HDR + len, room, head, used, end, k;
	const uint8_t *buf;

	if (r->buf == NULL || need > r->size / 2) {
		if (r->size == 0)
			return NULL;
		if (need > r->size / 2 ||
		    (r->buf == NULL && (r->buf = malloc(2 * (size_t)r->size)) == NULL)) {
			evring_clear(r);
			return NULL;
		}
		evring_clear(r);	/* its lim */
	}
	buf = r->buf;
	room = r->end != EVR_NOEND ? r->head : 2 * r->size;
	if (r->tail + need > room && (r->end != EVR_NOEND || need > r->head)) {
		/* no room after the tail, nor (not wrapped) before head */
		head = r->head;
		used = r->used;
		end = r->end;
		while (used + need > r->size) {
			k = EVR_HDR + get32(buf + head);
			head += k;
			used -= k;
			if (head == end) {
				head = 0;	/* the skipped end */
				end = EVR_NOEND;
			}
		}
		r->head = head;
		r->used = used;
		r->end = end;
		if (used == 0)
			evring_clear(r);
		room = r->end != EVR_NOEND ? r->head : 2 * r->size;
	}
	if (r->tail + need > room) {
		/* not wrapped, no room at the end: from the beginning (room there) */
		r->end = r->tail;
		r->tail = 0;
		room = r->head;
	}
	r->lim = r->size / 2 >= EVR_FAST ? room : 0;
	return evring_add(r, rev, len);
}

/* Keep event rev, len bytes at p, as evring_put(); false when not kept. */
bool evring_push(struct sm_evring *r, uint64_t rev, const uint8_t *p, uint32_t len)
{
	uint8_t *q = evring_put(r, rev, len);

	if (q == NULL)
		return false;
	memcpy(q, p, len);
	return true;
}

/* The revision of the oldest record kept, 0 when none. */
uint64_t evring_oldest(const struct sm_evring *r)
{
	struct evring_it it;
	const uint8_t *p;
	uint32_t len;
	uint64_t rev;

	evring_first(r, &it);
	return evring_next(r, &it, &rev, &p, &len) ? rev : 0;
}

/* The records kept. */
uint32_t evring_count(const struct sm_evring *r)
{
	struct evring_it it;
	const uint8_t *p;
	uint32_t n = 0, len;
	uint64_t rev;

	evring_first(r, &it);
	while (evring_next(r, &it, &rev, &p, &len))
		n++;
	return n;
}

/* Start walking the records kept, oldest first (past those not kept). */
void evring_first(const struct sm_evring *r, struct evring_it *it)
{
	uint32_t k;

	it->off = r->head;
	it->left = r->used;
	while (it->left > r->size) {
		if (it->off == r->end)
			it->off = 0;
		k = EVR_HDR + get32(r->buf + it->off);
		it->off += k;
		it->left -= k;
	}
}

/* The next record: its revision and bytes; false at the end. */
bool evring_next(const struct sm_evring *r, struct evring_it *it, uint64_t *rev,
    const uint8_t **p, uint32_t *len)
{
	if (it->left == 0)
		return false;
	if (it->off == r->end)
		it->off = 0;	/* the skipped end */
	*len = get32(r->buf + it->off);
	memcpy(rev, r->buf + it->off + 4, 8);
	*p = r->buf + it->off + EVR_HDR;
	it->off += EVR_HDR + *len;
	it->left -= EVR_HDR + *len;
	return true;
}
