/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/probe_stress.c - semd_probe --stress: connections racing
 * for a name of limit K, with timeouts and disconnects while waiting and
 * holding; never more than K held, every fencing token unique, all K
 * permits free at the end.
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
/* One connection of --stress. */
struct sconn {
	struct pconn	*c;
	enum { S_IDLE, S_WAITING, S_HOLDING, S_UPPING } st;
	uint64_t	grants;
	uint64_t	last_token;
};

/* Frames of the replies buffered in c: the next one, or NULL. */
static Semd__Reply *p_next(struct pconn *c)
{
	Semd__Reply *r;
	size_t plen;

	if (frame_peek(c->buf, c->len, sizeof c->buf - FRAME_HDR, &plen) != 1)
		return NULL;
	r = semd__reply__unpack(NULL, plen, c->buf + FRAME_HDR);
	memmove(c->buf, c->buf + FRAME_HDR + plen, c->len - FRAME_HDR - plen);
	c->len -= FRAME_HDR + plen;
	return r;
}

/* Replace s's connection by a fresh one (after hello). */
static int stress_reconnect(struct sconn *s, const char *addr)
{
	close(s->c->fd);
	memset(s->c, 0, sizeof *s->c);
	s->c->next_id = 1;
	s->c->fd = p_connect(addr);
	s->st = S_IDLE;
	s->last_token = 0;
	return s->c->fd >= 0 && p_hello(s->c) == 0 ? 0 : -1;
}

/* Sort order of tokens. */
static int stress_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * CONNS connections race for one name of limit k for ms milliseconds. The
 * client's own count of permits held (grants received minus ups sent) must
 * stay at most k whatever the interleaving, since the daemon can only hand
 * a permit on after it has read the up that freed it.
 */
