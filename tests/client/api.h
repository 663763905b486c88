/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/client/api.h - what test_api.c and test_api_sessions.c share: the
 * daemon they start (D), a connected handle, the asynchronous form's
 * callbacks and poll pump, a byte relay between client and daemon that the
 * test can cut (a network failure), connection events, the watchdog.
 */
#ifndef TESTS_CLIENT_API_H
#define TESTS_CLIENT_API_H

#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <fcntl.h>

#include "client/semclient.h"
#include "proto/frame.h"
#include "proto/semd.pb-c.h"
#include "tests/client/daemon.h"

static struct tdaemon D;

/* An info's queue: how many hold and how many wait. */
#define CHECK_QUEUE(in, holders, waiters) do {				\
	CHECK_EQ(holders, (in)->n_holders);				\
	CHECK_EQ(waiters, (in)->n_waiters);				\
} while (0)

/* Connect a handle to addr with a lease. */
static inline struct semc *open_client(const char *addr, uint32_t lease_ms)
{
	struct semc *c = semc_new();
	int r;

	if (c == NULL)
		return NULL;
	semc_set_address(c, addr);
	semc_set_client_name(c, "test_api");
	semc_set_lease(c, lease_ms);
	semc_set_timeout(c, 5000);
	if ((r = semc_connect(c, 5000)) != 0) {
		fprintf(stderr, "connect %s: %s\n", addr, semc_last_message());
		semc_free(c);
		return NULL;
	}
	return c;
}

/* Delete (forced) each of the names, up to NULL. */
static inline void delete_names(struct semc *c, const char *const *names)
{
	for (; *names != NULL; names++)
		CHECK_EQ(0, semc_delete(c, *names, true));
}

/* --- the asynchronous form --------------------------------------------- */

struct async_state {
	int granted, released, failed, cancelled, inside, max_inside;
	uint64_t last_token;
	bool token_order_ok;
};

/* An up completed. */
static inline void on_up(struct semc *c, const struct semc_result *r, void *arg)
{
	struct async_state *s = arg;

	if (r->error == 0)
		s->released++;
	else
		s->failed++;
}

/* A down completed: note it and give the permit back at once. */
static inline void on_down(struct semc *c, const struct semc_result *r, void *arg)
{
	struct async_state *s = arg;

	if (r->error == SEMC_E_CANCELLED) {
		s->cancelled++;
		return;
	}
	if (r->error != 0 || r->grant == NULL) {
		fprintf(stderr, "async down: %d %s\n", r->error, r->message);
		s->failed++;
		return;
	}
	s->granted++;
	if (r->grant->token <= s->last_token)
		s->token_order_ok = false;
	s->last_token = r->grant->token;
	if (semc_up_async(c, "async", 0, r->grant->permit_id, on_up, s) <= 0)
		s->failed++;
}

/* A down completed: count it, keep the permit. */
static inline void on_down_keep(struct semc *c, const struct semc_result *r, void *arg)
{
	struct async_state *s = arg;

	(void)c;
	if (r->error == 0)
		s->granted++;
	else
		s->failed++;
}

/* Pump the handle with poll() until cond holds or ms pass. */
#define PUMP_UNTIL(c, cond, ms) do {					\
	long long end_ = t_now_ms() + (ms);				\
	while (!(cond) && t_now_ms() < end_) {				\
		struct pollfd p_ = { .fd = semc_fd(c), .events = POLLIN }; \
		if (p_.fd >= 0)						\
			poll(&p_, 1, 50);				\
		else							\
			t_sleep_ms(20);					\
		semc_process(c);					\
	}								\
} while (0)

/* --- a byte relay the test can cut (simulates a network failure) ---------- */

struct relay {
	int lfd;
	int port;
	int target_port;
	int ctl[2];
	pthread_t th;
	int pairs[16][2];
	int npairs;
	bool stalled;		/* connections kept, nothing forwarded */
	bool blocked;		/* new connections closed at once */
	bool refuse_up;		/* the next Up: answered as a follower would */
	int refused;		/* Ups so answered */
	atomic_long up;		/* bytes forwarded client -> daemon */
};

/* Connect to 127.0.0.1:port. */
static inline int tcp_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Close every relayed connection. */
static inline void relay_cut_all(struct relay *r)
{
	int i;

	for (i = 0; i < r->npairs; i++) {
		close(r->pairs[i][0]);
		close(r->pairs[i][1]);
	}
	r->npairs = 0;
}

