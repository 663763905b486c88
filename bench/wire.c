/* SPDX-License-Identifier: BSD-2-Clause */
/* bench/wire.c - addresses, buffers, request encoding, reply decoding. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "bench/wire.h"
#include "proto/pbwire.h"
#include "security/tls.h"

/* Does a TCP connection to ai's address get through now? */
static int wire_accepts(const struct addrinfo *ai)
{
	int fd, r;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	do
		r = connect(fd, ai->ai_addr, ai->ai_addrlen);
	while (r < 0 && errno == EINTR);
	close(fd);
	return r == 0;
}

/* Parse an address string into a sockaddr. */
int wire_addr_parse(const char *s, struct wire_addr *a, char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL, *ai;
	char host[256];
	const char *hp, *port;
	size_t n;
	int r;

	memset(a, 0, sizeof(*a));
	snprintf(a->text, sizeof(a->text), "%s", s);
	/* HTTP/1.1 and JSON (daemon/http/): the same sockets, another wire. */
	if (strncmp(s, "http+unix:", 10) == 0 || strncmp(s, "http:", 5) == 0) {
		char inner[300];

		snprintf(inner, sizeof(inner), "%s:%s", s[4] == '+' ? "unix" :
		    "tcp", s + (s[4] == '+' ? 10 : 5));
		if ((r = wire_addr_parse(inner, a, err, errlen)) != 0)
			return r;
		snprintf(a->text, sizeof(a->text), "%s", s);
		a->is_http = 1;
		return 0;
	}
	if (strncmp(s, "unix:", 5) == 0) {
		struct sockaddr_un *sun = (struct sockaddr_un *)&a->ss;

		n = strlen(s + 5);
		if (n == 0 || n >= sizeof(sun->sun_path)) {
			snprintf(err, errlen, "%s: UNIX socket path empty or too long", s);
			return -EINVAL;
		}
		sun->sun_family = AF_UNIX;
		memcpy(sun->sun_path, s + 5, n + 1);
		a->len = (socklen_t)sizeof(*sun);
		a->is_unix = 1;
		return 0;
	}
	if (strncmp(s, "tls:", 4) == 0)
		a->is_tls = 1;
	else if (strncmp(s, "tcp:", 4) != 0) {
		snprintf(err, errlen, "%s: address must be unix:PATH, tcp:HOST:PORT, tls:HOST:PORT, "
		    "http:HOST:PORT or http+unix:PATH", s);
		return -EINVAL;
	}
	hp = s + 4;
	if (strlen(hp) >= sizeof(host)) {
		snprintf(err, errlen, "%s: address too long", s);
		return -EINVAL;
	}
	if (hp[0] == '[') {
		const char *close = strchr(hp, ']');

		if (close == NULL || close[1] != ':') {
			snprintf(err, errlen, "%s: expected tcp:[V6ADDR]:PORT", s);
			return -EINVAL;
		}
		n = (size_t)(close - hp - 1);
		memcpy(host, hp + 1, n);
		host[n] = '\0';
		port = close + 2;
	} else {
		const char *colon = strrchr(hp, ':');

		if (colon == NULL) {
			snprintf(err, errlen, "%s: expected tcp:HOST:PORT", s);
			return -EINVAL;
		}
		n = (size_t)(colon - hp);
		memcpy(host, hp, n);
		host[n] = '\0';
		port = colon + 1;
	}
	if (*host == '\0' || *port == '\0') {
		snprintf(err, errlen, "%s: expected tcp:HOST:PORT", s);
		return -EINVAL;
	}
	snprintf(a->host, sizeof(a->host), "%s", host);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	r = getaddrinfo(host, port, &hints, &res);
	if (r != 0 || res == NULL) {
		snprintf(err, errlen, "%s: %s", s, gai_strerror(r));
		return -EINVAL;
	}
	/* A name of several addresses (localhost: ::1 and 127.0.0.1 on most
	 * systems, a daemon listening on one): the first that takes a
	 * connection now, else the first. */
	ai = res;
	if (res->ai_next != NULL)
		for (ai = res; ai != NULL && !wire_accepts(ai); ai = ai->ai_next)
			;
	if (ai == NULL || ai->ai_addrlen > sizeof(a->ss))
		ai = res;
	memcpy(&a->ss, ai->ai_addr, ai->ai_addrlen);
	a->len = ai->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* Open a stream socket to a and connect it. */
int wire_connect(const struct wire_addr *a, int nonblock)
{
	int fd, one = 1, r;

	fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	do
		r = connect(fd, (const struct sockaddr *)&a->ss, a->len);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (!a->is_unix)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (nonblock && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* The latest OpenSSL error as text, or what. */
static void tls_error(char *err, size_t errlen, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256];

	if (e != 0) {
		ERR_error_string_n(e, buf, sizeof(buf));
		snprintf(err, errlen, "%s: %s", what, buf);
	} else {
		snprintf(err, errlen, "%s", what);
	}
	ERR_clear_error();
}

/* The ex_data slot of an SSL that says where its session tickets go. */
static int wire_slot_idx = -1;
static pthread_once_t wire_slot_once = PTHREAD_ONCE_INIT;

/* Register the slot, once per process. */
static void wire_slot_init(void)
{
	wire_slot_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

/*
 * A session ticket came (TLS 1.3 sends it after the handshake): keep the
 * newest in the connection's slot, if it has one, to resume the next time.
 */
static int wire_tls_new_session(SSL *ssl, SSL_SESSION *sess)
{
	SSL_SESSION **slot = SSL_get_ex_data(ssl, wire_slot_idx);

	if (slot == NULL)
		return 0;
	SSL_SESSION_free(*slot);
	*slot = sess;
	return 1;
}

/* A client SSL_CTX from t (security/tls.c's, with the benchmark's modes). */
SSL_CTX *wire_tls_ctx_new(const struct wire_tls *t, char *err, size_t errlen)
{
	struct tls_client_config cfg = {
		.ca_file = t->ca_file, .cert_file = t->cert_file, .key_file = t->key_file,
		.insecure = t->insecure != 0,
	};
	SSL_CTX *ctx;

	pthread_once(&wire_slot_once, wire_slot_init);
	if (tls_client_ctx_new(&ctx, &cfg, err, errlen) != 0)
		return NULL;
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* One read(2) takes every record that came (readers drain SSL_has_pending()). */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
	    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, wire_tls_new_session);
	return ctx;
}

/* A client SSL on fd, checking the server against host (security/tls.c's;
 * a context made insecure does not act on the check). */
SSL *wire_tls_new(SSL_CTX *ctx, int fd, const char *host, int insecure,
    SSL_SESSION **slot, char *err, size_t errlen)
{
	SSL *ssl;

	(void)insecure;
	if (tls_client_ssl_new(ctx, host, &ssl, err, errlen) != 0)
		return NULL;
	if (SSL_set_fd(ssl, fd) != 1) {
		tls_error(err, errlen, "SSL_set_fd");
		SSL_free(ssl);
		return NULL;
	}
	if (slot != NULL) {
		if (*slot != NULL && SSL_SESSION_is_resumable(*slot))
			(void)SSL_set_session(ssl, *slot);
		(void)SSL_set_ex_data(ssl, wire_slot_idx, slot);
	}
	return ssl;
}

/* One step of a handshake on a non-blocking socket. */
int wire_tls_step(SSL *ssl, const char *host, int *want, char *err, size_t errlen)
{
	char why[256] = "";
	int r, e;

	ERR_clear_error();
	errno = 0;
	r = SSL_do_handshake(ssl);
	if (r == 1)
		return 1;
	e = SSL_get_error(ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		*want = e == SSL_ERROR_WANT_WRITE;
		return 0;
	}
	(void)tls_handshake_why(ssl, r, e, errno, why, sizeof(why));
	snprintf(err, errlen, "%s (%s)", why, host);
	return -1;
}

/* TLS handshake on a connected blocking fd. */
SSL *wire_tls_handshake(SSL_CTX *ctx, int fd, const char *host, int insecure,
    char *err, size_t errlen)
{
	SSL *ssl;
	int want;

	if (errlen > 0)
		err[0] = '\0';
	ssl = wire_tls_new(ctx, fd, host, insecure, NULL, err, errlen);
	if (ssl != NULL && wire_tls_step(ssl, host, &want, err, errlen) != 1) {
		if (err[0] == '\0')
			snprintf(err, errlen, "TLS handshake with %s did not finish", host);
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

/* Send a close_notify and free ssl. */
void wire_tls_close(SSL *ssl)
{
	if (ssl == NULL)
		return;
	(void)SSL_shutdown(ssl);
	SSL_free(ssl);
	ERR_clear_error();
}

/* Close a connection: its TLS, then its socket. */
void wire_close(int *fd, SSL **ssl)
{
	wire_tls_close(*ssl);
	*ssl = NULL;
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Map an SSL_read/SSL_write result to the send()/recv() convention. */
static ssize_t tls_result(SSL *ssl, int r)
{
	switch (SSL_get_error(ssl, r)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		ERR_clear_error();
		if (errno == 0)
			errno = ECONNRESET;
		return -1;
	default:
		ERR_clear_error();
		errno = EPROTO;
		return -1;
	}
}

/* send() over fd or ssl. */
ssize_t wire_send(int fd, SSL *ssl, const void *p, size_t n)
{
	int r;

	if (ssl == NULL)
		return send(fd, p, n, MSG_NOSIGNAL);
	if (n > INT32_MAX)
		n = INT32_MAX;
	errno = 0;
	r = SSL_write(ssl, p, (int)n);
	return r > 0 ? r : tls_result(ssl, r);
}

/* recv() over fd or ssl. */
ssize_t wire_recv(int fd, SSL *ssl, void *p, size_t n)
{
	int r;

	if (ssl == NULL)
		return recv(fd, p, n, 0);
	if (n > INT32_MAX)
		n = INT32_MAX;
	errno = 0;
	r = SSL_read(ssl, p, (int)n);
	return r > 0 ? r : tls_result(ssl, r);
}

/* Make room for n more bytes after len. */
int wbuf_reserve(struct wbuf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->cap - b->len >= n)
		return 0;
	if (b->off > 0) {
		wbuf_compact(b);
		if (b->cap - b->len >= n)
			return 0;
	}
	cap = b->cap ? b->cap : 4096;
	while (cap - b->len < n)
		cap *= 2;
	p = realloc(b->p, cap);
	if (p == NULL)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

/* Write all of b's pending output, blocking, and empty it. */
int wbuf_send_all(struct wbuf *b, int fd, SSL *ssl)
{
	ssize_t n;

	while (b->off < b->len) {
		n = wire_send(fd, ssl, b->p + b->off, b->len - b->off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b->off += (size_t)n;
	}
	b->off = b->len = 0;
	return 0;
}

/* Drop the consumed prefix. */
void wbuf_compact(struct wbuf *b)
{
	if (b->off == 0)
		return;
	if (b->off < b->len)
		memmove(b->p, b->p + b->off, b->len - b->off);
	b->len -= b->off;
	b->off = 0;
}

/* Release the memory of b. */
void wbuf_free(struct wbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* Append one framed request. */
int wire_put_request(struct wbuf *b, const Semd__Request *req)
{
	size_t n = semd__request__get_packed_size(req);
	int r;

	if ((r = wbuf_reserve(b, FRAME_HDR + n)) != 0)
		return r;
	frame_put_header(b->p + b->len, (uint32_t)n);
	semd__request__pack(req, b->p + b->len + FRAME_HDR);
	b->len += FRAME_HDR + n;
	return 0;
}

/* Append Hello (version 1). */
int wire_put_hello(struct wbuf *b, uint64_t id, const char *client_name)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Hello hello = SEMD__HELLO__INIT;

	hello.version = 1;
	hello.client_name = (char *)client_name;
	hello.pid = (uint32_t)getpid();
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_HELLO;
	req.hello = &hello;
	return wire_put_request(b, &req);
}

/*
 * The hot requests (Ping, Down, Up) are encoded by hand, straight into the
 * output buffer, in the byte order protobuf-c itself uses (fields by number,
 * zero values left out; proto/pbwire.h writes the fields): test_bench
 * checks the two agree byte for byte.
 */

/*
 * Append a frame holding Request { id, op = body } where body is op's
 * encoded fields: name (field 1, left out when empty), the varint fields
 * v[0..nv) numbered 2, 3, ... (left out when 0), then tail[0..ntail): the
 * higher fields, already encoded.
 */
static int put_hot(struct wbuf *b, uint64_t id, unsigned op, const char *name,
    const uint8_t *bytes, size_t nbytes, const uint64_t *v, unsigned nv,
    const uint8_t *tail, size_t ntail)
{
	size_t body = 0, msg, n = 0;
	uint8_t *p;
	unsigned i;
	int r;

	if (name != NULL) {
		nbytes = strlen(name);
		bytes = (const uint8_t *)name;
	}
	if (nbytes > 0)
		body += 1 + pb_varint_size(nbytes) + nbytes;
	for (i = 0; i < nv; i++)
		body += pb_uint_field_size(v[i]);
	body += ntail;
	msg = pb_uint_field_size(id) + 1 + pb_varint_size(body) + body;
	if ((r = wbuf_reserve(b, FRAME_HDR + msg)) != 0)
		return r;
	p = b->p + b->len;
	frame_put_header(p, (uint32_t)msg);
	p += FRAME_HDR;
	n += pb_put_uint_field(p + n, 1, id);
	n += pb_put_len_field(p + n, op, body);
	if (nbytes > 0) {
		n += pb_put_len_field(p + n, 1, nbytes);
		memcpy(p + n, bytes, nbytes);
		n += nbytes;
	}
	for (i = 0; i < nv; i++)
		n += pb_put_uint_field(p + n, 2 + i, v[i]);
	if (ntail > 0)
		memcpy(p + n, tail, ntail);
	b->len += FRAME_HDR + msg;
	return 0;
}

/* Append Ping with an optional payload. */
int wire_put_ping(struct wbuf *b, uint64_t id, const uint8_t *payload, size_t len)
{
	return put_hot(b, id, SEMD__REQUEST__OP_PING, NULL, payload, len, NULL, 0, NULL, 0);
}

/* Append Down of one permit (negative timeouts: int64 as a 10-byte varint). */
int wire_put_down(struct wbuf *b, uint64_t id, const char *name, int64_t timeout_ms)
{
	return wire_put_down_in(b, id, name, timeout_ms, 0, NULL);
}

/*
 * Append Down of one permit of a priority class and a group (fields 21 and
 * 22, each left out when 0 or NULL/empty, as protobuf-c does).
 */
int wire_put_down_in(struct wbuf *b, uint64_t id, const char *name, int64_t timeout_ms,
    int priority, const char *group)
{
	uint64_t v[2] = { 1, (uint64_t)timeout_ms };
	uint8_t tail[2 + 10 + 2 + 10 + WIRE_GROUP_MAX];
	size_t n = 0, glen = group != NULL ? strnlen(group, WIRE_GROUP_MAX + 1) : 0;

	if (glen > WIRE_GROUP_MAX)
		return -EINVAL;
	if (priority != 0) {
		/* sint32: zigzag */
		n += pb_put_varint(tail + n, 21u << 3 | PB_WT_VARINT);
		n += pb_put_varint(tail + n,
		    (uint32_t)priority << 1 ^ (priority < 0 ? UINT32_MAX : 0));
	}
	if (glen > 0) {
		n += pb_put_varint(tail + n, 22u << 3 | PB_WT_LEN);
		n += pb_put_varint(tail + n, glen);
		memcpy(tail + n, group, glen);
		n += glen;
	}
	return put_hot(b, id, SEMD__REQUEST__OP_DOWN, name, NULL, 0, v, 2,
	    n > 0 ? tail : NULL, n);
}

/* Append Up of one permit. */
int wire_put_up(struct wbuf *b, uint64_t id, const char *name, uint64_t permit_id)
{
	uint64_t v[2] = { 1, permit_id };

	return put_hot(b, id, SEMD__REQUEST__OP_UP, name, NULL, 0, v, 2, NULL, 0);
}

/* Read a varint at *p (before end); NULL when it is cut or too long. */
static const uint8_t *pb_get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	unsigned shift;

	for (shift = 0; shift < 64 && p < end; shift += 7) {
		x |= (uint64_t)(*p & 0x7f) << shift;
		if ((*p++ & 0x80) == 0) {
			*v = x;
			return p;
		}
	}
	return NULL;
}

/* Skip a field of wire type wt; NULL when it is cut or of a kind not used. */
static const uint8_t *pb_skip(const uint8_t *p, const uint8_t *end, unsigned wt)
{
	uint64_t n;

	switch (wt) {
	case PB_WT_VARINT:
		return pb_get_varint(p, end, &n);
	case 1:
		return end - p >= 8 ? p + 8 : NULL;
	case PB_WT_LEN:
		p = pb_get_varint(p, end, &n);
		return p != NULL && n <= (uint64_t)(end - p) ? p + n : NULL;
	case 5:
		return end - p >= 4 ? p + 4 : NULL;
	default:
		return NULL;
	}
}

/* Decode the fields of a Reply the closed loop needs. */
int wire_reply_peek(const uint8_t *p, size_t len, struct wire_reply_min *r)
{
	const uint8_t *end = p + len, *q, *qe;
	uint64_t tag, v, n;
	unsigned field, wt;

	memset(r, 0, sizeof(*r));
	r->msg = "";
	while (p < end) {
		if ((p = pb_get_varint(p, end, &tag)) == NULL)
			return -1;
		field = (unsigned)(tag >> 3);
		wt = (unsigned)(tag & 7);
		if (field == 0 || tag >> 32 != 0)
			return -1;
		if (wt == PB_WT_VARINT && (field == 1 || field == 2)) {
			if ((p = pb_get_varint(p, end, &v)) == NULL)
				return -1;
			if (field == 1)
				r->id = v;
			else
				r->code = (int32_t)(uint32_t)v;
			continue;
		}
		if (wt == PB_WT_LEN && (field == 3 || field == 5)) {
			if ((p = pb_get_varint(p, end, &n)) == NULL || n > (uint64_t)(end - p))
				return -1;
			q = p;
			qe = p + n;
			p = qe;
			if (field == 3) {
				r->msg = (const char *)q;
				r->msglen = (size_t)n;
				continue;
			}
			/* Grant: its permit_id (field 1); the rest is skipped */
			r->has_grant = 1;
			while (q < qe) {
				if ((q = pb_get_varint(q, qe, &tag)) == NULL)
					return -1;
				if (tag >> 3 == 0)
					return -1;
				if (tag == (1 << 3 | PB_WT_VARINT)) {
					if ((q = pb_get_varint(q, qe, &r->permit)) == NULL)
						return -1;
				} else if ((q = pb_skip(q, qe, (unsigned)(tag & 7))) == NULL) {
					return -1;
				}
			}
			continue;
		}
		if ((p = pb_skip(p, end, wt)) == NULL)
			return -1;
	}
	return 0;
}

/* Append Create of an OWNED name, shared between groups as share says. */
static int put_create(struct wbuf *b, uint64_t id, const char *name, uint32_t limit,
    int if_not_exists, Semd__ShareBy share)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Create create = SEMD__CREATE__INIT;

	create.name = (char *)name;
	create.limit = limit;
	create.mode = SEMD__MODE__OWNED;
	create.if_not_exists = if_not_exists != 0;
	create.share = share;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_CREATE;
	req.create = &create;
	return wire_put_request(b, &req);
}

/* Append Create. */
int wire_put_create(struct wbuf *b, uint64_t id, const char *name, uint32_t limit, int if_not_exists)
{
	return put_create(b, id, name, limit, if_not_exists, SEMD__SHARE_BY__SHARE_NONE);
}

/* Append Create of a name with fair shares by key (Down.group), every weight 1. */
int wire_put_create_share(struct wbuf *b, uint64_t id, const char *name, uint32_t limit)
{
	return put_create(b, id, name, limit, 1, SEMD__SHARE_BY__SHARE_KEY);
}

/* Append Create of a name with a token bucket (limit 0: rate-only). */
int wire_put_create_rate(struct wbuf *b, uint64_t id, const char *name, uint32_t limit,
    uint32_t rate, uint32_t period_ms, uint32_t burst)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Create create = SEMD__CREATE__INIT;

	create.name = (char *)name;
	create.limit = limit;
	create.rate = rate;
	create.rate_period_ms = period_ms;
	create.burst = burst;
	create.if_not_exists = 1;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_CREATE;
	req.create = &create;
	return wire_put_request(b, &req);
}

/* Append DownMulti of n names (one permit each). */
int wire_put_down_multi(struct wbuf *b, uint64_t id, const char *const *names, size_t n,
    int64_t timeout_ms)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__DownMulti dm = SEMD__DOWN_MULTI__INIT;
	Semd__Want wv[8], *wp[8];
	size_t i;

	if (n > 8)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		semd__want__init(&wv[i]);
		wv[i].name = (char *)names[i];
		wv[i].n = 1;
		wp[i] = &wv[i];
	}
	dm.n_wants = n;
	dm.wants = wp;
	dm.timeout_ms = timeout_ms;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_DOWN_MULTI;
	req.down_multi = &dm;
	return wire_put_request(b, &req);
}

/* Append a request whose operation is op, the oneof member of op_case. */
static int put_op(struct wbuf *b, uint64_t id, int op_case, const void *op)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(
	    &semd__request__descriptor, (unsigned)op_case);

	if (f == NULL)
		return -1;
	req.id = id;
	req.op_case = (Semd__Request__OpCase)op_case;
	memcpy((char *)&req + f->offset, &op, sizeof op);
	return wire_put_request(b, &req);
}

