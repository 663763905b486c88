#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/js-bench.sh - the TypeScript package js/ (semclient over HTTP) from
# Node beside Redis' Lua semaphore driven from Node by ioredis, one run on
# this machine, interleaved:
#
#   acquire+release (2 round trips an op) with 1 and 16 concurrent async
#   tasks: semclient over HTTP/1.1 keep-alive on TCP loopback (with the
#   platform's fetch, and with bench/js's node:http adapter) against a
#   private in-memory semd (--listen http:127.0.0.1:0), ioredis against a
#   private redis-server (persistence off, loopback TCP) running the shared
#   bench's Lua (bench/js/bench.mjs says how); and semd-benchmark's down-up
#   on the same daemon over HTTP (its own C client: what the server's HTTP
#   path gives) and over the binary protocol (-c 1, -c 16), the anchors.
#
#   bench/js-bench.sh          (from a build directory, or set top_builddir)
# Knobs: D (seconds a cell, 3), REPS (3; medians shown), PROFILE=1 (a
# CPU profile of the Node client at 16 tasks, node --cpu-prof, its top
# functions printed). Needs node and npm (js/ and bench/js/ are installed
# with npm ci into the build directory) and redis-server.
D=${D:-3}
REPS=${REPS:-3}
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
bench_init js-bench
command -v redis-server >/dev/null || { echo "js-bench: no redis-server (apt-get install redis-server)" >&2; exit 1; }
command -v npm >/dev/null || { echo "js-bench: no npm (scripts/deps.sh)" >&2; exit 1; }

# The package and the bench driver side by side, as in the tree.
stage=${top_builddir:?}/js-bench
mkdir -p "$stage/js" "$stage/bench/js"
(cd "$top/js" && cp -R package.json package-lock.json .npmrc tsconfig.json README.md src "$stage/js/")
(cd "$here/js" && cp package.json package-lock.json .npmrc bench.mjs "$stage/bench/js/")
(cd "$stage/js" && npm ci --prefer-offline --silent && npm run -s build) >"$T/npm.log" 2>&1 ||
	{ cat "$T/npm.log" >&2; exit 1; }
(cd "$stage/bench/js" && npm ci --prefer-offline --silent) >>"$T/npm.log" 2>&1 ||
	{ cat "$T/npm.log" >&2; exit 1; }

bench_start semd 10 --acl "anonymous * all" --listen "unix:$T/semd.sock" --listen http:127.0.0.1:0
URL=http://$(sed -n 's/^http://p' "$T/semd.ready" | head -1)
RPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$T" >"$T/redis.log" 2>&1 &
PIDS+=($!)
for ((i = 0; i < 100; i++)); do
	redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break
	sleep 0.05
done

# field JSON NAME: a number of a JSON line.
field() { sed -n "s/.*\"$2\": *\([0-9]*\).*/\1/p" <<<"$1"; }
js() { (cd "$stage/bench/js" && node bench.mjs "$@"); }
cbench() {
	"$BENCH" -s "unix:$T/semd.sock" -t down-up -c "$1" -d "$D" --threads 1 --json |
		sed -n 's/.*"ops_per_sec": \([0-9]*\).*/\1/p'
}
# hbench C: semd-benchmark's down-up over HTTP (its own keep-alive client in C).
hbench() {
	"$BENCH" -s "http:${URL#http://}" --control "unix:$T/semd.sock" -t down-up -c "$1" -d "$D" \
		--threads 1 --json | sed -n 's/.*"ops_per_sec": \([0-9]*\).*/\1/p'
}
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

declare -A ops p50 p99 cpu
for ((r = 0; r < REPS; r++)); do
	for t in 1 16; do
		s=$(js semd "$URL" "bench/js$t" "$t" "$D")
		ops[semd$t]+=" $(field "$s" ops_per_sec)"; p50[semd$t]+=" $(field "$s" p50_us)"
		p99[semd$t]+=" $(field "$s" p99_us)"; cpu[semd$t]+=" $(field "$s" client_cpu_pct)"
		s=$(js semd-http "$URL" "bench/jsh$t" "$t" "$D")
		ops[nodehttp$t]+=" $(field "$s" ops_per_sec)"; p50[nodehttp$t]+=" $(field "$s" p50_us)"
		p99[nodehttp$t]+=" $(field "$s" p99_us)"; cpu[nodehttp$t]+=" $(field "$s" client_cpu_pct)"
		s=$(js redis "$RPORT" "$t" "$D")
		ops[redis$t]+=" $(field "$s" ops_per_sec)"; p50[redis$t]+=" $(field "$s" p50_us)"
		p99[redis$t]+=" $(field "$s" p99_us)"; cpu[redis$t]+=" $(field "$s" client_cpu_pct)"
		ops[bin$t]+=" $(cbench "$t")"
		ops[http$t]+=" $(hbench "$t")"
	done
done

echo "js-bench: node $(node --version), $D s a cell, median of $REPS (1 op = acquire + release)"
printf '%-44s %10s %8s %8s %8s %10s\n' "client" "ops/s" "p50 us" "p99 us" "cpu %" "x redis"
# The medians of space-separated lists (word splitting wanted).
# shellcheck disable=SC2086
for t in 1 16; do
	R=$(median ${ops[redis$t]}); S=$(median ${ops[semd$t]}); B=$(median ${ops[bin$t]})
	H=$(median ${ops[http$t]}); N=$(median ${ops[nodehttp$t]})
	printf '%-44s %10s %8s %8s %8s %10s\n' \
		"Node ioredis Lua, $t task(s), 1 connection" "$R" "$(median ${p50[redis$t]})" \
		"$(median ${p99[redis$t]})" "$(median ${cpu[redis$t]})" "1.00" \
		"Node semclient HTTP, $t task(s)" "$S" "$(median ${p50[semd$t]})" \
		"$(median ${p99[semd$t]})" "$(median ${cpu[semd$t]})" "$(ratio "$S" "$R")" \
		"  the same over node:http (bench adapter)" "$N" "$(median ${p50[nodehttp$t]})" \
		"$(median ${p99[nodehttp$t]})" "$(median ${cpu[nodehttp$t]})" "$(ratio "$N" "$R")" \
		"C semd-benchmark HTTP, $t conn(s)" "$H" "-" "-" "-" "$(ratio "$H" "$R")" \
		"C semd-benchmark binary, $t conn(s)" "$B" "-" "-" "-" "$(ratio "$B" "$R")"
done

if [ "${PROFILE:-0}" = 1 ]; then
	(cd "$stage/bench/js" && rm -f ./*.cpuprofile && node --cpu-prof bench.mjs semd "$URL" bench/prof 16 "$D" >/dev/null)
	prof=$(ls -t "$stage"/bench/js/*.cpuprofile | head -1)
	echo
	echo "js-bench: the Node client's CPU at 16 tasks, self time by function (top 25; $prof)"
	node -e '
const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const self = new Map(); const byId = new Map(p.nodes.map((n) => [n.id, n]));
const dt = p.timeDeltas; let total = 0;
p.samples.forEach((id, i) => { const n = byId.get(id); const cf = n.callFrame;
  const k = `${cf.functionName || "(anon)"} ${(cf.url || "").replace(/.*node_modules\//, "").replace(/^file:.*\//, "")}:${cf.lineNumber + 1}`;
  self.set(k, (self.get(k) || 0) + (dt[i] || 0)); total += dt[i] || 0; });
[...self].sort((a, b) => b[1] - a[1]).slice(0, 25).forEach(([k, v]) => console.log((100 * v / total).toFixed(1).padStart(6) + "%  " + k));' "$prof"
fi
