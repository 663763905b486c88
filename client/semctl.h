/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/semctl.h - what the files of semctl share: the global options, a
 * command's parsed arguments, the exit codes, and the helpers for parsing,
 * errors and output. The command line's files:
 *   semctl.c        main(), the global options and the command table
 *   semctl-args.c   a command's options, usage errors, exit codes, the client
 *   semctl-out.c    escaping, JSON strings, times, durations, rates
 *   semctl-cmds.c   the commands of one call: create, up, info, list, ...
 *   semctl-run.c    acquiring (down, trydown), run and its child, watch
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
};

struct opts {
	const char *server;
	const char *tls_ca, *tls_cert, *tls_key;
	bool no_tls_resume;	/* --no-tls-resume */
	bool sess_dir_set;	/* we set SEMD_TLS_SESSION_DIR: not the command's */
	bool json;
	bool quiet;
	const char *cmd;
};

/* The global options (-s, --json, ...), set by main(). */
extern struct opts g;

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

/* semctl.c */
extern const char usage_text[];

/* semctl-args.c */
void usage_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
int exit_code(int err);
const char *err_name(int err);
int fail(int err, const char *what);
int fail_msg(int err, const char *what, const char *msg);
int fail_limit(int err, const char *what, const char *name, uint32_t limit);
uint32_t parse_count(const char *s, const char *what, uint32_t min);
uint64_t parse_u64(const char *s, const char *what);
int client_open(struct semc **out, uint32_t lease_ms, const char *name);
void cmd_parse(int argc, char **argv, const char *allowed, struct cmd_args *a);
void need_args(const struct cmd_args *a, int min, int max, const char *synopsis);
void cmd_get(int argc, char **argv, const char *allowed, int min, int max,
	     const char *synopsis, struct cmd_args *a);
int cmd_open(int argc, char **argv, const char *allowed, int min, int max,
	     const char *synopsis, struct cmd_args *a, struct semc **c);
int call_end(struct semc *c, int r, const char *what);

/* semctl-out.c */
const char *esc(const char *s);
void json_str(const char *s);
void json_ok(const char *name, const char *extra_key, int64_t extra);
const char *mode_name(enum semc_mode m);
const char *rate_text(uint32_t rate, uint32_t period_ms, char *buf, size_t len);
const char *fmt_dur(int64_t ms, char *buf, size_t len);
int64_t wall_ms(void);
const char *fmt_time(uint64_t ms, char *buf, size_t len);
int64_t mono_ms(void);

/* semctl-cmds.c */
int cmd_create(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_delete(int argc, char **argv);
int cmd_set_limit(int argc, char **argv);
int cmd_set_rate(int argc, char **argv);
int cmd_renew(int argc, char **argv);
int cmd_holds(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_ping(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_up(int argc, char **argv);

/* semctl-run.c */
int cmd_down(int argc, char **argv, bool try);
int cmd_run(int argc, char **argv);
int cmd_watch(int argc, char **argv);

#endif
