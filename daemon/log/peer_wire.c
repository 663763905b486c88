/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/peer_wire.c - libraft's peer messages checked on the wire
 * (peer_wire.h). A small state machine: a preamble (16 bytes) and its
 * header are held back in w->buf until whole and checked, then handed on
 * together; the payload the header announced passes as it comes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <raft.h>

#include "daemon/log/peer_wire.h"

/* The largest header of each type (AppendEntries, InstallSnapshot grow). */
#define HDR_AE_FIXED	48
#define HDR_IS_FIXED	56
#define HDR_MAX		(HDR_AE_FIXED + 16 * PEER_WIRE_MAX_ENTRIES)

/* The little-endian 64 bits at p. */
static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The little-endian 32 bits at p. */
static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/* A new stream. */
void peer_wire_init(struct peer_wire *w)
{
	memset(w, 0, sizeof *w);
	w->want = PEER_WIRE_PREAMBLE;
}

/* Free the held bytes. */
void peer_wire_free(struct peer_wire *w)
{
	free(w->buf);
	w->buf = NULL;
	w->cap = 0;
}

/*
 * Is this libraft's encoding of a configuration, read within len, that
 * libraft takes (no id or address twice: its decoder fails on those)?
 */
bool peer_wire_conf_ok(const uint8_t *p, size_t len)
{
	size_t at[PEER_WIRE_MAX_SERVERS];	/* where each server starts */
	size_t off = 9, i, j, a;
	uint64_t n;

	if (len < 9 || len > PEER_WIRE_MAX_CONF || len % 8 != 0 || p[0] != 1)
		return false;
	n = le64(p + 1);
	if (n > PEER_WIRE_MAX_SERVERS)
		return false;
	for (i = 0; i < n; i++) {
		if (len - off < 8 || le64(p + off) == 0)
			return false;
		at[i] = off;
		off += 8;
		for (a = off; a < len && p[a] != '\0'; a++)
			;
		/* An address of 1 to 255 bytes, its NUL, then the role. */
		if (a == off || a - off > 255 || len - a < 2 ||
		    p[a + 1] > RAFT_SPARE)
			return false;
		for (j = 0; j < i; j++)
			if (le64(p + at[j]) == le64(p + at[i]) ||
			    strcmp((const char *)p + at[j] + 8,
			    (const char *)p + off) == 0)
				return false;
		off = a + 2;
	}
	/* Padding: zeros, fewer than 8. */
	if (len - off >= 8)
		return false;
	for (; off < len; off++)
		if (p[off] != 0)
			return false;
	return true;
}

