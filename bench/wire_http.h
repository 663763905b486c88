/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/wire_http.h - semd-benchmark over the HTTP front door (doc/http.md):
 * HTTP/1.1 requests written by hand (a few fixed shapes) and their answers
 * read back in order, on keep-alive connections.
 */
#ifndef SEMD_BENCH_WIRE_HTTP_H
#define SEMD_BENCH_WIRE_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "bench/wire.h"

enum wire_http_req {
	WIRE_HTTP_ACQUIRE,	/* POST /v1/semaphores/NAME/permits */
	WIRE_HTTP_RELEASE,	/* DELETE /v1/semaphores/NAME/permits/ID */
	WIRE_HTTP_SERVER,	/* GET /v1/server: the daemon's own answer */
	WIRE_HTTP_INFO,		/* GET /v1/semaphores/NAME */
};

/*
 * Append request kind for name (permit: the release's; timeout_ms: the
 * acquire's, 0 a try). 0, or -ENOMEM.
 */
int wire_http_put(struct wbuf *b, enum wire_http_req kind, const char *name,
    uint64_t permit, int64_t timeout_ms);

/*
 * Cut the next whole answer off b: 1 with its status, the semd code it
 * means (a 2xx OK; a problem's "error": would_block, timeout, ...) and a
 * 201's permit id (msg: the body's start, for an error); 0 when more must
 * come; -1 when it is no HTTP answer.
 */
int wire_http_next(struct wbuf *b, int *status, int *code, uint64_t *permit,
    char *msg, size_t msglen);

#endif
