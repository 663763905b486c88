/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/fuzz/fuzz_http_parse.c - the HTTP front door's request reader
 * (daemon/http/http_parse.c), which every byte a client sends goes through.
 *
 * The input: a byte m, then the bytes of a request as a client could send
 * them. Its head is read with a limit of 64 + 32 * m bytes: whatever it
 * holds, the reader takes a head whose every part lies inside it (a target
 * that starts with '/' or is "*", fields whose names are tokens and whose
 * values hold no line break, a length only when there is no chunked
 * coding), or refuses it with a status of its list; and no shorter part of
 * a head it took is taken (a prefix is "not whole yet"). The bytes after
 * the head are read as a chunked body twice, at once and a byte at a time:
 * both readings agree (the bytes taken, the body, whole or refused). The
 * target is percent-decoded: never longer, never with a NUL.
 */
#include <string.h>
#include <sys/types.h>

#include "daemon/http/http_parse.h"
#include "tests/fuzz/fuzz.h"

#define FUZZ_BODY_MAX	4096

/* Is c a byte of a token (a method, a field name)? */
static int fuzz_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != 0 && strchr("!#$%&'*+-.^_`|~", c));
}

/* Does p[0..n) lie inside d[0..size)? */
static int fuzz_inside(const char *p, size_t n, const char *d, size_t size)
{
	return p >= d && p + n <= d + size;
}

/* A head taken: every part of it as http_parse.h says. */
static void fuzz_head(const char *d, size_t size, size_t max,
    const struct hp_head *h, int len)
{
	size_t i, k;

	FUZZ_ASSERT((size_t)len == h->head_len && h->head_len <= size);
	FUZZ_ASSERT(h->head_len <= max);
	FUZZ_ASSERT(h->method != 0 && h->minor >= 0 && h->minor <= 1);
	FUZZ_ASSERT(h->target_len > 0 && fuzz_inside(h->target, h->target_len,
	    d, size));
	FUZZ_ASSERT(h->target[0] == '/' || (h->target_len == 1 &&
	    h->target[0] == '*' && h->method == HP_OPTIONS));
	for (i = 0; i < h->target_len; i++)
		FUZZ_ASSERT((unsigned char)h->target[i] > 0x20 &&
		    h->target[i] != 0x7f);
	FUZZ_ASSERT(h->nfields <= HP_MAX_FIELDS);
	for (i = 0; i < h->nfields; i++) {
		const struct hp_field *f = &h->fields[i];

		FUZZ_ASSERT(f->name_len > 0 && fuzz_inside(f->name, f->name_len,
		    d, size) && fuzz_inside(f->value, f->value_len, d, size));
		for (k = 0; k < f->name_len; k++)
			FUZZ_ASSERT(fuzz_tchar((unsigned char)f->name[k]));
		for (k = 0; k < f->value_len; k++)
			FUZZ_ASSERT(f->value[k] != '\r' && f->value[k] != '\n' &&
			    f->value[k] != '\0');
		FUZZ_ASSERT(f->value_len == 0 || (f->value[0] != ' ' &&
		    f->value[f->value_len - 1] != ' '));
	}
	FUZZ_ASSERT(!(h->has_length && h->chunked));
	FUZZ_ASSERT(!(h->chunked && h->minor == 0));
}

/* The body after the head, read at once and a byte at a time: the same. */
static void fuzz_chunked(const char *p, size_t n)
{
	static char out1[FUZZ_BODY_MAX], out2[FUZZ_BODY_MAX];
	struct hp_chunked a, b;
	size_t len1 = 0, len2 = 0, i, took2 = 0;
	ssize_t took1, r = 0;
	bool done1, done2 = false;

	hp_chunked_init(&a);
	hp_chunked_init(&b);
	took1 = hp_chunked_feed(&a, p, n, out1, &len1, sizeof out1, &done1);
	for (i = 0; i < n && !done2; i++) {
		r = hp_chunked_feed(&b, p + i, 1, out2, &len2, sizeof out2, &done2);
		if (r < 0)
			break;
		took2 += (size_t)r;
	}
	FUZZ_ASSERT(len1 <= sizeof out1 && len2 <= sizeof out2);
	if (took1 < 0) {
		FUZZ_ASSERT(r == took1);
		return;
	}
	FUZZ_ASSERT(r >= 0 && (size_t)took1 == took2 && done1 == done2);
	FUZZ_ASSERT(len1 == len2 && memcmp(out1, out2, len1) == 0);
	FUZZ_ASSERT((size_t)took1 <= n && (done1 || (size_t)took1 == n));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hp_head h, h2;
	static char dec[1 << 16];
	const char *d = (const char *)data + 1;
	size_t max, n;
	ssize_t dl;
	int len, r;

	if (size < 1 || size > sizeof dec - 1)
		return 0;
	max = 64 + 32 * (size_t)data[0];
	n = size - 1;
	len = hp_parse_head(d, n, max, &h);
	FUZZ_ASSERT(len >= 0 || len == -400 || len == -431 || len == -501 ||
	    len == -505 || len == -417);
	if (len <= 0) {
		fuzz_chunked(d, n);
		return 0;
	}
	fuzz_head(d, n, max, &h, len);
	/* a shorter part of what was taken is not whole */
	r = hp_parse_head(d, (size_t)len - 1, max, &h2);
	FUZZ_ASSERT(r == 0);
	r = hp_parse_head(d, (size_t)len / 2, max, &h2);
	FUZZ_ASSERT(r == 0);
	/* the target decoded: not longer, no NUL */
	dl = hp_unescape(dec, h.target, h.target_len, data[0] & 1);
	FUZZ_ASSERT(dl < 0 || ((size_t)dl <= h.target_len &&
	    strlen(dec) == (size_t)dl));
	fuzz_chunked(d + len, n - (size_t)len);
	return 0;
}
