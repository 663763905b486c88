/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli/semctl.c - semctl, the command line of semd. It uses only the
 * public libsemclient API (semclient.h).
 *
 * Exit codes (stable, see semctl(1)): 0 ok or acquired, 1 timed out or would
 * block (-E N: N), 2 usage, 3 cannot reach or talk to the server, 4 permission denied,
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
 * This file: main(), which parses the global options, then the command's
 * (by the tables of tables.c), and runs the command, and the TLS session
 * directory it sets up. The commands and their helpers are in the other
 * files of cli/ (semctl.h lists them).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/semctl.h"

struct opts g;

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

/* Parse the global options, then the command's, and run it. */
int main(int argc, char **argv)
{
	struct cmd_args a;
	int i;

	signal(SIGPIPE, SIG_IGN);
	if (argc > 1 && strcmp(argv[1], "__complete") == 0)
		return complete_words(argc - 2, argv + 2);
	g.json = json_wanted(argc, argv);
	i = globals_parse(argc, argv);
	if (i >= argc)
		usage_fail("no command given");
	g.cmd = argv[i];
	if ((g.def = cmd_find(argv[i])) == NULL)
		usage_fail("unknown command '%s'", argv[i]);
	g.cmd = g.def->name;
	cmd_parse(g.def, argc - i, argv + i, &a);
	tls_sessions_setup();
	return g.def->fn(&a);
}
