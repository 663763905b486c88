/* SPDX-License-Identifier: BSD-2-Clause */
/* daemon/log.c - logging to standard error. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"

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

/* Write one line. */
void log_msg(int prio, const char *func, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if (prio > log_level)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* One event, one line: newlines in messages become spaces. */
	for (char *p = line; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
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
