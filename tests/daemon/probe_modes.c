/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/probe_modes.c - semd_probe's load modes (--fifo, --many,
 * --burst, --timeout, --sessions, --flood, --idle, --latency, --watchers;
 * semd_probe.c tells what each does): many connections at once, each step
 * bounded in time.
 *//*
 * tests/daemon/semd_probe.c - a small client that speaks semd's protocol for
 * the daemon's shell tests (independent of libsemclient on purpose).
 *
 *   semd_probe ADDR CMD...     run commands on one connection, print replies
 *   semd_probe --fifo ADDR N   N waiters on N connections are granted in order
 *   semd_probe --many ADDR N   N connections at once, each served
 *   semd_probe --timeout ADDR MS  measure how late a TIMEOUT comes
 *   semd_probe --burst ADDR N  N connections at once, over max-connections
 *                              too: counts those served and those closed
 *   semd_probe --sessions ADDR N LEASE_MS  N x (connect, Hello with a
 *                              lease, close): the Hellos' reply codes
 *   semd_probe --flood ADDR CONNS N HOLD_MS TEMPLATE  CONNS connections
 *                              send N requests each (TEMPLATE, %d a unique
 *                              number), kept open HOLD_MS: the reply codes
 *                              (FLOOD_READ_MS: the wait for one, 10 s)
 *   semd_probe --idle ADDR N HOLD_MS  N connections with Hello, kept HOLD_MS
 *   semd_probe --latency ADDR N GAP_MS  N pings: p50/p99 round trip
 *   semd_probe --watchers ADDR W NAME N  W connections watch NAME while
 *                              one more does N down/up pairs on it: the
 *                              events each watcher read (4 per pair), and
 *                              how long the pairs took with them
 *   semd_probe --stress ADDR CONNS K MS SEED
 *                              CONNS connections race for a name of limit K
 *                              for MS ms (downs with and without timeouts,
 *                              disconnects while waiting and holding):
 *                              never more than K held, every fencing token
 *                              unique, and all K permits free at the end
 *
 * ADDR is unix:PATH or tcp:HOST:PORT (tcp:[::1]:PORT). Commands, one argument
 * each: "hello [lease=MS] [resume=SID secret=HEX] [version=V]",
 * "down NAME [n=N] [timeout=MS] [lease=MS] [id=ID] [nowait]",
 * "up NAME [n=N] [permit=P]", "create NAME LIMIT [signal] [ine]",
 * "info NAME", "list [prefix=P] [after=A] [max=M]", "delete NAME [force]",
 * "setlimit NAME L", "ping [PAYLOAD]", "stats", "detach", "validate NAME TOKEN",
 * "cancel ID", "release NAME PERMIT", "wait ID", "read", "sleep MS",
 * "until FILE" (wait up to a minute for FILE to exist),
 * "create NAME LIMIT rate=R period=MS burst=B" (LIMIT 0: rate-only),
 * "setrate NAME R [period=MS] [burst=B]", "multi NAME[:N],NAME[:N]...
 * [timeout=MS] [lease=MS]", "watch NAME [prefix]", "renew NAME [permit=P]
 * [lease=MS]", "holds [principal=P]", "where ID",
 * "raw HEX" (bytes as they are), "slow" (toggle: write requests one byte
 * at a time), "expect-eof". Names may be given as hex:HEX. Every wait is bounded
 * (10 s). Exit 0, or 2 on a timeout or I/O error, 3 if it cannot connect.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto/frame.h"
