#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The alerts, for real: a Prometheus server on loopback (its own directory,
# a free port) scrapes a three-node semd cluster every second and evaluates
# packaging/prometheus/semd-rules.yml every second, with every "for" cut to
# 1s. While the cluster is whole no alert fires; every query of the Grafana
# dashboard is valid PromQL on the scraped data. Then the leader is stopped
# (SIGSTOP), the two others elect a leader, and that one is stopped too:
# SemdNoLeader fires for the last node, SemdDown for the two stopped ones,
# and once they are continued SemdNoLeader resolves. Bounded: about half a
# minute, 100 s at most.
# SEMD_ALERT_RULES=FILE uses another rules file (to see this test fail on
# a broken rule).
. "$top_srcdir/tests/lib.sh"
t_watchdog 100
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS
RULES=${SEMD_ALERT_RULES:-$top_srcdir/packaging/prometheus/semd-rules.yml}
DASH=$top_srcdir/packaging/grafana/semd-dashboard.json
if ! command -v prometheus >/dev/null || ! command -v python3 >/dev/null; then
	echo "SKIP: prometheus (Debian's prometheus package; scripts/deps.sh) or python3 missing"
	exit 77
fi

# The cluster, each node with a metrics port of its own.
t_cluster3 15 || exit 1
for n in 1 2 3; do
	t_cluster_node "$n" --metrics-listen tcp:127.0.0.1:0 --metrics-names app/ \
		--bootstrap "$BOOT" || { echo "node $n did not start"; exit 1; }
	eval "M$n=\$(sed -n 's/^metrics://p' \"\$T/r$n\")"
done

# q.py PORT EXPR|--alerts|--ready: ask Prometheus' HTTP API (loopback).
# EXPR: the instant query's result, "labels value" a line (exit 1 if the
# query is not valid); --alerts: "alertname instance state" a line;
# --ready: exit 0 once the server is ready; --rules: exit 0 if every rule
# has been evaluated, in good health.
cat >"$T/q.py" <<'EOF'
import json, sys, urllib.error, urllib.parse, urllib.request
base = "http://127.0.0.1:%s" % sys.argv[1]
def get(path):
    with urllib.request.urlopen(base + path, timeout=5) as r:
        return json.load(r) if path.startswith("/api/") else r.read()
if sys.argv[2] == "--ready":
    get("/-/ready")
elif sys.argv[2] == "--rules":
    rules = [r for g in get("/api/v1/rules")["data"]["groups"] for r in g["rules"]]
    sys.exit(not (len(rules) >= 10 and all(
        r["health"] == "ok" and not r["lastEvaluation"].startswith("0001") for r in rules)))
elif sys.argv[2] == "--alerts":
    for a in get("/api/v1/alerts")["data"]["alerts"]:
        print(a["labels"]["alertname"], a["labels"].get("instance", "-"), a["state"])
else:
    try:
        d = get("/api/v1/query?" + urllib.parse.urlencode({"query": sys.argv[2]}))
    except urllib.error.HTTPError as e:
        sys.exit("query %r: %s" % (sys.argv[2], e.read().decode()))
    if d["status"] != "success":
        sys.exit("query %r: %s" % (sys.argv[2], d))
    for r in d["data"]["result"]:
        print(json.dumps(r["metric"], sort_keys=True), r["value"][1])
EOF
PPORT=$(t_port_base 1) || exit 1
q() { python3 "$T/q.py" "$PPORT" "$@"; }

# Prometheus: its own configuration, rules with every "for" at 1s, data
# in $T, the web API on loopback only.
sed 's/^\( *for:\).*/\1 1s/' "$RULES" >"$T/rules.yml"
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files:
  - $T/rules.yml
scrape_configs:
  - job_name: semd
    static_configs:
      - targets: ['$M1', '$M2', '$M3']
EOF
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address="127.0.0.1:$PPORT" --log.level=warn \
	>"$T/prometheus.log" 2>&1 &
