/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/semctl.c - semctl, the command line of semd. It uses only the
 * public libsemclient API (semclient.h).
 *
 * Exit codes (stable, see semctl(1)): 0 ok or acquired, 1 timed out or would
 * block, 2 usage, 3 cannot reach or talk to the server, 4 permission denied,
 * 5 hold lost, 6 not found / not holder / other server error, 7 deadlock
 * (waiting would close a cycle of sessions; the message names it). `run`
 * exits with its command's status (128+signal if it was killed) otherwise.
 *
 * Every string that comes from the server (names, messages, client names,
 * hosts, principals) is printed escaped: control characters, C1, invalid
 * UTF-8 and the bidi, zero-width and line-separator code points in text
 * mode as \xHH or \uXXXX, in JSON as \uXXXX. A server cannot write to the
 * terminal.
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
#include <sys/stat.h>
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
	EX_DEADLOCK_ = 7,
};

#define RUN_LEASE_MS	10000	/* run's default session lease */
#define RUN_LEASE_MIN	200	/* shorter leases leave no room for a ping */
#define RUN_GRACE_MS	2000	/* default: SIGTERM, then SIGKILL after this */
#define INFO_MAX	10000	/* info lists at most this many holders and waiters */

struct opts {
	const char *server;
	const char *tls_ca, *tls_cert, *tls_key;
	bool no_tls_resume;	/* --no-tls-resume */
	bool sess_dir_set;	/* we set SEMD_TLS_SESSION_DIR: not the command's */
	bool json;
	bool quiet;
	const char *cmd;
};

static struct opts g;

static const char usage_text[] =
"usage: semctl [-s ADDR] [--json] COMMAND [ARGS]\n"
"\n"
"Commands:\n"
"  create NAME --limit N [--mode owned|signal] [--initial N]\n"
"  create NAME --rate R/UNIT [--burst N] [--limit N]   a token bucket (R/s, /min, /h)\n"
"  down NAME [-n N] [--timeout DUR] [--lease DUR] [--limit N]   detached hold; prints the token\n"
"  down NAME[:N] NAME[:N]... [--timeout DUR] [--lease DUR]   all at once, or none\n"
"  trydown NAME [-n N] [--limit N]   (or NAME[:N] NAME[:N]...)\n"
"  up NAME [-n N]\n"
"  run NAME [-n N] [--timeout DUR] [--lease DUR] [--grace DUR] [--limit N] -- CMD [ARG...]\n"
"  run NAME[:N] NAME[:N]... [options] -- CMD [ARG...]   all names at once\n"
"  info NAME [--max N]\n"
"  list [PREFIX] [--max N] [--after NAME]\n"
"  delete NAME [--force]\n"
"  set-limit NAME N\n"
"  set-rate NAME R/UNIT|0 [--burst N]\n"
"  renew NAME [--lease DUR] [--holder PERMIT_ID]   a detached hold's lease, from now\n"
"  holds [--principal P] [--max N]   every hold of a principal\n"
"  watch NAME|PREFIX/ [--prefix] [--all]   stream its events until interrupted\n"
"  validate NAME TOKEN\n"
"  release NAME --holder PERMIT_ID\n"
"  stats\n"
"  ping\n"
"  cluster status | add ID HOST:PORT | remove ID | transfer [ID]\n"
"\n"
"Options:\n"
"  -s, --server ADDR   unix:PATH, tcp:HOST:PORT or tls:HOST:PORT\n"
"                      (default $SEMD_SERVER, else unix:" SEMC_DEFAULT_UNIX ")\n"
"  -j, --json          machine-readable output\n"
"  -q, --quiet         down, run: no progress line on a terminal\n"
"      --tls-ca FILE, --tls-cert FILE, --tls-key FILE\n"
"      --no-tls-resume do not keep TLS sessions in $XDG_RUNTIME_DIR/semctl\n"
"  -h, --help          this help\n"
"  -V, --version       print the version\n"
"Durations: 250ms, 5s, 2m or 2min, 1h (a bare number is seconds).\n"
"Exit: 0 ok, 1 timed out/would block, 2 usage, 3 server unreachable,\n"
"      4 permission denied, 5 hold lost, 6 other error, 7 deadlock;\n"
"      run: the command's.\n";

/* Decode one UTF-8 sequence at p: its length (1-4) and *cp, or 0 when it
 * is not well-formed (overlong forms, surrogates and truncations included). */
static int utf8_decode(const unsigned char *p, uint32_t *cp)
{
	unsigned char c0 = p[0];
	int len, i;

	if (c0 < 0x80) {
		*cp = c0;
		return 1;
	}
	if (c0 >= 0xc2 && c0 <= 0xdf) {
		len = 2;
		*cp = c0 & 0x1f;
	} else if (c0 >= 0xe0 && c0 <= 0xef) {
		len = 3;
		*cp = c0 & 0x0f;
	} else if (c0 >= 0xf0 && c0 <= 0xf4) {
		len = 4;
		*cp = c0 & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && *cp < 0x800) || (len == 4 && (*cp < 0x10000 || *cp > 0x10ffff)) ||
	    (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

/* Whether a code point must not reach a terminal as it is: C0, DEL, C1,
 * and the invisible ones that reorder or hide text (bidi embeddings,
 * overrides and isolates, zero-width characters, line and paragraph
 * separators, the byte-order mark, the Arabic letter mark). */
static bool cp_unsafe(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c ||
	       (cp >= 0x200b && cp <= 0x200f) || cp == 0x2028 || cp == 0x2029 ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

/* s escaped for a terminal: \\, \n, \t, \r, \xHH for other control bytes
 * and invalid UTF-8, \uXXXX for the unsafe code points above. The result
 * lives until eight more calls. */
static const char *esc(const char *s)
{
	static char *ring[8];
	static unsigned next;
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t cap = strlen((const char *)p) * 6 + 1, n = 0;
	char *out = malloc(cap);
	uint32_t cp;
	int len;

	if (out == NULL)
		return "(out of memory)";
	while (*p) {
		len = utf8_decode(p, &cp);
		if (len == 0) {
			n += (size_t)snprintf(out + n, cap - n, "\\x%02x", *p);
			p++;
		} else if (cp == '\\') {
			n += (size_t)snprintf(out + n, cap - n, "\\\\");
			p++;
		} else if (cp == '\n' || cp == '\t' || cp == '\r') {
			n += (size_t)snprintf(out + n, cap - n, "\\%c",
					      cp == '\n' ? 'n' : cp == '\t' ? 't' : 'r');
			p++;
		} else if (cp < 0x80 && cp_unsafe(cp)) {
			n += (size_t)snprintf(out + n, cap - n, "\\x%02x", (unsigned)cp);
			p++;
		} else if (cp_unsafe(cp)) {
			n += (size_t)snprintf(out + n, cap - n, "\\u%04x", (unsigned)cp);
			p += len;
		} else {
			memcpy(out + n, p, (size_t)len);
			n += (size_t)len;
			p += len;
		}
	}
	out[n] = '\0';
	free(ring[next % 8]);
	ring[next++ % 8] = out;
	return out;
}

/* Write s as a JSON string: escaped, the unsafe code points as \uXXXX,
 * invalid UTF-8 as U+FFFD. */
static void json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	uint32_t cp;
	int len;

	putchar('"');
	while (*p) {
		len = utf8_decode(p, &cp);
		if (len == 0) {
			fputs("\\ufffd", stdout);
			p++;
			continue;
		}
		if (cp == '"' || cp == '\\')
			printf("\\%c", (char)cp);
		else if (cp == '\n')
			fputs("\\n", stdout);
		else if (cp == '\t')
			fputs("\\t", stdout);
		else if (cp == '\r')
			fputs("\\r", stdout);
		else if (cp_unsafe(cp))
			printf("\\u%04x", (unsigned)cp);
		else
			fwrite(p, 1, (size_t)len, stdout);
		p += len;
	}
	putchar('"');
}

/* Print a usage error and exit 2 (with --json, also one JSON object). */
static void __attribute__((noreturn, format(printf, 1, 2))) usage_fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "semctl: %s\nTry 'semctl --help'.\n", esc(msg));
	if (g.json) {
		printf("{\"ok\":false,\"error\":\"usage\",\"code\":%d,\"message\":", SEMC_E_ARG);
		json_str(msg);
		printf(",\"exit\":%d}\n", EX_USAGE_);
	}
	exit(EX_USAGE_);
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
	case SEMC_E_DEADLOCK:
		return EX_DEADLOCK_;
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
	case SEMC_E_DEADLOCK: return "deadlock";
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
	fprintf(stderr, "semctl: %s: %s\n", what, esc(msg));
	if (g.json) {
		printf("{\"ok\":false,\"error\":");
		json_str(err_name(err));
		printf(",\"code\":%d,\"message\":", err);
		json_str(msg);
		printf(",\"exit\":%d}\n", exit_code(err));
	}
	return exit_code(err);
}

