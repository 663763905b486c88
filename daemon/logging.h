/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/logging.h - one line an event on standard error.
 *
 * Under systemd (JOURNAL_STREAM or NOTIFY_SOCKET set) every line starts with
 * a "<N>" syslog priority, which journald turns into the entry's priority;
 * otherwise lines read "semd: warning: ...". Levels are syslog's. With
 * log-format json the rest of the line is a JSON object instead (keys ts,
 * level, msg, func, and error and errno for a failed call; semd(8)).
 */
#ifndef SEMD_LOG_H
#define SEMD_LOG_H

#include <syslog.h>

/* Look at the environment: systemd prefixes or plain lines. */
void log_open(void);
enum { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };
void log_set_format(int format);
int log_get_format(void);
/* "text" or "json" to LOG_FORMAT_*; -1 if unknown. */
int log_parse_format(const char *s);
const char *log_format_name(int format);
void log_set_level(int prio);
int log_get_level(void);
/* "debug".."error" to a priority; -1 if unknown. */
int log_parse_level(const char *s);
const char *log_level_name(int prio);
void log_msg(int prio, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same about a failed call: ": strerror(err)" is appended. */
void log_msg_err(int prio, const char *func, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define log_debug(...)	log_msg(LOG_DEBUG, __func__, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __func__, __VA_ARGS__)
#define log_notice(...)	log_msg(LOG_NOTICE, __func__, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __func__, __VA_ARGS__)
#define log_err(...)	log_msg(LOG_ERR, __func__, __VA_ARGS__)
/* The same with ": strerror(err)" appended (err positive or negative). */
#define log_warn_errno(err, fmt, ...) \
	log_msg_err(LOG_WARNING, __func__, err, fmt, ##__VA_ARGS__)
#define log_err_errno(err, fmt, ...) \
	log_msg_err(LOG_ERR, __func__, err, fmt, ##__VA_ARGS__)
const char *log_strerror(int err);

#endif
