/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_evrec.c - a kept event as the watch history holds it
 * (sm_evring.c gives each its revision): the u16 length and the name of its
 * name's owner (who may see the identity, beside administrators and the
 * same principal), then the event in a fixed layout, little-endian whatever
 * the host's byte order (the same bytes on every replica):
 *
 *   0  u8  kind                    1  u8  the name's length
 *   2  u16 the lengths of principal, client_name, host, reason
 *  10  u32 n, pid, holders, waiters, limit, rate, rate_period_ms, burst,
 *          max_waiters
 *  46  u64 time_ms, permit_id, token, request_id, available (two's complement)
 *  86  the five strings, in that order, without NUL
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strcopy.h"
#include "daemon/state/sm-int.h"
#include "proto/pbevent.h"

#define EVREC_FIXED	86u

_Static_assert(SM_NAME_MAX <= UINT8_MAX, "a record's name length is a byte");

/*
 * Store v's low size bytes at p, little-endian; load them. Inline with a
 * constant size: one move on a little-endian host.
 */
static inline void le_put(uint8_t *p, uint64_t v, unsigned int size)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, &v, size);
#else
	unsigned int i;

	for (i = 0; i < size; i++)
		p[i] = (uint8_t)(v >> (8 * i));
#endif
}

static inline uint64_t le_get(const uint8_t *p, unsigned int size)
{
	uint64_t v = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(&v, p, size);
#else
	unsigned int i;

	for (i = 0; i < size; i++)
		v |= (uint64_t)p[i] << (8 * i);
#endif
	return v;
}

/* The bytes of the record of an event with strings of lengths l, owner olen. */
static inline size_t evrec_size(size_t olen, const struct pbevent_lens *l)
{
	return 2 + olen + EVREC_FIXED + l->name + l->principal + l->client_name +
	    l->host + l->reason;
}

