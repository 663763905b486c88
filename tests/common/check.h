/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/common/check.h - the unit tests' checks: a failed one prints a
 * "not ok" line with the test, file, line and both values, and is counted;
 * check_done() gives main its exit status.
 */
#ifndef SEMD_TESTS_COMMON_CHECK_H
#define SEMD_TESTS_COMMON_CHECK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

static int failures;
__attribute__((unused)) static const char *current = "-";

#define TEST_START(name) do { current = (name); printf("# %s\n", name); } while (0)
#define FAIL(...) do {							\
	failures++;							\
	printf("not ok - %s: %s:%d: ", current, __FILE__, __LINE__);	\
	printf(__VA_ARGS__);						\
	printf("\n");							\
} while (0)
#define EXPECT(cond) do { if (!(cond)) FAIL("%s", #cond); } while (0)
#define EXPECT_U64(want, got) do {					\
	uint64_t w_ = (uint64_t)(want), g_ = (uint64_t)(got);		\
	if (w_ != g_)							\
		FAIL("%s: want %" PRIu64 ", got %" PRIu64, #got, w_, g_); \
} while (0)
#define EXPECT_I64(want, got) do {					\
	int64_t w_ = (int64_t)(want), g_ = (int64_t)(got);		\
	if (w_ != g_)							\
		FAIL("%s: want %" PRId64 ", got %" PRId64, #got, w_, g_); \
} while (0)

/* The verdict on the tests of what: main's exit status. */
static inline int check_done(const char *what)
{
	if (failures) {
		printf("%d check(s) failed\n", failures);
		return 1;
	}
	printf("all %s tests passed\n", what);
	return 0;
}

#endif
