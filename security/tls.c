/* SPDX-License-Identifier: BSD-2-Clause */
/* security/tls.c - TLS contexts (OpenSSL) for the daemon and the client. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "security/tls.h"
#include "security/tls_tickets.h"

struct tls_server {
	pthread_mutex_t lock;		/* guards everything below */
	SSL_CTX *ctx;
	struct tls_server_config cfg;	/* its file names: tls_config_dup()'s */
	struct tls_tickets *tickets;	/* NULL: no resumption */
	unsigned long ticket_epoch;	/* rings made */
};

static const char *const client_auth_names[] = {
	[TLS_CLIENT_AUTH_NONE] = "none",
	[TLS_CLIENT_AUTH_OPTIONAL] = "optional",
	[TLS_CLIENT_AUTH_REQUIRED] = "required",
};

/* Format a message into err and return code. */
int tls_errf(int code, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* Append the pending OpenSSL errors (and clear them) as text to err. */
void tls_errors(char *err, size_t errlen)
{
	unsigned long e;
	size_t used;
	char one[256];

	while ((e = ERR_get_error()) != 0) {
		if (err == NULL || errlen == 0)
			continue;
		used = strnlen(err, errlen);
		ERR_error_string_n(e, one, sizeof one);
		snprintf(err + used, errlen - used, "%s%s", used > 0 ? "; " : "", one);
	}
}

/* Format "what: <openssl errors>" into err and return code. */
__attribute__((format(printf, 4, 5)))
static int tls_fail_ssl(int code, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	size_t used;

	if (err == NULL || errlen == 0) {
		ERR_clear_error();
		return code;
	}
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	used = strnlen(err, errlen);
	if (ERR_peek_error() != 0 && used + 3 < errlen) {
		memcpy(err + used, ": ", 3);
		/* tls_errors() appends after the ": " (with "; " between errors) */
		tls_errors(err + used + 2, errlen - used - 2);
	}
	ERR_clear_error();
	return code;
}

/* Tell whether the last OpenSSL error is a key that does not match its certificate. */
static bool tls_key_mismatch(void)
{
	unsigned long e = ERR_peek_last_error();

	return ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH;
}

/* Parse "none", "optional" or "required". */
int tls_client_auth_parse(const char *text, enum tls_client_auth *out)
{
	size_t i;

	for (i = 0; i < sizeof client_auth_names / sizeof client_auth_names[0]; i++) {
		if (strcmp(text, client_auth_names[i]) == 0) {
			*out = (enum tls_client_auth)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* Options shared by server and client contexts. */
static int tls_ctx_common(SSL_CTX *ctx)
{
	/*
	 * TLS 1.2 is the floor, 1.3 is negotiated whenever both ends have it
	 * (OpenSSL prefers the highest version); the cipher lists stay at the
	 * library's defaults, which the system policy (Debian: SECLEVEL=2)
	 * already restricts. Renegotiation is refused both ways (OpenSSL 3
	 * already refuses the client-initiated kind): TLS 1.3 has none and in
	 * 1.2 it is only a way for a client to make the server work.
	 */
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		return -EPROTO;
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	/* Many idle connections: give read/write buffers back when idle. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	return 0;
}

/*
 * Sessions: without tickets, no resumption at all (and no server cache):
 * every connection proves its certificate against the CA loaded now. With
 * them, a ticket resumes only under the rules of security/tls_tickets.h, so
 * a resumed connection is as strict as a full handshake would be now.
 */
static int tls_server_sessions(SSL_CTX *ctx, struct tls_tickets *tickets)
{
	SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
	if (tickets != NULL)
		return tls_tickets_install(ctx, tickets);
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"semd", 4);
	return 0;
}

/* Build a server SSL_CTX from the files of ts-like settings. */
static SSL_CTX *tls_server_build(const struct tls_server_config *cfg,
    struct tls_tickets *tickets, char *err, size_t errlen)
{
	STACK_OF(X509_NAME) *names;
	SSL_CTX *ctx;
	int mode;

	ERR_clear_error();
	if (cfg->cert_file == NULL || cfg->key_file == NULL) {
		tls_errf(-EINVAL, err, errlen, "TLS needs a certificate and a key (--tls-cert, --tls-key)");
		return NULL;
	}
	if ((unsigned)cfg->client_auth > TLS_CLIENT_AUTH_REQUIRED) {
		tls_errf(-EINVAL, err, errlen, "invalid client authentication mode %d", (int)cfg->client_auth);
		return NULL;
	}
	if (cfg->client_auth != TLS_CLIENT_AUTH_NONE && cfg->ca_file == NULL) {
		tls_errf(-EINVAL, err, errlen, "client authentication '%s' needs a CA file (--tls-ca)",
		    client_auth_names[cfg->client_auth]);
		return NULL;
	}
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		tls_fail_ssl(-ENOMEM, err, errlen, "cannot create a TLS context");
		return NULL;
	}
	if (tls_ctx_common(ctx) != 0) {
		tls_fail_ssl(-EPROTO, err, errlen, "cannot set the minimum TLS version");
		goto fail;
	}
	if (tls_server_sessions(ctx, tickets) != 0) {
		tls_fail_ssl(-ENOMEM, err, errlen, "cannot set up session tickets");
		goto fail;
	}

	if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert_file) != 1) {
		tls_fail_ssl(-EINVAL, err, errlen, "cannot load certificate chain '%s'", cfg->cert_file);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, cfg->key_file, SSL_FILETYPE_PEM) != 1 &&
	    !tls_key_mismatch()) {
		tls_fail_ssl(-EINVAL, err, errlen, "cannot load private key '%s'", cfg->key_file);
		goto fail;
	}
	if (tls_key_mismatch() || SSL_CTX_check_private_key(ctx) != 1) {
		tls_fail_ssl(-EINVAL, err, errlen, "private key '%s' does not match certificate '%s'",
		    cfg->key_file, cfg->cert_file);
		goto fail;
	}
	if (cfg->client_auth != TLS_CLIENT_AUTH_NONE) {
		if (SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL) != 1) {
			tls_fail_ssl(-EINVAL, err, errlen, "cannot load CA file '%s'", cfg->ca_file);
			goto fail;
		}
		if ((names = SSL_load_client_CA_file(cfg->ca_file)) == NULL) {
			tls_fail_ssl(-EINVAL, err, errlen, "no CA certificate in '%s'", cfg->ca_file);
			goto fail;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
		mode = SSL_VERIFY_PEER;
		if (cfg->client_auth == TLS_CLIENT_AUTH_REQUIRED)
			mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
		SSL_CTX_set_verify(ctx, mode, NULL);
	} else {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	}
	ERR_clear_error();
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

/* Duplicate a possibly NULL string; *ok goes false on allocation failure. */
static char *tls_strdup(const char *s, bool *ok)
{
	char *d;

	if (s == NULL)
		return NULL;
	if ((d = strdup(s)) == NULL)
		*ok = false;
	return d;
}

/*
 * Copy cfg into out with file names of its own; false when out of memory
 * (what was copied is freed by tls_config_free() all the same).
 */
static bool tls_config_dup(struct tls_server_config *out,
    const struct tls_server_config *cfg)
{
	bool ok = true;

	*out = *cfg;
	out->cert_file = tls_strdup(cfg->cert_file, &ok);
	out->key_file = tls_strdup(cfg->key_file, &ok);
	out->ca_file = tls_strdup(cfg->ca_file, &ok);
	return ok;
}

/* Free the file names of a tls_config_dup() copy. */
static void tls_config_free(struct tls_server_config *c)
{
	free((char *)c->cert_file);
	free((char *)c->key_file);
	free((char *)c->ca_file);
}

/*
 * The ticket ring for cfg: old when it was made for the same trust setting
 * and times, else a new one; a reference either way, NULL without tickets.
 */
static int tls_server_ring(const struct tls_server_config *cfg,
    struct tls_tickets *old, struct tls_tickets **out, char *err, size_t errlen)
{
	unsigned char bind[TLS_BIND_LEN];
	const char *ca;
	int r;

	*out = NULL;
	if (cfg->ticket_lifetime_s == 0)
		return 0;
	ca = cfg->client_auth != TLS_CLIENT_AUTH_NONE ? cfg->ca_file : NULL;
	if ((r = tls_tickets_bind(ca, (int)cfg->client_auth, bind)) != 0)
		return tls_errf(r, err, errlen, "cannot read CA file '%s': %s",
		    ca != NULL ? ca : "", strerror(-r));
	if (tls_tickets_same(old, bind, cfg->ticket_lifetime_s,
	    cfg->ticket_rotate_s)) {
		tls_tickets_ref(old);
		*out = old;
		return 0;
	}
	*out = tls_tickets_new(bind, cfg->ticket_lifetime_s, cfg->ticket_rotate_s);
	if (*out == NULL)
		return tls_errf(-ENOMEM, err, errlen, "out of memory");
	return 0;
}

/* Build a server context from cfg; on error, a message for the log in err. */
int tls_server_new(struct tls_server **out, const struct tls_server_config *cfg,
    char *err, size_t errlen)
{
	struct tls_server *ts;

	*out = NULL;
	if ((ts = calloc(1, sizeof *ts)) == NULL)
		return tls_errf(-ENOMEM, err, errlen, "out of memory");
	if (pthread_mutex_init(&ts->lock, NULL) != 0) {
		free(ts);
		return tls_errf(-ENOMEM, err, errlen, "cannot create a mutex");
	}
	if (tls_server_ring(cfg, NULL, &ts->tickets, err, errlen) != 0)
		goto fail;
	if (ts->tickets != NULL)
		ts->ticket_epoch++;
	if ((ts->ctx = tls_server_build(cfg, ts->tickets, err, errlen)) == NULL)
		goto fail;
	if (!tls_config_dup(&ts->cfg, cfg)) {
		tls_errf(-ENOMEM, err, errlen, "out of memory");
		goto fail;
	}
	*out = ts;
	return 0;
fail:
	tls_server_free(ts);
	return -EINVAL;
}

/* Rebuild the context from the files and swap it in only if it loads. */
int tls_server_reload(struct tls_server *ts, const struct tls_server_config *cfg,
    char *err, size_t errlen)
{
	struct tls_server_config cur;
	struct tls_tickets *old_ring, *ring = NULL;
	SSL_CTX *ctx, *old;
	bool ok;

	pthread_mutex_lock(&ts->lock);
	/* A copy: another reload may free ts's names once we unlock. */
	ok = tls_config_dup(&cur, cfg != NULL ? cfg : &ts->cfg);
	old_ring = ts->tickets;
	if (old_ring != NULL)
		tls_tickets_ref(old_ring);
	pthread_mutex_unlock(&ts->lock);
	if (!ok) {
		tls_errf(-ENOMEM, err, errlen, "out of memory");
		goto fail;
	}
	/* The slow part (file reads, key checks) runs without the lock. */
	if (tls_server_ring(&cur, old_ring, &ring, err, errlen) != 0)
		goto fail;
	if ((ctx = tls_server_build(&cur, ring, err, errlen)) == NULL)
		goto fail;

	pthread_mutex_lock(&ts->lock);
	old = ts->ctx;
	ts->ctx = ctx;
	tls_config_free(&ts->cfg);
	ts->cfg = cur;
	if (ring != NULL && ring != ts->tickets)
		ts->ticket_epoch++;
	tls_tickets_unref(ts->tickets);
	ts->tickets = ring;
	pthread_mutex_unlock(&ts->lock);
	/* Live SSLs hold their own reference: this only drops ours. */
	SSL_CTX_free(old);
	tls_tickets_unref(old_ring);
	return 0;
fail:
	tls_tickets_unref(ring);
	tls_tickets_unref(old_ring);
	tls_config_free(&cur);
	return -EINVAL;
}

/* A new server-side SSL for one accepted connection (from the current context). */
SSL *tls_server_ssl_new(struct tls_server *ts)
{
	SSL *ssl;

	pthread_mutex_lock(&ts->lock);
	ssl = SSL_new(ts->ctx);
	pthread_mutex_unlock(&ts->lock);
	if (ssl != NULL)
		SSL_set_accept_state(ssl);
	return ssl;
}

/* The current context, with a reference the caller must SSL_CTX_free(). */
SSL_CTX *tls_server_ctx(struct tls_server *ts)
{
	SSL_CTX *ctx;

	pthread_mutex_lock(&ts->lock);
	ctx = ts->ctx;
	SSL_CTX_up_ref(ctx);
	pthread_mutex_unlock(&ts->lock);
	return ctx;
}

/* Free a server; NULL is a no-op. Live connections keep their context. */
void tls_server_free(struct tls_server *ts)
{
	if (ts == NULL)
		return;
	SSL_CTX_free(ts->ctx);
	tls_tickets_unref(ts->tickets);
	tls_config_free(&ts->cfg);
	pthread_mutex_destroy(&ts->lock);
	free(ts);
}

/* Counts the ticket key rings made. */
unsigned long tls_server_ticket_epoch(struct tls_server *ts)
{
	unsigned long e;

	pthread_mutex_lock(&ts->lock);
	e = ts->ticket_epoch;
	pthread_mutex_unlock(&ts->lock);
	return e;
}

/* Build a client context from cfg; on error, a message in err. */
int tls_client_ctx_new(SSL_CTX **out, const struct tls_client_config *cfg,
    char *err, size_t errlen)
{
	const char *key;
	SSL_CTX *ctx;
	int e = -EINVAL;

	*out = NULL;
	ERR_clear_error();
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		return tls_fail_ssl(-ENOMEM, err, errlen, "cannot create a TLS context");
	if (tls_ctx_common(ctx) != 0) {
		tls_fail_ssl(-EPROTO, err, errlen, "cannot set the minimum TLS version");
		goto fail;
	}
	if (cfg->ca_file != NULL) {
		if (SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL) != 1) {
			tls_fail_ssl(e, err, errlen, "cannot load CA file '%s'", cfg->ca_file);
			goto fail;
		}
	} else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
		tls_fail_ssl(e, err, errlen, "cannot load the system's trusted CAs");
		goto fail;
	}
	if (cfg->cert_file != NULL) {
		key = cfg->key_file != NULL ? cfg->key_file : cfg->cert_file;
		if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert_file) != 1) {
			tls_fail_ssl(e, err, errlen, "cannot load certificate chain '%s'", cfg->cert_file);
			goto fail;
		}
		if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 &&
		    !tls_key_mismatch()) {
			tls_fail_ssl(e, err, errlen, "cannot load private key '%s'", key);
			goto fail;
		}
		if (tls_key_mismatch() || SSL_CTX_check_private_key(ctx) != 1) {
			tls_fail_ssl(e, err, errlen, "private key '%s' does not match certificate '%s'",
			    key, cfg->cert_file);
			goto fail;
		}
	} else if (cfg->key_file != NULL) {
		tls_errf(e, err, errlen, "a TLS key without a certificate (--tls-cert)");
		goto fail;
	}
	SSL_CTX_set_verify(ctx, cfg->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
	*out = ctx;
	return 0;
fail:
	SSL_CTX_free(ctx);
	return e;
}

