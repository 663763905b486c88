/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_parse.h - HTTP/1.1 requests read from bytes (RFC 9112):
 * the head (request line and header fields) and a chunked body. Pure: no
 * I/O, no allocation; what it finds points into the bytes it was given.
 * Strict and bounded: the head has a size and a count of fields it may not
 * pass, and anything RFC 9112 lets a server refuse is refused with the
 * status to answer (a request smuggled past a proxy needs two readings of
 * one message: two lengths, a length beside a chunked coding, a field
 * folded over lines, a space before a colon - all are refused). Fuzzed by
 * tests/fuzz/fuzz_http_parse.c.
 */
#ifndef SEMD_HTTP_PARSE_H
#define SEMD_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Header fields a request may have (431 beyond). */
#define HP_MAX_FIELDS	64

/* A method's bit (as enum http_method in http-int.h), 0: unknown. */
#define HP_GET		(1 << 0)
#define HP_POST		(1 << 1)
#define HP_HEAD		(1 << 2)
#define HP_PUT		(1 << 3)
#define HP_DELETE	(1 << 4)
#define HP_OPTIONS	(1 << 5)
#define HP_TRACE	(1 << 6)
#define HP_CONNECT	(1 << 7)
#define HP_PATCH	(1 << 8)

struct hp_field {
	const char	*name;
	size_t		name_len;
	const char	*value;		/* without the white space around it */
	size_t		value_len;
};

/* A request's head, as read (pointers into the bytes given). */
struct hp_head {
	int		method;		/* HP_* */
	const char	*target;	/* "/v1/x?y" or "*" */
	size_t		target_len;
	int		minor;		/* HTTP/1.minor: 0 or 1 */
	size_t		nfields;
	struct hp_field	fields[HP_MAX_FIELDS];
	uint64_t	content_length;	/* with has_length */
	bool		has_length;
	bool		chunked;	/* Transfer-Encoding: chunked */
	bool		close;		/* the connection ends after it */
	bool		expect_continue; /* Expect: 100-continue */
	size_t		head_len;	/* bytes of the head, its empty line too */
};

/*
 * Read a request's head from p[0..len), at most max bytes of it (empty
 * lines before it, which RFC 9112 lets a server skip, count too). Returns
 * the head's length (h filled), 0 when the head is not whole yet (and
 * fits), or the negative status to answer: -400 (no HTTP request), -431
 * (over max, or more than HP_MAX_FIELDS fields), -501 (a method or a
 * transfer coding not known), -505 (not HTTP/1.x), -417 (an expectation
 * other than 100-continue).
 */
int hp_parse_head(const char *p, size_t len, size_t max, struct hp_head *h);

/* A chunked body being read. */
struct hp_chunked {
	int		state;
	uint64_t	left;		/* bytes of the chunk still to come */
	size_t		line;		/* bytes of the line being read */
	size_t		trailers;	/* bytes of trailer fields */
	bool		cr;		/* the last byte was a CR */
};

/* Start reading a chunked body. */
void hp_chunked_init(struct hp_chunked *s);

/*
 * Read what came of a chunked body, in[0..len): its data are appended to
 * out (*outlen bytes there already, at most max in all). Returns the bytes
 * of in taken, with *done set once the body (its trailers too) is whole;
 * or -400 (not chunked coding), -413 (its data over max).
 */
ssize_t hp_chunked_feed(struct hp_chunked *s, const char *in, size_t len,
    char *out, size_t *outlen, size_t max, bool *done);

/*
 * Percent-decode src[0..len) into dst (room for len + 1), NUL-terminated;
 * plus: '+' is a space (a query's). The bytes written, or -1 for a broken
 * escape or an escaped NUL.
 */
ssize_t hp_unescape(char *dst, const char *src, size_t len, bool plus);

#endif
