#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The Prometheus endpoint: off by default; when on, GET /metrics is valid
# exposition text whose counters, histograms and per-semaphore gauges follow
# real operations; other paths are 404; semctl stats shows the same figures.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120

# scrape.py URL: print the samples as "name{labels} value", one a line, after
# checking every line of the page strictly (a comment, or a sample with
# well-formed, escaped labels and a number) and every histogram's shape.
# scrape.py --status URL [METHOD]: print the HTTP status only.
cat >"$T/scrape.py" <<'EOF'
import re, sys, urllib.error, urllib.request

def fetch(url, method="GET"):
    assert url.startswith("http://127.0.0.1:"), url
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, "", b""

if sys.argv[1] == "--status":
    print(fetch(sys.argv[2], *sys.argv[3:4])[0])
    sys.exit(0)
status, ctype, body = fetch(sys.argv[1])
if status != 200 or not ctype.startswith("text/plain; version=0.0.4"):
    sys.exit("scrape: status %d, content type %r" % (status, ctype))
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r"^(%s)(\{(?:%s)(?:,%s)*\})? (-?[0-9]+(?:\.[0-9]+)?|\+Inf|NaN)$"
                    % (NAME, LABEL, LABEL))
COMMENT = re.compile(r"^# (?:HELP %s .*|TYPE %s (?:counter|gauge|histogram|summary|untyped))$"
                     % (NAME, NAME))
text = body.decode("utf-8")
if not text.endswith("\n"):
    sys.exit("scrape: the page does not end with a newline")
types, seen, hist = {}, set(), {}
for n, line in enumerate(text[:-1].split("\n"), 1):
    if line.startswith("#"):
        if not COMMENT.match(line):
            sys.exit("scrape: line %d: bad comment: %r" % (n, line))
        f = line.split(" ")
        if f[1] == "TYPE":
            if f[2] in types:
                sys.exit("scrape: line %d: second TYPE for %s" % (n, f[2]))
            types[f[2]] = f[3]
        continue
    m = SAMPLE.match(line)
    if not m:
        sys.exit("scrape: line %d: not a sample: %r" % (n, line))
    key = m.group(1) + (m.group(2) or "")
    if key in seen:
        sys.exit("scrape: line %d: duplicate sample %s" % (n, key))
    seen.add(key)
    base = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
    if m.group(1) not in types and types.get(base) != "histogram":
        sys.exit("scrape: line %d: %s has no TYPE line" % (n, m.group(1)))
    if types.get(base) == "histogram":
        hist.setdefault(base, []).append((m.group(1), m.group(2), float(m.group(3))))
    print(line)
for base, rows in hist.items():
    buckets = [(r[1], r[2]) for r in rows if r[0] == base + "_bucket"]
    counts = [r[2] for r in rows if r[0] == base + "_count"]
    if not buckets or buckets[-1][0] != '{le="+Inf"}' or len(counts) != 1:
        sys.exit("scrape: histogram %s lacks +Inf or _count" % base)
    les = [float(b[0][5:-2]) for b in buckets[:-1]]
    vals = [b[1] for b in buckets]
    if les != sorted(les) or vals != sorted(vals) or vals[-1] != counts[0]:
        sys.exit("scrape: histogram %s is not cumulative up to its count" % base)
EOF
PY=${PYTHON:-python3}
if ! command -v "$PY" >/dev/null 2>&1; then
	echo "$TEST_NAME: SKIP (no python3)"
	exit 77
fi

# scrape OUT: the samples of daemon m into OUT (fails on a malformed page).
scrape() { "$PY" "$T/scrape.py" "http://$m_METRICS/metrics" >"$1"; }
# value FILE SAMPLE: the value of one sample (the whole "name{labels}").
value() { K="$2" awk '$1 == ENVIRON["K"] { print $2 }' "$1"; }
# idle: the daemon has seen every client go (a test client's exit and the
# daemon's handling of it are not ordered with a scrape).
idle() { scrape "$T/i.txt" && [ "$(value "$T/i.txt" semd_connections)" = 0 ]; }
# holders_are N: the daemon reports N holders.
holders_are() { scrape "$T/h.txt" && [ "$(value "$T/h.txt" semd_holders)" = "$1" ]; }

