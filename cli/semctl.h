/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli/semctl.h - what the files of semctl share: the option and command
 * tables, the global options, a command's parsed arguments, the exit codes,
 * and the helpers for parsing, errors and output. The command line's files:
 *   semctl.c  main(): the options, the command, its run
 *   tables.c  the option and command tables
 *   args.c    parsing by the tables, exit codes, the client
 *   help.c    --help, help COMMAND, usage errors and the completion, from the tables
 *   out.c     escaping, JSON strings, times, durations, rates
 *   cmds.c    the commands of one call: create, up, info, list, ...
 *   set.c     set-limit, set-queue, set-rate
 *   run.c     acquiring (down, trydown), run and its child
 *   watch.c   watch
 *   backup.c  backup
 */
#ifndef SEMD_SEMCTL_H
#define SEMD_SEMCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	EX_QUEUE_FULL_ = 8,
	EX_REPLACED_ = 9,
	EX_SIGNAL_ = 128,	/* + N: interrupted by signal N while waiting */
};

/* The most permits a count may ask for, as semd takes them (1 to 2^30:
 * limits, -n, bursts). */
#define COUNT_MAX	(1u << 30)

/* --progress without a value: a line every this many seconds. */
#define PROGRESS_DEFAULT_S	10

/*
 * Every option of semctl. The global ones (OPT_SERVER on) go before or
 * after the command; a command's own go after it, and only those its
 * entry in cmd_defs[] lists.
 */
enum opt_id {
	OPT_NONE,
	OPT_N, OPT_LIMIT, OPT_MODE, OPT_INITIAL, OPT_RATE, OPT_BURST,
	OPT_TIMEOUT, OPT_LEASE, OPT_GRACE, OPT_FORCE, OPT_HOLDER, OPT_MAX,
	OPT_AFTER, OPT_PRINCIPAL, OPT_PREFIX, OPT_ALL, OPT_MAX_WAITERS, OPT_REPLACE,
	OPT_PRIORITY, OPT_SHARE, OPT_WEIGHT, OPT_GROUP, OPT_PROGRESS,
	OPT_CONFLICT_EXIT, OPT_FROM,
	OPT_SERVER, OPT_JSON, OPT_QUIET, OPT_TLS_CA, OPT_TLS_CERT, OPT_TLS_KEY,
	OPT_NO_TLS_RESUME, OPT_HELP, OPT_VERSION,
	OPT_COUNT
};
#define OPT_FIRST_GLOBAL	OPT_SERVER

struct opt_def {
	const char *name;	/* the long option, without "--" (NULL: none) */
	char letter;		/* the short one, or 0 */
	const char *value;	/* what it takes ("N", "DUR"), NULL: no value;
				 * "[=X]": an optional one, only as --name=X */
	const char *complete;	/* its values' completion: words, or "@file",
				 * "@address", "@name" (semaphores) */
	const char *help;	/* a global option's help */
};

/* An option of a command, and what it means there. */
struct cmd_opt {
	enum opt_id id;
	const char *help;
};

#define CMD_FORMS	4
#define CMD_OPTS	12
#define WEIGHTS_MAX	64	/* --weight, as the daemon takes them */

struct cmd_args;

/* A command: its name, synopses, help, options and handler. */
struct cmd_def {
	const char *name;
	const char *forms[CMD_FORMS];	/* synopses, after "semctl NAME" */
	const char *help;		/* what it does */
	struct cmd_opt opts[CMD_OPTS];	/* the options it takes */
	int min_args, max_args;		/* positional arguments; max -1: any */
	const char *complete;		/* its first argument's completion (of
					 * every one for "@name" and max -1) */
	int (*fn)(struct cmd_args *a);
};

struct opts {
	const char *server;
	const char *tls_ca, *tls_cert, *tls_key;
	bool no_tls_resume;	/* --no-tls-resume */
	bool sess_dir_set;	/* we set SEMD_TLS_SESSION_DIR: not the command's */
	bool json;
	bool quiet;
	const char *cmd;		/* the command's name, for messages */
	const struct cmd_def *def;	/* the command, once known */
};

/* The global options (-s, --json, ...), set by main(). */
extern struct opts g;

