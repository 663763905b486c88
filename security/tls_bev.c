/* SPDX-License-Identifier: BSD-2-Clause */
/* security/tls_bev.c - TLS bufferevents (libevent + OpenSSL) with a handshake deadline. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/bufferevent_ssl.h>
#include <event2/util.h>
#include <openssl/err.h>

#include "security/tls_bev.h"

/* One handshake in progress: freed when it ends, either way. */
struct tls_bev_pending {
	struct bufferevent *bev;
	struct event *timer;
	tls_bev_ready_cb ready;
	tls_bev_fail_cb fail;
	void *arg;
	int timeout_ms;
};

/* End a handshake that failed: free everything, then tell the owner why. */
static void tls_bev_fail(struct tls_bev_pending *p, const char *why)
{
	tls_bev_fail_cb fail = p->fail;
	void *arg = p->arg;

	bufferevent_free(p->bev);
	event_free(p->timer);
	free(p);
	fail(why, arg);
}

/*
 * Describe the failure behind a bufferevent error event. libevent queues the
 * OpenSSL errors of the failed step, followed by the SSL_get_error() code
 * itself (library 0): those codes say nothing to an operator and are skipped;
 * a system call failure is reported with errno, saved by the caller before
 * anything could clobber it.
 */
static void tls_bev_describe(struct tls_bev_pending *p, short what, int sockerr,
    char *why, size_t len)
{
	SSL *ssl = bufferevent_openssl_get_ssl(p->bev);
	unsigned long e;
	bool eof = (what & BEV_EVENT_EOF) != 0;
	size_t used;
	long v;
	char one[256];

	v = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
	if (v != X509_V_OK) {
		snprintf(why, len, "TLS handshake failed: certificate verify failed: %s",
		    X509_verify_cert_error_string(v));
		while (bufferevent_get_openssl_error(p->bev) != 0)
			;
		return;
	}
	snprintf(why, len, "TLS handshake failed");
	while ((e = bufferevent_get_openssl_error(p->bev)) != 0) {
		if (ERR_GET_LIB(e) == 0)
			continue;
		if (ERR_GET_LIB(e) == ERR_LIB_SSL &&
		    ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
			eof = true;
			continue;
		}
		ERR_error_string_n(e, one, sizeof one);
		used = strlen(why);
		snprintf(why + used, len - used, "%s%s",
		    strchr(why, ':') != NULL ? "; " : ": ", one);
	}
	if (strchr(why, ':') != NULL)
		return;
	used = strlen(why);
	if (!eof && sockerr != 0)
		snprintf(why + used, len - used, ": %s", evutil_socket_error_to_string(sockerr));
	else
		snprintf(why + used, len - used, ": connection closed by peer");
}

/* The handshake ended (CONNECTED) or failed (ERROR, EOF). */
static void tls_bev_eventcb(struct bufferevent *bev, short what, void *ctx)
{
	int sockerr = EVUTIL_SOCKET_ERROR();
	struct tls_bev_pending *p = ctx;
	tls_bev_ready_cb ready = p->ready;
	void *arg = p->arg;
	char why[512];

	if (what & BEV_EVENT_CONNECTED) {
		event_free(p->timer);
		free(p);
		bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
		bufferevent_set_timeouts(bev, NULL, NULL);
		ready(bev, arg);
		return;
	}
	tls_bev_describe(p, what, sockerr, why, sizeof why);
	tls_bev_fail(p, why);
}

/* The handshake deadline passed. */
static void tls_bev_timeout(evutil_socket_t fd, short what, void *ctx)
{
	struct tls_bev_pending *p = ctx;
	char why[128];

	snprintf(why, sizeof why, "TLS handshake timed out after %d ms", p->timeout_ms);
	tls_bev_fail(p, why);
}

/* Wrap ssl in a bufferevent with the handshake callbacks and deadline. */
static struct tls_bev_pending *tls_bev_start(struct event_base *base, SSL *ssl,
    evutil_socket_t fd, enum bufferevent_ssl_state state, int options, int timeout_ms,
    tls_bev_ready_cb ready, tls_bev_fail_cb fail, void *arg)
{
	struct tls_bev_pending *p;
	struct timeval tv;

	if ((p = calloc(1, sizeof *p)) == NULL)
		return NULL;
	p->ready = ready;
	p->fail = fail;
	p->arg = arg;
	p->timeout_ms = timeout_ms;
	if ((p->timer = evtimer_new(base, tls_bev_timeout, p)) == NULL)
		goto fail;
	p->bev = bufferevent_openssl_socket_new(base, fd, ssl, state,
	    options | BEV_OPT_CLOSE_ON_FREE);
	if (p->bev == NULL)
		goto fail;
	/* Nothing is read past the handshake until the owner has its callbacks. */
	bufferevent_disable(p->bev, EV_READ);
	bufferevent_setcb(p->bev, NULL, NULL, tls_bev_eventcb, p);
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	if (evtimer_add(p->timer, &tv) != 0) {
		bufferevent_free(p->bev);
		p->bev = NULL;
		ssl = NULL;
		goto fail_freed;
	}
	return p;
fail:
	SSL_free(ssl);
	if (fd >= 0)
		evutil_closesocket(fd);
fail_freed:
	if (p != NULL)
		event_free(p->timer);
	free(p);
	return NULL;
}

/* Start the server side of TLS on an accepted socket fd. */
int tls_bev_accept(struct event_base *base, struct tls_server *ts, evutil_socket_t fd,
    int options, int timeout_ms, tls_bev_ready_cb ready, tls_bev_fail_cb fail, void *arg,
    char *err, size_t errlen)
{
	SSL *ssl;

	if (evutil_make_socket_nonblocking(fd) != 0) {
		evutil_closesocket(fd);
		return tls_errf(-EBADF, err, errlen, "cannot make the socket non-blocking");
	}
	if ((ssl = tls_server_ssl_new(ts)) == NULL) {
		ERR_clear_error();
		evutil_closesocket(fd);
		return tls_errf(-ENOMEM, err, errlen, "cannot create a TLS connection");
	}
	if (tls_bev_start(base, ssl, fd, BUFFEREVENT_SSL_ACCEPTING, options, timeout_ms,
	    ready, fail, arg) == NULL)
		return tls_errf(-ENOMEM, err, errlen, "cannot create a TLS bufferevent");
	return 0;
}

/* Connect to sa and run the client side of TLS, verifying the server against host. */
int tls_bev_connect(struct event_base *base, SSL_CTX *ctx, const char *host,
    const struct sockaddr *sa, int salen, int options, int timeout_ms,
    tls_bev_ready_cb ready, tls_bev_fail_cb fail, void *arg, char *err, size_t errlen)
{
	struct tls_bev_pending *p;
	SSL *ssl;
	int e;

	if ((e = tls_client_ssl_new(ctx, host, &ssl, err, errlen)) != 0)
		return e;
	p = tls_bev_start(base, ssl, -1, BUFFEREVENT_SSL_CONNECTING, options, timeout_ms,
	    ready, fail, arg);
	if (p == NULL)
		return tls_errf(-ENOMEM, err, errlen, "cannot create a TLS bufferevent");
	if (bufferevent_socket_connect(p->bev, sa, salen) != 0) {
		e = EVUTIL_SOCKET_ERROR();
		bufferevent_free(p->bev);
		event_free(p->timer);
		free(p);
		return tls_errf(e > 0 ? -e : -ECONNREFUSED, err, errlen, "connect: %s",
		    evutil_socket_error_to_string(e));
	}
	return 0;
}
