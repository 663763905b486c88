# SPDX-License-Identifier: BSD-2-Clause
# tests/: shared test helpers. Each area's tests live in tests/<area>.mk.
EXTRA_DIST += tests/lib.sh tests/lsan.supp

# --threads: permit invariants under racing clients on one and on four event
# loops, FIFO and timeouts across loops, reload and stop (tests/daemon/).
TESTS += tests/daemon/threads.sh
EXTRA_DIST += tests/daemon/threads.sh

# A UNIX peer's user and groups, looked up only once there are rules.
TESTS += tests/daemon/identity.sh
EXTRA_DIST += tests/daemon/identity.sh

# The systemd watchdog is fed only while every event loop runs.
TESTS += tests/daemon/watchdog.sh
EXTRA_DIST += tests/daemon/watchdog.sh
