/* SPDX-License-Identifier: BSD-2-Clause */
/* tests/security/test_tls.c CERTDIR - real TLS handshakes between the server
 * and client contexts of security/tls.c, over socketpairs, one thread a side. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "security/tls.h"
#include "tests/security/check.h"

#define HS_TIMEOUT_MS 5000

/* One handshake: inputs, then what each side saw. */
struct hs {
	struct tls_server *ts;
	SSL_CTX *cctx;
	const char *host;
	SSL_SESSION *resume;		/* offer this session (client) */
	bool keep;			/* leave the connection open */

	int fds[2];
	pthread_t thread;
	SSL *srv_ssl, *cli_ssl;
	int srv_rc, cli_rc;
	char srv_err[512], cli_err[512];
	int principal_rc;
	char principal[ACL_PRINCIPAL_MAX];
	struct acl_subject subject;
	int version;
	char server_cn[128];
	bool echo_ok;
	bool reused;
	SSL_SESSION *session;		/* the client's session after the echo */
};

/* Server side: handshake, identify the peer, echo until EOF. */
static void *server_main(void *arg)
{
	struct hs *h = arg;
	char buf[256];
	int n;

	h->srv_ssl = tls_server_ssl_new(h->ts);
	if (h->srv_ssl == NULL) {
		h->srv_rc = -ENOMEM;
		return NULL;
	}
	SSL_set_fd(h->srv_ssl, h->fds[0]);
	h->srv_rc = tls_handshake(h->srv_ssl, HS_TIMEOUT_MS, h->srv_err, sizeof h->srv_err);
	if (h->srv_rc != 0)
		return NULL;
	h->principal_rc = tls_peer_principal(h->srv_ssl, h->principal, sizeof h->principal);
	(void)tls_peer_subject(h->srv_ssl, &h->subject);
	/* bounded: the socket has a receive timeout */
	while ((n = SSL_read(h->srv_ssl, buf, sizeof buf)) > 0) {
		if (SSL_write(h->srv_ssl, buf, n) != n)
			break;
	}
	ERR_clear_error();
	return NULL;
}

/* Send msg on the client side and expect it back. */
static bool echo(SSL *ssl, const char *msg)
{
	char buf[256];
	int n = (int)strlen(msg), got = 0, r;

	if (SSL_write(ssl, msg, n) != n)
		goto fail;
	while (got < n) {
		r = SSL_read(ssl, buf + got, (int)sizeof buf - got);
		if (r <= 0)
			goto fail;
		got += r;
	}
	return got == n && memcmp(buf, msg, (size_t)n) == 0;
fail:
	ERR_clear_error();
	return false;
}

/* Close both ends and free both SSLs. */
static void hs_finish(struct hs *h)
{
	if (h->cli_ssl != NULL)
		SSL_shutdown(h->cli_ssl);
	shutdown(h->fds[1], SHUT_RDWR);
	pthread_join(h->thread, NULL);
	SSL_free(h->cli_ssl);
	SSL_free(h->srv_ssl);
	SSL_SESSION_free(h->session);
	close(h->fds[0]);
	close(h->fds[1]);
	h->cli_ssl = h->srv_ssl = NULL;
	h->session = NULL;
	ERR_clear_error();
}

