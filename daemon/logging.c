/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/logging.c - logging to standard error: one line an event, as text or
 * as a JSON object (log-format).
 */
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
static _Atomic int log_format = LOG_FORMAT_TEXT;
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

/* Write lines as text or as JSON objects (LOG_FORMAT_*). */
void log_set_format(int format)
{
	log_format = format;
}

/* The current format. */
int log_get_format(void)
{
	return log_format;
}

/* A word and its value, for the parsers of formats and levels. */
struct log_word {
	const char	*word;
	int		 value;
};

static const struct log_word log_formats[] = {
	{ "text", LOG_FORMAT_TEXT }, { "json", LOG_FORMAT_JSON },
};
static const struct log_word log_levels[] = {
	{ "debug", LOG_DEBUG }, { "info", LOG_INFO }, { "notice", LOG_NOTICE },
	{ "warning", LOG_WARNING }, { "warn", LOG_WARNING },
	{ "error", LOG_ERR }, { "err", LOG_ERR },
};

/* s's value in words (n of them), or -1 if it is none of them. */
static int log_word_find(const struct log_word *words, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(s, words[i].word) == 0)
			return words[i].value;
	return -1;
}

/* Parse a format name: LOG_FORMAT_*, or -1 if unknown. */
int log_parse_format(const char *s)
{
	return log_word_find(log_formats, sizeof log_formats / sizeof log_formats[0], s);
}

/* A format's name. */
const char *log_format_name(int format)
{
	return format == LOG_FORMAT_JSON ? "json" : "text";
}

/* The current level. */
int log_get_level(void)
{
	return log_level;
}

