/* SPDX-License-Identifier: BSD-2-Clause */
/* security/tls_bev.h - TLS bufferevents (libevent + OpenSSL) with a handshake deadline. */
#ifndef SEMD_SECURITY_TLS_BEV_H
#define SEMD_SECURITY_TLS_BEV_H

#include <stddef.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <openssl/ssl.h>

#include "security/tls.h"

/*
 * The handshake is complete: bev (a bufferevent_openssl that owns its fd and
 * SSL) is yours, with no callbacks, no timeouts, writing enabled and reading
 * NOT enabled yet: set your callbacks, then bufferevent_enable(bev, EV_READ).
 * The peer's identity: tls_peer_subject(bufferevent_openssl_get_ssl(bev), &s).
 */
typedef void (*tls_bev_ready_cb)(struct bufferevent *bev, void *arg);
/*
 * The handshake failed, the peer went away, or the deadline passed: the
 * bufferevent, its SSL and its fd are already freed; why is for the log.
 */
typedef void (*tls_bev_fail_cb)(const char *why, void *arg);

/*
 * Start the server side of TLS on an accepted socket fd (made non-blocking
 * here). From this call on the fd belongs to the helper: on success exactly
 * one of ready or fail is called later, from the event loop; on error (a
 * negative errno, err filled) the fd is already closed and neither is called.
 * options are BEV_OPT_* (BEV_OPT_CLOSE_ON_FREE is always added); timeout_ms
 * bounds the whole handshake, however slowly the peer trickles bytes.
 */
int tls_bev_accept(struct event_base *base, struct tls_server *ts, evutil_socket_t fd,
    int options, int timeout_ms, tls_bev_ready_cb ready, tls_bev_fail_cb fail, void *arg,
    char *err, size_t errlen);

/*
 * Connect to sa and run the client side of TLS, verifying the server against
 * host (see tls_client_ssl_new()). Same contract as tls_bev_accept().
 */
int tls_bev_connect(struct event_base *base, SSL_CTX *ctx, const char *host,
    const struct sockaddr *sa, int salen, int options, int timeout_ms,
    tls_bev_ready_cb ready, tls_bev_fail_cb fail, void *arg, char *err, size_t errlen);

#endif
