/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/peer_tls.c - raft's peer transport in mutual TLS (peer_tls.h).
 *
 * One relay a peer connection:
 *
 *   raft - uv_pipe_t =socketpair= uv_pipe_t - SSL on memory BIOs - uv_tcp_t - peer
 *
 * A peer's address is HOST:PORT (peer_addr.h), HOST an IP literal or a DNS
 * name. A name is resolved on the loop (uv_getaddrinfo, in libuv's threads)
 * at every connection attempt, so a changed record is followed; its
 * addresses are tried in order. A connection starts with the TLS 1.3
 * handshake, a certificate of the peer CA both ways; the connecting side
 * checks that the server's certificate names HOST (an IP subjectAltName for
 * a literal, a DNS one for a name: no partial wildcards, never the subject's
 * CN). It then sends a header inside TLS: a magic with the format, its raft
 * id and its raft address. The accepting side checks that the client's
 * certificate names that HOST the same way and answers one byte; only then is raft given its end of a socketpair, on
 * either side (so a refused client fails its connect, and raft retries).
 * Handshake and header must be done within HS_TIMEOUT_MS; at most
 * MAX_PENDING accepted connections may be that far at once.
 *
 * Everything runs on the raft thread's loop. A relay ends when either side
 * does (EOF or an error from raft's end or from the network): both are
 * closed. Each direction stops reading while the other side has more than
 * QUEUE_HIGH bytes queued. Closing the transport closes the listener and
 * every relay; its callback runs once the last handle is closed.
 */
#include <config.h>	/* autoconf's */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "daemon/logging.h"
#include "daemon/log/peer_addr.h"
#include "daemon/log/peer_tls.h"
#include "security/tls.h"

#define HS_TIMEOUT_MS	5000		/* handshake and header */
#define MAX_PENDING	16		/* accepted, not yet raft's */
#define HDR_ADDR	PEER_ADDR_MAX	/* the address field, NUL-padded */
#define HDR_LEN		(8 + 8 + HDR_ADDR)
#define HDR_OK		0x01		/* the accepting side's answer */
#define QUEUE_HIGH	(1u << 20)	/* bytes queued one way: stop reading */
#define READ_CHUNK	16384

enum relay_state { R_HANDSHAKE, R_HEADER, R_OPEN };

struct ptls;

/* One peer connection and raft's stream for it. */
struct relay {
	struct ptls		*p;
	struct relay		*next, *prev;
	bool			outgoing;	/* we connected */
	bool			closing;
	bool			pending;	/* counted in p->pending */
	bool			pipe_open;	/* pipe is initialized */
	bool			reading_tcp;
	bool			reading_pipe;
	bool			resolving;	/* gai is under way */
	bool			recycling;	/* tcp closing for the next try */
	enum relay_state	state;
	int			handles;	/* still to close, and gai */
	int			status;		/* for req, once closed */
	uv_tcp_t		tcp;
	uv_timer_t		timer;		/* handshake and header */
	uv_pipe_t		pipe;		/* our end */
	uv_pipe_t		*rpipe;		/* raft's end, until handed over */
	uv_connect_t		creq;
	uv_getaddrinfo_t	gai;		/* outgoing to a name */
	struct addrinfo		*ai, *ai_next;	/* its answer, the next to try */
	SSL			*ssl;
	BIO			*rbio, *wbio;	/* network bytes in, out */
	struct raft_uv_connect	*req;		/* outgoing: raft's, until answered */
	raft_uv_connect_cb	cb;
	size_t			hlen;
	uint8_t			hdr[HDR_LEN];
	char			host[PEER_HOST_MAX]; /* outgoing: what to verify */
	char			who[HDR_ADDR + 48]; /* the peer, for the log */
};

/* The transport (t->impl). */
struct ptls {
	struct raft_uv_transport *t;
	uv_loop_t		*loop;
	SSL_CTX			*cctx;		/* client side */
	struct tls_server	*srv;		/* server side */
	raft_id			id;
	char			address[HDR_ADDR];	/* ours, in raft */
	char			bind[HDR_ADDR];		/* "": address */
	uv_tcp_t		listener;
	bool			listening;	/* listener open or closing */
	bool			closing;
	raft_uv_accept_cb	accept_cb;
	raft_uv_transport_close_cb close_cb;
	struct relay		*relays;
	unsigned int		pending;
};

/* One write; the bytes follow. */
struct wreq {
	uv_write_t	w;
	struct relay	*r;
	char		data[];
};

/* The header's first 8 bytes: a name, then the format (1). */
static const uint8_t hdr_magic[8] = { 's', 'e', 'm', 'd', 'p', 't', 0, 1 };

static void relay_pump(struct relay *r);

/* --- addresses ------------------------------------------------------------------ */

/* "IP:PORT" of an accepted connection's peer, into r->who. */
static void relay_name_peer(struct relay *r)
{
	struct sockaddr_storage sa;
	int len = (int)sizeof sa;
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (uv_tcp_getpeername(&r->tcp, (struct sockaddr *)&sa, &len) == 0) {
		if (sa.ss_family == AF_INET) {
			uv_ip4_name((struct sockaddr_in *)&sa, ip, sizeof ip);
			port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
		} else if (sa.ss_family == AF_INET6) {
			uv_ip6_name((struct sockaddr_in6 *)&sa, ip, sizeof ip);
			port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
		}
	}
	snprintf(r->who, sizeof r->who, "connection from %s:%d", ip, port);
}

/* --- a relay's life --------------------------------------------------------------- */

/* Close the transport when it is closing and nothing is left. */
static void ptls_maybe_closed(struct ptls *p)
{
	raft_uv_transport_close_cb cb = p->close_cb;

	if (!p->closing || p->relays != NULL || p->listening || cb == NULL)
		return;
	p->close_cb = NULL;
	cb(p->t);
}

/* No longer a handshake under way. */
static void relay_unpend(struct relay *r)
{
	if (r->pending) {
		r->pending = false;
		r->p->pending--;
	}
}

/* Every handle closed: unlink, answer raft's connect if still ours, free. */
static void relay_free(struct relay *r)
{
	struct raft_uv_connect *req = r->req;
	raft_uv_connect_cb cb = r->cb;
	struct ptls *p = r->p;
	int status = r->status;

	if (r->prev != NULL)
		r->prev->next = r->next;
	else
		p->relays = r->next;
	if (r->next != NULL)
		r->next->prev = r->prev;
	SSL_free(r->ssl);	/* and its BIOs */
	uv_freeaddrinfo(r->ai);
	free(r);
	if (req != NULL)
		cb(req, NULL, status);
	ptls_maybe_closed(p);
}

/* A handle closed or the resolve ended: free r once closed and none is left. */
static void relay_unref(struct relay *r)
{
	if (--r->handles == 0 && r->closing)
		relay_free(r);
}

/* One of a relay's handles closed: the relay goes with the last. */
static void relay_handle_closed(uv_handle_t *h)
{
	struct relay *r = h->data;

	if (h == (uv_handle_t *)r->rpipe) {
		raft_free(r->rpipe);
		r->rpipe = NULL;
	}
	relay_unref(r);
}

/* Close one of a relay's handles, once. */
static void relay_close_handle(struct relay *r, uv_handle_t *h)
{
	r->handles++;
	uv_close(h, relay_handle_closed);
}

/* End the relay: both sides; raft's connect (if still ours) gets status. */
static void relay_close(struct relay *r, int status)
{
	if (r->closing)
		return;
	r->closing = true;
	r->status = status;
	relay_unpend(r);
	if (!r->recycling)
		relay_close_handle(r, (uv_handle_t *)&r->tcp);
	/* Cancelled or not, its callback comes and lets go of r. */
	if (r->resolving)
		(void)uv_cancel((uv_req_t *)&r->gai);
	relay_close_handle(r, (uv_handle_t *)&r->timer);
	if (r->pipe_open)
		relay_close_handle(r, (uv_handle_t *)&r->pipe);
	if (r->rpipe != NULL)
		relay_close_handle(r, (uv_handle_t *)r->rpipe);
}

/* Handshake and header took too long: the relay ends. */
static void relay_timeout(uv_timer_t *t)
{
	struct relay *r = t->data;

	log_warn("peer TLS: %s: no handshake within %d ms", r->who, HS_TIMEOUT_MS);
	relay_close(r, RAFT_NOCONNECTION);
}

/* A relay with its TCP handle and timer (started), linked in. */
static struct relay *relay_new(struct ptls *p, bool outgoing)
{
	struct relay *r = calloc(1, sizeof *r);

	if (r == NULL)
		return NULL;
	r->p = p;
	r->outgoing = outgoing;
	/* Neither fails for these arguments (no socket is made yet). */
	(void)uv_tcp_init(p->loop, &r->tcp);
	(void)uv_timer_init(p->loop, &r->timer);
	r->tcp.data = r;
	r->timer.data = r;
	r->next = p->relays;
	if (p->relays != NULL)
		p->relays->prev = r;
	p->relays = r;
	(void)uv_timer_start(&r->timer, relay_timeout, HS_TIMEOUT_MS, 0);
	return r;
}

/* The SSL of the relay, on memory BIOs, TLS 1.3 only. Frees ssl on error. */
static int relay_tls(struct relay *r, SSL *ssl)
{
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());

	if (rb == NULL || wb == NULL ||
	    SSL_set_min_proto_version(ssl, TLS1_3_VERSION) != 1) {
		BIO_free(rb);
		BIO_free(wb);
		SSL_free(ssl);
		return -1;
	}
	BIO_set_mem_eof_return(rb, -1);	/* empty is "more to come" */
	SSL_set_bio(ssl, rb, wb);
	r->ssl = ssl;
	r->rbio = rb;
	r->wbio = wb;
	return 0;
}

