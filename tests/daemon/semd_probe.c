/* SPDX-License-Identifier: BSD-2-Clause */
/*
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
 *   semd_probe --watch-flood ADDR CONNS W MS [STOP]  CONNS connections
 *                              watch the prefix "" W times each, then read
 *                              everything for MS ms (or until STOP exists)
 *   semd_probe --unread ADDR CONNS N MS STOP REQUEST  CONNS connections
 *                              send REQUEST ("ping:SIZE": a payload of SIZE
 *                              bytes; or a command) N times and read no
 *                              answer, open for MS ms (or until STOP exists)
 *   semd_probe --fill-log ADDR NAME MS [STOP]  write about 4 KB of log a
 *                              request (tries of NAME, held elsewhere, and
 *                              of long names) until writes are refused (a
 *                              full disk), MS passed or STOP exists; then
 *                              time 5 refusals
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



bool quiet;	/* p_print prints nothing */

static const char *code_names[] = {
	"OK", "TIMEOUT", "WOULD_BLOCK", "NOT_FOUND", "EXISTS", "NOT_HOLDER",
	"PERMISSION_DENIED", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED",
	"CANCELLED", "UNAVAILABLE", "PROTOCOL_ERROR", "INTERNAL",
	"SESSION_EXPIRED", "DEADLOCK",
};

/* Milliseconds on the monotonic clock, with a fraction. */
double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Name of a code. */
const char *code_name(int c)
{
	if (c >= 0 && c < (int)(sizeof code_names / sizeof code_names[0]))
		return code_names[c];
	return "?";
}

/* Connect to unix:PATH or tcp:HOST:PORT; -1 on failure. */
int p_connect(const char *addr)
{
	struct addrinfo hints, *res, *ai;
	char host[256], *port;
	int fd = -1;

	if (strncmp(addr, "unix:", 5) == 0) {
		struct sockaddr_un sun;

		memset(&sun, 0, sizeof sun);
		sun.sun_family = AF_UNIX;
		snprintf(sun.sun_path, sizeof sun.sun_path, "%s", addr + 5);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
			close(fd);
			fd = -1;
		}
		return fd;
	}
	if (strncmp(addr, "tcp:", 4) != 0)
		return -1;
	snprintf(host, sizeof host, "%s", addr + 4);
	port = strrchr(host, ':');
	if (port == NULL)
		return -1;
	*port++ = '\0';
	if (host[0] == '[') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -1;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* Write all bytes (one at a time, 0.5 ms apart, on a slow connection). */
static int p_write(struct pconn *c, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t i;

	if (!c->slow)
		return t_io_all(c->fd, (void *)p, len, true);
	for (i = 0; i < len; i++) {
		if (t_io_all(c->fd, (void *)(p + i), 1, true) != 0)
			return -1;
		usleep(500);
	}
	return 0;
}

/* Send a request as one frame. */
int p_send(struct pconn *c, Semd__Request *req)
{
	size_t len = semd__request__get_packed_size(req);
	uint8_t *buf = malloc(FRAME_HDR + len);
	int r;

	if (buf == NULL)
		return -1;
	frame_put_header(buf, (uint32_t)len);
	semd__request__pack(req, buf + FRAME_HDR);
	r = p_write(c, buf, FRAME_HDR + len);
	free(buf);
	return r;
}

/* Read one reply, waiting up to ms; NULL on timeout, EOF or error. */
Semd__Reply *p_read(struct pconn *c, int ms)
{
	struct pollfd pfd = { c->fd, POLLIN, 0 };
	double until = now_ms() + ms;
	Semd__Reply *r;
	size_t plen;
	ssize_t n;
	int left;

	for (;;) {
		if (frame_peek(c->buf, c->len, sizeof c->buf - FRAME_HDR, &plen) == 1) {
			r = semd__reply__unpack(NULL, plen, c->buf + FRAME_HDR);
			memmove(c->buf, c->buf + FRAME_HDR + plen,
			    c->len - FRAME_HDR - plen);
			c->len -= FRAME_HDR + plen;
			if (r == NULL)
				fprintf(stderr, "semd_probe: undecodable reply\n");
			return r;
		}
		left = (int)(until - now_ms());
		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return NULL;
		n = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			c->eof = true;
			return NULL;
		}
		c->len += (size_t)n;
	}
}

