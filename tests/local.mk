# SPDX-License-Identifier: BSD-2-Clause
# tests/: shared test helpers. Each area's tests live in tests/<area>.mk.
EXTRA_DIST += tests/lib.sh tests/tap.sh tests/mountns.sh tests/lsan.supp tests/callgraph.py

# tests/daemon/ tests wired here:
# threads.sh: --threads: permit invariants under racing clients on one and on
#   four event loops, FIFO and timeouts across loops, reload and stop;
# identity.sh: a UNIX peer's user and groups, looked up only once there are
#   rules;
# watchdog.sh: the systemd watchdog is fed only while every event loop runs.
LOCAL_SH_TESTS = tests/daemon/threads.sh tests/daemon/identity.sh \
	tests/daemon/watchdog.sh
TESTS += $(LOCAL_SH_TESTS)
EXTRA_DIST += $(LOCAL_SH_TESTS)

# Helpers the C tests share.
noinst_HEADERS += tests/common/rng.h tests/common/io.h tests/common/req.h \
	tests/common/check.h
# opts.h: the randomized tests' command line (test_model, sim).
noinst_HEADERS += tests/common/opts.h