int mode_stress(const char *addr, int n, int k, int ms, unsigned seed)
{
	struct pconn **cs = p_open_many(addr, n);
	struct sconn *ss = calloc((size_t)n, sizeof *ss);
	struct pollfd *pfd = calloc((size_t)n, sizeof *pfd);
	uint64_t *tokens = NULL, ntok = 0, captok = 0, grants = 0, timeouts = 0;
	uint64_t cuts = 0, ups = 0, gmin = UINT64_MAX, gmax = 0, dups = 0;
	int held = 0, maxheld = 0, bad = 0, i, turns = 0, busy, pending = 1;
	double end = now_ms() + ms, drain_end = end + WAIT_MS;
	bool drain = false;
	char name[64], line[96];
	Semd__Reply *r;
	ssize_t got;

	if (cs == NULL || ss == NULL || pfd == NULL)
		return 2;
	srand(seed);
	snprintf(name, sizeof name, "stress/%d", (int)getpid());
	snprintf(line, sizeof line, "create %s %d", name, k);
	quiet = true;
	if (p_command(cs[0], line) != 0)
		return 2;
	quiet = false;
	for (i = 0; i < n; i++)
		ss[i].c = cs[i];
	/*
	 * Race until end, then drain: no new downs or cuts, holders give
	 * back, and every down still queued must hear its grant (a lost
	 * hand-off would leave it waiting forever).
	 */
	while (pending > 0 && now_ms() < drain_end && turns++ < 10000000 &&
	    bad == 0) {
		drain = now_ms() >= end;
		busy = 0;
		pending = 0;
		for (i = 0; i < n; i++) {
			struct sconn *s = &ss[i];
			int dice = rand() % 1000;

			/* Cut one off now and then, waiting or holding. */
			if (!drain && dice < 3 &&
			    (s->st == S_WAITING || s->st == S_HOLDING)) {
				if (s->st == S_HOLDING)
					held--;
				cuts++;
				if (stress_reconnect(s, addr) != 0) {
					printf("connection %d: cannot reconnect\n", i);
					return 2;
				}
				continue;
			}
			if (s->st == S_IDLE && !drain) {
				/* Wait forever, a few ms, or not at all. */
				int64_t t = dice < 500 ? -1 : dice < 900 ?
				    dice % 4 : 0;

				if (p_down(s->c, name, t) == 0)
					return 2;
				s->st = S_WAITING;
			} else if (s->st == S_HOLDING && (dice < 700 || drain)) {
				struct req q;

				req_make(&q, 0, SEMD__REQUEST__OP_UP, "name=%s", name);
				held--;
				ups++;
				if (p_send_next(s->c, &q) == 0)
					return 2;
				s->st = S_UPPING;
			}
			busy += s->st == S_HOLDING;
			pending += s->st != S_IDLE || !drain;
			pfd[i].fd = s->c->fd;
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		/* A holder that kept its permit this turn goes on at once. */
		if (poll(pfd, (nfds_t)n, busy ? 0 : 50) < 0 && errno != EINTR)
			return 2;
		for (i = 0; i < n; i++) {
			struct sconn *s = &ss[i];

			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) ||
			    pfd[i].fd != s->c->fd)
				continue;
			got = read(s->c->fd, s->c->buf + s->c->len,
			    sizeof s->c->buf - s->c->len);
			if (got <= 0) {
				printf("connection %d: closed by semd\n", i);
				return 2;
			}
			s->c->len += (size_t)got;
			while ((r = p_next(s->c)) != NULL) {
				if (s->st == S_WAITING && r->code == SEMD__CODE__OK &&
				    r->body_case == SEMD__REPLY__BODY_GRANT) {
					if (++held > k) {
						printf("OVER-GRANT: %d permits held, limit %d\n",
						    held, k);
						bad++;
					}
					if (held > maxheld)
						maxheld = held;
					if (r->grant->token <= s->last_token) {
						printf("token %" PRIu64 " after %" PRIu64 " on one connection\n",
						    r->grant->token, s->last_token);
						bad++;
					}
					s->last_token = r->grant->token;
					if (ntok == captok) {
						uint64_t *t;

						captok = captok ? 2 * captok : 4096;
						t = realloc(tokens, captok * sizeof *t);
						if (t == NULL)
							return 2;
						tokens = t;
					}
					tokens[ntok++] = r->grant->token;
					s->grants++;
					grants++;
					s->st = S_HOLDING;
				} else if (s->st == S_WAITING &&
				    (r->code == SEMD__CODE__TIMEOUT ||
				    r->code == SEMD__CODE__WOULD_BLOCK)) {
					timeouts++;
					s->st = S_IDLE;
				} else if (s->st == S_UPPING && r->code == SEMD__CODE__OK) {
					s->st = S_IDLE;
				} else {
					printf("connection %d: unexpected reply code %s in state %d\n",
					    i, code_name(r->code), (int)s->st);
					bad++;
				}
				semd__reply__free_unpacked(r, NULL);
			}
		}
	}
	if (pending > 0 && bad == 0) {
		printf("%d connection(s) still waiting %d ms after the race: a grant was lost\n",
		    pending, WAIT_MS);
		bad++;
	}
	qsort(tokens, ntok, sizeof *tokens, stress_cmp);
	for (i = 1; (uint64_t)i < ntok; i++)
		if (tokens[i] == tokens[i - 1])
			dups++;
	for (i = 0; i < n; i++) {
		if (ss[i].grants < gmin)
			gmin = ss[i].grants;
		if (ss[i].grants > gmax)
			gmax = ss[i].grants;
	}
	printf("stress %d connections, limit %d: %" PRIu64 " grants, %" PRIu64
	    " ups, %" PRIu64 " timeouts, %" PRIu64 " cut off, at most %d held, "
	    "%" PRIu64 " duplicate tokens, grants per connection %" PRIu64
	    "..%" PRIu64 "\n", n, k, grants, ups, timeouts, cuts, maxheld, dups,
	    gmin, gmax);
	if (dups > 0)
		bad++;
	if (grants == 0) {
		printf("no grant at all\n");
		bad++;
	}
	free(tokens);
	free(ss);
	free(pfd);
	p_close_many(cs, n);
	/* Every permit comes back once the clients are gone (bounded wait). */
	cs = p_open_many(addr, 1);
	if (cs == NULL)
		return 2;
	for (i = 0; i < 200; i++) {
		struct req q;
		bool free_all = false;

		req_make(&q, 0, SEMD__REQUEST__OP_INFO, "name=%s", name);
		if (p_send_next(cs[0], &q) == 0 || (r = p_read(cs[0], WAIT_MS)) == NULL)
			return 2;
		if (r->code == SEMD__CODE__OK && r->body_case == SEMD__REPLY__BODY_INFO)
			free_all = r->info->available == k &&
			    r->info->n_holders == 0 && r->info->n_waiters == 0;
		semd__reply__free_unpacked(r, NULL);
		if (free_all)
			break;
		usleep(10000);
	}
	if (i == 200) {
		printf("permits not all back after the clients left\n");
		bad++;
	} else {
		printf("all %d permits free again, no holder, no waiter\n", k);
	}
	p_close_many(cs, 1);
	return bad ? 1 : 0;
}
