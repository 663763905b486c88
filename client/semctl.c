/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/semctl.c - semctl, the command line of semd. It uses only the
 * public libsemclient API (semclient.h).
 *
 * Exit codes (stable, see semctl(1)): 0 ok or acquired, 1 timed out or would
 * block, 2 usage, 3 cannot reach or talk to the server, 4 permission denied,
 * 5 hold lost, 6 not found / not holder / other server error. `run` exits
 * with its command's status (128+signal if it was killed) otherwise.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "client/semclient.h"

enum {
	EX_OK_ = 0,
	EX_TIMEOUT_ = 1,
	EX_USAGE_ = 2,
	EX_SERVER_ = 3,
	EX_PERM_ = 4,
	EX_LOST_ = 5,
	EX_ERROR_ = 6,
};

#define RUN_LEASE_MS	5000	/* run's default session lease: resumes a brief cut */
#define RUN_PING_MS	1000
#define RUN_GRACE_MS	5000	/* default: SIGTERM, then SIGKILL after this */

struct opts {
	const char *server;
	const char *tls_ca, *tls_cert, *tls_key;
	bool json;
	const char *cmd;
};

static struct opts g;

static const char usage_text[] =
"usage: semctl [-s ADDR] [--json] COMMAND [ARGS]\n"
"\n"
"Commands:\n"
"  create NAME --limit N [--mode owned|signal]\n"
"  down NAME [-n N] [--timeout DUR] [--lease DUR]   detached hold; prints the token\n"
"  trydown NAME [-n N]\n"
"  up NAME [-n N]\n"
"  run NAME [-n N] [--timeout DUR] [--lease DUR] [--grace DUR] -- CMD [ARG...]\n"
"  info NAME\n"
"  list [PREFIX] [--max N] [--after NAME]\n"
"  delete NAME [--force]\n"
"  set-limit NAME N\n"
"  validate NAME TOKEN\n"
"  release NAME --holder PERMIT_ID\n"
"  stats\n"
"  ping\n"
"\n"
"Options:\n"
"  -s, --server ADDR   unix:PATH, tcp:HOST:PORT or tls:HOST:PORT\n"
"                      (default $SEMD_SERVER, else unix:" SEMC_DEFAULT_UNIX ")\n"
"  -j, --json          machine-readable output\n"
"      --tls-ca FILE, --tls-cert FILE, --tls-key FILE\n"
"  -h, --help          this help\n"
"  -V, --version       print the version\n"
"Durations: 250ms, 5s, 2m, 1h (a bare number is seconds).\n"
"Exit: 0 ok, 1 timed out/would block, 2 usage, 3 server unreachable,\n"
"      4 permission denied, 5 hold lost, 6 other error; run: the command's.\n";

/* Print a usage error and exit 2. */
static void __attribute__((noreturn, format(printf, 1, 2))) usage_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "semctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'semctl --help'.\n");
	exit(EX_USAGE_);
}

/* Write s as a JSON string (escaped; invalid UTF-8 becomes U+FFFD). */
static void json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	putchar('"');
	while (*p) {
		unsigned char ch = *p;
		int len = 0, i;

		if (ch == '"' || ch == '\\') {
			printf("\\%c", ch);
		} else if (ch == '\n') {
			fputs("\\n", stdout);
		} else if (ch == '\t') {
			fputs("\\t", stdout);
		} else if (ch == '\r') {
			fputs("\\r", stdout);
		} else if (ch < 0x20 || ch == 0x7f) {
			printf("\\u%04x", ch);
		} else if (ch < 0x80) {
			putchar(ch);
		} else {
			if ((ch & 0xe0) == 0xc0 && ch >= 0xc2)
				len = 2;
			else if ((ch & 0xf0) == 0xe0)
				len = 3;
			else if ((ch & 0xf8) == 0xf0 && ch <= 0xf4)
				len = 4;
			for (i = 1; i < len; i++)
				if ((p[i] & 0xc0) != 0x80)
					len = 0;
			if (len == 0) {
				fputs("\\ufffd", stdout);
			} else {
				fwrite(p, 1, (size_t)len, stdout);
				p += len;
				continue;
			}
		}
		p++;
	}
	putchar('"');
}

/* The exit code for a library error. */
static int exit_code(int err)
{
	switch (err) {
	case SEMC_OK:
		return EX_OK_;
	case SEMC_E_TIMEOUT:
	case SEMC_E_WOULD_BLOCK:
		return EX_TIMEOUT_;
	case SEMC_E_PERMISSION:
		return EX_PERM_;
	case SEMC_E_HOLD_LOST:
	case SEMC_E_SESSION_EXPIRED:
		return EX_LOST_;
	case SEMC_E_CONNECT:
	case SEMC_E_DISCONNECTED:
	case SEMC_E_NO_REPLY:
	case SEMC_E_UNAVAILABLE:
	case SEMC_E_PROTOCOL:
	case SEMC_E_TLS:
	case SEMC_E_NOT_SUPPORTED:
		return EX_SERVER_;
	case SEMC_E_ADDRESS:
	case SEMC_E_ARG:
		return EX_USAGE_;
	}
	return EX_ERROR_;
}