/* Print a reply on one line. */
static void p_print(const Semd__Reply *r)
{
	size_t i;

	if (quiet)
		return;
	printf("reply id=%" PRIu64 " code=%s", r->id, code_name(r->code));
	switch (r->body_case) {
	case SEMD__REPLY__BODY_HELLO:
		printf(" session=%" PRIu64 " secret=", r->hello->session);
		for (i = 0; i < r->hello->secret.len; i++)
			printf("%02x", r->hello->secret.data[i]);
		printf(" lease=%u principal=%s resumed=%d", r->hello->lease_ms,
		    r->hello->principal, r->hello->resumed);
		break;
	case SEMD__REPLY__BODY_GRANT:
		printf(" permit=%" PRIu64 " token=%" PRIu64 " n=%u waited_us=%" PRIu64,
		    r->grant->permit_id, r->grant->token, r->grant->n,
		    r->grant->waited_us);
		break;
	case SEMD__REPLY__BODY_INFO:
		printf(" name=%s limit=%u available=%" PRId64 " mode=%d auto=%d holders=%zu waiters=%zu",
		    r->info->name, r->info->limit, r->info->available,
		    r->info->mode, r->info->auto_created, r->info->n_holders,
		    r->info->n_waiters);
		if (r->info->rate != 0)
			printf(" rate=%u/%u burst=%u tokens_nano=%" PRIu64,
			    r->info->rate, r->info->rate_period_ms,
			    r->info->burst, r->info->tokens_nano);
		for (i = 0; i < r->info->n_holders; i++)
			printf(" holder=%s/%" PRIu64 "/%u%s", r->info->holders[i]->principal,
			    r->info->holders[i]->permit_id, r->info->holders[i]->n,
			    r->info->holders[i]->detached ? "/detached" : "");
		for (i = 0; i < r->info->n_waiters; i++)
			printf(" waiter=%" PRIu64 "/%u%s", r->info->waiters[i]->request_id,
			    r->info->waiters[i]->n,
			    r->info->waiters[i]->detached ? "/away" : "");
		break;
	case SEMD__REPLY__BODY_LIST:
		printf(" entries=%zu", r->list->n_entries);
		for (i = 0; i < r->list->n_entries; i++)
			printf(" %s", r->list->entries[i]->name);
		printf(" next=%s", r->list->next);
		break;
	case SEMD__REPLY__BODY_STATS:
		for (i = 0; i < r->stats->n_counters; i++)
			printf(" %s=%" PRIu64, r->stats->counters[i]->name,
			    r->stats->counters[i]->value);
		break;
	case SEMD__REPLY__BODY_VALIDATE:
		printf(" valid=%d", r->validate->valid);
		break;
	case SEMD__REPLY__BODY_PONG:
		printf(" pong=%.*s", (int)r->pong->payload.len,
		    (const char *)r->pong->payload.data);
		break;
	case SEMD__REPLY__BODY_RELEASED:
		printf(" released=%u", r->released->n);
		break;
	case SEMD__REPLY__BODY_HOLD_LOST:
		printf(" lost=%s permit=%" PRIu64 " token=%" PRIu64 " n=%u",
		    r->hold_lost->name, r->hold_lost->permit_id,
		    r->hold_lost->token, r->hold_lost->n);
		break;
	case SEMD__REPLY__BODY_MULTI_GRANT:
		for (i = 0; i < r->multi_grant->n_grants; i++)
			printf(" grant=%s/%" PRIu64 "/%" PRIu64 "/%u",
			    r->multi_grant->grants[i]->name,
			    r->multi_grant->grants[i]->permit_id,
			    r->multi_grant->grants[i]->token,
			    r->multi_grant->grants[i]->n);
		break;
	case SEMD__REPLY__BODY_WATCH_EVENT:
		printf(" watch=%" PRIu64 " event=%d name=%s n=%u permit=%" PRIu64
		    " principal=%s holders=%u waiters=%u available=%" PRId64,
		    r->watch_event->watch, (int)r->watch_event->kind,
		    r->watch_event->name, r->watch_event->n,
		    r->watch_event->permit_id, r->watch_event->principal,
		    r->watch_event->holders, r->watch_event->waiters,
		    r->watch_event->available);
		break;
	case SEMD__REPLY__BODY_RENEWED:
		printf(" renewed=%u expires=%" PRIu64, r->renewed->holds,
		    r->renewed->expires_ms);
		break;
	case SEMD__REPLY__BODY_HOLDS:
		printf(" holds=%zu total=%u", r->holds->n_holds, r->holds->total);
		for (i = 0; i < r->holds->n_holds; i++)
			printf(" hold=%s/%" PRIu64 "/%u", r->holds->holds[i]->name,
			    r->holds->holds[i]->permit_id, r->holds->holds[i]->n);
		break;
	case SEMD__REPLY__BODY_WHERE:
		for (i = 0; i < r->where->n_places; i++)
			printf(" place=%s/%u/%u", r->where->places[i]->name,
			    r->where->places[i]->position,
			    r->where->places[i]->waiters);
		break;
	default:
		break;
	}
	if (r->message != NULL && r->message[0] != '\0')
		printf(" msg=\"%s\"", r->message);
	printf("\n");
	fflush(stdout);
}