/* Run a handshake (and one echo) between h->ts and h->cctx. */
static void hs_run(struct hs *h)
{
	struct timeval tv = { .tv_sec = HS_TIMEOUT_MS / 1000 };
	X509 *cert;
	int i;

	h->srv_rc = h->cli_rc = -1;
	h->srv_err[0] = h->cli_err[0] = h->principal[0] = h->server_cn[0] = '\0';
	h->echo_ok = h->reused = false;
	h->version = 0;
	h->srv_ssl = h->cli_ssl = NULL;
	h->session = NULL;
	acl_subject_clear(&h->subject);	/* zeroed or used before: both fine */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, h->fds) != 0) {
		perror("socketpair");
		exit(2);
	}
	for (i = 0; i < 2; i++) {
		setsockopt(h->fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		setsockopt(h->fds[i], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	}
	if (pthread_create(&h->thread, NULL, server_main, h) != 0) {
		perror("pthread_create");
		exit(2);
	}
	h->cli_rc = tls_client_ssl_new(h->cctx, h->host, &h->cli_ssl, h->cli_err, sizeof h->cli_err);
	if (h->cli_rc == 0) {
		SSL_set_fd(h->cli_ssl, h->fds[1]);
		if (h->resume != NULL)
			SSL_set_session(h->cli_ssl, h->resume);
		h->cli_rc = tls_handshake(h->cli_ssl, HS_TIMEOUT_MS, h->cli_err, sizeof h->cli_err);
	}
	if (h->cli_rc == 0) {
		h->version = SSL_version(h->cli_ssl);
		h->reused = SSL_session_reused(h->cli_ssl) == 1;
		cert = SSL_get0_peer_certificate(h->cli_ssl);
		if (cert != NULL)
			X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName,
			    h->server_cn, sizeof h->server_cn);
		h->echo_ok = echo(h->cli_ssl, "ping");
		h->session = SSL_get1_session(h->cli_ssl);
	}
	if (!h->keep || !h->echo_ok)
		hs_finish(h);
}

/* A client context trusting ca, with an optional certificate and a version cap. */
static SSL_CTX *client_ctx(const char *ca, const char *cert, const char *key, int max_version)
{
	struct tls_client_config cfg = { .ca_file = ca, .cert_file = cert, .key_file = key };
	char err[512];
	SSL_CTX *ctx;

	if (tls_client_ctx_new(&ctx, &cfg, err, sizeof err) != 0) {
		fprintf(stderr, "FAIL client context: %s\n", err);
		exit(1);
	}
	if (max_version != 0)
		SSL_CTX_set_max_proto_version(ctx, max_version);
	return ctx;
}

/* A server on cert/key with client authentication mode auth. */
static struct tls_server *server(const char *cert, const char *key, enum tls_client_auth auth)
{
	struct tls_server_config cfg = {
		.cert_file = cert, .key_file = key, .ca_file = t_path("ca.crt"), .client_auth = auth,
	};
	struct tls_server *ts;
	char err[512];

	if (tls_server_new(&ts, &cfg, err, sizeof err) != 0) {
		fprintf(stderr, "FAIL server context: %s\n", err);
		exit(1);
	}
	return ts;
}

/* Copy file from to file to (for the reload-from-the-same-paths test). */
static void copy_file(const char *from, const char *to)
{
	char buf[8192];
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	size_t n;

	if (in == NULL || out == NULL) {
		perror("copy_file");
		exit(2);
	}
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	fclose(out);
}

