/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_evrec.c - a kept event as the watch history holds it
 * (sm_evring.c gives each its revision), in a fixed layout in the host's
 * byte order (a record never leaves the process: a snapshot carries each
 * as protobuf, and which are kept depends on their sizes only):
 *
 *   0  u32 pid, u16 the lengths of principal, client_name, host
 *  10  principal, client_name, host, name, the name's owner (who may see
 *      the identity, beside administrators and the same principal),
 *      reason, without NUL
 *      the tail (EVREC_TAIL bytes), at the record's length less 78:
 *   0  u32 limit, holders, waiters, max_waiters
 *  16  u32 rate, rate_period_ms, burst
 *  28  u32 n
 *  32  u64 permit_id, token, request_id
 *  56  u64 time_ms, available (two's complement)
 *  72  u8 kind, u8 the name's length, u16 the owner's and reason's lengths
 *
 * A record has as many bytes as it had in the layout of before (a history
 * keeps as many events). Its parts come as the state holds them: the first
 * 10 bytes and the three strings are the identity's (made once with it,
 * evrec_ident(), and taken in one copy), the first four u32 of the tail are
 * sm_sem's, n and the three u64 after it evrec_what's. The tail is written
 * last: the copy of the identity's part may run up to 22 bytes past its
 * end (copy16()), into what is written after it.
 *
 * A cluster event (EVENT_CLUSTER) has no name: its leader's id, its term,
 * its leader's address and its members are kept where a grant's permit id
 * and token, a holder's host and a reason are (evrec_get() says them in
 * their own fields).
 *
 * Why not the WatchEvent's protobuf bytes, as the history kept at first:
 * every change of the state keeps an event, and packing one as protobuf
 * (varints, a key per field) cost more than the change itself; this is a
 * few stores and copies. A snapshot still carries the history as it did -
 * each event as a WatchEvent's protobuf bytes (section 21) - so snapshots
 * of either kind load in either: evrec_to_pb() and evrec_from_pb().
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strcopy.h"
#include "daemon/state/sm-int.h"
#include "proto/pbevent.h"

#define EVREC_WHO	10u	/* pid and the identity's three lengths */
#define EVREC_TAIL	78u
/* copy16()'s reach: at least 32 bytes, whole 16s */
#define EVREC_PAD(n)	((n) <= 32 ? (size_t)32 : ((size_t)(n) + 15) & ~(size_t)15)

_Static_assert(SM_NAME_MAX <= UINT8_MAX, "a record's name length is a byte");
_Static_assert(EVREC_MAX <= UINT16_MAX, "an identity's part's length is a u16");
_Static_assert(offsetof(struct sm_sem, nholders) == offsetof(struct sm_sem, limit) + 4 &&
    offsetof(struct sm_sem, nwaiters) == offsetof(struct sm_sem, limit) + 8 &&
    offsetof(struct sm_sem, max_waiters) == offsetof(struct sm_sem, limit) + 12,
    "the tail takes sm_sem's limit, holders, waiters, max_waiters in one copy");
_Static_assert(offsetof(struct sm_rate, period_ms) == offsetof(struct sm_rate, rate) + 4 &&
    offsetof(struct sm_rate, burst) == offsetof(struct sm_rate, rate) + 8,
    "the tail takes sm_rate's rate, period_ms, burst in one copy");
_Static_assert(offsetof(struct evrec_what, permit_id) == offsetof(struct evrec_what, n) + 4 &&
    offsetof(struct evrec_what, token) == offsetof(struct evrec_what, n) + 12 &&
    offsetof(struct evrec_what, request_id) == offsetof(struct evrec_what, n) + 20,
    "the tail takes evrec_what's n, permit_id, token, request_id in one copy");

/* The identity's part of an event by nobody known (read 16 bytes at a time). */
static const uint8_t evrec_nobody[32];

/* Store v at p in the host's byte order, 2, 4 or 8 bytes; load them. */
static inline void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static inline void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static inline void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static inline uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/*
 * Copy n bytes (at least EVREC_WHO) from s, which has EVREC_PAD(n) bytes,
 * to d, 32 and then 16 at a time: up to 22 bytes after d + n are written
 * too.
 */