/* --- bytes both ways --------------------------------------------------------------- */

/* A buffer for libuv to read into. */
static void relay_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
	(void)h;
	buf->base = malloc(size);
	buf->len = buf->base != NULL ? size : 0;
}

/* Start or stop reading s as want says. */
static int relay_reading(uv_stream_t *s, bool *on, bool want, uv_read_cb cb)
{
	if (want == *on)
		return 0;
	*on = want;
	return want ? uv_read_start(s, relay_alloc, cb) : uv_read_stop(s);
}

/* Bytes from the peer: into TLS, out to raft once open. */
/* Bytes from the peer: into TLS, out to raft once open. */
static void tcp_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void pipe_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

/* Read each side only while the other keeps up. */
static void relay_flow(struct relay *r)
{
	if (r->closing || r->state != R_OPEN)
		return;
	if (relay_reading((uv_stream_t *)&r->pipe, &r->reading_pipe,
	    r->tcp.write_queue_size <= QUEUE_HIGH, pipe_read) != 0 ||
	    relay_reading((uv_stream_t *)&r->tcp, &r->reading_tcp,
	    r->pipe.write_queue_size <= QUEUE_HIGH, tcp_read) != 0)
		relay_close(r, RAFT_NOCONNECTION);
}

/* A write of the relay went: its buffer goes, reading may resume. */
static void relay_written(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	struct relay *r = w->r;

	free(w);
	if (r->closing)
		return;
	if (status != 0)
		relay_close(r, RAFT_NOCONNECTION);
	else
		relay_flow(r);
}