/* A new client-side SSL that will verify the server against host. */
int tls_client_ssl_new(SSL_CTX *ctx, const char *host, SSL **out, char *err, size_t errlen)
{
	unsigned char addr[16];
	char bare[256];
	size_t len = strlen(host);
	SSL *ssl;

	*out = NULL;
	if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
		host++;
		len -= 2;
	}
	if (len == 0 || len >= sizeof bare)
		return tls_errf(-EINVAL, err, errlen, "invalid TLS server host name '%.64s'", host);
	memcpy(bare, host, len);
	bare[len] = '\0';
	ERR_clear_error();
	if ((ssl = SSL_new(ctx)) == NULL)
		return tls_fail_ssl(-ENOMEM, err, errlen, "cannot create a TLS connection");
	if (inet_pton(AF_INET, bare, addr) == 1 || inet_pton(AF_INET6, bare, addr) == 1) {
		/* An address: checked against IP SANs; no SNI for literals (RFC 6066). */
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), bare) != 1) {
			tls_fail_ssl(-EINVAL, err, errlen, "cannot verify against address '%s'", bare);
			goto fail;
		}
	} else {
		SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		if (SSL_set_tlsext_host_name(ssl, bare) != 1 || SSL_set1_host(ssl, bare) != 1) {
			tls_fail_ssl(-EINVAL, err, errlen, "cannot verify against host name '%s'", bare);
			goto fail;
		}
	}
	SSL_set_connect_state(ssl);
	*out = ssl;
	return 0;
