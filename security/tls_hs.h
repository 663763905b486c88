/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * security/tls_hs.h - the server side of a TLS handshake on any libevent
 * loop, bounded in time, leaving a bare SSL on its socket for the caller
 * to read and write itself (no bufferevent).
 *
 * The SSL is set up for a server that drives its own I/O: read-ahead (one
 * read(2) takes in every record that has arrived), partial writes (each
 * SSL_write() that moves a record returns), a write buffer that may move
 * between retries, and buffers kept between calls (the caller frees them
 * when the connection goes idle: SSL_free_buffers()).
 */
#ifndef SEMD_SECURITY_TLS_HS_H
#define SEMD_SECURITY_TLS_HS_H

#include <stddef.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#include "security/tls.h"

struct tls_hs;

/*
 * The handshake is done: ssl (on the non-blocking socket fd) and fd are
 * the caller's. Read-ahead may already hold application data: check
 * SSL_has_pending() before waiting for the socket.
 */
typedef void (*tls_hs_ready_cb)(SSL *ssl, evutil_socket_t fd, void *arg);
/* It failed or timed out: ssl and fd are already freed; why is for the log. */
typedef void (*tls_hs_fail_cb)(const char *why, void *arg);

/*
 * Start the server side of TLS on an accepted socket fd, on base's loop
 * (its thread calls the callbacks). The fd belongs to the handshake from
 * here on. Returns the handshake, or NULL with err filled and fd closed.
 * Exactly one callback comes later, unless tls_hs_abort() comes first.
 */
struct tls_hs *tls_hs_start(struct event_base *base, struct tls_server *ts,
    evutil_socket_t fd, int timeout_ms, tls_hs_ready_cb ready,
    tls_hs_fail_cb fail, void *arg, char *err, size_t errlen);
/* Drop a handshake under way (from its loop's thread, or once that ended). */
void tls_hs_abort(struct tls_hs *hs);

#endif