/* Write len bytes of w (freed when written) to s. */
static int relay_send(struct relay *r, uv_stream_t *s, struct wreq *w, size_t len)
{
	uv_buf_t b = uv_buf_init(w->data, (unsigned int)len);

	w->r = r;
	if (uv_write(&w->w, s, &b, 1, relay_written) != 0) {
		free(w);
		return -1;
	}
	return 0;
}

/* Send what TLS has for the network. */
static int relay_flush(struct relay *r)
{
	struct wreq *w;
	size_t n;

	while ((n = BIO_ctrl_pending(r->wbio)) > 0) {
		if ((w = malloc(sizeof *w + n)) == NULL)
			return -1;
		if (BIO_read(r->wbio, w->data, (int)n) != (int)n) {
			free(w);
			return -1;
		}
		if (relay_send(r, (uv_stream_t *)&r->tcp, w, n) != 0)
			return -1;
	}
	return 0;
}

/* Why SSL_read gave n <= 0: 0 for "wait for more", else -1 (logged). */
static int relay_read_why(struct relay *r, int n)
{
	char err[512] = "";
	int e = SSL_get_error(r->ssl, n);

	if (e == SSL_ERROR_WANT_READ)
		return 0;
	if (e == SSL_ERROR_ZERO_RETURN) {
		if (r->state != R_OPEN)
			log_warn("peer TLS: %s: closed before the header", r->who);
		return -1;
	}
	tls_errors(err, sizeof err);
	log_warn("peer TLS: %s: %s", r->who, err[0] != '\0' ? err :
	    "TLS error");
	return -1;
}

