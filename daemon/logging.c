/* SPDX-License-Identifier: BSD-2-Clause */
/* daemon/logging.c - logging to standard error. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/logging.h"

/*
 * Lines of level warning, notice and info are rate-limited: at most
 * LOG_RATE_PER_S a second (errors, and debug lines an operator asked for,
 * always pass). What a client can make the daemon say (denials, refusals,
 * drops) then cannot flood the journal or the disk however fast it
 * hammers; the lines held back are counted, and the count is logged when
 * lines pass again. One lock for every thread: logging is not on any path
 * that is fast when nothing is wrong.
 */
#define LOG_RATE_PER_S	100

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static time_t log_second;
static unsigned int log_in_second;
static uint64_t log_dropped;

/*
 * Process-wide logging settings: written at start-up and on reload only
 * (the level atomically: every thread reads it).
 */
static _Atomic int log_level = LOG_INFO;
static int log_systemd;

static const char *const level_names[] = {
	[LOG_EMERG] = "emergency", [LOG_ALERT] = "alert", [LOG_CRIT] = "critical",
	[LOG_ERR] = "error", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

/* Decide the line format from the environment. */
void log_open(void)
{
	log_systemd = getenv("JOURNAL_STREAM") != NULL ||
	    getenv("NOTIFY_SOCKET") != NULL;
}

/* Set the least severe priority that is logged. */
void log_set_level(int prio)
{
	log_level = prio;
}

/* The current level. */
int log_get_level(void)
{
	return log_level;
}

/* Parse a level name. */
int log_parse_level(const char *s)
{
	if (strcmp(s, "debug") == 0)
		return LOG_DEBUG;
	if (strcmp(s, "info") == 0)
		return LOG_INFO;
	if (strcmp(s, "notice") == 0)
		return LOG_NOTICE;
	if (strcmp(s, "warning") == 0 || strcmp(s, "warn") == 0)
		return LOG_WARNING;
	if (strcmp(s, "error") == 0 || strcmp(s, "err") == 0)
		return LOG_ERR;
	return -1;
}

/* Name of a priority. */
const char *log_level_name(int prio)
{
	if (prio < LOG_EMERG || prio > LOG_DEBUG)
		return "?";
	return level_names[prio];
}

/* strerror for positive or negative errno values. */
const char *log_strerror(int err)
{
	return strerror(err < 0 ? -err : err);
}

/*
 * May a line of prio go out now? *dropped is set to the lines held back
 * since the last one that went out, for the caller to report first.
 */
static bool log_admit(int prio, uint64_t *dropped)
{
	struct timespec ts;
	bool pass;

	*dropped = 0;
	if (prio <= LOG_ERR || prio == LOG_DEBUG)
		return true;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	pthread_mutex_lock(&log_lock);
	if (ts.tv_sec != log_second) {
		log_second = ts.tv_sec;
		log_in_second = 0;
	}
	pass = log_in_second < LOG_RATE_PER_S;
	if (pass) {
		log_in_second++;
		*dropped = log_dropped;
		log_dropped = 0;
	} else {
		log_dropped++;
	}
	pthread_mutex_unlock(&log_lock);
	return pass;
}

/* Write one formatted line at prio. */
static void log_line(int prio, const char *func, const char *line)
{
	if (log_systemd) {
		if (prio == LOG_DEBUG)
			fprintf(stderr, "<%d>%s: %s\n", prio, func, line);
		else
			fprintf(stderr, "<%d>%s\n", prio, line);
	} else if (prio == LOG_DEBUG) {
		fprintf(stderr, "semd: debug: %s: %s\n", func, line);
	} else {
		fprintf(stderr, "semd: %s: %s\n", level_names[prio], line);
	}
}

/* Write one line. */
void log_msg(int prio, const char *func, const char *fmt, ...)
{
	char line[1024], note[128];
	uint64_t dropped;
	va_list ap;
	int n;

	if (prio > log_level || !log_admit(prio, &dropped))
		return;
	if (dropped > 0) {
		snprintf(note, sizeof note, "%llu log line(s) not written: more "
		    "than %d a second", (unsigned long long)dropped, LOG_RATE_PER_S);
		log_line(LOG_NOTICE, func, note);
	}
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* One event, one line: newlines in messages become spaces. */
	for (char *p = line; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	log_line(prio, func, line);
}