fail:
	SSL_free(ssl);
	return -EINVAL;
}

/* Milliseconds on the monotonic clock. */
static long long tls_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Describe why a handshake step failed; returns a negative errno. */
int tls_handshake_why(SSL *ssl, int r, int sslerr, int sys_errno,
    char *err, size_t errlen)
{
	long v = SSL_get_verify_result(ssl);

	if (sslerr == SSL_ERROR_SSL && v != X509_V_OK) {
		ERR_clear_error();
		return tls_errf(-EPROTO, err, errlen, "TLS handshake failed: certificate verify failed: %s",
		    X509_verify_cert_error_string(v));
	}
	if (sslerr == SSL_ERROR_SSL &&
	    ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
		ERR_clear_error();
		return tls_errf(-ECONNRESET, err, errlen, "TLS handshake failed: connection closed by peer");
	}
	if (sslerr == SSL_ERROR_SSL)
		return tls_fail_ssl(-EPROTO, err, errlen, "TLS handshake failed");
	if (sslerr == SSL_ERROR_SYSCALL && ERR_peek_error() != 0)
		return tls_fail_ssl(-EPROTO, err, errlen, "TLS handshake failed");
	if (sslerr == SSL_ERROR_SYSCALL && r < 0 && sys_errno != 0)
		return tls_errf(-sys_errno, err, errlen, "TLS handshake failed: %s", strerror(sys_errno));
	ERR_clear_error();
	return tls_errf(-ECONNRESET, err, errlen, "TLS handshake failed: connection closed by peer");
}

