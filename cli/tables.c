/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli/tables.c - the two tables everything else of semctl reads: every
 * option (opt_defs[]) and every command (cmd_defs[]: its synopses, help,
 * options and handler). The dispatch, the option parsing, --help, `help
 * COMMAND`, a command's usage errors and the shell completions (`semctl
 * __complete`) all come from them, and the docs test checks semctl(1)
 * against them (`semctl --json help`).
 */
#include <string.h>

#include "cli/semctl.h"

const struct opt_def opt_defs[OPT_COUNT] = {
	[OPT_N] = { NULL, 'n', "N", NULL, NULL },
	[OPT_LIMIT] = { "limit", 0, "N", NULL, NULL },
	[OPT_MODE] = { "mode", 0, "owned|signal", "owned signal", NULL },
	[OPT_INITIAL] = { "initial", 0, "N", NULL, NULL },
	[OPT_RATE] = { "rate", 0, "R/UNIT", NULL, NULL },
	[OPT_BURST] = { "burst", 0, "N", NULL, NULL },
	[OPT_TIMEOUT] = { "timeout", 0, "DUR", NULL, NULL },
	[OPT_LEASE] = { "lease", 0, "DUR", NULL, NULL },
	[OPT_GRACE] = { "grace", 0, "DUR", NULL, NULL },
	[OPT_FORCE] = { "force", 0, NULL, NULL, NULL },
	[OPT_HOLDER] = { "holder", 0, "PERMIT_ID", NULL, NULL },
	[OPT_MAX] = { "max", 0, "N", NULL, NULL },
	[OPT_AFTER] = { "after", 0, "NAME", "@name", NULL },
	[OPT_PRINCIPAL] = { "principal", 0, "P", NULL, NULL },
	[OPT_PREFIX] = { "prefix", 0, NULL, NULL, NULL },
	[OPT_ALL] = { "all", 0, NULL, NULL, NULL },
	[OPT_MAX_WAITERS] = { "max-waiters", 0, "N", NULL, NULL },
	[OPT_REPLACE] = { "replace", 0, "KEY", NULL, NULL },
	[OPT_PRIORITY] = { "priority", 0, "P", NULL, NULL },
	[OPT_SHARE] = { "share", 0, "principal|key", "principal key", NULL },
	[OPT_WEIGHT] = { "weight", 0, "GROUP=W", NULL, NULL },
	[OPT_GROUP] = { "group", 0, "KEY", NULL, NULL },
	[OPT_PROGRESS] = { "progress", 0, "[=SECS]", NULL, NULL },
	[OPT_CONFLICT_EXIT] = { "conflict-exit-code", 'E', "N", NULL, NULL },
	[OPT_FROM] = { "from", 0, "REV", NULL, NULL },
	[OPT_SERVER] = { "server", 's', "ADDR", "@address",
		"the daemon: unix:PATH, tcp:HOST:PORT or tls:HOST:PORT, or a cluster's "
		"as a comma-separated list (default $SEMD_SERVER, else unix:"
		SEMC_DEFAULT_UNIX ")" },
	[OPT_JSON] = { "json", 'j', NULL, NULL,
		"print one JSON object (watch: one a line), failures included" },
	[OPT_QUIET] = { "quiet", 'q', NULL, NULL,
		"down, run: no progress line on a terminal (--progress still prints)" },
	[OPT_TLS_CA] = { "tls-ca", 0, "FILE", "@file",
		"the CA of the server's certificate (default: the system's)" },
	[OPT_TLS_CERT] = { "tls-cert", 0, "FILE", "@file",
		"a client certificate, for mutual TLS" },
	[OPT_TLS_KEY] = { "tls-key", 0, "FILE", "@file",
		"its private key" },
	[OPT_NO_TLS_RESUME] = { "no-tls-resume", 0, NULL, NULL,
		"do not keep TLS sessions in $XDG_RUNTIME_DIR/semctl" },
	[OPT_HELP] = { "help", 'h', NULL, NULL,
		"this help; after a command, the command's" },
	[OPT_VERSION] = { "version", 'V', NULL, NULL, "print the version" },
};

/* What the options of the commands that take permits mean. */
#define O_N_TAKE	{ OPT_N, "permits to take (default 1), or NAME:N for each name" }
#define O_LIMIT_MAKE	{ OPT_LIMIT, "create a missing NAME with limit N (exit 6 if it " \
	"exists with another limit)" }
#define O_REPLACE	{ OPT_REPLACE, "latest wins: cancel our waiting down with this KEY " \
			  "on NAME (it exits 9); one NAME only" }
#define O_PRIORITY	{ OPT_PRIORITY, "-8 to 7 (default 0): a higher class is served " \
			  "first, FIFO within one; a class is worth 10s of waiting" }
#define O_GROUP		{ OPT_GROUP, "the fair-share group of the down (a name created " \
			  "with --share key; default: the principal)" }
#define O_TIMEOUT	{ OPT_TIMEOUT, "wait at most DUR (default: for ever)" }
#define O_PROGRESS	{ OPT_PROGRESS, "while waiting, a line on stderr every SECS " \
	"(default 10), terminal or not (a CI log): place in line, holders, time waited" }
#define O_CONFLICT	{ OPT_CONFLICT_EXIT, "exit N (0 to 255) instead of 1 when the " \
	"permits were not got: timed out, or would block (as flock -E)" }

const struct cmd_def cmd_defs[] = {
	{ "create", { "NAME --limit N [--mode owned|signal] [--initial N] [--max-waiters N] "
		      "[--share principal|key [--weight GROUP=W]...]",
		      "NAME --rate R/UNIT [--burst N] [--limit N]" },
	  "Create a semaphore of N permits, or a token bucket (a rate semaphore) that gains "
	  "R tokens every UNIT (s, min, h, d or a duration), with a limit too or without.",
	  { { OPT_LIMIT, "how many permits exist" },
	    { OPT_MODE, "owned: only a holder gives back (the default); signal: anyone "
	      "may up, bounded by the limit" },
	    { OPT_INITIAL, "signal mode: permits free at first (default: the limit)" },
	    { OPT_RATE, "a token bucket: R tokens every UNIT (5000/h, 10/s, 1/250ms)" },
	    { OPT_BURST, "the bucket's size (default R)" },
	    { OPT_MAX_WAITERS, "at most N downs wait; one more is refused at once (exit 8)" },
	    { OPT_SHARE, "fair shares between groups: by principal, or by down --group KEY" },
	    { OPT_WEIGHT, "a group's weight, 1 to 1000 (default 1); again for each group" } },
	  1, 1, NULL, cmd_create },
	{ "down", { "NAME [-n N] [--timeout DUR] [--lease DUR] [--limit N] [--replace KEY] "
		    "[--priority P] [--group KEY]",
		    "NAME[:N] NAME[:N]... [--timeout DUR] [--lease DUR] [--limit N] "
		    "[--priority P]" },
	  "Take permits, waiting in line, and print the fencing token (a line a name). The "
	  "hold is detached: it outlives semctl until `semctl up` or the end of its lease. "
	  "Several names are taken all at once, or none.",
	  { O_N_TAKE, O_TIMEOUT,
	    { OPT_LEASE, "the hold's lease (default and most: the daemon's max-lease, 24h "
	      "unless configured; a longer one is refused)" },
	    O_LIMIT_MAKE, O_REPLACE, O_PRIORITY, O_GROUP,
	    O_PROGRESS, O_CONFLICT },
	  1, -1, "@name", cmd_down },
	{ "trydown", { "NAME [-n N] [--limit N] [--priority P]",
		       "NAME[:N] NAME[:N]... [--limit N] [--priority P]" },
	  "Like down, but never waits: exit 1 when the permits are not free now.",
	  { O_N_TAKE, O_LIMIT_MAKE, O_PRIORITY, O_CONFLICT },
	  1, -1, "@name", cmd_trydown },
	{ "up", { "NAME [-n N]" },
	  "Give back permits the caller holds, newest first.",
	  { { OPT_N, "permits to give back (default 1)" } },
	  1, 1, "@name", cmd_up },
	{ "run", { "NAME [-n N] [--timeout DUR] [--lease DUR] [--grace DUR] [--limit N] "
		   "[--replace KEY] [--priority P] [--group KEY] "
		   "-- CMD [ARG...]",
		   "NAME[:N] NAME[:N]... [options] -- CMD [ARG...]" },
	  "Take the permits, run CMD while holding them (SEMD_TOKEN, SEMD_NAME, "
	  "SEMD_PERMIT_ID and SEMD_TOKENS in its environment), give them back when it ends, "
	  "and exit with its status. If the hold is lost the command is terminated and "
	  "semctl exits 5.",
	  { O_N_TAKE, O_TIMEOUT,
	    { OPT_LEASE, "the session's lease: how long a cut or a restart of a durable "
	      "daemon is ridden out (default 10s, at least 200ms; 0: none)" },
	    { OPT_GRACE, "from SIGTERM to SIGKILL when the hold is lost (default 2s)" },
	    O_LIMIT_MAKE, O_REPLACE, O_PRIORITY, O_GROUP,
	    O_PROGRESS, O_CONFLICT },
	  2, -1, "@name", cmd_run },
	{ "info", { "NAME [--max N]" },
	  "Show a semaphore: its limit, free permits, mode, last token, holders and waiters.",
	  { { OPT_MAX, "show at most N holders and N waiters (default 10000)" } },
	  1, 1, "@name", cmd_info },
	{ "list", { "[PREFIX] [--max N] [--after NAME]" },
	  "List the semaphores whose names begin with PREFIX (all without), in byte order.",
	  { { OPT_MAX, "at most N names" },
	    { OPT_AFTER, "only names after NAME (to go on from where --max stopped)" } },
	  0, 1, "@name", cmd_list },
	{ "delete", { "NAME [--force]" },
	  "Delete a semaphore.",
	  { { OPT_FORCE, "even in use: drop its holders, wake its waiters with an error" } },
	  1, 1, "@name", cmd_delete },
	{ "set-limit", { "NAME N" },
	  "Change the limit while in use; shrinking revokes nobody, new grants wait until "
	  "the holders are below the new limit.",
	  { { OPT_NONE, NULL } },
	  2, 2, "@name", cmd_set_limit },
	{ "set-rate", { "NAME R/UNIT|0 [--burst N]" },
	  "Change a name's token bucket while in use (0: take it away).",
	  { { OPT_BURST, "the bucket's size (default R)" } },
	  2, 2, "@name", cmd_set_rate },
	{ "set-queue", { "NAME --max-waiters N" },
	  "Change a name's queue policies while in use: at most N downs wait (0: no "
	  "bound); lowering it cancels nobody, only new waiters are refused (exit 8).",
	  { { OPT_MAX_WAITERS, "the most downs that wait (0: no bound)" } },
	  1, 1, "@name", cmd_set_queue },
	{ "renew", { "NAME [--lease DUR] [--holder PERMIT_ID]" },
	  "Extend the lease of the caller's detached holds of NAME from now, and print "
	  "when they end (at most the daemon's max-lease from now).",
	  { { OPT_LEASE, "the new lease (default: each hold's own)" },
	    { OPT_HOLDER, "only this permit (the permit id of info or down --json)" } },
	  1, 1, "@name", cmd_renew },
	{ "holds", { "[--principal P] [--max N]" },
	  "List every hold of the caller's principal, across all names.",
	  { { OPT_PRINCIPAL, "another principal's (administrators only)" },
	    { OPT_MAX, "at most N holds" } },
	  0, 0, NULL, cmd_holds },
	{ "watch", { "NAME|PREFIX/ [--prefix] [--from REV]", "--all [--from REV]" },
	  "Print what happens to a name (or to every name a prefix begins) as it happens, "
	  "a line an event with its revision, until interrupted (exit 0). Cut off, it "
	  "resumes after the last revision it printed, without a gap (exit 6 if the daemon "
	  "no longer keeps it).",
	  { { OPT_PREFIX, "NAME is a prefix (as a NAME ending in / is)" },
	    { OPT_ALL, "every name" },
	    { OPT_FROM, "first the events from revision REV on that the daemon still keeps "
	      "(its watch-history), then the live ones" } },
	  0, 1, "@name", cmd_watch },
	{ "validate", { "NAME TOKEN" },
	  "Exit 0 and print valid if TOKEN still holds a permit of NAME, else exit 6 and "
	  "print invalid.",
	  { { OPT_NONE, NULL } },
	  2, 2, "@name", cmd_validate },
	{ "release", { "NAME --holder PERMIT_ID" },
	  "Administrator: force-release someone else's permit (its id is shown by info).",
	  { { OPT_HOLDER, "the permit to release" } },
	  1, 1, "@name", cmd_release },
	{ "stats", { "" },
	  "Print the daemon's counters.",
	  { { OPT_NONE, NULL } },
	  0, 0, NULL, cmd_stats },
	{ "ping", { "" },
	  "Check that the daemon answers: its version, who it takes us for, the round trip.",
	  { { OPT_NONE, NULL } },
	  0, 0, NULL, cmd_ping },
	{ "backup", { "FILE" },
	  "Administrator: write a consistent copy of the daemon's whole state (in memory, "
	  "durable or a cluster's) to FILE, whole or not at all, with a checksum; semd "
	  "--restore starts a new data directory from it. - writes it to standard output.",
	  { { OPT_NONE, NULL } },
	  1, 1, "@file", cmd_backup },
	{ "cluster", { "status", "add ID HOST:PORT", "remove ID", "transfer [ID]" },
	  "A cluster node's view (status), or a change of its members or leader by the "
	  "leader (admin right). A semd without --data-dir is no cluster: exit 6.",
	  { { OPT_NONE, NULL } },
	  1, 3, "status add remove transfer", cmd_cluster },
	{ "help", { "[COMMAND]" },
	  "Describe a command and its options, or list them all.",
	  { { OPT_NONE, NULL } },
	  0, 1, "@command", cmd_help },
};

const size_t cmd_count = sizeof cmd_defs / sizeof cmd_defs[0];

/* The command of that name, or NULL. */
const struct cmd_def *cmd_find(const char *name)
{
	size_t i;

	for (i = 0; i < cmd_count; i++)
		if (strcmp(cmd_defs[i].name, name) == 0)
			return &cmd_defs[i];
	return NULL;
}

/* Is the option's value optional (given only as --name=VALUE)? */
bool opt_value_optional(enum opt_id id)
{
	return opt_defs[id].value != NULL && opt_defs[id].value[0] == '[';
}
