/* SPDX-License-Identifier: BSD-2-Clause */
/* tests/security/check.h - tiny assertion helpers for the security tests. */
#ifndef SEMD_TESTS_SECURITY_CHECK_H
#define SEMD_TESTS_SECURITY_CHECK_H

#include <stdio.h>
#include <string.h>

static int t_pass, t_fail;
static const char *t_name = "";

#define TEST_START(name) do { t_name = (name); } while (0)

#define CHECK(cond) do {						\
	if (cond) {							\
		t_pass++;						\
	} else {							\
		t_fail++;						\
		fprintf(stderr, "FAIL [%s] %s:%d: %s\n", t_name,	\
		    __FILE__, __LINE__, #cond);				\
	}								\
} while (0)

#define CHECK_INT(got, want) do {					\
	long long g_ = (long long)(got), w_ = (long long)(want);	\
	if (g_ == w_) {							\
		t_pass++;						\
	} else {							\
		t_fail++;						\
		fprintf(stderr, "FAIL [%s] %s:%d: %s == %lld, want %lld\n", \
		    t_name, __FILE__, __LINE__, #got, g_, w_);		\
	}								\
} while (0)

#define CHECK_STR(got, want) do {					\
	const char *g_ = (got), *w_ = (want);				\
	if (g_ != NULL && strcmp(g_, w_) == 0) {			\
		t_pass++;						\
	} else {							\
		t_fail++;						\
		fprintf(stderr, "FAIL [%s] %s:%d: %s == \"%s\", want \"%s\"\n", \
		    t_name, __FILE__, __LINE__, #got, g_ ? g_ : "(null)", w_); \
	}								\
} while (0)

/* got contains the substring want */
#define CHECK_HAS(got, want) do {					\
	const char *g_ = (got), *w_ = (want);				\
	if (g_ != NULL && strstr(g_, w_) != NULL) {			\
		t_pass++;						\
	} else {							\
		t_fail++;						\
		fprintf(stderr, "FAIL [%s] %s:%d: %s == \"%s\", want it to contain \"%s\"\n", \
		    t_name, __FILE__, __LINE__, #got, g_ ? g_ : "(null)", w_); \
	}								\
} while (0)

/* Print the summary line and give the exit status. */
static inline int t_done(const char *prog)
{
	printf("%s: %d passed, %d failed\n", prog, t_pass, t_fail);
	return t_fail == 0 && t_pass > 0 ? 0 : 1;
}

#endif