/* Run the handshake of ssl on its socket, waiting at most timeout_ms. */
int tls_handshake(SSL *ssl, int timeout_ms, char *err, size_t errlen)
{
	long long deadline = tls_now_ms() + timeout_ms, left;
	struct pollfd pfd;
	int fd = SSL_get_fd(ssl), flags, r, e, rc;

	if (fd < 0)
		return tls_errf(-EBADF, err, errlen, "TLS connection has no socket");
	if ((flags = fcntl(fd, F_GETFL)) < 0)
		return tls_errf(-errno, err, errlen, "fcntl: %s", strerror(errno));
	if (!(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return tls_errf(-errno, err, errlen, "fcntl: %s", strerror(errno));
	for (;;) {
		ERR_clear_error();
		errno = 0;
		r = SSL_do_handshake(ssl);
		if (r == 1) {
			rc = 0;
			break;
		}
		e = SSL_get_error(ssl, r);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
			rc = tls_handshake_why(ssl, r, e, errno, err, errlen);
			break;
		}
		left = deadline - tls_now_ms();
		if (left <= 0) {
			rc = tls_errf(-ETIMEDOUT, err, errlen, "TLS handshake timed out after %d ms", timeout_ms);
			break;
		}
		pfd.fd = fd;
		pfd.events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR) {
			rc = tls_errf(-errno, err, errlen, "poll: %s", strerror(errno));
			break;
		}
	}
	if (!(flags & O_NONBLOCK))
		(void)fcntl(fd, F_SETFL, flags);
	return rc;
}