/* Report --limit N against an existing name with another limit. */
static int fail_limit(int err, const char *what, const char *name, uint32_t limit)
{
	char m[512];

	snprintf(m, sizeof m, "%s exists with another limit than %u (%s)", name, limit,
		 semc_last_message());
	fprintf(stderr, "semctl: %s: %s\n", what, esc(m));
	if (g.json) {
		printf("{\"ok\":false,\"error\":\"exists\",\"code\":%d,\"message\":", err);
		json_str(m);
		printf(",\"exit\":%d}\n", EX_ERROR_);
	}
	return EX_ERROR_;
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
	/* one thread: run's loop does the keepalive duties (semc_process) */
	semc_set_keepalive_thread(c, false);
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
	O_GRACE, O_MAX, O_AFTER, O_INITIAL, O_RATE, O_BURST, O_PRINCIPAL, O_PREFIX,
	O_ALL };

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
	{ "initial", required_argument, NULL, O_INITIAL },
	{ "rate", required_argument, NULL, O_RATE },
	{ "burst", required_argument, NULL, O_BURST },
	{ "principal", required_argument, NULL, O_PRINCIPAL },
	{ "prefix", no_argument, NULL, O_PREFIX },
	{ "all", no_argument, NULL, O_ALL },
	{ "quiet", no_argument, NULL, 'q' },
	{ "json", no_argument, NULL, O_JSON },
	{ "server", required_argument, NULL, 's' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct cmd_args {
	char **argv;
	int64_t timeout_ms;	/* -1: forever */
	int64_t lease_ms;	/* -1: unset */
	uint64_t holder;
	int64_t grace_ms;	/* -1: unset */
	uint64_t max;		/* 0: no limit */
	const char *after;
	const char *principal;
	int argc;		/* positional arguments */
	uint32_t n;
	uint32_t limit;
	enum semc_mode mode;
	uint32_t initial;
	struct semc_rate rate;	/* rate 0: none given */
	bool n_set;
	bool limit_set;
	bool force;
	bool holder_set;
	bool initial_set;
	bool rate_set;
	bool burst_set;
	bool prefix;
	bool all;
};

/* Parse a command's options; allowed lists the options it takes
 * ("nlmtLfHGMAIRBPXY": -n, --limit, --mode, --timeout, --lease, --force,
 * --holder, --grace, --max, --after, --initial, --rate, --burst,
 * --principal, --prefix, --all). */
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
	while ((ch = getopt_long(argc, argv, ":n:s:hjq", cmd_longopts, NULL)) != -1) {
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
		case O_INITIAL: letter = "I"; break;
		case O_RATE: letter = "R"; break;
		case O_BURST: letter = "B"; break;
		case O_PRINCIPAL: letter = "P"; break;
		case O_PREFIX: letter = "X"; break;
		case O_ALL: letter = "Y"; break;
		case 'q': g.quiet = true; continue;
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
			if (a->lease_ms > UINT32_MAX)
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
		case O_INITIAL:
			a->initial = parse_count(optarg, "--initial", 0);
			a->initial_set = true;
			break;
		case O_RATE:
			if (semc_parse_rate(optarg, &a->rate.rate, &a->rate.period_ms) != 0)
				usage_fail("--rate: '%s' is not a rate (5000/h, 10/s, 3/min, 1/250ms)",
					   optarg);
			a->rate_set = true;
			break;
		case O_BURST:
			a->rate.burst = parse_count(optarg, "--burst", 1);
			a->burst_set = true;
			break;
		case O_PRINCIPAL:
			a->principal = optarg;
			break;
		case O_PREFIX:
			a->prefix = true;
			break;
		case O_ALL:
			a->all = true;
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
	return m == SEMC_MODE_SIGNAL ? "signal" : m == SEMC_MODE_RATE ? "rate" : "owned";
}

/* A rate as people write it: "5000/h", "10/s", "1/250ms". */
static const char *rate_text(uint32_t rate, uint32_t period_ms, char *buf, size_t len)
{
	if (period_ms == 1000)
		snprintf(buf, len, "%u/s", rate);
	else if (period_ms == 60000)
		snprintf(buf, len, "%u/min", rate);
	else if (period_ms == 3600000)
		snprintf(buf, len, "%u/h", rate);
	else if (period_ms == 86400000)
		snprintf(buf, len, "%u/d", rate);
	else
		snprintf(buf, len, "%u/%ums", rate, period_ms);
	return buf;
}

/* create NAME --limit N [--mode owned|signal] [--initial N], or with --rate */
static int cmd_create(int argc, char **argv)
{
	struct cmd_args a;
	struct semc *c;
	char rb[64];
	int r;

	struct semc_create_opts o = { 0 };

	cmd_parse(argc, argv, "lmIRB", &a);
	need_args(&a, 1, 1, "create NAME --limit N [--mode owned|signal] [--initial N]\n"
		  "       semctl create NAME --rate R/UNIT [--burst N] [--limit N]");
	if (!a.limit_set && !a.rate_set)
		usage_fail("create: --limit N or --rate R/UNIT is required");
	if (a.burst_set && !a.rate_set)
		usage_fail("create: --burst N needs --rate");
	if (a.rate_set && a.mode == SEMC_MODE_SIGNAL)
		usage_fail("create: a signal-mode semaphore cannot have a rate");
	if (a.initial_set && a.mode != SEMC_MODE_SIGNAL)
		usage_fail("create: --initial N needs --mode signal");
	if (a.initial_set && a.initial > a.limit)
		usage_fail("create: --initial %u is more than --limit %u", a.initial, a.limit);
	o.limit = a.limit_set ? a.limit : 0;
	o.mode = a.rate_set && !a.limit_set ? SEMC_MODE_RATE : a.mode;
	o.initial_set = a.initial_set;
	o.initial = a.initial;
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = a.rate_set ? semc_create_rate(c, a.argv[0], &o, &a.rate) :
	    semc_create_ex(c, a.argv[0], &o);
	semc_free(c);
	if (r != 0)
		return fail(r, "create");
	if (a.rate_set && a.rate.burst == 0)
		a.rate.burst = a.rate.rate;	/* the daemon's default */
	if (g.json) {
		printf("{\"ok\":true,\"name\":");
		json_str(a.argv[0]);
		printf(",\"limit\":%u,\"mode\":\"%s\"", o.limit, mode_name(o.mode));
		if (a.initial_set)
			printf(",\"initial\":%u", a.initial);
		if (a.rate_set)
			printf(",\"rate\":%u,\"rate_period_ms\":%u,\"burst\":%u", a.rate.rate,
			       a.rate.period_ms, a.rate.burst);
		printf("}\n");
	} else if (a.rate_set && a.limit_set) {
		printf("created %s (limit %u, rate %s, burst %u)\n", esc(a.argv[0]), a.limit,
		       rate_text(a.rate.rate, a.rate.period_ms, rb, sizeof rb), a.rate.burst);
	} else if (a.rate_set) {
		printf("created %s (rate %s, burst %u)\n", esc(a.argv[0]),
		       rate_text(a.rate.rate, a.rate.period_ms, rb, sizeof rb), a.rate.burst);
	} else if (a.initial_set) {
		printf("created %s (limit %u, %s, %u free)\n", esc(a.argv[0]), a.limit,
		       mode_name(a.mode), a.initial);
	} else {
		printf("created %s (limit %u, %s)\n", esc(a.argv[0]), a.limit, mode_name(a.mode));
	}
	return 0;
}

/* --- acquiring: one name or several, with the progress line ---------------- */

static const char *fmt_dur(int64_t ms, char *buf, size_t len);
static const char *fmt_time(uint64_t ms, char *buf, size_t len);
static int64_t wall_ms(void);
static int64_t mono_ms(void);

#define ACQ_MAX		16	/* names of one down (the daemon's most) */
#define ACQ_NO_REPLY_MS	10000	/* past the deadline, how long for an answer */

/* What down and run acquire, and what they got. */
struct acq {
	size_t k;
	const char *names[ACQ_MAX];
	uint32_t ns[ACQ_MAX];
	uint32_t create_limit;
	int64_t timeout_ms;
	uint32_t lease_ms;
	/* the outcome */
	bool done;
	int error;
	char message[512];
	uint64_t permit_id[ACQ_MAX];
	uint64_t token[ACQ_MAX];
	uint32_t n[ACQ_MAX];
	uint64_t waited_us;
};

/*
 * The names of down and run: one NAME (with -n N), or several NAME[:N]
 * (a name of its own ending in :DIGITS is then written NAME:DIGITS:1).
 */
static void acq_names(struct acq *q, char **names, int count, const struct cmd_args *a,
		      const char *cmd)
{
	unsigned long long v;
	char *colon, *end;
	int i;

	memset(q, 0, sizeof *q);
	if (count < 1)
		usage_fail("%s: a semaphore name is required", cmd);
	if (count > ACQ_MAX)
		usage_fail("%s: at most %d names at once", cmd, ACQ_MAX);
	if (count == 1) {
		q->k = 1;
		q->names[0] = names[0];
		q->ns[0] = a->n;
		return;
	}
	if (a->n_set)
		usage_fail("%s: with several names, give each its count as NAME:N", cmd);
	for (i = 0; i < count; i++) {
		q->names[i] = names[i];
		q->ns[i] = 1;
		colon = strrchr(names[i], ':');
		if (colon == NULL || colon[1] < '0' || colon[1] > '9')
			continue;
		errno = 0;
		v = strtoull(colon + 1, &end, 10);
		if (*end != '\0' || errno != 0 || v < 1 || v > UINT32_MAX)
			continue;
		*colon = '\0';		/* argv is ours */
		q->ns[i] = (uint32_t)v;
	}
	q->k = (size_t)count;
}

/* Completion of the asynchronous down: keep the outcome. */
static void acq_done(struct semc *c, const struct semc_result *res, void *arg)
{
	struct acq *q = arg;
	size_t i;

	(void)c;
	q->done = true;
	q->error = res->error;
	snprintf(q->message, sizeof q->message, "%s", res->message);
	if (res->error != 0)
		return;
	if (res->grant != NULL && q->k == 1) {
		q->permit_id[0] = res->grant->permit_id;
		q->token[0] = res->grant->token;
		q->n[0] = res->grant->n;
		q->waited_us = res->grant->waited_us;
	} else if (res->multi != NULL && res->multi->n == q->k) {
		for (i = 0; i < q->k; i++) {
			q->permit_id[i] = res->multi->grants[i].permit_id;
			q->token[i] = res->multi->grants[i].token;
			q->n[i] = res->multi->grants[i].n;
		}
		q->waited_us = res->multi->waited_us;
	} else {
		q->error = SEMC_E_PROTOCOL;
		snprintf(q->message, sizeof q->message, "the answer is not a grant");
	}
}

/* "1st", "2nd", "3rd", "4th", "11th", "21st"... */
static const char *ordinal(uint32_t n, char *buf, size_t len)
{
	const char *suffix = "th";

	if (n % 100 < 11 || n % 100 > 13)
		suffix = n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
	snprintf(buf, len, "%u%s", n, suffix);
	return buf;
}

/* One line of where a down stands: "waiting for deploy: 3rd of 7 in line,
 * 4/4 held, 12 s". */
static void acq_progress(struct semc *c, int64_t id, int64_t elapsed_ms)
{
	struct semc_where *w;
	char line[1024], b1[32], b2[32];
	size_t i, len = 0;

	if (semc_where(c, (uint64_t)id, &w) != 0)
		return;		/* granted meanwhile, or gone: nothing to say */
	len += (size_t)snprintf(line + len, sizeof line - len, "waiting for ");
	for (i = 0; i < w->n && len < sizeof line; i++) {
		const struct semc_place *p = &w->places[i];

		len += (size_t)snprintf(line + len, sizeof line - len, "%s%s: %s of %u in line",
					i ? "; " : "", esc(p->name),
					p->position ? ordinal(p->position, b1, sizeof b1) :
					"past the 100000th", p->waiters);
		if (len < sizeof line && p->limit != 0)
			len += (size_t)snprintf(line + len, sizeof line - len, ", %" PRIu64 "/%u held",
						p->held, p->limit);
		if (len < sizeof line && (p->tokens_nano != 0 || p->next_token_ms != 0)) {
			len += (size_t)snprintf(line + len, sizeof line - len,
						", %" PRIu64 ".%02" PRIu64 " of %u tokens",
						p->tokens_nano / 1000000000u,
						p->tokens_nano % 1000000000u / 10000000u, p->n);
			if (len < sizeof line && p->next_token_ms != 0)
				len += (size_t)snprintf(line + len, sizeof line - len,
							", next in %s",
							fmt_dur((int64_t)p->next_token_ms - wall_ms(),
								b2, sizeof b2));
		}
	}
	if (len < sizeof line)
		snprintf(line + len, sizeof line - len, ", %" PRId64 " s", elapsed_ms / 1000);
	semc_where_free(w);
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
}

/*
 * Take q's names: an asynchronous down (or multi-name down) and a poll loop
 * that does the library's duties; on a terminal (and without --quiet), a
 * line on stderr says where the down stands, redrawn every second. Returns
 * 0 or the error (the message in q->message). Bounded: the daemon answers
 * by the deadline (timeout_ms, then ACQ_NO_REPLY_MS more), or never when
 * the down waits for ever.
 */
static int acquire(struct semc *c, struct acq *q)
{
	struct semc_down_opts o = { 0 };
	struct semc_want wants[ACQ_MAX];
	int64_t id, start = mono_ms(), now, next_show, wait, deadline = -1;
	bool progress = !g.quiet && !g.json && q->timeout_ms != 0 && isatty(STDERR_FILENO);
	bool shown = false;
	size_t i;

	if (q->k == 1) {
		o.n = q->ns[0];
		o.timeout_ms = q->timeout_ms;
		o.lease_ms = q->lease_ms;
		o.create_limit = q->create_limit;
		id = semc_down_ex_async(c, q->names[0], &o, acq_done, q);
	} else {
		for (i = 0; i < q->k; i++) {
			wants[i].name = q->names[i];
			wants[i].n = q->ns[i];
			wants[i].create_limit = q->create_limit;
		}
		id = semc_down_multi_async(c, wants, q->k, q->timeout_ms, q->lease_ms, acq_done, q);
	}
	if (id < 0) {
		snprintf(q->message, sizeof q->message, "%s", semc_last_message());
		return (int)id;
	}
	if (q->timeout_ms >= 0)
		deadline = start + q->timeout_ms + ACQ_NO_REPLY_MS;
	next_show = start + 1000;
	while (!q->done) {
		struct pollfd p = { .fd = semc_fd(c), .events = POLLIN };

		now = mono_ms();
		if (deadline >= 0 && now >= deadline) {
			q->error = SEMC_E_NO_REPLY;
			snprintf(q->message, sizeof q->message, "no reply from %s in time",
				 semc_address(c));
			break;
		}
		wait = semc_timeout(c);
		if (wait < 0 || wait > 1000)
			wait = 1000;
		if (progress && next_show - now < wait)
			wait = next_show > now ? next_show - now : 0;
		if (deadline >= 0 && deadline - now < wait)
			wait = deadline - now;
		if (p.fd < 0 && wait > 100)
			wait = 100;		/* disconnected: retry soon */
		if (poll(&p, p.fd >= 0 ? 1 : 0, (int)wait) < 0 && errno != EINTR)
			break;
		semc_process(c);
		now = mono_ms();
		if (!q->done && progress && now >= next_show) {
			acq_progress(c, id, now - start);
			shown = true;
			next_show = now + 1000;
		}
	}
	if (shown) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	if (!q->done && q->error == 0) {
		q->error = SEMC_E_SYSTEM;
		snprintf(q->message, sizeof q->message, "poll: %s", strerror(errno));
	}
	return q->error;
}

/* Report a failed acquire (as fail() does, with q's message). */
static int acq_fail(const struct acq *q, int err, const char *what)
{
	const char *msg = q->message[0] ? q->message : semc_strerror(err);

	fprintf(stderr, "semctl: %s: %s\n", what, esc(msg));
	if (g.json) {
		printf("{\"ok\":false,\"error\":");
		json_str(err_name(err));
		printf(",\"code\":%d,\"message\":", err);
		json_str(msg);
		printf(",\"exit\":%d}\n", exit_code(err));
	}
	return exit_code(err);
}

/* The grants of q as a JSON array's members. */
static void acq_json_grants(const struct acq *q)
{
	size_t i;

	printf("\"grants\":[");
	for (i = 0; i < q->k; i++) {
		printf("%s{\"name\":", i ? "," : "");
		json_str(q->names[i]);
		printf(",\"token\":%" PRIu64 ",\"permit_id\":%" PRIu64 ",\"n\":%u}",
		       q->token[i], q->permit_id[i], q->n[i]);
	}
	printf("]");
}

/* Print what down got: the token (one name per line), or JSON. */
static void acq_print(const struct acq *q, int64_t lease_ms)
{
	size_t i;

	if (!g.json) {
		for (i = 0; i < q->k; i++)
			printf("%" PRIu64 "\n", q->token[i]);
		return;
	}
	printf("{\"ok\":true,\"name\":");
	json_str(q->names[0]);
	printf(",\"token\":%" PRIu64 ",\"permit_id\":%" PRIu64 ",\"n\":%u,\"waited_us\":%" PRIu64,
	       q->token[0], q->permit_id[0], q->n[0], q->waited_us);
	if (lease_ms >= 0)
		printf(",\"lease_ms\":%" PRId64, lease_ms);
	if (q->k > 1) {
		printf(",");
		acq_json_grants(q);
	}
	printf("}\n");
}

/* down/trydown: detached holds owned by our principal. */
static int cmd_down(int argc, char **argv, bool try)
{
	struct cmd_args a;
	struct acq q;
	struct semc *c;
	const char *what = try ? "trydown" : "down";
	int r;

	cmd_parse(argc, argv, try ? "nl" : "ntLl", &a);
	if (a.argc < 1)
		usage_fail("usage: semctl %s", try ? "trydown NAME [-n N] [--limit N]" :
		    "down NAME [-n N] [--timeout DUR] [--lease DUR] [--limit N]");
	if (a.lease_ms == 0)
		usage_fail("down: --lease must be more than 0 (the hold outlives semctl)");
	acq_names(&q, a.argv, a.argc, &a, what);
	q.timeout_ms = try ? 0 : a.timeout_ms;
	/* No --lease: ask for the longest; the daemon caps it at its max-lease. */
	q.lease_ms = a.lease_ms > 0 ? (uint32_t)a.lease_ms : UINT32_MAX;
	q.create_limit = a.limit_set ? a.limit : 0;
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = acquire(c, &q);
	semc_free(c);
	if (r == SEMC_E_EXISTS && a.limit_set)
		return fail_limit(r, what, q.names[0], a.limit);
	if (r != 0)
		return acq_fail(&q, r, what);
	acq_print(&q, a.lease_ms);
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
		printf("released %u permit(s) of %s\n", released, esc(a.argv[0]));
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

/* The pages of one info, fetched before anything is printed, and how
 * many of each page's holders and waiters are shown (up to max in all). */
struct info_page {
	struct semc_info *in;
	size_t nh, nw;
};

struct info_pages {
	struct info_page *p;
	size_t n;
	size_t holders, waiters;	/* fetched, at most max each */
	bool more_holders, more_waiters;
	uint64_t next_permit, next_waiter;	/* where to go on from */
};

/* Fetch pages of holders and waiters until max of each or the end. */
static int info_fetch(struct semc *c, const char *name, uint64_t max, struct info_pages *ip)
{
	struct info_page *np, *pp;
	struct semc_info *pg;
	uint64_t ap = 0, aw = 0, want;
	bool hdone = false, wdone = false;
	int r;

	memset(ip, 0, sizeof *ip);
	/* bounded: each page brings at least one entry, max is finite */
	while (ip->n < 100000) {
		want = max - (ip->holders < ip->waiters ? ip->holders : ip->waiters);
		if (hdone)
			want = max - ip->waiters;
		else if (wdone)
			want = max - ip->holders;
		if ((r = semc_info_page(c, name, (uint32_t)(want < 1000 ? want : 1000),
		    hdone ? UINT64_MAX : ap, wdone ? UINT64_MAX : aw, &pg)) != 0)
			return r;
		if ((np = realloc(ip->p, (ip->n + 1) * sizeof *ip->p)) == NULL) {
			semc_info_free(pg);
			return SEMC_E_NOMEM;
		}
		ip->p = np;
		pp = &ip->p[ip->n++];
		pp->in = pg;
		pp->nh = hdone ? 0 : pg->n_holders;
		pp->nw = wdone ? 0 : pg->n_waiters;
		/* a page may bring more than wanted of a list: show up to max */
		if (pp->nh > max - ip->holders) {
			pp->nh = max - ip->holders;
			ip->more_holders = true;
		}
		if (pp->nw > max - ip->waiters) {
			pp->nw = max - ip->waiters;
			ip->more_waiters = true;
		}
		ip->holders += pp->nh;
		ip->waiters += pp->nw;
		/* go on from the daemon's cursor, or after the last one shown */
		if (pp->nh > 0)
			ap = !ip->more_holders && pg->next_permit ? pg->next_permit :
			     pg->holders[pp->nh - 1].permit_id;
		if (pp->nw > 0)
			aw = !ip->more_waiters && pg->next_waiter ? pg->next_waiter :
			     pg->waiters[pp->nw - 1].seq;
		hdone = hdone || pg->next_permit == 0 || ip->more_holders || ip->holders >= max;
		wdone = wdone || pg->next_waiter == 0 || ip->more_waiters || ip->waiters >= max;
		ip->more_holders = ip->more_holders || (pg->next_permit != 0 && ip->holders >= max);
		ip->more_waiters = ip->more_waiters || (pg->next_waiter != 0 && ip->waiters >= max);
		if (hdone && wdone)
			break;
		if (pp->nh == 0 && pp->nw == 0)
			break;	/* a daemon that pages nothing more */
	}
	ip->next_permit = ip->more_holders ? ap : 0;
	ip->next_waiter = ip->more_waiters ? aw : 0;
	return 0;
}

/* Free fetched pages. */
static void info_pages_free(struct info_pages *ip)
{
	size_t k;

	for (k = 0; k < ip->n; k++)
		semc_info_free(ip->p[k].in);
	free(ip->p);
}

/* Print info's holders and waiters as JSON. */
static void info_json(const struct info_pages *ip, int64_t now)
{
	const struct semc_info *in = ip->p[0].in;
	size_t i, k, total = 0;

	printf("{\"ok\":true,\"name\":");
	json_str(in->name);
	printf(",\"limit\":%u,\"available\":%" PRId64 ",\"mode\":\"%s\",\"auto_created\":%s,"
	       "\"last_token\":%" PRIu64, in->limit, in->available,
	       mode_name(in->mode), in->auto_created ? "true" : "false", in->last_token);
	if (in->rate != 0)
		printf(",\"rate\":%u,\"rate_period_ms\":%u,\"burst\":%u,\"tokens\":%" PRIu64
		       ".%09" PRIu64 ",\"next_token_ms\":%" PRIu64, in->rate, in->rate_period_ms,
		       in->burst, in->tokens_nano / 1000000000u, in->tokens_nano % 1000000000u,
		       in->next_token_ms);
	printf(",\"holders\":[");
	for (k = 0; k < ip->n; k++) {
		for (i = 0; i < ip->p[k].nh; i++, total++) {
			const struct semc_holder *h = &ip->p[k].in->holders[i];

			printf("%s{\"permit_id\":%" PRIu64 ",\"token\":%" PRIu64 ",\"n\":%u,"
			       "\"client_name\":", total ? "," : "", h->permit_id, h->token, h->n);
			json_str(h->client_name);
			printf(",\"host\":");
			json_str(h->host);
			printf(",\"pid\":%u,\"principal\":", h->pid);
			json_str(h->principal);
			printf(",\"since_ms\":%" PRIu64 ",\"held_ms\":%" PRId64 ",\"detached\":%s,"
			       "\"expires_ms\":%" PRIu64 "}", h->since_ms, now - (int64_t)h->since_ms,
			       h->detached ? "true" : "false", h->expires_ms);
		}
	}
	printf("],\"holders_total\":%zu", in->holders_total);
	if (ip->next_permit != 0)
		printf(",\"next_permit\":%" PRIu64, ip->next_permit);
	printf(",\"waiters\":[");
	for (k = 0, total = 0; k < ip->n; k++) {
		for (i = 0; i < ip->p[k].nw; i++, total++) {
			const struct semc_waiter *w = &ip->p[k].in->waiters[i];

			printf("%s{\"position\":%zu,\"request_id\":%" PRIu64 ",\"seq\":%" PRIu64
			       ",\"n\":%u,\"client_name\":", total ? "," : "", total + 1,
			       w->request_id, w->seq, w->n);
			json_str(w->client_name);
			printf(",\"host\":");
			json_str(w->host);
			printf(",\"pid\":%u,\"principal\":", w->pid);
			json_str(w->principal);
			printf(",\"since_ms\":%" PRIu64 ",\"waited_ms\":%" PRId64 ",\"deadline_ms\":%"
			       PRIu64 ",\"detached\":%s}", w->since_ms, now - (int64_t)w->since_ms,
			       w->deadline_ms, w->detached ? "true" : "false");
		}
	}
	printf("],\"waiters_total\":%zu", in->waiters_total);
	if (ip->next_waiter != 0)
		printf(",\"next_waiter\":%" PRIu64, ip->next_waiter);
	printf("}\n");
}

/* Print info for people. */
static void info_text(const struct info_pages *ip, int64_t now)
{
	const struct semc_info *in = ip->p[0].in;
	char b1[64], b2[64], b3[64];
	size_t i, k, pos = 0;

	printf("%s: limit %u, available %" PRId64 ", mode %s%s, last token %" PRIu64 "\n",
	       esc(in->name), in->limit, in->available, mode_name(in->mode),
	       in->auto_created ? " (auto-created)" : "", in->last_token);
	if (in->rate != 0) {
		printf("rate: %s, burst %u, %" PRIu64 ".%03" PRIu64 " tokens now",
		       rate_text(in->rate, in->rate_period_ms, b1, sizeof b1), in->burst,
		       in->tokens_nano / 1000000000u, in->tokens_nano % 1000000000u / 1000000u);
		if (in->next_token_ms != 0)
			printf(", next in %s",
			       fmt_dur((int64_t)in->next_token_ms - now, b2, sizeof b2));
		else
			printf(" (full)");
		printf("\n");
	}
	printf("holders: %zu", in->holders_total > ip->holders ? in->holders_total : ip->holders);
	if (in->holders_total > ip->holders)
		printf(" (%zu shown%s)", ip->holders, ip->more_holders ? "; --max N shows more" : "");
	printf("\n");
	if (ip->holders > 0)
		printf("  %-8s %-18s %-3s %-14s %-16s %-7s %-12s %-19s %-9s %s\n", "PERMIT", "TOKEN",
		       "N", "CLIENT", "HOST", "PID", "PRINCIPAL", "SINCE", "HELD", "EXPIRES");
	for (k = 0; k < ip->n; k++) {
		for (i = 0; i < ip->p[k].nh; i++) {
			const struct semc_holder *h = &ip->p[k].in->holders[i];

			printf("  %-8" PRIu64 " %-18" PRIu64 " %-3u %-14s %-16s %-7u %-12s %-19s %-9s %s\n",
			       h->permit_id, h->token, h->n, esc(h->client_name), esc(h->host), h->pid,
			       esc(h->principal), fmt_time(h->since_ms, b1, sizeof b1),
			       fmt_dur(now - (int64_t)h->since_ms, b2, sizeof b2),
			       h->expires_ms ? fmt_time(h->expires_ms, b3, sizeof b3) :
			       (h->detached ? "-" : "with its connection"));
		}
	}
	printf("waiters: %zu", in->waiters_total > ip->waiters ? in->waiters_total : ip->waiters);
	if (in->waiters_total > ip->waiters)
		printf(" (the first %zu shown%s)", ip->waiters,
		       ip->more_waiters ? "; --max N shows more" : "");
	printf("\n");
	if (ip->waiters > 0)
		printf("  %-3s %-8s %-3s %-14s %-16s %-7s %-12s %-19s %s\n", "#", "REQUEST", "N",
		       "CLIENT", "HOST", "PID", "PRINCIPAL", "SINCE", "WAITING");
	for (k = 0; k < ip->n; k++) {
		for (i = 0; i < ip->p[k].nw; i++) {
			const struct semc_waiter *w = &ip->p[k].in->waiters[i];

			printf("  %-3zu %-8" PRIu64 " %-3u %-14s %-16s %-7u %-12s %-19s %s%s\n", ++pos,
			       w->request_id, w->n, esc(w->client_name), esc(w->host), w->pid,
			       esc(w->principal), fmt_time(w->since_ms, b1, sizeof b1),
			       fmt_dur(now - (int64_t)w->since_ms, b2, sizeof b2),
			       w->detached ? " (disconnected)" : "");
		}
	}
}

/* info NAME [--max N]: every page, up to INFO_MAX (or N) holders and waiters. */
static int cmd_info(int argc, char **argv)
{
	struct info_pages ip;
	struct cmd_args a;
	struct semc *c;
	int r;

	cmd_parse(argc, argv, "M", &a);
	need_args(&a, 1, 1, "info NAME [--max N]");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = info_fetch(c, a.argv[0], a.max ? a.max : INFO_MAX, &ip);
	semc_free(c);
	if (r == 0 && g.json)
		info_json(&ip, wall_ms());
	else if (r == 0)
		info_text(&ip, wall_ms());
	info_pages_free(&ip);
	return r != 0 ? fail(r, "info") : 0;
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
				printf("%-40s %8u %10" PRId64 " %-7s %8u %8u\n", esc(s->name), s->limit,
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
		fprintf(stderr, "semctl: list: more names follow; go on with --after %s\n",
			esc(after));
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
		printf("deleted %s\n", esc(a.argv[0]));
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
		printf("%s: limit %u\n", esc(a.argv[0]), limit);
	return 0;
}

/* set-rate NAME R/UNIT|0 [--burst N] */
static int cmd_set_rate(int argc, char **argv)
{
	struct cmd_args a;
	struct semc_rate rate = { 0 };
	struct semc *c;
	char rb[64];
	int r;

	cmd_parse(argc, argv, "B", &a);
	need_args(&a, 2, 2, "set-rate NAME R/UNIT|0 [--burst N]");
	if (strcmp(a.argv[1], "0") != 0 &&
	    semc_parse_rate(a.argv[1], &rate.rate, &rate.period_ms) != 0)
		usage_fail("set-rate: '%s' is not a rate (5000/h, 10/s, 3/min, 1/250ms, 0)",
			   a.argv[1]);
	if (rate.rate == 0 && a.burst_set)
		usage_fail("set-rate: --burst with rate 0 (no bucket)");
	rate.burst = a.rate.burst;
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_set_rate(c, a.argv[0], &rate);
	semc_free(c);
	if (r != 0)
		return fail(r, "set-rate");
	if (rate.rate != 0 && rate.burst == 0)
		rate.burst = rate.rate;
	if (g.json) {
		printf("{\"ok\":true,\"name\":");
		json_str(a.argv[0]);
		printf(",\"rate\":%u,\"rate_period_ms\":%u,\"burst\":%u}\n", rate.rate,
		       rate.period_ms, rate.burst);
	} else if (rate.rate == 0) {
		printf("%s: no rate\n", esc(a.argv[0]));
	} else {
		printf("%s: rate %s, burst %u\n", esc(a.argv[0]),
		       rate_text(rate.rate, rate.period_ms, rb, sizeof rb), rate.burst);
	}
	return 0;
}

/* renew NAME [--lease DUR] [--holder PERMIT_ID] */
static int cmd_renew(int argc, char **argv)
{
	struct cmd_args a;
	struct semc *c;
	uint64_t expires = 0;
	uint32_t renewed = 0;
	char b1[64];
	int r;

	cmd_parse(argc, argv, "LH", &a);
	need_args(&a, 1, 1, "renew NAME [--lease DUR] [--holder PERMIT_ID]");
	if (a.lease_ms == 0)
		usage_fail("renew: --lease must be more than 0");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_renew(c, a.argv[0], a.holder_set ? a.holder : 0,
		       a.lease_ms > 0 ? (uint32_t)a.lease_ms : 0, &renewed, &expires);
	semc_free(c);
	if (r != 0)
		return fail(r, "renew");
	if (g.json) {
		printf("{\"ok\":true,\"name\":");
		json_str(a.argv[0]);
		printf(",\"renewed\":%u,\"expires_ms\":%" PRIu64 "}\n", renewed, expires);
	} else {
		printf("renewed %u hold(s) of %s until %s\n", renewed, esc(a.argv[0]),
		       fmt_time(expires, b1, sizeof b1));
	}
	return 0;
}

/* holds [--principal P] [--max N]: every hold of a principal, all pages. */
static int cmd_holds(int argc, char **argv)
{
	struct semc_holds **pages = NULL, **np;
	struct cmd_args a;
	struct semc *c;
	uint64_t after = 0, got = 0, want, now = (uint64_t)wall_ms();
	size_t k, i, npages = 0, total = 0;
	char b1[64], b2[64], b3[64];
	int r = 0;

	cmd_parse(argc, argv, "PM", &a);
	need_args(&a, 0, 0, "holds [--principal P] [--max N]");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	/* bounded: pages of up to 1000 until --max or the end, at most 100,000 pages */
	while (npages < 100000) {
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
		if ((np = realloc(pages, (npages + 1) * sizeof *pages)) == NULL) {
			r = SEMC_E_NOMEM;
			break;
		}
		pages = np;
		want = a.max && a.max - got < 1000 ? a.max - got : 1000;
		if ((r = semc_holds(c, a.principal, after, (uint32_t)want, &pages[npages])) != 0)
			break;
		got += pages[npages]->n;
		after = pages[npages]->next_permit;
		if (pages[npages++]->n == 0 || after == 0 || (a.max && got >= a.max))
			break;
	}
	semc_free(c);
	if (r != 0) {
		for (k = 0; k < npages; k++)
			semc_holds_free(pages[k]);
		free(pages);
		return fail(r, "holds");
	}
	if (g.json)
		printf("{\"ok\":true,\"holds\":[");
	else
		printf("%-32s %-8s %-18s %-3s %-12s %-19s %-9s %s\n", "NAME", "PERMIT", "TOKEN", "N",
		       "PRINCIPAL", "SINCE", "HELD", "EXPIRES");
	for (k = 0; k < npages; k++) {
		for (i = 0; i < pages[k]->n; i++, total++) {
			const struct semc_hold_entry *e = &pages[k]->entries[i];
			const struct semc_holder *h = &e->holder;

			if (g.json) {
				printf("%s{\"name\":", total ? "," : "");
				json_str(e->name);
				printf(",\"permit_id\":%" PRIu64 ",\"token\":%" PRIu64 ",\"n\":%u,"
				       "\"principal\":", h->permit_id, h->token, h->n);
				json_str(h->principal);
				printf(",\"client_name\":");
				json_str(h->client_name);
				printf(",\"host\":");
				json_str(h->host);
				printf(",\"pid\":%u,\"since_ms\":%" PRIu64 ",\"detached\":%s,"
				       "\"expires_ms\":%" PRIu64 "}", h->pid, h->since_ms,
				       h->detached ? "true" : "false", h->expires_ms);
			} else {
				printf("%-32s %-8" PRIu64 " %-18" PRIu64 " %-3u %-12s %-19s %-9s %s\n",
				       esc(e->name), h->permit_id, h->token, h->n, esc(h->principal),
				       fmt_time(h->since_ms, b1, sizeof b1),
				       fmt_dur((int64_t)(now - h->since_ms), b2, sizeof b2),
				       h->expires_ms ? fmt_time(h->expires_ms, b3, sizeof b3) :
				       (h->detached ? "-" : "with its connection"));
			}
		}
	}
	if (g.json)
		printf("],\"count\":%zu,\"total\":%zu}\n", total,
		       npages > 0 ? pages[0]->total : 0);
	for (k = 0; k < npages; k++)
		semc_holds_free(pages[k]);
	free(pages);
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
			printf("%-32s %" PRIu64 "\n", esc(st->counters[i].name), st->counters[i].value);
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
		printf("pong from %s (%s) as %s in %" PRIu64 " us\n", esc(semc_address(c)),
		       esc(s.server), esc(s.principal), rtt);
	}
	semc_free(c);
	return 0;
}

/* cluster status: the cluster as the first node that answers sees it. */
static int cluster_status(void)
{
	struct semc_cluster *cl;
	struct semc *c = semc_new();
	size_t i;
	int r;

	if (c == NULL)
		return fail(SEMC_E_NOMEM, "cluster status");
	if (g.server != NULL && semc_set_address(c, g.server) != 0) {
		semc_free(c);
		usage_fail("-s: '%s' is not an address list", g.server);
	}
	semc_set_tls(c, g.tls_ca, g.tls_cert, g.tls_key);
	r = semc_cluster_status(c, &cl);
	if (r != 0) {
		semc_free(c);
		return fail(r, "cluster status");
	}
	if (g.json) {
		printf("{\"ok\":true,\"node_id\":%" PRIu64 ",\"state\":", cl->node_id);
		json_str(cl->state);
		printf(",\"term\":%" PRIu64 ",\"commit_index\":%" PRIu64
		       ",\"applied_index\":%" PRIu64 ",\"last_index\":%" PRIu64
		       ",\"leader_id\":%" PRIu64 ",\"leader\":", cl->term,
		       cl->commit_index, cl->applied_index, cl->last_index, cl->leader_id);
		json_str(cl->leader);
		printf(",\"nodes\":[");
		for (i = 0; i < cl->n_nodes; i++) {
			printf("%s{\"id\":%" PRIu64 ",\"address\":", i ? "," : "",
			       cl->nodes[i].id);
			json_str(cl->nodes[i].address);
			printf(",\"role\":");
			json_str(cl->nodes[i].role);
			printf(",\"match_index\":%" PRIu64 ",\"lag\":%" PRIu64 "}",
			       cl->nodes[i].match_index, cl->nodes[i].lag);
		}
		printf("]}\n");
	} else {
		printf("node %" PRIu64 " (%s): %s, term %" PRIu64 ", commit %" PRIu64
		       ", applied %" PRIu64 ", last %" PRIu64 "\n", cl->node_id,
		       esc(semc_address(c)), esc(cl->state), cl->term, cl->commit_index,
		       cl->applied_index, cl->last_index);
		if (cl->leader_id != 0)
			printf("leader: node %" PRIu64 "%s%s\n", cl->leader_id,
			       cl->leader[0] ? " at " : "", esc(cl->leader));
		else
			printf("leader: none known\n");
		printf("  %-6s %-24s %-8s %12s %8s\n", "NODE", "PEER ADDRESS", "ROLE",
		       "MATCH", "LAG");
		for (i = 0; i < cl->n_nodes; i++) {
			const struct semc_cluster_node *n = &cl->nodes[i];

			printf("  %-6" PRIu64 " %-24s %-8s", n->id, esc(n->address),
			       esc(n->role));
			if (strcmp(cl->state, "leader") == 0)
				printf(" %12" PRIu64 " %8" PRIu64 "\n", n->match_index, n->lag);
			else
				printf(" %12s %8s\n", "-", "-");
		}
	}
	semc_cluster_free(cl);
	semc_free(c);
	return 0;
}

/* cluster status | add ID HOST:PORT | remove ID | transfer [ID] */
static int cmd_cluster(int argc, char **argv)
{
	struct cmd_args a;
	struct semc *c;
	uint64_t id = 0;
	const char *what;
	int r;

	cmd_parse(argc, argv, "", &a);
	need_args(&a, 1, 3, "cluster status | add ID HOST:PORT | remove ID | transfer [ID]");
	what = a.argv[0];
	if (strcmp(what, "status") == 0) {
		need_args(&a, 1, 1, "cluster status");
		return cluster_status();
	}
	if (strcmp(what, "add") == 0)
		need_args(&a, 3, 3, "cluster add ID HOST:PORT");
	else if (strcmp(what, "remove") == 0)
		need_args(&a, 2, 2, "cluster remove ID");
	else if (strcmp(what, "transfer") == 0)
		need_args(&a, 1, 2, "cluster transfer [ID]");
	else
		usage_fail("cluster: unknown action '%s' (status, add, remove, transfer)", what);
	if (a.argc >= 2)
		id = parse_u64(a.argv[1], "node id");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	if (strcmp(what, "add") == 0)
		r = semc_cluster_add(c, id, a.argv[2]);
	else if (strcmp(what, "remove") == 0)
		r = semc_cluster_remove(c, id);
	else
		r = semc_cluster_transfer(c, id);
	semc_free(c);
	if (r != 0)
		return fail(r, what);
	if (g.json)
		printf("{\"ok\":true,\"action\":\"%s\",\"node_id\":%" PRIu64 "}\n", what, id);
	else
		printf("cluster %s: done\n", what);
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
		printf("released permit %" PRIu64 " of %s (%u permit(s))\n", a.holder,
		       esc(a.argv[0]), released);
	return 0;
}

/* --- run ---------------------------------------------------------------- */

/* Signals reach the main loop through this pipe, two bytes each: the
 * signal and whether the kernel sent it (a terminal's ^C, ^\, hang-up). */
static int run_pipe[2] = { -1, -1 };

/* Signal handler: pass the signal and its origin to the main loop. */
static void run_on_signal(int sig, siginfo_t *si, void *uc)
{
	unsigned char b[2] = { (unsigned char)sig, si != NULL && si->si_code == SI_KERNEL };
	int e = errno;

	(void)uc;
	if (write(run_pipe[1], b, sizeof b) < 0) {
		/* the pipe is full: the loop has signals to read anyway */
	}
	errno = e;
}

struct run_state {
	const struct acq *q;	/* the holds: one a name */
	int lost;		/* 0, or why a hold is lost or in jeopardy */
	char why[300];
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

	size_t i;

	(void)c;
	if (ev->type != SEMC_EV_HOLD_LOST || rs->lost || rs->q == NULL)
		return;
	for (i = 0; i < rs->q->k; i++) {
		if (ev->permit_id == rs->q->permit_id[i]) {
			rs->lost = ev->error ? ev->error : SEMC_E_HOLD_LOST;
			snprintf(rs->why, sizeof rs->why, "the hold was lost%s%s: %s",
				 rs->q->k > 1 ? " on " : "", rs->q->k > 1 ? esc(rs->q->names[i]) : "",
				 ev->message);
			return;
		}
	}
}

/* Start the command with SEMD_TOKEN, SEMD_NAME and SEMD_PERMIT_ID (of the
 * first name) and SEMD_TOKENS (a NAME=TOKEN line a name) in its
 * environment. */
static pid_t run_spawn(char **cmd, const struct acq *q)
{
	pid_t pid, parent = getpid();
	char buf[32], *all;
	size_t i, len = 1, off = 0;

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
	snprintf(buf, sizeof buf, "%" PRIu64, q->token[0]);
	setenv("SEMD_TOKEN", buf, 1);
	setenv("SEMD_NAME", q->names[0], 1);
	snprintf(buf, sizeof buf, "%" PRIu64, q->permit_id[0]);
	setenv("SEMD_PERMIT_ID", buf, 1);
	for (i = 0; i < q->k; i++)
		len += strlen(q->names[i]) + 23;
	if ((all = malloc(len)) != NULL) {
		all[0] = '\0';
		for (i = 0; i < q->k; i++)
			off += (size_t)snprintf(all + off, len - off, "%s=%" PRIu64 "\n",
						q->names[i], q->token[i]);
		setenv("SEMD_TOKENS", all, 1);
	}
	if (g.sess_dir_set)
		unsetenv("SEMD_TLS_SESSION_DIR");
	execvp(cmd[0], cmd);
	fprintf(stderr, "semctl: run: cannot execute %s: %s\n", cmd[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* The longest grace a live session allows: SIGTERM goes at the lease's
 * client-side end minus the grace, and a session that gets its pongs (a
 * ping every third of the lease, answered within max(50 ms, lease / 10))
 * must never come that close. window is the client-side lease (the lease
 * less the drift bound and the margin), lease the granted one. */
static int64_t run_grace_max(int64_t window, int64_t lease)
{
	int64_t rtt = lease / 10 > 50 ? lease / 10 : 50;
	int64_t most = window - lease / 3 - rtt;

	return most > 0 ? most : 0;
}

/* Print run's outcome as JSON. */
static void run_json(const struct acq *q, const struct run_state *rs, int status, int code)
{
	if (rs->lost) {
		printf("{\"ok\":false,\"error\":");
		json_str(err_name(rs->lost));
		printf(",\"code\":%d,\"message\":", rs->lost);
		json_str(rs->why);
		printf(",\"name\":");
	} else {
		printf("{\"ok\":true,\"name\":");
	}
	json_str(q->names[0]);
	printf(",\"token\":%" PRIu64 ",\"permit_id\":%" PRIu64, q->token[0], q->permit_id[0]);
	if (q->k > 1) {
		printf(",");
		acq_json_grants(q);
	}
	if (WIFSIGNALED(status))
		printf(",\"status\":null,\"signal\":%d", WTERMSIG(status));
	else
		printf(",\"status\":%d,\"signal\":null", WEXITSTATUS(status));
	printf(",\"exit\":%d}\n", code);
}

/* A system call of run failed. */
static int run_sys_fail(const char *what)
{
	char m[256];

	snprintf(m, sizeof m, "%s: %s", what, strerror(errno));
	fprintf(stderr, "semctl: run: %s\n", m);
	if (g.json) {
		printf("{\"ok\":false,\"error\":\"system\",\"code\":%d,\"message\":", SEMC_E_SYSTEM);
		json_str(m);
		printf(",\"exit\":%d}\n", EX_ERROR_);
	}
	return EX_ERROR_;
}

/*
 * run NAME [-n N] [--timeout DUR] [--lease DUR] [--grace DUR] [--limit N] -- CMD
 *
 * One thread, one poll loop: the library's keepalive duties run in
 * semc_process() (its thread is off), signals come through run_pipe. With
 * a lease, the child must be dead before the daemon can give the permit to
 * anyone else: SIGTERM when the client-side lease has `grace` left, SIGKILL
 * (and reap) when it ends - whichever comes first, that or a HoldLost from
 * the daemon (SIGTERM at once, SIGKILL `grace` later).
 */
static int cmd_run(int argc, char **argv)
{
	static const int fwd[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD };
	struct run_state rs = { 0 };
	struct sigaction sa = { 0 };
	struct semc_session ss;
	struct cmd_args a;
	struct acq q;
	struct semc *c;
	int64_t now, left, lease_ms, grace_ms, window, gmax, kill_at = -1;
	int r, status = 0, i, code, dd, ncmd = 0, nnames = 1;
	bool exited = false, termed = false;
	size_t k;
	pid_t pid;

	/* The command is what follows "--"; the names come before it. */
	for (dd = 1; dd < argc && strcmp(argv[dd], "--") != 0; dd++)
		;
	if (dd < argc)
		ncmd = argc - dd - 1;
	cmd_parse(argc, argv, "ntLGl", &a);
	if (dd < argc)
		nnames = a.argc - ncmd;
	if (a.argc < 2 || nnames < 1 || a.argc - nnames < 1)
		usage_fail("usage: semctl run NAME [-n N] [--timeout DUR] [--lease DUR] "
		    "[--grace DUR] [--limit N] -- CMD [ARG...]\n"
		    "       semctl run NAME[:N] NAME[:N]... [options] -- CMD [ARG...]");
	acq_names(&q, a.argv, nnames, &a, "run");
	q.timeout_ms = a.timeout_ms;
	q.create_limit = a.limit_set ? a.limit : 0;
	lease_ms = a.lease_ms >= 0 ? a.lease_ms : RUN_LEASE_MS;
	if (lease_ms > 0 && lease_ms < RUN_LEASE_MIN)
		usage_fail("--lease: at least %dms (or 0: no lease)", RUN_LEASE_MIN);
	grace_ms = a.grace_ms >= 0 ? a.grace_ms : RUN_GRACE_MS;
	if ((r = client_open(&c, (uint32_t)lease_ms, "semctl run")) != 0)
		return r;
	semc_session(c, &ss);
	/* right after the handshake, what is left is the whole client-side lease */
	window = semc_lease_left(c);
	if (ss.lease_ms > 0 && window >= 0) {
		gmax = run_grace_max(window, ss.lease_ms);
		if (grace_ms > gmax) {
			if (a.grace_ms >= 0)
				fprintf(stderr, "semctl: run: --grace %" PRId64 "ms does not fit in "
					"a %ums lease; using %" PRId64 "ms\n", grace_ms, ss.lease_ms, gmax);
			grace_ms = gmax;
		}
	}
	semc_set_event_callback(c, run_on_event, &rs);
	r = acquire(c, &q);
	if (r != 0) {
		semc_free(c);
		if (r == SEMC_E_EXISTS && a.limit_set)
			return fail_limit(r, "run", q.names[0], a.limit);
		return acq_fail(&q, r, "run");
	}
	rs.q = &q;
	if (pipe2(run_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		semc_free(c);
		return run_sys_fail("pipe");
	}
	sa.sa_sigaction = run_on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 5; i++)
		sigaction(fwd[i], &sa, NULL);
	pid = run_spawn(a.argv + nnames, &q);
	if (pid < 0) {
		semc_free(c);
		return run_sys_fail("fork");
	}
	/* bounded by the child's life: it ends by itself or is killed */
	while (!exited) {
		struct pollfd p[2] = { { .fd = run_pipe[0], .events = POLLIN },
				       { .fd = semc_fd(c), .events = POLLIN } };
		unsigned char sigs[64];
		int64_t wait;
		ssize_t n;

		now = mono_ms();
		left = semc_lease_left(c);
		if (!rs.lost && left >= 0 && left <= grace_ms) {
			/* no answer for most of the lease: the child must be dead
			 * before the lease ends, with its grace before that */
			rs.lost = SEMC_E_HOLD_LOST;
			snprintf(rs.why, sizeof rs.why, "the server did not answer for most of "
				 "the session's lease");
			kill_at = now + left;
		}
		if (rs.lost && !termed) {
			fprintf(stderr, "semctl: run: %s: %s; terminating the command\n",
				esc(q.names[0]), esc(rs.why));
			kill(pid, SIGTERM);
			termed = true;
			if (kill_at < 0)
				kill_at = now + grace_ms;
		}
		if (termed && rs.lost == SEMC_E_HOLD_LOST && left < 0 && kill_at > now)
			kill_at = now;	/* the client-side lease is over */
		if (termed && now >= kill_at) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		wait = semc_timeout(c);
		if (termed && (wait < 0 || kill_at - now < wait))
			wait = kill_at - now;
		if (!termed && left >= 0 && (wait < 0 || left - grace_ms < wait))
			wait = left - grace_ms;
		if (p[1].fd < 0 && (wait < 0 || wait > 100))
			wait = 100;	/* disconnected: retry soon */
		if (wait > 60000 || wait < 0)
			wait = 60000;
		if (poll(p, p[1].fd >= 0 ? 2 : 1, (int)wait) < 0 && errno != EINTR)
			break;
		while ((n = read(run_pipe[0], sigs, sizeof sigs)) > 0) {
			/* a signal the terminal sent reached the child too (it is
			 * in our foreground process group): forward only others */
			for (i = 0; i + 1 < n; i += 2)
				if (sigs[i] != SIGCHLD && !sigs[i + 1])
					kill(pid, sigs[i]);
		}
		if (waitpid(pid, &status, WNOHANG) == pid) {
			exited = true;
			break;
		}
		semc_process(c);
	}
	if (!exited && !termed) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	if (!rs.lost) {
		semc_set_timeout(c, 2000);	/* best effort: the session ends anyway */
		for (k = 0; k < q.k; k++)
			semc_up(c, q.names[k], 0, q.permit_id[k], NULL);
	}
	semc_free(c);
	if (rs.lost)
		code = EX_LOST_;
	else if (WIFSIGNALED(status))
		code = 128 + WTERMSIG(status);
	else
		code = WEXITSTATUS(status);
	if (g.json)
		run_json(&q, &rs, status, code);
	return code;
}

/* --- watch -------------------------------------------------------------- */

struct watch_state {
	const char *name;
	bool prefix;
	bool rewatch;		/* the connection was made again */
	uint64_t events;
};

static volatile sig_atomic_t watch_stop;

/* SIGINT, SIGTERM, SIGHUP: end the stream. */
static void watch_on_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

/* One event: a line, or a JSON object on a line. */
static void watch_print(const struct semc_watch_event *e)
{
	char b1[64], b2[32];
	time_t t = (time_t)(e->time_ms / 1000);
	struct tm tm;

	if (g.json) {
		printf("{\"time_ms\":%" PRIu64 ",\"watch\":%" PRIu64 ",\"name\":", e->time_ms,
		       e->watch);
		json_str(e->name);
		printf(",\"event\":\"%s\",\"n\":%u,\"permit_id\":%" PRIu64 ",\"token\":%" PRIu64
		       ",\"request_id\":%" PRIu64 ",\"principal\":", e->kind_name, e->n,
		       e->permit_id, e->token, e->request_id);
		json_str(e->principal);
		printf(",\"client_name\":");
		json_str(e->client_name);
		printf(",\"host\":");
		json_str(e->host);
		printf(",\"pid\":%u,\"holders\":%u,\"waiters\":%u,\"available\":%" PRId64
		       ",\"limit\":%u", e->pid, e->holders, e->waiters, e->available, e->limit);
		if (e->rate != 0)
			printf(",\"rate\":%u,\"rate_period_ms\":%u,\"burst\":%u", e->rate,
			       e->rate_period_ms, e->burst);
		printf(",\"reason\":");
		json_str(e->reason);
		printf("}\n");
		fflush(stdout);
		return;
	}
	if (localtime_r(&t, &tm) != NULL)
		strftime(b1, sizeof b1, "%Y-%m-%d %H:%M:%S", &tm);
	else
		snprintf(b1, sizeof b1, "-");
	printf("%s.%03u %-8s %s", b1, (unsigned)(e->time_ms % 1000), e->kind_name, esc(e->name));
	if (e->n != 0)
		printf(" n=%u", e->n);
	if (e->permit_id != 0)
		printf(" permit=%" PRIu64, e->permit_id);
	if (e->token != 0)
		printf(" token=%" PRIu64, e->token);
	if (e->request_id != 0)
		printf(" request=%" PRIu64, e->request_id);
	if (*e->principal != '\0')
		printf(" by %s (%s@%s pid %u)", esc(e->principal), esc(e->client_name),
		       esc(e->host), e->pid);
	if (e->kind == SEMC_WATCH_LIMIT || e->kind == SEMC_WATCH_CREATE)
		printf(" limit=%u", e->limit);
	if (e->rate != 0 && (e->kind == SEMC_WATCH_RATE || e->kind == SEMC_WATCH_CREATE))
		printf(" rate=%s burst=%u", rate_text(e->rate, e->rate_period_ms, b2, sizeof b2),
		       e->burst);
	printf(" holders=%u waiters=%u available=%" PRId64, e->holders, e->waiters, e->available);
	if (*e->reason != '\0')
		printf(" (%s)", esc(e->reason));
	printf("\n");
	fflush(stdout);
}

/* An event of the watch. */
static void watch_on_watch(struct semc *c, const struct semc_watch_event *ev, void *arg)
{
	struct watch_state *ws = arg;

	(void)c;
	ws->events++;
	watch_print(ev);
}

/* Events of the connection during watch. */
static void watch_on_event(struct semc *c, const struct semc_event *ev, void *arg)
{
	struct watch_state *ws = arg;

	(void)c;
	if (ev->type == SEMC_EV_RECONNECTED || ev->type == SEMC_EV_RESUMED) {
		ws->rewatch = true;
	} else if (ev->type == SEMC_EV_DISCONNECTED) {
		fprintf(stderr, "semctl: watch: %s; connecting again (events in between are "
			"missed)\n", esc(ev->message));
	}
}

/*
 * watch NAME|PREFIX/ [--prefix] [--all]: stream a name's events (a name
 * ending in '/' or --prefix: every name it begins; --all: every name)
 * until interrupted (exit 0). After a reconnection the watch is made again.
 */
static int cmd_watch(int argc, char **argv)
{
	struct watch_state ws = { 0 };
	struct sigaction sa = { 0 };
	struct cmd_args a;
	struct semc *c;
	int64_t id, wait;
	size_t len;
	int r;

	cmd_parse(argc, argv, "XY", &a);
	need_args(&a, a.all ? 0 : 1, a.all ? 0 : 1, "watch NAME|PREFIX/ [--prefix] [--all]");
	ws.name = a.all ? "" : a.argv[0];
	len = strlen(ws.name);
	ws.prefix = a.all || a.prefix || (len > 0 && ws.name[len - 1] == '/');
	if ((r = client_open(&c, 0, "semctl watch")) != 0)
		return r;
	semc_set_event_callback(c, watch_on_event, &ws);
	if ((id = semc_watch(c, ws.name, ws.prefix, watch_on_watch, &ws)) < 0) {
		semc_free(c);
		return fail((int)id, "watch");
	}
	sa.sa_handler = watch_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (!g.json)
		fprintf(stderr, "semctl: watching %s%s (^C to stop)\n",
			a.all ? "every name" : esc(ws.name), ws.prefix && !a.all ? "*" : "");
	/* bounded by the user: until a signal (or stdout closes) */
	while (!watch_stop) {
		struct pollfd p = { .fd = semc_fd(c), .events = POLLIN };

		wait = semc_timeout(c);
		if (wait < 0 || wait > 1000)
			wait = 1000;
		if (p.fd < 0 && wait > 100)
			wait = 100;
		if (poll(&p, p.fd >= 0 ? 1 : 0, (int)wait) < 0 && errno != EINTR)
			break;
		semc_process(c);
		if (ferror(stdout))
			break;		/* the reader went away */
		if (ws.rewatch && !watch_stop) {
			ws.rewatch = false;
			if (semc_watch(c, ws.name, ws.prefix, watch_on_watch, &ws) < 0)
				ws.rewatch = true;	/* again at the next turn */
		}
	}
	semc_free(c);
	return ferror(stdout) ? EX_ERROR_ : EX_OK_;
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
	{ "set-rate", cmd_set_rate },
	{ "renew", cmd_renew },
	{ "holds", cmd_holds },
	{ "watch", cmd_watch },
	{ "validate", cmd_validate },
	{ "stats", cmd_stats },
	{ "ping", cmd_ping },
	{ "release", cmd_release },
	{ "cluster", cmd_cluster },
};

/* Whether --json (or -j) is among the options, so that a usage error
 * found before getopt reaches it is reported as JSON too. Stops at "--";
 * skips the values of the options that take one. */
static bool json_wanted(int argc, char **argv)
{
	static const char *const valued[] = { "-s", "--server", "--tls-ca", "--tls-cert",
		"--tls-key", "-n", "--limit", "--mode", "--timeout", "--lease", "--holder",
		"--grace", "--max", "--after", "--initial", "--rate", "--burst", "--principal" };
	size_t k;
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0)
			return true;
		for (k = 0; k < sizeof valued / sizeof valued[0]; k++)
			if (strcmp(argv[i], valued[k]) == 0)
				break;
		if (k < sizeof valued / sizeof valued[0])
			i++;
	}
	return false;
}

/* Does the address (list) in use name a tls: server? */
static bool tls_wanted(void)
{
	const char *a = g.server != NULL ? g.server : getenv("SEMD_SERVER");

	return a != NULL && strstr(a, "tls:") != NULL;
}

/*
 * Keep TLS sessions between runs, so that the next semctl resumes instead
 * of a full handshake: libsemclient keeps them in $SEMD_TLS_SESSION_DIR
 * (a setting of the caller's is left as it is; empty turns it off), which
 * semctl points at $XDG_RUNTIME_DIR/semctl, made 0700 if missing. A
 * directory that is not ours alone is not used, with a warning.
 */
static void tls_sessions_setup(void)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char dir[4096];
	struct stat st;

	if (g.no_tls_resume || !tls_wanted() || getenv("SEMD_TLS_SESSION_DIR") != NULL ||
	    rt == NULL || rt[0] != '/' ||
	    snprintf(dir, sizeof dir, "%s/semctl", rt) >= (int)sizeof dir)
		return;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return;
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		fprintf(stderr, "semctl: not keeping TLS sessions in %s: it must be a "
			"directory of yours with mode 0700\n", dir);
		return;
	}
	if (setenv("SEMD_TLS_SESSION_DIR", dir, 1) == 0)
		g.sess_dir_set = true;
}

/* Parse the global options, then run the command. */
int main(int argc, char **argv)
{
	enum { G_CA = 1000, G_CERT, G_KEY, G_NO_RESUME };
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "tls-ca", required_argument, NULL, G_CA },
		{ "tls-cert", required_argument, NULL, G_CERT },
		{ "tls-key", required_argument, NULL, G_KEY },
		{ "no-tls-resume", no_argument, NULL, G_NO_RESUME },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	size_t i;
	int ch;

	signal(SIGPIPE, SIG_IGN);
	g.json = json_wanted(argc, argv);
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+:s:jhV", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': g.server = optarg; break;
		case 'j': g.json = true; break;
		case G_CA: g.tls_ca = optarg; break;
		case G_CERT: g.tls_cert = optarg; break;
		case G_KEY: g.tls_key = optarg; break;
		case G_NO_RESUME: g.no_tls_resume = true; break;
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
	tls_sessions_setup();
	for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(commands[i].name, g.cmd) == 0)
			return commands[i].fn(argc - optind, argv + optind);
	usage_fail("unknown command '%s'", g.cmd);
}
