/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/wire.h - the benchmark's side of the semd wire protocol: addresses,
 * connecting, output and input buffers of frames, request encoding straight
 * into the output buffer, and reply decoding into a per-thread arena (no
 * malloc per reply on the measured path).
 */
#ifndef SEMD_BENCH_WIRE_H
#define SEMD_BENCH_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#include "proto/frame.h"
#include "proto/semd.pb-c.h"

/* Replies (Stats, List) may be bigger than requests. */
#define WIRE_REPLY_MAX	(4u * 1024u * 1024u)

struct wire_addr {
	struct sockaddr_storage	ss;
	socklen_t		len;
	int			is_unix;
	int			is_tls;
	int			is_http;	/* http: or http+unix: (wire_http.c) */
	char			host[256];	/* tcp/tls: for certificate checks */
	char			text[128];
};

/*
 * Parse "unix:PATH", "tcp:HOST:PORT" or "tls:HOST:PORT" (HOST may be
 * "[v6]"), or the HTTP front door's "http:HOST:PORT" or "http+unix:PATH".
 * Returns 0, or -EINVAL with a message for the user in err.
 */
int wire_addr_parse(const char *s, struct wire_addr *a, char *err, size_t errlen);

/* A connected stream socket (TCP_NODELAY on TCP), or -errno. */
int wire_connect(const struct wire_addr *a, int nonblock);

/* Where the TLS client's trust and identity come from. */
struct wire_tls {
	const char	*ca_file;	/* NULL: the system's trust store */
	const char	*cert_file;	/* client certificate for mutual TLS, or NULL */
	const char	*key_file;	/* its key (NULL: in cert_file) */
	int		 insecure;	/* do not verify the server (tests only) */
};

/* A client SSL_CTX (TLS 1.2 at least), or NULL with a message in err. */
SSL_CTX *wire_tls_ctx_new(const struct wire_tls *t, char *err, size_t errlen);

/*
 * Run the TLS handshake on a connected blocking fd; the server certificate
 * is checked against host unless insecure. NULL with a message in err.
 */
SSL *wire_tls_handshake(SSL_CTX *ctx, int fd, const char *host, int insecure,
    char *err, size_t errlen);

/*
 * A client SSL on fd, for wire_tls_step(). slot (or NULL): a session to
 * resume (*slot, if it can be), and where the session tickets the server
 * sends are kept (the newest replaces *slot; the caller frees the last).
 */
SSL *wire_tls_new(SSL_CTX *ctx, int fd, const char *host, int insecure,
    SSL_SESSION **slot, char *err, size_t errlen);

/*
 * One step of the handshake of ssl (non-blocking fd): 1 when done, 0 when
 * it waits for the socket (*want: 0 readable, 1 writable), -1 with a
 * message in err.
 */
int wire_tls_step(SSL *ssl, const char *host, int *want, char *err, size_t errlen);

/* Send a close_notify (without waiting for the peer's) and free ssl. */
void wire_tls_close(SSL *ssl);

/* Close a connection: its TLS (if any), then its socket; both are reset. */
void wire_close(int *fd, SSL **ssl);

/*
 * send()/recv() over fd, or over ssl when it is not NULL: bytes moved, 0 at
 * the end of the stream (recv), or -1 with errno (EAGAIN: would block).
 */
ssize_t wire_send(int fd, SSL *ssl, const void *p, size_t n);
ssize_t wire_recv(int fd, SSL *ssl, void *p, size_t n);

/* Growable byte buffer: pending output, or received input. */
struct wbuf {
	uint8_t	*p;
	size_t	 off;	/* consumed (output: written) */
	size_t	 len;	/* filled */
	size_t	 cap;
};

/* Make room for n more bytes after len. Returns 0 or -ENOMEM. */
int wbuf_reserve(struct wbuf *b, size_t n);

/* Drop the consumed prefix. */
void wbuf_compact(struct wbuf *b);

/* Release the memory of b. */
void wbuf_free(struct wbuf *b);

/* Write all of b's pending output to fd (or ssl), blocking, and empty it.
 * Returns 0, or -1 with errno. */
int wbuf_send_all(struct wbuf *b, int fd, SSL *ssl);

/* Append one framed request. Returns 0 or -ENOMEM. */
int wire_put_request(struct wbuf *b, const Semd__Request *req);

