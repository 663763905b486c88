#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# --data-dir: what a restart (SIGTERM or kill -9) keeps - names, limits,
# modes, detached holds with their leases and tokens, sessions inside their
# lease and their queued waiters; tokens after a restart are above every one
# before, whatever the wall clock does; `semctl run --lease 30s` rides out a
# restart; a damaged, foreign or cut-off data directory stops semd with exit
# 78 and a message, never a crash or a silent empty state.
. "$top_srcdir/tests/lib.sh"
t_watchdog 150
unset SEMD_TEST_DURABLE		# this test gives its own data directory
D=$T/data
S="$SEMCTL -s unix:$T/d.sock"

# stop_d SIGNAL: stop the daemon started last, wait for it.
stop_d() { kill "-$1" "$d_PID"; wait "$d_PID" 2>/dev/null; }
start_d() { start_semd d --data-dir "$D" "$@"; }

start_d || exit 1
$S create build/slots --limit 4 >/dev/null
$S create pc --limit 2 --mode signal >/dev/null
$S trydown pc -n 2 >/dev/null
t1=$($S down deploy --lease 10m)
ok "a detached hold with a token" test -n "$t1"
# A queued waiter of a session with a lease, detached over UNIX.
$S down q --lease 1h >/dev/null
$PROBE "$d_UNIX" "hello lease=60000" "down q timeout=-1 nowait id=7" detach \
	>"$T/w1.out" 2>&1
sid=$(sed -n 's/.* session=\([0-9]*\) .*/\1/p' "$T/w1.out")
sec=$(sed -n 's/.* secret=\([0-9a-f]*\) .*/\1/p' "$T/w1.out")
ok "the waiter's session" test -n "$sid" -a -n "$sec"
ok "... queued behind the hold" has 'waiter=7/1/away' "$($PROBE "$d_UNIX" hello "info q" >"$T/q0.out"; echo "$T/q0.out")"

stop_d TERM
start_d || exit 1
$S list >"$T/l1.out"
ok "SIGTERM: names and limits back" has '^build/slots  *4  *4 owned' "$T/l1.out"
ok "SIGTERM: a signal-mode name with its count (0 of 2 free)" has '^pc  *2  *0 signal' "$T/l1.out"
$S trydown deploy >/dev/null 2>&1
expect_eq "SIGTERM: the detached hold is still held" 1 "$?"
$S info deploy >"$T/i1.out"
ok "SIGTERM: ... with its token" has "last token $t1" "$T/i1.out"
t2=$($S down other --lease 1m)
ok "SIGTERM: the next token ($t2) is above the last before ($t1)" test "$t2" -gt "$t1"
$PROBE "$d_UNIX" hello "info q" >"$T/q1.out" 2>&1
ok "SIGTERM: the lingering session's waiter is still queued" has 'waiter=7/1/away' "$T/q1.out"
# The waiter resumes its session, retries its down, and is granted when
# the hold goes.
$PROBE "$d_UNIX" "hello resume=$sid secret=$sec lease=60000" \
	"down q timeout=-1 id=7" >"$T/w2.out" 2>&1 &
w2=$!
t_wait_for 5 has 'resumed=1' "$T/w2.out"
ok "the waiter's session resumed after the restart" has 'resumed=1' "$T/w2.out"
$S up q >/dev/null
ok "... and its retried down is granted when the hold goes" t_wait_for 5 has '^reply id=7 code=OK permit=' "$T/w2.out"
wait "$w2"

# kill -9: the same, for what was acknowledged.
$S create k9/a --limit 2 >/dev/null
t3=$($S down k9/b --lease 10m)
stop_d KILL
start_d || exit 1
$S list k9/ >"$T/l2.out"
ok "kill -9: an acknowledged create is there" has '^k9/a  *2' "$T/l2.out"
ok "kill -9: an acknowledged detached hold is there" has '^k9/b  *1  *0 owned  *1' "$T/l2.out"
t4=$($S down k9/c --lease 1m)
ok "kill -9: the next token ($t4) is above every one before ($t3)" test "$t4" -gt "$t3"

# run --lease 30s rides out a restart of a second: its command runs on
# and the permit is given back at the end.
$S run ride --lease 30s -- sh -c 'sleep 3; echo ran-to-the-end' >"$T/run.out" 2>"$T/run.err" &
run=$!
t_wait_for 5 sh -c "$S info ride 2>/dev/null | grep -q 'holders: 1'"
stop_d TERM
sleep 1
start_d || exit 1
wait "$run"
rc=$?
expect_eq "run rides out a restart: its exit status" 0 "$rc"
ok "... its command ran to the end" has 'ran-to-the-end' "$T/run.out"
ok "... and gave the permit back" t_wait_for 5 sh -c "! $S info ride >/dev/null 2>&1"