/* Plaintext from the peer to raft. */
static int relay_to_raft(struct relay *r)
{
	struct wreq *w;
	int n;

	for (;;) {
		if ((w = malloc(sizeof *w + READ_CHUNK)) == NULL)
			return -1;
		n = SSL_read(r->ssl, w->data, READ_CHUNK);
		if (n <= 0) {
			free(w);
			return relay_read_why(r, n);
		}
		if (relay_send(r, (uv_stream_t *)&r->pipe, w, (size_t)n) != 0)
			return -1;
	}
}

static void tcp_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct relay *r = s->data;

	if (n < 0) {
		if (r->state != R_OPEN)
			log_warn("peer TLS: %s: closed during the handshake (%s)",
			    r->who, uv_strerror((int)n));
		relay_close(r, RAFT_NOCONNECTION);
	} else if (n > 0 && BIO_write(r->rbio, buf->base, (int)n) != (int)n) {
		relay_close(r, RAFT_NOCONNECTION);
	} else if (n > 0) {
		relay_pump(r);
		relay_flow(r);
	}
	free(buf->base);
}

/* Plaintext from raft to the peer; its EOF ends the relay. */
static void pipe_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct relay *r = s->data;

	if (n < 0)
		relay_close(r, 0);
	else if (n > 0 && (SSL_write(r->ssl, buf->base, (int)n) != (int)n ||
	    relay_flush(r) != 0))
		relay_close(r, RAFT_NOCONNECTION);
	else
		relay_flow(r);
	free(buf->base);
}

/* --- handshake and header ---------------------------------------------------------- */