#include "proto/semd.pb-c.h"
#include "tests/common/io.h"
#include "tests/common/req.h"
#include "tests/daemon/probe.h"
/* N waiters on N connections: granted strictly in arrival order. */
int mode_fifo(const char *addr, int n)
{
	struct pconn **cs = p_open_many(addr, n + 1);
	Semd__Reply *r;
	char name[64];
	int i, bad = 0;

	if (cs == NULL)
		return 2;
	snprintf(name, sizeof name, "fifo/%d", (int)getpid());
	if (p_down(cs[0], name, -1) == 0 || (r = p_read(cs[0], WAIT_MS)) == NULL ||
	    r->code != 0) {
		printf("first down failed\n");
		return 2;
	}
	semd__reply__free_unpacked(r, NULL);
	for (i = 1; i <= n; i++) {
		/* The ping answer proves the down is queued before the next. */
		if (p_down(cs[i], name, -1) == 0 || p_sync(cs[i]) != 0) {
			printf("connection %d: down not queued\n", i);
			return 2;
		}
	}
	if (p_up(cs[0], name) != 0) {
		printf("up failed\n");
		return 2;
	}
	for (i = 1; i <= n; i++) {
		/* Nobody later may have been granted before i. */
		r = p_read(cs[i], WAIT_MS);
		if (r == NULL || r->code != 0 || r->body_case != SEMD__REPLY__BODY_GRANT) {
			printf("connection %d: no grant\n", i);
			return 2;
		}
		semd__reply__free_unpacked(r, NULL);
		if (i < n) {
			struct pollfd pfd = { cs[i + 1]->fd, POLLIN, 0 };

			if (poll(&pfd, 1, 0) > 0) {
				printf("connection %d has data before %d released\n",
				    i + 1, i);
				bad++;
			}
		}
		if (p_up(cs[i], name) != 0) {
			printf("connection %d: up failed\n", i);
			return 2;
		}
	}
	printf("fifo %d waiters granted in order, %d out of order\n", n, bad);
	p_close_many(cs, n + 1);
	return bad ? 1 : 0;
}

/* n connections open at once, each doing a down/up and a ping. */
int mode_many(const char *addr, int n)
{
	struct rlimit rl;
	struct pconn **cs;
	Semd__Reply *r;
	char name[64];
	int i, ok = 0;

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < (rlim_t)n + 64) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)n + 64 ? rl.rlim_max : (rlim_t)n + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	cs = p_open_many(addr, n);
	if (cs == NULL)
		return 2;
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof name, "many/%d", i % 10);
		if (p_down(cs[i], name, 0) == 0)
			return 2;
	}
	for (i = 0; i < n; i++) {
		r = p_read(cs[i], WAIT_MS);
		if (r == NULL) {
			printf("connection %d: no reply\n", i);
			return 2;
		}
		/* ten names, limit 1: ten grants, the rest WOULD_BLOCK */
		if (r->code == SEMD__CODE__OK || r->code == SEMD__CODE__WOULD_BLOCK)
			ok++;
		semd__reply__free_unpacked(r, NULL);
		if (p_sync(cs[i]) != 0) {
			printf("connection %d: no pong\n", i);
			return 2;
		}
	}
	printf("many %d connections open, %d served\n", n, ok);
	p_close_many(cs, n);
	return ok == n ? 0 : 1;
}

/* n connections at once, some maybe refused: how many served, how many cut. */
int mode_burst(const char *addr, int n)
{
	struct req q;
	struct pconn **cs;
	Semd__Reply *r;
	int i, served = 0, closed = 0, other = 0;

	p_nofile(n);
	if ((cs = p_connect_many(addr, n)) == NULL)
		return 2;
	req_make(&q, 1, SEMD__REQUEST__OP_HELLO, "version=%d", 1);
	/* A refused connection may already be closed: a failed write counts as cut. */
	for (i = 0; i < n; i++)
		if (p_send(cs[i], &q.r) != 0)
			cs[i]->eof = true;
	for (i = 0; i < n; i++) {
		r = cs[i]->eof ? NULL : p_read(cs[i], WAIT_MS);
		if (r != NULL && r->code == SEMD__CODE__OK)
			served++;
		else if ((r == NULL && cs[i]->eof) ||
		    (r != NULL && r->code == SEMD__CODE__RESOURCE_EXHAUSTED))
			closed++;
		else
			other++;
		if (r != NULL)
			semd__reply__free_unpacked(r, NULL);
	}
	printf("burst %d connections: %d served, %d refused or closed, %d other\n", n,
	    served, closed, other);
	p_close_many(cs, n);
	return other == 0 ? 0 : 1;
}

