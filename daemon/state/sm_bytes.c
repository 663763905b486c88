/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_bytes.c - the little-endian byte strings the state is
 * written as (log entries, sm_entry.c; snapshots, sm_snap_*.c): a growing
 * buffer to write them into, and a bounded reader that notes running past the
 * end.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* Room for n more bytes; false (and failed: the bytes are lost) if none. */
bool bytes_room(struct sm_batch *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->failed)
		return false;
	if (b->cap - b->len >= n)
		return true;
	cap = b->cap ? b->cap : 1024;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2) {
			b->failed = true;
			return false;
		}
		cap *= 2;
	}
	if ((p = realloc(b->p, cap)) == NULL) {
		b->failed = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

/* Append n bytes. */
void bytes_put(struct sm_batch *b, const void *p, size_t n)
{
	if (n > 0 && bytes_room(b, n)) {
		memcpy(b->p + b->len, p, n);
		b->len += n;
	}
}

/* Append an integer of size bytes, little-endian. */
void bytes_int(struct sm_batch *b, uint64_t v, unsigned int size)
{
	unsigned int i;

	if (!bytes_room(b, size))
		return;
	for (i = 0; i < size; i++)
		b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

/* Take n bytes in place; NULL (and bad) when there are not that many. */
const uint8_t *rbuf_take(struct sm_rbuf *r, size_t n)
{
	const uint8_t *p;

	if (r->bad || r->len - r->off < n) {
		r->bad = true;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

/* An integer of size bytes, little-endian (0 when bad). */
uint64_t rbuf_int(struct sm_rbuf *r, unsigned int size)
{
	const uint8_t *p = rbuf_take(r, size);
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; p != NULL && i < size; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * A string after its length (size bytes) into buf (max bytes and a NUL);
 * its length. Longer than max, or a NUL inside: bad.
 */
size_t rbuf_str(struct sm_rbuf *r, unsigned int size, char *buf, size_t max)
{
	size_t n = (size_t)rbuf_int(r, size);
	const uint8_t *p;

	buf[0] = '\0';
	if (n > max) {
		r->bad = true;
		return 0;
	}
	if ((p = rbuf_take(r, n)) == NULL)
		return 0;
	memcpy(buf, p, n);
	buf[n] = '\0';
	if (strlen(buf) != n)
		r->bad = true;
	return n;
}