static void test_basic(void)
{
	struct tls_server *ts = server(t_path("server.crt"), t_path("server.key"), TLS_CLIENT_AUTH_NONE);
	SSL_CTX *good = client_ctx(t_path("ca.crt"), NULL, NULL, 0);
	SSL_CTX *rogue = client_ctx(t_path("rogue.crt"), NULL, NULL, 0);
	SSL_CTX *system = client_ctx(NULL, NULL, NULL, 0);
	struct tls_client_config icfg = { .ca_file = t_path("rogue.crt"), .insecure = true };
	SSL_CTX *insecure;
	struct hs h = { .ts = ts };
	char err[256];

	TEST_START("right CA and host name: handshake, TLS 1.3, echo");
	h.cctx = good;
	h.host = "localhost";
	hs_run(&h);
	CHECK_INT(h.cli_rc, 0);
	CHECK_INT(h.srv_rc, 0);
	CHECK_STR(h.cli_err, "");
	CHECK(h.version >= TLS1_2_VERSION);
	CHECK_INT(h.version, TLS1_3_VERSION);
	CHECK(h.echo_ok);
	CHECK_STR(h.server_cn, "localhost");
	CHECK_INT(h.principal_rc, 0);
	CHECK_STR(h.principal, "anonymous");	/* no client certificate asked for */

	TEST_START("IP literal host checked against the IP SAN");
	h.host = "127.0.0.1";
	hs_run(&h);
	CHECK_INT(h.cli_rc, 0);
	CHECK(h.echo_ok);
	h.host = "[::1]";
	hs_run(&h);
	CHECK_INT(h.cli_rc, -EPROTO);
	CHECK_STR(h.cli_err, "TLS handshake failed: certificate verify failed: IP address mismatch");

	TEST_START("wrong host name fails");
	h.host = "otherhost";
	hs_run(&h);
	CHECK_INT(h.cli_rc, -EPROTO);
	CHECK_STR(h.cli_err, "TLS handshake failed: certificate verify failed: hostname mismatch");
	CHECK(h.srv_rc != 0);
	CHECK(!h.echo_ok);
	h.host = "";
	hs_run(&h);
	CHECK_INT(h.cli_rc, -EINVAL);
	CHECK_HAS(h.cli_err, "invalid TLS server host name");

	TEST_START("untrusted CA fails; the system store does not know our CA");
	h.cctx = rogue;
	h.host = "localhost";
	hs_run(&h);
	CHECK_INT(h.cli_rc, -EPROTO);
	CHECK_STR(h.cli_err, "TLS handshake failed: certificate verify failed: "
	    "unable to get local issuer certificate");
	CHECK(h.srv_rc != 0);
	CHECK_HAS(h.srv_err, "unknown ca");
	h.cctx = system;
	hs_run(&h);
	CHECK_INT(h.cli_rc, -EPROTO);
	CHECK_HAS(h.cli_err, "certificate verify failed");

	TEST_START("insecure client skips verification (explicitly)");
	CHECK_INT(tls_client_ctx_new(&insecure, &icfg, err, sizeof err), 0);
	h.cctx = insecure;
	h.host = "otherhost";
	hs_run(&h);
	CHECK_INT(h.cli_rc, 0);
	CHECK(h.echo_ok);
	SSL_CTX_free(insecure);

	SSL_CTX_free(good);
	SSL_CTX_free(rogue);
	SSL_CTX_free(system);
	tls_server_free(ts);
}

/* Handshake with cctx: the server must accept the client as principal. */
static void hs_accepts(struct hs *h, SSL_CTX *cctx, const char *principal)
{
	h->cctx = cctx;
	hs_run(h);
	CHECK_INT(h->srv_rc, 0);
	CHECK_STR(h->principal, principal);
}