/* Read and print replies until one with this id; -1 on timeout. */
static int p_wait(struct pconn *c, uint64_t id)
{
	Semd__Reply *r;
	bool found;

	for (;;) {
		r = p_read(c, WAIT_MS);
		if (r == NULL) {
			printf("%s waiting for reply %" PRIu64 "\n",
			    c->eof ? "eof" : "timeout", id);
			fflush(stdout);
			return -1;
		}
		p_print(r);
		found = r->id == id;
		semd__reply__free_unpacked(r, NULL);
		if (found)
			return 0;
	}
}

/* Wait until the file path exists: up to a minute, then fail. */
static int p_until(const char *path)
{
	int i;

	for (i = 0; i < 6000; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		usleep(10000);
	}
	printf("timeout waiting for %s\n", path);
	fflush(stdout);
	return -1;
}

/* Value of key=... among the words, or NULL. */
static const char *opt(char **w, int n, const char *key)
{
	size_t k = strlen(key);
	int i;

	for (i = 0; i < n; i++)
		if (strncmp(w[i], key, k) == 0 && w[i][k] == '=')
			return w[i] + k + 1;
	return NULL;
}

/* Value of key=... as a number, or d. */
static long long opt_num(char **w, int n, const char *key, long long d)
{
	const char *v = opt(w, n, key);

	return v != NULL ? strtoll(v, NULL, 10) : d;
}

/* Value of key=..., or "". */
static const char *opt_str(char **w, int n, const char *key)
{
	const char *v = opt(w, n, key);

	return v != NULL ? v : "";
}

/* Is the bare word there? */
static bool flag(char **w, int n, const char *word)
{
	int i;

	for (i = 0; i < n; i++)
		if (strcmp(w[i], word) == 0)
			return true;
	return false;
}

/* Hex string to bytes; returns the length. */
static size_t unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	unsigned int b;

	while (s[0] && s[1] && n < max && sscanf(s, "%2x", &b) == 1) {
		out[n++] = (uint8_t)b;
		s += 2;
	}
	return n;
}

/* A name argument: "hex:6101" gives raw bytes (for invalid names). */
static char *name_arg(char *s)
{
	static char buf[8][1024];
	static int k;
	size_t n;

	if (strncmp(s, "hex:", 4) != 0)
		return s;
	k = (k + 1) % 8;
	n = unhex(s + 4, (uint8_t *)buf[k], sizeof buf[k] - 1);
	buf[k][n] = '\0';
	return buf[k];
}

