/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/peer_net.c - raft's peer transport (peer_net.h).
 *
 * One relay a peer connection:
 *
 *   raft - uv_pipe_t =socketpair= uv_pipe_t - relay - uv_tcp_t - peer
 *
 * The relay holds the connection's bytes in memory BIOs both ways: in TLS
 * an SSL works on them, plain they are the bytes themselves. A peer's
 * address is HOST:PORT (peer_addr.h), HOST an IP literal or (in TLS) a DNS
 * name, resolved on the loop (uv_getaddrinfo, in libuv's threads) at every
 * connection attempt, its addresses tried in order.
 *
 * A connection, by the node's auth (peer_net.h):
 *   TLS   the TLS 1.3 handshake, a certificate of the peer CA both ways;
 *         the connecting side checks that the server's names HOST;
 *   KEY   connecting side: KEY_MAGIC, its nonce (32 bytes); accepting side:
 *         its nonce and HMAC(key, "semd peer key 1 server" | both nonces);
 *         the connecting side checks it, then sends its header and
 *         HMAC(key, "semd peer key 1 client" | both nonces | header);
 *   NONE  nothing;
 * then the header (inside TLS): HDR_MAGIC, the raft id and raft address of
 * the connecting side (with its HMAC for KEY); the accepting side checks it
 * (in TLS: that the client's certificate names that HOST) and answers one
 * byte. Only then is raft given its end of a socketpair, on either side (so
 * a refused client fails its connect, and raft retries). Everything before
 * must be done within PEER_NET_HS_MS.
 *
 * What an accepted peer sends raft passes peer_wire first; a stream it
 * refuses ends the relay, and nothing of the refused message reaches raft.
 * Raft only writes on the connections it makes: bytes that come back on
 * one end it.
 *
 * Everything runs on the raft thread's loop. A relay ends when either side
 * does (EOF or an error from raft's end or from the network): both are
 * closed. Each direction stops reading while the other side has more than
 * QUEUE_HIGH bytes queued. Closing the transport closes the listener and
 * every relay; its callback runs once the last handle is closed.
 */
#include <config.h>	/* autoconf's */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "daemon/logging.h"
#include "daemon/log/peer_addr.h"
#include "daemon/log/peer_net.h"
#include "daemon/log/peer_wire.h"
#include "security/tls.h"

#define HDR_ADDR	PEER_ADDR_MAX	/* the address field, NUL-padded */
#define HDR_LEN		(8 + 8 + HDR_ADDR)
#define HDR_OK		0x01		/* the accepting side's answer */
#define NONCE		32
#define MAC		32		/* HMAC-SHA256 */
#define CHAL_LEN	(8 + NONCE)	/* KEY: the connecting side's first */
#define PROOF_LEN	(NONCE + MAC)	/* KEY: the accepting side's answer */
#define KEY_MIN		16
#define KEY_MAX		1024
#define QUEUE_HIGH	(1u << 20)	/* bytes queued one way: stop reading */
#define READ_CHUNK	16384
#define BACKLOG		64

enum relay_state { R_TLS, R_KEY, R_HEADER, R_OPEN };

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
	uint64_t		seq;		/* accepted: the how-manieth */
	struct sockaddr_storage	src;		/* accepted: the peer's address */
	uv_tcp_t		tcp;
	uv_timer_t		timer;		/* handshake and header */
	uv_pipe_t		pipe;		/* our end */
	uv_pipe_t		*rpipe;		/* raft's end, until handed over */
	uv_connect_t		creq;
	uv_getaddrinfo_t	gai;		/* outgoing to a name */
	struct addrinfo		*ai, *ai_next;	/* its answer, the next to try */
	SSL			*ssl;		/* TLS only */
	BIO			*rbio, *wbio;	/* network bytes in, out */
	struct peer_wire	wire;		/* accepted: what raft may read */
	struct raft_uv_connect	*req;		/* outgoing: raft's, until answered */
	raft_uv_connect_cb	cb;
	size_t			hlen;
	uint8_t			hdr[HDR_LEN + MAC];
	uint8_t			nonce_c[NONCE], nonce_s[NONCE];
	char			host[PEER_HOST_MAX]; /* outgoing: what to verify */
	char			who[HDR_ADDR + 48]; /* the peer, for the log */
};

/* The transport (t->impl). */
struct ptls {
	struct raft_uv_transport *t;
	uv_loop_t		*loop;
	enum peer_auth		auth;
	SSL_CTX			*cctx;		/* TLS: client side */
	struct tls_server	*srv;		/* TLS: server side */
	unsigned char		key[KEY_MAX];	/* KEY: the peer key */
	size_t			keylen;
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
	uint64_t		accepted;	/* connections accepted so far */
	unsigned long		evicted;	/* handshakes ended for a newer one */
};

/* One write; the bytes follow. */
struct wreq {
	uv_write_t	w;
	struct relay	*r;
	char		data[];
};

/* The header's first 8 bytes: a name, then the format (1). */
static const uint8_t hdr_magic[8] = { 's', 'e', 'm', 'd', 'p', 't', 0, 1 };
/* KEY: the connecting side's first 8 bytes. */
static const uint8_t key_magic[8] = { 's', 'e', 'm', 'd', 'p', 'k', 0, 1 };

static void relay_pump(struct relay *r);

/* --- the peer key --------------------------------------------------------------- */

/* Read the peer key, refusing one others may read. */
int peer_net_key_load(const char *path, unsigned char *key, size_t cap,
    size_t *len, char *err, size_t errlen)
{
	struct stat st;
	ssize_t n;
	int fd;

	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		snprintf(err, errlen, "peer-key %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "peer-key %s: not a regular file", path);
		close(fd);
		return -1;
	}
	if ((st.st_uid != geteuid() && st.st_uid != 0) ||
	    (st.st_mode & 077) != 0) {
		snprintf(err, errlen, "peer-key %s: others may read it (owner uid "
		    "%u, mode %03o): it must belong to semd's user (or root) "
		    "with mode 600 or 400", path, (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 0777));
		close(fd);
		return -1;
	}
	n = read(fd, key, cap);
	if (n > 0 && (size_t)n == cap) {
		char extra;

		if (read(fd, &extra, 1) > 0)
			n = -2;
	}
	close(fd);
	if (n < KEY_MIN) {
		snprintf(err, errlen, "peer-key %s: %s", path, n == -2 ?
		    "longer than 1024 bytes" : n < 0 ? "cannot be read" :
		    "shorter than 16 bytes (make one: head -c 32 /dev/urandom)");
		OPENSSL_cleanse(key, cap);
		return -1;
	}
	*len = (size_t)n;
	return 0;
}

/* What each side's HMAC starts with (both of LABEL_LEN bytes). */
static const char MAC_CLIENT[] = "semd peer key 1 client";
static const char MAC_SERVER[] = "semd peer key 1 server";
#define LABEL_LEN	(sizeof MAC_CLIENT - 1)
_Static_assert(sizeof MAC_CLIENT == sizeof MAC_SERVER, "labels alike");

/*
 * HMAC-SHA256 with the peer key of the accepting (server) or connecting
 * side's label, both nonces, and more (or none).
 */
static void relay_mac(const struct relay *r, bool server,
    const uint8_t *more, size_t morelen, uint8_t out[MAC])
{
	uint8_t msg[LABEL_LEN + 2 * NONCE + HDR_LEN];
	unsigned int outlen = MAC;
	size_t n;

	memcpy(msg, server ? MAC_SERVER : MAC_CLIENT, LABEL_LEN);
	memcpy(msg + LABEL_LEN, r->nonce_c, NONCE);
	memcpy(msg + LABEL_LEN + NONCE, r->nonce_s, NONCE);
	n = LABEL_LEN + 2 * NONCE;
	if (more != NULL) {
		memcpy(msg + n, more, morelen);
		n += morelen;
	}
	if (HMAC(EVP_sha256(), r->p->key, (int)r->p->keylen, msg, n, out,
	    &outlen) == NULL || outlen != MAC)
		memset(out, 0, MAC);	/* no MAC matches all zeros */
}

/* --- addresses ------------------------------------------------------------------ */

/* "IP:PORT" of an accepted connection's peer, into r->who; r->src too. */
static void relay_name_peer(struct relay *r)
{
	struct sockaddr_storage sa;
	int len = (int)sizeof sa;
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	memset(&sa, 0, sizeof sa);
	if (uv_tcp_getpeername(&r->tcp, (struct sockaddr *)&sa, &len) == 0) {
		if (sa.ss_family == AF_INET) {
			uv_ip4_name((struct sockaddr_in *)&sa, ip, sizeof ip);
			port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
		} else if (sa.ss_family == AF_INET6) {
			uv_ip6_name((struct sockaddr_in6 *)&sa, ip, sizeof ip);
			port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
		}
	}
	r->src = sa;
	snprintf(r->who, sizeof r->who, "connection from %s:%d", ip, port);
}

/* Do a and b come from the same IP address (ports aside)? */
static bool same_source(const struct sockaddr_storage *a,
    const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		    &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
	return false;
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
	if (r->ssl != NULL) {
		SSL_free(r->ssl);	/* and its BIOs */
	} else {
		BIO_free(r->rbio);
		BIO_free(r->wbio);
	}
	uv_freeaddrinfo(r->ai);
	peer_wire_free(&r->wire);
	OPENSSL_cleanse(r->hdr, sizeof r->hdr);
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

/* The handshake took too long: the relay ends. */
static void relay_timeout(uv_timer_t *t)
{
	struct relay *r = t->data;

	log_warn("peer: %s: no handshake within %d ms", r->who, PEER_NET_HS_MS);
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
	peer_wire_init(&r->wire);
	/* Neither fails for these arguments (no socket is made yet). */
	(void)uv_tcp_init(p->loop, &r->tcp);
	(void)uv_timer_init(p->loop, &r->timer);
	r->tcp.data = r;
	r->timer.data = r;
	r->next = p->relays;
	if (p->relays != NULL)
		p->relays->prev = r;
	p->relays = r;
	(void)uv_timer_start(&r->timer, relay_timeout, PEER_NET_HS_MS, 0);
	return r;
}

/* The relay's memory BIOs, and ssl on them (TLS 1.3 only) unless NULL. */
static int relay_bios(struct relay *r, SSL *ssl)
{
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());

	if (rb == NULL || wb == NULL || (ssl != NULL &&
	    SSL_set_min_proto_version(ssl, TLS1_3_VERSION) != 1)) {
		BIO_free(rb);
		BIO_free(wb);
		SSL_free(ssl);
		return -1;
	}
	BIO_set_mem_eof_return(rb, -1);	/* empty is "more to come" */
	if (ssl != NULL)
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

/* Send what the BIO has for the network. */
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

/* Bytes for the peer (inside TLS, or as they are): n, or <= 0. */
static int relay_out(struct relay *r, const void *buf, int n)
{
	return r->ssl != NULL ? SSL_write(r->ssl, buf, n) :
	    BIO_write(r->wbio, buf, n);
}

/* Bytes from the peer: n > 0, 0 for "wait for more", -1 (logged). */
static int relay_in(struct relay *r, void *buf, int n)
{
	char err[512] = "";
	int rc, e;

	if (r->ssl == NULL) {
		rc = BIO_read(r->rbio, buf, n);
		return rc > 0 ? rc : BIO_should_retry(r->rbio) ? 0 : -1;
	}
	if ((rc = SSL_read(r->ssl, buf, n)) > 0)
		return rc;
	e = SSL_get_error(r->ssl, rc);
	if (e == SSL_ERROR_WANT_READ)
		return 0;
	if (e == SSL_ERROR_ZERO_RETURN) {
		if (r->state != R_OPEN)
			log_warn("peer: %s: closed before the header", r->who);
		return -1;
	}
	tls_errors(err, sizeof err);
	log_warn("peer: %s: %s", r->who, err[0] != '\0' ? err : "TLS error");
	return -1;
}

/* Checked bytes for raft (peer_wire's emit). */
static int relay_emit(void *arg, const uint8_t *p, size_t n)
{
	struct relay *r = arg;
	struct wreq *w = malloc(sizeof *w + n);

	if (w == NULL)
		return -1;
	memcpy(w->data, p, n);
	return relay_send(r, (uv_stream_t *)&r->pipe, w, n);
}

/*
 * What the peer sent, to raft through the wire checker (an accepted
 * connection); on our own connections raft reads nothing: bytes end it.
 */
static int relay_to_raft(struct relay *r)
{
	uint8_t buf[READ_CHUNK];
	char why[300];
	int n;

	while ((n = relay_in(r, buf, (int)sizeof buf)) > 0) {
		if (r->outgoing) {
			log_warn("peer: %s: sent %d bytes on our connection, where "
			    "it has nothing to say: closed", r->who, n);
			return -1;
		}
		if (peer_wire_feed(&r->wire, buf, (size_t)n, relay_emit, r, why,
		    sizeof why) != 0) {
			log_warn("peer: %s: refused: %s", r->who, why);
			return -1;
		}
	}
	return n;
}

/* Bytes from the peer's connection (or its end). */
static void tcp_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct relay *r = s->data;

	if (n < 0) {
		if (r->state != R_OPEN)
			log_warn("peer: %s: closed during the handshake (%s)",
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

/* Bytes from raft to the peer; its EOF ends the relay. */
static void pipe_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct relay *r = s->data;

	if (n < 0)
		relay_close(r, 0);
	else if (n > 0 && (relay_out(r, buf->base, (int)n) != (int)n ||
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

/* Read until r->hdr has want bytes: 1 when it has, 0 for more, -1 on error. */
static int relay_read_exact(struct relay *r, size_t want)
{
	int n;

	while (r->hlen < want) {
		n = relay_in(r, r->hdr + r->hlen, (int)(want - r->hlen));
		if (n <= 0)
			return n;
		r->hlen += (size_t)n;
	}
	return 1;
}

/* The connecting side: who we are (for KEY with its proof), then R_HEADER. */
static int relay_send_header(struct relay *r)
{
	uint8_t hdr[HDR_LEN + MAC] = { 0 };
	size_t len = HDR_LEN;

	memcpy(hdr, hdr_magic, sizeof hdr_magic);
	put64(hdr + 8, r->p->id);
	memcpy(hdr + 16, r->p->address, strlen(r->p->address));
	if (r->p->auth == PEER_AUTH_KEY) {
		relay_mac(r, false, hdr, HDR_LEN, hdr + HDR_LEN);
		len += MAC;
	}
	r->state = R_HEADER;
	r->hlen = 0;
	return relay_out(r, hdr, (int)len) == (int)len ? 0 : -1;
}

/* The connection is secure (TLS) or needs none: what comes next. */
static int relay_secured(struct relay *r)
{
	uint8_t chal[CHAL_LEN];

	r->hlen = 0;
	if (r->p->auth != PEER_AUTH_KEY) {
		r->state = R_HEADER;
		return r->outgoing ? relay_send_header(r) : 0;
	}
	r->state = R_KEY;
	if (!r->outgoing)
		return 0;
	if (RAND_bytes(r->nonce_c, NONCE) != 1)
		return -1;
	memcpy(chal, key_magic, sizeof key_magic);
	memcpy(chal + 8, r->nonce_c, NONCE);
	return relay_out(r, chal, CHAL_LEN) == CHAL_LEN ? 0 : -1;
}

/* Drive the TLS handshake; on its end, what comes next. */
static int relay_handshake(struct relay *r)
{
	char err[512] = "";
	int rc = SSL_do_handshake(r->ssl), e;

	if (rc == 1)
		return relay_secured(r);
	e = SSL_get_error(r->ssl, rc);
	if (e == SSL_ERROR_WANT_READ)
		return 0;
	(void)tls_handshake_why(r->ssl, rc, e, 0, err, sizeof err);
	log_warn("peer TLS: %s: refused: %s", r->who, err);
	return -1;
}

/*
 * KEY: the accepting side reads the challenge and proves the key; the
 * connecting side checks that proof and sends its header with its own.
 */
static int relay_key(struct relay *r)
{
	uint8_t mac[MAC], proof[PROOF_LEN];
	int rc;

	if (!r->outgoing) {
		if ((rc = relay_read_exact(r, CHAL_LEN)) <= 0)
			return rc;
		if (memcmp(r->hdr, key_magic, sizeof key_magic) != 0) {
			log_warn("peer: %s: refused: it does not prove a peer key "
			    "(%s)", r->who, memcmp(r->hdr, hdr_magic,
			    sizeof hdr_magic) == 0 ? "a node without one" :
			    "no semd peer");
			return -1;
		}
		memcpy(r->nonce_c, r->hdr + 8, NONCE);
		if (RAND_bytes(r->nonce_s, NONCE) != 1)
			return -1;
		memcpy(proof, r->nonce_s, NONCE);
		relay_mac(r, true, NULL, 0, proof + NONCE);
		r->state = R_HEADER;
		r->hlen = 0;
		return relay_out(r, proof, PROOF_LEN) == PROOF_LEN ? 0 : -1;
	}
	if ((rc = relay_read_exact(r, PROOF_LEN)) <= 0)
		return rc;
	memcpy(r->nonce_s, r->hdr, NONCE);
	relay_mac(r, true, NULL, 0, mac);
	if (CRYPTO_memcmp(mac, r->hdr + NONCE, MAC) != 0) {
		log_warn("peer: %s: refused: it does not hold our peer key",
		    r->who);
		return -1;
	}
	return relay_send_header(r);
}

/* The connecting side: the answer came; raft gets its stream. */
static int relay_read_ok(struct relay *r)
{
	struct raft_uv_connect *req = r->req;
	int rc = relay_read_exact(r, 1);

	if (rc <= 0)
		return rc;
	if (r->hdr[0] != HDR_OK || relay_open(r) != 0) {
		log_warn("peer: %s: no usable answer to our header", r->who);
		return -1;
	}
	log_info("peer: connected to %s", r->who);
	r->req = NULL;
	r->cb(req, relay_hand_over(r), 0);
	return 0;
}

/* The accepting side: is the header whole and does the peer prove it? */
static int relay_check_header(struct relay *r, raft_id *id, char *address)
{
	struct peer_addr a;
	uint8_t mac[MAC];

	*id = get64(r->hdr + 8);
	memcpy(address, r->hdr + 16, HDR_ADDR);
	if (memcmp(r->hdr, hdr_magic, sizeof hdr_magic) != 0 || *id == 0 ||
	    address[HDR_ADDR - 1] != '\0' || peer_addr_parse(address, &a) != 0) {
		log_warn("peer: %s: refused: %s", r->who,
		    memcmp(r->hdr, key_magic, sizeof key_magic) == 0 ?
		    "it proves a peer key, and this node has none" :
		    "not a semd peer header of this version");
		return -1;
	}
	if (r->p->auth == PEER_AUTH_KEY) {
		relay_mac(r, false, r->hdr, HDR_LEN, mac);
		if (CRYPTO_memcmp(mac, r->hdr + HDR_LEN, MAC) != 0) {
			log_warn("peer: %s: refused: node %llu does not hold our "
			    "peer key", r->who, (unsigned long long)*id);
			return -1;
		}
	}
	if (r->p->auth == PEER_AUTH_TLS &&
	    !peer_addr_named(SSL_get0_peer_certificate(r->ssl), &a)) {
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
	int rc = relay_read_exact(r, HDR_LEN + (p->auth == PEER_AUTH_KEY ?
	    MAC : 0));

	if (rc <= 0)
		return rc;
	if (relay_check_header(r, &id, address) != 0)
		return -1;
	if (relay_out(r, &ok, 1) != 1 || relay_open(r) != 0)
		return -1;
	log_info("peer: node %llu (%s): %s", (unsigned long long)id, address,
	    r->who);
	p->accept_cb(p->t, id, address, relay_hand_over(r));
	return 0;
}

/* Network bytes came in: move the connection on as far as they allow. */
static void relay_pump(struct relay *r)
{
	int rc = 0;

	if (r->state == R_TLS)
		rc = relay_handshake(r);
	if (rc == 0 && r->state == R_KEY)
		rc = relay_key(r);
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

/*
 * Room for the handshake of r: past PEER_NET_PER_SOURCE from its address,
 * the oldest of those ends; past PEER_NET_MAX_PENDING, the oldest of all.
 * A connection that says nothing so holds a place for a short while only,
 * and one that does its handshake in time is not pushed out but by a
 * flood of newer ones.
 */
static void pt_make_room(struct ptls *p, struct relay *r)
{
	struct relay *x, *oldest_src = NULL, *oldest = NULL;
	unsigned int from_src = 0;

	for (x = p->relays; x != NULL; x = x->next) {
		if (!x->pending || x->closing)
			continue;
		if (oldest == NULL || x->seq < oldest->seq)
			oldest = x;
		if (same_source(&x->src, &r->src)) {
			from_src++;
			if (oldest_src == NULL || x->seq < oldest_src->seq)
				oldest_src = x;
		}
	}
	x = from_src >= PEER_NET_PER_SOURCE ? oldest_src :
	    p->pending >= PEER_NET_MAX_PENDING ? oldest : NULL;
	if (x == NULL)
		return;
	/* Said for the first and then every 2^k-th (a flood is one line). */
	p->evicted++;
	if ((p->evicted & (p->evicted - 1)) == 0)
		log_warn("peer: %s: ended for a newer connection (%u handshakes "
		    "under way, %u from its address; %lu so far)", x->who,
		    p->pending, from_src, p->evicted);
	relay_close(x, 0);
}

/* A peer connected: a relay starts its handshake. */
static void pt_accepted(uv_stream_t *s, int status)
{
	struct ptls *p = s->data;
	struct relay *r;
	SSL *ssl = NULL;

	if (status != 0 || p->closing || (r = relay_new(p, false)) == NULL)
		return;
	if (uv_accept(s, (uv_stream_t *)&r->tcp) != 0) {
		relay_close(r, 0);
		return;
	}
	relay_name_peer(r);
	pt_make_room(p, r);
	r->seq = ++p->accepted;
	r->pending = true;
	p->pending++;
	(void)uv_tcp_nodelay(&r->tcp, 1);
	if ((p->auth == PEER_AUTH_TLS &&
	    (ssl = tls_server_ssl_new(p->srv)) == NULL) ||
	    relay_bios(r, ssl) != 0 ||
	    relay_reading((uv_stream_t *)&r->tcp, &r->reading_tcp, true,
	    tcp_read) != 0) {
		relay_close(r, 0);
		return;
	}
	r->state = R_TLS;
	if (p->auth != PEER_AUTH_TLS && relay_secured(r) != 0)
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
		snprintf(t->errmsg, sizeof t->errmsg, "peer: %.200s is not "
		    "HOST:PORT", where);
		return RAFT_INVALID;
	}
	/* Once, before the loop serves anything: a name resolved in place. */
	if ((rv = peer_addr_resolve(&a, &sa)) != 0) {
		snprintf(t->errmsg, sizeof t->errmsg, "peer: listen on %.200s: "
		    "%s", where, gai_strerror(rv));
		return RAFT_IOERR;
	}
	(void)uv_tcp_init(p->loop, &p->listener);
	p->listener.data = p;
	p->listening = true;
	rv = uv_tcp_bind(&p->listener, (struct sockaddr *)&sa, 0);
	if (rv == 0)
		rv = uv_listen((uv_stream_t *)&p->listener, BACKLOG, pt_accepted);
	if (rv != 0) {
		snprintf(t->errmsg, sizeof t->errmsg, "peer: listen on %.200s: "
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
	SSL *ssl = NULL;

	if (r->closing)
		return;
	if (status != 0) {
		log_debug("peer: %s: %s", r->who, uv_strerror(status));
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
	if ((r->p->auth == PEER_AUTH_TLS &&
	    tls_client_ssl_new(r->p->cctx, r->host, &ssl, err, sizeof err) != 0) ||
	    relay_bios(r, ssl) != 0 ||
	    relay_reading((uv_stream_t *)&r->tcp, &r->reading_tcp, true,
	    tcp_read) != 0) {
		log_warn("peer: %s: %s", r->who, err[0] != '\0' ? err :
		    "cannot start the handshake");
		relay_close(r, RAFT_NOCONNECTION);
		return;
	}
	r->state = R_TLS;
	if (ssl != NULL)
		SSL_set_hostflags(r->ssl, PEER_SAN_FLAGS); /* used by a name only */
	else if (relay_secured(r) != 0) {
		relay_close(r, RAFT_NOCONNECTION);
		return;
	}
	relay_pump(r);	/* the ClientHello, or the first bytes */
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
		log_warn("peer: %s: cannot resolve %s: %s", r->who, r->host,
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
		snprintf(t->errmsg, sizeof t->errmsg, "peer: node %llu: %.200s "
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

/* TLS: the server's and the client's contexts from the files. */
static int pt_tls(struct ptls *p, const struct peer_net_config *cfg,
    char *why, size_t whylen)
{
	const struct tls_server_config sc = {
		.cert_file = cfg->cert_file, .key_file = cfg->key_file,
		.ca_file = cfg->ca_file, .client_auth = TLS_CLIENT_AUTH_REQUIRED,
	};
	const struct tls_client_config cc = {
		.ca_file = cfg->ca_file, .cert_file = cfg->cert_file,
		.key_file = cfg->key_file,
	};

	if (tls_server_new(&p->srv, &sc, why, whylen) != 0)
		return -1;
	if (tls_client_ctx_new(&p->cctx, &cc, why, whylen) != 0) {
		tls_server_free(p->srv);
		p->srv = NULL;
		return -1;
	}
	return 0;
}

/* Make t a peer transport on loop. */
int peer_net_init(struct raft_uv_transport *t, uv_loop_t *loop,
    const struct peer_net_config *cfg, char *err, size_t errlen)
{
	struct ptls *p = calloc(1, sizeof *p);
	char why[512] = "";

	if (p == NULL)
		return tls_errf(-1, err, errlen, "out of memory");
	p->auth = cfg->auth;
	if (cfg->bind != NULL && strlen(cfg->bind) >= sizeof p->bind) {
		free(p);
		return tls_errf(-1, err, errlen, "peer-bind too long");
	}
	if ((p->auth == PEER_AUTH_TLS && pt_tls(p, cfg, why, sizeof why) != 0) ||
	    (p->auth == PEER_AUTH_KEY && peer_net_key_load(cfg->secret_file,
	    p->key, sizeof p->key, &p->keylen, why, sizeof why) != 0)) {
		OPENSSL_cleanse(p->key, sizeof p->key);
		free(p);
		return tls_errf(-1, err, errlen, "%s%s", cfg->auth ==
		    PEER_AUTH_TLS ? "peer TLS: " : "", why);
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
void peer_net_free(struct raft_uv_transport *t)
{
	struct ptls *p = t->impl;

	if (p == NULL)
		return;
	SSL_CTX_free(p->cctx);
	tls_server_free(p->srv);
	OPENSSL_cleanse(p->key, sizeof p->key);
	free(p);
	t->impl = NULL;
}
