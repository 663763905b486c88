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

/* Little-endian stores and loads. */
static inline void le16(uint8_t *p, uint16_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap16(v);
#endif
	memcpy(p, &v, 2);
}

static inline void le32(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, 4);
}

static inline void le64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, 8);
}

static inline uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap16(v);
#endif
	return v;
}

static inline uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

static inline uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* The bytes of the record of an event with strings of lengths l, owner olen. */
size_t evrec_size(size_t olen, const struct pbevent_lens *l)
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

/*
 * Write the record of ev (its strings of lengths l: a name of at most 255
 * bytes, the others of at most 65535) with owner's olen bytes at p, which
 * has evrec_size() bytes.
 */
void evrec_put(uint8_t *p, const uint8_t *owner, size_t olen,
    const Semd__WatchEvent *ev, const struct pbevent_lens *l)
{
	le16(p, (uint16_t)olen);
	p = put_str(p + 2, (const char *)owner, olen);
	p[0] = (uint8_t)ev->kind;
	p[1] = (uint8_t)l->name;
	le16(p + 2, (uint16_t)l->principal);
	le16(p + 4, (uint16_t)l->client_name);
	le16(p + 6, (uint16_t)l->host);
	le16(p + 8, (uint16_t)l->reason);
	le32(p + 10, ev->n);
	le32(p + 14, ev->pid);
	le32(p + 18, ev->holders);
	le32(p + 22, ev->waiters);
	le32(p + 26, ev->limit);
	le32(p + 30, ev->rate);
	le32(p + 34, ev->rate_period_ms);
	le32(p + 38, ev->burst);
	le32(p + 42, ev->max_waiters);
	le64(p + 46, ev->time_ms);
	le64(p + 54, ev->permit_id);
	le64(p + 62, ev->token);
	le64(p + 70, ev->request_id);
	le64(p + 78, (uint64_t)ev->available);
	p += EVREC_FIXED;
	p = put_str(p, ev->name, l->name);
	p = put_str(p, ev->principal, l->principal);
	p = put_str(p, ev->client_name, l->client_name);
	p = put_str(p, ev->host, l->host);
	(void)put_str(p, ev->reason, l->reason);
}

/*
 * Keep ev, the strings of lengths l (a name of at most 255 bytes), with the
 * owner's olen bytes, in sm's history: the oldest go to make room. A reason
 * that makes the record longer than EVREC_MAX is cut; an owner's name over
 * 1024 bytes is not kept (the identity is shown by its principal only); a
 * record still too long empties the history (no gap).
 */
void evrec_keep(struct sm *sm, const uint8_t *owner, size_t olen,
    Semd__WatchEvent *ev, struct pbevent_lens *l)
{
	char *reason = ev->reason, cut[256];
	size_t n;
	uint8_t *rec;

	if (olen > 1024)
		olen = 0;
	if ((n = evrec_size(olen, l)) > EVREC_MAX) {
		snprintf(cut, sizeof cut, "%.200s...", reason);
		ev->reason = cut;
		l->reason = strlen(cut);
		n = evrec_size(olen, l);
	}
	if (n <= EVREC_MAX && l->principal <= UINT16_MAX && l->client_name <= UINT16_MAX &&
	    l->host <= UINT16_MAX && (rec = evring_put(&sm->evring, ev->revision, (uint32_t)n)) != NULL)
		evrec_put(rec, owner, olen, ev, l);
	else
		evring_resize(&sm->evring, sm->evring.size);
	ev->reason = reason;
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
	struct pbevent_lens l;
	const uint8_t *q;

	if (len < 2 || (size_t)get16(p) + 2 + EVREC_FIXED > len)
		return false;
	*olen = get16(p);
	*owner = p + 2;
	q = p + 2 + *olen;
	l.name = q[1];
	l.principal = get16(q + 2);
	l.client_name = get16(q + 4);
	l.host = get16(q + 6);
	l.reason = get16(q + 8);
	if (evrec_size(*olen, &l) != len)
		return false;
	semd__watch_event__init(ev);
	ev->kind = (Semd__EventKind)q[0];
	ev->n = get32(q + 10);
	ev->pid = get32(q + 14);
	ev->holders = get32(q + 18);
	ev->waiters = get32(q + 22);
	ev->limit = get32(q + 26);
	ev->rate = get32(q + 30);
	ev->rate_period_ms = get32(q + 34);
	ev->burst = get32(q + 38);
	ev->max_waiters = get32(q + 42);
	ev->time_ms = get64(q + 46);
	ev->permit_id = get64(q + 54);
	ev->token = get64(q + 62);
	ev->request_id = get64(q + 70);
	ev->available = (int64_t)get64(q + 78);
	ev->revision = rev;
	q += EVREC_FIXED;
	ev->name = take_str(&q, l.name, &strs);
	ev->principal = take_str(&q, l.principal, &strs);
	ev->client_name = take_str(&q, l.client_name, &strs);
	ev->host = take_str(&q, l.host, &strs);
	ev->reason = take_str(&q, l.reason, &strs);
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
		le16(out, (uint16_t)olen);
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
	Semd__WatchEvent *ev;
	struct pbevent_lens l;
	size_t olen;

	if (len < 2 || (olen = get16(p)) + 2 > len ||
	    (ev = semd__watch_event__unpack(NULL, len - 2 - olen, p + 2 + olen)) == NULL)
		return false;
	pbevent_lens(ev, &l);
	if (l.name == 0 || l.name > SM_NAME_MAX) {
		semd__watch_event__free_unpacked(ev, NULL);
		return false;
	}
	ev->revision = rev;
	evrec_keep(sm, p + 2, olen, ev, &l);
	semd__watch_event__free_unpacked(ev, NULL);
	return true;
}