/* A stable short name for an error, for JSON. */
static const char *err_name(int err)
{
	switch (err) {
	case SEMC_E_TIMEOUT: return "timeout";
	case SEMC_E_WOULD_BLOCK: return "would_block";
	case SEMC_E_NOT_FOUND: return "not_found";
	case SEMC_E_EXISTS: return "exists";
	case SEMC_E_NOT_HOLDER: return "not_holder";
	case SEMC_E_PERMISSION: return "permission_denied";
	case SEMC_E_INVALID: return "invalid_argument";
	case SEMC_E_EXHAUSTED: return "resource_exhausted";
	case SEMC_E_CANCELLED: return "cancelled";
	case SEMC_E_UNAVAILABLE: return "unavailable";
	case SEMC_E_PROTOCOL: return "protocol_error";
	case SEMC_E_INTERNAL: return "internal";
	case SEMC_E_SESSION_EXPIRED: return "session_expired";
	case SEMC_E_CONNECT: return "connect";
	case SEMC_E_DISCONNECTED: return "disconnected";
	case SEMC_E_HOLD_LOST: return "hold_lost";
	case SEMC_E_NO_REPLY: return "no_reply";
	case SEMC_E_ADDRESS: return "bad_address";
	case SEMC_E_TLS: return "tls";
	}
	return "error";
}

/* Report a failed call (stderr; also a JSON object on stdout) and give the exit code. */
static int fail(int err, const char *what)
{
	const char *msg = semc_last_message();

	if (*msg == '\0')
		msg = semc_strerror(err);
	fprintf(stderr, "semctl: %s: %s\n", what, msg);
	if (g.json) {
		printf("{\"ok\":false,\"error\":");
		json_str(err_name(err));
		printf(",\"code\":%d,\"message\":", err);
		json_str(msg);
		printf(",\"exit\":%d}\n", exit_code(err));
	}
	return exit_code(err);
}

/* Parse a positive count. */
static uint32_t parse_count(const char *s, const char *what, uint32_t min)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*s == '-' || *s == '\0' || *end != '\0' || errno != 0 || v > UINT32_MAX || v < min)
		usage_fail("%s: '%s' is not a number >= %u", what, s, min);
	return (uint32_t)v;
}

/* Parse a 64-bit number (tokens, permit ids). */
static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*s == '-' || *s == '\0' || *end != '\0' || errno != 0)
		usage_fail("%s: '%s' is not a number", what, s);
	return v;
}

/* Parse a duration option. */
static int64_t parse_dur(const char *s, const char *what)
{
	int64_t ms;

	if (semc_parse_duration(s, &ms) != 0)
		usage_fail("%s: '%s' is not a duration (250ms, 5s, 2m, 1h)", what, s);
	return ms;
}

/* Connect to the server with the global options. */
static int client_open(struct semc **out, uint32_t lease_ms, const char *name)
{
	struct semc *c = semc_new();
	int r;

	*out = NULL;
	if (c == NULL)
		return fail(SEMC_E_NOMEM, "connect");
	if (g.server != NULL && semc_set_address(c, g.server) != 0) {
		semc_free(c);
		usage_fail("-s: '%s' is not an address (unix:PATH, tcp:HOST:PORT, tls:HOST:PORT)",
			   g.server);
	}
	semc_set_client_name(c, name);
	semc_set_lease(c, lease_ms);
	semc_set_tls(c, g.tls_ca, g.tls_cert, g.tls_key);
	if ((r = semc_connect(c, -1)) != 0) {
		semc_free(c);
		return fail(r, "connect");
	}
	*out = c;
	return 0;
}

/* Command option table shared by the commands; each accepts a subset. */
enum { O_LIMIT = 1000, O_MODE, O_TIMEOUT, O_LEASE, O_FORCE, O_HOLDER, O_JSON,
	O_GRACE, O_MAX, O_AFTER };

