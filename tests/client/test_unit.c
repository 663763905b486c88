/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/client/test_unit.c - libsemclient without a daemon: addresses,
 * durations, error texts, the SEMD_SERVER default, calls on an unconnected
 * handle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "client/semclient.h"

static int failures, checks;

#define EXPECT_STR(want, got, what) do {				\
	const char *w_ = (want), *g_ = (got);				\
	checks++;							\
	if (g_ == NULL || strcmp(w_, g_) != 0) {			\
		failures++;						\
		fprintf(stderr, "FAIL %s:%d: %s: want '%s', got '%s'\n", \
			__FILE__, __LINE__, what, w_, g_ ? g_ : "(null)"); \
	}								\
} while (0)

#define EXPECT_INT(want, got, what) do {				\
	long long w_ = (long long)(want), g_ = (long long)(got);	\
	checks++;							\
	if (w_ != g_) {							\
		failures++;						\
		fprintf(stderr, "FAIL %s:%d: %s: want %lld, got %lld\n", \
			__FILE__, __LINE__, what, w_, g_);		\
	}								\
} while (0)

/* The canonical form of an address, or "ERR". */
static const char *canon(const char *addr)
{
	static char buf[512];
	struct semc *c = semc_new();

	if (semc_set_address(c, addr) != 0)
		snprintf(buf, sizeof buf, "ERR");
	else
		snprintf(buf, sizeof buf, "%s", semc_address(c));
	semc_free(c);
	return buf;
}

/* A duration in ms, or -1 when it does not parse. */
static long long dur(const char *s)
{
	int64_t ms;

	if (semc_parse_duration(s, &ms) != 0)
		return -1;
	return ms;
}

/* A rate as "R/PERIOD_MS", or "ERR". */
static const char *rate(const char *s)
{
	static char buf[64];
	uint32_t r, p;

	if (semc_parse_rate(s, &r, &p) != 0)
		return "ERR";
	snprintf(buf, sizeof buf, "%u/%u", r, p);
	return buf;
}

