/* SPDX-License-Identifier: BSD-2-Clause */
/* security/tls.h - TLS contexts (OpenSSL) for the daemon and the client. */
#ifndef SEMD_SECURITY_TLS_H
#define SEMD_SECURITY_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "security/acl.h"

enum tls_client_auth {
	TLS_CLIENT_AUTH_NONE,		/* no certificate asked for */
	TLS_CLIENT_AUTH_OPTIONAL,	/* asked for; if sent, it must verify */
	TLS_CLIENT_AUTH_REQUIRED,	/* a verified certificate is required */
};

/* Files for a server context; ca_file is required unless client_auth is none. */
struct tls_server_config {
	const char *cert_file;		/* PEM chain: leaf first */
	const char *key_file;		/* PEM private key */
	const char *ca_file;		/* PEM CAs trusted for client certificates */
	enum tls_client_auth client_auth;
	/*
	 * Session tickets (security/tls_tickets.h): how long a ticket resumes
	 * after the full handshake that proved the client (0: no resumption)
	 * and how often a new ticket key starts.
	 */
	unsigned int ticket_lifetime_s;
	unsigned int ticket_rotate_s;	/* 0: the lifetime */
};

/* Files for a client context. */
struct tls_client_config {
	const char *ca_file;		/* NULL: the system trust store */
	const char *cert_file;		/* client certificate, or NULL */
	const char *key_file;		/* its key (NULL: taken from cert_file) */
	bool insecure;			/* skip server verification (tests only) */
};

/* A server TLS context that can be reloaded while connections live on. */
struct tls_server;

/* Parse "none", "optional" or "required". */
int tls_client_auth_parse(const char *text, enum tls_client_auth *out);

/* Build a server context from cfg; on error, a message for the log in err. */
int tls_server_new(struct tls_server **out, const struct tls_server_config *cfg,
    char *err, size_t errlen);
/*
 * Rebuild the context from the files (of cfg, or the current ones when cfg is
 * NULL) and swap it in only if everything loads. New handshakes use the new
 * one; established connections keep theirs (OpenSSL reference counts the
 * SSL_CTX behind every SSL). On error the old context stays and err says why.
 * The ticket keys survive a reload that keeps the trust setting (the CA
 * file's bytes, the client-auth mode) and the ticket times; otherwise they
 * are new and no ticket issued before resumes (tls_server_ticket_epoch()
 * then changes).
 */
int tls_server_reload(struct tls_server *ts, const struct tls_server_config *cfg,
    char *err, size_t errlen);
/* A new server-side SSL for one accepted connection (from the current context). */
SSL *tls_server_ssl_new(struct tls_server *ts);
/* The current context, with a reference the caller must SSL_CTX_free(). */
SSL_CTX *tls_server_ctx(struct tls_server *ts);
/* Free a server; NULL is a no-op. Live connections keep their context. */
void tls_server_free(struct tls_server *ts);
/* Counts the ticket key rings made: changes when old tickets stop resuming. */
unsigned long tls_server_ticket_epoch(struct tls_server *ts);

/* Build a client context from cfg; on error, a message in err. */
int tls_client_ctx_new(SSL_CTX **out, const struct tls_client_config *cfg,
    char *err, size_t errlen);
/*
 * A new client-side SSL that will verify the server against host: a DNS name
 * (sent as SNI and checked against the certificate) or an IP literal (v4, v6,
 * with or without brackets; checked against IP SANs).
 */
int tls_client_ssl_new(SSL_CTX *ctx, const char *host, SSL **out, char *err, size_t errlen);

/*
 * Run the handshake of ssl on its (blocking or non-blocking) socket, waiting
 * at most timeout_ms in total. The SSL's fd and connect/accept state must be
 * set. 0 on success; -ETIMEDOUT, -ECONNRESET or -EPROTO with err filled.
 */
int tls_handshake(SSL *ssl, int timeout_ms, char *err, size_t errlen);
/*
 * Why a handshake step failed: r and sslerr from SSL_do_handshake() and
 * SSL_get_error(), sys_errno the errno right after. Fills err, clears the
 * OpenSSL error queue and returns -EPROTO, -ECONNRESET or -errno.
 */
int tls_handshake_why(SSL *ssl, int r, int sslerr, int sys_errno,
    char *err, size_t errlen);

/*
 * The principal of the peer of an established connection: "cn:NAME" from the
 * first DNS subjectAltName, else the subject CN, of a verified certificate;
 * "anonymous" without one. NAME keeps every byte of the name, escaped by
 * acl_name_escape() (a space is \x20). Returns -EINVAL (and writes
 * "anonymous") when the certificate verified but its name is unusable
 * (empty, or over ACL_NAME_MAX bytes once escaped); -ENOSPC when out is
 * too small.
 */
int tls_peer_principal(SSL *ssl, char *out, size_t outlen);
/* The same identity as an acl_subject (cn kind, or anonymous). */
int tls_peer_subject(SSL *ssl, struct acl_subject *s);
/* Append the pending OpenSSL errors (and clear them) as text to err. */
void tls_errors(char *err, size_t errlen);
/* Format a message into err (when not NULL) and return code. */
__attribute__((format(printf, 4, 5)))
int tls_errf(int code, char *err, size_t errlen, const char *fmt, ...);

#endif
