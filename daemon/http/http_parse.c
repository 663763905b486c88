/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_parse.c - HTTP/1.1 requests read from bytes (RFC 9112;
 * http_parse.h says what is refused and why). One pass over the head's
 * lines, no copy: the request line, then each field, the few the transport
 * acts on (Content-Length, Transfer-Encoding, Connection, Expect, Host)
 * checked as they come. A line may end in CRLF or a bare LF (RFC 9112
 * 2.2 lets a recipient take both); a bare CR anywhere is refused.
 */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "core/hexdigit.h"
#include "daemon/http/http_parse.h"

/* Empty lines skipped before a request line (RFC 9112 2.2: at least one). */
#define HP_MAX_EMPTY	4
/* Bytes of a chunk's size line (extensions included), of its trailers. */
#define HP_CHUNK_LINE	1024
#define HP_TRAILERS	4096
/* The largest Content-Length or chunk size taken: more than any limit. */
#define HP_LEN_MAX	(UINT64_C(1) << 62)

/* tchar of RFC 9110 5.6.2: what a method or a field name is made of. */
static bool hp_tchar(unsigned char c)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";

	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' && strchr(extra, c) != NULL);
}

/* A byte of a field's value: VCHAR, obs-text, SP or HTAB. */
static bool hp_vbyte(unsigned char c)
{
	return c == ' ' || c == '\t' || (c >= 0x21 && c != 0x7f);
}

/* The known methods, by name (case matters: RFC 9110 9.1). */
static int hp_method(const char *p, size_t n)
{
	static const struct { const char *name; int bit; } ms[] = {
		{ "GET", HP_GET }, { "POST", HP_POST }, { "HEAD", HP_HEAD },
		{ "PUT", HP_PUT }, { "DELETE", HP_DELETE },
		{ "OPTIONS", HP_OPTIONS }, { "TRACE", HP_TRACE },
		{ "CONNECT", HP_CONNECT }, { "PATCH", HP_PATCH },
	};
	size_t i;

	for (i = 0; i < sizeof ms / sizeof ms[0]; i++)
		if (strlen(ms[i].name) == n && memcmp(ms[i].name, p, n) == 0)
			return ms[i].bit;
	return 0;
}

/*
 * The end of the line that starts at p[i] (the index of its LF), or -1
 * when it has none within len; *cr: it ends in CRLF (the CR not part of
 * the line). A CR that is not right before the LF is the caller's to find.
 */
static ssize_t hp_eol(const char *p, size_t i, size_t len, bool *cr)
{
	const char *lf = memchr(p + i, '\n', len - i);
	size_t e;

	if (lf == NULL)
		return -1;
	e = (size_t)(lf - p);
	*cr = e > i && p[e - 1] == '\r';
	return (ssize_t)e;
}

/* Is p[0..n) token t, ASCII case aside? */
static bool hp_is(const char *p, size_t n, const char *t)
{
	return strlen(t) == n && strncasecmp(p, t, n) == 0;
}

/*
 * Can the bytes of an unfinished request line be the start of one? A
 * client that is sending something else (TLS, a binary protocol) is told
 * at once rather than when max bytes came.
 */
static bool hp_line_start_ok(const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && hp_tchar((unsigned char)p[i]))
		i++;
	if (i == n)
		return true;
	if (i == 0 || p[i] != ' ')
		return false;
	for (i++; i < n; i++)
		if ((unsigned char)p[i] < 0x20 && p[i] != '\r')
			return false;
	return true;
}

