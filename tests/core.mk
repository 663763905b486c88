# SPDX-License-Identifier: BSD-2-Clause
# tests/core.mk: build fragment, included by the top Makefile.am
# The core tests: arch/ atomics, semaphore unit tests (the asynchronous
# operations; the blocking ones, signals and races), the model test against
# a reference counter+queue, and the synchro-test style stress test.
# `make check-core` runs only these (the TSan stage of tests/run uses it).
CORE_TEST_PROGS = tests/core/test_arch tests/core/test_sema \
	tests/core/test_sema_threads tests/core/test_model tests/core/test_stress
CORE_TESTS = $(CORE_TEST_PROGS) tests/core/stress-oversub.sh
check_PROGRAMS += $(CORE_TEST_PROGS)
TESTS += $(CORE_TESTS)
EXTRA_DIST += tests/core/stress-oversub.sh
noinst_HEADERS += tests/core/test.h tests/core/rec.h
EXTRA_DIST += tests/cross-aarch64.sh

CORE_TEST_LIBS = core/libsemcore.a $(PTHREAD_LIBS)
tests_core_test_arch_SOURCES = tests/core/test_arch.c
tests_core_test_arch_LDADD = $(CORE_TEST_LIBS)
tests_core_test_sema_SOURCES = tests/core/test_sema.c
tests_core_test_sema_LDADD = $(CORE_TEST_LIBS)
tests_core_test_sema_threads_SOURCES = tests/core/test_sema_threads.c
tests_core_test_sema_threads_LDADD = $(CORE_TEST_LIBS)
tests_core_test_model_SOURCES = tests/core/test_model.c
tests_core_test_model_LDADD = $(CORE_TEST_LIBS)
tests_core_test_stress_SOURCES = tests/core/test_stress.c
tests_core_test_stress_LDADD = $(CORE_TEST_LIBS)

# The core benchmark: built by `make`, run by hand (not a test).
noinst_PROGRAMS += tests/core/core-bench
tests_core_core_bench_SOURCES = tests/core/core-bench.c
tests_core_core_bench_LDADD = $(CORE_TEST_LIBS)

# Builds only what the core tests need (not the daemon or client), then runs
# them through automake's test harness with its usual summary.
check-core: $(CORE_TEST_PROGS)
	$(MAKE) $(AM_MAKEFLAGS) check-TESTS TESTS="$(CORE_TESTS)"
.PHONY: check-core