/* How late does the TIMEOUT of a down with timeout ms come? */
int mode_timeout(const char *addr, int ms)
{
	struct pconn **cs = p_open_many(addr, 2);
	Semd__Reply *r;
	char name[64];
	double t0, dt;

	if (cs == NULL)
		return 2;
	snprintf(name, sizeof name, "timeout/%d", (int)getpid());
	if (p_down(cs[0], name, -1) == 0 || (r = p_read(cs[0], WAIT_MS)) == NULL)
		return 2;
	semd__reply__free_unpacked(r, NULL);
	t0 = now_ms();
	if (p_down(cs[1], name, ms) == 0 || (r = p_read(cs[1], ms + WAIT_MS)) == NULL)
		return 2;
	dt = now_ms() - t0;
	printf("timeout %d ms: code=%s after %.2f ms (error %+.2f ms)\n", ms,
	    code_name(r->code), dt, dt - ms);
	semd__reply__free_unpacked(r, NULL);
	p_close_many(cs, 2);
	return 0;
}


/* Count one reply (NULL: none came). */
void tally_add(struct tally *t, const Semd__Reply *r)
{
	int k;

	if (r == NULL) {
		t->none++;
		return;
	}
	k = r->code >= 0 && r->code < 16 ? r->code : 15;
	if (t->n[k]++ == 0 && r->message != NULL)
		snprintf(t->msg[k], sizeof t->msg[k], "%s", r->message);
}

/* Print "CODE=n ..." and the first message of each code that is not OK. */
void tally_print(const char *what, const struct tally *t)
{
	int k;

	printf("%s:", what);
	for (k = 0; k < 16; k++)
		if (t->n[k] > 0)
			printf(" %s=%d", code_name(k), t->n[k]);
	printf(" none=%d\n", t->none);
	for (k = 1; k < 16; k++)
		if (t->n[k] > 0)
			printf("first %s: %s\n", code_name(k), t->msg[k]);
}

/*
 * --sessions ADDR N LEASE_MS: N times connect, Hello with a lease, close
 * (the session lingers for its lease): the Hello replies' codes.
 */
int mode_sessions(const char *addr, int n, int lease_ms)
{
	struct tally t;
	struct pconn *c = calloc(1, sizeof *c);
	char line[64];
	Semd__Reply *r;
	int i;

	if (c == NULL)
		return 2;
	memset(&t, 0, sizeof t);
	snprintf(line, sizeof line, "hello lease=%d nowait", lease_ms);
	for (i = 0; i < n; i++) {
		char cmd[64];

		memset(c, 0, sizeof *c);
		c->next_id = 1;
		c->fd = p_connect(addr);
		memcpy(cmd, line, sizeof cmd);
		if (c->fd < 0 || p_command(c, cmd) != 0) {
			t.none++;
		} else {
			r = p_read(c, WAIT_MS);
			tally_add(&t, r);
			if (r != NULL)
				semd__reply__free_unpacked(r, NULL);
		}
		if (c->fd >= 0)
			close(c->fd);
	}
	tally_print("sessions", &t);
	free(c);
	return 0;
}

/*
 * --flood ADDR CONNS N HOLD_MS TEMPLATE: CONNS connections (Hello each)
 * send N requests each, TEMPLATE with %d replaced by a number unique
 * across them ("down atk/%d lease=86400000"), in batches of 256; then
 * keep the connections open HOLD_MS before closing. Prints the codes of
 * the replies (and of the Hellos).
 */
