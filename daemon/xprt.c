/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/xprt.c - the transports of client connections (xprt.h): a UNIX
 * socket and a TCP one read and written with read(2) and write(2), a TLS
 * one through its SSL (with read-ahead: one read(2) takes in every record
 * that arrived). Each says who its peer is.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "daemon/conn.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "daemon/xprt.h"
#include "security/acl.h"
#include "security/peer.h"
#include "security/tls.h"

/* The most plaintext one TLS record carries. */
#define TLS_RECORD_MAX	16384
/* A TLS client idle this long gives OpenSSL's buffers back. */
#define TLS_IDLE_MS	1000

/* A plain socket: one read(2). */
static size_t xprt_fd_read(struct conn *c, uint8_t *buf, size_t len,
    enum xprt_more *more)
{
	ssize_t n = read(c->fd, buf, len);

	*more = XPRT_AGAIN;
	if (n > 0)
		return (size_t)n;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (n < 0)
		log_debug("%s: %s", c->peer, strerror(errno));
	else
		log_debug("%s: closed by peer", c->peer);
	*more = XPRT_GONE;
	return 0;
}

/* A plain socket: write(2) what it takes now. */
static ssize_t xprt_fd_write(struct conn *c, const uint8_t *p, size_t len)
{
	ssize_t n;

	do
		n = write(c->fd, p, len);
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	log_debug("%s: %s", c->peer, strerror(errno));
	return -1;
}

/* A plain socket holds nothing the kernel does not announce. */
static bool xprt_fd_pending(const struct conn *c)
{
	(void)c;
	return false;
}

/* Close a plain socket. */
static void xprt_fd_close(struct conn *c, bool bye)
{
	(void)bye;
	close(c->fd);
}

/* A UNIX client: nothing to set up. */
static void xprt_unix_start(struct conn *c, uint32_t keepalive_s)
{
	(void)c;
	(void)keepalive_s;
}

/*
 * A UNIX peer: uid:N from SO_PEERCRED, and with names its user and groups
 * (NSS); anonymous when the kernel does not say.
 */
static void xprt_unix_identify(const struct conn *c, const struct sockaddr *sa,
    bool names, struct acl_subject *s, char *peer, size_t peerlen)
{
	uid_t uid = 0;
	gid_t gid = 0;
	pid_t pid = 0;

	(void)sa;
	if (peer_cred(c->fd, &uid, &gid, &pid) != 0) {
		log_debug("SO_PEERCRED failed: anonymous");
		if (peer != NULL)
			snprintf(peer, peerlen, "unix peer");
		return;
	}
	if (peer != NULL)
		snprintf(peer, peerlen, "unix pid %d uid %u", (int)pid,
		    (unsigned)uid);
	if (names ? peer_subject(c->fd, s) != 0 :
	    acl_subject_set_uid(s, uid, NULL) != 0)
		log_debug("unix pid %d: no identity: anonymous", (int)pid);
}

/* Socket options for a TCP client: no Nagle, keepalive probes. */
static void xprt_tcp_start(struct conn *c, uint32_t keepalive_s)
{
	int one = 1, idle = (int)keepalive_s, intvl, cnt = 3;

	if (setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
		log_debug("%s: TCP_NODELAY: %s", c->peer, strerror(errno));
	if (idle == 0)
		return;
	intvl = idle / 3 > 0 ? idle / 3 : 1;
	if (setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) != 0 ||
	    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0 ||
	    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl) != 0 ||
	    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt) != 0)
		log_debug("%s: keepalive: %s", c->peer, strerror(errno));
}

/* A TCP peer is anonymous; its address names it in the log. */
static void xprt_tcp_identify(const struct conn *c, const struct sockaddr *sa,
    bool names, struct acl_subject *s, char *peer, size_t peerlen)
{
	char host[INET6_ADDRSTRLEN];

	(void)c;
	(void)names;
	(void)s;
	if (peer == NULL || sa == NULL)
		return;
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
		snprintf(peer, peerlen, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
		snprintf(peer, peerlen, "%s:%u", host, ntohs(s4->sin_port));
	}
}

/* TLS: why the connection is gone (or spoke nonsense), for the debug log. */
static void xprt_tls_lost(struct conn *c, const char *what, int sslerr)
{
	unsigned long e = ERR_peek_error();
	char why[256];

	if (e != 0)
		ERR_error_string_n(e, why, sizeof why);
	else if (sslerr == SSL_ERROR_SYSCALL && errno != 0)
		snprintf(why, sizeof why, "%s", strerror(errno));
	else
		snprintf(why, sizeof why, "connection closed by peer");
	ERR_clear_error();
	log_debug("%s: TLS %s: %s", c->peer, what, why);
}

/*
 * TLS: one SSL_read(). Read-ahead took in every record that arrived: MORE
 * while whole ones are left.
 */
static size_t xprt_tls_read(struct conn *c, uint8_t *buf, size_t len,
    enum xprt_more *more)
{
	int n, e;