static void test_client_auth(void)
{
	struct tls_server *req = server(t_path("server.crt"), t_path("server.key"), TLS_CLIENT_AUTH_REQUIRED);
	struct tls_server *opt = server(t_path("server.crt"), t_path("server.key"), TLS_CLIENT_AUTH_OPTIONAL);
	SSL_CTX *nocert = client_ctx(t_path("ca.crt"), NULL, NULL, 0);
	SSL_CTX *client = client_ctx(t_path("ca.crt"), t_path("client.crt"), t_path("client.key"), 0);
	SSL_CTX *cnonly = client_ctx(t_path("ca.crt"), t_path("cnonly.crt"), t_path("cnonly.key"), 0);
	SSL_CTX *badname = client_ctx(t_path("ca.crt"), t_path("badname.crt"), t_path("badname.key"), 0);
	SSL_CTX *intruder = client_ctx(t_path("ca.crt"), t_path("intruder.crt"), t_path("intruder.key"), 0);
	SSL_CTX *client12 = client_ctx(t_path("ca.crt"), t_path("client.crt"), t_path("client.key"), TLS1_2_VERSION);
	struct hs h = { .ts = req, .host = "localhost" };

	TEST_START("required: a missing client certificate fails");
	h.cctx = nocert;
	hs_run(&h);
	CHECK(h.srv_rc != 0);
	CHECK_HAS(h.srv_err, "did not return a certificate");
	CHECK(!h.echo_ok);	/* TLS 1.3: the client learns it on its first read */

	TEST_START("required: principal from the first DNS SAN, else the CN");
	hs_accepts(&h, client, "cn:backup-host.example");
	CHECK(h.echo_ok);
	CHECK_INT(h.principal_rc, 0);
	CHECK_STR(h.subject.principal, "cn:backup-host.example");
	CHECK_INT(h.subject.kind, ACL_SUBJECT_CN);
	hs_accepts(&h, cnonly, "cn:cn-only");
	/* a space is kept, escaped: the name is not lost to anonymous */
	hs_accepts(&h, badname, "cn:bad\\x20name");
	CHECK_INT(h.principal_rc, 0);
	CHECK_STR(h.subject.principal, "cn:bad\\x20name");
	CHECK_INT(h.subject.kind, ACL_SUBJECT_CN);

	TEST_START("required: a certificate from another CA fails");
	h.cctx = intruder;
	hs_run(&h);
	CHECK_INT(h.srv_rc, -EPROTO);
	CHECK_STR(h.srv_err, "TLS handshake failed: certificate verify failed: "
	    "unable to get local issuer certificate");
	CHECK(!h.echo_ok);

	TEST_START("TLS 1.2 works too, with the same identity");
	hs_accepts(&h, client12, "cn:backup-host.example");
	CHECK_INT(h.version, TLS1_2_VERSION);

	TEST_START("optional: no certificate is anonymous, a good one is its cn, a bad one fails");
	h.ts = opt;
	hs_accepts(&h, nocert, "anonymous");
	CHECK(h.echo_ok);
	hs_accepts(&h, client, "cn:backup-host.example");
	h.cctx = intruder;
	hs_run(&h);
	CHECK(h.srv_rc != 0);
	CHECK(!h.echo_ok);

	SSL_CTX_free(nocert);
	SSL_CTX_free(client);
	SSL_CTX_free(cnonly);
	SSL_CTX_free(badname);
	SSL_CTX_free(intruder);
	SSL_CTX_free(client12);
	tls_server_free(req);
	tls_server_free(opt);
}

/*
 * A handshake with cctx, then another offering the session the first one left
 * the client: the session is not resumable, and the server does not resume it.
 */
static void check_no_resumption(struct hs *h, SSL_CTX *cctx)
{
	SSL_SESSION *sess;

	h->cctx = cctx;
	h->resume = NULL;
	h->keep = true;		/* hs_finish would free the session */
	hs_run(h);
	h->keep = false;
	CHECK_INT(h->cli_rc, 0);
	CHECK(h->session == NULL || !SSL_SESSION_is_resumable(h->session));
	sess = h->session;	/* ours now */
	h->session = NULL;
	if (h->echo_ok)		/* else hs_run closed it already */
		hs_finish(h);
	h->resume = sess;
	hs_run(h);
	CHECK_INT(h->cli_rc, 0);
	CHECK(!h->reused);
	h->resume = NULL;
	SSL_SESSION_free(sess);
}