int mode_flood(const char *addr, int conns, int n, int hold_ms,
    const char *tmpl)
{
	struct tally t, th;
	struct pconn **cs;
	char line[512];
	Semd__Reply *r;
	int i, j, b, sent;
	/* FLOOD_READ_MS: how long to wait for a reply (queued downs: short) */
	int read_ms = getenv("FLOOD_READ_MS") != NULL ?
	    atoi(getenv("FLOOD_READ_MS")) : WAIT_MS;

	memset(&t, 0, sizeof t);
	memset(&th, 0, sizeof th);
	p_nofile(conns);
	if ((cs = p_alloc_many(conns)) == NULL)
		return 2;
	for (i = 0; i < conns; i++) {
		cs[i]->fd = p_connect(addr);
		snprintf(line, sizeof line, "hello nowait");
		if (cs[i]->fd < 0 || p_command(cs[i], line) != 0) {
			th.none++;
			continue;
		}
		r = p_read(cs[i], WAIT_MS);
		tally_add(&th, r);
		if (r == NULL || r->code != SEMD__CODE__OK) {
			close(cs[i]->fd);
			cs[i]->fd = -1;
		}
		if (r != NULL)
			semd__reply__free_unpacked(r, NULL);
	}
	for (i = 0; i < conns; i++) {
		if (cs[i]->fd < 0)
			continue;
		for (j = 0; j < n; j += 256) {
			sent = 0;
			for (b = j; b < n && b < j + 256; b++) {
				const char *pct = strstr(tmpl, "%d");
				int len = pct == NULL ?
				    snprintf(line, sizeof line, "%s", tmpl) :
				    snprintf(line, sizeof line, "%.*s%d%s",
				    (int)(pct - tmpl), tmpl, i * n + b, pct + 2);

				if (len < 0 || (size_t)len + 8 >= sizeof line)
					return 2;
				strcat(line, " nowait");
				if (p_command(cs[i], line) != 0)
					break;
				sent++;
			}
			for (b = 0; b < sent; b++) {
				r = p_read(cs[i], read_ms);
				if (r == NULL) {
					/* the rest wait (queued downs) or never come */
					t.none += sent - b;
					break;
				}
				tally_add(&t, r);
				semd__reply__free_unpacked(r, NULL);
			}
		}
	}
	tally_print("hellos", &th);
	tally_print("flood", &t);
	if (hold_ms > 0)
		usleep((useconds_t)hold_ms * 1000);
	p_close_many(cs, conns);
	return 0;
}

/*
 * --idle ADDR N HOLD_MS: N connections at once, Hello on each, kept
 * HOLD_MS: how many were served and how many refused (and why).
 */
int mode_idle(const char *addr, int n, int hold_ms)
{
	return mode_flood(addr, n, 0, hold_ms, "ping");
}

/* Sort order of doubles. */
static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * --latency ADDR N GAP_MS: one connection, N pings GAP_MS apart, each
 * timed: p50, p99 and the worst round trip in microseconds. A ping with
 * no pong within 10 s counts as failed.
 */
int mode_latency(const char *addr, int n, int gap_ms)
{
	struct pconn *c = calloc(1, sizeof *c);
	double *rtt = calloc((size_t)n + 1, sizeof *rtt), t0;
	int i, got = 0, failed = 0;

	if (c == NULL || rtt == NULL)
		return 2;
	c->next_id = 1;
	c->fd = p_connect(addr);
	if (c->fd < 0 || p_hello(c) != 0) {
		printf("latency: cannot connect or say hello\n");
		return 3;
	}
	for (i = 0; i < n; i++) {
		t0 = now_ms();
		if (p_sync(c) != 0) {
			failed++;
			break;
		}
		rtt[got++] = (now_ms() - t0) * 1000;
		if (gap_ms > 0)
			usleep((useconds_t)gap_ms * 1000);
	}
	qsort(rtt, (size_t)got, sizeof *rtt, dbl_cmp);
	printf("latency n=%d p50_us=%.0f p99_us=%.0f max_us=%.0f failed=%d\n", got,
	    got ? rtt[got / 2] : 0, got ? rtt[(got * 99) / 100 < got ? (got * 99) / 100 : got - 1] : 0,
	    got ? rtt[got - 1] : 0, failed);
	close(c->fd);
	free(c);
	free(rtt);
	return failed == 0 ? 0 : 1;
}

/* Read what is there on a watcher (poll said so); count its events. */
static int watchers_drain(struct pconn *c, uint64_t *events)
{
	Semd__Reply *r;
	size_t plen;
	ssize_t n;

	n = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
	if (n <= 0)
		return -1;
	c->len += (size_t)n;
	while (frame_peek(c->buf, c->len, sizeof c->buf - FRAME_HDR, &plen) == 1) {
		r = semd__reply__unpack(NULL, plen, c->buf + FRAME_HDR);
		memmove(c->buf, c->buf + FRAME_HDR + plen, c->len - FRAME_HDR - plen);
		c->len -= FRAME_HDR + plen;
		if (r == NULL)
			return -1;
		if (r->body_case == SEMD__REPLY__BODY_WATCH_EVENT)
			(*events)++;
		semd__reply__free_unpacked(r, NULL);
	}
	return 0;
}