# The wall clock an hour back across a restart: tokens go on growing.
FT=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
if [ -f "$FT" ] && grep -qa -e __asan_init -e __tsan_init "$SEMD"; then
	# libfaketime's clock_gettime() runs before the sanitizer's runtime is
	# set up, and semd never becomes ready: the case runs in the normal build.
	echo "# a sanitizer build: skipping the clock-step case (libfaketime)"
elif [ -f "$FT" ]; then
	stop_d TERM
	LD_PRELOAD=$FT FAKETIME="-1h" start_d || exit 1
	t5=$($S down back --lease 1m)
	ok "wall clock an hour back: the next token ($t5) is above ($t4)" test "$t5" -gt "$t4"
else
	echo "# faketime not installed: skipping the clock-step case"
fi
stop_d TERM

# Damage: each case stops semd with exit 78 and says why.
# expect_78 DESC DIR: semd refuses DIR.
expect_78() {
	timeout 30 "$SEMD" --data-dir "$2" --listen "unix:$T/x.sock" >"$T/x.log" 2>&1
	rc=$?
	expect_eq "$1: exit 78" 78 "$rc"
	ok "$1: says why" grep -q 'log: ' "$T/x.log"
}
mkdir "$T/junk" && echo hello >"$T/junk/notes.txt"
expect_78 "a directory with other files" "$T/junk"
cp -a "$D" "$T/foreign" && printf 'semd-data 1\nnode 2\n' >"$T/foreign/semd.meta"
expect_78 "another node's directory" "$T/foreign"
cp -a "$D" "$T/bad"
seg=$(ls "$T/bad" | grep -E '^[0-9]+-[0-9]+$' | tail -1)
if [ -n "$seg" ]; then
	size=$(stat -c %s "$T/bad/$seg")
	printf 'garbage!garbage!garbage!garbage!' | dd of="$T/bad/$seg" bs=1 \
		seek=$((size / 2)) conv=notrunc 2>/dev/null
	expect_78 "a closed segment with garbage in it" "$T/bad"
else
	ok "a closed segment to damage" false
fi
# A write torn by a crash: the end of the last batch written never reached
# the disk (zeros, as raft_uv preallocates). semd starts with everything
# before it. The last bytes cut off the file instead: stopped with 78.
start_d || exit 1
$S down torn1 --lease 10m >/dev/null
$S down torn2 --lease 10m >/dev/null
stop_d KILL
last=$(ls -t "$D" | grep -E '^open-' | while read -r f; do
	if [ "$(tr -d '\000' <"$D/$f" | wc -c)" -gt 8 ]; then echo "$f"; break; fi
done)
used=0
[ -n "$last" ] && used=$(python3 -c "import sys; d=open(sys.argv[1],'rb').read().rstrip(b'\0'); print(len(d))" "$D/$last")
ok "the segment written last ($last, $used bytes used)" test "$used" -gt 64
cp -a "$D" "$T/cut"
dd if=/dev/zero of="$D/$last" bs=1 seek=$((used - 20)) count=20 conv=notrunc 2>/dev/null
start_d || exit 1
$S trydown torn1 >/dev/null 2>&1
expect_eq "torn write: the entries before it are there" 1 "$?"
$S ping >/dev/null
expect_eq "torn write: semd serves" 0 "$?"
stop_d TERM
truncate -s $((used - 20)) "$T/cut/$last"
expect_78 "the last bytes cut off" "$T/cut"

# A reload does not move the log: data-dir changes only at a restart.
printf 'data-dir %s\n' "$D" >"$T/r.conf"
start_semd r --config "$T/r.conf" || exit 1
$SEMCTL -s "$r_UNIX" create reload/kept --limit 1 >/dev/null
printf 'data-dir %s\n' "$T/other" >"$T/r.conf"
kill -HUP "$r_PID"
ok "SIGHUP with another data-dir: warned" t_wait_for 5 has 'data-dir, restart-grace and snapshot-every change only at a restart' "$T/r.log"
t_peer_key "$T/peer.key"
printf 'data-dir %s\nnode-id 7\npeer-listen tcp:127.0.0.1:1\npeer-key %s\n' "$D" "$T/peer.key" >"$T/r.conf"
kill -HUP "$r_PID"
ok "SIGHUP that makes it a cluster node: warned" t_wait_for 5 has 'node-id, peer-listen, .* change only at a restart' "$T/r.log"
$SEMCTL -s "$r_UNIX" create reload/after --limit 1 >/dev/null
expect_eq "... and it still serves alone" 0 "$?"
kill -TERM "$r_PID"; wait "$r_PID" 2>/dev/null
ok "... and the log stays where it was" test ! -e "$T/other"
start_d || exit 1
$S list reload/ >"$T/rl.out"
ok "... with what came after the reload" has '^reload/after' "$T/rl.out"
stop_d TERM
t_done