static void test_versions_and_sessions(void)
{
	struct tls_server *ts = server(t_path("server.crt"), t_path("server.key"), TLS_CLIENT_AUTH_NONE);
	SSL_CTX *c11 = client_ctx(t_path("ca.crt"), NULL, NULL, TLS1_1_VERSION);
	SSL_CTX *c12 = client_ctx(t_path("ca.crt"), NULL, NULL, TLS1_2_VERSION);
	SSL_CTX *c13 = client_ctx(t_path("ca.crt"), NULL, NULL, 0);
	SSL_CTX *ctx = tls_server_ctx(ts);
	struct hs h = { .ts = ts, .host = "localhost" };
	SSL_CTX *reneg;

	TEST_START("TLS 1.2 is the floor; renegotiation and tickets are off");
	CHECK_INT(SSL_CTX_get_min_proto_version(ctx), TLS1_2_VERSION);
	CHECK((SSL_CTX_get_options(ctx) & SSL_OP_NO_RENEGOTIATION) != 0);
	CHECK((SSL_CTX_get_options(ctx) & SSL_OP_NO_TICKET) != 0);
	CHECK_INT(SSL_CTX_get_num_tickets(ctx), 0);
	SSL_CTX_free(ctx);
	h.cctx = c11;
	hs_run(&h);
	CHECK(h.cli_rc != 0);
	CHECK(h.srv_rc != 0);
	h.cctx = c12;
	hs_run(&h);
	CHECK_INT(h.cli_rc, 0);
	CHECK_INT(h.version, TLS1_2_VERSION);

	TEST_START("a TLS 1.2 client cannot renegotiate");
	/*
	 * A plain OpenSSL client: ours refuses to renegotiate by itself. (OpenSSL
	 * 3 servers refuse client renegotiation by default as well; this pins
	 * the behaviour, the option check above pins our setting.)
	 */
	reneg = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_max_proto_version(reneg, TLS1_2_VERSION);
	SSL_CTX_load_verify_locations(reneg, t_path("ca.crt"), NULL);
	SSL_CTX_set_verify(reneg, SSL_VERIFY_PEER, NULL);
	h.cctx = reneg;
	h.keep = true;
	hs_run(&h);
	CHECK_INT(h.cli_rc, 0);
	CHECK_INT(SSL_renegotiate(h.cli_ssl), 1);
	CHECK(!echo(h.cli_ssl, "renegotiate"));
	CHECK_INT(SSL_get_secure_renegotiation_support(h.cli_ssl), 1);
	hs_finish(&h);
	h.keep = false;
	SSL_CTX_free(reneg);

	TEST_START("no session resumption (1.3 and 1.2)");
	check_no_resumption(&h, c13);
	check_no_resumption(&h, c12);

	SSL_CTX_free(c11);
	SSL_CTX_free(c12);
	SSL_CTX_free(c13);
	tls_server_free(ts);
}

