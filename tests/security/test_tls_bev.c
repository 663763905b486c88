/* SPDX-License-Identifier: BSD-2-Clause */
/* tests/security/test_tls_bev.c CERTDIR - a libevent loop serving a TLS echo
 * over loopback TCP with real bufferevent_openssl on both sides. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "security/tls_bev.h"
#include "tests/security/check.h"

#define NCLIENTS 10
#define PAYLOAD (64 * 1024)

struct server {
	struct event_base *base;
	struct tls_server *ts;
	struct evconnlistener *listener;
	struct sockaddr_in addr;
	int hs_timeout_ms;
	int ready, failed, closed;
	char why[512];
	char principal[ACL_PRINCIPAL_MAX];
	long long fail_ms;		/* when the last failure was reported */
};

struct client {
	struct bufferevent *bev;
	const unsigned char *payload;
	size_t got;
	bool ready, done, failed, mismatch;
	char why[512];
};

static unsigned char payload[PAYLOAD];
/* BEV_OPT_* for both sides: run with and without deferred callbacks */
static int bev_opts;

/* Milliseconds on the monotonic clock. */
static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Server: echo whatever arrives. */
static void srv_read(struct bufferevent *bev, void *arg)
{
	evbuffer_add_buffer(bufferevent_get_output(bev), bufferevent_get_input(bev));
}

/* Server: the client went away. */
static void srv_event(struct bufferevent *bev, short what, void *arg)
{
	struct server *s = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
		s->closed++;
		bufferevent_free(bev);
	}
}

/* Server: handshake done, this is what the daemon would do. */
static void srv_ready(struct bufferevent *bev, void *arg)
{
	struct server *s = arg;

	s->ready++;
	tls_peer_principal(bufferevent_openssl_get_ssl(bev), s->principal, sizeof s->principal);
	bufferevent_setcb(bev, srv_read, NULL, srv_event, s);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

/* Server: handshake failed (the bufferevent is gone already). */
static void srv_fail(const char *why, void *arg)
{
	struct server *s = arg;

	s->failed++;
	s->fail_ms = now_ms();
	snprintf(s->why, sizeof s->why, "%s", why);
}

/* Server: a new TCP connection. */
static void srv_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int len, void *arg)
{
	struct server *s = arg;
	char err[256];

	if (tls_bev_accept(s->base, s->ts, fd, bev_opts, s->hs_timeout_ms, srv_ready, srv_fail, s,
	    err, sizeof err) != 0) {
		s->failed++;
		snprintf(s->why, sizeof s->why, "accept: %s", err);
	}
}

/* Client: compare what comes back with what was sent. */
static void cli_read(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	unsigned char buf[4096];
	int n;

	while ((n = evbuffer_remove(in, buf, sizeof buf)) > 0) {
		if (c->got + (size_t)n > PAYLOAD || memcmp(buf, c->payload + c->got, (size_t)n) != 0)
			c->mismatch = true;
		c->got += (size_t)n;
	}
	if (c->got >= PAYLOAD) {
		c->done = true;
		bufferevent_free(bev);
		c->bev = NULL;
	}
}

/* Client: the connection broke after the handshake. */
static void cli_event(struct bufferevent *bev, short what, void *arg)
{
	struct client *c = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		c->failed = true;
		snprintf(c->why, sizeof c->why, "connection lost after the handshake");
		bufferevent_free(bev);
		c->bev = NULL;
	}
}

/* Client: handshake done, send the payload. */
static void cli_ready(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;

	c->ready = true;
	c->bev = bev;
	bufferevent_setcb(bev, cli_read, NULL, cli_event, c);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	bufferevent_write(bev, c->payload, PAYLOAD);
}

/* Client: handshake failed. */
static void cli_fail(const char *why, void *arg)
{
	struct client *c = arg;

	c->failed = true;
	snprintf(c->why, sizeof c->why, "%s", why);
}

/* A no-op timer that keeps EVLOOP_ONCE from sleeping too long. */
static void tick(evutil_socket_t fd, short what, void *arg)
{
}

/* Run the loop until pred(arg) or timeout_ms; returns pred's last value. */
static bool run_until(struct event_base *base, bool (*pred)(void *), void *arg, int timeout_ms)
{
	struct timeval tv = { 0, 20000 };
	struct event *t = event_new(base, -1, EV_PERSIST, tick, NULL);
	long long deadline = now_ms() + timeout_ms;
	bool ok;

	event_add(t, &tv);
	while (!(ok = pred(arg)) && now_ms() < deadline)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(t);
	return ok;
}