/* Raft's end and ours of a socketpair; the relay is then open. */
static int relay_open(struct relay *r)
{
	uv_loop_t *loop = r->p->loop;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	if ((r->rpipe = raft_malloc(sizeof *r->rpipe)) == NULL) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	(void)uv_pipe_init(loop, &r->pipe, 0);
	(void)uv_pipe_init(loop, r->rpipe, 0);
	r->pipe_open = true;
	r->pipe.data = r;
	r->rpipe->data = r;
	if (uv_pipe_open(&r->pipe, sv[0]) != 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (uv_pipe_open(r->rpipe, sv[1]) != 0) {
		close(sv[1]);
		return -1;
	}
	r->state = R_OPEN;
	relay_unpend(r);
	(void)uv_timer_stop(&r->timer);
	return relay_reading((uv_stream_t *)&r->pipe, &r->reading_pipe, true,
	    pipe_read);
}

/* Give raft its end (it closes and raft_free()s it from now on). */
static uv_stream_t *relay_hand_over(struct relay *r)
{
	uv_stream_t *s = (uv_stream_t *)r->rpipe;

	r->rpipe = NULL;
	s->data = NULL;
	return s;
}

/* v big-endian at p. */
static void put64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* The big-endian 64 bits at p. */
static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* The connecting side: who we are, inside TLS. */
static int relay_send_header(struct relay *r)
{
	uint8_t hdr[HDR_LEN] = { 0 };

	memcpy(hdr, hdr_magic, sizeof hdr_magic);
	put64(hdr + 8, r->p->id);
	memcpy(hdr + 16, r->p->address, strlen(r->p->address));
	return SSL_write(r->ssl, hdr, HDR_LEN) == HDR_LEN ? 0 : -1;
}

/* Drive the TLS handshake; on its end, the header. */
static int relay_handshake(struct relay *r)
{
	char err[512] = "";
	int rc = SSL_do_handshake(r->ssl), e;

	if (rc == 1) {
		r->state = R_HEADER;
		return r->outgoing ? relay_send_header(r) : 0;
	}
	e = SSL_get_error(r->ssl, rc);
	if (e == SSL_ERROR_WANT_READ)
		return 0;
	(void)tls_handshake_why(r->ssl, rc, e, 0, err, sizeof err);
	log_warn("peer TLS: %s: refused: %s", r->who, err);
	return -1;
}

/* Read until r->hdr has want bytes: 1 when it has, 0 for more, -1 on error. */
static int relay_read_exact(struct relay *r, size_t want)
{
	int n;

	while (r->hlen < want) {
		n = SSL_read(r->ssl, r->hdr + r->hlen, (int)(want - r->hlen));
		if (n <= 0)
			return relay_read_why(r, n);
		r->hlen += (size_t)n;
	}
	return 1;
}

/* The connecting side: the answer came; raft gets its stream. */
static int relay_read_ok(struct relay *r)
{
	struct raft_uv_connect *req = r->req;
	int rc = relay_read_exact(r, 1);

	if (rc <= 0)
		return rc;
	if (r->hdr[0] != HDR_OK || relay_open(r) != 0) {
		log_warn("peer TLS: %s: no usable answer to our header", r->who);
		return -1;
	}
	log_info("peer TLS: connected to %s", r->who);
	r->req = NULL;
	r->cb(req, relay_hand_over(r), 0);
	return 0;
}

/* The accepting side: is the header whole and does the certificate match? */
static int relay_check_header(struct relay *r, raft_id *id, char *address)
{
	struct peer_addr a;

	*id = get64(r->hdr + 8);
	memcpy(address, r->hdr + 16, HDR_ADDR);
	if (memcmp(r->hdr, hdr_magic, sizeof hdr_magic) != 0 || *id == 0 ||
	    address[HDR_ADDR - 1] != '\0' || peer_addr_parse(address, &a) != 0) {
		log_warn("peer TLS: %s: refused: not a semd peer header of "
		    "this version", r->who);
		return -1;
	}
	if (!peer_addr_named(SSL_get0_peer_certificate(r->ssl), &a)) {
		log_warn("peer TLS: %s: refused: node %llu says it is at %s, "
		    "which its certificate does not name (%s subjectAltName)",
		    r->who, (unsigned long long)*id, address,
		    a.kind == PEER_NAME ? "DNS" : "IP");
		return -1;
	}
	return 0;
}

/* The accepting side: read and check the header, answer, give raft its stream. */
static int relay_read_header(struct relay *r)
{
	static const uint8_t ok = HDR_OK;
	char address[HDR_ADDR];
	struct ptls *p = r->p;
	raft_id id;
	int rc = relay_read_exact(r, HDR_LEN);

	if (rc <= 0)
		return rc;
	if (relay_check_header(r, &id, address) != 0)
		return -1;
	if (SSL_write(r->ssl, &ok, 1) != 1 || relay_open(r) != 0)
		return -1;
	log_info("peer TLS: node %llu (%s): %s", (unsigned long long)id,
	    address, r->who);
	p->accept_cb(p->t, id, address, relay_hand_over(r));
	return 0;
}

/* Network bytes came in: move the connection on as far as they allow. */
static void relay_pump(struct relay *r)
{
	int rc = 0;

	if (r->state == R_HANDSHAKE)
		rc = relay_handshake(r);
	if (rc == 0 && r->state == R_HEADER)
		rc = r->outgoing ? relay_read_ok(r) : relay_read_header(r);
	if (rc == 0 && r->state == R_OPEN)
		rc = relay_to_raft(r);
	/* An alert on the way out goes too, as far as the socket takes it. */
	if (!r->closing && relay_flush(r) != 0)
		rc = -1;
	if (rc != 0)
		relay_close(r, RAFT_NOCONNECTION);
}

/* --- the transport ----------------------------------------------------------------- */

/* This node's raft id and address (sent in the header). */
static int pt_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
	struct ptls *p = t->impl;

	if (strlen(address) >= sizeof p->address) {
		snprintf(t->errmsg, sizeof t->errmsg, "address too long");
		return RAFT_INVALID;
	}
	p->id = id;
	snprintf(p->address, sizeof p->address, "%s", address);
	return 0;
}

/* A peer connected: a relay starts its handshake. */
static void pt_accepted(uv_stream_t *s, int status)
{
	struct ptls *p = s->data;
	struct relay *r;
	SSL *ssl;

	if (status != 0 || p->closing || (r = relay_new(p, false)) == NULL)
		return;
	if (uv_accept(s, (uv_stream_t *)&r->tcp) != 0) {
		relay_close(r, 0);
		return;
	}
	relay_name_peer(r);
	if (p->pending >= MAX_PENDING) {
		log_warn("peer TLS: %s: refused: %d handshakes under way",
		    r->who, MAX_PENDING);
		relay_close(r, 0);
		return;
	}
	r->pending = true;
	p->pending++;
	(void)uv_tcp_nodelay(&r->tcp, 1);
	if ((ssl = tls_server_ssl_new(p->srv)) == NULL || relay_tls(r, ssl) != 0 ||
	    relay_reading((uv_stream_t *)&r->tcp, &r->reading_tcp, true,
	    tcp_read) != 0)
		relay_close(r, 0);
}