static void test_reload(void)
{
	SSL_CTX *anon = client_ctx(t_path("ca.crt"), NULL, NULL, 0);
	SSL_CTX *client = client_ctx(t_path("ca.crt"), t_path("client.crt"), t_path("client.key"), 0);
	const char *live_crt = t_path("live.crt"), *live_key = t_path("live.key");
	struct tls_server_config cfg = { 0 };
	struct tls_server *ts;
	struct hs old = { .host = "localhost", .keep = true };
	struct hs h = { .host = "localhost" };
	char err[512];

	copy_file(t_path("server.crt"), live_crt);
	copy_file(t_path("server.key"), live_key);
	ts = server(live_crt, live_key, TLS_CLIENT_AUTH_NONE);
	old.ts = h.ts = ts;
	old.cctx = h.cctx = anon;

	TEST_START("reload: a new certificate serves new handshakes");
	hs_run(&old);			/* stays open across the reloads */
	CHECK_INT(old.cli_rc, 0);
	CHECK_STR(old.server_cn, "localhost");
	copy_file(t_path("server2.crt"), live_crt);
	copy_file(t_path("server2.key"), live_key);
	err[0] = '\0';
	CHECK_INT(tls_server_reload(ts, NULL, err, sizeof err), 0);
	CHECK_STR(err, "");
	hs_run(&h);
	CHECK_INT(h.cli_rc, 0);
	CHECK_STR(h.server_cn, "localhost-2");

	TEST_START("reload: a broken certificate keeps the old context");
	copy_file(t_path("broken.crt"), live_crt);
	CHECK_INT(tls_server_reload(ts, NULL, err, sizeof err), -EINVAL);
	CHECK_HAS(err, "cannot load certificate chain '");
	CHECK_HAS(err, "live.crt': error:");
	hs_run(&h);
	CHECK_INT(h.cli_rc, 0);
	CHECK_STR(h.server_cn, "localhost-2");
	copy_file(t_path("server3.crt"), live_crt);	/* key still server2's */
	CHECK_INT(tls_server_reload(ts, NULL, err, sizeof err), -EINVAL);
	CHECK_HAS(err, "live.key' does not match certificate '");
	hs_run(&h);
	CHECK_STR(h.server_cn, "localhost-2");
	copy_file(t_path("server3.key"), live_key);
	CHECK_INT(tls_server_reload(ts, NULL, err, sizeof err), 0);
	hs_run(&h);
	CHECK_STR(h.server_cn, "localhost-3");

	TEST_START("reload: new settings (client auth required) apply to new handshakes");
	cfg.cert_file = t_path("server.crt");
	cfg.key_file = t_path("server.key");
	cfg.ca_file = t_path("ca.crt");
	cfg.client_auth = TLS_CLIENT_AUTH_REQUIRED;
	CHECK_INT(tls_server_reload(ts, &cfg, err, sizeof err), 0);
	hs_run(&h);
	CHECK(h.srv_rc != 0);
	h.cctx = client;
	hs_run(&h);
	CHECK_INT(h.srv_rc, 0);
	CHECK_STR(h.server_cn, "localhost");
	CHECK_STR(h.principal, "cn:backup-host.example");
	cfg.key_file = t_path("nonexistent.key");
	CHECK_INT(tls_server_reload(ts, &cfg, err, sizeof err), -EINVAL);
	CHECK_HAS(err, "cannot load private key '");
	CHECK_HAS(err, "nonexistent.key': error:");
	CHECK_INT(tls_server_reload(ts, NULL, err, sizeof err), 0);	/* same files as the last good */
	hs_run(&h);
	CHECK_INT(h.srv_rc, 0);

	TEST_START("reload: a CA taken away stops its clients at once");
	cfg.key_file = t_path("server.key");
	cfg.ca_file = t_path("rogue.crt");
	CHECK_INT(tls_server_reload(ts, &cfg, err, sizeof err), 0);
	hs_run(&h);
	CHECK_INT(h.srv_rc, -EPROTO);
	CHECK_HAS(h.srv_err, "TLS handshake failed: certificate verify failed: ");
	cfg.ca_file = t_path("ca.crt");
	CHECK_INT(tls_server_reload(ts, &cfg, err, sizeof err), 0);

	TEST_START("reload: the established connection keeps its context");
	CHECK(echo(old.cli_ssl, "still here"));
	CHECK(SSL_get_SSL_CTX(old.srv_ssl) != NULL);
	hs_finish(&old);

	tls_server_free(ts);
	SSL_CTX_free(anon);
	SSL_CTX_free(client);
}

