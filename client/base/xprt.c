/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/base/xprt.c - libsemclient's transports and connections.
 *
 * A transport (struct semc_xprt, HAProxy's xprt_ops) says how a connection
 * to one kind of address is opened, read, written and closed: UNIX and TCP
 * sockets here, TLS over TCP in tls.c. Everything above works on a struct
 * semc_conn through its transport, so a new transport is one struct and a
 * prefix in semc_addr_parse(). Also here: waiting on a socket, writing a
 * whole buffer, and the one request-and-reply exchange of a fresh
 * connection (the handshake, a cluster's status).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/handle.h"
#include "proto/frame.h"

/* Wait for fd to become ready for events until deadline (-1: forever). */
int semc_fd_wait(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int64_t left;
	int r;

	for (;;) {
		left = deadline < 0 ? -1 : deadline - semc_now_ms();
		if (deadline >= 0 && left < 0)
			left = 0;
		r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r == 0 && deadline >= 0 && semc_now_ms() >= deadline)
			return -ETIMEDOUT;
	}
}

/* Connect the non-blocking socket fd to sa before deadline: 0 or -errno. */
static int sock_connect(int fd, const struct sockaddr *sa, socklen_t salen, int64_t deadline)
{
	int r, err = 0;
	socklen_t el = sizeof err;

	r = connect(fd, sa, salen) == 0 ? 0 : -errno;
	if (r != -EINPROGRESS && (sa->sa_family != AF_UNIX || r != -EAGAIN))
		return r;
	if ((r = semc_fd_wait(fd, POLLOUT, deadline)) != 0)
		return r;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
		return -errno;
	return -err;
}

/* Open a UNIX socket to c->addr. */
static int unix_open(struct semc *c, struct semc_conn *k, int64_t deadline)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, r;

	memcpy(sun.sun_path, c->addr.path, strlen(c->addr.path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return semc_fail(SEMC_E_SYSTEM, "socket: %s", strerror(errno));
	if ((r = sock_connect(fd, (struct sockaddr *)&sun, sizeof sun, deadline)) != 0) {
		close(fd);
		return semc_fail(SEMC_E_CONNECT, "cannot connect to %s: %s",
				 c->addr.canon, strerror(-r));
	}
	k->fd = fd;
	return 0;
}

/* Open a TCP connection to c->addr: each address its name resolves to, in turn. */
int semc_tcp_open(struct semc *c, struct semc_conn *k, int64_t deadline)
{
	struct addrinfo hints = { 0 }, *res = NULL, *ai;
	char port[16];
	int fd = -1, r, one = 1;

	hints.ai_socktype = SOCK_STREAM;
	hints.ai_family = AF_UNSPEC;
	snprintf(port, sizeof port, "%u", c->addr.port);
	if ((r = getaddrinfo(c->addr.host, port, &hints, &res)) != 0)
		return semc_fail(SEMC_E_CONNECT, "cannot resolve %s: %s", c->addr.host,
				 gai_strerror(r));
	r = -ECONNREFUSED;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		if ((r = sock_connect(fd, ai->ai_addr, ai->ai_addrlen, deadline)) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return semc_fail(SEMC_E_CONNECT, "cannot connect to %s: %s", c->addr.canon,
				 strerror(-r));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
	k->fd = fd;
	return 0;
}

/* Read what a socket has (never blocks): n, 0 at EOF, -1 with errno. */
static ssize_t sock_read(struct semc_conn *k, void *buf, size_t len)
{
	return recv(k->fd, buf, len, MSG_DONTWAIT);
}

/* Write to a socket without blocking (a full socket waits for POLLOUT). */
static ssize_t sock_write(struct semc_conn *k, const void *buf, size_t len, int *want)
{
	*want = POLLOUT;
	return send(k->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

const struct semc_xprt semc_xprt_unix = {
	.name = "unix",
	.open = unix_open,
	.read = sock_read,
	.write = sock_write,
};

const struct semc_xprt semc_xprt_tcp = {
	.name = "tcp",
	.open = semc_tcp_open,
	.read = sock_read,
	.write = sock_write,
};

/* Prepare the transports of every address of the handle (TLS: its context). */
int semc_xprt_setup(struct semc *c)
{
	unsigned i;
	int r;

	for (i = 0; i < c->naddrs; i++)
		if (c->addrs[i].xprt->setup != NULL && (r = c->addrs[i].xprt->setup(c)) != 0)
			return r;
	return 0;
}

/* Open a connection to the address in use through its transport. */
int semc_conn_open(struct semc *c, int64_t deadline, struct semc_conn **out)
{
	struct semc_conn *k;
	int r;

	*out = NULL;
	if ((k = calloc(1, sizeof *k)) == NULL)
		return semc_fail(SEMC_E_NOMEM, NULL);
	k->fd = -1;
	k->refs = 1;
	k->xprt = c->addr.xprt;
	pthread_mutex_init(&k->iolock, NULL);
	if ((r = k->xprt->open(c, k, deadline)) != 0) {
		pthread_mutex_lock(&c->lock);
		semc_conn_put_locked(k);
		pthread_mutex_unlock(&c->lock);
		return r;
	}
	*out = k;
	return 0;
}

/* Drop a reference to a connection; the last one closes it. */
void semc_conn_put_locked(struct semc_conn *k)
{
	if (k == NULL || --k->refs > 0)
		return;
	if (k->xprt->close != NULL)
		k->xprt->close(k);
	if (k->fd >= 0)
		close(k->fd);
	pthread_mutex_destroy(&k->iolock);
	free(k);
}

/* Write all of buf before deadline. */
int semc_conn_write_all(struct semc_conn *k, const uint8_t *buf, size_t len, int64_t deadline)
{
	ssize_t n;
	int want;

	while (len > 0) {
		want = POLLOUT;
		n = k->xprt->write(k, buf, len, &want);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (semc_fd_wait(k->fd, (short)want, deadline) != 0)
				return -ETIMEDOUT;
			continue;
		}
		return n < 0 ? -errno : -EPIPE;
	}
	return 0;
}

/* Read exactly len bytes before deadline (handshake only). */
static int conn_read_exact(struct semc_conn *k, uint8_t *buf, size_t len, int64_t deadline)
{
	ssize_t n;

	while (len > 0) {
		n = k->xprt->read(k, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (semc_fd_wait(k->fd, POLLIN, deadline) != 0)
			return -ETIMEDOUT;
	}
	return 0;
}

/* Send one request on a fresh connection and read the one reply to it. */
int semc_frame_exchange(struct semc *c, struct semc_conn *k, int64_t deadline,
			Semd__Request *rq, Semd__Reply **out, int64_t *sent_at, const char *what)
{
	uint8_t hdr[FRAME_HDR], *buf = NULL;
	size_t len;
	int r;

	*out = NULL;
	len = semd__request__get_packed_size(rq);
	if ((buf = malloc(FRAME_HDR + len)) == NULL)
		return semc_fail(SEMC_E_NOMEM, NULL);
	frame_put_header(buf, (uint32_t)len);
	semd__request__pack(rq, buf + FRAME_HDR);
	*sent_at = semc_now_ms();
	r = semc_conn_write_all(k, buf, FRAME_HDR + len, deadline);
	free(buf);
	buf = NULL;
	if (r != 0)
		goto fail;
	if ((r = conn_read_exact(k, hdr, FRAME_HDR, deadline)) != 0)
		goto fail;
	len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
	if (len == 0 || len > FRAME_MAX_LIMIT)
		return semc_fail(SEMC_E_PROTOCOL, "bad frame from %s", c->addr.canon);
	if ((buf = malloc(len)) == NULL)
		return semc_fail(SEMC_E_NOMEM, NULL);
	if ((r = conn_read_exact(k, buf, len, deadline)) != 0)
		goto fail;
	*out = semd__reply__unpack(NULL, len, buf);
	free(buf);
	if (*out == NULL)
		return semc_fail(SEMC_E_PROTOCOL, "undecodable reply from %s", c->addr.canon);
	return 0;
fail:
	free(buf);
	if (r == -ETIMEDOUT)
		return semc_fail(SEMC_E_NO_REPLY, "no answer to %s from %s", what,
				 c->addr.canon);
	return semc_fail(SEMC_E_CONNECT, "%s with %s failed: %s", what, c->addr.canon,
			 strerror(-r));
}
