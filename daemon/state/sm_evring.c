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
 * A record is a u32 length, a u64 revision, then that many bytes; records
 * are never split at the end of the buffer: one that does not fit there
 * starts again at the beginning (end: where the records before that skipped
 * end stop, until the oldest has passed it). The oldest go to make room.
 * The buffer (twice the size) is allocated once, when the first event comes
 * (no allocation per event).
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

#define EVR_HDR		12u	/* u32 length, u64 revision */
#define EVR_NOEND	UINT32_MAX	/* end: no skipped end ahead of head */

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

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
	r->n = 0;
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
 * Make room for event rev, len bytes, the oldest going while the records
 * would pass size bytes; returns where its bytes go (the caller writes
 * them). Which are kept depends on their sizes only, not on where they lie:
 * the buffer is twice the size, so a record that fits the size always finds
 * room (at the end, or from the beginning), and a restored history keeps
 * the same records as the one it was taken from. NULL when there is no
 * history, the event is bigger than half of it, or out of memory: then the
 * history is emptied (a resume from before it is refused, never answered
 * with a gap). This is every case; evring_put() the common one.
 */
static __attribute__((noinline)) uint8_t *evring_put_slow(struct sm_evring *r,
    uint64_t rev, uint32_t len)
{
	uint32_t need = EVR_HDR + len, at, head, used, n, k;

	if (__builtin_expect(r->buf == NULL || need > r->size / 2, 0)) {
		if (r->size == 0)
			return NULL;
		if (need > r->size / 2 ||
		    (r->buf == NULL && (r->buf = malloc(2 * (size_t)r->size)) == NULL)) {
			evring_clear(r);
			return NULL;
		}
	}
	if (r->used + need > r->size) {
		/*
		 * The oldest go (some are left while the records pass the
		 * size: need <= size / 2); none left: head = tail = 0.
		 */
		head = r->head;
		used = r->used;
		n = r->n;
		do {
			if (head == r->end) {
				head = 0;	/* the skipped end */
				r->end = EVR_NOEND;
			}
			k = EVR_HDR + get32(r->buf + head);
			head += k;
			used -= k;
			n--;
		} while (used + need > r->size);
		r->head = head;
		r->used = used;
		r->n = n;
		if (n == 0)
			evring_clear(r);
	}
	at = r->tail;
	if (at >= r->head && 2 * r->size - at < need) {
		/* no room at the end: from the beginning (room there) */
		r->end = at;
		at = 0;
	}
	put32(r->buf + at, len);
	memcpy(r->buf + at + 4, &rev, 8);
	r->tail = at + need;
	r->used += need;
	r->n++;
	return r->buf + at + EVR_HDR;
}

/*
 * Make room for event rev, len bytes, as evring_put_slow(): its common case
 * on a short path (the buffer made, the record fits once the oldest, if one
 * of several, went, and at the tail without a skipped end), the rest there.
 */
uint8_t *evring_put(struct sm_evring *r, uint64_t rev, uint32_t len)
{
	uint32_t need = EVR_HDR + len, size = r->size, head = r->head;
	uint32_t at = r->tail, used = r->used, k;
	uint8_t *buf = r->buf, *p;

	if (__builtin_expect(buf == NULL || need > size / 2, 0))
		return evring_put_slow(r, rev, len);
	if (used + need > size) {
		if (r->n <= 1 || head == r->end)
			return evring_put_slow(r, rev, len);
		k = EVR_HDR + get32(buf + head);
		if (used - k + need > size)
			return evring_put_slow(r, rev, len);
		head += k;
		used -= k;
		r->head = head;
		r->used = used;
		r->n--;
	}
	if (at >= head && 2 * size - at < need)
		return evring_put_slow(r, rev, len);
	p = buf + at;
	put32(p, len);
	memcpy(p + 4, &rev, 8);
	r->tail = at + need;
	r->used = used + need;
	r->n++;
	return p + EVR_HDR;
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

/* Start walking the records, oldest first. */
void evring_first(const struct sm_evring *r, struct evring_it *it)
{
	it->off = r->head;
	it->left = r->n;
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
	it->left--;
	return true;
}
