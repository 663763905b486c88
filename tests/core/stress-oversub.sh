#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/core/stress-oversub.sh - the stress test with more threads than
# CPUs on a single permit: every hand-off goes to a sleeping thread, the
# case where a lost wake-up would hang (the watchdog then fails the test).
exec "${top_builddir:-.}/tests/core/test_stress" -t 8 -k 1 -s 1
