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

#define WAIT_MS 10000

struct pconn {
	int		fd;
	uint8_t		buf[128 << 10];
	bool		slow;		/* write one byte at a time */
	size_t		len;
	uint64_t	next_id;
	bool		eof;
};

static bool quiet;	/* p_print prints nothing */

static const char *code_names[] = {
	"OK", "TIMEOUT", "WOULD_BLOCK", "NOT_FOUND", "EXISTS", "NOT_HOLDER",
	"PERMISSION_DENIED", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED",
	"CANCELLED", "UNAVAILABLE", "PROTOCOL_ERROR", "INTERNAL",
	"SESSION_EXPIRED", "DEADLOCK",
};

/* Milliseconds on the monotonic clock, with a fraction. */
static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Name of a code. */
static const char *code_name(int c)
{
	if (c >= 0 && c < (int)(sizeof code_names / sizeof code_names[0]))
		return code_names[c];
	return "?";
}

/* Connect to unix:PATH or tcp:HOST:PORT; -1 on failure. */
static int p_connect(const char *addr)
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
static int p_send(struct pconn *c, Semd__Request *req)
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
static Semd__Reply *p_read(struct pconn *c, int ms)
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
static int p_command(struct pconn *c, char *line)
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
static int p_hello(struct pconn *c)
{
	char line[] = "hello";
	int r;

	quiet = true;
	r = p_command(c, line);
	quiet = false;
	return r;
}

/* Send q as the connection's next request; returns its id, 0 if the write failed. */
static uint64_t p_send_next(struct pconn *c, struct req *q)
{
	q->r.id = c->next_id++;
	return p_send(c, &q->r) == 0 ? q->r.id : 0;
}

/* A down of one permit, sent; returns its id. */
static uint64_t p_down(struct pconn *c, const char *name, int64_t timeout)
{
	struct req q;

	req_make(&q, 0, SEMD__REQUEST__OP_DOWN, "name=%s n=%d timeout_ms=%" PRId64,
	    name, 1, timeout);
	return p_send_next(c, &q);
}

/* Send a ping and wait for its pong (a barrier). */
static int p_sync(struct pconn *c)
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
static int p_up(struct pconn *c, const char *name)
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
static void p_nofile(int n)
{
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < (rlim_t)n + 64) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)n + 64 ? rl.rlim_max : (rlim_t)n + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* n connections, not connected yet (fd -1), ids from 1; NULL without memory. */
static struct pconn **p_alloc_many(int n)
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
static struct pconn **p_connect_many(const char *addr, int n)
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
static struct pconn **p_open_many(const char *addr, int n)
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
static void p_close_many(struct pconn **cs, int n)
{
	int i;

	for (i = 0; cs != NULL && i < n; i++) {
		if (cs[i] != NULL && cs[i]->fd >= 0)
			close(cs[i]->fd);
		free(cs[i]);
	}
	free(cs);
}

/* N waiters on N connections: granted strictly in arrival order. */
static int mode_fifo(const char *addr, int n)
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
static int mode_many(const char *addr, int n)
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
static int mode_burst(const char *addr, int n)
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
static int mode_timeout(const char *addr, int ms)
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


/* Counts of reply codes and the first message of each, for the modes below. */
struct tally {
	int	n[16];
	char	msg[16][160];
	int	none;		/* no reply: closed or timed out */
};

/* Count one reply (NULL: none came). */
static void tally_add(struct tally *t, const Semd__Reply *r)
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
static void tally_print(const char *what, const struct tally *t)
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
static int mode_sessions(const char *addr, int n, int lease_ms)
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
static int mode_flood(const char *addr, int conns, int n, int hold_ms,
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
static int mode_idle(const char *addr, int n, int hold_ms)
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
static int mode_latency(const char *addr, int n, int gap_ms)
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
static int mode_watchers(const char *addr, int nw, const char *name, int n)
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
static int mode_stress(const char *addr, int n, int k, int ms, unsigned seed)
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