static const struct option cmd_longopts[] = {
	{ "limit", required_argument, NULL, O_LIMIT },
	{ "mode", required_argument, NULL, O_MODE },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "lease", required_argument, NULL, O_LEASE },
	{ "force", no_argument, NULL, O_FORCE },
	{ "holder", required_argument, NULL, O_HOLDER },
	{ "grace", required_argument, NULL, O_GRACE },
	{ "max", required_argument, NULL, O_MAX },
	{ "after", required_argument, NULL, O_AFTER },
	{ "json", no_argument, NULL, O_JSON },
	{ "server", required_argument, NULL, 's' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct cmd_args {
	int argc;		/* positional arguments */
	char **argv;
	uint32_t n;
	bool n_set;
	uint32_t limit;
	bool limit_set;
	enum semc_mode mode;
	int64_t timeout_ms;	/* -1: forever */
	int64_t lease_ms;	/* -1: unset */
	bool force;
	uint64_t holder;
	bool holder_set;
	int64_t grace_ms;	/* -1: unset */
	uint64_t max;		/* 0: no limit */
	const char *after;
};

/* Parse a command's options; allowed lists the options it takes ("nltLfHGMA"). */
static void cmd_parse(int argc, char **argv, const char *allowed, struct cmd_args *a)
{
	int ch;

	memset(a, 0, sizeof *a);
	a->n = 1;
	a->timeout_ms = -1;
	a->lease_ms = -1;
	a->grace_ms = -1;
	optind = 0;	/* glibc: start over */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":n:s:hj", cmd_longopts, NULL)) != -1) {
		const char *letter = NULL;

		switch (ch) {
		case 'n': letter = "n"; break;
		case O_LIMIT: letter = "l"; break;
		case O_MODE: letter = "m"; break;
		case O_TIMEOUT: letter = "t"; break;
		case O_LEASE: letter = "L"; break;
		case O_FORCE: letter = "f"; break;
		case O_HOLDER: letter = "H"; break;
		case O_GRACE: letter = "G"; break;
		case O_MAX: letter = "M"; break;
		case O_AFTER: letter = "A"; break;
		case O_JSON: case 'j': g.json = true; continue;
		case 's': g.server = optarg; continue;	/* global, accepted here too */
		case 'h': fputs(usage_text, stdout); exit(EX_OK_);
		case ':': usage_fail("%s: option '%s' needs a value", g.cmd, argv[optind - 1]);
		default: usage_fail("%s: unknown option '%s'", g.cmd, argv[optind - 1]);
		}
		if (strchr(allowed, *letter) == NULL)
			usage_fail("%s: option '%s' does not apply", g.cmd, argv[optind - 1]);
		switch (ch) {
		case 'n':
			a->n = parse_count(optarg, "-n", 1);
			a->n_set = true;
			break;
		case O_LIMIT:
			a->limit = parse_count(optarg, "--limit", 1);
			a->limit_set = true;
			break;
		case O_MODE:
			if (strcmp(optarg, "owned") == 0)
				a->mode = SEMC_MODE_OWNED;
			else if (strcmp(optarg, "signal") == 0)
				a->mode = SEMC_MODE_SIGNAL;
			else
				usage_fail("--mode: '%s' is not owned or signal", optarg);
			break;
		case O_TIMEOUT:
			a->timeout_ms = parse_dur(optarg, "--timeout");
			break;
		case O_LEASE:
			a->lease_ms = parse_dur(optarg, "--lease");
			if (a->lease_ms < 1 || a->lease_ms > UINT32_MAX)
				usage_fail("--lease: '%s' is out of range", optarg);
			break;
		case O_FORCE:
			a->force = true;
			break;
		case O_HOLDER:
			a->holder = parse_u64(optarg, "--holder");
			a->holder_set = true;
			break;
		case O_GRACE:
			a->grace_ms = parse_dur(optarg, "--grace");
			if (a->grace_ms < 0 || a->grace_ms > 86400000)
				usage_fail("--grace: '%s' is out of range", optarg);
			break;
		case O_MAX:
			a->max = parse_u64(optarg, "--max");
			if (a->max == 0)
				usage_fail("--max: must be at least 1");
			break;
		case O_AFTER:
			a->after = optarg;
			break;
		}
	}
	a->argc = argc - optind;
	a->argv = argv + optind;
}

/* Require exactly want positional arguments. */
static void need_args(const struct cmd_args *a, int min, int max, const char *synopsis)
{
	if (a->argc < min || a->argc > max)
		usage_fail("usage: semctl %s", synopsis);
}

/* Print "ok" JSON for commands without a result body. */
static void json_ok(const char *name, const char *extra_key, int64_t extra)
{
	printf("{\"ok\":true");
	if (name != NULL) {
		printf(",\"name\":");
		json_str(name);
	}
	if (extra_key != NULL)
		printf(",\"%s\":%" PRId64, extra_key, extra);
	printf("}\n");
}

/* The mode as semctl spells it. */
static const char *mode_name(enum semc_mode m)
{
	return m == SEMC_MODE_SIGNAL ? "signal" : "owned";
}

/* create NAME --limit N [--mode owned|signal] */
static int cmd_create(int argc, char **argv)
{
	struct cmd_args a;
	struct semc *c;
	int r;

	cmd_parse(argc, argv, "lm", &a);
	need_args(&a, 1, 1, "create NAME --limit N [--mode owned|signal]");
	if (!a.limit_set)
		usage_fail("create: --limit N is required");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_create(c, a.argv[0], a.limit, a.mode, false);
	semc_free(c);
	if (r != 0)
		return fail(r, "create");
	if (g.json) {
		printf("{\"ok\":true,\"name\":");
		json_str(a.argv[0]);
		printf(",\"limit\":%u,\"mode\":\"%s\"}\n", a.limit, mode_name(a.mode));
	} else {
		printf("created %s (limit %u, %s)\n", a.argv[0], a.limit, mode_name(a.mode));
	}
	return 0;
}