static void test_config_errors(void)
{
	struct tls_server_config cfg = {
		.cert_file = t_path("server.crt"), .key_file = t_path("server.key"),
		.client_auth = TLS_CLIENT_AUTH_REQUIRED,
	};
	struct tls_client_config ccfg = { .ca_file = t_path("missing-ca.crt") };
	enum tls_client_auth auth;
	struct tls_server *ts = (struct tls_server *)&cfg;
	SSL_CTX *ctx = (SSL_CTX *)&cfg;
	char err[512];

	TEST_START("configuration errors say what is wrong");
	CHECK_INT(tls_server_new(&ts, &cfg, err, sizeof err), -EINVAL);
	CHECK(ts == NULL);
	CHECK_STR(err, "client authentication 'required' needs a CA file (--tls-ca)");
	cfg.client_auth = TLS_CLIENT_AUTH_NONE;
	cfg.cert_file = t_path("missing.crt");
	CHECK_INT(tls_server_new(&ts, &cfg, err, sizeof err), -EINVAL);
	CHECK_HAS(err, "missing.crt': error:");
	CHECK_HAS(err, "No such file or directory");
	cfg.cert_file = t_path("empty.pem");
	CHECK_INT(tls_server_new(&ts, &cfg, err, sizeof err), -EINVAL);
	CHECK_HAS(err, "cannot load certificate chain");
	cfg.cert_file = NULL;
	CHECK_INT(tls_server_new(&ts, &cfg, err, sizeof err), -EINVAL);
	CHECK_STR(err, "TLS needs a certificate and a key (--tls-cert, --tls-key)");
	cfg.cert_file = t_path("server.crt");
	cfg.ca_file = t_path("empty.pem");
	cfg.client_auth = TLS_CLIENT_AUTH_OPTIONAL;
	CHECK_INT(tls_server_new(&ts, &cfg, err, sizeof err), -EINVAL);
	CHECK_HAS(err, "empty.pem'");
	CHECK_INT(tls_client_ctx_new(&ctx, &ccfg, err, sizeof err), -EINVAL);
	CHECK(ctx == NULL);
	CHECK_HAS(err, "cannot load CA file '");
	ccfg.ca_file = t_path("ca.crt");
	ccfg.key_file = t_path("client.key");
	CHECK_INT(tls_client_ctx_new(&ctx, &ccfg, err, sizeof err), -EINVAL);
	CHECK_STR(err, "a TLS key without a certificate (--tls-cert)");
	ccfg.cert_file = t_path("client.crt");
	ccfg.key_file = t_path("server.key");
	CHECK_INT(tls_client_ctx_new(&ctx, &ccfg, err, sizeof err), -EINVAL);
	CHECK_HAS(err, "does not match certificate");

	CHECK_INT(tls_client_auth_parse("none", &auth), 0);
	CHECK_INT(auth, TLS_CLIENT_AUTH_NONE);
	CHECK_INT(tls_client_auth_parse("optional", &auth), 0);
	CHECK_INT(auth, TLS_CLIENT_AUTH_OPTIONAL);
	CHECK_INT(tls_client_auth_parse("required", &auth), 0);
	CHECK_INT(auth, TLS_CLIENT_AUTH_REQUIRED);
	CHECK_INT(tls_client_auth_parse("yes", &auth), -EINVAL);
	tls_server_free(NULL);
	CHECK_INT(ERR_peek_error(), 0);		/* no error left behind in the queue */
}

static void test_timeout(void)
{
	struct tls_server *ts = server(t_path("server.crt"), t_path("server.key"), TLS_CLIENT_AUTH_NONE);
	struct timespec t0, t1;
	char err[256];
	SSL *ssl = tls_server_ssl_new(ts);
	long ms;
	int sv[2], rc;

	TEST_START("a handshake that never comes times out, and the fd stays blocking");
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	SSL_set_fd(ssl, sv[0]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = tls_handshake(ssl, 300, err, sizeof err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	CHECK_INT(rc, -ETIMEDOUT);
	CHECK_STR(err, "TLS handshake timed out after 300 ms");
	CHECK(ms >= 290 && ms < 3000);
	CHECK((fcntl(sv[0], F_GETFL) & O_NONBLOCK) == 0);

	TEST_START("a peer that hangs up mid-handshake is a clean error");
	SSL_free(ssl);
	ssl = tls_server_ssl_new(ts);
	SSL_set_fd(ssl, sv[1]);
	close(sv[0]);
	rc = tls_handshake(ssl, 1000, err, sizeof err);
	CHECK_INT(rc, -ECONNRESET);
	CHECK_STR(err, "TLS handshake failed: connection closed by peer");
	SSL_free(ssl);
	close(sv[1]);
	tls_server_free(ts);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CERTDIR (made by tests/security/gen-certs.sh)\n", argv[0]);
		return 2;
	}
	t_dir = argv[1];
	/* a peer that hangs up must be an error, not a signal (the daemon ignores it too) */
	signal(SIGPIPE, SIG_IGN);
	test_basic();
	test_client_auth();
	test_versions_and_sessions();
	test_reload();
	test_config_errors();
	test_timeout();
	return t_done("test_tls");
}