PIDS_TO_KILL="$PIDS_TO_KILL $!"
ok "prometheus is ready on 127.0.0.1:$PPORT" t_wait_secs 30 q --ready
# all_up: the three nodes scraped, a leader among them, rules evaluated.
all_up() {
	[ "$(q 'count(up{job="semd"} == 1)' | awk '{ print $2 }')" = 3 ] &&
	[ "$(q 'count(semd_cluster_leader == 1)' | awk '{ print $2 }')" = 1 ] &&
	[ "$(q 'count(semd_cluster_leader_id > 0)' | awk '{ print $2 }')" = 3 ]
}
ok "prometheus scrapes the three nodes, which agree on a leader" t_wait_secs 30 all_up
# Some work for the panels: a name, a grant, a release, an error.
S="$SEMCTL -s $ADDRS"
ok "semctl works on the cluster" t_wait_secs 15 $S create app/x --limit 2
$S down app/x >/dev/null 2>&1
$S up app/x >/dev/null 2>&1
$S up nope/none >/dev/null 2>&1

# Some seconds of the whole cluster scraped, the rules evaluated on them.
ok "four rounds of scrapes of the whole cluster" t_wait_secs 15 sh -c \
	"python3 '$T/q.py' '$PPORT' 'min(count_over_time(semd_cluster_leader_id[1m]))' | awk '\$2 >= 4 { f = 1 } END { exit !f }'"
ok "every rule is evaluated, without error" t_wait_secs 10 q --rules
q --alerts >"$T/alerts0"
ok "no alert while the cluster is whole" test ! -s "$T/alerts0"
[ -s "$T/alerts0" ] && cat "$T/alerts0"

# Every query of the dashboard, with its variables filled in, is valid
# PromQL on the scraped data.
python3 - "$DASH" >"$T/exprs" <<'EOF'
import json, sys
for p in json.load(open(sys.argv[1]))["panels"]:
    for t in p.get("targets", []):
        e = t["expr"].replace("$__rate_interval", "5s").replace("$job", "semd")
        print(e.replace("$instance", ".*"))
EOF
bad=0
: >"$T/empty"
while read -r e; do
	q "$e" >"$T/result" 2>>"$T/bad-exprs" || bad=$((bad + 1))
	[ -s "$T/result" ] || echo "$e" >>"$T/empty"
done <"$T/exprs"
expect_eq "all $(wc -l <"$T/exprs") queries of the dashboard are valid" 0 "$bad"
[ "$bad" = 0 ] || cat "$T/bad-exprs"
expect_eq "... and every one has data" "" "$(cat "$T/empty")"

# leader: the id of the leader, as the nodes' metrics say.
leader() { q 'max(semd_cluster_leader_id)' | awk '{ print $2 }'; }
L=$(leader)
eval "lp=\$N$L"
kill -STOP "$lp"
# new_leader: a leader other than L, known to both other nodes.
new_leader() {
	l=$(q "count(semd_cluster_leader_id != $L and semd_cluster_leader_id > 0)" | awk '{ print $2 }')
	[ "$l" = 2 ]
}
ok "the leader (node $L) stopped: the others elect another" t_wait_secs 20 new_leader
L2=$(q "max(semd_cluster_leader_id != $L)" | awk '{ print $2 }')
eval "lp2=\$N$L2"
kill -STOP "$lp2"
for n in 1 2 3; do [ "$n" = "$L" ] || [ "$n" = "$L2" ] || last=$n; done
eval "ML=\$M$last"
# firing NAME INSTANCE: Prometheus says the alert NAME fires for INSTANCE.
firing() { q --alerts >"$T/alerts" && grep -qx "$1 $2 firing" "$T/alerts"; }
ok "node $L2 stopped too: SemdNoLeader fires for node $last ($ML)" \
	t_wait_secs 30 firing SemdNoLeader "$ML"
eval "ms1=\$M$L ms2=\$M$L2"
ok "... SemdDown for the stopped nodes" t_wait_secs 10 sh -c \
	"python3 '$T/q.py' '$PPORT' --alerts >'$T/alerts2' &&
	 grep -qx 'SemdDown $ms1 firing' '$T/alerts2' && grep -qx 'SemdDown $ms2 firing' '$T/alerts2'"
kill -CONT "$lp" "$lp2"
# resolved: no SemdNoLeader any more.
resolved() { q --alerts >"$T/alerts" && ! grep -q '^SemdNoLeader ' "$T/alerts"; }
ok "both continued: SemdNoLeader resolves" t_wait_secs 30 resolved
[ "$t_failed" = 0 ] || { q --alerts; tail -n 20 "$T/prometheus.log"; }
t_done