static inline void copy16(uint8_t *d, const uint8_t *s, size_t n)
{
	size_t i;

	memcpy(d, s, 32);
	for (i = 32; i < n; i += 16)
		memcpy(d + i, s + i, 16);
}

/* The bytes of the record of an event with strings of lengths l, owner olen. */
static inline size_t evrec_size(size_t olen, const struct pbevent_lens *l)
{
	return EVREC_WHO + EVREC_TAIL + olen + l->name + l->principal +
	    l->client_name + l->host + l->reason;
}

/* Copy n bytes of s to p; the byte after them. */
static inline uint8_t *put_str(uint8_t *p, const char *s, size_t n)
{
	(void)strcopy(p, s, n, true);
	return p + n;
}

/*
 * Make the identity's part of the records of its events (its pid, the
 * lengths and bytes of its principal, client_name and host) once, in
 * id->ev; when longer than a record, none: evrec_nobody with a length that
 * sends its events the long way. False when out of memory.
 */
bool evrec_ident(struct sm *sm, struct sm_ident *id)
{
	size_t pl = id->pr != NULL ? id->pr->len : 0;
	size_t n = EVREC_WHO + pl + id->client_name_len + id->host_len;
	uint8_t *p;

	id->ev = (uint8_t *)(uintptr_t)evrec_nobody;
	id->ev_len = UINT16_MAX;
	if (n > EVREC_MAX)
		return true;
	if ((p = sm_alloc(sm, EVREC_PAD(n))) == NULL)
		return false;
	put32(p, id->pid);
	put16(p + 4, (uint16_t)pl);
	put16(p + 6, id->client_name_len);
	put16(p + 8, id->host_len);
	if (pl > 0)
		memcpy(p + EVREC_WHO, id->pr->name, pl);
	memcpy(p + EVREC_WHO + pl, id->client_name, id->client_name_len);
	memcpy(p + EVREC_WHO + pl + id->client_name_len, id->host, id->host_len);
	id->ev = p;
	id->ev_len = (uint16_t)n;
	return true;
}

/* Free what evrec_ident() made. */
void evrec_ident_free(struct sm *sm, struct sm_ident *id)
{
	if (id->ev != evrec_nobody)
		sm_dealloc(sm, id->ev, EVREC_PAD(id->ev_len));
	id->ev = NULL;
}

/* A record's fields, before they are written (evrec_write()). */
struct evrec_fields {
	unsigned int	kind;
	uint32_t	n, pid, holders, waiters, limit, rate, period, burst, max_waiters;
	uint64_t	time_ms, permit_id, token, request_id;
	int64_t		available;
	const char	*s[5];		/* name, principal, client_name, host, reason */
	struct pbevent_lens l;		/* their lengths */
};

/*
 * Write the record of f (a name of at most 255 bytes, the other strings of
 * at most 65535) with owner's olen bytes at p, which has evrec_size() bytes.
 */
static void evrec_write(uint8_t *p, const uint8_t *owner, size_t olen,
    const struct evrec_fields *f)
{
	put32(p, f->pid);
	put16(p + 4, (uint16_t)f->l.principal);
	put16(p + 6, (uint16_t)f->l.client_name);
	put16(p + 8, (uint16_t)f->l.host);
	p = put_str(p + EVREC_WHO, f->s[1], f->l.principal);
	p = put_str(p, f->s[2], f->l.client_name);
	p = put_str(p, f->s[3], f->l.host);
	p = put_str(p, f->s[0], f->l.name);
	p = put_str(p, (const char *)owner, olen);
	p = put_str(p, f->s[4], f->l.reason);
	put32(p, f->limit);
	put32(p + 4, f->holders);
	put32(p + 8, f->waiters);
	put32(p + 12, f->max_waiters);
	put32(p + 16, f->rate);
	put32(p + 20, f->period);
	put32(p + 24, f->burst);
	put32(p + 28, f->n);
	put64(p + 32, f->permit_id);
	put64(p + 40, f->token);
	put64(p + 48, f->request_id);
	put64(p + 56, f->time_ms);
	put64(p + 64, (uint64_t)f->available);
	p[72] = (uint8_t)f->kind;
	p[73] = (uint8_t)f->l.name;
	put16(p + 74, (uint16_t)olen);
	put16(p + 76, (uint16_t)f->l.reason);
}

