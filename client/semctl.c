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
 *
 * This file: main(), the global options and the command table. The
 * commands and their helpers are in semctl-*.c (semctl.h lists them).
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

struct opts g;

const char usage_text[] =
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