	c->tls_bufs = true;
	*more = XPRT_AGAIN;
	if (len < TLS_RECORD_MAX) {
		/* No room for a whole record: the caller comes back. */
		if (SSL_has_pending(c->ssl))
			*more = XPRT_MORE;
		return 0;
	}
	ERR_clear_error();
	errno = 0;
	n = SSL_read(c->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
	if (n > 0) {
		if (SSL_has_pending(c->ssl))
			*more = XPRT_MORE;
		return (size_t)n;
	}
	e = SSL_get_error(c->ssl, n);
	if (e == SSL_ERROR_WANT_READ)
		return 0;
	if (e == SSL_ERROR_WANT_WRITE) {
		c->rwant_w = true;	/* conn.c arms the write event */
		return 0;
	}
	if (e == SSL_ERROR_ZERO_RETURN) {
		ERR_clear_error();
		log_debug("%s: closed by peer", c->peer);
	} else {
		xprt_tls_lost(c, "read", e);
	}
	*more = XPRT_GONE;
	return 0;
}

/*
 * TLS: hand p[0..len) to SSL_write() until it is all taken or the socket
 * is full. With partial writes each call seals and sends one record (16
 * KiB of plaintext at most): a turn's replies, staged together, are one
 * record and one write(2).
 */
static ssize_t xprt_tls_write(struct conn *c, const uint8_t *p, size_t len)
{
	size_t off = 0;
	int n, e;

	c->tls_bufs = true;
	while (off < len) {
		ERR_clear_error();
		errno = 0;
		n = SSL_write(c->ssl, p + off, len - off > INT_MAX ? INT_MAX :
		    (int)(len - off));
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		e = SSL_get_error(c->ssl, n);
		if (e == SSL_ERROR_WANT_WRITE)
			break;
		if (e == SSL_ERROR_WANT_READ) {
			c->wwant_r = true;	/* the read callback retries */
			break;
		}
		xprt_tls_lost(c, "write", e);
		return -1;
	}
	return (ssize_t)off;
}

/* TLS: read-ahead may hold records the socket will not announce again. */
static bool xprt_tls_pending(const struct conn *c)
{
	return SSL_has_pending(c->ssl) != 0;
}

/* TLS: a close_notify on our own close (best effort: it never waits). */
static void xprt_tls_close(struct conn *c, bool bye)
{
	c->w->ntls--;
	if (bye) {
		ERR_clear_error();
		(void)SSL_shutdown(c->ssl);
		ERR_clear_error();
	}
	SSL_free(c->ssl);
	c->ssl = NULL;
	close(c->fd);
}

/* Give OpenSSL's buffers of this loop's idle TLS clients back. */
static void xprt_tls_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = { 2, 0 };
	struct worker *w = arg;
	struct list_head *pos;
	uint64_t now = server_now();
	struct conn *c;

	list_for_each(pos, &w->conns) {
		c = list_entry(pos, struct conn, entry);
		if (c->ssl == NULL || !c->tls_bufs || c->dead || c->wlen > 0 ||
		    now - c->last_input_ms < TLS_IDLE_MS || c->tlen > c->toff ||
		    SSL_has_pending(c->ssl))
			continue;
		if (SSL_free_buffers(c->ssl) == 1)
			c->tls_bufs = false;
	}
	if (w->ntls > 0)
		evtimer_add(w->tls_sweep, &tv);
}

/* A TLS client: counted on its loop, whose sweep gives idle buffers back. */
static void xprt_tls_start(struct conn *c, uint32_t keepalive_s)
{
	struct timeval tv = { 2, 0 };
	struct worker *w = c->w;

	xprt_tcp_start(c, keepalive_s);
	w->ntls++;
	if (w->tls_sweep == NULL)
		w->tls_sweep = evtimer_new(w->base, xprt_tls_sweep_cb, w);
	if (w->tls_sweep != NULL && !evtimer_pending(w->tls_sweep, NULL))
		evtimer_add(w->tls_sweep, &tv);
}

/* A TLS peer: cn:NAME from a verified client certificate, or anonymous. */
static void xprt_tls_identify(const struct conn *c, const struct sockaddr *sa,
    bool names, struct acl_subject *s, char *peer, size_t peerlen)
{
	xprt_tcp_identify(c, sa, names, s, peer, peerlen);
	if (tls_peer_subject(c->ssl, s) != 0)
		log_notice("TLS client certificate with an unusable name: anonymous");
}

/* A transport over a plain socket: read(2) and write(2). */
#define XPRT_FD(start_fn, identify_fn) {				\
	.start = (start_fn),						\
	.read = xprt_fd_read,						\
	.write = xprt_fd_write,						\
	.pending = xprt_fd_pending,					\
	.close = xprt_fd_close,						\
	.identify = (identify_fn),					\
}

const struct xprt_ops xprt_unix = XPRT_FD(xprt_unix_start, xprt_unix_identify);
const struct xprt_ops xprt_tcp = XPRT_FD(xprt_tcp_start, xprt_tcp_identify);

const struct xprt_ops xprt_tls = {
	.start = xprt_tls_start,
	.read = xprt_tls_read,
	.write = xprt_tls_write,
	.pending = xprt_tls_pending,
	.close = xprt_tls_close,
	.identify = xprt_tls_identify,
};
