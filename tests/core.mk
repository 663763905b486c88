# SPDX-License-Identifier: BSD-2-Clause
# tests/core.mk: build fragment, included by the top Makefile.am
# The core tests: arch/ atomics, semaphore unit tests, the model test against
# a reference counter+queue, and the synchro-test style stress test.
# `make check-core` runs only these (the TSan stage of tests/run uses it).
CORE_TEST_PROGS = tests/core/arch-test tests/core/sema-test \
	tests/core/model-test tests/core/stress-test
CORE_TESTS = $(CORE_TEST_PROGS) tests/core/stress-oversub.sh
check_PROGRAMS += $(CORE_TEST_PROGS)
TESTS += $(CORE_TESTS)
EXTRA_DIST += tests/core/stress-oversub.sh
noinst_HEADERS += tests/core/test.h
EXTRA_DIST += tests/cross-aarch64.sh

CORE_TEST_LIBS = core/libsemcore.a $(PTHREAD_LIBS)
tests_core_arch_test_SOURCES = tests/core/arch-test.c
tests_core_arch_test_LDADD = $(CORE_TEST_LIBS)
tests_core_sema_test_SOURCES = tests/core/sema-test.c
tests_core_sema_test_LDADD = $(CORE_TEST_LIBS)
tests_core_model_test_SOURCES = tests/core/model-test.c
tests_core_model_test_LDADD = $(CORE_TEST_LIBS)
tests_core_stress_test_SOURCES = tests/core/stress-test.c
tests_core_stress_test_LDADD = $(CORE_TEST_LIBS)

# The core benchmark: built by `make`, run by hand (not a test).
noinst_PROGRAMS += tests/core/core-bench
tests_core_core_bench_SOURCES = tests/core/core-bench.c
tests_core_core_bench_LDADD = $(CORE_TEST_LIBS)

# Builds only what the core tests need (not the daemon or client), then runs
# them through automake's test harness with its usual summary.
check-core: $(CORE_TEST_PROGS)
	$(MAKE) $(AM_MAKEFLAGS) check-TESTS TESTS="$(CORE_TESTS)"
.PHONY: check-core
