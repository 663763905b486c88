/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli/args.c - a command's options and arguments (by the tables of
 * tables.c), the exit code of a library error, and the connection a
 * command opens.
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

#include "cli/semctl.h"

/*
 * Each library error's exit code and its stable short name for JSON, one
 * row an error; an error not in the table is err_other's.
 */
struct err_row {
	int		err;
	int		exit;
	const char	*name;
};

static const struct err_row err_rows[] = {
	{ SEMC_OK,			EX_OK_,		"error" },
	{ SEMC_E_TIMEOUT,		EX_TIMEOUT_,	"timeout" },
	{ SEMC_E_WOULD_BLOCK,		EX_TIMEOUT_,	"would_block" },
	{ SEMC_E_NOT_FOUND,		EX_ERROR_,	"not_found" },
	{ SEMC_E_EXISTS,		EX_ERROR_,	"exists" },
	{ SEMC_E_NOT_HOLDER,		EX_ERROR_,	"not_holder" },
	{ SEMC_E_PERMISSION,		EX_PERM_,	"permission_denied" },
	{ SEMC_E_INVALID,		EX_ERROR_,	"invalid_argument" },
	{ SEMC_E_EXHAUSTED,		EX_ERROR_,	"resource_exhausted" },
	{ SEMC_E_CANCELLED,		EX_ERROR_,	"cancelled" },
	{ SEMC_E_UNAVAILABLE,		EX_SERVER_,	"unavailable" },
	{ SEMC_E_PROTOCOL,		EX_SERVER_,	"protocol_error" },
	{ SEMC_E_INTERNAL,		EX_ERROR_,	"internal" },
	{ SEMC_E_SESSION_EXPIRED,	EX_LOST_,	"session_expired" },
	{ SEMC_E_DEADLOCK,		EX_DEADLOCK_,	"deadlock" },
	{ SEMC_E_QUEUE_FULL,		EX_QUEUE_FULL_,	"queue_full" },
	{ SEMC_E_REPLACED,		EX_REPLACED_,	"replaced" },
	{ SEMC_E_COMPACTED,		EX_ERROR_,	"compacted" },
	{ SEMC_E_CONNECT,		EX_SERVER_,	"connect" },
	{ SEMC_E_DISCONNECTED,		EX_SERVER_,	"disconnected" },
	{ SEMC_E_HOLD_LOST,		EX_LOST_,	"hold_lost" },
	{ SEMC_E_NO_REPLY,		EX_SERVER_,	"no_reply" },
	{ SEMC_E_NOMEM,			EX_ERROR_,	"error" },
	{ SEMC_E_ADDRESS,		EX_USAGE_,	"bad_address" },
	{ SEMC_E_NOT_SUPPORTED,		EX_SERVER_,	"error" },
	{ SEMC_E_TLS,			EX_SERVER_,	"tls" },
	{ SEMC_E_SYSTEM,		EX_ERROR_,	"error" },
	{ SEMC_E_ARG,			EX_USAGE_,	"error" },
};

static const struct err_row err_other = { 0, EX_ERROR_, "error" };

/* The row of a library error. */
static const struct err_row *err_find(int err)
{
	size_t i;

	for (i = 0; i < sizeof err_rows / sizeof err_rows[0]; i++)
		if (err_rows[i].err == err)
			return &err_rows[i];
	return &err_other;
}

/* The exit code for a library error. */
int exit_code(int err)
{
	return err_find(err)->exit;
}

/* A stable short name for an error, for JSON. */
const char *err_name(int err)
{
	return err_find(err)->name;
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
	return fail_json(exit_code(err), err_name(err), err, what, msg, NULL);
}

/*
 * Report a failure: "semctl: what: msg" on stderr and, with --json, the
 * object every failure prints: {"ok":false,"error":error,"code":code,
 * "message":msg,...,"exit":ex}, where more (if not NULL) adds members
 * (",\"key\":value"). Returns ex.
 */