# Off by default: no metrics line in the ready file, nothing logged.
start_semd off || exit 1
ok "off by default: no metrics line in the ready file" \
	sh -c "! grep -q '^metrics:' '$T/off.ready'"
ok "off by default: nothing logged about metrics" \
	sh -c "! grep -q 'metrics on' '$T/off.log'"

out=$("$SEMD" --metrics-listen udp:127.0.0.1:1 --check-config 2>&1)
ok "metrics-listen takes only tcp: and unix: addresses ($out)" \
	sh -c "echo '$out' | grep -q 'expected tcp:HOST:PORT.*unix:PATH'"

# The name app/q"x\y, to test label escaping.
qname=$(printf 'app/q"x\\y' | od -An -tx1 | tr -d ' \n')
start_semd m --metrics-listen tcp:127.0.0.1:0 --metrics-names app/ \
	--metrics-names zz || exit 1
m_METRICS=$(sed -n 's/^metrics://p' "$T/m.ready")
ok "the ready file has the metrics address ($m_METRICS)" \
	sh -c "echo '$m_METRICS' | grep -q '^127.0.0.1:[1-9][0-9]*$'"

timeout 10 "$SEMD" --listen "unix:$T/busy.sock" \
	--metrics-listen "tcp:$m_METRICS" >"$T/busy.log" 2>&1 </dev/null
expect_eq "a metrics address in use stops the daemon at start-up (EX_OSERR)" \
	71 "$?"
ok "and says why" grep -q 'metrics-listen .*cannot bind' "$T/busy.log"

ok "a fresh daemon's page parses" scrape "$T/s0.txt"
expect_eq "no grants yet" 0 "$(value "$T/s0.txt" semd_grants_total)"
expect_eq "the wait histogram starts empty" 0 "$(value "$T/s0.txt" semd_wait_seconds_count)"
ok "memory in use is reported" test "$(value "$T/s0.txt" semd_memory_bytes)" -gt 0
ver=$("$SEMD" --version | sed 's/^semd //')
ok "semd_build_info names the version ($ver), libevent and OpenSSL" grep -q \
	"^semd_build_info{version=\"$ver\",libevent=\"[0-9][^\"]*\",openssl=\"[0-9][^\"]*\"} 1\$" "$T/s0.txt"
expect_eq "semd_max_sessions is the setting" 100000 "$(value "$T/s0.txt" semd_max_sessions)"
expect_eq "semd_max_connections is the setting" 10000 "$(value "$T/s0.txt" semd_max_connections)"
expect_eq "semd_ready" 1 "$(value "$T/s0.txt" semd_ready)"
# The process families, against what /proc says of the daemon.
fds=$(value "$T/s0.txt" process_open_fds)
nfd=$(ls "/proc/$m_PID/fd" | wc -l)
ok "process_open_fds ($fds) is the daemon's ($nfd, give or take the scrape's)" \
	test "$fds" -ge $((nfd - 2)) -a "$fds" -le $((nfd + 2))
expect_eq "process_max_fds is its soft RLIMIT_NOFILE" \
	"$(awk '/^Max open files/ { print $4 }' "/proc/$m_PID/limits")" \
	"$(value "$T/s0.txt" process_max_fds)"
rss=$(value "$T/s0.txt" process_resident_memory_bytes)
ok "resident memory ($rss) is about /proc's VmRSS" awk -v r="$rss" \
	-v k="$(awk '/^VmRSS/ { print $2 }' "/proc/$m_PID/status")" \
	'BEGIN { exit !(r > 0 && r >= k * 1024 / 2 && r <= k * 1024 * 2) }'
ok "virtual memory is at least the resident" \
	test "$(value "$T/s0.txt" process_virtual_memory_bytes)" -ge "$rss"
ok "the start time is within the test's minutes" awk -v s="$(value "$T/s0.txt" process_start_time_seconds)" \
	-v now="$(date +%s)" 'BEGIN { exit !(s > now - 600 && s < now + 5) }'
