/* SPDX-License-Identifier: BSD-2-Clause */
/* tests/security/check.h - tiny assertion helpers for the security tests. */
#ifndef SEMD_TESTS_SECURITY_CHECK_H
#define SEMD_TESTS_SECURITY_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int t_pass, t_fail;
static const char *t_name = "";
/* The directory of the test's files (certificates, ...), for t_path(). */
static const char *t_dir = ".";

#define TEST_START(name) do { t_name = (name); } while (0)

/* Count one check; a failed one is reported with what was seen. */
__attribute__((format(printf, 4, 5)))
static inline void t_check(bool ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		t_pass++;
		return;
	}
	t_fail++;
	fprintf(stderr, "FAIL [%s] %s:%d: ", t_name, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A string for a message: "(null)" for NULL. */
static inline const char *t_str(const char *s)
{
	return s != NULL ? s : "(null)";
}

#define CHECK(cond) t_check((cond), __FILE__, __LINE__, "%s", #cond)

#define CHECK_INT(got, want) do {					\
	long long g_ = (long long)(got), w_ = (long long)(want);	\
	t_check(g_ == w_, __FILE__, __LINE__, "%s == %lld, want %lld",	\
	    #got, g_, w_);						\
} while (0)

#define CHECK_STR(got, want) do {					\
	const char *g_ = (got), *w_ = (want);				\
	t_check(g_ != NULL && strcmp(g_, w_) == 0, __FILE__, __LINE__,	\
	    "%s == \"%s\", want \"%s\"", #got, t_str(g_), w_);		\
} while (0)

/* got contains the substring want */
#define CHECK_HAS(got, want) do {					\
	const char *g_ = (got), *w_ = (want);				\
	t_check(g_ != NULL && strstr(g_, w_) != NULL, __FILE__, __LINE__, \
	    "%s == \"%s\", want it to contain \"%s\"", #got, t_str(g_), w_); \
} while (0)

/* "t_dir/name" in one of a ring of buffers. */
static inline const char *t_path(const char *name)
{
	static char ring[16][512];
	static int next;
	char *b = ring[next++ % 16];

	snprintf(b, 512, "%s/%s", t_dir, name);
	return b;
}

/* Print the summary line and give the exit status. */
static inline int t_done(const char *prog)
{
	printf("%s: %d passed, %d failed\n", prog, t_pass, t_fail);
	return t_fail == 0 && t_pass > 0 ? 0 : 1;
}

#endif