/* Print a grant. */
static void grant_print(const char *name, const struct semc_grant *gr, int64_t lease_ms)
{
	if (!g.json) {
		printf("%" PRIu64 "\n", gr->token);
		return;
	}
	printf("{\"ok\":true,\"name\":");
	json_str(name);
	printf(",\"token\":%" PRIu64 ",\"permit_id\":%" PRIu64 ",\"n\":%u,\"waited_us\":%" PRIu64,
	       gr->token, gr->permit_id, gr->n, gr->waited_us);
	if (lease_ms >= 0)
		printf(",\"lease_ms\":%" PRId64, lease_ms);
	printf("}\n");
}

/* down/trydown: a detached hold owned by our principal. */
static int cmd_down(int argc, char **argv, bool try)
{
	struct cmd_args a;
	struct semc_grant gr;
	struct semc *c;
	uint32_t lease;
	int r;

	cmd_parse(argc, argv, try ? "n" : "ntL", &a);
	need_args(&a, 1, 1, try ? "trydown NAME [-n N]" :
		  "down NAME [-n N] [--timeout DUR] [--lease DUR]");
	/* No --lease: ask for the longest; the daemon caps it at its max-lease. */
	lease = a.lease_ms > 0 ? (uint32_t)a.lease_ms : UINT32_MAX;
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_down(c, a.argv[0], a.n, try ? 0 : a.timeout_ms, lease, &gr);
	semc_free(c);
	if (r != 0)
		return fail(r, try ? "trydown" : "down");
	grant_print(a.argv[0], &gr, a.lease_ms);
	return 0;
}

/* up NAME [-n N] */
static int cmd_up(int argc, char **argv)
{
	struct cmd_args a;
	struct semc *c;
	uint32_t released = 0;
	int r;

	cmd_parse(argc, argv, "n", &a);
	need_args(&a, 1, 1, "up NAME [-n N]");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_up(c, a.argv[0], a.n, 0, &released);
	semc_free(c);
	if (r != 0)
		return fail(r, "up");
	if (g.json)
		json_ok(a.argv[0], "released", released);
	else
		printf("released %u permit(s) of %s\n", released, a.argv[0]);
	return 0;
}

/* Format a duration in ms for people. */
static const char *fmt_dur(int64_t ms, char *buf, size_t len)
{
	if (ms < 0)
		ms = 0;
	if (ms < 1000)
		snprintf(buf, len, "%" PRId64 "ms", ms);
	else if (ms < 60000)
		snprintf(buf, len, "%.1fs", ms / 1000.0);
	else if (ms < 3600000)
		snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", ms / 60000, ms / 1000 % 60);
	else
		snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", ms / 3600000, ms / 60000 % 60);
	return buf;
}

/* Wall-clock ms. */
static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Format a unix time in ms as local "YYYY-mm-dd HH:MM:SS". */
static const char *fmt_time(uint64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms == 0 || localtime_r(&t, &tm) == NULL)
		snprintf(buf, len, "-");
	else
		strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}