ok "CPU seconds are counted" awk -v c="$(value "$T/s0.txt" process_cpu_seconds_total)" \
	'BEGIN { exit !(c >= 0 && c < 600) }'
expect_eq "404 for another path" 404 \
	"$("$PY" "$T/scrape.py" --status "http://$m_METRICS/other")"
expect_eq "404 below /metrics" 404 \
	"$("$PY" "$T/scrape.py" --status "http://$m_METRICS/metrics/x")"
ok "POST is refused" sh -c "[ \"\$('$PY' '$T/scrape.py' --status 'http://$m_METRICS/metrics' POST)\" != 200 ]"

# Semaphores: two selected by app/ (one with quotes and a backslash), one not.
$PROBE "$m_UNIX" hello "create app/keep 3" "create hex:$qname 2" \
	"create other/x 2" >"$T/create.out" 2>&1
ok "semaphores created" test "$(grep -c '^reply id=[234] code=OK$' "$T/create.out")" = 3

# A holder that gives app/w back 1.1 s after the gauges are read (the file
# go), then a second client whose down on app/w waits for it; a holder of
# app/keep until the waiter is done (go2). Files, not fixed sleeps: on a
# loaded machine the scrape may come seconds later.
$PROBE "$m_UNIX" hello "down app/keep" "down app/w" "until $T/go" "sleep 1100" \
	"up app/w" "until $T/go2" >"$T/holder.out" 2>&1 &
holder=$!
ok "the holder holds two permits" t_wait_for 10 holders_are 2
$PROBE "$m_TCP" hello "down app/w timeout=15000" "up app/w" >"$T/waiter.out" 2>&1 &
waiter=$!
# While both wait and hold: the gauges.
ok "the waiter is queued" t_wait_for 10 sh -c \
	"'$PY' '$T/scrape.py' 'http://$m_METRICS/metrics' | grep -qx 'semd_waiters 1'"
scrape "$T/s1.txt"
expect_eq "holders gauge of app/keep" 1 "$(value "$T/s1.txt" 'semd_semaphore_holders{name="app/keep"}')"
expect_eq "available gauge of app/keep" 2 "$(value "$T/s1.txt" 'semd_semaphore_available{name="app/keep"}')"
expect_eq "limit gauge of app/keep" 3 "$(value "$T/s1.txt" 'semd_semaphore_limit{name="app/keep"}')"
expect_eq "waiters gauge of app/w" 1 "$(value "$T/s1.txt" 'semd_semaphore_waiters{name="app/w"}')"
expect_eq "the escaped name's limit" 2 "$(value "$T/s1.txt" 'semd_semaphore_limit{name="app/q\"x\\y"}')"
ok "no gauges for names no prefix selects" sh -c "! grep -q 'other/x' '$T/s1.txt'"
expect_eq "sessions gauge" 2 "$(value "$T/s1.txt" semd_sessions)"
expect_eq "connections gauge" 2 "$(value "$T/s1.txt" semd_connections)"
expect_eq "semaphores gauge" 4 "$(value "$T/s1.txt" semd_semaphores)"
touch "$T/go"
wait "$waiter"
ok "the waiter was granted" grep -q '^reply id=2 code=OK permit=' "$T/waiter.out"
touch "$T/go2"
wait "$holder"
ok "every client gone" t_wait_for 10 idle
scrape "$T/s2.txt"
wc=$(value "$T/s2.txt" semd_wait_seconds_count)
w256=$(value "$T/s2.txt" 'semd_wait_seconds_bucket{le="0.256"}')
expect_eq "every grant is in the wait histogram" \
	"$(value "$T/s2.txt" semd_grants_total)" "$wc"
ok "the down that waited is in the wait histogram above 0.256 s ($w256 of $wc below)" \
	test "$w256" -lt "$wc"
ok "the wait histogram's sum covers that wait" \
	awk -v s="$(value "$T/s2.txt" semd_wait_seconds_sum)" 'BEGIN { exit !(s >= 0.256) }'