/*
 * With refuse_up, got bytes from a client that are one whole Up request:
 * answer it as a node that does not lead does (UNAVAILABLE, a Redirect
 * naming the relay itself as the leader, the connection then closed) and
 * say so; the Up never reaches the daemon. false: forward them.
 */
static inline bool relay_refuse(struct relay *r, int fd, const uint8_t *buf, size_t got)
{
	Semd__Reply rp = SEMD__REPLY__INIT;
	Semd__Redirect rd = SEMD__REDIRECT__INIT;
	Semd__Request *rq;
	uint8_t out[512];
	char leader[64];
	size_t len;
	bool up;

	if (!r->refuse_up || frame_peek(buf, got, FRAME_MAX_DEFAULT, &len) != 1 ||
	    FRAME_HDR + len != got)
		return false;
	rq = semd__request__unpack(NULL, got - FRAME_HDR, buf + FRAME_HDR);
	if (rq == NULL)
		return false;
	up = rq->op_case == SEMD__REQUEST__OP_UP;
	rp.id = rq->id;
	semd__request__free_unpacked(rq, NULL);
	if (!up)
		return false;
	snprintf(leader, sizeof leader, "tcp:127.0.0.1:%d", r->port);
	rd.leader_id = 1;
	rd.leader = leader;
	rp.code = SEMD__CODE__UNAVAILABLE;
	rp.message = "not the leader";
	rp.body_case = SEMD__REPLY__BODY_REDIRECT;
	rp.redirect = &rd;
	len = semd__reply__get_packed_size(&rp);
	frame_put_header(out, (uint32_t)len);
	semd__reply__pack(&rp, out + FRAME_HDR);
	if (write(fd, out, FRAME_HDR + len) != (ssize_t)(FRAME_HDR + len))
		return false;
	r->refuse_up = false;
	r->refused++;
	return true;
}

/* The relay thread: accept, connect onwards, copy bytes both ways. */
static inline void *relay_main(void *arg)
{
	struct relay *r = arg;
	char buf[16384];

	/* bounded: the test stops it with 'q' */
	for (;;) {
		struct pollfd p[2 + 32];
		int n = 0, i, j;

		p[n++] = (struct pollfd){ .fd = r->ctl[0], .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = r->lfd, .events = POLLIN };
		for (i = 0; i < r->npairs && !r->stalled; i++)
			for (j = 0; j < 2; j++)
				p[n++] = (struct pollfd){ .fd = r->pairs[i][j], .events = POLLIN };
		if (poll(p, (nfds_t)n, 1000) < 0)
			continue;
		if (p[0].revents) {
			char cmd = 0;

			if (read(r->ctl[0], &cmd, 1) != 1 || cmd == 'q') {
				relay_cut_all(r);
				return NULL;
			}
			if (cmd == 'c')
				relay_cut_all(r);
			else if (cmd == 's' || cmd == 'r')
				r->stalled = cmd == 's';
			else if (cmd == 'b' || cmd == 'u')
				r->blocked = cmd == 'b';
			else if (cmd == 'n')
				r->refuse_up = true;
			if (write(r->ctl[0], "k", 1) != 1)
				return NULL;
			continue;
		}
		if (p[1].revents && (r->blocked || r->npairs >= 16)) {
			int a = accept(r->lfd, NULL, NULL);

			if (a >= 0)
				close(a);
			continue;
		}
		if (p[1].revents) {
			int a = accept(r->lfd, NULL, NULL), b;

			if (a >= 0 && (b = tcp_connect(r->target_port)) >= 0) {
				r->pairs[r->npairs][0] = a;
				r->pairs[r->npairs][1] = b;
				r->npairs++;
			} else if (a >= 0) {
				close(a);
			}
			continue;
		}
		for (i = 0; i < r->npairs; i++) {
			for (j = 0; j < 2; j++) {
				ssize_t got;

				if (!p[2 + i * 2 + j].revents)
					continue;
				got = read(r->pairs[i][j], buf, sizeof buf);
				if (got > 0 && j == 0)
					atomic_fetch_add(&r->up, got);
				if (got <= 0 || (j == 0 && relay_refuse(r, r->pairs[i][0],
				    (const uint8_t *)buf, (size_t)got)) ||
				    write(r->pairs[i][!j], buf, (size_t)got) != got) {
					close(r->pairs[i][0]);
					close(r->pairs[i][1]);
					r->pairs[i][0] = r->pairs[r->npairs - 1][0];
					r->pairs[i][1] = r->pairs[r->npairs - 1][1];
					r->npairs--;
					goto next;
				}
			}
		}
next:
		;
	}
}

