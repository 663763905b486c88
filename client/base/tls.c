/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/base/tls.c - TLS for tls:HOST:PORT addresses (OpenSSL).
 *
 * TLS 1.2 at least; the server certificate is verified against the CA file
 * ($SEMD_TLS_CA, else the system store) and the host name. A client
 * certificate and key are presented when given (mutual TLS). The socket is
 * non-blocking; every SSL call on a connection is made under its iolock,
 * because the reader and the writers use one SSL object. Sessions resume
 * from the tickets the server sends (tlssess.c). This is the TLS transport
 * (struct semc_xprt): TCP (xprt.c) and a handshake, made with the SSL and
 * the handshake of security/tls.c, the daemon's TLS module.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#include "client/handle.h"
#include "security/tls.h"

/* The most recent OpenSSL error as text. */
static const char *tls_errstr(void)
{
	static _Thread_local char buf[256];
	unsigned long e = ERR_get_error();

	if (e == 0)
		return "unknown error";
	ERR_error_string_n(e, buf, sizeof buf);
	ERR_clear_error();
	return buf;
}

/* Pick a TLS file: the one set on the handle, else the environment. */
static const char *tls_file(const char *set, const char *env)
{
	const char *v = getenv(env);

	if (set != NULL)
		return set;
	return v != NULL && *v != '\0' ? v : NULL;
}

/* A session ticket came (after the handshake): keep it for the next connect. */
static int tls_new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct semc_conn *k = SSL_get_app_data(ssl);

	if (k != NULL && k->owner != NULL)
		semc_tls_sess_put(k->owner, k->tls_addr, sess);
	return 0;	/* OpenSSL keeps (and frees) its own */
}

/* Build the SSL_CTX once. */
int semc_tls_setup(struct semc *c)
{
	const char *ca = tls_file(c->tls_ca, "SEMD_TLS_CA");
	const char *cert = tls_file(c->tls_cert, "SEMD_TLS_CERT");
	const char *key = tls_file(c->tls_key, "SEMD_TLS_KEY");
	SSL_CTX *ctx;

	if (c->ssl_ctx != NULL)
		return 0;
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		return semc_fail(SEMC_E_TLS, "TLS: %s", tls_errstr());
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
			 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (ca != NULL ? SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1 :
	    SSL_CTX_set_default_verify_paths(ctx) != 1) {
		semc_fail(SEMC_E_TLS, "TLS CA %s: %s", ca ? ca : "(system)", tls_errstr());
		goto fail;
	}
	if (cert != NULL && SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		semc_fail(SEMC_E_TLS, "TLS certificate %s: %s", cert, tls_errstr());
		goto fail;
	}
	if (key != NULL || cert != NULL) {
		if (SSL_CTX_use_PrivateKey_file(ctx, key ? key : cert, SSL_FILETYPE_PEM) != 1) {
			semc_fail(SEMC_E_TLS, "TLS key %s: %s", key ? key : cert, tls_errstr());
			goto fail;
		}
	}
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
	    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, tls_new_session);
	semc_tls_sess_setup(c, ctx, ca);
	c->ssl_ctx = ctx;
	return 0;
fail:
	SSL_CTX_free(ctx);
	return SEMC_E_TLS;
}

/* Free the SSL_CTX. */
void semc_tls_free(struct semc *c)
{
	semc_tls_sess_free(c);
	if (c->ssl_ctx != NULL)
		SSL_CTX_free(c->ssl_ctx);
	c->ssl_ctx = NULL;
}

/* Run the TLS handshake on a fresh TCP connection, verifying the server
 * (security/tls.c makes the SSL for the host name and runs the handshake). */