/* info NAME */
static int cmd_info(int argc, char **argv)
{
	struct cmd_args a;
	struct semc_info *in;
	struct semc *c;
	char b1[64], b2[64];
	int64_t now = wall_ms();
	size_t i;
	int r;

	cmd_parse(argc, argv, "", &a);
	need_args(&a, 1, 1, "info NAME");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_info(c, a.argv[0], &in);
	semc_free(c);
	if (r != 0)
		return fail(r, "info");
	if (g.json) {
		printf("{\"ok\":true,\"name\":");
		json_str(in->name);
		printf(",\"limit\":%u,\"available\":%" PRId64 ",\"mode\":\"%s\",\"auto_created\":%s,"
		       "\"last_token\":%" PRIu64 ",\"holders\":[", in->limit, in->available,
		       mode_name(in->mode), in->auto_created ? "true" : "false", in->last_token);
		for (i = 0; i < in->n_holders; i++) {
			const struct semc_holder *h = &in->holders[i];

			printf("%s{\"permit_id\":%" PRIu64 ",\"token\":%" PRIu64 ",\"n\":%u,"
			       "\"client_name\":", i ? "," : "", h->permit_id, h->token, h->n);
			json_str(h->client_name);
			printf(",\"host\":");
			json_str(h->host);
			printf(",\"pid\":%u,\"principal\":", h->pid);
			json_str(h->principal);
			printf(",\"since_ms\":%" PRIu64 ",\"held_ms\":%" PRId64 ",\"detached\":%s,"
			       "\"expires_ms\":%" PRIu64 "}", h->since_ms, now - (int64_t)h->since_ms,
			       h->detached ? "true" : "false", h->expires_ms);
		}
		printf("],\"holders_total\":%zu,\"waiters\":[", in->holders_total);
		for (i = 0; i < in->n_waiters; i++) {
			const struct semc_waiter *w = &in->waiters[i];

			printf("%s{\"position\":%zu,\"request_id\":%" PRIu64 ",\"n\":%u,\"client_name\":",
			       i ? "," : "", i + 1, w->request_id, w->n);
			json_str(w->client_name);
			printf(",\"host\":");
			json_str(w->host);
			printf(",\"pid\":%u,\"principal\":", w->pid);
			json_str(w->principal);
			printf(",\"since_ms\":%" PRIu64 ",\"waited_ms\":%" PRId64 ",\"deadline_ms\":%"
			       PRIu64 "}", w->since_ms, now - (int64_t)w->since_ms, w->deadline_ms);
		}
		printf("],\"waiters_total\":%zu}\n", in->waiters_total);
		semc_info_free(in);
		return 0;
	}
	printf("%s: limit %u, available %" PRId64 ", mode %s%s, last token %" PRIu64 "\n",
	       in->name, in->limit, in->available, mode_name(in->mode),
	       in->auto_created ? " (auto-created)" : "", in->last_token);
	printf("holders: %zu", in->holders_total);
	if (in->holders_total > in->n_holders)
		printf(" (%zu shown)", in->n_holders);
	printf("\n");
	if (in->n_holders > 0)
		printf("  %-8s %-18s %-3s %-14s %-16s %-7s %-12s %-19s %-9s %s\n", "PERMIT", "TOKEN",
		       "N", "CLIENT", "HOST", "PID", "PRINCIPAL", "SINCE", "HELD", "EXPIRES");
	for (i = 0; i < in->n_holders; i++) {
		const struct semc_holder *h = &in->holders[i];
		char b3[64];

		printf("  %-8" PRIu64 " %-18" PRIu64 " %-3u %-14s %-16s %-7u %-12s %-19s %-9s %s\n",
		       h->permit_id, h->token, h->n, h->client_name, h->host, h->pid, h->principal,
		       fmt_time(h->since_ms, b1, sizeof b1),
		       fmt_dur(now - (int64_t)h->since_ms, b2, sizeof b2),
		       h->expires_ms ? fmt_time(h->expires_ms, b3, sizeof b3) :
		       (h->detached ? "-" : "with its connection"));
	}
	printf("waiters: %zu", in->waiters_total);
	if (in->waiters_total > in->n_waiters)
		printf(" (the first %zu shown)", in->n_waiters);
	printf("\n");
	if (in->n_waiters > 0)
		printf("  %-3s %-8s %-3s %-14s %-16s %-7s %-12s %-19s %s\n", "#", "REQUEST", "N",
		       "CLIENT", "HOST", "PID", "PRINCIPAL", "SINCE", "WAITING");
	for (i = 0; i < in->n_waiters; i++) {
		const struct semc_waiter *w = &in->waiters[i];

		printf("  %-3zu %-8" PRIu64 " %-3u %-14s %-16s %-7u %-12s %-19s %s\n", i + 1,
		       w->request_id, w->n, w->client_name, w->host, w->pid, w->principal,
		       fmt_time(w->since_ms, b1, sizeof b1),
		       fmt_dur(now - (int64_t)w->since_ms, b2, sizeof b2));
	}
	semc_info_free(in);
	return 0;
}

/* list [PREFIX] [--max N] [--after NAME]: the pages, fetched before anything is printed. */
static int cmd_list(int argc, char **argv)
{
	struct cmd_args a;
	struct semc_list **pages = NULL, **np;
	struct semc *c;
	const char *after;
	size_t i, k, npages = 0, total = 0;
	uint64_t got = 0, want;
	int r = 0;

	cmd_parse(argc, argv, "MA", &a);
	need_args(&a, 0, 1, "list [PREFIX] [--max N] [--after NAME]");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	after = a.after;
	/* bounded: at most a million pages of up to 1000 names */
	while (npages < 1000000) {
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
		if ((np = realloc(pages, (npages + 1) * sizeof *pages)) == NULL) {
			r = SEMC_E_NOMEM;
			break;
		}
		pages = np;
		want = a.max && a.max - got < 1000 ? a.max - got : 1000;
		if ((r = semc_list(c, a.argc ? a.argv[0] : "", after, (uint32_t)want,
		    &pages[npages])) != 0)
			break;
		after = pages[npages]->next;
		got += pages[npages]->n;
		if (pages[npages++]->n == 0 || after == NULL || *after == '\0' ||
		    (a.max && got >= a.max))
			break;
	}
	/* Stopped by --max with names left: say where to go on from. */
	if (after != NULL && *after == '\0')
		after = NULL;
	semc_free(c);
	if (r != 0) {
		for (k = 0; k < npages; k++)
			semc_list_free(pages[k]);
		free(pages);
		return fail(r, "list");
	}
	if (g.json)
		printf("{\"ok\":true,\"semaphores\":[");
	else
		printf("%-40s %8s %10s %-7s %8s %8s\n", "NAME", "LIMIT", "AVAILABLE", "MODE",
		       "HOLDERS", "WAITERS");
	for (k = 0; k < npages; k++) {
		for (i = 0; i < pages[k]->n; i++, total++) {
			const struct semc_summary *s = &pages[k]->entries[i];

			if (g.json) {
				printf("%s{\"name\":", total ? "," : "");
				json_str(s->name);
				printf(",\"limit\":%u,\"available\":%" PRId64 ",\"mode\":\"%s\","
				       "\"holders\":%u,\"waiters\":%u}", s->limit, s->available,
				       mode_name(s->mode), s->holders, s->waiters);
			} else {
				printf("%-40s %8u %10" PRId64 " %-7s %8u %8u\n", s->name, s->limit,
				       s->available, mode_name(s->mode), s->holders, s->waiters);
			}
		}
	}
	if (g.json) {
		printf("],\"count\":%zu", total);
		if (after != NULL) {
			printf(",\"next\":");
			json_str(after);
		}
		printf("}\n");
	} else if (after != NULL) {
		fprintf(stderr, "semctl: list: more names follow; go on with --after ");
		fputs(after, stderr);
		fputc('\n', stderr);
	}
	for (k = 0; k < npages; k++)
		semc_list_free(pages[k]);
	free(pages);
	return 0;
}

