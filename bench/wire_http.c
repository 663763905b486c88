/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/wire_http.c - the HTTP requests semd-benchmark sends and the answers
 * it reads (wire_http.h). No general HTTP parser: the daemon's answers have
 * a status line, headers with a Content-Length, and a JSON body.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/wire_http.h"
#include "proto/semd.pb-c.h"

/* A name as one path segment: unreserved bytes stay, the rest %XX. */
static void http_seg(char *out, size_t len, const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)name;
	size_t o = 0;

	for (; *p != '\0' && o + 4 < len; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
		    *p == '_' || *p == '~') {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	out[o] = '\0';
}

/* Append a request. */
int wire_http_put(struct wbuf *b, enum wire_http_req kind, const char *name,
    uint64_t permit, int64_t timeout_ms)
{
	char seg[400], body[96];
	int n, blen;

	if (wbuf_reserve(b, 1024) != 0)
		return -ENOMEM;
	http_seg(seg, sizeof(seg), name != NULL ? name : "");
	switch (kind) {
	case WIRE_HTTP_ACQUIRE:
		blen = snprintf(body, sizeof(body), "{\"lease_ms\":60000,"
		    "\"timeout_ms\":%lld}", (long long)timeout_ms);
		n = snprintf((char *)b->p + b->len, b->cap - b->len,
		    "POST /v1/semaphores/%s/permits HTTP/1.1\r\nHost: bench\r\n"
		    "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		    seg, blen, body);
		break;
	case WIRE_HTTP_RELEASE:
		n = snprintf((char *)b->p + b->len, b->cap - b->len,
		    "DELETE /v1/semaphores/%s/permits/%" PRIu64 " HTTP/1.1\r\n"
		    "Host: bench\r\n\r\n", seg, permit);
		break;
	case WIRE_HTTP_SERVER:
		n = snprintf((char *)b->p + b->len, b->cap - b->len,
		    "GET /v1/server HTTP/1.1\r\nHost: bench\r\n\r\n");
		break;
	default:
		n = snprintf((char *)b->p + b->len, b->cap - b->len,
		    "GET /v1/semaphores/%s HTTP/1.1\r\nHost: bench\r\n\r\n", seg);
		break;
	}
	if (n < 0 || (size_t)n >= b->cap - b->len)
		return -ENOMEM;
	b->len += (size_t)n;
	return 0;
}

/* The semd code a problem's "error" names. */
static int http_error_code(const char *body, size_t len)
{
	static const struct { const char *name; int code; } errs[] = {
		{ "\"error\":\"would_block\"", SEMD__CODE__WOULD_BLOCK },
		{ "\"error\":\"timeout\"", SEMD__CODE__TIMEOUT },
		{ "\"error\":\"not_found\"", SEMD__CODE__NOT_FOUND },
		{ "\"error\":\"not_holder\"", SEMD__CODE__NOT_HOLDER },
		{ "\"error\":\"permission_denied\"", SEMD__CODE__PERMISSION_DENIED },
		{ "\"error\":\"resource_exhausted\"", SEMD__CODE__RESOURCE_EXHAUSTED },
		{ "\"error\":\"unavailable\"", SEMD__CODE__UNAVAILABLE },
	};
	size_t i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (memmem(body, len, errs[i].name, strlen(errs[i].name)) != NULL)
			return errs[i].code;
	return SEMD__CODE__INTERNAL;
}

/* Cut the next whole answer off b. */
int wire_http_next(struct wbuf *b, int *status, int *code, uint64_t *permit,
    char *msg, size_t msglen)
{
	const char *p = (const char *)b->p + b->off, *end, *cl, *body, *pm;
	size_t avail = b->len - b->off, hlen, clen = 0;

	end = memmem(p, avail, "\r\n\r\n", 4);
	if (end == NULL)
		return avail > 65536 ? -1 : 0;
	hlen = (size_t)(end - p) + 4;
	if (avail < 12 || strncmp(p, "HTTP/1.", 7) != 0)
		return -1;
	*status = atoi(p + 9);
	for (cl = p; cl < end; cl++) {
		if ((cl == p || cl[-1] == '\n') &&
		    strncasecmp(cl, "content-length:", 15) == 0) {
			clen = (size_t)strtoull(cl + 15, NULL, 10);
			break;
		}
	}
	if (avail < hlen + clen)
		return 0;
	body = p + hlen;
	*permit = 0;
	msg[0] = '\0';
	if (*status >= 200 && *status < 300) {
		*code = SEMD__CODE__OK;
		pm = memmem(body, clen, "\"permit\":\"", 10);
		if (pm != NULL)
			*permit = strtoull(pm + 10, NULL, 10);
	} else {
		*code = http_error_code(body, clen);
		snprintf(msg, msglen, "%d %.*s", *status, (int)(clen < 200 ? clen : 200),
		    body);
	}
	b->off += hlen + clen;
	return 1;
}
