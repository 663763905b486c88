#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/daemon/aio.sh - issue 35, item 6: a durable semd on a host whose
# kernel async I/O slots (fs.aio-max-nr) another user holds. libraft 0.22
# writes the log with kernel AIO and has no other way, so semd cannot start
# there; it must say why and what to do (exit status 75, EX_TEMPFAIL: the
# limit is the host's, a start later may work), not "raft: I/O error".
# The slots are host-wide, so the test does not take them (that would stop
# every other durable daemon on the machine): a preloaded shim
# (aiofail.c) makes io_setup(2) fail with EAGAIN for this semd alone.
. "$top_srcdir/tests/lib.sh"
t_watchdog 30
unset SEMD_TEST_DURABLE
SHIM=$top_builddir/tests/daemon/.libs/aiofail.so
[ -f "$SHIM" ] || { echo "SKIP: the shim was not built ($SHIM)"; exit 77; }
if grep -qa -e __asan_init -e __tsan_init "$SEMD"; then
	# a sanitizer's runtime must come first: no preload in front of it
	echo "SKIP: a sanitizer build"
	exit 77
fi

LD_PRELOAD=$SHIM "$SEMD" --data-dir "$T/d" --listen "tcp:127.0.0.1:0" >"$T/aio.log" 2>&1
rc=$?
cat "$T/aio.log"
ok "no AIO slots: semd exits 75 (EX_TEMPFAIL, was $rc)" [ "$rc" = 75 ]
ok "... naming the limit" grep -q "fs.aio-max-nr" "$T/aio.log"
ok "... and the fix" grep -q "sysctl" "$T/aio.log"
ok "... no crash" sh -c "! grep -qi 'segmentation\|abort\|assert' '$T/aio.log'"
# With the slots back, the same data directory serves.
start_semd s --data-dir "$T/d" || exit 1
ok "with AIO: a name created" "$SEMCTL" -s "$s_TCP" create a --limit 2
ok "... and a permit taken" "$SEMCTL" -s "$s_TCP" down a --timeout 5s
t_done