/* Copy n bytes of s to p; the byte after them. */
static inline uint8_t *put_str(uint8_t *p, const char *s, size_t n)
{
	(void)strcopy(p, s, n, true);
	return p + n;
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
 * Inline: its callers' fields go straight to the record.
 */
static inline __attribute__((always_inline)) void
evrec_write(uint8_t *p, const uint8_t *owner, size_t olen,
    const struct evrec_fields *f)
{
	le_put(p, (uint16_t)olen, 2);
	p = put_str(p + 2, (const char *)owner, olen);
	p[0] = (uint8_t)f->kind;
	p[1] = (uint8_t)f->l.name;
	le_put(p + 2, (uint16_t)f->l.principal, 2);
	le_put(p + 4, (uint16_t)f->l.client_name, 2);
	le_put(p + 6, (uint16_t)f->l.host, 2);
	le_put(p + 8, (uint16_t)f->l.reason, 2);
	le_put(p + 10, f->n, 4);
	le_put(p + 14, f->pid, 4);
	le_put(p + 18, f->holders, 4);
	le_put(p + 22, f->waiters, 4);
	le_put(p + 26, f->limit, 4);
	le_put(p + 30, f->rate, 4);
	le_put(p + 34, f->period, 4);
	le_put(p + 38, f->burst, 4);
	le_put(p + 42, f->max_waiters, 4);
	le_put(p + 46, f->time_ms, 8);
	le_put(p + 54, f->permit_id, 8);
	le_put(p + 62, f->token, 8);
	le_put(p + 70, f->request_id, 8);
	le_put(p + 78, (uint64_t)f->available, 8);
	p += EVREC_FIXED;
	p = put_str(p, f->s[0], f->l.name);
	p = put_str(p, f->s[1], f->l.principal);
	p = put_str(p, f->s[2], f->l.client_name);
	p = put_str(p, f->s[3], f->l.host);
	(void)put_str(p, f->s[4], f->l.reason);
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
	const uint8_t *owner = sem->owner != NULL ? (const uint8_t *)sem->owner->name : NULL;
	size_t olen = sem->owner != NULL ? sem->owner->len : 0, n;
	const struct sm_rate *rt = sem->rate;
	struct pbevent_lens l = { 0 };
	const char *pr = "", *cn = "", *host = "", *why = w->reason != NULL ? w->reason : "";
	uint8_t *p;

	l.name = sem->len;
	l.principal = l.client_name = l.host = 0;
	if (ident != NULL) {
		if (ident->pr != NULL) {
			pr = ident->pr->name;
			l.principal = ident->pr->len;
		}
		cn = ident->client_name;
		l.client_name = ident->client_name_len;
		host = ident->host;
		l.host = ident->host_len;
	}
	l.reason = why[0] != '\0' ? strlen(why) : 0;
	if (olen > 1024 || (n = evrec_size(olen, &l)) > EVREC_MAX) {
		evrec_keep_long(sm, sem, ident, w, rev, time_ms, available);
		return;
	}
	if ((p = evring_put(&sm->evring, rev, (uint32_t)n)) == NULL)
		return;
	/* evrec_write()'s layout, straight from the state (the hot path) */
	le_put(p, olen, 2);
	p = put_str(p + 2, (const char *)owner, olen);
	p[0] = (uint8_t)w->kind;
	p[1] = (uint8_t)l.name;
	le_put(p + 2, l.principal, 2);
	le_put(p + 4, l.client_name, 2);
	le_put(p + 6, l.host, 2);
	le_put(p + 8, l.reason, 2);
	le_put(p + 10, w->n, 4);
	le_put(p + 14, ident != NULL ? ident->pid : 0, 4);
	le_put(p + 18, sem->nholders, 4);
	le_put(p + 22, sem->nwaiters, 4);
	le_put(p + 26, sem->limit, 4);
	if (rt != NULL) {
		le_put(p + 30, rt->rate, 4);
		le_put(p + 34, rt->period_ms, 4);
		le_put(p + 38, rt->burst, 4);
	} else {
		memset(p + 30, 0, 12);
	}
	le_put(p + 42, sem->max_waiters, 4);
	le_put(p + 46, time_ms, 8);
	le_put(p + 54, w->permit_id, 8);
	le_put(p + 62, w->token, 8);
	le_put(p + 70, w->request_id, 8);
	le_put(p + 78, (uint64_t)available, 8);
	p += EVREC_FIXED;
	p = put_str(p, sem->name, l.name);
	p = put_str(p, pr, l.principal);
	p = put_str(p, cn, l.client_name);
	p = put_str(p, host, l.host);
	(void)put_str(p, why, l.reason);
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
	const uint8_t *q;

	if (len < 2 || (size_t)(uint16_t)le_get(p, 2) + 2 + EVREC_FIXED > len)
		return false;
	*olen = (uint16_t)le_get(p, 2);
	*owner = p + 2;
	q = p + 2 + *olen;
	l.name = q[1];
	l.principal = (uint16_t)le_get(q + 2, 2);
	l.client_name = (uint16_t)le_get(q + 4, 2);
	l.host = (uint16_t)le_get(q + 6, 2);
	l.reason = (uint16_t)le_get(q + 8, 2);
	if (evrec_size(*olen, &l) != len)
		return false;
	semd__watch_event__init(ev);
	ev->kind = (Semd__EventKind)q[0];
	ev->n = (uint32_t)le_get(q + 10, 4);
	ev->pid = (uint32_t)le_get(q + 14, 4);
	ev->holders = (uint32_t)le_get(q + 18, 4);
	ev->waiters = (uint32_t)le_get(q + 22, 4);
	ev->limit = (uint32_t)le_get(q + 26, 4);
	ev->rate = (uint32_t)le_get(q + 30, 4);
	ev->rate_period_ms = (uint32_t)le_get(q + 34, 4);
	ev->burst = (uint32_t)le_get(q + 38, 4);
	ev->max_waiters = (uint32_t)le_get(q + 42, 4);
	ev->time_ms = le_get(q + 46, 8);
	ev->permit_id = le_get(q + 54, 8);
	ev->token = le_get(q + 62, 8);
	ev->request_id = le_get(q + 70, 8);
	ev->available = (int64_t)le_get(q + 78, 8);
	ev->revision = rev;
	q += EVREC_FIXED;
	ev->name = take_str(&q, l.name, &strs);
	ev->principal = take_str(&q, l.principal, &strs);
	ev->client_name = take_str(&q, l.client_name, &strs);
	ev->host = take_str(&q, l.host, &strs);
	ev->reason = take_str(&q, l.reason, &strs);
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
		le_put(out, (uint16_t)olen, 2);
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

	if (len < 2 || (olen = (uint16_t)le_get(p, 2)) + 2 > len ||
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
