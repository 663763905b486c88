/* SPDX-License-Identifier: BSD-2-Clause */
/* client/base/util.c - error texts, durations, addresses, clocks. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "client/client-int.h"

static _Thread_local char semc_msg[512];

/* The process's fork generation: one more in each child of fork() (a
 * pthread_atfork handler), so that semc_forked(), which every call asks,
 * costs no system call (getpid() is one). */
static atomic_uint fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_child(void)
{
	atomic_fetch_add(&fork_gen, 1);
}

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

/* Record the calling thread's message for err and return err. */
int semc_fail(int err, const char *fmt, ...)
{
	va_list ap;

	if (fmt == NULL || *fmt == '\0') {
		snprintf(semc_msg, sizeof semc_msg, "%s", semc_strerror(err));
		return err;
	}
	va_start(ap, fmt);
	vsnprintf(semc_msg, sizeof semc_msg, fmt, ap);
	va_end(ap);
	return err;
}

/* Forget the calling thread's message. */
void semc_clear_message(void)
{
	semc_msg[0] = '\0';
}

/* The calling thread's last message. */
const char *semc_last_message(void)
{
	return semc_msg;
}

/* Map a protocol Code to an enum semc_error. */
int semc_code_error(int code)
{
	if (code == 0)
		return SEMC_OK;
	if (code > 0 && code <= 16)
		return -code;
	if (code == SEMD__CODE__COMPACTED)
		return SEMC_E_COMPACTED;
	return SEMC_E_PROTOCOL;
}

/* Name an error code. */
const char *semc_strerror(int error)
{
	switch (error) {
	case SEMC_OK: return "success";
	case SEMC_E_TIMEOUT: return "timed out";
	case SEMC_E_WOULD_BLOCK: return "would block";
	case SEMC_E_NOT_FOUND: return "not found";
	case SEMC_E_EXISTS: return "already exists";
	case SEMC_E_NOT_HOLDER: return "not a holder";
	case SEMC_E_PERMISSION: return "permission denied";
	case SEMC_E_INVALID: return "invalid argument";
	case SEMC_E_EXHAUSTED: return "resource exhausted";
	case SEMC_E_CANCELLED: return "cancelled";
	case SEMC_E_UNAVAILABLE: return "server unavailable";
	case SEMC_E_PROTOCOL: return "protocol error";
	case SEMC_E_INTERNAL: return "internal server error";
	case SEMC_E_SESSION_EXPIRED: return "session expired";
	case SEMC_E_DEADLOCK: return "deadlock";
	case SEMC_E_QUEUE_FULL: return "queue full";
	case SEMC_E_REPLACED: return "replaced";
	case SEMC_E_COMPACTED: return "compacted: the revision is no longer kept";
	case SEMC_E_CONNECT: return "cannot connect to the server";
	case SEMC_E_DISCONNECTED: return "connection to the server lost";
	case SEMC_E_HOLD_LOST: return "hold lost";
	case SEMC_E_NO_REPLY: return "no reply from the server";
	case SEMC_E_NOMEM: return "out of memory";
	case SEMC_E_ADDRESS: return "bad server address";
	case SEMC_E_NOT_SUPPORTED: return "not supported";
	case SEMC_E_TLS: return "TLS error";
	case SEMC_E_SYSTEM: return "system error";
	case SEMC_E_ARG: return "invalid argument to library call";
	}
	return "unknown error";
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

/* Parse a decimal port. */
static int addr_port(const char *s, unsigned *port)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > 65535)
		return -1;
	*port = (unsigned)v;
	return 0;
}

/* Split HOST[:PORT] or [V6][:PORT] into a. */
static int addr_hostport(const char *s, struct semc_addr *a)
{
	const char *colon, *host = s;
	size_t hlen;

	a->port = SEMC_DEFAULT_PORT;
	if (*s == '[') {
		const char *rb = strchr(s, ']');

		if (rb == NULL)
			return -1;
		host = s + 1;
		hlen = (size_t)(rb - host);
		if (rb[1] == ':') {
			if (addr_port(rb + 2, &a->port) != 0)
				return -1;
		} else if (rb[1] != '\0')
			return -1;
	} else {
		colon = strrchr(s, ':');
		if (colon != NULL && strchr(s, ':') != colon)
			return -1;	/* a bare IPv6 address needs brackets */
		hlen = colon ? (size_t)(colon - s) : strlen(s);
		if (colon != NULL && addr_port(colon + 1, &a->port) != 0)
			return -1;
	}
	if (hlen == 0 || hlen >= sizeof a->host)
		return -1;
	memcpy(a->host, host, hlen);
	a->host[hlen] = '\0';
	return 0;
}

/* Parse an address: unix:PATH, tcp:HOST[:PORT], tls:HOST[:PORT], /PATH, HOST[:PORT]. */
int semc_addr_parse(const char *s, struct semc_addr *a)
{
	const char *path = NULL;

	memset(a, 0, sizeof *a);
	if (s == NULL || *s == '\0')
		return SEMC_E_ADDRESS;
	if (strncmp(s, "unix:", 5) == 0)
		path = s + 5;
	else if (*s == '/' || *s == '.')
		path = s;
	if (path != NULL) {
		size_t plen = strlen(path);

		if (plen == 0 || plen >= sizeof a->path)
			return SEMC_E_ADDRESS;
		a->kind = SEMC_ADDR_UNIX;
		a->xprt = &semc_xprt_unix;
		memcpy(a->path, path, plen + 1);
		snprintf(a->canon, sizeof a->canon, "unix:%s", a->path);
		return 0;
	}
	a->kind = SEMC_ADDR_TCP;
	a->xprt = &semc_xprt_tcp;
	if (strncmp(s, "tcp:", 4) == 0) {
		s += 4;
	} else if (strncmp(s, "tls:", 4) == 0) {
		a->kind = SEMC_ADDR_TLS;
		a->xprt = &semc_xprt_tls;
		s += 4;
	} else if (strchr(s, '/') != NULL) {
		return SEMC_E_ADDRESS;	/* unknown scheme://... */
	}
	if (addr_hostport(s, a) != 0)
		return SEMC_E_ADDRESS;
	if (strchr(a->host, ':') != NULL)
		snprintf(a->canon, sizeof a->canon, "%s:[%s]:%u", a->xprt->name, a->host, a->port);
	else
		snprintf(a->canon, sizeof a->canon, "%s:%s:%u", a->xprt->name, a->host, a->port);
	return 0;
}