int fail_json(int ex, const char *error, int code, const char *what, const char *msg,
	      const char *more)
{
	fprintf(stderr, "semctl: %s: %s\n", what, esc(msg));
	if (g.json) {
		printf("{\"ok\":false,\"error\":");
		json_str(error);
		printf(",\"code\":%d,\"message\":", code);
		json_str(msg);
		printf("%s,\"exit\":%d}\n", more != NULL ? more : "", ex);
	}
	return ex;
}

/* Read s as a decimal number into *v: 0; -1 when it is not one (digits
 * only); 1 when it is too large for an unsigned long long. */
static int parse_digits(const char *s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0')
		return -1;
	return errno != 0 ? 1 : 0;
}

/* Parse a count from min to max: a number, in range, else a usage error
 * that says which. */
uint32_t parse_count(const char *s, const char *what, uint32_t min, uint32_t max)
{
	unsigned long long v;
	int r = parse_digits(s, &v);

	if (r < 0)
		usage_fail("%s: '%s' is not a number (%u to %u)", what, s, min, max);
	if (r > 0 || v > max || v < min)
		usage_fail("%s: %s is out of range (%u to %u)", what, s, min, max);
	return (uint32_t)v;
}

/* Parse --priority: -8 to 7 (an optional minus sign, then digits); the
 * range in a refusal is the whole one, whichever side it missed. */
static int parse_priority(const char *s)
{
	unsigned long long v;
	int r = parse_digits(s + (s[0] == '-'), &v);

	if (r < 0)
		usage_fail("--priority: '%s' is not a number (%d to %d)", s, SEMC_PRIO_MIN,
			   SEMC_PRIO_MAX);
	if (r > 0 || (s[0] == '-' ? v > (unsigned long long)-SEMC_PRIO_MIN :
		      v > (unsigned long long)SEMC_PRIO_MAX))
		usage_fail("--priority: %s is out of range (%d to %d)", s, SEMC_PRIO_MIN,
			   SEMC_PRIO_MAX);
	return s[0] == '-' ? -(int)v : (int)v;
}

/* Parse a 64-bit number (tokens, permit ids, --max) of at least min. */
uint64_t parse_u64(const char *s, const char *what, uint64_t min)
{
	unsigned long long v;
	int r = parse_digits(s, &v);

	if (r < 0)
		usage_fail("%s: '%s' is not a number", what, s);
	if (r > 0 || v < min)
		usage_fail("%s: %s is out of range (%" PRIu64 " to %llu)", what, s, min,
			   ULLONG_MAX);
	return v;
}