/* Start a relay to the daemon's TCP port. */
static inline int relay_start(struct relay *r, const char *tcp_addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof sa;

	memset(r, 0, sizeof *r);
	atomic_init(&r->up, 0);
	r->target_port = atoi(strrchr(tcp_addr, ':') + 1);
	r->lfd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (r->lfd < 0 || bind(r->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    listen(r->lfd, 16) != 0 || getsockname(r->lfd, (struct sockaddr *)&sa, &sl) != 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, r->ctl) != 0)
		return -1;
	r->port = ntohs(sa.sin_port);
	return pthread_create(&r->th, NULL, relay_main, r);
}

/* Start a relay (a check of its own) and write its address to addr. */
static inline void relay_open(struct relay *r, char *addr, size_t len)
{
	CHECK(relay_start(r, D.tcp_addr) == 0, "relay");
	snprintf(addr, len, "tcp:127.0.0.1:%d", r->port);
}

/* A client with lease_ms through a new relay, whose address goes to addr. */
static inline struct semc *relay_client(struct relay *r, char *addr, size_t len, uint32_t lease_ms)
{
	relay_open(r, addr, len);
	return open_client(addr, lease_ms);
}

/* Send the relay a command and wait until it is done: c cut every
 * connection, s stall (stop forwarding), r resume, b block new
 * connections, u unblock, n answer the next Up as a follower would. */
static inline void relay_ctl(struct relay *r, char cmd)
{
	char k;

	if (write(r->ctl[1], &cmd, 1) != 1 || read(r->ctl[1], &k, 1) != 1)
		fprintf(stderr, "relay: control failed\n");
}

/* Cut every connection through the relay and wait until it is done. */
static inline void relay_cut(struct relay *r)
{
	relay_ctl(r, 'c');
}

/* Stop the relay. */
static inline void relay_stop(struct relay *r)
{
	if (write(r->ctl[1], "q", 1) == 1)
		pthread_join(r->th, NULL);
	close(r->ctl[0]);
	close(r->ctl[1]);
	close(r->lfd);
}

struct events {
	int disconnected, resumed, reconnected, lost, notices;
	int last_lost_error;
	uint64_t lost_permit;
};

/* Count connection events. */
static inline void on_event(struct semc *c, const struct semc_event *ev, void *arg)
{
	struct events *e = arg;

	switch (ev->type) {
	case SEMC_EV_DISCONNECTED: e->disconnected++; break;
	case SEMC_EV_RESUMED: e->resumed++; break;
	case SEMC_EV_RECONNECTED: e->reconnected++; break;
	case SEMC_EV_HOLD_LOST:
		e->lost++;
		e->last_lost_error = ev->error;
		e->lost_permit = ev->permit_id;
		break;
	case SEMC_EV_NOTICE: e->notices++; break;
	}
}

/* Two sessions that hold a permit each: c of a, c2 of b; their events go
 * to fn with arg1 and arg2. */
static inline void hold_two(struct semc *c, struct semc *c2, semc_event_fn fn, void *arg1, void *arg2,
		     const char *a, struct semc_grant *ga, const char *b, struct semc_grant *gb)
{
	semc_set_event_callback(c, fn, arg1);
	semc_set_event_callback(c2, fn, arg2);
	CHECK_EQ(0, semc_down(c, a, 1, 1000, 0, ga));
	CHECK_EQ(0, semc_down(c2, b, 1, 1000, 0, gb));
}

/* The watchdog: a test that hangs fails, and takes its daemon along. */
static inline void on_alarm(int sig)
{
	static const char msg[] = "FAIL: test_api: watchdog fired after 170 s\n";

	if (write(2, msg, sizeof msg - 1) < 0)
		_exit(2);
	if (D.pid > 0)
		kill(D.pid, SIGKILL);
	_exit(1);
}

/* Arm the watchdog. */
static inline void watchdog_arm(void)
{
	signal(SIGALRM, on_alarm);
	alarm(170);
}

/* Start semd (D) for the tests: 0, or -1 (said). */
static inline int api_daemon_start(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (tdaemon_start(&D, NULL) != 0) {
		fprintf(stderr, "FAIL: cannot start semd (top_builddir=%s)\n",
			getenv("top_builddir") ? getenv("top_builddir") : "unset");
		tdaemon_cleanup(&D);
		return -1;
	}
	return 0;
}

/* Say how many checks were made and failed, stop semd if it was started:
 * main's exit status. */
static inline int api_report(void)
{
	fprintf(stderr, "%d checks, %d failed\n", t_checks, t_failures);
	if (D.dir[0] != '\0')
		tdaemon_cleanup(&D);
	return t_failures ? 1 : 0;
}

#endif