/* The request line p[0..n): method, target, version. 0 or -status. */
static int hp_request_line(const char *p, size_t n, struct hp_head *h)
{
	size_t i = 0, t;

	while (i < n && hp_tchar((unsigned char)p[i]))
		i++;
	if (i == 0 || i == n || p[i] != ' ')
		return -400;
	h->method = hp_method(p, i);
	t = ++i;
	while (i < n && (unsigned char)p[i] > 0x20 && p[i] != 0x7f)
		i++;
	if (i == t || i == n || p[i] != ' ')
		return -400;
	h->target = p + t;
	h->target_len = i - t;
	i++;
	if (n - i != 8 || memcmp(p + i, "HTTP/", 5) != 0 ||
	    p[i + 5] < '0' || p[i + 5] > '9' || p[i + 6] != '.' ||
	    p[i + 7] < '0' || p[i + 7] > '9')
		return -400;
	if (p[i + 5] != '1')
		return -505;
	h->minor = p[i + 7] == '0' ? 0 : 1;
	if (h->method == 0)
		return -501;
	/* origin-form, "*" for OPTIONS, or absolute-form (RFC 9112 3.2) */
	if (h->target[0] == '/')
		return 0;
	if (h->target_len == 1 && h->target[0] == '*')
		return h->method == HP_OPTIONS ? 0 : -400;
	for (t = 0; t < h->target_len; t++) {
		if (h->target[t] == ':' || !((h->target[t] >= 'a' &&
		    h->target[t] <= 'z') || (h->target[t] >= 'A' &&
		    h->target[t] <= 'Z')))
			break;
	}
	if (t == 0 || t + 3 > h->target_len || h->target[t] != ':' ||
	    h->target[t + 1] != '/' || h->target[t + 2] != '/')
		return -400;
	/* scheme://authority, then the path (none: "/") */
	for (t += 3; t < h->target_len && h->target[t] != '/' &&
	    h->target[t] != '?'; t++)
		;
	if (t == h->target_len || h->target[t] != '/')
		return -400;
	h->target += t;
	h->target_len -= t;
	return 0;
}

/* A Content-Length: 1*DIGIT, the same as any before it. 0 or -400. */
static int hp_content_length(const char *v, size_t n, struct hp_head *h)
{
	uint64_t len = 0;
	size_t i;

	if (n == 0 || n > 19)
		return -400;
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -400;
		len = len * 10 + (uint64_t)(v[i] - '0');
	}
	if (len > HP_LEN_MAX || (h->has_length && h->content_length != len))
		return -400;
	h->content_length = len;
	h->has_length = true;
	return 0;
}

/*
 * Each element of a comma-separated list v[0..n) to fn (white space
 * around it taken off); the first status fn returns, or 0.
 */
static int hp_list(const char *v, size_t n, int (*fn)(const char *e,
    size_t len, struct hp_head *h, bool *seen), struct hp_head *h, bool *seen)
{
	size_t i = 0, s, e;
	int r;

	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e > s && (r = fn(v + s, e - s, h, seen)) != 0)
			return r;
	}
	return 0;
}

/* One transfer coding: only chunked, once, is known. */
static int hp_coding(const char *e, size_t n, struct hp_head *h, bool *seen)
{
	(void)h;
	if (!hp_is(e, n, "chunked"))
		return -501;
	if (*seen)
		return -400;	/* chunked twice */
	*seen = true;
	return 0;
}

/* One option of Connection. */
static int hp_conn_opt(const char *e, size_t n, struct hp_head *h, bool *seen)
{
	if (hp_is(e, n, "close"))
		h->close = true;
	else if (hp_is(e, n, "keep-alive"))
		*seen = true;
	return 0;
}

/*
 * The fields the transport acts on. *hosts counts Host fields, *keep
 * says Connection: keep-alive. 0 or -status.
 */