/*
 * Keep event rev of fields f with the owner's olen bytes (an owner's name
 * over 1024 bytes is not kept: the identity is shown by its principal
 * only) in sm's history: the oldest go to make room. A reason that makes
 * the record longer than EVREC_MAX is cut; one still too long empties the
 * history (no gap: a resume from before it is refused).
 */
static __attribute__((noinline)) void evrec_keep_fields(struct sm *sm,
    const uint8_t *owner, size_t olen, struct evrec_fields *f, uint64_t rev)
{
	const char *reason = f->s[4];
	char cut[256];
	size_t n;
	uint8_t *rec;

	if (olen > 1024)
		olen = 0;
	if ((n = evrec_size(olen, &f->l)) > EVREC_MAX) {
		snprintf(cut, sizeof cut, "%.200s...", reason);
		f->s[4] = cut;
		f->l.reason = strlen(cut);
		n = evrec_size(olen, &f->l);
	}
	if (n <= EVREC_MAX && f->l.principal <= UINT16_MAX &&
	    f->l.client_name <= UINT16_MAX && f->l.host <= UINT16_MAX &&
	    (rec = evring_put(&sm->evring, rev, (uint32_t)n)) != NULL)
		evrec_write(rec, owner, olen, f);
	else
		evring_resize(&sm->evring, sm->evring.size);
	f->s[4] = reason;	/* cut goes with this frame */
}

/*
 * evrec_keep_event() for an event too long for its straight path (an
 * owner's name over 1024 bytes, a record over EVREC_MAX): through
 * evrec_keep_fields(), which cuts or drops it. A call of its own, so that
 * its fields and buffers stay out of the hot path's frame.
 */
static __attribute__((noinline)) void evrec_keep_long(struct sm *sm,
    const struct sm_sem *sem, const struct sm_ident *ident,
    const struct evrec_what *w, uint64_t rev, uint64_t time_ms,
    int64_t available)
{
	const struct sm_rate *rt = sem->rate;
	struct evrec_fields f = {
		(unsigned int)w->kind, w->n, ident != NULL ? ident->pid : 0,
		sem->nholders, sem->nwaiters, sem->limit, rt != NULL ? rt->rate : 0,
		rt != NULL ? rt->period_ms : 0, rt != NULL ? rt->burst : 0,
		sem->max_waiters, time_ms, w->permit_id, w->token, w->request_id,
		available, { sem->name, "", "", "", w->reason != NULL ? w->reason : "" },
		{ 0 }
	};

	f.l.name = sem->len;
	if (ident != NULL) {
		if (ident->pr != NULL) {
			f.s[1] = ident->pr->name;
			f.l.principal = ident->pr->len;
		}
		f.s[2] = ident->client_name;
		f.l.client_name = ident->client_name_len;
		f.s[3] = ident->host;
		f.l.host = ident->host_len;
	}
	f.l.reason = strlen(f.s[4]);
	evrec_keep_fields(sm, sem->owner != NULL ?
	    (const uint8_t *)sem->owner->name : NULL,
	    sem->owner != NULL ? sem->owner->len : 0, &f, rev);
}

/*
 * Keep event rev of sem (what happened w, by ident or nobody known) in the
 * history, as of time_ms with available permits free: every change of the
 * state comes here, straight from the state to the record.
 */