/* Parse a duration option of at most max ms (-1: no most). */
static int64_t parse_dur(const char *s, const char *what, int64_t max, const char *range)
{
	int64_t ms;

	if (semc_parse_duration(s, &ms) != 0)
		usage_fail("%s: '%s' is not a duration (250ms, 5s, 2m, 1h, 1d)", what, s);
	if (max >= 0 && ms > max)
		usage_fail("%s: %s is out of range (%s)", what, s, range);
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

/* --- the options, by the table ------------------------------------------- */

#define OPT_VAL		1000	/* getopt's value of option id: OPT_VAL + id */

static struct option opt_long[OPT_COUNT];
static char opt_short[2 * OPT_COUNT + 3];	/* "+:" then the letters; a
						 * command's from opt_short + 1 */

/* getopt_long()'s tables, from opt_defs[] (once). */
static void opt_tables(void)
{
	size_t i, n = 0, k = 0;

	if (opt_short[0] != '\0')
		return;
	opt_short[k++] = '+';	/* the global options stop at the command */
	opt_short[k++] = ':';
	for (i = OPT_NONE + 1; i < OPT_COUNT; i++) {
		const struct opt_def *o = &opt_defs[i];

		if (o->name != NULL) {
			opt_long[n].name = o->name;
			opt_long[n].has_arg = o->value == NULL ? no_argument :
			    opt_value_optional((enum opt_id)i) ? optional_argument :
			    required_argument;
			opt_long[n].flag = NULL;
			opt_long[n++].val = OPT_VAL + (int)i;
		}
		if (o->letter != 0) {
			opt_short[k++] = o->letter;
			if (o->value != NULL)
				opt_short[k++] = ':';
		}
	}
	opt_short[k] = '\0';
}

/* The option id of getopt_long()'s answer ch (OPT_NONE: not an option). */
static enum opt_id opt_of(int ch)
{
	size_t i;

	if (ch > OPT_VAL && ch < OPT_VAL + OPT_COUNT)
		return (enum opt_id)(ch - OPT_VAL);
	for (i = OPT_NONE + 1; i < OPT_COUNT; i++)
		if (opt_defs[i].letter != 0 && opt_defs[i].letter == ch)
			return (enum opt_id)i;
	return OPT_NONE;
}

/* Does the command take the option? */
bool cmd_takes(const struct cmd_def *cmd, enum opt_id id)
{
	size_t i;

	for (i = 0; i < CMD_OPTS && cmd->opts[i].id != OPT_NONE; i++)
		if (cmd->opts[i].id == id)
			return true;
	return false;
}

/* An option as written: "--limit", or "-n" for one with only a letter. */
static const char *opt_written(enum opt_id id, char *buf, size_t len)
{
	if (opt_defs[id].name != NULL)
		snprintf(buf, len, "--%s", opt_defs[id].name);
	else
		snprintf(buf, len, "-%c", opt_defs[id].letter);
	return buf;
}

/*
 * The option getopt did not know, as written: a letter of a group (-xy
 * stops at the x, before optind moves past the group, whose word argv[optind
 * - 1] is not) is optopt; an unknown long option has optopt 0 and is the
 * word just read.
 */
static const char *opt_unknown(char **argv, char *buf, size_t len)
{
	if (optopt == 0 || optopt == '?')
		return argv[optind - 1];
	snprintf(buf, len, "-%c", optopt);
	return buf;
}

/*
 * Whether --json (or -j) is among the options, so that a usage error
 * found before getopt reaches it is reported as JSON too. Stops at "--";
 * skips the values of the options that take one.
 */
bool json_wanted(int argc, char **argv)
{
	size_t k;
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0)
			return true;
		for (k = OPT_NONE + 1; k < OPT_COUNT; k++) {
			const struct opt_def *o = &opt_defs[k];

			if (o->value != NULL && !opt_value_optional((enum opt_id)k) &&
			    ((o->name != NULL && strncmp(argv[i], "--", 2) == 0 &&
			    strcmp(argv[i] + 2, o->name) == 0) ||
			    (o->letter != 0 && argv[i][0] == '-' && argv[i][1] == o->letter &&
			     argv[i][2] == '\0')))
				break;
		}
		if (k < OPT_COUNT)
			i++;
	}
	return false;
}

/* A global option, before or after the command. */
static void global_set(enum opt_id id)
{
	switch (id) {
	case OPT_SERVER: g.server = optarg; break;
	case OPT_JSON: g.json = true; break;
	case OPT_QUIET: g.quiet = true; break;
	case OPT_TLS_CA: g.tls_ca = optarg; break;
	case OPT_TLS_CERT: g.tls_cert = optarg; break;
	case OPT_TLS_KEY: g.tls_key = optarg; break;
	case OPT_NO_TLS_RESUME: g.no_tls_resume = true; break;
	case OPT_HELP:
		if (g.def != NULL)
			help_command(g.def);
		else
			help_global();
		exit(EX_OK_);
	case OPT_VERSION:
		if (g.json)
			printf("{\"ok\":true,\"version\":\"%s\"}\n", semc_version());
		else
			printf("semctl %s\n", semc_version());
		exit(EX_OK_);
	default:
		break;
	}
}

/* The global options before the command: the index of the command. */
int globals_parse(int argc, char **argv)
{
	char b[40];
	enum opt_id id;
	int ch;

	opt_tables();
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, opt_short, opt_long, NULL)) != -1) {
		if (ch == ':')
			usage_fail("option '%s' needs a value", argv[optind - 1]);
		if ((id = opt_of(ch)) == OPT_NONE)
			usage_fail("unknown option '%s'", opt_unknown(argv, b, sizeof b));
		if (id < OPT_FIRST_GLOBAL)
			usage_fail("option '%s' is a command's: put it after the command",
				   opt_written(id, b, sizeof b));
		global_set(id);
	}
	return optind;
}