static int hp_field(const struct hp_field *f, struct hp_head *h, int *hosts,
    bool *keep)
{
	bool chunked = false;
	int r;

	switch (f->name_len) {
	case 4:
		if (hp_is(f->name, 4, "host"))
			(*hosts)++;
		return 0;
	case 6:
		if (!hp_is(f->name, 6, "expect"))
			return 0;
		return hp_is(f->value, f->value_len, "100-continue") ?
		    (h->expect_continue = true, 0) : -417;
	case 10:
		if (!hp_is(f->name, 10, "connection"))
			return 0;
		return hp_list(f->value, f->value_len, hp_conn_opt, h, keep);
	case 14:
		if (!hp_is(f->name, 14, "content-length"))
			return 0;
		return hp_content_length(f->value, f->value_len, h);
	case 17:
		if (!hp_is(f->name, 17, "transfer-encoding"))
			return 0;
		if (h->chunked || h->minor == 0)
			return -400;	/* two fields, or one in HTTP/1.0 */
		if ((r = hp_list(f->value, f->value_len, hp_coding, h,
		    &chunked)) != 0)
			return r;
		if (!chunked)
			return -400;
		h->chunked = true;
		return 0;
	default:
		return 0;
	}
}

/* One field line p[0..n) into h->fields. 0 or -status. */
static int hp_field_line(const char *p, size_t n, struct hp_head *h)
{
	struct hp_field *f;
	size_t i = 0, s, e;

	if (n > 0 && (p[0] == ' ' || p[0] == '\t'))
		return -400;	/* obs-fold: a field continued on a new line */
	while (i < n && hp_tchar((unsigned char)p[i]))
		i++;
	if (i == 0 || i == n || p[i] != ':')
		return -400;	/* no name, or white space before the colon */
	if (h->nfields == HP_MAX_FIELDS)
		return -431;
	f = &h->fields[h->nfields];
	f->name = p;
	f->name_len = i;
	for (s = i + 1; s < n && (p[s] == ' ' || p[s] == '\t'); s++)
		;
	for (e = s; e < n; e++)
		if (!hp_vbyte((unsigned char)p[e]))
			return -400;
	while (e > s && (p[e - 1] == ' ' || p[e - 1] == '\t'))
		e--;
	f->value = p + s;
	f->value_len = e - s;
	h->nfields++;
	return 0;
}

/* Read a request's head (http_parse.h). */
int hp_parse_head(const char *p, size_t len, size_t max, struct hp_head *h)
{
	size_t i = 0, line, skipped = 0;
	ssize_t eol;
	bool cr, keep = false;
	int r, hosts = 0;

	memset(h, 0, offsetof(struct hp_head, fields));
	h->nfields = 0;
	h->has_length = h->chunked = h->close = h->expect_continue = false;
	h->content_length = 0;
	/* empty lines before the request */
	while (i < len && (p[i] == '\r' || p[i] == '\n')) {
		if (p[i] == '\r' && i + 1 < len && p[i + 1] != '\n')
			return -400;
		if (p[i] == '\r' && i + 1 == len)
			return 0;
		i += p[i] == '\r' ? 2 : 1;
		if (++skipped > HP_MAX_EMPTY)
			return -400;
	}
	line = i;
	if ((eol = hp_eol(p, i, len > max ? max : len, &cr)) < 0) {
		if (len >= max)
			return -431;
		return hp_line_start_ok(p + i, len - i) ? 0 : -400;
	}
	if ((r = hp_request_line(p + line, (size_t)eol - line - cr, h)) != 0)
		return r;
	for (i = (size_t)eol + 1;; i = (size_t)eol + 1) {
		if ((eol = hp_eol(p, i, len > max ? max : len, &cr)) < 0)
			return len >= max ? -431 : 0;
		if ((size_t)eol - cr == i)
			break;		/* the empty line: the head is whole */
		if ((r = hp_field_line(p + i, (size_t)eol - i - cr, h)) != 0)
			return r;
		if ((r = hp_field(&h->fields[h->nfields - 1], h, &hosts,
		    &keep)) != 0)
			return r;
	}
	if (hosts > 1 || (hosts == 0 && h->minor == 1))
		return -400;	/* RFC 9112 3.2: exactly one Host */
	if (h->has_length && h->chunked)
		return -400;	/* two framings (RFC 9112 6.3: smuggling) */
	if (h->minor == 0 && !keep)
		h->close = true;
	h->head_len = (size_t)eol + 1;
	return (int)h->head_len;
}

