#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Per-principal watches and output quotas (issue 35). One principal's
# connections may hold at most 256 watches together (the default quota):
# 40 connections asking for 16 each get 256, the rest RESOURCE_EXHAUSTED
# naming the quota, and a watch that ends makes room. And the replies its
# connections leave unread are bounded by its output quota: 32 connections
# that never read a pong of their 32 pings of 60 kB pin about 4 MiB, not
# 32 x max-output; the principal's requests with big answers are refused
# while it is over, what gives back is not, another principal is not
# touched, and the memory is given back when the flood leaves - also after
# floods no quota bounds.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120

rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
# Under a sanitizer the memory is the sanitizer's (freed blocks wait in its
# quarantine): the daemon's own count is checked there, not its RSS.
sanitizer=""
grep -qa -e __asan_init -e __tsan_init "$SEMD" && sanitizer=1

# Watches: anonymous (every TCP client) is one principal.
start_semd w || exit 1
timeout 100 $PROBE --watch-flood "$w_TCP" 40 16 90000 "$T/w.stop" >"$T/wf.out" 2>&1 &
wf=$!
ok "the flood's watches are answered" t_wait_for 30 has '^draining' "$T/wf.out"
sed 's/^/# /' "$T/wf.out"
ok "256 watches of the prefix \"\" taken by 40 connections, the other 384 refused" \
	has '^watches: OK=256 RESOURCE_EXHAUSTED=384 none=0' "$T/wf.out"
ok "... naming the quota" has \
	'^first RESOURCE_EXHAUSTED: quota: anonymous has 256 watches, 1 more would pass its watches quota (256)$' \
	"$T/wf.out"
# Another principal's changes reach the watches there are, and it is served.
$PROBE "$w_UNIX" hello "down q/1" "up q/1" "watch q/" >"$T/own.out" 2>&1
ok "another principal is served and may watch" sh -c \
	"grep -c '^reply id=[234] code=OK' '$T/own.out' | grep -qx 3"
touch "$T/w.stop"
wait "$wf"
ok "the watchers read the notices of its changes" \
	awk '/^drained: bytes=/ { split($2, a, "="); exit !(a[2] > 0) }' "$T/wf.out"
ok "once they left, anonymous may watch again" sh -c \
	"'$PROBE' '$w_TCP' hello 'watch hex: prefix' | grep -q '^reply id=2 code=OK'"

# Output: the flood comes from the test's own uid over the UNIX socket,
# whose kernel buffers are small; the quota line names it (an
# administrator has no quota unless a line names it).
me=uid:$(id -u)
printf 'acl anonymous * all\nquota output %s 4M\n' "$me" >"$T/o.conf"
start_semd o --config "$T/o.conf" || exit 1
r0=$(rss "$o_PID")
timeout 100 $PROBE --unread "$o_UNIX" 32 32 90000 "$T/o.stop" ping:60000 \
	>"$T/of.out" 2>&1 &
of=$!
ok "the flood's pings are sent" t_wait_for 30 has '^unread: requests=' "$T/of.out"
t_wait_for 10 has 'over its output quota, dropped' "$T/o.log"
r1=$(rss "$o_PID")
echo "# output flood: RSS $r0 kB before, $r1 kB during"
[ -n "$sanitizer" ] ||
ok "its connections pinned less than 16 MB more (32 x 1.7 MB unbounded; $r0 -> $r1 kB)" \
	test $((r1 - r0)) -lt 16384
ok "those that kept asking while over the quota were cut off" \
	has 'does not read its replies .* while uid:[0-9]* is over its output quota, dropped' "$T/o.log"
# Over the quota (lowered below what the rest still pin): refused with a
# reason; what keeps a session or gives back is served.
t_reload "$o_PID" "$T/o.conf" "s/ 4M\$/ 64K/"
ok "reloaded" t_wait_for 10 has 'reload' "$T/o.log"
$PROBE "$o_UNIX" hello "info x" "ping" "down q/1" "up q/1" "ping abc" >"$T/over.out" 2>&1
ok "a request with a big answer is refused, naming the quota" has \
	"^reply id=2 code=RESOURCE_EXHAUSTED msg=\"quota: $me has [0-9]* bytes of replies unread, past its output quota (65536): read them first\"" \
	"$T/over.out"
pinned=$(sed -n 's/^reply id=2 .* has \([0-9]*\) bytes of replies unread.*/\1/p' "$T/over.out")
echo "# output flood: the principal pins $pinned bytes after it"
ok "what it pins is about its quota of 4 MiB, not 32 x 1.7 MB ($pinned bytes)" \
	test "${pinned:-99999999}" -le $((6 << 20))
ok "a plain ping, a down and an up are served" sh -c \
	"grep -c '^reply id=[345] code=OK' '$T/over.out' | grep -qx 3"
ok "a ping with a payload is refused" has '^reply id=6 code=RESOURCE_EXHAUSTED' "$T/over.out"
ok "another principal is not touched" sh -c \
	"'$PROBE' '$o_TCP' hello 'ping abc' | grep -q '^reply id=2 code=OK pong=abc'"
touch "$T/o.stop"
wait "$of"
ok "once the flood left, the principal is served again" t_wait_for 10 sh -c \
	"'$PROBE' '$o_UNIX' hello 'info x' | grep -q '^reply id=2 code=NOT_FOUND'"
r2=$(rss "$o_PID")
echo "# output flood: RSS $r2 kB after"
[ -n "$sanitizer" ] ||
ok "the memory is given back ($r0 -> $r1 -> $r2 kB)" test $((r2 - r0)) -lt 4096

# Given back also when nothing bounds it: three floods of 64 connections
# with 66 unread pongs of 60 kB each (about 250 MB) from an administrator
# (no output quota), on three event loops, with a connection made during
# each that stays. glibc would keep the freed buffers in its heaps (100 MB
# and more after the second flood): semd's fixed mmap threshold returns the
# big ones at once, and a malloc_trim() the holes the others leave.
if [ -z "$sanitizer" ]; then
	start_semd g --threads 3 || exit 1
	fds() { ls "/proc/$g_PID/fd" | wc -l; }
	g0=$(rss "$g_PID") f0=$(fds) peak=0
	for k in 1 2 3; do	# (t_wait_for counts with i)
		rm -f "$T/g.stop"
		timeout 100 $PROBE --unread "$g_UNIX" 64 66 90000 "$T/g.stop" \
			ping:60000 >"$T/gf.out" 2>&1 &
		gf=$!
		t_wait_for 30 has '^unread: requests=' "$T/gf.out"
		$PROBE "$g_UNIX" hello "create keep/$k 1" "down keep/$k" \
			"until $T/g.end" >"$T/keep$k.out" 2>&1 &
		t_wait_for 10 has '^reply id=3 ' "$T/keep$k.out"
		g=$(rss "$g_PID")
		[ "$g" -gt "$peak" ] && peak=$g
		touch "$T/g.stop"
		wait "$gf"
		t_wait_for 10 sh -c "[ \$(ls /proc/$g_PID/fd | wc -l) -le $((f0 + k)) ]"
	done
	# (a second after the last big buffer went: malloc_trim)
	t_wait_for 10 sh -c "[ \$(awk '/^VmRSS/ { print \$2 }' /proc/$g_PID/status) -lt $((g0 + 16384)) ]"
	g1=$(rss "$g_PID")
	echo "# unbounded floods: RSS $g0 kB before, $peak kB at most, $g1 kB after"
	ok "three unbounded floods: the memory is given back ($g0 -> $peak -> $g1 kB)" \
		test $((g1 - g0)) -lt 16384
	touch "$T/g.end"
fi
t_done