/* delete NAME [--force] */
static int cmd_delete(int argc, char **argv)
{
	struct cmd_args a;
	struct semc *c;
	int r;

	cmd_parse(argc, argv, "f", &a);
	need_args(&a, 1, 1, "delete NAME [--force]");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_delete(c, a.argv[0], a.force);
	semc_free(c);
	if (r != 0)
		return fail(r, "delete");
	if (g.json)
		json_ok(a.argv[0], NULL, 0);
	else
		printf("deleted %s\n", a.argv[0]);
	return 0;
}

/* set-limit NAME N */
static int cmd_set_limit(int argc, char **argv)
{
	struct cmd_args a;
	struct semc *c;
	uint32_t limit;
	int r;

	cmd_parse(argc, argv, "", &a);
	need_args(&a, 2, 2, "set-limit NAME N");
	limit = parse_count(a.argv[1], "set-limit", 1);
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_set_limit(c, a.argv[0], limit);
	semc_free(c);
	if (r != 0)
		return fail(r, "set-limit");
	if (g.json)
		json_ok(a.argv[0], "limit", limit);
	else
		printf("%s: limit %u\n", a.argv[0], limit);
	return 0;
}

/* validate NAME TOKEN: exit 0 if the token still holds a permit, else 6. */
static int cmd_validate(int argc, char **argv)
{
	struct cmd_args a;
	struct semc *c;
	uint64_t token;
	bool valid;
	int r;

	cmd_parse(argc, argv, "", &a);
	need_args(&a, 2, 2, "validate NAME TOKEN");
	token = parse_u64(a.argv[1], "validate");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_validate(c, a.argv[0], token, &valid);
	semc_free(c);
	if (r != 0)
		return fail(r, "validate");
	if (g.json) {
		printf("{\"ok\":true,\"name\":");
		json_str(a.argv[0]);
		printf(",\"token\":%" PRIu64 ",\"valid\":%s}\n", token, valid ? "true" : "false");
	} else {
		printf("%s\n", valid ? "valid" : "invalid");
	}
	return valid ? EX_OK_ : EX_ERROR_;
}

/* stats */
static int cmd_stats(int argc, char **argv)
{
	struct cmd_args a;
	struct semc_stats *st;
	struct semc *c;
	size_t i;
	int r;

	cmd_parse(argc, argv, "", &a);
	need_args(&a, 0, 0, "stats");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_stats(c, &st);
	semc_free(c);
	if (r != 0)
		return fail(r, "stats");
	if (g.json)
		printf("{\"ok\":true,\"counters\":{");
	for (i = 0; i < st->n; i++) {
		if (g.json) {
			printf("%s", i ? "," : "");
			json_str(st->counters[i].name);
			printf(":%" PRIu64, st->counters[i].value);
		} else {
			printf("%-32s %" PRIu64 "\n", st->counters[i].name, st->counters[i].value);
		}
	}
	if (g.json)
		printf("}}\n");
	semc_stats_free(st);
	return 0;
}

/* ping */
static int cmd_ping(int argc, char **argv)
{
	struct cmd_args a;
	struct semc_session s;
	struct semc *c;
	uint64_t rtt;
	int r;

	cmd_parse(argc, argv, "", &a);
	need_args(&a, 0, 0, "ping");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_ping(c, &rtt);
	if (r != 0) {
		semc_free(c);
		return fail(r, "ping");
	}
	semc_session(c, &s);
	if (g.json) {
		printf("{\"ok\":true,\"address\":");
		json_str(semc_address(c));
		printf(",\"server\":");
		json_str(s.server);
		printf(",\"principal\":");
		json_str(s.principal);
		printf(",\"rtt_us\":%" PRIu64 "}\n", rtt);
	} else {
		printf("pong from %s (%s) as %s in %" PRIu64 " us\n", semc_address(c), s.server,
		       s.principal, rtt);
	}
	semc_free(c);
	return 0;
}

