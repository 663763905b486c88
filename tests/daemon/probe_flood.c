/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/probe_flood.c - semd_probe's floods of one principal
 * (issue 35): many watches on many connections (--watch-flood), and many
 * connections that never read their replies (--unread). Each step is
 * bounded in time; the counts are printed for the shell tests.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/daemon/probe.h"

/* The answer to request id on c (notices before it are skipped), or NULL. */
static Semd__Reply *flood_answer(struct pconn *c, uint64_t id)
{
	double until = now_ms() + WAIT_MS;
	Semd__Reply *r;
	int left;

	while ((left = (int)(until - now_ms())) > 0 &&
	    (r = p_read(c, left)) != NULL) {
		if (r->id == id)
			return r;
		semd__reply__free_unpacked(r, NULL);
	}
	return NULL;
}

/* Hello on a new connection to addr; false (fd closed) if not served. */
static bool flood_hello(struct pconn *c, const char *addr, struct tally *th)
{
	struct req q;
	Semd__Reply *r;
	uint64_t id;
	bool ok;

	if ((c->fd = p_connect(addr)) < 0) {
		th->none++;
		return false;
	}
	req_make(&q, 0, SEMD__REQUEST__OP_HELLO, "version=%u", 1);
	id = p_send_next(c, &q);
	r = id != 0 ? flood_answer(c, id) : NULL;
	tally_add(th, r);
	ok = r != NULL && r->code == SEMD__CODE__OK;
	if (r != NULL)
		semd__reply__free_unpacked(r, NULL);
	if (!ok) {
		close(c->fd);
		c->fd = -1;
	}
	return ok;
}

/* Until stop exists (checked every 50 ms) or ms passed. */
static bool flood_until(const char *stop, double until)
{
	struct stat st;

	return now_ms() < until && (stop == NULL || stat(stop, &st) != 0);
}

/*
 * --watch-flood ADDR CONNS W MS [STOP]: CONNS connections each watch the
 * prefix "" W times, then every one of them is read (and thrown away)
 * until MS ms passed or the file STOP exists. Prints the hellos' and the
 * watches' answers, and the bytes read while draining.
 */
int mode_watch_flood(const char *addr, int conns, int w, int ms,
    const char *stop)
{
	struct tally th, tw;
	struct pconn **cs;
	struct pollfd *pf;
	struct req q;
	uint64_t first, bytes = 0;
	static uint8_t sink[1 << 16];
	double until;
	ssize_t n;
	int i, j;

	memset(&th, 0, sizeof th);
	memset(&tw, 0, sizeof tw);
	if (conns < 1)
		return 2;
	p_nofile(conns);
	if ((cs = p_alloc_many(conns)) == NULL ||
	    (pf = calloc((size_t)conns, sizeof *pf)) == NULL)
		return 2;
	for (i = 0; i < conns; i++) {
		if (!flood_hello(cs[i], addr, &th))
			continue;
		first = cs[i]->next_id;
		for (j = 0; j < w; j++) {
			req_make(&q, 0, SEMD__REQUEST__OP_WATCH, "name=%s prefix=%d",
			    "", 1);
			if (p_send_next(cs[i], &q) == 0)
				break;
		}
		for (j = 0; j < w; j++) {
			Semd__Reply *r = flood_answer(cs[i], first + (uint64_t)j);

			tally_add(&tw, r);
			if (r != NULL)
				semd__reply__free_unpacked(r, NULL);
		}
	}
	tally_print("hellos", &th);
	tally_print("watches", &tw);
	printf("draining\n");
	until = now_ms() + ms;
	while (flood_until(stop, until)) {
		for (i = 0; i < conns; i++) {
			pf[i].fd = cs[i]->fd;
			pf[i].events = POLLIN;
			pf[i].revents = 0;
		}
		if (poll(pf, (nfds_t)conns, 50) < 0 && errno != EINTR)
			break;
		for (i = 0; i < conns; i++) {
			if (pf[i].fd < 0 || pf[i].revents == 0)
				continue;
			n = read(pf[i].fd, sink, sizeof sink);
			if (n > 0) {
				bytes += (uint64_t)n;
			} else if (n == 0 || errno != EINTR) {
				close(cs[i]->fd);
				cs[i]->fd = -1;
			}
		}
	}
	printf("drained: bytes=%" PRIu64 "\n", bytes);
	p_close_many(cs, conns);
	free(pf);
	return 0;
}

/*
 * --unread ADDR CONNS N MS STOP REQUEST: CONNS connections each send
 * REQUEST N times and read none of the answers; they stay open until MS
 * ms passed or the file STOP exists, then close. REQUEST is "ping:SIZE"
 * (a ping of SIZE bytes of payload) or a command ("info NAME"). Prints
 * the hellos' answers and the requests sent.
 */