hc=$(value "$T/s2.txt" semd_hold_seconds_count)
h1=$(value "$T/s2.txt" 'semd_hold_seconds_bucket{le="1.024"}')
ok "three holds ended ($hc)" test "$hc" = 3
ok "the long holds are in the hold histogram above 1.024 s ($h1 of $hc below)" \
	test "$h1" -le 1
expect_eq "downs answered OK" 3 "$(value "$T/s2.txt" 'semd_requests_total{op="down",code="OK"}')"
expect_eq "hellos answered OK" 3 "$(value "$T/s2.txt" 'semd_requests_total{op="hello",code="OK"}')"
expect_eq "the gauges follow: no holders left" 0 "$(value "$T/s2.txt" 'semd_semaphore_holders{name="app/keep"}')"

# A timeout (the session waits on a permit it holds itself).
$PROBE "$m_UNIX" hello "down app/t" "down app/t timeout=100" >"$T/t.out" 2>&1
ok "the second down timed out" grep -q '^reply id=3 code=TIMEOUT' "$T/t.out"
t_wait_for 10 idle
scrape "$T/s3.txt"
expect_eq "timeouts counted" 1 "$(value "$T/s3.txt" semd_timeouts_total)"
expect_eq "the timeout is a down's TIMEOUT reply" 1 \
	"$(value "$T/s3.txt" 'semd_requests_total{op="down",code="TIMEOUT"}')"

# A waiter whose client goes away.
$PROBE "$m_UNIX" hello "down app/d" "down app/d id=50 nowait" "sleep 100" \
	>"$T/d.out" 2>&1
ok "the disconnect cancellation is counted" t_wait_for 10 sh -c \
	"'$PY' '$T/scrape.py' 'http://$m_METRICS/metrics' | grep -qx 'semd_cancels_disconnect_total 1'"
# A Cancel request, and an error code.
$PROBE "$m_UNIX" hello "down app/c" "down app/c id=60 nowait" "cancel 60" \
	"up nope/none" >"$T/c.out" 2>&1
ok "every client gone" t_wait_for 10 idle
scrape "$T/s4.txt"
expect_eq "cancels counted" 1 "$(value "$T/s4.txt" semd_cancels_total)"
expect_eq "the cancelled down's reply" 1 \
	"$(value "$T/s4.txt" 'semd_requests_total{op="down",code="CANCELLED"}')"
expect_eq "the cancel's reply" 1 \
	"$(value "$T/s4.txt" 'semd_requests_total{op="cancel",code="OK"}')"
expect_eq "an up of an unknown name" 1 \
	"$(value "$T/s4.txt" 'semd_requests_total{op="up",code="NOT_FOUND"}')"

# metrics-names from a config file; a reload applies a new list.
printf 'metrics-listen tcp:127.0.0.1:0\nmetrics-names app/\n' >"$T/r.conf"
start_semd r --config "$T/r.conf" || exit 1
r_METRICS=$(sed -n 's/^metrics://p' "$T/r.ready")
$PROBE "$r_UNIX" hello "create app/a 1" "create other/b 1" >"$T/r.out" 2>&1
# gauges_of NAME: the limit gauges of daemon r name NAME (prints nothing else).
gauges_of() {
	"$PY" "$T/scrape.py" "http://$r_METRICS/metrics" >"$T/r.txt" &&
		grep -q "^semd_semaphore_limit{name=\"$1\"} 1\$" "$T/r.txt" &&
		[ "$(grep -c '^semd_semaphore_limit{' "$T/r.txt")" = 1 ]
}
ok "the config file's metrics-names selects app/a only" gauges_of app/a
printf 'metrics-listen tcp:127.0.0.1:0\nmetrics-names other/\n' >"$T/r.conf"
kill -HUP "$r_PID"
ok "after a reload other/b only" t_wait_for 10 gauges_of other/b
# Overlapping prefixes select a name once (a duplicate sample is an error).
printf 'metrics-listen tcp:127.0.0.1:0\nmetrics-names app/\nmetrics-names app/a\nmetrics-names ap\n' >"$T/r.conf"
kill -HUP "$r_PID"
ok "overlapping prefixes: app/a once" t_wait_for 10 gauges_of app/a