struct wait_clients {
	struct client *c;
	int n;
	struct server *s;
	int want_srv_failed;
};

/* Every client finished (either way), and the server saw what it should. */
static bool clients_finished(void *arg)
{
	struct wait_clients *w = arg;
	int i;

	for (i = 0; i < w->n; i++) {
		if (!w->c[i].done && !w->c[i].failed)
			return false;
	}
	return w->s->failed >= w->want_srv_failed;
}

/* The server has reported at least one more failure. */
static bool server_failed(void *arg)
{
	struct wait_clients *w = arg;

	return w->s->failed >= w->want_srv_failed;
}

/* A client context trusting our CA, with an optional certificate. */
static SSL_CTX *client_ctx(const char *cert, const char *key)
{
	struct tls_client_config cfg = { .ca_file = t_path("ca.crt"), .cert_file = cert, .key_file = key };
	char err[512];
	SSL_CTX *ctx;

	if (tls_client_ctx_new(&ctx, &cfg, err, sizeof err) != 0) {
		fprintf(stderr, "FAIL client context: %s\n", err);
		exit(1);
	}
	return ctx;
}

/* A plain TCP connection to the server (no TLS at all). */
static int raw_connect(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof *sa) != 0) {
		perror("connect");
		exit(2);
	}
	return fd;
}

static void test_echo(struct server *s)
{
	SSL_CTX *ctx = client_ctx(t_path("client.crt"), t_path("client.key"));
	struct client c[NCLIENTS];
	struct wait_clients w = { c, NCLIENTS, s, 0 };
	char err[256];
	int i, started = 0, done = 0, good = 0;

	TEST_START(bev_opts == 0 ? "10 concurrent mutual-TLS echo clients, 64 KiB each" :
	    "the same with deferred callbacks");
	memset(c, 0, sizeof c);
	s->ready = 0;
	for (i = 0; i < NCLIENTS; i++) {
		c[i].payload = payload;
		if (tls_bev_connect(s->base, ctx, "localhost", (struct sockaddr *)&s->addr,
		    sizeof s->addr, bev_opts, 5000, cli_ready, cli_fail, &c[i], err, sizeof err) == 0)
			started++;
		else
			fprintf(stderr, "connect %d: %s\n", i, err);
	}
	CHECK_INT(started, NCLIENTS);
	CHECK(run_until(s->base, clients_finished, &w, 10000));
	for (i = 0; i < NCLIENTS; i++) {
		done += c[i].done;
		good += c[i].done && !c[i].mismatch && c[i].got == PAYLOAD;
		if (c[i].failed)
			fprintf(stderr, "client %d: %s\n", i, c[i].why);
	}
	CHECK_INT(done, NCLIENTS);
	CHECK_INT(good, NCLIENTS);
	CHECK_INT(s->ready, NCLIENTS);
	CHECK_INT(s->failed, 0);
	CHECK_STR(s->principal, "cn:backup-host.example");
	SSL_CTX_free(ctx);
}

/* One client without a certificate that must fail against s, connecting to host. */
static void failing_client(struct server *s, const char *host, struct client *c)
{
	SSL_CTX *ctx = client_ctx(NULL, NULL);
	struct wait_clients w = { c, 1, s, s->failed + 1 };
	char err[256];

	CHECK_INT(tls_bev_connect(s->base, ctx, host, (struct sockaddr *)&s->addr,
	    sizeof s->addr, 0, 5000, cli_ready, cli_fail, c, err, sizeof err), 0);
	CHECK(run_until(s->base, clients_finished, &w, 5000));
	CHECK(c->failed);
	SSL_CTX_free(ctx);
}

static void test_wrong_host(struct server *s)
{
	struct client c = { .payload = payload };

	TEST_START("wrong host name: both sides fail, the client says why");
	failing_client(s, "otherhost", &c);
	CHECK(!c.ready);
	CHECK_STR(c.why, "TLS handshake failed: certificate verify failed: hostname mismatch");
	CHECK_HAS(s->why, "TLS handshake failed");
}

static void test_no_client_cert(struct server *s)
{
	struct client c = { .payload = payload };

	TEST_START("client auth required: a client without a certificate is refused");
	failing_client(s, "localhost", &c);
	CHECK(!c.done);
	CHECK_HAS(s->why, "did not return a certificate");
}