/* A word an option takes, and what it means. */
struct opt_word {
	const char *word;
	int value;
};

static const struct opt_word mode_words[2] = {
	{ "owned", SEMC_MODE_OWNED }, { "signal", SEMC_MODE_SIGNAL },
};
static const struct opt_word share_words[2] = {
	{ "principal", SEMC_SHARE_PRINCIPAL }, { "key", SEMC_SHARE_KEY },
};

/* The value of the word s, one of two, else a usage error that names both. */
static int parse_word(const char *s, const char *what, const struct opt_word w[2])
{
	int i;

	for (i = 0; i < 2; i++)
		if (strcmp(s, w[i].word) == 0)
			return w[i].value;
	usage_fail("%s: '%s' is not %s or %s", what, s, w[0].word, w[1].word);
}

/* An option that is a switch, a string or a number, and where in a command's
 * arguments it goes: the one of its pointers that is set. */
struct plain_opt {
	enum opt_id	id;
	uint32_t	min;
	bool		*on;		/* a switch */
	const char	**str;		/* a string (argv's own) */
	uint32_t	*count;		/* a count from min to COUNT_MAX */
	uint64_t	*u64;		/* a 64-bit number of at least min */
};

/* Set option id if it is a plain one (a switch, string or number) in a;
 * whether it was. The others have their own syntax (cmd_opt_set()). */
static bool plain_opt_set(enum opt_id id, struct cmd_args *a)
{
	const struct plain_opt plain[] = {
		{ OPT_FORCE, .on = &a->force },
		{ OPT_PREFIX, .on = &a->prefix },
		{ OPT_ALL, .on = &a->all },
		{ OPT_AFTER, .str = &a->after },
		{ OPT_PRINCIPAL, .str = &a->principal },
		{ OPT_GROUP, .str = &a->group },
		{ OPT_REPLACE, .str = &a->replace },
		{ OPT_N, .min = 1, .count = &a->n },
		{ OPT_LIMIT, .min = 1, .count = &a->limit },
		{ OPT_INITIAL, .min = 0, .count = &a->initial },
		{ OPT_BURST, .min = 1, .count = &a->rate.burst },
		{ OPT_MAX_WAITERS, .min = 0, .count = &a->max_waiters },
		{ OPT_HOLDER, .min = 1, .u64 = &a->holder },
		{ OPT_MAX, .min = 1, .u64 = &a->max },
		{ OPT_FROM, .min = 1, .u64 = &a->from_rev },
	};
	const struct plain_opt *p;
	char b[40];

	for (p = plain; p < plain + sizeof plain / sizeof plain[0]; p++) {
		if (p->id != id)
			continue;
		if (p->on != NULL)
			*p->on = true;
		else if (p->str != NULL)
			*p->str = optarg;
		else if (p->count != NULL)
			*p->count = parse_count(optarg, opt_written(id, b, sizeof b), p->min,
						COUNT_MAX);
		else
			*p->u64 = parse_u64(optarg, opt_written(id, b, sizeof b), p->min);
		return true;
	}
	return false;
}