/* The chunked decoder's states. */
enum { HPC_SIZE, HPC_EXT, HPC_DATA, HPC_DATA_END, HPC_TRAILER, HPC_DONE };

/* Start reading a chunked body. */
void hp_chunked_init(struct hp_chunked *s)
{
	memset(s, 0, sizeof *s);
	s->state = HPC_SIZE;
}

/* Read what came of a chunked body (http_parse.h). */
ssize_t hp_chunked_feed(struct hp_chunked *s, const char *in, size_t len,
    char *out, size_t *outlen, size_t max, bool *done)
{
	size_t i = 0, n;
	unsigned char c;
	int d;

	*done = s->state == HPC_DONE;
	while (i < len && s->state != HPC_DONE) {
		c = (unsigned char)in[i];
		switch (s->state) {
		case HPC_SIZE:		/* 1*HEXDIG */
			if ((d = hexdigit_value(c)) >= 0) {
				if (s->left > HP_LEN_MAX / 16)
					return -400;
				s->left = s->left * 16 + (uint64_t)d;
				s->line++;
				i++;
				break;
			}
			if (s->line == 0 || (c != ';' && c != ' ' && c != '\t' &&
			    c != '\r' && c != '\n'))
				return -400;
			s->state = HPC_EXT;
			break;
		case HPC_EXT:		/* [ chunk-ext ] CRLF */
			if (++s->line > HP_CHUNK_LINE || (s->cr && c != '\n'))
				return -400;
			i++;
			s->cr = c == '\r';
			if (c == '\n') {
				s->line = 0;
				s->state = s->left > 0 ? HPC_DATA : HPC_TRAILER;
			} else if (c != '\r' && !hp_vbyte(c)) {
				return -400;
			}
			break;
		case HPC_DATA:
			n = len - i < s->left ? len - i : (size_t)s->left;
			if (n > max - *outlen)
				return -413;
			memcpy(out + *outlen, in + i, n);
			*outlen += n;
			s->left -= n;
			i += n;
			if (s->left == 0)
				s->state = HPC_DATA_END;
			break;
		case HPC_DATA_END:	/* CRLF after the data */
			if (s->cr && c != '\n')
				return -400;
			i++;
			s->cr = c == '\r';
			if (c == '\n') {
				s->state = HPC_SIZE;
				s->line = 0;
			} else if (c != '\r') {
				return -400;
			}
			break;
		case HPC_TRAILER:	/* *( field-line CRLF ) CRLF */
			if (++s->trailers > HP_TRAILERS || (s->cr && c != '\n'))
				return -400;
			i++;
			s->cr = c == '\r';
			if (c == '\n') {
				if (s->line == 0)
					s->state = HPC_DONE;
				s->line = 0;
			} else if (c != '\r' && hp_vbyte(c)) {
				s->line++;
			} else if (c != '\r') {
				return -400;
			}
			break;
		}
	}
	*done = s->state == HPC_DONE;
	return (ssize_t)i;
}

/* Percent-decode src[0..len) into dst (http_parse.h). */
ssize_t hp_unescape(char *dst, const char *src, size_t len, bool plus)
{
	size_t i, o = 0;
	int hi, lo;

	for (i = 0; i < len; i++) {
		if (src[i] == '%') {
			if (i + 2 >= len ||
			    (hi = hexdigit_value((unsigned char)src[i + 1])) < 0 ||
			    (lo = hexdigit_value((unsigned char)src[i + 2])) < 0 ||
			    (hi == 0 && lo == 0))
				return -1;
			dst[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else if (src[i] == '\0') {
			return -1;
		} else {
			dst[o++] = plus && src[i] == '+' ? ' ' : src[i];
		}
	}
	dst[o] = '\0';
	return (ssize_t)o;
}