static void test_timeout(struct server *s)
{
	struct wait_clients w = { NULL, 0, s, s->failed + 1 };
	long long t0;
	int fd;

	TEST_START("a handshake that never finishes is cut at the deadline");
	s->hs_timeout_ms = 300;
	t0 = now_ms();
	fd = raw_connect(&s->addr);
	CHECK_INT(write(fd, "\x16\x03", 2), 2);	/* the start of a record, then silence */
	CHECK(run_until(s->base, server_failed, &w, 5000));
	CHECK_STR(s->why, "TLS handshake timed out after 300 ms");
	CHECK(s->fail_ms - t0 >= 290 && s->fail_ms - t0 < 3000);
	close(fd);

	TEST_START("plain text instead of TLS is a handshake error");
	w.want_srv_failed = s->failed + 1;
	t0 = now_ms();
	fd = raw_connect(&s->addr);
	CHECK_INT(write(fd, "GET / HTTP/1.0\r\n\r\n", 18), 18);
	CHECK(run_until(s->base, server_failed, &w, 5000));
	CHECK_HAS(s->why, "TLS handshake failed: ");
	CHECK(s->fail_ms - t0 < 290);	/* at once, not at the deadline */
	close(fd);

	TEST_START("a client that connects and hangs up");
	w.want_srv_failed = s->failed + 1;
	fd = raw_connect(&s->addr);
	close(fd);
	CHECK(run_until(s->base, server_failed, &w, 5000));
	CHECK_STR(s->why, "TLS handshake failed: connection closed by peer");
}

static void test_refused(struct event_base *base)
{
	SSL_CTX *ctx = client_ctx(NULL, NULL);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof sa;
	struct client c = { .payload = payload };
	struct server dummy = { 0 };
	struct wait_clients w = { &c, 1, &dummy, 0 };
	char err[256] = "";
	int fd, rc;

	TEST_START("connecting to a closed port fails cleanly");
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_INT(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	CHECK_INT(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);			/* nobody listens there now */
	rc = tls_bev_connect(base, ctx, "localhost", (struct sockaddr *)&sa, sizeof sa, 0, 2000,
	    cli_ready, cli_fail, &c, err, sizeof err);
	if (rc == 0) {
		CHECK(run_until(base, clients_finished, &w, 5000));
		CHECK(c.failed);
		CHECK_HAS(c.why, "TLS handshake failed");
		CHECK_HAS(c.why, "refused");
	} else {
		CHECK_INT(rc, -ECONNREFUSED);
		CHECK_HAS(err, "refused");
	}
	CHECK(!c.ready);
	SSL_CTX_free(ctx);
}

int main(int argc, char **argv)
{
	struct tls_server_config cfg;
	struct server s;
	socklen_t len = sizeof s.addr;
	char err[512];
	size_t i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CERTDIR (made by tests/security/gen-certs.sh)\n", argv[0]);
		return 2;
	}
	t_dir = argv[1];
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < sizeof payload; i++)
		payload[i] = (unsigned char)(i * 7 + i / 251);

	memset(&s, 0, sizeof s);
	cfg.cert_file = t_path("server.crt");
	cfg.key_file = t_path("server.key");
	cfg.ca_file = t_path("ca.crt");
	cfg.client_auth = TLS_CLIENT_AUTH_REQUIRED;
	if (tls_server_new(&s.ts, &cfg, err, sizeof err) != 0) {
		fprintf(stderr, "FAIL server: %s\n", err);
		return 1;
	}
	s.base = event_base_new();
	s.hs_timeout_ms = 5000;
	s.addr.sin_family = AF_INET;
	s.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s.listener = evconnlistener_new_bind(s.base, srv_accept, &s,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128, (struct sockaddr *)&s.addr, sizeof s.addr);
	if (s.listener == NULL ||
	    getsockname(evconnlistener_get_fd(s.listener), (struct sockaddr *)&s.addr, &len) != 0) {
		perror("listen");
		return 2;
	}

	test_echo(&s);
	bev_opts = BEV_OPT_DEFER_CALLBACKS;
	test_echo(&s);
	test_wrong_host(&s);
	test_no_client_cert(&s);
	test_timeout(&s);
	test_refused(s.base);

	evconnlistener_free(s.listener);
	event_base_free(s.base);
	tls_server_free(s.ts);
	return t_done("test_tls_bev");
}