/* The value of a command's option into a (a->given[id] says it came). */
static void cmd_opt_set(enum opt_id id, struct cmd_args *a)
{
	if (plain_opt_set(id, a))
		return;
	switch (id) {
	case OPT_MODE:
		a->mode = (enum semc_mode)parse_word(optarg, "--mode", mode_words);
		break;
	case OPT_TIMEOUT:
		a->timeout_ms = parse_dur(optarg, "--timeout", -1, NULL);
		break;
	case OPT_LEASE:
		/* the protocol's most; the daemon's max-lease may be less */
		a->lease_ms = parse_dur(optarg, "--lease", UINT32_MAX,
					"at most 4294967295ms, 49d17h; semd's max-lease may "
					"be less, 24h unless configured");
		a->lease_arg = optarg;
		break;
	case OPT_GRACE:
		a->grace_ms = parse_dur(optarg, "--grace", 86400000, "0 to 24h");
		break;
	case OPT_RATE:
		if (semc_parse_rate(optarg, &a->rate.rate, &a->rate.period_ms) != 0)
			usage_fail("--rate: '%s' is not a rate (R/UNIT: R 1 to %u, UNIT s, min, "
				   "h, d or a duration from 1ms to 1d: 5000/h, 10/s, 1/250ms)",
				   optarg, COUNT_MAX);
		break;
	case OPT_SHARE:
		a->share = (enum semc_share_by)parse_word(optarg, "--share", share_words);
		break;
	case OPT_WEIGHT: {
		const char *eq = strrchr(optarg, '=');

		if (eq == NULL || eq == optarg)
			usage_fail("--weight: '%s' is not GROUP=W", optarg);
		if (a->nweights == WEIGHTS_MAX)
			usage_fail("--weight: at most %d groups", WEIGHTS_MAX);
		a->weights[a->nweights].weight = parse_count(eq + 1, "--weight", 1, 1000);
		/* the group is optarg up to the '=': cut it there */
		optarg[eq - optarg] = '\0';
		a->weights[a->nweights++].group = optarg;
		break;
	}
	case OPT_PRIORITY:
		a->priority = parse_priority(optarg);
		break;
	case OPT_PROGRESS:
		a->progress_ms = optarg == NULL ? PROGRESS_DEFAULT_S * 1000 :
		    (int64_t)parse_count(optarg, "--progress", 1, 86400) * 1000;
		break;
	case OPT_CONFLICT_EXIT:
		a->conflict_exit = (int)parse_count(optarg, "-E", 0, 255);
		break;
	default:
		global_set(id);
		break;
	}
}

/*
 * Parse a command's options and arguments (argv[0] is the command): the
 * global options anywhere, the command's own (those cmd_defs[] gives it),
 * then min to max positional arguments, else a usage error with the
 * command's synopses. Options end at "--"; what follows it is positional
 * (a->nafter says how many).
 */
void cmd_parse(const struct cmd_def *cmd, int argc, char **argv, struct cmd_args *a)
{
	char b[40];
	enum opt_id id;
	int ch, i;

	memset(a, 0, sizeof *a);
	a->cmd = cmd;
	a->n = 1;
	a->timeout_ms = -1;
	a->lease_ms = -1;
	a->grace_ms = -1;
	a->nafter = -1;
	a->conflict_exit = EX_TIMEOUT_;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			a->nafter = argc - i - 1;
			break;
		}
	}
	opt_tables();
	optind = 0;	/* glibc: start over */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, opt_short + 1, opt_long, NULL)) != -1) {
		if (ch == ':')
			usage_fail("%s: option '%s' needs a value", cmd->name, argv[optind - 1]);
		if ((id = opt_of(ch)) == OPT_NONE)
			usage_fail("%s: unknown option '%s'", cmd->name, opt_unknown(argv, b, sizeof b));
		if (id < OPT_FIRST_GLOBAL && !cmd_takes(cmd, id))
			usage_fail("%s: option '%s' does not apply to %s", cmd->name,
				   opt_written(id, b, sizeof b), cmd->name);
		a->given[id] = true;
		cmd_opt_set(id, a);
	}
	a->argc = argc - optind;
	a->argv = argv + optind;
	if (a->argc < cmd->min_args)
		usage_forms("%s: %s", cmd->name, a->argc ? "too few arguments" :
			    "arguments are missing");
	if (cmd->max_args >= 0 && a->argc > cmd->max_args)
		usage_forms("%s: unexpected argument '%s'", cmd->name,
			    a->argv[cmd->max_args]);
}

/* Close a command's client after its one call; r != 0: report it as what. */
int call_end(struct semc *c, int r, const char *what)
{
	semc_free(c);
	return r != 0 ? fail(r, what) : 0;
}