/* Run the checks. */
int main(void)
{
	struct semc *c;
	int e;

	/* rates */
	EXPECT_STR("5000/3600000", rate("5000/h"), "per hour");
	EXPECT_STR("10/1000", rate("10/s"), "per second");
	EXPECT_STR("10/1000", rate("10"), "a bare count is per second");
	EXPECT_STR("3/60000", rate("3/min"), "per minute");
	EXPECT_STR("3/60000", rate("3/m"), "m is a minute");
	EXPECT_STR("7/86400000", rate("7/day"), "per day");
	EXPECT_STR("1/250", rate("1/250ms"), "a duration");
	EXPECT_STR("2/5000", rate("2/5s"), "seconds");
	EXPECT_STR("ERR", rate("0/s"), "zero");
	EXPECT_STR("ERR", rate("-1/s"), "negative");
	EXPECT_STR("ERR", rate("5/fortnight"), "unknown unit");
	EXPECT_STR("ERR", rate("5/2d"), "more than a day");
	EXPECT_STR("ERR", rate("1073741825/s"), "more than 2^30");
	EXPECT_STR("ERR", rate("5/"), "no period");
	EXPECT_STR("ERR", rate("/s"), "no count");
	EXPECT_STR("deadlock", semc_strerror(SEMC_E_DEADLOCK), "strerror");
	EXPECT_STR("grant", semc_watch_kind_name(SEMC_WATCH_GRANT), "kind name");
	EXPECT_STR("unknown", semc_watch_kind_name((enum semc_watch_kind)99), "unknown kind");

	/* addresses */
	EXPECT_STR("unix:/run/semd/semd.sock", canon("unix:/run/semd/semd.sock"), "unix");
	EXPECT_STR("unix:/tmp/x.sock", canon("/tmp/x.sock"), "bare path");
	EXPECT_STR("tcp:127.0.0.1:7385", canon("tcp:127.0.0.1"), "default port");
	EXPECT_STR("tcp:example.org:99", canon("tcp:example.org:99"), "tcp host:port");
	EXPECT_STR("tcp:localhost:7385", canon("localhost"), "bare host");
	EXPECT_STR("tcp:db1:12", canon("db1:12"), "bare host:port");
	EXPECT_STR("tcp:[::1]:7000", canon("tcp:[::1]:7000"), "IPv6");
	EXPECT_STR("tcp:[::1]:7385", canon("tcp:[::1]"), "IPv6 default port");
	EXPECT_STR("tls:semd.example:7443", canon("tls:semd.example:7443"), "tls");
	EXPECT_STR("ERR", canon("tcp:"), "empty host");
	EXPECT_STR("ERR", canon("tcp:host:99999"), "port out of range");
	EXPECT_STR("ERR", canon("tcp:host:12x"), "port not a number");
	EXPECT_STR("ERR", canon("tcp:::1"), "IPv6 without brackets");
	EXPECT_STR("ERR", canon("tcp:[::1"), "unclosed bracket");
	EXPECT_STR("ERR", canon("http://x"), "unknown scheme");
	EXPECT_STR("ERR", canon(""), "empty");
	EXPECT_STR("ERR", canon("unix:"), "empty path");

	/* durations */
	EXPECT_INT(250, dur("250ms"), "250ms");
	EXPECT_INT(5000, dur("5s"), "5s");
	EXPECT_INT(5000, dur("5"), "bare number is seconds");
	EXPECT_INT(120000, dur("2m"), "2m");
	EXPECT_INT(60000, dur("1min"), "1min");
	EXPECT_INT(90000, dur("1.5min"), "1.5min");
	EXPECT_INT(-1, dur("1mins"), "mins");
	EXPECT_INT(3600000, dur("1h"), "1h");
	EXPECT_INT(1500, dur("1.5s"), "1.5s");
	EXPECT_INT(0, dur("0"), "0");
	EXPECT_INT(-1, dur(""), "empty");
	EXPECT_INT(-1, dur("-1s"), "negative");
	EXPECT_INT(-1, dur("5x"), "bad unit");
	EXPECT_INT(-1, dur("ms"), "no number");
	EXPECT_INT(-1, dur("1e300h"), "huge");

	/* error texts: every code has its own */
	EXPECT_STR("timed out", semc_strerror(SEMC_E_TIMEOUT), "timeout text");
	EXPECT_STR("permission denied", semc_strerror(SEMC_E_PERMISSION), "permission text");
	EXPECT_STR("hold lost", semc_strerror(SEMC_E_HOLD_LOST), "hold lost text");
	EXPECT_STR("unknown error", semc_strerror(-9999), "unknown code");
	for (e = SEMC_E_SESSION_EXPIRED; e <= SEMC_E_TIMEOUT; e++)
		EXPECT_INT(0, strcmp(semc_strerror(e), "unknown error") == 0, semc_strerror(e));
	EXPECT_STR(PACKAGE_VERSION, semc_version(), "version");

	/* the default address comes from SEMD_SERVER, else the UNIX socket */
	setenv("SEMD_SERVER", "unix:/nonexistent/semd-test.sock", 1);
	c = semc_new();
	EXPECT_INT(SEMC_E_CONNECT, semc_connect(c, 500), "connect to a missing socket");
	EXPECT_STR("unix:/nonexistent/semd-test.sock", semc_address(c), "SEMD_SERVER used");
	EXPECT_INT(1, strstr(semc_last_message(), "/nonexistent/semd-test.sock") != NULL,
		   "the message names the socket");
	EXPECT_INT(SEMC_E_DISCONNECTED, semc_ping(c, NULL), "ping unconnected");
	EXPECT_INT(SEMC_E_DISCONNECTED, semc_down_async(c, "x", 1, 0, 0, NULL, NULL),
		   "async unconnected");
	EXPECT_INT(-1, semc_fd(c), "no fd unconnected");
	EXPECT_INT(SEMC_E_INVALID, semc_down(c, "", 1, 0, 0, NULL), "empty name");
	semc_free(c);
	unsetenv("SEMD_SERVER");
	/* (the built-in default is not connected to: a test talks to its own
	 * daemons only) */
	EXPECT_STR("/run/semd/semd.sock", SEMC_DEFAULT_UNIX, "built-in default");
	semc_free(NULL);

	fprintf(stderr, "%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