# The endpoint's own limits (issue 12): a UNIX socket path, a cap on
# scrapers, a timeout on a request that is never finished, one request a
# connection. raw.py ADDR MODE: MODE "get" prints the status line of a
# GET /metrics and the number of answers to two pipelined requests; "hold N"
# keeps N connections open without a request and prints how many the daemon
# closed within 0.5 s; "half" sends half a request and prints the seconds
# until the daemon closes it (at most 10).
cat >"$T/raw.py" <<'EOF'
import socket, sys, time
addr, mode = sys.argv[1], sys.argv[2]
def conn():
    if addr.startswith("unix:"):
        s = socket.socket(socket.AF_UNIX)
        s.connect(addr[5:])
    else:
        host, port = addr.rsplit(":", 1)
        s = socket.create_connection((host, int(port)))
    s.settimeout(10)
    return s
def closed_within(s, t):
    s.settimeout(t)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True
if mode == "get":
    s = conn()
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n")
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    print(data.split(b"\r\n", 1)[0].decode(), data.count(b"HTTP/1.1 "))
elif mode == "hold":
    held = [conn() for _ in range(int(sys.argv[3]))]
    print(sum(1 for s in held if closed_within(s, 0.5)))
elif mode == "half":
    s = conn()
    s.sendall(b"GET /metr")
    t0 = time.monotonic()
    closed_within(s, 10)
    print(int(time.monotonic() - t0))
EOF
start_semd u --metrics-listen "unix:$T/metrics.sock" --metrics-max-connections 2 \
	--metrics-timeout 3s || exit 1
expect_eq "the ready file has the metrics socket" "metrics:unix:$T/metrics.sock" \
	"$(grep '^metrics:' "$T/u.ready")"
expect_eq "metrics over a UNIX socket: 200, one answer for two requests" \
	"HTTP/1.1 200 OK 1" "$("$PY" "$T/raw.py" "unix:$T/metrics.sock" get)"
expect_eq "two idle scrapers are kept (within metrics-timeout)" 0 \
	"$(timeout 20 "$PY" "$T/raw.py" "unix:$T/metrics.sock" hold 2 2>&1)"
expect_eq "a third one over metrics-max-connections 2: the oldest is closed for it" 1 \
	"$(timeout 20 "$PY" "$T/raw.py" "unix:$T/metrics.sock" hold 3 2>&1)"
ok "... and logged" grep -q 'metrics-max-connections 2 reached' "$T/u.log"
ok "half a request is cut off after metrics-timeout 3s" \
	test "$(timeout 20 "$PY" "$T/raw.py" "unix:$T/metrics.sock" half)" -le 4
ok "the endpoint still serves" sh -c \
	"'$PY' '$T/raw.py' 'unix:$T/metrics.sock' get | grep -q '200 OK'"

# semctl stats shows the same figures.
if [ -x "$SEMCTL" ]; then
	"$SEMCTL" -s "$m_UNIX" stats >"$T/stats.out" 2>&1
	st() { awk -v k="$1" '$1 == k { print $2 }' "$T/stats.out"; }
	expect_eq "semctl stats: timeouts" 1 "$(st timeouts)"
	expect_eq "semctl stats: down TIMEOUT replies" 1 "$(st replies_down_TIMEOUT)"
	expect_eq "semctl stats: wait count" \
		"$(value "$T/s4.txt" semd_wait_seconds_count)" "$(st wait_count)"
	expect_eq "semctl stats: hold count" \
		"$(value "$T/s4.txt" semd_hold_seconds_count)" "$(st hold_count)"
	ok "semctl stats: the long wait's bucket" sh -c \
		"awk '\$1 ~ /^wait_ms_le_(512|1024|2048|4096|8192|16384)\$/ { n += \$2 } END { exit !(n >= 1) }' '$T/stats.out'"
else
	echo "# semctl not built: its stats check skipped"
fi

t_done
