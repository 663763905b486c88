/* SPDX-License-Identifier: BSD-2-Clause */
/* client/base/util.c - clocks, the fork generation, durations, rates, strings. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "client/handle.h"

/* The process's fork generation: one more in each child of fork() (a
 * pthread_atfork handler), so that semc_forked(), which every call asks,
 * costs no system call (getpid() is one). */
static atomic_uint fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* In a child of fork(): one generation more. */
static void fork_child(void)
{
	atomic_fetch_add(&fork_gen, 1);
}

/* Once a process: the handler above. */
static void fork_setup(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}

/* The fork generation of the calling process (for a new handle). */
unsigned semc_fork_gen(void)
{
	pthread_once(&fork_once, fork_setup);
	return atomic_load(&fork_gen);
}

/* Whether the calling process is a fork of the one that made the handle:
 * then its locks may be held by threads that are not here, and its socket
 * is the parent's. */
bool semc_forked(const struct semc *c)
{
	return atomic_load_explicit(&fork_gen, memory_order_relaxed) != c->fork_gen;
}

/* Monotonic milliseconds. */
int64_t semc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wall-clock milliseconds since the epoch. */
int64_t semc_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The library version. */
const char *semc_version(void)
{
	return PACKAGE_VERSION;
}

/* Parse a duration into milliseconds. */
int semc_parse_duration(const char *s, int64_t *ms)
{
	double v, mul;
	char *end;

	if (s == NULL || ms == NULL || !(isdigit((unsigned char)*s) || *s == '.'))
		return SEMC_E_ARG;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s)
		return SEMC_E_ARG;
	if (*end == '\0' || strcmp(end, "s") == 0)
		mul = 1000;
	else if (strcmp(end, "ms") == 0)
		mul = 1;
	else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
		mul = 60 * 1000;
	else if (strcmp(end, "h") == 0)
		mul = 3600 * 1000;
	else if (strcmp(end, "d") == 0)
		mul = 86400 * 1000;
	else
		return SEMC_E_ARG;
	v *= mul;
	if (!(v >= 0) || v > 9.0e15)
		return SEMC_E_ARG;
	*ms = (int64_t)(v + 0.5);
	return 0;
}

/* Parse a rate: COUNT[/PERIOD], PERIOD a unit (s, sec, m, min, h, hour, d,
 * day) or a duration ("250ms", "5s"); no period: per second. */
int semc_parse_rate(const char *s, uint32_t *rate, uint32_t *period_ms)
{
	static const struct { const char *unit; uint32_t ms; } units[] = {
		{ "s", 1000 }, { "sec", 1000 }, { "second", 1000 },
		{ "m", 60000 }, { "min", 60000 }, { "minute", 60000 },
		{ "h", 3600000 }, { "hour", 3600000 },
		{ "d", 86400000 }, { "day", 86400000 },
	};
	unsigned long long v;
	int64_t ms;
	char *end;
	size_t i;

	if (s == NULL || rate == NULL || period_ms == NULL || !isdigit((unsigned char)*s))
		return SEMC_E_ARG;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || v == 0 || v > (1u << 30))
		return SEMC_E_ARG;
	*rate = (uint32_t)v;
	*period_ms = 1000;
	if (*end == '\0')
		return 0;
	if (*end != '/')
		return SEMC_E_ARG;
	end++;
	for (i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp(end, units[i].unit) == 0) {
			*period_ms = units[i].ms;
			return 0;
		}
	}
	if (semc_parse_duration(end, &ms) != 0 || ms < 1 || ms > 86400000)
		return SEMC_E_ARG;
	*period_ms = (uint32_t)ms;
	return 0;
}

/* Replace *dst by a copy of s (NULL clears). */
int semc_str_set(char **dst, const char *s)
{
	char *d = NULL;

	if (s != NULL && (d = strdup(s)) == NULL)
		return SEMC_E_NOMEM;
	free(*dst);
	*dst = d;
	return 0;
}