/* Append Info of name. */
int wire_put_info(struct wbuf *b, uint64_t id, const char *name)
{
	Semd__Info in = SEMD__INFO__INIT;

	in.name = (char *)name;
	return put_op(b, id, SEMD__REQUEST__OP_INFO, &in);
}

/* Append Delete. */
int wire_put_delete(struct wbuf *b, uint64_t id, const char *name, int force)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Delete del = SEMD__DELETE__INIT;

	del.name = (char *)name;
	del.force = force != 0;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_DELETE;
	req.delete_ = &del;
	return wire_put_request(b, &req);
}

/* Append Stats. */
int wire_put_stats(struct wbuf *b, uint64_t id)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Stats stats = SEMD__STATS__INIT;

	req.id = id;
	req.op_case = SEMD__REQUEST__OP_STATS;
	req.stats = &stats;
	return wire_put_request(b, &req);
}

/* Cut the next frame off the front of b. */
int wire_next_frame(struct wbuf *b, size_t max, const uint8_t **payload, size_t *len)
{
	size_t n;
	int r;

	r = frame_peek(b->p + b->off, b->len - b->off, max, &n);
	if (r <= 0)
		return r;
	*payload = b->p + b->off + FRAME_HDR;
	*len = n;
	b->off += FRAME_HDR + n;
	return 1;
}

