/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/core/test.h - a tiny assertion kit for the core tests.
 *
 * Each check prints file:line, the expressions and both values, then exits
 * with status 1 (automake's FAIL). TEST_START names the case being run so a
 * failure says which specification broke.
 */
#ifndef SEMD_TESTS_CORE_TEST_H
#define SEMD_TESTS_CORE_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *test_current_ = "(none)";

#define TEST_START(name) do {						\
	test_current_ = (name);						\
	printf("test: %s\n", test_current_);				\
	fflush(stdout);							\
} while (0)

#define TEST_FAIL_(fmt, ...) do {					\
	fprintf(stderr, "%s:%d: FAIL in \"%s\": " fmt "\n",		\
	    __FILE__, __LINE__, test_current_, __VA_ARGS__);		\
	fflush(stderr);							\
	exit(1);							\
} while (0)

#define T_TRUE(e) do {							\
	if (!(e))							\
		TEST_FAIL_("%s is false", #e);				\
} while (0)

#define T_FALSE(e) do {							\
	if (e)								\
		TEST_FAIL_("%s is true", #e);				\
} while (0)

#define T_EQ(a, b) do {							\
	long long t_a_ = (long long)(a), t_b_ = (long long)(b);		\
	if (t_a_ != t_b_)						\
		TEST_FAIL_("%s == %s: %lld != %lld", #a, #b, t_a_, t_b_); \
} while (0)

#define T_NE(a, b) do {							\
	long long t_a_ = (long long)(a), t_b_ = (long long)(b);		\
	if (t_a_ == t_b_)						\
		TEST_FAIL_("%s != %s: both %lld", #a, #b, t_a_);	\
} while (0)

#define T_U64_EQ(a, b) do {						\
	uint64_t t_a_ = (uint64_t)(a), t_b_ = (uint64_t)(b);		\
	if (t_a_ != t_b_)						\
		TEST_FAIL_("%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, t_a_, t_b_); \
} while (0)

#define T_LE(a, b) do {							\
	long long t_a_ = (long long)(a), t_b_ = (long long)(b);		\
	if (!(t_a_ <= t_b_))						\
		TEST_FAIL_("%s <= %s: %lld > %lld", #a, #b, t_a_, t_b_); \
} while (0)

#define T_GE(a, b) T_LE(b, a)

/* Fail on a nonzero return from a pthread_* or libc call. */
#define T_OK(e) do {							\
	int t_r_ = (e);							\
	if (t_r_ != 0)							\
		TEST_FAIL_("%s returned %d (%s)", #e, t_r_, strerror(t_r_ < 0 ? -t_r_ : t_r_)); \
} while (0)



#include <time.h>

/* CLOCK_MONOTONIC now, in nanoseconds. */
static inline long long t_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Sleep for ms milliseconds. */
static inline void t_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}
#include <signal.h>
#include <unistd.h>

/* SIGALRM handler: report a hang and fail (async-signal-safe). */
static inline void t_watchdog_fire(int sig)
{
	static const char msg[] = "FAIL: watchdog: test still running, presumed hung\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* Fail the test if it has not finished within seconds. */
static inline void t_watchdog(unsigned int seconds)
{
	signal(SIGALRM, t_watchdog_fire);
	alarm(seconds);
}

#endif
