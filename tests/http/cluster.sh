#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/http/cluster.sh - HTTP on a three-node cluster (tests/http/cluster.py):
# redirects from followers, a long-poll riding out a kill -9 of the leader,
# a watch resumed on the new leader; curl -L through a follower; and a
# waiter that outlives a restart of a daemon that keeps a log.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/http/lib.sh"
t_watchdog 120
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS

t_cluster3 30 || exit 1
H1=http://127.0.0.1:$((base + 21)) H2=http://127.0.0.1:$((base + 22))
H3=http://127.0.0.1:$((base + 23))
for i in 1 2 3; do
	t_cluster_node $i --bootstrap "$BOOT" --listen "http:127.0.0.1:$((base + 20 + i))" \
		--http-nodes "1=$H1,2=$H2,3=$H3" ||
		{ echo "node $i did not start"; exit 1; }
	[ "$i" = 1 ] || continue
	# Node 1 alone has no quorum and serves nothing: an acquire is answered
	# at once, 503 with Retry-After, and so is its retry with the same
	# Idempotency-Key (it once waited for an answer the first attempt would
	# never get, for as long as the client waited).
	for try in 1 2 3; do
		hcurl "$T/lone$try" --max-time 10 -D "$T/lone$try.h" -X POST \
			-H 'Idempotency-Key: lone-1' -d '{"limit":1}' "$H1/v1/semaphores/lone/permits"
		expect_eq "a node without a quorum: acquire $try (one key) answered 503" \
			503 "$(st "$T/lone$try")"
	done
	ok "... with Retry-After" grep -qi '^retry-after:' "$T/lone3.h"
done
ok "a leader is elected" t_wait_for 10 t_cluster_has_leader
L=$(t_cluster_field leader_id)
F=$(( L % 3 + 1 ))
eval "fu=\$H$F"
# The node that first knows the leader is not always the follower asked, nor
# is the new leader always serving yet: until both, the answer is 503 with
# Retry-After, which curl --retry honours; the key makes the retry safe.
hcurl "$T/c1" -L --retry 10 --retry-max-time 20 -H 'Idempotency-Key: curl-1' \
	-X POST -d '{"limit":2,"lease_ms":30000}' "$fu/v1/semaphores/curl/permits"
expect_eq "curl -L through a follower: the POST follows the 307" 201 "$(st "$T/c1")"
ok "HTTP on the cluster, the leader killed under a long-poll" python3 \
	"$HTTP_PY/cluster.py" "http:127.0.0.1:$((base + 21)),http:127.0.0.1:$((base + 22)),http:127.0.0.1:$((base + 23))" \
	"$N1,$N2,$N3"

# One daemon with a log: a waiter outlives a restart, resumed by its id.
start_http d --data-dir "$T/one" || exit 1
hcurl "$T/h" -X POST -d '{"limit":1,"lease_ms":60000}' "$d_URL/v1/semaphores/r/permits"
hcurl "$T/w" -X POST -H 'Prefer: wait=0' -d '{"lease_ms":60000}' "$d_URL/v1/semaphores/r/permits"
expect_eq "a waiter" 202 "$(st "$T/w")"
w=$(jget "$T/w" href)
kill "$d_PID"; wait "$d_PID" 2>/dev/null
start_http d --data-dir "$T/one" || exit 1
hcurl "$T/w2" "$d_URL$w"
expect_eq "after a restart it still waits" waiting "$(jget "$T/w2" state)"
hcurl "$T/rel" -X DELETE "$d_URL$(jget "$T/h" href)"
hcurl "$T/w3" -H 'Prefer: wait=10' "$d_URL$w"
expect_eq "... and is granted by the next release" granted "$(jget "$T/w3" state)"

ok "every answer as the OpenAPI document says" python3 "$HTTP_PY/openapi-check.py" \
	"$top_srcdir/daemon/http/openapi.json" "$HTTP_SEEN"
t_done