struct cmd_args {
	const struct cmd_def *cmd;
	char **argv;
	int64_t timeout_ms;	/* -1: forever */
	int64_t lease_ms;	/* -1: unset */
	const char *lease_arg;	/* --lease as given */
	uint64_t holder;
	int64_t grace_ms;	/* -1: unset */
	uint64_t max;		/* 0: no limit */
	int64_t progress_ms;	/* --progress: a line every this often; 0: none */
	int conflict_exit;	/* -E: the exit of a timeout or would block */
	uint64_t from_rev;	/* watch --from: 0 none */
	const char *after;
	const char *principal;
	const char *replace;	/* --replace KEY, or NULL */
	int priority;		/* --priority P */
	const char *group;	/* --group KEY, or NULL */
	enum semc_share_by share;
	struct semc_weight weights[WEIGHTS_MAX];	/* --weight GROUP=W... */
	size_t nweights;
	uint32_t max_waiters;
	int argc;		/* positional arguments */
	int nafter;		/* how many of them follow "--" (-1: no "--") */
	uint32_t n;
	uint32_t limit;
	enum semc_mode mode;
	uint32_t initial;
	struct semc_rate rate;	/* rate 0: none given */
	bool force;
	bool prefix;
	bool all;
	bool given[OPT_COUNT];	/* the options the command line gave */
};

/* tables.c */
extern const struct opt_def opt_defs[OPT_COUNT];
extern const struct cmd_def cmd_defs[];
extern const size_t cmd_count;
const struct cmd_def *cmd_find(const char *name);
bool opt_value_optional(enum opt_id id);

/* args.c */
int exit_code(int err);
const char *err_name(int err);
int fail(int err, const char *what);
int fail_msg(int err, const char *what, const char *msg);
int fail_json(int ex, const char *error, int code, const char *what, const char *msg,
	      const char *more);
uint32_t parse_count(const char *s, const char *what, uint32_t min, uint32_t max);
uint64_t parse_u64(const char *s, const char *what, uint64_t min);
bool json_wanted(int argc, char **argv);
int globals_parse(int argc, char **argv);
bool cmd_takes(const struct cmd_def *cmd, enum opt_id id);
void cmd_parse(const struct cmd_def *cmd, int argc, char **argv, struct cmd_args *a);
int client_open(struct semc **out, uint32_t lease_ms, const char *name);
int call_end(struct semc *c, int r, const char *what);

/* help.c */
void usage_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void usage_forms(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void help_global(void);
void help_command(const struct cmd_def *cmd);
int cmd_help(struct cmd_args *a);
int complete_words(int argc, char **argv);

/* out.c */
const char *esc(const char *s);
void json_str(const char *s);
void json_ok(const char *name, const char *extra_key, int64_t extra);
const char *mode_name(enum semc_mode m);
const char *rate_text(uint32_t rate, uint32_t period_ms, char *buf, size_t len);
const char *fmt_dur(int64_t ms, char *buf, size_t len);
const char *fmt_exact(int64_t ms, char *buf, size_t len);
int64_t wall_ms(void);
const char *fmt_time(uint64_t ms, char *buf, size_t len);
int64_t mono_ms(void);

/* cmds.c */
int cmd_create(struct cmd_args *a);
int cmd_info(struct cmd_args *a);
int cmd_list(struct cmd_args *a);
int cmd_delete(struct cmd_args *a);
int cmd_set_limit(struct cmd_args *a);
int cmd_set_rate(struct cmd_args *a);
int cmd_set_queue(struct cmd_args *a);
int cmd_renew(struct cmd_args *a);
int cmd_holds(struct cmd_args *a);
int cmd_validate(struct cmd_args *a);
int cmd_stats(struct cmd_args *a);
int cmd_ping(struct cmd_args *a);
int cmd_cluster(struct cmd_args *a);
int cmd_release(struct cmd_args *a);
int cmd_up(struct cmd_args *a);

/* run.c */
int cmd_down(struct cmd_args *a);
int cmd_trydown(struct cmd_args *a);
int cmd_run(struct cmd_args *a);

/* watch.c */
int cmd_watch(struct cmd_args *a);

/* backup.c */
int cmd_backup(struct cmd_args *a);

#endif