/* The listener closed: maybe the transport too. */
static void pt_listener_closed(uv_handle_t *h)
{
	struct ptls *p = h->data;

	p->listening = false;
	ptls_maybe_closed(p);
}

/* Listen for peers on the bind address or this node's. */
static int pt_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	struct ptls *p = t->impl;
	const char *where = p->bind[0] != '\0' ? p->bind : p->address;
	struct sockaddr_storage sa;
	struct peer_addr a;
	int rv;

	p->accept_cb = cb;
	if (peer_addr_parse(where, &a) != 0) {
		snprintf(t->errmsg, sizeof t->errmsg, "peer TLS: %.200s is not "
		    "HOST:PORT", where);
		return RAFT_INVALID;
	}
	/* Once, before the loop serves anything: a name resolved in place. */
	if ((rv = peer_addr_resolve(&a, &sa)) != 0) {
		snprintf(t->errmsg, sizeof t->errmsg, "peer TLS: listen on %.200s: "
		    "%s", where, gai_strerror(rv));
		return RAFT_IOERR;
	}
	(void)uv_tcp_init(p->loop, &p->listener);
	p->listener.data = p;
	p->listening = true;
	rv = uv_tcp_bind(&p->listener, (struct sockaddr *)&sa, 0);
	if (rv == 0)
		rv = uv_listen((uv_stream_t *)&p->listener, MAX_PENDING,
		    pt_accepted);
	if (rv != 0) {
		snprintf(t->errmsg, sizeof t->errmsg, "peer TLS: listen on %.200s: "
		    "%s", where, uv_strerror(rv));
		uv_close((uv_handle_t *)&p->listener, pt_listener_closed);
		return RAFT_IOERR;
	}
	return 0;
}

static void relay_try(struct relay *r);

/* The last try's handle is closed: a new one for the next address. */
static void relay_recycled(uv_handle_t *h)
{
	struct relay *r = h->data;
	bool closing = r->closing;

	r->recycling = false;
	relay_unref(r);
	if (closing)
		return;
	(void)uv_tcp_init(r->p->loop, &r->tcp);
	r->tcp.data = r;
	relay_try(r);
}

/* Connected to a peer (or not: the next address, or fail). */
static void relay_connected(uv_connect_t *c, int status)
{
	struct relay *r = c->data;
	char err[512] = "";
	SSL *ssl;

	if (r->closing)
		return;
	if (status != 0) {
		log_debug("peer TLS: %s: %s", r->who, uv_strerror(status));
		if (r->ai_next != NULL) {	/* another address of the name */
			r->recycling = true;
			r->handles++;
			uv_close((uv_handle_t *)&r->tcp, relay_recycled);
		} else {
			relay_close(r, RAFT_NOCONNECTION);
		}
		return;
	}
	(void)uv_tcp_nodelay(&r->tcp, 1);
	if (tls_client_ssl_new(r->p->cctx, r->host, &ssl, err, sizeof err) != 0 ||
	    relay_tls(r, ssl) != 0 ||
	    relay_reading((uv_stream_t *)&r->tcp, &r->reading_tcp, true,
	    tcp_read) != 0) {
		log_warn("peer TLS: %s: %s", r->who, err[0] != '\0' ? err :
		    "cannot start TLS");
		relay_close(r, RAFT_NOCONNECTION);
		return;
	}
	SSL_set_hostflags(r->ssl, PEER_SAN_FLAGS);	/* used by a name only */
	relay_pump(r);	/* the ClientHello */
}

/* Connect to the next address of the name. */
static void relay_try(struct relay *r)
{
	const struct addrinfo *ai = r->ai_next;
	int rv;

	r->ai_next = ai->ai_next;
	rv = uv_tcp_connect(&r->creq, &r->tcp, ai->ai_addr, relay_connected);
	if (rv != 0)
		relay_connected(&r->creq, rv);
}

/* The name is resolved (or not, or the relay closed meanwhile). */
static void relay_resolved(uv_getaddrinfo_t *req, int status,
    struct addrinfo *res)
{
	struct relay *r = req->data;

	r->resolving = false;
	r->ai = res;
	r->ai_next = res;
	if (!r->closing && (status != 0 || res == NULL)) {
		log_warn("peer TLS: %s: cannot resolve %s: %s", r->who, r->host,
		    uv_strerror(status != 0 ? status : UV_EAI_NONAME));
		relay_close(r, RAFT_NOCONNECTION);
	} else if (!r->closing) {
		relay_try(r);
	}
	relay_unref(r);
}

