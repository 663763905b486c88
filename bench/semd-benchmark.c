/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/semd-benchmark.c - load generator and latency meter for semd, in the
 * manner of redis-benchmark: it speaks the wire protocol directly, keeps
 * `-P` operations in flight on each of `-c` connections from one epoll
 * thread per core, and prints throughput and a latency summary per test.
 *
 * Set-up and clean-up (creating the names a test uses, reading Stats) go
 * over one blocking control connection, outside the measured window.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/bench.h"

static const char *const test_names[T_COUNT] = {
	[T_PING] = "ping", [T_DOWN_UP] = "down-up", [T_TRYDOWN_UP] = "trydown-up",
	[T_CONTENDED] = "contended", [T_HANDOFF] = "handoff", [T_CHURN] = "churn",
	[T_NAMES] = "names", [T_ECHO] = "echo", [T_RATE] = "rate", [T_MULTI] = "multi",
	[T_DOWN3] = "down3", [T_INFO] = "info",
};

/* Round trips per op, for reading ops/s against the anchors. */
static const int test_rts[T_COUNT] = {
	[T_PING] = 1, [T_DOWN_UP] = 2, [T_TRYDOWN_UP] = 2, [T_CONTENDED] = 2,
	[T_HANDOFF] = 0, [T_CHURN] = 3, [T_NAMES] = 1, [T_ECHO] = 2,
	[T_RATE] = 1, [T_MULTI] = 4, [T_DOWN3] = 6, [T_INFO] = 1,
};

/* The blocking control connection. */
struct ctl {
	int			fd;
	SSL			*ssl;
	struct wbuf		out;
	struct wbuf		in;
	struct wire_arena	arena;
	uint64_t		seq;
};

/* Stats counters read around the names test. */
struct names_mem {
	int		have_mem;
	int		have_names;
	char		mem_counter[64];
	char		names_counter[64];
	uint64_t	mem[3];
	uint64_t	names[3];
	char		counters[512];	/* what the daemon exposes, when one is missing */
};

/* All Stats counters at one moment. */
#define SNAP_MAX	64
struct snap {
	unsigned	n;
	char		name[SNAP_MAX][48];
	uint64_t	v[SNAP_MAX];
};

/* What the daemon counted during a test (Stats after minus before). */
struct server_delta {
	int		have;
	uint64_t	grants;
	uint64_t	errors;
	int		have_allocs;
	uint64_t	allocs;
};

/* Print the usage text to f. */
static void usage(FILE *f)
{
	fprintf(f,
	    "usage: semd-benchmark -s ADDR [-c CONNS] [-P PIPELINE] [-d SECONDS] [-t TEST[,TEST...]]\n"
	    "                      [--limit K] [--names N] [--keep-names] [--threads T]\n"
	    "                      [--groups N | --priority]\n"
	    "                      [--warmup SECONDS] [--timeout MS] [--json]\n"
	    "                      [--tls-ca FILE] [--tls-cert FILE] [--tls-key FILE] [--tls-insecure]\n"
	    "                      [--tls-resume]\n"
	    "  -s ADDR       unix:PATH, tcp:HOST:PORT or tls:HOST:PORT; or HTTP/JSON,\n"
	    "                http:HOST:PORT or http+unix:PATH (ping, down-up, trydown-up,\n"
	    "                info; with --control)\n"
	    "  --control ADDR  over HTTP: the same daemon's binary address, where the\n"
	    "                names are made and its Stats read\n"
	    "  -c CONNS      connections (default 16; handoff: 2, with --groups N: N + 1)\n"
	    "  -P PIPELINE   operations in flight per connection (default 1)\n"
	    "  -d SECONDS    measured time per test (default 5)\n"
	    "  -t TESTS      ping,down-up,trydown-up,contended,handoff,churn,names\n"
	    "                (default: all of them); echo = raw 32-byte frames, to\n"
	    "                calibrate this tool against the reference echo server;\n"
	    "                rate, multi, down3 (issue 15's costs), info (a read)\n"
	    "                when asked for\n"
	    "  --limit K     the contended name's limit (default 1)\n"
	    "  --names N     names created by the names test (default 100000)\n"
	    "  --keep-names  the names test leaves its names in place (no deletes)\n"
	    "  --groups N    handoff: the name has fair shares by key, connection i's\n"
	    "                downs are of group g(i mod N) (N + 1 connections: N waiting)\n"
	    "  --priority    handoff: connection i's downs are of class (i mod 16) - 8\n"
	    "  --threads T   worker threads (default: one per core)\n"
	    "  --warmup S    seconds run before measuring, discarded (default 0.5)\n"
	    "  --timeout MS  down's timeout_ms (default -1: wait forever)\n"
	    "  --json        one JSON document instead of the table\n"
	    "  --tls-ca FILE   CAs to verify the server with (default: the system's;\n"
	    "                  also SEMD_TLS_CA), --tls-cert/--tls-key FILE: client\n"
	    "                  certificate for mutual TLS (SEMD_TLS_CERT, SEMD_TLS_KEY),\n"
	    "                  --tls-insecure: do not verify the server\n"
	    "  --tls-resume  churn: each connection resumes the TLS session of the last\n"
	    "                one (session tickets); handshakes/s, full and resumed,\n"
	    "                are reported for churn over TLS either way\n"
	    "One op: ping = 1 round trip; down-up, trydown-up, contended = down + up;\n"
	    "handoff = an up to the next waiter's grant; churn = connect, hello, down, up,\n"
	    "close; names = one create; rate = a down on a rate-only name (its bucket\n"
	    "never short, nothing to give back); multi = a down of 3 names at once and\n"
	    "their 3 ups; down3 = the same 3 names taken by 3 downs, then 3 ups;\n"
	    "info = an Info of the connection's name (a read).\n");
}