/* Parse a level name: a priority, or -1 if unknown. */
int log_parse_level(const char *s)
{
	return log_word_find(log_levels, sizeof log_levels / sizeof log_levels[0], s);
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

/* Room for a JSON line: every byte of a message escaped, and the rest. */
#define LOG_MSG_MAX	1024
#define LOG_JSON_MAX	(LOG_MSG_MAX * 6 + 512)

struct log_buf {
	char	*p;
	size_t	len;
	size_t	cap;		/* one byte is kept for the final newline */
};

/* Append n bytes (truncated at the capacity, which JSON lines never reach). */
static void log_put(struct log_buf *b, const char *s, size_t n)
{
	if (n > b->cap - 1 - b->len)
		n = b->cap - 1 - b->len;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* Append a string to a line. */
static void log_puts(struct log_buf *b, const char *s)
{
	log_put(b, s, strlen(s));
}

/*
 * Length of the well-formed UTF-8 sequence at s (at most n bytes), or 0:
 * no overlong forms, no surrogates, nothing above U+10FFFF.
 */
static size_t log_utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/*
 * A JSON string: quotes and backslashes escaped, control characters (and
 * DEL) as \uXXXX or their short forms, bytes that are not UTF-8 as U+FFFD:
 * whatever a message holds (a path, an address, a principal), the line is
 * valid JSON in valid UTF-8.
 */
static void log_json_str(struct log_buf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, k;
	char esc[8];

	log_put(b, "\"", 1);
	while (i < n) {
		switch (u[i]) {
		case '"':  log_put(b, "\\\"", 2); i++; continue;
		case '\\': log_put(b, "\\\\", 2); i++; continue;
		case '\n': log_put(b, "\\n", 2); i++; continue;
		case '\r': log_put(b, "\\r", 2); i++; continue;
		case '\t': log_put(b, "\\t", 2); i++; continue;
		default: break;
		}
		if (u[i] < 0x20 || u[i] == 0x7f) {
			snprintf(esc, sizeof esc, "\\u%04x", u[i]);
			log_put(b, esc, 6);
			i++;
		} else if ((k = log_utf8_len(u + i, n - i)) == 0) {
			log_puts(b, "\\ufffd");
			i++;
		} else {
			log_put(b, s + i, k);
			i += k;
		}
	}
	log_put(b, "\"", 1);
}

/*
 * One event as a JSON object, keys in this order: ts (UTC, RFC 3339 with
 * milliseconds), level, msg, func (the C function that logged), and for a
 * failed system call error (its text) and errno.
 */
static void log_json(struct log_buf *b, int prio, const char *func,
    const char *msg, bool has_err, int err)
{
	struct timespec ts;
	struct tm tm;
	char tbuf[64];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(tbuf, sizeof tbuf, "%Y-%m-%dT%H:%M:%S", &tm);
	log_puts(b, "{\"ts\":\"");
	log_puts(b, tbuf);
	snprintf(tbuf, sizeof tbuf, ".%03ldZ\",\"level\":\"", ts.tv_nsec / 1000000);
	log_puts(b, tbuf);
	log_puts(b, level_names[prio]);
	log_puts(b, "\",\"msg\":");
	log_json_str(b, msg);
	log_puts(b, ",\"func\":");
	log_json_str(b, func);
	if (has_err) {
		log_puts(b, ",\"error\":");
		log_json_str(b, log_strerror(err));
		snprintf(tbuf, sizeof tbuf, ",\"errno\":%d", err < 0 ? -err : err);
		log_puts(b, tbuf);
	}
	log_put(b, "}", 1);
}

/*
 * Write one formatted line at prio (has_err: about a failed call, whose
 * errno is err). The line goes out in one write, so that lines of
 * different threads never mix.
 */
static void log_line(int prio, const char *func, const char *line,
    bool has_err, int err)
{
	char buf[LOG_JSON_MAX];
	struct log_buf b = { buf, 0, sizeof buf };
	char pre[16];

	if (log_systemd) {
		snprintf(pre, sizeof pre, "<%d>", prio);
		log_puts(&b, pre);
	}
	if (log_format == LOG_FORMAT_JSON) {
		log_json(&b, prio, func, line, has_err, err);
	} else {
		/* "semd: warning: msg", "semd: debug: func: msg"; "<N>msg". */
		if (!log_systemd) {
			log_puts(&b, "semd: ");
			log_puts(&b, level_names[prio]);
			log_puts(&b, ": ");
		}
		if (prio == LOG_DEBUG) {
			log_puts(&b, func);
			log_puts(&b, ": ");
		}
		log_puts(&b, line);
	}
	b.p[b.len++] = '\n';
	fwrite(b.p, 1, b.len, stderr);
}

/*
 * Format and write one line; with has_err, ": strerror(err)" is appended
 * (and in JSON, error and errno are given as keys of their own too).
 */
static void log_vmsg(int prio, const char *func, bool has_err, int err,
    const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

static void log_vmsg(int prio, const char *func, bool has_err, int err,
    const char *fmt, va_list ap)
{
	char line[LOG_MSG_MAX], note[128];
	uint64_t dropped;
	size_t len;
	int n;

	if (prio > log_level || !log_admit(prio, &dropped))
		return;
	if (dropped > 0) {
		snprintf(note, sizeof note, "%llu log line(s) not written: more "
		    "than %d a second", (unsigned long long)dropped, LOG_RATE_PER_S);
		log_line(LOG_NOTICE, func, note, false, 0);
	}
	n = vsnprintf(line, sizeof line, fmt, ap);
	if (n < 0)
		return;
	len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
	if (has_err)
		snprintf(line + len, sizeof line - len, ": %s", log_strerror(err));
	/*
	 * One event, one line: newlines in a text line become spaces (JSON
	 * escapes them).
	 */
	if (log_format == LOG_FORMAT_TEXT)
		for (char *p = line; *p != '\0'; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
	log_line(prio, func, line, has_err, err);
}

/* Write one line. */
void log_msg(int prio, const char *func, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(prio, func, false, 0, fmt, ap);
	va_end(ap);
}

/* Write one line about a failed call (err positive or negative). */
void log_msg_err(int prio, const char *func, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(prio, func, true, err, fmt, ap);
	va_end(ap);
}
