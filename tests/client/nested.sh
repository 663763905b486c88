#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/client/nested.sh - a deadlock across processes is seen: a semctl
# started under `semctl run` (SEMD_SESSION in its environment) is a child
# of the run's session, which waits for it. `semctl run A -- semctl down B`
# against its mirror image, a command waiting for its own run's name, and
# a chain of runs end at once with exit 7 instead of timing out; a child
# that does not wait for its parent is served as before, and a link that
# does not match links nothing.
. "$top_srcdir/tests/lib.sh"
t_watchdog 180
start_semd d || exit 1
S="$SEMCTL -s $d_UNIX"
export S T

for n in A B C; do $S create $n --limit 1 >/dev/null || exit 1; done
$S create L2 --limit 2 >/dev/null || exit 1

expect_eq "semctl run exports SEMD_SESSION=ID:LINK" yes \
	"$($S run C -- sh -c 'echo "$SEMD_SESSION"' |
	grep -Eq '^[0-9]+:[0-9a-f]{16}$' && echo yes)"

# mirror X Y: run X waits (bounded) until the mirror run holds Y, then
# downs Y; the exit status of the run goes to $T/X.rc.
mirror() {
	$S run "$1" -- sh -c '
		touch "$T/$1.in"
		for i in $(seq 300); do [ -e "$T/$2.in" ] && break; sleep 0.05; done
		exec $S down "$2" --timeout 15s --lease 5s' sh "$1" "$2" \
		>"$T/$1.out" 2>"$T/$1.err"
	echo $? >"$T/$1.rc"
}
start=$(date +%s)
mirror A B &
m1=$!
mirror B A &
m2=$!
wait $m1 $m2
took=$(( $(date +%s) - start ))
expect_eq "run A -- down B against run B -- down A: one sees the deadlock (7), the other is served (0)" \
	"0 7" "$(cat "$T/A.rc" "$T/B.rc" | sort | tr '\n' ' ' | sed 's/ $//')"
ok "... and says it is one, through the commands the runs wait for" \
	sh -c 'cat "$T/A.err" "$T/B.err" | grep -q "deadlock: .*waits for the command it runs"'
ok "... at once, not at the 15 s timeout (took ${took}s)" test "$took" -lt 14

expect_eq "run A -- down A (limit 1): a deadlock, exit 7" 7 \
	"$($S run A -- $S down A --timeout 15s --lease 5s >/dev/null 2>&1; echo $?)"
expect_eq "run A -- run B -- down A: the grandparent holds it, exit 7" 7 \
	"$($S run A -- $S run B -- $S down A --timeout 15s --lease 5s >/dev/null 2>&1; echo $?)"
expect_eq "run A -- down B (held for a while by nobody in the family): served, exit 0" 0 \
	"$($S run A -- $S down B --timeout 15s --lease 5s >/dev/null 2>&1; echo $?)"
expect_eq "run L2 -- down L2 (limit 2): served, exit 0" 0 \
	"$($S run L2 -- $S down L2 --timeout 15s --lease 5s >/dev/null 2>&1; echo $?)"
expect_eq "a link that does not match links nothing: the down times out (1)" 1 \
	"$($S run C -- sh -c 'SEMD_SESSION=${SEMD_SESSION%:*}:0000000000000001 exec $S down C --timeout 1s --lease 5s' \
	>/dev/null 2>&1; echo $?)"
t_done
