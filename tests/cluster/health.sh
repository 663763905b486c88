#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# /healthz and /readyz on the metrics listener, for real daemons: in memory
# (ready at once), with a log of one voter (ready once loaded), and in a
# three-node cluster: the leader and the followers ready; a node waiting to
# be added not ready (no leader known); the leader stopped (SIGSTOP): the
# two others ready again under a new leader; that one stopped too: the last
# node answers /healthz but not /readyz (no quorum); both continued: all
# three ready again.
. "$top_srcdir/tests/lib.sh"
t_watchdog 100
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }

# get URL [METHOD]: "STATUS BODY" (the body's one line), loopback only.
cat >"$T/get.py" <<'EOF'
import sys, urllib.error, urllib.request
url = sys.argv[1]
assert url.startswith("http://127.0.0.1:"), url
req = urllib.request.Request(url, method=sys.argv[2] if len(sys.argv) > 2 else "GET")
try:
    with urllib.request.urlopen(req, timeout=5) as r:
        status, ctype, body = r.status, r.headers.get("Content-Type"), r.read()
except urllib.error.HTTPError as e:
    status, ctype, body = e.code, e.headers.get("Content-Type"), e.read()
if status in (200, 503) and ctype != "text/plain; charset=utf-8":
    sys.exit("content type %r" % ctype)
print(status, body.decode().rstrip("\n"))
EOF
get() { python3 "$T/get.py" "$@"; }
# ready_gauge ADDR: the semd_ready sample of the metrics page at ADDR.
ready_gauge() {
	python3 -c 'import sys, urllib.request
for l in urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=5).read().decode().splitlines():
    if l.startswith("semd_ready "): print(l.split()[1])' "$1"
}
# metrics_of READYFILE: its metrics address.
metrics_of() { sed -n 's/^metrics://p' "$1"; }
# says URL PREFIX: the answer starts with PREFIX.
says() { case $(get "$1") in "$2"*) return 0;; esac; return 1; }

# In memory.
start_semd mem --metrics-listen tcp:127.0.0.1:0 || exit 1
M=$(metrics_of "$T/mem.ready")
expect_eq "in memory: /healthz" "200 ok: serving" "$(get "http://$M/healthz")"
expect_eq "in memory: /readyz" "200 ready: in memory" "$(get "http://$M/readyz")"
expect_eq "in memory: semd_ready 1" 1 "$(ready_gauge "$M")"
expect_eq "a query string is ignored" "200 ready: in memory" "$(get "http://$M/readyz?verbose=1")"
expect_eq "HEAD /readyz: the status, no body" "200 " "$(get "http://$M/readyz" HEAD)"
expect_eq "POST /readyz: 405" "405 405 Method Not Allowed" "$(get "http://$M/readyz" POST)"
expect_eq "another path: 404" "404 404 Not Found (try /metrics, /healthz or /readyz)" \
	"$(get "http://$M/ready")"

# A log of one voter: the daemon answers once the log is loaded.
start_semd one --metrics-listen tcp:127.0.0.1:0 --data-dir "$T/one.data" || exit 1
M=$(metrics_of "$T/one.ready")
ok "one voter: /readyz once loaded" says "http://$M/readyz" "200 ready: log loaded, applied up to entry "

# A cluster, and a fourth node waiting to be added.
t_cluster3 15 || exit 1
# (t_wait_for counts in i: the loops here have names of their own.)
for n in 1 2 3; do
	t_cluster_node "$n" --metrics-listen tcp:127.0.0.1:0 --bootstrap "$BOOT" ||
		{ echo "node $n did not start"; exit 1; }
	eval "M$n=\$(metrics_of \"\$T/r$n\")"
done
t_cluster_node 4 --metrics-listen tcp:127.0.0.1:0 || { echo "node 4 did not start"; exit 1; }
M4=$(metrics_of "$T/r4")

# leader_of I: the id of the leader node I reports ready under.
leader_of() {
	eval "m=\$M$1"
	get "http://$m/readyz" | sed -n \
		-e "s/^200 ready: leader (node \([0-9]*\),.*/\1/p" \
		-e "s/^200 ready: follower of node \([0-9]*\), [0-9]* entries behind$/\1/p"
}
# all_ready_under L I...: nodes I... are ready, L the leader of each.
all_ready_under() {
	l=$1; shift
	for nd; do [ "$(leader_of "$nd")" = "$l" ] || return 1; done
}
# a_leader I...: a node among I... that says it is ready as the leader.
a_leader() {
	for na; do
		eval "m=\$M$na"
		says "http://$m/readyz" "200 ready: leader (node $na," && { echo "$na"; return 0; }
	done
	return 1
}
# has_leader I...: one of nodes I... is ready as the leader.
has_leader() { a_leader "$@" >/dev/null; }
ok "a leader is elected and says it is ready" t_wait_secs 15 has_leader 1 2 3
L=$(a_leader 1 2 3)
ok "the followers are ready under it (node $L)" t_wait_secs 10 all_ready_under "$L" 1 2 3
ok "a node waiting to be added is alive" says "http://$M4/healthz" "200 ok: serving"
expect_eq "... and not ready" "503 not ready: no leader known (an election under way, or no quorum)" \
	"$(get "http://$M4/readyz")"

# The leader stopped: the other two elect one and are ready under it.
eval "lp=\$N$L"
kill -STOP "$lp"
others=$(for n in 1 2 3; do [ "$n" = "$L" ] || printf '%s ' "$n"; done)
# shellcheck disable=SC2086 # two node numbers
new_leader() { l=$(a_leader $others) && [ "$l" != "$L" ] && all_ready_under "$l" $others; }
ok "the leader stopped: the others are ready under a new leader" t_wait_secs 15 new_leader
# shellcheck disable=SC2086
L2=$(a_leader $others)
last=$(for n in $others; do [ "$n" = "$L2" ] || echo "$n"; done)
eval "lp2=\$N$L2"
eval "ML=\$M$last"
kill -STOP "$lp2"
ok "a second node stopped: the last one is not ready (no leader known)" \
	t_wait_secs 15 says "http://$ML/readyz" "503 not ready: no leader known"
ok "... but alive" says "http://$ML/healthz" "200 ok: serving"
expect_eq "... and its semd_ready gauge says 0" 0 "$(ready_gauge "$ML")"
kill -CONT "$lp" "$lp2"
# all_ready: the three nodes ready under one leader.
all_ready() {
	for ld in 1 2 3; do all_ready_under "$ld" 1 2 3 && return 0; done
	return 1
}
ok "both continued: all three ready under one leader" t_wait_secs 20 all_ready
expect_eq "... and the last node's semd_ready gauge says 1" 1 "$(ready_gauge "$ML")"
t_done