/* release NAME --holder PERMIT_ID (admin) */
static int cmd_release(int argc, char **argv)
{
	struct cmd_args a;
	struct semc *c;
	uint32_t released = 0;
	int r;

	cmd_parse(argc, argv, "H", &a);
	need_args(&a, 1, 1, "release NAME --holder PERMIT_ID");
	if (!a.holder_set)
		usage_fail("release: --holder PERMIT_ID is required");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_release(c, a.argv[0], a.holder, &released);
	semc_free(c);
	if (r != 0)
		return fail(r, "release");
	if (g.json)
		json_ok(a.argv[0], "released", released);
	else
		printf("released permit %" PRIu64 " of %s (%u permit(s))\n", a.holder, a.argv[0],
		       released);
	return 0;
}

/* --- run ---------------------------------------------------------------- */

static int run_pipe[2] = { -1, -1 };

/* Signal handler: pass the signal number to the main loop. */
static void run_on_signal(int sig)
{
	unsigned char b = (unsigned char)sig;
	int e = errno;

	if (write(run_pipe[1], &b, 1) < 0) {
		/* the pipe is full: the loop has signals to read anyway */
	}
	errno = e;
}

struct run_state {
	uint64_t permit_id;
	bool lost;
	const char *why;
	int64_t last_pong;	/* monotonic ms */
	bool ping_out;
};

/* Monotonic ms. */
static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Connection events during run: a lost hold ends the command. */
static void run_on_event(struct semc *c, const struct semc_event *ev, void *arg)
{
	struct run_state *rs = arg;

	if (ev->type == SEMC_EV_HOLD_LOST && ev->permit_id == rs->permit_id) {
		rs->lost = true;
		rs->why = "the hold was lost";
	}
}

/* A pong (or a failed ping) came back. */
static void run_on_pong(struct semc *c, const struct semc_result *r, void *arg)
{
	struct run_state *rs = arg;

	rs->ping_out = false;
	if (r->error == 0)
		rs->last_pong = mono_ms();
}