void evrec_keep_event(struct sm *sm, const struct sm_sem *sem,
    const struct sm_ident *ident, const struct evrec_what *w, uint64_t rev,
    uint64_t time_ms, int64_t available)
{
	const struct sm_principal *ow = sem->owner;
	const struct sm_rate *rt = sem->rate;
	const uint8_t *who = evrec_nobody;
	size_t wlen = EVREC_WHO, olen = ow != NULL ? ow->len : 0, rlen = 0, n;
	uint8_t *p;

	if (ident != NULL) {
		who = ident->ev;
		wlen = ident->ev_len;
	}
	if (w->reason != NULL)
		rlen = strlen(w->reason);
	n = wlen + sem->len + olen + rlen + EVREC_TAIL;
	if (__builtin_expect(n > EVREC_MAX || olen > 1024, 0)) {
		evrec_keep_long(sm, sem, ident, w, rev, time_ms, available);
		return;
	}
	if ((p = evring_put(&sm->evring, rev, (uint32_t)n)) == NULL)
		return;
	/* evrec_write()'s layout, straight from the state (the hot path) */
	copy16(p, who, wlen);
	p = put_str(p + wlen, sem->name, sem->len);
	if (olen > 0)
		p = put_str(p, ow->name, olen);
	if (rlen > 0) {
		memcpy(p, w->reason, rlen);
		p += rlen;
	}
	memcpy(p, &sem->limit, 16);
	if (rt != NULL)
		memcpy(p + 16, &rt->rate, 12);
	else
		memset(p + 16, 0, 12);
	memcpy(p + 28, &w->n, 28);	/* n, permit_id, token, request_id */
	put64(p + 56, time_ms);
	put64(p + 64, (uint64_t)available);
	p[72] = (uint8_t)w->kind;
	p[73] = sem->len;
	put16(p + 74, (uint16_t)olen);
	put16(p + 76, (uint16_t)rlen);
}

/* Keep cluster event rev (watch_cluster) in sm's history. */
void evrec_keep_cluster(struct sm *sm, uint64_t rev, uint64_t time_ms,
    uint64_t leader_id, uint64_t term, const char *leader, const char *members)
{
	struct evrec_fields f = { 0 };

	f.kind = SEMD__EVENT_KIND__EVENT_CLUSTER;
	f.time_ms = time_ms;
	f.permit_id = leader_id;
	f.token = term;
	f.s[0] = f.s[1] = f.s[2] = "";
	f.s[3] = leader;
	f.s[4] = members;
	f.l.host = strlen(leader);
	f.l.reason = strlen(members);
	evrec_keep_fields(sm, NULL, 0, &f, rev);
}

/* Take a string of n bytes at *p into *buf, NUL-terminated; its start. */
static char *take_str(const uint8_t **p, size_t n, char **buf)
{
	char *s = *buf;

	memcpy(s, *p, n);
	s[n] = '\0';
	*p += n;
	*buf += n + 1;
	return s;
}

/*
 * Read the record of rev (len bytes at p) into ev (watch 0), its strings
 * copied into strs (room for len + 5 bytes); the owner's name is at
 * *owner, *olen bytes. False when the record is not whole.
 */
bool evrec_get(const uint8_t *p, uint32_t len, uint64_t rev,
    Semd__WatchEvent *ev, char *strs, const uint8_t **owner, size_t *olen)
{
	struct pbevent_lens l = { 0 };
	const uint8_t *q, *t;

	if (len < EVREC_WHO + EVREC_TAIL)
		return false;
	t = p + len - EVREC_TAIL;
	l.principal = get16(p + 4);
	l.client_name = get16(p + 6);
	l.host = get16(p + 8);
	l.name = t[73];
	*olen = get16(t + 74);
	l.reason = get16(t + 76);
	if (evrec_size(*olen, &l) != len)
		return false;
	semd__watch_event__init(ev);
	ev->pid = get32(p);
	q = p + EVREC_WHO;
	ev->principal = take_str(&q, l.principal, &strs);
	ev->client_name = take_str(&q, l.client_name, &strs);
	ev->host = take_str(&q, l.host, &strs);
	ev->name = take_str(&q, l.name, &strs);
	*owner = q;
	q += *olen;
	ev->reason = take_str(&q, l.reason, &strs);
	ev->kind = (Semd__EventKind)t[72];
	ev->limit = get32(t);
	ev->holders = get32(t + 4);
	ev->waiters = get32(t + 8);
	ev->max_waiters = get32(t + 12);
	ev->rate = get32(t + 16);
	ev->rate_period_ms = get32(t + 20);
	ev->burst = get32(t + 24);
	ev->n = get32(t + 28);
	ev->permit_id = get64(t + 32);
	ev->token = get64(t + 40);
	ev->request_id = get64(t + 48);
	ev->time_ms = get64(t + 56);
	ev->available = (int64_t)get64(t + 64);
	ev->revision = rev;
	if (ev->kind == SEMD__EVENT_KIND__EVENT_CLUSTER) {
		ev->leader_id = ev->permit_id;
		ev->term = ev->token;
		ev->leader = ev->host;
		ev->members = ev->reason;
		ev->permit_id = ev->token = 0;
		ev->host = ev->reason = (char *)"";
	}
	return true;
}