/*
 * Append Hello (version 1). Ping, Down and Up are encoded by hand (the hot
 * path), the others through protobuf-c.
 */
int wire_put_hello(struct wbuf *b, uint64_t id, const char *client_name);
/* Append Ping with an optional payload. */
int wire_put_ping(struct wbuf *b, uint64_t id, const uint8_t *payload, size_t len);
/* Append Down of one permit; timeout_ms as in the protocol. */
int wire_put_down(struct wbuf *b, uint64_t id, const char *name, int64_t timeout_ms);
/* Down.group's longest (proto/semd.proto: 1..64 characters). */
#define WIRE_GROUP_MAX	64
/*
 * Append Down of one permit with Down.priority (-8..7; 0: none) and
 * Down.group (NULL or "": none). -EINVAL when group is too long.
 */
int wire_put_down_in(struct wbuf *b, uint64_t id, const char *name, int64_t timeout_ms,
    int priority, const char *group);
/* Append Up of one permit (permit_id 0: any one the session holds). */
int wire_put_up(struct wbuf *b, uint64_t id, const char *name, uint64_t permit_id);
/* Append Create (if_not_exists as given, OWNED mode). */
int wire_put_create(struct wbuf *b, uint64_t id, const char *name, uint32_t limit, int if_not_exists);
/* Append Create (if not exists) of a name with fair shares by key, weights 1. */
int wire_put_create_share(struct wbuf *b, uint64_t id, const char *name, uint32_t limit);
/* Append Info of name (a read: answered without an entry by a leader). */
int wire_put_info(struct wbuf *b, uint64_t id, const char *name);
/* Append Delete. */
int wire_put_delete(struct wbuf *b, uint64_t id, const char *name, int force);
/* Append Create with a token bucket; DownMulti of n <= 8 names, 1 each. */
int wire_put_create_rate(struct wbuf *b, uint64_t id, const char *name, uint32_t limit,
    uint32_t rate, uint32_t period_ms, uint32_t burst);
int wire_put_down_multi(struct wbuf *b, uint64_t id, const char *const *names, size_t n,
    int64_t timeout_ms);
/* Append Stats. */
int wire_put_stats(struct wbuf *b, uint64_t id);

/*
 * Cut the next frame off the front of b (input). Returns 1 and sets the
 * payload and its length, 0 if incomplete, -EMSGSIZE if its header exceeds max.
 */
int wire_next_frame(struct wbuf *b, size_t max, const uint8_t **payload, size_t *len);

/*
 * A bump allocator for decoded replies: wire_reply_unpack() allocates the
 * Reply there (falling back to malloc when a reply outgrows it), and
 * wire_reply_done() frees what fell back and rewinds the arena.
 */
struct wire_arena {
	uint8_t			*base;
	size_t			 used;
	size_t			 cap;
	ProtobufCAllocator	 alloc;
};

/* Set up an arena of cap bytes. Returns 0 or -ENOMEM. */
int wire_arena_init(struct wire_arena *a, size_t cap);
/* Free the arena's memory. */
void wire_arena_free(struct wire_arena *a);

/* The fields of a Reply the closed loop looks at. */
struct wire_reply_min {
	uint64_t	 id;
	int		 code;
	int		 has_grant;
	uint64_t	 permit;	/* grant.permit_id */
	const char	*msg;		/* not NUL-terminated */
	size_t		 msglen;
};

/*
 * Decode id, code, message and grant.permit_id of a Reply payload by hand,
 * skipping every other field: no allocation. Returns 0, or -1 when the bytes
 * are not a well-formed message.
 */
int wire_reply_peek(const uint8_t *p, size_t len, struct wire_reply_min *r);

/* Decode one Reply payload; NULL when it is not a valid Reply. */
Semd__Reply *wire_reply_unpack(struct wire_arena *a, const uint8_t *p, size_t len);
/* Done with r (may be NULL): release it and rewind the arena. */
void wire_reply_done(struct wire_arena *a, Semd__Reply *r);

/* Name of a result code ("OK", "WOULD_BLOCK", ...). */
const char *wire_code_name(int code);

/* Find a Stats counter by exact name; returns 1 and sets *v when present. */
int wire_stats_get(const Semd__Reply *r, const char *name, uint64_t *v);

#endif
