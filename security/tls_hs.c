/* SPDX-License-Identifier: BSD-2-Clause */
/* security/tls_hs.c - server TLS handshakes on a libevent loop, bounded in time. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <event2/util.h>
#include <openssl/err.h>

#include "security/tls_hs.h"

struct tls_hs {
	SSL		*ssl;
	evutil_socket_t	fd;
	struct event	*rev;		/* waiting for input */
	struct event	*wev;		/* waiting for the socket to drain */
	long long	deadline_ms;
	int		timeout_ms;
	tls_hs_ready_cb	ready;
	tls_hs_fail_cb	fail;
	void		*arg;
};

/* Milliseconds on the monotonic clock. */
static long long tls_hs_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Free the events (and with them, the socket and the SSL when free_io). */
static void tls_hs_free(struct tls_hs *hs, bool free_io)
{
	if (hs->rev != NULL)
		event_free(hs->rev);
	if (hs->wev != NULL)
		event_free(hs->wev);
	if (free_io) {
		SSL_free(hs->ssl);
		if (hs->fd >= 0)
			evutil_closesocket(hs->fd);
	}
	free(hs);
}

/* End in failure: free everything, then tell the owner why. */
static void tls_hs_failed(struct tls_hs *hs, const char *why)
{
	tls_hs_fail_cb fail = hs->fail;
	void *arg = hs->arg;

	tls_hs_free(hs, true);
	fail(why, arg);
}

/* Wait for the socket (ev) until the deadline. */
static void tls_hs_wait(struct tls_hs *hs, struct event *ev)
{
	long long left = hs->deadline_ms - tls_hs_now();
	struct timeval tv;
	char why[96];

	if (left <= 0) {
		snprintf(why, sizeof why, "TLS handshake timed out after %d ms",
		    hs->timeout_ms);
		tls_hs_failed(hs, why);
		return;
	}
	tv.tv_sec = (time_t)(left / 1000);
	tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
	if (event_add(ev, &tv) != 0)
		tls_hs_failed(hs, "TLS handshake: cannot watch the socket");
}

/* One step of the handshake, as far as the socket lets it go. */
static void tls_hs_step(struct tls_hs *hs)
{
	tls_hs_ready_cb ready;
	char why[512];
	void *arg;
	SSL *ssl;
	evutil_socket_t fd;
	int r, e;

	ERR_clear_error();
	errno = 0;
	r = SSL_do_handshake(hs->ssl);
	if (r == 1) {
		ready = hs->ready;
		arg = hs->arg;
		ssl = hs->ssl;
		fd = hs->fd;
		tls_hs_free(hs, false);
		ready(ssl, fd, arg);
		return;
	}
	e = SSL_get_error(hs->ssl, r);
	if (e == SSL_ERROR_WANT_READ) {
		tls_hs_wait(hs, hs->rev);
		return;
	}
	if (e == SSL_ERROR_WANT_WRITE) {
		tls_hs_wait(hs, hs->wev);
		return;
	}
	why[0] = '\0';
	tls_handshake_why(hs->ssl, r, e, errno, why, sizeof why);
	tls_hs_failed(hs, why);
}

/* The socket is ready, or the deadline passed. */
static void tls_hs_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tls_hs *hs = arg;
	char why[96];

	if (what & EV_TIMEOUT) {
		snprintf(why, sizeof why, "TLS handshake timed out after %d ms",
		    hs->timeout_ms);
		tls_hs_failed(hs, why);
		return;
	}
	tls_hs_step(hs);
}

/* Start the server side of TLS on an accepted socket. */
struct tls_hs *tls_hs_start(struct event_base *base, struct tls_server *ts,
    evutil_socket_t fd, int timeout_ms, tls_hs_ready_cb ready,
    tls_hs_fail_cb fail, void *arg, char *err, size_t errlen)
{
	struct timeval tv;
	struct tls_hs *hs;

	if (evutil_make_socket_nonblocking(fd) != 0 ||
	    (hs = calloc(1, sizeof *hs)) == NULL) {
		evutil_closesocket(fd);
		snprintf(err, errlen, "cannot start a TLS handshake");
		return NULL;
	}
	hs->fd = fd;
	hs->timeout_ms = timeout_ms;
	hs->deadline_ms = tls_hs_now() + timeout_ms;
	hs->ready = ready;
	hs->fail = fail;
	hs->arg = arg;
	hs->rev = event_new(base, fd, EV_READ, tls_hs_cb, hs);
	hs->wev = event_new(base, fd, EV_WRITE, tls_hs_cb, hs);
	hs->ssl = tls_server_ssl_new(ts);
	if (hs->rev == NULL || hs->wev == NULL || hs->ssl == NULL ||
	    SSL_set_fd(hs->ssl, fd) != 1)
		goto fail;
	SSL_clear_mode(hs->ssl, SSL_MODE_RELEASE_BUFFERS);
	SSL_set_mode(hs->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_set_read_ahead(hs->ssl, 1);
	/* The ClientHello comes first: wait for it rather than try a read. */
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000;
	if (event_add(hs->rev, &tv) != 0)
		goto fail;
	return hs;
fail:
	ERR_clear_error();
	snprintf(err, errlen, "cannot create a TLS connection");
	tls_hs_free(hs, true);
	return NULL;
}

/* Drop a handshake under way. */
void tls_hs_abort(struct tls_hs *hs)
{
	if (hs != NULL)
		tls_hs_free(hs, true);
}