static int tls_handshake_run(struct semc *c, struct semc_conn *k, int64_t deadline)
{
	static const char prefix[] = "TLS handshake failed: ";
	SSL_SESSION *sess;
	char err[512] = "";
	const char *why;
	int64_t left;
	long v;
	int r;

	if (c->ssl_ctx == NULL && (r = semc_tls_setup(c)) != 0)
		return r;
	if (tls_client_ssl_new(c->ssl_ctx, c->addr.host, &k->ssl, err, sizeof err) != 0)
		return semc_fail(SEMC_E_TLS, "TLS: %s", err);
	if (SSL_set_fd(k->ssl, k->fd) != 1)
		return semc_fail(SEMC_E_TLS, "TLS: %s", tls_errstr());
	/* Tickets from this server are kept under its address; offer the last. */
	k->owner = c;
	snprintf(k->tls_addr, sizeof k->tls_addr, "%s", c->addr.canon);
	SSL_set_app_data(k->ssl, k);
	if ((sess = semc_tls_sess_get(c, k->tls_addr)) != NULL) {
		(void)SSL_set_session(k->ssl, sess);
		SSL_SESSION_free(sess);
	}
	left = deadline - semc_now_ms();
	r = tls_handshake(k->ssl, left < 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left,
			  err, sizeof err);
	if (r == 0)
		return 0;
	if (r == -ETIMEDOUT)
		return semc_fail(SEMC_E_NO_REPLY, "TLS handshake with %s timed out",
				 c->addr.canon);
	v = SSL_get_verify_result(k->ssl);
	if (v != X509_V_OK)
		return semc_fail(SEMC_E_TLS, "TLS: cannot verify %s: %s", c->addr.canon,
				 X509_verify_cert_error_string(v));
	why = strncmp(err, prefix, sizeof prefix - 1) == 0 ? err + sizeof prefix - 1 : err;
	return semc_fail(SEMC_E_TLS, "TLS handshake with %s failed: %s", c->addr.canon, why);
}

/* Open a TLS connection: TCP, then the handshake. */
static int tls_open(struct semc *c, struct semc_conn *k, int64_t deadline)
{
	int r;

	if ((r = semc_tcp_open(c, k, deadline)) != 0)
		return r;
	return tls_handshake_run(c, k, deadline);
}

/* Read decrypted bytes without blocking: n, 0 at EOF, -1 with errno. */
static ssize_t tls_read(struct semc_conn *k, void *buf, size_t len)
{
	int r, e;

	pthread_mutex_lock(&k->iolock);
	ERR_clear_error();
	r = SSL_read(k->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
	e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(k->ssl, r);
	pthread_mutex_unlock(&k->iolock);
	if (r > 0)
		return r;
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		errno = EAGAIN;
		return -1;
	}
	if (e == SSL_ERROR_ZERO_RETURN)
		return 0;
	errno = ECONNRESET;
	return -1;
}

/* Write without blocking; *want gets the poll event to wait for. OpenSSL
 * writes with write(2), so SIGPIPE is blocked around it and a SIGPIPE it
 * raised is consumed: a library must not kill its caller. */
static ssize_t tls_write(struct semc_conn *k, const void *buf, size_t len, int *want)
{
	sigset_t pipe_set, old, pending;
	struct timespec zero = { 0, 0 };
	bool was_pending;
	int r, e;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	pthread_mutex_lock(&k->iolock);
	ERR_clear_error();
	r = SSL_write(k->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
	e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(k->ssl, r);
	pthread_mutex_unlock(&k->iolock);
	if (!was_pending) {
		sigpending(&pending);
		if (sigismember(&pending, SIGPIPE))
			sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r > 0)
		return r;
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		*want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		errno = EAGAIN;
		return -1;
	}
	errno = EPIPE;
	return -1;
}

/* Whether decrypted bytes wait in the SSL object (poll() does not see them). */
static bool tls_buffered(struct semc_conn *k)
{
	bool any;

	pthread_mutex_lock(&k->iolock);
	any = SSL_pending(k->ssl) > 0;
	pthread_mutex_unlock(&k->iolock);
	return any;
}

/* Free the connection's SSL object. */
static void tls_close(struct semc_conn *k)
{
	if (k->ssl != NULL)
		SSL_free(k->ssl);
	k->ssl = NULL;
}

const struct semc_xprt semc_xprt_tls = {
	.name = "tls",
	.setup = semc_tls_setup,
	.open = tls_open,
	.read = tls_read,
	.write = tls_write,
	.buffered = tls_buffered,
	.close = tls_close,
};
