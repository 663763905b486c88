# SPDX-License-Identifier: BSD-2-Clause
# tests/client/example.sh - examples/jobs against the real semd: workers in
# separate processes never exceed the shared limit, and all their tasks run.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60
start_semd d || exit 1

out=$("$top_builddir/examples/jobs" -s "$d_UNIX" -n ex/a -w 6 -k 2 -t 5 -d 20)
expect_eq "jobs exits 0" 0 $?
expect_eq "6 workers, 30 tasks, 2 at once" "6 workers ran 30 tasks, at most 2 at once (limit 2)" "$out"
out=$("$top_builddir/examples/jobs" -s "$d_TCP" -n ex/b -w 4 -k 1 -t 4 -d 10)
expect_eq "limit 1 over TCP" "4 workers ran 16 tasks, at most 1 at once (limit 1)" "$out"
expect_eq "nothing is held afterwards" 2 "$("$SEMCTL" -s "$d_UNIX" --json info ex/a | python3 -c 'import json,sys; print(json.load(sys.stdin)["available"])')"
"$top_builddir/examples/jobs" -s "unix:$T/none.sock" >/dev/null 2>&1
expect_eq "no server: exit 3" 3 $?

# A program built outside the tree against the build tree's library, through
# semclient-uninstalled.pc (pkg-config prefers it on PKG_CONFIG_PATH).
pc="$top_builddir/client/semclient-uninstalled.pc"
if command -v pkg-config >/dev/null && [ -f "$pc" ]; then
	flags=$(PKG_CONFIG_PATH="$top_builddir/client" pkg-config --cflags --libs semclient)
	# shellcheck disable=SC2086
	${CC:-cc} $SAN_CFLAGS -o "$T/jobs" "$top_srcdir/examples/jobs.c" $flags
	expect_eq "examples/jobs.c builds with semclient-uninstalled.pc" 0 $?
	out=$("$T/jobs" -s "$d_UNIX" -n ex/c -w 2 -k 1 -t 2 -d 5)
	expect_eq "and runs on the build tree's library" "2 workers ran 4 tasks, at most 1 at once (limit 1)" "$out"
fi
t_done