/* Connect to peer id at address: resolve, connect, handshake. */
static int pt_connect(struct raft_uv_transport *t, struct raft_uv_connect *req,
    raft_id id, const char *address, raft_uv_connect_cb cb)
{
	struct ptls *p = t->impl;
	struct sockaddr_storage sa;
	struct addrinfo hints;
	struct peer_addr a;
	struct relay *r;
	char port[8];

	if (peer_addr_parse(address, &a) != 0) {
		snprintf(t->errmsg, sizeof t->errmsg, "peer TLS: node %llu: %.200s "
		    "is not HOST:PORT", (unsigned long long)id, address);
		return RAFT_NOCONNECTION;
	}
	if ((r = relay_new(p, true)) == NULL)
		return RAFT_NOMEM;
	req->cb = cb;
	r->req = req;
	r->cb = cb;
	snprintf(r->host, sizeof r->host, "%s", a.host);
	snprintf(r->who, sizeof r->who, "node %llu at %s",
	    (unsigned long long)id, address);
	r->creq.data = r;
	r->gai.data = r;
	if (a.kind == PEER_NAME) {
		peer_addr_hints(&hints);
		snprintf(port, sizeof port, "%u", (unsigned)a.port);
		r->resolving = true;
		r->handles++;	/* until relay_resolved */
		if (uv_getaddrinfo(p->loop, &r->gai, relay_resolved, a.host,
		    port, &hints) != 0) {
			r->resolving = false;
			r->handles--;
			relay_close(r, RAFT_NOCONNECTION);
		}
		return 0;
	}
	(void)peer_addr_resolve(&a, &sa);	/* a literal: no resolve */
	if (uv_tcp_connect(&r->creq, &r->tcp, (struct sockaddr *)&sa,
	    relay_connected) != 0)
		relay_close(r, RAFT_NOCONNECTION);
	return 0;
}

/* Close the listener and every relay; cb once all are closed. */
static void pt_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
	struct ptls *p = t->impl;
	struct relay *r;

	p->closing = true;
	p->close_cb = cb;
	if (p->listening && !uv_is_closing((uv_handle_t *)&p->listener))
		uv_close((uv_handle_t *)&p->listener, pt_listener_closed);
	for (r = p->relays; r != NULL; r = r->next)
		relay_close(r, RAFT_CANCELED);
	ptls_maybe_closed(p);
}

/* Make t a TLS transport on loop. */
int peer_tls_init(struct raft_uv_transport *t, uv_loop_t *loop,
    const struct peer_tls_config *cfg, char *err, size_t errlen)
{
	const struct tls_server_config sc = {
		.cert_file = cfg->cert_file, .key_file = cfg->key_file,
		.ca_file = cfg->ca_file, .client_auth = TLS_CLIENT_AUTH_REQUIRED,
	};
	const struct tls_client_config cc = {
		.ca_file = cfg->ca_file, .cert_file = cfg->cert_file,
		.key_file = cfg->key_file,
	};
	struct ptls *p = calloc(1, sizeof *p);
	char why[512] = "";

	if (p == NULL)
		return tls_errf(-1, err, errlen, "out of memory");
	if ((cfg->bind != NULL && strlen(cfg->bind) >= sizeof p->bind) ||
	    tls_server_new(&p->srv, &sc, why, sizeof why) != 0 ||
	    tls_client_ctx_new(&p->cctx, &cc, why, sizeof why) != 0) {
		tls_server_free(p->srv);
		free(p);
		return tls_errf(-1, err, errlen, "peer TLS: %s", why[0] != '\0' ?
		    why : "peer-bind too long");
	}
	if (cfg->bind != NULL)
		snprintf(p->bind, sizeof p->bind, "%s", cfg->bind);
	p->t = t;
	p->loop = loop;
	t->version = 1;		/* the interface it implements */
	t->impl = p;
	t->init = pt_init;
	t->listen = pt_listen;
	t->connect = pt_connect;
	t->close = pt_close;
	return 0;
}

/* Free t's state once raft closed it. */
void peer_tls_free(struct raft_uv_transport *t)
{
	struct ptls *p = t->impl;

	if (p == NULL)
		return;
	SSL_CTX_free(p->cctx);
	tls_server_free(p->srv);
	free(p);
	t->impl = NULL;
}
