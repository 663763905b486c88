/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/semctl-args.c - a command's options and arguments, usage errors,
 * the exit code of a library error, and the connection a command opens.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
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

#include "client/semctl.h"

/* Print a usage error and exit 2 (with --json, also one JSON object). */
void usage_fail(const char *fmt, ...)
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
int exit_code(int err)
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
const char *err_name(int err)
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
int fail(int err, const char *what)
{
	const char *msg = semc_last_message();

	return fail_msg(err, what, *msg != '\0' ? msg : semc_strerror(err));
}

/* Report a failure with its message (on stderr, and as JSON with --json);
 * returns the exit code. */
int fail_msg(int err, const char *what, const char *msg)
{
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
int fail_limit(int err, const char *what, const char *name, uint32_t limit)
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
uint32_t parse_count(const char *s, const char *what, uint32_t min)
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
uint64_t parse_u64(const char *s, const char *what)
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
int client_open(struct semc **out, uint32_t lease_ms, const char *name)
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

/* A count option's value (at least min), and that it was given. */
static void opt_count(uint32_t *v, bool *set, const char *name, uint32_t min)
{
	*v = parse_count(optarg, name, min);
	*set = true;
}

/* Parse a command's options; allowed lists the options it takes
 * ("nlmtLfHGMAIRBPXY": -n, --limit, --mode, --timeout, --lease, --force,
 * --holder, --grace, --max, --after, --initial, --rate, --burst,
 * --principal, --prefix, --all). */
void cmd_parse(int argc, char **argv, const char *allowed, struct cmd_args *a)
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
			opt_count(&a->n, &a->n_set, "-n", 1);
			break;
		case O_LIMIT:
			opt_count(&a->limit, &a->limit_set, "--limit", 1);
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
			opt_count(&a->initial, &a->initial_set, "--initial", 0);
			break;
		case O_RATE:
			if (semc_parse_rate(optarg, &a->rate.rate, &a->rate.period_ms) != 0)
				usage_fail("--rate: '%s' is not a rate (5000/h, 10/s, 3/min, 1/250ms)",
					   optarg);
			a->rate_set = true;
			break;
		case O_BURST:
			opt_count(&a->rate.burst, &a->burst_set, "--burst", 1);
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
void need_args(const struct cmd_args *a, int min, int max, const char *synopsis)
{
	if (a->argc < min || a->argc > max)
		usage_fail("usage: semctl %s", synopsis);
}

/* Parse a command's options (cmd_parse()) and require min to max
 * positional arguments, else print its synopsis and exit. */
void cmd_get(int argc, char **argv, const char *allowed, int min, int max,
	     const char *synopsis, struct cmd_args *a)
{
	cmd_parse(argc, argv, allowed, a);
	need_args(a, min, max, synopsis);
}

/* cmd_get(), then connect (client_open()) for a command that checks nothing
 * more before its call: 0, or the exit code of the failure to connect. */
int cmd_open(int argc, char **argv, const char *allowed, int min, int max,
	     const char *synopsis, struct cmd_args *a, struct semc **c)
{
	cmd_get(argc, argv, allowed, min, max, synopsis, a);
	return client_open(c, 0, "semctl");
}

/* Close a command's client after its one call; r != 0: report it as what. */
int call_end(struct semc *c, int r, const char *what)
{
	semc_free(c);
	return r != 0 ? fail(r, what) : 0;
}
