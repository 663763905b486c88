#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The Prometheus rules and the Grafana dashboard in packaging/ against
# Prometheus' own tools and a live semd: `promtool check rules` on the
# rules, `promtool test rules` on their unit tests (semd-rules.test.yml),
# `promtool check metrics` on the page of a live semd in memory and of one
# with --data-dir; the dashboard is JSON, and every metric the dashboard
# and the rules query is on a live page (a name misspelt there would never
# match anything, and an alert on it never fire).
. "$top_srcdir/tests/lib.sh"
t_watchdog 60
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS
RULES=${SEMD_ALERT_RULES:-$top_srcdir/packaging/prometheus/semd-rules.yml}
TESTS_YML=$top_srcdir/packaging/tests/semd-rules.test.yml
DASH=$top_srcdir/packaging/grafana/semd-dashboard.json
if ! command -v promtool >/dev/null || ! command -v python3 >/dev/null; then
	echo "SKIP: promtool (Debian's prometheus package; scripts/deps.sh) or python3 missing"
	exit 77
fi

ok "promtool check rules" sh -c "promtool check rules '$RULES' >'$T/check.out' 2>&1"
ok "... finds the alerts" grep -q 'SUCCESS: 1[0-9] rules found' "$T/check.out"
# promtool test rules reads the rules beside its test file.
mkdir -p "$T/t/prometheus" "$T/t/tests"
cp "$RULES" "$T/t/prometheus/semd-rules.yml"
cp "$TESTS_YML" "$T/t/tests/"
ok "promtool test rules: every alert fires when it should, and only then" \
	sh -c "cd '$T/t/tests' && promtool test rules semd-rules.test.yml >'$T/test.out' 2>&1"
[ "$t_failed" = 0 ] || cat "$T/check.out" "$T/test.out"

# page ADDR OUT: the metrics page at ADDR into OUT.
page() {
	python3 -c 'import sys, urllib.request
sys.stdout.write(urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=5).read().decode())' "$1" >"$2"
}
start_semd mem --metrics-listen tcp:127.0.0.1:0 --metrics-names app/ || exit 1
start_semd dur --metrics-listen tcp:127.0.0.1:0 --metrics-names app/ \
	--data-dir "$T/dur.data" || exit 1
for d in mem dur; do
	addr=$(sed -n 's/^metrics://p' "$T/$d.ready")
	# Some traffic first, so that the labelled families have samples.
	"$SEMCTL" -s "unix:$T/$d.sock" create app/x --limit 2 >/dev/null 2>&1
	"$SEMCTL" -s "unix:$T/$d.sock" down app/x >/dev/null 2>&1
	"$SEMCTL" -s "unix:$T/$d.sock" up nope/none >/dev/null 2>&1
	page "$addr" "$T/$d.txt"
	ok "promtool check metrics: the page of semd $d is valid and lint-clean" \
		sh -c "promtool check metrics <'$T/$d.txt' >'$T/$d.lint' 2>&1"
	[ "$t_failed" = 0 ] || cat "$T/$d.lint"
done

# The names on a live page: samples, and every family's TYPE line (a
# histogram's _bucket, _sum and _count too).
python3 - "$T/dur.txt" >"$T/names" <<'EOF'
import sys
names = set()
for line in open(sys.argv[1]):
    if line.startswith("# TYPE "):
        _, _, name, kind = line.split()
        names.add(name)
        if kind == "histogram":
            names.update(name + s for s in ("_bucket", "_sum", "_count"))
    elif line.strip() and not line.startswith("#"):
        names.add(line.split("{")[0].split(" ")[0])
print("\n".join(sorted(names)))
EOF
ok "the live page has names ($(wc -l <"$T/names"))" test "$(wc -l <"$T/names")" -gt 40

# The dashboard: JSON, panels with queries; the queries' metric names.
ok "the dashboard is JSON with panels and queries" sh -c "python3 - '$DASH' >'$T/dash-exprs' <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d['title'] and d['uid'] and d['panels'], 'no title, uid or panels'
n = 0
for p in d['panels']:
    for t in p.get('targets', []):
        assert t['expr'].strip(), 'an empty query in %r' % p['title']
        print(t['expr'])
        n += 1
assert n >= 20, 'only %d queries' % n
EOF"
# used FILE: the semd_ and process_ names FILE's queries use.
used() {
	grep -o '\b\(semd\|process\)_[a-z0-9_]*' "$1" | sort -u
}
grep '^ *expr:' "$RULES" >"$T/rule-exprs"
for f in dash-exprs rule-exprs; do
	used "$T/$f" >"$T/$f.names"
	ok "$f: queries use semd's metrics ($(wc -l <"$T/$f.names") names)" test -s "$T/$f.names"
	while read -r name; do
		ok "$f: $name is on a live page" grep -qx "$name" "$T/names"
	done <"$T/$f.names"
done
t_done