/* Run one script command. */
int p_command(struct pconn *c, char *line)
{
	Semd__Want wv[16], *wp[16];
	Semd__DownMulti *dm;
	static char wnames[16][256];
	char *colon, *nsave = NULL, *ntok;
	static uint8_t secret[64], raw[65536];
	char *w[32], *save = NULL, *tok;
	const char *v;
	int n = 0;
	uint64_t id = 0;
	struct req q;
	Semd__Reply *r;

	for (tok = strtok_r(line, " ", &save); tok && n < 32;
	    tok = strtok_r(NULL, " ", &save))
		w[n++] = tok;
	if (n == 0)
		return 0;
#define ARG(i) (n > (i) ? name_arg(w[i]) : "")
#define NUM(k, d) opt_num(w, n, k, d)
	/* Only requests take an id; local commands (sleep, raw...) do not. */
	if (strstr(" wait read slow sleep until raw expect-eof ", w[0]) == NULL ||
	    strchr(w[0], ' ') != NULL) {
		id = (uint64_t)NUM("id", (long long)c->next_id);
		c->next_id = id + 1;
	}
	if (strcmp(w[0], "hello") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_HELLO,
		    "version=%lld client_name=%s host=%s pid=%d lease_ms=%lld resume_session=%lld",
		    NUM("version", 1), "semd_probe", "localhost", (int)getpid(),
		    NUM("lease", 0), NUM("resume", 0));
		if ((v = opt(w, n, "secret")) != NULL)
			req_set(&q, "resume_secret=%.*s",
			    (int)unhex(v, secret, sizeof secret), (const char *)secret);
	} else if (strcmp(w[0], "create") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_CREATE,
		    "name=%s limit=%ld mode=%d if_not_exists=%d rate=%lld rate_period_ms=%lld burst=%lld",
		    ARG(1), atol(ARG(2)),
		    flag(w, n, "signal") ? SEMD__MODE__SIGNAL : SEMD__MODE__OWNED,
		    flag(w, n, "ine"), NUM("rate", 0), NUM("period", 0), NUM("burst", 0));
	} else if (strcmp(w[0], "down") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_DOWN, "name=%s n=%lld timeout_ms=%lld lease_ms=%lld",
		    ARG(1), NUM("n", 1), NUM("timeout", -1), NUM("lease", 0));
	} else if (strcmp(w[0], "up") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_UP, "name=%s n=%lld permit_id=%lld",
		    ARG(1), NUM("n", 0), NUM("permit", 0));
	} else if (strcmp(w[0], "cancel") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_CANCEL, "request_id=%llu",
		    strtoull(ARG(1), NULL, 10));
	} else if (strcmp(w[0], "info") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_INFO, "name=%s", ARG(1));
	} else if (strcmp(w[0], "list") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_LIST, "prefix=%s after=%s max=%lld",
		    opt_str(w, n, "prefix"), opt_str(w, n, "after"), NUM("max", 0));
	} else if (strcmp(w[0], "delete") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_DELETE, "name=%s force=%d",
		    ARG(1), flag(w, n, "force"));
	} else if (strcmp(w[0], "setlimit") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_SET_LIMIT, "name=%s limit=%ld",
		    ARG(1), atol(ARG(2)));
	} else if (strcmp(w[0], "ping") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_PING, "payload=%.*s",
		    (int)strlen(ARG(1)), ARG(1));
	} else if (strcmp(w[0], "stats") == 0) {
		req_op(&q, id, SEMD__REQUEST__OP_STATS);
	} else if (strcmp(w[0], "detach") == 0) {
		req_op(&q, id, SEMD__REQUEST__OP_DETACH);
	} else if (strcmp(w[0], "validate") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_VALIDATE, "name=%s token=%llu",
		    ARG(1), strtoull(ARG(2), NULL, 10));
	} else if (strcmp(w[0], "release") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_RELEASE, "name=%s permit_id=%llu",
		    ARG(1), strtoull(ARG(2), NULL, 10));
	} else if (strcmp(w[0], "setrate") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_SET_RATE,
		    "name=%s rate=%ld rate_period_ms=%lld burst=%lld",
		    ARG(1), atol(ARG(2)), NUM("period", 0), NUM("burst", 0));
	} else if (strcmp(w[0], "multi") == 0) {
		dm = req_make(&q, id, SEMD__REQUEST__OP_DOWN_MULTI, "timeout_ms=%lld lease_ms=%lld",
		    NUM("timeout", -1), NUM("lease", 0))->down_multi;
		/* NAME[:N],NAME[:N]... */
		for (ntok = strtok_r(ARG(1), ",", &nsave); ntok != NULL && dm->n_wants < 16;
		    ntok = strtok_r(NULL, ",", &nsave)) {
			semd__want__init(&wv[dm->n_wants]);
			snprintf(wnames[dm->n_wants], sizeof wnames[0], "%s", ntok);
			colon = strrchr(wnames[dm->n_wants], ':');
			if (colon != NULL) {
				*colon = '\0';
				wv[dm->n_wants].n = (uint32_t)atol(colon + 1);
			}
			wv[dm->n_wants].name = wnames[dm->n_wants];
			wp[dm->n_wants] = &wv[dm->n_wants];
			dm->n_wants++;
		}
		dm->wants = wp;
	} else if (strcmp(w[0], "watch") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_WATCH, "name=%s prefix=%d",
		    ARG(1), flag(w, n, "prefix"));
	} else if (strcmp(w[0], "renew") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_RENEW, "name=%s permit_id=%lld lease_ms=%lld",
		    ARG(1), NUM("permit", 0), NUM("lease", 0));
	} else if (strcmp(w[0], "holds") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_HOLDS, "principal=%s",
		    opt_str(w, n, "principal"));
	} else if (strcmp(w[0], "where") == 0) {
		req_make(&q, id, SEMD__REQUEST__OP_WHERE, "request_id=%llu",
		    strtoull(ARG(1), NULL, 10));
	} else if (strcmp(w[0], "wait") == 0) {
		return p_wait(c, strtoull(ARG(1), NULL, 10));
	} else if (strcmp(w[0], "read") == 0) {
		r = p_read(c, WAIT_MS);
		if (r == NULL) {
			printf("%s\n", c->eof ? "eof" : "timeout");
			return -1;
		}
		p_print(r);
		semd__reply__free_unpacked(r, NULL);
		return 0;
	} else if (strcmp(w[0], "slow") == 0) {
		c->slow = !c->slow;
		return 0;
	} else if (strcmp(w[0], "sleep") == 0) {
		usleep((useconds_t)atol(ARG(1)) * 1000);
		return 0;
	} else if (strcmp(w[0], "until") == 0) {
		return p_until(ARG(1));
	} else if (strcmp(w[0], "raw") == 0) {
		return p_write(c, raw, unhex(ARG(1), raw, sizeof raw));
	} else if (strcmp(w[0], "expect-eof") == 0) {
		while ((r = p_read(c, WAIT_MS)) != NULL) {
			p_print(r);
			semd__reply__free_unpacked(r, NULL);
		}
		printf("%s\n", c->eof ? "eof" : "timeout (no eof)");
		fflush(stdout);
		return c->eof ? 0 : -1;
	} else {
		fprintf(stderr, "semd_probe: unknown command %s\n", w[0]);
		return -1;
	}
	if (p_send(c, &q.r) != 0) {
		printf("write failed: %s\n", strerror(errno));
		return -1;
	}
	if (flag(w, n, "nowait"))
		return 0;
	return p_wait(c, q.r.id);
