/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proto/pbwire.h - protobuf's wire format, the writing half, for the hand
 * coders of the hot messages (daemon/fastpb.c, bench/wire.c). Inline: they
 * sit on the daemon's and the benchmark's hot paths.
 */
#ifndef SEMD_PROTO_PBWIRE_H
#define SEMD_PROTO_PBWIRE_H

#include <stddef.h>
#include <stdint.h>

/* Wire types. */
#define PB_WT_VARINT	0
#define PB_WT_LEN	2

/* Bytes of v as a varint. */
static inline size_t pb_varint_size(uint64_t v)
{
	return ((size_t)(64 - __builtin_clzll(v | 1)) + 6) / 7;
}

/* Write v as a varint at out; returns its bytes. */
static inline size_t pb_put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

/* Size of a varint field (tag < 16); 0 when v is 0 (proto3 leaves it out). */
static inline size_t pb_uint_field_size(uint64_t v)
{
	return v ? 1 + pb_varint_size(v) : 0;
}

/* Write a varint field (tag < 16) unless v is 0; returns its bytes. */
static inline size_t pb_put_uint_field(uint8_t *out, unsigned int field, uint64_t v)
{
	if (v == 0)
		return 0;
	out[0] = (uint8_t)(field << 3 | PB_WT_VARINT);
	return 1 + pb_put_varint(out + 1, v);
}

/* Write the tag (< 16) and length of a length-delimited field. */
static inline size_t pb_put_len_field(uint8_t *out, unsigned int field, size_t len)
{
	out[0] = (uint8_t)(field << 3 | PB_WT_LEN);
	return 1 + pb_put_varint(out + 1, len);
}

#endif
