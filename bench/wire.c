/* bench/wire.c - addresses, buffers, request encoding, reply decoding. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

/* Parse an address string into a sockaddr. */
int wire_addr_parse(const char *s, struct wire_addr *a, char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL;
	char host[256];
	const char *hp, *port;
	size_t n;
	int r;

	memset(a, 0, sizeof(*a));
	snprintf(a->text, sizeof(a->text), "%s", s);
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
		snprintf(err, errlen, "%s: address must be unix:PATH, tcp:HOST:PORT or tls:HOST:PORT", s);
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
	memcpy(&a->ss, res->ai_addr, res->ai_addrlen);
	a->len = res->ai_addrlen;
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

/* A client SSL_CTX from t. */
SSL_CTX *wire_tls_ctx_new(const struct wire_tls *t, char *err, size_t errlen)
{
	SSL_CTX *ctx;

	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL) {
		tls_error(err, errlen, "SSL_CTX_new");
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		goto fail_ssl;
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (t->ca_file != NULL) {
		if (SSL_CTX_load_verify_locations(ctx, t->ca_file, NULL) != 1) {
			tls_error(err, errlen, t->ca_file);
			goto fail;
		}
	} else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
		goto fail_ssl;
	}
	if (t->cert_file != NULL) {
		if (SSL_CTX_use_certificate_chain_file(ctx, t->cert_file) != 1) {
			tls_error(err, errlen, t->cert_file);
			goto fail;
		}
		if (SSL_CTX_use_PrivateKey_file(ctx, t->key_file != NULL ? t->key_file : t->cert_file,
		    SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
			tls_error(err, errlen, t->key_file != NULL ? t->key_file : t->cert_file);
			goto fail;
		}
	}
	SSL_CTX_set_verify(ctx, t->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
	return ctx;
fail_ssl:
	tls_error(err, errlen, "TLS context");
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

/* TLS handshake on a connected blocking fd. */
SSL *wire_tls_handshake(SSL_CTX *ctx, int fd, const char *host, int insecure,
    char *err, size_t errlen)
{
	struct in6_addr a6;
	struct in_addr a4;
	long vr;
	SSL *ssl;

	ssl = SSL_new(ctx);
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1) {
		tls_error(err, errlen, "SSL_new");
		SSL_free(ssl);
		return NULL;
	}
	/* names get SNI and a host name check, addresses an IP check */
	if (inet_pton(AF_INET, host, &a4) != 1 && inet_pton(AF_INET6, host, &a6) != 1)
		(void)SSL_set_tlsext_host_name(ssl, host);
	if (!insecure && SSL_set1_host(ssl, host) != 1) {
		tls_error(err, errlen, "SSL_set1_host");
		SSL_free(ssl);
		return NULL;
	}
	if (SSL_connect(ssl) != 1) {
		vr = SSL_get_verify_result(ssl);
		if (vr != X509_V_OK)
			snprintf(err, errlen, "TLS handshake with %s: certificate: %s", host,
			    X509_verify_cert_error_string(vr));
		else
			tls_error(err, errlen, "TLS handshake");
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

/* Append Ping with an optional payload. */
int wire_put_ping(struct wbuf *b, uint64_t id, const uint8_t *payload, size_t len)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Ping ping = SEMD__PING__INIT;

	ping.payload.data = (uint8_t *)payload;
	ping.payload.len = len;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_PING;
	req.ping = &ping;
	return wire_put_request(b, &req);
}

/* Append Down of one permit. */
int wire_put_down(struct wbuf *b, uint64_t id, const char *name, int64_t timeout_ms)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Down down = SEMD__DOWN__INIT;

	down.name = (char *)name;
	down.n = 1;
	down.timeout_ms = timeout_ms;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_DOWN;
	req.down = &down;
	return wire_put_request(b, &req);
}

/* Append Up of one permit. */
int wire_put_up(struct wbuf *b, uint64_t id, const char *name, uint64_t permit_id)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Up up = SEMD__UP__INIT;

	up.name = (char *)name;
	up.n = 1;
	up.permit_id = permit_id;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_UP;
	req.up = &up;
	return wire_put_request(b, &req);
}

/* Append Create. */
int wire_put_create(struct wbuf *b, uint64_t id, const char *name, uint32_t limit, int if_not_exists)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Create create = SEMD__CREATE__INIT;

	create.name = (char *)name;
	create.limit = limit;
	create.mode = SEMD__MODE__OWNED;
	create.if_not_exists = if_not_exists != 0;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_CREATE;
	req.create = &create;
	return wire_put_request(b, &req);
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