/*
 * The record of rev (len bytes at p) as a snapshot carries it: the owner's
 * u16 length and name, then the WatchEvent's protobuf bytes, into out (cap
 * bytes); returns its length, 0 when it is not whole or does not fit.
 */
size_t evrec_to_pb(const uint8_t *p, uint32_t len, uint64_t rev, uint8_t *out,
    size_t cap)
{
	Semd__WatchEvent ev;
	const uint8_t *owner;
	char *strs = malloc((size_t)len + 5);
	size_t olen, n = 0;

	if (strs != NULL && evrec_get(p, len, rev, &ev, strs, &owner, &olen) &&
	    cap >= 2 + olen) {
		out[0] = (uint8_t)olen;	/* little-endian */
		out[1] = (uint8_t)(olen >> 8);
		memcpy(out + 2, owner, olen);
		n = pbevent_pack(&ev, out + 2 + olen, cap - 2 - olen);
		n = n > 0 ? 2 + olen + n : 0;
	}
	free(strs);
	return n;
}

/*
 * Keep event rev of a snapshot (len bytes at p, as evrec_to_pb() writes
 * them; its revision is rev, whatever the bytes say) in sm's history, as
 * watch_keep() would have: the oldest go to make room, one too big for the
 * history empties it (no gap). False when the bytes are no such event.
 */
bool evrec_from_pb(struct sm *sm, uint64_t rev, const uint8_t *p, uint32_t len)
{
	struct evrec_fields f;
	Semd__WatchEvent *ev;
	struct pbevent_lens l;
	size_t olen;
	bool cluster;

	if (len < 2 || (olen = (size_t)p[0] | (size_t)p[1] << 8) + 2 > len ||
	    (ev = semd__watch_event__unpack(NULL, len - 2 - olen, p + 2 + olen)) == NULL)
		return false;
	cluster = ev->kind == SEMD__EVENT_KIND__EVENT_CLUSTER;
	pbevent_lens(ev, &l);
	if ((l.name == 0) != cluster || l.name > SM_NAME_MAX) {
		semd__watch_event__free_unpacked(ev, NULL);
		return false;
	}
	f.kind = (unsigned int)ev->kind;
	f.n = ev->n;
	f.pid = ev->pid;
	f.holders = ev->holders;
	f.waiters = ev->waiters;
	f.limit = ev->limit;
	f.rate = ev->rate;
	f.period = ev->rate_period_ms;
	f.burst = ev->burst;
	f.max_waiters = ev->max_waiters;
	f.time_ms = ev->time_ms;
	f.permit_id = ev->permit_id;
	f.token = ev->token;
	f.request_id = ev->request_id;
	f.available = ev->available;
	f.s[0] = ev->name;
	f.s[1] = ev->principal;
	f.s[2] = ev->client_name;
	f.s[3] = ev->host;
	f.s[4] = ev->reason;
	f.l = l;
	if (cluster) {
		/* Kept where evrec_keep_cluster() keeps them. */
		f.permit_id = ev->leader_id;
		f.token = ev->term;
		f.s[3] = ev->leader;
		f.s[4] = ev->members;
		f.l.host = strlen(ev->leader);
		f.l.reason = strlen(ev->members);
	}
	evrec_keep_fields(sm, p + 2, olen, &f, rev);
	semd__watch_event__free_unpacked(ev, NULL);
	return true;
}
