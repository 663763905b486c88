/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * core/strcopy.h - copies of the short strings a request and an event carry
 * (names, principals, labels: mostly under 17 bytes) without a call into
 * libc: two copies of a fixed size that overlap, which the compiler makes
 * into a load and a store each, never reading or writing outside the n
 * bytes. Longer ones go to memcpy() and memchr(); strcopy_same() compares
 * them the same way.
 */
#ifndef SEMD_CORE_STRCOPY_H
#define SEMD_CORE_STRCOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Has the word a zero byte? (The classic bit trick, exact for the test.) */
static inline bool strcopy_has_zero(uint64_t v)
{
	return ((v - 0x0101010101010101ULL) & ~v & 0x8080808080808080ULL) != 0;
}

/*
 * Copy n bytes from s to d; false (d then holds some of them) when one of
 * them is a NUL byte, if nul_ok is false.
 */
static inline bool strcopy(void *d, const void *s, size_t n, bool nul_ok)
{
	const uint8_t *q = s;
	uint8_t *p = d;
	uint64_t a, b;
	uint32_t c, e;
	size_t i;

	if (n >= 8 && n <= 16) {
		memcpy(&a, q, 8);
		memcpy(&b, q + n - 8, 8);
		memcpy(p, &a, 8);
		memcpy(p + n - 8, &b, 8);
		return nul_ok || (!strcopy_has_zero(a) && !strcopy_has_zero(b));
	}
	if (n >= 4 && n < 8) {
		memcpy(&c, q, 4);
		memcpy(&e, q + n - 4, 4);
		memcpy(p, &c, 4);
		memcpy(p + n - 4, &e, 4);
		return nul_ok || (!strcopy_has_zero(0x0101010100000000ULL | c) &&
		    !strcopy_has_zero(0x0101010100000000ULL | e));
	}
	if (n > 16) {
		if (!nul_ok && memchr(q, '\0', n) != NULL)
			return false;
		memcpy(p, q, n);
		return true;
	}
	for (i = 0; i < n; i++) {
		if (!nul_ok && q[i] == 0)
			return false;
		p[i] = q[i];
	}
	return true;
}

/* Are the n bytes at a and b the same? */
static inline bool strcopy_same(const void *a, const void *b, size_t n)
{
	const uint8_t *p = a, *q = b;
	uint64_t x, y, u, v;
	uint32_t c, d, e, f;

	if (n >= 8 && n <= 16) {
		memcpy(&x, p, 8);
		memcpy(&y, q, 8);
		memcpy(&u, p + n - 8, 8);
		memcpy(&v, q + n - 8, 8);
		return ((x ^ y) | (u ^ v)) == 0;
	}
	if (n >= 4 && n < 8) {
		memcpy(&c, p, 4);
		memcpy(&d, q, 4);
		memcpy(&e, p + n - 4, 4);
		memcpy(&f, q + n - 4, 4);
		return ((c ^ d) | (e ^ f)) == 0;
	}
	return memcmp(p, q, n) == 0;
}

#endif