/* Refuse with why; nothing more of the stream passes. */
static int wire_refuse(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int wire_refuse(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

/* The header length the preamble gives: checked against its type. */
static int wire_preamble(struct peer_wire *w, char *why, size_t whylen)
{
	const uint8_t *p = w->buf;
	uint64_t hlen = le64(p + 8), min, max;
	unsigned type = p[0], version = p[2];
	static const unsigned char versions[] = {
		[RAFT_APPEND_ENTRIES] = 0, [RAFT_APPEND_ENTRIES_RESULT] = 2,
		[RAFT_REQUEST_VOTE] = 2, [RAFT_REQUEST_VOTE_RESULT] = 2,
		[RAFT_INSTALL_SNAPSHOT] = 0, [RAFT_TIMEOUT_NOW] = 0,
	};
	static const unsigned char fixed[] = {
		[RAFT_APPEND_ENTRIES_RESULT] = 32, [RAFT_REQUEST_VOTE] = 40,
		[RAFT_REQUEST_VOTE_RESULT] = 24, [RAFT_TIMEOUT_NOW] = 24,
	};

	if (type < RAFT_APPEND_ENTRIES || type > RAFT_TIMEOUT_NOW ||
	    p[1] != 0 || p[3] != 0 || le32(p + 4) != 0)
		return wire_refuse(why, whylen, "a message of unknown type %llu "
		    "(preamble %016llx)", (unsigned long long)type,
		    (unsigned long long)le64(p));
	if (version != versions[type])
		return wire_refuse(why, whylen, "message type %u of version "
		    "%u", type, version);
	if (type == RAFT_APPEND_ENTRIES) {
		min = HDR_AE_FIXED;
		max = HDR_MAX;
	} else if (type == RAFT_INSTALL_SNAPSHOT) {
		min = HDR_IS_FIXED + 16;
		max = HDR_IS_FIXED + PEER_WIRE_MAX_CONF;
	} else {
		min = max = fixed[type];
	}
	if (hlen < min || hlen > max)
		return wire_refuse(why, whylen, "a header of %llu bytes for "
		    "message type %u", (unsigned long long)hlen, type);
	return 0;
}

/*
 * A whole header (after the preamble in w->buf): its sizes agree, its
 * entries are libraft's; the payload to pass is set.
 */
static int wire_header(struct peer_wire *w, char *why, size_t whylen)
{
	const uint8_t *h = w->buf + PEER_WIRE_PREAMBLE;
	size_t hlen = w->have - PEER_WIRE_PREAMBLE, i;
	uint64_t n, len, sum = 0;

	w->payload = 0;
	switch (w->buf[0]) {
	case RAFT_APPEND_ENTRIES:
		n = le64(h + 32);
		if (n > PEER_WIRE_MAX_ENTRIES || hlen != HDR_AE_FIXED + 16 * n)
			return wire_refuse(why, whylen, "an AppendEntries of %llu "
			    "entries in a header of %zu bytes",
			    (unsigned long long)n, hlen);
		for (i = 0; i < n; i++) {
			const uint8_t *e = h + 40 + 16 * i;

			len = le32(e + 12);
			if (e[8] < RAFT_COMMAND || e[8] > RAFT_CHANGE ||
			    e[9] != 0 || e[10] != 0 || e[11] != 0)
				return wire_refuse(why, whylen, "entry %zu of an "
				    "AppendEntries is of unknown type %u", i,
				    (unsigned)e[8]);
			if (len == 0 || len % 8 != 0)
				return wire_refuse(why, whylen, "entry %zu of an "
				    "AppendEntries is %llu bytes long, not a "
				    "multiple of 8", i, (unsigned long long)len);
			sum += len;
		}
		if (sum > PEER_WIRE_MAX_PAYLOAD)
			return wire_refuse(why, whylen, "an AppendEntries of %llu "
			    "bytes of entries (at most %llu)",
			    (unsigned long long)sum,
			    (unsigned long long)PEER_WIRE_MAX_PAYLOAD);
		w->payload = sum;
		break;
	case RAFT_INSTALL_SNAPSHOT:
		len = le64(h + 32);
		if (len > PEER_WIRE_MAX_CONF || hlen != HDR_IS_FIXED + len ||
		    !peer_wire_conf_ok(h + 40, (size_t)len))
			return wire_refuse(why, whylen, "an InstallSnapshot whose "
			    "configuration (%llu bytes in a header of %zu) "
			    "libraft cannot read", (unsigned long long)len, hlen);
		w->payload = le64(h + 40 + len);
		if (w->payload == 0 || w->payload > PEER_WIRE_MAX_PAYLOAD)
			return wire_refuse(why, whylen, "an InstallSnapshot of %llu "
			    "bytes (at most %llu)",
			    (unsigned long long)w->payload,
			    (unsigned long long)PEER_WIRE_MAX_PAYLOAD);
		break;
	default:
		break;
	}
	return 0;
}

/* Room for want bytes in w->buf; false without memory. */
static bool wire_room(struct peer_wire *w, size_t want)
{
	uint8_t *b;

	if (want <= w->cap)
		return true;
	if ((b = realloc(w->buf, want)) == NULL)
		return false;
	w->buf = b;
	w->cap = want;
	return true;
}

/* Check bytes from the peer; pass on what raft may read. */
int peer_wire_feed(struct peer_wire *w, const uint8_t *in, size_t n,
    int (*emit)(void *arg, const uint8_t *p, size_t n), void *arg,
    char *why, size_t whylen)
{
	size_t k;

	while (n > 0) {
		if (w->payload > 0) {
			/* The payload the checked header announced. */
			k = n < w->payload ? n : (size_t)w->payload;
			if (emit(arg, in, k) != 0)
				return wire_refuse(why, whylen, "out of memory");
			in += k;
			n -= k;
			if ((w->payload -= k) == 0)
				w->messages++;
			continue;
		}
		if (!wire_room(w, w->want))
			return wire_refuse(why, whylen, "out of memory");
		k = w->want - w->have;
		if (k > n)
			k = n;
		memcpy(w->buf + w->have, in, k);
		w->have += k;
		in += k;
		n -= k;
		if (w->have < w->want)
			break;
		if (w->have == PEER_WIRE_PREAMBLE) {
			if (wire_preamble(w, why, whylen) != 0)
				return -1;
			w->want = PEER_WIRE_PREAMBLE + (size_t)le64(w->buf + 8);
			continue;
		}
		/* Preamble and header whole: checked, then handed on. */
		if (wire_header(w, why, whylen) != 0)
			return -1;
		if (emit(arg, w->buf, w->have) != 0)
			return wire_refuse(why, whylen, "out of memory");
		if (w->payload == 0)
			w->messages++;
		w->have = 0;
		w->want = PEER_WIRE_PREAMBLE;
	}
	return 0;
}
