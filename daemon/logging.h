/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/logging.h - one line an event on standard error.
 *
 * Under systemd (JOURNAL_STREAM or NOTIFY_SOCKET set) every line starts with
 * a "<N>" syslog priority, which journald turns into the entry's priority;
 * otherwise lines read "semd: warning: ...". Levels are syslog's.
 */
#ifndef SEMD_LOG_H
#define SEMD_LOG_H

#include <syslog.h>

/* Look at the environment: systemd prefixes or plain lines. */
void log_open(void);
void log_set_level(int prio);
int log_get_level(void);
/* "debug".."error" to a priority; -1 if unknown. */
int log_parse_level(const char *s);
const char *log_level_name(int prio);
void log_msg(int prio, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_debug(...)	log_msg(LOG_DEBUG, __func__, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __func__, __VA_ARGS__)
#define log_notice(...)	log_msg(LOG_NOTICE, __func__, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __func__, __VA_ARGS__)
#define log_err(...)	log_msg(LOG_ERR, __func__, __VA_ARGS__)
/* The same with ": strerror(err)" appended (err positive or negative). */
#define log_warn_errno(err, fmt, ...) \
	log_msg(LOG_WARNING, __func__, fmt ": %s", ##__VA_ARGS__, log_strerror(err))
#define log_err_errno(err, fmt, ...) \
	log_msg(LOG_ERR, __func__, fmt ": %s", ##__VA_ARGS__, log_strerror(err))
const char *log_strerror(int err);

#endif
