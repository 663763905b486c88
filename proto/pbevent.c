/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proto/pbevent.c - a WatchEvent packed by hand (pbevent.h says why).
 * protobuf-c writes a proto3 message's fields in the order of its
 * descriptor, which protoc-c sorts by number: max_waiters (30) after
 * revision (21), though the .proto declares it first.
 */
#include <string.h>

#include "proto/pbevent.h"
#include "proto/pbwire.h"

/* Length of s, 0 for NULL (protobuf-c leaves both out). */
static inline size_t str_len(const char *s)
{
	return s != NULL && s[0] != '\0' ? strlen(s) : 0;
}

/* Bytes of a varint field (any number) of value v; 0 when v is 0. */
static size_t uint_size(unsigned int field, uint64_t v)
{
	return v ? pb_varint_size((uint64_t)field << 3) + pb_varint_size(v) : 0;
}

/* Bytes of a string field of len bytes; 0 when empty. */
static size_t str_size(unsigned int field, size_t len)
{
	return len ? pb_varint_size((uint64_t)field << 3) + pb_varint_size(len) + len : 0;
}

/* Write v as a varint at p; returns the byte after it. */
static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	return p + pb_put_varint(p, v);
}

/* Write field's key for wire type wt (the number's varint of 1 or 2 bytes). */
static inline uint8_t *put_key(uint8_t *p, unsigned int field, unsigned int wt)
{
	unsigned int k = field << 3 | wt;

	if (k < 0x80) {
		*p++ = (uint8_t)k;
	} else {
		*p++ = (uint8_t)(k | 0x80);
		*p++ = (uint8_t)(k >> 7);
	}
	return p;
}

/* Write a varint field unless v is 0. */
static inline uint8_t *put_uint(uint8_t *p, unsigned int field, uint64_t v)
{
	if (v == 0)
		return p;
	return put_varint(put_key(p, field, PB_WT_VARINT), v);
}

/* Write a string field of len bytes unless it is empty. */
static inline uint8_t *put_str(uint8_t *p, unsigned int field, const char *s, size_t len)
{
	if (len == 0)
		return p;
	p = put_varint(put_key(p, field, PB_WT_LEN), len);
	memcpy(p, s, len);
	return p + len;
}

/* The exact packed size of ev. */
static size_t event_size(const Semd__WatchEvent *ev, const struct pbevent_lens *l)
{
	return uint_size(1, ev->watch) + str_size(2, l->name) +
	    uint_size(3, (uint64_t)(int64_t)ev->kind) + uint_size(4, ev->time_ms) +
	    uint_size(5, ev->n) + uint_size(6, ev->permit_id) +
	    uint_size(7, ev->token) + uint_size(8, ev->request_id) +
	    str_size(9, l->principal) + str_size(10, l->client_name) +
	    str_size(11, l->host) + uint_size(12, ev->pid) +
	    uint_size(13, ev->holders) + uint_size(14, ev->waiters) +
	    uint_size(15, (uint64_t)ev->available) + uint_size(16, ev->limit) +
	    uint_size(17, ev->rate) + uint_size(18, ev->rate_period_ms) +
	    uint_size(19, ev->burst) + str_size(20, l->reason) +
	    uint_size(21, ev->revision) + uint_size(30, ev->max_waiters);
}

/*
 * The most its fields can take besides the strings: 22 keys of at most 2
 * bytes and varints of at most 10, plus the strings' length prefixes.
 */
#define PBEVENT_FIXED_MAX	(22 * (2 + 10))

void pbevent_lens(const Semd__WatchEvent *ev, struct pbevent_lens *l)
{
	l->name = str_len(ev->name);
	l->principal = str_len(ev->principal);
	l->client_name = str_len(ev->client_name);
	l->host = str_len(ev->host);
	l->reason = str_len(ev->reason);
}

/* Pack ev, its strings of the lengths l, as pbevent_pack(). */
static size_t pack_lens(const Semd__WatchEvent *ev, const struct pbevent_lens *l,
    uint8_t *out, size_t cap)
{
	uint8_t *p = out;

	/* Measured exactly only when the quick bound does not fit. */
	if (PBEVENT_FIXED_MAX + l->name + l->principal + l->client_name + l->host +
	    l->reason > cap && event_size(ev, l) > cap)
		return 0;
	p = put_uint(p, 1, ev->watch);
	p = put_str(p, 2, ev->name, l->name);
	p = put_uint(p, 3, (uint64_t)(int64_t)ev->kind);
	p = put_uint(p, 4, ev->time_ms);
	p = put_uint(p, 5, ev->n);
	p = put_uint(p, 6, ev->permit_id);
	p = put_uint(p, 7, ev->token);
	p = put_uint(p, 8, ev->request_id);
	p = put_str(p, 9, ev->principal, l->principal);
	p = put_str(p, 10, ev->client_name, l->client_name);
	p = put_str(p, 11, ev->host, l->host);
	p = put_uint(p, 12, ev->pid);
	p = put_uint(p, 13, ev->holders);
	p = put_uint(p, 14, ev->waiters);
	p = put_uint(p, 15, (uint64_t)ev->available);
	p = put_uint(p, 16, ev->limit);
	p = put_uint(p, 17, ev->rate);
	p = put_uint(p, 18, ev->rate_period_ms);
	p = put_uint(p, 19, ev->burst);
	p = put_str(p, 20, ev->reason, l->reason);
	p = put_uint(p, 21, ev->revision);
	p = put_uint(p, 30, ev->max_waiters);
	return (size_t)(p - out);
}

size_t pbevent_pack(const Semd__WatchEvent *ev, uint8_t *out, size_t cap)
{
	struct pbevent_lens l;

	pbevent_lens(ev, &l);
	return pack_lens(ev, &l, out, cap);
}