#undef ARG
#undef NUM
}

/* Send hello and check the reply, printing nothing. */
int p_hello(struct pconn *c)
{
	char line[] = "hello";
	int r;

	quiet = true;
	r = p_command(c, line);
	quiet = false;
	return r;
}

/* Send q as the connection's next request; returns its id, 0 if the write failed. */
uint64_t p_send_next(struct pconn *c, struct req *q)
{
	q->r.id = c->next_id++;
	return p_send(c, &q->r) == 0 ? q->r.id : 0;
}

/* A down of one permit, sent; returns its id. */
uint64_t p_down(struct pconn *c, const char *name, int64_t timeout)
{
	struct req q;

	req_make(&q, 0, SEMD__REQUEST__OP_DOWN, "name=%s n=%d timeout_ms=%" PRId64,
	    name, 1, timeout);
	return p_send_next(c, &q);
}

/* Send a ping and wait for its pong (a barrier). */
int p_sync(struct pconn *c)
{
	struct req q;
	Semd__Reply *r;
	uint64_t id;

	req_op(&q, 0, SEMD__REQUEST__OP_PING);
	if ((id = p_send_next(c, &q)) == 0)
		return -1;
	while ((r = p_read(c, WAIT_MS)) != NULL) {
		bool done = r->id == id;

		semd__reply__free_unpacked(r, NULL);
		if (done)
			return 0;
	}
	return -1;
}

/* Up one permit and wait for the answer. */
int p_up(struct pconn *c, const char *name)
{
	struct req q;
	Semd__Reply *r;
	int code;

	req_make(&q, 0, SEMD__REQUEST__OP_UP, "name=%s", name);
	if (p_send_next(c, &q) == 0 || (r = p_read(c, WAIT_MS)) == NULL)
		return -1;
	code = r->code;
	semd__reply__free_unpacked(r, NULL);
	return code;
}

/* Raise the open-file limit for n connections. */
void p_nofile(int n)
{
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < (rlim_t)n + 64) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)n + 64 ? rl.rlim_max : (rlim_t)n + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* n connections, not connected yet (fd -1), ids from 1; NULL without memory. */
struct pconn **p_alloc_many(int n)
{
	struct pconn **cs = calloc((size_t)n, sizeof *cs);
	int i;

	for (i = 0; cs != NULL && i < n; i++) {
		cs[i] = calloc(1, sizeof **cs);
		if (cs[i] == NULL)
			return NULL;
		cs[i]->fd = -1;
		cs[i]->next_id = 1;
	}
	return cs;
}

