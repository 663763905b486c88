/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm-snap.h - the state as bytes: the snapshot's layout and
 * its sections, the watch history's ring, and the little-endian writer and
 * reader that snapshots and log entries share. Part of sm-int.h, which
 * includes it where the types it names are known; include that instead.
 */
#ifndef SEMD_SM_SNAP_H
#define SEMD_SM_SNAP_H

#include <string.h>

/* sm_snap_*.c: a snapshot starts with SNAP_MAGIC, then its version. */
#define SNAP_MAGIC	"SEMDSNAP"
#define SNAP_VERSION	3u
/*
 * The counters a snapshot keeps after the settings, in this order: their
 * offsets in struct sm_counters (version 1 has the first SNAP_V1_COUNTERS).
 * The gauges are recounted on restore.
 */
#define SNAP_COUNTERS		12
#define SNAP_V1_COUNTERS	7
/*
 * The replies by op and code the fixed layout keeps (versions 2 and 3):
 * the ops and codes added since are counted in a section (tag 10).
 */
#define SNAP_V3_NOPS		22
#define SNAP_V3_NCODES		15
extern const size_t snap_counters[SNAP_COUNTERS];

/*
 * Version 3 ends with sections: a u32 tag, a u32 length and that many
 * bytes each, then a tag 0. A part of the state that is new gets a section
 * of its own - a row here (sm_snap_sections.c) with a tag never used
 * before - instead of a new version of the whole layout: a section a
 * reader does not know refuses the snapshot, an absent one leaves its part
 * as sm_new() made it. write() appends the part's bytes (the length is
 * filled in around them); read() takes exactly the section's bytes from r
 * (false, or bytes left over: refused, why in err). Rows in tag order.
 */
struct sm_rbuf;
struct snap_section {
	uint32_t	tag;
	const char	*what;
	bool		(*write)(struct sm_batch *b, const struct sm *sm);
	bool		(*read)(struct sm *sm, struct sm_rbuf *r, char *err,
			    size_t errlen);
};
extern const struct snap_section snap_sections[];	/* ends with tag 0 */

/* sm_evring.c: the watch history */
void evring_resize(struct sm_evring *r, uint32_t size);
void evring_free(struct sm_evring *r);
uint8_t *evring_put_slow(struct sm_evring *r, uint64_t rev, uint32_t len);
#define EVR_HDR		12u	/* a record's u32 length and u64 revision */
#define EVR_FAST	(EVR_HDR + 4096u)	/* evring_put()'s biggest: EVREC_MAX's */

/* Put event rev's record, len bytes, at the tail (room there); its bytes. */
static inline uint8_t *evring_add(struct sm_evring *r, uint64_t rev, uint32_t len)
{
	uint32_t at = r->tail, need = EVR_HDR + len;
	uint8_t *p = r->buf + at;

	r->tail = at + need;
	r->used += need;
	memcpy(p, &len, 4);
	memcpy(p + 4, &rev, 8);
	return p + EVR_HDR;
}

/*
 * Keep event rev, len bytes: returns where its bytes go (the caller writes
 * them). NULL when there is no history, the event is bigger than half of
 * it, or out of memory: then the history is emptied (a resume from before
 * it is refused, never answered with a gap). Its common case, room at the
 * tail, is a few stores, inline; the rest is evring_put_slow().
 */
static inline uint8_t *evring_put(struct sm_evring *r, uint64_t rev, uint32_t len)
{
	if (__builtin_expect(len > EVR_FAST - EVR_HDR ||
	    r->tail + EVR_HDR + len > r->lim, 0))
		return evring_put_slow(r, rev, len);
	return evring_add(r, rev, len);
}

bool evring_push(struct sm_evring *r, uint64_t rev, const uint8_t *p, uint32_t len);
uint64_t evring_oldest(const struct sm_evring *r);
uint32_t evring_count(const struct sm_evring *r);
void evring_first(const struct sm_evring *r, struct evring_it *it);
bool evring_next(const struct sm_evring *r, struct evring_it *it, uint64_t *rev,
    const uint8_t **p, uint32_t *len);

/* sm_evrec.c: a kept event as the history holds it, and as a snapshot does */
#define EVREC_MAX	4096	/* a kept event's bytes, at most */
_Static_assert(EVR_FAST == EVR_HDR + EVREC_MAX, "evring_put() takes an event's record");
/* What an event says beside its name's counts and who (sm_watch.c). */
struct evrec_what {
	Semd__EventKind	kind;
	uint32_t	n;
	uint64_t	permit_id;
	uint64_t	token;
	uint64_t	request_id;
	const char	*reason;	/* NULL: none */
};
bool evrec_ident(struct sm *sm, struct sm_ident *id);
void evrec_ident_free(struct sm *sm, struct sm_ident *id);
void evrec_keep_event(struct sm *sm, const struct sm_sem *sem,
    const struct sm_ident *ident, const struct evrec_what *w, uint64_t rev,
    uint64_t time_ms, int64_t available);
void evrec_keep_cluster(struct sm *sm, uint64_t rev, uint64_t time_ms,
    uint64_t leader_id, uint64_t term, const char *leader, const char *members);
bool evrec_get(const uint8_t *p, uint32_t len, uint64_t rev,
    Semd__WatchEvent *ev, char *strs, const uint8_t **owner, size_t *olen);
size_t evrec_to_pb(const uint8_t *p, uint32_t len, uint64_t rev, uint8_t *out,
    size_t cap);
bool evrec_from_pb(struct sm *sm, uint64_t rev, const uint8_t *p, uint32_t len);

/* sm_bytes.c: snapshots and log entries as little-endian bytes */
bool bytes_room(struct sm_batch *b, size_t n);
void bytes_put(struct sm_batch *b, const void *p, size_t n);
void bytes_int(struct sm_batch *b, uint64_t v, unsigned int size);
struct sm_rbuf {
	const uint8_t	*p;
	size_t		len;
	size_t		off;
	bool		bad;	/* ran past the end or found nonsense */
};
const uint8_t *rbuf_take(struct sm_rbuf *r, size_t n);
uint64_t rbuf_int(struct sm_rbuf *r, unsigned int size);
size_t rbuf_str(struct sm_rbuf *r, unsigned int size, char *buf, size_t max);

#endif