/*
 * --watchers: nw connections watch name while one more makes n down/up
 * pairs on it (a round trip each), reading the watchers as it goes, from
 * one poll loop. Prints the pairs' rate and what every watcher read; each
 * must read 2 events a pair (its grant and its release). Bounded: every
 * wait is WAIT_MS at most.
 */
int mode_watchers(const char *addr, int nw, const char *name, int n)
{
	struct pconn **cs = p_open_many(addr, nw + 1), *wk;
	struct pollfd *pf = calloc((size_t)nw + 1, sizeof *pf);
	uint64_t *events = calloc((size_t)nw + 1, sizeof *events), id, lo = UINT64_MAX;
	struct req q;
	Semd__Reply *r;
	double t0, t1, until;
	int i, k, bad = 0, got;

	if (cs == NULL || pf == NULL || events == NULL)
		return 2;
	wk = cs[nw];
	for (i = 0; i < nw; i++) {
		req_make(&q, 0, SEMD__REQUEST__OP_WATCH, "name=%s", name);
		if (p_send_next(cs[i], &q) == 0 || (r = p_read(cs[i], WAIT_MS)) == NULL) {
			printf("watcher %d: no answer to its watch\n", i);
			return 2;
		}
		semd__reply__free_unpacked(r, NULL);
	}
	t0 = now_ms();
	for (k = 0; k < 2 * n && bad == 0; k++) {
		if (k % 2 == 0)
			req_make(&q, 0, SEMD__REQUEST__OP_DOWN, "name=%s timeout_ms=%d", name, -1);
		else
			req_make(&q, 0, SEMD__REQUEST__OP_UP, "name=%s", name);
		if ((id = p_send_next(wk, &q)) == 0) {
			bad++;
			break;
		}
		/* Until its answer, reading every watcher that has something. */
		for (got = 0, until = now_ms() + WAIT_MS; !got && now_ms() < until;) {
			for (i = 0; i <= nw; i++) {
				pf[i].fd = cs[i]->fd;
				pf[i].events = POLLIN;
			}
			if (poll(pf, (nfds_t)nw + 1, WAIT_MS) <= 0)
				break;
			for (i = 0; i < nw; i++)
				if (pf[i].revents && watchers_drain(cs[i], &events[i]) != 0)
					bad++;
			if (pf[nw].revents && (r = p_read(wk, WAIT_MS)) != NULL) {
				got = r->id == id && r->code == SEMD__CODE__OK;
				semd__reply__free_unpacked(r, NULL);
			}
		}
		if (!got)
			bad++;
	}
	t1 = now_ms();
	/* The last events, up to WAIT_MS. */
	for (until = now_ms() + WAIT_MS; bad == 0 && now_ms() < until;) {
		for (i = 0, lo = UINT64_MAX; i < nw; i++)
			lo = events[i] < lo ? events[i] : lo;
		if (lo >= 2 * (uint64_t)n)
			break;
		for (i = 0; i < nw; i++) {
			pf[i].fd = cs[i]->fd;
			pf[i].events = POLLIN;
		}
		if (poll(pf, (nfds_t)nw, 100) < 0)
			break;
		for (i = 0; i < nw; i++)
			if (pf[i].revents && watchers_drain(cs[i], &events[i]) != 0)
				bad++;
	}
	for (i = 0, lo = UINT64_MAX; i < nw; i++)
		lo = events[i] < lo ? events[i] : lo;
	if (nw == 0)
		lo = 0;
	printf("watchers=%d pairs=%d ms=%.1f pairs_per_s=%.0f events_each_min=%" PRIu64
	    " events_per_s=%.0f%s\n", nw, n, t1 - t0, n / ((t1 - t0) / 1000),
	    lo, (double)lo * nw / ((t1 - t0) / 1000),
	    nw > 0 && lo != 2 * (uint64_t)n ? " MISSING" : "");
	p_close_many(cs, nw + 1);
	free(pf);
	free(events);
	return bad == 0 && (nw == 0 || lo == 2 * (uint64_t)n) ? 0 : 1;
}