/* Accept a certificate name as a principal: not empty, escaped it fits. */
static bool tls_name_usable(const unsigned char *p, size_t len)
{
	char esc[ACL_NAME_MAX + 1];

	return len > 0 && acl_name_escape(p, len, esc, sizeof esc) >= 0;
}

/*
 * Copy "cn:NAME" (NAME escaped: a space is \x20, see acl_name_escape()) or
 * "anonymous" into out.
 */
static int tls_put_principal(char *out, size_t outlen, const unsigned char *name, size_t len)
{
	if (name == NULL) {
		if (outlen < sizeof "anonymous")
			return -ENOSPC;
		memcpy(out, "anonymous", sizeof "anonymous");
		return 0;
	}
	if (outlen < 4)
		return -ENOSPC;
	memcpy(out, "cn:", 3);
	return acl_name_escape(name, len, out + 3, outlen - 3) < 0 ? -ENOSPC : 0;
}

/*
 * The principal for a certificate name (len < 0: none could be read):
 * cn:NAME, or anonymous and -EINVAL when the name is unusable.
 */
static int tls_principal_of_name(char *out, size_t outlen, const unsigned char *name, int len)
{
	if (len >= 0 && tls_name_usable(name, (size_t)len))
		return tls_put_principal(out, outlen, name, (size_t)len);
	(void)tls_put_principal(out, outlen, NULL, 0);
	return -EINVAL;
}