/* Connect n connections (no hello yet); NULL if one cannot. */
struct pconn **p_connect_many(const char *addr, int n)
{
	struct pconn **cs = p_alloc_many(n);
	int i;

	for (i = 0; cs != NULL && i < n; i++) {
		cs[i]->fd = p_connect(addr);
		if (cs[i]->fd < 0) {
			printf("connection %d: cannot connect: %s\n", i, strerror(errno));
			return NULL;
		}
	}
	return cs;
}

/*
 * Open n connections with hello: every hello is sent before the first reply
 * is read, so that none waits out the daemon's handshake timeout behind the
 * others (a durable daemon writes each new session to its log).
 */
struct pconn **p_open_many(const char *addr, int n)
{
	struct pconn **cs = p_connect_many(addr, n);
	int i;

	quiet = true;
	for (i = 0; cs != NULL && i < n; i++) {
		char line[] = "hello nowait";

		if (p_command(cs[i], line) != 0) {
			printf("connection %d: hello not sent\n", i);
			cs = NULL;
		}
	}
	for (i = 0; cs != NULL && i < n; i++) {
		if (p_wait(cs[i], 1) != 0) {
			printf("connection %d: no hello reply\n", i);
			cs = NULL;
		}
	}
	quiet = false;
	return cs;
}

/* Close and free what p_open_many() made. */
void p_close_many(struct pconn **cs, int n)
{
	int i;

	for (i = 0; cs != NULL && i < n; i++) {
		if (cs[i] != NULL && cs[i]->fd >= 0)
			close(cs[i]->fd);
		free(cs[i]);
	}
	free(cs);
}

int main(int argc, char **argv)
{
	static struct pconn c;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);	/* a closed connection is a result */
	if (argc >= 4 && strcmp(argv[1], "--fifo") == 0)
		return mode_fifo(argv[2], atoi(argv[3]));
	if (argc >= 4 && strcmp(argv[1], "--many") == 0)
		return mode_many(argv[2], atoi(argv[3]));
	if (argc >= 4 && strcmp(argv[1], "--burst") == 0)
		return mode_burst(argv[2], atoi(argv[3]));
	if (argc >= 7 && strcmp(argv[1], "--stress") == 0)
		return mode_stress(argv[2], atoi(argv[3]), atoi(argv[4]),
		    atoi(argv[5]), (unsigned)strtoul(argv[6], NULL, 10));
	if (argc >= 4 && strcmp(argv[1], "--timeout") == 0)
		return mode_timeout(argv[2], atoi(argv[3]));
	if (argc >= 5 && strcmp(argv[1], "--sessions") == 0)
		return mode_sessions(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc >= 7 && strcmp(argv[1], "--flood") == 0)
		return mode_flood(argv[2], atoi(argv[3]), atoi(argv[4]),
		    atoi(argv[5]), argv[6]);
	if (argc >= 5 && strcmp(argv[1], "--idle") == 0)
		return mode_idle(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc >= 5 && strcmp(argv[1], "--latency") == 0)
		return mode_latency(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc >= 6 && strcmp(argv[1], "--watch-flood") == 0)
		return mode_watch_flood(argv[2], atoi(argv[3]), atoi(argv[4]),
		    atoi(argv[5]), argc > 6 ? argv[6] : NULL);
	if (argc >= 8 && strcmp(argv[1], "--unread") == 0)
		return mode_unread(argv[2], atoi(argv[3]), atoi(argv[4]),
		    atoi(argv[5]), argv[6], argv[7]);
	if (argc >= 5 && strcmp(argv[1], "--fill-log") == 0)
		return mode_fill_log(argv[2], argv[3], atoi(argv[4]),
		    argc > 5 ? argv[5] : NULL);
	if (argc >= 6 && strcmp(argv[1], "--watchers") == 0)
		return mode_watchers(argv[2], atoi(argv[3]), argv[4], atoi(argv[5]));
	if (argc < 2) {
		fprintf(stderr, "usage: semd_probe ADDR CMD...\n");
		return 2;
	}
	c.next_id = 1;
	c.fd = p_connect(argv[1]);
	if (c.fd < 0) {
		printf("cannot connect to %s: %s\n", argv[1], strerror(errno));
		return 3;
	}
	for (i = 2; i < argc; i++) {
		char *line = strdup(argv[i]);
		int r = p_command(&c, line);

		free(line);
		if (r != 0)
			return 2;
	}
	close(c.fd);
	return 0;
}