int mode_unread(const char *addr, int conns, int n, int ms, const char *stop,
    const char *request)
{
	struct tally th;
	struct pconn **cs;
	struct req q;
	char *payload = NULL, line[1024];
	uint64_t sent = 0;
	int i, j, size = -1, small = 4096;
	double until;

	memset(&th, 0, sizeof th);
	p_nofile(conns);
	if (strncmp(request, "ping:", 5) == 0) {
		size = atoi(request + 5);
		if (size < 0 || (payload = malloc((size_t)size + 1)) == NULL)
			return 2;
		memset(payload, 'p', (size_t)size);
	}
	if ((cs = p_alloc_many(conns)) == NULL)
		return 2;
	quiet = true;
	for (i = 0; i < conns; i++) {
		if (!flood_hello(cs[i], addr, &th))
			continue;
		/* What the kernel holds for it is not semd's memory. */
		(void)setsockopt(cs[i]->fd, SOL_SOCKET, SO_RCVBUF, &small,
		    sizeof small);
		for (j = 0; j < n; j++) {
			if (payload != NULL)
				req_make(&q, 0, SEMD__REQUEST__OP_PING,
				    "payload=%.*s", size, payload);
			else
				snprintf(line, sizeof line, "%s nowait", request);
			if (payload != NULL ? p_send_next(cs[i], &q) == 0 :
			    p_command(cs[i], line) != 0)
				break;
			sent++;
		}
	}
	quiet = false;
	tally_print("hellos", &th);
	printf("unread: requests=%" PRIu64 "\n", sent);
	until = now_ms() + ms;
	while (flood_until(stop, until))
		usleep(50000);
	p_close_many(cs, conns);
	free(payload);
	return 0;
}

#define FILL_NAMES	15		/* long names beside NAME in each try */
#define FILL_NAME_LEN	250
#define FILL_INFLIGHT	32
#define FILL_AFTER	5		/* tries timed one by one once refused */
#define FILL_QUIET_MS	100		/* no answer this long: one more try */

/* A try of name and the fill names (timeout 0), sent; its id or 0. */
static uint64_t fill_send(struct pconn *c, const char *name)
{
	static char names[FILL_NAMES][FILL_NAME_LEN + 1];
	Semd__Want wv[FILL_NAMES + 1], *wp[FILL_NAMES + 1];
	Semd__DownMulti *dm;
	struct req q;
	int i;

	dm = req_make(&q, 0, SEMD__REQUEST__OP_DOWN_MULTI, "timeout_ms=%d",
	    0)->down_multi;
	for (i = 0; i <= FILL_NAMES; i++) {
		semd__want__init(&wv[i]);
		if (i > 0 && names[i - 1][0] == '\0') {
			memset(names[i - 1], 'f', FILL_NAME_LEN);
			names[i - 1][0] = (char)('a' + i);
		}
		wv[i].name = i == 0 ? (char *)name : names[i - 1];
		wp[i] = &wv[i];
	}
	dm->n_wants = FILL_NAMES + 1;
	dm->wants = wp;
	return p_send_next(c, &q);
}

/*
 * --fill-log ADDR NAME MS [STOP]: fill the log of a durable semd (issue 35, a full
 * disk). One connection sends tries (DownMulti, timeout 0) of NAME, which
 * another holds, and of 15 names of 250 bytes: each is answered
 * WOULD_BLOCK and changes nothing, but is about 4 KB of log. FILL_INFLIGHT
 * at once, and one more whenever none is answered for FILL_QUIET_MS (they
 * wait for the disk), until one is answered something else (a full disk:
 * writes refused), MS passed or the file STOP exists. Then FILL_AFTER
 * more, one at a time, each timed.
 * Prints the tries answered WOULD_BLOCK, the first other answer, those
 * still unanswered (they wait in the log), and the timed ones' answers
 * and slowest round trip.
 */
int mode_fill_log(const char *addr, const char *name, int ms,
    const char *stop)
{
	struct tally th, ta;
	struct pconn **cs, *c;
	Semd__Reply *r = NULL;
	double until = now_ms() + ms, t0, worst = 0;
	uint64_t blocked = 0, inflight = 0;
	int i, code = -1;
	char msg[256] = "";

	memset(&th, 0, sizeof th);
	memset(&ta, 0, sizeof ta);
	if ((cs = p_alloc_many(1)) == NULL)
		return 2;
	c = cs[0];
	if (!flood_hello(c, addr, &th)) {
		tally_print("hellos", &th);
		p_close_many(cs, 1);
		return 3;
	}
	quiet = true;
	while (code < 0 && flood_until(stop, until)) {
		while (inflight < FILL_INFLIGHT && fill_send(c, name) != 0)
			inflight++;
		/* Those in flight answer nothing for a while: one more. */
		if ((r = p_read(c, FILL_QUIET_MS)) == NULL) {
			if (c->eof || fill_send(c, name) == 0)
				break;
			inflight++;
			continue;
		}
		if (r->id != 0) {
			inflight--;
			if (r->code == SEMD__CODE__WOULD_BLOCK) {
				blocked++;
			} else {
				code = r->code;
				snprintf(msg, sizeof msg, "%s", r->message);
			}
		}
		semd__reply__free_unpacked(r, NULL);
	}
	printf("fill: would_block=%" PRIu64 "\n", blocked);
	if (code < 0) {
		printf("fill: no refusal in %.0f ms (%" PRIu64 " unanswered)\n",
		    now_ms() - (until - ms), inflight);
		p_close_many(cs, 1);
		return 1;
	}
	printf("fill: refused %s: %s\n", code_name(code), msg);
	printf("fill: unanswered=%" PRIu64 "\n", inflight);
	for (i = 0; i < FILL_AFTER; i++) {
		uint64_t id;

		t0 = now_ms();
		if ((id = fill_send(c, name)) == 0)
			break;
		while ((r = p_read(c, WAIT_MS)) != NULL && r->id != id)
			semd__reply__free_unpacked(r, NULL);
		tally_add(&ta, r);
		if (r == NULL)
			break;
		semd__reply__free_unpacked(r, NULL);
		if (now_ms() - t0 > worst)
			worst = now_ms() - t0;
	}
	quiet = false;
	tally_print("after", &ta);
	printf("fill: slowest refusal %.1f ms\n", worst);
	p_close_many(cs, 1);
	return 0;
}