/* The principal of the peer: cn:NAME of a verified certificate, else anonymous. */
int tls_peer_principal(SSL *ssl, char *out, size_t outlen)
{
	GENERAL_NAMES *gens;
	const GENERAL_NAME *g;
	unsigned char *utf8 = NULL;
	X509_NAME *subject;
	X509_NAME_ENTRY *entry;
	X509 *cert;
	int i, n, idx, rc;

	if (outlen < sizeof "anonymous")
		return -ENOSPC;
	cert = SSL_get0_peer_certificate(ssl);
	if (cert == NULL || SSL_get_verify_result(ssl) != X509_V_OK)
		return tls_put_principal(out, outlen, NULL, 0);
	gens = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	n = gens != NULL ? sk_GENERAL_NAME_num(gens) : 0;
	for (i = 0; i < n; i++) {
		g = sk_GENERAL_NAME_value(gens, i);
		if (g->type != GEN_DNS)
			continue;
		rc = tls_principal_of_name(out, outlen, ASN1_STRING_get0_data(g->d.dNSName),
		    ASN1_STRING_length(g->d.dNSName));
		GENERAL_NAMES_free(gens);
		return rc;
	}
	GENERAL_NAMES_free(gens);
	subject = X509_get_subject_name(cert);
	idx = subject != NULL ? X509_NAME_get_index_by_NID(subject, NID_commonName, -1) : -1;
	entry = idx >= 0 ? X509_NAME_get_entry(subject, idx) : NULL;
	n = entry != NULL ? ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry)) : -1;
	rc = tls_principal_of_name(out, outlen, utf8, n);
	OPENSSL_free(utf8);
	return rc;
}

/* The same identity as an acl_subject (cn kind, or anonymous). */
int tls_peer_subject(SSL *ssl, struct acl_subject *s)
{
	char p[ACL_PRINCIPAL_MAX];
	int rc;

	acl_subject_clear(s);
	rc = tls_peer_principal(ssl, p, sizeof p);
	if (rc == 0 && strncmp(p, "cn:", 3) == 0)
		rc = acl_subject_set_cn(s, p + 3, strlen(p + 3));
	return rc;
}