/*
 * An option that sets a field of the options, by the one of its pointers
 * that is set: a switch (*flag = 1), a string (*str, argv's own), or a
 * non-negative integer from min to max (*u, an unsigned, or *u64).
 */
struct opt_field {
	int		ch;
	const char	*what;		/* an integer's option, for its message */
	uint64_t	min;
	uint64_t	max;
	unsigned	*u;
	uint64_t	*u64;
	int		*flag;
	const char	**str;
};

/*
 * Set the fields that option ch sets among the n of fields, from its
 * argument s. Returns how many it set (0: ch is none of them), or -1 when
 * s is not an integer in range.
 */
static int opt_fields_set(const struct opt_field *fields, size_t n, int ch, const char *s)
{
	const struct opt_field *f;
	char *end;
	unsigned long long x;
	int set = 0;

	for (f = fields; f < fields + n; f++) {
		if (f->ch != ch)
			continue;
		set++;
		if (f->flag != NULL) {
			*f->flag = 1;
			continue;
		}
		if (f->str != NULL) {
			*f->str = s;
			continue;
		}
		errno = 0;
		x = strtoull(s, &end, 10);
		if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || x < f->min ||
		    x > f->max) {
			fprintf(stderr, "semd-benchmark: %s must be an integer in [%" PRIu64 ", %"
			    PRIu64 "]\n", f->what, f->min, f->max);
			return -1;
		}
		if (f->u != NULL)
			*f->u = (unsigned)x;
		else
			*f->u64 = x;
	}
	return set;
}

/* Parse a duration in seconds (> 0 unless zero_ok). */
static int opt_seconds(const char *what, const char *s, int zero_ok, double *v)
{
	char *end;
	double x;

	x = strtod(s, &end);
	if (end == s || *end != '\0' || !(x >= 0) || (x == 0 && !zero_ok) || x > 86400) {
		fprintf(stderr, "semd-benchmark: %s must be a number of seconds\n", what);
		return -1;
	}
	*v = x;
	return 0;
}

/* Parse a comma-separated list of tests. */
static int opt_tests(const char *s, int tests[T_COUNT])
{
	char buf[256], *tok, *save = NULL;
	int i, found;

	memset(tests, 0, sizeof(int) * T_COUNT);
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		found = 0;
		for (i = 0; i < T_COUNT; i++) {
			if (strcmp(tok, test_names[i]) == 0) {
				tests[i] = 1;
				found = 1;
			}
		}
		if (!found) {
			fprintf(stderr, "semd-benchmark: unknown test '%s'\n", tok);
			return -1;
		}
	}
	return 0;
}

/*
 * Over HTTP: the tests it has (ping, down-up, trydown-up, info; by default
 * those of them asked for), and a control address. 0, or -1 said why.
 */
static int http_tests_only(struct bench_opts *o, int given)
{
	int i;

	for (i = 0; i < T_COUNT; i++) {
		if (i == T_PING || i == T_DOWN_UP || i == T_TRYDOWN_UP || i == T_INFO)
			continue;
		if (o->tests[i] && given) {
			fprintf(stderr, "semd-benchmark: %s is not measured over HTTP\n",
			    test_names[i]);
			return -1;
		}
		o->tests[i] = 0;	/* the default set: what HTTP has */
	}
	if (!o->has_ctl) {
		fprintf(stderr, "semd-benchmark: over HTTP, --control ADDR: the "
		    "daemon's binary address (names, Stats)\n");
		return -1;
	}
	if (o->pipeline > 1) {
		fprintf(stderr, "semd-benchmark: over HTTP, -P 1 (HTTP/1.1 answers "
		    "one request at a time)\n");
		return -1;
	}
	return 0;
}