/* Start the command with SEMD_TOKEN and SEMD_NAME in its environment. */
static pid_t run_spawn(char **cmd, const char *name, const struct semc_grant *gr)
{
	pid_t pid, parent = getpid();
	char buf[32];

	fflush(NULL);
	pid = fork();
	if (pid != 0)
		return pid;
#ifdef __linux__
	/* if semctl dies, the permit goes: the command must not run on */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(128 + SIGTERM);
#endif
	(void)parent;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	close(run_pipe[0]);
	close(run_pipe[1]);
	snprintf(buf, sizeof buf, "%" PRIu64, gr->token);
	setenv("SEMD_TOKEN", buf, 1);
	setenv("SEMD_NAME", name, 1);
	snprintf(buf, sizeof buf, "%" PRIu64, gr->permit_id);
	setenv("SEMD_PERMIT_ID", buf, 1);
	execvp(cmd[0], cmd);
	fprintf(stderr, "semctl: run: cannot execute %s: %s\n", cmd[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* run NAME [-n N] [--timeout DUR] -- CMD [ARG...] */
static int cmd_run(int argc, char **argv)
{
	static const int fwd[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD };
	struct run_state rs = { 0 };
	struct sigaction sa = { 0 };
	struct semc_grant gr;
	struct cmd_args a;
	struct semc *c;
	int64_t now, next_ping, kill_at = -1, lease_ms, grace_ms;
	int r, status = 0, i;
	bool exited = false, killed = false;
	pid_t pid;

	cmd_parse(argc, argv, "ntLG", &a);
	if (a.argc < 2)
		usage_fail("usage: semctl run NAME [-n N] [--timeout DUR] [--lease DUR] "
		    "[--grace DUR] -- CMD [ARG...]");
	lease_ms = a.lease_ms > 0 ? a.lease_ms : RUN_LEASE_MS;
	grace_ms = a.grace_ms >= 0 ? a.grace_ms : RUN_GRACE_MS;
	if ((r = client_open(&c, (uint32_t)lease_ms, "semctl run")) != 0)
		return r;
	semc_set_event_callback(c, run_on_event, &rs);
	r = semc_down(c, a.argv[0], a.n, a.timeout_ms, 0, &gr);
	if (r != 0) {
		semc_free(c);
		return fail(r, "run");
	}
	rs.permit_id = gr.permit_id;
	if (pipe2(run_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		semc_free(c);
		fprintf(stderr, "semctl: run: pipe: %s\n", strerror(errno));
		return EX_ERROR_;
	}
	sa.sa_handler = run_on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 5; i++)
		sigaction(fwd[i], &sa, NULL);
	pid = run_spawn(a.argv + 1, a.argv[0], &gr);
	if (pid < 0) {
		fprintf(stderr, "semctl: run: fork: %s\n", strerror(errno));
		semc_free(c);
		return EX_ERROR_;
	}
	rs.last_pong = mono_ms();
	next_ping = rs.last_pong + RUN_PING_MS;
	/* bounded by the child's life: it ends by itself or is killed */
	while (!exited) {
		struct pollfd p[2] = { { .fd = run_pipe[0], .events = POLLIN },
				       { .fd = semc_fd(c), .events = POLLIN } };
		int64_t wait;
		unsigned char sigs[64];
		ssize_t n;

		now = mono_ms();
		wait = next_ping - now;
		if (p[1].fd < 0 && wait > 100)
			wait = 100;	/* disconnected: retry soon */
		if (kill_at >= 0 && kill_at - now < wait)
			wait = kill_at - now;
		if (wait < 0)
			wait = 0;
		if (poll(p, p[1].fd >= 0 ? 2 : 1, (int)wait) < 0 && errno != EINTR)
			break;
		while ((n = read(run_pipe[0], sigs, sizeof sigs)) > 0) {
			for (i = 0; i < n; i++)
				if (sigs[i] != SIGCHLD)
					kill(pid, sigs[i]);
		}
		if (waitpid(pid, &status, WNOHANG) == pid) {
			exited = true;
			break;
		}
		semc_process(c);
		now = mono_ms();
		if (!rs.lost && now >= next_ping) {
			if (!rs.ping_out && semc_fd(c) >= 0 &&
			    semc_ping_async(c, run_on_pong, &rs) > 0)
				rs.ping_out = true;
			next_ping = now + RUN_PING_MS;
		}
		if (!rs.lost && now - rs.last_pong > lease_ms + 2 * RUN_PING_MS) {
			/* no answer for longer than the lease: the daemon has
			 * forgotten us by now, whatever the socket says */
			rs.lost = true;
			rs.why = "the server stopped answering";
		}
		if (rs.lost && kill_at < 0) {
			fprintf(stderr, "semctl: run: %s: %s; terminating the command\n",
				a.argv[0], rs.why);
			kill(pid, SIGTERM);
			kill_at = now + grace_ms;
		} else if (rs.lost && !killed && now >= kill_at) {
			kill(pid, SIGKILL);
			killed = true;
		}
	}
	if (!exited) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	if (!rs.lost) {
		semc_set_timeout(c, 2000);	/* best effort: the session ends anyway */
		semc_up(c, a.argv[0], 0, rs.permit_id, NULL);
	}
	semc_free(c);
	if (rs.lost)
		return EX_LOST_;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* --- main --------------------------------------------------------------- */

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
};

/* down without try. */
static int cmd_down_wait(int argc, char **argv)
{
	return cmd_down(argc, argv, false);
}

/* trydown. */
static int cmd_trydown(int argc, char **argv)
{
	return cmd_down(argc, argv, true);
}

static const struct command commands[] = {
	{ "create", cmd_create },
	{ "down", cmd_down_wait },
	{ "trydown", cmd_trydown },
	{ "up", cmd_up },
	{ "run", cmd_run },
	{ "info", cmd_info },
	{ "list", cmd_list },
	{ "delete", cmd_delete },
	{ "set-limit", cmd_set_limit },
	{ "validate", cmd_validate },
	{ "stats", cmd_stats },
	{ "ping", cmd_ping },
	{ "release", cmd_release },
};

/* Parse the global options, then run the command. */
int main(int argc, char **argv)
{
	enum { G_CA = 1000, G_CERT, G_KEY };
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "tls-ca", required_argument, NULL, G_CA },
		{ "tls-cert", required_argument, NULL, G_CERT },
		{ "tls-key", required_argument, NULL, G_KEY },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	size_t i;
	int ch;

	signal(SIGPIPE, SIG_IGN);
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+:s:jhV", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': g.server = optarg; break;
		case 'j': g.json = true; break;
		case G_CA: g.tls_ca = optarg; break;
		case G_CERT: g.tls_cert = optarg; break;
		case G_KEY: g.tls_key = optarg; break;
		case 'h': fputs(usage_text, stdout); return EX_OK_;
		case 'V':
			if (g.json)
				printf("{\"ok\":true,\"version\":\"%s\"}\n", semc_version());
			else
				printf("semctl %s\n", semc_version());
			return EX_OK_;
		case ':': usage_fail("option '%s' needs a value", argv[optind - 1]);
		default: usage_fail("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		usage_fail("no command given");
	g.cmd = argv[optind];
	for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(commands[i].name, g.cmd) == 0)
			return commands[i].fn(argc - optind, argv + optind);
	usage_fail("unknown command '%s'", g.cmd);
}