/* Allocate from the arena, or from malloc when it is full. */
static void *arena_alloc(void *data, size_t size)
{
	struct wire_arena *a = data;
	size_t need = (size + 15) & ~(size_t)15;
	void *p;

	if (need >= size && a->cap - a->used >= need) {
		p = a->base + a->used;
		a->used += need;
		return p;
	}
	return malloc(size);
}

/* Free what came from malloc; arena memory goes back on rewind. */
static void arena_free(void *data, void *p)
{
	struct wire_arena *a = data;
	uint8_t *q = p;

	if (q >= a->base && q < a->base + a->cap)
		return;
	free(p);
}

/* Set up an arena of cap bytes. */
int wire_arena_init(struct wire_arena *a, size_t cap)
{
	memset(a, 0, sizeof(*a));
	a->base = aligned_alloc(16, (cap + 15) & ~(size_t)15);
	if (a->base == NULL)
		return -ENOMEM;
	a->cap = cap;
	a->alloc.alloc = arena_alloc;
	a->alloc.free = arena_free;
	a->alloc.allocator_data = a;
	return 0;
}

/* Free the arena's memory. */
void wire_arena_free(struct wire_arena *a)
{
	free(a->base);
	memset(a, 0, sizeof(*a));
}

/* Decode one Reply payload. */
Semd__Reply *wire_reply_unpack(struct wire_arena *a, const uint8_t *p, size_t len)
{
	Semd__Reply *r = semd__reply__unpack(&a->alloc, len, p);

	if (r == NULL)
		a->used = 0;
	return r;
}

/* Release r and rewind the arena. */
void wire_reply_done(struct wire_arena *a, Semd__Reply *r)
{
	if (r != NULL)
		semd__reply__free_unpacked(r, &a->alloc);
	a->used = 0;
}

/* Name of a result code. */
const char *wire_code_name(int code)
{
	const ProtobufCEnumValue *v;

	v = protobuf_c_enum_descriptor_get_value(&semd__code__descriptor, code);
	return v != NULL ? v->name : "UNKNOWN_CODE";
}

/* Find a Stats counter by exact name. */
int wire_stats_get(const Semd__Reply *r, const char *name, uint64_t *v)
{
	size_t i;

	if (r->body_case != SEMD__REPLY__BODY_STATS || r->stats == NULL)
		return 0;
	for (i = 0; i < r->stats->n_counters; i++) {
		if (strcmp(r->stats->counters[i]->name, name) == 0) {
			*v = r->stats->counters[i]->value;
			return 1;
		}
	}
	return 0;
}