/* The options' defaults; opts_parse adds the TLS files and threads at run time. */
static const struct bench_opts opts_default = {
	.conns = 16,
	.pipeline = 1,
	.duration = 5,
	.warmup = 0.5,
	.limit = 1,
	.names = 100000,
	.timeout_ms = -1,
};

/* Parse argv into o. Returns 0, 1 for --help, -1 on a usage error. */
static int opts_parse(int argc, char **argv, struct bench_opts *o)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "connections", required_argument, NULL, 'c' },
		{ "pipeline", required_argument, NULL, 'P' },
		{ "duration", required_argument, NULL, 'd' },
		{ "tests", required_argument, NULL, 't' },
		{ "limit", required_argument, NULL, 'L' },
		{ "names", required_argument, NULL, 'N' },
		{ "keep-names", no_argument, NULL, 'k' },
		{ "groups", required_argument, NULL, 'G' },
		{ "priority", no_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 'T' },
		{ "warmup", required_argument, NULL, 'W' },
		{ "timeout", required_argument, NULL, 'O' },
		{ "json", no_argument, NULL, 'j' },
		{ "tls-ca", required_argument, NULL, 'A' },
		{ "tls-cert", required_argument, NULL, 'C' },
		{ "tls-key", required_argument, NULL, 'K' },
		{ "tls-insecure", no_argument, NULL, 'I' },
		{ "tls-resume", no_argument, NULL, 'R' },
		{ "control", required_argument, NULL, 'X' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *server = NULL, *control = NULL;
	const struct opt_field fields[] = {
		{ 's', .str = &server },
		{ 'X', .str = &control },
		{ 'c', "-c", 1, 100000, .u = &o->conns },
		{ 'c', .flag = &o->conns_set },
		{ 'P', "-P", 1, BENCH_PIPELINE_MAX, .u = &o->pipeline },
		{ 'L', "--limit", 1, UINT32_MAX, .u = &o->limit },
		{ 'N', "--names", 1, 100000000, .u64 = &o->names },
		{ 'k', .flag = &o->keep_names },
		{ 'G', "--groups", 1, BENCH_GROUPS_MAX, .u = &o->groups },
		{ 'p', .flag = &o->priority },
		{ 'T', "--threads", 1, 1024, .u = &o->threads },
		{ 'j', .flag = &o->json },
		{ 'A', .str = &o->tls.ca_file },
		{ 'C', .str = &o->tls.cert_file },
		{ 'K', .str = &o->tls.key_file },
		{ 'I', .flag = &o->tls.insecure },
		{ 'R', .flag = &o->tls_resume },
	};
	char err[256];
	long ncpu;
	int ch, i, set, tests_given = 0;

	*o = opts_default;
	o->tls.ca_file = getenv("SEMD_TLS_CA");
	o->tls.cert_file = getenv("SEMD_TLS_CERT");
	o->tls.key_file = getenv("SEMD_TLS_KEY");
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	o->threads = ncpu > 0 ? (unsigned)ncpu : 1;
	for (i = 0; i < T_COUNT; i++)
		o->tests[i] = i < T_ECHO;	/* echo, rate, multi, down3: asked for */
	while ((ch = getopt_long(argc, argv, "s:c:P:d:t:h", longopts, NULL)) != -1) {
		set = opt_fields_set(fields, sizeof(fields) / sizeof(fields[0]), ch, optarg);
		if (set < 0)
			return -1;
		if (set > 0)
			continue;
		switch (ch) {
		case 'd':
			if (opt_seconds("-d", optarg, 0, &o->duration) != 0)
				return -1;
			break;
		case 'W':
			if (opt_seconds("--warmup", optarg, 1, &o->warmup) != 0)
				return -1;
			break;
		case 't':
			if (opt_tests(optarg, o->tests) != 0)
				return -1;
			tests_given = 1;
			break;
		case 'O': {
			char *end;

			o->timeout_ms = strtoll(optarg, &end, 10);
			if (end == optarg || *end != '\0' || o->timeout_ms == 0) {
				fprintf(stderr, "semd-benchmark: --timeout must be a non-zero number of ms\n");
				return -1;
			}
			break;
		}
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (o->groups > 0 && o->priority) {
		fprintf(stderr, "semd-benchmark: a name with fair shares takes no priorities: "
		    "--groups or --priority\n");
		return -1;
	}
	if (optind != argc || server == NULL) {
		if (server == NULL)
			fprintf(stderr, "semd-benchmark: -s ADDR is required\n");
		usage(stderr);
		return -1;
	}
	if (wire_addr_parse(server, &o->addr, err, sizeof(err)) != 0) {
		fprintf(stderr, "semd-benchmark: %s\n", err);
		return -1;
	}
	if (control != NULL && (wire_addr_parse(control, &o->ctl_addr, err,
	    sizeof(err)) != 0 || o->ctl_addr.is_http)) {
		fprintf(stderr, "semd-benchmark: --control %s: %s\n", control,
		    o->ctl_addr.is_http ? "the binary protocol's address" : err);
		return -1;
	}
	o->has_ctl = control != NULL;
	if (o->addr.is_http && http_tests_only(o, tests_given) != 0)
		return -1;
	if (o->addr.is_tls || (o->has_ctl && o->ctl_addr.is_tls)) {
		o->tls_ctx = wire_tls_ctx_new(&o->tls, err, sizeof(err));
		if (o->tls_ctx == NULL) {
			fprintf(stderr, "semd-benchmark: %s\n", err);
			return -1;
		}
	}
	return 0;
}

/* Close the control connection. */
static void ctl_close(struct ctl *c)
{
	wire_close(&c->fd, &c->ssl);
	wbuf_free(&c->out);
	wbuf_free(&c->in);
	wire_arena_free(&c->arena);
}

/* Write everything queued on the control connection. */
static int ctl_flush(struct ctl *c)
{
	return wbuf_send_all(&c->out, c->fd, c->ssl);
}

/* Read the next reply on the control connection (NULL on error or EOF). */
static Semd__Reply *ctl_read(struct ctl *c)
{
	const uint8_t *p;
	size_t len;
	ssize_t n;
	int rc;

	for (;;) {
		rc = wire_next_frame(&c->in, WIRE_REPLY_MAX, &p, &len);
		if (rc < 0)
			return NULL;
		if (rc == 1)
			return wire_reply_unpack(&c->arena, p, len);
		wbuf_compact(&c->in);
		if (wbuf_reserve(&c->in, 64 * 1024) != 0)
			return NULL;
		n = wire_recv(c->fd, c->ssl, c->in.p + c->in.len, c->in.cap - c->in.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		c->in.len += (size_t)n;
	}
}

/*
 * Send what is queued and collect n replies. A reply whose code is not OK
 * (nor EXISTS/NOT_FOUND when tolerated) is a failure, reported once.
 */
static int ctl_collect(struct ctl *c, unsigned n, int tolerate, const char *what)
{
	Semd__Reply *rep;
	int rc = 0;

	if (ctl_flush(c) != 0) {
		fprintf(stderr, "semd-benchmark: %s: write failed\n", what);
		return -1;
	}
	while (n-- > 0) {
		rep = ctl_read(c);
		if (rep == NULL) {
			fprintf(stderr, "semd-benchmark: %s: connection lost or bad reply\n", what);
			return -1;
		}
		if (rep->code != SEMD__CODE__OK &&
		    !(tolerate && (rep->code == SEMD__CODE__EXISTS || rep->code == SEMD__CODE__NOT_FOUND)) &&
		    rc == 0) {
			fprintf(stderr, "semd-benchmark: %s: %s %s\n", what,
			    wire_code_name(rep->code), rep->message);
			rc = -1;
		}
		wire_reply_done(&c->arena, rep);
	}
	return rc;
}

/* Connect the control connection and say Hello. */
static int ctl_open(struct ctl *c, const struct bench_opts *o)
{
	const struct wire_addr *a = o->has_ctl ? &o->ctl_addr : &o->addr;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (wire_arena_init(&c->arena, 64 * 1024) != 0)
		return -1;

	c->fd = wire_connect(a, 0);
	if (c->fd < 0) {
		fprintf(stderr, "semd-benchmark: connect %s: %s\n", a->text, strerror(-c->fd));
		return -1;
	}
	if (a->is_tls) {
		char err[512];

		c->ssl = wire_tls_handshake(o->tls_ctx, c->fd, a->host, o->tls.insecure,
		    err, sizeof(err));
		if (c->ssl == NULL) {
			fprintf(stderr, "semd-benchmark: %s\n", err);
			return -1;
		}
	}
	if (wire_put_hello(&c->out, ++c->seq, "semd-benchmark") != 0)
		return -1;
	return ctl_collect(c, 1, 0, "hello");
}

/* Create (or delete) the names a test's connections use, in batches. */
static int ctl_names(struct ctl *c, const struct run *r, int create)
{
	unsigned i, k, batch = 0, n = r->test == T_CONTENDED || r->test == T_HANDOFF ? 1 : r->conns;
	unsigned each = r->test == T_MULTI || r->test == T_DOWN3 ? BENCH_MULTI : 1;
	char name[112];
	int rc = 0;

	for (i = 0; i < n; i++) {
		for (k = 0; k < each && rc == 0; k++) {
			if (each > 1)
				bench_conn_name_k(r, i, k, name, sizeof(name));
			else
				bench_conn_name(r, i, name, sizeof(name));
			if (!create)
				rc = wire_put_delete(&c->out, ++c->seq, name, 1);
			else if (r->test == T_HANDOFF && r->o->groups > 0)
				rc = wire_put_create_share(&c->out, ++c->seq, name, r->limit);
			else if (r->test == T_RATE)	/* a bucket that never runs short */
				rc = wire_put_create_rate(&c->out, ++c->seq, name, 0,
				    1u << 30, 1000, 1u << 30);
			else
				rc = wire_put_create(&c->out, ++c->seq, name, r->limit, 1);
			batch++;
		}
		if (rc != 0)
			return -1;
		if (batch >= 256 || i + 1 == n) {
			if (ctl_collect(c, batch, !create, create ? "create" : "delete") != 0)
				return -1;
			batch = 0;
		}
	}
	return 0;
}

/* Read Stats; pick the memory and name-count counters into m at slot k. */
static int ctl_stats(struct ctl *c, struct names_mem *m, int k)
{
	static const char *const mem_names[] = {
		"memory_bytes", "mem_bytes", "memory", "used_memory", "allocated_bytes", NULL,
	};
	static const char *const count_names[] = {
		"semaphores", "names", "names_count", NULL,
	};
	Semd__Reply *rep;
	size_t i, off = 0;
	int j;

	if (wire_put_stats(&c->out, ++c->seq) != 0 || ctl_flush(c) != 0)
		return -1;
	rep = ctl_read(c);
	if (rep == NULL)
		return -1;
	if (rep->code != SEMD__CODE__OK) {
		fprintf(stderr, "semd-benchmark: stats: %s %s\n", wire_code_name(rep->code), rep->message);
		wire_reply_done(&c->arena, rep);
		return -1;
	}
	m->have_mem = m->have_names = 0;
	for (j = 0; mem_names[j] != NULL && !m->have_mem; j++) {
		if (wire_stats_get(rep, mem_names[j], &m->mem[k])) {
			m->have_mem = 1;
			snprintf(m->mem_counter, sizeof(m->mem_counter), "%s", mem_names[j]);
		}
	}
	for (j = 0; count_names[j] != NULL && !m->have_names; j++) {
		if (wire_stats_get(rep, count_names[j], &m->names[k])) {
			m->have_names = 1;
			snprintf(m->names_counter, sizeof(m->names_counter), "%s", count_names[j]);
		}
	}
	m->counters[0] = '\0';
	if (rep->body_case == SEMD__REPLY__BODY_STATS && rep->stats != NULL) {
		for (i = 0; i < rep->stats->n_counters && off + 1 < sizeof(m->counters); i++) {
			int w = snprintf(m->counters + off, sizeof(m->counters) - off, "%s%s",
			    i ? "," : "", rep->stats->counters[i]->name);

			if (w < 0)
				break;
			off += (size_t)w;
		}
	}
	wire_reply_done(&c->arena, rep);
	return 0;
}

/* Read every Stats counter into s. */
static int ctl_snapshot(struct ctl *c, struct snap *s)
{
	Semd__Reply *rep;
	size_t i;

	s->n = 0;
	if (wire_put_stats(&c->out, ++c->seq) != 0 || ctl_flush(c) != 0)
		return -1;
	rep = ctl_read(c);
	if (rep == NULL)
		return -1;
	if (rep->code == SEMD__CODE__OK && rep->body_case == SEMD__REPLY__BODY_STATS &&
	    rep->stats != NULL) {
		for (i = 0; i < rep->stats->n_counters && s->n < SNAP_MAX; i++) {
			snprintf(s->name[s->n], sizeof(s->name[s->n]), "%s",
			    rep->stats->counters[i]->name);
			s->v[s->n++] = rep->stats->counters[i]->value;
		}
	}
	wire_reply_done(&c->arena, rep);
	return 0;
}

/* The growth of counter name between two snapshots; 1 when it is in both. */
static int snap_delta(const struct snap *a, const struct snap *b, const char *name, uint64_t *d)
{
	unsigned i, j;

	for (i = 0; i < a->n; i++) {
		if (strcmp(a->name[i], name) != 0)
			continue;
		for (j = 0; j < b->n; j++) {
			if (strcmp(b->name[j], name) == 0) {
				*d = b->v[j] >= a->v[i] ? b->v[j] - a->v[i] : 0;
				return 1;
			}
		}
	}
	return 0;
}

/* Print s as the inside of a JSON string. */
static void json_str(const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
}

/* Microseconds from nanoseconds. */
static double us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

/* Print one result row (table) or object (JSON). */
static void report(const struct bench_opts *o, const struct run *r, const struct names_mem *m,
    const struct server_delta *sd, double delete_rate, int *first)
{
	const struct hist *h = &r->t.lat;
	double ops_s = r->elapsed_s > 0 ? (double)r->t.ops / r->elapsed_s : 0;
	double cpu_pct = r->elapsed_s > 0 ? 100.0 * r->cpu_s / ((double)(r->t_stop - r->t0) / 1e9) : 0;
	double cpu_ns_rt = r->t.rts ? r->cpu_s * 1e9 / (double)r->t.rts : 0;
	double fair = r->grants_min ? (double)r->grants_max / (double)r->grants_min : 0;
	double per_name = 0;
	uint64_t created = o->names;
	int hs = o->addr.is_tls && r->test == T_CHURN;
	double hs_full_s = r->elapsed_s > 0 ? (double)r->t.hs_full / r->elapsed_s : 0;
	double hs_res_s = r->elapsed_s > 0 ? (double)r->t.hs_resumed / r->elapsed_s : 0;
	char rt[16];

	if (m != NULL && m->have_names && m->names[1] > m->names[0])
		created = m->names[1] - m->names[0];
	if (m != NULL && m->have_mem && m->mem[1] >= m->mem[0] && created > 0)
		per_name = (double)(m->mem[1] - m->mem[0]) / (double)created;
	if (o->json) {
		printf("%s\n    {\"test\": \"%s\", \"conns\": %u, \"pipeline\": %u, \"threads\": %u, "
		    "\"duration_s\": %.3f, \"ops\": %" PRIu64 ", \"ops_per_sec\": %.0f, "
		    "\"round_trips_per_op\": %d, \"round_trips\": %" PRIu64 ", "
		    "\"latency_us\": {\"p50\": %.1f, \"p99\": %.1f, \"p999\": %.1f, \"max\": %.1f, \"mean\": %.1f}, "
		    "\"refused\": %" PRIu64 ", \"timeouts\": %" PRIu64 ", "
		    "\"client_cpu_pct\": %.0f, \"client_cpu_ns_per_round_trip\": %.0f",
		    *first ? "" : ",", test_names[r->test], r->conns, r->pipeline, r->nworkers,
		    r->elapsed_s, r->t.ops, ops_s, test_rts[r->test], r->t.rts,
		    us(hist_quantile(h, 0.5)), us(hist_quantile(h, 0.99)), us(hist_quantile(h, 0.999)),
		    us(h->count ? h->max : 0), hist_mean(h) / 1000.0,
		    r->t.refused, r->t.timeouts, cpu_pct, cpu_ns_rt);
		if (r->test == T_CONTENDED)
			printf(", \"limit\": %u, \"wait_us\": {\"p50\": %.1f, \"p99\": %.1f, \"p999\": %.1f, "
			    "\"max\": %.1f}, \"grants_min\": %" PRIu64 ", \"grants_max\": %" PRIu64
			    ", \"fairness_max_over_min\": %.3f",
			    r->limit, us(hist_quantile(&r->t.wait, 0.5)), us(hist_quantile(&r->t.wait, 0.99)),
			    us(hist_quantile(&r->t.wait, 0.999)), us(r->t.wait.count ? r->t.wait.max : 0),
			    r->grants_min, r->grants_max, fair);
		if ((r->test == T_DOWN_UP || r->test == T_TRYDOWN_UP) && r->t.acq.count > 0)
			printf(", \"acquire_us\": {\"p50\": %.1f, \"p99\": %.1f, \"p999\": %.1f, "
			    "\"max\": %.1f}", us(hist_quantile(&r->t.acq, 0.5)),
			    us(hist_quantile(&r->t.acq, 0.99)), us(hist_quantile(&r->t.acq, 0.999)),
			    us(r->t.acq.max));
		if (r->test == T_HANDOFF)
			printf(", \"direct_grants\": %" PRIu64 ", \"groups\": %u, \"priority\": %s",
			    r->t.direct, o->groups, o->priority ? "true" : "false");
		if (hs)
			printf(", \"tls_resume\": %s, \"tls_handshakes_full\": %" PRIu64
			    ", \"tls_handshakes_resumed\": %" PRIu64
			    ", \"tls_full_per_sec\": %.0f, \"tls_resumed_per_sec\": %.0f",
			    o->tls_resume ? "true" : "false", r->t.hs_full, r->t.hs_resumed,
			    hs_full_s, hs_res_s);
		if (sd != NULL && sd->have) {
			printf(", \"client_grants\": %" PRIu64 ", \"server_grants\": %" PRIu64
			    ", \"server_errors\": %" PRIu64, r->t.grants_all, sd->grants, sd->errors);
			if (sd->have_allocs)
				printf(", \"server_allocations_per_round_trip\": %.3f",
				    r->t.rts ? (double)sd->allocs / (double)r->t.rts : 0.0);
		}
		if (m != NULL) {
			printf(", \"names\": %" PRIu64 ", \"deletes_per_sec\": %.0f", o->names, delete_rate);
			if (m->have_mem)
				printf(", \"memory_counter\": \"%s\", \"memory_before\": %" PRIu64
				    ", \"memory_after\": %" PRIu64 ", \"memory_after_delete\": %" PRIu64
				    ", \"bytes_per_name\": %.1f",
				    m->mem_counter, m->mem[0], m->mem[1], m->mem[2], per_name);
			else {
				printf(", \"memory_counter\": null, \"stats_counters\": \"");
				json_str(m->counters);
				printf("\"");
			}
		}
		printf("}");
		*first = 0;
		return;
	}
	if (*first) {
		printf("%-11s %6s %4s %3s %11s %3s %9s %9s %9s %9s  %s\n", "test", "conns", "P", "thr",
		    "ops/s", "rt", "p50_us", "p99_us", "p99.9_us", "max_us", "notes");
		*first = 0;
	}
	snprintf(rt, sizeof(rt), "%d", test_rts[r->test]);
	printf("%-11s %6u %4u %3u %11.0f %3s %9.1f %9.1f %9.1f %9.1f  ", test_names[r->test],
	    r->conns, r->pipeline, r->nworkers, ops_s, test_rts[r->test] ? rt : "-",
	    us(hist_quantile(h, 0.5)), us(hist_quantile(h, 0.99)), us(hist_quantile(h, 0.999)),
	    us(h->count ? h->max : 0));
	if (r->test == T_TRYDOWN_UP)
		printf("refused=%" PRIu64 " ", r->t.refused);
	if ((r->test == T_DOWN_UP || r->test == T_TRYDOWN_UP) && r->t.acq.count > 0)
		printf("acquire_us p50=%.1f p99=%.1f ", us(hist_quantile(&r->t.acq, 0.5)),
		    us(hist_quantile(&r->t.acq, 0.99)));
	if (r->test == T_CONTENDED)
		printf("limit=%u wait_us p50=%.1f p99=%.1f p99.9=%.1f max=%.1f fairness(max/min)=%.2f ",
		    r->limit, us(hist_quantile(&r->t.wait, 0.5)), us(hist_quantile(&r->t.wait, 0.99)),
		    us(hist_quantile(&r->t.wait, 0.999)), us(r->t.wait.count ? r->t.wait.max : 0), fair);
	if (r->test == T_HANDOFF)
		printf("up->next grant; direct=%" PRIu64 " %s", r->t.direct,
		    o->priority ? "priority classes -8..7 " : "");
	if (r->test == T_HANDOFF && o->groups > 0)
		printf("groups=%u (fair shares) ", o->groups);
	if (hs)
		printf("tls handshakes/s full=%.0f resumed=%.0f ", hs_full_s, hs_res_s);
	if (m != NULL) {
		printf("%" PRIu64 " creates, %.0f deletes/s, ", o->names, delete_rate);
		if (m->have_mem)
			printf("%.1f bytes/name (%s) ", per_name, m->mem_counter);
		else
			printf("memory per name: the daemon's Stats has no memory counter (has: %s) ",
			    m->counters);
	}
	if (r->t.timeouts)
		printf("timeouts=%" PRIu64 " ", r->t.timeouts);
	if (sd != NULL && sd->have && sd->errors)
		printf("server_errors=%" PRIu64 " ", sd->errors);
	if (sd != NULL && sd->have_allocs)
		printf("allocs/rt=%.3f ", r->t.rts ? (double)sd->allocs / (double)r->t.rts : 0.0);
	printf("cpu=%.0f%%\n", cpu_pct);
	fflush(stdout);
}

/* Fill in the shape of test t's run from the options. */
static void run_init(struct run *r, const struct bench_opts *o, int t)
{
	memset(r, 0, sizeof(*r));
	r->o = o;
	r->test = t;
	r->conns = o->conns;
	r->pipeline = o->pipeline;
	r->limit = o->pipeline;
	snprintf(r->prefix, sizeof(r->prefix), "bench/%ld", (long)getpid());
	switch (t) {
	case T_CONTENDED:
		r->limit = o->limit;
		break;
	case T_HANDOFF:
		if (!o->conns_set)
			r->conns = o->groups + 1 > 2 ? o->groups + 1 : 2;
		r->pipeline = 1;
		r->limit = 1;
		break;
	case T_CHURN:
		r->pipeline = 1;
		r->limit = 1;
		break;
	case T_NAMES:
		r->step = S_CREATE;
		break;
	default:
		break;
	}
}

/* Run test t with its set-up and clean-up; print its result. */
static int bench_test(const struct bench_opts *o, int t, int *first)
{
	struct run r, del;
	struct names_mem m;
	struct server_delta sd;
	struct snap before, after;
	struct ctl c;
	double delete_rate = 0;
	int rc = -1, named = t != T_PING && t != T_ECHO && t != T_NAMES;

	run_init(&r, o, t);
	memset(&m, 0, sizeof(m));
	memset(&sd, 0, sizeof(sd));
	if (t == T_HANDOFF && r.conns < 2) {
		fprintf(stderr, "semd-benchmark: handoff needs at least 2 connections\n");
		return -1;
	}
	if (t == T_ECHO) {
		rc = bench_run(&r);
		if (rc == 0)
			report(o, &r, NULL, NULL, 0, first);
		return rc;
	}
	if (ctl_open(&c, o) != 0)
		goto out;
	if (named && ctl_names(&c, &r, 1) != 0)
		goto out;
	if (t == T_NAMES && ctl_stats(&c, &m, 0) != 0)
		goto out;
	if (ctl_snapshot(&c, &before) != 0)
		goto out;
	if (bench_run(&r) != 0)
		goto out;
	if (ctl_snapshot(&c, &after) != 0)
		goto out;
	sd.have = snap_delta(&before, &after, "grants", &sd.grants) &&
	    snap_delta(&before, &after, "errors", &sd.errors);
	sd.have_allocs = snap_delta(&before, &after, "allocations", &sd.allocs);
	if (t == T_NAMES) {
		if (r.t.ops != o->names) {
			fprintf(stderr, "semd-benchmark: names: only %" PRIu64 " of %" PRIu64
			    " creates done in %d s\n", r.t.ops, o->names, BENCH_NAMES_CAP_S);
			goto out;
		}
		if (ctl_stats(&c, &m, 1) != 0)
			goto out;
		if (!o->keep_names) {
			run_init(&del, o, t);
			del.step = S_DELETE;
			if (bench_run(&del) != 0)
				goto out;
			delete_rate = del.elapsed_s > 0 ?
			    (double)del.t.ops / del.elapsed_s : 0;
		}
		if (ctl_stats(&c, &m, 2) != 0)
			goto out;
	}
	report(o, &r, t == T_NAMES ? &m : NULL, &sd, delete_rate, first);
	rc = 0;
out:
	if (named && c.fd >= 0)
		(void)ctl_names(&c, &r, 0);
	ctl_close(&c);
	return rc;
}

/* Raise the open-file limit to what many connections need. */
static void raise_nofile(unsigned conns)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur >= (rlim_t)conns + 64)
		return;
	rl.rlim_cur = rl.rlim_max;
	(void)setrlimit(RLIMIT_NOFILE, &rl);
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	int t, rc, failed = 0, first = 1;

	rc = opts_parse(argc, argv, &o);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	signal(SIGPIPE, SIG_IGN);
	raise_nofile(o.conns > o.groups + 1 ? o.conns : o.groups + 1);
	if (o.json) {
		printf("{\"server\": \"");
		json_str(o.addr.text);
		printf("\", \"results\": [");
	} else {
		printf("semd-benchmark %s: %u connections, pipeline %u, up to %u threads, %.1f s per test (+%.1f s warm-up)\n",
		    o.addr.text, o.conns, o.pipeline, o.threads, o.duration, o.warmup);
	}
	for (t = 0; t < T_COUNT; t++) {
		if (!o.tests[t])
			continue;
		if (t == T_NAMES && o.names == 0)
			continue;
		if (bench_test(&o, t, &first) != 0) {
			fprintf(stderr, "semd-benchmark: test %s failed\n", test_names[t]);
			failed = 1;
		}
	}
	if (o.json)
		printf("\n]}\n");
	SSL_CTX_free(o.tls_ctx);
	return failed ? 1 : 0;
}
